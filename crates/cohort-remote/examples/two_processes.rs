//! Two processes on loopback exchanging messages through named mailboxes.
//!
//! `cargo run --release -p cohort-remote --example two_processes` starts a copy of itself as
//! the "greeter" node (`two_processes serve 127.0.0.1:0`), connects to it as the "visitor"
//! node, sends greetings to the greeter's exported mailbox `greetings`, and prints the
//! replies that come back to its own exported mailbox `replies`.
//!
//! `two_processes serve ADDR [HEARTBEAT_MS]` runs the greeter alone: it prints
//! `LISTEN <addr>` and serves until its standard input closes (the tests of
//! cohort-remote kill and restart it, and run it in another network namespace).

use cohort::{Agent, Context, DefineError, Environment, Mbox};
use cohort_remote::{Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// Sent by a visitor to the greeter's `greetings` mailbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Greeting {
    from: String,
    n: u64,
}

/// Sent back by the greeter to the visitor's `replies` mailbox.
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

/// Answers every greeting through the sender node's `replies` mailbox.
struct Greeter {
    inbox: Mbox,
    node: Arc<Node>,
}

impl Agent for Greeter {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(&inbox, |me, g: &Greeting, _| {
            if let Some(visitor) = me.node.peer(&g.from) {
                visitor.mbox("replies").send(Reply {
                    n: g.n,
                    text: format!("hello {}, this is greeting #{}", g.from, g.n),
                });
            }
        })?;
        Ok(())
    }
}

/// Forwards replies to the main thread.
struct Visitor {
    inbox: Mbox,
    tx: mpsc::Sender<Reply>,
}

impl Agent for Visitor {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let inbox = self.inbox.clone();
        ctx.subscribe(&inbox, |me, r: &Reply, _| {
            let _ = me.tx.send(r.clone());
        })?;
        Ok(())
    }
}

fn serve(addr: &str, heartbeat_ms: u64) -> Result<(), Box<dyn std::error::Error>> {
    let env = Environment::builder().start()?;
    let config = NodeConfig::new("greeter")
        .token("example-secret")
        .heartbeat_interval(Duration::from_millis(heartbeat_ms))
        .listen(addr.parse()?);
    let node = Arc::new(Node::start(&env.environment(), config, registry())?);
    let mut coop = env.environment().new_coop();
    coop.add(Greeter {
        inbox: node.export("greetings"),
        node: node.clone(),
    });
    env.environment().register_coop(coop)?;
    println!("LISTEN {}", node.local_addr().expect("listening"));
    std::io::stdout().flush()?;
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    env.stop_and_wait();
    Ok(())
}

fn visit() -> Result<(), Box<dyn std::error::Error>> {
    // The greeter, in a process of its own.
    let mut child = Command::new(std::env::current_exe()?)
        .args(["serve", "127.0.0.1:0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let line = lines.next().ok_or("the greeter printed nothing")??;
    let addr = line
        .strip_prefix("LISTEN ")
        .ok_or("unexpected greeter output")?
        .to_string();

    let env = Environment::builder().start()?;
    let node = Node::start(
        &env.environment(),
        NodeConfig::new("visitor").token("example-secret"),
        registry(),
    )?;
    let (tx, rx) = mpsc::channel();
    let mut coop = env.environment().new_coop();
    coop.add(Visitor {
        inbox: node.export("replies"),
        tx,
    });
    env.environment().register_coop(coop)?;

    let greetings = node.connect(&addr)?.mbox("greetings");
    for n in 1..=3 {
        greetings.send(Greeting {
            from: "visitor".into(),
            n,
        });
    }
    for _ in 1..=3 {
        let r = rx.recv_timeout(Duration::from_secs(10))?;
        println!("reply {}: {}", r.n, r.text);
    }
    println!("{:?}", node.stats());
    node.shutdown();
    env.stop_and_wait();
    drop(child.stdin.take()); // the greeter exits when its input closes
    child.wait()?;
    println!("done: two_processes");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => {
            let addr = args.get(1).map(String::as_str).unwrap_or("127.0.0.1:0");
            let hb = args.get(2).and_then(|h| h.parse().ok()).unwrap_or(1000);
            serve(addr, hb)
        }
        _ => visit(),
    }
}
