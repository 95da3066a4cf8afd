//! 1:N massive send (sobjectizer-performance-part3.txt, "Performance of 1:N messaging"): a
//! producer sends `messages` numbers to a named mailbox "input" to which `workers` agents are
//! subscribed; each worker, once it has received them all, reports to the producer, which
//! stops the environment when every worker has reported. Measured as the article does: the
//! send loop alone, and the whole experiment (creation and deregistration included). Workers
//! are idle, sleep per message, or compute per message.

use super::Placement;
use cohort::{Agent, Context, DefineError, Mbox};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a worker does per message.
#[derive(Debug, Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum Work {
    /// Nothing but counting.
    Idle,
    /// Sleeps `--sleep-ms` (the article's "waiting for external resources").
    Sleep,
    /// A short computation (the article calls `std::sph_neumann`; here a few hundred flops).
    Cpu,
}

/// One of the article's 1:N parameter sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub workers: u32,
    pub messages: u32,
    pub work: Work,
}

/// The article's grids: idle workers 100 x 100,000 and 10,000 x 1,000; sleeping workers
/// 100 x 100; CPU-bound workers 10,000 x 100.
pub const GRIDS: [Grid; 4] = [
    Grid {
        workers: 100,
        messages: 100_000,
        work: Work::Idle,
    },
    Grid {
        workers: 10_000,
        messages: 1_000,
        work: Work::Idle,
    },
    Grid {
        workers: 100,
        messages: 100,
        work: Work::Sleep,
    },
    Grid {
        workers: 10_000,
        messages: 100,
        work: Work::Cpu,
    },
];

/// What one run measured.
pub struct Outcome {
    pub send: Duration,
    pub total: Duration,
    pub deliveries: u64,
}

struct Producer {
    input: Mbox,
    messages: u32,
    workers: u32,
    done: Vec<bool>,
    left: u32,
    send_elapsed: Arc<Mutex<Option<Duration>>>,
}

impl Agent for Producer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, id: &u32, ctx: &mut Context<'_, Self>| {
            let slot = &mut me.done[*id as usize];
            if !*slot {
                *slot = true;
                me.left -= 1;
            }
            if me.left == 0 {
                ctx.stop_environment();
            }
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        let t0 = Instant::now();
        for i in 0..self.messages {
            self.input.send(i);
        }
        *self.send_elapsed.lock().unwrap() = Some(t0.elapsed());
        let _ = self.workers;
    }
}

struct Worker {
    id: u32,
    input: Mbox,
    output: Mbox,
    left: u32,
    work: Work,
    sleep: Duration,
    series: f64,
}

impl Agent for Worker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let input = self.input.clone();
        ctx.subscribe(
            &input,
            |me: &mut Self, n: &u32, _: &mut Context<'_, Self>| {
                match me.work {
                    Work::Idle => {}
                    Work::Sleep => std::thread::sleep(me.sleep),
                    Work::Cpu => {
                        let mut x = f64::from(*n) * 1e-3 + 1.2345;
                        for _ in 0..64 {
                            x = (x.sin() + x.cos()).abs() + 1.0;
                        }
                        me.series += x;
                    }
                }
                me.left -= 1;
                if me.left == 0 {
                    me.output.send(me.id);
                }
            },
        )?;
        Ok(())
    }
}

/// Checks the parameters.
pub fn validate(workers: u32, messages: u32) -> Result<(), String> {
    if workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    if messages == 0 {
        return Err("--messages must be at least 1".into());
    }
    Ok(())
}

/// Runs one 1:N massive send.
pub fn run_once(
    workers: u32,
    messages: u32,
    work: Work,
    sleep: Duration,
    placement: Placement,
) -> Result<Outcome, String> {
    validate(workers, messages)?;
    placement.validate()?;
    let send_elapsed = Arc::new(Mutex::new(None));
    let out = send_elapsed.clone();
    let t0 = Instant::now();
    cohort::launch(move |env| {
        let input = env.named_mbox("input");
        let mut coop = env.new_coop();
        coop.reserve(workers as usize + 1);
        let producer = coop.add(Producer {
            input: input.clone(),
            messages,
            workers,
            done: vec![false; workers as usize],
            left: workers,
            send_elapsed: out,
        });
        let output = producer.mbox();
        let binder = placement.binder(env)?;
        for id in 0..workers {
            let w = Worker {
                id,
                input: input.clone(),
                output: output.clone(),
                left: messages,
                work,
                sleep,
                series: 0.0,
            };
            coop.add_with_binder(w, binder.clone());
        }
        env.register_coop(coop)?;
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    let total = t0.elapsed();
    let send = send_elapsed
        .lock()
        .unwrap()
        .ok_or("the producer never sent")?;
    Ok(Outcome {
        send,
        total,
        deliveries: u64::from(workers) * u64::from(messages),
    })
}
