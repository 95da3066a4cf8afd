//! Replays the `gossip` fuzz target's seed corpus and crash regressions
//! (`fuzz/corpus/gossip/`, `fuzz/regressions/gossip/`) on stable, through the entry point
//! the target calls (`cohort_cluster::fuzzing::gossip`): every input must pass its
//! invariants.

use cohort_cluster::fuzzing;
use cohort_remote::fuzzing::{check_seeds, fuzz_dir, replay};

#[test]
fn gossip_corpus() {
    let dir = fuzz_dir(env!("CARGO_MANIFEST_DIR"));
    let fed = replay(&dir, "gossip", fuzzing::gossip);
    assert!(fed > 0, "no gossip corpus under {}", dir.display());
}

/// The seed corpus is what [`fuzzing::seeds`] writes (rewrite it with
/// `COHORT_WRITE_SEEDS=1`).
#[test]
fn seeds_are_current() {
    check_seeds(&fuzz_dir(env!("CARGO_MANIFEST_DIR")), fuzzing::seeds());
}
