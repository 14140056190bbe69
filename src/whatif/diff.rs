//! How one plan differs from another, partitions matched by content rather than by tag name: what a
//! what-if answer reports beside its plan.

use crate::graph::{Graph, NodeId, OpKind};
use crate::human::natural_cmp;
use crate::outcome::Plan;
use std::collections::BTreeSet;

/// How one plan differs from another, partitions matched by content rather than by tag name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanDiff {
    /// New partitions sharing no node with any old one.
    pub partitions_added: Vec<String>,
    /// Old partitions sharing no node with any new one.
    pub partitions_removed: Vec<String>,
    /// (old tag, new tag) pairs where one is the other's counterpart (the partition it shares most
    /// nodes with) and their nodes differ: splits and merges list every part.
    pub partitions_changed: Vec<(String, String)>,
    /// `call_function` nodes whose place changed: to or from CPU, or into a partition that is not
    /// the counterpart of the one they were in.
    pub nodes_moved: Vec<NodeMove>,
    pub states_gained: Vec<String>,
    pub states_lost: Vec<String>,
    /// New minus old: delegate calls (partitions), delegated nodes, boundary bytes.
    pub delegate_calls: i64,
    pub delegated_nodes: i64,
    pub boundary_bytes: i64,
    /// New minus old estimated µs per step, both weighed by the new plan's cost constants.
    pub estimate_us: f64,
}

/// One node's move, partitions by number in the old and the new plan; `None` is CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeMove {
    pub node: NodeId,
    pub from: Option<u32>,
    pub to: Option<u32>,
}

impl NodeMove {
    /// The tags moved between, `cpu` for CPU.
    pub fn tags<'a>(&self, old: &'a Plan, new: &'a Plan) -> (&'a str, &'a str) {
        let tag = |p: &'a Plan, t: Option<u32>| t.map_or("cpu", |t| p.draft.tagging.name(t));
        (tag(old, self.from), tag(new, self.to))
    }
}

impl PlanDiff {
    pub fn is_empty(&self) -> bool {
        *self == PlanDiff::default()
    }
}

/// How `new` differs from `old`, both plans of `graph`. Linear in the graph, no per-node allocation.
pub fn diff(graph: &Graph, old: &Plan, new: &Plan) -> PlanDiff {
    let ops = || graph.ids().filter(|&n| graph.op(n) == OpKind::CallFunction);
    let (mut old_size, mut new_size) = (
        vec![0usize; old.draft.tagging.partition_count()],
        vec![0usize; new.draft.tagging.partition_count()],
    );
    // Nodes each (old, new) pair of partitions shares, in one pass. Neighbouring nodes mostly
    // share their pair, so runs are counted before touching the map.
    let mut shared: hashbrown::HashMap<(u32, u32), usize> = hashbrown::HashMap::new();
    let mut run: Option<((u32, u32), usize)> = None;
    for n in ops() {
        let (a, b) = (
            old.draft.tagging.partition(n),
            new.draft.tagging.partition(n),
        );
        if let Some(a) = a {
            old_size[a as usize] += 1;
        }
        if let Some(b) = b {
            new_size[b as usize] += 1;
        }
        if let (Some(a), Some(b)) = (a, b) {
            match &mut run {
                Some((pair, count)) if *pair == (a, b) => *count += 1,
                _ => {
                    if let Some((pair, count)) = run.replace(((a, b), 1)) {
                        *shared.entry(pair).or_default() += count;
                    }
                }
            }
        }
    }
    if let Some((pair, count)) = run {
        *shared.entry(pair).or_default() += count;
    }
    // Each partition's counterpart: the partition of the other plan it shares most nodes with,
    // the lowest-numbered on a tie.
    let mut old_to_new: Vec<Option<(usize, u32)>> = vec![None; old_size.len()];
    let mut new_to_old: Vec<Option<(usize, u32)>> = vec![None; new_size.len()];
    let better = |best: &mut Option<(usize, u32)>, count: usize, other: u32| {
        if best.is_none_or(|(c, o)| count > c || (count == c && other < o)) {
            *best = Some((count, other));
        }
    };
    for (&(a, b), &count) in &shared {
        better(&mut old_to_new[a as usize], count, b);
        better(&mut new_to_old[b as usize], count, a);
    }
    let old_to_new: Vec<Option<u32>> = old_to_new.iter().map(|c| c.map(|(_, p)| p)).collect();
    let new_to_old: Vec<Option<u32>> = new_to_old.iter().map(|c| c.map(|(_, p)| p)).collect();
    let mut d = PlanDiff::default();
    for (t, image) in new_to_old.iter().enumerate() {
        if image.is_none() {
            d.partitions_added
                .push(new.draft.tagging.name(t as u32).to_string());
        }
    }
    for (o, image) in old_to_new.iter().enumerate() {
        if image.is_none() {
            d.partitions_removed
                .push(old.draft.tagging.name(o as u32).to_string());
        }
    }
    // A pair changed when either side is the other's counterpart and they do not hold exactly the
    // same nodes: a split lists each new part against the old partition, a merge each old part.
    let mut changed: BTreeSet<(u32, u32)> = BTreeSet::new();
    for (o, image) in old_to_new.iter().enumerate() {
        if let Some(t) = image {
            changed.insert((o as u32, *t));
        }
    }
    for (t, image) in new_to_old.iter().enumerate() {
        if let Some(o) = image {
            changed.insert((*o, t as u32));
        }
    }
    for (o, t) in changed {
        let same = shared.get(&(o, t)).copied().unwrap_or(0);
        if same != old_size[o as usize] || same != new_size[t as usize] {
            d.partitions_changed.push((
                old.draft.tagging.name(o).to_string(),
                new.draft.tagging.name(t).to_string(),
            ));
        }
    }
    for n in ops() {
        let (was, is) = (
            old.draft.tagging.partition(n),
            new.draft.tagging.partition(n),
        );
        let moved = match (was, is) {
            (None, None) => false,
            (Some(a), Some(b)) => old_to_new[a as usize] != Some(b),
            _ => true,
        };
        if moved {
            d.nodes_moved.push(NodeMove {
                node: n,
                from: was,
                to: is,
            });
        }
    }
    let states = |p: &Plan| -> BTreeSet<String> {
        p.draft
            .measure
            .partitions
            .iter()
            .flat_map(|s| s.states.iter().cloned())
            .collect()
    };
    let (old_states, new_states) = (states(old), states(new));
    d.states_gained = new_states.difference(&old_states).cloned().collect();
    d.states_lost = old_states.difference(&new_states).cloned().collect();
    // As a person lists them: layers.2 before layers.10.
    d.states_gained.sort_by(|a, b| natural_cmp(a, b));
    d.states_lost.sort_by(|a, b| natural_cmp(a, b));
    // In i128 and clamped: byte totals saturate at u64::MAX on absurd shapes.
    let change = |old: u64, new: u64| {
        (i128::from(new) - i128::from(old)).clamp(i64::MIN.into(), i64::MAX.into()) as i64
    };
    d.delegate_calls = change(
        old.draft.measure.partitions.len() as u64,
        new.draft.measure.partitions.len() as u64,
    );
    d.delegated_nodes = change(
        old.draft.measure.delegated_nodes as u64,
        new.draft.measure.delegated_nodes as u64,
    );
    d.boundary_bytes = change(
        old.draft.measure.boundary_bytes(),
        new.draft.measure.boundary_bytes(),
    );
    d.estimate_us = new.draft.estimate.total_us - old.draft.estimate.weighed(&new.draft.cost);
    d
}
