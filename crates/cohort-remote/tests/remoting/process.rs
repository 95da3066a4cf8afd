//! A peer in another process: killed and restarted (reconnection), and on another "host"
//! (a network namespace joined by a veth pair) whose link is cut and restored.
//!
//! The peer is the `two_processes` example in its `serve` mode, which cargo builds with the
//! tests.

use crate::common;

use cohort::Environment;
use cohort_remote::netns::Host;
use cohort_remote::{Node, NodeConfig, NodeDown, NodeUp, Registry};
use common::*;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Greeting {
    from: String,
    n: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Reply {
    n: u64,
    text: String,
}

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Greeting>("example.Greeting").unwrap();
    r.register::<Reply>("example.Reply").unwrap();
    r
}

/// The example binary, next to this test's directory (target/<profile>/examples).
fn example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe
        .parent()?
        .parent()?
        .join("examples")
        .join("two_processes");
    p.exists().then_some(p)
}

/// A greeter process; killed when dropped.
struct Greeter {
    child: Child,
    addr: String,
}

impl Greeter {
    fn start(prefix: &[&str], addr: &str, heartbeat_ms: u64) -> Self {
        let exe = example().expect(
            "the two_processes example: `cargo test -p cohort-remote` builds it (a `--test` filter does not)",
        );
        let mut cmd = Command::new(prefix.first().copied().unwrap_or(exe.to_str().unwrap()));
        if !prefix.is_empty() {
            cmd.args(&prefix[1..]).arg(&exe);
        }
        let mut child = cmd
            .args(["serve", addr, &heartbeat_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the greeter");
        let out = child.stdout.take().unwrap();
        let line = BufReader::new(out).lines().next().unwrap().unwrap();
        let addr = line
            .strip_prefix("LISTEN ")
            .expect("LISTEN <addr>")
            .to_string();
        Self { child, addr }
    }

    /// kill -9: no goodbye.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Greeter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Visitor {
    env: cohort::WrappedEnv,
    node: Node,
    replies: std::sync::mpsc::Receiver<Reply>,
    ups: std::sync::mpsc::Receiver<NodeUp>,
    downs: std::sync::mpsc::Receiver<NodeDown>,
}

fn visitor(config: NodeConfig) -> Visitor {
    let env = Environment::builder().start().unwrap();
    let e = env.environment();
    let node = Node::start(&e, config.token("example-secret"), registry()).unwrap();
    let replies = probe::<Reply>(&e, node.export("replies"));
    let ups = probe::<NodeUp>(&e, node.events_mbox());
    let downs = probe::<NodeDown>(&e, node.events_mbox());
    Visitor {
        env,
        node,
        replies,
        ups,
        downs,
    }
}

impl Visitor {
    fn greet(&self, n: u64) {
        let greeter = self.node.peer("greeter").expect("connected once");
        greeter.mbox("greetings").send(Greeting {
            from: "visitor".into(),
            n,
        });
        assert_eq!(recv(&self.replies, "the greeter's reply").n, n);
    }

    fn end(self) {
        self.node.shutdown();
        self.env.stop_and_wait();
    }
}

#[test]
fn reconnects_after_the_peer_process_is_killed_and_restarted() {
    watchdog(TIMEOUT, || {
        let greeter = Greeter::start(&[], "127.0.0.1:0", 1000);
        let addr = greeter.addr.clone();
        let v = visitor(
            NodeConfig::new("visitor")
                .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200)),
        );
        v.node.connect(&addr).unwrap();
        assert_eq!(recv(&v.ups, "node up").node, "greeter");
        v.greet(1);

        greeter.kill();
        let down = recv(&v.downs, "node down after kill -9");
        assert_eq!(down.node, "greeter");

        let _greeter = Greeter::start(&[], &addr, 1000); // same address
        assert_eq!(recv(&v.ups, "node up after the restart").node, "greeter");
        v.greet(2);
        v.end();
    });
}

#[test]
fn a_cut_link_between_two_hosts_is_detected_and_the_connection_restored() {
    // 10.77.9.1 here, 10.77.9.2 on the other host.
    let name = format!("cht{}", std::process::id() % 10_000);
    let host = match Host::joined(&name, [10, 77, 9, 1].into(), [10, 77, 9, 2].into()) {
        Ok(host) => host,
        Err(e) => {
            println!("skipped: cannot make a network namespace here: {e}");
            return;
        }
    };
    watchdog(TIMEOUT * 2, move || {
        let at = format!("{}:7801", host.addr());
        let greeter = Greeter::start(&host.namespace().exec_prefix(), &at, 100);
        // The greeter heartbeats every 100 ms too; a dial into the cut link gives up sooner,
        // and the redial after healing comes within 200 ms.
        let v = visitor(
            NodeConfig::new("visitor")
                .fast_failure_detection()
                .handshake_timeout(Duration::from_millis(500))
                .reconnect_backoff(Duration::from_millis(50), Duration::from_millis(200)),
        );
        v.node.connect(&greeter.addr).unwrap();
        assert_eq!(recv(&v.ups, "node up").node, "greeter");
        v.greet(1);

        host.link(false).unwrap(); // the cable is pulled: no FIN, no RST, just silence
        let down = recv(&v.downs, "node down after the link was cut");
        assert!(down.reason.contains("failure detector"), "{}", down.reason);

        host.link(true).unwrap();
        assert_eq!(
            recv(&v.ups, "node up after the link came back").node,
            "greeter"
        );
        v.greet(2);
        v.end();
        drop(greeter);
        drop(host);
    });
}
