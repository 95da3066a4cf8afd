//! Three hosts: this process, and two children each in a network namespace of its own,
//! all on one bridge through veth pairs (made by the test; skipped, with the reason
//! printed, where namespaces cannot be made). One host is cut off: it sees the others down
//! and they see it down; the link is restored: all up again, its registration back.
//!
//! A child is this test binary run again, inside its namespace, with only `partition_child`
//! selected; it reports its membership events and the pings it receives as `EV ...` lines
//! on its standard output, and exits when its standard input closes.

use crate::common;

use cohort_cluster::Listing;
use cohort_remote::netns::{Bridge, Host, NetnsError};
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(150);
const CHILD: &str = "COHORT_CLUSTER_TEST_PARTITION_CHILD";
const CLUSTER: &str = "partition";

/// The child's body: `name|ip|seed` in [`CHILD`]; a no-op when run as an ordinary test.
#[test]
fn partition_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let [name, ip, seed] = parts[..] else {
        panic!("{CHILD}: name|ip|seed, not {spec:?}");
    };
    let ip: IpAddr = ip.parse().unwrap();
    let env = env();
    let m = join_at(&env, name, "t", ip, detecting(CLUSTER, &[seed.to_string()]));
    let (inbox, pings) = recorder::<Ping>();
    m.cluster().register("svc", &inbox).unwrap();
    // The parent closing our standard input ends us (also when it dies).
    std::thread::spawn(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        std::process::exit(0);
    });
    std::thread::spawn(move || {
        for p in pings {
            println!("EV ping {}", p.0);
            let _ = std::io::stdout().flush();
        }
    });
    for e in m.events.iter() {
        let line = match e {
            Ev::Up(n, _) => format!("EV up {n}"),
            Ev::Left(n) => format!("EV left {n}"),
            Ev::Down(n, _) => format!("EV down {n}"),
        };
        println!("{line}");
        let _ = std::io::stdout().flush();
    }
}

/// A bridge here (host 1) and two namespaces (hosts 2 and 3), each joined to the bridge by
/// a veth pair; all removed when dropped.
struct Hosts {
    // Declared first, so dropped before the bridge they are attached to.
    others: [Host; 2],
    bridge: Bridge,
}

impl Hosts {
    /// 10.79.<net>.0/24: .1 here, .2 and .3 in the namespaces.
    fn create() -> Result<Self, NetnsError> {
        let pid = std::process::id();
        let tag = format!("cc{}", pid % 100_000);
        let addr = |k: u8| Ipv4Addr::new(10, 79, (pid % 250 + 1) as u8, k);
        let bridge = Bridge::create(&format!("{tag}br"), addr(1))?;
        let host = |k: u8| Host::on_bridge(&format!("{tag}n{k}"), &bridge, addr(k));
        let others = [host(2)?, host(3)?];
        Ok(Hosts { others, bridge })
    }

    /// Host `k` (2 or 3).
    fn host(&self, k: u32) -> &Host {
        &self.others[k as usize - 2]
    }

    fn addr(&self, k: u32) -> IpAddr {
        match k {
            1 => self.bridge.addr().into(),
            _ => self.host(k).addr().into(),
        }
    }

    /// Pulls or plugs host `k`'s cable (its veth's bridge side): no FIN, no ICMP.
    fn link(&self, k: u32, up: bool) {
        self.host(k).link(up).unwrap();
    }
}

/// A member in a namespace, and the `EV` lines it printed.
struct Remote {
    child: Child,
    lines: Receiver<String>,
}

impl Remote {
    fn start(hosts: &Hosts, k: u32, name: &str, seed: &str) -> Self {
        let exe = std::env::current_exe().unwrap();
        let mut child = hosts
            .host(k)
            .namespace()
            .command(exe)
            .args(["--exact", &test_name(module_path!(), "partition_child")])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, format!("{name}|{}|{seed}", hosts.addr(k)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(ev) = line.strip_prefix("EV ")
                    && tx.send(ev.to_string()).is_err()
                {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    /// Waits until every one of `want` (`"up b"`, `"down a"`, ...) was printed.
    fn wait(&self, who: &str, want: &[&str]) {
        let deadline = Instant::now() + WAIT;
        let mut missing: Vec<&str> = want.to_vec();
        let mut seen = Vec::new();
        while !missing.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    missing.retain(|w| *w != line);
                    seen.push(line);
                }
                Err(_) => panic!("{who}: no {missing:?} within {WAIT:?}; saw {seen:?}"),
            }
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nodes(l: &Listing) -> Vec<&str> {
    l.nodes()
}

#[test]
fn a_host_cut_off_is_down_on_both_sides_and_back_with_its_registrations_after_healing() {
    let hosts = match Hosts::create() {
        Ok(h) => h,
        Err(e) => {
            println!("skipped: cannot make network namespaces and a bridge here: {e}");
            return;
        }
    };
    watchdog(LIMIT, move || {
        let env = env();
        let a = join_at(&env, "a", "t", hosts.addr(1), detecting(CLUSTER, &[]));
        let (on_a, _pings) = recorder::<Ping>();
        a.cluster().register("svc", &on_a).unwrap();
        let (sub, listings) = recorder();
        a.cluster().subscribe_key("svc", &sub);
        let b = Remote::start(&hosts, 2, "b", &a.seed());
        let c = Remote::start(&hosts, 3, "c", &a.seed());
        wait_up(&a, &["a", "b", "c"]);
        b.wait("b", &["up a", "up c"]);
        c.wait("c", &["up a", "up b"]);
        wait_listing(&listings, "on all three", |l| nodes(l) == ["a", "b", "c"]);

        // Cut c off: each side sees the other down, c's registration goes.
        hosts.link(3, false);
        wait_event(&a, "down of c", |e| matches!(e, Ev::Down(n, _) if n == "c"));
        b.wait("b", &["down c"]);
        c.wait("c", &["down a", "down b"]);
        wait_listing(&listings, "without c", |l| nodes(l) == ["a", "b"]);

        // Heal: up again on both sides, c's registration back, and reachable.
        hosts.link(3, true);
        wait_event(&a, "up of c", |e| matches!(e, Ev::Up(n, _) if n == "c"));
        b.wait("b", &["up c"]);
        c.wait("c", &["up a", "up b"]);
        let back = wait_listing(&listings, "with c again", |l| nodes(l) == ["a", "b", "c"]);
        let entry = back.last().unwrap().entries.iter().find(|e| e.node == "c");
        entry.unwrap().mbox.send(Ping(7));
        c.wait("c", &["ping 7"]);
        // a leaves while the others still run (they acknowledge), then they stop.
        drop(a);
        drop((b, c));
        env.stop_and_wait();
        drop(hosts);
    });
}
