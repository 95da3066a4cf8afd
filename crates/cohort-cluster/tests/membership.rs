//! Membership: join through seeds (one of them down), graceful leave, a crash seen as down
//! with its registrations gone everywhere, a restart under the same name, and nodes of
//! another cluster or with another token refused.

mod common;

use common::*;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn join_from_seeds_including_one_that_is_down() {
    watchdog(LIMIT, || {
        let env = env();
        let down = dead_addr();
        let a = join(&env, "a", config("c1", std::slice::from_ref(&down)));
        let b = join(&env, "b", config("c1", &[down.clone(), a.seed()]));
        let c = join(&env, "c", config("c1", &[down, b.seed()]));
        for m in [&a, &b, &c] {
            wait_up(m, &["a", "b", "c"]);
            let names: Vec<String> = m.cluster().members().into_iter().map(|m| m.name).collect();
            assert_eq!(names, ["a", "b", "c"]);
        }
        let b_seen_by_a = a
            .cluster()
            .members()
            .into_iter()
            .find(|m| m.name == "b")
            .unwrap();
        assert_eq!(b_seen_by_a.remoting_addr, b.node.local_addr().unwrap());
        assert_eq!(b_seen_by_a.incarnation, b.cluster().me().incarnation);
        drop((a, b, c));
        env.stop_and_wait();
    });
}

#[test]
fn graceful_leave_is_left_not_down_and_takes_registrations() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(&env, "a", config("c2", &[]));
        let mut b = join(&env, "b", config("c2", &[a.seed()]));
        let c = join(&env, "c", config("c2", &[a.seed()]));
        for m in [&a, &b, &c] {
            wait_up(m, &["a", "b", "c"]);
        }
        let (inbox, _rx) = recorder::<Ping>();
        b.cluster().register("orders", &inbox).unwrap();
        let (sub_a, listings_a) = recorder();
        a.cluster().subscribe_key("orders", &sub_a);
        wait_listing(&listings_a, "with b", |l| l.nodes() == ["b"]);

        b.cluster.take().unwrap().leave();
        for m in [&a, &c] {
            let before = wait_event(m, "left of b", |e| *e == Ev::Left("b".into()));
            assert!(
                !before
                    .iter()
                    .any(|e| matches!(e, Ev::Down(n, _) if n == "b")),
                "{before:?}"
            );
            assert!(!m.cluster().members().iter().any(|x| x.name == "b"));
        }
        wait_listing(&listings_a, "without b", |l| l.is_empty());
        assert!(c.cluster().lookup("orders").is_empty());
        drop((a, c));
        env.stop_and_wait();
    });
}

#[test]
fn crash_is_seen_as_down_and_registrations_vanish_everywhere() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(&env, "a", detecting("c3", &[]));
        let mut b = join(&env, "b", detecting("c3", &[a.seed()]));
        let c = join(&env, "c", detecting("c3", &[a.seed()]));
        for m in [&a, &b, &c] {
            wait_up(m, &["a", "b", "c"]);
        }
        let (inbox, _rx) = recorder::<Ping>();
        b.cluster().register("orders", &inbox).unwrap();
        let (sub_a, listings_a) = recorder();
        let (sub_c, listings_c) = recorder();
        a.cluster().subscribe_key("orders", &sub_a);
        c.cluster().subscribe_key("orders", &sub_c);
        wait_listing(&listings_a, "with b", |l| l.nodes() == ["b"]);
        wait_listing(&listings_c, "with b", |l| l.nodes() == ["b"]);

        // A crash: gossip stops without a leave, connections drop without a Bye.
        b.cluster.take().unwrap().abort();
        let b = std::sync::Arc::try_unwrap(b.node).unwrap();
        b.abort();
        for (m, listings) in [(&a, &listings_a), (&c, &listings_c)] {
            let before = wait_event(m, "down of b", |e| matches!(e, Ev::Down(n, _) if n == "b"));
            assert!(
                !before.iter().any(|e| *e == Ev::Left("b".into())),
                "{before:?}"
            );
            wait_listing(listings, "without b", |l| l.is_empty());
            assert!(m.cluster().lookup("orders").is_empty());
            assert!(!m.cluster().members().iter().any(|x| x.name == "b"));
        }
        drop((a, c));
        env.stop_and_wait();
    });
}

#[test]
fn restart_under_the_same_name_is_a_new_incarnation_without_old_registrations() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(&env, "a", config("c4", &[]));
        let mut b = join(&env, "b", config("c4", &[a.seed()]).incarnation(1));
        wait_up(&a, &["a", "b"]);
        let (inbox, _rx) = recorder::<Ping>();
        b.cluster().register("orders", &inbox).unwrap();
        let (sub, listings) = recorder();
        a.cluster().subscribe_key("orders", &sub);
        wait_listing(&listings, "with b", |l| l.nodes() == ["b"]);

        b.cluster.take().unwrap().abort();
        std::sync::Arc::try_unwrap(b.node).unwrap().abort();
        // The old incarnation is still live in a's gossip (this config never declares it
        // dead): the higher incarnation replaces it all the same.
        let b2 = join(&env, "b", config("c4", &[a.seed()]).incarnation(2));
        b2.cluster().register("other", &inbox).unwrap();
        let before = wait_event(&a, "up of b's second incarnation", |e| {
            *e == Ev::Up("b".into(), 2)
        });
        // The first incarnation is down: before the second is up, or after it.
        if !before
            .iter()
            .any(|e| matches!(e, Ev::Down(n, _) if n == "b"))
        {
            wait_event(
                &a,
                "down of b's first incarnation",
                |e| matches!(e, Ev::Down(n, _) if n == "b"),
            );
        }
        wait_listing(&listings, "without b's old registration", |l| l.is_empty());
        wait_until("b's new registration seen", || {
            !a.cluster().lookup("other").is_empty()
        });
        let other = a.cluster().lookup("other");
        assert_eq!(other.entries[0].incarnation, 2);
        assert!(
            a.cluster().lookup("orders").is_empty(),
            "the old registration came back"
        );
        let b_now = a
            .cluster()
            .members()
            .into_iter()
            .find(|m| m.name == "b")
            .unwrap();
        assert_eq!(b_now.incarnation, 2);
        drop((a, b2));
        env.stop_and_wait();
    });
}

#[test]
fn another_cluster_name_or_token_never_becomes_a_member() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(&env, "a", config("alpha", &[]));
        let b = join(&env, "b", config("alpha", &[a.seed()]));
        let x = join(&env, "x", config("beta", &[a.seed()]));
        let y = join_with_token(&env, "y", "other-token", config("alpha", &[a.seed()]));
        wait_up(&a, &["a", "b"]);
        wait_until("a refused x and y", || {
            a.cluster().stats().foreign_cluster >= 2
        });
        wait_until("x refused", || x.cluster().stats().foreign_cluster >= 1);
        wait_until("y refused", || y.cluster().stats().foreign_cluster >= 1);
        // Membership went on for the others meanwhile: a later member is still admitted.
        let c = join(&env, "c", config("alpha", &[a.seed()]));
        wait_up(&a, &["c"]);
        wait_up(&c, &["a", "b", "c"]);
        for m in [&a, &b, &c] {
            let names: Vec<String> = m.cluster().members().into_iter().map(|m| m.name).collect();
            assert!(
                !names.contains(&"x".to_string()) && !names.contains(&"y".to_string()),
                "{names:?}"
            );
        }
        for m in [&x, &y] {
            let names: Vec<String> = m.cluster().members().into_iter().map(|m| m.name).collect();
            assert_eq!(names.len(), 1, "{names:?}");
        }
        drop((a, b, c, x, y));
        env.stop_and_wait();
    });
}
