//! The outbound queue to one peer: many sender threads, one writer task.
//!
//! A lock-free queue that grows in blocks as it fills and frees each block once the writer
//! has taken its messages (`crossbeam_queue::SegQueue`), bounded by a count of the places
//! taken in it, and a "writer parked" flag: a sender takes a place, pushes, and wakes the
//! writer (a `tokio::sync::Notify`) only when the writer said it is about to sleep; a busy
//! writer is never notified. An idle peer's queue holds at most one block, not its
//! capacity. Senders blocked by [`Overflow::Wait`] sleep on a condition variable that the
//! writer signals after taking a batch, only when someone waits.

use crate::config::Overflow;
use cohort::AnyMessage;
use crossbeam_queue::SegQueue;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// One message waiting for the writer.
pub(crate) struct Outbound {
    /// The registry entry of its type.
    pub(crate) entry: u32,
    /// The peer's mailbox id (see `PeerShared::mbox_names`).
    pub(crate) mbox: u32,
    pub(crate) msg: AnyMessage,
}

/// Why a push did not queue the message it was given.
pub(crate) enum Refused {
    /// The queue is full (drop newest, error): this message is not queued.
    Full(Outbound),
    /// The oldest message was dropped to queue this one (drop oldest).
    DroppedOldest(Outbound),
    /// The peer stopped accepting while a sender waited for room.
    Closed(Outbound),
}

pub(crate) struct OutboundQueue {
    queue: SegQueue<Outbound>,
    /// Places taken: a sender takes one before it pushes and the writer gives it back after
    /// it popped, so the queue never holds more than `capacity` messages.
    taken: AtomicUsize,
    capacity: usize,
    writer_parked: AtomicBool,
    wake_writer: Notify,
    space_waiters: AtomicUsize,
    space_lock: Mutex<()>,
    space: Condvar,
}

impl OutboundQueue {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: SegQueue::new(),
            taken: AtomicUsize::new(0),
            capacity,
            writer_parked: AtomicBool::new(false),
            wake_writer: Notify::new(),
            space_waiters: AtomicUsize::new(0),
            space_lock: Mutex::new(()),
            space: Condvar::new(),
        }
    }

    /// Queues `item`, applying `overflow` when full; `open` says whether the peer still
    /// accepts (checked while waiting for room).
    pub(crate) fn push(
        &self,
        item: Outbound,
        overflow: Overflow,
        open: impl Fn() -> bool,
    ) -> Result<(), Refused> {
        let result = if self.take_place() {
            self.queue.push(item);
            Ok(())
        } else {
            match overflow {
                Overflow::DropNewest | Overflow::Error => Err(Refused::Full(item)),
                Overflow::DropOldest => self.replace_oldest(item),
                Overflow::Wait => self.wait_for_room(item, open),
            }
        };
        self.wake();
        result
    }

    /// Takes a place in the queue if one is free: one atomic add when it is.
    #[inline]
    fn take_place(&self) -> bool {
        // Relaxed: the count only bounds the queue; the queue itself publishes the message.
        if self.taken.fetch_add(1, Ordering::Relaxed) < self.capacity {
            return true;
        }
        self.taken.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Drops the oldest message for `item`, which takes its place.
    #[cold]
    fn replace_oldest(&self, item: Outbound) -> Result<(), Refused> {
        loop {
            if let Some(old) = self.queue.pop() {
                self.queue.push(item);
                return Err(Refused::DroppedOldest(old));
            }
            if self.take_place() {
                self.queue.push(item);
                return Ok(());
            }
            // Every place is held by a push not landed yet or by the batch the writer is
            // encoding (it gives the places back at its end): another thread's work, which
            // may need this core to run it.
            std::thread::yield_now();
        }
    }

    /// Queues `item` if there is room, without waking the writer; returns whether the
    /// writer is parked (then the caller writes directly or calls [`Self::wake`]). Gives
    /// the item back when the queue is full.
    #[inline]
    pub(crate) fn push_quiet(&self, item: Outbound) -> Result<bool, Outbound> {
        if !self.take_place() {
            return Err(item);
        }
        self.queue.push(item);
        // Pairs with the fence in `park`: either the writer sees the item, or this sees
        // its flag.
        fence(Ordering::SeqCst);
        Ok(self.writer_parked.load(Ordering::Relaxed))
    }

    #[cold]
    fn wait_for_room(&self, item: Outbound, open: impl Fn() -> bool) -> Result<(), Refused> {
        self.space_waiters.fetch_add(1, Ordering::SeqCst);
        let result = loop {
            if !open() {
                break Err(Refused::Closed(item));
            }
            let guard = self.space_lock.lock().unwrap_or_else(|e| e.into_inner());
            if self.take_place() {
                self.queue.push(item);
                break Ok(());
            }
            self.wake();
            // The writer signals after each batch it takes; the timeout only bounds the
            // wait if the peer closes (then `open` turns false).
            let _ = self
                .space
                .wait_timeout(guard, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner());
        };
        self.space_waiters.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Wakes the writer if it is parked (or about to park).
    #[inline]
    pub(crate) fn wake(&self) {
        // Pairs with the fence in `park`: either the writer sees the pushed item, or this
        // sees its flag.
        fence(Ordering::SeqCst);
        if self.writer_parked.load(Ordering::Relaxed)
            && self.writer_parked.swap(false, Ordering::AcqRel)
        {
            self.wake_writer.notify_one();
        }
    }

    /// Takes the oldest message (writer only).
    #[inline]
    pub(crate) fn pop(&self) -> Option<Outbound> {
        let o = self.pop_held()?;
        self.release(1);
        Some(o)
    }

    /// Takes the oldest message and keeps its place until [`Self::release`] (writer only):
    /// a batch gives its places back with one atomic operation on the count the senders
    /// add to, not one per message.
    #[inline]
    pub(crate) fn pop_held(&self) -> Option<Outbound> {
        self.queue.pop()
    }

    /// Gives back the places of `n` messages taken with [`Self::pop_held`] (writer only).
    #[inline]
    pub(crate) fn release(&self, n: usize) {
        if n > 0 {
            self.taken.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Tells senders waiting for room that the writer took messages (writer only).
    #[inline]
    pub(crate) fn signal_space(&self) {
        if self.space_waiters.load(Ordering::SeqCst) > 0 {
            let _guard = self.space_lock.lock().unwrap_or_else(|e| e.into_inner());
            self.space.notify_all();
        }
    }

    /// Waits until a message may be in the queue or [`OutboundQueue::kick`] was called
    /// (writer only; may return spuriously).
    pub(crate) async fn park(&self) {
        self.writer_parked.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.queue.is_empty() {
            self.writer_parked.store(false, Ordering::Relaxed);
            return;
        }
        self.wake_writer.notified().await;
        self.writer_parked.store(false, Ordering::Relaxed);
    }

    /// Wakes the writer whatever the queue holds, for it to write an `Ack` (reader).
    pub(crate) fn nudge(&self) {
        self.wake_writer.notify_one();
    }

    /// Wakes the writer whatever the queue holds (shutdown, closing).
    pub(crate) fn kick(&self) {
        self.wake_writer.notify_one();
        let _guard = self.space_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.space.notify_all();
    }

    /// Messages queued (or being pushed): what [`RemoteNode::queued`](crate::RemoteNode::queued)
    /// and [`NodeStats::outbound_queued`](crate::NodeStats::outbound_queued) report.
    pub(crate) fn len(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }

    /// Whether no message is in the queue (writer: a place taken for a push not landed yet
    /// does not keep it from parking, since that push wakes it).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static NET: Cell<isize> = const { Cell::new(0) };
    }

    /// The system allocator, counting the bytes the current thread holds: the queue's own
    /// memory, where resident memory would show the allocator's reuse of pages instead.
    struct Counting;

    fn add(bytes: isize) {
        // A thread being torn down has no counter left: nothing to count there.
        let _ = NET.try_with(|n| n.set(n.get() + bytes));
    }

    // SAFETY: every call is forwarded to the system allocator with the arguments it came
    // with; the counting touches a thread-local cell only, which allocates nothing.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            add(layout.size() as isize);
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            add(-(layout.size() as isize));
            // SAFETY: `ptr` came from `alloc` above with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static ALLOC: Counting = Counting;

    fn held() -> isize {
        NET.with(Cell::get)
    }

    /// A message whose mailbox id tells it apart.
    fn item(i: u32) -> Outbound {
        Outbound {
            entry: 0,
            mbox: i,
            msg: AnyMessage::new(u64::from(i)),
        }
    }

    #[test]
    fn a_queue_holds_memory_for_what_it_queues_and_gives_it_back() {
        cohort::testing::watchdog(Duration::from_secs(30), || {
            const BURST: u32 = 10_000;
            // One block of slots, with room for the block's header.
            let block = 31 * (std::mem::size_of::<Outbound>() + std::mem::size_of::<usize>()) + 64;
            let start = held();
            let q = OutboundQueue::new(crate::defaults::OUTBOUND_CAPACITY);
            assert!(
                held() - start <= 0,
                "an empty queue holds {} bytes",
                held() - start
            );
            for i in 0..BURST {
                assert!(q.push_quiet(item(i)).is_ok(), "message {i} refused");
            }
            assert_eq!(q.len(), BURST as usize);
            let burst = held() - start;
            assert!(
                burst as usize >= BURST as usize * std::mem::size_of::<Outbound>(),
                "{burst} bytes for {BURST} messages"
            );
            for i in 0..BURST {
                assert_eq!(q.pop().map(|o| o.mbox), Some(i), "in queue order");
            }
            assert!(q.pop().is_none() && q.is_empty());
            assert_eq!(q.len(), 0);
            let left = held() - start;
            assert!(
                left as usize <= 2 * block,
                "{left} bytes still held after the burst, over two blocks ({block} each)"
            );
        });
    }

    #[test]
    fn a_full_queue_refuses_drops_or_replaces_as_its_overflow_says() {
        cohort::testing::watchdog(Duration::from_secs(30), || {
            let q = OutboundQueue::new(4);
            for i in 0..4 {
                assert!(q.push_quiet(item(i)).is_ok());
            }
            assert!(
                q.push_quiet(item(4)).is_err(),
                "a fifth place in a queue of four"
            );
            assert!(matches!(
                q.push(item(5), Overflow::DropNewest, || true),
                Err(Refused::Full(o)) if o.mbox == 5
            ));
            assert!(matches!(
                q.push(item(6), Overflow::DropOldest, || true),
                Err(Refused::DroppedOldest(o)) if o.mbox == 0
            ));
            // The peer is gone while the sender would wait for room.
            assert!(matches!(
                q.push(item(7), Overflow::Wait, || false),
                Err(Refused::Closed(o)) if o.mbox == 7
            ));
            assert_eq!(q.len(), 4);
            assert_eq!(q.pop().map(|o| o.mbox), Some(1));
            assert!(q.push(item(8), Overflow::Wait, || true).is_ok());
            let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|o| o.mbox)).collect();
            assert_eq!(order, [2, 3, 6, 8]);
            assert_eq!(q.len(), 0);
        });
    }
}
