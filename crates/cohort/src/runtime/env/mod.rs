//! The environment: cooperations, dispatchers, dead letters, and how it all starts and stops.
//!
//! Two ways to run one:
//! - [`launch`] (or [`EnvironmentBuilder::launch`]): blocks the calling thread until the
//!   environment stops; by default it stops by itself when its last cooperation is gone
//!   (autoshutdown).
//! - [`EnvironmentBuilder::start`]: returns a [`WrappedEnv`] that runs in the background and
//!   stops and joins everything when dropped; autoshutdown is off by default there.

mod builder;
mod environment;
mod shared;
mod stats_thread;

pub use builder::{EnvironmentBuilder, launch};
pub use environment::{Environment, WrappedEnv};
pub(crate) use shared::{EnvId, EnvShared};
