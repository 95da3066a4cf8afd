//! Gossip's UDP transport: chitchat's own UDP socket, wrapped so that every datagram is
//! measured and what is refused (oversized, of another cluster or token) is counted and
//! logged. Datagrams that do not decode are dropped and logged by chitchat's socket itself
//! (its envelope codec is not public, so they are not counted here).

use crate::stats::Counters;
use anyhow::Context as _;
use async_trait::async_trait;
use chitchat::transport::{RecvOutcome, SendOutcome, Socket, Transport, UdpSocket};
use chitchat::{ChitchatEnvelope, ChitchatMessage};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Hands chitchat the socket opened at join (so the port is known before chitchat starts).
pub(crate) struct CountingUdp {
    pub(crate) socket: Mutex<Option<UdpSocket>>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) max_datagram: usize,
    pub(crate) cluster_id: String,
}

#[async_trait]
impl Transport for CountingUdp {
    async fn open(&self, _listen_addr: SocketAddr) -> anyhow::Result<Box<dyn Socket>> {
        let inner = self
            .socket
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .context("the gossip socket was already opened")?;
        Ok(Box::new(CountingSocket {
            inner,
            counters: self.counters.clone(),
            max_datagram: self.max_datagram,
            cluster_id: self.cluster_id.clone(),
        }))
    }
}

struct CountingSocket {
    inner: UdpSocket,
    counters: Arc<Counters>,
    max_datagram: usize,
    cluster_id: String,
}

impl CountingSocket {
    /// Whether a decoded datagram may reach chitchat; counts and logs what may not, and
    /// what chitchat itself will refuse (another cluster's gossip).
    fn admit(&self, r: &RecvOutcome) -> bool {
        let c = &self.counters;
        let from = r.from_addr;
        if r.num_bytes_received > self.max_datagram {
            Counters::add(&c.oversized, 1);
            tracing::warn!(%from, len = r.num_bytes_received, cap = self.max_datagram,
                "gossip datagram over the cap dropped");
            return false;
        }
        Counters::add(&c.datagrams_in, 1);
        Counters::add(&c.bytes_in, r.num_bytes_received as u64);
        match &r.envelope.message {
            ChitchatMessage::Syn { cluster_id, .. } if *cluster_id != self.cluster_id => {
                Counters::add(&c.foreign_cluster, 1);
                tracing::warn!(%from, theirs = %cluster_id, "gossip from another cluster or token refused");
            }
            ChitchatMessage::BadCluster => {
                Counters::add(&c.foreign_cluster, 1);
                tracing::warn!(%from, "a node of another cluster or token refused our gossip");
            }
            _ => {}
        }
        true
    }
}

#[async_trait]
impl Socket for CountingSocket {
    fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        self.inner.local_addr()
    }

    async fn send(
        &mut self,
        to: SocketAddr,
        envelope: ChitchatEnvelope,
    ) -> anyhow::Result<SendOutcome> {
        let outcome = self.inner.send(to, envelope).await?;
        Counters::add(&self.counters.datagrams_out, 1);
        Counters::add(&self.counters.bytes_out, outcome.num_bytes_sent as u64);
        Ok(outcome)
    }

    async fn recv(&mut self) -> anyhow::Result<RecvOutcome> {
        loop {
            let r = self.inner.recv().await?;
            if self.admit(&r) {
                return Ok(r);
            }
        }
    }
}
