//! Request/reply between agents without blocking a worker.
//!
//! `cargo run -p cohort --example request_reply`
//!
//! What it shows:
//! - `Mbox::request_to::<Req, Reply>(req, &reply_to)`: the reply comes back as an ordinary
//!   message to a mailbox (here the asking agent's own), so the asker never waits;
//! - `Request::defer()`: the answering agent takes a [`Responder`] and replies later, once
//!   a slow backend (on a thread of its own) has the answer; its own worker is free
//!   meanwhile;
//! - `Mbox::request(..).wait(timeout)` for a plain thread, which may block, and the typed
//!   [`RequestError`] a request without a handler gets.
//!
//! Never call `PendingReply::wait` inside a handler: it blocks the worker thread and every
//! agent sharing it (and deadlocks if the answering agent is one of them).

use cohort::{
    ActiveObjBuilder, Agent, Context, DefineError, Environment, Mbox, Request, RequestError,
    Responder,
};
use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

/// What is asked: the price of an item.
struct Lookup {
    item: &'static str,
}

/// The answer, carrying what it answers (replies arrive as ordinary messages).
#[derive(Debug, Clone)]
struct Quote {
    item: &'static str,
    cents: u64,
}

/// Frontend -> backend: fetch this item for request `id`.
struct Fetch {
    id: u64,
    item: &'static str,
}

/// Backend -> frontend: the result for request `id`.
struct Fetched {
    id: u64,
    cents: u64,
}

/// Answers `Lookup` requests by asking the backend, without waiting for it.
struct Frontend {
    backend: Mbox,
    next_id: u64,
    /// Deferred replies, by the id of the fetch that will complete them.
    waiting: HashMap<u64, (&'static str, Responder<Quote>)>,
}

impl Agent for Frontend {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        // Subscribing to the `Request` message itself (not `on_request`) lets the handler
        // take the right to reply and return at once.
        ctx.on(|me, r: &Request<Lookup, Quote>, _| {
            let item = r.payload().item;
            let Some(responder) = r.defer() else { return };
            me.next_id += 1;
            me.waiting.insert(me.next_id, (item, responder));
            println!(
                "frontend: {item}? asking the backend (fetch #{})",
                me.next_id
            );
            me.backend.send(Fetch {
                id: me.next_id,
                item,
            });
        })?;
        ctx.on(|me, f: &Fetched, _| {
            if let Some((item, responder)) = me.waiting.remove(&f.id) {
                responder.reply(Quote {
                    item,
                    cents: f.cents,
                });
            }
        })?;
        Ok(())
    }
}

/// A slow backend: a blocking call, on a thread of its own (`active_obj`).
struct Backend {
    frontend: Mbox,
}

impl Agent for Backend {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|me, f: &Fetch, _| {
            // Stands for a database call: it blocks this agent's own thread only.
            std::thread::sleep(Duration::from_millis(20));
            let cents = f.item.bytes().map(u64::from).sum::<u64>();
            me.frontend.send(Fetched { id: f.id, cents });
        })?;
        Ok(())
    }
}

/// Sends its requests, stays free, and handles the replies as they come.
struct Client {
    frontend: Mbox,
    expected: usize,
    quotes: Vec<Quote>,
    done: mpsc::Sender<Vec<Quote>>,
}

/// Sent by the client to itself after its requests: handled before any reply arrives.
struct StillFree;

impl Agent for Client {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on(|_, _: &StillFree, _| println!("client: requests sent, free to do other work"))?;
        ctx.on(|me, q: &Quote, _| {
            println!("client: {} costs {} cents", q.item, q.cents);
            me.quotes.push(q.clone());
            if me.quotes.len() == me.expected {
                let _ = me.done.send(std::mem::take(&mut me.quotes));
            }
        })?;
        Ok(())
    }

    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.self_mbox();
        for item in ["apple", "bread", "cheese"] {
            // The reply goes to `me` as a `Quote` message.
            self.frontend
                .request_to::<Lookup, Quote>(Lookup { item }, &me);
        }
        ctx.send_self(StillFree);
    }
}

fn main() {
    let env = Environment::builder()
        .start()
        .expect("the environment starts");
    let (done, all_quotes) = mpsc::channel();

    let mut coop = env.new_coop();
    let frontend = coop.add(Frontend {
        backend: env.anonymous_mbox(), // replaced below, once the backend exists
        next_id: 0,
        waiting: HashMap::new(),
    });
    let backend_thread = ActiveObjBuilder::new()
        .name("backend")
        .build(&env)
        .expect("a dispatcher");
    let backend = coop.add_with_binder(
        Backend {
            frontend: frontend.mbox(),
        },
        backend_thread.binder(),
    );
    coop.agent_mut(&frontend).backend = backend.mbox();
    let client = coop.add(Client {
        frontend: frontend.mbox(),
        expected: 3,
        quotes: Vec::new(),
        done,
    });
    let (frontend, client) = (frontend.mbox(), client.mbox());
    env.register_coop(coop).expect("the agents register");

    let quotes = all_quotes
        .recv_timeout(Duration::from_secs(10))
        .expect("three replies");
    println!("main: the client got {} quotes", quotes.len());

    // A plain thread may block on a reply.
    let reply = frontend
        .request::<Lookup, Quote>(Lookup { item: "dates" })
        .wait(Duration::from_secs(5));
    println!("main: blocking request -> {reply:?}");

    // The client answers no `Lookup`: a typed error, at once.
    let reply = client
        .request::<Lookup, Quote>(Lookup { item: "eggs" })
        .wait(Duration::from_secs(5));
    assert_eq!(reply.as_ref().err(), Some(&RequestError::NoHandler));
    println!("main: request to an agent without a handler -> {reply:?}");

    env.stop_and_wait();
    println!("done: request_reply");
}
