//! Idle CPU (CAF users' complaint): an environment with every dispatcher kind
//! started (`one_thread`, `active_obj`, `active_group`, `thread_pool`, `work_stealing`,
//! `prio_one_thread` strictly ordered and quoted round robin), each with agents that have just
//! finished a burst of ping-pong, then nothing to do. Measured: the CPU time the whole process
//! uses over the window (`/proc/self/stat` utime + stime, clock ticks of 10 ms), as a
//! percentage of one core. The target is under 1 % over 10 s.
//!
//! With a trickle (`--trickle-us`), a plain thread sends one message to an agent of every
//! dispatcher every so many microseconds through the window: the CPU that waiting between
//! sparse messages costs, which is what the workers' spin before they park decides (each
//! message wakes a worker; a fixed spin then burns its whole length per message).

use cohort::dispatcher::{Fifo, PoolBindParams};
use cohort::{Agent, Context, DefineError, Mbox, WorkerSpin};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

/// The default window: 10 s, the span over which the target is stated.
pub const WINDOW_S: f64 = 10.0;

/// Ball hops per pair in the burst before the window.
const HOPS: u32 = 20_000;

/// Clock ticks per second of `/proc` CPU times (`USER_HZ`): 100 on x86_64 and aarch64 Linux.
const TICKS_PER_SEC: f64 = 100.0;

/// What one run measured.
#[derive(Debug)]
pub struct Outcome {
    /// The measured window.
    pub window: Duration,
    /// Process CPU time over the window, in seconds (10 ms resolution).
    pub cpu_s: f64,
}

struct Ball(u32);

/// A trickle's message: handled, nothing more.
struct Tick;

/// Passes the ball to its peer until it has made its hops; the last hop reports.
struct Player {
    peer: Option<Mbox>,
    done: Sender<()>,
}

impl Agent for Player {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, b: &Ball, _: &mut Context<'_, Self>| {
            if b.0 == 0 {
                let _ = me.done.send(());
            } else if let Some(peer) = &me.peer {
                peer.send(Ball(b.0 - 1));
            }
        })?;
        ctx.on(|_: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {})?;
        Ok(())
    }
}

/// utime + stime of the process, in seconds.
fn process_cpu_s() -> Result<f64, String> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|e| format!("idle-cpu reads /proc/self/stat (Linux only): {e}"))?;
    let after = stat
        .rfind(')')
        .map(|i| &stat[i + 2..])
        .ok_or("unexpected /proc/self/stat")?;
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    // `after` starts at field 3: utime (14) and stime (15) are at 11 and 12.
    match (tick(11), tick(12)) {
        (Some(u), Some(s)) => Ok((u + s) / TICKS_PER_SEC),
        _ => Err("unexpected /proc/self/stat".into()),
    }
}

/// Checks the window.
pub fn validate(window_s: f64) -> Result<(), String> {
    if !(0.1..=600.0).contains(&window_s) {
        return Err(format!(
            "--seconds must be between 0.1 and 600 (got {window_s})"
        ));
    }
    Ok(())
}

/// What happens during the window, and how the workers wait (by default: nothing, and the
/// default adaptive spin).
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    /// A message to every dispatcher's agent every so often (`None`: nothing).
    pub trickle: Option<Duration>,
    /// Every dispatcher's `worker_spin`.
    pub spin: WorkerSpin,
}

/// Starts every dispatcher, runs a burst on each, then measures `window_s` of idleness (or of
/// `load`'s trickle).
pub fn run_once(window_s: f64, load: Load) -> Result<Outcome, String> {
    run_with_bursts(window_s, HOPS, load)
}

/// [`run_once`] with bursts of `hops` hops.
fn run_with_bursts(window_s: f64, hops: u32, load: Load) -> Result<Outcome, String> {
    validate(window_s)?;
    let spin = load.spin;
    let env = cohort::Environment::builder()
        .worker_spin(spin)
        .start()
        .map_err(|e| e.to_string())?;
    let e = |e: cohort::DispatcherError| e.to_string();
    let pool_params = PoolBindParams::new().fifo(Fifo::Individual);
    let tp = cohort::ThreadPoolBuilder::new()
        .name("idle-tp")
        .worker_spin(spin)
        .threads(2)
        .build(&env)
        .map_err(e)?;
    let ws = cohort::WorkStealingBuilder::new()
        .name("idle-ws")
        .worker_spin(spin)
        .threads(2)
        .build(&env)
        .map_err(e)?;
    let binders = vec![
        env.default_binder(),
        cohort::OneThreadBuilder::new()
            .name("idle-one")
            .worker_spin(spin)
            .build(&env)
            .map_err(e)?
            .binder(),
        cohort::ActiveObjBuilder::new()
            .name("idle-obj")
            .worker_spin(spin)
            .build(&env)
            .map_err(e)?
            .binder(),
        cohort::ActiveGroupBuilder::new()
            .name("idle-grp")
            .worker_spin(spin)
            .build(&env)
            .map_err(e)?
            .group_binder("g"),
        tp.pool_binder(pool_params.clone()).map_err(e)?,
        ws.pool_binder(pool_params).map_err(e)?,
        cohort::PrioOneThreadBuilder::new()
            .name("idle-ps")
            .worker_spin(spin)
            .strictly_ordered()
            .build(&env)
            .map_err(e)?
            .binder(),
        cohort::PrioOneThreadBuilder::new()
            .name("idle-pq")
            .worker_spin(spin)
            .quoted_round_robin([4; 8])
            .build(&env)
            .map_err(e)?
            .binder(),
    ];
    let dispatchers = binders.len();
    let (done_tx, done_rx) = mpsc::channel();
    let mut targets = Vec::with_capacity(dispatchers);
    for binder in binders {
        let mut coop = env.new_coop();
        coop.set_binder(binder);
        let a = coop.add(Player {
            peer: None,
            done: done_tx.clone(),
        });
        let b = coop.add(Player {
            peer: None,
            done: done_tx.clone(),
        });
        let (ma, mb) = (a.mbox(), b.mbox());
        coop.agent_mut(&a).peer = Some(mb);
        coop.agent_mut(&b).peer = Some(ma.clone());
        env.register_coop(coop).map_err(|e| e.to_string())?;
        ma.send(Ball(hops));
        targets.push(ma);
    }
    for _ in 0..dispatchers {
        done_rx
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| "a burst did not end within 60 s".to_string())?;
    }
    let before = process_cpu_s()?;
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs_f64(window_s);
    match load.trickle {
        // The measurement itself: nothing is waited for.
        None => std::thread::sleep(end - t0),
        Some(every) => {
            while Instant::now() < end {
                for t in &targets {
                    t.send(Tick);
                }
                std::thread::sleep(every);
            }
        }
    }
    let window = t0.elapsed();
    let cpu_s = process_cpu_s()? - before;
    env.stop_and_wait();
    Ok(Outcome { window, cpu_s })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_environment_measures_and_rejects_bad_windows() {
        // Short bursts: a thread per agent hands the ball over by a wake-up each hop, which
        // takes long when the test shares busy cores.
        let o = run_with_bursts(0.2, 100, Load::default()).unwrap();
        assert!(o.window >= Duration::from_millis(200));
        assert!(o.cpu_s >= 0.0);
        assert!(validate(0.0).unwrap_err().contains("--seconds"));
        let trickle = Load {
            trickle: Some(Duration::from_micros(500)),
            spin: WorkerSpin::Fixed(Duration::from_micros(5)),
        };
        assert!(run_with_bursts(0.1, 10, trickle).unwrap().cpu_s >= 0.0);
    }
}
