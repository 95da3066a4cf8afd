//! The cluster scenario: N members in this process on loopback, each with its own
//! cohort-remote node and its own gossip runtime (one shared agent environment), the
//! default [`ClusterConfig`]: convergence, registration spread, crash detection and gossip
//! traffic at steady state.

use cohort::{AnyMessage, CustomMbox, Environment, Mbox};
use cohort_cluster::{Cluster, ClusterConfig};
use cohort_remote::{Node, NodeConfig, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A measurement that takes longer than this is a failed run rather than a figure.
const GIVE_UP: Duration = Duration::from_secs(60);

/// How often the conditions are checked: fine enough for figures in hundreds of
/// milliseconds, coarse enough that polling 25 members does not steal the gossip's CPU.
const POLL: Duration = Duration::from_millis(2);

/// The figures of one run.
pub struct Outcome {
    /// From the first node's start until every member sees all N up.
    pub converged: Duration,
    /// From one `register` until every member's `lookup` finds it.
    pub registration: Duration,
    /// Gossip bytes sent per member per second over the steady window.
    pub bytes_per_node_per_s: f64,
    /// From an abrupt stop of one member until every other sees N - 1 up.
    pub crash_detected: Duration,
}

/// Swallows what the probe registration would receive (nothing is sent to it).
struct Sink;
impl CustomMbox for Sink {
    fn deliver(&self, _msg: AnyMessage) {}
}

/// Polls `cond` until it holds; the time since `start`, or an error naming `what`.
fn time_until(start: Instant, what: &str, cond: impl Fn() -> bool) -> Result<Duration, String> {
    while !cond() {
        if start.elapsed() > GIVE_UP {
            return Err(format!(
                "{what}: not reached within {} s",
                GIVE_UP.as_secs()
            ));
        }
        std::thread::sleep(POLL);
    }
    Ok(start.elapsed())
}

/// The started members: each node with its cluster handle (taken when it is stopped).
struct Members(Vec<(Arc<Node>, Option<Cluster>)>);

impl Members {
    fn clusters(&self) -> impl Iterator<Item = &Cluster> {
        self.0.iter().filter_map(|(_, c)| c.as_ref())
    }

    fn bytes_out(&self) -> u64 {
        self.clusters().map(|c| c.stats().bytes_out).sum()
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            if let Some(c) = c.take() {
                c.abort();
            }
        }
    }
}

/// One run with `n` members; `steady` is the window over which gossip traffic is counted.
pub fn run_once(n: usize, steady: Duration) -> Result<Outcome, String> {
    let env = Environment::builder().start().map_err(|e| e.to_string())?;
    let out = measure(&env.environment(), n, steady);
    env.stop_and_wait();
    out
}

fn measure(env: &Environment, n: usize, steady: Duration) -> Result<Outcome, String> {
    let name = format!("bench-{n}");
    let start = Instant::now();
    let mut members = Members(Vec::with_capacity(n));
    let mut seeds = Vec::new();
    for i in 0..n {
        let node_config = NodeConfig::new(format!("n{i}"))
            .listen("127.0.0.1:0".parse().expect("a socket address"))
            .io_threads(1);
        let node = Node::start(env, node_config, Registry::new()).map_err(|e| e.to_string())?;
        let node = Arc::new(node);
        let cluster = Cluster::join(&node, ClusterConfig::new(&name).seeds(seeds.clone()))
            .map_err(|e| e.to_string())?;
        if i == 0 {
            seeds.push(cluster.gossip_addr().to_string());
        }
        members.0.push((node, Some(cluster)));
    }
    let converged = time_until(start, "convergence", || {
        members.clusters().all(|c| c.members().len() == n)
    })?;

    let t = Instant::now();
    let sink = Mbox::custom(Sink);
    let last = members.clusters().last().expect("at least one member");
    last.register("probe", &sink).map_err(|e| e.to_string())?;
    let registration = time_until(t, "registration visible everywhere", || {
        members.clusters().all(|c| !c.lookup("probe").is_empty())
    })?;

    let before = members.bytes_out();
    let t = Instant::now();
    std::thread::sleep(steady);
    let bytes = members.bytes_out() - before;
    let bytes_per_node_per_s = bytes as f64 / n as f64 / t.elapsed().as_secs_f64();

    let (victim, cluster) = members.0.pop().expect("at least one member");
    if let Some(c) = cluster {
        c.abort();
    }
    if let Ok(node) = Arc::try_unwrap(victim) {
        node.abort();
    }
    let t = Instant::now();
    let crash_detected = time_until(t, "crash seen by all", || {
        members.clusters().all(|c| c.members().len() == n - 1)
    })?;
    Ok(Outcome {
        converged,
        registration,
        bytes_per_node_per_s,
        crash_detected,
    })
}
