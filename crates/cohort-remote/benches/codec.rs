//! Which codec for the wire: postcard (the default) against bitcode, on the messages of the
//! remote ping-pong (two integers) and on a market-data quote (a string, floats, a vector).
//! Encoding appends to a reused buffer, as the writer task does; decoding reads one value
//! back, as the reader task does.
//!
//! `cargo bench -p cohort-remote --bench codec`; the encoded sizes are printed first.

use cohort_remote::{Codec, Postcard};
use criterion::{Criterion, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use std::hint::black_box;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Ping {
    slot: u32,
    sent_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Quote {
    symbol: String,
    bid: f64,
    ask: f64,
    sizes: Vec<u32>,
}

fn values() -> (Ping, Quote) {
    (
        Ping {
            slot: 17,
            sent_ns: 1_234_567_890,
        },
        Quote {
            symbol: "ACME.N".into(),
            bid: 101.25,
            ask: 101.5,
            sizes: (1..=10).map(|i| i * 100).collect(),
        },
    )
}

fn sizes() {
    let (p, q) = values();
    let mut b = Vec::new();
    Postcard::encode(&p, &mut b).unwrap();
    let pc_p = b.len();
    b.clear();
    Postcard::encode(&q, &mut b).unwrap();
    let pc_q = b.len();
    let bc_p = bitcode::serialize(&p).unwrap().len();
    let bc_q = bitcode::serialize(&q).unwrap().len();
    println!(
        "encoded bytes: Ping postcard {pc_p}, bitcode {bc_p}; Quote postcard {pc_q}, bitcode {bc_q}"
    );
}

fn codecs(c: &mut Criterion) {
    sizes();
    let (p, q) = values();
    let mut buf = Vec::with_capacity(64 * 1024);

    c.bench_function("postcard encode Ping", |b| {
        b.iter(|| {
            buf.clear();
            Postcard::encode(black_box(&p), &mut buf).unwrap();
            black_box(buf.len())
        })
    });
    c.bench_function("bitcode encode Ping", |b| {
        // bitcode's serde entry point returns a fresh vector: a Codec would copy it on.
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(&bitcode::serialize(black_box(&p)).unwrap());
            black_box(buf.len())
        })
    });
    c.bench_function("postcard encode Quote", |b| {
        b.iter(|| {
            buf.clear();
            Postcard::encode(black_box(&q), &mut buf).unwrap();
            black_box(buf.len())
        })
    });
    c.bench_function("bitcode encode Quote", |b| {
        // bitcode's serde entry point returns a fresh vector: a Codec would copy it on.
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(&bitcode::serialize(black_box(&q)).unwrap());
            black_box(buf.len())
        })
    });

    let mut pc_p = Vec::new();
    Postcard::encode(&p, &mut pc_p).unwrap();
    let mut pc_q = Vec::new();
    Postcard::encode(&q, &mut pc_q).unwrap();
    let bc_p = bitcode::serialize(&p).unwrap();
    let bc_q = bitcode::serialize(&q).unwrap();
    c.bench_function("postcard decode Ping", |b| {
        b.iter(|| Postcard::decode::<Ping>(black_box(&pc_p)).unwrap())
    });
    c.bench_function("bitcode decode Ping", |b| {
        b.iter(|| bitcode::deserialize::<Ping>(black_box(&bc_p)).unwrap())
    });
    c.bench_function("postcard decode Quote", |b| {
        b.iter(|| Postcard::decode::<Quote>(black_box(&pc_q)).unwrap())
    });
    c.bench_function("bitcode decode Quote", |b| {
        b.iter(|| bitcode::deserialize::<Quote>(black_box(&bc_q)).unwrap())
    });
}

criterion_group!(benches, codecs);
criterion_main!(benches);
