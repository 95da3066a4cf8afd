//! Message chains between plain threads, and `select` over several chains.
//!
//! `cargo run -p cohort --example mchain_select`
//!
//! What it shows:
//! - `Environment::create_mchain`: a channel that plain threads (and agents, through
//!   `Mchain::as_mbox`) share; bounded chains make a fast sender wait (`wait_on_full`);
//! - `select` with one `receive_case` per chain: a thread waits on several chains at once,
//!   served in turn so a busy chain does not starve a quiet one;
//! - closing a chain (`close_retain_content`) lets the reader drain it, and `select` returns
//!   `StopReason::Closed` once every chain is closed and empty;
//! - a `send_case`: send one message when its chain has room;
//! - an agent answering into a chain: the bridge between agents and threads.

use cohort::mchain::{
    Handlers, MchainParams, Overflow, StopReason, from, from_all, receive, receive_case, select,
    send_case,
};
use cohort::{Agent, Context, DefineError, Environment, Mbox};
use std::thread;
use std::time::Duration;

/// What the consumer thread reports when both producers are done.
struct Totals {
    numbers: u64,
    words: usize,
}

/// An agent that squares the numbers it gets and sends the squares to a chain.
struct Squarer {
    out: Mbox,
}

impl Agent for Squarer {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, n: &u64, _| me.out.send(n * n))?;
        Ok(())
    }
}

fn main() {
    let env = Environment::builder()
        .start()
        .expect("the environment starts");
    // Bounded: a producer that gets 4 ahead of the consumer waits for room (up to 10 s, then
    // `Overflow::Error`: the send fails).
    let bounded = || {
        MchainParams::bounded(4)
            .wait_on_full(Duration::from_secs(10))
            .on_overflow(Overflow::Error)
    };
    let numbers = env.create_mchain(bounded()).expect("a chain");
    let words = env.create_mchain(bounded()).expect("a chain");
    let reports = env
        .create_mchain(MchainParams::bounded(1))
        .expect("a chain");

    // Two producers, plain threads; each closes its chain when done.
    let p1 = {
        let numbers = numbers.clone();
        thread::spawn(move || {
            for n in 1..=10u64 {
                numbers.send(n).expect("room within 10 s");
            }
            numbers.close_retain_content();
        })
    };
    let p2 = {
        let words = words.clone();
        thread::spawn(move || {
            for w in ["alpha", "beta", "gamma"] {
                words.send(w.to_string()).expect("room within 10 s");
            }
            words.close_retain_content();
        })
    };

    // The consumer: one select over both chains until both are closed and drained.
    let consumer = {
        let (numbers, words, reports) = (numbers.clone(), words.clone(), reports.clone());
        thread::spawn(move || {
            let (mut sum, mut letters) = (0u64, 0usize);
            let r = select(
                from_all(),
                &mut [
                    receive_case(&numbers, Handlers::new().on(|n: &u64| sum += n)),
                    receive_case(
                        &words,
                        Handlers::new().on(|w: &String| {
                            println!("consumer: word {w}");
                            letters += w.len();
                        }),
                    ),
                ],
            );
            assert_eq!(r.stop, StopReason::Closed);
            println!(
                "consumer: select handled {} messages, then {:?}",
                r.handled, r.stop
            );
            let totals = Totals {
                numbers: sum,
                words: letters,
            };
            // A send case: send the report once `reports` has room, then run the callback.
            select(
                from_all().handle_n(1),
                &mut [send_case(&reports, totals, || {
                    println!("consumer: report sent")
                })],
            );
        })
    };

    // The main thread receives the report.
    let mut report = None;
    receive(
        from(&reports)
            .handle_n(1)
            .empty_timeout(Duration::from_secs(10)),
        &mut Handlers::new().on(|t: &Totals| report = Some((t.numbers, t.words))),
    );
    let (sum, letters) = report.expect("the consumer reports");
    println!("main: sum of numbers {sum}, letters in words {letters}");
    for t in [p1, p2, consumer] {
        t.join().expect("no thread panicked");
    }

    // An agent sends into a chain like into any mailbox.
    let squares = env
        .create_mchain(MchainParams::unbounded())
        .expect("a chain");
    let mut coop = env.new_coop();
    let squarer = coop.add(Squarer {
        out: squares.as_mbox(),
    });
    let squarer = squarer.mbox();
    env.register_coop(coop).expect("the squarer registers");
    for n in 1..=3u64 {
        squarer.send(n);
    }
    let mut got = Vec::new();
    receive(
        from(&squares)
            .handle_n(3)
            .empty_timeout(Duration::from_secs(10)),
        &mut Handlers::new().on(|sq: &u64| got.push(*sq)),
    );
    println!("main: squares from the agent {got:?}");
    println!("chain stats: {:?}", numbers.stats());

    env.stop_and_wait();
    println!("done: mchain_select");
}
