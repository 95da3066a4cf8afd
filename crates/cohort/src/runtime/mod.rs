//! The runtime: the environment (its builder, its shared state, the stats thread) and
//! cooperations (their builder, registration, the registered cooperation).

pub(crate) mod coop;
pub(crate) mod env;
