//! Cooperation churn under 1:N publishing: a plain thread publishes to one named mailbox
//! without pause while another registers cooperations of subscribers and deregisters each
//! right after, `coops` times. It measures how fast cooperations come and go with traffic
//! flowing, and checks the delivery rule of the semantics document: no agent handles a
//! message published after its cooperation's `deregister()` returned, whatever path the
//! publish took (a plain demand, one broadcast demand per queue, or the broadcast log).
//!
//! Each publish carries a sequence number drawn just before it is sent; after `deregister()`
//! returns, the main thread reads the next number to be drawn and gives it to that
//! cooperation's agents: a message numbered at or above it was published after
//! `deregister()` returned. (Messages published before, or while it ran, may be handled
//! after it returned, before `finish`: the rule allows that.)

use super::Placement;
use cohort::{Agent, Context, DeadLetter, DefineError, DeliveryFailure, DeregReason, Environment};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The published message, numbered in publishing order.
#[derive(Clone)]
struct Tick(u64);

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
    /// Messages handled by an agent that were published after its cooperation's
    /// `deregister()` returned: the rule says none.
    pub handled_after_deregister: u64,
    /// `ReceiverGone` dead letters (a publish racing with a deregistration: once one has
    /// dropped the cooperation's subscriptions, a publish no longer reaches its agents).
    pub receiver_gone: u64,
    /// Dead letters of every other reason (`NoSubscriber` while no cooperation subscribes;
    /// a publish that reaches a cooperation still registering is kept for its agents).
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
    /// The first sequence number published after the cooperation's `deregister()`
    /// returned (`u64::MAX` until then).
    deregistered_at: Arc<AtomicU64>,
    counts: Arc<Counts>,
}

impl Agent for Subscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let topic = ctx.environment().named_mbox("churn");
        ctx.subscribe(&topic, |me: &mut Self, t: &Tick, _| {
            me.counts.handled.fetch_add(1, Ordering::Relaxed);
            if t.0 >= me.deregistered_at.load(Ordering::SeqCst) {
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
    let sequence = Arc::new(AtomicU64::new(0));
    let publisher = {
        let (stop, topic, sequence) = (stop.clone(), topic.clone(), sequence.clone());
        std::thread::Builder::new()
            .name("churn-publisher".into())
            .spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    topic.send(Tick(sequence.fetch_add(1, Ordering::SeqCst)));
                    n += 1;
                }
                n
            })
            .map_err(|e| e.to_string())?
    };
    // The churn starts once traffic flows (a thread takes a while to start: 2,000
    // cooperations may come and go before it publishes at all).
    while sequence.load(Ordering::SeqCst) == 0 && !publisher.is_finished() {
        std::thread::yield_now();
    }
    let started = Instant::now();
    let mut result = Ok(());
    for _ in 0..coops {
        let deregistered_at = Arc::new(AtomicU64::new(u64::MAX));
        let mut coop = env.new_coop();
        coop.set_binder(binder.clone());
        for _ in 0..agents {
            coop.add(Subscriber {
                deregistered_at: deregistered_at.clone(),
                counts: counts.clone(),
            });
        }
        match env.register_coop(coop) {
            Ok(handle) => {
                handle.deregister(DeregReason::Normal);
                // Every number drawn from here on is published after `deregister()`
                // returned. (A handler that runs between these two lines is not checked.)
                deregistered_at.store(sequence.load(Ordering::SeqCst), Ordering::SeqCst);
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
