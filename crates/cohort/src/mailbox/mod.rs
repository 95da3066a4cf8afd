//! Mailboxes: the [`Mbox`] handle and how a message is delivered through it, custom
//! mailboxes, multi-consumer ones (named, anonymous, unique-subscribers), message limits,
//! dead letters and request/reply.

pub(crate) mod custom;
pub(crate) mod dead_letter;
mod deliver;
mod handle;
pub(crate) mod limits;
pub(crate) mod multi_consumer;
pub(crate) mod request;

pub(crate) use deliver::{ItSelf, deliver, deliver_event};
pub(crate) use handle::{IndirectMbox, WeakMbox};
pub use handle::{Mbox, MboxId};
