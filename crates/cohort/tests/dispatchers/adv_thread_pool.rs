//! `adv_thread_pool`: thread-safe handlers of one agent run in parallel; its other handlers
//! (and `start`, `finish`) never overlap any handler of it; bad parameters are typed errors.

use crate::common;

use cohort::dispatcher::{Fifo, PoolBindParams};
use cohort::{Agent, Context, DefineError, DispatcherError, MessageLimits};
use common::{DeadLetters, TIMEOUT, watchdog};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// How long a thread-safe handler waits to see a second one running beside it.
const MEET_WITHIN: Duration = Duration::from_secs(5);

/// A message for the thread-safe handler.
struct Read(u64);

/// A message for the exclusive handler: (sender, sequence number).
struct Write(usize, u64);

/// Counts overlaps it must never see: a writer beside anyone, two writers.
#[derive(Default)]
struct Watch {
    readers: AtomicUsize,
    writer: AtomicBool,
    violations: AtomicUsize,
    /// The most readers seen at once.
    most_readers: AtomicUsize,
}

impl Watch {
    fn read(&self, work: u64) {
        let now = self.readers.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_readers.fetch_max(now, Ordering::SeqCst);
        if self.writer.load(Ordering::SeqCst) {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        busy(work);
        if self.writer.load(Ordering::SeqCst) {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        self.readers.fetch_sub(1, Ordering::SeqCst);
    }

    /// An exclusive section: nobody else may be inside.
    fn exclusive(&self, work: u64) {
        if self.writer.swap(true, Ordering::SeqCst) || self.readers.load(Ordering::SeqCst) != 0 {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        busy(work);
        if self.readers.load(Ordering::SeqCst) != 0 {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        self.writer.store(false, Ordering::SeqCst);
    }
}

fn busy(seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..200 {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// Thread-safe `Read`, exclusive `Write` (checks FIFO per sender), exclusive start/finish.
struct Store {
    watch: Arc<Watch>,
    reads: AtomicUsize,
    next_seq: Vec<u64>,
    out_of_order: usize,
    writes: usize,
    finished: Sender<(usize, usize, usize)>,
}

impl Agent for Store {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        ctx.on_thread_safe(|me: &Self, r: &Read| {
            me.watch.read(r.0);
            me.reads.fetch_add(1, Ordering::SeqCst);
        })?;
        ctx.on(|me: &mut Self, w: &Write, _: &mut Context<'_, Self>| {
            me.watch.exclusive(w.1);
            if me.next_seq[w.0] != w.1 {
                me.out_of_order += 1;
            }
            me.next_seq[w.0] = w.1 + 1;
            me.writes += 1;
        })?;
        Ok(())
    }

    fn start(&mut self, _: &mut Context<'_, Self>) {
        self.watch.exclusive(1);
    }

    fn finish(&mut self, _: &mut Context<'_, Self>) {
        self.watch.exclusive(2);
        let _ = self.finished.send((
            self.reads.load(Ordering::SeqCst),
            self.writes,
            self.out_of_order,
        ));
    }
}

/// Thread-safe `Read`s wait (bounded) until another one runs beside them.
struct Meeting {
    inside: AtomicUsize,
    met: Sender<bool>,
    limits: Option<MessageLimits>,
}

impl Agent for Meeting {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        if let Some(l) = self.limits.take() {
            ctx.set_message_limits(l)?;
        }
        ctx.on_thread_safe(|me: &Self, _: &Read| {
            // The pairs come one after the other: arrivals 1 and 2 are the first pair, 3 and
            // 4 the second, and so on; this one meets its partner when the count reaches the
            // pair's end.
            let arrival = me.inside.fetch_add(1, Ordering::SeqCst) + 1;
            let pair_end = arrival.div_ceil(2) * 2;
            let t0 = Instant::now();
            let mut met = false;
            while t0.elapsed() < MEET_WITHIN {
                if me.inside.load(Ordering::SeqCst) >= pair_end {
                    met = true;
                    break;
                }
                std::hint::spin_loop();
            }
            let _ = me.met.send(met);
        })?;
        Ok(())
    }
}

fn adv(env: &cohort::Environment, name: &str, threads: usize) -> cohort::AdvThreadPoolHandle {
    cohort::AdvThreadPoolBuilder::new()
        .name(name)
        .threads(threads)
        .build(env)
        .unwrap()
}

/// Two `Read`s, `pairs` times, to a `Meeting` with `limits`: each pair meets.
fn pairs_meet(pairs: usize, limits: Option<MessageLimits>) {
    watchdog(TIMEOUT, move || {
        let (builder, dead) = DeadLetters::builder();
        let env = builder.start().unwrap();
        let pool = adv(&env, "adv-par", 2);
        let (met_tx, met_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        coop.set_binder(
            pool.pool_binder(PoolBindParams::new().fifo(Fifo::Individual))
                .unwrap(),
        );
        let m = coop
            .add(Meeting {
                inside: AtomicUsize::new(0),
                met: met_tx,
                limits,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        for _ in 0..pairs {
            m.send(Read(0));
            m.send(Read(1));
            let met = common::recv_n(&met_rx, 2, "both thread-safe handlers");
            assert_eq!(
                met,
                vec![true, true],
                "two thread-safe handlers of one agent on a 2-worker adv_thread_pool must run \
                 at the same time"
            );
        }
        env.stop_and_wait();
        assert_eq!(dead.all(), vec![]);
    });
}

#[test]
fn thread_safe_handlers_of_one_agent_run_in_parallel() {
    pairs_meet(1, None);
}

/// Counted by a message limit, thread-safe messages still run in parallel, and each one
/// handled frees its count: a limit of four lets three pairs in one after the other. Not two:
/// a handler reports its meeting before it returns and frees its count, so the next pair can
/// be sent while the last pair's two counts are still held (a worker finishes its handler
/// before it runs the next, so never more than two).
#[test]
fn thread_safe_handlers_run_in_parallel_under_a_message_limit() {
    pairs_meet(3, Some(MessageLimits::new().drop::<Read>(4)));
}

/// Plain threads send a mix of `Read`s and `Write`s to agents on a 3-worker pool: reads
/// overlap each other, nothing overlaps a write, start or finish, every count is exact and
/// writes keep their order per sender.
fn exclusive_beside_thread_safe(fifo: Fifo, name: &str) {
    const AGENTS: usize = 2;
    const SENDERS: usize = 3;
    let per_sender = common::count(2_000) as u64;
    let (builder, dead) = DeadLetters::builder();
    let env = builder.start().unwrap();
    let pool = adv(&env, name, 3);
    // Cooperation fifo: one queue, so exclusion spans both agents (one watch).
    let shared = Arc::new(Watch::default());
    let watches: Vec<Arc<Watch>> = (0..AGENTS)
        .map(|_| match fifo {
            Fifo::Cooperation => shared.clone(),
            Fifo::Individual => Arc::new(Watch::default()),
        })
        .collect();
    let (fin_tx, fin_rx) = mpsc::channel();
    let mut coop = env.new_coop();
    coop.set_binder(pool.pool_binder(PoolBindParams::new().fifo(fifo)).unwrap());
    let targets: Vec<_> = watches
        .iter()
        .map(|watch| {
            coop.add(Store {
                watch: watch.clone(),
                reads: AtomicUsize::new(0),
                next_seq: vec![0; SENDERS],
                out_of_order: 0,
                writes: 0,
                finished: fin_tx.clone(),
            })
            .mbox()
        })
        .collect();
    env.register_coop(coop).unwrap();
    let barrier = Arc::new(Barrier::new(SENDERS));
    let threads: Vec<_> = (0..SENDERS)
        .map(|s| {
            let (targets, barrier) = (targets.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut seq = 0;
                for i in 0..per_sender {
                    for t in &targets {
                        if i % 4 == 3 {
                            t.send(Write(s, seq));
                        } else {
                            t.send(Read(i));
                        }
                    }
                    if i % 4 == 3 {
                        seq += 1;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    env.stop_and_wait();
    let writes = SENDERS * (per_sender as usize / 4);
    let reads = SENDERS * per_sender as usize - writes;
    let fin = common::recv_n(&fin_rx, AGENTS, "every finish");
    assert_eq!(
        fin,
        vec![(reads, writes, 0); AGENTS],
        "{fifo:?}: (reads, writes, writes out of order per sender) at finish"
    );
    assert_eq!(
        watches
            .iter()
            .map(|w| w.violations.load(Ordering::SeqCst))
            .sum::<usize>(),
        0,
        "{fifo:?}: an exclusive handler overlapped another handler of its queue"
    );
    assert_eq!(dead.all(), vec![], "{fifo:?}: no dead letter");
}

#[test]
fn exclusive_handlers_never_overlap_individual_fifo() {
    watchdog(TIMEOUT, || {
        exclusive_beside_thread_safe(Fifo::Individual, "adv-exi")
    });
}

#[test]
fn exclusive_handlers_never_overlap_cooperation_fifo() {
    watchdog(TIMEOUT, || {
        exclusive_beside_thread_safe(Fifo::Cooperation, "adv-exc")
    });
}

#[test]
fn thread_safe_handlers_run_as_ordinary_ones_elsewhere() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let watch = Arc::new(Watch::default());
        let (fin_tx, fin_rx) = mpsc::channel();
        let mut coop = env.new_coop();
        let m = coop
            .add(Store {
                watch: watch.clone(),
                reads: AtomicUsize::new(0),
                next_seq: vec![0],
                out_of_order: 0,
                writes: 0,
                finished: fin_tx,
            })
            .mbox();
        env.register_coop(coop).unwrap();
        for i in 0..10 {
            m.send(Read(i));
        }
        m.send(Write(0, 0));
        env.stop_and_wait();
        assert_eq!(common::recv(&fin_rx, "finish"), (10, 1, 0));
        assert_eq!(watch.most_readers.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn bad_parameters_are_typed_errors() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        match cohort::AdvThreadPoolBuilder::new().threads(0).build(&env) {
            Err(DispatcherError::InvalidParameter { parameter, .. }) => {
                assert_eq!(parameter, "threads")
            }
            other => panic!("threads(0): {other:?}"),
        }
        let pool = adv(&env, "adv-bad", 1);
        match pool.pool_binder(PoolBindParams::new().max_demands_at_once(0)) {
            Err(DispatcherError::InvalidParameter { parameter, .. }) => {
                assert_eq!(parameter, "max_demands_at_once")
            }
            other => panic!("max_demands_at_once(0): {other:?}"),
        }
        pool.shutdown();
        let mut coop = env.new_coop();
        coop.set_binder(pool.binder());
        coop.add(Meeting {
            inside: AtomicUsize::new(0),
            met: mpsc::channel().0,
            limits: None,
        });
        let err = env.register_coop(coop).unwrap_err();
        assert!(
            err.to_string().contains("adv-bad"),
            "binding to a shut-down adv_thread_pool names it: {err}"
        );
        env.stop_and_wait();
    });
}
