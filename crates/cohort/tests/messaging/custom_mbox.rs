//! Custom mailboxes: user-written delivery behind the ordinary `Mbox` handle.

use crate::common;

use cohort::{
    Agent, AnyMessage, Context, CustomMbox, DefineError, Mbox, SendError, SubscribeError,
};
use common::{Probe, TIMEOUT, watchdog};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Forwards everything it receives to another mailbox, keeping the results.
struct Relay {
    to: Mbox,
    results: Mutex<Vec<Result<(), SendError>>>,
    single_consumer: bool,
}

impl CustomMbox for Relay {
    fn deliver(&self, msg: AnyMessage) {
        let r = msg.forward(&self.to);
        self.results.lock().unwrap().push(r);
    }
    fn accepts_mutable(&self) -> bool {
        self.single_consumer
    }
    fn name(&self) -> Option<&str> {
        Some("relay")
    }
}

fn relay(to: Mbox, single_consumer: bool) -> Arc<Relay> {
    Arc::new(Relay {
        to,
        results: Mutex::new(Vec::new()),
        single_consumer,
    })
}

#[test]
fn forwarded_to_a_named_mailbox_reaches_every_subscriber() {
    watchdog(TIMEOUT, || {
        let probe: Probe<String> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        let topic = env.named_mbox("topic");
        struct Sub(Mbox, Mbox, &'static str);
        impl Agent for Sub {
            fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
                let topic = self.0.clone();
                ctx.subscribe(
                    &topic,
                    |me: &mut Self, s: &String, _: &mut Context<'_, Self>| {
                        me.1.send(format!("{}:{s}", me.2))
                    },
                )?;
                Ok(())
            }
        }
        let mut coop = env.new_coop();
        coop.add(Sub(topic.clone(), probe.mbox.clone(), "a"));
        coop.add(Sub(topic.clone(), probe.mbox.clone(), "b"));
        env.register_coop(coop).unwrap();
        let r = relay(topic, false);
        let mbox = Mbox::custom(r.clone());
        // A boxed (non-inline) message: the relay makes it shareable for two receivers.
        mbox.send(String::from("hello"));
        let mut got = probe.recv_n(2, "both subscribers");
        got.sort();
        assert_eq!(got, ["a:hello", "b:hello"]);
        assert_eq!(*r.results.lock().unwrap(), [Ok(())]);
        env.stop_and_wait();
        probe.shutdown();
    })
}

#[test]
fn mutable_messages_follow_accepts_mutable() {
    watchdog(TIMEOUT, || {
        let probe: Probe<u64> = Probe::new();
        let env = cohort::Environment::builder().start().unwrap();
        struct Taker(Mbox);
        impl Agent for Taker {
            fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
                ctx.on_mut(|me: &mut Self, v: Vec<u64>, _: &mut Context<'_, Self>| {
                    me.0.send(v.iter().sum::<u64>())
                })?;
                Ok(())
            }
        }
        let mut coop = env.new_coop();
        let taker = coop.add(Taker(probe.mbox.clone())).mbox();
        env.register_coop(coop).unwrap();

        let single = Mbox::custom(relay(taker.clone(), true));
        assert_eq!(single.send_mut(vec![1u64, 2, 3]), Ok(()));
        assert_eq!(probe.recv("the mutable message through the relay"), 6);

        let multi = Mbox::custom(relay(taker, false));
        let err = multi.send_mut(vec![1u64]).unwrap_err();
        assert!(
            matches!(err, SendError::MutableToMultiConsumer { ref mailbox, .. } if mailbox == "relay")
        );
        // A mutable message forwarded to a named mailbox is refused too, as a typed error.
        let r = relay(env.named_mbox("n"), true);
        Mbox::custom(r.clone()).send_mut(5u8).unwrap();
        assert!(matches!(
            r.results.lock().unwrap()[0],
            Err(SendError::MutableToMultiConsumer { .. })
        ));
        env.stop_and_wait();
        probe.shutdown();
    })
}

#[test]
fn agents_cannot_subscribe_to_a_custom_mailbox() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let custom = Mbox::custom(relay(env.anonymous_mbox(), false));
        struct Tries(Mbox, Option<SubscribeError>);
        impl Agent for Tries {
            fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
                let m = self.0.clone();
                self.1 = ctx
                    .subscribe(&m, |_: &mut Self, _: &u8, _: &mut Context<'_, Self>| {})
                    .err();
                assert!(matches!(
                    self.1,
                    Some(SubscribeError::NotSubscribable { .. })
                ));
                Ok(())
            }
        }
        let mut coop = env.new_coop();
        coop.add(Tries(custom.clone(), None));
        env.register_coop(coop).unwrap();
        assert!(format!("{custom:?}").contains("relay"));
        env.stop_and_wait();
    })
}

#[test]
fn payloads_are_dropped_exactly_once() {
    watchdog(TIMEOUT, || {
        struct Counted(Arc<AtomicUsize>, #[allow(dead_code)] [u64; 4]);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        struct Sink;
        impl CustomMbox for Sink {
            fn deliver(&self, msg: AnyMessage) {
                match msg.downcast::<Counted>() {
                    Ok(c) => drop(c),
                    Err(other) => drop(other),
                }
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let sink = Mbox::custom(Sink);
        sink.send(Counted(drops.clone(), [0; 4]));
        sink.send_mut(Counted(drops.clone(), [0; 4])).unwrap_err();
        drop(AnyMessage::new(Counted(drops.clone(), [0; 4])));
        assert_eq!(drops.load(Ordering::SeqCst), 3);
    });
}
