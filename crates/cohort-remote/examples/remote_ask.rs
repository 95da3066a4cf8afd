//! An agent asks an agent on another node, without blocking: `Context::request` through a
//! proxy, the reply coming back as an event of the asker.
//!
//! `cargo run -p cohort-remote --example remote_ask`
//!
//! What it shows:
//! - `Registry::register_request::<Req, Reply>(name)` on both nodes: the request crosses
//!   with a reply address the node adds (a `MboxRef` to its reply mailbox), and its
//!   outcome comes back; no reply-address field in your message;
//! - the answering agent is an ordinary `on_request` handler, its mailbox exported with
//!   `Node::export_mbox`;
//! - the asker's handler gets `Ok(reply)` or a `RequestError` (the timeout, or the other
//!   node's reason: here `NoHandler` for a question the calculator does not answer).
//!
//! Two nodes in one process on loopback (each with its own environment, as two processes
//! would have).

use cohort::{Agent, Context, DefineError, Environment, Mbox, RequestError};
use cohort_remote::{Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::sync::mpsc;
use std::time::Duration;

/// A question the calculator answers.
#[derive(Debug, Serialize, Deserialize)]
struct Add(i64, i64);

/// A question it has no handler for.
#[derive(Debug, Serialize, Deserialize)]
struct Divide(i64, i64);

/// Both nodes register the same requests under the same names.
fn registry() -> Registry {
    let mut r = Registry::new();
    r.register_request::<Add, i64>("example.Add")
        .expect("a new name");
    r.register_request::<Divide, i64>("example.Divide")
        .expect("a new name");
    r
}

/// On the calculator node: answers `Add` only.
struct Calculator;

impl Agent for Calculator {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_request(|_, q: &Add, _| q.0 + q.1)?;
        Ok(())
    }
}

/// On the client node: asks at start, reports each outcome to the main thread.
struct Asker {
    calculator: Mbox,
    outcomes: mpsc::Sender<String>,
}

impl Agent for Asker {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let calc = self.calculator.clone();
        for (a, b) in [(2, 3), (40, 2)] {
            ctx.request::<Add, i64>(&calc, Add(a, b))
                .timeout(Duration::from_secs(10))
                .then(
                    move |me: &mut Self,
                          sum: Result<i64, RequestError>,
                          _: &mut Context<'_, Self>| {
                        let _ = me.outcomes.send(format!("{a} + {b} = {sum:?}"));
                    },
                )
                .expect("asked from start");
        }
        ctx.request::<Divide, i64>(&calc, Divide(1, 0))
            .timeout(Duration::from_secs(10))
            .then(
                |me: &mut Self, r: Result<i64, RequestError>, _: &mut Context<'_, Self>| {
                    let _ = me.outcomes.send(format!("1 / 0 = {r:?}"));
                },
            )
            .expect("asked from start");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The calculator's side: its agent's own mailbox exported as "calculator".
    let calc_env = Environment::builder().start()?;
    let calc = Node::start(
        &calc_env.environment(),
        NodeConfig::new("calculator")
            .token("example-secret")
            .listen("127.0.0.1:0".parse()?),
        registry(),
    )?;
    let mut coop = calc_env.new_coop();
    let calculator = coop.add(Calculator).mbox();
    calc_env.register_coop(coop)?;
    calc.export_mbox("calculator", &calculator);

    // The client's side: dial, then ask through the proxy as through a local mailbox.
    let client_env = Environment::builder().start()?;
    let client = Node::start(
        &client_env.environment(),
        NodeConfig::new("client").token("example-secret"),
        registry(),
    )?;
    let proxy = client
        .connect(calc.local_addr().expect("listening"))?
        .mbox("calculator");
    let (outcomes, rx) = mpsc::channel();
    let mut coop = client_env.new_coop();
    coop.add(Asker {
        calculator: proxy,
        outcomes,
    });
    client_env.register_coop(coop)?;

    let mut lines: Vec<String> = (0..3)
        .map(|_| rx.recv_timeout(Duration::from_secs(10)))
        .collect::<Result<_, _>>()?;
    lines.sort();
    for l in &lines {
        println!("client: {l}");
    }
    assert!(lines.iter().any(|l| l == "2 + 3 = Ok(5)"));
    assert!(lines.iter().any(|l| l == "1 / 0 = Err(NoHandler)"));

    client.shutdown();
    calc.shutdown();
    client_env.stop_and_wait();
    calc_env.stop_and_wait();
    println!("done: remote_ask");
    Ok(())
}
