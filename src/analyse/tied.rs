//! Ops tied together by values no Core ML delegate can take or give at its boundary
//! (`Graph::uncrossable`: a tensor of rank above 5, a size that is an expression of symbols). Such
//! a value's producer and every reader must share one partition, or all run on CPU; values that
//! share an op tie their groups into one. A group's hull is the smallest convex set holding its
//! ops: what one partition must hold for them to be delegated, as a state's hull is for a state.

use super::chains::ChainWalker;
use super::index::GraphIndex;
use crate::digraph::Adjacency;
use crate::graph::{Graph, NodeId, OpKind, Uncrossable};

/// One group of ops tied by values that cannot cross a delegate's boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tied {
    /// The values that cannot cross, each with why, in topological order.
    pub values: Vec<(NodeId, Uncrossable)>,
    /// The `call_function` nodes that make or read them, in topological order.
    pub ops: Vec<NodeId>,
    /// The smallest convex set holding `ops`, in topological order.
    pub hull: Vec<NodeId>,
    /// Placeholders among the values: a delegate takes one in only as constant data it holds.
    pub placeholders: Vec<NodeId>,
    /// The graph's output reads one of the values: no delegate can give it.
    pub to_output: bool,
}

/// Every group, in the topological order of its first value. Nothing when no value is
/// uncrossable, which is every graph with static shapes of rank 5 or less.
pub(crate) fn tied_groups(
    graph: &Graph,
    index: &GraphIndex,
    walker: &mut ChainWalker,
) -> Vec<Tied> {
    let values: Vec<(NodeId, Uncrossable)> = (index.order().iter())
        .filter_map(|&n| graph.uncrossable(n).map(|why| (n, why)))
        .collect();
    if values.is_empty() {
        return Vec::new();
    }
    // Union-find over nodes: a value with each of its readers.
    let mut parent: Vec<u32> = (0..graph.len() as u32).collect();
    fn root(parent: &mut [u32], mut i: u32) -> u32 {
        while parent[i as usize] != i {
            parent[i as usize] = parent[parent[i as usize] as usize];
            i = parent[i as usize];
        }
        i
    }
    for (v, _) in &values {
        for &reader in index.successors(*v) {
            let (a, b) = (root(&mut parent, v.0), root(&mut parent, reader.0));
            parent[a.max(b) as usize] = a.min(b);
        }
    }
    let mut group_of_root: Vec<u32> = vec![u32::MAX; graph.len()];
    let mut groups: Vec<Tied> = Vec::new();
    let mut group = |parent: &mut [u32], n: NodeId, groups: &mut Vec<Tied>| -> usize {
        let r = root(parent, n.0) as usize;
        if group_of_root[r] == u32::MAX {
            group_of_root[r] = groups.len() as u32;
            groups.push(Tied {
                values: Vec::new(),
                ops: Vec::new(),
                hull: Vec::new(),
                placeholders: Vec::new(),
                to_output: false,
            });
        }
        group_of_root[r] as usize
    };
    let mut is_value = vec![false; graph.len()];
    // Each value's group, in the order of the values: the order groups are numbered in.
    for (v, why) in values {
        is_value[v.index()] = true;
        let g = group(&mut parent, v, &mut groups);
        groups[g].values.push((v, why));
    }
    for &n in index.order() {
        let member =
            is_value[n.index()] || index.predecessors(n).iter().any(|q| is_value[q.index()]);
        if !member {
            continue;
        }
        let g = group(&mut parent, n, &mut groups);
        match graph.op(n) {
            OpKind::CallFunction => groups[g].ops.push(n),
            OpKind::Placeholder => groups[g].placeholders.push(n),
            OpKind::Output => groups[g].to_output = true,
            OpKind::GetAttr => {}
        }
    }
    for g in &mut groups {
        g.hull = walker.between(&g.ops, &g.ops);
        g.hull.sort_by_key(|&n| index.position(n));
    }
    groups
}
