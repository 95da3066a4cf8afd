//! [`Cluster`]: this node's membership in a cluster, its registry and its groups.

use crate::config::ClusterConfig;
use crate::error::ClusterError;
use crate::group::{Cloner, Group, Routing, cloner};
use crate::listing::{Listing, Listings};
use crate::member::Member;
use crate::membership::{self, LocalReg, State};
use crate::membership::{
    ACK_PREFIX, KEY_ADDR, KEY_GOSSIPER, KEY_ROLES, KEY_STATUS, REG_PREFIX, STATUS_LEAVING,
    STATUS_UP,
};
use crate::stats::{ClusterStats, Counters};
use crate::transport::{GatedSocket, GatedUdp};
use chitchat::{
    ChitchatConfig, ChitchatHandle, ChitchatId, FailureDetectorConfig, NodeState, ProtocolVersion,
    spawn_chitchat,
};
use cohort::{Environment, Mbox};
use cohort_remote::Node;
use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

pub(crate) type Live = BTreeMap<ChitchatId, NodeState>;

pub(crate) struct Shared {
    pub(crate) config: ClusterConfig,
    pub(crate) me: Member,
    pub(crate) node: Weak<Node>,
    pub(crate) env: Environment,
    pub(crate) counters: Arc<Counters>,
    pub(crate) events: Mbox,
    pub(crate) state: Mutex<State>,
    pub(crate) listings: Listings,
    broadcast: RwLock<HashMap<TypeId, Cloner>>,
}

impl Shared {
    pub(crate) fn cloner(&self, type_id: TypeId) -> Option<Cloner> {
        self.broadcast
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&type_id)
            .copied()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// This node's membership in a cluster: who is up ([`Cluster::members`], events on
/// [`Cluster::events_mbox`]), the cluster-wide registry of mailboxes
/// ([`Cluster::register`], [`Cluster::lookup`], [`Cluster::subscribe_key`]) and routing
/// groups ([`Cluster::group`]).
///
/// Gossip (chitchat's scuttlebutt over UDP, with its phi-accrual failure detector) carries
/// membership and registrations; messages go over the node's cohort-remote TCP
/// connections, dialled when a member's mailbox is first sent to.
///
/// ```
/// use cohort::{AnyMessage, CustomMbox, Environment, Mbox};
/// use cohort_cluster::{Cluster, ClusterConfig, Routing};
/// use cohort_remote::{Node, NodeConfig, Registry};
/// use std::sync::{Arc, Mutex, mpsc};
/// use std::time::{Duration, Instant};
///
/// let env = Environment::builder().start().unwrap();
/// let start = |name: &str| {
///     let mut types = Registry::new(); // what crosses the wire
///     types.register::<u32>("u32").unwrap();
///     Arc::new(Node::start(&env.environment(),
///         NodeConfig::new(name).listen("127.0.0.1:0".parse().unwrap()), types).unwrap())
/// };
/// let (a, b) = (start("a"), start("b"));
/// let fast = |c: ClusterConfig| c.gossip_interval(Duration::from_millis(50));
/// let ca = Cluster::join(&a, fast(ClusterConfig::new("demo"))).unwrap();
/// let seed = ca.gossip_addr().to_string();
/// let cb = Cluster::join(&b, fast(ClusterConfig::new("demo").seeds([seed]))).unwrap();
///
/// // Register a mailbox on `a` (here a custom one that forwards to a channel); `b` sees
/// // it once gossip carried it.
/// struct Inbox(Mutex<mpsc::Sender<u32>>);
/// impl CustomMbox for Inbox {
///     fn deliver(&self, msg: AnyMessage) {
///         if let Some(n) = msg.downcast_ref::<u32>() {
///             self.0.lock().unwrap().send(*n).unwrap();
///         }
///     }
/// }
/// let (tx, rx) = mpsc::channel();
/// ca.register("counter", &Mbox::custom(Inbox(Mutex::new(tx)))).unwrap();
/// let deadline = Instant::now() + Duration::from_secs(30);
/// while cb.lookup("counter").is_empty() && Instant::now() < deadline {
///     std::thread::sleep(Duration::from_millis(10));
/// }
/// cb.group("counter", Routing::RoundRobin).send(7u32);
/// assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 7);
/// cb.leave();
/// ca.leave();
/// env.stop_and_wait();
/// ```
pub struct Cluster {
    shared: Arc<Shared>,
    node: Arc<Node>,
    gossip_addr: SocketAddr,
    handle: Option<ChitchatHandle>,
    watcher: watch::Receiver<Live>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Cluster {
    /// Joins the cluster `config` names with `node` (which must listen: members dial it):
    /// binds the gossip socket, starts gossiping with the seeds (a seed that is down is
    /// retried every round) and publishes this member as up.
    pub fn join(node: &Arc<Node>, config: ClusterConfig) -> Result<Cluster, ClusterError> {
        config.validate()?;
        let remoting_addr = match config.advertise {
            Some(addr) => addr,
            None => node
                .local_addr()
                .ok_or_else(|| ClusterError::NodeNotListening(node.name().to_string()))?,
        };
        if remoting_addr.ip().is_unspecified() || remoting_addr.port() == 0 {
            return Err(ClusterError::Unroutable(remoting_addr));
        }
        let incarnation = incarnation(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("cohort-cluster-{}", node.name()))
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let counters = Arc::new(Counters::default());
        let gossip = runtime.block_on(start_gossip(
            node.name(),
            incarnation,
            Announce::Member(remoting_addr),
            &config,
            counters.clone(),
        ))?;
        let (handle, gossip_addr, watcher) = (gossip.handle, gossip.addr, gossip.watcher);
        let chitchat = handle.chitchat();
        let me = Member {
            name: node.name().to_string(),
            incarnation,
            remoting_addr,
            gossip_addr,
            roles: config.roles.clone(),
            status: crate::MemberStatus::Up,
        };
        let shared = Arc::new(Shared {
            events: node
                .environment()
                .named_mbox(&events_mbox_name(node.name())),
            env: node.environment().clone(),
            node: Arc::downgrade(node),
            me,
            counters,
            state: Mutex::new(State::default()),
            listings: Listings::default(),
            broadcast: RwLock::new(HashMap::new()),
            config,
        });
        runtime.spawn(watch_live(shared.clone(), watcher.clone(), chitchat));
        tracing::info!(node = %node.name(), %gossip_addr, incarnation, "joined the cluster");
        Ok(Cluster {
            shared,
            node: node.clone(),
            gossip_addr,
            handle: Some(handle),
            watcher,
            runtime: Some(runtime),
        })
    }

    /// The cluster's name.
    pub fn cluster_name(&self) -> &str {
        &self.shared.config.name
    }

    /// This member as the others see it.
    pub fn me(&self) -> &Member {
        &self.shared.me
    }

    /// The UDP address gossip listens on (what other nodes give as a seed).
    pub fn gossip_addr(&self) -> SocketAddr {
        self.gossip_addr
    }

    /// The members up now as this node sees them (itself included once its first gossip
    /// round ran), ordered by name.
    pub fn members(&self) -> Vec<Member> {
        self.shared.state().members()
    }

    /// The named mailbox where [`MemberUp`](crate::MemberUp),
    /// [`MemberLeft`](crate::MemberLeft) and [`MemberDown`](crate::MemberDown) are
    /// published (only while an agent is subscribed to that type).
    ///
    /// ```no_run
    /// use cohort::{Agent, Context, DefineError, Mbox};
    /// use cohort_cluster::{MemberDown, MemberUp};
    ///
    /// /// Logs who comes and goes.
    /// struct Watcher { events: Mbox }
    /// impl Agent for Watcher {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let events = self.events.clone();
    ///         ctx.subscribe(&events, |_, e: &MemberUp, _| {
    ///             println!("up: {}", e.member.name);
    ///         })?;
    ///         ctx.subscribe(&events, |_, e: &MemberDown, _| {
    ///             println!("down: {} ({})", e.member.name, e.reason);
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    /// # fn demo(env: &cohort::Environment, cluster: &cohort_cluster::Cluster) {
    /// let mut coop = env.new_coop();
    /// coop.add(Watcher { events: cluster.events_mbox() });
    /// env.register_coop(coop).unwrap();
    /// # }
    /// ```
    pub fn events_mbox(&self) -> Mbox {
        self.shared.events.clone()
    }

    /// Publishes `mbox` under `key` to every member: exports it through the node under a
    /// name derived from the key, and puts the registration in this node's gossip state.
    /// Members see it once gossip reached them (this node too: after its next round).
    /// Call it from a thread outside any async runtime (an agent's handler, `main`), as the
    /// other calls that write the gossip state ([`Cluster::unregister`], [`Cluster::leave`]).
    pub fn register(&self, key: &str, mbox: &Mbox) -> Result<(), ClusterError> {
        let max = self.shared.config.max_key_bytes;
        if key.is_empty() || key.len() > max {
            return Err(ClusterError::BadKey {
                len: key.len(),
                max,
            });
        }
        let mut state = self.shared.state();
        let cap = self.shared.config.max_keys_per_node;
        if state.local.len() >= cap {
            return Err(ClusterError::TooManyRegistrations(cap));
        }
        let seq = state.next_seq;
        state.next_seq += 1;
        let export = format!("cohort-cluster/{key}/{seq}");
        let chitchat_key = format!("{REG_PREFIX}{key}/{seq}");
        self.node.export_mbox(&export, mbox);
        state.local.push(LocalReg {
            key: key.to_string(),
            export: export.clone(),
            chitchat_key: chitchat_key.clone(),
            mbox: mbox.clone(),
        });
        drop(state);
        self.with_self_state(|ns| ns.set(chitchat_key, export));
        Ok(())
    }

    /// Withdraws the registration of `mbox` under `key`; false if there was none.
    pub fn unregister(&self, key: &str, mbox: &Mbox) -> bool {
        let mut state = self.shared.state();
        let Some(i) = state
            .local
            .iter()
            .position(|r| r.key == key && r.mbox.id() == mbox.id())
        else {
            return false;
        };
        let reg = state.local.remove(i);
        drop(state);
        self.node.unexport(&reg.export);
        self.with_self_state(|ns| ns.delete(&reg.chitchat_key));
        true
    }

    /// The mailboxes registered under `key` on the members up now, as this node knows them
    /// (eventually consistent: a registration made elsewhere shows after gossip carried it).
    pub fn lookup(&self, key: &str) -> Listing {
        self.shared
            .listings
            .get(key)
            .map_or_else(|| Listing::empty(key), |l| (*l).clone())
    }

    /// Sends `mbox` the [`Listing`] of `key` now, then again at every change, in the order
    /// the changes were seen.
    pub fn subscribe_key(&self, key: &str, mbox: &Mbox) {
        let mut state = self.shared.state();
        // Under the state's lock: no change can slip between the first listing and the
        // subscription.
        mbox.send(self.lookup(key));
        state
            .subscribers
            .entry(key.to_string())
            .or_default()
            .push(mbox.clone());
    }

    /// A mailbox whose sends go to the registrations of `key` current at each send, picked
    /// by `routing`. A send finding no registration is a dead letter, counted in
    /// [`ClusterStats::group_empty`].
    pub fn group(&self, key: &str, routing: Routing) -> Mbox {
        Mbox::custom(Arc::new(Group {
            slot: self.shared.listings.slot(key),
            shared: self.shared.clone(),
            key: key.to_string(),
            routing,
            next: AtomicUsize::new(0),
            label: format!("group({key}, {routing:?})"),
        }))
    }

    /// Lets [`Routing::Broadcast`] groups of this node send messages of type `M` (each
    /// registration gets a clone).
    pub fn broadcastable<M: Clone + Send + Sync + 'static>(&self) {
        let (id, f) = cloner::<M>();
        self.shared
            .broadcast
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, f);
    }

    /// This member's counters.
    pub fn stats(&self) -> ClusterStats {
        self.shared.counters.snapshot()
    }

    /// Leaves gracefully: announces the leave, waits until every member acknowledged it
    /// (at most [`leave_timeout`](ClusterConfig::leave_timeout)), then stops gossiping and
    /// withdraws this node's exports. Members publish [`MemberLeft`](crate::MemberLeft),
    /// not `MemberDown`, and drop this node's registrations.
    pub fn leave(mut self) {
        self.stop(true);
    }

    /// Stops gossiping at once, without a leave, as a crash would: members declare this
    /// node down once their failure detector does (tests of failure handling).
    pub fn abort(mut self) {
        self.stop(false);
    }

    fn with_self_state(&self, f: impl FnOnce(&mut NodeState)) {
        if let Some(h) = &self.handle {
            f(h.chitchat().blocking_lock().self_node_state());
        }
    }

    fn stop(&mut self, graceful: bool) {
        let (Some(runtime), Some(handle)) = (self.runtime.take(), self.handle.take()) else {
            return;
        };
        if graceful {
            // The members' current incarnations: an older one still gossiped about (a
            // restart) will never acknowledge.
            let others: Vec<(String, u64)> = self
                .members()
                .into_iter()
                .map(|m| (m.name, m.incarnation))
                .filter(|(n, _)| *n != self.shared.me.name)
                .collect();
            handle
                .chitchat()
                .blocking_lock()
                .self_node_state()
                .set(KEY_STATUS, STATUS_LEAVING);
            let deadline = Instant::now() + self.shared.config.leave_timeout;
            let ack_key = format!("{ACK_PREFIX}{}", self.shared.me.name);
            let incarnation = self.shared.me.incarnation.to_string();
            let mut watcher = self.watcher.clone();
            let acked = runtime.block_on(async {
                loop {
                    let all = {
                        let live = watcher.borrow_and_update();
                        others.iter().all(|(n, inc)| {
                            live.iter()
                                .filter(|(id, _)| &*id.node_id == n && id.generation_id == *inc)
                                .all(|(_, ns)| {
                                    // One that leaves too will not acknowledge.
                                    ns.get(&ack_key) == Some(incarnation.as_str())
                                        || ns.get(KEY_STATUS) == Some(STATUS_LEAVING)
                                })
                        })
                    };
                    if all {
                        return true;
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, watcher.changed()).await {
                        Ok(Ok(())) => {}
                        _ => return false,
                    }
                }
            });
            if !acked {
                tracing::warn!(node = %self.shared.me.name, "leave not acknowledged by every member in time");
            }
            let _ = runtime.block_on(handle.shutdown());
        } else {
            handle.abort();
        }
        runtime.shutdown_timeout(Duration::from_secs(1));
        let local = std::mem::take(&mut self.shared.state().local);
        for reg in local {
            self.node.unexport(&reg.export);
        }
        self.shared.listings.clear();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop(true);
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("cluster", &self.shared.config.name)
            .field("node", &self.shared.me.name)
            .field("gossip_addr", &self.gossip_addr)
            .finish()
    }
}

/// This run's incarnation: the configured one, or the time of the join.
pub(crate) fn incarnation(config: &ClusterConfig) -> u64 {
    config.incarnation.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_micros() as u64)
    })
}

/// What a participant puts in its gossip state, and which of the others it lists live.
pub(crate) enum Announce {
    /// A member, dialled at this remoting address; it lists only members.
    Member(SocketAddr),
    /// A [`Gossiper`](crate::Gossiper): no address, never a member; it lists members and
    /// gossipers.
    Gossiper,
}

/// A participant's gossip, started: what [`Cluster::join`] and
/// [`Gossiper::start`](crate::Gossiper::start) run.
pub(crate) struct Gossip {
    pub(crate) handle: ChitchatHandle,
    pub(crate) addr: SocketAddr,
    pub(crate) watcher: watch::Receiver<Live>,
}

/// Binds the gossip socket and starts chitchat announcing what `announce` says.
pub(crate) async fn start_gossip(
    name: &str,
    incarnation: u64,
    announce: Announce,
    config: &ClusterConfig,
    counters: Arc<Counters>,
) -> Result<Gossip, ClusterError> {
    let cluster_id = config.cluster_id();
    let bind_error = |e: &dyn std::fmt::Display| ClusterError::Bind {
        addr: config.gossip_listen,
        reason: format!("{e:#}"),
    };
    let socket = GatedSocket::open(
        config.gossip_listen,
        counters,
        config.max_datagram_bytes,
        cluster_id.clone(),
    )
    .await
    .map_err(|e| bind_error(&e))?;
    let addr = socket.public_addr().map_err(|e| bind_error(&e))?;
    let transport = GatedUdp {
        socket: Mutex::new(Some(socket)),
    };
    let listed: Box<dyn Fn(&NodeState) -> bool + Send> = match announce {
        // A node that does not announce a remoting address is not a member.
        Announce::Member(_) => Box::new(|ns: &NodeState| ns.get(KEY_ADDR).is_some()),
        // Listed once its state arrived, as a member is, so that a gossiper's count means
        // the participants' state spread, not only their heartbeats.
        Announce::Gossiper => {
            Box::new(|ns: &NodeState| ns.get(KEY_ADDR).is_some() || ns.get(KEY_GOSSIPER).is_some())
        }
    };
    let chitchat_config = ChitchatConfig {
        chitchat_id: ChitchatId::new(name.to_string(), incarnation, addr),
        cluster_id,
        gossip_interval: config.gossip_interval,
        listen_addr: addr,
        seed_nodes: config.seeds.clone(),
        failure_detector_config: FailureDetectorConfig {
            phi_threshold: config.phi_threshold,
            sampling_window_size: 1_000,
            max_interval: config.max_heartbeat_interval,
            initial_interval: config.gossip_interval,
            dead_node_grace_period: config.dead_node_grace_period,
        },
        marked_for_deletion_grace_period: config.dead_node_grace_period,
        catchup_callback: None,
        extra_liveness_predicate: Some(listed),
        protocol_version: ProtocolVersion::V0,
    };
    let initial = match announce {
        Announce::Member(remoting_addr) => vec![
            (KEY_ADDR.to_string(), remoting_addr.to_string()),
            (KEY_ROLES.to_string(), config.roles.join(",")),
            (KEY_STATUS.to_string(), STATUS_UP.to_string()),
        ],
        Announce::Gossiper => vec![(KEY_GOSSIPER.to_string(), String::new())],
    };
    let handle = spawn_chitchat(chitchat_config, initial, &transport)
        .await
        .map_err(|e| ClusterError::Gossip(e.to_string()))?;
    let watcher = handle.chitchat().lock().await.live_nodes_watcher();
    Ok(Gossip {
        handle,
        addr,
        watcher,
    })
}

/// The name of the events mailbox of the cluster member whose node is named `node`.
pub fn events_mbox_name(node: &str) -> String {
    format!("cohort-cluster/{node}/events")
}

/// Applies every change of the live set, in order; writes the leave acknowledgements.
async fn watch_live(
    shared: Arc<Shared>,
    mut watcher: watch::Receiver<Live>,
    chitchat: Arc<tokio::sync::Mutex<chitchat::Chitchat>>,
) {
    loop {
        let live = watcher.borrow_and_update().clone();
        let acks = {
            let mut state = shared.state();
            membership::refresh(&shared, &mut state, &live)
        };
        if !acks.set.is_empty() || !acks.delete.is_empty() {
            let mut cc = chitchat.lock().await;
            let ns = cc.self_node_state();
            for (name, incarnation) in acks.set {
                ns.set(format!("{ACK_PREFIX}{name}"), incarnation);
            }
            for name in acks.delete {
                ns.delete(&format!("{ACK_PREFIX}{name}"));
            }
        }
        if watcher.changed().await.is_err() {
            return;
        }
    }
}
