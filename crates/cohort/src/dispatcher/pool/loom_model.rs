//! Loom models of the pool protocols: `adv_thread_pool`'s in-flight accounting, the LIFO
//! slot's owner against a thief, and the slot with the park of a worker that waits with no
//! time limit. Loom checks the symmetric fence pair (two `SeqCst` fences); the asymmetric
//! pair orders the same accesses by `membarrier`'s contract, which loom cannot model.

use super::adv::{shared_finished, shared_idle, shared_started, wait_for_shared};
use super::park::ForeverParked;
use super::slot::{OwnSlot, Slot, SlotOwner};
use crate::queue::loom_model::LoomItem as Item;
use crate::queue::wakeup::Wakeup;
use crate::queue::{EventQueue, QueueArc, Schedule, Scheduled};
use crossbeam_utils::CachePadded;
use loom::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

/// Counts how many times the queue was scheduled.
struct Counted(AtomicUsize);
impl Schedule<Item> for Counted {
    fn schedule(&self, q: Scheduled<Item>) {
        self.0.fetch_add(1, SeqCst);
        // The model checks the accounting, not the turn that follows.
        q.hand_over();
    }
}

/// Thread-safe demands run on other threads (reading the agent); the queue's runner then
/// wants an exclusive demand (writing it). Either none runs any more and it goes ahead, or
/// it puts the demand back in the queue, says it waits, and the last thread-safe demand to
/// finish schedules the queue, whose next runner (here that same thread, at once: the
/// tightest case) runs the exclusive demand. Loom reports a read racing the write, a next
/// runner that touches the put-back demand before the waiting runner is done with it, or
/// a lost schedule (the demand never runs).
fn shared_then_exclusive(jobs: usize) {
    loom::model(move || {
        let rq = Arc::new(Counted(AtomicUsize::new(0)));
        let q = EventQueue::<Item>::pooled(rq.clone(), 1);
        let agent = Arc::new(loom::cell::UnsafeCell::new(0u8));
        // The exclusive demand, while it waits in the queue's local half.
        let put_back = Arc::new(loom::cell::UnsafeCell::new(false));
        let threads: Vec<_> = (0..jobs)
            .map(|_| {
                shared_started(&q);
                let (q, rq) = (q.clone(), rq.clone());
                let (agent, put_back) = (agent.clone(), put_back.clone());
                loom::thread::spawn(move || {
                    // SAFETY: the protocol under test keeps writers away.
                    agent.with(|a| assert_eq!(unsafe { *a }, 0));
                    if shared_finished(&q) {
                        rq.schedule(Scheduled::from_arc(q.clone()));
                        // SAFETY: the protocol under test: the waiting runner is done.
                        put_back.with_mut(|p| unsafe {
                            assert!(*p, "the exclusive demand is back in the queue");
                            *p = false;
                        });
                        // SAFETY: the protocol under test: no reader is left.
                        agent.with_mut(|a| unsafe { *a = 1 });
                    }
                })
            })
            .collect();
        let run_here = shared_idle(&q) || {
            // SAFETY: this thread runs the queue until it says it waits.
            put_back.with_mut(|p| unsafe { *p = true });
            let waits = wait_for_shared(&q);
            if !waits {
                // SAFETY: as above: all finished, this thread still runs the queue.
                put_back.with_mut(|p| unsafe { *p = false });
            }
            !waits
        };
        if run_here {
            // SAFETY: the protocol under test: no reader is left.
            agent.with_mut(|a| unsafe { *a = 1 });
        }
        for t in threads {
            t.join().unwrap();
        }
        // SAFETY: every thread is joined.
        agent.with(|a| assert_eq!(unsafe { *a }, 1, "the exclusive demand ran once"));
        assert!(rq.0.load(SeqCst) <= 1, "scheduled at most once");
    });
}

#[test]
fn adv_exclusive_waits_for_one_shared_demand() {
    shared_then_exclusive(1);
}

#[test]
fn adv_exclusive_waits_for_two_shared_demands() {
    shared_then_exclusive(2);
}

/// The slot and park protocol: worker 0 fills its LIFO slot while worker 1 parks with no time
/// limit, watching the other slots. Either the parking worker sees the slot filled before it
/// sleeps, or the filler sees it parked and wakes it: it never sleeps through the fill (loom
/// reports a thread blocked for ever). Worker 1 then takes the queue, as from a blocked
/// owner.
#[test]
fn filled_slot_wakes_a_worker_parked_for_good() {
    loom::model(|| {
        let slots = Arc::new(two_slots());
        let wakeups = Arc::new([Wakeup::new(), Wakeup::new()]);
        let parked = Arc::new(ForeverParked::new(2));
        let parker = {
            let (slots, wakeups, parked) = (slots.clone(), wakeups.clone(), parked.clone());
            loom::thread::spawn(move || {
                wakeups[1].register_current();
                let any_light = || slots[0].owner_fence_is_light();
                parked.park(
                    1,
                    &wakeups[1],
                    any_light,
                    || slots[0].is_occupied(),
                    || None,
                );
                slots[0].steal().map(Scheduled::hand_over).is_some()
            })
        };
        let owner = SlotOwner::new(0);
        assert!(
            OwnSlot::of(&slots[..], &owner)
                .put(Scheduled::from_arc(EventQueue::new()))
                .is_none()
        );
        parked.wake_others(0, &wakeups[..]);
        assert!(parker.join().unwrap(), "the parked worker took the queue");
    });
}

fn two_slots() -> [CachePadded<Slot>; 2] {
    [CachePadded::new(Slot::new()), CachePadded::new(Slot::new())]
}

/// The owner of a slot fills it and empties it, `rounds` times, with plain stores, while
/// another worker tries to steal from it: every queue put there is taken exactly once, by
/// one of the two (a queue taken twice would run on two workers at once; one taken by
/// neither would be stranded).
fn owner_and_thief(rounds: usize) {
    loom::model(move || {
        let slots = Arc::new(two_slots());
        let thief = {
            let slots = slots.clone();
            loom::thread::spawn(move || {
                (0..rounds)
                    .filter_map(|_| slots[0].steal().map(Scheduled::into_raw))
                    .map(|p| p.addr())
                    .collect::<Vec<_>>()
            })
        };
        let owner = SlotOwner::new(0);
        let own = OwnSlot::of(&slots[..], &owner);
        let queues: Vec<QueueArc> = (0..rounds).map(|_| EventQueue::new()).collect();
        let mut taken = Vec::new();
        for q in &queues {
            assert!(own.put(Scheduled::from_arc(q.clone())).is_none());
            taken.extend(own.take().map(|s| s.into_raw().addr()));
        }
        taken.extend(thief.join().unwrap());
        taken.sort_unstable();
        // `into_raw` tags the address of a hold that owns its count (each of these does).
        let mut put: Vec<_> = queues
            .iter()
            .map(|q| QueueArc::as_ptr(q).addr() | 1)
            .collect();
        put.sort_unstable();
        assert_eq!(taken, put, "each queue taken once");
        for (q, p) in queues.iter().zip(put) {
            let p = QueueArc::as_ptr(q).cast_mut().with_addr(p);
            // SAFETY: each came from `into_raw` once, checked above.
            unsafe { Scheduled::from_raw(p) }.hand_over();
        }
    });
}

#[test]
fn slot_owner_and_thief_take_one_queue_once() {
    owner_and_thief(1);
}

#[test]
fn slot_owner_and_thief_take_two_queues_once_each() {
    owner_and_thief(2);
}
