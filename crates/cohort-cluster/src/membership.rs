//! From chitchat's live nodes to members, events and listings: one pass ([`refresh`]) per
//! change of the live set, serialised by the state's lock, so events and listings come out
//! in the order the changes were seen.
//!
//! Which detector decides: chitchat's phi-accrual detector, alone. It samples every
//! member's heartbeats through gossip, including members this node has no connection to
//! (connections are dialled on demand), so every node judges every member from the same
//! kind of evidence. cohort-remote's connection detector only speaks for connections that
//! exist: its `NodeDown` makes that connection's messages dead letters and redials, but
//! never changes membership. A member whose connection is lost while gossip still hears it
//! stays up; its messages are dead letters until a redial succeeds.

use crate::cluster::Shared;
use crate::listing::{Listing, ListingEntry};
use crate::member::{Member, MemberDown, MemberLeft, MemberStatus, MemberUp};
use crate::proxy::RemoteTarget;
use crate::stats::Counters;
use chitchat::{ChitchatId, NodeState};
use cohort::Mbox;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

pub(crate) const KEY_ADDR: &str = "cohort.addr";
pub(crate) const KEY_ROLES: &str = "cohort.roles";
pub(crate) const KEY_STATUS: &str = "cohort.status";
/// Announced by a [`Gossiper`](crate::Gossiper) instead of an address.
pub(crate) const KEY_GOSSIPER: &str = "cohort.gossiper";
pub(crate) const ACK_PREFIX: &str = "cohort.ack/";
pub(crate) const REG_PREFIX: &str = "reg/";
pub(crate) const STATUS_UP: &str = "up";
pub(crate) const STATUS_LEAVING: &str = "leaving";

/// One registration as gossip shows it: (node, incarnation, export name).
type RegId = (String, u64, String);

pub(crate) struct LocalReg {
    pub(crate) key: String,
    pub(crate) export: String,
    pub(crate) chitchat_key: String,
    pub(crate) mbox: Mbox,
}

#[derive(Default)]
pub(crate) struct State {
    /// The highest incarnation seen per name: an older one is never a member again.
    max_gen: HashMap<String, u64>,
    /// Per (node, incarnation): keys too long and keys over the cap already counted.
    caps: HashMap<(String, u64), (u64, u64)>,
    up: BTreeMap<String, Member>,
    regs: HashMap<String, Vec<RegId>>,
    pub(crate) subscribers: HashMap<String, Vec<Mbox>>,
    pub(crate) local: Vec<LocalReg>,
    proxies: HashMap<RegId, Mbox>,
    acked: HashSet<String>,
    pub(crate) next_seq: u64,
}

impl State {
    pub(crate) fn members(&self) -> Vec<Member> {
        self.up.values().cloned().collect()
    }
}

/// Own-state writes a refresh asks for (done under chitchat's lock, after the refresh).
#[derive(Default)]
pub(crate) struct Acks {
    pub(crate) set: Vec<(String, u64)>,
    pub(crate) delete: Vec<String>,
}

struct NodeView {
    member: Member,
    regs: Vec<(String, String)>,
}

/// Members as gossip shows them: up ones, and the (name, incarnation) of leaving ones.
fn parse(
    shared: &Shared,
    state: &mut State,
    live: &BTreeMap<ChitchatId, NodeState>,
) -> (BTreeMap<String, NodeView>, HashSet<(String, u64)>) {
    let cfg = &shared.config;
    let mut up: BTreeMap<String, NodeView> = BTreeMap::new();
    let mut leaving = HashSet::new();
    for (id, ns) in live {
        let name = id.node_id.to_string();
        let inc = id.generation_id;
        let Some(addr) = ns.get(KEY_ADDR).and_then(|a| a.parse().ok()) else {
            continue;
        };
        let max = state.max_gen.entry(name.clone()).or_insert(inc);
        if inc < *max {
            continue;
        }
        *max = inc;
        match ns.get(KEY_STATUS) {
            Some(STATUS_UP) => {}
            Some(STATUS_LEAVING) => {
                leaving.insert((name, inc));
                continue;
            }
            _ => continue,
        }
        let roles = ns
            .get(KEY_ROLES)
            .filter(|r| !r.is_empty())
            .map(|r| r.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        let mut regs = Vec::new();
        let (mut too_long, mut over_cap) = (0u64, 0u64);
        for (k, export) in ns.key_values() {
            let Some(rest) = k.strip_prefix(REG_PREFIX) else {
                continue;
            };
            let Some((key, _seq)) = rest.rsplit_once('/') else {
                continue;
            };
            if key.len() > cfg.max_key_bytes {
                too_long += 1;
            } else if regs.len() >= cfg.max_keys_per_node {
                over_cap += 1;
            } else {
                regs.push((key.to_string(), export.to_string()));
            }
        }
        count_refused(shared, state, &name, inc, too_long, over_cap);
        let member = Member {
            name: name.clone(),
            incarnation: inc,
            remoting_addr: addr,
            gossip_addr: id.gossip_advertise_addr,
            roles,
            status: MemberStatus::Up,
        };
        // Two live incarnations of one name: the newer one is the member.
        if up.get(&name).is_none_or(|v| v.member.incarnation < inc) {
            up.insert(name, NodeView { member, regs });
        }
    }
    (up, leaving)
}

/// Counts a peer's refused keys once each (the view is parsed again at every change).
fn count_refused(
    shared: &Shared,
    state: &mut State,
    name: &str,
    incarnation: u64,
    too_long: u64,
    over_cap: u64,
) {
    if too_long == 0 && over_cap == 0 {
        return;
    }
    let seen = state
        .caps
        .entry((name.to_string(), incarnation))
        .or_default();
    let c = &shared.counters;
    let cfg = &shared.config;
    let checks = [
        (
            too_long,
            &mut seen.0,
            &c.keys_too_long,
            cfg.max_key_bytes,
            "registry keys over max_key_bytes",
        ),
        (
            over_cap,
            &mut seen.1,
            &c.keys_over_cap,
            cfg.max_keys_per_node,
            "registrations over max_keys_per_node",
        ),
    ];
    for (now, seen, counter, max, reason) in checks {
        if now > *seen {
            Counters::add(counter, now - *seen);
            if let Some(skipped) = c.may_log(reason) {
                tracing::warn!(
                    member = name,
                    ignored = now,
                    max,
                    skipped,
                    "{reason} ignored"
                );
            }
            *seen = now;
        }
    }
}

/// Applies the live set `live` to the state: publishes membership events, then the
/// listings of the keys that changed. Returns the acknowledgements of leaves to write.
pub(crate) fn refresh(
    shared: &Shared,
    state: &mut State,
    live: &BTreeMap<ChitchatId, NodeState>,
) -> Acks {
    let (up, leaving) = parse(shared, state, live);
    let events = &shared.events;

    // Gone: left, replaced by a newer incarnation, or failed.
    let prev = std::mem::take(&mut state.up);
    for (name, old) in &prev {
        let reason = match up.get(name) {
            Some(v) if v.member.incarnation == old.incarnation => continue,
            Some(v) => format!("replaced by incarnation {}", v.member.incarnation),
            None if leaving.contains(&(name.clone(), old.incarnation)) => {
                let mut member = old.clone();
                member.status = MemberStatus::Left;
                tracing::info!(member = %name, "member left");
                publish(events, MemberLeft { member });
                continue;
            }
            None => "the failure detector declared it dead".to_string(),
        };
        let mut member = old.clone();
        member.status = MemberStatus::Down;
        Counters::add(&shared.counters.member_downs, 1);
        tracing::warn!(member = %name, %reason, "member down");
        publish(events, MemberDown { member, reason });
    }
    for (name, v) in &up {
        if prev
            .get(name)
            .is_none_or(|o| o.incarnation != v.member.incarnation)
        {
            tracing::info!(member = %name, incarnation = v.member.incarnation, "member up");
            publish(
                events,
                MemberUp {
                    member: v.member.clone(),
                },
            );
        }
    }
    state.up = up
        .iter()
        .map(|(n, v)| (n.clone(), v.member.clone()))
        .collect();

    // The registry, from the members that are up.
    let mut regs: HashMap<String, Vec<RegId>> = HashMap::new();
    for (name, v) in &up {
        for (key, export) in &v.regs {
            regs.entry(key.clone()).or_default().push((
                name.clone(),
                v.member.incarnation,
                export.clone(),
            ));
        }
    }
    for ids in regs.values_mut() {
        ids.sort();
    }
    let old_regs = std::mem::take(&mut state.regs);
    let mut changed: Vec<&String> = regs
        .keys()
        .filter(|k| old_regs.get(*k) != regs.get(*k))
        .collect();
    changed.extend(old_regs.keys().filter(|k| !regs.contains_key(*k)));
    changed.sort();
    state
        .proxies
        .retain(|id, _| up.get(&id.0).is_some_and(|v| v.member.incarnation == id.1));
    for key in changed {
        let ids = regs.get(key).map(Vec::as_slice).unwrap_or_default();
        let listing = Arc::new(build_listing(shared, state, &up, key, ids));
        shared
            .listings
            .set(key, (!listing.is_empty()).then(|| listing.clone()));
        for sub in state.subscribers.get(key.as_str()).into_iter().flatten() {
            sub.send((*listing).clone());
        }
    }
    state.regs = regs;

    // Acknowledge the leaves we see, forget the acknowledgements of those gone.
    let mut acks = Acks::default();
    for (name, inc) in &leaving {
        if *name != shared.me.name && state.acked.insert(name.clone()) {
            acks.set.push((name.clone(), *inc));
        }
    }
    let still: HashSet<&String> = leaving.iter().map(|(n, _)| n).collect();
    state.acked.retain(|n| {
        let keep = still.contains(n);
        if !keep {
            acks.delete.push(n.clone());
        }
        keep
    });
    acks
}

fn build_listing(
    shared: &Shared,
    state: &mut State,
    up: &BTreeMap<String, NodeView>,
    key: &str,
    ids: &[RegId],
) -> Listing {
    let mut listing = Listing::empty(key);
    for id in ids {
        let local = id.0 == shared.me.name && id.1 == shared.me.incarnation;
        let mbox = if local {
            match state.local.iter().find(|r| r.export == id.2) {
                Some(r) => r.mbox.clone(),
                None => continue, // unregistered since this gossip
            }
        } else {
            let Some(v) = up.get(&id.0) else { continue };
            state
                .proxies
                .entry(id.clone())
                .or_insert_with(|| {
                    RemoteTarget {
                        node: shared.node.clone(),
                        env: shared.env.clone(),
                        counters: shared.counters.clone(),
                        member: id.0.clone(),
                        addr: v.member.remoting_addr,
                        export: id.2.clone(),
                        label: format!("{}@{}", id.2, id.0),
                        resolved: Default::default(),
                        last_dial: Default::default(),
                    }
                    .mbox()
                })
                .clone()
        };
        listing.entries.push(ListingEntry {
            node: id.0.clone(),
            incarnation: id.1,
            mbox,
            local,
            export: id.2.clone(),
        });
    }
    listing
}

/// Sends an event to the events mailbox if anyone listens (an event nobody listens to is
/// not a dead letter).
fn publish<E: Send + Sync + 'static>(events: &Mbox, event: E) {
    if events.has_subscribers::<E>() {
        events.send(event);
    }
}
