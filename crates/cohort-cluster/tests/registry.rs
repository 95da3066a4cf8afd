//! The registry and routing: listings in order per key, groups (round robin, broadcast,
//! consistent hash, empty), and bad input (malformed datagrams, keys over the caps).

mod common;

use cohort::AnyMessage;
use cohort_cluster::{ClusterError, Routing};
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

#[test]
fn bad_input_is_refused_counted_and_the_node_serves_on() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(
            &env,
            "a",
            config("r3", &[]).max_key_bytes(16).max_keys_per_node(50),
        );
        let b = join(
            &env,
            "b",
            config("r3", &[a.seed()])
                .max_key_bytes(64)
                .max_keys_per_node(400),
        );
        wait_up(&a, &["a", "b"]);

        // Local misuse: typed errors.
        let (m, _rx) = recorder::<Ping>();
        assert!(matches!(
            a.cluster().register(&"k".repeat(17), &m),
            Err(ClusterError::BadKey { len: 17, max: 16 })
        ));
        assert!(matches!(
            a.cluster().register("", &m),
            Err(ClusterError::BadKey { len: 0, .. })
        ));

        // Datagrams that are not gossip (seven, the empty one included), one over the cap,
        // and one with a gossip header whose body chitchat's decoder refuses: dropped,
        // each counted with its reason; gossip goes on. On a member alone in its cluster,
        // so that nothing else reaches it (and under a cap its peers' gossip could pass).
        let gate = join(
            &env,
            "gate",
            config("r3-gate", &[]).max_datagram_bytes(2048),
        );
        let to = gate.cluster().gossip_addr();
        let garbage = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for n in [0usize, 1, 3, 7, 100, 1400, 2048] {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 31 + 7) as u8).collect();
            garbage.send_to(&bytes, to).unwrap();
        }
        garbage.send_to(&[0x53; 2049], to).unwrap();
        garbage
            .send_to(&[0x53, 0xb0, 0, 0, 255, 255, 255, 255], to)
            .unwrap();
        wait_until("the bad datagrams counted", || {
            let s = gate.cluster().stats();
            s.malformed_datagrams >= 8 && s.oversized_datagrams >= 1
        });
        let s = gate.cluster().stats();
        assert_eq!((s.malformed_datagrams, s.oversized_datagrams), (8, 1));
        let gate2 = join(&env, "gate2", config("r3-gate", &[gate.seed()]));
        wait_up(&gate, &["gate", "gate2"]);
        drop((gate, gate2));

        // A peer's long key and its thousands of keys: ignored past a's caps, counted.
        b.cluster().register(&"x".repeat(40), &m).unwrap();
        for i in 0..300 {
            b.cluster().register(&format!("many{i}"), &m).unwrap();
        }
        wait_until("keys over the cap counted", || {
            a.cluster().stats().keys_over_cap > 0
        });
        wait_until("long key counted", || {
            a.cluster().stats().keys_too_long == 1
        });
        assert!(a.cluster().lookup(&"x".repeat(40)).is_empty());

        // A member advertising b's remoting address as its own: listed (gossip cannot
        // tell), but never sent to: the dial reaches b, which is not it.
        let liar = join(
            &env,
            "liar",
            config("r3", &[a.seed()]).advertise(b.node.local_addr().unwrap()),
        );
        let (on_liar, from_liar) = recorder::<Ping>();
        liar.cluster().register("orders", &on_liar).unwrap();
        let (sub, listings) = recorder();
        a.cluster().subscribe_key("orders", &sub);
        wait_listing(&listings, "with the liar", |l| l.nodes() == ["liar"]);
        let dead = env.environment().dead_letters();
        a.cluster()
            .group("orders", Routing::RoundRobin)
            .send(Ping(1));
        assert_eq!(a.cluster().stats().address_not_owned, 1);
        assert_eq!(env.environment().dead_letters(), dead + 1);
        assert!(from_liar.try_recv().is_err());

        // Still serving: a new member is admitted and a's own registration spreads.
        a.cluster().register("fresh", &m).unwrap();
        let c = join(&env, "c", config("r3", &[a.seed()]));
        wait_up(&c, &["a", "b", "c", "liar"]);
        wait_until("a's registration seen by c", || {
            !c.cluster().lookup("fresh").is_empty()
        });
        drop((a, b, c, liar));
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
