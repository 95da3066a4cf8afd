//! One peer or one address cannot cost a node more than its share: a flooding peer does not
//! stop another peer's traffic, a peer over its idle budget is paused and loses nothing, a
//! stalled frame costs its length and is given back, access
//! to an exported mailbox is refused with a reason the sender sees, connections and
//! handshakes are capped, repeated warnings are suppressed and counted, and a peer that
//! dialled and left leaves no entry behind unless a proxy of it is held.

use crate::common;

use cohort::{DeliveryFailure, Environment};
use cohort_remote::defaults::{PROTOCOL_VERSION, READ_BUFFER_BYTES, WARNINGS_PER_WINDOW};
use cohort_remote::frame;
use cohort_remote::{Access, ConfigError, Node, NodeConfig};
use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A node under test exporting "n" (what arrives there comes out of `got`), and the
/// well-behaved client that must keep getting through.
struct Setup {
    env: cohort::WrappedEnv,
    server: Node,
    got: std::sync::mpsc::Receiver<u64>,
    client: Option<Node>,
}

fn serve(config: NodeConfig) -> Setup {
    let env = Environment::builder().start().unwrap();
    let e = env.environment();
    let server = listening(&e, config.token("tok"), u64_registry());
    let got = probe::<u64>(&e, server.export("n"));
    Setup {
        env,
        server,
        got,
        client: None,
    }
}

impl Setup {
    /// Starts the client node, connects it, and returns its proxy of "n".
    fn client(&mut self) -> cohort::Mbox {
        let client = Node::start(
            &self.env.environment(),
            NodeConfig::new("client").token("tok"),
            u64_registry(),
        )
        .unwrap();
        let to = client
            .connect(self.server.local_addr().unwrap())
            .unwrap()
            .mbox("n");
        self.client = Some(client);
        to
    }

    fn end(self) {
        if let Some(c) = self.client {
            c.shutdown();
        }
        self.server.shutdown();
        self.env.stop_and_wait();
    }
}

/// A raw peer past its handshake with `server`, named `name`.
fn raw(server: &Node, name: &str) -> RawPeer {
    let mut raw = RawPeer::hello(server.local_addr().unwrap(), PROTOCOL_VERSION, name, b"tok");
    assert_eq!(raw.next(), format!("Welcome {}", server.name()));
    raw
}

#[test]
fn a_flooding_peer_does_not_stop_another_peers_traffic() {
    watchdog(TIMEOUT, || {
        let mut s = serve(NodeConfig::new("server"));
        let to = s.client();
        let (server, got) = (&s.server, &s.got);

        // Heartbeats and tiny messages to a mailbox the server does not export, without end.
        let mut flood = Vec::new();
        frame::encode_declare(&mut flood, false, 0, "u64");
        frame::encode_declare(&mut flood, true, 0, "nowhere");
        let mut chunk = Vec::new();
        while chunk.len() < 64 * 1024 {
            frame::encode_heartbeat(&mut chunk);
            frame::encode_message(&mut chunk, 0, 0, &[7]);
        }
        let mut flooder = raw(server, "flooder");
        flooder.send(&flood);
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let stop = stop.clone();
            let mut stream = flooder.stream.try_clone().unwrap();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) && stream.write_all(&chunk).is_ok() {}
            })
        };
        // Over its idle budget: its reader pauses, so the flood reaches the server slowly.
        wait_until(|| server.stats().idle_pauses > 0);

        // Round trips of the well-behaved peer, one at a time, while the flood goes on.
        for i in 0..300u64 {
            to.send(i);
            assert_eq!(recv(got, "the other peer's message during the flood"), i);
        }
        assert!(
            server.stats().heartbeats_in > 0,
            "the flood reached the server"
        );
        stop.store(true, Ordering::Relaxed);
        drop(flooder);
        writer.join().unwrap();
        s.end();
    });
}

#[test]
fn a_peer_over_its_idle_budget_is_paused_and_nothing_it_sent_is_lost() {
    watchdog(TIMEOUT, || {
        const RATE: u32 = 1024;
        // Four seconds' budget at once: more than the burst and what a second earns, so the
        // reader pauses unless it was held off the CPU for two seconds.
        const HEARTBEATS: u64 = 4 * RATE as u64;
        let s = serve(NodeConfig::new("server").idle_frames_per_second(RATE));
        let (server, got) = (&s.server, &s.got);
        let mut bytes = Vec::new();
        for _ in 0..HEARTBEATS {
            frame::encode_heartbeat(&mut bytes);
        }
        // Then a real message on the same connection: it comes after every heartbeat.
        frame::encode_declare(&mut bytes, false, 0, "u64");
        frame::encode_declare(&mut bytes, true, 0, "n");
        frame::encode_message(&mut bytes, 0, 0, &[42]);
        let mut peer = raw(server, "chatty");
        peer.send(&bytes);
        assert_eq!(recv(got, "the message behind the heartbeats"), 42);
        wait_until(|| server.stats().heartbeats_in == HEARTBEATS);
        let stats = server.stats();
        assert!(stats.idle_pauses > 0, "{stats:?}");
        assert_eq!(stats.messages_in, 1);
        assert_eq!(stats.protocol_errors, 0);
        drop(peer);
        s.end();
    });
}

#[test]
fn a_stalled_frame_costs_its_length_and_is_given_back() {
    watchdog(TIMEOUT, || {
        const STALLED: usize = 8;
        let max = 1u32 << 20;
        let mut s = serve(NodeConfig::new("server").max_frame_bytes(max));
        let to = s.client();
        let (server, got) = (&s.server, &s.got);
        to.send(1u64);
        assert_eq!(recv(got, "a message before the stall"), 1);
        let before = server.stats();

        // Each stalls a frame of the maximum length one byte short.
        let mut frame_bytes = max.to_le_bytes().to_vec();
        frame_bytes.push(6);
        frame_bytes.resize(4 + max as usize - 1, 0);
        let stalled: Vec<RawPeer> = (0..STALLED)
            .map(|i| {
                let mut r = raw(server, &format!("stall-{i}"));
                r.send(&frame_bytes);
                r
            })
            .collect();
        let sent = (STALLED * frame_bytes.len()) as u64;
        wait_until(|| server.stats().bytes_in >= before.bytes_in + sent);

        // The frame's length (and its 4 length bytes) per stalled connection, no more.
        let held = server.stats().receive_buffer_bytes;
        let bound = STALLED as u64 * (u64::from(max) + 4) + before.receive_buffer_bytes;
        assert!(
            held <= bound,
            "{held} bytes held, over the bound of {bound}"
        );
        assert!(held >= STALLED as u64 * u64::from(max), "{held} bytes held");
        to.send(2u64);
        assert_eq!(recv(got, "a message during the stall"), 2);

        // Closed: the buffers are given back.
        drop(stalled);
        wait_until(|| server.stats().receive_buffer_bytes <= before.receive_buffer_bytes);
        assert!(before.receive_buffer_bytes <= 2 * READ_BUFFER_BYTES as u64);
        s.end();
    });
}

#[test]
fn access_is_refused_at_the_receiver_and_reported_to_the_sender() {
    watchdog(TIMEOUT, || {
        let server_env = Environment::builder().start().unwrap();
        let e = server_env.environment();
        let server = listening(&e, NodeConfig::new("server").token("tok"), u64_registry());
        let vip = probe::<u64>(&e, server.export_with("vip", Access::nodes(["friend"])));
        let open = probe::<u64>(&e, server.export("open"));
        let addr = server.local_addr().unwrap();

        let (stranger_env, letters) = env_recording();
        let stranger = Node::start(
            &stranger_env.environment(),
            NodeConfig::new("stranger").token("tok"),
            u64_registry(),
        )
        .unwrap();
        let friend_env = Environment::builder().start().unwrap();
        let friend = Node::start(
            &friend_env.environment(),
            NodeConfig::new("friend").token("tok"),
            u64_registry(),
        )
        .unwrap();

        let to_server = stranger.connect(addr).unwrap();
        for i in 0..5u64 {
            to_server.mbox("vip").send(i);
        }
        to_server.mbox("open").send(100u64);
        friend.connect(addr).unwrap().mbox("vip").send(200u64);

        assert_eq!(recv(&vip, "the admitted node's message"), 200);
        assert_eq!(
            recv(&open, "the stranger's message to an open mailbox"),
            100
        );
        wait_until(|| count(&letters, DeliveryFailure::AccessDenied) == 5);
        assert_eq!(server.stats().access_refused, 5);
        let s = stranger.stats();
        assert_eq!((s.access_denied, s.undeliverable), (5, 5));
        assert!(vip.try_recv().is_err(), "a refused message was delivered");
        assert_eq!(friend.stats().access_denied, 0);

        friend.shutdown();
        stranger.shutdown();
        server.shutdown();
        friend_env.stop_and_wait();
        stranger_env.stop_and_wait();
        server_env.stop_and_wait();
    });
}

#[test]
fn connections_over_the_cap_are_refused_and_counted() {
    watchdog(TIMEOUT, || {
        let mut s = serve(
            NodeConfig::new("server")
                .max_connections(2)
                .handshake_timeout(TIMEOUT),
        );
        let addr = s.server.local_addr().unwrap();
        // Two half-open connections take both places; a third is closed at once.
        let half_open: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
        wait_until(|| s.server.stats().connections_open == 2);
        let mut third = RawPeer::hello(addr, PROTOCOL_VERSION, "third", b"tok");
        assert_eq!(third.next(), "closed");
        assert_eq!(s.server.stats().connections_refused, 1);

        // Once they go, a real peer gets in.
        drop(half_open);
        wait_until(|| s.server.stats().connections_open == 0);
        s.client().send(5u64);
        assert_eq!(recv(&s.got, "the real peer's message"), 5);
        assert_eq!(s.server.stats().connections_refused, 1);
        s.end();
    });
}

#[test]
fn handshakes_over_an_address_rate_are_refused_and_counted() {
    watchdog(TIMEOUT, || {
        let mut s = serve(NodeConfig::new("server").handshakes_per_second(1));
        let addr = s.server.local_addr().unwrap();
        // Connected before the flood of attempts from its address: not affected by it.
        let to = s.client();

        let mut closed = 0;
        for i in 0..20 {
            let mut r = RawPeer::hello(addr, PROTOCOL_VERSION, &format!("burst-{i}"), b"tok");
            if r.next() == "closed" {
                closed += 1;
            }
        }
        // One a second: all but those the time taken allowed are refused.
        assert!(closed >= 10, "{closed} of 20 refused");
        assert_eq!(s.server.stats().handshakes_rate_limited, closed);
        to.send(6u64);
        assert_eq!(recv(&s.got, "the connected peer's message"), 6);
        s.end();
    });
}

#[test]
fn repeated_warnings_are_suppressed_and_declarations_capped() {
    watchdog(TIMEOUT, || {
        const CAP: u32 = 100;
        let s = serve(NodeConfig::new("server").max_declarations(CAP));
        let server = &s.server;
        let mut r = raw(server, "declarer");
        // Declarations of types the server does not know (each one a warning), over and over
        // under a few ids: the one after the cap closes the connection.
        let mut b = Vec::new();
        for i in 0..=CAP {
            frame::encode_declare(&mut b, false, i % 10, &format!("unknown.{i}"));
        }
        r.send(&b);
        r.until_closed();
        let stats = server.stats();
        assert_eq!(stats.declarations_refused, 1);
        assert_eq!(stats.protocol_errors, 1);
        assert_eq!(
            stats.warnings_suppressed,
            u64::from(CAP - WARNINGS_PER_WINDOW),
            "{stats:?}"
        );
        s.end();
    });
}

#[test]
fn zero_caps_are_typed_errors_naming_the_parameter() {
    let cases = [
        (NodeConfig::new("a").read_budget(0), "read_budget"),
        (
            NodeConfig::new("a").idle_frames_per_second(0),
            "idle_frames_per_second",
        ),
        (NodeConfig::new("a").max_declarations(0), "max_declarations"),
        (NodeConfig::new("a").max_connections(0), "max_connections"),
        (
            NodeConfig::new("a").handshakes_per_second(0),
            "handshakes_per_second",
        ),
    ];
    for (config, name) in cases {
        assert_eq!(config.validate(), Err(ConfigError::Zero(name)));
        assert!(ConfigError::Zero(name).to_string().contains(name));
    }
}

#[test]
fn an_idle_budget_the_heartbeats_alone_would_spend_is_a_typed_error() {
    let config = NodeConfig::new("a")
        .heartbeat_interval(std::time::Duration::from_millis(10))
        .idle_frames_per_second(100);
    let err = config.validate().unwrap_err();
    assert_eq!(
        err,
        ConfigError::IdleBudgetBelowHeartbeats {
            per_second: 100,
            needed: 400,
            interval: std::time::Duration::from_millis(10),
        }
    );
    let text = err.to_string();
    assert!(text.contains("idle_frames_per_second") && text.contains("heartbeat_interval"));
    // Four heartbeats' worth is enough, and the defaults pass.
    assert!(config.idle_frames_per_second(400).validate().is_ok());
    assert!(NodeConfig::new("a").validate().is_ok());
}

/// Peers that dial the node and leave are forgotten, queue and all, unless something holds a
/// handle or a proxy of theirs: then the entry stays, and the proxy sends again once the
/// peer is back.
#[test]
fn a_peer_that_leaves_is_forgotten_unless_a_proxy_of_it_is_held() {
    watchdog(TIMEOUT, || {
        const VISITORS: usize = 20;
        let mut s = serve(NodeConfig::new("server"));
        let to = s.client();
        to.send(1u64);
        assert_eq!(recv(&s.got, "a message from the client"), 1);
        let server = &s.server;
        assert_eq!(server.stats().peers, 1);

        for i in 0..VISITORS {
            let name = format!("visitor-{i}");
            drop(raw(server, &name));
        }
        wait_until(|| server.stats().nodes_down >= VISITORS as u64 && server.stats().peers == 1);
        assert!(server.peer("visitor-0").is_none());
        assert!(server.peer("client").is_some_and(|c| c.is_up()));

        // A proxy held while its peer is away keeps the entry.
        let r = raw(server, "kept");
        let kept = server.wait_for_peer("kept", TIMEOUT).expect("kept is up");
        let proxy = kept.mbox("n");
        drop(kept);
        let downs = server.stats().nodes_down;
        drop(r);
        wait_until(|| server.stats().nodes_down > downs);
        assert_eq!(server.stats().peers, 2);
        assert!(server.peer("kept").is_some_and(|k| !k.is_up()));

        // Back: the same entry, and the proxy reaches it.
        let mut r = raw(server, "kept");
        server.wait_for_peer("kept", TIMEOUT).expect("kept is back");
        proxy.send(2u64);
        loop {
            match r.next().as_str() {
                "Message" => break,
                "closed" => panic!("the connection closed before the proxy's message"),
                _ => {}
            }
        }
        let downs = server.stats().nodes_down;
        drop(r);
        wait_until(|| server.stats().nodes_down > downs);
        assert_eq!(server.stats().peers, 2);
        drop(proxy);
        assert_eq!(
            server.stats().peers,
            1,
            "the last proxy dropped, the entry is gone"
        );
        assert!(server.peer("kept").is_none());
        s.end();
    });
}

/// An export narrowed (or removed) after a connection resolved its name holds for that
/// connection too: the next message looks the name up again.
#[test]
fn narrowing_an_export_refuses_a_connection_that_had_resolved_it() {
    watchdog(TIMEOUT, || {
        let server_env = Environment::builder().start().unwrap();
        let e = server_env.environment();
        let (client_env, letters) = env_recording();
        let TwoNodes {
            server,
            client,
            peer,
        } = two_nodes(
            (&e, NodeConfig::new("server").token("tok"), u64_registry()),
            (
                &client_env.environment(),
                NodeConfig::new("client").token("tok"),
                u64_registry(),
            ),
        );
        let inbox = server.export("desk");
        let got = probe::<u64>(&e, inbox.clone());
        let desk = peer.mbox("desk");
        desk.send(1u64);
        assert_eq!(recv(&got, "the message while the export is open"), 1);

        server.export_mbox_with("desk", &inbox, Access::nodes(["someone-else"]));
        desk.send(2u64);
        wait_until(|| count(&letters, DeliveryFailure::AccessDenied) == 1);
        assert_eq!(server.stats().access_refused, 1);
        assert!(got.try_recv().is_err(), "a refused message was delivered");

        server.unexport("desk");
        desk.send(3u64);
        wait_until(|| server.stats().access_refused == 1 && e.dead_letters() >= 1);
        assert!(
            got.try_recv().is_err(),
            "a message to an unexported name was delivered"
        );

        client.shutdown();
        server.shutdown();
        client_env.stop_and_wait();
        server_env.stop_and_wait();
    });
}
