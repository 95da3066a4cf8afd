//! [`CoopInner`]: a registered cooperation (its agents grouped by queue, its children, its
//! deregistration), and [`CoopHandle`], the handle users hold.

use super::builder::CoopExtras;
use super::named_subs::NamedSubs;
use super::{CoopDeregistered, CoopId, DeregReason, PanicNotice, Step};
use crate::agent::cell::{ABANDONED, DeliveryFailure, DynCell, FINISHED, FINISHING};
use crate::agent::demand::Demand;
use crate::dispatcher::Binder;
use crate::panic::PanicReaction;
use crate::queue::{EventQueue, QueueArc};
use crate::runtime::env::EnvShared;
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use thin_vec::ThinVec;

/// How many cooperations have begun finishing, in this process: a 1:N send reads it once
/// and carries it, so that a receiver whose cooperation began finishing at or before that
/// reading is treated as gone, as a direct send at that moment would have found it.
/// Process-wide rather than per environment: the comparison only needs one order, and a
/// send then reads it without reaching its environment. 32 bits, compared with wrapping,
/// keep a broadcast demand at 40 bytes (a send would have to stay queued through 2^31
/// cooperations finishing to be misjudged).
static FINISH_EPOCH: CachePadded<AtomicU32> = CachePadded::new(AtomicU32::new(0));

/// The current finish epoch, for a 1:N send to carry (see [`CoopInner::gone_for`]).
#[inline]
pub(crate) fn finish_epoch() -> u32 {
    FINISH_EPOCH.load(Ordering::Acquire)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CoopStatus {
    Registering,
    Registered,
    Deregistering,
    Gone,
}

pub(super) struct CoopState {
    pub(super) status: CoopStatus,
    pub(super) reason: DeregReason,
    /// Head of the intrusive list of live children (linked through their `links`).
    pub(super) first_child: Option<Arc<CoopInner>>,
    pub(super) children: usize,
    /// Woken once the cooperation is gone (see `wait.rs`).
    pub(super) gone_waiters: ThinVec<std::task::Waker>,
    /// The panic that deregistered it, if one did.
    pub(super) panic: PanicRecord,
}

/// The panic that deregistered a cooperation: boxed, since almost no cooperation has one.
pub(crate) type PanicRecord = Option<Box<PanicNotice>>;

/// A child's place in its parent's list; guarded by the parent's state lock.
pub(super) struct Links {
    pub(super) next: Option<Arc<CoopInner>>,
    pub(super) prev: *const CoopInner,
}

/// The agents of a cooperation bound to one queue: `agents[start..end]`.
pub(super) struct Group {
    pub(super) queue: QueueArc,
    pub(super) binder: Binder,
    pub(super) start: u32,
    pub(super) end: u32,
}

/// A cooperation's groups: the first inline (most cooperations have one), the rest in a
/// vector whose length lives in its block (one word here).
pub(super) struct Groups {
    pub(super) first: Option<Group>,
    pub(super) more: ThinVec<Group>,
}

impl Groups {
    pub(super) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len()
    }

    fn get(&self, i: usize) -> &Group {
        if i == 0 {
            self.first.as_ref().expect("group 0 exists")
        } else {
            &self.more[i - 1]
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Group> {
        self.first.iter().chain(self.more.iter())
    }
}

/// A registered cooperation.
pub(crate) struct CoopInner {
    pub(super) id: CoopId,
    pub(super) env: Arc<EnvShared>,
    /// `None` only for the environment's root cooperation.
    pub(super) parent: Option<Arc<CoopInner>>,
    pub(super) agents: Box<[Arc<DynCell>]>,
    pub(super) groups: Groups,
    pub(super) state: Mutex<CoopState>,
    /// This cooperation's place in its parent's child list (guarded by the parent's lock).
    pub(super) links: UnsafeCell<Links>,
    /// Live children, plus one while the cooperation is not deregistering.
    pub(super) pending: AtomicUsize,
    /// Groups that have not finished yet (no more than agents, counted in `u32` as groups
    /// index them).
    pub(super) groups_left: AtomicU32,
    /// The finish epoch its agents became `FINISHING` at: written before their status, so
    /// whoever reads `FINISHING` (acquire) reads it.
    pub(super) finishing_since: AtomicU32,
    /// Its agents' subscriptions to multi-consumer mailboxes, dropped when deregistration
    /// reaches step 3 (see `named_subs.rs`).
    pub(super) named_subs: NamedSubs,
    pub(super) extras: Option<Box<CoopExtras>>,
}

// SAFETY: `links` is only accessed under the parent's state lock; the raw `prev` pointer
// points to a sibling kept alive by the list itself. Everything else is `Sync`.
unsafe impl Sync for CoopInner {}
// SAFETY: as above.
unsafe impl Send for CoopInner {}

impl CoopInner {
    /// The environment's root cooperation: parent of every top-level cooperation.
    pub(crate) fn root(env: Arc<EnvShared>) -> Self {
        let groups = Groups {
            first: None,
            more: ThinVec::new(),
        };
        Self::new(CoopId(0), env, None, Box::new([]), groups, None)
    }

    /// A cooperation being registered (the root is born registered), not yet in its
    /// parent's list; `pending` counts the one that deregistration takes away.
    pub(super) fn new(
        id: CoopId,
        env: Arc<EnvShared>,
        parent: Option<Arc<CoopInner>>,
        agents: Box<[Arc<DynCell>]>,
        groups: Groups,
        extras: Option<Box<CoopExtras>>,
    ) -> Self {
        let status = if parent.is_some() {
            CoopStatus::Registering
        } else {
            CoopStatus::Registered
        };
        let groups_left = AtomicU32::new(groups.len() as u32);
        Self {
            id,
            env,
            parent,
            agents,
            groups,
            state: Mutex::new(CoopState {
                status,
                reason: DeregReason::Normal,
                first_child: None,
                children: 0,
                gone_waiters: ThinVec::new(),
                panic: None,
            }),
            links: UnsafeCell::new(Links {
                next: None,
                prev: std::ptr::null(),
            }),
            pending: AtomicUsize::new(1),
            groups_left,
            finishing_since: AtomicU32::new(0),
            named_subs: NamedSubs::default(),
            extras,
        }
    }

    pub(crate) fn id(&self) -> CoopId {
        self.id
    }

    /// A new strong reference from the pointer an agent keeps.
    ///
    /// # Safety
    /// `p` comes from `Arc::as_ptr` of a cooperation that is still alive.
    pub(crate) unsafe fn arc_from_ptr(p: *const CoopInner) -> Arc<CoopInner> {
        // SAFETY: `p` points into a live `Arc` (caller).
        unsafe { crate::sync::arc_from_ref(p) }
    }

    pub(super) fn lock_state(&self) -> MutexGuard<'_, CoopState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn panic_reaction(&self) -> Option<PanicReaction> {
        self.extras.as_ref().and_then(|x| x.panic_reaction)
    }

    /// Number of live child cooperations.
    pub(crate) fn child_count(&self) -> usize {
        self.lock_state().children
    }

    /// Puts `child` at the head of this cooperation's child list.
    ///
    /// # Safety
    /// `st` is this cooperation's locked state (which guards the children's `links`).
    pub(super) unsafe fn link_child(&self, st: &mut CoopState, child: Arc<CoopInner>) {
        // SAFETY: the lock guards every child's links (caller).
        unsafe {
            let links = &mut *child.links.get();
            links.prev = std::ptr::null();
            links.next = st.first_child.take();
            if let Some(next) = &links.next {
                (*next.links.get()).prev = Arc::as_ptr(&child);
            }
        }
        st.first_child = Some(child);
        st.children += 1;
    }

    /// Takes `child` out of this cooperation's child list.
    ///
    /// # Safety
    /// `st` is this cooperation's locked state and `child` is in its list.
    unsafe fn unlink_child(&self, st: &mut CoopState, child: &CoopInner) {
        // SAFETY: the lock guards every child's links (caller); `prev` points to a sibling
        // that the list keeps alive.
        unsafe {
            let links = &mut *child.links.get();
            let next = links.next.take();
            let prev = std::mem::replace(&mut links.prev, std::ptr::null());
            if let Some(n) = &next {
                (*n.links.get()).prev = prev;
            }
            // Replacing the owner's pointer drops the list's strong count on `child`; the
            // caller holds another.
            if prev.is_null() {
                st.first_child = next;
            } else {
                (*(*prev).links.get()).next = next;
            }
        }
        st.children -= 1;
    }

    /// The live children, for deregistration.
    ///
    /// # Safety
    /// `st` is this cooperation's locked state.
    pub(super) unsafe fn children(&self, st: &CoopState) -> Vec<Arc<CoopInner>> {
        let mut out = Vec::with_capacity(st.children);
        let mut cur = st.first_child.clone();
        while let Some(c) = cur {
            // SAFETY: the lock guards the links (caller).
            cur = unsafe { (*c.links.get()).next.clone() };
            out.push(c);
        }
        out
    }

    /// The registration failed after the agents were bound and (some) defined: they leave
    /// every multi-consumer mailbox first (so a send holding a subscriber list never finds
    /// one of them abandoned), then are marked abandoned; each queue counts what it kept for
    /// them as `NotRegistered` dead letters (a demand queued behind whatever was sent to them
    /// before they were marked); then they are unbound and their values dropped here.
    pub(super) fn abandon(self: &Arc<Self>) {
        self.drop_named_subscriptions();
        for cell in self.agents.iter() {
            cell.header.set_status(ABANDONED);
        }
        for (g, group) in self.groups.iter().enumerate() {
            group
                .queue
                .push(Demand::lifecycle(self.clone(), g as u32, Step::Abandon));
        }
        self.unbind_all();
        super::builder::release_agents(&self.agents);
    }

    /// Unbinds every agent (registration failed, or the cooperation is gone).
    pub(super) fn unbind_all(&self) {
        // A group is its agents on one queue: one call for all of them, through its first
        // agent's binder (agents that share a queue were bound with parameters that agree on
        // what an unbind reads: a pool's fifo, an active_group's name).
        for g in self.groups.iter().filter(|g| g.end > g.start) {
            g.binder
                .unbind(self.id, &g.queue, (g.end - g.start) as usize);
        }
    }

    /// Starts deregistration (idempotent: the first reason wins).
    pub(crate) fn deregister(self: &Arc<Self>, reason: DeregReason) {
        self.deregister_with(reason, None)
    }

    /// Deregistration after a panic: the notice is kept for [`CoopHandle::panic_notice`] if
    /// this panic is what deregisters the cooperation.
    #[cold]
    pub(crate) fn deregister_panicked(self: &Arc<Self>, notice: PanicNotice) {
        self.deregister_with(DeregReason::Panic, Some(Box::new(notice)))
    }

    fn deregister_with(self: &Arc<Self>, reason: DeregReason, panic: PanicRecord) {
        let children = {
            let mut st = self.lock_state();
            if st.status != CoopStatus::Registered {
                return;
            }
            st.status = CoopStatus::Deregistering;
            st.reason = reason;
            st.panic = panic;
            // SAFETY: the lock is held.
            unsafe { self.children(&st) }
        };
        let child_reason = if self.parent.is_none() {
            reason
        } else {
            DeregReason::Parent
        };
        for child in children {
            child.deregister(child_reason);
        }
        self.release_pending();
    }

    fn release_pending(self: &Arc<Self>) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.begin_finish();
        }
    }

    /// Every child is gone: drop the agents' multi-consumer subscriptions, mark them
    /// finishing, queue `finish` for every group.
    ///
    /// The subscriptions go first: a 1:N send that takes a mailbox's subscriber list after
    /// this never reaches these agents (no dead letter for them either), and one that took
    /// it before races with this step as a direct send does (handled before `finish`, or a
    /// `ReceiverGone` dead letter by the finish epoch). And a send that holds a list's read
    /// lock never finds one of these agents finishing in it.
    fn begin_finish(self: &Arc<Self>) {
        self.drop_named_subscriptions();
        let epoch = FINISH_EPOCH.fetch_add(1, Ordering::AcqRel) + 1;
        self.finishing_since.store(epoch, Ordering::Relaxed);
        for cell in self.agents.iter() {
            cell.header.set_status(FINISHING);
        }
        if self.groups.len() == 0 {
            return self.gone();
        }
        for (g, group) in self.groups.iter().enumerate() {
            group.queue.push(Demand::lifecycle(
                self.clone(),
                g as u32,
                Step::Finish { drained: false },
            ));
        }
    }

    /// Whether a 1:N send that read finish epoch `sent_at` must treat this cooperation's
    /// agents as gone: they were already finishing then. Called after observing an agent's
    /// status `FINISHING` (acquire), which makes the epoch visible.
    #[cold]
    pub(crate) fn gone_for(&self, sent_at: u32) -> bool {
        let since = self.finishing_since.load(Ordering::Relaxed);
        // `since <= sent_at` in wrapping order.
        (sent_at.wrapping_sub(since) as i32) >= 0
    }

    /// Runs a lifecycle step on the thread that runs `queue`.
    pub(crate) fn run_step(self: Arc<Self>, group: u32, step: Step, queue: &EventQueue) {
        let g = self.groups.get(group as usize);
        let members = &self.agents[g.start as usize..g.end as usize];
        match step {
            Step::Start => {
                for cell in members {
                    // SAFETY: lifecycle steps run on the thread that runs the group's queue.
                    unsafe { cell.body() }.start(NonNull::from(&**cell));
                }
            }
            Step::Abandon => {
                let local = queue
                    .local()
                    .expect("a lifecycle step runs on its queue's worker");
                for cell in members {
                    for (mbox, msg) in local.take_early(Arc::as_ptr(cell) as *const () as usize) {
                        cell.header.dead_letter_at(
                            msg,
                            DeliveryFailure::NotRegistered,
                            mbox,
                            cell.mbox_id(),
                        );
                    }
                }
            }
            Step::Finish { drained: false } => {
                // Move what other threads queued before deregistration began ahead of the
                // finish, so `finish` runs after the last pending message (and every demand
                // that borrows an agent of this queue runs while the cooperation holds it).
                let local = queue
                    .local()
                    .expect("a lifecycle step runs on its queue's worker");
                local.close_lending();
                local.push(Demand::lifecycle(
                    self.clone(),
                    group,
                    Step::Finish { drained: true },
                ));
            }
            Step::Finish { drained: true } => {
                for cell in members {
                    cell.header.set_status(FINISHED);
                    // SAFETY: as for `Start`.
                    unsafe { cell.body() }.finish(NonNull::from(&**cell));
                }
                if self.groups_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    self.gone();
                }
            }
        }
    }

    /// Every agent has finished: unbind, update the count, notify, tell the parent.
    ///
    /// The notification goes out before the parent hears of it: the parent's agents may be
    /// its receivers, and they finish only after this call tells the parent.
    fn gone(self: &Arc<Self>) {
        self.unbind_all();
        // Uncounted first, so whoever sees it gone (or notified) sees the count without it.
        if self.parent.is_some() {
            self.env.agents_removed(self.agents.len());
            self.env.coop_gone();
        }
        let (reason, waiters) = {
            let mut st = self.lock_state();
            st.status = CoopStatus::Gone;
            (st.reason, std::mem::take(&mut st.gone_waiters))
        };
        waiters.into_iter().for_each(std::task::Waker::wake);
        if let Some(x) = &self.extras {
            for m in &x.notify_deregistered {
                m.send(CoopDeregistered {
                    id: self.id,
                    name: x.name.clone(),
                    reason,
                });
            }
        }
        match &self.parent {
            Some(parent) => parent.child_gone(self),
            None => self.env.root_gone(),
        }
    }

    fn child_gone(self: &Arc<Self>, child: &CoopInner) {
        let (left, registered) = {
            let mut st = self.lock_state();
            // SAFETY: the lock is held and `child` is linked (it registered under this lock
            // and unlinks only here, once).
            unsafe { self.unlink_child(&mut st, child) };
            (st.children, st.status == CoopStatus::Registered)
        };
        if registered && left == 0 && self.parent.is_none() {
            self.env.last_coop_gone();
        }
        self.release_pending();
    }

    /// True once the cooperation is fully gone.
    pub(super) fn is_gone(&self) -> bool {
        self.lock_state().status == CoopStatus::Gone
    }
}

/// A handle to a registered cooperation.
///
/// ```
/// use cohort::{Agent, DeregReason};
/// struct Idle;
/// impl Agent for Idle {}
///
/// let env = cohort::Environment::builder().start().unwrap();
/// let mut coop = env.new_coop();
/// coop.add(Idle);
/// let handle = env.register_coop(coop).unwrap();
/// handle.deregister(DeregReason::User(7));
/// env.stop();
/// env.wait();
/// assert!(handle.is_gone());
/// ```
#[derive(Clone)]
pub struct CoopHandle {
    pub(super) inner: Arc<CoopInner>,
}

impl CoopHandle {
    pub(crate) fn new(inner: Arc<CoopInner>) -> Self {
        Self { inner }
    }

    pub(crate) fn into_inner(self) -> Arc<CoopInner> {
        self.inner
    }

    /// The cooperation's id.
    pub fn id(&self) -> CoopId {
        self.inner.id
    }

    /// Its name, if it was given one.
    pub fn name(&self) -> Option<&str> {
        self.inner.extras.as_ref().and_then(|x| x.name.as_deref())
    }

    /// Starts deregistration (children first). Idempotent: the first reason wins.
    pub fn deregister(&self, reason: DeregReason) {
        self.inner.deregister(reason)
    }

    /// True once every agent has run `finish` and the cooperation is gone.
    pub fn is_gone(&self) -> bool {
        self.inner.is_gone()
    }

    /// Number of live child cooperations.
    pub fn child_count(&self) -> usize {
        self.inner.child_count()
    }

    /// The panic that deregistered this cooperation (reason [`DeregReason::Panic`]): which
    /// agent, during which message type or hook, and the panic message. `None` if no panic
    /// deregistered it (yet). See [`PanicNotice`] for an example.
    pub fn panic_notice(&self) -> Option<PanicNotice> {
        self.inner.lock_state().panic.as_deref().cloned()
    }

    /// The reason the cooperation is deregistering or was deregistered for; `None` while it
    /// is registered.
    pub fn dereg_reason(&self) -> Option<DeregReason> {
        let st = self.inner.lock_state();
        match st.status {
            CoopStatus::Registering | CoopStatus::Registered => None,
            CoopStatus::Deregistering | CoopStatus::Gone => Some(st.reason),
        }
    }
}

impl fmt::Debug for CoopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoopHandle")
            .field("id", &self.inner.id)
            .field("name", &self.name())
            .finish()
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod layout_tests {
    use super::CoopInner;
    use crate::dispatcher::Binder;
    use std::mem::size_of;

    /// A tree of small cooperations (skynet: one per ten agents) keeps one of these per
    /// cooperation: 200 bytes with the `Arc`'s counts, a 208-byte block of the allocator.
    #[test]
    fn a_cooperation_is_184_bytes_and_a_binder_one_word() {
        assert_eq!(size_of::<CoopInner>(), 184);
        assert_eq!(size_of::<Binder>(), size_of::<usize>());
        assert_eq!(size_of::<Option<Binder>>(), size_of::<usize>());
    }
}
