//! Publishers racing with registration and deregistration.

use super::*;

// Publishers racing with registration and deregistration.

/// Published by the racing threads, numbered in publishing order.
#[derive(Debug, Clone, Copy)]
struct Tick(u64);

/// Counts the ticks it handles that were published after its cooperation's
/// `deregister()` returned.
struct Racer {
    /// The first number drawn after `deregister()` returned (`u64::MAX` until then).
    deregistered_at: Arc<AtomicU64>,
    late: Arc<AtomicUsize>,
    handled: Arc<AtomicUsize>,
}

impl Agent for Racer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let topic = ctx.environment().named_mbox("race");
        ctx.subscribe(&topic, |me: &mut Self, t: &Tick, _| {
            count(&me.handled);
            if t.0 >= me.deregistered_at.load(Ordering::SeqCst) {
                count(&me.late);
            }
        })?;
        Ok(())
    }
}

/// Two threads publish without pause while cooperations of two subscribers are registered
/// and deregistered one after the other: no tick published after a cooperation's
/// `deregister()` returned is handled by its agents; none published while one registered is
/// lost (no `NotRegistered`); the only dead letters are `NoSubscriber` (between
/// cooperations) and `ReceiverGone` (a publish racing with a deregistration).
fn publishers_racing_deregistration(kind: Kind) {
    const PUBLISHERS: usize = 2;
    let (env, dead) = start();
    let binder = kind.binder(&env, "race");
    let topic = env.named_mbox("race");
    let sequence = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let publishers: Vec<_> = (0..PUBLISHERS)
        .map(|_| {
            let (topic, sequence, stop) = (topic.clone(), sequence.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    topic.send(Tick(sequence.fetch_add(1, Ordering::SeqCst)));
                    common::yield_under_valgrind();
                }
            })
        })
        .collect();
    common::wait_until(|| sequence.load(Ordering::SeqCst) > 0);
    let (late, handled) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    for _ in 0..common::count(200) {
        let deregistered_at = Arc::new(AtomicU64::new(u64::MAX));
        let mut coop = env.new_coop();
        coop.set_binder(binder.clone());
        for _ in 0..2 {
            coop.add(Racer {
                deregistered_at: deregistered_at.clone(),
                late: late.clone(),
                handled: handled.clone(),
            });
        }
        let handle = env.register_coop(coop).unwrap();
        handle.deregister(DeregReason::Normal);
        deregistered_at.store(sequence.load(Ordering::SeqCst), Ordering::SeqCst);
    }
    stop.store(true, Ordering::Relaxed);
    publishers.into_iter().for_each(|p| p.join().unwrap());
    env.stop_and_wait();
    assert_eq!(
        late.load(Ordering::SeqCst),
        0,
        "{kind:?}: handled after deregister()"
    );
    let dead = dead.of::<Tick>();
    assert!(
        dead.iter().all(|r| matches!(
            r,
            DeliveryFailure::NoSubscriber | DeliveryFailure::ReceiverGone
        )),
        "{kind:?}: {:?}",
        dead.iter()
            .filter(|r| !matches!(
                r,
                DeliveryFailure::NoSubscriber | DeliveryFailure::ReceiverGone
            ))
            .collect::<Vec<_>>()
    );
}

#[test]
fn publishers_racing_deregistration_never_reach_it_after_it_returned() {
    dispatchers::on_every_kind(publishers_racing_deregistration)
}
