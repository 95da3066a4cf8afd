//! The cluster scenarios, all on loopback in this process:
//!
//! - N members, each with its own cohort-remote node and its own gossip runtime (one
//!   shared agent environment), the default [`ClusterConfig`]: convergence, registration
//!   spread, crash detection and gossip traffic at steady state ([`run_once`]);
//! - gossip alone for hundreds of members on one runtime ([`gossip_only`], [`sim`]);
//! - remote ping-pong between two members, through routing groups against direct proxies
//!   ([`group_route`]), and the same traffic held for a while to count the members the
//!   failure detector wrongly declares down ([`false_downs`]).

use cohort::{Agent, AnyMessage, Context, CustomMbox, DefineError, DeregReason, Environment, Mbox};
use cohort_cluster::{Cluster, ClusterConfig, Routing};
use cohort_remote::{Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

pub mod sim;

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

/// Starts `n` members named `n0`, `n1`, ... of the cluster `name` with the default
/// configuration, the first as everyone's seed.
fn start_members(env: &Environment, n: usize, name: &str) -> Result<Members, String> {
    let mut members = Members(Vec::with_capacity(n));
    let mut seeds = Vec::new();
    for i in 0..n {
        let node_config = NodeConfig::new(format!("n{i}"))
            .token(TOKEN)
            .listen("127.0.0.1:0".parse().expect("a socket address"))
            .io_threads(1);
        let node = Node::start(env, node_config, registry()).map_err(|e| e.to_string())?;
        let node = Arc::new(node);
        let config = ClusterConfig::new(name).token(TOKEN).seeds(seeds.clone());
        let cluster = Cluster::join(&node, config).map_err(|e| e.to_string())?;
        if i == 0 {
            seeds.push(cluster.gossip_addr().to_string());
        }
        members.0.push((node, Some(cluster)));
    }
    Ok(members)
}

const TOKEN: &str = "cohort-bench";

/// What crosses the wire in the ping-pong scenarios.
fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<CPing>("bench.cluster.Ping")
        .and_then(|r| r.register::<CPong>("bench.cluster.Pong"))
        .expect("two distinct names");
    r
}

fn measure(env: &Environment, n: usize, steady: Duration) -> Result<Outcome, String> {
    let start = Instant::now();
    let mut members = start_members(env, n, &format!("bench-{n}"))?;
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

/// The figures of one gossip-only run.
pub struct GossipOutcome {
    /// From the first member's start until every member sees all N live.
    pub converged: Duration,
    /// From the last member's start until every member sees all N live.
    pub after_last_join: Duration,
    /// Gossip bytes sent per member per second over the steady window.
    pub bytes_per_node_per_s: f64,
    /// Receive-buffer drops over the whole run, where the system shows them.
    pub drops: Option<sim::Drops>,
}

/// A gossip-only swarm started as `plan` says; convergence, then traffic over `steady`.
pub fn gossip_only(plan: &sim::Plan, steady: Duration) -> Result<GossipOutcome, String> {
    let n = plan.members;
    let swarm = sim::Swarm::start(&format!("sim-{n}"), plan)?;
    let converged = loop {
        if swarm.min_live() == n {
            break swarm.started.elapsed();
        }
        if swarm.started.elapsed() > GIVE_UP * 3 {
            return Err(format!(
                "{n} gossip-only members: not converged within {} s (least view {}, drops {:?})",
                (GIVE_UP * 3).as_secs(),
                swarm.min_live(),
                swarm.drops()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let after_last_join = converged.saturating_sub(swarm.last_join - swarm.started);
    let before = swarm.bytes_out();
    let t = Instant::now();
    std::thread::sleep(steady);
    let bytes = swarm.bytes_out() - before;
    Ok(GossipOutcome {
        converged,
        after_last_join,
        bytes_per_node_per_s: bytes as f64 / n as f64 / t.elapsed().as_secs_f64(),
        drops: swarm.drops(),
    })
}

/// A ping of the cluster ping-pong.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct CPing;

/// Its pong.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct CPong;

/// Answers every ping with a pong to `reply`.
struct Echo {
    inbox: Mbox,
    reply: Mbox,
}

impl Agent for Echo {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, _: &CPing, _: &mut Context<'_, Self>| me.reply.send(CPong),
        )?;
        Ok(())
    }
}

/// Keeps `in_flight` pings outstanding until `pings` came back.
struct Pinger {
    inbox: Mbox,
    target: Mbox,
    pings: u64,
    sent: u64,
    received: u64,
    in_flight: u64,
    done: mpsc::Sender<()>,
}

impl Agent for Pinger {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(
            &inbox,
            |me: &mut Self, _: &CPong, _: &mut Context<'_, Self>| {
                me.received += 1;
                if me.sent < me.pings {
                    me.sent += 1;
                    me.target.send(CPing);
                } else if me.received == me.pings {
                    let _ = me.done.send(());
                }
            },
        )?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        for _ in 0..self.in_flight.min(self.pings) {
            self.sent += 1;
            self.target.send(CPing);
        }
    }
}

/// What a ping-pong round achieved and cost.
struct RoundCost {
    /// Messages (pings and pongs) per second.
    rate: f64,
    /// Messages written per socket write, over both nodes.
    per_write: f64,
    /// CPU time of the whole process per message written, in nanoseconds.
    cpu_ns: f64,
}

/// How the ping-pong's messages are addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Route {
    /// cohort-remote's proxy of the peer's export (`RemoteNode::mbox`).
    Direct,
    /// `Cluster::group(key, RoundRobin)` with one registration under the key.
    Group,
}

/// Two members of a running cluster set up for ping-pong: `clients` echo inboxes on the
/// server, as many pong inboxes on the client, each exported and registered.
struct PingPong<'a> {
    env: &'a Environment,
    client: (&'a Arc<Node>, &'a Cluster),
    server: (&'a Arc<Node>, &'a Cluster),
    echo: Vec<Mbox>,
    pong: Vec<Mbox>,
}

impl<'a> PingPong<'a> {
    fn new(
        env: &'a Environment,
        members: &'a Members,
        c: usize,
        s: usize,
        clients: usize,
    ) -> Result<Self, String> {
        let pick = |i: usize| {
            let (node, cluster) = &members.0[i];
            (node, cluster.as_ref().expect("a running member"))
        };
        let (client, server) = (pick(c), pick(s));
        let mut echo = Vec::new();
        let mut pong = Vec::new();
        for i in 0..clients {
            let e = server.0.export(&format!("echo-{c}-{i}"));
            server
                .1
                .register(&format!("echo-{c}-{i}"), &e)
                .map_err(|e| e.to_string())?;
            echo.push(e);
            let p = client.0.export(&format!("pong-{c}-{i}"));
            client
                .1
                .register(&format!("pong-{c}-{i}"), &p)
                .map_err(|e| e.to_string())?;
            pong.push(p);
        }
        // Each side sees the other's registrations before a group is used.
        let deadline = Instant::now() + GIVE_UP;
        let last = clients - 1;
        while client.1.lookup(&format!("echo-{c}-{last}")).is_empty()
            || server.1.lookup(&format!("pong-{c}-{last}")).is_empty()
        {
            if Instant::now() > deadline {
                return Err("ping-pong registrations not seen within the time limit".into());
            }
            std::thread::sleep(POLL);
        }
        let pp = PingPong {
            env,
            client,
            server,
            echo,
            pong,
        };
        let peer = pp
            .client
            .0
            .connect(pp.server.0.local_addr().ok_or("server not listening")?)
            .map_err(|e| e.to_string())?;
        drop(peer);
        Ok(pp)
    }

    /// One round, as [`PingPong::round`]; also what it cost, figures that do not move with
    /// the machine's load as the rate does: the messages the two nodes wrote per socket
    /// write (how much their writers batched), and the process's CPU time per message.
    fn round_costed(
        &self,
        route: Route,
        messages: u64,
        in_flight: u64,
        c: usize,
    ) -> Result<RoundCost, String> {
        let written = || {
            let (a, b) = (self.client.0.stats(), self.server.0.stats());
            (a.writes + b.writes, a.messages_out + b.messages_out)
        };
        let cpu = || crate::cpu::threads_named("").unwrap_or_default();
        let ((w0, m0), c0) = (written(), cpu());
        let rate = self.round(route, messages, in_flight, c)?;
        let (c1, (w1, m1)) = (cpu(), written());
        let sent = (m1 - m0).max(1) as f64;
        Ok(RoundCost {
            rate,
            per_write: sent / (w1 - w0).max(1) as f64,
            cpu_ns: (c1.saturating_sub(c0)).as_nanos() as f64 / sent,
        })
    }

    /// One round: every client sends `messages / 2` pings, `in_flight` outstanding; the
    /// messages (pings and pongs) per second.
    fn round(&self, route: Route, messages: u64, in_flight: u64, c: usize) -> Result<f64, String> {
        let clients = self.echo.len();
        let server_name = self.server.0.name().to_string();
        let client_name = self.client.0.name().to_string();
        let to_server = self
            .client
            .0
            .peer(&server_name)
            .ok_or("no connection to the server")?;
        let to_client = self
            .server
            .0
            .wait_for_peer(&client_name, GIVE_UP)
            .ok_or("no connection from the client")?;
        let pings = (messages / 2).max(1);
        let (tx, rx) = mpsc::channel();
        let mut coop = self.env.new_coop();
        for i in 0..clients {
            let (target, reply) = match route {
                Route::Direct => (
                    to_server.mbox(&format!("echo-{c}-{i}")),
                    to_client.mbox(&format!("pong-{c}-{i}")),
                ),
                Route::Group => (
                    self.client
                        .1
                        .group(&format!("echo-{c}-{i}"), Routing::RoundRobin),
                    self.server
                        .1
                        .group(&format!("pong-{c}-{i}"), Routing::RoundRobin),
                ),
            };
            coop.add(Echo {
                inbox: self.echo[i].clone(),
                reply,
            });
            coop.add(Pinger {
                inbox: self.pong[i].clone(),
                target,
                pings,
                sent: 0,
                received: 0,
                in_flight,
                done: tx.clone(),
            });
        }
        let started = Instant::now();
        let handle = self.env.register_coop(coop).map_err(|e| e.to_string())?;
        for _ in 0..clients {
            rx.recv_timeout(GIVE_UP * 5)
                .map_err(|_| format!("ping-pong round ({route:?}) did not finish in time"))?;
        }
        let elapsed = started.elapsed();
        handle.deregister(DeregReason::Normal);
        Ok((pings * 2 * clients as u64) as f64 / elapsed.as_secs_f64())
    }
}

/// The figures of the group-route comparison, one per round: messages per second,
/// messages per socket write, and CPU nanoseconds per message.
pub struct RouteOutcome {
    /// Messages per second through direct proxies.
    pub direct: Vec<f64>,
    /// Messages per second through routing groups.
    pub group: Vec<f64>,
    /// Messages per write through direct proxies.
    pub direct_batch: Vec<f64>,
    /// Messages per write through routing groups.
    pub group_batch: Vec<f64>,
    /// CPU per message through direct proxies.
    pub direct_cpu_ns: Vec<f64>,
    /// CPU per message through routing groups.
    pub group_cpu_ns: Vec<f64>,
}

/// Ping-pong between two members of a 3-member cluster, `rounds` rounds of each route,
/// alternating (direct, group, direct, ...), so that both see the same machine; only the
/// route `only` if given (one route per run, for an instruction count of each).
pub fn group_route(
    rounds: usize,
    clients: usize,
    messages: u64,
    in_flight: u64,
    only: Option<Route>,
) -> Result<RouteOutcome, String> {
    let env = Environment::builder().start().map_err(|e| e.to_string())?;
    let out = group_route_in(
        &env.environment(),
        rounds,
        clients,
        messages,
        in_flight,
        only,
    );
    env.stop_and_wait();
    out
}

fn group_route_in(
    e: &Environment,
    rounds: usize,
    clients: usize,
    messages: u64,
    in_flight: u64,
    only: Option<Route>,
) -> Result<RouteOutcome, String> {
    let members = start_members(e, 3, "route")?;
    wait_converged(&members, 3)?;
    let pp = PingPong::new(e, &members, 0, 1, clients)?;
    let routes = match only {
        Some(route) => vec![route],
        None => vec![Route::Direct, Route::Group],
    };
    // One round each unmeasured: connections and proxies warm.
    for &route in &routes {
        pp.round(route, messages / 10, in_flight, 0)?;
    }
    let mut out = RouteOutcome {
        direct: Vec::new(),
        group: Vec::new(),
        direct_batch: Vec::new(),
        group_batch: Vec::new(),
        direct_cpu_ns: Vec::new(),
        group_cpu_ns: Vec::new(),
    };
    for _ in 0..rounds {
        for &route in &routes {
            let r = pp.round_costed(route, messages, in_flight, 0)?;
            let (rate, batch, cpu) = match route {
                Route::Direct => (
                    &mut out.direct,
                    &mut out.direct_batch,
                    &mut out.direct_cpu_ns,
                ),
                Route::Group => (&mut out.group, &mut out.group_batch, &mut out.group_cpu_ns),
            };
            rate.push(r.rate);
            batch.push(r.per_write);
            cpu.push(r.cpu_ns);
        }
    }
    Ok(out)
}

/// The figures of the false-down run.
pub struct FalseDownOutcome {
    /// `MemberDown` events published by all members together (none of them stopped).
    pub false_downs: u64,
    /// The least member count any member showed at a check (every 100 ms).
    pub least_view: usize,
    /// Ping-pong messages per second over the run.
    pub messages_per_s: f64,
    /// How long the traffic ran.
    pub elapsed: Duration,
}

/// `n` members with the default configuration; ping-pong through groups between members
/// 0 and 1, and between 2 and 3, back to back for `duration`, saturating the CPU. No
/// member stops: every `MemberDown` is a false one.
pub fn false_downs(
    n: usize,
    duration: Duration,
    clients: usize,
) -> Result<FalseDownOutcome, String> {
    let env = Environment::builder().start().map_err(|e| e.to_string())?;
    let out = false_downs_in(&env.environment(), n, duration, clients);
    env.stop_and_wait();
    out
}

fn false_downs_in(
    e: &Environment,
    n: usize,
    duration: Duration,
    clients: usize,
) -> Result<FalseDownOutcome, String> {
    let members = start_members(e, n, "false-downs")?;
    wait_converged(&members, n)?;
    let downs = |m: &Members| m.clusters().map(|c| c.stats().member_downs).sum::<u64>();
    let before = downs(&members);
    let pairs = [
        PingPong::new(e, &members, 0, 1, clients)?,
        PingPong::new(e, &members, 2, 3, clients)?,
    ];
    let least = std::sync::atomic::AtomicUsize::new(n);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let started = Instant::now();
    let total = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let now = members
                    .clusters()
                    .map(|c| c.members().len())
                    .min()
                    .unwrap_or(0);
                least.fetch_min(now, std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let runs: Vec<_> = pairs
            .iter()
            .zip([0usize, 2])
            .map(|(pp, c)| {
                scope.spawn(move || -> Result<f64, String> {
                    let mut messages = 0.0;
                    while started.elapsed() < duration {
                        let t = Instant::now();
                        let rate = pp.round(Route::Group, 20_000, 50, c)?;
                        messages += rate * t.elapsed().as_secs_f64();
                    }
                    Ok(messages)
                })
            })
            .collect();
        let mut total = 0.0;
        let mut err = None;
        for r in runs {
            match r
                .join()
                .unwrap_or_else(|_| Err("a ping-pong thread panicked".into()))
            {
                Ok(m) => total += m,
                Err(e) => err = Some(e),
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = watcher.join();
        err.map_or(Ok(total), Err)
    })?;
    let elapsed = started.elapsed();
    Ok(FalseDownOutcome {
        false_downs: downs(&members) - before,
        least_view: least.into_inner(),
        messages_per_s: total / elapsed.as_secs_f64(),
        elapsed,
    })
}

/// Waits until every member sees `n` up.
fn wait_converged(members: &Members, n: usize) -> Result<Duration, String> {
    time_until(Instant::now(), "convergence", || {
        members.clusters().all(|c| c.members().len() == n)
    })
}
