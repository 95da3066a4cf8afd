//! [`Unhandled`]: a message no handler of the agent's current state takes, as its
//! dead-letter handler sees it.

use crate::mailbox::MboxId;
use crate::message::{Envelope, Mutable};
use std::any::TypeId;
use std::fmt;

/// A message that no handler of the agent's current state (nor of its parents) takes,
/// handed to the agent's dead-letter handler ([`Context::on_dead_letter`](crate::Context::on_dead_letter)).
///
/// Look at it as the type you expect with [`Unhandled::downcast_ref`] (immutable messages)
/// or [`Unhandled::take_mut`] (mutable ones); dropping it drops the message.
///
/// ```
/// use cohort::{Agent, Context, DefineError, Unhandled};
///
/// struct Stray(u32);
/// struct Sink;
/// impl Agent for Sink {
///     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
///         ctx.on_dead_letter(|_: &mut Self, letter: Unhandled, ctx: &mut Context<'_, Self>| {
///             assert!(letter.type_name().ends_with("Stray"));
///             assert_eq!(letter.downcast_ref::<Stray>().map(|s| s.0), Some(7));
///             ctx.stop_environment();
///         });
///         Ok(())
///     }
///     fn start(&mut self, ctx: &mut Context<'_, Self>) {
///         ctx.send_self(Stray(7));
///     }
/// }
///
/// cohort::launch(|env| {
///     let mut coop = env.new_coop();
///     coop.add(Sink);
///     env.register_coop(coop)?;
///     Ok(())
/// })
/// .unwrap();
/// ```
pub struct Unhandled {
    msg: Envelope,
    mbox: MboxId,
}

impl Unhandled {
    pub(crate) fn new(msg: Envelope, mbox: MboxId) -> Self {
        Self { msg, mbox }
    }

    /// The message type's name (`cohort::Mutable<T>` for a mutable message).
    pub fn type_name(&self) -> &'static str {
        self.msg.type_name()
    }

    /// The mailbox the message arrived through.
    pub fn mbox(&self) -> MboxId {
        self.mbox
    }

    /// Whether the message is an immutable `M` (sent with `send`).
    pub fn is<M: 'static>(&self) -> bool {
        self.msg.key() == TypeId::of::<M>()
    }

    /// The message as an `M`, if it is one (sent with `send`, or with `send_mut`: a mutable
    /// message can be looked at too).
    pub fn downcast_ref<M: 'static>(&self) -> Option<&M> {
        let key = self.msg.key();
        if key == TypeId::of::<M>() || key == TypeId::of::<Mutable<M>>() {
            // SAFETY: the key says the envelope was built from an `M` (immutable or
            // mutable), and it is not consumed while `self` lives.
            Some(unsafe { self.msg.get::<M>() })
        } else {
            None
        }
    }

    /// Takes a mutable message (sent with `send_mut`) by value; gives the letter back if it
    /// is not a mutable `M`.
    pub fn take_mut<M: 'static>(self) -> Result<M, Self> {
        if self.msg.key() == TypeId::of::<Mutable<M>>() {
            // SAFETY: the key `Mutable<M>` is only carried by envelopes built by
            // `Envelope::mutable::<M>`, which hold an owned `M`; `take` consumes the envelope.
            Ok(unsafe { self.msg.take::<M>() })
        } else {
            Err(self)
        }
    }
}

impl fmt::Debug for Unhandled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unhandled")
            .field("type", &self.type_name())
            .field("mbox", &self.mbox)
            .finish()
    }
}
