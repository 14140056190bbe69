//! Chunks: cut each convex delegate partition into consecutive pieces so that each keeps within
//! the budgets (`max_weight_bytes`, `max_ops`) and no piece spans a cut the user asked for.
//!
//! Each partition is cut along the graph's topological order: a piece is the partition's nodes
//! between two positions. Such a piece is convex (a path between two of its nodes stays in the
//! partition, which is convex, and its positions lie between theirs), and the pieces together
//! keep the quotient graph acyclic (an edge never goes back in the order). So no descendant sets
//! are needed: one pass over each partition's ops in order. A kept state's hull and a tuple with
//! its `getitem`s are never cut: the positions they span form one unit. How each partition's units
//! are cut into pieces is `pieces.rs`'s.

use super::cut_patterns::AskedCut;
use super::levels::Levels;
use super::pieces::{Budgets, Pieces, crossing_bytes, units};
use crate::analyse::{Adjacency, Analysis};
use crate::decision::{Cut, HullOf};
use crate::graph::{Graph, NodeId, OpKind};
use crate::options::Options;

/// What cannot be chunked as asked; the caller moves it out of the delegates and plans again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unchunkable {
    /// Kept hulls (of states, or of tied groups) that, one unit, alone exceed a budget.
    Hull {
        owners: Vec<HullOf>,
        weight_bytes: u64,
        ops: u64,
    },
    /// An op, or a tuple with its `getitem`s, alone over a budget.
    Ops {
        nodes: Vec<NodeId>,
        weight_bytes: u64,
        ops: u64,
    },
    /// A cut asked for runs through these hulls before node `before`.
    CutThroughHull {
        owners: Vec<HullOf>,
        pattern: String,
        before: NodeId,
    },
}

pub(crate) struct Chunked {
    pub levels: Levels,
    pub cuts: Vec<Cut>,
}

/// Cuts `levels`' partitions as the options ask. `hulls` are the hulls no cut may part (kept states'
/// and tied groups'), with what each is of. Returns everything that cannot be, all at once, so that one more planning
/// round moves it all.
pub(crate) fn chunk(
    graph: &Graph,
    analysis: &Analysis,
    options: &Options,
    levels: Levels,
    hulls: &[(HullOf, &[NodeId])],
    asked: &[AskedCut],
) -> Result<Chunked, Vec<Unchunkable>> {
    if options.max_weight_bytes.is_none() && options.max_ops.is_none() && asked.is_empty() {
        return Ok(Chunked {
            levels,
            cuts: Vec::new(),
        });
    }
    let slots = Slots::of(graph, analysis, &levels);
    let glue = Glue::of(analysis, &levels, hulls, &slots);
    let asked_before = asked_before(analysis, &slots, asked);
    let mut problems = cuts_through_hulls(&slots, &glue, &asked_before);
    let mut cutting = Cutting::of(graph, analysis, options, &slots, &glue, &asked_before);
    problems.append(&mut cutting.over_budget);
    if !problems.is_empty() {
        return Err(problems);
    }
    let count = cutting.pieces_before[slots.count()];
    let mut partition = renumbered(levels.partition, &slots, &cutting);
    place_the_rest(graph, analysis, hulls, &slots, &cutting, &mut partition);
    Ok(Chunked {
        levels: Levels { partition, count },
        cuts: cutting.cuts,
    })
}

/// Each partition's ops in topological order, all partitions in one array: partition `p`'s are
/// slots `start[p]..start[p + 1]`.
struct Slots {
    start: Vec<usize>,
    ops: Vec<NodeId>,
    /// Per node, its slot; `u32::MAX` for a node that is not a delegated op.
    slot_of: Vec<u32>,
}

impl Slots {
    fn of(graph: &Graph, analysis: &Analysis, levels: &Levels) -> Self {
        let index = &analysis.index;
        let count = levels.count as usize;
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
        Slots {
            start,
            ops,
            slot_of,
        }
    }

    /// How many partitions.
    fn count(&self) -> usize {
        self.start.len() - 1
    }

    fn is_op(&self, n: NodeId) -> bool {
        self.slot_of[n.index()] != u32::MAX
    }
}

/// The spans of slots no cut may part: each kept hull (with what it is of) and each tuple with its
/// `getitem`s.
struct Glue {
    spans: Vec<(usize, usize, Option<HullOf>)>,
    /// Per slot: whether it stays in the piece of the slot before (inside a span).
    glued: Vec<bool>,
}

impl Glue {
    fn of(
        analysis: &Analysis,
        levels: &Levels,
        hulls: &[(HullOf, &[NodeId])],
        slots: &Slots,
    ) -> Self {
        let slot_of = &slots.slot_of;
        let mut depth = vec![0i32; slots.ops.len() + 1];
        let mut spans: Vec<(usize, usize, Option<HullOf>)> = Vec::new();
        for &(owner, hull) in hulls {
            let in_slots = hull
                .iter()
                .map(|n| slot_of[n.index()])
                .filter(|&s| s != u32::MAX);
            if let (Some(lo), Some(hi)) = (in_slots.clone().min(), in_slots.max()) {
                spans.push((lo as usize, hi as usize, Some(owner)));
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
        let mut glued = vec![false; slots.ops.len()];
        let mut open = 0;
        for (s, g) in glued.iter_mut().enumerate() {
            open += depth[s];
            *g = open > 0;
        }
        Glue { spans, glued }
    }

    /// What the hulls whose spans `within` holds are of.
    fn owners(&self, within: impl Fn(usize, usize) -> bool) -> Vec<HullOf> {
        (self.spans.iter())
            .filter(|&&(lo, hi, _)| within(lo, hi))
            .filter_map(|&(_, _, b)| b)
            .collect()
    }
}

/// Per slot, the cut asked for before it: one that lies after the previous op of its partition.
fn asked_before<'a>(
    analysis: &Analysis,
    slots: &Slots,
    asked: &'a [AskedCut],
) -> Vec<Option<&'a AskedCut>> {
    let index = &analysis.index;
    let mut asked_before: Vec<Option<&AskedCut>> = vec![None; slots.ops.len()];
    if asked.is_empty() {
        return asked_before;
    }
    let mut sorted: Vec<&AskedCut> = asked.iter().collect();
    sorted.sort_by_key(|a| a.position);
    for p in 0..slots.count() {
        let (from, to) = (slots.start[p], slots.start[p + 1]);
        if to <= from + 1 {
            continue; // no slot after the first
        }
        // Each slot after the first of its partition, with the op before it.
        let pairs = slots.ops[from..to].windows(2);
        for (before, pair) in asked_before[from + 1..to].iter_mut().zip(pairs) {
            let (prev, here) = (index.position(pair[0]), index.position(pair[1]));
            let first = sorted.partition_point(|a| a.position <= prev);
            if let Some(a) = sorted.get(first).filter(|a| a.position <= here) {
                *before = Some(a);
            }
        }
    }
    asked_before
}

/// The asked cuts that fall inside a kept hull: each refuses the state (or moves the tied group). One inside a
/// tuple's span waits for the span's end instead (`pieces::units`).
fn cuts_through_hulls(
    slots: &Slots,
    glue: &Glue,
    asked_before: &[Option<&AskedCut>],
) -> Vec<Unchunkable> {
    let mut problems = Vec::new();
    for (s, asked) in asked_before.iter().enumerate() {
        if let (Some(a), true) = (asked, glue.glued[s]) {
            let owners = glue.owners(|lo, hi| lo < s && s <= hi);
            if !owners.is_empty() {
                problems.push(Unchunkable::CutThroughHull {
                    owners,
                    pattern: a.pattern.clone(),
                    before: slots.ops[s],
                });
            }
        }
    }
    problems
}

/// Every partition cut into pieces: which piece of its partition each slot is in, how many
/// pieces come before each partition's, the cuts in order, and the units alone over a budget.
struct Cutting {
    piece_of_slot: Vec<u32>,
    pieces_before: Vec<u32>,
    cuts: Vec<Cut>,
    over_budget: Vec<Unchunkable>,
}

impl Cutting {
    fn of(
        graph: &Graph,
        analysis: &Analysis,
        options: &Options,
        slots: &Slots,
        glue: &Glue,
        asked_before: &[Option<&AskedCut>],
    ) -> Self {
        let ops = &slots.ops;
        let budgets = Budgets::of(options);
        let mut pieces = Pieces::new(graph, analysis, budgets, ops);
        let count = slots.count();
        let mut cutting = Cutting {
            piece_of_slot: vec![0u32; ops.len()],
            pieces_before: vec![0u32; count + 1],
            cuts: Vec::new(),
            over_budget: Vec::new(),
        };
        for p in 0..count {
            let units = units(
                slots.start[p],
                slots.start[p + 1],
                &glue.glued,
                asked_before,
            );
            let crossing = crossing_bytes(graph, analysis, ops, &units);
            let planned = pieces.cut(&units, &crossing);
            for (u, unit) in units.iter().enumerate() {
                if unit.over_budget(&budgets, planned.unit_weight[u]) {
                    let owners = glue.owners(|lo, hi| unit.from <= lo && hi < unit.to);
                    let (weight_bytes, ops) = (planned.unit_weight[u], unit.ops());
                    cutting.over_budget.push(if owners.is_empty() {
                        Unchunkable::Ops {
                            nodes: slots.ops[unit.from..unit.to].to_vec(),
                            weight_bytes,
                            ops,
                        }
                    } else {
                        Unchunkable::Hull {
                            owners,
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
                    cutting.cuts.push(Cut {
                        after: ops[unit.from - 1],
                        before: ops[unit.from],
                        reason,
                        crossing_bytes,
                    });
                }
                cutting.piece_of_slot[unit.from..unit.to].fill(piece);
            }
            cutting.pieces_before[p + 1] = cutting.pieces_before[p] + piece + 1;
        }
        cutting
    }
}

/// The ops' new partitions: partition p's pieces follow one another, partitions keep their order.
fn renumbered(
    mut partition: Vec<Option<u32>>,
    slots: &Slots,
    cutting: &Cutting,
) -> Vec<Option<u32>> {
    for (s, &n) in slots.ops.iter().enumerate() {
        if let Some(p) = partition[n.index()] {
            partition[n.index()] =
                Some(cutting.pieces_before[p as usize] + cutting.piece_of_slot[s]);
        }
    }
    partition
}

/// What else is in a partition (placeholders, `get_attr`s) goes with its hull's ops (a placeholder
/// whose writer does not read it has no user there), or else with its first user there.
fn place_the_rest(
    graph: &Graph,
    analysis: &Analysis,
    hulls: &[(HullOf, &[NodeId])],
    slots: &Slots,
    cutting: &Cutting,
    partition: &mut [Option<u32>],
) {
    let mut placed = vec![false; graph.len()];
    for &(_, hull) in hulls {
        let piece = hull
            .iter()
            .find(|&&n| slots.is_op(n))
            .and_then(|n| partition[n.index()]);
        for &n in hull {
            if let (Some(piece), false) = (piece, slots.is_op(n)) {
                partition[n.index()] = Some(piece);
                placed[n.index()] = true;
            }
        }
    }
    for n in graph.ids() {
        if placed[n.index()] || slots.is_op(n) {
            continue;
        }
        if let Some(p) = partition[n.index()] {
            let pieces = cutting.pieces_before[p as usize]..cutting.pieces_before[p as usize + 1];
            let first = pieces.start;
            let with_user = analysis
                .index
                .successors(n)
                .iter()
                .filter(|&&u| slots.is_op(u))
                .filter_map(|u| partition[u.index()])
                .filter(|q| pieces.contains(q))
                .min();
            partition[n.index()] = Some(with_user.unwrap_or(first));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::analyse;
    use crate::import::parse_graph;
    use crate::plan::{CutReason, PlanRequest, Strategy, draft};
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
