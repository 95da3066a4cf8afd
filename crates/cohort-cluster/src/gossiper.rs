//! [`Gossiper`]: a participant in a cluster's gossip that is not a member.

use crate::cluster::{Announce, Gossip, incarnation, start_gossip};
use crate::config::ClusterConfig;
use crate::error::ClusterError;
use crate::stats::{ClusterStats, Counters};
use std::net::SocketAddr;
use std::sync::Arc;

/// Takes part in a cluster's gossip without being a member: no cohort-remote node, no
/// registrations, never listed by [`Cluster::members`](crate::Cluster::members). It spreads
/// the others' state and runs the failure detector like a member, so it can serve as a
/// seed that no application runs on (a dedicated seed process, several per cluster), watch
/// how far gossip has spread, or stand for one of many members in a simulation (many
/// gossipers share one tokio runtime, where each [`Cluster`](crate::Cluster) has its own).
///
/// It runs on the tokio runtime [`Gossiper::start`] is awaited on, behind the same gated
/// transport as a member (datagrams over
/// [`max_datagram_bytes`](ClusterConfig::max_datagram_bytes), malformed ones and those of
/// another cluster are dropped and counted in [`Gossiper::stats`]). Of its
/// [`ClusterConfig`], the name, token, seeds, gossip address and interval, failure
/// detector and datagram cap apply; roles and the registry's caps do not. Dropping it stops
/// its gossip at once, as [`Cluster::abort`](crate::Cluster::abort) does: members declare it
/// down, which changes nothing for them as it was never a member.
///
/// ```
/// use cohort_cluster::{ClusterConfig, Gossiper};
/// use std::time::{Duration, Instant};
///
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let config = ClusterConfig::new("demo").gossip_interval(Duration::from_millis(50));
/// let seed = runtime.block_on(Gossiper::start("seed", &config)).unwrap();
/// // Members (or other gossipers) give the seed's address to join through it.
/// let config = config.seeds([seed.gossip_addr().to_string()]);
/// let other = runtime.block_on(Gossiper::start("other", &config)).unwrap();
/// let deadline = Instant::now() + Duration::from_secs(30);
/// while (seed.live() < 2 || other.live() < 2) && Instant::now() < deadline {
///     std::thread::sleep(Duration::from_millis(10));
/// }
/// assert_eq!((seed.live(), other.live()), (2, 2));
/// assert!(other.stats().bytes_out > 0);
/// drop((seed, other));
/// ```
pub struct Gossiper {
    gossip: Gossip,
    counters: Arc<Counters>,
}

impl Gossiper {
    /// Binds the gossip socket at [`gossip_listen`](ClusterConfig::gossip_listen) and starts
    /// gossiping with the seeds under `name` (unique among the cluster's participants), on
    /// the tokio runtime this is awaited on ([`ClusterError::NoRuntime`] on any other
    /// executor).
    pub async fn start(name: &str, config: &ClusterConfig) -> Result<Gossiper, ClusterError> {
        config.validate()?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(ClusterError::NoRuntime);
        }
        let counters = Arc::new(Counters::default());
        let gossip = start_gossip(
            name,
            incarnation(config),
            Announce::Gossiper,
            config,
            counters.clone(),
        )
        .await?;
        Ok(Gossiper { gossip, counters })
    }

    /// The UDP address it gossips on (what others give as a seed).
    pub fn gossip_addr(&self) -> SocketAddr {
        self.gossip.addr
    }

    /// How many participants it sees live, members and gossipers alike, itself included:
    /// those whose heartbeats the failure detector accepts and whose gossip state reached it.
    pub fn live(&self) -> usize {
        self.gossip.watcher.borrow().len()
    }

    /// Its counters (gossip traffic and refused input; the registry's and the groups' stay
    /// zero).
    pub fn stats(&self) -> ClusterStats {
        self.counters.snapshot()
    }
}

impl Drop for Gossiper {
    fn drop(&mut self) {
        self.gossip.handle.abort();
    }
}

impl std::fmt::Debug for Gossiper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gossiper")
            .field("id", self.gossip.handle.chitchat_id())
            .field("gossip_addr", &self.gossip.addr)
            .finish()
    }
}
