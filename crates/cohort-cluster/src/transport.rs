//! Gossip's UDP transport. Chitchat's decoder is not public and its own socket drops what
//! it cannot decode without telling, so every datagram passes through this module first:
//!
//! - the public socket (the gossip address) receives raw datagrams; [`wire::check`] refuses
//!   oversized ones and ones without a gossip header, counted and logged;
//! - what passes is handed to chitchat's own socket (the decoder) over loopback by a relay
//!   socket, followed by a sentinel (a "bad cluster" datagram, which always decodes): if
//!   the sentinel comes out first, chitchat refused the body, and that is counted too;
//! - what chitchat sends goes to the relay, which sends it on from the public socket, so
//!   peers see one address and their answers come back through the same gate.
//!
//! Loopback keeps the order of datagrams between two sockets and at most one datagram and
//! its sentinel are in flight, so each decoded envelope is matched to its sender.

use crate::stats::Counters;
use crate::wire::{self, BAD_CLUSTER, Kind, Refusal};
use anyhow::Context as _;
use async_trait::async_trait;
use chitchat::transport::{RecvOutcome, SendOutcome, Socket, Transport, UdpSocket};
use chitchat::{ChitchatEnvelope, ChitchatMessage};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

/// Hands chitchat the gossip socket opened at join (so the port is known before chitchat
/// starts).
pub(crate) struct GatedUdp {
    pub(crate) socket: Mutex<Option<GatedSocket>>,
}

#[async_trait]
impl Transport for GatedUdp {
    async fn open(&self, _listen_addr: SocketAddr) -> anyhow::Result<Box<dyn Socket>> {
        let socket = self
            .socket
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .context("the gossip socket was already opened")?;
        Ok(Box::new(socket))
    }
}

/// Where the receive side is between two calls (a call can be cancelled at any await).
#[derive(Clone, Copy)]
enum Pending {
    /// Nothing handed to the decoder.
    Idle,
    /// A datagram from `from` of `len` bytes and its sentinel are with the decoder.
    Forwarded { from: SocketAddr, len: usize },
    /// The datagram came out; its sentinel is still to be taken.
    Sentinel,
}

pub(crate) struct GatedSocket {
    public: tokio::net::UdpSocket,
    /// Chitchat's socket on loopback: decodes what the relay hands it, encodes what it sends.
    decoder: UdpSocket,
    decoder_addr: SocketAddr,
    relay: tokio::net::UdpSocket,
    /// The relay's socket again, for sends that must not wait (see [`GatedSocket::forward`]).
    relay_now: std::net::UdpSocket,
    relay_addr: SocketAddr,
    buf: Vec<u8>,
    out: Vec<u8>,
    pending: Pending,
    counters: Arc<Counters>,
    max_datagram: usize,
    cluster_id: String,
}

impl GatedSocket {
    /// Binds the public socket to `listen` and the decoder and relay to loopback.
    pub(crate) async fn open(
        listen: SocketAddr,
        counters: Arc<Counters>,
        max_datagram: usize,
        cluster_id: String,
    ) -> anyhow::Result<Self> {
        let public = bind_public(listen, &counters)?;
        let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let decoder = UdpSocket::open(loopback).await?;
        let decoder_addr = decoder.local_addr()?;
        let relay_now = std::net::UdpSocket::bind(loopback)?;
        relay_now.set_nonblocking(true)?;
        let relay = tokio::net::UdpSocket::from_std(relay_now.try_clone()?)?;
        let relay_addr = relay.local_addr()?;
        Ok(Self {
            public,
            decoder,
            decoder_addr,
            relay,
            relay_now,
            relay_addr,
            // One byte more than the cap, so that an oversized datagram shows as such.
            buf: vec![0; max_datagram + 1],
            out: vec![0; crate::defaults::MAX_DATAGRAM_BYTES],
            pending: Pending::Idle,
            counters,
            max_datagram,
            cluster_id,
        })
    }

    pub(crate) fn public_addr(&self) -> io::Result<SocketAddr> {
        self.public.local_addr()
    }

    /// Counts a refused datagram and logs it (at most once a second per reason).
    fn refuse(&self, from: SocketAddr, len: usize, refusal: Refusal) {
        let c = &self.counters;
        let counter = match refusal {
            Refusal::Oversized => &c.oversized,
            Refusal::BadHeader | Refusal::BadBody => &c.malformed,
        };
        let reason = refusal.reason();
        Counters::add(counter, 1);
        if let Some(skipped) = c.may_log(reason) {
            tracing::warn!(%from, len, cap = self.max_datagram, skipped, "{reason}: dropped");
        }
    }

    fn foreign(&self, from: SocketAddr, theirs: Option<&str>) {
        Counters::add(&self.counters.foreign_cluster, 1);
        let reason = "gossip of another cluster or token";
        if let Some(skipped) = self.counters.may_log(reason) {
            match theirs {
                Some(theirs) => tracing::warn!(%from, %theirs, skipped, "{reason} refused"),
                None => tracing::warn!(%from, skipped, "a node refused our gossip: {reason}"),
            }
        }
    }

    /// Hands a datagram and its sentinel to the decoder; false if loopback refused the
    /// datagram. No await between the sends and the caller's record of them, so a
    /// cancelled `recv` cannot leave a datagram with the decoder unaccounted for. A lost
    /// sentinel only costs a [`RELAY_WAIT`].
    fn forward(&self, len: usize) -> bool {
        let sent = |bytes: &[u8]| matches!(self.relay_now.send_to(bytes, self.decoder_addr), Ok(n) if n == bytes.len());
        if !sent(&self.buf[..len]) {
            return false;
        }
        let _ = sent(&BAD_CLUSTER);
        true
    }

    /// The next envelope the decoder yields from the relay (others cannot reach it by
    /// design, but anything on this host could send to its port). `None` if nothing came
    /// within [`RELAY_WAIT`]: the handed datagrams were lost, the gate starts afresh.
    async fn decoded(&mut self) -> anyhow::Result<Option<RecvOutcome>> {
        let relay = self.relay_addr;
        let decoder = &mut self.decoder;
        let from_relay = async {
            loop {
                let r = decoder.recv().await?;
                if r.from_addr == relay {
                    return anyhow::Ok(r);
                }
            }
        };
        match tokio::time::timeout(RELAY_WAIT, from_relay).await {
            Ok(r) => r.map(Some),
            Err(_) => {
                if let Some(skipped) = self.counters.may_log("gossip relay lost a datagram") {
                    tracing::warn!(skipped, "gossip relay lost a datagram");
                }
                Ok(None)
            }
        }
    }
}

#[async_trait]
impl Socket for GatedSocket {
    fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.public.local_addr()?)
    }

    async fn send(
        &mut self,
        to: SocketAddr,
        envelope: ChitchatEnvelope,
    ) -> anyhow::Result<SendOutcome> {
        // Chitchat encodes into the relay; the relay's copy leaves from the public socket.
        self.decoder.send(self.relay_addr, envelope).await?;
        let len = loop {
            let (len, from) = self.relay.recv_from(&mut self.out).await?;
            if from == self.decoder_addr {
                break len;
            }
        };
        let sent = self.public.send_to(&self.out[..len], to).await?;
        Counters::add(&self.counters.datagrams_out, 1);
        Counters::add(&self.counters.bytes_out, sent as u64);
        Ok(SendOutcome {
            num_bytes_sent: sent,
        })
    }

    async fn recv(&mut self) -> anyhow::Result<RecvOutcome> {
        loop {
            match self.pending {
                Pending::Sentinel => {
                    let _ = self.decoded().await?;
                    self.pending = Pending::Idle;
                }
                Pending::Forwarded { from, len } => {
                    let Some(mut r) = self.decoded().await? else {
                        self.pending = Pending::Idle;
                        continue;
                    };
                    if r.envelope.message == ChitchatMessage::BadCluster {
                        // The sentinel came first: chitchat refused the datagram.
                        self.pending = Pending::Idle;
                        self.refuse(from, len, Refusal::BadBody);
                        continue;
                    }
                    self.pending = Pending::Sentinel;
                    r.from_addr = from;
                    r.num_bytes_received = len;
                    Counters::add(&self.counters.datagrams_in, 1);
                    Counters::add(&self.counters.bytes_in, len as u64);
                    if let ChitchatMessage::Syn { cluster_id, .. } = &r.envelope.message
                        && *cluster_id != self.cluster_id
                    {
                        // Chitchat answers it with a refusal; counted here.
                        self.foreign(from, Some(cluster_id.as_str()));
                    }
                    return Ok(r);
                }
                Pending::Idle => {
                    let (len, from) = match self.public.recv_from(&mut self.buf).await {
                        Ok(r) => r,
                        Err(e) if transient(&e) => continue,
                        Err(e) => return Err(e).context("gossip socket broken"),
                    };
                    match wire::check(&self.buf[..len], self.max_datagram) {
                        Err(refusal) => self.refuse(from, len, refusal),
                        Ok(Kind::BadCluster) => {
                            // Chitchat would only log it: counted and logged here instead.
                            Counters::add(&self.counters.datagrams_in, 1);
                            self.foreign(from, None);
                        }
                        Ok(Kind::Gossip) if self.forward(len) => {
                            self.pending = Pending::Forwarded { from, len };
                        }
                        Ok(Kind::Gossip) => {
                            // Loopback full: dropped as a lost datagram would be.
                            if let Some(skipped) = self.counters.may_log("gossip relay full") {
                                tracing::warn!(%from, skipped, "gossip relay full: datagram dropped");
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The gossip socket's receive buffer asked for (the system caps it at its maximum).
const RECV_BUFFER: usize = 4 << 20;

/// Binds the gossip socket with a large receive buffer: gossip arrives in bursts (a seed
/// hears every joining member at once, datagrams up to 64 KiB), the system's default holds
/// only a few such datagrams, and each one dropped is a round lost.
fn bind_public(listen: SocketAddr, counters: &Counters) -> io::Result<tokio::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket as RawSocket, Type};
    let socket = RawSocket::new(
        Domain::for_address(listen),
        Type::DGRAM,
        Some(Protocol::UDP),
    )?;
    // Best effort: a smaller buffer only means more loss under bursts.
    let _ = socket.set_recv_buffer_size(RECV_BUFFER);
    let got = socket.recv_buffer_size().unwrap_or(0);
    Counters::add(&counters.receive_buffer, got as u64);
    if got < RECV_BUFFER {
        // Once per process: every member of a process would say the same.
        static CAPPED: std::sync::Once = std::sync::Once::new();
        CAPPED.call_once(|| {
            tracing::warn!(
                asked = RECV_BUFFER,
                got,
                "gossip receive buffer capped by the system (net.core.rmem_max on Linux): \
                 large clusters lose gossip in bursts"
            );
        });
    }
    socket.set_nonblocking(true)?;
    socket.bind(&listen.into())?;
    tokio::net::UdpSocket::from_std(socket.into())
}

/// Loopback delivers in microseconds; a datagram not out of the decoder after this was
/// lost (a send refused for want of buffer space), and waiting longer would stall gossip.
const RELAY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Errors after which the socket still works (an ICMP "unreachable" reported late).
fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::OutOfMemory
    )
}
