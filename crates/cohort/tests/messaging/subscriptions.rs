//! Subscriptions changed at run time, from `start` or a handler: new subscriptions apply from
//! the next message, a duplicate is an error, `unsubscribe` stops delivery.

use crate::common;

use cohort::{Agent, Context, DefineError, DeliveryFailure, Environment, SubscribeError};
use common::{DeadLetters, TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};

#[derive(Debug, Clone, Copy)]
struct Ping;

#[derive(Debug, Clone, Copy)]
struct Enable;

#[derive(Debug, Clone, Copy)]
struct Disable;

/// What the agent reports to the test.
#[derive(Debug, PartialEq, Eq)]
enum Report {
    Pong,
    Subscribed(Result<(), SubscribeError>),
    Unsubscribed(bool),
}

/// Subscribes to `Ping` on `Enable`; unsubscribes on `Disable`.
struct Switch {
    tx: Sender<Report>,
}

impl Switch {
    fn on_ping(&mut self, _: &Ping, _: &mut Context<'_, Self>) {
        let _ = self.tx.send(Report::Pong);
    }
}

impl Agent for Switch {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, _: &Enable, ctx: &mut Context<'_, Self>| {
            let r = ctx.on(Self::on_ping);
            let _ = me.tx.send(Report::Subscribed(r));
        })?;
        ctx.on(|me: &mut Self, _: &Disable, ctx: &mut Context<'_, Self>| {
            let removed = ctx.unsubscribe::<Ping>();
            let _ = me.tx.send(Report::Unsubscribed(removed));
        })?;
        Ok(())
    }
}

fn start_switch() -> (
    cohort::WrappedEnv,
    DeadLetters,
    cohort::Mbox,
    mpsc::Receiver<Report>,
) {
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    let switch = coop.add(Switch { tx }).mbox();
    env.register_coop(coop).unwrap();
    (env, dead, switch, rx)
}

#[test]
fn a_subscription_made_in_a_handler_applies_from_the_next_message() {
    watchdog(TIMEOUT, || {
        let (env, dead, switch, rx) = start_switch();
        switch.send(Ping); // not subscribed yet
        switch.send(Enable);
        switch.send(Ping);
        assert_eq!(
            common::recv(&rx, "Enable's report"),
            Report::Subscribed(Ok(()))
        );
        assert_eq!(common::recv(&rx, "the pong"), Report::Pong);
        assert_eq!(dead.of::<Ping>(), vec![DeliveryFailure::NoHandler]);
        env.stop_and_wait();
    });
}

/// "A second subscription for the same type is an error" (`Context::on`): from a handler too.
#[test]
fn subscribing_twice_from_a_handler_is_an_error() {
    watchdog(TIMEOUT, || {
        let (env, _dead, switch, rx) = start_switch();
        switch.send(Enable);
        assert_eq!(
            common::recv(&rx, "the first Enable"),
            Report::Subscribed(Ok(()))
        );
        switch.send(Enable);
        assert_eq!(
            common::recv(&rx, "the second Enable"),
            Report::Subscribed(Err(SubscribeError::AlreadySubscribed {
                message_type: std::any::type_name::<Ping>()
            })),
            "a duplicate subscription made in a handler must be refused, not silently dropped"
        );
        env.stop_and_wait();
    });
}

/// `Context::unsubscribe`: "removes the subscription ...; true if there was one. Takes effect
/// for the next message".
#[test]
fn unsubscribing_in_a_handler_stops_delivery() {
    watchdog(TIMEOUT, || {
        let (env, dead, switch, rx) = start_switch();
        switch.send(Enable);
        switch.send(Ping);
        assert_eq!(
            common::recv(&rx, "Enable's report"),
            Report::Subscribed(Ok(()))
        );
        assert_eq!(common::recv(&rx, "the pong"), Report::Pong);

        switch.send(Disable);
        switch.send(Ping);
        switch.send(Enable); // a marker: its report comes after the ping was dealt with
        let reports = common::recv_n(&rx, 2, "Disable's and Enable's reports");
        env.stop_and_wait();
        assert_eq!(
            reports,
            vec![Report::Unsubscribed(true), Report::Subscribed(Ok(()))],
            "unsubscribe from a handler must remove the subscription (and say so), and the \
             next Ping must find no handler"
        );
        assert_eq!(dead.of::<Ping>(), vec![DeliveryFailure::NoHandler]);
    });
}

/// Unsubscribes in `define` what it subscribed there: that works on the agent's own table.
struct DefineUnsubscriber {
    tx: Sender<bool>,
}

impl Agent for DefineUnsubscriber {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|_: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {})?;
        let removed = ctx.unsubscribe::<Ping>();
        let _ = self.tx.send(removed);
        let _ = self.tx.send(ctx.unsubscribe::<Ping>());
        Ok(())
    }
}

#[test]
fn unsubscribing_in_define() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let m = coop.add(DefineUnsubscriber { tx }).mbox();
        env.register_coop(coop).unwrap();
        assert!(common::recv(&rx, "the first unsubscribe"));
        assert!(!common::recv(&rx, "the second unsubscribe"));
        m.send(Ping);
        let env2: Environment = env.environment();
        env.stop_and_wait();
        assert_eq!(env2.dead_letters(), 1);
        assert_eq!(dead.of::<Ping>(), vec![DeliveryFailure::NoHandler]);
    });
}

/// Subscribes to `Ping` in `define` with handlers that capture nothing (so agents of this
/// type share one table); `Disable` unsubscribes it, `Enable` subscribes it again.
struct Member {
    id: usize,
    tx: Sender<(usize, Report)>,
}

impl Member {
    fn on_ping(&mut self, _: &Ping, _: &mut Context<'_, Self>) {
        let _ = self.tx.send((self.id, Report::Pong));
    }
}

impl Agent for Member {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(Self::on_ping)?;
        ctx.on(|me: &mut Self, _: &Disable, ctx: &mut Context<'_, Self>| {
            let removed = ctx.unsubscribe::<Ping>();
            let _ = me.tx.send((me.id, Report::Unsubscribed(removed)));
        })?;
        ctx.on(|me: &mut Self, _: &Enable, ctx: &mut Context<'_, Self>| {
            let r = ctx.on(Self::on_ping);
            let _ = me.tx.send((me.id, Report::Subscribed(r)));
        })?;
        Ok(())
    }
}

/// Agents of one type that subscribed alike in `define` share their subscription table (see
/// `Subscriptions::share`): what one of them changes afterwards is its own, the others keep
/// theirs, and each one's handlers see only messages sent to it.
#[test]
fn a_change_made_by_one_agent_of_a_type_stays_with_it() {
    watchdog(TIMEOUT, || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let members: Vec<cohort::Mbox> = (0..4)
            .map(|id| coop.add(Member { id, tx: tx.clone() }).mbox())
            .collect();
        env.register_coop(coop).unwrap();

        members[1].send(Disable);
        assert_eq!(
            common::recv(&rx, "Disable's report"),
            (1, Report::Unsubscribed(true))
        );
        for m in &members {
            m.send(Ping);
        }
        // A marker behind the pings (one queue): its report comes after every pong.
        members[1].send(Enable);
        let mut reports = common::recv_n(&rx, 4, "three pongs and Enable's report");
        reports.sort_by_key(|(id, _)| *id);
        assert_eq!(
            reports,
            vec![
                (0, Report::Pong),
                (1, Report::Subscribed(Ok(()))),
                (2, Report::Pong),
                (3, Report::Pong),
            ],
            "the agent that unsubscribed must miss the ping, the others must each get theirs"
        );
        assert_eq!(dead.of::<Ping>(), vec![DeliveryFailure::NoHandler]);

        // Subscribed again, it handles pings like the others; a second Disable elsewhere
        // leaves it alone.
        members[3].send(Disable);
        assert_eq!(
            common::recv(&rx, "the second Disable's report"),
            (3, Report::Unsubscribed(true))
        );
        for m in &members {
            m.send(Ping);
        }
        let mut pongs = common::recv_n(&rx, 3, "three pongs");
        pongs.sort_by_key(|(id, _)| *id);
        assert_eq!(
            pongs,
            vec![(0, Report::Pong), (1, Report::Pong), (2, Report::Pong)]
        );
        env.stop_and_wait();
        assert_eq!(
            dead.of::<Ping>(),
            vec![DeliveryFailure::NoHandler, DeliveryFailure::NoHandler]
        );
    });
}
