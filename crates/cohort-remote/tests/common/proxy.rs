//! A TCP proxy between two nodes that a test can stall and cut: the connection breaks with
//! bytes in flight, as a network fault would, while both nodes stay up.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};

#[derive(Default)]
struct State {
    /// Both sockets of every live proxied connection.
    live: Vec<(TcpStream, TcpStream)>,
    /// While set, bytes from the dialler are read but held, not forwarded.
    stalled: bool,
    /// Connections accepted so far.
    accepted: u64,
}

/// The proxy: dial [`Proxy::addr`] instead of the upstream node.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<(Mutex<State>, Condvar)>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards each connection to `upstream`.
    pub fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let addr = listener.local_addr().unwrap();
        let state: Arc<(Mutex<State>, Condvar)> = Arc::default();
        let s = state.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                {
                    let mut st = s.0.lock().unwrap();
                    st.accepted += 1;
                    st.live
                        .push((client.try_clone().unwrap(), server.try_clone().unwrap()));
                }
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let held = s.clone();
                std::thread::spawn(move || pump(client, server, Some(held)));
                std::thread::spawn(move || pump(s2, c2, None));
            }
        });
        Self { addr, state }
    }

    /// Where to dial.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.state.0.lock().unwrap().accepted
    }

    /// Holds what the dialler writes from now on (the upstream reads nothing more).
    pub fn stall(&self) {
        self.state.0.lock().unwrap().stalled = true;
    }

    /// Breaks every live connection (both sockets reset), dropping what was held, and lets
    /// new connections through.
    pub fn cut(&self) {
        let mut st = self.state.0.lock().unwrap();
        for (a, b) in st.live.drain(..) {
            let _ = a.shutdown(Shutdown::Both);
            let _ = b.shutdown(Shutdown::Both);
        }
        st.stalled = false;
        self.state.1.notify_all();
    }
}

/// Copies `from` to `to` until either closes; with `held`, waits while the proxy is stalled
/// before forwarding each chunk.
fn pump(mut from: TcpStream, mut to: TcpStream, held: Option<Arc<(Mutex<State>, Condvar)>>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(h) = &held {
            let mut st = h.0.lock().unwrap();
            if st.stalled {
                // Held until the cut: then this chunk is dropped with the connection.
                while st.stalled {
                    st = h.1.wait(st).unwrap();
                }
                break;
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
