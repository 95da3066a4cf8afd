//! The wire format: length-prefixed frames on one TCP stream per pair of nodes.
//!
//! ```text
//!  0        4      5
//!  +--------+------+--------------------------------------------+
//!  | length | kind | body (length - 1 bytes)                     |
//!  +--------+------+--------------------------------------------+
//!   u32 LE   u8
//!
//!  kind  body
//!  1 Hello        version u16 | name str | token bytes          (dialler -> listener)
//!  2 Welcome      version u16 | name str                        (listener -> dialler)
//!  3 Refuse       reason str                                    (listener -> dialler, then close)
//!  4 DeclareType  id u32 | name str       the sender's id for a registered type name
//!  5 DeclareMbox  id u32 | name str       the sender's id for an exported mailbox name
//!  6 Message      mbox u32 | type u32 | payload (postcard, to the end of the frame)
//!  7 Heartbeat    (empty)
//!  8 Bye          (empty: the sender flushed everything and closes)
//!  9 Ack          received u64   Message frames this side has read on this connection
//! 10 Denied       mbox u32 | type u32 | count u32   messages the sender of this frame read and
//!                 refused: the exported mailbox (the peer's id) does not admit the peer
//!
//!  str / bytes: u16 LE length, then that many bytes (str: UTF-8); integers little-endian.
//! ```
//!
//! `length` counts the kind byte and the body. A type or mailbox is declared once per
//! connection, the first time the sender uses it; every `Message` after that names it by
//! its 4-byte id, never by its string. Frames of one connection are written by one writer
//! task, so they arrive in the order the senders' messages entered its queue.
//!
//! `Ack` is cumulative: `received` counts every `Message` frame the peer read on this
//! connection and handed to a mailbox (or counted as a dead letter there). It rides in the
//! acknowledging side's own batches, or goes alone at its heartbeat or after
//! [`ACK_EVERY`](crate::defaults::ACK_EVERY) messages when it has nothing to send. At a
//! break, the sender counts each message written past the last `received` as in doubt.
//!
//! `Denied` reports messages refused by the receiving node's [`Access`](crate::Access): they
//! count as read (the `Ack` covers them) and go back to their sender as dead letters. The
//! refusing side writes its `Denied` frames only right before an `Ack` that covers them, and
//! the sender counts them only when that `Ack` arrives: a message is then either refused or
//! in doubt, never both.
//!
//! [`decode`] checks a frame completely before the caller acts on it: its declared length
//! against the configured maximum (before a byte of the body is buffered), its kind, every
//! field's bounds, names' UTF-8 and length, and that control frames have nothing left over.

use crate::defaults::MAX_NAME_BYTES;
use thiserror::Error;

/// Bytes before a frame's body: the length (4) and the kind (1).
pub const HEADER_BYTES: usize = 5;

/// The kinds of frame (the byte after the length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// Opens a connection: version, node name, authentication token.
    Hello = 1,
    /// Accepts a [`FrameKind::Hello`].
    Welcome = 2,
    /// Refuses a [`FrameKind::Hello`], with the reason; the connection closes after it.
    Refuse = 3,
    /// Maps an id to a registered message type's name, for this connection.
    DeclareType = 4,
    /// Maps an id to an exported mailbox's name, for this connection.
    DeclareMbox = 5,
    /// One message: mailbox id, type id, encoded value.
    Message = 6,
    /// A sign of life when nothing else was written.
    Heartbeat = 7,
    /// A graceful close: nothing follows.
    Bye = 8,
    /// How many `Message` frames the sender of this frame has read on this connection.
    Ack = 9,
    /// Messages of one type to one mailbox the sender of this frame refused (its
    /// [`Access`](crate::Access)).
    Denied = 10,
}

impl FrameKind {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Self::Hello,
            2 => Self::Welcome,
            3 => Self::Refuse,
            4 => Self::DeclareType,
            5 => Self::DeclareMbox,
            6 => Self::Message,
            7 => Self::Heartbeat,
            8 => Self::Bye,
            9 => Self::Ack,
            10 => Self::Denied,
            _ => return None,
        })
    }
}

/// One decoded frame, borrowing from the receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// See [`FrameKind::Hello`].
    Hello {
        /// The dialler's protocol version.
        version: u16,
        /// The dialler's node name.
        name: &'a str,
        /// The shared secret it presents.
        token: &'a [u8],
    },
    /// See [`FrameKind::Welcome`].
    Welcome {
        /// The listener's protocol version.
        version: u16,
        /// The listener's node name.
        name: &'a str,
    },
    /// See [`FrameKind::Refuse`].
    Refuse {
        /// Why the handshake was refused.
        reason: &'a str,
    },
    /// See [`FrameKind::DeclareType`].
    DeclareType {
        /// The id messages of this type carry on this connection.
        id: u32,
        /// The type's registered name.
        name: &'a str,
    },
    /// See [`FrameKind::DeclareMbox`].
    DeclareMbox {
        /// The id messages to this mailbox carry on this connection.
        id: u32,
        /// The exported mailbox's name.
        name: &'a str,
    },
    /// See [`FrameKind::Message`].
    Message {
        /// A declared mailbox id.
        mbox: u32,
        /// A declared type id.
        ty: u32,
        /// The value, encoded by the type's codec.
        payload: &'a [u8],
    },
    /// See [`FrameKind::Heartbeat`].
    Heartbeat,
    /// See [`FrameKind::Bye`].
    Bye,
    /// See [`FrameKind::Ack`].
    Ack {
        /// `Message` frames read on this connection so far.
        received: u64,
    },
    /// See [`FrameKind::Denied`].
    Denied {
        /// The mailbox id the refused messages carried (the receiver of this frame's id).
        mbox: u32,
        /// Their type id.
        ty: u32,
        /// How many.
        count: u32,
    },
}

/// Why bytes received are not a valid frame. Each closes the connection with this reason,
/// logged and counted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// The declared length is over the configured maximum.
    #[error(
        "frame of {len} bytes is longer than the maximum of {max} (raise NodeConfig::max_frame_bytes on both nodes if such messages are expected)"
    )]
    TooLong {
        /// The declared length.
        len: u32,
        /// The configured maximum.
        max: u32,
    },
    /// A frame declared a length of 0 (it must hold at least its kind byte).
    #[error("frame with a length of 0 (no kind byte)")]
    Empty,
    /// The kind byte is not one of [`FrameKind`]'s.
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// A field runs past the end of its frame.
    #[error("{kind:?} frame truncated: its fields need more than its {len} bytes")]
    Truncated {
        /// The frame's kind.
        kind: FrameKind,
        /// The frame's declared length.
        len: u32,
    },
    /// A control frame has bytes after its last field.
    #[error("{kind:?} frame has {extra} bytes after its last field")]
    TrailingBytes {
        /// The frame's kind.
        kind: FrameKind,
        /// How many bytes are left over.
        extra: usize,
    },
    /// A name is not UTF-8 or longer than [`MAX_NAME_BYTES`].
    #[error(
        "{kind:?} frame carries a name that is not UTF-8 or longer than {MAX_NAME_BYTES} bytes"
    )]
    BadName {
        /// The frame's kind.
        kind: FrameKind,
    },
    /// The peer declared more types or mailboxes than
    /// [`NodeConfig::max_declarations`](crate::NodeConfig::max_declarations), or an id out
    /// of that range.
    #[error(
        "declaration id {id} is out of range, or one declaration too many (at most {max} type and {max} mailbox declarations per connection: NodeConfig::max_declarations)"
    )]
    TooManyDeclarations {
        /// The declared id.
        id: u32,
        /// The limit.
        max: u32,
    },
}

/// Decodes the frame at the start of `buf`, if `buf` holds all of it.
///
/// Returns `Ok(None)` when more bytes are needed, `Ok(Some((frame, consumed)))` for a
/// complete frame, and an error as soon as the bytes cannot be a valid frame: a declared
/// length over `max_frame` fails with only its 4 length bytes received.
///
/// ```
/// use cohort_remote::frame::{self, Frame, FrameKind};
///
/// let mut buf = Vec::new();
/// frame::encode_heartbeat(&mut buf);
/// assert_eq!(frame::decode(&buf, 1024), Ok(Some((Frame::Heartbeat, 5))));
/// assert_eq!(frame::decode(&buf[..3], 1024), Ok(None));
/// ```
pub fn decode(buf: &[u8], max_frame: u32) -> Result<Option<(Frame<'_>, usize)>, FrameError> {
    let Some(len_bytes) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let len = u32::from_le_bytes(*len_bytes);
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > max_frame {
        return Err(FrameError::TooLong {
            len,
            max: max_frame,
        });
    }
    let kind_byte = match buf.get(4) {
        Some(b) => *b,
        None => return Ok(None),
    };
    let kind = FrameKind::from_byte(kind_byte).ok_or(FrameError::UnknownKind(kind_byte))?;
    let total = 4 + len as usize;
    let Some(frame) = buf.get(HEADER_BYTES..total) else {
        return Ok(None);
    };
    let mut body = Body {
        rest: frame,
        kind,
        len,
    };
    let decoded = match kind {
        FrameKind::Hello => Frame::Hello {
            version: body.u16()?,
            name: body.name()?,
            token: body.bytes()?,
        },
        FrameKind::Welcome => Frame::Welcome {
            version: body.u16()?,
            name: body.name()?,
        },
        FrameKind::Refuse => Frame::Refuse {
            reason: body.str_any()?,
        },
        FrameKind::DeclareType => Frame::DeclareType {
            id: body.u32()?,
            name: body.name()?,
        },
        FrameKind::DeclareMbox => Frame::DeclareMbox {
            id: body.u32()?,
            name: body.name()?,
        },
        FrameKind::Message => {
            let mbox = body.u32()?;
            let ty = body.u32()?;
            let payload = std::mem::take(&mut body.rest);
            Frame::Message { mbox, ty, payload }
        }
        FrameKind::Heartbeat => Frame::Heartbeat,
        FrameKind::Bye => Frame::Bye,
        FrameKind::Ack => Frame::Ack {
            received: body.u64()?,
        },
        FrameKind::Denied => Frame::Denied {
            mbox: body.u32()?,
            ty: body.u32()?,
            count: body.u32()?,
        },
    };
    if !body.rest.is_empty() {
        return Err(FrameError::TrailingBytes {
            kind,
            extra: body.rest.len(),
        });
    }
    Ok(Some((decoded, total)))
}

/// A frame's body being read field by field.
struct Body<'a> {
    rest: &'a [u8],
    kind: FrameKind,
    len: u32,
}

impl<'a> Body<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.rest.len() < n {
            return Err(FrameError::Truncated {
                kind: self.kind,
                len: self.len,
            });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, FrameError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, FrameError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn bytes(&mut self) -> Result<&'a [u8], FrameError> {
        let n = self.u16()? as usize;
        self.take(n)
    }

    fn str_any(&mut self) -> Result<&'a str, FrameError> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| FrameError::BadName { kind: self.kind })
    }

    fn name(&mut self) -> Result<&'a str, FrameError> {
        let s = self.str_any()?;
        if s.len() > MAX_NAME_BYTES {
            return Err(FrameError::BadName { kind: self.kind });
        }
        Ok(s)
    }
}

/// Starts a frame of `kind` at the end of `buf`; returns where it starts, for [`finish`].
#[inline]
pub(crate) fn begin(buf: &mut Vec<u8>, kind: FrameKind) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&[0, 0, 0, 0, kind as u8]);
    start
}

/// Writes the length of the frame begun at `start` (everything after it in `buf`); returns
/// that length.
#[inline]
pub(crate) fn finish(buf: &mut [u8], start: usize) -> usize {
    let len = buf.len() - start - 4;
    // A frame over u32::MAX cannot be built: callers check the configured maximum (a u32)
    // before sending it, and truncate buf back to `start` when it is over.
    buf[start..start + 4].copy_from_slice(&(len.min(u32::MAX as usize) as u32).to_le_bytes());
    len
}

fn put_str(buf: &mut Vec<u8>, s: &[u8]) {
    let n = s.len().min(u16::MAX as usize);
    buf.extend_from_slice(&(n as u16).to_le_bytes());
    buf.extend_from_slice(&s[..n]);
}

/// Appends a `Hello` frame.
pub fn encode_hello(buf: &mut Vec<u8>, version: u16, name: &str, token: &[u8]) {
    let start = begin(buf, FrameKind::Hello);
    buf.extend_from_slice(&version.to_le_bytes());
    put_str(buf, name.as_bytes());
    put_str(buf, token);
    finish(buf, start);
}

/// Appends a `Welcome` frame.
pub fn encode_welcome(buf: &mut Vec<u8>, version: u16, name: &str) {
    let start = begin(buf, FrameKind::Welcome);
    buf.extend_from_slice(&version.to_le_bytes());
    put_str(buf, name.as_bytes());
    finish(buf, start);
}

/// Appends a `Refuse` frame.
pub fn encode_refuse(buf: &mut Vec<u8>, reason: &str) {
    let start = begin(buf, FrameKind::Refuse);
    put_str(buf, reason.as_bytes());
    finish(buf, start);
}

/// Appends a `DeclareType` (`mbox == false`) or `DeclareMbox` frame.
pub fn encode_declare(buf: &mut Vec<u8>, mbox: bool, id: u32, name: &str) {
    let kind = if mbox {
        FrameKind::DeclareMbox
    } else {
        FrameKind::DeclareType
    };
    let start = begin(buf, kind);
    buf.extend_from_slice(&id.to_le_bytes());
    put_str(buf, name.as_bytes());
    finish(buf, start);
}

/// Appends a `Message` frame with an already encoded payload.
pub fn encode_message(buf: &mut Vec<u8>, mbox: u32, ty: u32, payload: &[u8]) {
    let start = begin_message(buf, mbox, ty);
    buf.extend_from_slice(payload);
    finish(buf, start);
}

/// Starts a `Message` frame whose payload the caller appends, then [`finish`]es.
#[inline]
pub(crate) fn begin_message(buf: &mut Vec<u8>, mbox: u32, ty: u32) -> usize {
    let start = begin(buf, FrameKind::Message);
    buf.extend_from_slice(&mbox.to_le_bytes());
    buf.extend_from_slice(&ty.to_le_bytes());
    start
}

/// Appends a `Heartbeat` frame.
pub fn encode_heartbeat(buf: &mut Vec<u8>) {
    let start = begin(buf, FrameKind::Heartbeat);
    finish(buf, start);
}

/// Appends an `Ack` frame: `received` `Message` frames read on this connection.
pub fn encode_ack(buf: &mut Vec<u8>, received: u64) {
    let start = begin(buf, FrameKind::Ack);
    buf.extend_from_slice(&received.to_le_bytes());
    finish(buf, start);
}

/// Appends a `Denied` frame: `count` messages of type `ty` to mailbox `mbox` refused.
pub fn encode_denied(buf: &mut Vec<u8>, mbox: u32, ty: u32, count: u32) {
    let start = begin(buf, FrameKind::Denied);
    buf.extend_from_slice(&mbox.to_le_bytes());
    buf.extend_from_slice(&ty.to_le_bytes());
    buf.extend_from_slice(&count.to_le_bytes());
    finish(buf, start);
}

/// Appends a `Bye` frame.
pub fn encode_bye(buf: &mut Vec<u8>) {
    let start = begin(buf, FrameKind::Bye);
    finish(buf, start);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one(buf: &[u8]) -> Frame<'_> {
        let (f, n) = decode(buf, 1 << 20).unwrap().unwrap();
        assert_eq!(n, buf.len());
        f
    }

    #[test]
    fn every_kind_round_trips() {
        let mut b = Vec::new();
        encode_hello(&mut b, 3, "node-a", b"secret");
        assert_eq!(
            one(&b),
            Frame::Hello {
                version: 3,
                name: "node-a",
                token: b"secret"
            }
        );
        b.clear();
        encode_welcome(&mut b, 1, "b");
        assert_eq!(
            one(&b),
            Frame::Welcome {
                version: 1,
                name: "b"
            }
        );
        b.clear();
        encode_refuse(&mut b, "wrong token");
        assert_eq!(
            one(&b),
            Frame::Refuse {
                reason: "wrong token"
            }
        );
        b.clear();
        encode_declare(&mut b, false, 7, "Ping");
        assert_eq!(
            one(&b),
            Frame::DeclareType {
                id: 7,
                name: "Ping"
            }
        );
        b.clear();
        encode_declare(&mut b, true, 9, "pong");
        assert_eq!(
            one(&b),
            Frame::DeclareMbox {
                id: 9,
                name: "pong"
            }
        );
        b.clear();
        encode_message(&mut b, 1, 2, &[1, 2, 3]);
        assert_eq!(
            one(&b),
            Frame::Message {
                mbox: 1,
                ty: 2,
                payload: &[1, 2, 3]
            }
        );
        b.clear();
        encode_bye(&mut b);
        assert_eq!(one(&b), Frame::Bye);
        b.clear();
        encode_ack(&mut b, u64::MAX - 1);
        assert_eq!(
            one(&b),
            Frame::Ack {
                received: u64::MAX - 1
            }
        );
        assert_eq!(decode(&b[..b.len() - 1], 100), Ok(None));
        b.clear();
        encode_denied(&mut b, 3, 4, 5);
        assert_eq!(
            one(&b),
            Frame::Denied {
                mbox: 3,
                ty: 4,
                count: 5
            }
        );
        // An Ack whose counter is cut short.
        assert_eq!(
            decode(&[5, 0, 0, 0, 9, 1, 2, 3, 4], 100),
            Err(FrameError::Truncated {
                kind: FrameKind::Ack,
                len: 5
            })
        );
    }

    #[test]
    fn a_frame_over_the_maximum_fails_from_its_length_alone() {
        let buf = 2000u32.to_le_bytes();
        assert_eq!(
            decode(&buf, 1000),
            Err(FrameError::TooLong {
                len: 2000,
                max: 1000
            })
        );
    }

    #[test]
    fn malformed_frames_get_their_specific_error() {
        assert_eq!(decode(&[0, 0, 0, 0], 100), Err(FrameError::Empty));
        assert_eq!(
            decode(&[1, 0, 0, 0, 99], 100),
            Err(FrameError::UnknownKind(99))
        );
        // A DeclareType whose name length runs past the frame.
        let mut b = Vec::new();
        encode_declare(&mut b, false, 1, "abc");
        let l = b.len();
        b[9] = 200; // the name's length
        assert_eq!(
            decode(&b, 100),
            Err(FrameError::Truncated {
                kind: FrameKind::DeclareType,
                len: (l - 4) as u32
            })
        );
        // A heartbeat with a body.
        assert_eq!(
            decode(&[2, 0, 0, 0, 7, 0], 100),
            Err(FrameError::TrailingBytes {
                kind: FrameKind::Heartbeat,
                extra: 1
            })
        );
        // A name that is not UTF-8.
        let mut b = Vec::new();
        encode_declare(&mut b, true, 1, "ab");
        let n = b.len();
        b[n - 1] = 0xff;
        assert_eq!(
            decode(&b, 100),
            Err(FrameError::BadName {
                kind: FrameKind::DeclareMbox
            })
        );
    }

    #[test]
    fn a_truncated_frame_waits_for_more_bytes() {
        let mut b = Vec::new();
        encode_message(&mut b, 1, 2, &[9; 10]);
        for cut in 0..b.len() {
            assert_eq!(decode(&b[..cut], 100), Ok(None), "cut at {cut}");
        }
    }

    proptest! {
        // The decoder's fuzz corpus: arbitrary bytes never panic, and what it accepts it
        // accepts whole (the frame lies within the buffer and its declared length).
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512),
                                       max in 1u32..600) {
            if let Ok(Some((_, n))) = decode(&bytes, max) {
                prop_assert!(n <= bytes.len());
                prop_assert!(n >= HEADER_BYTES);
                prop_assert!((n - 4) as u32 <= max);
            }
        }

        // Valid frames followed by garbage: the valid ones decode, in order.
        #[test]
        fn a_stream_of_frames_decodes_in_order(ids in proptest::collection::vec(any::<u32>(), 1..20),
                                               tail in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut b = Vec::new();
            for id in &ids {
                encode_message(&mut b, *id, id.wrapping_mul(3), &id.to_le_bytes());
            }
            b.extend_from_slice(&tail);
            let mut at = 0;
            for id in &ids {
                let (f, n) = decode(&b[at..], 1 << 16).unwrap().unwrap();
                let bytes = id.to_le_bytes();
                prop_assert_eq!(f, Frame::Message { mbox: *id, ty: id.wrapping_mul(3), payload: &bytes[..] });
                at += n;
            }
            let _ = decode(&b[at..], 1 << 16);
        }
    }
}
