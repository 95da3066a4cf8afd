//! Two nodes talking: every registered type crosses the wire intact, order per sender holds
//! under load, failures become counted dead letters, silent peers are declared down within
//! the detector's bound, dialled peers are reconnected, a graceful shutdown flushes, an
//! acknowledgement rides on the reply's write.

use crate::common;

use cohort::{DeadLetter, DeliveryFailure, Environment};
use cohort_remote::phi::PhiConfig;
use cohort_remote::{Batching, Node, NodeConfig, NodeDown, NodeUp, Overflow, Registry};
use common::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Quote {
    symbol: String,
    bid: f64,
    ask: f64,
    sizes: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Command {
    Halt,
    Move { x: i64, y: i64 },
    Tag(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Seq {
    sender: u32,
    n: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Book {
    levels: BTreeMap<u32, (u64, Option<String>)>,
    raw: Vec<u8>,
}

/// Not registered anywhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Secret(u8);

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Quote>("t.Quote").unwrap();
    r.register::<Command>("t.Command").unwrap();
    r.register::<Seq>("t.Seq").unwrap();
    r.register::<Book>("t.Book").unwrap();
    r.register::<u64>("u64").unwrap();
    r.register::<String>("string").unwrap();
    r
}

#[test]
fn every_registered_type_round_trips_between_two_nodes() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let server = listening(&e, NodeConfig::new("server").token("t"), registry());
        let quotes = probe::<Quote>(&e, server.export("in"));
        let commands = probe::<Command>(&e, server.export("in"));
        let books = probe::<Book>(&e, server.export("in"));
        let ints = probe::<u64>(&e, server.export("in"));
        let strings = probe::<String>(&e, server.export("in"));
        let client = Node::start(&e, NodeConfig::new("client").token("t"), registry()).unwrap();
        let to = client
            .connect(server.local_addr().unwrap())
            .unwrap()
            .mbox("in");

        let q = Quote {
            symbol: "ACME".into(),
            bid: 10.25,
            ask: 10.5,
            sizes: vec![1, 200, 30_000],
        };
        let cmds = [
            Command::Halt,
            Command::Move { x: -7, y: i64::MAX },
            Command::Tag("héllo".into()),
        ];
        let mut levels = BTreeMap::new();
        levels.insert(1, (u64::MAX, None));
        levels.insert(7, (3, Some("x".repeat(1000))));
        let book = Book {
            levels,
            raw: (0..=255).collect(),
        };
        to.send(q.clone());
        for c in &cmds {
            to.send(c.clone());
        }
        to.send(book.clone());
        to.send(0u64);
        to.send(u64::MAX);
        to.send(String::new());

        assert_eq!(recv(&quotes, "the quote"), q);
        for c in &cmds {
            assert_eq!(&recv(&commands, "a command"), c);
        }
        assert_eq!(recv(&books, "the book"), book);
        assert_eq!(recv(&ints, "0"), 0);
        assert_eq!(recv(&ints, "u64::MAX"), u64::MAX);
        assert_eq!(recv(&strings, "the empty string"), "");
        assert_eq!(e.dead_letters(), 0);
        client.shutdown();
        server.shutdown();
        env.stop_and_wait();
    });
}

#[test]
fn messages_from_each_sender_arrive_in_order_under_load() {
    watchdog(TIMEOUT * 2, || {
        const SENDERS: u32 = 3;
        const EACH: u64 = 30_000;
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let server = listening(&e, NodeConfig::new("server"), registry());
        let got = probe::<Seq>(&e, server.export("seq"));
        // A small queue: senders wait for the writer (back-pressure) much of the time.
        let client = Node::start(
            &e,
            NodeConfig::new("client")
                .outbound_capacity(64)
                .overflow(Overflow::Wait),
            registry(),
        )
        .unwrap();
        let to = client
            .connect(server.local_addr().unwrap())
            .unwrap()
            .mbox("seq");
        let threads: Vec<_> = (0..SENDERS)
            .map(|sender| {
                let to = to.clone();
                std::thread::spawn(move || {
                    for n in 0..EACH {
                        to.send(Seq { sender, n });
                    }
                })
            })
            .collect();
        let mut next = vec![0u64; SENDERS as usize];
        for _ in 0..SENDERS as u64 * EACH {
            let s = recv(&got, "the next message");
            assert_eq!(
                s.n, next[s.sender as usize],
                "sender {} out of order",
                s.sender
            );
            next[s.sender as usize] += 1;
        }
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(next, vec![EACH; SENDERS as usize]);
        let stats = client.stats();
        assert_eq!(stats.messages_out, SENDERS as u64 * EACH);
        assert!(stats.mean_batch() >= 1.0);
        assert_eq!(e.dead_letters(), 0);
        client.shutdown();
        server.shutdown();
        env.stop_and_wait();
    });
}

/// Sends `count` messages to `to` in one handler, then blocks in it until released.
struct Streamer {
    to: cohort::Mbox,
    count: u64,
    release: std::sync::mpsc::Receiver<()>,
}
struct Stream;
impl cohort::Agent for Streamer {
    fn define(&mut self, ctx: &mut cohort::Context<'_, Self>) -> Result<(), cohort::DefineError> {
        ctx.on(
            |me: &mut Self, _: &Stream, _: &mut cohort::Context<'_, Self>| {
                for n in 0..me.count {
                    me.to.send(Seq { sender: 0, n });
                }
                let _ = me.release.recv_timeout(TIMEOUT);
            },
        )?;
        Ok(())
    }
}

/// A handler's sends leave when its turn ends, or as soon as a full batch waits: a handler
/// that sends a stream and then blocks has the stream's full batches written meanwhile.
/// Heartbeats an hour apart, so that only a full batch can wake the client's writer.
#[test]
fn a_handler_streaming_more_than_a_batch_has_it_written_while_it_runs() {
    watchdog(TIMEOUT, || {
        const BATCH: usize = 16;
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let (server_config, client_config) =
            no_heartbeat_wakeups(NodeConfig::new("server"), NodeConfig::new("client"));
        let client_config = client_config.batching(Batching::Adaptive {
            max_messages: BATCH,
            max_bytes: 64 * 1024,
        });
        let nodes = two_nodes(
            (&e, server_config, registry()),
            (&e, client_config, registry()),
        );
        let got = probe::<Seq>(&e, nodes.server.export("seq"));
        let to = nodes.peer.mbox("seq");
        let (release, blocked) = std::sync::mpsc::channel();
        let streamer = on_own_thread(
            &e,
            Streamer {
                to,
                count: 3 * BATCH as u64,
                release: blocked,
            },
        );
        streamer.send(Stream);
        // The first full batch arrives while the handler still blocks.
        for n in 0..BATCH as u64 {
            assert_eq!(recv(&got, "a message of the first batch").n, n);
        }
        release.send(()).unwrap();
        for n in BATCH as u64..3 * BATCH as u64 {
            assert_eq!(recv(&got, "the rest of the stream").n, n);
        }
        nodes.client.shutdown();
        nodes.server.shutdown();
        env.stop_and_wait();
    });
}

/// A message whose type the receiving node has not registered is a dead letter there that
/// names the type as the sending node declared it.
#[test]
fn a_type_the_receiver_does_not_know_is_a_dead_letter_under_its_declared_name() {
    watchdog(TIMEOUT, || {
        type Seen = Vec<(String, &'static str, DeliveryFailure)>;
        let declared: Arc<Mutex<Seen>> = Arc::default();
        let d = declared.clone();
        let server_env = Environment::builder()
            .dead_letter_hook(move |l: &DeadLetter| {
                if let Some(name) = l.declared_type {
                    d.lock()
                        .unwrap()
                        .push((name.to_string(), l.message_type, l.reason));
                }
            })
            .start()
            .unwrap();
        let e = server_env.environment();
        let client_env = Environment::builder().start().unwrap();
        let mut extended = registry();
        extended.register::<Secret>("t.Secret").unwrap();
        let TwoNodes {
            server,
            client,
            peer,
        } = two_nodes(
            (&e, NodeConfig::new("server"), registry()),
            (
                &client_env.environment(),
                NodeConfig::new("client"),
                extended,
            ),
        );
        let got = probe::<u64>(&e, server.export("open"));
        let open = peer.mbox("open");
        open.send(Secret(7));
        open.send(8u64);
        // The next message on the same connection proves the first was handled.
        assert_eq!(recv(&got, "the message after the unknown one"), 8);
        assert_eq!(
            *declared.lock().unwrap(),
            [(
                "t.Secret".to_string(),
                DeadLetter::UNKNOWN_TYPE,
                DeliveryFailure::NotRegisteredForRemote
            )]
        );
        client.shutdown();
        server.shutdown();
        client_env.stop_and_wait();
        server_env.stop_and_wait();
    });
}

#[test]
fn undeliverable_messages_are_counted_with_their_reason() {
    watchdog(TIMEOUT, || {
        let (env, letters) = env_recording();
        let e = env.environment();
        let TwoNodes {
            server,
            client,
            peer,
        } = server_and_client(&e, registry);
        let got = probe::<u64>(&e, server.export("open"));

        // A type that is not registered: refused on the sender.
        peer.mbox("open").send(Secret(1));
        assert_eq!(count(&letters, DeliveryFailure::NotRegisteredForRemote), 1);
        assert_eq!(client.stats().undeliverable, 1);

        // A name the server does not export: a dead letter there. The next message on the
        // same connection proves the first was handled.
        peer.mbox("closed").send(5u64);
        peer.mbox("open").send(6u64);
        assert_eq!(recv(&got, "the message to the exported mailbox"), 6);
        assert_eq!(count(&letters, DeliveryFailure::NotExported), 1);

        // The server goes away: sends to it are dead letters, never silent.
        let events = probe::<NodeDown>(&e, client.events_mbox());
        server.shutdown();
        let down = recv(&events, "node down");
        assert_eq!(down.node, "server");
        assert!(!peer.is_up());
        peer.mbox("open").send(7u64);
        assert_eq!(count(&letters, DeliveryFailure::NodeDown), 1);
        assert_eq!(client.stats().undeliverable, 2);
        client.shutdown();
        env.stop_and_wait();
    });
}

#[test]
fn a_graceful_shutdown_flushes_what_is_queued() {
    watchdog(TIMEOUT, || {
        const N: u64 = 20_000;
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let TwoNodes {
            server,
            client,
            peer,
        } = server_and_client(&e, registry);
        let got = probe::<u64>(&e, server.export("n"));
        let to = peer.mbox("n");
        for i in 0..N {
            to.send(i);
        }
        client.shutdown(); // returns once everything queued was written and Bye said
        for i in 0..N {
            assert_eq!(recv(&got, "a flushed message"), i);
        }
        assert_eq!(e.dead_letters(), 0);
        server.shutdown();
        env.stop_and_wait();
    });
}

/// `ROUND_TRIPS` exchanges of one message each way, the next sent once the last arrived,
/// under `batching` on both nodes: every write carries one message and the `Ack` of what
/// came the other way rides in it, never in a write of its own.
fn acks_ride_on_replies(batching: Batching) {
    const ROUND_TRIPS: u64 = 200;
    let env = Environment::builder().start().unwrap();
    let e = env.environment();
    // No heartbeat during the test: it would be a write of its own.
    let config = |name: &str| {
        NodeConfig::new(name)
            .batching(batching)
            .heartbeat_interval(Duration::from_secs(3600))
    };
    let TwoNodes {
        server,
        client,
        peer,
    } = two_nodes(
        (&e, config("server"), registry()),
        (&e, config("client"), registry()),
    );
    let at_server = probe::<u64>(&e, server.export("ping"));
    let at_client = probe::<u64>(&e, client.export("pong"));
    let ping = peer.mbox("ping");
    let pong = server
        .wait_for_peer("client", TIMEOUT)
        .expect("the client is up at the server")
        .mbox("pong");
    for i in 0..ROUND_TRIPS {
        ping.send(i);
        assert_eq!(recv(&at_server, "a ping"), i);
        pong.send(i);
        assert_eq!(recv(&at_client, "a pong"), i);
    }
    for (side, node) in [("client", &client), ("server", &server)] {
        let s = node.stats();
        assert_eq!(
            s.messages_out, ROUND_TRIPS,
            "{side} under {batching:?}: {s:?}"
        );
        assert_eq!(s.writes, ROUND_TRIPS, "{side} under {batching:?}: {s:?}");
    }
    client.shutdown();
    server.shutdown();
    assert_eq!(e.dead_letters(), 0);
    env.stop_and_wait();
}

#[test]
fn an_ack_rides_on_the_reply_and_never_costs_a_write_of_its_own() {
    watchdog(TIMEOUT, || {
        acks_ride_on_replies(Batching::PerMessage);
        acks_ride_on_replies(Batching::adaptive());
    });
}

#[test]
fn a_full_queue_drops_as_configured_and_counts_it() {
    watchdog(TIMEOUT, || {
        let (env, letters) = env_recording();
        let e = env.environment();
        // A peer that completes the handshake and then never reads: the socket buffers fill,
        // then the 16-message queue.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accept = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 4096];
            let n = std::io::Read::read(&mut s, &mut buf).unwrap();
            assert!(n > 0);
            let mut out = Vec::new();
            cohort_remote::frame::encode_welcome(
                &mut out,
                cohort_remote::defaults::PROTOCOL_VERSION,
                "sink",
            );
            std::io::Write::write_all(&mut s, &out).unwrap();
            s // kept open, never read again
        });
        let client = Node::start(
            &e,
            NodeConfig::new("client")
                .outbound_capacity(16)
                .overflow(Overflow::DropNewest),
            registry(),
        )
        .unwrap();
        let to = client.connect(addr).unwrap().mbox("x");
        let _sink = accept.join().unwrap();
        let big = "x".repeat(16 * 1024);
        let mut sent = 0u64;
        while count(&letters, DeliveryFailure::OutboundFull) == 0 {
            to.send(big.clone());
            sent += 1;
            assert!(sent < 1_000_000, "the queue never filled");
        }
        let dropped = count(&letters, DeliveryFailure::OutboundFull) as u64;
        assert_eq!(client.stats().undeliverable, dropped);
        client.abort();
        // What was still queued at the abort is counted too: nothing is lost silently.
        assert!(e.dead_letters() >= dropped);
        env.stop_and_wait();
    });
}

/// A burst to a peer that does not read waits in the outbound queue, counted in
/// `NodeStats::outbound_queued` and never over the capacity, and leaves it once the peer
/// reads again.
#[test]
fn a_burst_to_a_stalled_peer_is_queued_within_the_bound_and_drains() {
    watchdog(TIMEOUT, || {
        const CAPACITY: u64 = 64;
        let (env, letters) = env_recording();
        let e = env.environment();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (resume, resumed) = std::sync::mpsc::channel::<()>();
        let sink = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            assert!(std::io::Read::read(&mut s, &mut buf).unwrap() > 0);
            let mut out = Vec::new();
            cohort_remote::frame::encode_welcome(
                &mut out,
                cohort_remote::defaults::PROTOCOL_VERSION,
                "sink",
            );
            std::io::Write::write_all(&mut s, &out).unwrap();
            // Reads nothing until told, then everything until the client closes.
            resumed.recv().unwrap();
            while std::io::Read::read(&mut s, &mut buf).is_ok_and(|n| n > 0) {}
        });
        let client = Node::start(
            &e,
            NodeConfig::new("client")
                .outbound_capacity(CAPACITY as usize)
                .overflow(Overflow::DropNewest),
            registry(),
        )
        .unwrap();
        let to = client.connect(addr).unwrap().mbox("x");
        let big = "x".repeat(16 * 1024);
        let mut sent = 0u64;
        while count(&letters, DeliveryFailure::OutboundFull) == 0 {
            to.send(big.clone());
            sent += 1;
            assert!(sent < 1_000_000, "the queue never filled");
        }
        let queued = client.stats().outbound_queued;
        assert!(
            (1..=CAPACITY).contains(&queued),
            "{queued} messages queued with a capacity of {CAPACITY}"
        );
        resume.send(()).unwrap();
        // Empty, with every message written or counted as refused.
        wait_until(|| {
            let s = client.stats();
            s.outbound_queued == 0 && s.messages_out + s.undeliverable == sent
        });
        client.abort();
        sink.join().unwrap();
        env.stop_and_wait();
    });
}

#[test]
fn a_silent_peer_is_declared_down_within_the_detector_bound() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let phi = PhiConfig {
            threshold: 8.0,
            max_samples: 100,
            min_std_deviation: Duration::from_millis(20),
            acceptable_pause: Duration::from_millis(200),
            first_interval: Duration::from_millis(50),
        };
        let server = listening(
            &e,
            NodeConfig::new("server")
                .heartbeat_interval(Duration::from_millis(50))
                .failure_detector(phi),
            registry(),
        );
        let events = probe::<NodeDown>(&e, server.events_mbox());
        // A peer that says hello and then nothing, not even heartbeats.
        let mut raw = RawPeer::hello(
            server.local_addr().unwrap(),
            cohort_remote::defaults::PROTOCOL_VERSION,
            "mute",
            b"",
        );
        assert_eq!(raw.next(), "Welcome server");
        let since = Instant::now();
        let down = recv(&events, "the silent peer declared down");
        let took = since.elapsed();
        assert_eq!(down.node, "mute");
        assert!(down.reason.contains("failure detector"), "{}", down.reason);
        // phi reaches 8 at about first interval + pause + 3.4 std = 318 ms; the check runs
        // every 25 ms. Not before the acceptable pause; well within a second.
        assert!(
            took >= Duration::from_millis(200),
            "declared down too early: {took:?}"
        );
        assert!(
            took < Duration::from_secs(2),
            "declared down too late: {took:?}"
        );
        raw.until_closed();
        assert_eq!(server.stats().nodes_down, 1);
        server.shutdown();
        env.stop_and_wait();
    });
}

#[test]
fn a_dialled_peer_that_crashes_and_restarts_is_reconnected() {
    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let server = listening(&e, NodeConfig::new("server"), registry());
        let addr = server.local_addr().unwrap();
        let client = Node::start(
            &e,
            NodeConfig::new("client")
                .reconnect_backoff(Duration::from_millis(10), Duration::from_millis(100)),
            registry(),
        )
        .unwrap();
        let ups = probe::<NodeUp>(&e, client.events_mbox());
        let downs = probe::<NodeDown>(&e, client.events_mbox());
        let peer = client.connect(addr).unwrap();
        assert_eq!(recv(&ups, "first node up").node, "server");

        server.abort(); // a crash: no Bye, the socket just closes
        assert_eq!(recv(&downs, "node down after the crash").node, "server");

        // The server comes back on the same address.
        let server = Node::start(&e, NodeConfig::new("server").listen(addr), registry()).unwrap();
        let got = probe::<u64>(&e, server.export("n"));
        assert_eq!(recv(&ups, "node up after the restart").node, "server");
        assert!(peer.is_up());
        peer.mbox("n").send(42u64);
        assert_eq!(recv(&got, "a message over the new connection"), 42);
        client.shutdown();
        server.shutdown();
        env.stop_and_wait();
    });
}

/// A supervised worker behind an exported named mailbox: what a peer sends to the export's
/// name reaches whichever incarnation is running, since the new one subscribes to the same
/// named mailbox in `define` and the export (and every connection's resolution of it) points
/// at the mailbox, not at an agent.
#[test]
fn a_supervised_worker_keeps_its_export_name_across_restarts() {
    use cohort::supervision::{ChildSpec, SupervisionEvent, Supervisor};
    use cohort::{Agent, Context, DefineError, Mbox};
    use std::sync::mpsc;

    struct Worker {
        inbox: Mbox,
        seen: mpsc::Sender<u64>,
    }
    impl Agent for Worker {
        fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
            let inbox = self.inbox.clone();
            ctx.subscribe(&inbox, |me, n: &u64, _| {
                if *n == 0 {
                    panic!("asked to crash");
                }
                let _ = me.seen.send(*n);
            })?;
            Ok(())
        }
    }

    watchdog(TIMEOUT, || {
        let env = Environment::builder().start().unwrap();
        let e = env.environment();
        let server = listening(&e, NodeConfig::new("server").token("t"), registry());
        let inbox = server.export("worker");
        let (seen_tx, seen) = mpsc::channel();
        let (events_tx, events) = mpsc::channel::<u64>();
        let events_box = e.named_mbox("supervision-events");
        // Forwards the incarnation of every started child to the test thread.
        struct Started(mpsc::Sender<u64>, Mbox);
        impl Agent for Started {
            fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
                let from = self.1.clone();
                ctx.subscribe(&from, |me, ev: &SupervisionEvent, _| {
                    if let SupervisionEvent::ChildStarted { incarnation, .. } = ev {
                        let _ = me.0.send(*incarnation);
                    }
                })?;
                Ok(())
            }
        }
        let mut coop = e.new_coop();
        coop.add(Started(events_tx, events_box.clone()));
        e.register_coop(coop).unwrap();
        let sup = Supervisor::builder("exports")
            .events(events_box)
            .child(ChildSpec::new("worker", move |coop| {
                coop.add(Worker {
                    inbox: inbox.clone(),
                    seen: seen_tx.clone(),
                });
            }))
            .build()
            .unwrap();
        let mut coop = e.new_coop();
        coop.add(sup);
        e.register_coop(coop).unwrap();
        assert_eq!(recv(&events, "the first start"), 1);

        let client = Node::start(&e, NodeConfig::new("client").token("t"), registry()).unwrap();
        let to = client
            .connect(server.local_addr().unwrap())
            .unwrap()
            .mbox("worker");
        to.send(1u64);
        assert_eq!(recv(&seen, "1, by the first incarnation"), 1);
        to.send(0u64);
        assert_eq!(recv(&events, "the restart"), 2);
        to.send(2u64);
        to.send(3u64);
        assert_eq!(recv(&seen, "2, by the second incarnation"), 2);
        assert_eq!(recv(&seen, "3, by the second incarnation"), 3);
        client.shutdown();
        server.shutdown();
        env.stop_and_wait();
    });
}
