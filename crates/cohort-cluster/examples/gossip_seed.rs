//! Two seeds that are not members (`Gossiper`s, as dedicated seed processes would run
//! them) and three members that join through them: the members find each other, list only
//! each other, and the seeds count everyone.
//!
//! `cargo run -p cohort-cluster --example gossip_seed`

use cohort::Environment;
use cohort_cluster::{Cluster, ClusterConfig, Gossiper};
use cohort_remote::{Node, NodeConfig, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let config = ClusterConfig::new("seeded").gossip_interval(Duration::from_millis(50));
    // The seeds share one tokio runtime; each seed knows the ones before it.
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let mut seeds: Vec<Gossiper> = Vec::new();
    for name in ["seed-1", "seed-2"] {
        let known: Vec<String> = seeds.iter().map(|s| s.gossip_addr().to_string()).collect();
        let seed = runtime
            .block_on(Gossiper::start(name, &config.clone().seeds(known)))
            .expect("a gossip socket on loopback");
        seeds.push(seed);
    }
    let seed_addrs: Vec<String> = seeds.iter().map(|s| s.gossip_addr().to_string()).collect();

    let env = Environment::builder().start().expect("an environment");
    let members: Vec<(Arc<Node>, Cluster)> = ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            let node_config = NodeConfig::new(name).listen("127.0.0.1:0".parse().unwrap());
            let node = Arc::new(
                Node::start(&env.environment(), node_config, Registry::new()).expect("a node"),
            );
            let cluster =
                Cluster::join(&node, config.clone().seeds(seed_addrs.clone())).expect("joined");
            (node, cluster)
        })
        .collect();

    let deadline = Instant::now() + Duration::from_secs(30);
    let converged = || {
        members.iter().all(|(_, c)| c.members().len() == 3) && seeds.iter().all(|s| s.live() == 5)
    };
    while !converged() {
        assert!(Instant::now() < deadline, "no convergence within 30 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    let names: Vec<String> = members[0].1.members().into_iter().map(|m| m.name).collect();
    println!("a lists the members {names:?}; the seeds are not among them");
    for (seed, name) in seeds.iter().zip(["seed-1", "seed-2"]) {
        println!(
            "{name} sees {} participants live, {} gossip bytes sent",
            seed.live(),
            seed.stats().bytes_out
        );
    }
    for (_, cluster) in members {
        cluster.leave();
    }
    drop(seeds);
    runtime.shutdown_timeout(Duration::from_secs(1));
    env.stop_and_wait();
    println!("done: gossip_seed");
}
