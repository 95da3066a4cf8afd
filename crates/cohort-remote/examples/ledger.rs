//! A node crashes mid-stream, and a ledger shows that every message was handled once or
//! counted.
//!
//! `cargo run -p cohort-remote --example ledger`
//!
//! What it shows:
//! - `cohort::testing::ledger::Ledger`: the sender numbers each message, the receiving agent
//!   records what it handles, the dead-letter hook records what the runtime counted;
//! - a crash of the receiving node (`Node::abort`) while messages flow: those still queued
//!   are `NodeDown` dead letters, those written and not yet acknowledged by the receiver are
//!   `InDoubt` (handled there once, or not at all), none is lost uncounted.

use cohort::testing::ledger::Ledger;
use cohort::{Agent, Context, DeadLetter, DefineError, Environment, Mbox};
use cohort_remote::{Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Numbered(u64);

/// Records every message it handles.
struct Sink {
    inbox: Mbox,
    ledger: Arc<Ledger>,
    handled: Arc<AtomicU64>,
}

impl Agent for Sink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(&inbox, |me, m: &Numbered, _| {
            me.ledger.handled("client", "server", m.0);
            me.handled.fetch_add(1, Ordering::Relaxed);
        })?;
        Ok(())
    }
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Numbered>("example.Numbered").unwrap();
    r
}

fn main() {
    let ledger = Arc::new(Ledger::new());
    let env_with_hook = || {
        let l = ledger.clone();
        Environment::builder()
            .dead_letter_hook(move |d: &DeadLetter| l.dead_letter(d.reason))
            .start()
            .expect("an environment")
    };
    let (server_env, client_env) = (env_with_hook(), env_with_hook());

    let server = Node::start(
        &server_env.environment(),
        NodeConfig::new("server").listen("127.0.0.1:0".parse().unwrap()),
        registry(),
    )
    .expect("the server node");
    let handled = Arc::new(AtomicU64::new(0));
    let mut coop = server_env.environment().new_coop();
    coop.add(Sink {
        inbox: server.export("sink"),
        ledger: ledger.clone(),
        handled: handled.clone(),
    });
    server_env.environment().register_coop(coop).unwrap();

    let client = Node::start(
        &client_env.environment(),
        NodeConfig::new("client"),
        registry(),
    )
    .expect("the client node");
    let to = client
        .connect(server.local_addr().unwrap())
        .expect("connected")
        .mbox("sink");
    let sender = {
        let ledger = ledger.clone();
        std::thread::spawn(move || {
            for _ in 0..200_000 {
                to.send(Numbered(ledger.next("client", "server")));
            }
        })
    };
    // Once some messages got through, the server crashes (no Bye, no flush).
    while handled.load(Ordering::Relaxed) < 10_000 && !sender.is_finished() {
        std::thread::yield_now();
    }
    server.abort();
    sender.join().unwrap();
    client.shutdown();
    client_env.stop_and_wait();
    server_env.stop_and_wait();

    match ledger.check() {
        Ok(r) => println!(
            "sent {}, handled {}, dead letters {:?}, in doubt {} ({} of them handled): none unaccounted",
            r.sent, r.handled, r.dead, r.in_doubt, r.in_doubt_handled
        ),
        Err(v) => panic!("the ledger found {v:?}"),
    }
    println!("done: ledger");
}
