//! Members of a cluster and what they agree on: membership (joins, leaves, crashes,
//! restarts, other clusters, gossipers), the registry and routing groups, a member in
//! another process killed, and hosts in network namespaces cut off and healed.

#[path = "../common/mod.rs"]
mod common;

mod membership;
mod partition;
mod process;
mod registry;
