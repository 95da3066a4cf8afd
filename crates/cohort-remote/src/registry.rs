//! The message registry: which types may cross the wire, under which stable names, with
//! which codec.
//!
//! A type is registered once, under a name both nodes agree on (a type's Rust path can
//! differ between two builds; the name cannot). On a connection, the first message of a
//! type is preceded by a `DeclareType` frame mapping a 4-byte id to that name; every later
//! message carries only the id (Theron's registration, done once per connection). The
//! receiving node resolves the name to its own registration of the type, and decodes with
//! the codec registered for it.

use crate::ask::{self, AskFns, AskReply};
use cohort::{AnyMessage, Request};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::TypeId;
use std::collections::HashMap;
use thiserror::Error;

/// Why a value did not encode or its bytes did not decode.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct CodecError(pub String);

/// How values of registered types become bytes and back. [`Postcard`] is the default;
/// another codec is chosen per type with [`Registry::register_with`].
pub trait Codec: 'static {
    /// Appends `value`'s encoding to `out` (on error, `out` may hold part of it; the caller
    /// truncates).
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError>;
    /// Decodes a whole `T` from `bytes` (trailing bytes are an error).
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError>;
}

/// [postcard](https://docs.rs/postcard): varint integers, no field names, no padding; the
/// default codec: the `codec` bench finds it smaller and faster than bitcode (through serde)
/// on small messages encoded one at a time, which is how a node sends them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Postcard;

/// Lets postcard append to a borrowed buffer (its `to_extend` takes the buffer by value).
struct Append<'a>(&'a mut Vec<u8>);

impl Extend<u8> for Append<'_> {
    #[inline]
    fn extend<I: IntoIterator<Item = u8>>(&mut self, iter: I) {
        self.0.extend(iter)
    }
}

impl Codec for Postcard {
    #[inline]
    fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), CodecError> {
        postcard::to_extend(value, Append(out))
            .map(|_| ())
            .map_err(|e| CodecError(e.to_string()))
    }

    #[inline]
    fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
        match postcard::take_from_bytes::<T>(bytes) {
            Ok((v, [])) => Ok(v),
            Ok((_, rest)) => Err(CodecError(format!(
                "{} bytes left after the value",
                rest.len()
            ))),
            Err(e) => Err(CodecError(e.to_string())),
        }
    }
}

pub(crate) type EncodeFn = fn(&AnyMessage, &mut Vec<u8>) -> Result<(), CodecError>;
type DecodeFn = fn(&[u8]) -> Result<AnyMessage, CodecError>;
type SettleFn = fn(AnyMessage, &crate::ask::AskTable);

/// One registered type.
pub(crate) struct Entry {
    pub(crate) name: Box<str>,
    pub(crate) type_name: &'static str,
    /// How a plain message encodes (a request encodes with `ask`).
    pub(crate) encode: EncodeFn,
    pub(crate) decode: DecodeFn,
    /// For a request type: how it encodes with its id and reply address.
    pub(crate) ask: Option<AskFns>,
    /// For a request's reply type: how the asking node hands it to the request.
    pub(crate) settle: Option<SettleFn>,
}

fn encode_as<T: Serialize + 'static, C: Codec>(
    msg: &AnyMessage,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    match msg.downcast_ref::<T>() {
        Some(v) => C::encode(v, out),
        None => Err(CodecError(format!(
            "registry entry used for a {}",
            msg.type_name()
        ))),
    }
}

/// A request's encoding needs its id and reply address: `AskFns::encode`.
fn encode_with_ask(msg: &AnyMessage, _: &mut Vec<u8>) -> Result<(), CodecError> {
    Err(CodecError(format!(
        "{} is encoded with its id and reply address",
        msg.type_name()
    )))
}

fn decode_as<T: DeserializeOwned + Send + Sync + 'static, C: Codec>(
    bytes: &[u8],
) -> Result<AnyMessage, CodecError> {
    C::decode::<T>(bytes).map(AnyMessage::new)
}

/// API misuse while registering types.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    /// Two types under one name.
    #[error("the name {name:?} is already registered (for {existing}); give {new} another name")]
    DuplicateName {
        /// The name.
        name: String,
        /// The type registered first.
        existing: &'static str,
        /// The type refused.
        new: &'static str,
    },
    /// One type under two names.
    #[error("{type_name} is already registered as {existing:?}; register each type once")]
    DuplicateType {
        /// The type.
        type_name: &'static str,
        /// The name it has.
        existing: String,
    },
    /// A name that is empty or longer than [`MAX_NAME_BYTES`](crate::defaults::MAX_NAME_BYTES).
    #[error("type name {0:?} must be 1 to 256 bytes long")]
    BadName(String),
}

/// The types a node can send and receive, each under a stable name.
///
/// ```
/// use cohort_remote::Registry;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct Ping(u64);
///
/// let mut registry = Registry::new();
/// registry.register::<Ping>("example.Ping").unwrap();
/// assert!(registry.register::<Ping>("example.Ping2").is_err()); // once per type
/// assert_eq!(registry.len(), 1);
/// ```
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
    /// `(TypeId, entry index)`, sorted by `TypeId`: the send path's lookup.
    by_type: Vec<(TypeId, u32)>,
    by_name: HashMap<Box<str>, u32>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `T` under `name` with the default codec ([`Postcard`]).
    pub fn register<T>(&mut self, name: &str) -> Result<&mut Self, RegistryError>
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        self.register_with::<T, Postcard>(name)
    }

    /// Registers `T` under `name`, encoded with codec `C`.
    pub fn register_with<T, C>(&mut self, name: &str) -> Result<&mut Self, RegistryError>
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
        C: Codec,
    {
        self.check::<T>(name)?;
        self.add::<T>(name, encode_as::<T, C>, decode_as::<T, C>, None, None);
        Ok(self)
    }

    /// Registers requests of `Req` answered with `Reply` under `name`: a
    /// [`Request<Req, Reply>`](cohort::Request) sent to a proxy (by
    /// [`Context::request`](cohort::Context::request) or [`Mbox::request`](cohort::Mbox::request))
    /// then crosses with a reply address the node adds, and its outcome comes back to the
    /// asker: the reply, or why there is none (`ReceiverGone`, `NoHandler`... on the other
    /// node; `InDoubt` when the connection breaks before the reply). Both nodes register it
    /// under the same name; its reply travels under `name` followed by `/reply`.
    ///
    /// ```
    /// use cohort_remote::Registry;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Price { sku: String }
    ///
    /// let mut registry = Registry::new();
    /// registry.register_request::<Price, u64>("shop.Price").unwrap();
    /// assert_eq!(registry.len(), 2); // the request and its reply
    /// assert!(registry.register_request::<Price, u64>("shop.Price2").is_err());
    /// ```
    pub fn register_request<Req, Reply>(&mut self, name: &str) -> Result<&mut Self, RegistryError>
    where
        Req: Serialize + DeserializeOwned + Send + Sync + 'static,
        Reply: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        self.register_request_with::<Req, Reply, Postcard>(name)
    }

    /// [`Registry::register_request`] with codec `C` for the request and its reply.
    pub fn register_request_with<Req, Reply, C>(
        &mut self,
        name: &str,
    ) -> Result<&mut Self, RegistryError>
    where
        Req: Serialize + DeserializeOwned + Send + Sync + 'static,
        Reply: Serialize + DeserializeOwned + Send + Sync + 'static,
        C: Codec,
    {
        let reply_name = format!("{name}/reply");
        self.check::<Request<Req, Reply>>(name)?;
        self.check::<AskReply<Req, Reply>>(&reply_name)?;
        self.add::<Request<Req, Reply>>(
            name,
            encode_with_ask,
            ask::decode_request::<Req, Reply, C>,
            Some(ask::ask_fns::<Req, Reply, C>()),
            None,
        );
        self.add::<AskReply<Req, Reply>>(
            &reply_name,
            encode_as::<AskReply<Req, Reply>, C>,
            decode_as::<AskReply<Req, Reply>, C>,
            None,
            Some(ask::settle_reply::<Req, Reply>),
        );
        Ok(self)
    }

    /// Refuses a bad name, a name taken, or a type registered already.
    fn check<T: 'static>(&self, name: &str) -> Result<(), RegistryError> {
        let type_name = std::any::type_name::<T>();
        if name.is_empty() || name.len() > crate::defaults::MAX_NAME_BYTES {
            return Err(RegistryError::BadName(name.to_string()));
        }
        if let Some(&i) = self.by_name.get(name) {
            return Err(RegistryError::DuplicateName {
                name: name.to_string(),
                existing: self.entries[i as usize].type_name,
                new: type_name,
            });
        }
        let tid = TypeId::of::<T>();
        if let Ok(i) = self.by_type.binary_search_by(|(t, _)| t.cmp(&tid)) {
            return Err(RegistryError::DuplicateType {
                type_name,
                existing: self.entries[self.by_type[i].1 as usize].name.to_string(),
            });
        }
        Ok(())
    }

    /// Adds an entry `check` accepted.
    fn add<T: 'static>(
        &mut self,
        name: &str,
        encode: EncodeFn,
        decode: DecodeFn,
        ask: Option<AskFns>,
        settle: Option<SettleFn>,
    ) {
        let tid = TypeId::of::<T>();
        let at = self
            .by_type
            .binary_search_by(|(t, _)| t.cmp(&tid))
            .unwrap_or_else(|at| at);
        let index = self.entries.len() as u32;
        self.entries.push(Entry {
            name: name.into(),
            type_name: std::any::type_name::<T>(),
            encode,
            decode,
            ask,
            settle,
        });
        self.by_type.insert(at, (tid, index));
        self.by_name.insert(name.into(), index);
    }

    /// How many types are registered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no type is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry index of a type, by its `TypeId` (binary search over a few entries).
    #[inline]
    pub(crate) fn index_of(&self, tid: TypeId) -> Option<u32> {
        self.by_type
            .binary_search_by(|(t, _)| t.cmp(&tid))
            .ok()
            .map(|i| self.by_type[i].1)
    }

    /// The entry index of a registered name.
    pub(crate) fn index_of_name(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    #[inline]
    pub(crate) fn entry(&self, index: u32) -> &Entry {
        &self.entries[index as usize]
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| (&*e.name, e.type_name)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Quote {
        symbol: String,
        price: f64,
        size: u32,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Cmd {
        Start,
        Move { x: i32, y: i32 },
    }

    fn round_trip<T>(r: &Registry, v: T) -> T
    where
        T: Send + Sync + 'static,
    {
        let i = r.index_of(TypeId::of::<T>()).expect("registered");
        let e = r.entry(i);
        let mut out = vec![0xAA]; // appends after what is there
        (e.encode)(&AnyMessage::new(v), &mut out).unwrap();
        assert_eq!(out[0], 0xAA);
        let back = (e.decode)(&out[1..]).unwrap();
        back.downcast::<T>().ok().unwrap()
    }

    #[test]
    fn every_registered_type_round_trips() {
        let mut r = Registry::new();
        r.register::<Quote>("t.Quote")
            .unwrap()
            .register::<Cmd>("t.Cmd")
            .unwrap()
            .register::<u64>("u64")
            .unwrap()
            .register::<String>("string")
            .unwrap()
            .register::<Vec<u8>>("bytes")
            .unwrap();
        let q = Quote {
            symbol: "ACME".into(),
            price: 12.5,
            size: 300,
        };
        assert_eq!(
            round_trip(
                &r,
                Quote {
                    symbol: "ACME".into(),
                    price: 12.5,
                    size: 300
                }
            ),
            q
        );
        assert_eq!(round_trip(&r, Cmd::Start), Cmd::Start);
        assert_eq!(
            round_trip(&r, Cmd::Move { x: -3, y: 4 }),
            Cmd::Move { x: -3, y: 4 }
        );
        assert_eq!(round_trip(&r, u64::MAX), u64::MAX);
        assert_eq!(round_trip(&r, String::from("héllo")), "héllo");
        assert_eq!(round_trip(&r, vec![1u8, 2, 3]), vec![1, 2, 3]);
        assert_eq!(r.index_of_name("t.Cmd"), Some(1));
    }

    #[test]
    fn duplicates_and_bad_names_are_refused() {
        let mut r = Registry::new();
        r.register::<u64>("n").unwrap();
        assert!(matches!(
            r.register::<u32>("n"),
            Err(RegistryError::DuplicateName { .. })
        ));
        assert!(matches!(
            r.register::<u64>("m"),
            Err(RegistryError::DuplicateType { .. })
        ));
        assert!(matches!(
            r.register::<u8>(""),
            Err(RegistryError::BadName(_))
        ));
    }

    #[test]
    fn bytes_that_are_not_the_type_fail_to_decode() {
        let mut r = Registry::new();
        r.register::<Quote>("q").unwrap();
        let e = r.entry(0);
        assert!((e.decode)(&[0xff, 0xff, 0xff]).is_err());
        // trailing bytes after a valid value
        let mut out = Vec::new();
        (e.encode)(
            &AnyMessage::new(Quote {
                symbol: String::new(),
                price: 0.0,
                size: 1,
            }),
            &mut out,
        )
        .unwrap();
        out.push(0);
        assert!((e.decode)(&out).is_err());
    }
}
