//! Generic, iterative walks over any graph of the crate's vocabulary (`crate::digraph`). Visited sets are epoch-stamped so that many
//! small walks over a large graph cost only what they touch, never a clear of the whole graph.

use crate::digraph::{Predecessors, Successors};
use crate::graph::NodeId;

/// A reusable visited set: starting a new epoch forgets every mark in O(1).
#[derive(Clone, Debug)]
pub struct Marks {
    stamp: Vec<u32>,
    epoch: u32,
}

impl Marks {
    pub fn new(len: usize) -> Self {
        Marks {
            stamp: vec![0; len],
            epoch: 1,
        }
    }

    pub fn next_epoch(&mut self) {
        if self.epoch == u32::MAX {
            self.stamp.fill(0);
            self.epoch = 0;
        }
        self.epoch += 1;
    }

    /// Marks `n`; true when it was not marked yet in this epoch.
    #[inline]
    pub fn mark(&mut self, n: NodeId) -> bool {
        let s = &mut self.stamp[n.index()];
        let fresh = *s != self.epoch;
        *s = self.epoch;
        fresh
    }

    #[inline]
    pub fn is_marked(&self, n: NodeId) -> bool {
        self.stamp[n.index()] == self.epoch
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

/// Every node reachable from `starts` (included) in `direction`, entering only nodes `admit`
/// accepts. Marks what it visits in `marks` (in the current epoch) and returns it.
pub fn reach<G: Successors<Node = NodeId> + Predecessors>(
    graph: &G,
    starts: &[NodeId],
    direction: Direction,
    marks: &mut Marks,
    mut admit: impl FnMut(NodeId) -> bool,
) -> Vec<NodeId> {
    let mut visited = Vec::new();
    for &s in starts {
        if marks.mark(s) {
            visited.push(s);
        }
    }
    let mut next = 0;
    while next < visited.len() {
        let n = visited[next];
        next += 1;
        let enter = |m: NodeId| {
            if !marks.is_marked(m) && admit(m) {
                marks.mark(m);
                visited.push(m);
            }
        };
        match direction {
            Direction::Forward => graph.for_each_successor(n, enter),
            Direction::Backward => graph.for_each_predecessor(n, enter),
        }
    }
    visited
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digraph::EdgeLists;

    #[test]
    fn reach_respects_direction_admission_and_epochs() {
        let g = EdgeLists::new(5, [(0, 1), (1, 2), (2, 3), (0, 4)]);
        let mut marks = Marks::new(5);
        let mut fwd = reach(&g, &[NodeId(0)], Direction::Forward, &mut marks, |n| {
            n != NodeId(2)
        });
        fwd.sort();
        assert_eq!(fwd, vec![NodeId(0), NodeId(1), NodeId(4)]);
        marks.next_epoch();
        let mut back = reach(&g, &[NodeId(3)], Direction::Backward, &mut marks, |_| true);
        back.sort();
        assert_eq!(back, vec![NodeId(0), NodeId(1), NodeId(2), NodeId(3)]);
        assert!(!marks.is_marked(NodeId(4)));
    }

    #[test]
    fn a_long_chain_does_not_recurse() {
        let n = 200_000u32;
        let g = EdgeLists::new(n as usize, (0..n - 1).map(|i| (i, i + 1)));
        let mut marks = Marks::new(n as usize);
        assert_eq!(
            reach(&g, &[NodeId(0)], Direction::Forward, &mut marks, |_| true).len(),
            n as usize
        );
    }
}
