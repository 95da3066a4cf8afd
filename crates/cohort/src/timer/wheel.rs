//! The timer queue as a hierarchical timing wheel in front of a small heap.
//!
//! Six levels of 64 slots: a level-0 slot spans one tick ([`defaults::TIMER_WHEEL_TICK`]),
//! a level-`l` slot 64^l ticks, so the wheel spans 64^6 ticks (2,200 years at 1 ms);
//! farther deadlines wait in the last level and are placed again when it comes round.
//! Scheduling is O(1) (a push onto a slot's vector and a bit in the level's occupancy
//! mask); a slot is emptied when time reaches it, its entries moving down a level (each
//! entry moves at most once per level). Entries of the current and the next tick wait in a
//! binary heap by exact deadline, so timers fire at their deadline, not at a tick boundary,
//! and a periodic timer costs one wake-up per period.
//!
//! [`defaults::TIMER_WHEEL_TICK`]: crate::defaults::TIMER_WHEEL_TICK

use super::Entry;
use super::heap::HeapQueue;

const BITS: u32 = 6;
const SLOTS: usize = 1 << BITS;
const LEVELS: usize = 6;
/// Ticks spanned by the whole wheel.
const SPAN: u64 = 1 << (BITS as usize * LEVELS);
/// How far ahead (in ticks) the wheel takes an entry: one top-level slot less than its span,
/// so that an entry's top-level slot is never the current one of the next turn.
const REACH: u64 = SPAN - (SPAN >> BITS);

struct Level {
    /// Bit `s` set when slot `s` holds entries.
    occupied: u64,
    slots: [Vec<Entry>; SLOTS],
}

/// A hierarchical timing wheel with a heap for the imminent entries.
pub(crate) struct WheelQueue {
    tick_ns: u64,
    /// Every tick up to and including this one has been moved to `near`.
    elapsed: u64,
    levels: Box<[Level]>,
    near: HeapQueue,
    in_wheel: usize,
    /// Entries beyond the wheel's span, and the earliest tick among them.
    far: Vec<Entry>,
    far_min: u64,
}

impl WheelQueue {
    pub(crate) fn new(tick_ns: u64) -> Self {
        Self {
            tick_ns: tick_ns.max(1),
            elapsed: 0,
            levels: (0..LEVELS)
                .map(|_| Level {
                    occupied: 0,
                    slots: std::array::from_fn(|_| Vec::new()),
                })
                .collect(),
            near: HeapQueue::default(),
            in_wheel: 0,
            far: Vec::new(),
            far_min: u64::MAX,
        }
    }

    pub(crate) fn push(&mut self, e: Entry) {
        let tick = e.at / self.tick_ns;
        if tick <= self.elapsed {
            self.near.push(e);
            return;
        }
        if tick - self.elapsed >= REACH {
            self.far_min = self.far_min.min(tick);
            self.far.push(e);
            return;
        }
        let level = level_for(self.elapsed, tick);
        let slot = ((tick >> (level as u32 * BITS)) as usize) & (SLOTS - 1);
        let l = &mut self.levels[level];
        l.occupied |= 1 << slot;
        l.slots[slot].push(e);
        self.in_wheel += 1;
    }

    /// The first tick of the earliest occupied slot, with its level and slot.
    fn next_slot(&self) -> Option<(u64, usize, usize)> {
        for (level, l) in self.levels.iter().enumerate() {
            if l.occupied == 0 {
                continue;
            }
            let shift = level as u32 * BITS;
            let slot_range = 1u64 << shift;
            let level_range = slot_range << BITS;
            let now_slot = (self.elapsed >> shift) & (SLOTS as u64 - 1);
            let zeros = l.occupied.rotate_right(now_slot as u32).trailing_zeros() as u64;
            let slot = (zeros + now_slot) % SLOTS as u64;
            // Entries below the top level share the bits above their level with `elapsed`
            // (see `level_for`): their slot is never in the next turn of the level. A start
            // at or before `elapsed` is the current slot: due.
            let mut start = (self.elapsed & !(level_range - 1)) + slot * slot_range;
            if slot < now_slot {
                // The top level's next turn (an entry less than `REACH` ahead, across a
                // multiple of `SPAN`).
                start += level_range;
            }
            return Some((start, level, slot as usize));
        }
        None
    }

    /// Moves everything due up to `tick` (inclusive) from the wheel to `near`.
    fn advance(&mut self, tick: u64) {
        while let Some((start, level, slot)) = self.next_slot() {
            if start > tick {
                break;
            }
            let l = &mut self.levels[level];
            l.occupied &= !(1 << slot);
            let entries = std::mem::take(&mut l.slots[slot]);
            self.in_wheel -= entries.len();
            self.elapsed = self.elapsed.max(start);
            for e in entries {
                self.push(e);
            }
        }
        self.elapsed = self.elapsed.max(tick);
        if self.far_min.saturating_sub(self.elapsed) < REACH {
            self.far_min = u64::MAX;
            for e in std::mem::take(&mut self.far) {
                self.push(e);
            }
        }
    }

    /// The earliest instant (ns) the service must wake at: an exact deadline from `near`, or
    /// the start of the next occupied slot (when its entries move to `near`).
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        let far =
            (!self.far.is_empty()).then(|| (self.far_min - REACH + 1).saturating_mul(self.tick_ns));
        let slot = self
            .next_slot()
            .map(|(start, _, _)| start.saturating_mul(self.tick_ns))
            .or(far);
        match (self.near.next_deadline(), slot) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Moves every entry due at `now` to `out`, earliest first; entries of the next tick
    /// move to the heap now, so that they fire at their exact deadline.
    pub(crate) fn pop_due(&mut self, now: u64, out: &mut Vec<Entry>) {
        self.advance(now / self.tick_ns + 1);
        self.near.pop_due(now, out);
    }

    pub(crate) fn len(&self) -> usize {
        self.in_wheel + self.near.len() + self.far.len()
    }

    pub(crate) fn remove_inactive(&mut self, out: &mut Vec<Entry>) {
        for l in self.levels.iter_mut() {
            for (s, slot) in l.slots.iter_mut().enumerate() {
                let before = out.len();
                let mut i = 0;
                while i < slot.len() {
                    if slot[i].task.surely_inactive() {
                        out.push(slot.swap_remove(i));
                    } else {
                        i += 1;
                    }
                }
                self.in_wheel -= out.len() - before;
                if slot.is_empty() {
                    l.occupied &= !(1 << s);
                    *slot = Vec::new();
                }
            }
        }
        self.near.remove_inactive(out);
        let before = out.len();
        let mut i = 0;
        while i < self.far.len() {
            if self.far[i].task.surely_inactive() {
                out.push(self.far.swap_remove(i));
            } else {
                i += 1;
            }
        }
        if out.len() > before && self.far.is_empty() {
            self.far_min = u64::MAX;
        }
    }

    pub(crate) fn take_all(&mut self, out: &mut Vec<Entry>) {
        for l in self.levels.iter_mut() {
            l.occupied = 0;
            for slot in l.slots.iter_mut() {
                out.append(slot);
            }
        }
        self.in_wheel = 0;
        self.near.take_all(out);
        out.append(&mut self.far);
        self.far_min = u64::MAX;
    }
}

/// The level whose slots tell `tick` apart from `elapsed` (`tick > elapsed`).
fn level_for(elapsed: u64, tick: u64) -> usize {
    let masked = ((elapsed ^ tick) | (SLOTS as u64 - 1)).min(SPAN - 1);
    let significant = 63 - masked.leading_zeros() as usize;
    significant / BITS as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timer::task::{Fired, Task};
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    struct Nop;
    impl Task for Nop {
        fn fire(&self, _: &AtomicUsize) -> Fired {
            Fired::Done
        }
        fn cancel(&self) -> bool {
            false
        }
        fn is_active(&self) -> bool {
            true
        }
        fn surely_inactive(&self) -> bool {
            false
        }
        fn message_type(&self) -> &'static str {
            "Nop"
        }
        fn refuse(
            &self,
            _: crate::mailbox::dead_letter::DeliveryFailure,
            _: &dyn Fn(&crate::mailbox::dead_letter::DeadLetter<'_>),
        ) {
        }
    }

    fn entry(at: u64, seq: u64) -> Entry {
        Entry {
            at,
            seq,
            task: Arc::new(Nop),
        }
    }

    /// Pops everything by walking time to each next deadline; returns (deadline, popped at).
    fn drain(w: &mut WheelQueue) -> Vec<(u64, u64)> {
        let mut got = Vec::new();
        let mut out = Vec::new();
        while let Some(at) = w.next_deadline() {
            w.pop_due(at, &mut out);
            got.extend(out.drain(..).map(|e| (e.at, at)));
        }
        got
    }

    #[test]
    fn fires_in_deadline_order_and_never_early() {
        let tick = 1_000_000;
        let mut w = WheelQueue::new(tick);
        // Deadlines across every level, in a scrambled order, with duplicates.
        let mut ats: Vec<u64> = (0..5000u64)
            .map(|i| (i * 2_654_435_761) % (1u64 << 40))
            .chain([0, 1, tick - 1, tick, tick + 1, 64 * tick, 64 * tick + 5])
            .chain([SPAN * tick, 3 * SPAN * tick + 7, u64::MAX / 2])
            .chain([(SPAN - 5) * tick, (SPAN + 3) * tick, (2 * SPAN - 2) * tick])
            .collect();
        for (i, &at) in ats.iter().enumerate() {
            w.push(entry(at, i as u64));
        }
        assert_eq!(w.len(), ats.len());
        let got = drain(&mut w);
        ats.sort();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), ats);
        assert!(got.iter().all(|(at, when)| when >= at), "fired early");
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn pushes_while_running_keep_order() {
        let tick = 1_000;
        let mut w = WheelQueue::new(tick);
        let mut out = Vec::new();
        let mut now = 0;
        let mut fired = Vec::new();
        for round in 0..2000u64 {
            // Deadlines relative to "now": near, far, and in the past.
            for (k, d) in [0u64, 1, 999, 1_001, 65_000, 4_200_000, 300_000_000]
                .into_iter()
                .enumerate()
            {
                w.push(entry(now + d * (round % 3 + 1), round * 10 + k as u64));
            }
            now += 777;
            w.pop_due(now, &mut out);
            for e in out.drain(..) {
                assert!(e.at <= now, "popped {} at {now}", e.at);
                fired.push(e.at);
            }
        }
        let rest = drain(&mut w);
        assert!(rest.iter().all(|(at, when)| when >= at));
        assert_eq!(fired.len() + rest.len(), 2000 * 7);
    }

    #[test]
    fn entries_across_the_top_level_turn() {
        let tick = 10;
        let mut w = WheelQueue::new(tick);
        let mut out = Vec::new();
        let base = (SPAN - 3) * tick;
        w.pop_due(base, &mut out); // elapsed near the end of the wheel's first turn
        let mut ats: Vec<u64> = [1u64, 5, 64, 4096, 1 << 30, REACH - 1, REACH, SPAN + 9]
            .iter()
            .map(|d| base + d * tick)
            .collect();
        for (i, &at) in ats.iter().enumerate() {
            w.push(entry(at, i as u64));
        }
        let got = drain(&mut w);
        ats.sort();
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), ats);
        assert!(got.iter().all(|(at, when)| when >= at));
    }

    #[test]
    fn levels() {
        assert_eq!(level_for(0, 1), 0);
        assert_eq!(level_for(0, 63), 0);
        assert_eq!(level_for(0, 64), 1);
        assert_eq!(level_for(0, 4095), 1);
        assert_eq!(level_for(0, 4096), 2);
        assert_eq!(level_for(0, u64::MAX), LEVELS - 1);
    }
}
