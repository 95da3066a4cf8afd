//! Two nodes in one process, on loopback, and a reply address that travels in a message.
//!
//! `cargo run -p cohort-remote --example reply_address`
//!
//! What it shows:
//! - two [`Node`]s, each with an environment of its own (as two processes would have);
//!   "calculator" listens on 127.0.0.1 (a port the system picks), "client" dials it;
//! - `Node::export("answers")` makes a named mailbox reachable from the peer;
//! - a [`MboxRef`] (`node.mbox_ref("answers")`) inside the request says where the answer
//!   goes: the calculator sends to it without knowing who asked (Akka's `replyTo`);
//! - every type that crosses is registered under a stable name in a [`Registry`], the
//!   `MboxRef` field included (it is serialized as the node's and the mailbox's names).
//!
//! For two real processes see the `two_processes` example.

use cohort::{Agent, Context, DefineError, Environment, Mbox};
use cohort_remote::{MboxRef, Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::sync::mpsc;
use std::time::Duration;

/// A question, with the address of whoever wants the answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Add {
    id: u32,
    a: i64,
    b: i64,
    reply_to: MboxRef,
}

/// The answer, sent to `Add::reply_to`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sum {
    id: u32,
    sum: i64,
}

/// Both nodes register the same types under the same names.
fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Add>("example.Add").expect("a new name");
    r.register::<Sum>("example.Sum").expect("a new name");
    r
}

/// On the calculator node: answers every `Add` at its reply address.
struct Calculator {
    questions: Mbox,
}

impl Agent for Calculator {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let questions = self.questions.clone();
        ctx.subscribe(&questions, |_, q: &Add, _| {
            println!(
                "calculator: #{} {} + {}, answering to {}@{}",
                q.id,
                q.a,
                q.b,
                q.reply_to.name(),
                q.reply_to.node()
            );
            q.reply_to.send(Sum {
                id: q.id,
                sum: q.a + q.b,
            });
        })?;
        Ok(())
    }
}

/// On the client node: asks, and passes the answers to the main thread.
struct Asker {
    questions: Mbox,
    answers: Mbox,
    me: MboxRef,
    got: mpsc::Sender<Sum>,
}

impl Agent for Asker {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let answers = self.answers.clone();
        ctx.subscribe(&answers, |me, s: &Sum, _| {
            let _ = me.got.send(s.clone());
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        for (id, (a, b)) in [(2, 3), (40, 2), (-7, 7)].into_iter().enumerate() {
            self.questions.send(Add {
                id: id as u32 + 1,
                a,
                b,
                reply_to: self.me.clone(),
            });
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The calculator's side.
    let calc_env = Environment::builder().start()?;
    let calc = Node::start(
        &calc_env.environment(),
        NodeConfig::new("calculator")
            .token("example-secret")
            .listen("127.0.0.1:0".parse()?),
        registry(),
    )?;
    let mut coop = calc_env.new_coop();
    coop.add(Calculator {
        questions: calc.export("questions"),
    });
    calc_env.register_coop(coop)?;
    let addr = calc.local_addr().expect("listening");
    println!("calculator listens on {addr}");

    // The client's side: dial, export where answers go, make a reference to it.
    let client_env = Environment::builder().start()?;
    let client = Node::start(
        &client_env.environment(),
        NodeConfig::new("client").token("example-secret"),
        registry(),
    )?;
    let answers = client.export("answers");
    let me = client.mbox_ref("answers")?;
    let questions = client.connect(addr)?.mbox("questions");
    let (got, sums) = mpsc::channel();
    let mut coop = client_env.new_coop();
    coop.add(Asker {
        questions,
        answers,
        me,
        got,
    });
    client_env.register_coop(coop)?;

    for _ in 0..3 {
        let s = sums.recv_timeout(Duration::from_secs(10))?;
        println!("client: answer #{} = {}", s.id, s.sum);
    }
    println!("client node: {:?}", client.stats());

    client.shutdown();
    calc.shutdown();
    client_env.stop_and_wait();
    calc_env.stop_and_wait();
    println!("done: reply_address");
    Ok(())
}
