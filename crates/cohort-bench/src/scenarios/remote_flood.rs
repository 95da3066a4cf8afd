//! Remote flood: a real peer's ping-pong with a node while something else costs
//! that node: a peer flooding heartbeats, one flooding tiny messages to a mailbox it does not
//! export, 10,000 connection attempts from one address, or connections each stalling a frame
//! of the maximum length one byte short. Each disturbed run is compared with an undisturbed
//! one of the same session; the stall also reports resident memory.
//!
//! Both nodes and the disturbing peers (plain sockets speaking the wire format) run in this
//! process on loopback; the node under test has one I/O thread (the default).

use cohort::{Agent, Context, DefineError, Environment, Mbox, WrappedEnv};
use cohort_remote::defaults::{HANDSHAKES_PER_SECOND, PROTOCOL_VERSION};
use cohort_remote::{Node, NodeConfig, NodeStats, Registry, frame};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const TOKEN: &str = "cohort-bench";

/// A ping and its pong: the number of the round trip.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Ball(u64);

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Ball>("bench.Ball").expect("one type");
    r
}

/// What disturbs the node under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// One authenticated peer writing heartbeat frames as fast as it can.
    Heartbeat,
    /// One authenticated peer writing tiny messages to a mailbox the node does not export.
    Tiny,
    /// 10,000 connection attempts from one address (each sends a Hello and closes).
    Connect,
    /// Connections each stalling a frame of the maximum length one byte short.
    Stall,
}

impl Mode {
    /// Words for results.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Heartbeat => "heartbeat flood from one authenticated peer",
            Mode::Tiny => "tiny-message flood to an unexported mailbox",
            Mode::Connect => "10,000 connection attempts from one address",
            Mode::Stall => "connections stalling a max-length frame one byte short",
        }
    }
}

/// Echoes every ball to `back`.
struct Echo {
    inbox: Mbox,
    back: Mbox,
}

impl Agent for Echo {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, b: &Ball, _: &mut Context<'_, Self>| {
                me.back.send(*b);
            },
        )?;
        Ok(())
    }
}

/// Forwards every ball to the measuring thread.
struct Catch {
    inbox: Mbox,
    tx: mpsc::Sender<u64>,
}

impl Agent for Catch {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, b: &Ball, _: &mut Context<'_, Self>| {
                let _ = me.tx.send(b.0);
            },
        )?;
        Ok(())
    }
}

/// The node under test (with an echo agent) and the real peer (with its catcher).
struct Pair {
    server_env: WrappedEnv,
    client_env: WrappedEnv,
    server: Node,
    client: Node,
    ping: Mbox,
    pongs: mpsc::Receiver<u64>,
}

impl Pair {
    /// `handshakes` per second from one address (the stall opens its connections at once).
    fn start(handshakes: u32) -> Result<Pair, String> {
        let server_env = Environment::builder().start().map_err(|e| e.to_string())?;
        let client_env = Environment::builder().start().map_err(|e| e.to_string())?;
        let server = Node::start(
            &server_env.environment(),
            NodeConfig::new("flood-server")
                .token(TOKEN)
                .handshakes_per_second(handshakes)
                .listen("127.0.0.1:0".parse().expect("an address")),
            registry(),
        )
        .map_err(|e| e.to_string())?;
        let client = Node::start(
            &client_env.environment(),
            NodeConfig::new("flood-client").token(TOKEN),
            registry(),
        )
        .map_err(|e| e.to_string())?;
        let (tx, pongs) = mpsc::channel();
        let mut coop = client_env.environment().new_coop();
        coop.add(Catch {
            inbox: client.export("pong"),
            tx,
        });
        client_env
            .environment()
            .register_coop(coop)
            .map_err(|e| e.to_string())?;
        let to_server = client
            .connect(server.local_addr().ok_or("no address")?)
            .map_err(|e| e.to_string())?;
        let to_client = server
            .wait_for_peer("flood-client", Duration::from_secs(10))
            .ok_or("the client did not come up")?;
        let mut coop = server_env.environment().new_coop();
        coop.add(Echo {
            inbox: server.export("ping"),
            back: to_client.mbox("pong"),
        });
        server_env
            .environment()
            .register_coop(coop)
            .map_err(|e| e.to_string())?;
        Ok(Pair {
            server_env,
            client_env,
            server,
            client,
            ping: to_server.mbox("ping"),
            pongs,
        })
    }

    fn addr(&self) -> SocketAddr {
        self.server.local_addr().expect("listening")
    }

    /// Round trips per second, one ball in flight, for `window`.
    fn round_trips(&self, window: Duration) -> Result<f64, String> {
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed() < window {
            self.ping.send(Ball(n));
            match self.pongs.recv_timeout(Duration::from_secs(30)) {
                Ok(got) if got == n => n += 1,
                Ok(got) => return Err(format!("pong {got} for ping {n}")),
                Err(_) => return Err(format!("no pong for ping {n} within 30 s")),
            }
        }
        Ok(n as f64 / start.elapsed().as_secs_f64())
    }

    fn stop(self) {
        self.client.shutdown();
        self.server.shutdown();
        self.client_env.stop_and_wait();
        self.server_env.stop_and_wait();
    }
}

/// A plain socket past its handshake with the node at `addr`.
fn handshake(addr: SocketAddr, name: &str) -> Result<TcpStream, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let mut hello = Vec::new();
    frame::encode_hello(&mut hello, PROTOCOL_VERSION, name, TOKEN.as_bytes());
    s.write_all(&hello).map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        match frame::decode(&got, 4096) {
            Ok(Some((frame::Frame::Welcome { .. }, _))) => return Ok(s),
            Ok(Some((other, _))) => return Err(format!("handshake answered with {other:?}")),
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return Err("closed during the handshake".into()),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A thread writing `chunk` to `s` until `stop`.
fn flood(
    mut s: TcpStream,
    prefix: Vec<u8>,
    chunk: Vec<u8>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        if s.write_all(&prefix).is_err() {
            return;
        }
        while !stop.load(Ordering::Relaxed) && s.write_all(&chunk).is_ok() {}
    })
}

/// One disturbed run's figures.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Round trips per second, undisturbed (same session, just before).
    pub undisturbed: f64,
    /// Round trips per second during the disturbance.
    pub disturbed: f64,
    /// What the node counted by the end of the disturbance.
    pub stats: NodeStats,
    /// Resident memory before the stall, at its peak with the stalled connections, and
    /// `settle` after they closed, in bytes (stall mode only).
    pub rss: Option<(u64, u64, u64)>,
}

/// Runs one mode: an undisturbed window, then the same window under the disturbance.
pub fn run(
    mode: Mode,
    window: Duration,
    stalled: usize,
    settle: Duration,
) -> Result<Outcome, String> {
    let handshakes = match mode {
        Mode::Stall => HANDSHAKES_PER_SECOND.max(stalled as u32 + 1),
        _ => HANDSHAKES_PER_SECOND,
    };
    let pair = Pair::start(handshakes)?;
    // Warm-up, then the undisturbed figure.
    pair.round_trips(Duration::from_millis(200))?;
    let undisturbed = pair.round_trips(window)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let mut held = Vec::new();
    let mut rss = None;
    let rss_before = crate::rss::current_bytes().unwrap_or(0);
    match mode {
        Mode::Heartbeat | Mode::Tiny => {
            let s = handshake(pair.addr(), "flooder")?;
            let mut prefix = Vec::new();
            let mut chunk = Vec::new();
            if mode == Mode::Tiny {
                frame::encode_declare(&mut prefix, false, 0, "bench.Ball");
                frame::encode_declare(&mut prefix, true, 0, "not-exported");
            }
            while chunk.len() < 64 * 1024 {
                match mode {
                    Mode::Heartbeat => frame::encode_heartbeat(&mut chunk),
                    _ => frame::encode_message(&mut chunk, 0, 0, &[1]),
                }
            }
            threads.push(flood(s, prefix, chunk, stop.clone()));
        }
        Mode::Connect => {
            let addr = pair.addr();
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                let mut hello = Vec::new();
                frame::encode_hello(&mut hello, PROTOCOL_VERSION, "attempt", b"wrong");
                for _ in 0..10_000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Ok(mut s) = TcpStream::connect(addr) {
                        let _ = s.write_all(&hello);
                    }
                }
            }));
        }
        Mode::Stall => {
            let max = cohort_remote::defaults::MAX_FRAME_BYTES;
            let mut bytes = max.to_le_bytes().to_vec();
            bytes.push(6);
            bytes.resize(4 + max as usize - 1, 0);
            crate::rss::reset_peak();
            let before = pair.server.stats().bytes_in;
            for i in 0..stalled {
                let mut s = handshake(pair.addr(), &format!("stall-{i}"))?;
                s.write_all(&bytes).map_err(|e| e.to_string())?;
                held.push(s);
            }
            let want = before + (stalled * bytes.len()) as u64;
            let deadline = Instant::now() + Duration::from_secs(60);
            while pair.server.stats().bytes_in < want {
                if Instant::now() > deadline {
                    return Err("the stalled frames did not all arrive within 60 s".into());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    let disturbed = pair.round_trips(window)?;
    let stats = pair.server.stats();
    stop.store(true, Ordering::Relaxed);
    if mode == Mode::Stall {
        let peak = crate::rss::peak_bytes().unwrap_or(0);
        drop(held);
        // What the stalled connections leave resident once they closed.
        std::thread::sleep(settle);
        let after = crate::rss::current_bytes().unwrap_or(0);
        rss = Some((rss_before, peak, after));
    }
    pair.stop();
    for t in threads {
        let _ = t.join();
    }
    Ok(Outcome {
        undisturbed,
        disturbed,
        stats,
        rss,
    })
}
