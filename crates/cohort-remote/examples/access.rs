//! An exported mailbox that only some peer nodes may send to.
//!
//! `cargo run -p cohort-remote --example access`
//!
//! What it shows:
//! - `Node::export_with("payments", Access::nodes(["till"]))`: node "bank" takes payments
//!   from the node named "till" only;
//! - a message from another node ("kiosk") is refused by "bank", counted there
//!   (`NodeStats::access_refused`) and reported back: "kiosk" sees it as a dead letter with
//!   its own reason, `DeliveryFailure::AccessDenied`.

use cohort::{Agent, Context, DeadLetter, DefineError, DeliveryFailure, Environment, Mbox};
use cohort_remote::{Access, Node, NodeConfig, Registry};
use serde::{Deserialize, Serialize};
use std::sync::mpsc;
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Payment(u64);

fn registry() -> Registry {
    let mut r = Registry::new();
    r.register::<Payment>("example.Payment")
        .expect("a new name");
    r
}

/// On the bank node: takes the payments and tells the main thread.
struct Teller {
    payments: Mbox,
    paid: mpsc::Sender<u64>,
}

impl Agent for Teller {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let payments = self.payments.clone();
        ctx.subscribe(&payments, |me, p: &Payment, _| {
            let _ = me.paid.send(p.0);
        })?;
        Ok(())
    }
}

fn main() {
    let bank_env = Environment::builder().start().expect("an environment");
    let bank = Node::start(
        &bank_env.environment(),
        NodeConfig::new("bank")
            .token("s3cret")
            .listen("127.0.0.1:0".parse().expect("an address")),
        registry(),
    )
    .expect("the bank node");
    let payments = bank.export_with("payments", Access::nodes(["till"]));
    let (paid, paid_rx) = mpsc::channel();
    let mut coop = bank_env.environment().new_coop();
    coop.add(Teller { payments, paid });
    bank_env
        .environment()
        .register_coop(coop)
        .expect("the teller");
    let addr = bank.local_addr().expect("listening");

    // The till may pay.
    let till_env = Environment::builder().start().expect("an environment");
    let till = Node::start(
        &till_env.environment(),
        NodeConfig::new("till").token("s3cret"),
        registry(),
    )
    .expect("the till node");
    till.connect(addr)
        .expect("the bank answers")
        .mbox("payments")
        .send(Payment(40));
    let got = paid_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the till's payment");
    println!("bank: paid {got} by the till");

    // The kiosk may not: its payment comes back to it as a dead letter.
    let (refused, refused_rx) = mpsc::channel();
    let kiosk_env = Environment::builder()
        .dead_letter_hook(move |d: &DeadLetter| {
            let _ = refused.send(d.reason);
        })
        .start()
        .expect("an environment");
    let kiosk = Node::start(
        &kiosk_env.environment(),
        NodeConfig::new("kiosk").token("s3cret"),
        registry(),
    )
    .expect("the kiosk node");
    kiosk
        .connect(addr)
        .expect("the bank answers")
        .mbox("payments")
        .send(Payment(99));
    let reason = refused_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the kiosk hears of the refusal");
    assert_eq!(reason, DeliveryFailure::AccessDenied);
    println!(
        "kiosk: payment refused ({reason}); bank refused {}",
        bank.stats().access_refused
    );

    kiosk.shutdown();
    till.shutdown();
    bank.shutdown();
    kiosk_env.stop_and_wait();
    till_env.stop_and_wait();
    bank_env.stop_and_wait();
    println!("done: access");
}
