//! Entry points for the fuzz targets in `fuzz/` and for the test that replays their corpus
//! on stable: each feeds bytes a peer could send to the code that reads them off the
//! network, and panics only when an invariant of that code fails.
//!
//! Not a stable API: it exists for `fuzz/` and `tests/bad_input/fuzz_corpus.rs`.

use crate::defaults::{MAX_NAME_BYTES, PROTOCOL_VERSION};
use crate::frame::{self, Frame};
use crate::handshake;
use crate::mbox_ref::decoding_for;
use crate::phi::PhiAccrual;
use crate::reader::{Inbound, Turn, decode_turn};
use crate::registry::Codec;
use crate::{HandshakeError, MboxRef, Node, NodeConfig, Postcard, Registry};
use cohort::{AnyMessage, Environment, WrappedEnv};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Instant;

/// The harness node's name: references naming it resolve to its own exports.
pub const NODE: &str = "fuzz";
/// The token the harness node's handshake accepts.
pub const TOKEN: &[u8] = b"tok";
/// The mailboxes the harness node exports.
pub const EXPORTS: [&str; 2] = ["a", "b"];

/// A struct of common field types, registered as `quote`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Quote {
    /// A string field.
    pub symbol: String,
    /// A float (any bit pattern round-trips).
    pub price: f64,
    /// A varint field.
    pub size: u32,
    /// A sequence of strings.
    pub tags: Vec<String>,
}

/// An enum of every variant shape, registered as `cmd`.
#[derive(Debug, Serialize, Deserialize)]
pub enum Cmd {
    /// A unit variant.
    Start,
    /// A struct variant.
    Move {
        /// Signed varints.
        x: i32,
        /// Signed varints.
        y: i64,
    },
    /// A newtype variant.
    Say(String),
    /// A sequence.
    Batch(Vec<u64>),
    /// An option, a bool and a char.
    Flags(Option<u8>, bool, char),
}

/// A request carrying where its reply goes, registered as `ask`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ask {
    /// The request.
    pub question: String,
    /// The reference the receiving node resolves.
    pub reply_to: MboxRef,
}

/// References in a sequence and an option, registered as `fanout`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Fanout {
    /// Several references.
    pub targets: Vec<MboxRef>,
    /// An optional one.
    pub note: Option<MboxRef>,
}

/// The harness node's registry: one type of each shape a message can take.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<u64>("u64")
        .and_then(|r| r.register::<String>("string"))
        .and_then(|r| r.register::<Vec<u8>>("bytes"))
        .and_then(|r| r.register::<Quote>("quote"))
        .and_then(|r| r.register::<Cmd>("cmd"))
        .and_then(|r| r.register::<Ask>("ask"))
        .and_then(|r| r.register::<Fanout>("fanout"))
        .and_then(|r| r.register::<BTreeMap<String, i16>>("map"))
        .expect("distinct names and types");
    r
}

/// The registered names, in registration order (entry index order).
pub const TYPE_NAMES: [&str; 8] = [
    "u64", "string", "bytes", "quote", "cmd", "ask", "fanout", "map",
];

/// An environment and a node, started once per process, that the entry points decode
/// against.
pub struct Harness {
    _env: WrappedEnv,
    node: Node,
}

impl Harness {
    /// The process's harness.
    pub fn get() -> &'static Harness {
        static HARNESS: OnceLock<Harness> = OnceLock::new();
        HARNESS.get_or_init(|| {
            let env = Environment::builder().start().expect("environment");
            let node = Node::start(
                &env.environment(),
                NodeConfig::new(NODE).token(TOKEN),
                registry(),
            )
            .expect("node");
            for name in EXPORTS {
                node.export(name);
            }
            Harness { _env: env, node }
        })
    }

    /// The harness node.
    pub fn node(&self) -> &Node {
        &self.node
    }
}

/// The frame decoder ([`frame::decode`]): the first two bytes choose the maximum frame
/// length, the rest is decoded frame after frame. Every frame it accepts lies within the
/// buffer and the maximum, and encodes back to exactly its bytes; a prefix waits for more
/// bytes or fails as the whole does.
pub fn frame(data: &[u8]) {
    let Some((max, mut rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let max = u32::from(u16::from_le_bytes(*max)).max(1);
    loop {
        let whole = frame::decode(rest, max);
        for cut in 0..rest.len().min(16) {
            match frame::decode(&rest[..cut], max) {
                Ok(None) => {}
                early => assert_eq!(early, whole, "a prefix of {cut} bytes decided otherwise"),
            }
        }
        let Ok(Some((f, n))) = whole else {
            return;
        };
        assert!(n >= frame::HEADER_BYTES && n <= rest.len() && (n - 4) as u32 <= max);
        assert_eq!(
            frame::decode(&rest[..n - 1], max),
            Ok(None),
            "decided a byte early"
        );
        assert_eq!(encode(&f), &rest[..n], "{f:?} does not encode to its bytes");
        rest = &rest[n..];
    }
}

/// The bytes the encoders write for `f`.
fn encode(f: &Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    match *f {
        Frame::Hello {
            version,
            name,
            token,
        } => frame::encode_hello(&mut out, version, name, token),
        Frame::Welcome { version, name } => frame::encode_welcome(&mut out, version, name),
        Frame::Refuse { reason } => frame::encode_refuse(&mut out, reason),
        Frame::DeclareType { id, name } => frame::encode_declare(&mut out, false, id, name),
        Frame::DeclareMbox { id, name } => frame::encode_declare(&mut out, true, id, name),
        Frame::Message { mbox, ty, payload } => frame::encode_message(&mut out, mbox, ty, payload),
        Frame::Heartbeat => frame::encode_heartbeat(&mut out),
        Frame::Bye => frame::encode_bye(&mut out),
        Frame::Ack { received } => frame::encode_ack(&mut out, received),
        Frame::Denied { mbox, ty, count } => frame::encode_denied(&mut out, mbox, ty, count),
    }
    out
}

/// The handshake's reading and checks, on both sides: the first byte's low bit chooses the
/// listener (reads a `Hello`) or the dialler (reads a `Welcome`); the rest is what the peer
/// sent. A prefix never decides otherwise than the whole; an accepted peer presented this
/// node's version (and, to the listener, its token and another name); a refusal the
/// listener writes back is one the dialler reads as that refusal.
pub fn handshake(data: &[u8]) {
    let Some((&role, sent)) = data.split_first() else {
        return;
    };
    let listener = role & 1 == 0;
    let config = &Harness::get().node.shared().config;
    let whole = outcome(handshake::parse(sent));
    // Once a prefix decides, every longer one decides the same: the first is checked.
    for cut in 0..sent.len() {
        match outcome(handshake::parse(&sent[..cut])) {
            Ok(None) => {}
            early => {
                assert_eq!(early, whole, "a prefix of {cut} bytes decided otherwise");
                break;
            }
        }
    }
    let verdict = match handshake::parse(sent) {
        Ok(None) => return,
        Ok(Some((first, _))) if listener => handshake::check_hello(first, config),
        Ok(Some((first, _))) => handshake::check_welcome(first),
        Err(e) => Err(e),
    };
    match (&verdict, frame::decode(sent, u32::MAX)) {
        (Ok(name), Ok(Some((f, _)))) => {
            assert!(name.len() <= MAX_NAME_BYTES);
            let expected = if listener {
                assert_ne!(name, NODE);
                Frame::Hello {
                    version: PROTOCOL_VERSION,
                    name,
                    token: TOKEN,
                }
            } else {
                Frame::Welcome {
                    version: PROTOCOL_VERSION,
                    name,
                }
            };
            assert_eq!(f, expected);
        }
        (Ok(_), other) => panic!("accepted a handshake that decodes as {other:?}"),
        (Err(_), _) => {}
    }
    if let (true, Err(e)) = (listener, verdict) {
        let mut refusal = Vec::new();
        frame::encode_refuse(&mut refusal, &handshake::refusal_reason(&e));
        match handshake::parse(&refusal).map(|p| p.map(|(o, _)| handshake::check_welcome(o))) {
            Ok(Some(Err(HandshakeError::Refused(_)))) => {}
            other => panic!("the refusal of {e:?} reads as {:?}", outcome_of(other)),
        }
    }
}

fn outcome<T>(r: Result<Option<(T, usize)>, HandshakeError>) -> Result<Option<usize>, String> {
    r.map(|o| o.map(|(_, n)| n)).map_err(|e| e.to_string())
}

fn outcome_of<T: std::fmt::Debug>(r: Result<Option<T>, HandshakeError>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// The registry's codecs, as the reader runs them on a message's payload: the first byte
/// chooses the registered type, the rest is its payload, decoded with the harness node
/// resolving mailbox references. What decodes encodes, and that encoding decodes and
/// encodes again to the same bytes. The payload as a type name finds only its own entry.
pub fn registry_decode(data: &[u8]) {
    let Some((&which, payload)) = data.split_first() else {
        return;
    };
    let node = Harness::get().node.shared();
    let registry = &node.registry;
    let index = u32::from(which) % registry.len() as u32;
    let entry = registry.entry(index);
    assert_eq!(registry.index_of_name(&entry.name), Some(index));
    if let Ok(name) = std::str::from_utf8(payload)
        && let Some(i) = registry.index_of_name(name)
    {
        assert_eq!(&*registry.entry(i).name, name);
    }
    let _decoding = decoding_for(node.clone());
    let Ok(value) = (entry.decode)(payload) else {
        return;
    };
    let once = encoded(entry.encode, &value);
    let again = (entry.decode)(&once).expect("an encoding decodes");
    assert_eq!(encoded(entry.encode, &again), once, "{}", entry.name);
}

fn encoded(encode: crate::registry::EncodeFn, value: &AnyMessage) -> Vec<u8> {
    let mut out = Vec::new();
    encode(value, &mut out).expect("a decoded value encodes");
    out
}

/// A mailbox reference decoded from a message: never without a decoding node; with the
/// harness node, the reference keeps the names it was sent with, resolves to the exported
/// mailbox when it names one of this node's, and takes a send wherever it points.
pub fn mbox_ref(data: &[u8]) {
    assert!(
        Postcard::decode::<MboxRef>(data).is_err(),
        "a reference decoded outside a node's reader"
    );
    let node = Harness::get().node.shared();
    let _decoding = decoding_for(node.clone());
    let Ok(r) = Postcard::decode::<MboxRef>(data) else {
        return;
    };
    let mut once = Vec::new();
    Postcard::encode(&r, &mut once).expect("a reference encodes");
    let again = Postcard::decode::<MboxRef>(&once).expect("an encoded reference decodes");
    assert_eq!(again, r);
    if r.node() == NODE
        && let Some(exported) = node.exported(r.name())
    {
        assert!(*r.mbox() == exported, "{r:?} is not the exported mailbox");
    }
    r.send(0u64);
}

/// The reader's reassembly: the first four bytes choose chunk sizes (1-256), the rest is a
/// connection's byte stream after the handshake. Fed to the reader's decoding in those
/// chunks (as reads deliver them) or at once, it acts on the same frames, counts the same
/// messages and stops for the same reason.
pub fn reader(data: &[u8]) {
    let Some((sizes, stream)) = data.split_first_chunk::<4>() else {
        return;
    };
    let node = Harness::get().node.shared();
    let whole = Fed::run(node, [stream].into_iter());
    let mut rest = stream;
    let chunks = sizes.iter().cycle().map_while(move |&s| {
        let n = (usize::from(s) + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        (!chunk.is_empty()).then_some(chunk)
    });
    assert_eq!(Fed::run(node, chunks), whole);
}

/// What feeding a stream to the reader's decoding did.
#[derive(Debug, PartialEq)]
struct Fed {
    consumed: usize,
    messages: u64,
    bye: bool,
    error: Option<String>,
}

impl Fed {
    fn run<'a>(
        node: &std::sync::Arc<crate::node::NodeShared>,
        chunks: impl Iterator<Item = &'a [u8]>,
    ) -> Fed {
        let mut inbound = Inbound::new("fuzz-peer", node.config.idle_frames_per_second);
        let mut detector = PhiAccrual::new(node.config.phi, Instant::now());
        let mut buf = Vec::new();
        let mut fed = Fed {
            consumed: 0,
            messages: 0,
            bye: false,
            error: None,
        };
        for chunk in chunks {
            buf.extend_from_slice(chunk);
            // Turns until the budget no longer stops one, as the reader does between reads.
            loop {
                let Turn {
                    consumed,
                    messages,
                    bye,
                    error,
                    more,
                    paused,
                } = decode_turn(node, &mut inbound, &mut detector, &buf);
                // What the reader hands to the writer and counts after a turn.
                inbound.denials.forget_turn();
                fed.consumed += consumed;
                fed.messages += messages;
                if bye || error.is_some() {
                    fed.bye = bye;
                    fed.error = error.map(|e| e.to_string());
                    return fed;
                }
                buf.drain(..consumed);
                // A paused reader acts on the rest after its pause: here, at once.
                if !more && !paused {
                    break;
                }
            }
        }
        fed
    }
}

/// Seed inputs per entry point, made with the real encoders: `(target, file name, bytes)`.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    let node = &Harness::get().node;
    let a = node.mbox_ref(EXPORTS[0]).expect("exported");
    let b = node.mbox_ref(EXPORTS[1]).expect("exported");
    let elsewhere = {
        let mut bytes = Vec::new();
        Postcard::encode(&("other", "inbox"), &mut bytes).expect("encodes");
        bytes
    };
    // One payload per registered type, in entry order.
    let payloads: Vec<Vec<u8>> = {
        let mut p: Vec<Vec<u8>> = Vec::new();
        let mut put = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut v = Vec::new();
            f(&mut v);
            p.push(v);
        };
        put(&|v| Postcard::encode(&u64::MAX, v).unwrap());
        put(&|v| Postcard::encode(&"héllo".to_string(), v).unwrap());
        put(&|v| Postcard::encode(&vec![0u8, 1, 255], v).unwrap());
        put(&|v| {
            let q = Quote {
                symbol: "ACME".into(),
                price: 12.5,
                size: 300,
                tags: vec!["x".into(), String::new()],
            };
            Postcard::encode(&q, v).unwrap()
        });
        put(&|v| Postcard::encode(&Cmd::Move { x: -3, y: 1 << 40 }, v).unwrap());
        put(&|v| {
            let ask = Ask {
                question: "?".into(),
                reply_to: a.clone(),
            };
            Postcard::encode(&ask, v).unwrap()
        });
        put(&|v| {
            let f = Fanout {
                targets: vec![a.clone(), b.clone()],
                note: Some(b.clone()),
            };
            Postcard::encode(&f, v).unwrap()
        });
        put(&|v| {
            let m: BTreeMap<String, i16> = [("k".to_string(), -1), ("z".to_string(), 7)].into();
            Postcard::encode(&m, v).unwrap()
        });
        p
    };
    let more_cmds = [
        Cmd::Start,
        Cmd::Say("hi".into()),
        Cmd::Batch(vec![1, 300, u64::MAX]),
        Cmd::Flags(Some(9), true, 'é'),
    ];

    // frame: a maximum, then frames of every kind.
    let max = 4096u16.to_le_bytes();
    let mut every = Vec::new();
    frame::encode_hello(&mut every, PROTOCOL_VERSION, "node-a", b"secret");
    frame::encode_welcome(&mut every, PROTOCOL_VERSION, "node-b");
    frame::encode_refuse(&mut every, "wrong token");
    frame::encode_declare(&mut every, false, 0, "u64");
    frame::encode_declare(&mut every, true, 1, "a");
    frame::encode_message(&mut every, 1, 0, &payloads[0]);
    frame::encode_heartbeat(&mut every);
    frame::encode_bye(&mut every);
    frame::encode_ack(&mut every, 1 << 40);
    frame::encode_denied(&mut every, 1, 0, 3);
    out.push(("frame", "every-kind".into(), [&max[..], &every].concat()));
    let mut one = |name: &str, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = max.to_vec();
        f(&mut v);
        out.push(("frame", name.to_string(), v));
    };
    one("hello", &|v| frame::encode_hello(v, 1, "n", b"t"));
    one("welcome", &|v| frame::encode_welcome(v, 1, "n"));
    one("refuse", &|v| frame::encode_refuse(v, "no"));
    one("declare-type", &|v| {
        frame::encode_declare(v, false, 7, "quote")
    });
    one("declare-mbox", &|v| {
        frame::encode_declare(v, true, 65535, "b")
    });
    one("message", &|v| frame::encode_message(v, 3, 4, &[1, 2, 3]));
    one("heartbeat", &|v| frame::encode_heartbeat(v));
    one("ack", &|v| frame::encode_ack(v, 42));
    one("denied", &|v| frame::encode_denied(v, 1, 2, 3));
    one("too-long", &|v| {
        v.extend_from_slice(&u32::MAX.to_le_bytes())
    });

    // handshake: role byte (0 listener, 1 dialler), then what the peer sent.
    let mut hs = |name: &str, role: u8, f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = vec![role];
        f(&mut v);
        out.push(("handshake", name.to_string(), v));
    };
    hs("hello-ok", 0, &|v| {
        frame::encode_hello(v, PROTOCOL_VERSION, "peer", TOKEN)
    });
    hs("hello-wrong-token", 0, &|v| {
        frame::encode_hello(v, PROTOCOL_VERSION, "peer", b"nope")
    });
    hs("hello-same-name", 0, &|v| {
        frame::encode_hello(v, PROTOCOL_VERSION, NODE, TOKEN)
    });
    hs("hello-old-version", 0, &|v| {
        frame::encode_hello(v, 0, "peer", TOKEN)
    });
    hs("hello-then-more", 0, &|v| {
        frame::encode_hello(v, PROTOCOL_VERSION, "peer", TOKEN);
        frame::encode_declare(v, false, 0, "u64");
    });
    hs("tls-client-hello", 0, &|v| {
        v.extend_from_slice(&[0x16, 0x03, 0x01, 0x00, 0xa5, 0x01])
    });
    hs("welcome-ok", 1, &|v| {
        frame::encode_welcome(v, PROTOCOL_VERSION, "listener")
    });
    hs("welcome-old-version", 1, &|v| {
        frame::encode_welcome(v, 7, "listener")
    });
    hs("refuse", 1, &|v| frame::encode_refuse(v, "wrong token"));
    hs("heartbeat-first", 1, &|v| frame::encode_heartbeat(v));

    // registry: type index, then its payload.
    for (i, p) in payloads.iter().enumerate() {
        let v = [&[i as u8][..], p].concat();
        out.push(("registry", TYPE_NAMES[i].to_string(), v));
    }
    for (i, c) in more_cmds.iter().enumerate() {
        let mut v = vec![4u8];
        Postcard::encode(c, &mut v).unwrap();
        out.push(("registry", format!("cmd-{i}"), v));
    }
    out.push(("registry", "ask-elsewhere".into(), {
        let mut v = vec![5u8];
        Postcard::encode(&"?", &mut v).unwrap();
        v.extend_from_slice(&elsewhere);
        v
    }));

    // mbox_ref: a reference alone.
    for (name, r) in [("exported", &a), ("other-export", &b)] {
        let mut v = Vec::new();
        Postcard::encode(r, &mut v).unwrap();
        out.push(("mbox_ref", name.into(), v));
    }
    out.push(("mbox_ref", "unknown-node".into(), elsewhere.clone()));
    out.push(("mbox_ref", "not-exported".into(), {
        let mut v = Vec::new();
        Postcard::encode(&(NODE, "hidden"), &mut v).unwrap();
        v
    }));

    // reader: chunk sizes, then a connection's frames after the handshake.
    let mut session = Vec::new();
    for (i, name) in TYPE_NAMES.iter().enumerate() {
        frame::encode_declare(&mut session, false, i as u32, name);
    }
    frame::encode_declare(&mut session, false, 8, "not.registered");
    for (i, name) in EXPORTS.iter().chain(&["not-exported"]).enumerate() {
        frame::encode_declare(&mut session, true, i as u32, name);
    }
    for (i, p) in payloads.iter().enumerate() {
        frame::encode_message(&mut session, (i % 3) as u32, i as u32, p);
    }
    frame::encode_message(&mut session, 0, 8, &[1]);
    frame::encode_message(&mut session, 0, 3, &[0xff]);
    frame::encode_heartbeat(&mut session);
    frame::encode_ack(&mut session, 3);
    let chunks = [[1u8, 2, 3, 4], [0, 0, 0, 0], [255, 7, 63, 1]];
    for (i, c) in chunks.iter().enumerate() {
        out.push((
            "reader",
            format!("session-{i}"),
            [&c[..], &session].concat(),
        ));
    }
    let mut denied = session.clone();
    frame::encode_denied(&mut denied, 0, 5, 2);
    frame::encode_denied(&mut denied, 1, 0, 1);
    frame::encode_ack(&mut denied, 3);
    out.push((
        "reader",
        "denied".into(),
        [&[2u8, 30, 4, 11][..], &denied].concat(),
    ));
    let mut bye = session.clone();
    frame::encode_bye(&mut bye);
    frame::encode_heartbeat(&mut bye);
    out.push((
        "reader",
        "bye".into(),
        [&[16u8, 1, 2, 3][..], &bye].concat(),
    ));
    let mut undeclared = Vec::new();
    frame::encode_message(&mut undeclared, 0, 0, &payloads[0]);
    out.push((
        "reader",
        "undeclared".into(),
        [&[5u8, 5, 5, 5][..], &undeclared].concat(),
    ));
    let mut hello = Vec::new();
    frame::encode_hello(&mut hello, PROTOCOL_VERSION, "late", TOKEN);
    out.push((
        "reader",
        "late-hello".into(),
        [&[9u8, 9, 9, 9][..], &hello].concat(),
    ));
    out.push(("reader", "too-many-declarations".into(), {
        let mut v = vec![3u8, 3, 3, 3];
        frame::encode_declare(&mut v, true, 1 << 16, "a");
        v
    }));
    out
}

/// The fuzz workspace (`fuzz/` at the repository root), from a crate's `CARGO_MANIFEST_DIR`.
pub fn fuzz_dir(manifest_dir: &str) -> std::path::PathBuf {
    std::path::Path::new(manifest_dir).join("../../fuzz")
}

/// Feeds every file of `corpus/<target>/` and `regressions/<target>/` under `fuzz_dir` to
/// `entry`, as the fuzz target does; panics naming the first input that fails the target's
/// invariants. Returns how many inputs it fed.
pub fn replay(fuzz_dir: &std::path::Path, target: &str, entry: fn(&[u8])) -> usize {
    let mut fed = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(files) = std::fs::read_dir(fuzz_dir.join(dir).join(target)) else {
            continue;
        };
        for file in files {
            let path = file.expect("a readable directory").path();
            let data = std::fs::read(&path).expect("a readable file");
            let run = std::panic::catch_unwind(|| entry(&data));
            assert!(run.is_ok(), "{} fails its invariants", path.display());
            fed += 1;
        }
    }
    fed
}

/// Checks that the committed seed corpus under `fuzz_dir` is `seeds` (target, file name,
/// bytes); with `COHORT_WRITE_SEEDS` set, writes them first.
pub fn check_seeds(fuzz_dir: &std::path::Path, seeds: Vec<(&'static str, String, Vec<u8>)>) {
    let write = std::env::var_os("COHORT_WRITE_SEEDS").is_some();
    for (target, name, bytes) in seeds {
        let path = fuzz_dir.join("corpus").join(target).join(&name);
        if write {
            std::fs::create_dir_all(path.parent().expect("a corpus folder"))
                .expect("a writable corpus folder");
            std::fs::write(&path, &bytes).expect("a writable corpus file");
        }
        let committed = std::fs::read(&path).unwrap_or_default();
        assert_eq!(
            committed,
            bytes,
            "{} is not the generator's",
            path.display()
        );
    }
}
