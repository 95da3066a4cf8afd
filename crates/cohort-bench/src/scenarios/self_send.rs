//! Self-send, the bulk effect (sobjectizer-performance-part3.txt, "Observing the bulk
//! effect"): `workers` agents each send themselves `start_batch` signals in `start`, and each
//! handled signal sends the next, until the worker has handled `message_count`; it then
//! tells a master agent, which stops the environment once every worker is done. The workers
//! are independent (no queue is shared between two of them with an individual fifo), so this
//! measures what a pool pays to serve many busy queues, and how `max_demands_at_once` (how
//! many demands a worker thread runs from one queue before moving on) amortises it.
//!
//! Workers are bound to the placement's dispatcher, the master to the default dispatcher;
//! `elapsed_s` is the wall time of the whole run, as the article measures it (environment start
//! to environment joined).
//!
//! Here a worker sends exactly `message_count` signals in all (the start batch included) and
//! handles exactly as many; the master checks each worker's count.

#[cfg(test)]
use super::Dispatcher;
use super::Placement;
use cohort::{Agent, Context, DefineError, Mbox};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The article's defaults.
pub const WORKERS: u64 = 50;
pub const MESSAGE_COUNT: u64 = 1_000_000;
pub const START_BATCH: u64 = 1;

/// The max_demands_at_once values of the article's grid.
pub const GRID_MAX_DEMANDS: [usize; 5] = [1, 4, 100, 1_000, 10_000];

/// One cell family of the article's grid: (workers, message count, start batch).
pub const GRIDS: [(u64, u64, u64); 2] = [(50, 1_000_000, 1), (1_000, 1_000_000, 100)];

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    pub elapsed: Duration,
    /// Signals handled by all the workers.
    pub messages: u64,
}

struct SelfSignal;

/// A worker's report to the master.
struct Done {
    worker: u64,
    handled: u64,
}

struct Worker {
    id: u64,
    message_count: u64,
    start_batch: u64,
    sent: u64,
    handled: u64,
    master: Mbox,
}

impl Agent for Worker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(
            |me: &mut Self, _: &SelfSignal, ctx: &mut Context<'_, Self>| {
                me.handled += 1;
                if me.sent < me.message_count {
                    me.sent += 1;
                    ctx.send_self(SelfSignal);
                } else if me.handled == me.message_count {
                    me.master.send(Done {
                        worker: me.id,
                        handled: me.handled,
                    });
                }
            },
        )?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        for _ in 0..self.start_batch {
            ctx.send_self(SelfSignal);
        }
        self.sent = self.start_batch;
    }
}

#[derive(Default)]
struct Report {
    done: bool,
    messages: u64,
    error: Option<String>,
}

struct Master {
    message_count: u64,
    reported: Vec<bool>,
    left: u64,
    messages: u64,
    out: Arc<Mutex<Report>>,
}

impl Master {
    fn on_done(&mut self, d: &Done, ctx: &mut Context<'_, Self>) {
        let mut error = None;
        match self.reported.get_mut(d.worker as usize) {
            Some(seen) if !*seen => *seen = true,
            Some(_) => error = Some(format!("worker {} reported twice", d.worker)),
            None => error = Some(format!("unknown worker {}", d.worker)),
        }
        if d.handled != self.message_count {
            error = Some(format!(
                "worker {} handled {} signals, expected {}",
                d.worker, d.handled, self.message_count
            ));
        }
        self.messages += d.handled;
        self.left -= 1;
        if let Some(e) = error {
            self.out.lock().unwrap().error.get_or_insert(e);
            ctx.stop_environment();
        } else if self.left == 0 {
            let mut out = self.out.lock().unwrap();
            out.done = true;
            out.messages = self.messages;
            ctx.stop_environment();
        }
    }
}

impl Agent for Master {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(Self::on_done)?;
        Ok(())
    }
}

/// Checks the parameters.
pub fn validate(workers: u64, message_count: u64, start_batch: u64) -> Result<(), String> {
    if workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    if workers > 1_000_000 {
        return Err(format!(
            "--workers ({workers}) is too large: at most 1,000,000"
        ));
    }
    if message_count == 0 {
        return Err("--message-count must be at least 1".into());
    }
    if start_batch == 0 {
        return Err("--start-batch must be at least 1".into());
    }
    if start_batch > message_count {
        return Err(format!(
            "--start-batch ({start_batch}) must be at most --message-count ({message_count})"
        ));
    }
    workers
        .checked_mul(message_count)
        .ok_or("--workers x --message-count overflows")?;
    Ok(())
}

/// A self-send placement's fifo: individual unless one was given (the article's choice).
pub fn placement_of(placement: Placement) -> Placement {
    if placement.fifo.is_none() {
        placement.fifo(super::FifoArg::Individual)
    } else {
        placement
    }
}

/// Runs one self-send benchmark.
pub fn run_once(
    workers: u64,
    message_count: u64,
    start_batch: u64,
    placement: Placement,
) -> Result<Outcome, String> {
    validate(workers, message_count, start_batch)?;
    let placement = placement_of(placement);
    placement.validate()?;
    let out = Arc::new(Mutex::new(Report::default()));
    let out2 = out.clone();
    let started = Instant::now();
    cohort::launch(move |env| {
        let binder = placement.binder(env)?;
        let mut coop = env.new_coop();
        coop.reserve(workers as usize + 1);
        let master = coop
            .add(Master {
                message_count,
                reported: vec![false; workers as usize],
                left: workers,
                messages: 0,
                out: out2,
            })
            .mbox();
        for id in 0..workers {
            coop.add_with_binder(
                Worker {
                    id,
                    message_count,
                    start_batch,
                    sent: 0,
                    handled: 0,
                    master: master.clone(),
                },
                binder.clone(),
            );
        }
        env.register_coop(coop)?;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    let out = out.lock().unwrap();
    if let Some(e) = &out.error {
        return Err(e.clone());
    }
    if !out.done {
        return Err("the master never heard from every worker".into());
    }
    let expected = workers * message_count;
    if out.messages != expected {
        return Err(format!(
            "expected {expected} signals handled, counted {}",
            out.messages
        ));
    }
    Ok(Outcome {
        elapsed,
        messages: out.messages,
    })
}

/// `n` scaled by `scale`, at least 1.
pub fn scaled(n: u64, scale: f64) -> u64 {
    ((n as f64 * scale).round() as u64).max(1)
}

/// Checks a grid scale.
pub fn validate_scale(scale: f64) -> Result<(), String> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 1.0) {
        return Err(format!("--scale ({scale}) must be in (0, 1]"));
    }
    for (_, count, batch) in GRIDS {
        if scaled(count, scale) < batch {
            return Err(format!(
                "--scale {scale} leaves {} messages per worker, fewer than the start batch {batch}",
                scaled(count, scale)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_handles_its_count() {
        for md in [1, 4, 100] {
            for d in [Dispatcher::ThreadPool, Dispatcher::WorkStealing] {
                let mut p = Placement::of(d);
                p.max_demands = md;
                let o = crate::watchdog::within(20, move || run_once(10, 2_000, 1, p)).unwrap();
                assert_eq!(o.messages, 20_000);
                let o = crate::watchdog::within(20, move || run_once(20, 500, 100, p)).unwrap();
                assert_eq!(o.messages, 10_000);
            }
        }
        for d in [Dispatcher::OneThread, Dispatcher::ActiveObj] {
            let p = Placement::of(d);
            let o = crate::watchdog::within(20, move || run_once(3, 1_000, 7, p)).unwrap();
            assert_eq!(o.messages, 3_000);
        }
        // A batch as large as the count, and a single message.
        let p = Placement::of(Dispatcher::WorkStealing);
        let o = crate::watchdog::within(20, move || run_once(4, 50, 50, p)).unwrap();
        assert_eq!(o.messages, 200);
        let o = crate::watchdog::within(20, move || run_once(1, 1, 1, p)).unwrap();
        assert_eq!(o.messages, 1);
    }

    #[test]
    fn individual_fifo_by_default() {
        let p = placement_of(Placement::of(Dispatcher::ThreadPool));
        assert_eq!(p.fifo, Some(super::super::FifoArg::Individual));
        let p = placement_of(
            Placement::of(Dispatcher::ThreadPool).fifo(super::super::FifoArg::Cooperation),
        );
        assert_eq!(p.fifo, Some(super::super::FifoArg::Cooperation));
    }

    #[test]
    fn bad_parameters_are_refused() {
        let p = Placement::of(Dispatcher::ThreadPool);
        assert!(run_once(0, 10, 1, p).unwrap_err().contains("--workers"));
        assert!(
            run_once(5, 0, 1, p)
                .unwrap_err()
                .contains("--message-count")
        );
        assert!(run_once(5, 10, 0, p).unwrap_err().contains("--start-batch"));
        assert!(
            run_once(5, 10, 11, p)
                .unwrap_err()
                .contains("--start-batch")
        );
        let mut bad = p;
        bad.max_demands = 0;
        assert!(
            run_once(5, 10, 1, bad)
                .unwrap_err()
                .contains("--max-demands")
        );
    }

    #[test]
    fn grid_scale() {
        assert!(validate_scale(1.0).is_ok());
        assert!(validate_scale(0.001).is_ok());
        assert!(validate_scale(0.00001).is_err()); // 10 messages < start batch 100
        assert!(validate_scale(0.0).is_err());
        assert!(validate_scale(2.0).is_err());
        assert!(validate_scale(f64::NAN).is_err());
        assert_eq!(scaled(1_000_000, 0.02), 20_000);
    }
}
