//! A member in another process killed with SIGKILL: seen down by every member, its
//! registrations gone everywhere. The child is this test binary run again with only
//! `child_member` selected and the seed in an environment variable.

use crate::common;

use common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);
const CHILD_SEED: &str = "COHORT_CLUSTER_TEST_CHILD_SEED";

/// The child's body: a member registering `orders`, serving until killed or until its
/// standard input closes (the parent is gone). A no-op when run as an ordinary test.
#[test]
fn child_member() {
    let Ok(seed) = std::env::var(CHILD_SEED) else {
        return;
    };
    let env = env();
    let m = join(&env, "child", detecting("p1", &[seed]));
    let (inbox, _rx) = recorder::<Ping>();
    m.cluster().register("orders", &inbox).unwrap();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

#[test]
fn a_killed_process_is_seen_down_and_its_registrations_vanish() {
    watchdog(LIMIT, || {
        let env = env();
        let a = join(&env, "a", detecting("p1", &[]));
        let b = join(&env, "b", detecting("p1", &[a.seed()]));
        let (sub_a, listings_a) = recorder();
        let (sub_b, listings_b) = recorder();
        a.cluster().subscribe_key("orders", &sub_a);
        b.cluster().subscribe_key("orders", &sub_b);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &test_name(module_path!(), "child_member")])
            .arg("--test-threads=1")
            .env(CHILD_SEED, a.seed())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        for m in [&a, &b] {
            wait_up(m, &["a", "b", "child"]);
        }
        wait_listing(&listings_a, "with the child", |l| l.nodes() == ["child"]);
        wait_listing(&listings_b, "with the child", |l| l.nodes() == ["child"]);

        child.kill().unwrap(); // SIGKILL: no leave, no Bye
        child.wait().unwrap();
        for (m, listings) in [(&a, &listings_a), (&b, &listings_b)] {
            let before = wait_event(
                m,
                "down of the child",
                |e| matches!(e, Ev::Down(n, _) if n == "child"),
            );
            assert!(
                !before.iter().any(|e| *e == Ev::Left("child".into())),
                "{before:?}"
            );
            wait_listing(listings, "without the child", |l| l.is_empty());
            assert!(m.cluster().lookup("orders").is_empty());
        }
        drop((a, b));
        env.stop_and_wait();
    });
}
