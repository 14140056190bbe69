//! Per-buffer strategy: start from what was asked (or the default the options imply), demote a
//! state to `cpu` with the reason whenever it cannot be whole in one partition, move a tied group
//! (ops tied by values no delegate can take at its boundary) to CPU whenever it cannot be one
//! partition's, and repeat until the groups contract without a cycle.

use super::chunks::{self, Unchunkable};
use super::cut_patterns::AskedCut;
use super::levels::{self, Groups};
use super::{PlanError, PlanRequest, Strategy, StrategyRequest};
use crate::analyse::{Adjacency, Analysis, BufferChain, Tied};
use crate::decision::{
    Blocker, Cut, CycleStep, Decision, HullOf, HullPlace, KeptState, Reason, Refusal, TiedOnCpu,
};
use crate::graph::{Graph, NodeId, OpKind};
use crate::rules::RuleId;

#[derive(Clone)]
pub(super) struct Outcome {
    pub strategy: Strategy,
    /// `None` until the plan is chosen: a kept state's reason names its partition, and an `auto`
    /// buffer's is the search's account.
    pub reason: Option<Reason>,
    pub rule: Option<RuleId>,
    /// Why a state was refused, when one was tried and demoted.
    pub state_refusal: Option<Refusal>,
}

impl Outcome {
    fn new(strategy: Strategy, reason: Option<Reason>, rule: Option<RuleId>) -> Self {
        Outcome {
            strategy,
            reason,
            rule,
            state_refusal: None,
        }
    }

    /// A state given up: the chain runs on CPU, and the refusal is kept for the search's account.
    fn refused(requested: StrategyRequest, refusal: Refusal) -> Self {
        Outcome {
            strategy: Strategy::Cpu,
            rule: Some(refusal.rule()),
            reason: Some(Reason::StateRefused {
                requested,
                refusal: refusal.clone(),
            }),
            state_refusal: Some(refusal),
        }
    }
}

#[derive(Clone)]
pub(super) struct Decided {
    pub outcomes: Vec<Outcome>,
    /// Ops moved to CPU and states given up on cycles, in the order the rounds decided them.
    pub decisions: Vec<Decision>,
    pub partition: Vec<Option<u32>>,
    pub partition_count: u32,
    /// Where partitions were cut for budgets or as asked.
    pub cuts: Vec<Cut>,
}

/// What the caller asked of a plan beyond the options: each buffer's strategy (by buffer index)
/// and the cuts the options' patterns place.
#[derive(Clone, Copy)]
pub(super) struct Asked<'a> {
    pub strategies: &'a [StrategyRequest],
    pub cuts: &'a [AskedCut],
}

pub(super) fn resolve_requests(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
) -> Result<Vec<StrategyRequest>, PlanError> {
    let mut requested = vec![request.strategy; analysis.buffers.len()];
    for (name, r) in &request.buffer_strategies {
        let found = analysis
            .buffers
            .iter()
            .position(|b| &b.buffer == name || graph.name(b.placeholder) == name);
        match found {
            Some(i) => requested[i] = *r,
            None => {
                let known: Vec<&str> = analysis.buffers.iter().map(|b| b.buffer.as_str()).collect();
                return Err(PlanError::UnknownBuffer {
                    name: name.clone(),
                    known: if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    },
                });
            }
        }
    }
    Ok(requested)
}

/// Plans with each buffer's strategy as `assigned` (the request's own for a fixed request, the
/// search's choice for `auto`): a state the options forbid, or that cannot be whole in one
/// partition, is demoted to `cpu` with its reason, until the state groups contract without a cycle.
pub(super) fn decide(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    asked: Asked,
    assigned: &[Strategy],
) -> Decided {
    let Asked {
        strategies: requested,
        cuts,
    } = asked;
    let options = &request.options;
    let forbidden = |requested: StrategyRequest, refusal: Refusal| {
        let rule = Some(refusal.rule());
        Outcome::new(
            Strategy::Cpu,
            Some(Reason::StateRefused { requested, refusal }),
            rule,
        )
    };
    let mut outcomes: Vec<Outcome> = requested
        .iter()
        .zip(assigned)
        .map(|(&r, &assigned)| match (r, assigned) {
            (StrategyRequest::Fixed(s @ (Strategy::Cpu | Strategy::Io)), _) => {
                Outcome::new(s, Some(Reason::Requested(s)), None)
            }
            // The search explains its choice once it has made it.
            (StrategyRequest::Auto, Strategy::Io | Strategy::Cpu) => {
                Outcome::new(assigned, None, None)
            }
            _ if !options.take_over_mutable_buffer => forbidden(r, Refusal::TakeOverOff),
            _ if !options.target_allows_states() => forbidden(
                r,
                Refusal::TargetBelowIos18(options.minimum_deployment_target),
            ),
            _ => Outcome::new(Strategy::State, None, Some(RuleId::StateWhole)),
        })
        .collect();
    let mut decisions = Vec::new();
    // Ops an earlier round moved to CPU: no runtime input below iOS18, or over a budget.
    let mut moved: Vec<Option<Blocker>> = vec![None; graph.len()];
    // Tied groups an earlier round moved to CPU: over a budget, across an asked cut, on a cycle.
    let mut tied_off: Vec<Option<TiedOnCpu>> = vec![None; analysis.tied.len()];
    loop {
        let (blockers, tied_on_cpu) =
            blockers(graph, analysis, request, &outcomes, &moved, &tied_off);
        let mut demoted = false;
        for (b, chain) in analysis.buffers.iter().enumerate() {
            if outcomes[b].strategy != Strategy::State {
                continue;
            }
            let blocked = chain
                .state_hull
                .iter()
                .filter(|&&n| n != chain.placeholder)
                .find_map(|&n| blockers[n.index()].map(|bl| (n, bl)));
            if let Some((node, blocker)) = blocked {
                let place = if chain.chain.contains(&node) {
                    HullPlace::Chain
                } else if chain.placeholder_readers.contains(&node) {
                    HullPlace::OldValueReader
                } else {
                    HullPlace::Between
                };
                let refusal = Refusal::Blocked {
                    node,
                    place,
                    blocker,
                };
                outcomes[b] = Outcome::refused(requested[b], refusal);
                demoted = true;
            }
        }
        if demoted {
            continue;
        }
        // What one partition must hold whole: each kept state's hull, each delegated tied group's.
        let kept: Vec<(HullOf, &[NodeId])> = (analysis.buffers.iter().enumerate())
            .filter(|(b, _)| outcomes[*b].strategy == Strategy::State)
            .map(|(b, c)| (HullOf::State(b), c.state_hull.as_slice()))
            .chain(
                (analysis.tied.iter().enumerate())
                    .filter(|(t, _)| tied_on_cpu[*t].is_none())
                    .map(|(t, tied)| (HullOf::Tied(t), tied.hull.as_slice())),
            )
            .collect();
        let groups = Groups::from_hulls(graph.len(), kept.iter().copied());
        let eligible: Vec<bool> = blockers.iter().map(Option::is_none).collect();
        match levels::assign(&analysis.index, &groups, &eligible, &analysis.getitems) {
            Ok(levels) => {
                let chunked = match chunks::chunk(graph, analysis, options, levels, &kept, cuts) {
                    Ok(chunked) => chunked,
                    Err(problems) => {
                        for problem in problems {
                            unchunkable(
                                problem,
                                requested,
                                &mut outcomes,
                                &mut moved,
                                &mut tied_off,
                                &mut decisions,
                            );
                        }
                        continue;
                    }
                };
                let levels = chunked.levels;
                let stranded = inputless_partitions(graph, analysis, request, &levels);
                if !stranded.is_empty() {
                    for nodes in stranded {
                        for &n in &nodes {
                            moved[n.index()] = Some(Blocker::NoInput);
                        }
                        decisions.push(Decision::InputlessOnCpu(nodes));
                    }
                    continue;
                }
                decisions.extend(
                    (tied_on_cpu.into_iter().enumerate())
                        .filter(|(t, _)| !analysis.tied[*t].ops.is_empty())
                        .filter_map(|(tied, why)| Some(Decision::TiedOnCpu { tied, why: why? })),
                );
                // A kept state's reason is written for the chosen plan only (`kept_state`).
                return Decided {
                    outcomes,
                    decisions,
                    partition: levels.partition,
                    partition_count: levels.count,
                    cuts: chunked.cuts,
                };
            }
            Err(cycle) => {
                let owners: Vec<HullOf> = (cycle.groups.iter())
                    .flat_map(|&g| groups.owners[g as usize].iter().copied())
                    .collect();
                let path: Vec<CycleStep> = cycle
                    .path
                    .iter()
                    .map(|&(node, jump)| CycleStep {
                        node,
                        group: groups.group(node).map(|g| groups.owners[g as usize][0]),
                        within_partition: jump,
                    })
                    .collect();
                // Give up the state of the latest buffer on the cycle; the others may then fit.
                // With no state on it, the latest tied group runs on CPU.
                let state = owners.iter().filter_map(|o| match o {
                    HullOf::State(b) => Some(*b),
                    HullOf::Tied(_) => None,
                });
                let tied = owners.iter().filter_map(|o| match o {
                    HullOf::Tied(t) => Some(*t),
                    HullOf::State(_) => None,
                });
                if let Some(victim) = state.max() {
                    decisions.push(Decision::StateOnCycle {
                        buffer: victim,
                        path: path.clone(),
                    });
                    outcomes[victim] = Outcome::refused(requested[victim], Refusal::Cycle(path));
                } else if let Some(victim) = tied.max() {
                    tied_off[victim] = Some(TiedOnCpu::Cycle(path));
                } else {
                    unreachable!(
                        "a cycle among units runs through a group, and every group has a hull"
                    );
                }
            }
        }
    }
}

/// Moves what cannot be chunked as the options ask out of the delegates: a state whose hull is
/// over a budget or crossed by an asked cut is refused, a tied group so goes to CPU, ops over a
/// budget go to CPU.
fn unchunkable(
    problem: Unchunkable,
    requested: &[StrategyRequest],
    outcomes: &mut [Outcome],
    moved: &mut [Option<Blocker>],
    tied_off: &mut [Option<TiedOnCpu>],
    decisions: &mut Vec<Decision>,
) {
    match problem {
        Unchunkable::Hull {
            owners,
            weight_bytes,
            ops,
        } => {
            for owner in owners {
                match owner {
                    HullOf::State(b) => {
                        let refusal = Refusal::OverBudget { weight_bytes, ops };
                        outcomes[b] = Outcome::refused(requested[b], refusal);
                    }
                    HullOf::Tied(t) => {
                        tied_off[t] = Some(TiedOnCpu::OverBudget { weight_bytes, ops });
                    }
                }
            }
        }
        Unchunkable::CutThroughHull {
            owners,
            pattern,
            before,
        } => {
            for owner in owners {
                match owner {
                    HullOf::State(b) => {
                        let refusal = Refusal::CutThrough {
                            pattern: pattern.clone(),
                            before,
                        };
                        outcomes[b] = Outcome::refused(requested[b], refusal);
                    }
                    HullOf::Tied(t) => {
                        let pattern = pattern.clone();
                        tied_off[t] = Some(TiedOnCpu::CutThrough { pattern, before });
                    }
                }
            }
        }
        Unchunkable::Ops {
            nodes,
            weight_bytes,
            ops,
        } => {
            for &n in &nodes {
                moved[n.index()] = Some(Blocker::OverBudget);
            }
            decisions.push(Decision::OverBudgetOnCpu {
                nodes,
                weight_bytes,
                ops,
            });
        }
    }
}

/// Why a buffer the plan keeps as a state of partition `tag` can be one.
pub(super) fn kept_state(chain: &BufferChain, tag: &str) -> KeptState {
    KeptState {
        partition: tag.to_string(),
        chain_nodes: chain.chain.len(),
        kind: chain.kind,
        old_value_readers: chain.placeholder_readers.len(),
    }
}

/// Per node, why it cannot be delegated now (or `None`): support, the chains on CPU, tuples (a
/// multi-output op and all its `getitem`s share a side) and tied groups (all on CPU when they
/// cannot be one partition's); and per tied group, why it runs on CPU (or `None`). `tied_off` are
/// the tied groups an earlier round moved to CPU.
fn blockers(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    outcomes: &[Outcome],
    moved: &[Option<Blocker>],
    tied_off: &[Option<TiedOnCpu>],
) -> (Vec<Option<Blocker>>, Vec<Option<TiedOnCpu>>) {
    let mut blockers: Vec<Option<Blocker>> = graph
        .ops
        .iter()
        .zip(&request.supported)
        .zip(moved)
        .map(|((&op, &supported), &moved)| match (op, supported) {
            (OpKind::CallFunction, true) => moved,
            (OpKind::CallFunction, false) => Some(Blocker::Unsupported),
            _ => Some(Blocker::NotAnOp),
        })
        .collect();
    for &n in &graph.refused_by_converter {
        if blockers[n.index()].is_none() {
            blockers[n.index()] = Some(Blocker::DoesNotConvert);
        }
    }
    for &n in &request.on_cpu {
        if blockers[n.index()].is_none() {
            blockers[n.index()] = Some(Blocker::Requested);
        }
    }
    for (b, chain) in analysis.buffers.iter().enumerate() {
        if outcomes[b].strategy == Strategy::Cpu {
            for &n in &chain.chain {
                blockers[n.index()].get_or_insert(Blocker::CpuChain(b));
            }
        }
    }
    keep_tuples_whole(analysis, &mut blockers);
    let mut tied_on_cpu = tied_off.to_vec();
    // Each tied group that cannot be one partition's runs on CPU whole; what that blocks may send
    // a tuple, and so another group, after it: until nothing changes.
    let mut changed = !analysis.tied.is_empty();
    while changed {
        changed = false;
        for (t, tied) in analysis.tied.iter().enumerate() {
            if tied_on_cpu[t].is_none() {
                tied_on_cpu[t] =
                    why_tied_on_cpu(graph, analysis, request, outcomes, tied, &blockers);
            }
            if tied_on_cpu[t].is_some() {
                for &n in &tied.ops {
                    if blockers[n.index()].is_none() {
                        blockers[n.index()] = Some(Blocker::Tied(t));
                        changed = true;
                    }
                }
            }
        }
        if changed {
            keep_tuples_whole(analysis, &mut blockers);
        }
    }
    (blockers, tied_on_cpu)
}

/// A multi-output op and its `getitem`s share a side: a blocked `getitem` blocks its op, and a
/// blocked op its `getitem`s.
fn keep_tuples_whole(analysis: &Analysis, blockers: &mut [Option<Blocker>]) {
    for &(n, producer) in analysis.getitems.iter().rev() {
        if blockers[n.index()].is_some() {
            blockers[producer.index()].get_or_insert(Blocker::TupleSibling(n));
        }
    }
    for &(n, producer) in &analysis.getitems {
        if blockers[producer.index()].is_some() {
            blockers[n.index()].get_or_insert(Blocker::ProducerOnCpu(producer));
        }
    }
}

/// Why a tied group cannot be one partition's now, if it cannot: one of its values is a
/// placeholder no delegate holds (constant data is held with `take_over_constant_data`, a state's
/// old value by its state), the graph's output reads one, or a node of its hull is blocked.
fn why_tied_on_cpu(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    outcomes: &[Outcome],
    tied: &Tied,
    blockers: &[Option<Blocker>],
) -> Option<TiedOnCpu> {
    let held = |p: NodeId| {
        (request.options.take_over_constant_data && graph.role(p).is_constant_data())
            || (analysis.buffers.iter().zip(outcomes))
                .any(|(c, o)| c.placeholder == p && o.strategy == Strategy::State)
    };
    if let Some(&p) = tied.placeholders.iter().find(|&&p| !held(p)) {
        return Some(TiedOnCpu::Placeholder(p));
    }
    if tied.to_output {
        return Some(TiedOnCpu::Output);
    }
    (tied.hull.iter()).find_map(|&node| {
        blockers[node.index()].map(|blocker| TiedOnCpu::Blocked { node, blocker })
    })
}

/// Below iOS18, the `call_function` nodes of each partition that would read no runtime value:
/// constants tagged into it (with `take_over_constant_data`) and nodes inside it are not inputs.
/// Reads the index's compact edge lists: this runs once per candidate plan of the search.
fn inputless_partitions(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    levels: &levels::Levels,
) -> Vec<Vec<NodeId>> {
    if request.options.target_allows_states() {
        return Vec::new();
    }
    let constants_inside = request.options.take_over_constant_data;
    let mut has_input = vec![false; levels.count as usize];
    let mut has_ops = vec![false; levels.count as usize];
    for (i, &home) in levels.partition.iter().enumerate() {
        let n = NodeId(i as u32);
        let Some(p) = home else {
            continue;
        };
        if graph.op(n) != OpKind::CallFunction || has_input[p as usize] {
            has_ops[p as usize] |= graph.op(n) == OpKind::CallFunction;
            continue;
        }
        has_ops[p as usize] = true;
        has_input[p as usize] = analysis.index.predecessors(n).iter().any(|&q| {
            levels.partition[q.index()] != Some(p)
                && !(constants_inside && graph.role(q).is_constant_data())
        });
    }
    let stranded: Vec<u32> = (0..levels.count)
        .filter(|&p| has_ops[p as usize] && !has_input[p as usize])
        .collect();
    if stranded.is_empty() {
        return Vec::new();
    }
    let mut members: Vec<Vec<NodeId>> = vec![Vec::new(); stranded.len()];
    for &n in analysis.index.order() {
        if graph.op(n) != OpKind::CallFunction {
            continue;
        }
        if let Some(p) = levels.partition[n.index()]
            && let Ok(k) = stranded.binary_search(&p)
        {
            members[k].push(n);
        }
    }
    members
}
