//! The nodes of a chaos phase in this process: their environments, whose dead letters go
//! to the phase's books, a sink agent per node that records what it handles, paced senders,
//! and a mesh of nodes joined pairwise through fault-injecting proxies.

use super::proxy::Proxy;
use cohort::testing::ledger::Ledger;
use cohort::{Agent, Context, DeadLetter, DefineError, DeliveryFailure, Environment, Mbox};
use cohort_remote::{Node, NodeConfig, Overflow, Registry, RemoteNode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A message numbered by the ledger: its sender's index in [`Books::senders`] and its
/// number in the (sender, receiver) stream.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Numbered {
    /// The sender's index.
    pub sender: u32,
    /// The number.
    pub seq: u64,
}

/// The shared secret of the run's nodes.
pub const TOKEN: &str = "cohort-chaos";
/// The name every node exports its sink under.
pub const SINK: &str = "sink";
/// The nodes' first reconnect wait (their fast-failure-detection preset's).
pub const BACKOFF_MIN: Duration = cohort_remote::defaults::FAST_RECONNECT_MIN_BACKOFF;
/// The nodes' longest reconnect wait.
pub const BACKOFF_MAX: Duration = cohort_remote::defaults::FAST_RECONNECT_MAX_BACKOFF;
/// Messages each node's outbound queue holds per peer (small, so faults fill it).
pub const OUTBOUND: usize = 4096;

/// The types every node of the run registers.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Numbered>("chaos.Numbered").expect("one name");
    r
}

/// A node's settings: fast failure detection (a silent peer is down within about a second,
/// a short backoff), a small outbound queue.
pub fn node_config(name: &str) -> NodeConfig {
    NodeConfig::new(name)
        .token(TOKEN)
        .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
        .fast_failure_detection()
        .outbound_capacity(OUTBOUND)
        .overflow(Overflow::Wait)
}

/// A phase's records: the ledger, and beside it the counts the report shows whatever the
/// ledger finds.
pub struct Books {
    /// The independent check.
    pub ledger: Ledger,
    /// Sender names by index.
    pub senders: Vec<String>,
    /// Messages numbered.
    pub sent: AtomicU64,
    /// Messages handled.
    pub handled: AtomicU64,
    /// Dead letters of [`Numbered`] by reason.
    pub dead: Mutex<BTreeMap<String, u64>>,
}

impl Books {
    /// Empty books for these senders.
    pub fn new(senders: Vec<String>) -> Arc<Self> {
        Arc::new(Self {
            ledger: Ledger::new(),
            senders,
            sent: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            dead: Mutex::default(),
        })
    }

    /// Records a dead letter known by its reason, under `label` in the report.
    pub fn dead_letter(&self, reason: DeliveryFailure, label: &str) {
        self.ledger.dead_letter(reason);
        *self
            .dead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(label.to_owned())
            .or_default() += 1;
    }

    /// Records that `receiver` handled `seq` from sender `sender`; a sender index out of
    /// range is recorded as handled under its number so the ledger reports it.
    pub fn handled(&self, sender: u32, receiver: &str, seq: u64) {
        let name = self
            .senders
            .get(sender as usize)
            .map_or_else(|| format!("unknown-{sender}"), Clone::clone);
        self.ledger.handled(&name, receiver, seq);
        self.handled.fetch_add(1, Ordering::Relaxed);
    }
}

/// An environment whose dead letters of [`Numbered`] go to `books`.
pub fn environment(books: &Arc<Books>) -> Result<cohort::WrappedEnv, String> {
    let b = books.clone();
    environment_with(move |reason| b.dead_letter(reason, &format!("{reason:?}")))
}

/// An environment that passes the reason of each dead letter of [`Numbered`] to `f`.
pub fn environment_with(
    f: impl Fn(DeliveryFailure) + Send + Sync + 'static,
) -> Result<cohort::WrappedEnv, String> {
    Environment::builder()
        .dead_letter_hook(move |d: &DeadLetter| {
            if d.message_type == std::any::type_name::<Numbered>() {
                f(d.reason);
            }
        })
        .start()
        .map_err(|e| format!("an environment: {e}"))
}

/// Records what it handles; when asked, stalls in its next handler.
pub struct Sink {
    /// The exported mailbox.
    pub inbox: Mbox,
    /// This node's name (the receiver in the ledger).
    pub node: String,
    /// Where it records.
    pub books: Arc<Books>,
    /// Nanoseconds to stall in the next handler (0: none).
    pub stall: Arc<AtomicU64>,
    /// Messages handled.
    pub handled: Arc<AtomicU64>,
}

impl Agent for Sink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, m: &Numbered, _: &mut Context<'_, Self>| {
                let stall = me.stall.swap(0, Ordering::AcqRel);
                if stall > 0 {
                    // The fault itself: an agent busy for a while in one handler.
                    std::thread::sleep(Duration::from_nanos(stall));
                }
                me.books.handled(m.sender, &me.node, m.seq);
                me.handled.fetch_add(1, Ordering::Release);
            },
        )?;
        Ok(())
    }
}

/// Sending threads; stopped by [`Senders::stop`].
pub struct Senders {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// Messages a sender sends between two looks at the clock.
const BURST: u64 = 8;

impl Senders {
    /// Starts `count` threads named `<node>/s<k>` (sender indices from `first`), each sending
    /// numbered messages to `targets` in turn at about `rate` messages per second.
    pub fn start(
        books: &Arc<Books>,
        first: u32,
        count: u32,
        targets: &[(String, Mbox)],
        rate: f64,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|k| {
                let (books, stop, targets) = (books.clone(), stop.clone(), targets.to_vec());
                let index = first + k;
                std::thread::spawn(move || {
                    let name = books.senders[index as usize].clone();
                    let start = Instant::now();
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..BURST {
                            let (receiver, to) = &targets[(n % targets.len() as u64) as usize];
                            let seq = books.ledger.next(&name, receiver);
                            books.sent.fetch_add(1, Ordering::Relaxed);
                            to.send(Numbered { sender: index, seq });
                            n += 1;
                        }
                        // Pacing, not synchronisation: the senders offer a steady load.
                        let due = start + Duration::from_secs_f64(n as f64 / rate);
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }

    /// Stops every sender and waits for it (a sender waiting on a full queue is released
    /// when its peer drains or goes down).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Polls `cond` every millisecond until it holds or `timeout` passes; returns how long it
/// took, `None` on timeout.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if cond() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One node of the mesh and what belongs to it.
pub struct Member {
    /// Its name.
    pub name: String,
    /// Its environment (stopped last).
    pub env: cohort::WrappedEnv,
    /// The node.
    pub node: Node,
    /// Its sink's stall request.
    pub stall: Arc<AtomicU64>,
    /// Its sink's handled count.
    pub handled: Arc<AtomicU64>,
}

/// A link of the mesh: `dialler` dialled `dialled` through `proxy`.
pub struct Link {
    /// The dialling member's index.
    pub dialler: usize,
    /// The dialled member's index.
    pub dialled: usize,
    /// The proxy between them.
    pub proxy: Proxy,
    /// The dialler's handle of the dialled node.
    pub forward: RemoteNode,
    /// The dialled node's handle of the dialler.
    pub backward: RemoteNode,
}

/// Nodes in this process, each pair joined by one connection through a proxy.
pub struct Mesh {
    /// The nodes.
    pub members: Vec<Member>,
    /// One per pair, the lower index dialling.
    pub links: Vec<Link>,
}

/// Names of the mesh's nodes.
pub fn member_name(i: usize) -> String {
    format!("chaos-{}", (b'a' + i as u8) as char)
}

impl Mesh {
    /// Starts `n` nodes; `config` may change a member's settings (by index).
    pub fn start(
        rt: &tokio::runtime::Handle,
        books: &Arc<Books>,
        n: usize,
        config: impl Fn(usize, NodeConfig) -> NodeConfig,
    ) -> Result<Self, String> {
        let mut members = Vec::new();
        for i in 0..n {
            let name = member_name(i);
            let env = environment(books)?;
            let node = Node::start(
                &env.environment(),
                config(i, node_config(&name)),
                registry(),
            )
            .map_err(|e| format!("node {name}: {e}"))?;
            let (stall, handled) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
            let mut coop = env.environment().new_coop();
            coop.add(Sink {
                inbox: node.export(SINK),
                node: name.clone(),
                books: books.clone(),
                stall: stall.clone(),
                handled: handled.clone(),
            });
            env.environment()
                .register_coop(coop)
                .map_err(|e| format!("the sink of {name}: {e}"))?;
            members.push(Member {
                name,
                env,
                node,
                stall,
                handled,
            });
        }
        let mut links = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                let upstream = members[j]
                    .node
                    .local_addr()
                    .ok_or("a node without a listening address")?;
                let proxy = Proxy::start(rt, upstream)?;
                let forward = members[i]
                    .node
                    .connect(proxy.addr())
                    .map_err(|e| format!("{} dials {}: {e}", members[i].name, members[j].name))?;
                let backward = members[j]
                    .node
                    .wait_for_peer(&members[i].name, Duration::from_secs(10))
                    .ok_or_else(|| format!("{} never saw {}", members[j].name, members[i].name))?;
                links.push(Link {
                    dialler: i,
                    dialled: j,
                    proxy,
                    forward,
                    backward,
                });
            }
        }
        Ok(Self { members, links })
    }

    /// Where member `i`'s senders send: every other member's sink, through the links.
    pub fn targets(&self, i: usize) -> Vec<(String, Mbox)> {
        self.links
            .iter()
            .filter_map(|l| {
                if l.dialler == i {
                    Some((self.members[l.dialled].name.clone(), l.forward.mbox(SINK)))
                } else if l.dialled == i {
                    Some((self.members[l.dialler].name.clone(), l.backward.mbox(SINK)))
                } else {
                    None
                }
            })
            .collect()
    }

    /// Whether every link is up on both sides.
    pub fn all_up(&self) -> bool {
        self.links
            .iter()
            .all(|l| l.forward.is_up() && l.backward.is_up())
    }

    /// Shuts every node down gracefully (at once, so each flushes to peers still up), then
    /// stops the environments (their sinks handle what is queued first), then the proxies.
    pub fn stop(self) {
        let Mesh { members, links } = self;
        let mut envs = Vec::new();
        let closing: Vec<_> = members
            .into_iter()
            .map(|m| {
                envs.push(m.env);
                let node = m.node;
                std::thread::spawn(move || node.shutdown())
            })
            .collect();
        for c in closing {
            let _ = c.join();
        }
        for e in envs {
            e.stop_and_wait();
        }
        drop(links);
    }
}
