//! Convex partitioning of the delegate side. Each group (the hulls of buffers kept as state and of
//! tied groups, merged where they overlap) is contracted into one unit; every other node is a unit of its own.
//! A delegate unit's level r is the largest number of delegate runs on any path ending in it:
//! delegate units of equal r form a convex set, and the number of levels is the largest number of
//! delegate runs on one path, which no convex partitioning can go below. O(V + E).

use crate::analyse::GraphIndex;
use crate::decision::HullOf;
use crate::digraph::{
    Adjacency, AnyOrder, Cycle, DirectedGraph, Predecessors, Successors, place_in_topological_order,
};
use crate::graph::NodeId;

const NONE: u32 = u32::MAX;

/// Groups: disjoint sets of nodes that must share one partition (the hulls of states and of tied
/// groups, merged where they overlap).
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    /// Each node's group, or `NONE`.
    pub group_of: Vec<u32>,
    pub members: Vec<Vec<NodeId>>,
    /// What the hulls that formed each group are of, in the order given.
    pub owners: Vec<Vec<HullOf>>,
}

impl Groups {
    /// Merges the hulls wherever they share a node.
    pub fn from_hulls<'h>(
        node_count: usize,
        hulls: impl IntoIterator<Item = (HullOf, &'h [NodeId])>,
    ) -> Self {
        let hulls: Vec<(HullOf, &[NodeId])> = hulls.into_iter().collect();
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
        // Group ids by root, numbered in order of each group's first hull.
        let mut id_of_root: Vec<u32> = vec![NONE; hulls.len()];
        let mut groups = Groups {
            group_of: vec![NONE; node_count],
            ..Default::default()
        };
        for (h, (owner, _)) in hulls.iter().enumerate() {
            let r = root(&mut parent, h);
            if id_of_root[r] == NONE {
                id_of_root[r] = groups.members.len() as u32;
                groups.members.push(Vec::new());
                groups.owners.push(Vec::new());
            }
            groups.owners[id_of_root[r] as usize].push(*owner);
        }
        for (n, &o) in owner.iter().enumerate() {
            if o != NONE {
                let id = id_of_root[root(&mut parent, o as usize)];
                groups.group_of[n] = id;
                groups.members[id as usize].push(NodeId(n as u32));
            }
        }
        groups
    }

    pub fn group(&self, n: NodeId) -> Option<u32> {
        // Without states (take-over off) there are no groups: spare the walks a read per edge.
        if self.members.is_empty() {
            return None;
        }
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

/// Units of the contracted graph: group k is unit k, any other node x is unit `groups + x`. Unit
/// `groups + x` of a node x in a group is no unit: `nodes` leaves it out and no edge leads to it.
/// An edge between members of two units is an edge between the units.
struct Units<'a> {
    index: &'a GraphIndex,
    groups: &'a Groups,
    /// Every node id, so that a single node is a one-element slice of it.
    ids: Vec<NodeId>,
}

impl<'a> Units<'a> {
    fn new(index: &'a GraphIndex, groups: &'a Groups) -> Self {
        Units {
            index,
            groups,
            ids: (0..index.node_count() as u32).map(NodeId).collect(),
        }
    }

    fn of(&self, x: NodeId) -> usize {
        match self.groups.group(x) {
            Some(k) => k as usize,
            None => self.groups.members.len() + x.index(),
        }
    }

    fn members(&self, u: usize) -> &[NodeId] {
        let g = self.groups.members.len();
        if u < g {
            &self.groups.members[u]
        } else {
            std::slice::from_ref(&self.ids[u - g])
        }
    }

    /// The first edge (q, m) from a member q of `from` into a member m of `into`, in member order,
    /// then input order: the edge Kahn's cycle walk steps back along.
    fn edge(&self, from: usize, into: usize) -> Option<(NodeId, NodeId)> {
        if from == into {
            return None;
        }
        self.members(into).iter().find_map(|&m| {
            (self.index.predecessors(m).iter())
                .find(|&&q| self.of(q) == from)
                .map(|&q| (q, m))
        })
    }
}

impl DirectedGraph for Units<'_> {
    type Node = usize;
    fn node_count(&self) -> usize {
        self.groups.members.len() + self.ids.len()
    }
    /// Units in the topological order of their first member, so that a cycle is looked for from
    /// the first node no order can place.
    fn nodes(&self) -> impl Iterator<Item = usize> {
        let g = self.groups.members.len();
        let mut listed = vec![false; g];
        (self.index.order().iter())
            .map(|&x| self.of(x))
            .filter(move |&u| u >= g || !std::mem::replace(&mut listed[u], true))
    }
}

impl Successors for Units<'_> {
    // Inlined into Kahn's loop, which calls it once per unit placed.
    #[inline]
    fn for_each_successor(&self, u: usize, mut f: impl FnMut(usize)) {
        for &m in self.members(u) {
            for &s in self.index.successors(m) {
                let unit = self.of(s);
                if unit != u {
                    f(unit);
                }
            }
        }
    }
}

impl Predecessors for Units<'_> {
    fn for_each_predecessor(&self, u: usize, mut f: impl FnMut(usize)) {
        for &m in self.members(u) {
            for &q in self.index.predecessors(m) {
                let unit = self.of(q);
                if unit != u {
                    f(unit);
                }
            }
        }
    }
    /// One pass over the nodes: counting unit by unit would also count for the numbers that are
    /// no unit, and visit each grouped node twice.
    fn in_degrees(&self) -> Vec<u32> {
        let mut counts = vec![0; self.node_count()];
        for &x in self.index.order() {
            let u = self.of(x);
            for &q in self.index.predecessors(x) {
                if self.of(q) != u {
                    counts[u] += 1;
                }
            }
        }
        counts
    }
}

/// Levels of the delegate side; `getitems` (each with the op whose output it picks, in
/// topological order) stay at their op's level.
pub(crate) fn assign(
    index: &GraphIndex,
    groups: &Groups,
    eligible: &[bool],
    getitems: &[(NodeId, NodeId)],
) -> Result<Levels, GroupCycle> {
    if groups.members.is_empty() {
        return Ok(assign_ungrouped(index, eligible, getitems));
    }
    assign_contracted(index, groups, eligible, getitems)
}

/// Levels over the units of the contracted graph, in a topological order of them (Kahn's); with
/// none, the cycle Kahn's found.
fn assign_contracted(
    index: &GraphIndex,
    groups: &Groups,
    eligible: &[bool],
    getitems: &[(NodeId, NodeId)],
) -> Result<Levels, GroupCycle> {
    let n = index.node_count();
    let units = Units::new(index, groups);
    let delegate = |x: NodeId| groups.group(x).is_some() || eligible[x.index()];
    // Filled, not zeroed: zeroed memory is mapped lazily, page by page, as the walk first writes it.
    let mut level = vec![NONE; n];
    let placed = place_in_topological_order::<_, AnyOrder>(&units, |u| {
        let members = units.members(u);
        let is_delegate = members.first().is_some_and(|&m| delegate(m));
        let mut r = u32::from(is_delegate);
        for &m in members {
            for &q in index.predecessors(m) {
                if units.of(q) != u {
                    let step = u32::from(is_delegate && !delegate(q));
                    r = r.max(level[q.index()] + step);
                }
            }
        }
        for &m in members {
            level[m.index()] = r;
        }
    });
    placed.map_err(|cycle| group_cycle(&units, &cycle))?;
    let grouped = |x: NodeId| groups.group(x).is_some();
    Ok(sink_source_fed(index, &delegate, &grouped, getitems, level))
}

/// Without state groups every unit is one node and the index's order is already topological, so
/// one pass over it levels the graph (and no cycle can arise). The same levels as `assign`'s.
fn assign_ungrouped(
    index: &GraphIndex,
    eligible: &[bool],
    getitems: &[(NodeId, NodeId)],
) -> Levels {
    let n = index.node_count();
    let mut level = vec![0u32; n];
    for &x in index.order() {
        let is_delegate = eligible[x.index()];
        let mut r = u32::from(is_delegate);
        for &q in index.predecessors(x) {
            let step = u32::from(is_delegate && !eligible[q.index()]);
            r = r.max(level[q.index()] + step);
        }
        level[x.index()] = r;
    }
    let delegate = |x: NodeId| eligible[x.index()];
    sink_source_fed(index, &delegate, &|_| false, getitems, level)
}

/// Levels as computed are the earliest each node can take, which puts every delegated op fed by
/// placeholders alone (a weight's transpose, a mask sliced by the input position) in the first
/// partition, whose outputs then cross into the partitions that read them. Such an op moves to the
/// earliest level among its users instead, as stock's partitioner puts it with its users, and a
/// level left empty is dropped. Every edge still goes to an equal or later level (a later one
/// after a CPU node), so each level stays convex and no level is added.
fn sink_source_fed(
    index: &GraphIndex,
    delegate: &dyn Fn(NodeId) -> bool,
    grouped: &dyn Fn(NodeId) -> bool,
    getitems: &[(NodeId, NodeId)],
    mut level: Vec<u32>,
) -> Levels {
    let n = index.node_count();
    // Fed by sources alone: every input a placeholder (no inputs of its own, not delegated) or an
    // op fed so. Nodes of a state group keep the group's level.
    let mut source_fed = vec![false; n];
    for &x in index.order() {
        let inputs = index.predecessors(x);
        source_fed[x.index()] = delegate(x)
            && !grouped(x)
            && !inputs.is_empty()
            && inputs.iter().all(|&q| {
                source_fed[q.index()] || (!delegate(q) && index.predecessors(q).is_empty())
            });
    }
    // The graph's output (a CPU node nothing reads) bounds nothing: an op only the output reads
    // has nowhere better to go.
    let bounds = |w: NodeId| delegate(w) || !index.successors(w).is_empty();
    for &x in index.order().iter().rev() {
        if source_fed[x.index()]
            && let Some(users) = index
                .successors(x)
                .iter()
                .filter(|&&w| bounds(w))
                .map(|w| level[w.index()])
                .min()
        {
            level[x.index()] = level[x.index()].max(users);
        }
    }
    // A getitem shares its op's level (TUPLE_WHOLE): its op went no later than it.
    for &(getitem, producer) in getitems {
        if source_fed[getitem.index()] && delegate(producer) {
            level[getitem.index()] = level[producer.index()];
        }
    }
    let mut used = vec![false; n + 1];
    for x in (0..n).map(|i| NodeId(i as u32)).filter(|&x| delegate(x)) {
        used[level[x.index()] as usize] = true;
    }
    // Dense partition numbers in level order.
    let mut number = vec![0u32; n + 1];
    let mut count = 0;
    for (l, &u) in used.iter().enumerate() {
        number[l] = count;
        count += u32::from(u);
    }
    let partition = (0..n)
        .map(|i| delegate(NodeId(i as u32)).then(|| number[level[i] as usize]))
        .collect();
    Levels { partition, count }
}

/// The cycle among units as the nodes it passes through: each step from one unit into the next is
/// the first edge between their members, and a step within a unit is a jump.
fn group_cycle(units: &Units, cycle: &Cycle) -> GroupCycle {
    let on_cycle = &cycle.0;
    // Steps as (from, into), starting with the one that closes the cycle into its first unit.
    let steps: Vec<(NodeId, NodeId)> = (0..on_cycle.len())
        .filter_map(|i| {
            let from = on_cycle[(i + on_cycle.len() - 1) % on_cycle.len()];
            units.edge(from, on_cycle[i])
        })
        .collect();
    let mut path: Vec<(NodeId, bool)> = Vec::new();
    for &(q, m) in &steps {
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
    let mut groups: Vec<u32> = steps
        .iter()
        .filter_map(|&(_, m)| units.groups.group(m))
        .collect();
    groups.sort();
    groups.dedup();
    GroupCycle { groups, path }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::parse_graph;

    /// The one-pass leveling agrees with Kahn's over the contracted graph when there are no groups,
    /// on a real LLM graph with every support pattern a small generator gives.
    #[test]
    fn one_pass_levels_equal_kahns_without_groups() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/data/executorch-1.5.1/qwen3_5_0_8b_takeover_off_ios18.json"
        );
        let text = std::fs::read_to_string(path).expect("data/ is checked in");
        let graph = parse_graph(&text).expect("imports");
        let index = GraphIndex::new(&graph);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for percent_eligible in [0u64, 10, 50, 90, 100] {
            let eligible: Vec<bool> = (0..graph.len())
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state % 100 < percent_eligible
                })
                .collect();
            let groups = Groups::from_hulls(graph.len(), std::iter::empty());
            let one_pass = assign_ungrouped(&index, &eligible, &[]);
            let Ok(kahn) = assign_contracted(&index, &groups, &eligible, &[]) else {
                panic!("no groups, no cycle");
            };
            assert_eq!(one_pass.count, kahn.count, "{percent_eligible}% eligible");
            assert_eq!(
                one_pass.partition, kahn.partition,
                "{percent_eligible}% eligible"
            );
        }
    }
}
