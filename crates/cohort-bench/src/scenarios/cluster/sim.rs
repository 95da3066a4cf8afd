//! Gossip alone for many participants in one process (the `cluster` bench's gossip-only
//! mode): each is a [`Gossiper`] (chitchat behind cohort-cluster's gated transport, no
//! node, no agents), all on one tokio runtime, started as a cluster of that size would be
//! run: several seeds, joins spread over time, a gossip interval that grows with the
//! member count.

use cohort_cluster::{ClusterConfig, Gossiper};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How a swarm is started.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Participants.
    pub members: usize,
    /// The first `seeds` start at once, each seeded by those before it; every later one is
    /// given all of them.
    pub seeds: usize,
    /// The gossip interval of every participant.
    pub interval: Duration,
    /// The others join one after the other, spread evenly over this window.
    pub stagger: Duration,
    /// Threads of the shared runtime.
    pub workers: usize,
}

/// Members per seed when the count is not given: a seed answers every joiner that knows
/// nobody else each round, so each should face few of them.
const MEMBERS_PER_SEED: usize = 25;

/// Gossip interval per member when it is not given: every digest lists every member, so a
/// round costs each member work in proportion to the member count, and the interval grows
/// with it to keep the process's gossip work per second flat.
const INTERVAL_PER_MEMBER: Duration = Duration::from_millis(4);

/// The longest heartbeat interval the detector samples, in gossip rounds (the default's
/// ratio to the default interval).
const HEARTBEAT_ROUNDS: u32 = 25;

impl Plan {
    /// The plan for `members`, with what is not given scaled to the count: a seed per
    /// [`MEMBERS_PER_SEED`], an interval of [`INTERVAL_PER_MEMBER`] per member and at least
    /// the cluster's default, joins spread over two intervals (so that the members' rounds
    /// fall evenly over the interval instead of all at once).
    pub fn scaled(
        members: usize,
        seeds: Option<usize>,
        interval: Option<Duration>,
        stagger: Option<Duration>,
    ) -> Plan {
        let interval = interval.unwrap_or_else(|| {
            (INTERVAL_PER_MEMBER * members as u32).max(cohort_cluster::defaults::GOSSIP_INTERVAL)
        });
        Plan {
            members,
            seeds: seeds
                .unwrap_or(members.div_ceil(MEMBERS_PER_SEED))
                .clamp(1, members.max(1)),
            interval,
            stagger: stagger.unwrap_or(interval * 2),
            workers: 2,
        }
    }
}

/// Gossiping participants on one runtime.
pub struct Swarm {
    /// Dropped before the runtime shuts down (their tasks run on it).
    members: Vec<Gossiper>,
    runtime: Option<tokio::runtime::Runtime>,
    /// When the first participant started.
    pub started: Instant,
    /// When the last participant started.
    pub last_join: Instant,
}

impl Swarm {
    /// Starts `plan.members` gossipers named `g0`, `g1`, ... of the cluster `name`.
    pub fn start(name: &str, plan: &Plan) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(plan.workers.max(1))
            .thread_name("cohort-bench-swarm")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        // The detector ignores heartbeat intervals over this, and a member's heartbeats reach
        // another only every round or two: it must grow with the gossip interval, or no
        // member ever gets a sample and none is ever live.
        let max_heartbeat = (plan.interval * HEARTBEAT_ROUNDS)
            .max(cohort_cluster::defaults::MAX_HEARTBEAT_INTERVAL);
        let mut config = ClusterConfig::new(name)
            .gossip_interval(plan.interval)
            .max_heartbeat_interval(max_heartbeat);
        let mut members = Vec::with_capacity(plan.members);
        let mut seeds = Vec::new();
        let started = Instant::now();
        let joiners = plan.members.saturating_sub(plan.seeds).max(1) as u32;
        for i in 0..plan.members {
            if i >= plan.seeds {
                let due = started + plan.stagger * (i - plan.seeds) as u32 / joiners;
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            let g = runtime
                .block_on(Gossiper::start(&format!("g{i}"), &config))
                .map_err(|e| e.to_string())?;
            if i < plan.seeds {
                seeds.push(g.gossip_addr().to_string());
                config = config.seeds(seeds.clone());
            }
            members.push(g);
        }
        Ok(Self {
            members,
            runtime: Some(runtime),
            started,
            last_join: Instant::now(),
        })
    }

    /// How many participants each sees live (itself included), the least of them.
    pub fn min_live(&self) -> usize {
        self.members.iter().map(Gossiper::live).min().unwrap_or(0)
    }

    /// Gossip bytes sent by all participants so far.
    pub fn bytes_out(&self) -> u64 {
        self.members.iter().map(|g| g.stats().bytes_out).sum()
    }

    /// Datagrams the kernel dropped for want of receive-buffer space on this process's UDP
    /// sockets so far: on the participants' gossip sockets, and on all others (the gates'
    /// loopback relays and decoders, the only other UDP sockets of a gossip-only run).
    /// `None` where the system does not show them (Linux's `/proc/net/udp` does).
    pub fn drops(&self) -> Option<Drops> {
        let public: HashSet<u16> = self
            .members
            .iter()
            .map(|g| g.gossip_addr().port())
            .collect();
        udp_drops(&public)
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        self.members.clear();
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// Receive-buffer drops on this process's UDP sockets.
#[derive(Debug, Clone, Copy, Default)]
pub struct Drops {
    /// On the gossip sockets peers send to.
    pub public: u64,
    /// On every other UDP socket of the process.
    pub internal: u64,
}

/// Sums the `drops` column of `/proc/net/udp{,6}` over the sockets this process holds.
fn udp_drops(public_ports: &HashSet<u16>) -> Option<Drops> {
    let mut mine = HashSet::new();
    for fd in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
        if let Ok(link) = std::fs::read_link(fd.path())
            && let Some(inode) = link
                .to_str()
                .and_then(|l| l.strip_prefix("socket:["))
                .and_then(|l| l.strip_suffix(']'))
        {
            mine.insert(inode.to_string());
        }
    }
    let mut drops = Drops::default();
    let mut seen = false;
    for table in ["/proc/net/udp", "/proc/net/udp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        seen = true;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(inode), Some(dropped)) = (f.get(1), f.get(9), f.get(12)) else {
                continue;
            };
            if !mine.contains(*inode) {
                continue;
            }
            let port = local
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            let dropped: u64 = dropped.parse().unwrap_or(0);
            if port.is_some_and(|p| public_ports.contains(&p)) {
                drops.public += dropped;
            } else {
                drops.internal += dropped;
            }
        }
    }
    seen.then_some(drops)
}
