//! A connection's receive buffer: sized exactly for what arrives (the frame at its head
//! when that is longer than [`READ_BUFFER_BYTES`], otherwise that many bytes), followed by
//! the node's `receive_buffer_bytes` gauge, and given back when the connection ends.

use crate::defaults::READ_BUFFER_BYTES;
use crate::node::NodeShared;
use std::sync::atomic::Ordering;

/// Sizes the receive buffer for the next read: room for the frame at its head when that is
/// longer than [`READ_BUFFER_BYTES`], otherwise that many bytes; `counted` is what the node's
/// gauge holds for it.
pub(crate) fn size(node: &NodeShared, buf: &mut Vec<u8>, counted: &mut usize) {
    // The head's declared length was checked against the maximum by the decode before.
    let head = match buf.first_chunk::<4>() {
        Some(l) => u32::from_le_bytes(*l) as usize + 4,
        None => 0,
    };
    let target = head.max(READ_BUFFER_BYTES);
    if buf.capacity() < target {
        buf.reserve_exact(target - buf.len());
    } else if buf.capacity() > target {
        // A long frame went through: its room is given back.
        buf.shrink_to(target);
    }
    let cap = buf.capacity();
    if cap != *counted {
        let gauge = &node.counters.receive_buffer_bytes;
        gauge.fetch_add(cap as u64, Ordering::Relaxed);
        gauge.fetch_sub(*counted as u64, Ordering::Relaxed);
        *counted = cap;
    }
}

/// Frees the buffer of an ended connection (`counted` bytes in the gauge), and has the
/// allocator's free pages returned when it was a long one.
pub(crate) fn release(node: &NodeShared, buf: Vec<u8>, counted: usize) {
    node.counters
        .receive_buffer_bytes
        .fetch_sub(counted as u64, Ordering::Relaxed);
    let long = buf.capacity() > READ_BUFFER_BYTES;
    drop(buf);
    if long {
        crate::guard::release_long_buffer(node);
    }
}
