//! Members and the membership events published to
//! [`Cluster::events_mbox`](crate::Cluster::events_mbox).

use std::net::SocketAddr;

/// Where a member is in its life, as this node sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberStatus {
    /// Gossiping, and seen alive by the failure detector.
    Up,
    /// It announced a graceful leave ([`Cluster::leave`](crate::Cluster::leave)).
    Left,
    /// The failure detector declared it dead (a crash, a partition, a stall), or it came
    /// back as a new incarnation.
    Down,
}

/// A node of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Member {
    /// Its node name (the cohort-remote node's name, unique in the cluster).
    pub name: String,
    /// Its incarnation: a restart under the same name is a new member with a higher one.
    pub incarnation: u64,
    /// Where its cohort-remote node listens (TCP).
    pub remoting_addr: SocketAddr,
    /// Where it gossips (UDP).
    pub gossip_addr: SocketAddr,
    /// The roles it announced ([`ClusterConfig::roles`](crate::ClusterConfig::roles)).
    pub roles: Vec<String>,
    /// Its status as this node sees it.
    pub status: MemberStatus,
}

/// A member became up (this node included, at its join).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberUp {
    /// The member.
    pub member: Member,
}

/// A member left gracefully; its registrations are gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberLeft {
    /// The member, [`MemberStatus::Left`].
    pub member: Member,
}

/// A member failed (or was replaced by a new incarnation of the same name); its
/// registrations are gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDown {
    /// The member, [`MemberStatus::Down`].
    pub member: Member,
    /// Why, in words.
    pub reason: String,
}
