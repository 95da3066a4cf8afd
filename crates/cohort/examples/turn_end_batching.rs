//! A custom mailbox that hands messages to a thread of its own (a network writer, a log
//! shipper) and wakes that thread once per worker turn, not once per message.
//!
//! `cargo run -p cohort --example turn_end_batching`
//!
//! What it shows:
//! - a [`CustomMbox`] gets every message sent to its `Mbox` on the sender's thread;
//! - [`turn_end::defer`] runs a hook once when the worker that runs the sending handlers ends
//!   its turn, however many messages the turn sent: the writer is woken once and takes them
//!   all as one batch (this is how `cohort-remote` fills its writes);
//! - on a thread that ends no turns (here `main`), `defer` returns `false` and the mailbox
//!   wakes the writer itself.

use cohort::dispatcher::turn_end::{self, TurnEnd};
use cohort::{Agent, AnyMessage, Context, CustomMbox, DefineError, Mbox};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// What the outbox's writer thread is told.
enum Wake {
    /// Take what is queued.
    Take,
    /// Take what is queued and stop.
    Stop,
}

/// Queues `u64`s for the writer thread and wakes it.
struct Outbox {
    queued: Mutex<Vec<u64>>,
    wake: Mutex<Sender<Wake>>,
    /// Whether `deliver` defers the wake-up to the end of the turn.
    batching: bool,
}

impl Outbox {
    fn wake_writer(&self) {
        let _ = self.wake.lock().unwrap().send(Wake::Take);
    }
}

/// The end of a turn that sent to the outbox: one wake-up for all of the turn's messages.
struct WakeAtTurnEnd(Arc<Outbox>);

impl TurnEnd for WakeAtTurnEnd {
    fn turn_ended(&self) {
        self.0.wake_writer();
    }
}

/// The mailbox behind the agents' `Mbox`: the outbox and its turn-end hook.
struct OutboxMbox {
    outbox: Arc<Outbox>,
    at_turn_end: Arc<WakeAtTurnEnd>,
}

impl CustomMbox for OutboxMbox {
    fn deliver(&self, msg: AnyMessage) {
        if let Some(n) = msg.downcast_ref::<u64>() {
            self.outbox.queued.lock().unwrap().push(*n);
            if !self.outbox.batching || !turn_end::defer(&self.at_turn_end) {
                self.outbox.wake_writer();
            }
        }
    }
}

/// The writer thread: on each wake-up, takes everything queued as one batch and reports its
/// size.
fn writer(outbox: Arc<Outbox>, wakes: Receiver<Wake>, batches: Sender<usize>) {
    for wake in wakes {
        let batch = std::mem::take(&mut *outbox.queued.lock().unwrap());
        if !batch.is_empty() {
            let _ = batches.send(batch.len());
        }
        if let Wake::Stop = wake {
            break;
        }
    }
}

/// Asks the producer to send `.0` numbers to the outbox in one handler.
struct Burst(u64);

/// Sends each burst to the outbox, a message at a time.
struct Producer {
    out: Mbox,
}

impl Agent for Producer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, b: &Burst, _| {
            for i in 0..b.0 {
                me.out.send(i);
            }
        })?;
        Ok(())
    }
}

/// Sends `bursts` bursts of `size` through an outbox and returns the writer's batch sizes.
fn run(batching: bool, bursts: usize, size: u64) -> Vec<usize> {
    let (wake_tx, wake_rx) = mpsc::channel();
    let (batch_tx, batch_rx) = mpsc::channel();
    let outbox = Arc::new(Outbox {
        queued: Mutex::new(Vec::new()),
        wake: Mutex::new(wake_tx),
        batching,
    });
    let writer = {
        let outbox = outbox.clone();
        std::thread::spawn(move || writer(outbox, wake_rx, batch_tx))
    };
    let out = Mbox::custom(OutboxMbox {
        at_turn_end: Arc::new(WakeAtTurnEnd(outbox.clone())),
        outbox: outbox.clone(),
    });
    let env = cohort::Environment::builder().start().expect("environment");
    let mut coop = env.new_coop();
    let producer = coop.add(Producer { out }).mbox();
    env.register_coop(coop).expect("register");
    let mut batches = Vec::new();
    for _ in 0..bursts {
        producer.send(Burst(size));
        // One burst at a time: the next is sent once the writer took all of this one.
        let mut taken = 0;
        while taken < size as usize {
            let n = batch_rx.recv().expect("the writer reports its batches");
            taken += n;
            batches.push(n);
        }
    }
    env.stop_and_wait();
    let _ = outbox.wake.lock().unwrap().send(Wake::Stop);
    writer.join().expect("the writer thread");
    batches
}

fn main() {
    let (bursts, size) = (5, 100);
    let each = run(false, bursts, size);
    let batched = run(true, bursts, size);
    let sum = |v: &[usize]| v.iter().sum::<usize>();
    println!(
        "waking at each message: {} messages in {} batches (as the writer kept up)",
        sum(&each),
        each.len()
    );
    println!(
        "waking at the turn's end: {} messages in {} batches {batched:?}",
        sum(&batched),
        batched.len()
    );
    assert_eq!(sum(&each), bursts * size as usize);
    assert_eq!(sum(&batched), bursts * size as usize);
    // The wake-up comes after the handler returned: each burst is one batch.
    assert_eq!(batched, vec![size as usize; bursts]);
    println!("done: turn_end_batching");
}
