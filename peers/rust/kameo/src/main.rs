//! The comparison scenarios on kameo 0.22 (default features off but `macros`, so no tracing
//! per message): unbounded mailboxes everywhere (`spawn_with_mailbox(.., unbounded())`),
//! `tell(..).try_send()` for every message (no await, never full), a current-thread tokio
//! runtime where the scenario is on one thread, a 2-worker runtime where it is on two.
//! See peers/README.md for every choice.

use kameo::Actor;
use kameo::actor::{ActorRef, Spawn};
use kameo::error::Infallible;
use kameo::mailbox;
use kameo::message::{Context, Message};
use peer_common::{Marks, Outcome, Scenario, Sizes, check};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;

fn main() {
    peer_common::main("kameo", run);
}

fn runtime(threads: usize) -> Result<Runtime, String> {
    let rt = if threads == 1 {
        Builder::new_current_thread().enable_all().build()
    } else {
        Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    };
    rt.map_err(|e| format!("tokio runtime: {e}"))
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
        Scenario::AsyncAskOneThread => async_ask(z.count, z.timed != 0, AskLayout::OneThread),
        Scenario::AsyncAskTwoThreads => async_ask(z.count, z.timed != 0, AskLayout::TwoWorkers),
        Scenario::AsyncAskThreadPerActor => {
            async_ask(z.count, z.timed != 0, AskLayout::AnswererThread)
        }
    }
}

/// Spawns `actor` as a tokio task with an unbounded mailbox.
fn spawn<A: Actor<Args = A>>(actor: A) -> ActorRef<A> {
    A::spawn_with_mailbox(actor, mailbox::unbounded())
}

// ---- ping-pong ----

struct Ping;
struct Pong;

struct Pinger {
    ponger: Option<ActorRef<Ponger>>,
    left: u64,
    marks: Arc<Marks>,
    done: Option<oneshot::Sender<()>>,
}

impl Actor for Pinger {
    type Args = Self;
    type Error = Infallible;

    async fn on_start(state: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
        Ok(state)
    }
}

/// Gives the pinger its ponger and sends the first ping.
struct Go(ActorRef<Ponger>);

impl Message<Go> for Pinger {
    type Reply = ();

    async fn handle(&mut self, Go(p): Go, _: &mut Context<Self, ()>) {
        self.marks.start();
        let _ = p.tell(Ping).try_send();
        self.ponger = Some(p);
    }
}

impl Message<Pong> for Pinger {
    type Reply = ();

    async fn handle(&mut self, _: Pong, ctx: &mut Context<Self, ()>) {
        self.left -= 1;
        if self.left > 0 {
            if let Some(p) = &self.ponger {
                let _ = p.tell(Ping).try_send();
            }
        } else {
            self.marks.end();
            if let Some(p) = &self.ponger {
                p.kill();
            }
            if let Some(d) = self.done.take() {
                let _ = d.send(());
            }
            ctx.stop();
        }
    }
}

#[derive(Actor)]
struct Ponger {
    pinger: ActorRef<Pinger>,
}

impl Message<Ping> for Ponger {
    type Reply = ();

    async fn handle(&mut self, _: Ping, _: &mut Context<Self, ()>) {
        let _ = self.pinger.tell(Pong).try_send();
    }
}

/// One thread: both actors as tasks of a current-thread runtime. Two threads: the ponger on a
/// thread of its own (`spawn_in_thread`, kameo's way to give an actor a thread), the pinger a
/// task of a 1-worker runtime.
fn ping_pong(count: u64, two_threads: bool) -> Result<Outcome, String> {
    let marks = Arc::new(Marks::default());
    let rt = runtime(if two_threads { 2 } else { 1 })?;
    let m = marks.clone();
    rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let pinger = spawn(Pinger {
            ponger: None,
            left: count,
            marks: m,
            done: Some(tx),
        });
        let ponger = Ponger {
            pinger: pinger.clone(),
        };
        let ponger = if two_threads {
            Ponger::spawn_in_thread_with_mailbox(ponger, mailbox::unbounded())
        } else {
            spawn(ponger)
        };
        let _ = pinger.tell(Go(ponger)).try_send();
        rx.await.map_err(|_| "the pinger never finished")?;
        pinger.wait_for_shutdown().await;
        Ok::<_, String>(())
    })?;
    drop(rt);
    Ok(Outcome {
        elapsed: marks.elapsed()?,
        messages: 2 * count,
    })
}

// ---- skynet ----

struct Sum(u64);

struct Node {
    parent: Option<ActorRef<Node>>,
    out: Option<oneshot::Sender<u64>>,
    num: u64,
    size: u64,
    branching: u64,
    sum: u64,
    left: u64,
}

impl Node {
    fn report(&mut self) {
        if let Some(p) = &self.parent {
            let _ = p.tell(Sum(self.sum)).try_send();
        } else if let Some(o) = self.out.take() {
            let _ = o.send(self.sum);
        }
    }
}

impl Actor for Node {
    type Args = Self;
    type Error = Infallible;

    async fn on_start(mut node: Self, me: ActorRef<Self>) -> Result<Self, Infallible> {
        if node.size == 1 {
            node.sum = node.num;
            node.report();
            let _ = me.stop_gracefully().await;
            return Ok(node);
        }
        let step = node.size / node.branching;
        node.left = node.branching;
        for i in 0..node.branching {
            spawn(Node {
                parent: Some(me.clone()),
                out: None,
                num: node.num + i * step,
                size: step,
                branching: node.branching,
                sum: 0,
                left: 0,
            });
        }
        Ok(node)
    }
}

impl Message<Sum> for Node {
    type Reply = ();

    async fn handle(&mut self, Sum(v): Sum, ctx: &mut Context<Self, ()>) {
        self.sum += v;
        self.left -= 1;
        if self.left == 0 {
            self.report();
            ctx.stop();
        }
    }
}

/// Every node a task of a current-thread runtime; each stops itself once it has reported;
/// the time runs until the runtime (with whatever is left of the actors) is dropped.
fn skynet(leaves: u64, branching: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let rt = runtime(1)?;
    let sum = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let root = spawn(Node {
            parent: None,
            out: Some(tx),
            num: 0,
            size: leaves,
            branching,
            sum: 0,
            left: 0,
        });
        let sum = rx.await.map_err(|_| "the root never got the sum")?;
        root.wait_for_shutdown().await;
        Ok::<_, String>(sum)
    })?;
    drop(rt);
    let elapsed = started.elapsed();
    check("sum", sum, peer_common::skynet_sum(leaves))?;
    Ok(Outcome {
        elapsed,
        messages: peer_common::skynet_actors(leaves, branching),
    })
}

// ---- ThreadRing / ParallelThreadRing ----

struct Token(u64);
struct Next(ActorRef<Link>, Vec<u64>);

struct Ring {
    marks: Marks,
    tokens_left: AtomicU64,
    done: Mutex<Option<oneshot::Sender<()>>>,
}

#[derive(Actor)]
struct Link {
    next: Option<ActorRef<Link>>,
    ring: Arc<Ring>,
}

impl Message<Next> for Link {
    type Reply = ();

    async fn handle(&mut self, Next(next, initial): Next, _: &mut Context<Self, ()>) {
        if !initial.is_empty() {
            self.ring.marks.start();
        }
        for hops in initial {
            let _ = next.tell(Token(hops - 1)).try_send();
        }
        self.next = Some(next);
    }
}

impl Message<Token> for Link {
    type Reply = ();

    async fn handle(&mut self, Token(left): Token, _: &mut Context<Self, ()>) {
        if left > 0 {
            if let Some(n) = &self.next {
                let _ = n.tell(Token(left - 1)).try_send();
            }
        } else if self.ring.tokens_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.ring.marks.end();
            if let Some(d) = self.ring.done.lock().unwrap().take() {
                let _ = d.send(());
            }
        }
    }
}

/// The ring on a current-thread runtime; each link learns its successor (and the tokens it
/// starts) from a first message, since a kameo actor's reference exists only once spawned.
fn ring(agents: u64, tokens: Vec<u64>) -> Result<Outcome, String> {
    let hops: u64 = tokens.iter().sum();
    let (tx, rx) = oneshot::channel();
    let ring = Arc::new(Ring {
        marks: Marks::default(),
        tokens_left: AtomicU64::new(tokens.len() as u64),
        done: Mutex::new(Some(tx)),
    });
    let rt = runtime(1)?;
    let r = ring.clone();
    rt.block_on(async move {
        let links: Vec<_> = (0..agents)
            .map(|_| {
                spawn(Link {
                    next: None,
                    ring: r.clone(),
                })
            })
            .collect();
        for (k, l) in links.iter().enumerate() {
            let next = links[(k + 1) % links.len()].clone();
            let initial = tokens.get(k).map(|&t| vec![t]).unwrap_or_default();
            let _ = l.tell(Next(next, initial)).try_send();
        }
        rx.await.map_err(|_| "the ring never finished")?;
        for l in &links {
            l.kill();
        }
        for l in &links {
            l.wait_for_shutdown().await;
        }
        Ok::<_, String>(())
    })?;
    drop(rt);
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

struct Value(u64);
struct GetCount;

#[derive(Actor)]
struct Counter {
    count: u64,
    sum: u64,
    out: Option<oneshot::Sender<(Instant, u64, u64)>>,
}

impl Message<Value> for Counter {
    type Reply = ();

    async fn handle(&mut self, Value(v): Value, _: &mut Context<Self, ()>) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(v);
    }
}

impl Message<GetCount> for Counter {
    type Reply = ();

    async fn handle(&mut self, _: GetCount, ctx: &mut Context<Self, ()>) {
        if let Some(o) = self.out.take() {
            let _ = o.send((Instant::now(), self.count, self.sum));
        }
        ctx.stop();
    }
}

/// The counter a task of a current-thread runtime, a plain thread writing with
/// `tell(..).try_send()` (the unbounded mailbox never refuses).
fn counting(count: u64) -> Result<Outcome, String> {
    let rt = runtime(1)?;
    let (t0, (at, n, sum)) = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let counter = spawn(Counter {
            count: 0,
            sum: 0,
            out: Some(tx),
        });
        let writer_ref = counter.clone();
        let t0 = Instant::now();
        let writer = std::thread::spawn(move || {
            for v in 1..=count {
                let _ = writer_ref.tell(Value(v)).try_send();
            }
            let _ = writer_ref.tell(GetCount).try_send();
        });
        let r = rx.await.map_err(|_| "the counter never answered")?;
        writer.join().map_err(|_| "the writer panicked")?;
        counter.wait_for_shutdown().await;
        Ok::<_, String>((t0, r))
    })?;
    check("count", n, count)?;
    check("sum", sum, peer_common::counting_sum(count))?;
    Ok(Outcome {
        elapsed: at - t0,
        messages: count,
    })
}

// ---- 1:N fan-out ----

struct Num(u64);
struct Done(u64);
struct Start(Vec<ActorRef<FanWorker>>);

#[derive(Actor)]
struct Producer {
    messages: u64,
    left: u64,
    received: u64,
    out: Option<oneshot::Sender<u64>>,
}

impl Message<Start> for Producer {
    type Reply = ();

    async fn handle(&mut self, Start(workers): Start, _: &mut Context<Self, ()>) {
        for i in 0..self.messages {
            for w in &workers {
                let _ = w.tell(Num(i)).try_send();
            }
        }
    }
}

impl Message<Done> for Producer {
    type Reply = ();

    async fn handle(&mut self, Done(n): Done, ctx: &mut Context<Self, ()>) {
        self.received += n;
        self.left -= 1;
        if self.left == 0 {
            if let Some(o) = self.out.take() {
                let _ = o.send(self.received);
            }
            ctx.stop();
        }
    }
}

#[derive(Actor)]
struct FanWorker {
    producer: ActorRef<Producer>,
    left: u64,
    received: u64,
}

impl Message<Num> for FanWorker {
    type Reply = ();

    async fn handle(&mut self, Num(i): Num, ctx: &mut Context<Self, ()>) {
        std::hint::black_box(i);
        self.received += 1;
        self.left -= 1;
        if self.left == 0 {
            let _ = self.producer.tell(Done(self.received)).try_send();
            ctx.stop();
        }
    }
}

/// Producer and workers on a 2-worker runtime (kameo cannot place tasks on threads); the
/// producer loops `tell` over its workers (kameo 0.22's core has no 1:N mailbox; its
/// `kameo_actors` pub-sub actor would add a hop). The time spans creation to the runtime's
/// drop.
fn fan_out(workers: u64, messages: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let rt = runtime(2)?;
    let received = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let producer = spawn(Producer {
            messages,
            left: workers,
            received: 0,
            out: Some(tx),
        });
        let ws: Vec<_> = (0..workers)
            .map(|_| {
                spawn(FanWorker {
                    producer: producer.clone(),
                    left: messages,
                    received: 0,
                })
            })
            .collect();
        let _ = producer.tell(Start(ws.clone())).try_send();
        let received = rx.await.map_err(|_| "the producer never finished")?;
        for w in &ws {
            w.wait_for_shutdown().await;
        }
        producer.wait_for_shutdown().await;
        Ok::<_, String>(received)
    })?;
    drop(rt);
    Ok(Outcome {
        elapsed: started.elapsed(),
        messages: received,
    })
}

// ---- self-send ----

struct SelfSignal;

struct Worker {
    master: ActorRef<Master>,
    message_count: u64,
    start_batch: u64,
    sent: u64,
    handled: u64,
}

impl Actor for Worker {
    type Args = Self;
    type Error = Infallible;

    async fn on_start(mut w: Self, me: ActorRef<Self>) -> Result<Self, Infallible> {
        for _ in 0..w.start_batch {
            let _ = me.tell(SelfSignal).try_send();
        }
        w.sent = w.start_batch;
        Ok(w)
    }
}

impl Message<SelfSignal> for Worker {
    type Reply = ();

    async fn handle(&mut self, _: SelfSignal, ctx: &mut Context<Self, ()>) {
        self.handled += 1;
        if self.sent < self.message_count {
            self.sent += 1;
            let _ = ctx.actor_ref().tell(SelfSignal).try_send();
        } else if self.handled == self.message_count {
            let _ = self.master.tell(Done(self.handled)).try_send();
            ctx.stop();
        }
    }
}

#[derive(Actor)]
struct Master {
    left: u64,
    handled: u64,
    out: Option<oneshot::Sender<u64>>,
}

impl Message<Done> for Master {
    type Reply = ();

    async fn handle(&mut self, Done(n): Done, ctx: &mut Context<Self, ()>) {
        self.handled += n;
        self.left -= 1;
        if self.left == 0 {
            if let Some(o) = self.out.take() {
                let _ = o.send(self.handled);
            }
            ctx.stop();
        }
    }
}

/// Workers and master on a 2-worker runtime (cohort's thread_pool of 2); a self-send is a
/// `tell` to the actor's own reference. The time spans creation to the runtime's drop.
fn self_send(workers: u64, message_count: u64, start_batch: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let rt = runtime(2)?;
    let handled = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let master = spawn(Master {
            left: workers,
            handled: 0,
            out: Some(tx),
        });
        let ws: Vec<_> = (0..workers)
            .map(|_| {
                spawn(Worker {
                    master: master.clone(),
                    message_count,
                    start_batch,
                    sent: 0,
                    handled: 0,
                })
            })
            .collect();
        let handled = rx
            .await
            .map_err(|_| "the master never heard from every worker")?;
        for w in &ws {
            w.wait_for_shutdown().await;
        }
        master.wait_for_shutdown().await;
        Ok::<_, String>(handled)
    })?;
    drop(rt);
    Ok(Outcome {
        elapsed: started.elapsed(),
        messages: handled,
    })
}

// ---- async-ask ----

struct Question(u64);

/// Answers each question with twice its number.
#[derive(Actor)]
struct Answerer;

impl Message<Question> for Answerer {
    type Reply = u64;

    async fn handle(&mut self, Question(n): Question, _: &mut Context<Self, u64>) -> u64 {
        peer_common::ask_reply(n)
    }
}

/// Asks the answerer `count` times, one at a time, from inside its handler.
#[derive(Actor)]
struct Asker {
    answerer: ActorRef<Answerer>,
}

struct AskAll {
    count: u64,
    timed: bool,
    done: oneshot::Sender<Result<peer_common::AskRun, String>>,
}

impl Message<AskAll> for Asker {
    type Reply = ();

    async fn handle(&mut self, m: AskAll, _: &mut Context<Self, ()>) {
        let mut run = peer_common::AskRun::new(m.count, m.timed);
        let started = Instant::now();
        for i in 0..m.count {
            let t = run.start();
            match self.answerer.ask(Question(i)).await {
                Ok(r) => run.sum += r,
                Err(_) => {
                    let _ = m.done.send(Err(format!("ask {i} failed")));
                    return;
                }
            }
            run.stop(t);
        }
        run.elapsed = started.elapsed();
        let _ = m.done.send(Ok(run));
    }
}

/// Where the two actors of an async-ask run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AskLayout {
    /// Both tasks of a current-thread runtime.
    OneThread,
    /// Both tasks of a 2-worker runtime, which places them (as kameo's users run it).
    TwoWorkers,
    /// The answerer on a thread of its own (`spawn_in_thread`, which needs a multi-thread
    /// runtime: the asker is a task of a 2-worker one).
    AnswererThread,
}

/// kameo's `ask` (a reply future awaited in the asker's async handler), the actors laid out
/// as `layout`.
fn async_ask(count: u64, timed: bool, layout: AskLayout) -> Result<Outcome, String> {
    let rt = runtime(if layout == AskLayout::OneThread { 1 } else { 2 })?;
    let run = rt.block_on(async move {
        let answerer = if layout == AskLayout::AnswererThread {
            Answerer::spawn_in_thread_with_mailbox(Answerer, mailbox::unbounded())
        } else {
            spawn(Answerer)
        };
        let asker = spawn(Asker {
            answerer: answerer.clone(),
        });
        let (done, rx) = oneshot::channel();
        let _ = asker.tell(AskAll { count, timed, done }).try_send();
        let run = rx.await.map_err(|_| "the asker never finished")?;
        asker.kill();
        answerer.kill();
        run
    })?;
    drop(rt);
    peer_common::ask_outcome(count, run)
}
