//! A fault-injecting TCP proxy between two nodes (tokio): each connection a node dials to
//! it is forwarded to the upstream node, with a delay and jitter, a bandwidth cap or a stall
//! on its bytes, and can be reset, left half open, or refused for a while. These kernels
//! have no `sch_netem`, so the network faults are made here.

use super::faults::Rng;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// What the proxy does to the bytes of every connection, both ways.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// Forwarded as they come.
    Pass,
    /// Each chunk held for `base` plus up to `jitter` (a chunk never overtakes another).
    Delay {
        /// The least delay.
        base: Duration,
        /// The most added at random.
        jitter: Duration,
    },
    /// At most this many bytes per second each way.
    Bandwidth(u64),
    /// Read (up to a bounded backlog) but not forwarded until the mode changes.
    Stall,
    /// Neither read nor forwarded until the mode changes: the sender's socket fills.
    Hold,
}

/// Chunks read but not yet written, per direction: bounds what a stall holds, so the
/// sender's TCP window fills and it feels the back-pressure.
const BACKLOG_CHUNKS: usize = 64;
const CHUNK_BYTES: usize = 16 * 1024;

struct Shared {
    upstream: Mutex<SocketAddr>,
    mode: watch::Sender<Mode>,
    /// Bumped to reset every live connection.
    resets: watch::Sender<u64>,
    /// Bumped to leave every live connection half open.
    half_opens: watch::Sender<u64>,
    /// While set, a new connection is reset at once.
    refusing: AtomicBool,
    seed: AtomicU64,
}

/// A proxy listening on a loopback port; dial [`Proxy::addr`] instead of the upstream.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts a proxy to `upstream` on the runtime `rt`.
    pub fn start(rt: &tokio::runtime::Handle, upstream: SocketAddr) -> Result<Self, String> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("proxy: bind a loopback port: {e}"))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| format!("proxy: {e}"))?;
        let addr = std_listener.local_addr().map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            mode: watch::channel(Mode::Pass).0,
            resets: watch::channel(0).0,
            half_opens: watch::channel(0).0,
            refusing: AtomicBool::new(false),
            seed: AtomicU64::new(addr.port() as u64),
        });
        let sh = shared.clone();
        let task = rt.spawn(async move {
            let Ok(listener) = TcpListener::from_std(std_listener) else {
                return;
            };
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve(client, sh.clone()));
            }
        });
        Ok(Self { addr, shared, task })
    }

    /// Where to dial.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sets what happens to the bytes of every connection from now on.
    pub fn set_mode(&self, mode: Mode) {
        self.shared.mode.send_replace(mode);
    }

    /// Forwards new connections to `upstream` (a restarted node on another port).
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self
            .shared
            .upstream
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = upstream;
    }

    /// Resets every live connection (RST both ways), dropping the bytes in flight.
    pub fn reset(&self) {
        self.shared.resets.send_modify(|n| *n += 1);
    }

    /// Closes every live connection toward the upstream and keeps the dialler's side open
    /// without reading or writing it, until the next [`Proxy::reset`].
    pub fn half_open(&self) {
        self.shared.half_opens.send_modify(|n| *n += 1);
    }

    /// While `on`, a new connection is reset as soon as it is accepted.
    pub fn refuse(&self, on: bool) {
        self.shared.refusing.store(on, Ordering::Release);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.reset();
    }
}

/// One proxied connection, until either side closes, a reset, or a half-open followed by a
/// reset.
async fn serve(client: TcpStream, sh: Arc<Shared>) {
    let mut resets = sh.resets.subscribe();
    let mut half_opens = sh.half_opens.subscribe();
    // SO_LINGER 0: closing a socket sends RST, as a broken network path would surface.
    let _ = client.set_zero_linger();
    if sh.refusing.load(Ordering::Acquire) {
        return;
    }
    let upstream = *sh.upstream.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = server.set_zero_linger();
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    // A second descriptor of the dialler's socket keeps it open after a half-open drops the
    // halves the pipes own.
    let Ok(client_std) = client.into_std() else {
        return;
    };
    let keep = client_std.try_clone();
    let Ok(client) = TcpStream::from_std(client_std) else {
        return;
    };
    // `io::split` halves do not shut the socket down when dropped (a half-open must not
    // send the dialler a FIN); the pipes shut down their writing side at a clean end.
    let (cr, cw) = tokio::io::split(client);
    let (sr, sw) = server.into_split();
    let seed = sh.seed.fetch_add(0x9E37_79B9, Ordering::Relaxed);
    let pipes = async {
        tokio::join!(
            pipe(cr, sw, sh.mode.subscribe(), seed),
            pipe(sr, cw, sh.mode.subscribe(), seed ^ 0xABCD)
        )
    };
    tokio::select! {
        _ = pipes => {}
        _ = resets.changed() => {}
        _ = half_opens.changed() => {
            // The pipes are dropped (the upstream side is reset); the dialler's side stays
            // open and silent until the next reset.
            let _held = keep;
            let _ = resets.changed().await;
        }
    }
}

/// Copies `from` to `to` through a bounded backlog, applying the proxy's mode; at the end
/// of `from` (once the backlog is written) shuts `to` down for writing.
async fn pipe(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    mut mode: watch::Receiver<Mode>,
    seed: u64,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(BACKLOG_CHUNKS);
    let read_mode = mode.clone();
    let read = async move {
        let mut rng = Rng::new(seed);
        let mut last = Instant::now();
        loop {
            if read_mode
                .clone()
                .wait_for(|m| *m != Mode::Hold)
                .await
                .is_err()
            {
                break;
            }
            let mut buf = vec![0u8; CHUNK_BYTES];
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.truncate(n);
            let now = Instant::now();
            let current = *read_mode.borrow();
            let at = match current {
                Mode::Delay { base, jitter } => (now + base + jitter.mul_f64(rng.unit())).max(last),
                _ => now,
            };
            last = at;
            if tx.send((at, buf)).await.is_err() {
                break;
            }
        }
    };
    let write = async move {
        while let Some((at, buf)) = rx.recv().await {
            tokio::time::sleep_until(at).await;
            if mode
                .wait_for(|m| !matches!(m, Mode::Stall | Mode::Hold))
                .await
                .is_err()
            {
                break;
            }
            if to.write_all(&buf).await.is_err() {
                break;
            }
            let current = *mode.borrow();
            if let Mode::Bandwidth(rate) = current {
                let secs = buf.len() as f64 / rate.max(1) as f64;
                tokio::time::sleep(Duration::from_secs_f64(secs)).await;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(read, write);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    /// An upstream that echoes what it reads.
    fn echo() -> SocketAddr {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                std::thread::spawn(move || {
                    let mut b = [0u8; 1024];
                    while let Ok(n) = s.read(&mut b) {
                        if n == 0 || s.write_all(&b[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    #[test]
    fn bytes_pass_in_order_and_a_reset_breaks_the_connection() {
        crate::watchdog::within(30, || {
            let rt = runtime();
            let p = Proxy::start(rt.handle(), echo()).unwrap();
            p.set_mode(Mode::Delay {
                base: Duration::from_millis(1),
                jitter: Duration::from_millis(5),
            });
            let mut s = std::net::TcpStream::connect(p.addr()).unwrap();
            let sent: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
            for c in sent.chunks(7) {
                s.write_all(c).unwrap();
            }
            let mut got = vec![0u8; sent.len()];
            s.read_exact(&mut got).unwrap();
            assert_eq!(got, sent);
            p.reset();
            let mut b = [0u8; 1];
            // A reset connection reads an error or end of stream, never more bytes.
            assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
        });
    }

    #[test]
    fn a_refused_connection_is_reset_and_a_healed_one_passes() {
        crate::watchdog::within(30, || {
            let rt = runtime();
            let p = Proxy::start(rt.handle(), echo()).unwrap();
            p.refuse(true);
            let mut s = std::net::TcpStream::connect(p.addr()).unwrap();
            let mut b = [0u8; 1];
            let _ = s.write_all(b"x");
            assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
            p.refuse(false);
            let mut s = std::net::TcpStream::connect(p.addr()).unwrap();
            s.write_all(b"y").unwrap();
            s.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"y");
        });
    }
}
