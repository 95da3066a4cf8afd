//! Measures, for N in-process members on loopback (each with its own cohort-remote node
//! and gossip runtime), the time for every member to see all N up (convergence), for a
//! registration to be visible on every member, for every member to see a crashed one
//! down, and the gossip bytes per member per second at steady state.
//!
//! `cargo run --release -p cohort-cluster --example cluster_timings -- 5,10 400` measures
//! 5 and 10 members gossiping every 400 ms (the default interval). Without arguments it
//! runs 3 members at 100 ms, a smoke run of a few seconds.

use cohort::{AnyMessage, CustomMbox, Environment, Mbox};
use cohort_cluster::{Cluster, ClusterConfig};
use cohort_remote::{Node, NodeConfig, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A measurement that takes longer than this is reported as not reached.
const GIVE_UP: Duration = Duration::from_secs(60);

struct Sink;
impl CustomMbox for Sink {
    fn deliver(&self, _msg: AnyMessage) {}
}

/// Polls `cond` every millisecond; the time it took, or `None` past [`GIVE_UP`].
fn time_until(start: Instant, cond: impl Fn() -> bool) -> Option<Duration> {
    while !cond() {
        if start.elapsed() > GIVE_UP {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Some(start.elapsed())
}

type Members = Vec<(Arc<Node>, Option<Cluster>)>;

fn clusters(members: &Members) -> impl Iterator<Item = &Cluster> {
    members.iter().filter_map(|(_, c)| c.as_ref())
}

fn show(d: Option<Duration>) -> String {
    d.map_or("not reached".into(), |d| {
        format!("{:.0} ms", d.as_secs_f64() * 1e3)
    })
}

fn measure(env: &Environment, n: usize, interval: Duration) {
    let config = |seeds: Vec<String>| {
        ClusterConfig::new(format!("timings-{n}"))
            .seeds(seeds)
            .gossip_interval(interval)
    };
    let start = Instant::now();
    let mut members: Members = Vec::new();
    let mut seed = Vec::new();
    for i in 0..n {
        let node_config = NodeConfig::new(format!("n{i}"))
            .listen("127.0.0.1:0".parse().unwrap())
            .io_threads(1);
        let node = Arc::new(Node::start(env, node_config, Registry::new()).unwrap());
        let cluster = Cluster::join(&node, config(seed.clone())).unwrap();
        if i == 0 {
            seed.push(cluster.gossip_addr().to_string());
        }
        members.push((node, Some(cluster)));
    }
    let converged = time_until(start, || clusters(&members).all(|c| c.members().len() == n));

    let t = Instant::now();
    let sink = Mbox::custom(Sink);
    clusters(&members)
        .last()
        .unwrap()
        .register("probe", &sink)
        .unwrap();
    let visible = time_until(t, || {
        clusters(&members).all(|c| !c.lookup("probe").is_empty())
    });

    let before: u64 = clusters(&members).map(|c| c.stats().bytes_out).sum();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let bytes: u64 = clusters(&members).map(|c| c.stats().bytes_out).sum::<u64>() - before;
    let per_node = bytes as f64 / n as f64 / t.elapsed().as_secs_f64();

    let (victim, cluster) = members.pop().unwrap();
    cluster.unwrap().abort();
    Arc::try_unwrap(victim).map(Node::abort).ok();
    let t = Instant::now();
    let detected = time_until(t, || clusters(&members).all(|c| c.members().len() == n - 1));

    println!(
        "{n} members, gossip every {} ms: converged in {}, a registration visible everywhere in {}, \
         a crash seen by all in {}, gossip {:.0} B/s per member",
        interval.as_millis(),
        show(converged),
        show(visible),
        show(detected),
        per_node
    );
    for (_, c) in &mut members {
        c.take().unwrap().abort();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let counts: Vec<usize> = args.get(1).map_or(vec![3], |a| {
        a.split(',').map(|n| n.parse().unwrap()).collect()
    });
    let interval = Duration::from_millis(args.get(2).map_or(100, |a| a.parse().unwrap()));
    let env = Environment::builder().start().unwrap();
    for n in counts {
        measure(&env.environment(), n, interval);
    }
    env.stop_and_wait();
    println!("done: cluster_timings");
}
