//! Message delivery tracing: off by default, on from the builder or at run time, each step
//! reported once, filters by message type, mailbox and agent, and the stderr printer.

use crate::common;

use cohort::{
    Agent, Context, DefineError, DeliveryFailure, Environment, Mbox, MessageLimits, MessageTracing,
    TraceStep,
};
use common::{Idle, TIMEOUT, recv, watchdog};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ping(u32);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Other;

/// Reports each `Ping` it handles (after the tracer saw it handled); handles `Other` silently.
type Echo = common::echo::Echo<Ping>;

/// A recorded event: step, message type, mailbox, agent.
type Recorded = (
    TraceStep,
    &'static str,
    Option<cohort::MboxId>,
    Option<cohort::MboxId>,
);

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Recorded>>>);

impl Log {
    fn tracing(&self) -> MessageTracing {
        let log = self.clone();
        MessageTracing::to_fn(move |e| {
            log.0
                .lock()
                .unwrap()
                .push((e.step, e.message_type, e.mbox, e.agent))
        })
    }
    fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
    fn steps(&self) -> Vec<TraceStep> {
        self.take().into_iter().map(|r| r.0).collect()
    }
}

fn with_echo(
    builder: cohort::EnvironmentBuilder,
) -> (cohort::WrappedEnv, Mbox, mpsc::Receiver<u32>) {
    let env = builder.start().unwrap();
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    let echo = coop
        .add(Echo::map(tx, |p| p.0).also(|ctx| ctx.on(|_, _: &Other, _| {})))
        .mbox();
    env.register_coop(coop).unwrap();
    (env, echo, rx)
}

#[test]
fn each_step_is_traced_once_and_tracing_turns_off_at_run_time() {
    watchdog(TIMEOUT, || {
        let ping = std::any::type_name::<Ping>();
        let log = Log::default();
        let builder = Environment::builder().message_tracing(log.tracing().message_type::<Ping>());
        let (env, echo, rx) = with_echo(builder);
        echo.send(Ping(1));
        echo.send(Other); // filtered out by type
        assert_eq!(recv(&rx, "the ping"), 1);
        let id = Some(echo.id());
        assert_eq!(
            log.take(),
            vec![
                (TraceStep::Sent, ping, id, None),
                (TraceStep::Queued, ping, id, id),
                (TraceStep::Handled, ping, id, id),
            ]
        );
        env.set_message_tracing(None);
        echo.send(Ping(2));
        assert_eq!(recv(&rx, "the second ping"), 2);
        assert_eq!(log.take(), vec![]);
        // And on again at run time.
        env.set_message_tracing(Some(log.tracing()));
        echo.send(Ping(3));
        assert_eq!(recv(&rx, "the third ping"), 3);
        assert_eq!(
            log.steps(),
            vec![TraceStep::Sent, TraceStep::Queued, TraceStep::Handled]
        );
        env.stop_and_wait();
    });
}

#[test]
fn off_by_default() {
    watchdog(TIMEOUT, || {
        let log = Log::default();
        // Another environment traces; this one does not, so its messages are not reported.
        let _tracing = Environment::builder()
            .message_tracing(log.tracing())
            .start()
            .unwrap();
        let (env, echo, rx) = with_echo(Environment::builder());
        echo.send(Ping(1));
        assert_eq!(recv(&rx, "the ping"), 1);
        assert_eq!(log.take(), vec![]);
        env.stop_and_wait();
    });
}

#[test]
fn filters_by_mailbox_and_agent_and_drops_with_their_reason() {
    watchdog(TIMEOUT, || {
        let log = Log::default();
        let (env, echo, rx) = with_echo(Environment::builder());
        let mut coop = env.new_coop();
        let idle = coop.add(Idle).mbox();
        env.register_coop(coop).unwrap();
        // By agent: only what concerns `echo` (its queueing and handling).
        env.set_message_tracing(Some(log.tracing().agent(&echo)));
        echo.send(Ping(1));
        idle.send(Ping(2));
        assert_eq!(recv(&rx, "the ping"), 1);
        // `idle` may drop its ping after `echo` handled its own: wait for that drop, so that
        // it is not reported by the next tracer.
        common::wait_until(|| env.dead_letters() == 1);
        assert_eq!(log.steps(), vec![TraceStep::Queued, TraceStep::Handled]);
        // By mailbox: `idle` only; its missing handler is a drop with the reason (the drop
        // names the mailbox and the agent).
        env.set_message_tracing(Some(log.tracing().mbox(&idle)));
        echo.send(Ping(3));
        assert_eq!(recv(&rx, "the ping"), 3);
        idle.send(Ping(4));
        common::wait_until(|| env.dead_letters() == 2);
        assert_eq!(
            log.steps(),
            vec![
                TraceStep::Sent,
                TraceStep::Queued,
                TraceStep::Dropped(DeliveryFailure::NoHandler)
            ]
        );
        // Unfiltered, the same.
        env.set_message_tracing(Some(log.tracing()));
        idle.send(Ping(5));
        common::wait_until(|| env.dead_letters() == 3);
        assert_eq!(
            log.steps(),
            vec![
                TraceStep::Sent,
                TraceStep::Queued,
                TraceStep::Dropped(DeliveryFailure::NoHandler)
            ]
        );
        env.stop_and_wait();
    });
}

/// Redirects every `Ping` to `to`.
struct Redirector {
    to: Mbox,
}

impl Agent for Redirector {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.set_message_limits(MessageLimits::new().redirect::<Ping>(0, &self.to))?;
        Ok(())
    }
}

/// Subscribes to `Ping` on `on`, filtering out `Ping(2)`.
struct Picky {
    on: Mbox,
}

impl Agent for Picky {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let on = self.on.clone();
        ctx.subscribe(&on, |_: &mut Self, _: &Ping, _: &mut Context<'_, Self>| {})?;
        ctx.set_delivery_filter(&on, |p: &Ping| p.0 != 2)?;
        Ok(())
    }
}

#[test]
fn redirects_and_filtered_out_messages_are_traced() {
    watchdog(TIMEOUT, || {
        let ping = std::any::type_name::<Ping>();
        let log = Log::default();
        let (env, echo, rx) = with_echo(Environment::builder().message_tracing(log.tracing()));
        let mut coop = env.new_coop();
        let redirector = coop.add(Redirector { to: echo.clone() }).mbox();
        env.register_coop(coop).unwrap();
        log.take();
        redirector.send(Ping(1));
        assert_eq!(recv(&rx, "the redirected ping"), 1);
        let echo_id = Some(echo.id());
        let r_id = Some(redirector.id());
        assert_eq!(
            log.take(),
            vec![
                (TraceStep::Sent, ping, r_id, None),
                (TraceStep::Redirected { to: echo.id() }, ping, None, r_id),
                (TraceStep::Queued, ping, echo_id, echo_id),
                (TraceStep::Handled, ping, echo_id, echo_id),
            ]
        );
        let named = env.named_mbox("picky");
        let mut coop = env.new_coop();
        let picky = coop.add(Picky { on: named.clone() }).mbox();
        env.register_coop(coop).unwrap();
        env.set_message_tracing(Some(log.tracing().mbox(&named)));
        named.send(Ping(2));
        let (n_id, p_id) = (Some(named.id()), Some(picky.id()));
        assert_eq!(
            log.take(),
            vec![
                (TraceStep::Sent, ping, n_id, None),
                (TraceStep::FilteredOut, ping, n_id, p_id),
            ]
        );
        env.stop_and_wait();
    });
}

const STDERR_CHILD: &str = "COHORT_TEST_TRACE_STDERR_CHILD";

#[test]
fn the_stderr_printer_writes_one_line_per_step() {
    if std::env::var_os(STDERR_CHILD).is_some() {
        let (env, echo, rx) = with_echo(
            Environment::builder()
                .message_tracing(MessageTracing::to_stderr().message_type::<Ping>()),
        );
        echo.send(Ping(1));
        assert_eq!(recv(&rx, "the ping"), 1);
        env.stop_and_wait();
        return;
    }
    watchdog(TIMEOUT, || {
        let ping = std::any::type_name::<Ping>();
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                common::test_path(
                    module_path!(),
                    "the_stderr_printer_writes_one_line_per_step",
                )
                .as_str(),
                "--nocapture",
            ])
            .env(STDERR_CHILD, "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("cohort trace: "))
            .collect();
        assert_eq!(lines.len(), 3, "{stderr}");
        assert!(lines[0].starts_with(&format!("cohort trace: sent msg=`{ping}` mbox=0x")));
        assert!(lines[1].starts_with(&format!("cohort trace: queued msg=`{ping}`")));
        assert!(lines[2].starts_with(&format!("cohort trace: handled msg=`{ping}`")));
        assert!(
            lines[2].ends_with(&format!("name={}", std::any::type_name::<Echo>())),
            "{}",
            lines[2]
        );
    });
}

/// A minimal `tracing` subscriber that keeps the target and message of every event.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<(String, String)>>>);

struct MessageField(String);

impl tracing::field::Visit for MessageField {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = MessageField(String::new());
        event.record(&mut m);
        let target = event.metadata().target().to_string();
        self.0.lock().unwrap().push((target, m.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn the_tracing_sink_emits_events_under_cohort_trace() {
    watchdog(TIMEOUT, || {
        let ping = std::any::type_name::<Ping>();
        let capture = Capture::default();
        let (env, echo, rx) = with_echo(Environment::builder());
        env.set_message_tracing(Some(MessageTracing::to_tracing().mbox(&echo)));
        // The sender's steps run on this thread, under this thread's subscriber.
        tracing::subscriber::with_default(capture.clone(), || echo.send(Ping(1)));
        assert_eq!(recv(&rx, "the ping"), 1);
        let got = capture.0.lock().unwrap().clone();
        let ours: Vec<_> = got.iter().filter(|(t, _)| t == "cohort::trace").collect();
        assert_eq!(ours.len(), 2, "{got:?}");
        assert!(
            ours[0].1.starts_with(&format!("sent msg=`{ping}`")),
            "{got:?}"
        );
        assert!(
            ours[1].1.starts_with(&format!("queued msg=`{ping}`")),
            "{got:?}"
        );
        env.stop_and_wait();
    });
}
