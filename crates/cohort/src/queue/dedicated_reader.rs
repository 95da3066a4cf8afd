//! [`DedicatedReader`]: the hold of a dedicated worker thread on the remote half of a queue it
//! runs, from its first look to its retirement.

use super::event_queue::{EventQueue, Notifier, QueueItem};
use super::pool_state::{RETIRED, tail_index};
use crate::agent::demand::Demand;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

/// Proof that the current thread is the one reader of a queue's remote half for the queue's
/// whole run: a dedicated worker (`one_thread`, `active_obj`, `active_group`,
/// `prio_one_thread`), which looks at the remote half between turns, sleeps on it, and
/// retires it as it exits. Not `Send`, not `Clone`; [`retire`](Self::retire) consumes it.
pub(crate) struct DedicatedReader<'q, T: QueueItem = Demand> {
    queue: &'q EventQueue<T>,
    _not_send: PhantomData<*const ()>,
}

impl<'q, T: QueueItem> DedicatedReader<'q, T> {
    /// The reader of `q`'s remote half.
    ///
    /// # Safety
    /// The current thread is `q`'s dedicated worker: no other thread reads `q`'s remote half
    /// while the reader lives (the dispatcher gives each of its queues one thread).
    pub(crate) unsafe fn claim(q: &'q EventQueue<T>) -> Self {
        DedicatedReader {
            queue: q,
            _not_send: PhantomData,
        }
    }

    /// True when the remote half has demands (reserved beyond the index the worker has read
    /// up to; one may still be being written).
    #[inline]
    pub(crate) fn has_remote(&self) -> bool {
        // SAFETY: this thread is the remote half's one reader (the token's claim).
        unsafe { self.queue.has_remote_for_reader() }
    }

    /// Sleeps until a remote push or a close (the caller spins first). A sender reserves its
    /// index, writes it, then notifies (a `SeqCst` fence, then a look at the worker's flag);
    /// the worker raises its flag, fences, then compares the state's index with its own: one
    /// of the two sees the other, so no push is slept through.
    pub(crate) fn sleep(&self) {
        if let Notifier::Thread(side) = &self.queue.notifier {
            side.wakeup
                .sleep(|| self.has_remote() || self.queue.is_closed());
        }
    }

    /// Called once the worker has left its loop: flags the state [`RETIRED`] and rejects what
    /// the remote half holds; whatever arrives from now on (a sender that saw its receiver
    /// alive just before it finished) is rejected by its sender at once, counted as a dead
    /// letter, instead of waiting in a queue nobody runs. The flag and every reservation are
    /// read-modify-writes of the state, so each push lands on exactly one side of it: swept
    /// here, or rejected by its sender.
    pub(crate) fn retire(self) {
        let q = self.queue;
        if let Notifier::Thread(_) = &q.notifier {
            let tail = tail_index(q.senders.state.fetch_or(RETIRED, Ordering::AcqRel));
            // SAFETY: this thread is the remote half's one reader (the token's claim).
            unsafe { q.pop_remote_until(tail, T::reject) };
        }
    }
}
