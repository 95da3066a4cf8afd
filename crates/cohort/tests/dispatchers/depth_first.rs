//! `work_stealing` runs a tree of agents depth first: the queues a worker's sends wake go to
//! its LIFO slot, and the ones the slot gives way to go on top of its LIFO deque, so a subtree
//! started by one worker finishes starting before the next sibling starts; that is what lets
//! a tree whose nodes let their children go once answered (skynet `--teardown answered`)
//! live in a few MiB rather than in full.

use crate::common;

use cohort::Binder;
use cohort::defaults::HOME_QUEUE_INTERVAL;
use cohort::dispatcher::Fifo;
use cohort::{Agent, Context};
use common::dispatchers::one_worker_stealing;
use common::{TIMEOUT, watchdog};
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

/// A node of a tree `depth` levels deep below it, `branching` children each: logs its path
/// when it starts, then registers its children (on the same binder).
struct Node {
    path: Vec<usize>,
    depth: usize,
    branching: usize,
    binder: Binder,
    log: Sender<Vec<usize>>,
}

impl Agent for Node {
    fn start(&mut self, ctx: &mut Context<'_, Self>) {
        let _ = self.log.send(self.path.clone());
        if self.depth == 0 {
            return;
        }
        let mut coop = ctx.new_child_coop();
        coop.set_binder(self.binder.clone());
        for i in 0..self.branching {
            let mut path = self.path.clone();
            path.push(i);
            coop.add(Node {
                path,
                depth: self.depth - 1,
                branching: self.branching,
                binder: self.binder.clone(),
                log: self.log.clone(),
            });
        }
        ctx.register_coop(coop).unwrap();
    }
}

/// With one worker (no stealing, so no dependence on when the OS runs a thread), the start
/// order is a depth-first walk: every subtree's nodes start one after another, never
/// interleaved with a sibling subtree's. (With the displaced queues at the back of the
/// worker's FIFO, as before, the order is breadth first: this fails at the root's second
/// child.)
#[test]
fn work_stealing_starts_a_tree_of_agents_depth_first() {
    watchdog(TIMEOUT, || {
        let env = cohort::Environment::builder().start().unwrap();
        let pool = one_worker_stealing(&env, "dfs", HOME_QUEUE_INTERVAL, Duration::ZERO);
        let binder = pool.binder(Fifo::Individual, 4);
        let (tx, rx) = mpsc::channel();
        let (depth, branching) = (3, 3);
        let mut coop = env.new_coop();
        coop.set_binder(binder.clone());
        coop.add(Node {
            path: Vec::new(),
            depth,
            branching,
            binder,
            log: tx,
        });
        env.register_coop(coop).unwrap();
        // 1 + 3 + 9 + 27 nodes.
        let order = common::recv_n(&rx, 40, "every node's start");
        env.stop_and_wait();
        assert_eq!(order[0], Vec::<usize>::new(), "the root starts first");
        // Depth first: once a node has started, the nodes that start before the next node
        // outside its subtree are exactly its descendants.
        for (i, p) in order.iter().enumerate() {
            let inside = order[i + 1..]
                .iter()
                .take_while(|q| q.starts_with(p))
                .count();
            let size: usize = (0..=depth - p.len()).map(|d| branching.pow(d as u32)).sum();
            assert_eq!(
                inside + 1,
                size,
                "node {p:?} started at {i} and its subtree of {size} nodes did not start \
                 before anything else (order: {order:?})"
            );
        }
    });
}
