//! Replays the fuzz targets' seed corpus and crash regressions (`fuzz/corpus/<target>/`,
//! `fuzz/regressions/<target>/`) on stable, through the entry points the targets call
//! (`cohort_remote::fuzzing`): every input must pass each target's invariants.

use cohort_remote::fuzzing;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Feeds every file of the target's corpus and regressions to `entry`; returns how many.
fn replay(target: &str, entry: fn(&[u8])) -> usize {
    let mut fed = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(files) = std::fs::read_dir(fuzz_dir().join(dir).join(target)) else {
            continue;
        };
        for file in files {
            let path = file.expect("a readable directory").path();
            let data = std::fs::read(&path).expect("a readable file");
            let run = std::panic::catch_unwind(|| entry(&data));
            assert!(run.is_ok(), "{} fails its invariants", path.display());
            fed += 1;
        }
    }
    fed
}

#[test]
fn frame_corpus() {
    assert!(replay("frame", fuzzing::frame) > 0);
}

#[test]
fn handshake_corpus() {
    assert!(replay("handshake", fuzzing::handshake) > 0);
}

#[test]
fn registry_corpus() {
    assert!(replay("registry", fuzzing::registry_decode) > 0);
}

#[test]
fn mbox_ref_corpus() {
    assert!(replay("mbox_ref", fuzzing::mbox_ref) > 0);
}

#[test]
fn reader_corpus() {
    assert!(replay("reader", fuzzing::reader) > 0);
}

/// The seed corpus is what the real encoders write: passes its own invariants, and is
/// what is committed (rewrite it with `COHORT_WRITE_SEEDS=1`).
#[test]
fn seeds_are_current() {
    let write = std::env::var_os("COHORT_WRITE_SEEDS").is_some();
    for (target, name, bytes) in fuzzing::seeds() {
        let path = fuzz_dir().join("corpus").join(target).join(&name);
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_default();
        assert_eq!(
            committed,
            bytes,
            "{} is not the generator's",
            path.display()
        );
    }
}
