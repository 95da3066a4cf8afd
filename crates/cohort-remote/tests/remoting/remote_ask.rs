//! `Context::request` to an agent on another node, through a proxy: the reply, the
//! timeout, the remote side's reason for no reply, or the connection's break comes back
//! once, as an event of the asking agent. Two nodes in one process, on loopback.

use crate::common;

use cohort::{
    Agent, Context, DefineError, DeregReason, Environment, Mbox, Request, RequestError, Responder,
    WrappedEnv,
};
use cohort_remote::{Node, NodeConfig, Registry, RemoteNode};
use common::proxy::Proxy;
use common::*;
use serde::{Deserialize, Serialize};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::ThreadId;
use std::time::Duration;

/// What the asker asks: the answer is twice the number, except for 0, which is held.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Question(u64);

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register_request::<Question, u64>("t.Question").unwrap();
    r
}

/// On the server: doubles every question but 0, which it holds until `Release`; says when
/// it holds one.
struct Sitter {
    held: Vec<Responder<u64>>,
    holding: Sender<()>,
}
struct Release;
impl Agent for Sitter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(
            |me: &mut Self, r: &Request<Question, u64>, _: &mut Context<'_, Self>| match r
                .payload()
                .0
            {
                0 => {
                    me.held.extend(r.defer());
                    let _ = me.holding.send(());
                }
                n => {
                    r.reply(n * 2);
                }
            },
        )?;
        ctx.on(|me: &mut Self, _: &Release, _: &mut Context<'_, Self>| {
            for r in me.held.drain(..) {
                r.reply(1);
            }
        })?;
        Ok(())
    }
}

/// Handles nothing.
struct Mute;
impl Agent for Mute {}

/// One outcome: the question, what came back, the outcomes the asker had by then, and
/// whether it was handled on the asker's own thread.
type Outcome = (u64, Result<u64, RequestError>, usize, bool);

/// On the client: asks `to` on each `AskNow`, reports each outcome.
struct Asker {
    to: Mbox,
    out: Sender<Outcome>,
    outcomes: usize,
    home: Option<ThreadId>,
}
struct AskNow {
    n: u64,
    timeout: Option<Duration>,
}
impl Agent for Asker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, a: &AskNow, ctx: &mut Context<'_, Self>| {
            let n = a.n;
            let mut ask = ctx.request::<Question, u64>(&me.to, Question(n));
            if let Some(t) = a.timeout {
                ask = ask.timeout(t);
            }
            ask.then(move |me: &mut Self, r, _: &mut Context<'_, Self>| {
                me.outcomes += 1;
                let home = me.home == Some(std::thread::current().id());
                let _ = me.out.send((n, r, me.outcomes, home));
            })
            .expect("an active agent asks");
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.home = Some(std::thread::current().id());
    }
}

/// Registers an asker of `to`; returns its mailbox and its outcomes.
fn asker(env: &Environment, to: Mbox) -> (Mbox, Receiver<Outcome>) {
    let (out, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    let me = coop
        .add(Asker {
            to,
            out,
            outcomes: 0,
            home: None,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    (me, rx)
}

/// Registers a sitter and exports its mailbox as "sitter"; returns its mailbox and when it
/// holds a question.
fn sitter(env: &Environment, node: &Node) -> (Mbox, Receiver<()>) {
    let (holding, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    let mbox = coop
        .add(Sitter {
            held: Vec::new(),
            holding,
        })
        .mbox();
    env.register_coop(coop).unwrap();
    node.export_mbox("sitter", &mbox);
    (mbox, rx)
}

/// Two nodes in one environment: a server whose sitter is exported as "sitter", and a
/// client whose asker asks it through a proxy (over `link` when given one).
struct Pair {
    env: WrappedEnv,
    server: Node,
    client: Node,
    to_server: RemoteNode,
    sitter: Mbox,
    holding: Receiver<()>,
    asker: Mbox,
    outcomes: Receiver<Outcome>,
    link: Option<Proxy>,
}

fn pair(client: NodeConfig, through_a_link: bool) -> Pair {
    let env = Environment::builder().start().unwrap();
    let e = env.environment();
    let server = listening(&e, NodeConfig::new("server").token("t"), registry());
    let (sitter, holding) = sitter(&e, &server);
    let link = through_a_link.then(|| Proxy::start(server.local_addr().unwrap()));
    let addr = link
        .as_ref()
        .map_or_else(|| server.local_addr().unwrap(), Proxy::addr);
    let client = Node::start(&e, client.token("t"), registry()).unwrap();
    let to_server = client.connect(addr).unwrap();
    let (asker, outcomes) = asker(&e, to_server.mbox("sitter"));
    Pair {
        env,
        server,
        client,
        to_server,
        sitter,
        holding,
        asker,
        outcomes,
        link,
    }
}

impl Pair {
    fn ask(&self, n: u64, timeout: Option<Duration>) {
        self.asker.send(AskNow { n, timeout });
    }

    fn outcome(&self, what: &str) -> Outcome {
        recv(&self.outcomes, what)
    }

    fn shutdown(self) {
        self.client.shutdown();
        self.server.shutdown();
        self.env.stop_and_wait();
    }
}

/// On the client, on a thread of its own: asks with `Mbox::request` and blocks for the reply.
struct BlockingAsker {
    to: Mbox,
    out: Sender<Result<u64, RequestError>>,
}
impl Agent for BlockingAsker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me: &mut Self, a: &AskNow, _: &mut Context<'_, Self>| {
            let r = me
                .to
                .request::<Question, u64>(Question(a.n))
                .wait(TIMEOUT / 2);
            let _ = me.out.send(r);
        })?;
        Ok(())
    }
}

#[test]
fn a_handler_blocked_on_a_remote_request_gets_its_reply() {
    // The request leaves when its handler's turn ends, and the handler waits inside that
    // turn: the wait ends the turn's deferred work first. Heartbeats an hour apart, so that
    // no heartbeat wakes the client's writer meanwhile.
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let (server_config, client_config) = no_heartbeat_wakeups(
            NodeConfig::new("server").token("t"),
            NodeConfig::new("client").token("t"),
        );
        let nodes = two_nodes(
            (&e, server_config, registry()),
            (&e, client_config, registry()),
        );
        let (_sitter, _holding) = sitter(&e, &nodes.server);
        let (out, outcomes) = mpsc::channel();
        let asker = on_own_thread(
            &e,
            BlockingAsker {
                to: nodes.peer.mbox("sitter"),
                out,
            },
        );
        for n in [21, 5] {
            asker.send(AskNow { n, timeout: None });
            assert_eq!(recv(&outcomes, "the blocking ask's reply"), Ok(n * 2));
        }
        nodes.client.shutdown();
        nodes.server.shutdown();
        env.stop_and_wait();
    });
}

#[test]
fn a_remote_ask_gets_its_reply_once_on_the_askers_thread() {
    watchdog(TIMEOUT, || {
        let p = pair(NodeConfig::new("client"), false);
        p.ask(21, Some(TIMEOUT));
        assert_eq!(p.outcome("the reply"), (21, Ok(42), 1, true));
        // Another round trip on the same connection: nothing came in between.
        p.ask(5, None);
        assert_eq!(p.outcome("the second reply"), (5, Ok(10), 2, true));
        assert_eq!(p.client.stats().asks_waiting, 0);
        p.shutdown();
    });
}

#[test]
fn a_remote_ask_times_out_and_its_late_reply_is_dropped() {
    watchdog(TIMEOUT, || {
        let p = pair(NodeConfig::new("client"), false);
        let timeout = Duration::from_millis(100);
        p.ask(0, Some(timeout));
        recv(&p.holding, "the question held");
        assert_eq!(
            p.outcome("the timeout"),
            (0, Err(RequestError::Timeout(timeout)), 1, true)
        );
        // The late reply leaves the server before the next one (one sender, one peer): had
        // it been handed to the asker, the next outcome would be its third.
        p.sitter.send(Release);
        p.ask(4, None);
        assert_eq!(p.outcome("the next reply"), (4, Ok(8), 2, true));
        wait_until(|| p.client.stats().asks_waiting == 0);
        p.shutdown();
    });
}

#[test]
fn a_remote_ask_learns_why_there_is_no_reply() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let server = listening(&e, NodeConfig::new("server").token("t"), registry());
        // An agent gone before the question comes, and one with no handler for it.
        let mut coop = e.new_coop();
        let gone = coop.add(Mute).mbox();
        let handle = e.register_coop(coop).unwrap();
        handle.deregister(DeregReason::Normal);
        handle.wait_gone(TIMEOUT).unwrap();
        server.export_mbox("gone", &gone);
        let mut coop = e.new_coop();
        let mute = coop.add(Mute).mbox();
        e.register_coop(coop).unwrap();
        server.export_mbox("mute", &mute);

        let client = Node::start(&e, NodeConfig::new("client").token("t"), registry()).unwrap();
        let to_server = client.connect(server.local_addr().unwrap()).unwrap();
        for (name, why) in [
            ("gone", RequestError::ReceiverGone),
            ("mute", RequestError::NoHandler),
            (
                "not exported",
                RequestError::Refused(cohort::DeliveryFailure::NotExported),
            ),
        ] {
            let (me, outcomes) = asker(&e, to_server.mbox(name));
            me.send(AskNow {
                n: 7,
                timeout: Some(TIMEOUT),
            });
            assert_eq!(recv(&outcomes, name), (7, Err(why), 1, true), "{name}");
        }
        assert_eq!(client.stats().asks_waiting, 0);

        client.shutdown();
        server.shutdown();
        env.stop_and_wait();
    });
}

#[test]
fn a_cut_connection_fails_the_ask_in_doubt_and_a_down_node_refuses_it() {
    watchdog(TIMEOUT, || {
        // No reconnection while the test looks at the peer down.
        let slow = Duration::from_secs(3600);
        let p = pair(
            NodeConfig::new("client").reconnect_backoff(slow, slow),
            true,
        );

        // Held there (so surely written), then the link breaks.
        p.ask(0, None);
        recv(&p.holding, "the question held");
        assert_eq!(p.client.stats().asks_waiting, 1);
        p.link.as_ref().unwrap().cut();
        assert_eq!(
            p.outcome("the ask failed by the break"),
            (0, Err(RequestError::InDoubt), 1, true)
        );
        wait_until(|| !p.to_server.is_up());
        // Sent while the peer is down: not sent at all.
        p.ask(3, Some(TIMEOUT));
        assert_eq!(
            p.outcome("the ask to a node down"),
            (3, Err(RequestError::ReceiverGone), 2, true)
        );
        assert_eq!(p.client.stats().asks_waiting, 0);
        p.shutdown();
    });
}
