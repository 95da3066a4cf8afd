//! Entry points of the fuzz targets (`fuzz/fuzz_targets/gossip.rs`) and of the corpus
//! replay that runs on stable (`tests/bad_input/fuzz_corpus.rs`). Not a stable API.

use crate::wire::{self, Kind, Refusal};

/// The gate every gossip datagram passes before chitchat decodes it. The first two bytes
/// of `data` are the cap (little-endian, at least 4), the rest the datagram. Invariants:
/// no panic; an accepted datagram is within the cap and starts with chitchat's header; the
/// decision does not depend on bytes past the header, except through the length.
pub fn gossip(data: &[u8]) {
    let Some((cap, datagram)) = data.split_first_chunk::<2>() else {
        return;
    };
    let cap = usize::from(u16::from_le_bytes(*cap)).max(4);
    let verdict = wire::check(datagram, cap);
    match verdict {
        Ok(kind) => {
            assert!(datagram.len() <= cap, "accepted over the cap");
            assert_eq!(
                &datagram[..2],
                &wire::BAD_CLUSTER[..2],
                "accepted without the magic"
            );
            if kind == Kind::BadCluster {
                assert_eq!(datagram[3], wire::BAD_CLUSTER[3]);
            }
        }
        Err(Refusal::Oversized) => assert!(datagram.len() > cap),
        Err(Refusal::BadHeader) => assert!(datagram.len() <= cap),
        Err(Refusal::BadBody) => panic!("the gate never judges a body"),
    }
    // Past the header only the length counts: the same header with another body gets the
    // same verdict.
    if datagram.len() > 4 {
        let mut other = datagram.to_vec();
        other[4..].iter_mut().for_each(|b| *b = !*b);
        assert_eq!(wire::check(&other, cap), verdict);
    }
}

/// The seed corpus: (target, file name, bytes), what a real gossip exchange starts with
/// and the gate's edge cases.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let with_cap = |cap: u16, datagram: &[u8]| {
        let mut v = cap.to_le_bytes().to_vec();
        v.extend_from_slice(datagram);
        v
    };
    let mut syn = vec![0x53, 0xb0, 0, 0, 0, 0]; // a Syn with an empty digest
    syn.extend_from_slice(&7u16.to_le_bytes());
    syn.extend_from_slice(b"shop#00");
    let cases: [(&str, Vec<u8>); 7] = [
        ("syn-v0", with_cap(65_507, &syn)),
        ("bad-cluster", with_cap(1024, &wire::BAD_CLUSTER)),
        ("ack-v1", with_cap(1024, &[0x53, 0xb0, 1, 2, 0])),
        ("unknown-version", with_cap(1024, &[0x53, 0xb0, 9, 0])),
        ("unknown-type", with_cap(1024, &[0x53, 0xb0, 0, 200])),
        ("truncated", with_cap(1024, &[0x53, 0xb0, 0])),
        ("oversized", with_cap(4, &syn)),
    ];
    cases
        .into_iter()
        .map(|(name, bytes)| ("gossip", name.to_string(), bytes))
        .collect()
}
