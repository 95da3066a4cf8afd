//! Fuzz target: see `cohort_remote::fuzzing::reader` for what it feeds and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cohort_remote::fuzzing::reader(data));
