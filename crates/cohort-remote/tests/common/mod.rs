//! Helpers of the remoting tests: a watchdog, probes that forward what an exported mailbox
//! receives to the test thread, a dead-letter recorder, and a raw peer that speaks the wire
//! format by hand (for malformed input).
#![allow(dead_code)]

pub mod proxy;

use cohort::{
    Agent, Context, DeadLetter, DefineError, DeliveryFailure, Environment, Mbox, WrappedEnv,
};
use cohort_remote::frame::{self, Frame};
use cohort_remote::{Node, NodeConfig, Registry, RemoteNode};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The time limit of one test body.
pub const TIMEOUT: Duration = Duration::from_secs(30);

pub use cohort::testing::watchdog;

/// Receives one value or fails the test naming `what`.
#[track_caller]
pub fn recv<T>(rx: &Receiver<T>, what: &str) -> T {
    rx.recv_timeout(TIMEOUT)
        .unwrap_or_else(|e| panic!("waiting for {what}: {e:?}"))
}

/// Forwards every `T` arriving at `inbox` to the test thread.
pub struct Probe<T> {
    inbox: Mbox,
    tx: Sender<T>,
}

impl<T: Clone + Send + Sync + 'static> Agent for Probe<T> {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(&inbox, |me: &mut Self, v: &T, _: &mut Context<'_, Self>| {
            let _ = me.tx.send(v.clone());
        })?;
        Ok(())
    }
}

/// Registers a probe of `T` on `inbox`; returns what it receives.
pub fn probe<T: Clone + Send + Sync + 'static>(env: &Environment, inbox: Mbox) -> Receiver<T> {
    let (tx, rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.add(Probe { inbox, tx });
    env.register_coop(coop).expect("register the probe");
    rx
}

/// The reasons of the dead letters an environment saw.
pub type Letters = Arc<Mutex<Vec<(&'static str, DeliveryFailure)>>>;

/// An environment that records its dead letters.
pub fn env_recording() -> (WrappedEnv, Letters) {
    let letters: Letters = Arc::default();
    let l = letters.clone();
    let env = Environment::builder()
        .dead_letter_hook(move |d: &DeadLetter| l.lock().unwrap().push((d.message_type, d.reason)))
        .start()
        .expect("start an environment");
    (env, letters)
}

/// How many recorded dead letters have `reason`.
pub fn count(letters: &Letters, reason: DeliveryFailure) -> usize {
    letters
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, r)| *r == reason)
        .count()
}

/// A registry with `u64` alone (as "u64"), what most tests send.
pub fn u64_registry() -> Registry {
    let mut r = Registry::new();
    r.register::<u64>("u64").unwrap();
    r
}

/// A node listening on a free loopback port.
pub fn listening(env: &Environment, config: NodeConfig, registry: Registry) -> Node {
    Node::start(env, config.listen("127.0.0.1:0".parse().unwrap()), registry).expect("start a node")
}

/// Configurations of a pair of nodes whose writers only the tested path wakes: the
/// client's heartbeats an hour apart, and a server that does not miss them meanwhile.
pub fn no_heartbeat_wakeups(server: NodeConfig, client: NodeConfig) -> (NodeConfig, NodeConfig) {
    let lenient = cohort_remote::phi::PhiConfig {
        acceptable_pause: Duration::from_secs(3600),
        ..Default::default()
    };
    (
        server.failure_detector(lenient),
        client.heartbeat_interval(Duration::from_secs(3600)),
    )
}

/// Registers `agent` alone, on a thread of its own (`active_obj`); returns its mailbox.
pub fn on_own_thread<A: cohort::Agent>(env: &Environment, agent: A) -> Mbox {
    let own_thread = cohort::dispatcher::ActiveObjBuilder::new()
        .build(env)
        .expect("an active_obj dispatcher");
    let mut coop = env.new_coop();
    coop.set_binder(own_thread.binder());
    let mbox = coop.add(agent).mbox();
    env.register_coop(coop).expect("register the agent");
    mbox
}

/// Two nodes: a server listening on a free loopback port and a client connected to it.
pub struct TwoNodes {
    pub server: Node,
    pub client: Node,
    /// The client's handle of the server.
    pub peer: RemoteNode,
}

/// Starts the server and the client, each in its environment (the same one or two) with its
/// configuration and registry, and connects the client to the server.
pub fn two_nodes(
    server: (&Environment, NodeConfig, Registry),
    client: (&Environment, NodeConfig, Registry),
) -> TwoNodes {
    let (env, config, registry) = server;
    let server = listening(env, config, registry);
    let (env, config, registry) = client;
    let client = Node::start(env, config, registry).expect("start the client node");
    let peer = client
        .connect(server.local_addr().expect("a listening server"))
        .expect("connect to the server");
    TwoNodes {
        server,
        client,
        peer,
    }
}

/// [`two_nodes`] in one environment, "server" and "client" with the default configuration
/// and `registry()` each.
pub fn server_and_client(env: &Environment, registry: fn() -> Registry) -> TwoNodes {
    two_nodes(
        (env, NodeConfig::new("server"), registry()),
        (env, NodeConfig::new("client"), registry()),
    )
}

/// A hand-written peer: a plain socket that speaks the wire format.
pub struct RawPeer {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl RawPeer {
    /// Connects and sends a Hello with `version`, `name` and `token`.
    pub fn hello(addr: std::net::SocketAddr, version: u16, name: &str, token: &[u8]) -> Self {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut out = Vec::new();
        frame::encode_hello(&mut out, version, name, token);
        stream.write_all(&out).unwrap();
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    /// Wraps a connected socket (no handshake sent).
    pub fn from_stream(stream: TcpStream) -> Self {
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        Self {
            stream,
            buf: Vec::new(),
        }
    }

    /// Reads the next frame and describes it: `Welcome`, `Refuse: <reason>`, `Heartbeat`,
    /// ...; `closed` when the node closed the connection.
    pub fn next(&mut self) -> String {
        loop {
            if let Some((f, n)) =
                frame::decode(&self.buf, 1 << 20).expect("the node sends valid frames")
            {
                let s = match f {
                    Frame::Welcome { name, .. } => format!("Welcome {name}"),
                    Frame::Refuse { reason } => format!("Refuse: {reason}"),
                    other => format!("{other:?}")
                        .split([' ', '{'])
                        .next()
                        .unwrap()
                        .to_string(),
                };
                self.buf.drain(..n);
                return s;
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return "closed".into(),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Reads until the node closes the connection (skipping heartbeats and declarations).
    pub fn until_closed(&mut self) {
        while self.next() != "closed" {}
    }

    /// Writes raw bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes);
    }
}

/// Spins (yielding) until `cond` holds; the test's watchdog bounds the wait.
#[allow(dead_code)]
pub fn wait_until(cond: impl Fn() -> bool) {
    while !cond() {
        std::thread::yield_now();
    }
}
