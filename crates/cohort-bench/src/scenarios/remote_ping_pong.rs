//! Remote ping-pong (akka-remote-flush-batching.txt, Akka.NET's RemotePingPong): client
//! agents on one node, an echo agent per client on another, over TCP on loopback. Each client
//! keeps `in_flight` pings outstanding and sends the next one when a pong comes back, until
//! it has sent its share; throughput counts both directions (a client's `messages` are its
//! pings plus its pongs, RemotePingPong's "Messages sent/received per client").
//!
//! The two nodes run in one process (two environments) or in two: the bench's own binary,
//! started as `cohort-bench remote-ping-pong-server`, holds the echo side.

use cohort::{Agent, Context, DefineError, DeregReason, Environment, Mbox, WrappedEnv};
use cohort_remote::{Batching, Node, NodeConfig, NodeStats, Registry, RemoteNode};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A ping: the client's pong mailbox slot, and when it was sent (the client's clock).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Ping {
    slot: u32,
    sent_ns: u64,
}

/// The echo of a [`Ping`].
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Pong {
    sent_ns: u64,
}

/// The server's node name.
pub const SERVER: &str = "rpp-server";
/// The client's node name.
pub const CLIENT: &str = "rpp-client";
const TOKEN: &str = "cohort-bench";
/// How long one round may take before it is reported as failed.
const ROUND_TIMEOUT: Duration = Duration::from_secs(300);

/// The types both nodes register.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Ping>("bench.Ping")
        .and_then(|r| r.register::<Pong>("bench.Pong"))
        .expect("two distinct names");
    r
}

/// The worker spin of both nodes' environments, in µs (`--worker-spin-us`; 0: cohort's
/// default). Set once by the command before any node starts, and passed to the child.
pub static WORKER_SPIN_US: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// An environment for one side, with the worker spin asked for.
fn environment() -> Result<cohort::WrappedEnv, String> {
    let mut b = Environment::builder();
    let spin = WORKER_SPIN_US.load(std::sync::atomic::Ordering::Relaxed);
    if spin > 0 {
        b = b.worker_spin(Duration::from_micros(spin));
    }
    b.start().map_err(|e| e.to_string())
}

/// The batching policies compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Policy {
    /// Adaptive batching (the default).
    Adaptive,
    /// A write per message.
    PerMessage,
    /// Akka.NET's fixed thresholds: 20 messages, 128 KB, 40 ms.
    Fixed,
    /// Adaptive batching over TLS (rustls, TLS 1.3, a self-signed certificate both nodes
    /// trust): what encryption costs.
    AdaptiveTls,
}

impl Policy {
    /// The node setting.
    pub fn batching(self) -> Batching {
        match self {
            Policy::Adaptive | Policy::AdaptiveTls => Batching::adaptive(),
            Policy::PerMessage => Batching::PerMessage,
            Policy::Fixed => Batching::fixed(),
        }
    }

    /// Words for results.
    pub fn label(self) -> &'static str {
        match self {
            Policy::Adaptive => "adaptive batching",
            Policy::PerMessage => "write per message",
            Policy::Fixed => "fixed thresholds 20 msg/128 KB/40 ms",
            Policy::AdaptiveTls => "adaptive batching, TLS",
        }
    }

    /// A node's settings under this policy.
    pub fn config(self, name: &str) -> Result<NodeConfig, String> {
        let config = NodeConfig::new(name).token(TOKEN).batching(self.batching());
        Ok(match self {
            Policy::AdaptiveTls => config.tls(bench_tls()?),
            _ => config,
        })
    }
}

/// The benchmark's TLS key (P-256, PKCS#8). For this benchmark only: it is public.
const BENCH_KEY_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgZQHOCoU7gXtSd557
0oACMV135jLUogjmV6jWPWAUUyuhRANCAASNl3Ie3Be0MwAUIUI9n1WxdJz9XBj2
C6+5QzD/78q3fzZ8LV17Cu0VTjVbCdxPewArIPl2CRMzaKTlIfkGQaDz
-----END PRIVATE KEY-----
";

/// TLS for both nodes: a certificate for `cohort.bench` self-signed with the benchmark's
/// key (each process signs its own; both carry the same name and key, which is what the
/// other trusts).
fn bench_tls() -> Result<cohort_remote::Tls, String> {
    use cohort_remote::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use cohort_remote::rustls::{self, RootCertStore};
    use std::sync::Arc;
    let key = rcgen::KeyPair::from_pem(BENCH_KEY_PEM).map_err(|e| e.to_string())?;
    let mut params = rcgen::CertificateParams::new(vec!["cohort.bench".to_string()])
        .map_err(|e| e.to_string())?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "cohort.bench");
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    let der = CertificateDer::from(cert.der().to_vec());
    let mut roots = RootCertStore::empty();
    roots.add(der.clone()).map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(
            vec![der],
            PrivateKeyDer::try_from(key.serialize_der()).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cohort_remote::Tls::new(Arc::new(server), Arc::new(client), "cohort.bench")
        .map_err(|e| e.to_string())
}

/// Where the echo node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Processes {
    /// Both nodes in this process (two environments).
    One,
    /// The echo node in a child process.
    Two,
}

impl Processes {
    /// Words for results.
    pub fn label(self) -> &'static str {
        match self {
            Processes::One => "one process",
            Processes::Two => "two processes",
        }
    }
}

/// Replies to pings on `echo-<i>`, to the client's `pong-<slot>`.
struct Echo {
    inbox: Mbox,
    client: RemoteNode,
    last: Option<(u32, Mbox)>,
}

impl Echo {
    fn on_ping(&mut self, p: &Ping, _: &mut Context<'_, Self>) {
        let to = match &self.last {
            Some((slot, m)) if *slot == p.slot => m,
            _ => {
                let m = self.client.mbox(&pong_name(p.slot));
                &self.last.insert((p.slot, m)).1
            }
        };
        to.send(Pong { sent_ns: p.sent_ns });
    }
}

impl Agent for Echo {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(&inbox, Self::on_ping)?;
        Ok(())
    }
}

fn echo_name(i: usize) -> String {
    format!("echo-{i}")
}

fn pong_name(slot: u32) -> String {
    format!("pong-{slot}")
}

/// The echo side: an environment, a listening node, and (once the client connected) an echo
/// agent per client.
pub struct Server {
    env: Option<WrappedEnv>,
    node: Option<Node>,
}

impl Server {
    /// Starts the node listening on loopback.
    pub fn start(policy: Policy) -> Result<Self, String> {
        let env = environment()?;
        let node = Node::start(
            &env.environment(),
            policy
                .config(SERVER)?
                .listen("127.0.0.1:0".parse().expect("an address")),
            registry(),
        )
        .map_err(|e| e.to_string())?;
        Ok(Self {
            env: Some(env),
            node: Some(node),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.node
            .as_ref()
            .and_then(Node::local_addr)
            .expect("a listening node")
    }

    /// Waits for the client node, then starts `clients` echo agents.
    pub fn serve(&self, clients: usize) -> Result<(), String> {
        let node = self.node.as_ref().expect("started");
        let client = node
            .wait_for_peer(CLIENT, Duration::from_secs(30))
            .ok_or("the client node did not connect within 30 s")?;
        let env = self.env.as_ref().expect("started").environment();
        let mut coop = env.new_coop();
        for i in 0..clients {
            coop.add(Echo {
                inbox: node.export(&echo_name(i)),
                client: client.clone(),
                last: None,
            });
        }
        env.register_coop(coop).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The node's counters.
    pub fn stats(&self) -> NodeStats {
        self.node.as_ref().map(Node::stats).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(n) = self.node.take() {
            n.shutdown();
        }
        if let Some(e) = self.env.take() {
            e.stop_and_wait();
        }
    }
}

/// What a client agent reports when done.
struct Done {
    latency: Option<Histogram<u64>>,
}

struct Client {
    inbox: Mbox,
    echo: Mbox,
    slot: u32,
    pings: u64,
    sent: u64,
    received: u64,
    in_flight: u64,
    base: Instant,
    latency: Option<Histogram<u64>>,
    done: mpsc::Sender<Done>,
}

impl Client {
    fn ping(&mut self) {
        self.sent += 1;
        self.echo.send(Ping {
            slot: self.slot,
            sent_ns: self.base.elapsed().as_nanos() as u64,
        });
    }

    fn on_pong(&mut self, p: &Pong, _: &mut Context<'_, Self>) {
        self.received += 1;
        if let Some(h) = &mut self.latency {
            let now = self.base.elapsed().as_nanos() as u64;
            let _ = h.record(now.saturating_sub(p.sent_ns).max(1));
        }
        if self.sent < self.pings {
            self.ping();
        } else if self.received == self.pings {
            let _ = self.done.send(Done {
                latency: self.latency.take(),
            });
        }
    }
}

impl Agent for Client {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(&inbox, Self::on_pong)?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        for _ in 0..self.in_flight.min(self.pings) {
            self.ping();
        }
    }
}

/// The client side: an environment and a node connected to the server.
pub struct ClientSide {
    env: Option<WrappedEnv>,
    node: Option<Node>,
    server: RemoteNode,
    next_slot: u32,
}

/// One round's figures.
pub struct Round {
    /// From the first ping to the last pong.
    pub elapsed: Duration,
    /// Pings and pongs, all clients together.
    pub messages: u64,
    /// Messages per write on the client node during the round.
    pub client_batch: f64,
    /// Round-trip latency (when asked for).
    pub latency: Option<Histogram<u64>>,
}

impl ClientSide {
    /// Connects a client node to `addr`.
    pub fn connect(addr: std::net::SocketAddr, policy: Policy) -> Result<Self, String> {
        let env = environment()?;
        let node = Node::start(&env.environment(), policy.config(CLIENT)?, registry())
            .map_err(|e| e.to_string())?;
        let server = node.connect(addr).map_err(|e| e.to_string())?;
        Ok(Self {
            env: Some(env),
            node: Some(node),
            server,
            next_slot: 0,
        })
    }

    /// Lets the next round's clients take the first slots again (their `pong-<slot>` names
    /// and the echo side's cached proxies are reused instead of piling up: a long run of
    /// rounds then holds what one round holds).
    pub fn rewind_slots(&mut self) {
        self.next_slot = 0;
    }

    /// One round: `clients` clients, each `messages` (pings + pongs) with `in_flight`
    /// outstanding; with `latency`, every round trip is recorded.
    pub fn round(
        &mut self,
        clients: usize,
        messages: u64,
        in_flight: u64,
        latency: bool,
    ) -> Result<Round, String> {
        let node = self.node.as_ref().expect("started");
        let env = self.env.as_ref().expect("started").environment();
        let pings = (messages / 2).max(1);
        let (tx, rx) = mpsc::channel();
        let base = Instant::now();
        let mut coop = env.new_coop();
        for i in 0..clients {
            let slot = self.next_slot;
            self.next_slot += 1;
            coop.add(Client {
                inbox: node.export(&pong_name(slot)),
                echo: self.server.mbox(&echo_name(i)),
                slot,
                pings,
                sent: 0,
                received: 0,
                in_flight,
                base,
                latency: latency
                    .then(|| Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("bounds")),
                done: tx.clone(),
            });
        }
        let before = node.stats();
        let started = Instant::now();
        let handle = env.register_coop(coop).map_err(|e| e.to_string())?;
        let mut hist: Option<Histogram<u64>> = None;
        for _ in 0..clients {
            let d = rx.recv_timeout(ROUND_TIMEOUT).map_err(|_| {
                format!(
                    "remote ping-pong round of {clients} clients did not finish within {ROUND_TIMEOUT:?} \
                     (dead letters: {})",
                    env.dead_letters()
                )
            })?;
            if let Some(h) = d.latency {
                match &mut hist {
                    Some(all) => all.add(&h).map_err(|e| e.to_string())?,
                    None => hist = Some(h),
                }
            }
        }
        let elapsed = started.elapsed();
        handle.deregister(DeregReason::Normal);
        let after = node.stats();
        let writes = after.writes - before.writes;
        let out = after.messages_out - before.messages_out;
        Ok(Round {
            elapsed,
            messages: pings * 2 * clients as u64,
            client_batch: if writes == 0 {
                0.0
            } else {
                out as f64 / writes as f64
            },
            latency: hist,
        })
    }
}

impl Drop for ClientSide {
    fn drop(&mut self) {
        if let Some(n) = self.node.take() {
            n.shutdown();
        }
        if let Some(e) = self.env.take() {
            e.stop_and_wait();
        }
    }
}

/// The server as a child process: `cohort-bench remote-ping-pong-server`, which prints
/// `LISTEN <addr>`, then `READY` once the client connected and the echo agents run, and
/// exits when its standard input closes.
pub struct ChildServer {
    child: std::process::Child,
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl ChildServer {
    /// Starts the child.
    pub fn spawn(policy: Policy, clients: usize) -> Result<Self, String> {
        use std::io::BufRead;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let policy_arg = match policy {
            Policy::Adaptive => "adaptive",
            Policy::PerMessage => "per-message",
            Policy::Fixed => "fixed",
            Policy::AdaptiveTls => "adaptive-tls",
        };
        let mut child = std::process::Command::new(exe)
            .args([
                "remote-ping-pong-server",
                "--batching",
                policy_arg,
                "--clients",
                &clients.to_string(),
                "--worker-spin-us",
                &WORKER_SPIN_US
                    .load(std::sync::atomic::Ordering::Relaxed)
                    .to_string(),
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not start the server process: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut lines = std::io::BufReader::new(stdout).lines();
        let first = lines
            .next()
            .and_then(Result::ok)
            .ok_or("the server process printed nothing")?;
        let addr = first
            .strip_prefix("LISTEN ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("unexpected server line {first:?}"))?;
        Ok(Self { child, addr, lines })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the server's `READY` (after the client connected).
    pub fn ready(&mut self) -> Result<(), String> {
        match self.lines.next() {
            Some(Ok(l)) if l == "READY" => Ok(()),
            other => Err(format!("server not ready: {other:?}")),
        }
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's main: serves `clients` echo agents until standard input closes.
pub fn serve_child(policy: Policy, clients: usize) -> Result<(), String> {
    use std::io::{Read, Write};
    let server = Server::start(policy)?;
    println!("LISTEN {}", server.addr());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    server.serve(clients)?;
    println!("READY");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(server);
    Ok(())
}

/// Both sides, in one process or two.
pub enum Pair {
    /// Both nodes here.
    One(Server, ClientSide),
    /// The server in a child process (held for its lifetime: dropping it ends the child).
    Two {
        _server: ChildServer,
        client: ClientSide,
    },
}

impl Pair {
    /// Sets up the two nodes for up to `clients` clients.
    pub fn start(processes: Processes, policy: Policy, clients: usize) -> Result<Self, String> {
        match processes {
            Processes::One => {
                let server = Server::start(policy)?;
                let addr = server.addr();
                let client = ClientSide::connect(addr, policy)?;
                server.serve(clients)?;
                Ok(Pair::One(server, client))
            }
            Processes::Two => {
                let mut child = ChildServer::spawn(policy, clients)?;
                let client = ClientSide::connect(child.addr, policy)?;
                child.ready()?;
                Ok(Pair::Two {
                    _server: child,
                    client,
                })
            }
        }
    }

    /// The client side.
    pub fn client(&mut self) -> &mut ClientSide {
        match self {
            Pair::One(_, c) | Pair::Two { client: c, .. } => c,
        }
    }

    /// The echo side's process id, when it runs in a child process.
    pub fn child_pid(&self) -> Option<u32> {
        match self {
            Pair::One(..) => None,
            Pair::Two { _server: s, .. } => Some(s.pid()),
        }
    }

    /// The server node's counters, when it runs in this process.
    pub fn server_stats(&self) -> Option<NodeStats> {
        match self {
            Pair::One(s, _) => Some(s.stats()),
            Pair::Two { .. } => None,
        }
    }
}

/// The floor under the latency run: two plain threads exchanging 16-byte messages over a
/// loopback TCP connection with blocking sockets (`TCP_NODELAY`), no framework at all;
/// returns the round trips' histogram.
pub fn raw_tcp_round_trips(round_trips: u64) -> Result<Histogram<u64>, String> {
    use std::io::{Read, Write};
    let e = |e: std::io::Error| e.to_string();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(e)?;
    let addr = listener.local_addr().map_err(e)?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut b = [0u8; 16];
        for _ in 0..round_trips {
            s.read_exact(&mut b)?;
            s.write_all(&b)?;
        }
        Ok(())
    });
    let mut c = std::net::TcpStream::connect(addr).map_err(e)?;
    c.set_nodelay(true).map_err(e)?;
    let mut h = Histogram::new_with_bounds(1, 60_000_000_000, 3).map_err(|e| e.to_string())?;
    let mut b = [0u8; 16];
    for _ in 0..round_trips {
        let t = Instant::now();
        c.write_all(&b).map_err(e)?;
        c.read_exact(&mut b).map_err(e)?;
        let _ = h.record(t.elapsed().as_nanos() as u64);
    }
    echo.join()
        .map_err(|_| "the echo thread panicked".to_string())?
        .map_err(e)?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_round_gets_every_pong_back() {
        let mut pair = Pair::start(Processes::One, Policy::Adaptive, 3).unwrap();
        let r = pair.client().round(3, 2_000, 10, true).unwrap();
        assert_eq!(r.messages, 6_000);
        assert_eq!(r.latency.unwrap().len(), 3_000);
        assert!(r.client_batch >= 1.0);
    }
}
