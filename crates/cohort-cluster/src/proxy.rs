//! The mailbox a listing gives for a registration on another member: it dials that member
//! through cohort-remote when first used, not when the member is first seen, so a cluster
//! of N nodes holds connections only between nodes that talk.

use crate::stats::Counters;
use cohort::{AnyMessage, CustomMbox, DeliveryFailure, Environment, Mbox};
use cohort_remote::{Node, RemoteNode};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// A failed or lost connection is dialled again at most this often from the send path.
const REDIAL_AFTER: Duration = Duration::from_millis(500);

pub(crate) struct RemoteTarget {
    pub(crate) node: Weak<Node>,
    pub(crate) env: Environment,
    pub(crate) counters: Arc<Counters>,
    pub(crate) member: String,
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) export: String,
    pub(crate) label: String,
    /// The member's peer and the proxy of its export, from the first connection on: the
    /// node keeps a peer's entry while a handle to it is held, and a later connection to
    /// that name (a reconnection, a redial from here) lands on the same entry, so a send
    /// through an up connection takes no lock.
    pub(crate) resolved: OnceLock<(RemoteNode, Mbox)>,
    /// When the send path last dialled the member (serialises the slow path too).
    pub(crate) last_dial: Mutex<Option<Instant>>,
}

impl RemoteTarget {
    pub(crate) fn mbox(self) -> Mbox {
        Mbox::custom(self)
    }

    /// Remembers the member's peer; returns the proxy of its export.
    fn keep(&self, peer: RemoteNode) -> &Mbox {
        let (_, mbox) = self.resolved.get_or_init(|| {
            let mbox = peer.mbox(&self.export);
            (peer, mbox)
        });
        mbox
    }

    /// The proxy of the member's export when its connection is not up (or was never made):
    /// a peer connected since, else a dial at most every [`REDIAL_AFTER`]; while that waits,
    /// the known proxy (which counts the message as a dead letter while its peer is down).
    #[cold]
    fn resolve(&self) -> Option<&Mbox> {
        let mut last_dial = self.last_dial.lock().unwrap_or_else(|e| e.into_inner());
        let known = self.resolved.get();
        if let Some((remote, mbox)) = known
            && remote.is_up()
        {
            return Some(mbox);
        }
        let node = self.node.upgrade()?;
        if known.is_none()
            && let Some(peer) = node.peer(&self.member)
            && peer.is_up()
        {
            return Some(self.keep(peer));
        }
        if last_dial.is_some_and(|t| t.elapsed() < REDIAL_AFTER) {
            return known.map(|(_, m)| m);
        }
        *last_dial = Some(Instant::now());
        match dial(&node, self.addr) {
            Ok(peer) if peer.name() == self.member => Some(self.keep(peer)),
            Ok(peer) => {
                Counters::add(&self.counters.address_not_owned, 1);
                if let Some(skipped) = self
                    .counters
                    .may_log("member advertises an address it does not own")
                {
                    tracing::warn!(member = %self.member, addr = %self.addr, answered = %peer.name(),
                        skipped, "a member advertises a remoting address another node answers: not sent to");
                }
                None
            }
            Err(e) => {
                Counters::add(&self.counters.dials_failed, 1);
                if let Some(skipped) = self.counters.may_log("dial to a member failed") {
                    tracing::warn!(member = %self.member, addr = %self.addr, error = %e, skipped,
                        "dial to a member failed");
                }
                known.map(|(_, m)| m)
            }
        }
    }
}

/// `Node::connect` blocks on the node's runtime, which must not happen on a runtime
/// thread: there it runs on a thread of its own.
fn dial(node: &Node, addr: std::net::SocketAddr) -> Result<RemoteNode, cohort_remote::RemoteError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return node.connect(addr);
    }
    std::thread::scope(|s| s.spawn(|| node.connect(addr)).join())
        .unwrap_or(Err(cohort_remote::RemoteError::ShutDown))
}

impl CustomMbox for RemoteTarget {
    fn deliver(&self, msg: AnyMessage) {
        if let Some((remote, mbox)) = self.resolved.get()
            && remote.is_up()
        {
            let _ = msg.forward(mbox);
            return;
        }
        match self.resolve() {
            Some(mbox) => {
                let _ = msg.forward(mbox);
            }
            None => self
                .env
                .report_dead_letter(msg.type_name(), DeliveryFailure::NodeDown),
        }
    }

    fn name(&self) -> Option<&str> {
        Some(&self.label)
    }
}
