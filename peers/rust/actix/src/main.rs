//! The comparison scenarios on actix 0.13: actors on arbiters (a thread with a tokio
//! current-thread runtime each), `do_send` for every message (no reply future, ignores the
//! mailbox capacity), `ctx.notify` for self-sends. See peers/README.md for every choice.

use actix::prelude::*;
use peer_common::{Marks, Outcome, Scenario, Sizes, check};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn main() {
    peer_common::main("actix", run);
}

fn run(s: Scenario, z: &Sizes) -> Result<Outcome, String> {
    match s {
        Scenario::PingPongOneThread => ping_pong(z.count, false),
        Scenario::PingPongTwoThreads => ping_pong(z.count, true),
        Scenario::Skynet => skynet(z.leaves, z.branching),
        Scenario::ThreadRing => ring(z.agents, vec![z.hops]),
        Scenario::ParallelThreadRing => ring(z.agents, peer_common::split_hops(z.hops, z.tokens)?),
        Scenario::CountingActor => counting(z.count),
        Scenario::FanOut => fan_out(z.workers, z.messages),
        Scenario::SelfSend => self_send(z.workers, z.message_count, z.start_batch),
        Scenario::AsyncAskOneThread => async_ask(z.count, z.timed != 0, false),
        // actix has no pool for async actors: on two threads, an arbiter is its way.
        Scenario::AsyncAskTwoThreads | Scenario::AsyncAskThreadPerActor => {
            async_ask(z.count, z.timed != 0, true)
        }
    }
}

fn run_system(sys: SystemRunner) -> Result<(), String> {
    sys.run().map_err(|e| format!("actix system failed: {e}"))
}

// ---- ping-pong ----

#[derive(Message)]
#[rtype(result = "()")]
struct Ping;

#[derive(Message)]
#[rtype(result = "()")]
struct Pong;

struct Pinger {
    ponger: Addr<Ponger>,
    left: u64,
    marks: Arc<Marks>,
}

impl Actor for Pinger {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        self.marks.start();
        self.ponger.do_send(Ping);
    }
}

impl Handler<Pong> for Pinger {
    type Result = ();

    fn handle(&mut self, _: Pong, _: &mut Self::Context) {
        self.left -= 1;
        if self.left > 0 {
            self.ponger.do_send(Ping);
        } else {
            self.marks.end();
            System::current().stop();
        }
    }
}

struct Ponger {
    pinger: Addr<Pinger>,
}

impl Actor for Ponger {
    type Context = Context<Self>;
}

impl Handler<Ping> for Ponger {
    type Result = ();

    fn handle(&mut self, _: Ping, _: &mut Self::Context) {
        self.pinger.do_send(Pong);
    }
}

/// Pinger on the system's arbiter; the ponger on the same one, or on an arbiter of its own.
fn ping_pong(count: u64, two_threads: bool) -> Result<Outcome, String> {
    let marks = Arc::new(Marks::default());
    let sys = System::new();
    let other = two_threads.then(Arbiter::new);
    let handle = other.as_ref().map(Arbiter::handle);
    let m = marks.clone();
    sys.block_on(async move {
        Pinger::create(move |ctx| {
            let pinger = ctx.address();
            let ponger = match &handle {
                Some(h) => Ponger::start_in_arbiter(h, move |_| Ponger { pinger }),
                None => Ponger { pinger }.start(),
            };
            Pinger {
                ponger,
                left: count,
                marks: m,
            }
        });
    });
    run_system(sys)?;
    if let Some(a) = other {
        a.stop();
        a.join().map_err(|_| "the ponger's arbiter panicked")?;
    }
    Ok(Outcome {
        elapsed: marks.elapsed()?,
        messages: 2 * count,
    })
}

// ---- skynet ----

#[derive(Message)]
#[rtype(result = "()")]
struct Sum(u64);

struct Node {
    parent: Option<Addr<Node>>,
    out: Option<Arc<Mutex<Option<u64>>>>,
    num: u64,
    size: u64,
    branching: u64,
    sum: u64,
    left: u64,
}

impl Node {
    fn report(&mut self, ctx: &mut Context<Self>) {
        match (&self.parent, &self.out) {
            (Some(p), _) => p.do_send(Sum(self.sum)),
            (None, Some(out)) => {
                *out.lock().unwrap() = Some(self.sum);
                System::current().stop();
            }
            (None, None) => {}
        }
        ctx.stop();
    }
}

impl Actor for Node {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.size == 1 {
            self.sum = self.num;
            self.report(ctx);
            return;
        }
        let me = ctx.address();
        let step = self.size / self.branching;
        self.left = self.branching;
        for i in 0..self.branching {
            Node {
                parent: Some(me.clone()),
                out: None,
                num: self.num + i * step,
                size: step,
                branching: self.branching,
                sum: 0,
                left: 0,
            }
            .start();
        }
    }
}

impl Handler<Sum> for Node {
    type Result = ();

    fn handle(&mut self, Sum(v): Sum, ctx: &mut Self::Context) {
        self.sum += v;
        self.left -= 1;
        if self.left == 0 {
            self.report(ctx);
        }
    }
}

/// Every node on the system's arbiter; each stops itself once it has reported; the time runs
/// until the system has stopped and its runtime (with every actor) is dropped.
fn skynet(leaves: u64, branching: u64) -> Result<Outcome, String> {
    let out = Arc::new(Mutex::new(None));
    let started = Instant::now();
    let sys = System::new();
    let o = out.clone();
    sys.block_on(async move {
        Node {
            parent: None,
            out: Some(o),
            num: 0,
            size: leaves,
            branching,
            sum: 0,
            left: 0,
        }
        .start();
    });
    run_system(sys)?;
    let elapsed = started.elapsed();
    let sum = out.lock().unwrap().ok_or("the root never got the sum")?;
    check("sum", sum, peer_common::skynet_sum(leaves))?;
    Ok(Outcome {
        elapsed,
        messages: peer_common::skynet_actors(leaves, branching),
    })
}

// ---- ThreadRing / ParallelThreadRing ----

#[derive(Message)]
#[rtype(result = "()")]
struct Token(u64);

struct Ring {
    marks: Marks,
    tokens_left: AtomicU64,
}

struct Link {
    next: Addr<Link>,
    initial: Vec<u64>,
    ring: Arc<Ring>,
}

impl Actor for Link {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        if !self.initial.is_empty() {
            self.ring.marks.start();
            for hops in self.initial.drain(..) {
                self.next.do_send(Token(hops - 1));
            }
        }
    }
}

impl Handler<Token> for Link {
    type Result = ();

    fn handle(&mut self, Token(left): Token, _: &mut Self::Context) {
        if left > 0 {
            self.next.do_send(Token(left - 1));
        } else if self.ring.tokens_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ring.marks.end();
            System::current().stop();
        }
    }
}

/// The ring on the system's arbiter (one thread); token k starts at link k. Every token ends
/// at zero after exactly its hops, and the run ends when every token has: that checks the
/// hop count.
fn ring(agents: u64, tokens: Vec<u64>) -> Result<Outcome, String> {
    let hops: u64 = tokens.iter().sum();
    let ring = Arc::new(Ring {
        marks: Marks::default(),
        tokens_left: AtomicU64::new(tokens.len() as u64),
    });
    let sys = System::new();
    let r = ring.clone();
    sys.block_on(async move {
        let mut tokens = tokens;
        tokens.resize(agents as usize, 0);
        Link::create(move |ctx| {
            let first = ctx.address();
            let mut next = first;
            for k in (1..agents as usize).rev() {
                let initial = if tokens[k] > 0 {
                    vec![tokens[k]]
                } else {
                    vec![]
                };
                next = Link {
                    next,
                    initial,
                    ring: r.clone(),
                }
                .start();
            }
            Link {
                next,
                initial: vec![tokens[0]],
                ring: r,
            }
        });
    });
    run_system(sys)?;
    check(
        "tokens finished",
        ring.tokens_left.load(Ordering::Acquire),
        0,
    )?;
    Ok(Outcome {
        elapsed: ring.marks.elapsed()?,
        messages: hops,
    })
}

// ---- CountingActor ----

#[derive(Message)]
#[rtype(result = "()")]
struct Value(u64);

#[derive(Message)]
#[rtype(result = "()")]
struct GetCount;

struct Counter {
    count: u64,
    sum: u64,
    out: Arc<Mutex<Option<(Instant, u64, u64)>>>,
}

impl Actor for Counter {
    type Context = Context<Self>;
}

impl Handler<Value> for Counter {
    type Result = ();

    fn handle(&mut self, Value(v): Value, _: &mut Self::Context) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(v);
    }
}

impl Handler<GetCount> for Counter {
    type Result = ();

    fn handle(&mut self, _: GetCount, _: &mut Self::Context) {
        *self.out.lock().unwrap() = Some((Instant::now(), self.count, self.sum));
        System::current().stop();
    }
}

/// The counter on the system's arbiter, a plain thread writing with `do_send`.
fn counting(count: u64) -> Result<Outcome, String> {
    let out = Arc::new(Mutex::new(None));
    let sys = System::new();
    let o = out.clone();
    let addr = sys.block_on(async move {
        Counter {
            count: 0,
            sum: 0,
            out: o,
        }
        .start()
    });
    let t0 = Instant::now();
    let writer = std::thread::spawn(move || {
        for v in 1..=count {
            addr.do_send(Value(v));
        }
        addr.do_send(GetCount);
    });
    run_system(sys)?;
    writer.join().map_err(|_| "the writer panicked")?;
    let (at, n, sum) = out.lock().unwrap().ok_or("the counter never answered")?;
    check("count", n, count)?;
    check("sum", sum, peer_common::counting_sum(count))?;
    Ok(Outcome {
        elapsed: at - t0,
        messages: count,
    })
}

// ---- 1:N fan-out ----

#[derive(Message)]
#[rtype(result = "()")]
struct Num(u64);

#[derive(Message)]
#[rtype(result = "()")]
struct Done(u64);

struct Producer {
    workers: Vec<Addr<FanWorker>>,
    messages: u64,
    left: u64,
    received: u64,
    tally: Arc<AtomicU64>,
}

impl Actor for Producer {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        for i in 0..self.messages {
            for w in &self.workers {
                w.do_send(Num(i));
            }
        }
    }
}

impl Handler<Done> for Producer {
    type Result = ();

    fn handle(&mut self, Done(n): Done, _: &mut Self::Context) {
        self.received += n;
        self.left -= 1;
        if self.left == 0 {
            self.tally.store(self.received, Ordering::Release);
            System::current().stop();
        }
    }
}

struct FanWorker {
    producer: Addr<Producer>,
    left: u64,
    received: u64,
}

impl Actor for FanWorker {
    type Context = Context<Self>;
}

impl Handler<Num> for FanWorker {
    type Result = ();

    fn handle(&mut self, Num(i): Num, _: &mut Self::Context) {
        std::hint::black_box(i);
        self.received += 1;
        self.left -= 1;
        if self.left == 0 {
            self.producer.do_send(Done(self.received));
        }
    }
}

/// The producer on the system's arbiter, every worker on one other arbiter (cohort's
/// active_group); actix has no 1:N mailbox, so the producer loops over the workers' addresses.
/// The time spans creation to the arbiters' join.
fn fan_out(workers: u64, messages: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let received = Arc::new(AtomicU64::new(0));
    let sys = System::new();
    let group = Arbiter::new();
    let h = group.handle();
    let r = received.clone();
    sys.block_on(async move {
        Producer::create(move |ctx| {
            let me = ctx.address();
            let ws = (0..workers)
                .map(|_| {
                    let producer = me.clone();
                    FanWorker::start_in_arbiter(&h, move |_| FanWorker {
                        producer,
                        left: messages,
                        received: 0,
                    })
                })
                .collect();
            Producer {
                workers: ws,
                messages,
                left: workers,
                received: 0,
                tally: r,
            }
        });
    });
    run_system(sys)?;
    group.stop();
    group.join().map_err(|_| "the workers' arbiter panicked")?;
    let elapsed = started.elapsed();
    Ok(Outcome {
        elapsed,
        messages: received.load(Ordering::Acquire),
    })
}

// ---- self-send ----

#[derive(Message)]
#[rtype(result = "()")]
struct SelfSignal;

struct Worker {
    master: Addr<Master>,
    message_count: u64,
    start_batch: u64,
    sent: u64,
    handled: u64,
}

impl Actor for Worker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        for _ in 0..self.start_batch {
            ctx.notify(SelfSignal);
        }
        self.sent = self.start_batch;
    }
}

impl Handler<SelfSignal> for Worker {
    type Result = ();

    fn handle(&mut self, _: SelfSignal, ctx: &mut Self::Context) {
        self.handled += 1;
        if self.sent < self.message_count {
            self.sent += 1;
            ctx.notify(SelfSignal);
        } else if self.handled == self.message_count {
            self.master.do_send(Done(self.handled));
        }
    }
}

struct Master {
    left: u64,
    handled: Arc<AtomicU64>,
}

impl Actor for Master {
    type Context = Context<Self>;
}

impl Handler<Done> for Master {
    type Result = ();

    fn handle(&mut self, Done(n): Done, _: &mut Self::Context) {
        self.handled.fetch_add(n, Ordering::AcqRel);
        self.left -= 1;
        if self.left == 0 {
            System::current().stop();
        }
    }
}

/// Workers dealt round-robin over two arbiters (cohort's thread_pool of 2 threads), the master
/// on the system's arbiter. The time spans creation to the arbiters' join.
fn self_send(workers: u64, message_count: u64, start_batch: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let handled = Arc::new(AtomicU64::new(0));
    let sys = System::new();
    let pool = [Arbiter::new(), Arbiter::new()];
    let handles: Vec<_> = pool.iter().map(Arbiter::handle).collect();
    let h = handled.clone();
    sys.block_on(async move {
        let master = Master {
            left: workers,
            handled: h,
        }
        .start();
        for i in 0..workers {
            let master = master.clone();
            Worker::start_in_arbiter(&handles[i as usize % handles.len()], move |_| Worker {
                master,
                message_count,
                start_batch,
                sent: 0,
                handled: 0,
            });
        }
    });
    run_system(sys)?;
    for a in pool {
        a.stop();
        a.join().map_err(|_| "a worker arbiter panicked")?;
    }
    Ok(Outcome {
        elapsed: started.elapsed(),
        messages: handled.load(Ordering::Acquire),
    })
}

// ---- async-ask ----

#[derive(Message)]
#[rtype(result = "u64")]
struct Question(u64);

/// Answers each question with twice its number.
struct Answerer;

impl Actor for Answerer {
    type Context = Context<Self>;
}

impl Handler<Question> for Answerer {
    type Result = u64;

    fn handle(&mut self, Question(n): Question, _: &mut Self::Context) -> u64 {
        peer_common::ask_reply(n)
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct AskAll(u64, bool);

type AskResult = Arc<Mutex<Option<Result<peer_common::AskRun, String>>>>;

/// Asks the answerer `count` times, one at a time, in the `ResponseFuture` of its handler.
struct Asker {
    answerer: Addr<Answerer>,
    out: AskResult,
}

impl Actor for Asker {
    type Context = Context<Self>;
}

impl Handler<AskAll> for Asker {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, AskAll(count, timed): AskAll, _: &mut Self::Context) -> Self::Result {
        let (answerer, out) = (self.answerer.clone(), self.out.clone());
        Box::pin(async move {
            let mut run = peer_common::AskRun::new(count, timed);
            let started = Instant::now();
            let mut result = Ok(());
            for i in 0..count {
                let t = run.start();
                match answerer.send(Question(i)).await {
                    Ok(r) => run.sum += r,
                    Err(e) => {
                        result = Err(format!("send {i} failed: {e}"));
                        break;
                    }
                }
                run.stop(t);
            }
            run.elapsed = started.elapsed();
            *out.lock().unwrap() = Some(result.map(|()| run));
            System::current().stop();
        })
    }
}

/// actix's `Addr::send` awaited in a `ResponseFuture` (the asker's handler's result); the
/// answerer on the system's arbiter, or on an arbiter (a thread) of its own.
fn async_ask(count: u64, timed: bool, two_threads: bool) -> Result<Outcome, String> {
    let out: AskResult = Arc::default();
    let sys = System::new();
    let other = two_threads.then(Arbiter::new);
    let handle = other.as_ref().map(Arbiter::handle);
    let o = out.clone();
    sys.block_on(async move {
        let answerer = match &handle {
            Some(h) => Answerer::start_in_arbiter(h, |_| Answerer),
            None => Answerer.start(),
        };
        Asker { answerer, out: o }
            .start()
            .do_send(AskAll(count, timed));
    });
    run_system(sys)?;
    if let Some(a) = other {
        a.stop();
        a.join().map_err(|_| "the answerer's arbiter panicked")?;
    }
    let run = out
        .lock()
        .unwrap()
        .take()
        .ok_or("the asker never finished")??;
    peer_common::ask_outcome(count, run)
}
