//! [`Table`]: the storage of a subscription table, one pointer wide, that agents can share.
//!
//! ```text
//!  Table ──► [ count | len | entry 0 | entry 1 | ... ]   (one exact-size allocation)
//! ```
//!
//! An exact-size vector with a reference count in its header, like `Arc<[T]>` without its
//! length in the pointer: a million agents keep one word each, and agents of one type that
//! subscribed alike point to one block. A table is changed only through [`Table::unique`],
//! which first gives the caller a copy of its own if the block is shared: so a shared block
//! never changes, and a block reached through a [`Unique`] has no other holder. The count's
//! orderings are `Arc`'s (no weak count); `loom_model` checks them.

use crate::sync::{AtomicUsize, Ordering, fence};
use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// The block's header; the entries follow it.
#[repr(C)]
struct Header {
    /// Holders of the block.
    count: AtomicUsize,
    len: usize,
}

/// An exact-size, reference-counted vector in one allocation (none while empty).
pub(super) struct Table<T> {
    block: Option<NonNull<Header>>,
    _owns: PhantomData<T>,
}

/// The layout of a block of `len` entries, and the entries' offset in it.
fn layout<T>(len: usize) -> (Layout, usize) {
    match Layout::new::<Header>().extend(Layout::array::<T>(len).unwrap_or_else(|_| overflow())) {
        Ok((l, offset)) => (l.pad_to_align(), offset),
        Err(_) => overflow(),
    }
}

#[cold]
fn overflow() -> ! {
    // A table of `isize::MAX` bytes: the allocator would have failed first.
    handle_alloc_error(Layout::new::<Header>())
}

impl<T> Table<T> {
    /// An empty table (no allocation).
    pub(super) const fn new() -> Self {
        Self {
            block: None,
            _owns: PhantomData,
        }
    }

    /// The entries.
    #[inline(always)]
    pub(super) fn as_slice(&self) -> &[T] {
        match self.block {
            None => &[],
            // SAFETY: a block holds `len` initialised entries after its header (see
            // `Unique::resize`), alive while this holder is.
            Some(b) => unsafe {
                let len = (*b.as_ptr()).len;
                std::slice::from_raw_parts(entries::<T>(b), len)
            },
        }
    }

    /// Whether another table shares this one's block.
    pub(super) fn is_shared(&self) -> bool {
        // Acquire: pairs with the release of a holder's drop, so that a block found unique
        // again is not written before that holder's last reads of it.
        self.block
            // SAFETY: the block is alive while this holder is.
            .is_some_and(|b| unsafe { (*b.as_ptr()).count.load(Ordering::Acquire) } != 1)
    }

    /// Another holder of this table's block.
    pub(super) fn share(&self) -> Self {
        if let Some(b) = self.block {
            // Relaxed, as `Arc::clone`: the new holder is made from an existing one.
            // SAFETY: the block is alive while this holder is.
            unsafe { (*b.as_ptr()).count.fetch_add(1, Ordering::Relaxed) };
        }
        Self {
            block: self.block,
            _owns: PhantomData,
        }
    }

    /// Whether two tables hold one block.
    #[cfg(test)]
    pub(super) fn same_block(&self, other: &Self) -> bool {
        self.block == other.block
    }

    /// The table, to change: a copy made with `copy` first if the block is shared.
    pub(super) fn unique(&mut self, copy: impl Fn(&T) -> T) -> Unique<'_, T> {
        if self.is_shared() {
            let mut own = Table::new();
            {
                let mut u = Unique { table: &mut own };
                for e in self.as_slice() {
                    u.push(copy(e));
                }
            }
            *self = own;
        }
        Unique { table: self }
    }

    /// The table, to change, when it is known not to be shared (`None` if it is).
    #[inline(always)]
    pub(super) fn unique_if_not_shared(&mut self) -> Option<Unique<'_, T>> {
        if self.is_shared() {
            return None;
        }
        Some(Unique { table: self })
    }
}

/// The address of a block's first entry.
#[inline(always)]
fn entries<T>(b: NonNull<Header>) -> *mut T {
    let offset = size_of::<Header>().next_multiple_of(align_of::<T>());
    debug_assert_eq!(offset, layout::<T>(0).1);
    // SAFETY: the entries start right after the header, aligned (as `layout` places them),
    // within the block's allocation.
    unsafe { b.as_ptr().cast::<u8>().add(offset).cast::<T>() }
}

impl<T> Drop for Table<T> {
    fn drop(&mut self) {
        let Some(b) = self.block else { return };
        // Release, then acquire on the last holder, as `Arc::drop`: every holder's use of
        // the block happens before its entries are dropped.
        // SAFETY: the block is alive while this holder is.
        if unsafe { (*b.as_ptr()).count.fetch_sub(1, Ordering::Release) } != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: this was the last holder: the entries are initialised and nobody else
        // reaches them; the block was allocated with this layout for its length.
        unsafe {
            let len = (*b.as_ptr()).len;
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(entries::<T>(b), len));
            dealloc(b.as_ptr().cast(), layout::<T>(len).0);
        }
    }
}

/// A table with no other holder: the only way to change one.
pub(super) struct Unique<'t, T> {
    table: &'t mut Table<T>,
}

impl<T> Unique<'_, T> {
    /// The entries, to change in place.
    #[inline(always)]
    pub(super) fn as_mut_slice(&mut self) -> &mut [T] {
        match self.table.block {
            None => &mut [],
            // SAFETY: as `Table::as_slice`; no other holder reads the block (the `Unique`'s
            // invariant) and `&mut self` makes this the only reference through this one.
            Some(b) => unsafe {
                let len = (*b.as_ptr()).len;
                std::slice::from_raw_parts_mut(entries::<T>(b), len)
            },
        }
    }

    /// Moves the entries into a block of `len` slots (the first `keep` of the old ones
    /// kept, the rest already moved out by the caller), returning the new entries' address.
    fn resize(&mut self, keep: usize, len: usize) -> Option<NonNull<Header>> {
        let old = self.table.block.take();
        let block = if len == 0 {
            None
        } else {
            let (l, _) = layout::<T>(len);
            // SAFETY: `l` has a non-zero size (the header).
            let raw = unsafe { alloc(l) }.cast::<Header>();
            let Some(b) = NonNull::new(raw) else {
                handle_alloc_error(l)
            };
            // SAFETY: a fresh block of the right layout; `keep <= len`, and the old block
            // holds at least `keep` initialised entries, moved (not copied) here.
            unsafe {
                b.as_ptr().write(Header {
                    count: AtomicUsize::new(1),
                    len: keep,
                });
                if let Some(o) = old {
                    std::ptr::copy_nonoverlapping(entries::<T>(o), entries::<T>(b), keep);
                }
            }
            Some(b)
        };
        if let Some(o) = old {
            // SAFETY: the old block's entries were moved out (by the caller or above), it
            // had no other holder, and it was allocated with this layout.
            unsafe {
                let old_len = (*o.as_ptr()).len;
                dealloc(o.as_ptr().cast(), layout::<T>(old_len).0);
            }
        }
        self.table.block = block;
        block
    }

    /// Appends `v` (the block grows by exactly one entry).
    pub(super) fn push(&mut self, v: T) {
        let len = self.table.as_slice().len();
        let b = self.resize(len, len + 1).unwrap_or_else(|| overflow());
        // SAFETY: the new block has a slot for entry `len`, uninitialised.
        unsafe {
            entries::<T>(b).add(len).write(v);
            (*b.as_ptr()).len = len + 1;
        }
    }

    /// Removes and returns entry `i`; `None` if there is none.
    pub(super) fn remove(&mut self, i: usize) -> Option<T> {
        let len = self.table.as_slice().len();
        if i >= len {
            return None;
        }
        let b = self.table.block?;
        // SAFETY: `i < len`: entry `i` is read out once, and the entries after it move down
        // one slot, so the first `len - 1` slots hold the remaining entries, in order.
        let v = unsafe {
            let at = entries::<T>(b).add(i);
            let v = at.read();
            std::ptr::copy(at.add(1), at, len - i - 1);
            v
        };
        self.resize(len - 1, len - 1);
        Some(v)
    }

    /// Keeps the entries for which `keep` holds.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut i = 0;
        while i < self.table.as_slice().len() {
            if keep(&self.table.as_slice()[i]) {
                i += 1;
            } else {
                drop(self.remove(i));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn unique<T: Clone>(t: &mut Table<T>) -> Unique<'_, T> {
        t.unique(T::clone)
    }

    #[test]
    fn push_remove_and_retain_keep_order() {
        let mut t = Table::new();
        assert!(t.as_slice().is_empty());
        for i in 0..5 {
            unique(&mut t).push(i);
        }
        assert_eq!(t.as_slice(), &[0, 1, 2, 3, 4]);
        assert_eq!(unique(&mut t).remove(1), Some(1));
        assert_eq!(unique(&mut t).remove(9), None);
        unique(&mut t).retain(|&v| v != 3);
        assert_eq!(t.as_slice(), &[0, 2, 4]);
        unique(&mut t).retain(|_| false);
        assert!(t.as_slice().is_empty());
    }

    #[test]
    fn a_shared_block_is_copied_before_a_change() {
        let mut a = Table::new();
        unique(&mut a).push(Arc::new(1));
        let b = a.share();
        assert!(a.is_shared() && b.is_shared() && a.same_block(&b));
        assert!(a.unique_if_not_shared().is_none());
        unique(&mut a).push(Arc::new(2));
        assert!(!a.same_block(&b));
        assert!(!a.is_shared() && !b.is_shared());
        assert_eq!(b.as_slice().len(), 1);
        assert_eq!(a.as_slice().len(), 2);
        // The copy cloned the first entry: two holders of its value.
        assert_eq!(Arc::strong_count(&b.as_slice()[0]), 2);
        drop(a);
        assert_eq!(Arc::strong_count(&b.as_slice()[0]), 1);
    }

    #[test]
    fn the_last_holder_drops_the_entries() {
        let v = Arc::new(());
        let mut a = Table::new();
        unique(&mut a).push(v.clone());
        let b = a.share();
        let c = b.share();
        drop(a);
        drop(b);
        assert_eq!(Arc::strong_count(&v), 2);
        drop(c);
        assert_eq!(Arc::strong_count(&v), 1);
    }

    #[test]
    fn holders_on_other_threads_drop_it_once() {
        let v = Arc::new(());
        let mut a = Table::new();
        unique(&mut a).push(v.clone());
        let holders: Vec<_> = (0..4).map(|_| SendTable(a.share())).collect();
        drop(a);
        let threads: Vec<_> = holders
            .into_iter()
            .map(|h| std::thread::spawn(move || drop(h)))
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(Arc::strong_count(&v), 1);
    }

    /// The test's entries (`Arc<()>`) are `Send + Sync`.
    struct SendTable(#[allow(dead_code)] Table<Arc<()>>);
    // SAFETY: see above.
    unsafe impl Send for SendTable {}
}

#[cfg(all(test, cohort_loom))]
mod loom_model {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize as Counter;

    /// An entry loom watches: its reads and writes are checked for races, and its drops
    /// counted.
    struct Watched {
        value: UnsafeCell<u64>,
        drops: Arc<Counter>,
    }

    impl Watched {
        fn read(&self) -> u64 {
            // SAFETY: loom checks this access against every other one.
            self.value.with(|v| unsafe { *v })
        }
    }

    impl Drop for Watched {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A holder moved to another thread (the entries here are safe to share: loom checks it).
    struct Holder(Table<Watched>);
    // SAFETY: see above.
    unsafe impl Send for Holder {}

    fn table(drops: &Arc<Counter>) -> Table<Watched> {
        let mut t = Table::new();
        t.unique(|_| unreachable!("a new table is not shared"))
            .push(Watched {
                value: UnsafeCell::new(1),
                drops: drops.clone(),
            });
        t
    }

    /// Another holder reads the entry and lets go on its thread while this one changes the
    /// table: in place only once it finds itself the last holder (then the other's read
    /// happened before), else on a copy; either way the other saw the value it shared.
    #[test]
    fn a_change_waits_for_the_other_holders_or_copies() {
        loom::model(|| {
            let drops = Arc::new(Counter::new(0));
            let mut mine = table(&drops);
            let other = Holder(mine.share());
            let reader = loom::thread::spawn(move || {
                let other = other;
                let v = other.0.as_slice()[0].read();
                drop(other);
                v
            });
            let copy = |w: &Watched| Watched {
                value: UnsafeCell::new(w.read()),
                drops: w.drops.clone(),
            };
            let mut u = mine.unique(copy);
            // SAFETY: loom checks this write against the reader's read.
            u.as_mut_slice()[0].value.with_mut(|v| unsafe { *v = 2 });
            assert_eq!(reader.join().unwrap(), 1);
            assert_eq!(mine.as_slice()[0].read(), 2);
        });
    }

    /// Two holders let go on two threads: the entry is dropped once, after both.
    #[test]
    fn the_last_of_two_holders_drops_the_entry_once() {
        loom::model(|| {
            let drops = Arc::new(Counter::new(0));
            let mine = table(&drops);
            let other = Holder(mine.share());
            let t = loom::thread::spawn(move || {
                let other = other;
                assert_eq!(other.0.as_slice()[0].read(), 1);
                drop(other);
            });
            assert_eq!(mine.as_slice()[0].read(), 1);
            drop(mine);
            t.join().unwrap();
            assert_eq!(drops.load(Ordering::Relaxed), 1);
        });
    }
}
