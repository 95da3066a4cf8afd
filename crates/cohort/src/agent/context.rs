//! The [`Context`] an agent's hooks and handlers receive.

use super::Agent;
use crate::agent::cell::DynCell;
use crate::agent::state::DEFAULT_STATE;
use crate::agent::subscription::{Action, HANDLE, NewHandler, Subscriptions};
use crate::error::{LimitError, RegisterError, SubscribeError};
use crate::mailbox::limits::MessageLimits;
use crate::mailbox::{IndirectMbox, ItSelf, Mbox, deliver};
use crate::message::{Envelope, Mutable};
use crate::runtime::coop::{Coop, CoopHandle, CoopInner, DeregReason};
use crate::runtime::env::Environment;
use std::any::TypeId;
use std::ptr::NonNull;
use std::sync::Arc;

/// What an agent's hooks and handlers can do: subscribe, send to itself, create child
/// cooperations, deregister its cooperation, stop the environment.
///
/// A context is built on the stack for each call (three words); it is not kept.
pub struct Context<'a, A: Agent> {
    pub(crate) cell: NonNull<DynCell>,
    coop: *const CoopInner,
    pub(crate) subs: &'a mut Subscriptions<A>,
}

impl<'a, A: Agent> Context<'a, A> {
    #[inline]
    pub(crate) fn new(
        cell: NonNull<DynCell>,
        coop: *const CoopInner,
        subs: &'a mut Subscriptions<A>,
    ) -> Self {
        Self { cell, coop, subs }
    }

    pub(crate) fn cell(&self) -> &DynCell {
        // SAFETY: a context only exists while one of the agent's hooks runs, when the cell is
        // alive.
        unsafe { self.cell.as_ref() }
    }

    /// The agent's own direct mailbox.
    pub fn self_mbox(&self) -> Mbox {
        let ptr = self.cell.as_ptr() as *const DynCell;
        // SAFETY: the cell is owned by an `Arc` (cells are only created in `Arc`s) and alive.
        let arc = unsafe { crate::sync::arc_from_ref(ptr) };
        Mbox::direct(arc)
    }

    /// Sends an immutable message to this agent's own direct mailbox. Cheaper than
    /// `self_mbox().send(..)`: no mailbox handle is cloned.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// struct Tick;
    /// struct Countdown(u32);
    /// impl Agent for Countdown {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on(|me, _: &Tick, ctx| {
    ///             me.0 -= 1;
    ///             if me.0 == 0 { ctx.stop_environment() } else { ctx.send_self(Tick) }
    ///         })?;
    ///         Ok(())
    ///     }
    ///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.send_self(Tick);
    ///     }
    /// }
    ///
    /// cohort::launch(|env| {
    ///     let mut coop = env.new_coop();
    ///     coop.add(Countdown(1_000));
    ///     env.register_coop(coop)?;
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    #[inline(always)]
    pub fn send_self<M: Send + Sync + 'static>(&self, msg: M) {
        let me = ItSelf(self.cell);
        deliver(me, me.mbox_id(), Envelope::immutable(msg), 0)
    }

    /// Sends a mutable message to this agent's own direct mailbox.
    #[inline(always)]
    pub fn send_self_mut<M: Send + 'static>(&self, msg: M) {
        let me = ItSelf(self.cell);
        deliver(me, me.mbox_id(), Envelope::mutable(msg), 0)
    }

    /// Subscribes `handler` to immutable messages of type `M` sent to the agent's direct
    /// mailbox. The handler takes the message by reference.
    ///
    /// A second subscription for the same type is an error. The handler belongs to the
    /// default state; [`Context::in_state`] subscribes in another one.
    pub fn on<M, F>(&mut self, handler: F) -> Result<(), SubscribeError>
    where
        M: Send + 'static,
        F: for<'c> FnMut(&mut A, &M, &mut Context<'c, A>) + Send + 'static,
    {
        self.add_entry(
            DEFAULT_STATE,
            HANDLE,
            None,
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            immutable_handler(handler),
        )
    }

    /// Adds a subscription entry for messages arriving through `mbox` (the direct mailbox if
    /// `None`) in `state`, registering with a multi-consumer mailbox the first time any state
    /// subscribes to `key` on it.
    pub(crate) fn add_entry(
        &mut self,
        state: u16,
        action: Action,
        mbox: Option<&Mbox>,
        key: TypeId,
        type_name: fn() -> &'static str,
        handler: NewHandler<A>,
    ) -> Result<(), SubscribeError> {
        let own = self.cell().mbox_id();
        let named = match mbox.map(|m| (m, m.as_named())) {
            None => None,
            Some((m, None)) if m.is_custom() => {
                return Err(SubscribeError::NotSubscribable {
                    message_type: type_name(),
                });
            }
            Some((m, None)) if m.id() == own => None,
            Some((_, None)) => {
                return Err(SubscribeError::ForeignDirectMailbox {
                    message_type: type_name(),
                });
            }
            Some((_, Some(n))) => Some(n.clone()),
        };
        let id = named.as_ref().map_or(own, |n| n.id());
        let register = named.is_some() && !self.subs.has_any(own, id, key);
        self.subs.add(
            own,
            state,
            action,
            id,
            key,
            type_name,
            handler,
            named.clone(),
        )?;
        if let (true, Some(n)) = (register, named)
            && let Err(e) = self.register_named(&n, key, type_name())
        {
            // Refused (a unique-subscribers mailbox taken): take the new entry out without
            // unregistering, since it never was registered.
            self.subs.forget(own, id, key);
            return Err(e);
        }
        Ok(())
    }

    /// Registers this agent with the multi-consumer mailbox `n` for `key`, through its
    /// cooperation's record (which refuses nothing but registers nothing once the
    /// cooperation's deregistration has dropped its agents' subscriptions).
    fn register_named(
        &self,
        n: &Arc<IndirectMbox>,
        key: TypeId,
        message_type: &'static str,
    ) -> Result<(), SubscribeError> {
        if self.coop.is_null() {
            return n.subscribe(key, message_type, self.cell_arc());
        }
        // SAFETY: a context exists while one of the agent's hooks runs, and the agent's
        // cooperation outlives its hooks (see `AgentBody::coop`).
        unsafe { &*self.coop }.subscribe_named(n, key, message_type, self.cell_arc())
    }

    /// Whether the cooperation's deregistration has dropped its agents' multi-consumer
    /// subscriptions (step 3 of "Lifecycle").
    fn subscriptions_dropped(&self) -> bool {
        // SAFETY: as in `register_named`.
        !self.coop.is_null() && unsafe { &*self.coop }.named_subscriptions_dropped()
    }

    /// The agent's cooperation (see `AgentBody::coop`).
    pub(crate) fn coop_ptr(&self) -> *const CoopInner {
        self.coop
    }

    /// Answers requests of type `Req` ([`Mbox::request`]) sent to the agent's direct mailbox:
    /// the handler's result is the reply. (It subscribes to
    /// [`Request<Req, Reply>`](crate::Request); a handler wanting to reply later can
    /// subscribe to that message with [`Context::on`] and call `reply` itself.)
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    /// use std::time::Duration;
    ///
    /// struct Len;
    /// impl Agent for Len {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on_request(|_, s: &String, _| s.len())?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// let len = coop.add(Len).mbox();
    /// env.register_coop(coop).unwrap();
    /// let pending = len.request::<String, usize>("abc".into());
    /// assert_eq!(pending.wait(Duration::from_secs(5)), Ok(3));
    /// ```
    pub fn on_request<Req, Reply, F>(&mut self, handler: F) -> Result<(), SubscribeError>
    where
        Req: Send + Sync + 'static,
        Reply: Send + 'static,
        F: for<'c> FnMut(&mut A, &Req, &mut Context<'c, A>) -> Reply + Send + 'static,
    {
        self.add_entry(
            DEFAULT_STATE,
            HANDLE,
            None,
            TypeId::of::<crate::Request<Req, Reply>>(),
            std::any::type_name::<crate::Request<Req, Reply>>,
            request_handler(handler),
        )
    }

    /// Subscribes a *thread-safe* handler to immutable messages of type `M` on the direct
    /// mailbox: it only reads the agent (`&A`, so `A: Sync`), and gets no context. On
    /// `adv_thread_pool` several thread-safe handlers of one agent may run at once on
    /// different workers, but never alongside one of its other handlers (or `start`,
    /// `finish`); on every other dispatcher it runs as an ordinary handler.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    ///
    /// struct Lookup { table: Vec<u64>, served: AtomicU64 }
    /// struct Get(usize);
    ///
    /// impl Agent for Lookup {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.on_thread_safe(|me: &Self, get: &Get| {
    ///             let _ = me.table.get(get.0);
    ///             me.served.fetch_add(1, Ordering::Relaxed);
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    /// # let _ = Lookup { table: vec![], served: AtomicU64::new(0) };
    /// ```
    pub fn on_thread_safe<M, F>(&mut self, handler: F) -> Result<(), SubscribeError>
    where
        A: Sync,
        M: Send + 'static,
        F: Fn(&A, &M) + Send + Sync + 'static,
    {
        let id = self.cell().mbox_id();
        let handler = Arc::new(handler);
        let exclusive = handler.clone();
        self.add_entry(
            DEFAULT_STATE,
            HANDLE,
            None,
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            immutable_handler(move |a: &mut A, m: &M, _: &mut Context<'_, A>| exclusive(a, m)),
        )?;
        self.subs.add_shared(
            id,
            id,
            TypeId::of::<M>(),
            DEFAULT_STATE,
            Box::new(move |a: &A, env: &Envelope| {
                // SAFETY: found by the key `TypeId::of::<M>()`, as in `add_immutable`.
                handler(a, unsafe { env.get::<M>() })
            }),
        );
        Ok(())
    }

    /// Subscribes `handler` to mutable messages of type `M` (sent with
    /// [`Mbox::send_mut`]): the handler takes the message by value.
    pub fn on_mut<M, F>(&mut self, handler: F) -> Result<(), SubscribeError>
    where
        M: Send + 'static,
        F: for<'c> FnMut(&mut A, M, &mut Context<'c, A>) + Send + 'static,
    {
        self.add_entry(
            DEFAULT_STATE,
            HANDLE,
            None,
            TypeId::of::<Mutable<M>>(),
            std::any::type_name::<Mutable<M>>,
            mutable_handler(handler),
        )
    }

    /// Subscribes `handler` to mutable messages of type `M` arriving through `mbox`: the
    /// agent's own direct mailbox (as [`Context::on_mut`]) or a unique-subscribers mailbox
    /// ([`Environment::unique_subscribers_mbox`](crate::Environment::unique_subscribers_mbox)),
    /// whose one subscriber of `Mutable<M>` this agent becomes.
    ///
    /// Errors: [`SubscribeError::MutableOnMultiConsumer`] on a multi-consumer mailbox,
    /// [`SubscribeError::UniqueSubscriberTaken`] if another agent already subscribed to
    /// `Mutable<M>` there, [`SubscribeError::ForeignDirectMailbox`] on another agent's direct
    /// mailbox, [`SubscribeError::AlreadySubscribed`] for a second handler.
    pub fn subscribe_mut<M, F>(&mut self, mbox: &Mbox, handler: F) -> Result<(), SubscribeError>
    where
        M: Send + 'static,
        F: for<'c> FnMut(&mut A, M, &mut Context<'c, A>) + Send + 'static,
    {
        if let Some(named) = mbox.as_named()
            && !named.is_single_consumer()
        {
            return Err(SubscribeError::MutableOnMultiConsumer {
                message_type: std::any::type_name::<Mutable<M>>(),
                mailbox: named.display_name(),
            });
        }
        self.add_entry(
            DEFAULT_STATE,
            HANDLE,
            Some(mbox),
            TypeId::of::<Mutable<M>>(),
            std::any::type_name::<Mutable<M>>,
            mutable_handler(handler),
        )
    }

    /// Subscribes `handler` to immutable messages of type `M` arriving through `mbox`: the
    /// agent's own direct mailbox, or a multi-consumer mailbox
    /// ([`Environment::named_mbox`](crate::Environment::named_mbox)), where it joins every
    /// other subscriber of `M`. The subscription ends when the agent finishes (or with
    /// [`Context::unsubscribe_from`]).
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// struct Price(u64);
    /// struct Listener;
    /// impl Agent for Listener {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let prices = ctx.environment().named_mbox("prices");
    ///         ctx.subscribe(&prices, |_, p: &Price, ctx| {
    ///             assert_eq!(p.0, 42);
    ///             ctx.stop_environment();
    ///         })?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// coop.add(Listener);
    /// env.register_coop(coop).unwrap();
    /// env.named_mbox("prices").send(Price(42));
    /// env.wait();
    /// ```
    pub fn subscribe<M, F>(&mut self, mbox: &Mbox, handler: F) -> Result<(), SubscribeError>
    where
        M: Send + Sync + 'static,
        F: for<'c> FnMut(&mut A, &M, &mut Context<'c, A>) + Send + 'static,
    {
        self.add_entry(
            DEFAULT_STATE,
            HANDLE,
            Some(mbox),
            TypeId::of::<M>(),
            std::any::type_name::<M>,
            immutable_handler(handler),
        )
    }

    /// Sets this agent's delivery filter for messages of type `M` on `mbox` (a
    /// multi-consumer or unique-subscribers mailbox it is subscribed to): a message for
    /// which `filter` returns false is not queued for this agent (other subscribers are not
    /// affected). The filter runs on the sender's thread, once per send; setting it again
    /// replaces it. It ends with the subscription. A filter for mutable messages is declared
    /// for `Mutable<M>`.
    ///
    /// Errors: [`SubscribeError::FilterOnDirectMailbox`] on a direct mailbox,
    /// [`SubscribeError::FilterWithoutSubscription`] before subscribing to `M` on `mbox`.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError};
    ///
    /// struct Price(u64);
    /// struct Cheap;
    /// impl Agent for Cheap {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         let prices = ctx.environment().named_mbox("prices");
    ///         ctx.subscribe(&prices, |_, p: &Price, ctx| {
    ///             assert!(p.0 < 10); // the expensive one never arrives
    ///             ctx.stop_environment();
    ///         })?;
    ///         ctx.set_delivery_filter(&prices, |p: &Price| p.0 < 10)?;
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let env = cohort::Environment::builder().start().unwrap();
    /// let mut coop = env.new_coop();
    /// coop.add(Cheap);
    /// env.register_coop(coop).unwrap();
    /// let prices = env.named_mbox("prices");
    /// prices.send(Price(500));
    /// prices.send(Price(5));
    /// env.wait();
    /// ```
    pub fn set_delivery_filter<M, F>(
        &mut self,
        mbox: &Mbox,
        filter: F,
    ) -> Result<(), SubscribeError>
    where
        M: Send + Sync + 'static,
        F: Fn(&M) -> bool + Send + Sync + 'static,
    {
        let message_type = std::any::type_name::<M>();
        let Some(named) = mbox.as_named() else {
            return Err(SubscribeError::FilterOnDirectMailbox { message_type });
        };
        let key = TypeId::of::<M>();
        if !self.subs.has_any(self.cell().mbox_id(), named.id(), key) {
            return Err(SubscribeError::FilterWithoutSubscription { message_type });
        }
        // SAFETY: the filter is kept under the key `TypeId::of::<M>()`, which only envelopes
        // of `M` carry (or of the `M` of `Mutable<M>`, laid out alike).
        let f: crate::mailbox::multi_consumer::Filter =
            Arc::new(move |e: &Envelope| filter(unsafe { e.get::<M>() }));
        if named.set_filter(key, self.cell.as_ptr(), Some(f)) || self.subscriptions_dropped() {
            // (With the subscriptions dropped by deregistration, there is nothing to filter.)
            Ok(())
        } else {
            Err(SubscribeError::FilterWithoutSubscription { message_type })
        }
    }

    /// Removes this agent's delivery filter for `M` on `mbox`; true if there was a
    /// subscription to remove it from.
    pub fn drop_delivery_filter<M: 'static>(&mut self, mbox: &Mbox) -> bool {
        match mbox.as_named() {
            Some(named) => named.set_filter(TypeId::of::<M>(), self.cell.as_ptr(), None),
            None => false,
        }
    }

    /// Sets this agent's message limits (see [`MessageLimits`]): how many messages of each
    /// type may wait in its queue, and what happens to the next one. Only in
    /// [`Agent::define`], once; the limits hold for the agent's life and apply to messages
    /// from every mailbox.
    ///
    /// Errors: [`LimitError::NotInDefine`] outside `define`, [`LimitError::AlreadySet`] the
    /// second time, [`LimitError::DuplicateType`] / [`LimitError::DuplicateDefault`] for a
    /// type (or the default) limited twice.
    ///
    /// ```
    /// use cohort::{Agent, Context, DefineError, MessageLimits};
    ///
    /// struct Tick;
    /// struct Slow;
    /// impl Agent for Slow {
    ///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
    ///         ctx.set_message_limits(MessageLimits::new().drop::<Tick>(2))?;
    ///         ctx.on(|_, _: &Tick, _| {})?;
    ///         Ok(())
    ///     }
    /// }
    /// # let env = cohort::Environment::builder().start().unwrap();
    /// # let mut coop = env.new_coop();
    /// # coop.add(Slow);
    /// # env.register_coop(coop).unwrap();
    /// ```
    pub fn set_message_limits(&mut self, limits: MessageLimits) -> Result<(), LimitError> {
        let header = &self.cell().header;
        if header.status() != crate::agent::cell::NEW {
            return Err(LimitError::NotInDefine);
        }
        if self.cell().limits().is_some() {
            return Err(LimitError::AlreadySet);
        }
        let limits = limits.validated()?;
        // SAFETY: the status is `NEW`: `define` runs on the registering thread, which has
        // the only access to the agent; no sender reads the limits before `ACTIVE`.
        if !unsafe { self.cell().set_limits(limits) } {
            return Err(LimitError::AlreadySet);
        }
        // Subscriptions made earlier in `define` must now be counted one by one.
        for named in self.subs.named_mboxes() {
            named.serve_one_by_one(self.cell.as_ptr());
        }
        Ok(())
    }

    /// Removes the subscription to immutable `M` on the direct mailbox in the default state;
    /// true if there was one. Takes effect for the next message; a handler may unsubscribe
    /// itself.
    pub fn unsubscribe<M: 'static>(&mut self) -> bool {
        let id = self.cell().mbox_id();
        self.subs.remove(
            id,
            TypeId::of::<M>(),
            DEFAULT_STATE,
            self.cell.as_ptr(),
            self.coop,
        )
    }

    /// Removes the subscription to immutable `M` arriving through `mbox` in the default
    /// state; true if there was one.
    pub fn unsubscribe_from<M: 'static>(&mut self, mbox: &Mbox) -> bool {
        self.subs.remove(
            mbox.id(),
            TypeId::of::<M>(),
            DEFAULT_STATE,
            self.cell.as_ptr(),
            self.coop,
        )
    }

    pub(crate) fn cell_arc(&self) -> Arc<DynCell> {
        let ptr = self.cell.as_ptr() as *const DynCell;
        // SAFETY: the cell lives in an `Arc` and is alive.
        unsafe { crate::sync::arc_from_ref(ptr) }
    }

    /// The environment this agent lives in.
    pub fn environment(&self) -> Environment {
        Environment::from_shared(self.cell().header.env.arc())
    }

    /// Stops the environment (deregisters every cooperation). Idempotent.
    pub fn stop_environment(&self) {
        self.cell().header.env.stop();
    }

    /// A handle to this agent's cooperation.
    pub fn coop(&self) -> CoopHandle {
        // SAFETY: see `coop_inner`; the pointer came from an `Arc<CoopInner>` that is alive.
        CoopHandle::new(unsafe { CoopInner::arc_from_ptr(self.coop) })
    }

    /// Deregisters this agent's cooperation (with its children) with `reason`.
    pub fn deregister_coop(&self, reason: DeregReason) {
        self.coop().deregister(reason);
    }

    /// A new cooperation builder whose parent is this agent's cooperation.
    pub fn new_child_coop(&self) -> Coop {
        Coop::new(self.environment(), Some(self.coop().into_inner()))
    }

    /// Registers a cooperation built with [`Context::new_child_coop`] (or any other builder).
    pub fn register_coop(&self, coop: Coop) -> Result<CoopHandle, RegisterError> {
        coop.register()
    }
}

/// Wraps a handler of immutable `M` as a type-erased one.
pub(crate) fn immutable_handler<A, M, F>(mut handler: F) -> NewHandler<A>
where
    A: Agent,
    M: Send + 'static,
    F: for<'c> FnMut(&mut A, &M, &mut Context<'c, A>) + Send + 'static,
{
    NewHandler::new(
        move |agent: &mut A, env: Envelope, ctx: &mut Context<'_, A>| {
            // SAFETY: the handler is found by the key `TypeId::of::<M>()`, which only
            // envelopes built from an immutable (possibly shared) `M` carry.
            let msg = unsafe { env.get::<M>() };
            handler(agent, msg, ctx)
        },
    )
}

/// Wraps a request's handler as a type-erased one that replies with what it returns: as the
/// request's only holder when the envelope is not shared (no swap), else as any replier.
pub(crate) fn request_handler<A, Req, Reply, F>(mut handler: F) -> NewHandler<A>
where
    A: Agent,
    Req: Send + Sync + 'static,
    Reply: Send + 'static,
    F: for<'c> FnMut(&mut A, &Req, &mut Context<'c, A>) -> Reply + Send + 'static,
{
    NewHandler::new(
        move |agent: &mut A, mut env: Envelope, ctx: &mut Context<'_, A>| {
            if env.is_shared() {
                // SAFETY: the key `TypeId::of::<Request<Req, Reply>>()` is only carried by
                // envelopes built from an immutable (possibly shared) `Request<Req, Reply>`.
                let r = unsafe { env.get::<crate::Request<Req, Reply>>() };
                r.reply(handler(agent, r.payload(), ctx));
            } else {
                // SAFETY: as above, and an unshared envelope owns its request alone.
                let r = unsafe { env.get_mut::<crate::Request<Req, Reply>>() };
                let reply = handler(agent, r.payload(), ctx);
                r.reply_owned(reply);
                // The asker (on this thread, often) is about to box its next request.
                // SAFETY: as above.
                crate::future::spare::drop_and_keep(unsafe {
                    env.into_box::<crate::Request<Req, Reply>>()
                });
            }
        },
    )
}

/// Wraps a handler of mutable `M` as a type-erased one.
pub(crate) fn mutable_handler<A, M, F>(mut handler: F) -> NewHandler<A>
where
    A: Agent,
    M: Send + 'static,
    F: for<'c> FnMut(&mut A, M, &mut Context<'c, A>) + Send + 'static,
{
    NewHandler::new(
        move |agent: &mut A, env: Envelope, ctx: &mut Context<'_, A>| {
            // SAFETY: the key `TypeId::of::<Mutable<M>>()` is only carried by envelopes
            // built by `Envelope::mutable::<M>`; the message is taken exactly once.
            let msg = unsafe { env.take::<M>() };
            handler(agent, msg, ctx)
        },
    )
}
