//! Fuzz target: see `cohort_cluster::fuzzing::gossip` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cohort_cluster::fuzzing::gossip(data));
