//! Replays the `gossip` fuzz target's seed corpus and crash regressions
//! (`fuzz/corpus/gossip/`, `fuzz/regressions/gossip/`) on stable, through the entry point
//! the target calls (`cohort_cluster::fuzzing::gossip`): every input must pass its
//! invariants.

use cohort_cluster::fuzzing;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

#[test]
fn gossip_corpus() {
    let mut fed = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(files) = std::fs::read_dir(fuzz_dir().join(dir).join("gossip")) else {
            continue;
        };
        for file in files {
            let path = file.expect("a readable directory").path();
            let data = std::fs::read(&path).expect("a readable file");
            let run = std::panic::catch_unwind(|| fuzzing::gossip(&data));
            assert!(run.is_ok(), "{} fails its invariants", path.display());
            fed += 1;
        }
    }
    assert!(fed > 0, "no gossip corpus under {}", fuzz_dir().display());
}

/// The seed corpus is what [`fuzzing::seeds`] writes (rewrite it with
/// `COHORT_WRITE_SEEDS=1`).
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
