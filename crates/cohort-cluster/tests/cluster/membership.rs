//! Membership: join through seeds (one of them down), graceful leave, a crash seen as down
//! with its registrations gone everywhere, a restart under the same name, nodes of
//! another cluster or with another token refused, and gossipers (seeds that are not
//! members; many on one runtime).

use crate::common;

use cohort_cluster::{ClusterConfig, ClusterError, ConfigError, Gossiper};
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

#[test]
fn a_gossiper_is_a_seed_and_never_a_member() {
    watchdog(LIMIT, || {
        let env = env();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let seed = runtime
            .block_on(Gossiper::start("seed", &config("c6", &[]).token("t")))
            .unwrap();
        let seeds = [seed.gossip_addr().to_string()];
        // Each member knows only the gossiper: they find each other through it.
        let a = join(&env, "a", config("c6", &seeds));
        let b = join(&env, "b", config("c6", &seeds));
        for m in [&a, &b] {
            wait_up(m, &["a", "b"]);
            let names: Vec<String> = m.cluster().members().into_iter().map(|m| m.name).collect();
            assert_eq!(names, ["a", "b"]);
        }
        wait_until("the gossiper lists both members and itself", || {
            seed.live() == 3
        });
        let stats = seed.stats();
        assert!(stats.datagrams_in > 0 && stats.bytes_out > 0, "{stats:?}");
        assert_eq!(stats.foreign_cluster + stats.malformed_datagrams, 0);
        assert!(stats.receive_buffer_bytes > 0, "{stats:?}");
        // Its state reached them (it lists them, so they gossiped with it): still no member.
        assert_eq!(a.cluster().members().len(), 2);
        assert_eq!(b.cluster().members().len(), 2);
        drop((seed, a, b));
        runtime.shutdown_timeout(Duration::from_secs(5));
        env.stop_and_wait();
    });
}

#[test]
fn gossipers_on_one_runtime_converge_through_several_seeds() {
    watchdog(LIMIT, || {
        // Few enough that a round's work (every digest lists every member) stays small on
        // two busy cores; enough that most join through a seed other than the first.
        const N: usize = 12;
        const SEEDS: usize = 3;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut config = config("c7", &[]);
        let mut seeds = Vec::new();
        let mut all = Vec::new();
        for i in 0..N {
            let g = runtime
                .block_on(Gossiper::start(&format!("g{i}"), &config))
                .unwrap();
            if i < SEEDS {
                seeds.push(g.gossip_addr().to_string());
                config = config.seeds(seeds.clone());
            }
            all.push(g);
        }
        wait_until("every gossiper lists all", || {
            all.iter().all(|g| g.live() == N)
        });
        // Every seed was reached by joiners, not only the first.
        for seed in &all[..SEEDS] {
            assert!(seed.stats().datagrams_in > 0);
        }
        drop(all);
        runtime.shutdown_timeout(Duration::from_secs(5));
    });
}

#[test]
fn a_gossiper_refuses_a_bad_config_and_an_executor_other_than_tokio() {
    watchdog(LIMIT, || {
        // Polled once by hand, outside any tokio runtime: refused before any await.
        let poll_once = |config: ClusterConfig| {
            let mut start = std::pin::pin!(Gossiper::start("g", &config));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            match start.as_mut().poll(&mut cx) {
                std::task::Poll::Ready(r) => r.map(drop),
                std::task::Poll::Pending => panic!("Gossiper::start waited outside a runtime"),
            }
        };
        assert!(matches!(
            poll_once(ClusterConfig::new("ok")),
            Err(ClusterError::NoRuntime)
        ));
        assert!(matches!(
            poll_once(ClusterConfig::new("")),
            Err(ClusterError::Config(ConfigError::BadName(_)))
        ));
    });
}
