//! Malformed and hostile input: gossip datagrams that are not gossip or are over the cap,
//! registry keys over the caps, a member advertising an address it does not own; each
//! refused and counted while the node serves on (this file); the `gossip` fuzz target's
//! corpus replayed on stable (`fuzz_corpus`).

#[path = "../common/mod.rs"]
mod common;
mod fuzz_corpus;

use cohort_cluster::{ClusterError, Routing};
use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

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
