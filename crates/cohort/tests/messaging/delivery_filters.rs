//! Delivery filters: a per-subscriber predicate on a multi-consumer (or unique-subscribers)
//! mailbox; a rejected message is not queued for that subscriber, others still get it.

use crate::common;

use cohort::{Agent, Context, DefineError, Mbox, SubscribeError};
use common::{DeadLetters, TIMEOUT, recv, recv_n, watchdog};
use std::sync::mpsc::{self, Sender};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Price(u64);

/// Stops filtering (a message to the agent's direct mailbox).
struct Unfilter;

/// Subscribes to `Price` on `prices`, filtered to prices below `below` when set; reports
/// `(index, price)` for each one it handles.
struct Watcher {
    prices: Mbox,
    below: Option<u64>,
    index: usize,
    seen: Sender<(usize, u64)>,
}

impl Agent for Watcher {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let prices = self.prices.clone();
        ctx.subscribe(
            &prices,
            |me: &mut Self, p: &Price, _: &mut Context<'_, Self>| {
                let _ = me.seen.send((me.index, p.0));
            },
        )?;
        if let Some(below) = self.below {
            ctx.set_delivery_filter(&prices, move |p: &Price| p.0 < below)?;
        }
        ctx.on(|me: &mut Self, _: &Unfilter, ctx: &mut Context<'_, Self>| {
            let prices = me.prices.clone();
            assert!(ctx.drop_delivery_filter::<Price>(&prices));
            let _ = me.seen.send((me.index, u64::MAX));
        })?;
        Ok(())
    }
}

#[test]
fn a_filter_rejects_for_its_subscriber_only_and_can_be_dropped() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let prices = env.named_mbox("prices");
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let filtered = coop
            .add(Watcher {
                prices: prices.clone(),
                below: Some(10),
                index: 0,
                seen: tx.clone(),
            })
            .mbox();
        coop.add(Watcher {
            prices: prices.clone(),
            below: None,
            index: 1,
            seen: tx,
        });
        env.register_coop(coop).unwrap();
        for p in [500, 5, 70, 7] {
            prices.send(Price(p));
        }
        let mut got = recv_n(&rx, 6, "the prices");
        got.sort();
        assert_eq!(got, vec![(0, 5), (0, 7), (1, 5), (1, 7), (1, 70), (1, 500)]);
        // A filtered-out message is not a dead letter.
        assert_eq!(dead.all(), vec![]);
        // Without the filter, everything passes again.
        filtered.send(Unfilter);
        assert_eq!(recv(&rx, "the filter dropped"), (0, u64::MAX));
        prices.send(Price(900));
        let mut got = recv_n(&rx, 2, "the unfiltered price");
        got.sort();
        assert_eq!(got, vec![(0, 900), (1, 900)]);
        env.stop_and_wait();
    });
}

#[test]
fn filters_work_on_a_unique_subscribers_mailbox() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let prices = env.unique_subscribers_mbox();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(Watcher {
            prices: prices.clone(),
            below: Some(3),
            index: 0,
            seen: tx,
        });
        env.register_coop(coop).unwrap();
        for p in 0..6 {
            prices.send(Price(p));
        }
        assert_eq!(recv_n(&rx, 3, "the prices"), vec![(0, 0), (0, 1), (0, 2)]);
        env.stop_and_wait();
    });
}

/// Tries the filters the test names and reports each result.
struct BadFilters {
    named: Mbox,
    out: Sender<Result<(), SubscribeError>>,
}

impl Agent for BadFilters {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let own = ctx.self_mbox();
        ctx.on(|_: &mut Self, _: &Price, _: &mut Context<'_, Self>| {})?;
        let _ = self
            .out
            .send(ctx.set_delivery_filter(&own, |_: &Price| true));
        let named = self.named.clone();
        let _ = self
            .out
            .send(ctx.set_delivery_filter(&named, |_: &Price| true));
        Ok(())
    }
}

#[test]
fn bad_filters_are_typed_errors() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(BadFilters {
            named: env.named_mbox("n"),
            out: tx,
        });
        env.register_coop(coop).unwrap();
        let price = std::any::type_name::<Price>();
        let direct = recv(&rx, "the direct-mailbox result").unwrap_err();
        assert_eq!(
            direct,
            SubscribeError::FilterOnDirectMailbox {
                message_type: price
            }
        );
        assert!(direct.to_string().contains("direct mailbox"), "{direct}");
        let unsubscribed = recv(&rx, "the no-subscription result").unwrap_err();
        assert_eq!(
            unsubscribed,
            SubscribeError::FilterWithoutSubscription {
                message_type: price
            }
        );
        assert!(
            unsubscribed.to_string().contains("subscribe first"),
            "{unsubscribed}"
        );
        env.stop_and_wait();
    });
}

/// A filter that panics: counted, the message is a dead letter for that subscriber.
struct Panicky {
    prices: Mbox,
}

impl Agent for Panicky {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let prices = self.prices.clone();
        ctx.subscribe(
            &prices,
            |_: &mut Self, _: &Price, _: &mut Context<'_, Self>| {},
        )?;
        ctx.set_delivery_filter(&prices, |p: &Price| {
            assert!(p.0 != 13, "unlucky");
            true
        })?;
        Ok(())
    }
}

#[test]
fn a_panicking_filter_is_counted_not_propagated() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let prices = env.named_mbox("p");
        let mut coop = env.new_coop();
        coop.add(Panicky {
            prices: prices.clone(),
        });
        env.register_coop(coop).unwrap();
        prices.send(Price(13));
        assert_eq!(env.panics(), 1);
        assert_eq!(
            dead.of::<Price>(),
            vec![cohort::DeliveryFailure::FilterPanicked]
        );
        env.stop_and_wait();
    });
}

/// Takes `Vec<u64>` by value from a unique-subscribers mailbox, filtered to non-empty ones.
struct TakesNonEmpty {
    jobs: Mbox,
    seen: Sender<Vec<u64>>,
}

impl Agent for TakesNonEmpty {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let jobs = self.jobs.clone();
        ctx.subscribe_mut(
            &jobs,
            |me: &mut Self, v: Vec<u64>, _: &mut Context<'_, Self>| {
                let _ = me.seen.send(v);
            },
        )?;
        ctx.set_delivery_filter(&jobs, |v: &cohort::Mutable<Vec<u64>>| !v.0.is_empty())?;
        Ok(())
    }
}

#[test]
fn a_filter_on_mutable_messages_reads_them_in_place() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let jobs = env.unique_subscribers_mbox();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.add(TakesNonEmpty {
            jobs: jobs.clone(),
            seen: tx,
        });
        env.register_coop(coop).unwrap();
        jobs.send_mut(Vec::<u64>::new()).unwrap();
        jobs.send_mut(vec![1u64, 2]).unwrap();
        jobs.send_mut(Vec::<u64>::new()).unwrap();
        jobs.send_mut(vec![3u64]).unwrap();
        assert_eq!(
            recv_n(&rx, 2, "the non-empty jobs"),
            vec![vec![1, 2], vec![3]]
        );
        assert_eq!(env.dead_letters(), 0);
        env.stop_and_wait();
    });
}
