//! Every default of the runtime, in one place, with the reason for its value.

use std::time::Duration;

/// The longest an idle worker spins, polling its queue, before it parks (the default
/// [`WorkerSpin`](crate::WorkerSpin) is adaptive under it: a worker whose recent spins ended in
/// parks spins less, down to [`MIN_ADAPTIVE_SPIN`](crate::dispatcher::MIN_ADAPTIVE_SPIN)).
///
/// On the reference 2-vCPU VM a hand-off between two spinning threads costs about 0.3 µs per
/// round trip, while waking a parked thread costs about 25 µs one way. Spinning for twice the
/// wake-up cost catches the replies of request/response traffic without parking, and an idle
/// worker still parks within 50 µs, so an idle environment burns no CPU. The spin yields the
/// CPU (`sched_yield`) between rounds of 64 polls, so a spinning worker does not hold a
/// vCPU that a thread with work (an I/O thread, another worker) is waiting for; remoting's
/// round trip gains most from that (docs/BENCHMARKS.md, remote ping-pong).
pub const WORKER_SPIN: Duration = Duration::from_micros(50);

/// How many local demands a worker runs before it moves the remote half of its queue to the
/// local tail, and on a dedicated worker how many it moves at most. Bounds how long messages
/// from other threads wait behind a busy local flow, while keeping the check (one load) off
/// the per-message path.
pub const LOCAL_BATCH: usize = 64;

/// From how many queues on a multi-consumer mailbox's subscribers of one type a send goes
/// through the type's broadcast log (one entry per send, read by every queue) rather than one
/// demand per queue (`mailbox/multi_consumer/log.rs`). Below it, a push per queue costs less
/// than the log's lock and markers.
pub const LOG_MIN_QUEUES: usize = 4;

/// How many times a dedicated worker looks again at a reserved remote slot before it yields
/// its core: a sender writes the slot a few stores after reserving it, far less than one
/// `sched_yield` costs. None under loom, where each look would be a branch to explore.
#[cfg(not(cohort_loom))]
pub(crate) const SLOT_WRITE_SPINS: u32 = 64;
#[cfg(cohort_loom)]
pub(crate) const SLOT_WRITE_SPINS: u32 = 0;

/// How many remote demands a pool worker moves to its local half at once, at most (and no
/// more than its turn can run); a dedicated worker moves [`LOCAL_BATCH`], what one pass of its
/// loop runs.
pub const REMOTE_BATCH: usize = 256;

/// How many remote-half blocks (31 demands, about 1.5 KB each) the process keeps for reuse
/// once their queues' spares are taken: a sender and a runner that go at about the same pace
/// trade blocks through it instead of the allocator's shared arena, and what it keeps at most
/// (about 100 KB) is small beside a process's heap.
#[cfg(not(cohort_loom))]
pub(crate) const BLOCK_POOL: usize = 64;

/// How many demands a pool worker runs from one queue before it moves on to the next
/// (`max_demands_at_once`). SObjectizer's default: small enough that one busy agent does not
/// keep a worker from the others for long, large enough to amortise the switch. Raise it for
/// dense self-sending flows (the bulk effect of SObjectizer's performance article, part 3),
/// lower it for latency.
pub const MAX_DEMANDS_AT_ONCE: usize = 4;

/// How many times in a row a `work_stealing` worker runs the queue in its LIFO slot (the one
/// a send from this worker just woke) or the newest of its LIFO deque (the ones the slot gave
/// way to) before it serves its own FIFO deque first. Bounds how long a ping-pong between two
/// agents of one worker, or a tree of agents waking its children, can starve the queues with
/// work left after their turn.
pub const LIFO_STREAK: usize = 16;

/// The number of worker threads of a pool when not set: the machine's available
/// parallelism (2 on the reference VM).
pub fn pool_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// How often run-time statistics are taken and sent, once turned on.
pub const STATS_PERIOD: Duration = Duration::from_secs(1);

/// How many queues bound one after the other to a `work_stealing` pool start on the same
/// worker (their first *home*; after that, a queue's home is the worker that ran it last),
/// before the next worker's block begins. Agents registered one after the other sit next to
/// each other in memory, and two of them on different cores share cache lines that both
/// cores then write (false sharing); blocks keep neighbours on one core, and stealing evens
/// out the load that blocks leave uneven.
pub const HOME_BLOCK: usize = 16;

/// Every how many turns a `work_stealing` worker takes from its home run queue before its own
/// deque (tokio uses 61): bounds how long work sent from outside the pool waits behind a
/// worker's own busy queues. Set per dispatcher with
/// [`WorkStealingBuilder::home_queue_interval`](crate::WorkStealingBuilder::home_queue_interval).
pub const HOME_QUEUE_INTERVAL: usize = 61;

/// How long a `work_stealing` worker's home run queue must have held work, as the worker's
/// looks (every [`HOME_QUEUE_INTERVAL`] turns) saw it, before a look takes from it ahead of
/// the worker's own deque; restarted at each queue so taken. A worker whose deque runs dry
/// takes from its home run queue at once, and an idle worker steals from it at once: the
/// wait only applies to a worker kept busy by its own agents, which then takes one queue
/// woken from outside per wait (the k-th in line waits about k waits). The others join the
/// busy worker's round in a batch when its deque runs dry, not one per look, which keeps
/// agents on the core whose cache holds their state (the locality experiment in
/// docs/BENCHMARKS.md). Agents that have not run yet (just bound) skip the
/// wait, so that a burst of them on a busy pool starts promptly. Set per dispatcher with
/// [`WorkStealingBuilder::home_queue_wait`](crate::WorkStealingBuilder::home_queue_wait);
/// zero takes at every look.
pub const HOME_QUEUE_WAIT: Duration = Duration::from_millis(1);

/// Every how many turns a `thread_pool` worker compares its own FIFO of queues with the
/// others' (as they published them) and, if the longest is longer than its own by more than
/// a quarter plus one, takes half the difference, the oldest first: keeps the wait of a busy
/// queue close to what one shared FIFO would give, at one published length per interval.
pub const BALANCE_INTERVAL: usize = 16;

/// How long a queue must have waited in a busy `work_stealing` worker's LIFO slot, through
/// one single turn of that worker, before an idle worker takes it. Twice the cost of waking
/// a parked thread on the reference VM: ordinary hand-offs keep their affinity, a handler
/// that blocks does not strand the agent it just woke.
pub const SLOT_STEAL_AFTER: Duration = Duration::from_micros(50);

/// How long an idle pool worker sleeps before it parks with no time limit. Parking for good
/// costs a heavy fence (`membarrier`, which interrupts the other cores running the process),
/// so a worker woken more often than this, by a trickle of messages, never pays it; a fill
/// of another worker's LIFO slot that raced with this sleep is seen when it ends.
pub const PARK_FOR_GOOD_AFTER: Duration = Duration::from_millis(10);

/// How long a pool queue stays idle, with no push, before the worker that ran it gives back
/// what it kept of a burst (its remote block, its local slots) as that worker runs out of
/// work. A queue that wakes again sooner keeps them, so a busy agent never pays a block
/// through the allocator per turn; one idle this long is waiting, not between messages.
pub const GIVE_BACK_AFTER: Duration = Duration::from_millis(10);

/// How deep agent states can nest (a top-level state is at depth 0): SObjectizer's limit.
/// Switching and looking up handlers walk at most this many parents.
pub const MAX_STATE_DEPTH: usize = 16;

/// How many `transfer_to_state` hops one message may make before it is taken for a loop and
/// dropped as a `TransferLoop` dead letter. A transfer chain longer than a few states is a
/// design error; 16 is generous and bounds the cost of a loop.
pub const MAX_STATE_TRANSFERS: usize = 16;

/// How many cancelled timers may wait in the timer queue before it is compacted (the
/// compaction also waits until they outnumber the live timers). Cancelled timers cost their
/// queue entry until then; compacting removes them all at once in O(n), so every cancel costs
/// amortised O(1), and small environments never compact at all.
pub const TIMER_COMPACT_MIN: usize = 1024;

/// Where pending timers wait. The wheel: with a million pending timers it schedules and
/// fires each in O(1) where the heap pays O(log n) per timer fired (see docs/BENCHMARKS.md,
/// `cohort-bench timers`, for the figures), and with few timers both cost the same.
pub const TIMER_QUEUE: crate::timer::TimerQueue = crate::timer::TimerQueue::Wheel;

/// The span of a bottom-level slot of the timer wheel. Timers still fire at their exact
/// deadline (the current and next tick wait in a heap); the tick only sets how finely the
/// wheel sorts: 1 ms keeps a slot's worth of timers small for the usual delays (milliseconds
/// to seconds) while six levels of 64 slots span 2.2 years.
pub const TIMER_WHEEL_TICK: std::time::Duration = std::time::Duration::from_millis(1);

/// What a full bounded message chain does when its parameters say nothing: refuse the send
/// with a typed error ([`MchainError::Full`](crate::mchain::MchainError::Full)), the reaction
/// that loses nothing silently and makes the sender decide.
pub const MCHAIN_OVERFLOW: crate::mchain::Overflow = crate::mchain::Overflow::Error;

/// How long [`PendingReply::wait`](crate::PendingReply::wait) polls for the reply before it
/// sleeps on its condition variable: zero. On a loaded machine a polling requester takes the
/// core that the worker which must reply is waiting for, which costs far more than the
/// little polling saves on idle cores (`cohort-bench request-reply --spin-us N` compares).
/// Raise it with
/// [`PendingReply::spin`](crate::PendingReply::spin) on machines with cores to spare.
pub const REPLY_SPIN: std::time::Duration = std::time::Duration::ZERO;
/// How many times a message may be redirected (or transformed) by message limits on its way
/// to an agent before it is dropped as a loop ([`DeliveryFailure::RedirectLoop`]). Agents
/// whose full queues redirect to one another would otherwise bounce a message forever; a
/// legitimate chain of overflow targets is a handful of hops (SObjectizer allows 32).
///
/// [`DeliveryFailure::RedirectLoop`]: crate::DeliveryFailure::RedirectLoop
pub const MAX_REDIRECT_DEPTH: usize = 32;

/// Worker threads of the tokio runtime an environment starts for its agents' futures when
/// the application gives none ([`EnvironmentBuilder::async_threads`](crate::EnvironmentBuilder::async_threads)):
/// one. Agents' futures mostly wait on I/O and hand their output back to the agents' own
/// dispatchers, so one thread keeps up, and it takes no core from the dispatchers.
pub const ASYNC_THREADS: usize = 1;

/// The name of the embedded tokio runtime's threads (how to find them in `top -H`).
pub const ASYNC_THREAD_NAME: &str = "cohort-async";

/// How long stopping an environment waits for its embedded tokio runtime's threads to end:
/// its futures are cancelled by then, so this only bounds a future whose drop blocks.
pub const ASYNC_SHUTDOWN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
