//! The mailbox a listing gives for a registration on another member: it dials that member
//! through cohort-remote when first used, not when the member is first seen, so a cluster
//! of N nodes holds connections only between nodes that talk.

use crate::stats::Counters;
use cohort::{AnyMessage, CustomMbox, DeliveryFailure, Environment, Mbox};
use cohort_remote::{Node, RemoteNode};
use std::sync::{Arc, Mutex, Weak};
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
    pub(crate) conn: Mutex<Conn>,
}

#[derive(Default)]
pub(crate) struct Conn {
    remote: Option<(RemoteNode, Mbox)>,
    last_dial: Option<Instant>,
}

impl RemoteTarget {
    pub(crate) fn mbox(self) -> Mbox {
        Mbox::custom(Arc::new(self))
    }

    /// The proxy of the member's export, dialling if there is no live connection.
    fn resolve(&self) -> Option<Mbox> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((remote, mbox)) = &conn.remote
            && remote.is_up()
        {
            return Some(mbox.clone());
        }
        let node = self.node.upgrade()?;
        if let Some(peer) = node.peer(&self.member)
            && peer.is_up()
        {
            let mbox = peer.mbox(&self.export);
            conn.remote = Some((peer, mbox.clone()));
            return Some(mbox);
        }
        if conn.last_dial.is_some_and(|t| t.elapsed() < REDIAL_AFTER) {
            return conn.remote.as_ref().map(|(_, m)| m.clone());
        }
        conn.last_dial = Some(Instant::now());
        match dial(&node, self.addr) {
            Ok(peer) if peer.name() == self.member => {
                let mbox = peer.mbox(&self.export);
                conn.remote = Some((peer, mbox.clone()));
                Some(mbox)
            }
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
                conn.remote.as_ref().map(|(_, m)| m.clone())
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
        match self.resolve() {
            Some(mbox) => {
                let _ = msg.forward(&mbox);
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
