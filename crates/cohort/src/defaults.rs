//! Every default of the runtime, in one place, with the reason for its value.

use std::time::Duration;

/// How long an idle worker spins, polling its queue, before it parks.
///
/// On the reference 2-vCPU VM a hand-off between two spinning threads costs about 0.3 µs per
/// round trip, while waking a parked thread costs about 25 µs one way. Spinning for twice the
/// wake-up cost catches the replies of request/response traffic without parking, and an idle
/// worker still parks within 50 µs, so an idle environment burns no CPU.
pub const WORKER_SPIN: Duration = Duration::from_micros(50);

/// How many local demands a worker runs before it moves the remote half of its queue to the
/// local tail. Bounds how long messages from other threads wait behind a busy local flow,
/// while keeping the check (one load) off the per-message path.
pub const LOCAL_BATCH: usize = 64;

/// How many remote demands a worker moves to its local half at once.
pub const REMOTE_BATCH: usize = 256;

/// How many demands a pool worker runs from one queue before it moves on to the next
/// (`max_demands_at_once`). SObjectizer's default: small enough that one busy agent does not
/// keep a worker from the others for long, large enough to amortise the switch. Raise it for
/// dense self-sending flows (the seed's bulk effect), lower it for latency.
pub const MAX_DEMANDS_AT_ONCE: usize = 4;

/// How many times in a row a `work_stealing` worker runs the queue in its LIFO slot (the one
/// a send from this worker just woke) before it serves its own deque first. Bounds how long a
/// ping-pong between two agents of one worker can starve the rest of that worker's queues.
pub const LIFO_STREAK: usize = 16;

/// The number of worker threads of a pool when not set: the machine's available
/// parallelism (2 on the reference VM).
pub fn pool_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// How often run-time statistics are taken and sent, once turned on.
pub const STATS_PERIOD: Duration = Duration::from_secs(1);

/// Every how many turns a `work_stealing` worker takes from the shared injector before its own
/// deque (tokio uses 61): bounds how long work sent from outside the pool waits behind a
/// worker's own busy queues.
pub const INJECTOR_INTERVAL: usize = 61;

/// How long a queue must have waited in a busy `work_stealing` worker's LIFO slot, through
/// one single turn of that worker, before an idle worker takes it. Twice the cost of waking
/// a parked thread on the reference VM: ordinary hand-offs keep their affinity, a handler
/// that blocks does not strand the agent it just woke.
pub const SLOT_STEAL_AFTER: Duration = Duration::from_micros(50);

/// How many times a message may be redirected (or transformed) by message limits on its way
/// to an agent before it is dropped as a loop ([`DeliveryFailure::RedirectLoop`]). Agents
/// whose full queues redirect to one another would otherwise bounce a message forever; a
/// legitimate chain of overflow targets is a handful of hops (SObjectizer allows 32).
///
/// [`DeliveryFailure::RedirectLoop`]: crate::DeliveryFailure::RedirectLoop
pub const MAX_REDIRECT_DEPTH: usize = 32;
