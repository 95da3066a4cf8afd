//! Chaos for remoting: nodes exchanging numbered messages while faults are
//! injected, one kind per phase, each phase checked by an independent ledger
//! (`cohort::testing::ledger`): every message handled once or counted with its reason, none
//! handled twice, each sender's messages handled in order.
//!
//! A phase of a network fault runs a mesh of nodes in this process (each its own
//! environment), every pair joined by one connection through a fault-injecting proxy
//! (`proxy`), ten senders per node sending to the sinks of the other nodes; the fault goes
//! on the first link. A phase of a process fault runs a sending node here and a receiving
//! node in a child process (`child`), killed with `kill -9` and restarted, or in a network
//! namespace whose veth link goes down. `faults` draws the schedule.
//!
//! What a killed process had acknowledged and not yet handled dies with its queues (at most
//! once: nothing is resent); the report counts it apart, as what the sending node's
//! counters say it acknowledged minus what the child recorded before dying.

pub mod child;
pub mod faults;
pub mod nodes;
pub mod proxy;

use child::{ChildNode, Netns};
use cohort::DeliveryFailure;
use cohort::testing::ledger::Violation;
use cohort_remote::{Node, Overflow};
use faults::{FaultKind, Phase, Rng, backoff_in_force};
use nodes::{
    BACKOFF_MAX, BACKOFF_MIN, Books, Mesh, SINK, Senders, environment, member_name, node_config,
    registry, wait_for,
};
use proxy::Mode;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What a run is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Total length, seconds (every kind runs at least once however short).
    pub secs: f64,
    /// Nodes of the mesh (2-4).
    pub nodes: usize,
    /// Senders per node.
    pub senders: u32,
    /// Messages per second per sender.
    pub rate: f64,
    /// The kinds to cycle through.
    pub kinds: Vec<FaultKind>,
    /// The schedule's seed.
    pub seed: u64,
}

/// The child node's name.
const CHILD: &str = "chaos-child";
/// The sending node of a process phase.
const KILLER: &str = "chaos-k";
/// How long a peer may take to come back, or to be declared down, before the phase fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// What the phases of one fault kind found, together.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Phases run.
    pub phases: u64,
    /// Messages numbered.
    pub sent: u64,
    /// Messages handled (a duplicate counts twice).
    pub handled: u64,
    /// Undelivered messages by reason, as the runtime counted them.
    pub dead: BTreeMap<String, u64>,
    /// Messages neither handled nor counted (must be 0).
    pub unaccounted: u64,
    /// Messages handled twice (must be 0).
    pub duplicates: u64,
    /// Messages handled after a later one of the same sender (must be 0).
    pub reorders: u64,
    /// Other ledger violations: a number never sent, handled and counted dead (must be 0).
    pub other: u64,
    /// Reconnections: (measured from the heal, the backoff in force then).
    pub reconnects: Vec<(Duration, Duration)>,
    /// Time until the sending side declared its silent or dead peer down.
    pub detections: Vec<Duration>,
    /// Phases that could not run or whose peer never came back.
    pub errors: Vec<String>,
}

impl Tally {
    /// Whether every must-be-0 count is 0 and every phase ran.
    pub fn clean(&self) -> bool {
        self.unaccounted == 0
            && self.duplicates == 0
            && self.reorders == 0
            && self.other == 0
            && self.errors.is_empty()
    }

    /// Adds a phase's books: the counts and what the ledger found.
    fn settle(&mut self, books: &Books) {
        self.phases += 1;
        self.sent += books.sent.load(Ordering::Relaxed);
        self.handled += books.handled.load(Ordering::Relaxed);
        for (k, v) in books.dead.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            *self.dead.entry(k.clone()).or_default() += v;
        }
        if let Err(violations) = books.ledger.check() {
            for v in violations {
                match v {
                    Violation::Lost {
                        missing, counted, ..
                    } => self.unaccounted += missing - counted,
                    Violation::Duplicate { .. } => self.duplicates += 1,
                    Violation::Reordered { .. } => self.reorders += 1,
                    other => {
                        eprintln!("chaos: ledger: {other:?}");
                        self.other += 1;
                    }
                }
            }
        }
    }
}

/// A whole run: per kind its tally, and notes on what could not be run here.
#[derive(Debug, Default)]
pub struct Report {
    /// Per fault kind.
    pub kinds: BTreeMap<FaultKind, Tally>,
    /// Lines for the output's head (namespaces, netem).
    pub notes: Vec<String>,
    /// Wall time.
    pub elapsed: Duration,
}

impl Report {
    /// Whether every kind is clean.
    pub fn clean(&self) -> bool {
        self.kinds.values().all(Tally::clean)
    }
}

/// Runs the chaos: phases in turn until `secs` passed and every kind ran once.
pub fn run(o: &Options) -> Result<Report, String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("chaos-proxy")
        .enable_all()
        .build()
        .map_err(|e| format!("the proxies' runtime: {e}"))?;
    let mut report = Report::default();
    let mut kinds = o.kinds.clone();
    let netns = if kinds.contains(&FaultKind::LinkDown) {
        match Netns::create() {
            Ok(ns) => {
                report.notes.push(format!(
                    "link-down: a network namespace with a veth link ({})",
                    ns.addr()
                ));
                report.notes.push(ns.netem.clone());
                Some(ns)
            }
            Err(e) => {
                report.notes.push(format!(
                    "link-down: skipped: cannot make a network namespace here: {e}"
                ));
                kinds.retain(|k| *k != FaultKind::LinkDown);
                None
            }
        }
    } else {
        None
    };
    if netns.is_none() {
        report.notes.push(
            "netem: not tried (no namespace); these kernels have no sch_netem, the proxy injects delay, jitter and bandwidth caps".into(),
        );
    }
    if kinds.is_empty() {
        return Err("no fault kind left to run".into());
    }
    let total = Duration::from_secs_f64(o.secs);
    let phase_len =
        (total / kinds.len() as u32).clamp(Duration::from_secs(2), Duration::from_secs(15));
    let mut rng = Rng::new(o.seed);
    let start = Instant::now();
    let mut i = 0;
    while i < kinds.len() || start.elapsed() + phase_len / 2 < total {
        let ph = faults::phase(&kinds, i, phase_len, &mut rng);
        let tally = report.kinds.entry(ph.kind).or_default();
        let before = (tally.sent, tally.handled);
        let outcome = if ph.kind.needs_child() {
            process_phase(rt.handle(), o, ph, phase_len, netns.as_ref(), tally)
        } else {
            mesh_phase(rt.handle(), o, ph, phase_len, tally)
        };
        if let Err(e) = outcome {
            tally
                .errors
                .push(format!("phase {i} ({}): {e}", ph.kind.label()));
        }
        eprintln!(
            "chaos: phase {i} {} (hold {:.1} s): sent {}, handled {}{}",
            ph.kind.label(),
            ph.hold.as_secs_f64(),
            tally.sent - before.0,
            tally.handled - before.1,
            if tally.clean() { "" } else { ", NOT CLEAN" }
        );
        i += 1;
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

/// Sleeps until `at` (the phase's schedule: traffic before and after a fault).
fn until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}

/// A network fault on the first link of a mesh in this process.
fn mesh_phase(
    rt: &tokio::runtime::Handle,
    o: &Options,
    ph: Phase,
    phase_len: Duration,
    tally: &mut Tally,
) -> Result<(), String> {
    let t_start = Instant::now();
    let mut names: Vec<String> = (0..o.nodes)
        .flat_map(|i| (0..o.senders).map(move |k| format!("{}/s{k}", member_name(i))))
        .collect();
    // The full queue's flooding sender, last.
    names.push(format!("{}/flood", member_name(0)));
    let books = Books::new(names);
    let full_queue = ph.kind == FaultKind::FullQueue;
    let mesh = Mesh::start(rt, &books, o.nodes, |i, c| {
        if full_queue && i == 0 {
            // Small enough to fill during the stall; the oldest queued is dropped, counted.
            c.outbound_capacity(256).overflow(Overflow::DropOldest)
        } else {
            c
        }
    })?;
    let senders: Vec<Senders> = (0..o.nodes)
        .map(|i| {
            Senders::start(
                &books,
                i as u32 * o.senders,
                o.senders,
                &mesh.targets(i),
                o.rate,
            )
        })
        .collect();
    let result = mesh_fault(&mesh, &books, o, ph, phase_len, t_start, tally);
    for s in senders {
        s.stop();
    }
    for l in &mesh.links {
        l.proxy.set_mode(Mode::Pass);
        l.proxy.refuse(false);
    }
    // A graceful end where the links are up again: what is queued is written and acked.
    let up = wait_for(PATIENCE, || mesh.all_up());
    mesh.stop();
    tally.settle(&books);
    result?;
    up.map(|_| ())
        .ok_or_else(|| "a link did not come back up at the end".into())
}

fn mesh_fault(
    mesh: &Mesh,
    books: &std::sync::Arc<Books>,
    o: &Options,
    ph: Phase,
    phase_len: Duration,
    t_start: Instant,
    tally: &mut Tally,
) -> Result<(), String> {
    wait_for(PATIENCE, || {
        mesh.members
            .iter()
            .all(|m| m.handled.load(Ordering::Acquire) > 0)
    })
    .ok_or("no traffic reached every sink")?;
    until(t_start + phase_len.mul_f64(0.2));
    let link = &mesh.links[0];
    let p = &link.proxy;
    let hold = ph.hold;
    match ph.kind {
        FaultKind::Delay => {
            p.set_mode(Mode::Delay {
                base: Duration::from_millis(20),
                jitter: Duration::from_millis(30),
            });
            std::thread::sleep(hold);
            p.set_mode(Mode::Pass);
        }
        FaultKind::Bandwidth => {
            p.set_mode(Mode::Bandwidth(32 * 1024));
            std::thread::sleep(hold);
            p.set_mode(Mode::Pass);
        }
        FaultKind::Stall => {
            p.set_mode(Mode::Stall);
            std::thread::sleep(hold);
            p.set_mode(Mode::Pass);
        }
        FaultKind::FullQueue => {
            // The socket buffers hold megabytes: a sender as fast as it can fills them
            // and then the queue.
            p.set_mode(Mode::Hold);
            let to = [(
                mesh.members[link.dialled].name.clone(),
                link.forward.mbox(SINK),
            )];
            let flood = Senders::start(books, o.nodes as u32 * o.senders, 1, &to, f64::INFINITY);
            std::thread::sleep(hold);
            flood.stop();
            p.set_mode(Mode::Pass);
        }
        FaultKind::ReceiverStall => {
            mesh.members[link.dialled]
                .stall
                .store(hold.as_nanos() as u64, Ordering::Release);
            std::thread::sleep(hold);
        }
        FaultKind::Reset => {
            p.reset();
            wait_for(PATIENCE, || !link.forward.is_up())
                .ok_or("the reset connection was never seen down")?;
            let up = wait_for(PATIENCE, || link.forward.is_up())
                .ok_or("no reconnection after the reset")?;
            tally.reconnects.push((
                up,
                backoff_in_force(Duration::ZERO, BACKOFF_MIN, BACKOFF_MAX),
            ));
        }
        FaultKind::HalfOpen => {
            p.half_open();
            let detected = wait_for(PATIENCE, || !link.forward.is_up())
                .ok_or("the sending side never declared its silent peer down")?;
            tally.detections.push(detected);
            // Releases the socket the proxy kept open.
            p.reset();
            let up = wait_for(PATIENCE, || link.forward.is_up())
                .ok_or("no reconnection after the half-open connection")?;
            tally.reconnects.push((
                up,
                backoff_in_force(Duration::ZERO, BACKOFF_MIN, BACKOFF_MAX),
            ));
        }
        FaultKind::Cut => {
            p.refuse(true);
            p.reset();
            let t_cut = Instant::now();
            std::thread::sleep(hold);
            p.refuse(false);
            let healed = t_cut.elapsed();
            let up = wait_for(PATIENCE, || link.forward.is_up())
                .ok_or("no reconnection after the healed cut")?;
            tally
                .reconnects
                .push((up, backoff_in_force(healed, BACKOFF_MIN, BACKOFF_MAX)));
        }
        FaultKind::Kill | FaultKind::LinkDown => {
            return Err("a process fault in a mesh phase".into());
        }
    }
    until(t_start + phase_len);
    Ok(())
}

/// A receiving node in a child process, killed and restarted or cut off by its link.
fn process_phase(
    rt: &tokio::runtime::Handle,
    o: &Options,
    ph: Phase,
    phase_len: Duration,
    netns: Option<&Netns>,
    tally: &mut Tally,
) -> Result<(), String> {
    let t_start = Instant::now();
    let names = (0..o.senders).map(|k| format!("{KILLER}/s{k}")).collect();
    let books = Books::new(names);
    let env = environment(&books)?;
    let node = Node::start(&env.environment(), node_config(KILLER), registry())
        .map_err(|e| format!("node {KILLER}: {e}"))?;
    let (prefix, listen) = match (ph.kind, netns) {
        (FaultKind::LinkDown, Some(ns)) => (ns.prefix(), format!("{}:0", ns.addr())),
        (FaultKind::LinkDown, None) => return Err("no network namespace".into()),
        _ => (Vec::new(), "127.0.0.1:0".to_owned()),
    };
    let mut child = ChildNode::spawn(&prefix, CHILD, &listen, &books)?;
    let proxy = match ph.kind {
        FaultKind::Kill => Some(proxy::Proxy::start(rt, child.addr)?),
        _ => None,
    };
    let dial = proxy.as_ref().map_or(child.addr, |p| p.addr());
    let peer = node
        .connect(dial)
        .map_err(|e| format!("{KILLER} dials {CHILD}: {e}"))?;
    let senders = Senders::start(
        &books,
        0,
        o.senders,
        &[(CHILD.to_owned(), peer.mbox(SINK))],
        o.rate,
    );
    let mut lost_with_process = 0;
    let result = (|| -> Result<(), String> {
        wait_for(PATIENCE, || child.recorded.load(Ordering::Acquire) > 0)
            .ok_or("no traffic reached the child")?;
        until(t_start + phase_len.mul_f64(0.2));
        match ph.kind {
            FaultKind::Kill => {
                let (recorded, dead) = (child.recorded.clone(), child.dead.clone());
                let t_kill = Instant::now();
                child.kill();
                wait_for(PATIENCE, || !peer.is_up())
                    .ok_or("the killed node was never declared down")?;
                tally.detections.push(t_kill.elapsed());
                child = ChildNode::spawn(&prefix, CHILD, &listen, &books)?;
                // Everything written so far went on the connection that ended, and nothing
                // is written until the proxy reaches the new process.
                let st = node.stats();
                let acked = st.messages_out - st.in_doubt;
                let handled = recorded.load(Ordering::Acquire) + dead.load(Ordering::Acquire);
                lost_with_process = acked.saturating_sub(handled);
                if let Some(p) = &proxy {
                    p.set_upstream(child.addr);
                }
                let healed = t_kill.elapsed();
                let up = wait_for(PATIENCE, || peer.is_up())
                    .ok_or("no reconnection to the restarted node")?;
                tally
                    .reconnects
                    .push((up, backoff_in_force(healed, BACKOFF_MIN, BACKOFF_MAX)));
            }
            FaultKind::LinkDown => {
                let ns = netns.ok_or("no network namespace")?;
                ns.link(false)?;
                let t_cut = Instant::now();
                let detected = wait_for(ph.hold + PATIENCE, || !peer.is_up());
                until(t_cut + ph.hold);
                ns.link(true)?;
                let detected = detected.ok_or("the cut-off node was never declared down")?;
                tally.detections.push(detected);
                let healed = t_cut.elapsed();
                let up = wait_for(PATIENCE, || peer.is_up())
                    .ok_or("no reconnection after the link came back")?;
                // A dial into a dead link waits out its connect timeout before the backoff.
                let allowed =
                    backoff_in_force(healed.saturating_sub(detected), BACKOFF_MIN, BACKOFF_MAX)
                        + Duration::from_secs(1);
                tally.reconnects.push((up, allowed));
            }
            _ => return Err("a network fault in a process phase".into()),
        }
        until(t_start + phase_len);
        Ok(())
    })();
    senders.stop();
    let up = wait_for(PATIENCE, || peer.is_up());
    drop(peer);
    node.shutdown();
    child.finish();
    env.stop_and_wait();
    drop(proxy);
    for _ in 0..lost_with_process {
        books.dead_letter(
            DeliveryFailure::ReceiverGone,
            "lost with the killed process",
        );
    }
    tally.settle(&books);
    result?;
    up.map(|_| ())
        .ok_or_else(|| "the child's link did not come back up at the end".into())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// p50 and max of `v`, in ms ("-" when empty).
fn p50_max(v: &[Duration]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let mut s = v.to_vec();
    s.sort();
    format!("{:.0} / {:.0}", ms(s[s.len() / 2]), ms(s[s.len() - 1]))
}

/// The report as markdown: one row per kind, then the notes and the verdict.
pub fn print(r: &Report, o: &Options) {
    println!(
        "chaos: {:.0} s, {} nodes in the mesh, {} senders per node at {} msg/s each, seed {}",
        r.elapsed.as_secs_f64(),
        o.nodes,
        o.senders,
        o.rate,
        o.seed
    );
    for n in &r.notes {
        println!("{n}");
    }
    println!();
    println!(
        "| fault | phases | sent | handled | undelivered, by reason | unaccounted | duplicates | FIFO violations | reconnect p50 / max ms | worst reconnect / backoff | down detected p50 / max ms |"
    );
    println!("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut total = Tally::default();
    for (kind, t) in &r.kinds {
        let dead = if t.dead.is_empty() {
            "-".to_owned()
        } else {
            t.dead
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let rec: Vec<Duration> = t.reconnects.iter().map(|r| r.0).collect();
        let worst = t
            .reconnects
            .iter()
            .map(|(m, b)| m.as_secs_f64() / b.as_secs_f64())
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            kind.label(),
            t.phases,
            t.sent,
            t.handled,
            dead,
            t.unaccounted,
            t.duplicates,
            t.reorders + t.other,
            p50_max(&rec),
            worst.map_or("-".into(), |w| format!("{w:.2}x")),
            p50_max(&t.detections),
        );
        total.unaccounted += t.unaccounted;
        total.duplicates += t.duplicates;
        total.reorders += t.reorders + t.other;
        total.errors.extend(t.errors.iter().cloned());
        total.reconnects.extend(t.reconnects.iter().copied());
    }
    println!();
    for e in &total.errors {
        println!("error: {e}");
    }
    let over = total.reconnects.iter().filter(|(m, b)| *m > *b * 2).count();
    println!(
        "reconnects over 2x the backoff in force ({:?} doubling to {:?}): {over} of {}",
        BACKOFF_MIN,
        BACKOFF_MAX,
        total.reconnects.len()
    );
    println!(
        "chaos: {}: unaccounted {}, duplicates {}, FIFO violations {}, phase errors {}",
        if r.clean() { "clean" } else { "FAILED" },
        total.unaccounted,
        total.duplicates,
        total.reorders,
        total.errors.len()
    );
}
