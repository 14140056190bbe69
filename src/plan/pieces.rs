//! Cutting one partition into the fewest pieces within the budgets: its ops in topological order,
//! grouped into units no cut may part, are taken into pieces greedily (optimal for consecutive
//! pieces when a part of a piece that fits also fits). Then each cut slides, within the places
//! that keep the count, to where the fewest bytes cross it. `chunks.rs` sets up the units.

use super::cut_patterns::AskedCut;
use crate::analyse::{Adjacency, Analysis};
use crate::decision::CutReason;
use crate::graph::{Graph, NodeId};
use crate::options::Options;

/// The budgets of the options; `u64::MAX` where none is asked.
#[derive(Clone, Copy)]
pub(super) struct Budgets {
    pub weight: u64,
    pub ops: u64,
    /// Whether constants count at all: only those tagged into delegates are baked into them.
    pub constants_inside: bool,
}

impl Budgets {
    pub fn of(options: &Options) -> Self {
        Budgets {
            weight: options.max_weight_bytes.unwrap_or(u64::MAX),
            ops: options.max_ops.unwrap_or(u64::MAX),
            constants_inside: options.take_over_constant_data,
        }
    }
}

/// Consecutive slots that no cut may part.
pub(super) struct Unit<'a> {
    pub from: usize,
    pub to: usize,
    /// A cut asked for before this unit (or inside the tuple before it, moved here).
    asked: Option<&'a AskedCut>,
}

impl Unit<'_> {
    pub fn ops(&self) -> u64 {
        (self.to - self.from) as u64
    }
    pub fn over_budget(&self, budgets: &Budgets, weight: u64) -> bool {
        self.ops() > budgets.ops || weight > budgets.weight
    }
}

/// The units of slots `from..to`: a unit starts wherever a slot is not glued to the one before.
/// A cut asked for inside a glued span waits for the span's end (a hull's was reported).
pub(super) fn units<'a>(
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
pub(super) struct PieceCuts {
    /// Per unit: the reason for a cut before it, and the bytes crossing there, if one is there.
    pub cut_before: Vec<Option<(CutReason, u64)>>,
    pub unit_weight: Vec<u64>,
}

/// A piece being grown one unit at a time, from either end.
struct Growing {
    stamp: u32,
    weight: u64,
    ops: u64,
}

pub(super) struct Pieces<'a> {
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

impl<'a> Pieces<'a> {
    pub fn new(
        graph: &'a Graph,
        analysis: &'a Analysis,
        budgets: Budgets,
        ops: &'a [NodeId],
    ) -> Self {
        Pieces {
            graph,
            analysis,
            budgets,
            ops,
            in_piece: vec![0; graph.len()],
            stamp: 0,
            fresh: Vec::new(),
        }
    }

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
    pub fn cut(&mut self, units: &[Unit], crossing: &[u64]) -> PieceCuts {
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
        PieceCuts {
            cut_before,
            unit_weight,
        }
    }
}

/// Per unit boundary `b` (a cut before unit `b`), the bytes that would cross it: each value made
/// in the partition and read there after the cut, and each value from outside (constants aside,
/// which are weights) read on both sides of it, once. Sizes unknown count nothing.
pub(super) fn crossing_bytes(
    graph: &Graph,
    analysis: &Analysis,
    ops: &[NodeId],
    units: &[Unit],
) -> Vec<u64> {
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
