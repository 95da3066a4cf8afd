//! The registry and routing: listings in order per key, groups (round robin, broadcast,
//! consistent hash, empty).

use crate::common;

use cohort::AnyMessage;
use cohort_cluster::Routing;
use common::*;
use std::collections::HashSet;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn registry_changes_arrive_in_order_per_key() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(&env, "a", config("r1", &[]));
        let b = join(&env, "b", config("r1", &[a.seed()]));
        wait_up(&a, &["a", "b"]);
        let (sub, listings) = recorder();
        a.cluster().subscribe_key("k", &sub);
        let first: cohort_cluster::Listing = listings.recv_timeout(WAIT).unwrap();
        assert!(first.is_empty(), "the first listing is the current one");
        let boxes: Vec<_> = (0..5).map(|_| recorder::<Ping>().0).collect();
        for m in &boxes {
            b.cluster().register("k", m).unwrap();
        }
        let grown = wait_listing(&listings, "of five", |l| l.len() == 5);
        let lens: Vec<usize> = grown.iter().map(|l| l.len()).collect();
        assert!(lens.windows(2).all(|w| w[0] < w[1]), "{lens:?}");
        for m in &boxes {
            assert!(b.cluster().unregister("k", m));
        }
        assert!(!b.cluster().unregister("k", &boxes[0]));
        let shrunk = wait_listing(&listings, "empty", |l| l.is_empty());
        let lens: Vec<usize> = shrunk.iter().map(|l| l.len()).collect();
        assert!(lens.windows(2).all(|w| w[0] > w[1]), "{lens:?}");
        drop((a, b));
        env.stop_and_wait();
    });
}

#[test]
fn groups_route_to_the_current_registrations() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(&env, "a", config("r2", &[]));
        let b = join(&env, "b", config("r2", &[a.seed()]));
        let c = join(&env, "c", config("r2", &[a.seed()]));
        wait_up(&a, &["a", "b", "c"]);

        // Empty: a counted dead letter.
        let group = a.cluster().group("orders", Routing::RoundRobin);
        let dead = env.environment().dead_letters();
        group.send(Ping(0));
        assert_eq!(a.cluster().stats().group_empty, 1);
        assert_eq!(env.environment().dead_letters(), dead + 1);

        let (on_b, rx_b) = recorder::<Ping>();
        let (on_c, rx_c) = recorder::<Ping>();
        b.cluster().register("orders", &on_b).unwrap();
        c.cluster().register("orders", &on_c).unwrap();
        let (sub, listings) = recorder();
        a.cluster().subscribe_key("orders", &sub);
        wait_listing(&listings, "b and c", |l| l.nodes() == ["b", "c"]);

        // Round robin: each gets every other message, in order.
        for i in 1..=4 {
            group.send(Ping(i));
        }
        let got_b: Vec<u32> = (0..2).map(|_| rx_b.recv_timeout(WAIT).unwrap().0).collect();
        let got_c: Vec<u32> = (0..2).map(|_| rx_c.recv_timeout(WAIT).unwrap().0).collect();
        assert_eq!((got_b, got_c), (vec![1, 3], vec![2, 4]));

        // Broadcast: each gets a copy.
        a.cluster().broadcastable::<Ping>();
        a.cluster()
            .group("orders", Routing::Broadcast)
            .send(Ping(10));
        assert_eq!(rx_b.recv_timeout(WAIT).unwrap(), Ping(10));
        assert_eq!(rx_c.recv_timeout(WAIT).unwrap(), Ping(10));

        // Consistent hash: one hash, one registration (both record into one channel,
        // tagged with their node).
        let (tx, rx) = std::sync::mpsc::channel();
        let tagged = |tag: &'static str| {
            let tx = std::sync::Mutex::new(tx.clone());
            cohort::Mbox::custom(Tagged(tag, tx))
        };
        b.cluster().register("hashed", &tagged("b")).unwrap();
        c.cluster().register("hashed", &tagged("c")).unwrap();
        let (sub, listings) = recorder();
        a.cluster().subscribe_key("hashed", &sub);
        wait_listing(&listings, "b and c", |l| l.nodes() == ["b", "c"]);
        fn by_parity(m: &AnyMessage) -> u64 {
            m.downcast_ref::<Ping>().map_or(0, |p| u64::from(p.0 % 2))
        }
        let hashed = a
            .cluster()
            .group("hashed", Routing::ConsistentHash(by_parity));
        for i in [20, 22, 24, 21, 23, 26] {
            hashed.send(Ping(i));
        }
        let mut evens = HashSet::new();
        let mut odds = HashSet::new();
        for _ in 0..6 {
            let (who, p): (&str, Ping) = rx.recv_timeout(WAIT).unwrap();
            if p.0 % 2 == 0 {
                evens.insert(who);
            } else {
                odds.insert(who);
            }
        }
        assert_eq!(
            (evens.len(), odds.len()),
            (1, 1),
            "one registration per hash"
        );
        drop((a, b, c));
        env.stop_and_wait();
    });
}

/// Records every `Ping` with its tag.
struct Tagged(
    &'static str,
    std::sync::Mutex<std::sync::mpsc::Sender<(&'static str, Ping)>>,
);

impl cohort::CustomMbox for Tagged {
    fn deliver(&self, msg: AnyMessage) {
        if let Some(p) = msg.downcast_ref::<Ping>() {
            let _ = self.1.lock().unwrap().send((self.0, p.clone()));
        }
    }
}
