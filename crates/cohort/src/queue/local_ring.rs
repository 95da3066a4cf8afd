//! [`LocalRing`]: the local half of an event queue, a growable ring buffer owned by the thread
//! that runs the queue.
//!
//! A `VecDeque` would do but for one cost, on the single-thread path: a local send pushes a
//! 40-byte demand that the same thread pops a few nanoseconds later, while the 8-byte stores
//! that wrote it still sit in the store buffer. `VecDeque` reads them back with 16-byte
//! loads twice (its `push_back` checks for room only once the value exists, so the value is
//! built on the stack and then copied into its slot; its `pop_front` copies it out), and a
//! load that spans two stores cannot be forwarded: it waits for them to reach the cache. So
//! [`LocalRing::push_back_with`] makes room first and builds the demand straight into its
//! slot, and [`LocalRing::pop_front`] reads it out one word at a time. No path of a push can
//! unwind, or the demand's parts would wait in memory for the landing pad (see
//! `LocalRing::grow`).

use std::mem::MaybeUninit;

/// The first capacity a ring takes when its first item arrives.
const FIRST_CAPACITY: usize = 8;

/// The capacity an empty ring keeps: what a pool turn's batch of remote demands
/// (`defaults::REMOTE_BATCH`) and its handlers' sends reach in steady flow, so that only a
/// burst of sends grows past it and gives the rest back.
pub(crate) const KEPT_CAPACITY: usize = 512;

/// A FIFO ring buffer with a power-of-two capacity that doubles when full and gives back what
/// lies beyond [`KEPT_CAPACITY`] when its owner finds it empty ([`LocalRing::release_spare`]).
pub(crate) struct LocalRing<T> {
    /// The slots (all of the vector's length is capacity); `head..head + len` (modulo the
    /// capacity) are initialised.
    buf: Vec<MaybeUninit<T>>,
    head: usize,
    len: usize,
}

impl<T> LocalRing<T> {
    /// An empty ring (no allocation until the first push).
    pub(crate) fn new() -> Self {
        Self {
            buf: Vec::new(),
            head: 0,
            len: 0,
        }
    }

    /// Items held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the ring holds nothing.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots allocated (the most it held since it was last found empty with more than
    /// [`KEPT_CAPACITY`], rounded up to a power of two).
    #[cfg(all(test, not(cohort_loom)))]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Gives back the slots beyond [`KEPT_CAPACITY`] if the ring is empty: a burst of sends
    /// does not keep its memory once it has run. One test when there is nothing to give
    /// back, so the caller can make it at every point where its queue runs dry.
    #[inline]
    pub(crate) fn release_spare(&mut self) {
        if self.len == 0 && self.buf.len() > KEPT_CAPACITY {
            self.shrink();
        }
    }

    /// Whether the ring holds slots (empty or not).
    #[inline]
    pub(crate) fn holds_slots(&self) -> bool {
        self.buf.capacity() != 0
    }

    /// Gives back every slot of an empty ring: its queue goes idle, and a queue waiting for
    /// its next message keeps nothing of its last burst.
    #[cold]
    pub(crate) fn release_all(&mut self) {
        debug_assert_eq!(self.len, 0, "released only when empty");
        if self.len == 0 {
            self.buf = Vec::new();
            self.head = 0;
        }
    }

    /// [`LocalRing::release_spare`]'s work: an empty ring keeps its first slots.
    #[cold]
    #[inline(never)]
    fn shrink(&mut self) {
        self.buf.truncate(KEPT_CAPACITY);
        self.buf.shrink_to_fit();
        self.head = 0;
    }

    /// Appends `item`.
    #[inline]
    pub(crate) fn push_back(&mut self, item: T) {
        self.push_back_with(|| item)
    }

    /// Appends the item `make` builds, once there is room for it.
    #[inline(always)]
    pub(crate) fn push_back_with(&mut self, make: impl FnOnce() -> T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = (self.head + self.len) & (self.buf.len() - 1);
        self.slot(i).write(make());
        self.len += 1;
    }

    /// Puts `item` in front of the others.
    #[inline]
    pub(crate) fn push_front(&mut self, item: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        self.head = self.head.wrapping_sub(1) & mask;
        self.slot(self.head).write(item);
        self.len += 1;
    }

    /// Takes the first item.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let i = self.head;
        self.head = (i + 1) & (self.buf.len() - 1);
        self.len -= 1;
        Some(read_by_words(&self.buf[i]))
    }

    /// Slot `i` of a push, `i` masked by the capacity after the growth check (so always in
    /// bounds); an abort rather than an index's panic keeps the push free of unwinding paths
    /// (see [`LocalRing::grow`]).
    #[inline(always)]
    fn slot(&mut self, i: usize) -> &mut MaybeUninit<T> {
        match self.buf.get_mut(i) {
            Some(slot) => slot,
            None => std::process::abort(),
        }
    }

    /// Doubles the capacity (or allocates the first slots), keeping the order. The buffer
    /// is reallocated (large ones are remapped, not copied), then the items that had wrapped
    /// round to its start move behind the others.
    ///
    /// `extern "C"`: a call that cannot unwind (a panic in it, which only a capacity overflow
    /// could raise, aborts), so a push's caller keeps the value it is about to store in
    /// registers across it. Across a call that may unwind, the value must wait in memory for
    /// the landing pad that would drop it, and the push reads it back with a load that spans
    /// two stores (see the module documentation).
    #[cold]
    #[inline(never)]
    extern "C" fn grow(&mut self) {
        let old = self.buf.len();
        debug_assert_eq!(self.len, old, "grows only when full");
        self.buf
            .resize_with((old * 2).max(FIRST_CAPACITY), MaybeUninit::uninit);
        // Full: the items are `head..old`, then `0..head`.
        let wrapped = self.head;
        let base = self.buf.as_mut_ptr();
        // SAFETY: `0..wrapped` and `old..old + wrapped` lie in the buffer (its length is now
        // at least `2 * old` and `wrapped < old`, or both are empty) and do not overlap; the
        // first holds initialised items, moved (bitwise) to slots that held none, and from
        // now on only the new range counts as initialised (`head..head + len` below).
        unsafe { std::ptr::copy_nonoverlapping(base, base.add(old), wrapped) };
    }
}

/// Moves the item out of `slot`, which the caller then treats as uninitialised.
///
/// An item made of whole words is read one word at a time (volatile, so that the loads are
/// not merged again into 16-byte ones): each load is then served by one of the 8-byte
/// stores that wrote it, even while they are still in the store buffer (see the module
/// documentation).
#[inline(always)]
fn read_by_words<T>(slot: &MaybeUninit<T>) -> T {
    const WORD: usize = std::mem::size_of::<u64>();
    if !std::mem::size_of::<T>().is_multiple_of(WORD) || std::mem::align_of::<T>() < WORD {
        // SAFETY: the caller's slot is initialised and read out exactly once.
        return unsafe { slot.assume_init_read() };
    }
    let mut out = MaybeUninit::<T>::uninit();
    let src = slot.as_ptr().cast::<MaybeUninit<u64>>();
    let dst = out.as_mut_ptr().cast::<MaybeUninit<u64>>();
    for k in 0..std::mem::size_of::<T>() / WORD {
        // SAFETY: `T` is a whole number of words and word-aligned (checked above), so word
        // `k` lies inside both `slot` and `out` and is aligned; `MaybeUninit` words carry
        // any bytes (padding, pointer provenance) unchanged. `slot` is initialised (caller),
        // so after the copy `out` holds the same, valid `T`.
        unsafe { dst.add(k).write(src.add(k).read_volatile()) };
    }
    // SAFETY: every word of `out` was copied from the initialised `slot` just above.
    unsafe { out.assume_init() }
}

impl<T> Drop for LocalRing<T> {
    fn drop(&mut self) {
        while self.pop_front().is_some() {}
    }
}

// The loom build leaves proptest out (see Cargo.toml); its models cover the ring's users.
#[cfg(all(test, not(cohort_loom)))]
mod tests {
    use super::LocalRing;
    use proptest::prelude::*;
    use std::collections::VecDeque;
    use std::rc::Rc;

    #[derive(Debug, Clone)]
    enum Op {
        Back(u32),
        Front(u32),
        Pop,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => any::<u32>().prop_map(Op::Back),
            1 => any::<u32>().prop_map(Op::Front),
            3 => Just(Op::Pop),
        ]
    }

    proptest! {
        /// The ring behaves as a `VecDeque` under any mix of pushes at both ends and pops,
        /// across growth and wrap-around.
        #[test]
        fn behaves_as_a_deque(ops in proptest::collection::vec(op(), 0..400)) {
            let mut ring = LocalRing::new();
            let mut model = VecDeque::new();
            for op in ops {
                match op {
                    Op::Back(v) => {
                        ring.push_back(v);
                        model.push_back(v);
                    }
                    Op::Front(v) => {
                        ring.push_front(v);
                        model.push_front(v);
                    }
                    Op::Pop => prop_assert_eq!(ring.pop_front(), model.pop_front()),
                }
                prop_assert_eq!(ring.len(), model.len());
                prop_assert_eq!(ring.is_empty(), model.is_empty());
            }
            while let Some(v) = model.pop_front() {
                prop_assert_eq!(ring.pop_front(), Some(v));
            }
            prop_assert_eq!(ring.pop_front(), None);
        }
    }

    /// An empty ring gives back what a burst grew beyond `KEPT_CAPACITY` and then behaves as
    /// before, order included; a ring that holds anything, or never grew past it, keeps
    /// its slots.
    #[test]
    fn an_empty_ring_gives_back_what_a_burst_grew() {
        let mut ring = LocalRing::new();
        for i in 0..10 {
            ring.push_back(i);
        }
        ring.release_spare();
        assert_eq!(ring.capacity(), 16, "nothing beyond the kept capacity");
        for i in 10..5_000 {
            ring.push_back(i);
        }
        let grown = ring.capacity();
        assert_eq!(grown, 8_192);
        for i in 0..4_999 {
            assert_eq!(ring.pop_front(), Some(i));
        }
        ring.release_spare();
        assert_eq!(ring.capacity(), grown, "one item is still held");
        assert_eq!(ring.pop_front(), Some(4_999));
        ring.release_spare();
        assert_eq!(ring.capacity(), super::KEPT_CAPACITY);
        for i in 0..3 * super::KEPT_CAPACITY {
            ring.push_back(i);
        }
        ring.push_front(usize::MAX);
        assert_eq!(ring.pop_front(), Some(usize::MAX));
        for i in 0..3 * super::KEPT_CAPACITY {
            assert_eq!(ring.pop_front(), Some(i));
        }
        assert_eq!(ring.pop_front(), None);
    }

    /// Items still held when the ring is dropped are dropped once each; popped ones are not
    /// dropped again.
    #[test]
    fn drops_what_it_holds_once() {
        let token = Rc::new(());
        let mut ring = LocalRing::new();
        for _ in 0..20 {
            ring.push_back(token.clone());
        }
        for _ in 0..5 {
            drop(ring.pop_front());
        }
        ring.push_front(token.clone());
        assert_eq!(Rc::strong_count(&token), 17);
        drop(ring);
        assert_eq!(Rc::strong_count(&token), 1);
    }
}
