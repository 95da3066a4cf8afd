//! Cooperation churn under 1:N publishing: a plain thread publishes to one named mailbox
//! without pause while another registers cooperations of subscribers and deregisters each
//! right after, `coops` times. It measures how fast cooperations come and go with traffic
//! flowing, and checks the delivery rule of the semantics document: once `deregister()` has
//! returned, no agent of that cooperation handles a message (each becomes a `ReceiverGone`
//! dead letter), whatever path the publish took (a plain demand, one broadcast demand per
//! queue, or the broadcast log).

use super::Placement;
use cohort::{Agent, Context, DeadLetter, DefineError, DeliveryFailure, DeregReason, Environment};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The published message.
#[derive(Clone)]
struct Tick;

/// What one run measured.
pub struct Outcome {
    /// Registration to deregistration of every cooperation.
    pub elapsed: Duration,
    /// Cooperations registered and deregistered.
    pub coops: u64,
    /// Messages published while they churned.
    pub published: u64,
    /// Messages handled by subscribers.
    pub handled: u64,
    /// Messages handled by an agent after its cooperation's `deregister()` returned: the
    /// rule says none.
    pub handled_after_deregister: u64,
    /// `ReceiverGone` dead letters.
    pub receiver_gone: u64,
    /// Dead letters of every other reason (`NotRegistered` while a cooperation registers,
    /// `NoSubscriber` between cooperations).
    pub other_dead_letters: u64,
}

#[derive(Default)]
struct Counts {
    handled: AtomicU64,
    after: AtomicU64,
    gone: AtomicU64,
    other: AtomicU64,
}

struct Subscriber {
    deregistered: Arc<AtomicBool>,
    counts: Arc<Counts>,
}

impl Agent for Subscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let topic = ctx.environment().named_mbox("churn");
        ctx.subscribe(&topic, |me: &mut Self, _: &Tick, _| {
            me.counts.handled.fetch_add(1, Ordering::Relaxed);
            if me.deregistered.load(Ordering::Acquire) {
                me.counts.after.fetch_add(1, Ordering::Relaxed);
            }
        })?;
        Ok(())
    }
}

/// Checks the parameters.
pub fn validate(coops: u64, agents: u32) -> Result<(), String> {
    if coops == 0 {
        return Err("--coops must be at least 1".into());
    }
    if agents == 0 {
        return Err("--agents must be at least 1 (subscribers per cooperation)".into());
    }
    Ok(())
}

/// Runs one churn of `coops` cooperations of `agents` subscribers each.
pub fn run_once(coops: u64, agents: u32, placement: Placement) -> Result<Outcome, String> {
    validate(coops, agents)?;
    placement.validate()?;
    let counts = Arc::new(Counts::default());
    let hook_counts = counts.clone();
    let env = Environment::builder()
        .dead_letter_hook(move |d: &DeadLetter| {
            if d.reason == DeliveryFailure::ReceiverGone {
                hook_counts.gone.fetch_add(1, Ordering::Relaxed);
            } else {
                hook_counts.other.fetch_add(1, Ordering::Relaxed);
            }
        })
        .start()
        .map_err(|e| e.to_string())?;
    let binder = placement.binder(&env)?;
    let topic = env.named_mbox("churn");
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (stop, topic) = (stop.clone(), topic.clone());
        std::thread::Builder::new()
            .name("churn-publisher".into())
            .spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    topic.send(Tick);
                    n += 1;
                }
                n
            })
            .map_err(|e| e.to_string())?
    };
    let started = Instant::now();
    let mut result = Ok(());
    for _ in 0..coops {
        let deregistered = Arc::new(AtomicBool::new(false));
        let mut coop = env.new_coop();
        coop.set_binder(binder.clone());
        for _ in 0..agents {
            coop.add(Subscriber {
                deregistered: deregistered.clone(),
                counts: counts.clone(),
            });
        }
        match env.register_coop(coop) {
            Ok(handle) => {
                handle.deregister(DeregReason::Normal);
                deregistered.store(true, Ordering::Release);
            }
            Err(e) => {
                result = Err(format!("churn: a cooperation was refused: {e}"));
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let published = publisher.join().map_err(|_| "the publisher panicked")?;
    env.stop();
    env.wait();
    result?;
    Ok(Outcome {
        elapsed,
        coops,
        published,
        handled: counts.handled.load(Ordering::Relaxed),
        handled_after_deregister: counts.after.load(Ordering::Relaxed),
        receiver_gone: counts.gone.load(Ordering::Relaxed),
        other_dead_letters: counts.other.load(Ordering::Relaxed),
    })
}
