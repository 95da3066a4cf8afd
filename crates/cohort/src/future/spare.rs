//! Two spare blocks per thread for the boxes of an ask: an agent that asks again from the
//! handler of each reply (the usual shape of a sequence of asks) frees an ask's state and
//! its request and at once needs two more of the same layouts, so each is kept for the next
//! ask made on the thread instead of going back to the allocator.
//!
//! A block is reused only for a value of the same layout (size and alignment), as the
//! allocator requires; at most [`SLOTS`] are kept per thread, and they are freed when the
//! thread exits (or go straight back to the allocator once the thread's storage is gone).

use std::alloc::Layout;
use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// Blocks kept per thread: the ask's state and its request.
const SLOTS: usize = 2;

/// A kept block and the layout it was allocated with.
type Block = Option<(NonNull<u8>, Layout)>;

/// This thread's kept blocks.
struct Spare([Cell<Block>; SLOTS]);

impl Drop for Spare {
    fn drop(&mut self) {
        for slot in &self.0 {
            if let Some((block, layout)) = slot.take() {
                // SAFETY: a kept block was allocated by the global allocator with `layout`,
                // and the slot held it alone.
                unsafe { std::alloc::dealloc(block.as_ptr(), layout) }
            }
        }
    }
}

thread_local! {
    static SPARE: Spare = const { Spare([const { Cell::new(None) }; SLOTS]) };
}

/// A box for a `T`: a block this thread kept with `T`'s layout, else a new allocation.
#[inline]
pub(crate) fn boxed<T>() -> Box<MaybeUninit<T>> {
    let layout = Layout::new::<T>();
    if layout.size() != 0 {
        let kept = SPARE
            .try_with(|spare| {
                spare.0.iter().find_map(|slot| match slot.get() {
                    Some((block, kept)) if kept == layout => {
                        slot.set(None);
                        Some(block)
                    }
                    _ => None,
                })
            })
            .ok()
            .flatten();
        if let Some(block) = kept {
            // SAFETY: the block was allocated by the global allocator for a value of this
            // very layout (a box's, see `keep`), and taking it out of its slot made it this
            // box's alone.
            return unsafe { Box::from_raw(block.as_ptr().cast::<MaybeUninit<T>>()) };
        }
    }
    Box::new_uninit()
}

/// Keeps the memory of a box whose value is gone, for the next [`boxed`] of its layout on
/// this thread; frees it if every slot is taken.
#[inline]
pub(crate) fn keep<T>(memory: Box<MaybeUninit<T>>) {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return;
    }
    let block = NonNull::from(Box::leak(memory)).cast::<u8>();
    let kept = SPARE
        .try_with(|spare| {
            spare
                .0
                .iter()
                .find(|slot| slot.get().is_none())
                .map(|slot| slot.set(Some((block, layout))))
                .is_some()
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: `block` is the leaked box's memory, allocated for `layout`, unused.
        unsafe { std::alloc::dealloc(block.as_ptr(), layout) }
    }
}

/// Drops the value of `b` and keeps its memory (see [`keep`]).
#[inline]
pub(crate) fn drop_and_keep<T>(b: Box<T>) {
    let value = Box::into_raw(b);
    // SAFETY: `value` is the box's live value, dropped once here; a panic in its drop leaks
    // the memory and nothing else.
    unsafe { std::ptr::drop_in_place(value) };
    // SAFETY: the same allocation, its value dropped: it is an uninitialised `T`'s box.
    keep(unsafe { Box::from_raw(value.cast::<MaybeUninit<T>>()) });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr<T>(b: &T) -> usize {
        b as *const T as usize
    }

    #[test]
    fn a_kept_block_is_reused_for_the_same_layout_only() {
        let first: Box<MaybeUninit<[u64; 4]>> = Box::new_uninit();
        let at = addr(&*first);
        keep(first);
        let other: Box<MaybeUninit<[u64; 5]>> = boxed();
        assert_ne!(addr(&*other), at, "a different layout got the block");
        let again: Box<MaybeUninit<[u64; 4]>> = boxed();
        assert_eq!(addr(&*again), at, "the same layout did not get it");
        let again = Box::write(again, [1, 2, 3, 4]);
        assert_eq!(*again, [1, 2, 3, 4]);
    }

    #[test]
    fn no_more_than_two_blocks_are_kept_and_the_rest_are_freed() {
        let boxes: Vec<Box<MaybeUninit<u128>>> = (0..3).map(|_| Box::new_uninit()).collect();
        let at: Vec<usize> = boxes.iter().map(|b| addr(&**b)).collect();
        boxes.into_iter().for_each(keep);
        let reused: Vec<Box<MaybeUninit<u128>>> = (0..3).map(|_| boxed()).collect();
        let hits = reused.iter().filter(|b| at.contains(&addr(&***b))).count();
        assert!(hits >= 2, "kept blocks were not reused");
        SPARE.with(|s| assert!(s.0.iter().all(|slot| slot.get().is_none())));
    }

    #[test]
    fn a_dropped_value_s_memory_is_kept_after_its_drop_ran() {
        let dropped = std::rc::Rc::new(Cell::new(false));
        /// Sets its flag when dropped (padded to a size of its own).
        struct Flag(std::rc::Rc<Cell<bool>>, #[allow(dead_code)] [u64; 7]);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let b = Box::new(Flag(dropped.clone(), [0; 7]));
        let at = addr(&*b);
        drop_and_keep(b);
        assert!(dropped.get());
        let again: Box<MaybeUninit<Flag>> = boxed();
        assert_eq!(addr(&*again), at);
    }
}
