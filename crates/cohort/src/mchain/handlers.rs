//! Typed handlers for receiving from chains: one closure per message type.

use crate::mailbox::custom::AnyMessage;
use crate::mailbox::request::Request;
use crate::message::Mutable;
use std::any::TypeId;

type Erased<'a> = Box<dyn FnMut(AnyMessage) + 'a>;

/// The handlers of a [`receive`](crate::mchain::receive()) or of a select's
/// [`receive_case`](crate::mchain::receive_case): closures per message type. A second
/// handler for the same type replaces the first.
///
/// ```
/// use cohort::mchain::{from, receive, Handlers, MchainParams};
///
/// struct Ping(u32);
/// let env = cohort::Environment::builder().start().unwrap();
/// let chain = env.create_mchain(MchainParams::unbounded()).unwrap();
/// chain.send(Ping(1)).unwrap();
/// chain.send_mut(vec![1u8, 2, 3]).unwrap();
/// let (mut pings, mut bytes) = (0, Vec::new());
/// let r = receive(
///     from(&chain).handle_n(2),
///     &mut Handlers::new()
///         .on(|p: &Ping| pings += p.0)
///         .on_mut(|v: Vec<u8>| bytes = v),
/// );
/// assert_eq!(r.handled, 2);
/// assert_eq!((pings, bytes.len()), (1, 3));
/// ```
#[derive(Default)]
pub struct Handlers<'a> {
    list: Vec<(TypeId, Erased<'a>)>,
}

impl<'a> Handlers<'a> {
    /// No handler yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn add(mut self, key: TypeId, f: Erased<'a>) -> Self {
        match self.list.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = f,
            None => self.list.push((key, f)),
        }
        self
    }

    /// Handles immutable messages of type `M` (sent with `send`) by reference.
    pub fn on<M: 'static>(self, mut f: impl FnMut(&M) + 'a) -> Self {
        self.add(
            TypeId::of::<M>(),
            Box::new(move |m: AnyMessage| {
                if let Some(m) = m.downcast_ref::<M>() {
                    f(m)
                }
            }),
        )
    }

    /// Handles mutable messages of type `M` (sent with `send_mut`) by value.
    pub fn on_mut<M: 'static>(self, mut f: impl FnMut(M) + 'a) -> Self {
        self.add(
            TypeId::of::<Mutable<M>>(),
            Box::new(move |m: AnyMessage| {
                if let Ok(m) = m.downcast::<M>() {
                    f(m)
                }
            }),
        )
    }

    /// Answers requests ([`Mbox::request`](crate::Mbox::request)) sent to the chain's
    /// mailbox: `f`'s result is the reply.
    pub fn on_request<Req, Reply>(self, mut f: impl FnMut(&Req) -> Reply + 'a) -> Self
    where
        Req: Send + Sync + 'static,
        Reply: Send + 'static,
    {
        self.on(move |r: &Request<Req, Reply>| {
            r.reply(f(r.payload()));
        })
    }

    /// Runs the handler for `m`'s type; false (and `m` dropped) if there is none.
    pub(crate) fn handle(&mut self, m: AnyMessage) -> bool {
        let key = m.type_id();
        match self.list.iter_mut().find(|(k, _)| *k == key) {
            Some((_, f)) => {
                f(m);
                true
            }
            None => false,
        }
    }
}
