//! [`Context::request`]: an agent asks another agent (any mailbox) without blocking; the
//! reply, or why there is none, comes back as an event of the asking agent.
//!
//! The request is the ordinary [`Request`] message of `Mbox::request`, whose reply goes to
//! the ask instead of a waiting slot. Without a timeout the request owns the ask's state
//! outright, so whoever settles the request (reply, deferred reply, drop) moves the state
//! into the asker's queue: no lock, no reference count. With one, the reply and the timeout
//! (a timer of the environment's timer service) share the state and race for the handler
//! under one lock: the first takes it, the other finds nothing. Either way the outcome is
//! delivered exactly once, and the event that carries it is the ask's state itself (it
//! starts with a completion's header), so an ask needs two blocks, its state and its
//! request, which the thread's spare blocks ([`spare`]) often provide.

use super::completion::{Completion, Head};
use super::spare;
use crate::agent::cell::{ACTIVE, DynCell, NEW};
use crate::agent::{Agent, Context};
use crate::error::AsyncError;
use crate::mailbox::dead_letter::DeliveryFailure;
use crate::mailbox::request::{Answer, ReplyHook, Request, RequestError};
use crate::mailbox::{Mbox, deliver_event};
use crate::timer::TimerId;
use crate::timer::task::{Deliver, Once, Timer};
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// A request about to be sent by an agent: bound it with [`Ask::timeout`], say which
/// handler gets the outcome with [`Ask::then`]. Made by [`Context::request`].
#[must_use = "nothing is sent until `.then(..)` is called"]
pub struct Ask<'c, 'a, A: Agent, Req, Reply> {
    ctx: &'c Context<'a, A>,
    to: &'c Mbox,
    req: Req,
    timeout: Option<Duration>,
    _reply: PhantomData<fn() -> Reply>,
}

impl<A: Agent, Req, Reply> fmt::Debug for Ask<'_, '_, A, Req, Reply> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ask")
            .field("request", &std::any::type_name::<Req>())
            .field("reply", &std::any::type_name::<Reply>())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<'a, A: Agent> Context<'a, A> {
    /// Sends `req` to `to` as a [`Request<Req, Reply>`] (the receiver answers it as any
    /// request, e.g. with [`Context::on_request`]); [`Ask::then`] names the handler of this
    /// agent that gets the outcome: the reply, or [`RequestError::Timeout`] (with
    /// [`Ask::timeout`]), [`RequestError::ReceiverGone`], [`RequestError::NoHandler`]... It
    /// runs as an event of this agent, on its dispatcher, exactly once; never after the
    /// agent's `finish` (an outcome that comes later is a dead letter). Nothing blocks.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError, Mbox, RequestError};
    /// use std::time::Duration;
    ///
    /// struct Doubler;
    /// impl Agent for Doubler {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on_request(|_, n: &u64, _| n * 2)?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// struct Asker { doubler: Mbox }
    /// impl Agent for Asker {
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         let doubler = self.doubler.clone();
    ///         ctx.request::<u64, u64>(&doubler, 21)
    ///             .timeout(Duration::from_secs(5))
    ///             .then(|_: &mut Self, reply: Result<u64, RequestError>, ctx: &mut Context<'_, Self>| {
    ///                 assert_eq!(reply, Ok(42));
    ///                 ctx.stop_environment();
    ///             })
    ///             .unwrap();
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     let doubler = coop.add(Doubler).mbox();
    ///     coop.add(Asker { doubler });
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn request<'c, Req, Reply>(&'c self, to: &'c Mbox, req: Req) -> Ask<'c, 'a, A, Req, Reply>
    where
        Req: Send + Sync + 'static,
        Reply: Send + 'static,
    {
        Ask {
            ctx: self,
            to,
            req,
            timeout: None,
            _reply: PhantomData,
        }
    }
}

impl<A: Agent, Req, Reply> Ask<'_, '_, A, Req, Reply>
where
    Req: Send + Sync + 'static,
    Reply: Send + 'static,
{
    /// Gives up after `timeout`: the handler then gets [`RequestError::Timeout`] and a
    /// later reply is dropped. Without it, the ask waits for the reply or for the request's
    /// drop (the receiver gone, no handler, not answered), however long that takes.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends the request; `handler` gets the outcome on this agent.
    ///
    /// Errors (nothing is sent): [`AsyncError::ZeroTimeout`] for a zero timeout,
    /// [`AsyncError::AskInDefine`] from `define`, [`AsyncError::AgentFinishing`] once the
    /// agent's cooperation has begun to deregister.
    pub fn then<H>(self, handler: H) -> Result<(), AsyncError>
    where
        H: for<'c> FnOnce(&mut A, Result<Reply, RequestError>, &mut Context<'c, A>)
            + Send
            + 'static,
    {
        if self.timeout == Some(Duration::ZERO) {
            return Err(AsyncError::ZeroTimeout);
        }
        match self.ctx.cell().header.status() {
            ACTIVE => {}
            NEW => return Err(AsyncError::AskInDefine),
            _ => return Err(AsyncError::AgentFinishing),
        }
        let Some(timeout) = self.timeout else {
            // Each box is allocated before its value is made and the value written into it,
            // not made on the stack and copied after the allocation (a copy whose wide loads
            // wait for the narrow stores that had just made it).
            let owned = Box::write(
                spare::boxed(),
                OwnedAsk::<A, Reply, H> {
                    head: Head::new(OwnedAsk::<A, Reply, H>::run_answered),
                    cell: Some(self.ctx.cell_arc()),
                    handler,
                    outcome: None,
                },
            );
            let request = Box::write(spare::boxed(), Request::with_answer(self.req, owned));
            self.to.send_boxed(request);
            return Ok(());
        };
        let state = Arc::new(AskState::<A, Reply, H> {
            head: Head::new(AskState::<A, Reply, H>::run_settled),
            cell: self.ctx.cell_arc(),
            stage: Mutex::new(Stage::Waiting(handler)),
            timer: OnceLock::new(),
            timeout,
        });
        let env = self.ctx.environment();
        let timer = Timer::new(self.ctx.self_mbox(), Once::<Expire>::new(), state.clone());
        let _ = state.timer.set(env.schedule(timeout, Arc::new(timer)));
        self.to.send(Request::with_hook(self.req, state));
        Ok(())
    }
}

/// A handler of an ask's outcome on agent `A`: what [`Ask::then`] takes.
trait OutcomeHandler<A: Agent, Reply>:
    for<'c> FnOnce(&mut A, Result<Reply, RequestError>, &mut Context<'c, A>) + Send + 'static
{
}

impl<A: Agent, Reply, H> OutcomeHandler<A, Reply> for H where
    H: for<'c> FnOnce(&mut A, Result<Reply, RequestError>, &mut Context<'c, A>) + Send + 'static
{
}

/// Hands a settled ask's event to the asking agent; one that has begun to finish gets it as
/// a dead letter (its handler dropped with it).
fn deliver_outcome<A: Agent>(cell: &Arc<DynCell>, completion: Completion<A>) {
    if let Err(refused) = deliver_event(cell, completion.into_envelope()) {
        cell.header
            .dead_letter(refused, DeliveryFailure::ReceiverGone);
    }
}

/// An ask without a timeout, owned by its request until answered, then by the event that
/// runs its handler on the agent.
///
/// `repr(C)` with the completion header first: the answered box is itself that event
/// ([`Completion::from_head`]).
#[repr(C)]
struct OwnedAsk<A: Agent, Reply, H> {
    head: Head<A>,
    /// Who asked: taken by the answer, which needs it only to reach the agent's queue.
    cell: Option<Arc<DynCell>>,
    handler: H,
    outcome: Option<Result<Reply, RequestError>>,
}

impl<A: Agent, Reply: Send + 'static, H: OutcomeHandler<A, Reply>> OwnedAsk<A, Reply, H> {
    /// The answered ask's event: runs its handler on the agent (`Some`) or drops it (`None`),
    /// and frees the box.
    ///
    /// # Safety
    /// `head` is the head of a leaked `Box<OwnedAsk<A, Reply, H>>`, used once.
    unsafe fn run_answered(head: NonNull<Head<A>>, with: Option<(&mut A, &mut Context<'_, A>)>) {
        let ask = head.as_ptr().cast::<Self>();
        // SAFETY: `head` is the first field of a `repr(C)` `OwnedAsk` leaked by `answer`
        // (caller), so its address is the box's; its value is moved out exactly once here.
        let OwnedAsk {
            handler, outcome, ..
        } = unsafe { ask.read() };
        // SAFETY: the same box, its value moved out: what is left is its memory.
        let memory = unsafe { Box::from_raw(ask.cast::<MaybeUninit<Self>>()) };
        // The handler is likely to ask again: this memory is kept for that ask.
        spare::keep(memory);
        if let (Some(outcome), Some((agent, ctx))) = (outcome, with) {
            handler(agent, outcome, ctx)
        }
    }
}

impl<A: Agent, Reply: Send + 'static, H: OutcomeHandler<A, Reply>> Answer<Reply>
    for OwnedAsk<A, Reply, H>
{
    fn answer(self: Box<Self>, outcome: Result<Reply, RequestError>) {
        self.settle(outcome)
    }

    fn reply(self: Box<Self>, reply: Reply) {
        self.settle(Ok(reply))
    }
}

impl<A: Agent, Reply: Send + 'static, H: OutcomeHandler<A, Reply>> OwnedAsk<A, Reply, H> {
    /// Keeps `outcome` in the box and hands the box to the asker as the event that runs its
    /// handler (inlined into both callers, so the outcome is written into the box once).
    #[inline(always)]
    fn settle(mut self: Box<Self>, outcome: Result<Reply, RequestError>) {
        let Some(cell) = self.cell.take() else { return };
        self.outcome = Some(outcome);
        // SAFETY: `head` is the first field of this `repr(C)` box, leaked for the completion;
        // `run_answered` is its `call`, which takes the box back.
        let completion =
            unsafe { Completion::<A>::from_head(NonNull::from(Box::leak(self)).cast()) };
        deliver_outcome(&cell, completion);
    }
}

/// An ask with a timeout, in flight: who asked, and the handler the first outcome takes.
///
/// `repr(C)` with the completion header first: once settled, the state is itself the event
/// that runs the handler on the agent ([`Completion::from_head`]).
#[repr(C)]
struct AskState<A: Agent, Reply, H> {
    head: Head<A>,
    cell: Arc<DynCell>,
    stage: Mutex<Stage<Reply, H>>,
    /// The timeout's timer, cancelled by a reply that comes first.
    timer: OnceLock<TimerId>,
    timeout: Duration,
}

/// Where an ask is: the first outcome moves it from `Waiting` to `Settled`, its event's run
/// (or drop) to `Done`.
enum Stage<Reply, H> {
    Waiting(H),
    Settled(H, Result<Reply, RequestError>),
    Done,
}

impl<A: Agent, Reply: Send + 'static, H: OutcomeHandler<A, Reply>> AskState<A, Reply, H> {
    /// Delivers `outcome` if nothing was delivered before.
    fn settle(&self, outcome: Result<Reply, RequestError>, cancel_timer: bool) {
        {
            let mut stage = self.stage.lock().unwrap_or_else(|e| e.into_inner());
            match std::mem::replace(&mut *stage, Stage::Done) {
                Stage::Waiting(handler) => *stage = Stage::Settled(handler, outcome),
                other => {
                    *stage = other;
                    return;
                }
            }
        }
        if cancel_timer && let Some(timer) = self.timer.get() {
            timer.cancel();
        }
        // The event is this state: it keeps a reference of its own, released by its run.
        // SAFETY: every `AskState` lives in an `Arc` (`Ask::then` makes them only so).
        let own = Arc::into_raw(unsafe { crate::sync::arc_from_ref(self) });
        // SAFETY: `head` is the first field of this `repr(C)` state, whose `Arc` count was
        // just raised for the completion; `run_settled` is its `call`.
        let completion =
            unsafe { Completion::<A>::from_head(NonNull::from(&*own).cast::<Head<A>>()) };
        deliver_outcome(&self.cell, completion);
    }

    /// The settled ask's event: runs its handler on the agent (`Some`) or drops it (`None`),
    /// and releases the event's reference to the state.
    ///
    /// # Safety
    /// `head` is the head of an `AskState<A, Reply, H>` whose strong count was raised for
    /// this call by `settle`, called once for that count.
    unsafe fn run_settled(head: NonNull<Head<A>>, with: Option<(&mut A, &mut Context<'_, A>)>) {
        // SAFETY: `head` is the first field of a `repr(C)` `AskState` (caller), so its
        // address is the state's, which `Arc::from_raw` takes back with the raised count.
        let state = unsafe { Arc::from_raw(head.as_ptr().cast::<Self>().cast_const()) };
        let stage = std::mem::replace(
            &mut *state.stage.lock().unwrap_or_else(|e| e.into_inner()),
            Stage::Done,
        );
        if let (Stage::Settled(handler, outcome), Some((agent, ctx))) = (stage, with) {
            handler(agent, outcome, ctx)
        }
    }
}

impl<A: Agent, Reply: Send + 'static, H: OutcomeHandler<A, Reply>> ReplyHook<Reply>
    for AskState<A, Reply, H>
{
    fn complete(&self, outcome: Result<Reply, RequestError>) {
        self.settle(outcome, true)
    }
}

/// What an ask's timer does when it fires: settle the ask with a timeout.
trait Expirable: Send + Sync + 'static {
    fn expire(&self);
}

impl<A: Agent, Reply: Send + 'static, H: OutcomeHandler<A, Reply>> Expirable
    for AskState<A, Reply, H>
{
    fn expire(&self) {
        // Not cancelling its own timer: it fires under that timer's lock.
        self.settle(Err(RequestError::Timeout(self.timeout)), false)
    }
}

/// The timer's delivery: expire the ask (the mailbox is unused).
struct Expire;

impl<S: Expirable> Deliver<Arc<S>> for Expire {
    fn deliver(_: &Mbox, state: Arc<S>) {
        state.expire()
    }
}
