//! Mailboxes and messages: direct, named, unique-subscriber and custom mailboxes, fan-out,
//! delivery filters, mutable messages, subscriptions, message limits, payload drops, tracing;
//! message chains, request/reply and timers.

#[path = "../common/mod.rs"]
mod common;

mod custom_mbox;
mod dead_letter_fields;
mod delivery_filters;
mod delivery_phases;
mod mchain;
mod message_limits;
mod message_tracing;
mod mutable_messages;
mod named_fan_out;
mod named_mailboxes;
mod payload_drops;
mod request_reply;
mod subscriptions;
mod timers;
mod unique_subscribers;
