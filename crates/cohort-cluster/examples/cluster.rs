//! Three processes on loopback forming a cluster, and a group route across it.
//!
//! `cargo run -p cohort-cluster --example cluster` runs the first node, "front", and starts
//! two copies of itself as the nodes "worker-1" and "worker-2" (`cluster worker NAME SEED`),
//! which join through front's gossip address. Each worker registers a mailbox under the
//! key `work`; front sends jobs through `group("work", RoundRobin)`, the workers answer
//! through `group("results", RoundRobin)` (front's registration), then leave gracefully
//! when front broadcasts `Stop`. Front prints what it saw, ending with `done: cluster`.

use cohort::{AnyMessage, CustomMbox, Environment, Mbox};
use cohort_cluster::{Cluster, ClusterConfig, Routing};
use cohort_remote::{Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// A job for a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Job(u32);

/// A worker's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Done {
    worker: String,
    job: u32,
}

/// Tells a worker to leave the cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stop;

const CLUSTER: &str = "example";
const TOKEN: &str = "example-token";
/// How long any step may take before the example gives up (it never hangs CI).
const STEP: Duration = Duration::from_secs(20);

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Job>("example.Job").unwrap();
    r.register::<Done>("example.Done").unwrap();
    r.register::<Stop>("example.Stop").unwrap();
    r
}

/// A mailbox that hands every message it receives to a channel, as an `AnyMessage`.
struct Inbox(Mutex<mpsc::Sender<AnyMessage>>);

impl CustomMbox for Inbox {
    fn deliver(&self, msg: AnyMessage) {
        let _ = self.0.lock().unwrap().send(msg);
    }
}

fn inbox() -> (Mbox, mpsc::Receiver<AnyMessage>) {
    let (tx, rx) = mpsc::channel();
    (Mbox::custom(Inbox(Mutex::new(tx))), rx)
}

/// Starts this process's node and joins the cluster.
fn member(env: &Environment, name: &str, seeds: &[String]) -> (Arc<Node>, Cluster) {
    let config = NodeConfig::new(name)
        .token(TOKEN)
        .listen("127.0.0.1:0".parse().unwrap());
    let node = Arc::new(Node::start(env, config, registry()).unwrap());
    let config = ClusterConfig::new(CLUSTER)
        .token(TOKEN)
        .seeds(seeds.iter().cloned())
        .gossip_interval(Duration::from_millis(100));
    let cluster = Cluster::join(&node, config).unwrap();
    (node, cluster)
}

/// Polls `cond` until true (gossip has no event for "someone else's view changed").
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + STEP;
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {STEP:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn worker(name: &str, seed: &str) {
    let env = Environment::builder().start().unwrap();
    let (_node, cluster) = member(&env.environment(), name, &[seed.to_string()]);
    wait_for("front's results mailbox", || {
        !cluster.lookup("results").is_empty()
    });
    let (work, jobs) = inbox();
    cluster.register("work", &work).unwrap();
    let results = cluster.group("results", Routing::RoundRobin);
    loop {
        let msg = jobs.recv_timeout(STEP).expect("front went away");
        if let Some(Job(n)) = msg.downcast_ref::<Job>() {
            results.send(Done {
                worker: name.to_string(),
                job: *n,
            });
        } else if msg.is::<Stop>() {
            break;
        }
    }
    cluster.leave(); // front sees MemberLeft before this process ends
    env.stop_and_wait();
}

fn front() {
    let env = Environment::builder().start().unwrap();
    let (_node, cluster) = member(&env.environment(), "front", &[]);
    let (results, done) = inbox();
    cluster.register("results", &results).unwrap();
    let seed = cluster.gossip_addr().to_string();
    let me = std::env::current_exe().unwrap();
    let mut children: Vec<_> = ["worker-1", "worker-2"]
        .iter()
        .map(|name| {
            Command::new(&me)
                .args(["worker", name, &seed])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();

    wait_for("both workers registered", || {
        cluster.lookup("work").len() == 2
    });
    let members: Vec<String> = cluster.members().into_iter().map(|m| m.name).collect();
    println!("members: {}", members.join(", "));
    println!(
        "work is served by: {}",
        cluster.lookup("work").nodes().join(", ")
    );

    let work = cluster.group("work", Routing::RoundRobin);
    for n in 1..=6 {
        work.send(Job(n));
    }
    let mut answers: Vec<(u32, String)> = (0..6)
        .map(|_| {
            let msg = done.recv_timeout(STEP).expect("a worker's answer");
            let d = msg.downcast_ref::<Done>().expect("a Done");
            (d.job, d.worker.clone())
        })
        .collect();
    answers.sort();
    for (job, worker) in &answers {
        println!("job {job} done by {worker}");
    }

    cluster.broadcastable::<Stop>();
    cluster.group("work", Routing::Broadcast).send(Stop);
    wait_for("the workers left", || cluster.members().len() == 1);
    for child in &mut children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }
    println!(
        "members after the workers left: {}",
        cluster.members()[0].name
    );
    cluster.leave();
    env.stop_and_wait();
    println!("done: cluster");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("worker") => worker(&args[2], &args[3]),
        _ => front(),
    }
}
