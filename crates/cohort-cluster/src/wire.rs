//! The first look at a gossip datagram, before chitchat decodes it: its size and its header
//! (chitchat's magic number, a protocol version and a message type it knows). What fails
//! here never reaches chitchat, and is counted with its reason.

/// Chitchat's magic number, the first two bytes of every datagram (little-endian).
const MAGIC: u16 = 45_139;
/// The protocol versions chitchat decodes.
const VERSIONS: [u8; 2] = [0, 1];
/// The datagram chitchat encodes for "another cluster": the header alone, type 3.
pub(crate) const BAD_CLUSTER: [u8; 4] = [0x53, 0xb0, 0, 3];

/// What a datagram's header says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Gossip to hand to chitchat (a Syn, a SynAck or an Ack).
    Gossip,
    /// A peer's refusal of our gossip: another cluster, or another token.
    BadCluster,
}

/// Why a datagram was refused before chitchat saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Longer than the configured cap.
    Oversized,
    /// Too short for a header, a wrong magic number, or a version or type chitchat does
    /// not know.
    BadHeader,
    /// A header of gossip, but a body chitchat's decoder refuses (found by the transport).
    BadBody,
}

impl Refusal {
    /// The reason in words (also the key of the log's rate limit).
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Refusal::Oversized => "gossip datagram over max_datagram_bytes",
            Refusal::BadHeader => "datagram without a gossip header",
            Refusal::BadBody => "gossip datagram whose body does not decode",
        }
    }
}

/// Classifies `datagram` under the cap `max` (bytes).
pub(crate) fn check(datagram: &[u8], max: usize) -> Result<Kind, Refusal> {
    if datagram.len() > max {
        return Err(Refusal::Oversized);
    }
    let [m0, m1, version, kind, ..] = *datagram else {
        return Err(Refusal::BadHeader);
    };
    if u16::from_le_bytes([m0, m1]) != MAGIC || !VERSIONS.contains(&version) {
        return Err(Refusal::BadHeader);
    }
    match kind {
        0..=2 => Ok(Kind::Gossip),
        3 => Ok(Kind::BadCluster),
        _ => Err(Refusal::BadHeader),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_classified() {
        assert_eq!(check(&BAD_CLUSTER, 1024), Ok(Kind::BadCluster));
        assert_eq!(check(&[0x53, 0xb0, 1, 0, 9], 1024), Ok(Kind::Gossip));
        assert_eq!(check(&[0x53, 0xb0, 2, 0], 1024), Err(Refusal::BadHeader));
        assert_eq!(check(&[0x53, 0xb0, 0, 4], 1024), Err(Refusal::BadHeader));
        assert_eq!(check(&[0x53, 0xb0, 0], 1024), Err(Refusal::BadHeader));
        assert_eq!(check(&[0u8; 8], 1024), Err(Refusal::BadHeader));
        assert_eq!(check(&[0u8; 8], 7), Err(Refusal::Oversized));
    }
}
