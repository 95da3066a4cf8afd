//! Remoting for cohort: named mailboxes exported by one process, reached from others (on
//! the same machine or across a network) with the same [`Mbox::send`](cohort::Mbox::send)
//! as a local mailbox.
//!
//! - A [`Node`] is a process's endpoint: it listens and/or dials other nodes over TCP
//!   (`TCP_NODELAY`), with a handshake carrying the protocol version, the node's name and a
//!   shared-secret token.
//! - [`Node::export`] makes a named mailbox reachable; [`RemoteNode::mbox`] on the other
//!   side returns a proxy [`Mbox`](cohort::Mbox) for it. Messages from one sender to one
//!   peer arrive in the order they were sent.
//! - Types that cross the wire are listed in a [`Registry`] under stable names (serde,
//!   [`Postcard`] by default); each connection maps them to 4-byte ids once.
//! - Requests registered with [`Registry::register_request`] cross too: an agent's
//!   [`Context::request`](cohort::Context::request) (or [`Mbox::request`](cohort::Mbox::request))
//!   to a proxy gets its reply, or why there is none, back from the other node; the node
//!   carries the reply address (a [`MboxRef`]) itself.
//! - Each connection has one writer task fed by a bounded queue. It waits for a message
//!   with no timer, then encodes whatever else is queued (up to a count and a byte cap)
//!   into one buffer and writes it at once: [`Batching::Adaptive`]. Batches are one message
//!   when traffic is light and grow with the load. A message that finds the writer asleep
//!   and the connection quiet after a batch of one (sparse traffic) is written by its
//!   sender's thread at once ([`NodeConfig::direct_write`]), which halves a sparse round trip.
//! - Heartbeats and a [phi-accrual](phi) failure detector declare silent peers down;
//!   [`NodeUp`] / [`NodeDown`] are published to [`Node::events_mbox`]; a peer this node
//!   dialled is dialled again with backoff. Messages queued for a peer that goes down, sent
//!   while it is down, or refused by a full queue are dead letters
//!   ([`Environment::dead_letters`](cohort::Environment::dead_letters)), never silently lost.
//! - Malformed input (garbage, an over-long or truncated frame, an undeclared id, a wrong
//!   token or version) closes that one connection with a logged, specific reason, counted in
//!   [`NodeStats`]; the node serves its other connections on.
//!
//! The wire format is drawn in [`frame`].
//!
//! ```
//! use cohort::{Agent, Context, DefineError, Environment, Mbox};
//! use cohort_remote::{Node, NodeConfig, Registry};
//! use serde::{Deserialize, Serialize};
//! use std::sync::mpsc;
//! use std::time::Duration;
//!
//! #[derive(Debug, Serialize, Deserialize)]
//! struct Order { id: u64, qty: u32 }
//!
//! fn registry() -> Registry {
//!     let mut r = Registry::new();
//!     r.register::<Order>("shop.Order").unwrap();
//!     r
//! }
//!
//! /// Receives orders on the "orders" mailbox of node "warehouse".
//! struct Warehouse { orders: Mbox, seen: mpsc::Sender<u64> }
//! impl Agent for Warehouse {
//!     fn define(&mut self, ctx: &mut Context<'_, Self>) -> Result<(), DefineError> {
//!         let orders = self.orders.clone();
//!         ctx.subscribe(&orders, |me, o: &Order, _| {
//!             me.seen.send(o.id).unwrap();
//!         })?;
//!         Ok(())
//!     }
//! }
//!
//! let env = Environment::builder().start().unwrap();
//! let warehouse = Node::start(&env.environment(),
//!     NodeConfig::new("warehouse").token("s3cret").listen("127.0.0.1:0".parse().unwrap()),
//!     registry()).unwrap();
//! let orders = warehouse.export("orders"); // the environment's named mailbox "orders"
//! let (seen, rx) = mpsc::channel();
//! let mut coop = env.environment().new_coop();
//! coop.add(Warehouse { orders, seen });
//! env.environment().register_coop(coop).unwrap();
//!
//! // Usually another process: a node that dials the warehouse.
//! let shop = Node::start(&env.environment(), NodeConfig::new("shop").token("s3cret"),
//!     registry()).unwrap();
//! let orders = shop.connect(warehouse.local_addr().unwrap()).unwrap().mbox("orders");
//! orders.send(Order { id: 42, qty: 1 });
//! assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 42);
//!
//! shop.shutdown();
//! warehouse.shutdown();
//! env.stop_and_wait();
//! ```

#![deny(missing_docs)]

mod ack;
mod ask;
mod config;
mod connection;
pub mod defaults;
mod denial;
mod error;
mod events;
pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod handshake;
mod mbox_ref;
#[doc(hidden)]
pub mod netns;
mod node;
mod outbound;
mod peer;
pub mod phi;
mod reader;
mod recv_buffer;
mod registry;
mod stats;
mod tls;
mod token_bucket;
mod writer;

pub use config::{Batching, ConfigError, NodeConfig, Overflow};
pub use error::{HandshakeError, RemoteError};
pub use events::{NodeDown, NodeUp};
pub use frame::FrameError;
pub use guard::Access;
pub use mbox_ref::MboxRef;
pub use node::{Node, events_mbox_name};
pub use peer::RemoteNode;
pub use registry::{Codec, CodecError, Postcard, Registry, RegistryError};
/// The rustls this crate builds on, for [`Tls`]'s configurations.
pub use rustls;
pub use stats::NodeStats;
pub use tls::Tls;
