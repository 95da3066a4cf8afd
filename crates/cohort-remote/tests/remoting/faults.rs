//! Faults checked by an independent ledger (`cohort::testing::ledger`): connections broken
//! mid-stream, every message handled once or counted, none lost uncounted, none duplicated,
//! and each sender's messages handled in order.

use crate::common;

use cohort::testing::ledger::Ledger;
use cohort::{Agent, Context, DeadLetter, DefineError, Environment, Mbox};
use cohort_remote::{Node, NodeConfig, Overflow, Registry};
use common::proxy::Proxy;
use common::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// A message numbered by the ledger.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Numbered {
    sender: u32,
    seq: u64,
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Numbered>("t.Numbered").unwrap();
    r
}

fn sender_name(i: u32) -> String {
    format!("sender-{i}")
}

/// Records each message it handles in the ledger.
struct Sink {
    inbox: Mbox,
    ledger: Arc<Ledger>,
    handled: Arc<AtomicU64>,
}

impl Agent for Sink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, m: &Numbered, _: &mut Context<'_, Self>| {
                me.ledger.handled(&sender_name(m.sender), "server", m.seq);
                me.handled.fetch_add(1, Ordering::Relaxed);
            },
        )?;
        Ok(())
    }
}

/// An environment whose dead letters of `Numbered` go to the ledger (by reason: the remote
/// node no longer has the message).
fn env_for(ledger: &Arc<Ledger>) -> cohort::WrappedEnv {
    let l = ledger.clone();
    Environment::builder()
        .dead_letter_hook(move |d: &DeadLetter| {
            if d.message_type == std::any::type_name::<Numbered>() {
                l.dead_letter(d.reason);
            }
        })
        .start()
        .expect("start an environment")
}

#[test]
fn connections_broken_mid_stream_lose_nothing_uncounted() {
    watchdog(TIMEOUT * 2, || {
        const SENDERS: u32 = 4;
        const CUTS: u64 = 5;
        // Written after each stall began: surely not acknowledged when the cut comes.
        const HELD: u64 = 100;
        let ledger = Arc::new(Ledger::new());
        let server_env = env_for(&ledger);
        let client_env = env_for(&ledger);
        let server = listening(
            &server_env.environment(),
            NodeConfig::new("server"),
            registry(),
        );
        let handled = Arc::new(AtomicU64::new(0));
        let mut coop = server_env.environment().new_coop();
        coop.add(Sink {
            inbox: server.export("sink"),
            ledger: ledger.clone(),
            handled: handled.clone(),
        });
        server_env.environment().register_coop(coop).unwrap();

        let proxy = Proxy::start(server.local_addr().unwrap());
        let client = Node::start(
            &client_env.environment(),
            NodeConfig::new("client")
                .outbound_capacity(1024)
                .overflow(Overflow::Wait)
                .reconnect_backoff(Duration::from_millis(5), Duration::from_millis(20)),
            registry(),
        )
        .unwrap();
        let peer = client.connect(proxy.addr()).unwrap();
        let to = peer.mbox("sink");

        let stop = Arc::new(AtomicBool::new(false));
        let senders: Vec<_> = (0..SENDERS)
            .map(|i| {
                let (to, ledger, stop) = (to.clone(), ledger.clone(), stop.clone());
                std::thread::spawn(move || {
                    let name = sender_name(i);
                    while !stop.load(Ordering::Relaxed) {
                        let seq = ledger.next(&name, "server");
                        to.send(Numbered { sender: i, seq });
                    }
                })
            })
            .collect();

        for cut in 1..=CUTS {
            // Some traffic through this connection first.
            let at = handled.load(Ordering::Relaxed);
            wait_until(|| handled.load(Ordering::Relaxed) >= at + 2_000);
            proxy.stall();
            let out = client.stats().messages_out;
            wait_until(|| client.stats().messages_out >= out + HELD);
            proxy.cut();
            // The client dials the proxy again, and the connection is up once more.
            wait_until(|| proxy.accepted() > cut && peer.is_up());
        }
        stop.store(true, Ordering::Relaxed);
        for s in senders {
            s.join().unwrap();
        }
        // A graceful end: what is queued is written, and the server acknowledges it.
        client.shutdown();
        server.shutdown();
        client_env.stop_and_wait();
        server_env.stop_and_wait();

        let report = ledger.check().unwrap_or_else(|v| panic!("ledger: {v:#?}"));
        eprintln!("{report:#?}");
        assert!(report.in_doubt >= CUTS * HELD, "{report:?}");
        assert!(report.handled >= CUTS * 2_000, "{report:?}");
        assert_eq!(report.streams, SENDERS as usize);
        let known = ["NodeDown", "InDoubt"];
        assert!(
            report.dead.keys().all(|k| known.contains(&k.as_str())),
            "{report:?}"
        );
    });
}

#[test]
fn the_in_doubt_count_is_in_the_stats_and_the_node_down_event() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let server = listening(&e, NodeConfig::new("server"), registry());
        let got = probe::<Numbered>(&e, server.export("sink"));
        let proxy = Proxy::start(server.local_addr().unwrap());
        let client = Node::start(&e, NodeConfig::new("client"), registry()).unwrap();
        let downs = probe::<cohort_remote::NodeDown>(&e, client.events_mbox());
        let to = client.connect(proxy.addr()).unwrap().mbox("sink");
        // One message through, then three held by the stalled proxy and cut.
        to.send(Numbered { sender: 0, seq: 0 });
        recv(&got, "the first message");
        proxy.stall();
        for seq in 1..=3 {
            to.send(Numbered { sender: 0, seq });
        }
        wait_until(|| client.stats().messages_out == 4);
        proxy.cut();
        let down = recv(&downs, "node down after the cut");
        // The first may or may not have been acknowledged yet (the server had nothing to
        // send it with); the three held ones were not.
        assert!((3..=4).contains(&down.in_doubt), "{down:?}");
        assert_eq!(client.stats().in_doubt, down.in_doubt);
        assert_eq!(e.dead_letters(), down.in_doubt);
        client.shutdown();
        server.shutdown();
        env.stop_and_wait();
    });
}

#[test]
fn a_graceful_shutdown_leaves_nothing_in_doubt() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let TwoNodes {
            server,
            client,
            peer,
        } = server_and_client(&e, registry);
        let got = probe::<Numbered>(&e, server.export("sink"));
        let to = peer.mbox("sink");
        for seq in 0..10_000 {
            to.send(Numbered { sender: 0, seq });
        }
        // The server never writes a message back: only its Acks tell the client.
        client.shutdown();
        for seq in 0..10_000 {
            assert_eq!(recv(&got, "every message").seq, seq);
        }
        assert_eq!(e.dead_letters(), 0);
        server.shutdown();
        env.stop_and_wait();
    });
}
