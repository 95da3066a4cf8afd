//! The outbound queue to one peer: many sender threads, one writer task.
//!
//! A bounded lock-free queue (`crossbeam_queue::ArrayQueue`) and a "writer parked" flag: a
//! sender pushes, and wakes the writer (a `tokio::sync::Notify`) only when the writer said
//! it is about to sleep; a busy writer is never notified. Senders blocked by
//! [`Overflow::Wait`] sleep on a condition variable that the writer signals after taking a
//! batch, only when someone waits.

use crate::config::Overflow;
use cohort::AnyMessage;
use crossbeam_queue::ArrayQueue;
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
    queue: ArrayQueue<Outbound>,
    writer_parked: AtomicBool,
    wake_writer: Notify,
    space_waiters: AtomicUsize,
    space_lock: Mutex<()>,
    space: Condvar,
}

impl OutboundQueue {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            queue: ArrayQueue::new(capacity),
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
        let result = match self.queue.push(item) {
            Ok(()) => Ok(()),
            Err(item) => match overflow {
                Overflow::DropNewest | Overflow::Error => Err(Refused::Full(item)),
                Overflow::DropOldest => match self.queue.force_push(item) {
                    Some(old) => Err(Refused::DroppedOldest(old)),
                    None => Ok(()),
                },
                Overflow::Wait => self.wait_for_room(item, open),
            },
        };
        self.wake();
        result
    }

    /// Queues `item` if there is room, without waking the writer; returns whether the
    /// writer is parked (then the caller writes directly or calls [`Self::wake`]). Gives
    /// the item back when the queue is full.
    #[inline]
    pub(crate) fn push_quiet(&self, item: Outbound) -> Result<bool, Outbound> {
        self.queue.push(item)?;
        // Pairs with the fence in `park`: either the writer sees the item, or this sees
        // its flag.
        fence(Ordering::SeqCst);
        Ok(self.writer_parked.load(Ordering::Relaxed))
    }

    #[cold]
    fn wait_for_room(&self, mut item: Outbound, open: impl Fn() -> bool) -> Result<(), Refused> {
        self.space_waiters.fetch_add(1, Ordering::SeqCst);
        let result = loop {
            if !open() {
                break Err(Refused::Closed(item));
            }
            let guard = self.space_lock.lock().unwrap_or_else(|e| e.into_inner());
            match self.queue.push(item) {
                Ok(()) => break Ok(()),
                Err(back) => item = back,
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
        self.queue.pop()
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

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}
