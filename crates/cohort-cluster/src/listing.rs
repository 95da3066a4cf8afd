//! What the registry answers: [`Listing`], the mailboxes registered under one key.

use cohort::Mbox;

/// One mailbox registered under a key.
#[derive(Debug, Clone)]
pub struct ListingEntry {
    /// The member that registered it.
    pub node: String,
    /// That member's incarnation.
    pub incarnation: u64,
    /// The mailbox: the registered one itself on its own node, a proxy (sending over
    /// cohort-remote, dialling the member when first used) elsewhere.
    pub mbox: Mbox,
    /// Whether it is on this node.
    pub local: bool,
    /// The name it is exported under on its node (stable for the registration's life).
    pub(crate) export: String,
}

/// The mailboxes registered under one key, ordered by node name then registration: what
/// [`Cluster::lookup`](crate::Cluster::lookup) returns and
/// [`Cluster::subscribe_key`](crate::Cluster::subscribe_key) delivers on every change.
///
/// ```no_run
/// # fn demo(cluster: &cohort_cluster::Cluster) {
/// let listing = cluster.lookup("orders");
/// for entry in &listing.entries {
///     println!("{} (incarnation {}, local: {})", entry.node, entry.incarnation, entry.local);
/// }
/// if let Some(first) = listing.mboxes().next() {
///     first.send(String::from("hello"));
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Listing {
    /// The key.
    pub key: String,
    /// Its mailboxes, on members that are up.
    pub entries: Vec<ListingEntry>,
}

impl Listing {
    pub(crate) fn empty(key: &str) -> Self {
        Self {
            key: key.to_string(),
            entries: Vec::new(),
        }
    }

    /// The mailboxes, in order.
    pub fn mboxes(&self) -> impl Iterator<Item = &Mbox> {
        self.entries.iter().map(|e| &e.mbox)
    }

    /// How many mailboxes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no mailbox is registered under the key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The names of the nodes, one per entry, in order.
    pub fn nodes(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.node.as_str()).collect()
    }
}
