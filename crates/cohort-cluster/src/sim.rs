//! Gossip alone, for simulations of many members in one process (the `cluster` bench's
//! gossip-only mode): each member is chitchat behind this crate's gated transport,
//! announcing a placeholder remoting address; no node, no agents, one shared runtime. Not
//! a stable API.

use crate::cluster::{Gossip, start_gossip};
use crate::config::ClusterConfig;
use crate::error::ClusterError;
use crate::stats::Counters;
use std::net::SocketAddr;
use std::sync::Arc;

/// Members announce this remoting address: the discard port, never dialled here.
const NOWHERE: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9);

/// Gossiping members on one runtime.
pub struct Swarm {
    runtime: Option<tokio::runtime::Runtime>,
    members: Vec<(Gossip, Arc<Counters>)>,
}

impl Swarm {
    /// Starts `n` members named `g0`, `g1`, ... with `config` on a runtime of `workers`
    /// threads; the first is every other member's seed.
    pub fn start(n: usize, config: &ClusterConfig, workers: usize) -> Result<Self, ClusterError> {
        config.validate()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .thread_name("cohort-cluster-sim")
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let mut members = Vec::with_capacity(n);
        let mut config = config.clone();
        for i in 0..n {
            let counters = Arc::new(Counters::default());
            let g = runtime.block_on(start_gossip(
                &format!("g{i}"),
                1,
                NOWHERE,
                &config,
                counters.clone(),
            ))?;
            if i == 0 {
                config = config.seeds([g.addr.to_string()]);
            }
            members.push((g, counters));
        }
        Ok(Self {
            runtime: Some(runtime),
            members,
        })
    }

    /// How many members each member sees live (itself included), the least of them.
    pub fn min_live(&self) -> usize {
        self.members
            .iter()
            .map(|(g, _)| g.watcher.borrow().len())
            .min()
            .unwrap_or(0)
    }

    /// Gossip bytes sent by all members so far.
    pub fn bytes_out(&self) -> u64 {
        self.members
            .iter()
            .map(|(_, c)| c.snapshot().bytes_out)
            .sum()
    }

    /// How many members there are.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            for (g, _) in self.members.drain(..) {
                g.handle.abort();
            }
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
        }
    }
}
