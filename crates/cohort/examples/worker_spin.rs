//! How an idle worker waits: the adaptive spin (the default) against a spin fixed by hand,
//! under a trickle of messages and under a rally.
//!
//! `cargo run --release -p cohort --example worker_spin`
//!
//! A worker that runs out of work polls for more before it parks, because waking a parked
//! thread costs tens of microseconds. Under a trickle (a message every 300 µs from a plain
//! thread to an agent with a thread of its own) a fixed 50 µs spin burns 50 µs per message
//! for nothing; the adaptive spin learns from its own parks to spin a few microseconds
//! instead. Under a rally (two agents on threads of their own passing a ball back and
//! forth) every spin finds work, and both keep spinning. The CPU time is the process's, read
//! from `/proc/self/stat` (Linux; elsewhere it prints `n/a`). Figures are this machine's,
//! now: compare the two lines, not the numbers with another machine's.

use cohort::{ActiveObjBuilder, Agent, Context, DefineError, Environment, Mbox, WorkerSpin};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Messages in the trickle, and the gap between two.
const TRICKLE: u32 = 1_000;
const GAP: Duration = Duration::from_micros(300);
/// Hops of the rally.
const HOPS: u32 = 20_000;

struct Tick;
struct Ball(u32);

/// Counts ticks; passes the ball back until it has made its hops.
struct Player {
    peer: Option<Mbox>,
    ticks: u32,
    done: mpsc::Sender<u32>,
}

impl Agent for Player {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Tick, _: &mut Context<'_, Self>| {
            me.ticks += 1;
            if me.ticks == TRICKLE {
                let _ = me.done.send(me.ticks);
            }
        })?;
        ctx.on(|me: &mut Self, b: &Ball, _: &mut Context<'_, Self>| {
            if b.0 == 0 {
                let _ = me.done.send(HOPS);
            } else if let Some(peer) = &me.peer {
                peer.send(Ball(b.0 - 1));
            }
        })?;
        Ok(())
    }
}

/// The process's CPU time so far (user + system), if this system says.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Clock ticks of 10 ms (`USER_HZ` = 100 on Linux).
    Some(Duration::from_millis(ticks * 10))
}

/// A run's elapsed time and the process's CPU time over it.
type Timed = (Duration, Option<Duration>);

/// Runs the trickle and the rally on `active_obj` workers spinning as `spin` says: the
/// elapsed and CPU time of each.
fn run(spin: WorkerSpin) -> Result<[Timed; 2], Box<dyn std::error::Error>> {
    let env = Environment::builder().start()?;
    let disp = ActiveObjBuilder::new()
        .name("spin")
        .worker_spin(spin)
        .build(&env)?;
    let (done_tx, done_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(disp.binder());
    let player = |done: &mpsc::Sender<u32>| Player {
        peer: None,
        ticks: 0,
        done: done.clone(),
    };
    let a = coop.add(player(&done_tx));
    let b = coop.add(player(&done_tx));
    let (ma, mb) = (a.mbox(), b.mbox());
    coop.agent_mut(&a).peer = Some(mb);
    coop.agent_mut(&b).peer = Some(ma.clone());
    env.register_coop(coop)?;

    let measure = |work: &dyn Fn()| {
        let (t0, c0) = (Instant::now(), cpu_time());
        work();
        let got = done_rx.recv_timeout(Duration::from_secs(30));
        assert!(got.is_ok(), "the run did not finish");
        let cpu = c0.zip(cpu_time()).map(|(c0, c1)| c1.saturating_sub(c0));
        (t0.elapsed(), cpu)
    };
    let trickle = measure(&|| {
        for _ in 0..TRICKLE {
            ma.send(Tick);
            // The gap between two messages of the trickle (a sleep is the point here).
            std::thread::sleep(GAP);
        }
    });
    let rally = measure(&|| ma.send(Ball(HOPS)));
    env.stop_and_wait();
    Ok([trickle, rally])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("{TRICKLE} messages {GAP:?} apart, then a rally of {HOPS} hops, on active_obj");
    println!(
        "{:<34} {:>12} {:>12} {:>12}",
        "worker_spin", "trickle cpu", "rally ms", "rally cpu"
    );
    let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
    let cpu = |c: Option<Duration>| c.map_or("n/a".to_string(), |c| format!("{} ms", ms(c)));
    for (name, spin) in [
        ("adaptive, up to 50 µs (default)", WorkerSpin::default()),
        ("fixed 50 µs", WorkerSpin::Fixed(Duration::from_micros(50))),
        ("fixed 0 (park at once)", Duration::ZERO.into()),
    ] {
        let [(_, trickle_cpu), (rally, rally_cpu)] = run(spin)?;
        println!(
            "{name:<34} {:>12} {:>12} {:>12}",
            cpu(trickle_cpu),
            ms(rally),
            cpu(rally_cpu)
        );
    }
    println!();
    println!("adaptive: spins long while spins find work (the rally), a few µs once they do not");
    println!(
        "(the trickle). Fix it by hand with .worker_spin(Duration) on any dispatcher builder."
    );
    println!("done: worker_spin");
    Ok(())
}
