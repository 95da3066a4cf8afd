//! [`Completion`]: an event the runtime owes an agent (a future's output, an ask's outcome),
//! carried to it through its own queue as an ordinary message and run as a handler.
//!
//! It is one allocation: the closure to run, behind a header holding a function pointer
//! that knows its type. The message itself is that one thin pointer, so the envelope
//! carries it inline and allocates nothing more. An ask's state starts with such a header
//! itself ([`Completion::from_head`]), so its outcome travels in no allocation of its own.

use crate::agent::cell::{AgentBody, DynCell};
use crate::agent::{Agent, Context};
use crate::message::Envelope;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;

/// Runs (`Some`) or drops (`None`) the closure behind a header, and frees it (or releases
/// the completion's reference to it).
pub(crate) type CallFn<A> = unsafe fn(NonNull<Head<A>>, Option<(&mut A, &mut Context<'_, A>)>);

/// What a completion owns, for the compiler's checks (a boxed closure over the agent).
type Owned<A> = Box<dyn FnOnce(&mut A) + Send>;

/// What every node starts with (`repr(C)`: a node's address is its head's).
pub(crate) struct Head<A: Agent> {
    call: CallFn<A>,
    /// The spawned future's id in the agent's table (0 for an ask).
    id: u64,
}

impl<A: Agent> Head<A> {
    /// The head of a node that is not a spawned future's, run or dropped by `call`.
    pub(crate) fn new(call: CallFn<A>) -> Self {
        Self { call, id: 0 }
    }
}

#[repr(C)]
struct Node<A: Agent, F> {
    head: Head<A>,
    f: F,
}

/// A closure to run on agent `A` in its own context, exactly once.
pub(crate) struct Completion<A: Agent> {
    node: NonNull<Head<A>>,
    _owns: PhantomData<Owned<A>>,
}

// SAFETY: built only from `Send` closures (`Completion::new`) or from an ask's state, which
// holds only `Send` values (`Completion::from_head`), and run or dropped once.
unsafe impl<A: Agent> Send for Completion<A> {}

/// # Safety
/// `head` is the head of a live `Node<A, F>` made by `Completion::new`, used once.
unsafe fn call<A: Agent, F>(head: NonNull<Head<A>>, with: Option<(&mut A, &mut Context<'_, A>)>)
where
    F: for<'c> FnOnce(&mut A, &mut Context<'c, A>),
{
    // SAFETY: the node was boxed as a `Node<A, F>` (caller); taken back exactly once.
    let node = unsafe { Box::from_raw(head.as_ptr().cast::<Node<A, F>>()) };
    let f = node.f;
    if let Some((agent, ctx)) = with {
        f(agent, ctx)
    }
}

impl<A: Agent> Completion<A> {
    /// A completion of future `id` (0: not a spawned future) that runs `f`.
    pub(crate) fn new<F>(id: u64, f: F) -> Self
    where
        F: for<'c> FnOnce(&mut A, &mut Context<'c, A>) + Send + 'static,
    {
        let node = Box::new(Node {
            head: Head {
                call: call::<A, F>,
                id,
            },
            f,
        });
        Self {
            node: NonNull::from(Box::leak(node)).cast(),
            _owns: PhantomData,
        }
    }

    /// A completion that is the node `head` starts, made by its owner: `head`'s `call`
    /// releases it (frees a box, or drops one count of an `Arc`).
    ///
    /// # Safety
    /// `head` is the first field of a live `repr(C)` node that the caller hands to this
    /// completion (a leaked box, or a strong count of an `Arc` raised for it); its `call`
    /// runs or drops what the node holds for the agent, and releases the node, exactly once.
    pub(crate) unsafe fn from_head(head: NonNull<Head<A>>) -> Self {
        Self {
            node: head,
            _owns: PhantomData,
        }
    }

    fn id(&self) -> u64 {
        // SAFETY: the node lives until `run` or `drop` consumes it.
        unsafe { self.node.as_ref() }.id
    }

    /// The envelope that carries it (a mutable message: one receiver, taken by value).
    pub(crate) fn into_envelope(self) -> Envelope {
        Envelope::mutable(self)
    }

    fn run(self, agent: &mut A, ctx: &mut Context<'_, A>) {
        let node = self.node;
        std::mem::forget(self);
        // SAFETY: `node` is live and, `self` forgotten, used exactly once here.
        unsafe { (node.as_ref().call)(node, Some((agent, ctx))) }
    }
}

impl<A: Agent> Drop for Completion<A> {
    fn drop(&mut self) {
        // SAFETY: `node` is live; `run` forgets `self`, so this is its one use.
        unsafe { (self.node.as_ref().call)(self.node, None) }
    }
}

impl<A: Agent> AgentBody<A> {
    /// Runs a completion as a handler of the agent: in its context, its panic following the
    /// agent's panic reaction, a state switch's hooks run after it.
    #[cold]
    #[inline(never)]
    pub(crate) fn run_completion(&mut self, this: NonNull<DynCell>, msg: Envelope) {
        // SAFETY: the caller found the key of `Mutable<Completion<A>>`, which only
        // `Completion::into_envelope` makes.
        let completion = unsafe { msg.take::<Completion<A>>() };
        let id = completion.id();
        // SAFETY: the cell is alive while its demands run.
        let cell = unsafe { this.as_ref() };
        if id != 0 {
            cell.header
                .env
                .futures
                .table
                .delivered(super::agent_key(cell), id);
        }
        let mut ctx = Context::new(this, self.coop, &mut self.subs);
        let agent = &mut *self.agent;
        let result = catch_unwind(AssertUnwindSafe(|| completion.run(agent, &mut ctx)));
        if let Err(payload) = result {
            self.on_panic(this, "a future's output or an ask's outcome", payload);
        }
        if self.subs.pending() {
            self.run_effects(this);
        }
    }
}
