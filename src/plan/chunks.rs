//! Chunks: cut each convex delegate partition into consecutive pieces so that each keeps within
//! the budgets (`max_weight_bytes`, `max_ops`) and no piece spans a cut the user asked for.
//!
//! Each partition is cut along the graph's topological order: a piece is the partition's nodes
//! between two positions. Such a piece is convex (a path between two of its nodes stays in the
//! partition, which is convex, and its positions lie between theirs), and the pieces together
//! keep the quotient graph acyclic (an edge never goes back in the order). So no descendant sets
//! are needed: one pass over each partition's ops in order. A kept state's hull and a tuple with
//! its `getitem`s are never cut: the positions they span form one unit.
//!
//! Fewest pieces first: each piece takes units while they fit (greedy, which is optimal for
//! consecutive pieces when a part of a piece that fits also fits). Then each cut slides, within
//! the places that keep the count, to where the fewest bytes cross it.

use super::cut_patterns::AskedCut;
use super::levels::Levels;
use crate::analyse::{Analysis, DirectedGraph};
use crate::decision::{Cut, CutReason};
use crate::graph::{Graph, NodeId, OpKind};
use crate::options::Options;

/// What cannot be chunked as asked; the caller moves it out of the delegates and plans again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unchunkable {
    /// Kept states whose hulls (one unit) alone exceed a budget.
    Hull {
        buffers: Vec<usize>,
        weight_bytes: u64,
        ops: u64,
    },
    /// An op, or a tuple with its `getitem`s, alone over a budget.
    Ops {
        nodes: Vec<NodeId>,
        weight_bytes: u64,
        ops: u64,
    },
    /// A cut asked for runs through these states' hull before node `before`.
    CutThroughHull {
        buffers: Vec<usize>,
        pattern: String,
        before: NodeId,
    },
}

pub(crate) struct Chunked {
    pub levels: Levels,
    pub cuts: Vec<Cut>,
}

/// The budgets of the options; `u64::MAX` where none is asked.
#[derive(Clone, Copy)]
struct Budgets {
    weight: u64,
    ops: u64,
    /// Whether constants count at all: only those tagged into delegates are baked into them.
    constants_inside: bool,
}

/// Cuts `levels`' partitions as the options ask. `hulls` are the kept states' hulls with their
/// buffer indices. Returns everything that cannot be, all at once, so that one more planning
/// round moves it all.
pub(crate) fn chunk(
    graph: &Graph,
    analysis: &Analysis,
    options: &Options,
    levels: Levels,
    hulls: &[(usize, &[NodeId])],
    asked: &[AskedCut],
) -> Result<Chunked, Vec<Unchunkable>> {
    if options.max_weight_bytes.is_none() && options.max_ops.is_none() && asked.is_empty() {
        return Ok(Chunked {
            levels,
            cuts: Vec::new(),
        });
    }
    let budgets = Budgets {
        weight: options.max_weight_bytes.unwrap_or(u64::MAX),
        ops: options.max_ops.unwrap_or(u64::MAX),
        constants_inside: options.take_over_constant_data,
    };
    let index = &analysis.index;
    let count = levels.count as usize;
    // Each partition's ops in topological order, all partitions in one array.
    let mut start = vec![0usize; count + 1];
    for &n in index.order() {
        if let (Some(p), OpKind::CallFunction) = (levels.partition[n.index()], graph.op(n)) {
            start[p as usize + 1] += 1;
        }
    }
    for p in 0..count {
        start[p + 1] += start[p];
    }
    let mut ops = vec![NodeId(0); start[count]];
    let mut slot_of = vec![u32::MAX; graph.len()];
    let mut fill = start.clone();
    for &n in index.order() {
        if let (Some(p), OpKind::CallFunction) = (levels.partition[n.index()], graph.op(n)) {
            let s = &mut fill[p as usize];
            ops[*s] = n;
            slot_of[n.index()] = *s as u32;
            *s += 1;
        }
    }
    // glued[s]: slot s stays in the piece of slot s - 1 (inside a hull's or a tuple's span).
    let mut depth = vec![0i32; ops.len() + 1];
    let mut spans: Vec<(usize, usize, Option<usize>)> = Vec::new();
    for &(buffer, hull) in hulls {
        let slots = hull
            .iter()
            .map(|n| slot_of[n.index()])
            .filter(|&s| s != u32::MAX);
        if let (Some(lo), Some(hi)) = (slots.clone().min(), slots.max()) {
            spans.push((lo as usize, hi as usize, Some(buffer)));
        }
    }
    for &(getitem, producer) in &analysis.getitems {
        let (g, p) = (slot_of[getitem.index()], slot_of[producer.index()]);
        let same_partition =
            levels.partition[getitem.index()] == levels.partition[producer.index()];
        if g != u32::MAX && p != u32::MAX && same_partition {
            spans.push((p.min(g) as usize, p.max(g) as usize, None));
        }
    }
    for &(lo, hi, _) in &spans {
        depth[lo + 1] += 1;
        depth[hi + 1] -= 1;
    }
    let mut glued = vec![false; ops.len()];
    let mut open = 0;
    for (s, g) in glued.iter_mut().enumerate() {
        open += depth[s];
        *g = open > 0;
    }
    // Asked cuts: before slot s when one lies after the previous op of its partition.
    let mut asked_before: Vec<Option<&AskedCut>> = vec![None; ops.len()];
    if !asked.is_empty() {
        let mut sorted: Vec<&AskedCut> = asked.iter().collect();
        sorted.sort_by_key(|a| a.position);
        for p in 0..count {
            let (from, to) = (start[p], start[p + 1]);
            for s in from + 1..to {
                let (prev, here) = (index.position(ops[s - 1]), index.position(ops[s]));
                let first = sorted.partition_point(|a| a.position <= prev);
                if let Some(a) = sorted.get(first).filter(|a| a.position <= here) {
                    asked_before[s] = Some(a);
                }
            }
        }
    }
    let mut problems = Vec::new();
    for (s, asked) in asked_before.iter().enumerate() {
        if let (Some(a), true) = (asked, glued[s]) {
            let buffers: Vec<usize> = spans
                .iter()
                .filter(|&&(lo, hi, _)| lo < s && s <= hi)
                .filter_map(|&(_, _, b)| b)
                .collect();
            // A tuple's span is never cut: the cut goes to its end. A hull's refuses the state.
            if !buffers.is_empty() {
                problems.push(Unchunkable::CutThroughHull {
                    buffers,
                    pattern: a.pattern.clone(),
                    before: ops[s],
                });
            }
        }
    }
    let mut pieces = Pieces {
        graph,
        analysis,
        budgets,
        ops: &ops,
        in_piece: vec![0; graph.len()],
        stamp: 0,
        fresh: Vec::new(),
    };
    let mut piece_of_slot = vec![0u32; ops.len()];
    let mut pieces_before = vec![0u32; count + 1];
    let mut cuts = Vec::new();
    for p in 0..count {
        let units = units(start[p], start[p + 1], &glued, &asked_before);
        let crossing = crossing_bytes(graph, analysis, &ops, &units);
        let planned = pieces.cut(&units, &crossing);
        for (u, unit) in units.iter().enumerate() {
            if unit.over_budget(&budgets, planned.unit_weight[u]) {
                let nodes = &ops[unit.from..unit.to];
                let buffers: Vec<usize> = spans
                    .iter()
                    .filter(|&&(lo, hi, _)| unit.from <= lo && hi < unit.to)
                    .filter_map(|&(_, _, b)| b)
                    .collect();
                let (weight_bytes, ops) = (planned.unit_weight[u], unit.ops());
                problems.push(if buffers.is_empty() {
                    Unchunkable::Ops {
                        nodes: nodes.to_vec(),
                        weight_bytes,
                        ops,
                    }
                } else {
                    Unchunkable::Hull {
                        buffers,
                        weight_bytes,
                        ops,
                    }
                });
            }
        }
        let mut piece = 0u32;
        for (u, unit) in units.iter().enumerate() {
            if let Some((reason, crossing_bytes)) = planned.cut_before[u].clone() {
                piece += 1;
                cuts.push(Cut {
                    after: ops[unit.from - 1],
                    before: ops[unit.from],
                    reason,
                    crossing_bytes,
                });
            }
            piece_of_slot[unit.from..unit.to].fill(piece);
        }
        pieces_before[p + 1] = pieces_before[p] + piece + 1;
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // New ids: partition p's pieces follow one another, partitions keep their order.
    let mut partition = levels.partition;
    for (s, &n) in ops.iter().enumerate() {
        if let Some(p) = partition[n.index()] {
            partition[n.index()] = Some(pieces_before[p as usize] + piece_of_slot[s]);
        }
    }
    // What else is in a partition goes with its state's ops (a placeholder whose writer does not
    // read it has no user there), or else with its first user there.
    let mut placed = vec![false; graph.len()];
    for &(_, hull) in hulls {
        let piece = hull
            .iter()
            .find(|n| slot_of[n.index()] != u32::MAX)
            .and_then(|n| partition[n.index()]);
        for &n in hull {
            if let (Some(piece), u32::MAX) = (piece, slot_of[n.index()]) {
                partition[n.index()] = Some(piece);
                placed[n.index()] = true;
            }
        }
    }
    for n in graph.ids() {
        if placed[n.index()] || slot_of[n.index()] != u32::MAX {
            continue;
        }
        if let Some(p) = partition[n.index()] {
            let pieces = pieces_before[p as usize]..pieces_before[p as usize + 1];
            let first = pieces.start;
            let with_user = index
                .successors(n)
                .iter()
                .filter(|u| slot_of[u.index()] != u32::MAX)
                .filter_map(|u| partition[u.index()])
                .filter(|q| pieces.contains(q))
                .min();
            partition[n.index()] = Some(with_user.unwrap_or(first));
        }
    }
    Ok(Chunked {
        levels: Levels {
            partition,
            count: pieces_before[count],
        },
        cuts,
    })
}

/// Consecutive slots that no cut may part.
struct Unit<'a> {
    from: usize,
    to: usize,
    /// A cut asked for before this unit (or inside the tuple before it, moved here).
    asked: Option<&'a AskedCut>,
}

impl Unit<'_> {
    fn ops(&self) -> u64 {
        (self.to - self.from) as u64
    }
    fn over_budget(&self, budgets: &Budgets, weight: u64) -> bool {
        self.ops() > budgets.ops || weight > budgets.weight
    }
}

/// The units of slots `from..to`: a unit starts wherever a slot is not glued to the one before.
/// A cut asked for inside a glued span waits for the span's end (a hull's was reported).
fn units<'a>(
    from: usize,
    to: usize,
    glued: &[bool],
    asked_before: &[Option<&'a AskedCut>],
) -> Vec<Unit<'a>> {
    let mut units: Vec<Unit<'a>> = Vec::new();
    let mut pending = None;
    for s in from..to {
        pending = pending.or(asked_before[s]);
        match units.last_mut() {
            Some(last) if glued[s] => last.to = s + 1,
            _ => units.push(Unit {
                from: s,
                to: s + 1,
                asked: pending.take(),
            }),
        }
    }
    units
}

/// Where the pieces of one partition begin, and what each unit alone weighs.
struct Planned {
    /// Per unit: the reason for a cut before it, and the bytes crossing there, if one is there.
    cut_before: Vec<Option<(CutReason, u64)>>,
    unit_weight: Vec<u64>,
}

/// A piece being grown one unit at a time, from either end.
struct Growing {
    stamp: u32,
    weight: u64,
    ops: u64,
}

struct Pieces<'a> {
    graph: &'a Graph,
    analysis: &'a Analysis,
    budgets: Budgets,
    ops: &'a [NodeId],
    /// Per constant: the stamp of the piece that last counted it (0: none).
    in_piece: Vec<u32>,
    stamp: u32,
    /// Constants the unit being taken marked, to unmark if it does not fit.
    fresh: Vec<NodeId>,
}

impl Pieces<'_> {
    fn start(&mut self) -> Growing {
        self.stamp += 1;
        Growing {
            stamp: self.stamp,
            weight: 0,
            ops: 0,
        }
    }

    /// Takes `unit` into `piece` if it fits, or says which budget it would break and how far,
    /// leaving the piece as it was. A unit always fits an empty piece: one over budget alone is
    /// reported by the caller.
    fn take(&mut self, piece: &mut Growing, unit: &Unit) -> Result<(), CutReason> {
        let mut added = 0u64;
        self.fresh.clear();
        if self.budgets.constants_inside {
            for &n in &self.ops[unit.from..unit.to] {
                for &q in self.analysis.index.predecessors(n) {
                    if self.graph.role(q).is_constant_data()
                        && self.in_piece[q.index()] != piece.stamp
                    {
                        self.in_piece[q.index()] = piece.stamp;
                        self.fresh.push(q);
                        added =
                            added.saturating_add(self.graph.value_bytes[q.index()].unwrap_or(0));
                    }
                }
            }
        }
        let (ops, weight) = (piece.ops + unit.ops(), piece.weight.saturating_add(added));
        let reached = self.ops[unit.from];
        let refused = match piece.ops {
            0 => None,
            _ if ops > self.budgets.ops => Some(CutReason::OpBudget {
                reached,
                would_be: ops,
            }),
            _ if weight > self.budgets.weight => Some(CutReason::WeightBudget {
                reached,
                would_be: weight,
            }),
            _ => None,
        };
        match refused {
            None => {
                (piece.ops, piece.weight) = (ops, weight);
                Ok(())
            }
            Some(reason) => {
                for &q in &self.fresh {
                    self.in_piece[q.index()] = 0;
                }
                Err(reason)
            }
        }
    }

    /// What `unit` weighs alone.
    fn weight_alone(&mut self, unit: &Unit) -> u64 {
        let mut piece = self.start();
        let _ = self.take(&mut piece, unit);
        piece.weight
    }

    /// The largest `r` such that units `from..r` fit one piece, and why unit `r` did not.
    fn reach(&mut self, units: &[Unit], from: usize, to: usize) -> (usize, Option<CutReason>) {
        let mut piece = self.start();
        for (u, unit) in units.iter().enumerate().take(to).skip(from) {
            if let Err(why) = self.take(&mut piece, unit) {
                return (u, Some(why));
            }
        }
        (to, None)
    }

    /// The smallest `q >= from` such that units `q..to` fit one piece.
    fn reach_back(&mut self, units: &[Unit], from: usize, to: usize) -> usize {
        let mut piece = self.start();
        for u in (from..to).rev() {
            if self.take(&mut piece, &units[u]).is_err() {
                return u + 1;
            }
        }
        from
    }

    /// The fewest pieces, each within budget, cut where an asked cut is and elsewhere where the
    /// fewest bytes cross (`crossing[b]`: bytes crossing a cut before unit `b`). Between two asked
    /// cuts, pieces grown greedily from the back give each cut's earliest place that keeps the
    /// count; each cut in turn then takes, between that place and as far as the piece before it
    /// reaches, the place where the fewest bytes cross (the latest among equals).
    fn cut(&mut self, units: &[Unit], crossing: &[u64]) -> Planned {
        let m = units.len();
        let unit_weight: Vec<u64> = units.iter().map(|u| self.weight_alone(u)).collect();
        let mut cut_before = vec![None; m];
        let mut run_starts: Vec<usize> = (1..m).filter(|&u| units[u].asked.is_some()).collect();
        run_starts.insert(0, 0);
        for (r, &start) in run_starts.iter().enumerate() {
            let end = run_starts.get(r + 1).copied().unwrap_or(m);
            if let Some(a) = units[start].asked.filter(|_| start > 0) {
                let reason = CutReason::Asked {
                    pattern: a.pattern.clone(),
                    after: a.after,
                };
                cut_before[start] = Some((reason, crossing[start]));
            }
            // Earliest places, from the back: earliest[i] is where piece i can start at the earliest.
            let mut earliest = vec![end];
            while let Some(&q) = earliest.last().filter(|&&q| q > start) {
                earliest.push(self.reach_back(units, start, q));
            }
            earliest.reverse();
            let mut from = start;
            for &lowest in &earliest[1..earliest.len() - 1] {
                let (reach, why) = self.reach(units, from, end);
                let Some(why) = why else { break };
                let lowest = lowest.max(from + 1);
                let best = (lowest..=reach.max(lowest))
                    .rev()
                    .min_by_key(|&b| crossing[b])
                    .unwrap_or(reach);
                cut_before[best] = Some((why, crossing[best]));
                from = best;
            }
        }
        Planned {
            cut_before,
            unit_weight,
        }
    }
}

/// Per unit boundary `b` (a cut before unit `b`), the bytes that would cross it: each value made
/// in the partition and read there after the cut, and each value from outside (constants aside,
/// which are weights) read on both sides of it, once. Sizes unknown count nothing.
fn crossing_bytes(graph: &Graph, analysis: &Analysis, ops: &[NodeId], units: &[Unit]) -> Vec<u64> {
    let index = &analysis.index;
    let mut unit_of: hashbrown::HashMap<NodeId, usize> = hashbrown::HashMap::new();
    for (u, unit) in units.iter().enumerate() {
        for &n in &ops[unit.from..unit.to] {
            unit_of.insert(n, u);
        }
    }
    // Per value read: the first and the last unit reading it.
    let mut read: hashbrown::HashMap<NodeId, (usize, usize)> = hashbrown::HashMap::new();
    for (u, unit) in units.iter().enumerate() {
        for &n in &ops[unit.from..unit.to] {
            for &q in index.predecessors(n) {
                if graph.role(q).is_constant_data() {
                    continue;
                }
                read.entry(q).and_modify(|r| r.1 = u).or_insert((u, u));
            }
        }
    }
    let mut delta = vec![0i128; units.len() + 2];
    for (q, (first, last)) in read {
        let from = unit_of.get(&q).copied().unwrap_or(first);
        if last > from {
            let bytes = i128::from(graph.value_bytes[q.index()].unwrap_or(0));
            delta[from + 1] += bytes;
            delta[last + 1] -= bytes;
        }
    }
    let mut running = 0i128;
    (0..=units.len())
        .map(|b| {
            running += delta[b];
            running.max(0) as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::analyse;
    use crate::import::parse_graph;
    use crate::plan::{PlanRequest, Strategy, draft};
    use crate::synthetic::BridgeBuilder;

    /// Three blocks, each with a 4x4 float32 weight (64 bytes); block 1 also updates a cache:
    /// `old` reads the cache's old value and `upd` writes it, so the state's hull is those two ops.
    /// All supported: one partition without budgets.
    fn blocks() -> crate::graph::Graph {
        let mut b = BridgeBuilder::new();
        b.user_input("x", &[4, 4])
            .buffer("b_cache", "cache", &[4, 4]);
        for i in 0..3 {
            // As torch.export records a lifted constant: with the module that made it, although
            // it comes first in the order.
            b.parameter(&format!("w{i}"), &[4, 4])
                .module(&format!("layers.{i}.proj"));
        }
        let mut last = "x".to_string();
        for i in 0..3 {
            let (mm, add) = (format!("mm{i}"), format!("add{i}"));
            b.op(&mm, "aten.mm.default", &[&last, &format!("w{i}")], true)
                .module(&format!("layers.{i}.proj"));
            if i == 1 {
                b.op("old", "aten.add.Tensor", &["b_cache", &mm], true)
                    .module("layers.1.cache")
                    .op("upd", "aten.index_copy.default", &["b_cache", "old"], true)
                    .module("layers.1.cache")
                    .mutates("upd", "cache")
                    .op(&add, "aten.add.Tensor", &[&mm, "upd"], true);
            } else {
                b.op(&add, "aten.add.Tensor", &[&mm, &mm], true);
            }
            b.module(&format!("layers.{i}"));
            last = add;
        }
        b.option("minimum_deployment_target", "iOS18".into());
        b.output(&[&last]);
        parse_graph(&b.to_json()).expect("imports")
    }

    const OPS: [&str; 8] = ["mm0", "add0", "mm1", "old", "upd", "add1", "mm2", "add2"];

    fn tags_with(g: &crate::graph::Graph, options: impl FnOnce(&mut Options)) -> Vec<String> {
        let mut request = PlanRequest::new(g);
        options(&mut request.options);
        let p = draft(g, &analyse(g), &request).expect("plans");
        assert!(
            p.buffers.iter().all(|b| b.strategy == Strategy::State),
            "the state is kept whole"
        );
        OPS.iter()
            .map(|n| {
                p.tagging
                    .tag(g.find(n).expect("node"))
                    .unwrap_or("cpu")
                    .to_string()
            })
            .collect()
    }

    fn tags(spec: [u8; 8]) -> Vec<String> {
        spec.iter().map(|t| format!("tag{t}")).collect()
    }

    #[test]
    fn an_op_budget_cuts_greedily_and_never_inside_a_state_hull() {
        let g = blocks();
        assert_eq!(tags_with(&g, |_| {}), tags([0; 8]));
        assert_eq!(
            tags_with(&g, |o| o.max_ops = Some(3)),
            tags([0, 0, 0, 1, 1, 1, 2, 2])
        );
        // Four would fit old but not upd: the hull moves whole to the next partition.
        assert_eq!(
            tags_with(&g, |o| o.max_ops = Some(4)),
            tags([0, 0, 0, 1, 1, 1, 1, 2])
        );
    }

    #[test]
    fn a_budget_cut_slides_to_where_the_fewest_bytes_cross() {
        // A chain u0..u4 where u2's value is large (64x64 float32) and the others small.
        let mut b = BridgeBuilder::new();
        b.user_input("x", &[2]);
        let mut last = "x".to_string();
        for i in 0..5 {
            let name = format!("u{i}");
            b.op(&name, "aten.neg.default", &[&last], true);
            if i == 2 {
                b.meta(&[64, 64], "torch.float32");
            } else {
                b.meta(&[2], "torch.float32");
            }
            last = name;
        }
        b.option("minimum_deployment_target", "iOS18".into());
        b.output(&[&last]);
        let g = parse_graph(&b.to_json()).expect("imports");
        let mut request = PlanRequest::new(&g);
        request.options.max_ops = Some(3);
        let p = draft(&g, &analyse(&g), &request).expect("plans");
        let tags: Vec<_> = (0..5)
            .map(|i| p.tagging.tag(g.find(&format!("u{i}")).expect("node")))
            .collect();
        // Greedy alone would cut after u2 and carry its 16 KiB across; two pieces either way.
        assert_eq!(
            tags,
            [
                Some("tag0"),
                Some("tag0"),
                Some("tag1"),
                Some("tag1"),
                Some("tag1")
            ]
        );
        assert_eq!(p.cuts.len(), 1);
        assert_eq!(p.cuts[0].crossing_bytes, 8);
        assert!(matches!(
            p.cuts[0].reason,
            CutReason::OpBudget { reached, would_be: 4 } if g.name(reached) == "u3"
        ));
    }

    #[test]
    fn a_weight_budget_counts_each_weight_once_per_partition() {
        let g = blocks();
        // 64 bytes a block: two blocks fit in 128.
        assert_eq!(
            tags_with(&g, |o| o.max_weight_bytes = Some(128)),
            tags([0, 0, 0, 0, 0, 0, 1, 1])
        );
    }

    #[test]
    fn cuts_after_each_block_by_module_path() {
        let g = blocks();
        assert_eq!(
            tags_with(&g, |o| o.cut_after = vec!["layers.*".into()]),
            tags([0, 0, 1, 1, 1, 1, 2, 2])
        );
        assert_eq!(
            tags_with(&g, |o| o.cut_before = vec!["layers.2".into()]),
            tags([0, 0, 0, 0, 0, 0, 1, 1])
        );
        assert_eq!(
            tags_with(&g, |o| o.cut_after = vec!["mm1".into()]),
            tags([0, 0, 0, 1, 1, 1, 1, 1])
        );
    }

    #[test]
    fn a_cut_through_a_state_hull_refuses_the_state() {
        let g = blocks();
        let mut request = PlanRequest::new(&g);
        request.options.cut_after = vec!["old".into()];
        let p = draft(&g, &analyse(&g), &request).expect("plans");
        assert_ne!(p.buffers[0].strategy, Strategy::State);
        let reason = format!("{:?}", p.buffers[0].reason);
        assert!(reason.contains("CutThrough { pattern: \"old\""), "{reason}");
    }

    #[test]
    fn a_hull_over_budget_refuses_the_state_and_an_op_over_budget_runs_on_cpu() {
        let g = blocks();
        let mut request = PlanRequest::new(&g);
        request.options.max_ops = Some(1);
        let p = draft(&g, &analyse(&g), &request).expect("plans");
        assert_ne!(p.buffers[0].strategy, Strategy::State);
        let text = format!("{:?}", p.buffers[0]);
        assert!(
            text.contains("OverBudget { weight_bytes: 0, ops: 2 }"),
            "{text}"
        );
        let mut request = PlanRequest::new(&g);
        request.options.max_weight_bytes = Some(63);
        let p = draft(&g, &analyse(&g), &request).expect("plans");
        for mm in ["mm0", "mm1", "mm2"] {
            assert_eq!(p.tagging.tag(g.find(mm).expect("node")), None, "{mm}");
        }
        assert!(
            p.decisions
                .iter()
                .any(|d| matches!(d, crate::decision::Decision::OverBudgetOnCpu { .. }))
        );
    }
}
