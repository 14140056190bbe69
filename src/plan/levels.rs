//! Convex partitioning of the delegate side. Each state group (the hulls of buffers kept as state,
//! merged where they overlap) is contracted into one unit; every other node is a unit of its own.
//! A delegate unit's level r is the largest number of delegate runs on any path ending in it:
//! delegate units of equal r form a convex set, and the number of levels is the largest number of
//! delegate runs on one path, which no convex partitioning can go below. O(V + E).

use crate::analyse::{DirectedGraph, GraphIndex};
use crate::graph::NodeId;
use std::collections::HashMap;

const NONE: u32 = u32::MAX;

/// State groups: disjoint sets of nodes that must share one partition.
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    /// Each node's group, or `NONE`.
    pub group_of: Vec<u32>,
    pub members: Vec<Vec<NodeId>>,
    /// The buffers (indices into the analysis) whose hulls formed each group.
    pub buffers: Vec<Vec<usize>>,
}

impl Groups {
    /// Merges the hulls of `buffers` wherever they share a node.
    pub fn from_hulls<'h>(
        node_count: usize,
        hulls: impl IntoIterator<Item = (usize, &'h [NodeId])>,
    ) -> Self {
        let hulls: Vec<(usize, &[NodeId])> = hulls.into_iter().collect();
        let mut parent: Vec<usize> = (0..hulls.len()).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        let mut owner = vec![NONE; node_count];
        for (h, (_, nodes)) in hulls.iter().enumerate() {
            for n in nodes.iter() {
                let o = owner[n.index()];
                if o == NONE {
                    owner[n.index()] = h as u32;
                } else {
                    let (a, b) = (root(&mut parent, o as usize), root(&mut parent, h));
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        let mut id_of_root: HashMap<usize, u32> = HashMap::new();
        let mut groups = Groups {
            group_of: vec![NONE; node_count],
            ..Default::default()
        };
        for (h, (buffer, _)) in hulls.iter().enumerate() {
            let r = root(&mut parent, h);
            let id = *id_of_root.entry(r).or_insert_with(|| {
                groups.members.push(Vec::new());
                groups.buffers.push(Vec::new());
                (groups.members.len() - 1) as u32
            });
            groups.buffers[id as usize].push(*buffer);
        }
        for (n, &o) in owner.iter().enumerate() {
            if o != NONE {
                let id = id_of_root[&root(&mut parent, o as usize)];
                groups.group_of[n] = id;
                groups.members[id as usize].push(NodeId(n as u32));
            }
        }
        groups
    }

    pub fn group(&self, n: NodeId) -> Option<u32> {
        let g = self.group_of[n.index()];
        (g != NONE).then_some(g)
    }
}

/// A cycle among units: contracting the groups on it would make the graph cyclic.
#[derive(Clone, Debug)]
pub(crate) struct GroupCycle {
    /// Groups on the cycle.
    pub groups: Vec<u32>,
    /// The cycle as nodes: each pair `(node, jump)` where `jump` means reached inside the same unit.
    pub path: Vec<(NodeId, bool)>,
}

/// Each node's delegate partition (0-based, by level) or `None` for CPU.
pub(crate) struct Levels {
    pub partition: Vec<Option<u32>>,
    pub count: u32,
}

pub(crate) fn assign(
    index: &GraphIndex,
    groups: &Groups,
    eligible: &[bool],
) -> Result<Levels, GroupCycle> {
    let n = index.node_count();
    let g = groups.members.len();
    let unit_of = |x: NodeId| -> usize {
        match groups.group(x) {
            Some(k) => k as usize,
            None => g + x.index(),
        }
    };
    let delegate = |x: NodeId| groups.group(x).is_some() || eligible[x.index()];
    let mut pending = vec![0u32; g + n];
    for &x in index.order() {
        for &q in index.predecessors(x) {
            if unit_of(q) != unit_of(x) {
                pending[unit_of(x)] += 1;
            }
        }
    }
    let mut ready: Vec<usize> = (0..g).filter(|&k| pending[k] == 0).collect();
    ready.extend(
        index
            .order()
            .iter()
            .filter(|&&x| groups.group(x).is_none())
            .map(|&x| g + x.index())
            .filter(|&u| pending[u] == 0),
    );
    let mut level = vec![NONE; n];
    let mut done = 0usize;
    let single = |u: usize| [NodeId((u - g) as u32)];
    while let Some(u) = ready.pop() {
        let one;
        let members: &[NodeId] = if u < g {
            &groups.members[u]
        } else {
            one = single(u);
            &one
        };
        let is_delegate = delegate(members[0]);
        let mut r = u32::from(is_delegate);
        for &m in members {
            for &q in index.predecessors(m) {
                if unit_of(q) != u {
                    let step = u32::from(is_delegate && !delegate(q));
                    r = r.max(level[q.index()] + step);
                }
            }
        }
        for &m in members {
            level[m.index()] = r;
        }
        done += members.len();
        for &m in members {
            for &s in index.successors(m) {
                let us = unit_of(s);
                if us != u {
                    pending[us] -= 1;
                    if pending[us] == 0 {
                        ready.push(us);
                    }
                }
            }
        }
    }
    if done < n {
        return Err(find_cycle(index, groups, &level, &unit_of));
    }
    let mut count = 0;
    let partition = index
        .order()
        .iter()
        .fold(vec![None; n], |mut partition, &x| {
            if delegate(x) {
                partition[x.index()] = Some(level[x.index()] - 1);
                count = count.max(level[x.index()]);
            }
            partition
        });
    Ok(Levels { partition, count })
}

/// Walks backwards through units not yet levelled (each has such a predecessor) until one repeats.
fn find_cycle(
    index: &GraphIndex,
    groups: &Groups,
    level: &[u32],
    unit_of: &dyn Fn(NodeId) -> usize,
) -> GroupCycle {
    let g = groups.members.len();
    let start = index
        .order()
        .iter()
        .copied()
        .find(|x| level[x.index()] == NONE)
        .unwrap_or(NodeId(0));
    let mut seen: HashMap<usize, usize> = HashMap::new();
    // Each step: the edge (from, into) by which the walk entered `into`'s unit from `from`'s.
    let mut steps: Vec<(NodeId, NodeId)> = Vec::new();
    let mut unit = unit_of(start);
    while !seen.contains_key(&unit) {
        seen.insert(unit, steps.len());
        let members: Vec<NodeId> = if unit < g {
            groups.members[unit].clone()
        } else {
            vec![NodeId((unit - g) as u32)]
        };
        let edge = members.iter().find_map(|&m| {
            index
                .predecessors(m)
                .iter()
                .find(|&&q| unit_of(q) != unit && level[q.index()] == NONE)
                .map(|&q| (q, m))
        });
        match edge {
            Some((q, m)) => {
                steps.push((q, m));
                unit = unit_of(q);
            }
            None => break,
        }
    }
    let from = seen.get(&unit).copied().unwrap_or(0);
    let mut cycle: Vec<(NodeId, NodeId)> = steps[from..].to_vec();
    cycle.reverse();
    let mut path: Vec<(NodeId, bool)> = Vec::new();
    for &(q, m) in &cycle {
        match path.last() {
            Some(&(last, _)) if last == q => {}
            Some(_) => path.push((q, true)),
            None => path.push((q, false)),
        }
        path.push((m, false));
    }
    // Close the loop back to the first node, inside the unit the cycle started from.
    if let (Some(&(first, _)), Some(&(last, _))) = (path.first(), path.last())
        && first != last
    {
        path.push((first, true));
    }
    let mut on_cycle: Vec<u32> = cycle.iter().filter_map(|&(_, m)| groups.group(m)).collect();
    on_cycle.sort();
    on_cycle.dedup();
    GroupCycle {
        groups: on_cycle,
        path,
    }
}
