//! [`DedicatedReader`]: the hold of a dedicated worker thread on the remote half of a queue it
//! runs, from its first look to its retirement.

use super::event_queue::{EventQueue, Notifier, QueueItem};
use super::local::Local;
use super::pool_state::{RETIRED, SLEEPING, tail_index};
use super::wakeup::QueueWakeup;
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

    /// [`has_remote`](Self::has_remote), with the index read by
    /// [`remote_tail_ordered`](EventQueue::remote_tail_ordered): for a `prio_one_thread`
    /// worker that has just lowered this queue's flag, so that a push whose sender still saw
    /// the flag up is found here (see `SharedWakeup`).
    #[inline]
    pub(crate) fn has_remote_after_lower(&self) -> bool {
        let tail = self.queue.remote_tail_ordered();
        // SAFETY: this thread is the remote half's one reader (the token's claim).
        let head = unsafe { self.queue.run.remote_head.index() };
        head != tail
    }

    /// True when the remote half's next demand is written: what the worker polls while it
    /// waits (the slot, on the line its sender writes, see
    /// [`Head::next_is_written`](super::remote_blocks::Head::next_is_written)); before the
    /// queue's first remote push, the state's index.
    #[inline]
    pub(crate) fn has_written(&self) -> bool {
        // SAFETY: this thread is the remote half's one reader (the token's claim).
        match unsafe { self.queue.run.remote_head.next_is_written() } {
            Some(written) => written,
            None => self.has_remote(),
        }
    }

    /// Takes the remote half's next demand if its sender has written it, straight from its
    /// slot, for a worker whose local half is empty: it runs the demand without copying it
    /// through the local ring. `None` before the first block (the state's index then says
    /// what was pushed: [`drain_written`](Self::drain_written) takes it).
    #[inline]
    pub(crate) fn pop_written(&self) -> Option<T> {
        if !self.queue.run.remote_head.has_block() {
            return None;
        }
        self.pop_from_blocks()
    }

    /// The next written demand of the remote half's blocks (the queue has its first block).
    #[inline]
    fn pop_from_blocks(&self) -> Option<T> {
        // SAFETY: this thread is the remote half's one reader (the token's claim); with no
        // tail, `pop` stops at the first value not written yet.
        unsafe { self.queue.run.remote_head.pop(u64::MAX) }
    }

    /// Moves up to `max` remote demands to the local tail of `local` (this queue's token);
    /// returns how many moved. The worker, its remote half's one reader, takes what its
    /// senders have written, slot by slot, without reading the state: the state's line then
    /// stays with the senders, whose reservations write it (a send to a busy worker moves one
    /// line, its slot's, between the cores); it learns of a reservation not written yet from
    /// the state only before it sleeps. Before the first block, up to the state's index.
    #[inline]
    pub(crate) fn drain_written(&self, local: &Local<'_, T>, max: usize) -> usize {
        if self.queue.run.remote_head.has_block() {
            return local.move_to_local(max, || self.pop_from_blocks());
        }
        local.drain_remote(max)
    }

    /// Sleeps until a remote push or a close (the caller spins first).
    ///
    /// A worker that has its queue's wake-up to itself raises [`SLEEPING`] in the state, in a
    /// read-modify-write that also reads the index: if nothing was reserved past what it has
    /// read, it parks, and the next reservation, a read-modify-write of the same word, finds
    /// the flag, clears it and unparks the worker (the two are ordered on the one word, so
    /// no push is slept through, and a push to an awake worker costs nothing more). A close
    /// unparks the worker whatever the flag says. A worker that serves a group of queues
    /// sleeps on the group's wake-up: a sender notifies it after its reservation (a `SeqCst`
    /// fence, then a look at the worker's flag), the worker raises its flag, fences, then
    /// compares the state's index with its own: one of the two sees the other.
    pub(crate) fn sleep(&self) {
        let q = self.queue;
        match &q.notifier {
            Notifier::Thread(side) => match &side.wakeup {
                QueueWakeup::Own(_) => {
                    let state = &q.senders.state;
                    let s = state.fetch_or(SLEEPING, Ordering::AcqRel);
                    // SAFETY: this thread is the remote half's one reader (the token's claim).
                    let head = unsafe { q.run.remote_head.index() };
                    if tail_index(s) == head && !q.is_closed() {
                        crate::sync::park();
                    } else if tail_index(s) != head {
                        // A reservation not written yet (its sender was preempted between
                        // the two, or is writing now): let it run.
                        crate::sync::yield_now();
                    }
                    // Unless a sender cleared it (and unparked this thread).
                    state.fetch_and(!SLEEPING, Ordering::Relaxed);
                }
                QueueWakeup::Shared { .. } => side
                    .wakeup
                    .sleep(|| self.has_remote() || self.queue.is_closed()),
            },
            Notifier::Pool { .. } => {}
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
