//! ACYCLIC: the quotient graph of the partitions, and the concrete path behind each cycle.

use super::{Checker, id, ix};
use crate::graph::NodeId;
use crate::rules::{Fact, Finding, PathStep, RuleId};
use petgraph::Direction::Outgoing;
use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{HashMap, HashSet, VecDeque};

/// Quotient edge (by vertex) to the first graph edge behind it, for edges touching a partition.
type EdgeOf = hashbrown::HashMap<(usize, usize), (NodeId, NodeId)>;

impl Checker<'_> {
    /// ACYCLIC: contract every partition to one vertex; the result must be a DAG. Each cycle is
    /// reported with a concrete path: per non-convex partition the shortest path that leaves and
    /// re-enters it, otherwise one cycle through several partitions.
    pub(super) fn acyclic(&self) -> Vec<Finding> {
        let parts = self.tagging.partition_count();
        let vertex = |n: NodeId| match self.tagging.partition(n) {
            Some(p) => p as usize,
            None => parts + n.index(),
        };
        let mut q = DiGraph::<(), NodeId>::with_capacity(parts + self.graph.len(), 0);
        for _ in 0..parts + self.graph.len() {
            q.add_node(());
        }
        // The first graph edge behind each quotient edge that touches a partition. Between two
        // untagged nodes there is one graph edge at most (a node's inputs are distinct), and the
        // quotient edge is that edge: most edges of a large graph, kept out of the map.
        let mut edge_of: EdgeOf = hashbrown::HashMap::new();
        for e in self.view.dag.raw_edges() {
            let (a, b) = (id(e.source()), id(e.target()));
            let (va, vb) = (vertex(a), vertex(b));
            if va == vb || self.is_copied(a, b) {
                continue;
            }
            let first = (va >= parts && vb >= parts)
                || match edge_of.entry((va, vb)) {
                    hashbrown::hash_map::Entry::Occupied(_) => false,
                    hashbrown::hash_map::Entry::Vacant(slot) => {
                        slot.insert((a, b));
                        true
                    }
                };
            if first {
                q.add_edge(NodeIndex::new(va), NodeIndex::new(vb), a);
            }
        }
        if toposort(&q, None).is_ok() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for scc in tarjan_scc(&q).into_iter().filter(|s| s.len() > 1) {
            let mut parts_in: Vec<usize> = scc
                .iter()
                .map(|v| v.index())
                .filter(|&v| v < parts)
                .collect();
            parts_in.sort();
            let before = out.len();
            for &p in &parts_in {
                if let Some(path) = self.leave_and_reenter(p as u32) {
                    let tag = self.tagging.name(p as u32);
                    let fact = Fact::NotConvex {
                        exit: path[0].node,
                        entry: path[path.len() - 1].node,
                    };
                    out.push(
                        Finding::violation(RuleId::Acyclic, fact)
                            .partition(tag)
                            .nodes(path.iter().map(|s| s.node))
                            .path(path),
                    );
                }
            }
            if out.len() == before
                && let Some(path) = self.cycle_through(&q, &scc, &edge_of, parts)
            {
                let tags: Vec<String> = parts_in
                    .iter()
                    .map(|&p| self.tagging.name(p as u32).to_string())
                    .collect();
                out.push(
                    Finding::violation(RuleId::Acyclic, Fact::PartitionsInCycle { tags })
                        .nodes(path.iter().map(|s| s.node))
                        .path(path),
                );
            }
        }
        out
    }

    /// Shortest path from a node of partition `p` out through other nodes and back into `p`.
    fn leave_and_reenter(&self, p: u32) -> Option<Vec<PathStep>> {
        let inside = |n: NodeId| self.tagging.partition(n) == Some(p);
        let mut parent: HashMap<NodeId, NodeId> = HashMap::new();
        let mut queue = VecDeque::new();
        for a in self.graph.ids().filter(|&n| inside(n)) {
            for b in self.view.dag.neighbors_directed(ix(a), Outgoing).map(id) {
                if !inside(b) && !self.is_copied(a, b) && !parent.contains_key(&b) {
                    parent.insert(b, a);
                    queue.push_back(b);
                }
            }
        }
        while let Some(x) = queue.pop_front() {
            for y in self.view.dag.neighbors_directed(ix(x), Outgoing).map(id) {
                if inside(y) {
                    let mut path = vec![y, x];
                    let mut at = x;
                    while let Some(&prev) = parent.get(&at) {
                        path.push(prev);
                        if inside(prev) {
                            break;
                        }
                        at = prev;
                    }
                    path.reverse();
                    return Some(path.into_iter().map(|n| self.step(n, false)).collect());
                }
                if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(y) {
                    e.insert(x);
                    queue.push_back(y);
                }
            }
        }
        None
    }

    /// One cycle of the quotient graph inside `scc`, as graph edges joined by steps inside partitions.
    fn cycle_through(
        &self,
        q: &DiGraph<(), NodeId>,
        scc: &[NodeIndex],
        edge_of: &EdgeOf,
        parts: usize,
    ) -> Option<Vec<PathStep>> {
        let members: HashSet<NodeIndex> = scc.iter().copied().collect();
        let start = scc
            .iter()
            .copied()
            .filter(|v| v.index() < parts)
            .min()
            .unwrap_or(scc[0]);
        let mut parent: HashMap<NodeIndex, NodeIndex> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        let mut last = None;
        'search: while let Some(v) = queue.pop_front() {
            for u in q.neighbors_directed(v, Outgoing) {
                if u == start {
                    last = Some(v);
                    break 'search;
                }
                if members.contains(&u) && !parent.contains_key(&u) {
                    parent.insert(u, v);
                    queue.push_back(u);
                }
            }
        }
        let mut vertices = vec![start, last?];
        while let Some(&p) = parent.get(vertices.last()?) {
            vertices.push(p);
        }
        vertices.reverse(); // start, ..., last, start
        let mut steps: Vec<PathStep> = Vec::new();
        for pair in vertices.windows(2) {
            let (va, vb) = (pair[0].index(), pair[1].index());
            let (a, b) = match edge_of.get(&(va, vb)) {
                Some(&edge) => edge,
                // Two untagged nodes: the vertex is the node.
                None if va >= parts && vb >= parts => {
                    (NodeId((va - parts) as u32), NodeId((vb - parts) as u32))
                }
                None => return None,
            };
            let jump = steps.last().is_some_and(|s: &PathStep| s.node != a);
            if steps.last().is_none_or(|s| s.node != a) {
                steps.push(self.step(a, jump));
            }
            steps.push(self.step(b, false));
        }
        // Close the loop inside the partition it started from.
        if let (Some(first), Some(last)) = (steps.first(), steps.last())
            && first.node != last.node
        {
            let mut close = first.clone();
            close.within_partition = true;
            steps.push(close);
        }
        Some(steps)
    }
}
