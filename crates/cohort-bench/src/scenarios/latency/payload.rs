//! The pipeline's message payloads (caf-latency-benchmarks.txt, "Message passing overhead"):
//! none (a weightless message, pure latency), or complex: a string, a plain struct with fixed
//! data and a byte vector, of configurable sizes.

/// Which payload the pipeline messages carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PayloadKind {
    /// No payload.
    None,
    /// A string, a fixed-size struct and a byte vector.
    Complex,
}

/// The fixed-size part of a complex payload (the CAF benchmark's "C struct with some fixed data").
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub sequence: u64,
    pub values: [f64; 4],
    pub flags: u32,
}

/// A complex payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Complex {
    pub text: String,
    pub header: Header,
    pub data: Vec<u8>,
}

/// What a pipeline message carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    None,
    Complex(Complex),
}

impl Payload {
    /// A payload of `kind` for message `sequence`: a string of `string_length` characters and
    /// a vector of `vector_size` bytes for a complex one.
    pub fn make(
        kind: PayloadKind,
        sequence: u64,
        string_length: usize,
        vector_size: usize,
    ) -> Self {
        match kind {
            PayloadKind::None => Payload::None,
            PayloadKind::Complex => Payload::Complex(Complex {
                text: "x".repeat(string_length),
                header: Header {
                    sequence,
                    values: [1.0, 2.0, 3.0, 4.0],
                    flags: 7,
                },
                data: vec![(sequence % 251) as u8; vector_size],
            }),
        }
    }

    /// Checks a complex payload arrived with its sizes and contents intact.
    pub fn is_intact(&self, string_length: usize, vector_size: usize) -> bool {
        match self {
            Payload::None => true,
            Payload::Complex(c) => {
                let fill = (c.header.sequence % 251) as u8;
                c.text.len() == string_length
                    && c.data.len() == vector_size
                    && c.data.iter().all(|&b| b == fill)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_payload_has_the_requested_sizes() {
        let p = Payload::make(PayloadKind::Complex, 300, 16, 500);
        assert!(matches!(&p, Payload::Complex(c) if c.header.sequence == 300));
        assert!(p.is_intact(16, 500));
        assert!(!p.is_intact(16, 499));
        assert_eq!(Payload::make(PayloadKind::None, 1, 16, 500), Payload::None);
    }
}
