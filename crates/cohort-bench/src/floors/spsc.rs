//! A bounded single-producer single-consumer ring of `Copy` values, busy-polled: the
//! hand-off the two-thread floors measure, with nothing a framework adds (no allocation per
//! message, no wake-up, no lock).
//!
//! A waiting side polls, yielding the core after a few microseconds of polling so that on an
//! oversubscribed machine the other side still runs.
//!
//! Each side keeps a private copy of the other side's index and reads the shared one only
//! when that copy says the ring is full (producer) or empty (consumer), so a flood costs one
//! cache-line transfer per batch rather than per message.

use crossbeam_utils::CachePadded;
use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Shared<T> {
    /// Next slot the consumer reads; written by the consumer only.
    head: CachePadded<AtomicUsize>,
    /// Next slot the producer writes; written by the producer only.
    tail: CachePadded<AtomicUsize>,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
    mask: usize,
}

// SAFETY: a slot is written only by the one producer while it is outside [head, tail) and
// read only by the one consumer while it is inside; the Release store of `tail` (or `head`)
// publishes the slot's new state to the other side's Acquire load, so no slot is ever
// accessed from both threads at once. `T: Copy + Send` values cross threads by copy.
unsafe impl<T: Copy + Send> Sync for Shared<T> {}

/// The writing end; `Send`, not `Clone` (one producer).
pub struct Producer<T> {
    shared: Arc<Shared<T>>,
    tail: usize,
    cached_head: Cell<usize>,
}

/// The reading end; `Send`, not `Clone` (one consumer).
pub struct Consumer<T> {
    shared: Arc<Shared<T>>,
    head: usize,
    cached_tail: Cell<usize>,
}

/// A ring of at least `capacity` slots (rounded up to a power of two): its two ends.
pub fn ring<T: Copy + Send>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    let cap = capacity.max(2).next_power_of_two();
    let slots = (0..cap)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect();
    let shared = Arc::new(Shared {
        head: CachePadded::new(AtomicUsize::new(0)),
        tail: CachePadded::new(AtomicUsize::new(0)),
        slots,
        mask: cap - 1,
    });
    (
        Producer {
            shared: shared.clone(),
            tail: 0,
            cached_head: Cell::new(0),
        },
        Consumer {
            shared,
            head: 0,
            cached_tail: Cell::new(0),
        },
    )
}

impl<T: Copy + Send> Producer<T> {
    /// Appends `v`, or gives it back when the ring is full.
    #[inline]
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let s = &*self.shared;
        if self.tail - self.cached_head.get() > s.mask {
            self.cached_head.set(s.head.load(Ordering::Acquire));
            if self.tail - self.cached_head.get() > s.mask {
                return Err(v);
            }
        }
        // SAFETY: `tail - head <= mask`, so slot `tail` is outside [head, tail): the consumer
        // does not read it until the Release store below publishes it.
        unsafe { (*s.slots[self.tail & s.mask].get()).write(v) };
        self.tail = self.tail.wrapping_add(1);
        s.tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Appends `v`, polling while the ring is full.
    #[inline]
    pub fn push_spin(&mut self, mut v: T) {
        let mut polls = 0u32;
        while let Err(back) = self.push(v) {
            v = back;
            relax(&mut polls);
        }
    }
}

impl<T: Copy + Send> Consumer<T> {
    /// Takes the oldest value, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let s = &*self.shared;
        if self.head == self.cached_tail.get() {
            self.cached_tail.set(s.tail.load(Ordering::Acquire));
            if self.head == self.cached_tail.get() {
                return None;
            }
        }
        // SAFETY: `head < tail` (Acquire-loaded), so the producer wrote slot `head` and
        // published it; it does not write it again until the Release store below frees it.
        let v = unsafe { (*s.slots[self.head & s.mask].get()).assume_init() };
        self.head = self.head.wrapping_add(1);
        s.head.store(self.head, Ordering::Release);
        Some(v)
    }

    /// Takes the oldest value, polling while the ring is empty.
    #[inline]
    pub fn pop_spin(&mut self) -> T {
        let mut polls = 0u32;
        loop {
            if let Some(v) = self.pop() {
                return v;
            }
            relax(&mut polls);
        }
    }
}

/// Polls a spin hint at a time, and after [`SPINS_BEFORE_YIELD`] polls yields the core at
/// each poll: still busy-polling (the thread never sleeps), but when more threads run than
/// there are cores the other side gets the core it needs to make progress.
#[inline]
pub(super) fn relax(polls: &mut u32) {
    if *polls < SPINS_BEFORE_YIELD {
        *polls += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Polls before a busy-polling side starts yielding: a few microseconds, longer than a
/// hand-off between two running threads.
const SPINS_BEFORE_YIELD: u32 = 2_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_cross_in_order_through_a_small_ring() {
        let (mut tx, mut rx) = ring::<u64>(4);
        let n = 100_000u64;
        let writer = std::thread::spawn(move || (1..=n).for_each(|v| tx.push_spin(v)));
        let mut expected = 1;
        while expected <= n {
            assert_eq!(rx.pop_spin(), expected);
            expected += 1;
        }
        writer.join().unwrap();
        assert_eq!(rx.pop(), None);
    }

    #[test]
    fn a_full_ring_gives_the_value_back() {
        let (mut tx, mut rx) = ring::<u8>(2);
        assert_eq!(tx.push(1), Ok(()));
        assert_eq!(tx.push(2), Ok(()));
        assert_eq!(tx.push(3), Err(3));
        assert_eq!(rx.pop(), Some(1));
        assert_eq!(tx.push(3), Ok(()));
    }
}
