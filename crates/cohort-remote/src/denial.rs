//! Refusals of access ([`Access`](crate::Access)) on a connection, both ways. The receiving
//! side keeps the messages it refused as runs of one mailbox and type ([`Denial`]), which
//! its writer reports in `Denied` frames right before the `Ack` that covers them
//! ([`put_denials`]); the sending side holds the refusals the peer reported until an `Ack`
//! covers them, then counts each as an `AccessDenied` dead letter ([`Denials::settle`]), so
//! a refused message is never also in doubt.

use crate::connection::ConnState;
use crate::defaults::MAX_PENDING_DENIALS;
use crate::frame;
use crate::node::NodeShared;
use crate::peer::PeerShared;
use crate::reader::ProtocolError;
use crate::stats::Counters;
use cohort::DeliveryFailure;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;

/// A refusal to report to the peer: `count` messages to `mbox` of type `ty`, the last of
/// which was the peer's `upto`-th message on this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Denial {
    pub(crate) mbox: u32,
    pub(crate) ty: u32,
    pub(crate) count: u32,
    pub(crate) upto: u64,
}

/// Appends one refused message to `runs`, merged into the last run when it is of the same
/// mailbox and type.
pub(crate) fn push_denial(runs: &mut VecDeque<Denial>, d: Denial) {
    match runs.back_mut() {
        Some(last) if last.mbox == d.mbox && last.ty == d.ty && last.count < u32::MAX => {
            last.count += d.count;
            last.upto = d.upto;
        }
        _ => runs.push_back(d),
    }
}

/// A connection's refusals as its reader sees them.
#[derive(Default)]
pub(crate) struct Denials {
    /// Refusals of messages read in this turn, for the writer to report.
    refusals: VecDeque<Denial>,
    /// This side's messages the peer refused, per type, not yet covered by an `Ack`.
    pending: Vec<(u32, u64)>,
    /// Those covered by an `Ack`: the reader counts them as dead letters.
    ready: Vec<(u32, u64)>,
    /// Every refusal the peer reported and an `Ack` covered.
    total: u64,
}

impl Denials {
    /// Records the refusal of the peer's `upto`-th message on the connection, to `mbox`, of
    /// type `ty`.
    pub(crate) fn refuse(&mut self, mbox: u32, ty: u32, upto: u64) -> Result<(), ProtocolError> {
        if self.refusals.len() >= MAX_PENDING_DENIALS {
            return Err(ProtocolError::DenialBacklog);
        }
        push_denial(
            &mut self.refusals,
            Denial {
                mbox,
                ty,
                count: 1,
                upto,
            },
        );
        Ok(())
    }

    /// Whether this turn refused messages (the writer is then woken to report them).
    pub(crate) fn refused_this_turn(&self) -> bool {
        !self.refusals.is_empty()
    }

    /// The peer reported `count` refusals of this side's messages of type `ty` (a `Denied`
    /// frame); `types` is how many types this node can send.
    pub(crate) fn reported(
        &mut self,
        ty: u32,
        count: u32,
        types: usize,
    ) -> Result<(), ProtocolError> {
        if ty as usize >= types {
            return Err(ProtocolError::BadDenial(
                "names a type this node never sends",
            ));
        }
        match self.pending.iter_mut().find(|(t, _)| *t == ty) {
            Some((_, n)) => *n = n.saturating_add(u64::from(count)),
            None => self.pending.push((ty, u64::from(count))),
        }
        Ok(())
    }

    /// The peer acknowledged `acked` of this side's messages: the refusals it reported
    /// before that `Ack` are covered by it, and counted at the end of the turn. Whether it
    /// covered any.
    pub(crate) fn covered(&mut self, acked: u64) -> Result<bool, ProtocolError> {
        let any = !self.pending.is_empty();
        for (ty, count) in self.pending.drain(..) {
            self.total = self.total.saturating_add(count);
            if self.total > acked {
                return Err(ProtocolError::BadDenial(
                    "refuses more messages than the peer acknowledged",
                ));
            }
            match self.ready.iter_mut().find(|(t, _)| *t == ty) {
                Some((_, n)) => *n += count,
                None => self.ready.push((ty, count)),
            }
        }
        Ok(any)
    }

    /// Hands the refusals of a turn to the writer (before the turn's messages are
    /// acknowledged, so that the `Ack` covering them finds them), and counts the peer's
    /// refusals of this side's messages that an `Ack` covered.
    pub(crate) fn settle(
        &mut self,
        node: &NodeShared,
        peer: &PeerShared,
        conn: &ConnState,
    ) -> Result<(), ProtocolError> {
        if !self.refusals.is_empty() {
            let mut pending = conn.denied.lock().unwrap_or_else(|e| e.into_inner());
            for d in self.refusals.drain(..) {
                push_denial(&mut pending, d);
            }
            if pending.len() > MAX_PENDING_DENIALS {
                return Err(ProtocolError::DenialBacklog);
            }
            conn.denied_waiting.store(true, Ordering::Release);
        }
        for (ty, count) in self.ready.drain(..) {
            let name = node.registry.entry(ty).type_name;
            Counters::add(&node.counters.access_denied, count);
            for _ in 0..count {
                node.undeliverable(name, DeliveryFailure::AccessDenied);
            }
            tracing::debug!(node = %node.config.name, peer = %peer.name, message_type = name, count,
                "messages refused by the peer (Access)");
        }
        Ok(())
    }

    /// Drops what a turn left for the writer and the counters (the fuzzing entry points,
    /// which have neither).
    pub(crate) fn forget_turn(&mut self) {
        self.refusals.clear();
        self.ready.clear();
    }
}

/// Writes the refusals of the messages among those read so far as `Denied` frames, then
/// the `Ack` that covers them (the sender counts them when that `Ack` arrives), or the Ack
/// owed alone.
#[cold]
pub(crate) fn put_denials(conn: &ConnState, buf: &mut Vec<u8>) {
    let received = conn.ack.received.load(Ordering::Acquire);
    let mut denied = conn.denied.lock().unwrap_or_else(|e| e.into_inner());
    let mut wrote = false;
    while let Some(d) = denied.front()
        && d.upto <= received
    {
        frame::encode_denied(buf, d.mbox, d.ty, d.count);
        denied.pop_front();
        wrote = true;
    }
    if denied.is_empty() {
        conn.denied_waiting.store(false, Ordering::Release);
    }
    drop(denied);
    if wrote || received > conn.ack.sent.load(Ordering::Relaxed) {
        frame::encode_ack(buf, received);
        conn.ack.sent.store(received, Ordering::Relaxed);
    }
}
