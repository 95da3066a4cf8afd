//! Dispatchers: order per sender on every kind, one worker per agent at a time, pool turns
//! and stealing, the priority dispatcher, adv_thread_pool, active_group, statistics, turn ends.

#[path = "../common/mod.rs"]
mod common;

mod active_group;
mod adv_thread_pool;
mod depth_first;
mod exclusive;
mod fifo;
mod max_demands;
mod prio;
mod stats;
mod stealing;
mod turn_end;
