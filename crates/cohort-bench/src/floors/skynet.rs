//! Skynet floors: the tree of `leaves` leaves summed by hand on one thread, either as a
//! plain recursion (no allocation: the arithmetic alone) or with the scenario's shape of
//! memory, every node a heap object with a heap list of its children and every answer a
//! heap-allocated message to its parent: the whole tree alive before the first leaf answers
//! (a FIFO dispatcher's order), or released as answered, depth first (the least a tree that
//! answers as it goes holds at once: one path of nodes, each with its children).

use super::one_thread::check;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// What one skynet floor measured.
pub struct Skynet {
    pub to_result: Duration,
    /// Including the tree's destruction.
    pub with_teardown: Duration,
}

/// 0 + 1 + ... + (leaves - 1), checked by the floors.
fn expected(leaves: u64) -> u64 {
    leaves.wrapping_mul(leaves.wrapping_sub(1)) / 2
}

/// The plain recursion: node `num` of `size` leaves sums its children's answers.
pub fn plain(leaves: u64, branching: u64) -> Result<Skynet, String> {
    fn sum(num: u64, size: u64, branching: u64) -> u64 {
        if size == 1 {
            return num;
        }
        let child = size / branching;
        (0..branching)
            .map(|i| sum(num + i * child, child, branching))
            .sum()
    }
    let start = Instant::now();
    let total = sum(0, black_box(leaves), black_box(branching));
    let elapsed = start.elapsed();
    check("as the sum", black_box(total), expected(leaves))?;
    Ok(Skynet {
        to_result: elapsed,
        with_teardown: elapsed,
    })
}

/// A node of the allocated tree: its ordinal range and its children (none for a leaf).
struct Node {
    num: u64,
    size: u64,
    // A box per child: one heap object per node is the memory shape this floor reproduces.
    #[allow(clippy::vec_box)]
    children: Vec<Box<Node>>,
}

/// The allocated tree: built in full (one box per node, one children list per inner node),
/// then summed with one boxed answer per node, then dropped.
pub fn allocated(leaves: u64, branching: u64) -> Result<Skynet, String> {
    fn build(num: u64, size: u64, branching: u64) -> Box<Node> {
        let children = if size == 1 {
            Vec::new()
        } else {
            let child = size / branching;
            (0..branching)
                .map(|i| build(num + i * child, child, branching))
                .collect()
        };
        Box::new(Node {
            num,
            size,
            children,
        })
    }
    fn answer(node: &Node) -> Box<u64> {
        if node.size == 1 {
            return Box::new(node.num);
        }
        let mut sum = 0;
        for c in &node.children {
            sum += *answer(c);
        }
        Box::new(sum)
    }
    timed(leaves, || {
        let tree = build(0, black_box(leaves), black_box(branching));
        let total = *answer(black_box(&tree));
        (tree, total)
    })
}

/// The allocated shape released as answered, depth first: each node builds its children
/// (one box each, in its heap list), has each answer in turn (the child building and
/// answering its own subtree first), then drops them.
pub fn depth_first(leaves: u64, branching: u64) -> Result<Skynet, String> {
    fn answer(node: &mut Node, branching: u64) -> Box<u64> {
        if node.size == 1 {
            return Box::new(node.num);
        }
        let child = node.size / branching;
        node.children = (0..branching)
            .map(|i| {
                Box::new(Node {
                    num: node.num + i * child,
                    size: child,
                    children: Vec::new(),
                })
            })
            .collect();
        let mut sum = 0;
        for c in &mut node.children {
            sum += *answer(c, branching);
        }
        node.children = Vec::new();
        Box::new(sum)
    }
    timed(leaves, || {
        let mut root = Box::new(Node {
            num: 0,
            size: black_box(leaves),
            children: Vec::new(),
        });
        let total = *answer(black_box(&mut root), black_box(branching));
        (root, total)
    })
}

/// Times `run`, which sums the tree and gives back what it keeps of it (dropped as the
/// teardown), and checks its sum.
fn timed<T>(leaves: u64, run: impl FnOnce() -> (T, u64)) -> Result<Skynet, String> {
    let start = Instant::now();
    let (kept, total) = run();
    let to_result = start.elapsed();
    drop(kept);
    let with_teardown = start.elapsed();
    check("as the sum", total, expected(leaves))?;
    Ok(Skynet {
        to_result,
        with_teardown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sum_the_leaves() {
        plain(1_000, 10).unwrap();
        allocated(1_000, 10).unwrap();
        allocated(64, 2).unwrap();
        depth_first(1_000, 10).unwrap();
        depth_first(64, 2).unwrap();
    }
}
