//! [`Probe`]: a test agent that collects the messages of one type sent to it or published
//! on a mailbox.

use super::{Inner, TestEnv, TestError};
use crate::agent::{Agent, Context, DefineError};
use crate::mailbox::Mbox;
use crate::runtime::coop::CoopHandle;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Inbox<M> = Arc<Mutex<VecDeque<M>>>;

/// Collects messages of type `M` (see [`TestEnv::probe`] and [`TestEnv::probe_on`]).
pub struct Probe<M> {
    env: Rc<Inner>,
    inbox: Inbox<M>,
    mbox: Mbox,
    coop: CoopHandle,
}

struct ProbeAgent<M> {
    inbox: Inbox<M>,
    source: Option<Mbox>,
}

impl<M: Clone + Send + Sync + 'static> Agent for ProbeAgent<M> {
    fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
        let keep = |me: &mut Self, m: &M, _: &mut Context<'_, Self>| {
            me.inbox
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_back(m.clone());
        };
        ctx.on(keep)?;
        if let Some(source) = self.source.take() {
            ctx.subscribe(&source, keep)?;
        }
        Ok(())
    }

    fn name(&self) -> std::borrow::Cow<'static, str> {
        format!("probe<{}>", std::any::type_name::<M>()).into()
    }
}

impl TestEnv {
    /// A probe: a new agent that keeps every `M` sent to its [mailbox](Probe::mbox) (give
    /// that mailbox to the agents under test as a reply address).
    pub fn probe<M: Clone + Send + Sync + 'static>(&self) -> Result<Probe<M>, TestError> {
        self.new_probe(None)
    }

    /// A probe that also keeps every `M` published on the multi-consumer mailbox `on` (a
    /// named mailbox, for instance).
    pub fn probe_on<M: Clone + Send + Sync + 'static>(
        &self,
        on: &Mbox,
    ) -> Result<Probe<M>, TestError> {
        self.new_probe(Some(on.clone()))
    }

    fn new_probe<M: Clone + Send + Sync + 'static>(
        &self,
        source: Option<Mbox>,
    ) -> Result<Probe<M>, TestError> {
        let inbox: Inbox<M> = Arc::default();
        let mut coop = self.new_coop();
        let mbox = coop
            .add(ProbeAgent {
                inbox: inbox.clone(),
                source,
            })
            .mbox();
        let coop = self.register(coop)?;
        self.run_until_quiet()?;
        Ok(Probe {
            env: self.inner.clone(),
            inbox,
            mbox,
            coop,
        })
    }
}

impl<M: 'static> Probe<M> {
    /// The probe's own mailbox.
    pub fn mbox(&self) -> Mbox {
        self.mbox.clone()
    }

    /// The oldest message kept and not yet taken, if any (does not run the agents).
    pub fn try_take(&self) -> Option<M> {
        self.inbox
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }

    /// Messages kept and not yet taken.
    pub fn len(&self) -> usize {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when no message is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs the agents and the virtual clock until a message reaches the probe, for at most
    /// `within` of virtual time, and returns the oldest one. The clock stops at the instant
    /// the message arrived. None within that time: [`TestError::NoMessage`] (the clock
    /// then stands `within` later).
    pub fn expect_message(&self, within: Duration) -> Result<M, TestError> {
        let target = self.env.env().shared().timers.virtual_now() + within;
        self.env.advance_to(target, |_| !self.is_empty())?;
        self.try_take().ok_or(TestError::NoMessage {
            message_type: std::any::type_name::<M>(),
            within,
        })
    }

    /// Runs the agents and the virtual clock for `within` and checks that no message
    /// reached the probe (one did: [`TestError::UnexpectedMessage`], the message stays).
    pub fn expect_no_message(&self, within: Duration) -> Result<(), TestError> {
        let target = self.env.env().shared().timers.virtual_now() + within;
        self.env.advance_to(target, |_| !self.is_empty())?;
        if self.is_empty() {
            Ok(())
        } else {
            Err(TestError::UnexpectedMessage {
                message_type: std::any::type_name::<M>(),
            })
        }
    }
}

impl<M> Drop for Probe<M> {
    fn drop(&mut self) {
        self.coop
            .deregister(crate::runtime::coop::DeregReason::Normal);
    }
}
