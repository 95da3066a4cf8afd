//! Malformed and hostile input: malformed bytes close that one connection with a specific,
//! counted reason while the node serves its other connections on and nothing panics; the
//! per-connection guards (`guard`); the fuzz targets' corpus replayed on stable
//! (`fuzz_corpus`).

#[path = "../common/mod.rs"]
mod common;
mod fuzz_corpus;
mod guard;

use cohort::Environment;
use cohort_remote::defaults::PROTOCOL_VERSION;
use cohort_remote::frame;
use cohort_remote::{HandshakeError, Node, NodeConfig, RemoteError};
use common::*;

/// A server with a well-behaved client that must keep working through every test.
struct Setup {
    env: cohort::WrappedEnv,
    server: Node,
    client: Node,
    got: std::sync::mpsc::Receiver<u64>,
    to: cohort::Mbox,
}

fn setup(max_frame: u32) -> Setup {
    let env = Environment::builder().start().unwrap();
    let e = env.environment();
    let server = listening(
        &e,
        NodeConfig::new("server")
            .token("tok")
            .max_frame_bytes(max_frame),
        u64_registry(),
    );
    let got = probe::<u64>(&e, server.export("n"));
    let client = Node::start(&e, NodeConfig::new("client").token("tok"), u64_registry()).unwrap();
    let to = client
        .connect(server.local_addr().unwrap())
        .unwrap()
        .mbox("n");
    Setup {
        env,
        server,
        client,
        got,
        to,
    }
}

impl Setup {
    fn still_serves(&self, n: u64) {
        self.to.send(n);
        assert_eq!(recv(&self.got, "a message from the good client"), n);
    }

    fn raw(&self) -> RawPeer {
        let mut raw = RawPeer::hello(
            self.server.local_addr().unwrap(),
            PROTOCOL_VERSION,
            "raw",
            b"tok",
        );
        assert_eq!(raw.next(), "Welcome server");
        raw
    }

    fn end(self) {
        self.client.shutdown();
        self.server.shutdown();
        self.env.stop_and_wait();
    }
}

#[test]
fn a_wrong_token_is_refused_with_its_reason() {
    watchdog(TIMEOUT, || {
        let s = setup(1 << 20);
        let intruder = Node::start(
            &s.env.environment(),
            NodeConfig::new("intruder").token("nope"),
            u64_registry(),
        )
        .unwrap();
        match intruder.connect(s.server.local_addr().unwrap()) {
            Err(RemoteError::Handshake {
                source: HandshakeError::Refused(reason),
                ..
            }) => {
                assert!(reason.contains("token"), "{reason}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(s.server.stats().handshakes_refused, 1);
        s.still_serves(1);
        intruder.shutdown();
        s.end();
    });
}

#[test]
fn a_version_mismatch_is_refused_with_its_reason() {
    watchdog(TIMEOUT, || {
        let s = setup(1 << 20);
        // A newer peer, and an old one (version 1 had no acknowledgements).
        for (i, version) in [PROTOCOL_VERSION + 1, 1].into_iter().enumerate() {
            let mut raw = RawPeer::hello(
                s.server.local_addr().unwrap(),
                version,
                "other-version",
                b"tok",
            );
            let answer = raw.next();
            assert!(
                answer.starts_with("Refuse: protocol version mismatch"),
                "{answer}"
            );
            assert_eq!(raw.next(), "closed");
            assert_eq!(s.server.stats().handshakes_refused, i as u64 + 1);
        }
        s.still_serves(2);
        s.end();
    });
}

#[test]
fn garbage_before_the_handshake_is_refused() {
    watchdog(TIMEOUT, || {
        let s = setup(1 << 20);
        let mut stream = std::net::TcpStream::connect(s.server.local_addr().unwrap()).unwrap();
        std::io::Write::write_all(&mut stream, b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let mut raw = RawPeer::from_stream(stream);
        let answer = raw.next();
        assert!(
            answer.starts_with("Refuse: malformed handshake frame"),
            "{answer}"
        );
        assert_eq!(s.server.stats().handshakes_refused, 1);
        s.still_serves(3);
        s.end();
    });
}

/// Sends `bytes` after a good handshake and checks the server closes with a protocol error.
fn closes_on(bytes: &[u8], max_frame: u32) {
    let s = setup(max_frame);
    let mut raw = s.raw();
    raw.send(bytes);
    raw.until_closed();
    assert_eq!(s.server.stats().protocol_errors, 1);
    s.still_serves(4);
    s.end();
}

#[test]
fn garbage_after_the_handshake_closes_only_that_connection() {
    watchdog(TIMEOUT, || {
        closes_on(&[9, 0, 0, 0, 0xEE, 1, 2, 3, 4, 5, 6, 7, 8], 1 << 20)
    });
}

#[test]
fn a_frame_over_the_maximum_closes_the_connection_from_its_length() {
    // Only the 4 length bytes are sent: the server must not wait for (or buffer) the rest.
    watchdog(TIMEOUT, || closes_on(&(10_000u32).to_le_bytes(), 4096));
}

#[test]
fn an_undeclared_type_id_closes_the_connection() {
    watchdog(TIMEOUT, || {
        let mut b = Vec::new();
        frame::encode_declare(&mut b, true, 0, "n");
        frame::encode_message(&mut b, 0, 77, &[1]);
        closes_on(&b, 1 << 20)
    });
}

#[test]
fn an_undeclared_mailbox_id_closes_the_connection() {
    watchdog(TIMEOUT, || {
        let mut b = Vec::new();
        frame::encode_declare(&mut b, false, 0, "u64");
        frame::encode_message(&mut b, 5, 0, &[1]);
        closes_on(&b, 1 << 20)
    });
}

#[test]
fn a_truncated_control_frame_closes_the_connection() {
    watchdog(TIMEOUT, || {
        // A DeclareType whose name claims 200 bytes inside a 10-byte frame.
        let mut b = vec![10, 0, 0, 0, 4];
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&200u16.to_le_bytes());
        b.extend_from_slice(&[b'a'; 3]);
        closes_on(&b, 1 << 20)
    });
}

#[test]
fn bytes_that_do_not_decode_are_a_counted_dead_letter_not_a_crash() {
    watchdog(TIMEOUT, || {
        let s = setup(1 << 20);
        let before = s.env.environment().dead_letters();
        let mut raw = s.raw();
        let mut b = Vec::new();
        frame::encode_declare(&mut b, false, 0, "u64");
        frame::encode_declare(&mut b, true, 0, "n");
        frame::encode_message(&mut b, 0, 0, &[0xFF; 11]); // an over-long varint
        frame::encode_message(&mut b, 0, 0, &[9]); // then a good one
        raw.send(&b);
        assert_eq!(recv(&s.got, "the good message after the bad one"), 9);
        assert_eq!(s.env.environment().dead_letters(), before + 1);
        assert_eq!(s.server.stats().protocol_errors, 0);
        drop(raw);
        s.end();
    });
}
