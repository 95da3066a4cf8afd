//! The sweeps of sobjectizer-performance-part3 as suite steps: its 1:N grids across every
//! dispatcher it tries (`fan-out-grid`, and in `full`), its self-send grids across
//! max_demands_at_once (`self-send-grid`), and its skynet variants (default dispatcher,
//! thread_pool of 1..8 threads with either fifo; `skynet-grid`).

use crate::commands::fan_out::FanOutArgs;
use crate::commands::self_send::SelfSendArgs;
use crate::commands::skynet::SkynetArgs;
#[cfg(test)]
use crate::scenarios::fan_out;
use crate::scenarios::fan_out::GRIDS;
use crate::scenarios::self_send;
use crate::scenarios::skynet::Teardown;
use crate::scenarios::{Dispatcher, FifoArg, Placement};
use crate::suite::Step;
use clap::Args;

/// Flags of `fan-out-grid`.
#[derive(Args, Clone)]
pub struct FanOutGridArgs {
    /// Only one of the article's grids: 1 (100 idle workers x 100,000), 2 (10,000 idle x 1,000),
    /// 3 (100 sleeping x 100), 4 (10,000 CPU-bound x 100).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=4))]
    pub only: Option<u8>,
    /// Scales the message counts (0 < scale <= 1; e.g. 0.01 for a quick look).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Milliseconds a sleeping worker sleeps per message.
    #[arg(long, default_value_t = 5)]
    pub sleep_ms: u64,
}

/// Flags of `skynet-grid`.
#[derive(Args, Clone)]
pub struct SkynetGridArgs {
    /// Leaf agents (a power of 10).
    #[arg(long, default_value_t = 1_000_000)]
    pub leaves: u64,
    /// Pool sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = SKYNET_POOL_SIZES)]
    pub sizes: Vec<usize>,
}

/// Flags of `self-send-grid`.
#[derive(Args, Clone)]
pub struct SelfSendGridArgs {
    /// Scales the message count per worker of both grids (0 < scale <= 1; e.g. 0.01 for a
    /// quick look).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Worker threads of the pools.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Only one of the article's grids: 1 (50 workers x 1M, start batch 1) or 2 (1,000 workers x
    /// 1M, start batch 100).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub only: Option<u8>,
}

/// Checks `--sizes`.
pub fn validate_sizes(sizes: &[usize]) -> Result<(), String> {
    if sizes.is_empty() || sizes.contains(&0) {
        Err(format!(
            "--sizes must list pool sizes of at least 1 (got {sizes:?})"
        ))
    } else {
        Ok(())
    }
}

/// Checks `--scale`.
pub fn validate_scale(scale: f64) -> Result<(), String> {
    if scale > 0.0 && scale <= 1.0 {
        Ok(())
    } else {
        Err(format!("--scale must be in (0, 1] (got {scale})"))
    }
}

/// Every dispatcher of the article's 1:N section: active_group, active_obj, and thread_pool of
/// 4 and 16 threads with cooperation and individual fifo and max_demands_at_once 1 and 4.
pub fn article_dispatchers() -> Vec<Placement> {
    let mut out = vec![
        Placement::of(Dispatcher::ActiveGroup),
        Placement::of(Dispatcher::ActiveObj),
    ];
    for threads in [4, 16] {
        for fifo in [FifoArg::Cooperation, FifoArg::Individual] {
            for max_demands in [1, 4] {
                let mut p = Placement::of(Dispatcher::ThreadPool).fifo(fifo);
                p.threads = threads;
                p.max_demands = max_demands;
                out.push(p);
            }
        }
    }
    out
}

/// The article's 1:N grids (or one of them) on each of its dispatchers, messages scaled.
pub fn fan_out_grid(only: Option<u8>, scale: f64, sleep_ms: u64) -> Vec<Step> {
    let mut plan = Vec::new();
    for (i, g) in GRIDS.into_iter().enumerate() {
        if only.is_some_and(|o| usize::from(o) != i + 1) {
            continue;
        }
        let messages = ((f64::from(g.messages) * scale).round() as u32).max(1);
        for placement in article_dispatchers() {
            plan.push(Step::FanOut(FanOutArgs {
                workers: g.workers,
                messages,
                work: g.work,
                sleep_ms,
                placement,
            }));
        }
    }
    plan
}

/// The pool placements of the article's self-send grid: thread_pool (individual fifo) and
/// work_stealing, `threads` each, across `max_demands`.
pub fn pool_grid(threads: usize, max_demands: &[usize]) -> Vec<Placement> {
    let mut out = Vec::new();
    for d in [Dispatcher::ThreadPool, Dispatcher::WorkStealing] {
        for &m in max_demands {
            let mut p = Placement::of(d).fifo(FifoArg::Individual);
            p.threads = threads;
            p.max_demands = m;
            out.push(p);
        }
    }
    out
}

/// The article's two self-send grids (or one of them), message counts scaled by `scale`.
pub fn self_send_grid(scale: f64, threads: usize, only: Option<u8>) -> Vec<Step> {
    let mut plan = Vec::new();
    for (i, (workers, count, start_batch)) in self_send::GRIDS.into_iter().enumerate() {
        if only.is_some_and(|g| usize::from(g) != i + 1) {
            continue;
        }
        for placement in pool_grid(threads, &self_send::GRID_MAX_DEMANDS) {
            plan.push(Step::SelfSend(SelfSendArgs {
                workers,
                message_count: self_send::scaled(count, scale),
                start_batch,
                placement,
            }));
        }
    }
    plan
}

/// The article's skynet pool sizes.
pub const SKYNET_POOL_SIZES: [usize; 5] = [1, 2, 3, 4, 8];

/// Skynet on the default dispatcher and on thread_pool of each size with either fifo; every
/// record carries both times (to the result, and with deregistration).
pub fn skynets(leaves: u64, pool_sizes: &[usize]) -> Vec<Step> {
    let mut plan = vec![Step::Skynet(SkynetArgs {
        leaves,
        branching: 10,
        placement: Placement::of(Dispatcher::OneThread),
        teardown: Teardown::AtEnd,
    })];
    for &threads in pool_sizes {
        for fifo in [FifoArg::Cooperation, FifoArg::Individual] {
            let mut placement = Placement::of(Dispatcher::ThreadPool).fifo(fifo);
            placement.threads = threads;
            plan.push(Step::Skynet(SkynetArgs {
                leaves,
                branching: 10,
                placement,
                teardown: Teardown::AtEnd,
            }));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grids_cover_every_dispatcher_of_the_article() {
        assert_eq!(article_dispatchers().len(), 10);
        assert_eq!(fan_out_grid(None, 1.0, 5).len(), 40);
        let one = fan_out_grid(Some(3), 1.0, 5);
        assert_eq!(one.len(), 10);
        assert!(one.iter().all(|s| matches!(
            s,
            Step::FanOut(a) if a.workers == 100 && a.messages == 100 && a.work == fan_out::Work::Sleep
        )));
        assert_eq!(skynets(1000, &SKYNET_POOL_SIZES).len(), 11);
        assert!(validate_scale(0.0).is_err() && validate_scale(1.0).is_ok());
        assert!(validate_sizes(&[1, 0]).unwrap_err().contains("--sizes"));
        assert!(validate_sizes(&SKYNET_POOL_SIZES).is_ok());
    }
}
