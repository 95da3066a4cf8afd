//! The handshake: the dialler sends `Hello` (version, name, token), the listener answers
//! `Welcome` (version, name) or `Refuse` (reason) and closes. Both sides check the version;
//! the listener checks the token (in constant time) and that the names differ.

use crate::config::NodeConfig;
use crate::error::HandshakeError;
use crate::frame::{self, Frame};
use crate::node::NodeShared;
use crate::tls::Stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Handshake frames are small: names and a token.
const MAX_HANDSHAKE_FRAME: u32 = 4096;

/// Reads one handshake frame; returns an owned description of it.
async fn read_one(stream: &mut Stream, buf: &mut Vec<u8>) -> Result<Owned, HandshakeError> {
    loop {
        if let Some((owned, n)) = parse(buf)? {
            buf.drain(..n);
            return Ok(owned);
        }
        buf.reserve(512);
        let got = stream
            .read_buf(buf)
            .await
            .map_err(|_| HandshakeError::Closed)?;
        if got == 0 {
            return Err(HandshakeError::Closed);
        }
    }
}

/// The handshake frame at the start of `buf` and its length, or `None` until all of it is
/// there.
pub(crate) fn parse(buf: &[u8]) -> Result<Option<(Owned, usize)>, HandshakeError> {
    if looks_like_tls(buf) {
        return Err(HandshakeError::PeerUsesTls);
    }
    Ok(frame::decode(buf, MAX_HANDSHAKE_FRAME)?.map(|(f, n)| (Owned::from(f), n)))
}

/// Whether `buf` starts with a TLS record header (content type 20-23, version 3.1-3.4). A
/// handshake frame cannot: its length (at most 4 KiB) leaves its third byte zero.
fn looks_like_tls(buf: &[u8]) -> bool {
    matches!(buf, [0x14..=0x17, 0x03, 0x01..=0x04, ..])
}

/// A handshake frame, copied out of the receive buffer.
pub(crate) enum Owned {
    Hello {
        version: u16,
        name: String,
        token: Vec<u8>,
    },
    Welcome {
        version: u16,
        name: String,
    },
    Refuse(String),
    Other(&'static str),
}

impl From<Frame<'_>> for Owned {
    fn from(f: Frame<'_>) -> Self {
        match f {
            Frame::Hello {
                version,
                name,
                token,
            } => Owned::Hello {
                version,
                name: name.to_string(),
                token: token.to_vec(),
            },
            Frame::Welcome { version, name } => Owned::Welcome {
                version,
                name: name.to_string(),
            },
            Frame::Refuse { reason } => Owned::Refuse(reason.to_string()),
            Frame::DeclareType { .. } => Owned::Other("DeclareType"),
            Frame::DeclareMbox { .. } => Owned::Other("DeclareMbox"),
            Frame::Message { .. } => Owned::Other("Message"),
            Frame::Heartbeat => Owned::Other("Heartbeat"),
            Frame::Bye => Owned::Other("Bye"),
            Frame::Ack { .. } => Owned::Other("Ack"),
            Frame::Denied { .. } => Owned::Other("Denied"),
        }
    }
}

fn describe(o: &Owned) -> String {
    match o {
        Owned::Hello { .. } => "Hello".into(),
        Owned::Welcome { .. } => "Welcome".into(),
        Owned::Refuse(r) => format!("Refuse ({r})"),
        Owned::Other(k) => (*k).into(),
    }
}

/// Compares without an early exit, so the time taken says nothing about the token.
fn same_token(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The listener's side: returns the peer's name, or refuses (and says why to the peer).
pub(crate) async fn accept(
    node: &NodeShared,
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    from: std::net::SocketAddr,
) -> Result<String, HandshakeError> {
    let timeout = node.config.handshake_timeout;
    let result = match tokio::time::timeout(timeout, read_one(stream, buf)).await {
        Err(_) => Err(HandshakeError::Timeout(timeout)),
        Ok(Err(e)) => Err(e),
        Ok(Ok(hello)) => check_hello(hello, &node.config),
    };
    if let Err(e) = &result {
        // Counted before the peer hears the refusal: what it sees is already in the stats.
        crate::stats::Counters::add(&node.counters.handshakes_refused, 1);
        crate::node::warn_source(node, from, e);
    }
    let mut out = Vec::new();
    match &result {
        Ok(_) => frame::encode_welcome(
            &mut out,
            crate::defaults::PROTOCOL_VERSION,
            &node.config.name,
        ),
        Err(e) => frame::encode_refuse(&mut out, &refusal_reason(e)),
    }
    let written = stream.write_all(&out).await;
    if result.is_ok() {
        written.map_err(|_| HandshakeError::Closed)?;
    } else {
        let _ = stream.shutdown().await;
    }
    result
}

/// What a refusal says: the error, cut at a character boundary so that the `Refuse` frame
/// fits the dialler's handshake maximum (the error can quote a peer's long frame).
pub(crate) fn refusal_reason(e: &HandshakeError) -> String {
    // The kind byte and the string's length prefix.
    let room = MAX_HANDSHAKE_FRAME as usize - 3;
    let mut reason = e.to_string();
    reason.truncate(reason.floor_char_boundary(room));
    reason
}

/// The dialler's side: returns the listener's name.
pub(crate) async fn dial(
    node: &NodeShared,
    stream: &mut Stream,
    buf: &mut Vec<u8>,
) -> Result<String, HandshakeError> {
    let mut out = Vec::new();
    frame::encode_hello(
        &mut out,
        crate::defaults::PROTOCOL_VERSION,
        &node.config.name,
        &node.config.token,
    );
    let timeout = node.config.handshake_timeout;
    let exchange = async {
        stream
            .write_all(&out)
            .await
            .map_err(|_| HandshakeError::Closed)?;
        read_one(stream, buf).await
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => Err(HandshakeError::Timeout(timeout)),
        Ok(Err(e)) => Err(e),
        Ok(Ok(welcome)) => check_welcome(welcome),
    }
}

/// The listener's verdict on the dialler's first frame: the dialler's name, or why it is
/// refused.
pub(crate) fn check_hello(first: Owned, config: &NodeConfig) -> Result<String, HandshakeError> {
    match first {
        Owned::Hello {
            version,
            name,
            token,
        } => {
            if version != crate::defaults::PROTOCOL_VERSION {
                Err(HandshakeError::VersionMismatch {
                    ours: crate::defaults::PROTOCOL_VERSION,
                    theirs: version,
                })
            } else if !same_token(&token, &config.token) {
                Err(HandshakeError::WrongToken)
            } else if name == config.name {
                Err(HandshakeError::SameName(name))
            } else {
                Ok(name)
            }
        }
        other => Err(HandshakeError::Unexpected {
            expected: "Hello",
            got: describe(&other),
        }),
    }
}

/// The dialler's verdict on the listener's answer: the listener's name, or why not.
pub(crate) fn check_welcome(answer: Owned) -> Result<String, HandshakeError> {
    match answer {
        Owned::Welcome { version, name } => {
            if version != crate::defaults::PROTOCOL_VERSION {
                Err(HandshakeError::VersionMismatch {
                    ours: crate::defaults::PROTOCOL_VERSION,
                    theirs: version,
                })
            } else {
                Ok(name)
            }
        }
        Owned::Refuse(reason) => Err(HandshakeError::Refused(reason)),
        other => Err(HandshakeError::Unexpected {
            expected: "Welcome",
            got: describe(&other),
        }),
    }
}
