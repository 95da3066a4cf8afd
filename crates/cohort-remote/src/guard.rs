//! What keeps one peer or one source address from costing a node more than its share: who
//! may send to an exported mailbox ([`Access`]), how many warnings a connection or an
//! address may log ([`Warnings`]), how many connections and handshakes the listener takes
//! ([`Sources`], [`Admission`]), and giving back the memory of long frames.

use crate::defaults::{MAX_SOURCES, SOURCE_FORGET_AFTER, WARNING_WINDOW, WARNINGS_PER_WINDOW};
use crate::node::NodeShared;
use crate::stats::Counters;
use crate::token_bucket::TokenBucket;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Which peer nodes may send to an exported mailbox
/// ([`Node::export_with`](crate::Node::export_with)).
///
/// A message from a node the mailbox does not admit is refused by the receiving node,
/// counted there ([`NodeStats::access_refused`](crate::NodeStats::access_refused)), logged
/// (at most [`WARNINGS_PER_WINDOW`] lines per connection and window), and reported back: the
/// sender counts it as a dead letter with
/// [`DeliveryFailure::AccessDenied`](cohort::DeliveryFailure::AccessDenied).
///
/// ```
/// use cohort_remote::Access;
///
/// let access = Access::nodes(["pricing-1", "pricing-2"]);
/// assert!(access.admits("pricing-1"));
/// assert!(!access.admits("intruder"));
/// assert!(Access::all().admits("anyone"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Access {
    /// Every node that passed the handshake (what [`Node::export`](crate::Node::export)
    /// gives).
    #[default]
    All,
    /// Only the nodes of these names.
    Nodes(Box<[Box<str>]>),
}

impl Access {
    /// Every node that passed the handshake.
    pub fn all() -> Self {
        Access::All
    }

    /// Only the nodes named (their [`NodeConfig::new`](crate::NodeConfig::new) names).
    pub fn nodes<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Access::Nodes(names.into_iter().map(|n| n.as_ref().into()).collect())
    }

    /// Whether the node named `node` may send.
    pub fn admits(&self, node: &str) -> bool {
        match self {
            Access::All => true,
            Access::Nodes(names) => names.iter().any(|n| &**n == node),
        }
    }
}

/// A warning budget: [`WARNINGS_PER_WINDOW`] lines per [`WARNING_WINDOW`], the rest counted.
#[derive(Debug)]
pub(crate) struct Warnings {
    window_start: Option<Instant>,
    in_window: u32,
    /// Suppressed since the last line logged: the next one says how many.
    suppressed: u64,
}

impl Default for Warnings {
    fn default() -> Self {
        Self::new()
    }
}

impl Warnings {
    pub(crate) const fn new() -> Self {
        Self {
            window_start: None,
            in_window: 0,
            suppressed: 0,
        }
    }

    /// `Some(suppressed before it)` when a warning may be logged now; otherwise counts it
    /// (here and in `counters`) and returns `None`.
    pub(crate) fn admit(&mut self, counters: &Counters, now: Instant) -> Option<u64> {
        match self.window_start {
            Some(start) if now.duration_since(start) < WARNING_WINDOW => {}
            _ => {
                self.window_start = Some(now);
                self.in_window = 0;
            }
        }
        if self.in_window < WARNINGS_PER_WINDOW {
            self.in_window += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            Counters::add(&counters.warnings_suppressed, 1);
            None
        }
    }

    /// Warnings suppressed since the last line logged (logged at a connection's end).
    pub(crate) fn take_suppressed(&mut self) -> u64 {
        std::mem::take(&mut self.suppressed)
    }
}

/// One source address's handshake tokens and warnings.
struct Source {
    /// Made at its first handshake, at the rate then configured.
    handshakes: Option<TokenBucket>,
    /// Its last handshake attempt (how long it has been quiet).
    last: Instant,
    warnings: Warnings,
}

/// The listener's view of source addresses: a token bucket of handshakes and a warning
/// budget each, in a table of at most [`MAX_SOURCES`].
#[derive(Default)]
pub(crate) struct Sources {
    table: Mutex<HashMap<IpAddr, Source>>,
}

impl Sources {
    fn with<R>(&self, ip: IpAddr, now: Instant, f: impl FnOnce(Option<&mut Source>) -> R) -> R {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if !table.contains_key(&ip) && table.len() >= MAX_SOURCES {
            table.retain(|_, s| now.duration_since(s.last) < SOURCE_FORGET_AFTER);
            if table.len() >= MAX_SOURCES {
                return f(None);
            }
        }
        let s = table.entry(ip).or_insert(Source {
            handshakes: None,
            last: now,
            warnings: Warnings::new(),
        });
        f(Some(s))
    }

    /// Whether a handshake from `ip` may start now, at `per_second` (a burst of as many).
    pub(crate) fn admit_handshake(&self, ip: IpAddr, per_second: u32, now: Instant) -> bool {
        self.with(ip, now, |s| {
            let Some(s) = s else {
                return false;
            };
            s.last = now;
            s.handshakes
                .get_or_insert_with(|| TokenBucket::new(per_second, now))
                .spend_at(now)
        })
    }

    /// [`Warnings::admit`] for the source address `ip`.
    pub(crate) fn admit_warning(
        &self,
        ip: IpAddr,
        counters: &Counters,
        now: Instant,
    ) -> Option<u64> {
        self.with(ip, now, |s| match s {
            Some(s) => s.warnings.admit(counters, now),
            None => {
                Counters::add(&counters.warnings_suppressed, 1);
                None
            }
        })
    }
}

/// An accepted connection's place under [`NodeConfig::max_connections`](crate::NodeConfig::max_connections):
/// held from the accept to the end of the connection's reader.
pub(crate) struct Admission {
    open: Arc<AtomicUsize>,
}

impl Admission {
    /// A place, if fewer than `max` accepted connections are open.
    pub(crate) fn take(open: &Arc<AtomicUsize>, max: usize) -> Option<Admission> {
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()
        .map(|_| Admission { open: open.clone() })
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Gives the allocator's free pages back to the OS (at most once per second) after a
/// connection let go of a buffer longer than [`READ_BUFFER_BYTES`](crate::defaults::READ_BUFFER_BYTES):
/// glibc keeps freed blocks of that size in its arenas, where they would stay resident.
pub(crate) fn release_long_buffer(node: &NodeShared) {
    // One clock and one last trim for the process: the allocator is the process's.
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    static LAST_TRIM_MS: AtomicU64 = AtomicU64::new(0);
    let now_ms = EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1000;
    let last = LAST_TRIM_MS.load(Ordering::Relaxed);
    if now_ms.saturating_sub(last) < 1000
        || LAST_TRIM_MS
            .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
    {
        // A trim ran within the second: the next release (or the node's sweep) trims.
        node.trim_wanted.store(true, Ordering::Release);
        return;
    }
    node.trim_wanted.store(false, Ordering::Release);
    // Off the I/O thread: a trim walks every arena and can take a few milliseconds.
    node.handle.spawn_blocking(trim);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only walks glibc's own arenas under their locks and takes no
    // pointer from us; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

/// The node's sweep: trims what a release within the last second left for later.
pub(crate) async fn sweep(node: Arc<NodeShared>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if node.shutting_down.load(Ordering::Acquire) {
            return;
        }
        if node.trim_wanted.load(Ordering::Acquire) {
            release_long_buffer(&node);
        }
    }
}
