//! Messages sent around a deregistration, on every delivery path.

use super::*;

fn sends_around_deregistration(kind: Kind, path: Path) {
    let (env, dead) = start();
    let (queues, per_queue) = path.layout();
    let binders = agent_binders(
        &queue_binders(kind, &env, queues, per_queue.max(2)),
        per_queue,
    );
    let agents = binders.len();
    let topic = (path != Path::Direct).then(|| env.named_mbox("t"));
    let latch = Arc::new(Latch::default());
    let (before, after) = (Arc::default(), Arc::default());
    let (finished_tx, finished) = mpsc::channel();
    let mut coop = env.new_coop();
    let direct: Vec<Mbox> = binders
        .into_iter()
        .map(|b| {
            let agent = Subscriber {
                topic: topic.clone(),
                path,
                latch: latch.clone(),
                before: Arc::clone(&before),
                after: Arc::clone(&after),
                finished: finished_tx.clone(),
            };
            coop.add_with_binder(agent, b).mbox()
        })
        .collect();
    let handle = env.register_coop(coop).unwrap();
    direct.iter().for_each(|m| m.send(Hold));
    let send = |msg: &dyn Fn(&Mbox)| match &topic {
        Some(t) => msg(t),
        None => direct.iter().for_each(msg),
    };
    for _ in 0..SENDS {
        send(&|m| m.send(Before));
    }
    handle.deregister(DeregReason::Normal);
    for _ in 0..SENDS {
        send(&|m| m.send(After));
    }
    latch.open();
    common::recv_n(&finished, agents, "every agent to finish");
    let what = format!("{kind:?}/{path:?}");
    assert_eq!(
        before.load(Ordering::SeqCst),
        SENDS * agents,
        "{what}: sent before deregistration: handled"
    );
    assert_eq!(dead.of::<Before>(), vec![], "{what}");
    assert_eq!(
        after.load(Ordering::SeqCst),
        0,
        "{what}: handled after deregistration"
    );
    let expected = match path {
        Path::Direct => vec![DeliveryFailure::ReceiverGone; SENDS * agents],
        _ => vec![DeliveryFailure::NoSubscriber; SENDS],
    };
    assert_eq!(
        dead.of::<After>(),
        expected,
        "{what}: sent after deregistration"
    );
    env.stop_and_wait();
}

fn on_every_kind(path: Path) {
    dispatchers::on_every_kind(move |kind| sends_around_deregistration(kind, path))
}

#[test]
fn direct() {
    on_every_kind(Path::Direct)
}
#[test]
fn named_sole_subscriber() {
    on_every_kind(Path::Sole)
}
#[test]
fn named_one_subscriber_per_queue() {
    on_every_kind(Path::OnePerQueue)
}
#[test]
fn named_subscribers_sharing_a_queue() {
    on_every_kind(Path::SharedQueue)
}
#[test]
fn named_broadcast_log() {
    on_every_kind(Path::Log)
}
#[test]
fn named_broadcast_log_shared_queues() {
    on_every_kind(Path::LogShared)
}
#[test]
fn named_with_delivery_filters() {
    on_every_kind(Path::Filtered)
}
#[test]
fn named_with_message_limits() {
    on_every_kind(Path::Limited)
}
