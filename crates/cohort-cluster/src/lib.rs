//! Clusters of cohort nodes: membership by gossip, a cluster-wide registry of mailboxes,
//! and routing groups, on top of [`cohort_remote`].
//!
//! - [`Cluster::join`] makes a [`Node`](cohort_remote::Node) a member of the cluster named
//!   in its [`ClusterConfig`], through a few seed addresses. Membership and registrations
//!   travel by gossip ([chitchat](https://docs.rs/chitchat): scuttlebutt anti-entropy
//!   with a phi-accrual failure detector) over a UDP port of its own; messages travel over
//!   cohort-remote's TCP connections, dialled when a member is first sent to.
//! - Membership: [`Cluster::members`]; [`MemberUp`], [`MemberLeft`] (graceful,
//!   [`Cluster::leave`]) and [`MemberDown`] (failure) on [`Cluster::events_mbox`]. The
//!   gossip failure detector alone decides who is down (see the `membership` module's
//!   notes for why).
//! - Registry: [`Cluster::register`], [`Cluster::lookup`], [`Cluster::subscribe_key`]
//!   ([`Listing`]); a member that leaves or fails takes its registrations with it.
//! - Routing: [`Cluster::group`] with [`Routing`].
//! - [`Gossiper`]: a participant in the gossip that is not a member (a dedicated seed, a
//!   watcher of how far gossip spread, one of many simulated members on one runtime).
//! - A node of another cluster, or with another token, never becomes a member; malformed
//!   or oversized gossip and registry input over the configured caps are dropped, counted
//!   in [`ClusterStats`] and logged.
//!
//! Guarantees (see also "Cluster" in `docs/runtime-semantics.md`): the registry is
//! eventually consistent (each node's view converges within a few gossip rounds of the
//! last change); delivery is at most once; messages from one sender to one registration
//! keep their order while the connection to its node lives.

#![deny(missing_docs)]

mod cluster;
mod config;
pub mod defaults;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod gossiper;
mod group;
mod listing;
mod member;
mod membership;
mod proxy;
mod stats;
mod transport;
mod wire;

pub use cluster::{Cluster, events_mbox_name};
pub use config::{ClusterConfig, ConfigError};
pub use error::ClusterError;
pub use gossiper::Gossiper;
pub use group::Routing;
pub use listing::{Listing, ListingEntry};
pub use member::{Member, MemberDown, MemberLeft, MemberStatus, MemberUp};
pub use stats::ClusterStats;
