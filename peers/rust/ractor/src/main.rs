//! The comparison scenarios on ractor 0.16 (tokio runtime, default features off so that no
//! tracing span travels with each message): `cast` for every message, a current-thread tokio
//! runtime where the scenario is on one thread, a 2-worker multi-thread runtime where it is on
//! two. See peers/README.md for every choice.

use peer_common::{Marks, Outcome, Scenario, Sizes, check};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::runtime::{Builder, Runtime};
use tokio::sync::oneshot;

type Res<T> = Result<T, ActorProcessingErr>;

fn main() {
    peer_common::main("ractor", run);
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
        Scenario::PingPongOneThread => ping_pong(z.count, 1),
        Scenario::PingPongTwoThreads => ping_pong(z.count, 2),
        Scenario::Skynet => skynet(z.leaves, z.branching),
        Scenario::ThreadRing => ring(z.agents, vec![z.hops]),
        Scenario::ParallelThreadRing => ring(z.agents, peer_common::split_hops(z.hops, z.tokens)?),
        Scenario::CountingActor => counting(z.count),
        Scenario::FanOut => fan_out(z.workers, z.messages),
        Scenario::SelfSend => self_send(z.workers, z.message_count, z.start_batch),
        Scenario::AsyncAskOneThread => async_ask(z.count, z.timed != 0, 1),
        Scenario::AsyncAskTwoThreads => async_ask(z.count, z.timed != 0, 2),
        Scenario::AsyncAskThreadPerActor => {
            Err("not ported: ractor cannot place an actor on a thread of its own".into())
        }
    }
}

fn spawn_err(e: impl std::fmt::Display) -> String {
    format!("ractor spawn failed: {e}")
}

// ---- ping-pong ----

struct Pinger;
struct Ponger;
struct Ping;
struct Pong;

struct PingerState {
    ponger: ActorRef<Ping>,
    left: u64,
    done: Option<oneshot::Sender<()>>,
    marks: Arc<Marks>,
}

impl Actor for Pinger {
    type Msg = Pong;
    type State = PingerState;
    type Arguments = (u64, oneshot::Sender<()>, Arc<Marks>);

    async fn pre_start(
        &self,
        me: ActorRef<Pong>,
        (left, done, marks): Self::Arguments,
    ) -> Res<PingerState> {
        let (ponger, _) = Actor::spawn(None, Ponger, me).await?;
        Ok(PingerState {
            ponger,
            left,
            done: Some(done),
            marks,
        })
    }

    async fn post_start(&self, _: ActorRef<Pong>, st: &mut PingerState) -> Res<()> {
        st.marks.start();
        st.ponger.cast(Ping)?;
        Ok(())
    }

    async fn handle(&self, me: ActorRef<Pong>, _: Pong, st: &mut PingerState) -> Res<()> {
        st.left -= 1;
        if st.left > 0 {
            st.ponger.cast(Ping)?;
        } else {
            st.marks.end();
            st.ponger.stop(None);
            me.stop(None);
            if let Some(d) = st.done.take() {
                let _ = d.send(());
            }
        }
        Ok(())
    }
}

impl Actor for Ponger {
    type Msg = Ping;
    type State = ActorRef<Pong>;
    type Arguments = ActorRef<Pong>;

    async fn pre_start(&self, _: ActorRef<Ping>, pinger: ActorRef<Pong>) -> Res<ActorRef<Pong>> {
        Ok(pinger)
    }

    async fn handle(&self, _: ActorRef<Ping>, _: Ping, pinger: &mut ActorRef<Pong>) -> Res<()> {
        pinger.cast(Pong)?;
        Ok(())
    }
}

/// Both actors on a runtime of `threads` workers (ractor cannot place an actor on a thread:
/// with two workers tokio decides where each runs).
fn ping_pong(count: u64, threads: usize) -> Result<Outcome, String> {
    let marks = Arc::new(Marks::default());
    let rt = runtime(threads)?;
    let m = marks.clone();
    rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let (_, handle) = Actor::spawn(None, Pinger, (count, tx, m))
            .await
            .map_err(spawn_err)?;
        rx.await.map_err(|_| "the pinger never finished")?;
        handle.await.map_err(|e| e.to_string())
    })?;
    drop(rt);
    Ok(Outcome {
        elapsed: marks.elapsed()?,
        messages: 2 * count,
    })
}

// ---- skynet ----

struct Node;

struct Up {
    parent: Option<ActorRef<u64>>,
    out: Option<oneshot::Sender<u64>>,
}

impl Up {
    fn report(&mut self, sum: u64) -> Res<()> {
        if let Some(p) = &self.parent {
            p.cast(sum)?;
        } else if let Some(o) = self.out.take() {
            let _ = o.send(sum);
        }
        Ok(())
    }
}

struct NodeState {
    up: Up,
    sum: u64,
    left: u64,
}

impl Actor for Node {
    type Msg = u64;
    type State = NodeState;
    type Arguments = (Up, u64, u64, u64);

    async fn pre_start(
        &self,
        me: ActorRef<u64>,
        (mut up, num, size, branching): Self::Arguments,
    ) -> Res<NodeState> {
        if size == 1 {
            up.report(num)?;
            me.stop(None);
            return Ok(NodeState {
                up,
                sum: 0,
                left: 0,
            });
        }
        let step = size / branching;
        for i in 0..branching {
            let child = Up {
                parent: Some(me.clone()),
                out: None,
            };
            Actor::spawn(None, Node, (child, num + i * step, step, branching)).await?;
        }
        Ok(NodeState {
            up,
            sum: 0,
            left: branching,
        })
    }

    async fn handle(&self, me: ActorRef<u64>, v: u64, st: &mut NodeState) -> Res<()> {
        st.sum += v;
        st.left -= 1;
        if st.left == 0 {
            st.up.report(st.sum)?;
            me.stop(None);
        }
        Ok(())
    }
}

/// Every node on a current-thread runtime; each stops itself once it has reported; the time
/// runs until the runtime (with whatever is left of the actors) is dropped.
fn skynet(leaves: u64, branching: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let rt = runtime(1)?;
    let sum = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let up = Up {
            parent: None,
            out: Some(tx),
        };
        let (_, handle) = Actor::spawn(None, Node, (up, 0, leaves, branching))
            .await
            .map_err(spawn_err)?;
        let sum = rx.await.map_err(|_| "the root never got the sum")?;
        handle.await.map_err(|e| e.to_string())?;
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

enum LinkMsg {
    Next(ActorRef<LinkMsg>, Vec<u64>),
    Token(u64),
}

struct Ring {
    marks: Marks,
    tokens_left: AtomicU64,
    done: Mutex<Option<oneshot::Sender<()>>>,
}

struct Link;

struct LinkState {
    next: Option<ActorRef<LinkMsg>>,
    ring: Arc<Ring>,
}

impl Actor for Link {
    type Msg = LinkMsg;
    type State = LinkState;
    type Arguments = Arc<Ring>;

    async fn pre_start(&self, _: ActorRef<LinkMsg>, ring: Arc<Ring>) -> Res<LinkState> {
        Ok(LinkState { next: None, ring })
    }

    async fn handle(&self, _: ActorRef<LinkMsg>, msg: LinkMsg, st: &mut LinkState) -> Res<()> {
        match msg {
            LinkMsg::Next(next, initial) => {
                if !initial.is_empty() {
                    st.ring.marks.start();
                }
                for hops in initial {
                    next.cast(LinkMsg::Token(hops - 1))?;
                }
                st.next = Some(next);
            }
            LinkMsg::Token(left) => {
                if left > 0 {
                    if let Some(n) = &st.next {
                        n.cast(LinkMsg::Token(left - 1))?;
                    }
                } else if st.ring.tokens_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    st.ring.marks.end();
                    if let Some(d) = st.ring.done.lock().unwrap().take() {
                        let _ = d.send(());
                    }
                }
            }
        }
        Ok(())
    }
}

/// The ring on a current-thread runtime; each link learns its successor (and the tokens it
/// starts) from a first message, since ractor spawns an actor before its successor exists.
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
        let mut links = Vec::with_capacity(agents as usize);
        for _ in 0..agents {
            let (l, h) = Actor::spawn(None, Link, r.clone())
                .await
                .map_err(spawn_err)?;
            links.push((l, h));
        }
        for (k, (l, _)) in links.iter().enumerate() {
            let next = links[(k + 1) % links.len()].0.clone();
            let initial = tokens.get(k).map(|&t| vec![t]).unwrap_or_default();
            l.cast(LinkMsg::Next(next, initial))
                .map_err(|e| e.to_string())?;
        }
        rx.await.map_err(|_| "the ring never finished")?;
        for (l, h) in links {
            l.stop(None);
            let _ = h.await;
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

enum CountMsg {
    Value(u64),
    GetCount,
}

struct Counter;

struct CounterState {
    count: u64,
    sum: u64,
    out: Option<oneshot::Sender<(Instant, u64, u64)>>,
}

impl Actor for Counter {
    type Msg = CountMsg;
    type State = CounterState;
    type Arguments = oneshot::Sender<(Instant, u64, u64)>;

    async fn pre_start(&self, _: ActorRef<CountMsg>, out: Self::Arguments) -> Res<CounterState> {
        Ok(CounterState {
            count: 0,
            sum: 0,
            out: Some(out),
        })
    }

    async fn handle(
        &self,
        me: ActorRef<CountMsg>,
        msg: CountMsg,
        st: &mut CounterState,
    ) -> Res<()> {
        match msg {
            CountMsg::Value(v) => {
                st.count += 1;
                st.sum = st.sum.wrapping_add(v);
            }
            CountMsg::GetCount => {
                if let Some(o) = st.out.take() {
                    let _ = o.send((Instant::now(), st.count, st.sum));
                }
                me.stop(None);
            }
        }
        Ok(())
    }
}

/// The counter on a current-thread runtime, a plain thread writing with `cast` (ractor's
/// mailbox is unbounded).
fn counting(count: u64) -> Result<Outcome, String> {
    let rt = runtime(1)?;
    let (t0, (at, n, sum)) = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let (counter, handle) = Actor::spawn(None, Counter, tx).await.map_err(spawn_err)?;
        let t0 = Instant::now();
        let writer = std::thread::spawn(move || {
            for v in 1..=count {
                let _ = counter.cast(CountMsg::Value(v));
            }
            let _ = counter.cast(CountMsg::GetCount);
        });
        let r = rx.await.map_err(|_| "the counter never answered")?;
        writer.join().map_err(|_| "the writer panicked")?;
        let _ = handle.await;
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

enum ProducerMsg {
    Go(Vec<ActorRef<u64>>),
    Done(u64),
}

struct Producer;

struct ProducerState {
    messages: u64,
    left: u64,
    received: u64,
    out: Option<oneshot::Sender<u64>>,
}

impl Actor for Producer {
    type Msg = ProducerMsg;
    type State = ProducerState;
    type Arguments = (u64, u64, oneshot::Sender<u64>);

    async fn pre_start(
        &self,
        _: ActorRef<ProducerMsg>,
        (messages, workers, out): Self::Arguments,
    ) -> Res<ProducerState> {
        Ok(ProducerState {
            messages,
            left: workers,
            received: 0,
            out: Some(out),
        })
    }

    async fn handle(
        &self,
        _: ActorRef<ProducerMsg>,
        msg: ProducerMsg,
        st: &mut ProducerState,
    ) -> Res<()> {
        match msg {
            ProducerMsg::Go(workers) => {
                for i in 0..st.messages {
                    for w in &workers {
                        w.cast(i)?;
                    }
                }
            }
            ProducerMsg::Done(n) => {
                st.received += n;
                st.left -= 1;
                if st.left == 0
                    && let Some(o) = st.out.take()
                {
                    let _ = o.send(st.received);
                }
            }
        }
        Ok(())
    }
}

struct FanWorker;

impl Actor for FanWorker {
    type Msg = u64;
    type State = (ActorRef<ProducerMsg>, u64, u64);
    type Arguments = (ActorRef<ProducerMsg>, u64);

    async fn pre_start(
        &self,
        _: ActorRef<u64>,
        (producer, messages): Self::Arguments,
    ) -> Res<Self::State> {
        Ok((producer, messages, 0))
    }

    async fn handle(&self, _: ActorRef<u64>, _: u64, st: &mut Self::State) -> Res<()> {
        st.2 += 1;
        st.1 -= 1;
        if st.1 == 0 {
            st.0.cast(ProducerMsg::Done(st.2))?;
        }
        Ok(())
    }
}

/// Producer and workers on a 2-worker runtime (cohort: producer on one thread, workers on an
/// active_group; ractor cannot place actors); the producer loops `cast` over its workers
/// (what a ractor process group's broadcast does). The time spans creation to the runtime's
/// drop.
fn fan_out(workers: u64, messages: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let rt = runtime(2)?;
    let received = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let (producer, ph) = Actor::spawn(None, Producer, (messages, workers, tx))
            .await
            .map_err(spawn_err)?;
        let mut ws = Vec::with_capacity(workers as usize);
        let mut handles = Vec::with_capacity(workers as usize);
        for _ in 0..workers {
            let (w, h) = Actor::spawn(None, FanWorker, (producer.clone(), messages))
                .await
                .map_err(spawn_err)?;
            ws.push(w);
            handles.push(h);
        }
        producer
            .cast(ProducerMsg::Go(ws.clone()))
            .map_err(|e| e.to_string())?;
        let received = rx.await.map_err(|_| "the producer never finished")?;
        for w in ws {
            w.stop(None);
        }
        producer.stop(None);
        for h in handles {
            let _ = h.await;
        }
        let _ = ph.await;
        Ok::<_, String>(received)
    })?;
    drop(rt);
    Ok(Outcome {
        elapsed: started.elapsed(),
        messages: received,
    })
}

// ---- self-send ----

enum WorkerMsg {
    SelfSignal,
}

struct Worker;

struct WorkerState {
    master: ActorRef<u64>,
    message_count: u64,
    sent: u64,
    handled: u64,
}

impl Actor for Worker {
    type Msg = WorkerMsg;
    type State = WorkerState;
    type Arguments = (ActorRef<u64>, u64, u64);

    async fn pre_start(
        &self,
        me: ActorRef<WorkerMsg>,
        (master, message_count, start_batch): Self::Arguments,
    ) -> Res<WorkerState> {
        for _ in 0..start_batch {
            me.cast(WorkerMsg::SelfSignal)?;
        }
        Ok(WorkerState {
            master,
            message_count,
            sent: start_batch,
            handled: 0,
        })
    }

    async fn handle(&self, me: ActorRef<WorkerMsg>, _: WorkerMsg, st: &mut WorkerState) -> Res<()> {
        st.handled += 1;
        if st.sent < st.message_count {
            st.sent += 1;
            me.cast(WorkerMsg::SelfSignal)?;
        } else if st.handled == st.message_count {
            st.master.cast(st.handled)?;
            me.stop(None);
        }
        Ok(())
    }
}

struct Master;

impl Actor for Master {
    type Msg = u64;
    type State = (u64, u64, Option<oneshot::Sender<u64>>);
    type Arguments = (u64, oneshot::Sender<u64>);

    async fn pre_start(
        &self,
        _: ActorRef<u64>,
        (workers, out): Self::Arguments,
    ) -> Res<Self::State> {
        Ok((workers, 0, Some(out)))
    }

    async fn handle(&self, me: ActorRef<u64>, n: u64, st: &mut Self::State) -> Res<()> {
        st.1 += n;
        st.0 -= 1;
        if st.0 == 0 {
            if let Some(o) = st.2.take() {
                let _ = o.send(st.1);
            }
            me.stop(None);
        }
        Ok(())
    }
}

/// Workers and master on a 2-worker runtime (cohort's thread_pool of 2); a self-send is a
/// `cast` to the actor's own reference. The time spans creation to the runtime's drop.
fn self_send(workers: u64, message_count: u64, start_batch: u64) -> Result<Outcome, String> {
    let started = Instant::now();
    let rt = runtime(2)?;
    let handled = rt.block_on(async move {
        let (tx, rx) = oneshot::channel();
        let (master, mh) = Actor::spawn(None, Master, (workers, tx))
            .await
            .map_err(spawn_err)?;
        let mut handles = Vec::with_capacity(workers as usize);
        for _ in 0..workers {
            let (_, h) = Actor::spawn(None, Worker, (master.clone(), message_count, start_batch))
                .await
                .map_err(spawn_err)?;
            handles.push(h);
        }
        let handled = rx
            .await
            .map_err(|_| "the master never heard from every worker")?;
        for h in handles {
            let _ = h.await;
        }
        let _ = mh.await;
        Ok::<_, String>(handled)
    })?;
    drop(rt);
    Ok(Outcome {
        elapsed: started.elapsed(),
        messages: handled,
    })
}

// ---- async-ask ----

/// A question and the port its answer goes to.
enum Question {
    Ask(u64, ractor::RpcReplyPort<u64>),
}

/// Answers each question with twice its number.
struct Answerer;

impl Actor for Answerer {
    type Msg = Question;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Question>, _: ()) -> Res<()> {
        Ok(())
    }

    async fn handle(&self, _: ActorRef<Question>, q: Question, _: &mut ()) -> Res<()> {
        let Question::Ask(n, port) = q;
        let _ = port.send(peer_common::ask_reply(n));
        Ok(())
    }
}

/// Asks the answerer `count` times, one at a time, from inside its handler.
struct Asker;

struct AskAll {
    count: u64,
    timed: bool,
    done: oneshot::Sender<Result<peer_common::AskRun, String>>,
}

impl Actor for Asker {
    type Msg = AskAll;
    type State = ActorRef<Question>;
    type Arguments = ActorRef<Question>;

    async fn pre_start(
        &self,
        _: ActorRef<AskAll>,
        answerer: ActorRef<Question>,
    ) -> Res<ActorRef<Question>> {
        Ok(answerer)
    }

    async fn handle(
        &self,
        _: ActorRef<AskAll>,
        m: AskAll,
        answerer: &mut ActorRef<Question>,
    ) -> Res<()> {
        let mut run = peer_common::AskRun::new(m.count, m.timed);
        let started = Instant::now();
        for i in 0..m.count {
            let t = run.start();
            match ractor::call!(answerer, Question::Ask, i) {
                Ok(r) => run.sum += r,
                Err(_) => {
                    let _ = m.done.send(Err(format!("call {i} failed")));
                    return Ok(());
                }
            }
            run.stop(t);
        }
        run.elapsed = started.elapsed();
        let _ = m.done.send(Ok(run));
        Ok(())
    }
}

/// ractor's `call!` (an `RpcReplyPort` awaited in the asker's async handler, no timeout), on
/// a runtime of `threads` workers (ractor cannot place an actor on a thread).
fn async_ask(count: u64, timed: bool, threads: usize) -> Result<Outcome, String> {
    let rt = runtime(threads)?;
    let run = rt.block_on(async move {
        let (answerer, a_handle) = Actor::spawn(None, Answerer, ()).await.map_err(spawn_err)?;
        let (asker, handle) = Actor::spawn(None, Asker, answerer.clone())
            .await
            .map_err(spawn_err)?;
        let (done, rx) = oneshot::channel();
        asker
            .cast(AskAll { count, timed, done })
            .map_err(|_| "the asker is gone".to_string())?;
        let run = rx.await.map_err(|_| "the asker never finished")?;
        asker.stop(None);
        answerer.stop(None);
        let _ = handle.await;
        let _ = a_handle.await;
        run
    })?;
    drop(rt);
    peer_common::ask_outcome(count, run)
}
