//! Replays the fuzz targets' seed corpus and crash regressions (`fuzz/corpus/<target>/`,
//! `fuzz/regressions/<target>/`) on stable, through the entry points the targets call
//! (`cohort_remote::fuzzing`): every input must pass each target's invariants.

use cohort_remote::fuzzing::{self, check_seeds, replay};
use std::path::PathBuf;

fn fuzz_dir() -> PathBuf {
    fuzzing::fuzz_dir(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn frame_corpus() {
    assert!(replay(&fuzz_dir(), "frame", fuzzing::frame) > 0);
}

#[test]
fn handshake_corpus() {
    assert!(replay(&fuzz_dir(), "handshake", fuzzing::handshake) > 0);
}

#[test]
fn registry_corpus() {
    assert!(replay(&fuzz_dir(), "registry", fuzzing::registry_decode) > 0);
}

#[test]
fn mbox_ref_corpus() {
    assert!(replay(&fuzz_dir(), "mbox_ref", fuzzing::mbox_ref) > 0);
}

#[test]
fn reader_corpus() {
    assert!(replay(&fuzz_dir(), "reader", fuzzing::reader) > 0);
}

/// The seed corpus is what the real encoders write: passes its own invariants, and is
/// what is committed (rewrite it with `COHORT_WRITE_SEEDS=1`).
#[test]
fn seeds_are_current() {
    check_seeds(&fuzz_dir(), fuzzing::seeds());
}
