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
