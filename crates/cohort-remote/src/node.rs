//! A node: this process's endpoint. It listens (optionally), dials peers, exports named
//! mailboxes, and owns the I/O runtime (tokio) that runs every connection's reader and
//! writer.

use crate::ask::{AskTable, REPLIES, ReplyInbox};
use crate::config::NodeConfig;
use crate::connection;
use crate::error::{HandshakeError, RemoteError};
use crate::guard::{Access, Admission, Sources};
use crate::mbox_ref::MboxRef;
use crate::peer::{CLOSED, PeerHandle, PeerShared, RemoteNode};
use crate::reader::Target;
use crate::registry::Registry;
use crate::stats::{Counters, NodeStats};
use crate::tls::Stream;
use cohort::{DeliveryFailure, Environment, Mbox};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

pub(crate) struct NodeShared {
    pub(crate) config: NodeConfig,
    pub(crate) registry: Registry,
    pub(crate) env: Environment,
    pub(crate) counters: Counters,
    pub(crate) events: Mbox,
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) shutting_down: AtomicBool,
    /// Requests written to peers, waiting for their outcome.
    pub(crate) asks: AskTable,
    /// Where peers send the outcome of this node's requests: its reply mailbox.
    pub(crate) reply_to: MboxRef,
    exports: RwLock<HashMap<String, Export>>,
    /// Bumped by every change of `exports`: a reader looks a name that was not exported up
    /// again only after one.
    exports_generation: AtomicU64,
    peers: Mutex<HashMap<String, Arc<PeerShared>>>,
    peers_changed: Condvar,
    /// Accepted connections open now (handshaking or up).
    accepted: Arc<AtomicUsize>,
    /// Handshake rates and warning budgets per source address.
    sources: Sources,
    /// A long receive buffer was let go while the allocator was trimmed a moment ago.
    pub(crate) trim_wanted: AtomicBool,
}

/// An exported mailbox and who may send to it.
struct Export {
    mbox: Mbox,
    access: Access,
}

impl NodeShared {
    /// Counts a message to a peer that was not sent.
    #[cold]
    pub(crate) fn undeliverable(&self, message_type: &'static str, reason: DeliveryFailure) {
        Counters::add(&self.counters.undeliverable, 1);
        self.env.report_dead_letter(message_type, reason);
    }

    /// Counts `msg` as not sent and drops it with `reason` (a request in it learns why).
    #[cold]
    pub(crate) fn refuse(&self, msg: cohort::AnyMessage, reason: DeliveryFailure) {
        self.undeliverable(msg.type_name(), reason);
        msg.discard(reason);
    }

    pub(crate) fn exported(&self, name: &str) -> Option<Mbox> {
        self.exports
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .map(|e| e.mbox.clone())
    }

    /// The current generation of the exports.
    #[inline]
    pub(crate) fn exports_generation(&self) -> u64 {
        self.exports_generation.load(Ordering::Acquire)
    }

    /// Where messages from the peer node `peer` to the mailbox name `name` go, and the
    /// exports' generation that answer holds for.
    pub(crate) fn resolve(&self, name: &str, peer: &str) -> (Target, u64) {
        // Read before the lookup: an export made after it bumps the generation again.
        let generation = self.exports_generation();
        let target = match self
            .exports
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            Some(e) if e.access.admits(peer) => Target::Mbox(e.mbox.clone()),
            Some(_) => Target::Denied,
            None => Target::Unexported,
        };
        (target, generation)
    }

    fn set_export(&self, name: &str, export: Option<Export>) {
        let mut exports = self.exports.write().unwrap_or_else(|e| e.into_inner());
        match export {
            Some(e) => exports.insert(name.to_string(), e),
            None => exports.remove(name),
        };
        self.exports_generation.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn peer_changed(&self) {
        let _peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        self.peers_changed.notify_all();
    }

    /// The peer named `name`, if this node keeps its entry.
    pub(crate) fn known_peer(&self, name: &str) -> Option<PeerHandle> {
        self.peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .map(|p| PeerHandle::new(p.clone()))
    }

    /// The entry of the peer named `name`, made if there is none; the handle keeps it while
    /// a connection is installed on it.
    fn peer_entry(self: &Arc<Self>, name: &str, dial_addr: Option<String>) -> PeerHandle {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let peer = peers.entry(name.to_string()).or_insert_with(|| {
            Arc::new(PeerShared::new(name.to_string(), self.clone(), dial_addr))
        });
        PeerHandle::new(peer.clone())
    }

    /// Removes the entry of a peer that dialled this node if it is down and no handle to it
    /// is left (no [`RemoteNode`], no proxy): nothing could send to it, and it would come
    /// back as a new entry. A peer this node dialled stays, to be dialled again.
    pub(crate) fn forget_if_unused(&self, peer: &Arc<PeerShared>) {
        if peer.dial_addr.is_some() {
            return;
        }
        // Under the lock every handle is made under: none can appear while this decides.
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        if !peer.unheld()
            || peer.is_up()
            || peer
                .conn
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some()
        {
            return;
        }
        if peers.get(&peer.name).is_some_and(|p| Arc::ptr_eq(p, peer)) {
            peers.remove(&peer.name);
        }
    }
}

/// Connects to `addr` and shakes hands; returns the stream, the peer's name and any bytes
/// read past the handshake.
pub(crate) async fn dial(
    node: &NodeShared,
    addr: &str,
) -> Result<(Stream, String, Vec<u8>), RemoteError> {
    let timeout = node.config.handshake_timeout;
    let tcp = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(r) => r.map_err(|source| RemoteError::Connect {
            addr: addr.to_string(),
            source,
        })?,
        Err(_) => {
            return Err(RemoteError::Connect {
                addr: addr.to_string(),
                source: std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {timeout:?} (the handshake timeout)"),
                ),
            });
        }
    };
    let _ = tcp.set_nodelay(true);
    let mut stream = match wrap(node, tcp, false).await {
        Ok(s) => s,
        Err(source) => {
            Counters::add(&node.counters.handshakes_refused, 1);
            return Err(RemoteError::Handshake {
                addr: addr.to_string(),
                source,
            });
        }
    };
    let mut buf = Vec::new();
    match crate::handshake::dial(node, &mut stream, &mut buf).await {
        Ok(name) => Ok((stream, name, buf)),
        Err(source) => {
            Counters::add(&node.counters.handshakes_refused, 1);
            Err(RemoteError::Handshake {
                addr: addr.to_string(),
                source,
            })
        }
    }
}

/// `tcp` as this node's connections are: plain, or wrapped in TLS (accepted or dialled)
/// within the handshake timeout.
async fn wrap(node: &NodeShared, tcp: TcpStream, accepted: bool) -> Result<Stream, HandshakeError> {
    let Some(tls) = &node.config.tls else {
        return Ok(Stream::Plain(tcp));
    };
    let timeout = node.config.handshake_timeout;
    let wrapped = if accepted {
        tokio::time::timeout(timeout, tls.accept(tcp)).await
    } else {
        tokio::time::timeout(timeout, tls.connect(tcp)).await
    };
    match wrapped {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(HandshakeError::Tls(e.to_string())),
        Err(_) => Err(HandshakeError::Timeout(timeout)),
    }
}

/// Whether the listener may take the connection from `from`: under the node's cap on open
/// connections and the source's handshake rate. A refusal is counted and (within the
/// source's warning budget) logged.
fn admit(node: &NodeShared, from: SocketAddr) -> Option<Admission> {
    let config = &node.config;
    let now = Instant::now();
    let refusal = match Admission::take(&node.accepted, config.max_connections) {
        None => {
            Counters::add(&node.counters.connections_refused, 1);
            "connection refused: NodeConfig::max_connections are open"
        }
        Some(admission) => {
            if node
                .sources
                .admit_handshake(from.ip(), config.handshakes_per_second, now)
            {
                return Some(admission);
            }
            Counters::add(&node.counters.handshakes_rate_limited, 1);
            "connection refused: its address is over NodeConfig::handshakes_per_second"
        }
    };
    if let Some(suppressed) = node.sources.admit_warning(from.ip(), &node.counters, now) {
        tracing::warn!(node = %config.name, %from, suppressed, "{refusal}");
    }
    None
}

async fn accept_loop(node: Arc<NodeShared>, listener: TcpListener) {
    loop {
        let (tcp, from) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(node = %node.config.name, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if node.shutting_down.load(Ordering::Acquire) {
            return;
        }
        // Refused before anything is spent on it: dropping the socket closes it.
        let Some(admission) = admit(&node, from) else {
            continue;
        };
        let node = node.clone();
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            let mut stream = match wrap(&node, tcp, true).await {
                Ok(s) => s,
                Err(e) => {
                    Counters::add(&node.counters.handshakes_refused, 1);
                    warn_source(&node, from, &e);
                    return;
                }
            };
            let mut buf = Vec::new();
            match crate::handshake::accept(&node, &mut stream, &mut buf, from).await {
                Ok(name) => {
                    let peer = node.peer_entry(&name, None);
                    if peer.status.load(Ordering::Acquire) == CLOSED {
                        return;
                    }
                    connection::install(peer.arc(), stream, buf, Some(admission));
                }
                Err(e) => {
                    tracing::debug!(node = %node.config.name, %from, reason = %e, "connection dropped");
                }
            }
        });
    }
}

/// Logs a warning about a handshake from `from` within its source's warning budget.
pub(crate) fn warn_source(node: &NodeShared, from: SocketAddr, reason: &dyn std::fmt::Display) {
    if let Some(suppressed) = node
        .sources
        .admit_warning(from.ip(), &node.counters, Instant::now())
    {
        tracing::warn!(node = %node.config.name, %from, suppressed, %reason, "handshake refused");
    }
}

/// This process's remoting endpoint, bound to one cohort [`Environment`].
///
/// ```
/// use cohort::Environment;
/// use cohort_remote::{Node, NodeConfig, Registry};
/// use serde::{Deserialize, Serialize};
/// use std::time::Duration;
///
/// #[derive(Serialize, Deserialize)]
/// struct Hello(String);
///
/// let env = Environment::builder().start().unwrap();
/// let mut registry = Registry::new();
/// registry.register::<Hello>("example.Hello").unwrap();
/// let mut registry_b = Registry::new();
/// registry_b.register::<Hello>("example.Hello").unwrap();
///
/// // Two nodes (in one process here; usually two processes or machines).
/// let a = Node::start(&env.environment(), NodeConfig::new("a").token("t")
///     .listen("127.0.0.1:0".parse().unwrap()), registry).unwrap();
/// let b = Node::start(&env.environment(), NodeConfig::new("b").token("t"), registry_b).unwrap();
/// let inbox = a.export("greetings"); // a named mailbox agents of `a` subscribe to
///
/// let to_a = b.connect(a.local_addr().unwrap()).unwrap();
/// to_a.mbox("greetings").send(Hello("hi".into()));
/// # let _ = inbox;
/// b.shutdown();
/// a.shutdown();
/// env.stop_and_wait();
/// ```
pub struct Node {
    shared: Arc<NodeShared>,
    runtime: Option<tokio::runtime::Runtime>,
    local_addr: Option<SocketAddr>,
}

impl Node {
    /// Starts a node in `env` with `config` (checked first) and the message types of
    /// `registry`; listens if the config says so.
    pub fn start(
        env: &Environment,
        config: NodeConfig,
        registry: Registry,
    ) -> Result<Node, RemoteError> {
        config.validate()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.io_threads)
            .thread_name(format!("cohort-remote-{}", config.name))
            .enable_all()
            .build()
            .map_err(RemoteError::Runtime)?;
        let listener = match config.listen {
            Some(addr) => Some(
                runtime
                    .block_on(TcpListener::bind(addr))
                    .map_err(|source| RemoteError::Listen { addr, source })?,
            ),
            None => None,
        };
        let local_addr = listener.as_ref().and_then(|l| l.local_addr().ok());
        let events = env.named_mbox(&events_mbox_name(&config.name));
        let shared = Arc::new_cyclic(|node| {
            let replies = Mbox::custom(ReplyInbox { node: node.clone() });
            let reply_export = Export {
                mbox: replies.clone(),
                access: Access::All,
            };
            NodeShared {
                events,
                handle: runtime.handle().clone(),
                env: env.clone(),
                registry,
                counters: Counters::default(),
                shutting_down: AtomicBool::new(false),
                asks: AskTable::default(),
                reply_to: MboxRef::new(&config.name, REPLIES, replies),
                exports: RwLock::new(HashMap::from([(REPLIES.to_string(), reply_export)])),
                exports_generation: AtomicU64::new(0),
                peers: Mutex::new(HashMap::new()),
                peers_changed: Condvar::new(),
                accepted: Arc::new(AtomicUsize::new(0)),
                sources: Sources::default(),
                trim_wanted: AtomicBool::new(false),
                config,
            }
        });
        if let Some(listener) = listener {
            runtime.spawn(accept_loop(shared.clone(), listener));
        }
        runtime.spawn(crate::guard::sweep(shared.clone()));
        Ok(Node {
            shared,
            runtime: Some(runtime),
            local_addr,
        })
    }

    /// What the node's tasks share, for the fuzzing entry points.
    pub(crate) fn shared(&self) -> &Arc<NodeShared> {
        &self.shared
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// The address it listens on (with the port picked, if the config said port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// Lets peers send to the environment's named mailbox `name`, and returns it (agents of
    /// this node subscribe to it as to any named mailbox). Every peer may send to it:
    /// [`Node::export_with`] says which.
    pub fn export(&self, name: &str) -> Mbox {
        self.export_with(name, Access::All)
    }

    /// As [`Node::export`], for the peer nodes `access` admits only: a message from another
    /// node is refused here, counted ([`NodeStats::access_refused`]), logged (within the
    /// connection's warning budget), and reported back to its sender, which counts it as a
    /// dead letter ([`DeliveryFailure::AccessDenied`]). Connections that already sent to
    /// `name` keep what they resolved.
    ///
    /// ```
    /// use cohort::Environment;
    /// use cohort_remote::{Access, Node, NodeConfig, Registry};
    ///
    /// let env = Environment::builder().start().unwrap();
    /// let node = Node::start(&env.environment(), NodeConfig::new("billing"), Registry::new())
    ///     .unwrap();
    /// // Only the nodes named "shop-1" and "shop-2" may send invoices.
    /// let invoices = node.export_with("invoices", Access::nodes(["shop-1", "shop-2"]));
    /// # let _ = invoices;
    /// node.shutdown();
    /// env.stop_and_wait();
    /// ```
    pub fn export_with(&self, name: &str, access: Access) -> Mbox {
        let mbox = self.shared.env.named_mbox(name);
        self.export_mbox_with(name, &mbox, access);
        mbox
    }

    /// Lets peers send to `mbox` under `name` (any mailbox: an agent's direct one, a
    /// message chain's, a custom one), where [`Node::export`] exports the environment's
    /// named mailbox. A later export under the same name replaces it.
    pub fn export_mbox(&self, name: &str, mbox: &Mbox) {
        self.export_mbox_with(name, mbox, Access::All);
    }

    /// As [`Node::export_mbox`], for the peer nodes `access` admits only (see
    /// [`Node::export_with`]).
    pub fn export_mbox_with(&self, name: &str, mbox: &Mbox, access: Access) {
        self.shared.set_export(
            name,
            Some(Export {
                mbox: mbox.clone(),
                access,
            }),
        );
    }

    /// The environment this node was started in.
    pub fn environment(&self) -> &Environment {
        &self.shared.env
    }

    /// Stops accepting messages for `name` from peers: later ones are dead letters there
    /// ([`DeliveryFailure::NotExported`]), on every connection (one that resolved the name
    /// before looks it up again at its next message).
    pub fn unexport(&self, name: &str) {
        self.shared.set_export(name, None);
    }

    /// Dials the node at `addr` (host:port) and shakes hands; blocks until done. Must not be
    /// called from inside a tokio runtime. If the connection is lost later, this node dials
    /// again with backoff.
    pub fn connect(&self, addr: impl std::fmt::Display) -> Result<RemoteNode, RemoteError> {
        let node = &self.shared;
        if node.shutting_down.load(Ordering::Acquire) {
            return Err(RemoteError::ShutDown);
        }
        let addr = addr.to_string();
        let (stream, name, leftover) = node.handle.block_on(dial(node, &addr))?;
        let peer = node.peer_entry(&name, Some(addr));
        connection::install(peer.arc(), stream, leftover, None);
        Ok(RemoteNode { peer })
    }

    /// The peer named `name`, if this node keeps its entry: a peer this node dialled, one
    /// connected now, or one that dialled this node and left while a [`RemoteNode`] or a
    /// proxy of it was held. A peer that dialled this node and left, with nothing held, is
    /// forgotten (its queue with it): a later connection of that name starts afresh.
    ///
    /// ```
    /// use cohort::Environment;
    /// use cohort_remote::{Node, NodeConfig, Registry};
    /// use std::time::{Duration, Instant};
    ///
    /// let env = Environment::builder().start().unwrap();
    /// let config = |name: &str| NodeConfig::new(name).token("t");
    /// let a = Node::start(&env.environment(),
    ///     config("a").listen("127.0.0.1:0".parse().unwrap()), Registry::new()).unwrap();
    /// let visitor = Node::start(&env.environment(), config("visitor"), Registry::new()).unwrap();
    /// visitor.connect(a.local_addr().unwrap()).unwrap();
    /// let kept = a.wait_for_peer("visitor", Duration::from_secs(10)).unwrap(); // held
    /// visitor.shutdown();
    ///
    /// let deadline = Instant::now() + Duration::from_secs(10);
    /// while kept.is_up() && Instant::now() < deadline {
    ///     std::thread::yield_now();
    /// }
    /// assert!(a.peer("visitor").is_some(), "kept while a handle is held");
    /// drop(kept);
    /// assert!(a.peer("visitor").is_none(), "forgotten with the last handle");
    /// assert_eq!(a.stats().peers, 0);
    /// a.shutdown();
    /// env.stop_and_wait();
    /// ```
    pub fn peer(&self, name: &str) -> Option<RemoteNode> {
        self.shared.known_peer(name).map(|peer| RemoteNode { peer })
    }

    /// A reference to the mailbox this node exports as `name`, to put in messages (a
    /// reply address): see [`MboxRef`]. An error if `name` is not exported.
    pub fn mbox_ref(&self, name: &str) -> Result<MboxRef, RemoteError> {
        let mbox = self
            .shared
            .exported(name)
            .ok_or_else(|| RemoteError::NotExported(name.to_string()))?;
        Ok(MboxRef::new(&self.shared.config.name, name, mbox))
    }

    /// Waits until the peer named `name` is connected, at most `timeout`.
    pub fn wait_for_peer(&self, name: &str, timeout: Duration) -> Option<RemoteNode> {
        let deadline = Instant::now() + timeout;
        let mut peers = self.shared.peers.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(p) = peers.get(name)
                && p.is_up()
            {
                return Some(RemoteNode {
                    peer: PeerHandle::new(p.clone()),
                });
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            peers = self
                .shared
                .peers_changed
                .wait_timeout(peers, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The named mailbox where this node publishes [`NodeUp`](crate::NodeUp) and
    /// [`NodeDown`](crate::NodeDown) (only while an agent is subscribed to that type: an
    /// event nobody listens to is not a dead letter).
    pub fn events_mbox(&self) -> Mbox {
        self.shared.events.clone()
    }

    /// The node's counters.
    pub fn stats(&self) -> NodeStats {
        let mut stats = self.shared.counters.snapshot();
        stats.asks_waiting = self.shared.asks.len() as u64;
        stats.connections_open = self.shared.accepted.load(Ordering::Acquire) as u64;
        let peers = self.shared.peers.lock().unwrap_or_else(|e| e.into_inner());
        stats.peers = peers.len() as u64;
        stats.outbound_queued = peers.values().map(|p| p.queue.len() as u64).sum();
        stats
    }

    /// Graceful shutdown: stops accepting, lets every writer flush what is queued (at most
    /// the configured flush timeout) and say Bye, then stops the I/O runtime. What is still
    /// queued after that is counted as undeliverable.
    pub fn shutdown(mut self) {
        self.stop(true);
    }

    /// Drops every connection at once, with no flush and no Bye, as a crash would (tests of
    /// failure handling).
    pub fn abort(mut self) {
        self.stop(false);
    }

    fn stop(&mut self, graceful: bool) {
        let Some(runtime) = self.runtime.take() else {
            return;
        };
        let node = &self.shared;
        node.shutting_down.store(true, Ordering::Release);
        let peers: Vec<Arc<PeerShared>> = node
            .peers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, p)| p)
            .collect();
        if graceful {
            for p in &peers {
                p.closing.store(true, Ordering::Release);
                p.queue.kick();
            }
            // Each writer ends its connection once it wrote Bye (`lost` then signals).
            let deadline = Instant::now() + node.config.shutdown_flush_timeout;
            let mut guard = node.peers.lock().unwrap_or_else(|e| e.into_inner());
            while peers
                .iter()
                .any(|p| p.conn.lock().unwrap_or_else(|e| e.into_inner()).is_some())
            {
                let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                    break;
                };
                guard = node
                    .peers_changed
                    .wait_timeout(guard, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            drop(guard);
        }
        for p in &peers {
            p.status.store(CLOSED, Ordering::Release);
            p.queue.kick();
        }
        runtime.shutdown_timeout(Duration::from_secs(1));
        for p in &peers {
            p.drain_undeliverable(DeliveryFailure::NodeDown);
            // Breaks the peer -> node -> peer cycle; a connection that did not end by itself
            // (an abort, a flush that timed out) leaves its unacknowledged writes in doubt.
            let conn = p.conn.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(conn) = conn {
                conn.settle(node);
            }
        }
        // No reply can come any more.
        node.asks.fail(None, cohort::RequestError::InDoubt);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop(true);
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.shared.config.name)
            .field("local_addr", &self.local_addr)
            .finish()
    }
}

/// The name of the events mailbox of the node named `node`.
pub fn events_mbox_name(node: &str) -> String {
    format!("cohort-remote/{node}/events")
}
