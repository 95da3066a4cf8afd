//! Helpers of the cluster tests: nodes on loopback with fast gossip, event and listing
//! recorders, a watchdog.

#![allow(dead_code)]

use cohort::{Agent, AnyMessage, Context, CustomMbox, DefineError, Environment, Mbox, WrappedEnv};
use cohort_cluster::{Cluster, ClusterConfig, Listing, MemberDown, MemberLeft, MemberUp};
use cohort_remote::{Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Generous: CI shares two cores with other work.
pub const WAIT: Duration = Duration::from_secs(40);

pub use cohort::testing::watchdog;

/// A message that crosses the wire in routing tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ping(pub u32);

/// A membership event, as a test sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Up(String, u64),
    Left(String),
    Down(String, String),
}

struct EventSink {
    events: Mbox,
    tx: Sender<Ev>,
}

impl Agent for EventSink {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let events = self.events.clone();
        ctx.subscribe(
            &events,
            |me: &mut Self, e: &MemberUp, _: &mut Context<'_, Self>| {
                let _ = me
                    .tx
                    .send(Ev::Up(e.member.name.clone(), e.member.incarnation));
            },
        )?;
        ctx.subscribe(
            &events,
            |me: &mut Self, e: &MemberLeft, _: &mut Context<'_, Self>| {
                let _ = me.tx.send(Ev::Left(e.member.name.clone()));
            },
        )?;
        ctx.subscribe(
            &events,
            |me: &mut Self, e: &MemberDown, _: &mut Context<'_, Self>| {
                let _ = me
                    .tx
                    .send(Ev::Down(e.member.name.clone(), e.reason.clone()));
            },
        )?;
        Ok(())
    }
}

/// A mailbox that hands every `T` it receives to a channel.
pub struct Recorder<T>(Mutex<Sender<T>>);

impl<T: Clone + Send + 'static> CustomMbox for Recorder<T> {
    fn deliver(&self, msg: AnyMessage) {
        if let Some(v) = msg.downcast_ref::<T>() {
            let _ = self.0.lock().unwrap().send(v.clone());
        }
    }
}

/// A recording mailbox and its channel.
pub fn recorder<T: Clone + Send + Sync + 'static>() -> (Mbox, Receiver<T>) {
    let (tx, rx) = mpsc::channel();
    (Mbox::custom(Recorder(Mutex::new(tx))), rx)
}

pub fn env() -> WrappedEnv {
    Environment::builder().start().unwrap()
}

pub fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Ping>("test.Ping").unwrap();
    r
}

pub fn node(env: &WrappedEnv, name: &str, token: &str) -> Arc<Node> {
    node_at(env, name, token, LOOPBACK)
}

pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A node listening on `ip` (a port the system picks).
pub fn node_at(env: &WrappedEnv, name: &str, token: &str, ip: IpAddr) -> Arc<Node> {
    let config = NodeConfig::new(name)
        .token(token)
        .listen(SocketAddr::new(ip, 0));
    Arc::new(Node::start(&env.environment(), config, registry()).unwrap())
}

/// Gossip every 100 ms (short tests) for tests in which no member may go down: the
/// threshold of 10,000 heartbeat intervals (over fifteen minutes of silence) means a
/// member stalled by a loaded machine is never declared down, so no test can fail on a
/// false `MemberDown`. Leaves are announced in gossip, not detected: they work at any
/// threshold.
pub fn config(cluster: &str, seeds: &[String]) -> ClusterConfig {
    ClusterConfig::new(cluster)
        .seeds(seeds.iter().cloned())
        .gossip_interval(Duration::from_millis(100))
        .phi_threshold(10_000.0)
        .leave_timeout(Duration::from_secs(10))
}

/// For tests that wait for a member to be declared down (crash, kill, partition): phi 30
/// at 100 ms declares a silent member down after about 3 s. A member stalled that long by
/// the machine would be declared down too (and up again once heard): these tests assert
/// only about the member they stop or cut off, and wait for final states, so such a false
/// down of another member cannot fail them.
pub fn detecting(cluster: &str, seeds: &[String]) -> ClusterConfig {
    config(cluster, seeds).phi_threshold(30.0)
}

/// A member with its event channel (subscribed before the join, so nothing is missed).
pub struct Member {
    pub node: Arc<Node>,
    pub cluster: Option<Cluster>,
    pub events: Receiver<Ev>,
}

impl Member {
    pub fn cluster(&self) -> &Cluster {
        self.cluster.as_ref().unwrap()
    }
    pub fn seed(&self) -> String {
        self.cluster().gossip_addr().to_string()
    }
}

pub fn join(env: &WrappedEnv, name: &str, config: ClusterConfig) -> Member {
    join_with_token(env, name, "t", config)
}

pub fn join_with_token(env: &WrappedEnv, name: &str, token: &str, config: ClusterConfig) -> Member {
    join_at(env, name, token, LOOPBACK, config)
}

/// A member whose node listens and gossips on `ip`.
pub fn join_at(
    env: &WrappedEnv,
    name: &str,
    token: &str,
    ip: IpAddr,
    config: ClusterConfig,
) -> Member {
    let node = node_at(env, name, token, ip);
    let config = config.gossip_listen(SocketAddr::new(ip, 0));
    let (tx, rx) = mpsc::channel();
    let mut coop = env.environment().new_coop();
    coop.add(EventSink {
        events: env
            .environment()
            .named_mbox(&cohort_cluster::events_mbox_name(name)),
        tx,
    });
    env.environment().register_coop(coop).unwrap();
    let cluster = Cluster::join(&node, config.token(token)).unwrap();
    Member {
        node,
        cluster: Some(cluster),
        events: rx,
    }
}

/// Waits for an event matching `pred`; returns the events seen before it.
pub fn wait_event(m: &Member, what: &str, pred: impl Fn(&Ev) -> bool) -> Vec<Ev> {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match m.events.recv_timeout(left) {
            Ok(e) if pred(&e) => return seen,
            Ok(e) => seen.push(e),
            Err(_) => panic!("no event {what} within {WAIT:?}; saw {seen:?}"),
        }
    }
}

/// Waits until `m` has seen every name in `names` up.
pub fn wait_up(m: &Member, names: &[&str]) {
    let mut missing: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    while !missing.is_empty() {
        wait_event(
            m,
            &format!("up of {missing:?}"),
            |e| matches!(e, Ev::Up(n, _) if missing.contains(n)),
        );
        missing.retain(|n| !m.cluster().members().iter().any(|x| &x.name == n));
    }
}

/// Waits for a listing matching `pred` on a subscription channel.
pub fn wait_listing(
    rx: &Receiver<Listing>,
    what: &str,
    pred: impl Fn(&Listing) -> bool,
) -> Vec<Listing> {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if pred(&l) => {
                seen.push(l);
                return seen;
            }
            Ok(l) => seen.push(l),
            Err(_) => panic!(
                "no listing {what} within {WAIT:?}; saw {:?}",
                seen.iter().map(|l| l.nodes()).collect::<Vec<_>>()
            ),
        }
    }
}

/// Polls `cond` until true, at most [`WAIT`] (for counters, which have no event).
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "{what} not reached within {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The name the test harness knows the test `test` of the module `module` (its
/// `module_path!()`) by, for running this binary again with only that test: the path
/// without the binary's own name.
pub fn test_name(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_string(),
    }
}

/// A loopback UDP address nobody listens on (bound, then freed).
pub fn dead_addr() -> String {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().to_string()
}
