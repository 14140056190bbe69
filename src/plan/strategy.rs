//! Per-buffer strategy: start from what was asked (or the default the options imply), demote a
//! state to `cpu` with the reason whenever it cannot be whole in one partition, and repeat until
//! the state groups contract without a cycle.

use super::levels::{self, Groups};
use super::{PlanError, PlanRequest, Strategy, StrategyRequest};
use crate::analyse::{Analysis, BufferChain, DirectedGraph};
use crate::graph::{Graph, NodeId, OpKind};
use crate::rules::{Finding, FindingKind, PathStep, RuleId, render_path};

/// Why a node cannot be in a delegate partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocker {
    /// Placeholders, `get_attr` and the output are not ops a delegate runs.
    NotAnOp,
    Unsupported,
    /// In the chain of this buffer, which runs on CPU.
    CpuChain(usize),
    /// A multi-output op one of whose `getitem`s cannot be delegated.
    TupleSibling(NodeId),
    /// A `getitem` whose producer runs on CPU.
    ProducerOnCpu(NodeId),
    /// Its partition would read no runtime value, which Core ML allows only from iOS18.
    NoInput,
    /// The request keeps it on CPU.
    Requested,
}

#[derive(Clone)]
pub(super) struct Outcome {
    pub strategy: Strategy,
    pub reason: String,
    pub rule: Option<RuleId>,
    /// Why a state was refused, when one was tried and demoted: the rule and the blocking fact.
    pub state_refusal: Option<(RuleId, String)>,
}

impl Outcome {
    fn new(strategy: Strategy, reason: String, rule: Option<RuleId>) -> Self {
        Outcome {
            strategy,
            reason,
            rule,
            state_refusal: None,
        }
    }

    /// A state given up: the chain runs on CPU, and the refusal is kept for the search's account.
    fn refused(requested: StrategyRequest, rule: RuleId, why: String) -> Self {
        Outcome {
            strategy: Strategy::Cpu,
            reason: format!(
                "{} {why}; the whole chain runs on CPU",
                state_prefix(requested)
            ),
            rule: Some(rule),
            state_refusal: Some((rule, why)),
        }
    }
}

#[derive(Clone)]
pub(super) struct Decided {
    pub outcomes: Vec<Outcome>,
    /// Refused merges, with their paths.
    pub findings: Vec<Finding>,
    pub partition: Vec<Option<u32>>,
    pub partition_count: u32,
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
    requested: &[StrategyRequest],
    assigned: &[Strategy],
) -> Decided {
    let options = &request.options;
    let mut outcomes: Vec<Outcome> = requested
        .iter()
        .zip(assigned)
        .map(|(r, &assigned)| {
            let asked = match r {
                StrategyRequest::Auto => "",
                StrategyRequest::Fixed(_) => "state was requested, but ",
            };
            match (r, assigned) {
                (StrategyRequest::Fixed(Strategy::Cpu), _) => Outcome::new(
                    Strategy::Cpu,
                    "cpu was requested: the whole chain runs on CPU and delegates read the buffer as a plain input".into(),
                    None,
                ),
                (StrategyRequest::Fixed(Strategy::Io), _) => Outcome::new(
                    Strategy::Io,
                    "io was requested: delegates take the buffer as a plain input and return its new value, which the runtime writes back".into(),
                    None,
                ),
                (StrategyRequest::Auto, Strategy::Io | Strategy::Cpu) => {
                    // The search explains its choice once it has made it.
                    Outcome::new(assigned, String::new(), None)
                }
                _ if !options.take_over_mutable_buffer => Outcome::new(
                    Strategy::Cpu,
                    format!("{asked}take_over_mutable_buffer is off, so no delegate may own the buffer: its chain runs on CPU and delegates read it as a plain input"),
                    Some(RuleId::NoHiddenState),
                ),
                _ if !options.target_allows_states() => Outcome::new(
                    Strategy::Cpu,
                    format!("{asked}a Core ML state needs iOS18 or later and the minimum deployment target is {}: its chain runs on CPU", options.target_label()),
                    Some(RuleId::StateTarget),
                ),
                _ => Outcome::new(Strategy::State, String::new(), Some(RuleId::StateWhole)),
            }
        })
        .collect();
    let mut findings = Vec::new();
    let mut no_input = vec![false; graph.len()];
    loop {
        let blockers = blockers(graph, analysis, request, &outcomes, &no_input);
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
                let (rule, why) = explain_blocker(graph, analysis, chain, node, blocker);
                outcomes[b] = Outcome::refused(requested[b], rule, why);
                demoted = true;
            }
        }
        if demoted {
            continue;
        }
        let hulls = analysis
            .buffers
            .iter()
            .enumerate()
            .filter(|(b, _)| outcomes[*b].strategy == Strategy::State)
            .map(|(b, c)| (b, c.state_hull.as_slice()));
        let groups = Groups::from_hulls(graph.len(), hulls);
        let eligible: Vec<bool> = blockers.iter().map(Option::is_none).collect();
        match levels::assign(&analysis.index, &groups, &eligible) {
            Ok(levels) => {
                let stranded = inputless_partitions(graph, analysis, request, &levels);
                if !stranded.is_empty() {
                    for nodes in stranded {
                        for &n in &nodes {
                            no_input[n.index()] = true;
                        }
                        let names: Vec<&str> = nodes.iter().map(|&n| graph.name(n)).collect();
                        findings.push(
                            Finding::new(
                                RuleId::NoInputTarget,
                                FindingKind::Decision,
                                format!(
                                    "{} would form a partition that reads no runtime value, which Core ML allows only from iOS18 (the target is {}): they run on CPU",
                                    names.join(", "),
                                    options.target_label()
                                ),
                            )
                            .nodes(names),
                        );
                    }
                    continue;
                }
                // A kept state's reason is written for the chosen plan only (`kept_reason`).
                return Decided {
                    outcomes,
                    findings,
                    partition: levels.partition,
                    partition_count: levels.count,
                };
            }
            Err(cycle) => {
                // Give up the state of the latest buffer on the cycle; the others may then fit.
                let victim = cycle
                    .groups
                    .iter()
                    .flat_map(|&g| groups.buffers[g as usize].iter().copied())
                    .max()
                    .unwrap_or(0);
                let path: Vec<PathStep> = cycle
                    .path
                    .iter()
                    .map(|&(n, jump)| PathStep {
                        node: graph.name(n).to_string(),
                        tag: groups.group(n).map(|g| {
                            format!(
                                "state:{}",
                                analysis.buffers[groups.buffers[g as usize][0]].buffer
                            )
                        }),
                        within_partition: jump,
                    })
                    .collect();
                let buffer = &analysis.buffers[victim].buffer;
                let why = format!(
                    "its state would share a partition with nodes that a path through the rest of the graph leaves and re-enters ({})",
                    render_path(&path)
                );
                findings.push(
                    Finding::new(
                        RuleId::Acyclic,
                        FindingKind::Decision,
                        format!("{buffer}: refused to keep as a state: {why}"),
                    )
                    .buffer(buffer)
                    .nodes(cycle.path.iter().map(|&(n, _)| graph.name(n)))
                    .path(path),
                );
                outcomes[victim] = Outcome::refused(requested[victim], RuleId::Acyclic, why);
            }
        }
    }
}

/// Why a buffer the plan keeps as a state of partition `tag` can be one.
pub(super) fn kept_reason(chain: &BufferChain, tag: &str) -> String {
    format!(
        "kept as a Core ML state of {tag}: its placeholder, its {}-node {} chain and the {} reader(s) of its old value are all supported and fit in one partition",
        chain.chain.len(),
        kind_label(chain),
        chain.placeholder_readers.len()
    )
}

fn state_prefix(requested: StrategyRequest) -> &'static str {
    match requested {
        StrategyRequest::Auto => "cannot be a Core ML state:",
        StrategyRequest::Fixed(_) => "state was requested but is impossible:",
    }
}

fn kind_label(chain: &BufferChain) -> &'static str {
    match chain.kind {
        crate::analyse::MutationKind::Slice => "slice-update",
        crate::analyse::MutationKind::Whole => "whole-buffer",
    }
}

/// Per node, why it cannot be delegated now (or `None`): support, the chains on CPU, and tuples
/// (a multi-output op and all its `getitem`s share a side).
fn blockers(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    outcomes: &[Outcome],
    no_input: &[bool],
) -> Vec<Option<Blocker>> {
    let mut blockers: Vec<Option<Blocker>> = graph
        .ops
        .iter()
        .zip(&request.supported)
        .zip(no_input)
        .map(|((&op, &supported), &no_input)| match (op, supported) {
            (OpKind::CallFunction, true) if no_input => Some(Blocker::NoInput),
            (OpKind::CallFunction, true) => None,
            (OpKind::CallFunction, false) => Some(Blocker::Unsupported),
            _ => Some(Blocker::NotAnOp),
        })
        .collect();
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
    blockers
}

fn explain_blocker(
    graph: &Graph,
    analysis: &Analysis,
    chain: &BufferChain,
    node: NodeId,
    blocker: Blocker,
) -> (RuleId, String) {
    let role = if chain.chain.contains(&node) {
        "in its chain"
    } else if chain.placeholder_readers.contains(&node) {
        "reading its old value"
    } else {
        "between its chain and a reader of its old value"
    };
    let n = graph.node(node);
    let what = format!(
        "{} ({}) {role}",
        n.name,
        if n.target.is_empty() {
            "output"
        } else {
            &n.target
        }
    );
    match blocker {
        Blocker::Unsupported => (
            RuleId::Supported,
            format!("{what} is not supported by Core ML"),
        ),
        Blocker::NotAnOp => (RuleId::StateWhole, format!("{what} cannot be delegated")),
        Blocker::CpuChain(other) => (
            RuleId::StateWhole,
            format!(
                "{what} is in the chain of {}, which runs on CPU",
                analysis.buffers[other].buffer
            ),
        ),
        Blocker::TupleSibling(item) => (
            RuleId::Supported,
            format!(
                "{what} has an output {} that cannot be delegated, so the op stays on CPU",
                graph.name(item)
            ),
        ),
        Blocker::Requested => (
            RuleId::Supported,
            format!("{what} is kept on CPU by the request"),
        ),
        Blocker::NoInput => (
            RuleId::NoInputTarget,
            format!(
                "{what} would sit in a partition without runtime inputs, which Core ML allows only from iOS18"
            ),
        ),
        Blocker::ProducerOnCpu(producer) => (
            RuleId::Supported,
            format!(
                "{what} takes its value from {}, which runs on CPU",
                graph.name(producer)
            ),
        ),
    }
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
