//! What-if planning: a session holds one imported and analysed graph and answers changed requests
//! without analysing again (analysis depends on structure only). Each answer is a plan and how it
//! differs from the session's base plan. Changes are values, applied to a copy of the base request.

use crate::analyse::Analysis;
use crate::check::GraphView;
use crate::graph::{Graph, NodeId, OpKind, Symbol};
use crate::plan::{Plan, PlanError, PlanRequest, plan};
use crate::verify::{Verdict, plan_and_verify_in, verify_in};
use std::collections::{BTreeSet, HashMap};

mod changes;

pub use changes::{Change, ChangeError, Scenario, ScenarioError, ScenarioFault, parse_scenarios};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WhatIfError {
    #[error("no node is named {0:?}")]
    UnknownNode(String),
    #[error("no node calls the op {0:?}")]
    UnknownOp(String),
    #[error("{0}")]
    Plan(#[from] PlanError),
}

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
        let tag = |p: &'a Plan, t: Option<u32>| t.map_or("cpu", |t| p.tagging.name(t));
        (tag(old, self.from), tag(new, self.to))
    }
}

impl PlanDiff {
    pub fn is_empty(&self) -> bool {
        *self == PlanDiff::default()
    }
}

pub struct WhatIf {
    pub plan: Plan,
    pub diff: PlanDiff,
    /// The independent checker's, on `plan`.
    pub verdict: Verdict,
}

pub struct Session {
    pub graph: Graph,
    pub analysis: Analysis,
    pub base_request: PlanRequest,
    pub base: Plan,
    pub base_verdict: Verdict,
    /// Op target to the nodes calling it.
    callers: HashMap<Symbol, Vec<NodeId>>,
    /// The checker's view of `graph`, built for the base plan's verdict and reused for every
    /// scenario's.
    check_view: GraphView,
}

impl Session {
    /// Analyses `graph` once and plans the request `base_request` makes of it.
    pub fn new(graph: Graph, base_request: PlanRequest) -> Result<Self, PlanError> {
        let check_view = GraphView::default();
        let (analysis, base, base_verdict) =
            plan_and_verify_in(&check_view, &graph, &base_request)?;
        let mut callers: HashMap<Symbol, Vec<NodeId>> = HashMap::new();
        for id in graph.ids().filter(|&n| graph.op(n) == OpKind::CallFunction) {
            callers
                .entry(graph.node(id).target.clone())
                .or_default()
                .push(id);
        }
        Ok(Session {
            graph,
            analysis,
            base_request,
            base,
            base_verdict,
            callers,
            check_view,
        })
    }

    /// The base request with `changes` applied in order.
    pub fn request(&self, changes: &[Change]) -> Result<PlanRequest, WhatIfError> {
        let mut r = self.base_request.clone();
        let node = |name: &str| {
            self.graph
                .find(name)
                .ok_or_else(|| WhatIfError::UnknownNode(name.to_string()))
        };
        for change in changes {
            match change {
                Change::TakeOverMutableBuffer(v) => r.options.take_over_mutable_buffer = *v,
                Change::MinimumDeploymentTarget(t) => r.options.minimum_deployment_target = *t,
                Change::Strategy {
                    buffer: None,
                    strategy,
                } => {
                    r.strategy = *strategy;
                    r.buffer_strategies.clear();
                }
                Change::Strategy {
                    buffer: Some(b),
                    strategy,
                } => r.buffer_strategies.push((b.clone(), *strategy)),
                Change::OpSupported { target, supported } => {
                    let ids = self
                        .callers
                        .get(target.as_str())
                        .ok_or_else(|| WhatIfError::UnknownOp(target.clone()))?;
                    for id in ids {
                        r.supported[id.index()] = *supported;
                    }
                }
                Change::NodeSupported {
                    node: name,
                    supported,
                } => r.supported[node(name)?.index()] = *supported,
                Change::NodeOnCpu { node: name } => r.on_cpu.push(node(name)?),
                Change::Cost(c) => r.cost = c.apply_to(&r.cost),
                Change::MaxWeightBytes(b) => r.options.max_weight_bytes = *b,
                Change::MaxOps(n) => r.options.max_ops = *n,
                Change::Cut { pattern, after } => {
                    let cuts = if *after {
                        &mut r.options.cut_after
                    } else {
                        &mut r.options.cut_before
                    };
                    match pattern {
                        Some(p) => cuts.push(p.clone()),
                        None => cuts.clear(),
                    }
                }
            }
        }
        Ok(r)
    }

    /// The plan for the base request with `changes` applied, how it differs from the base plan,
    /// and the checker's verdict on it.
    pub fn what_if(&self, changes: &[Change]) -> Result<WhatIf, WhatIfError> {
        let request = self.request(changes)?;
        let (plan, diff) = self.answer(&request)?;
        let verdict = verify_in(&self.check_view, &self.graph, &plan, &request);
        Ok(WhatIf {
            plan,
            diff,
            verdict,
        })
    }

    /// The plan for `request` and how it differs from the base plan, unchecked.
    pub fn answer(&self, request: &PlanRequest) -> Result<(Plan, PlanDiff), WhatIfError> {
        let plan = plan(&self.graph, &self.analysis, request)?;
        let diff = diff(&self.graph, &self.base, &plan);
        Ok((plan, diff))
    }
}

/// How `new` differs from `old`, both plans of `graph`. Linear in the graph, no per-node allocation.
pub fn diff(graph: &Graph, old: &Plan, new: &Plan) -> PlanDiff {
    let ops = || graph.ids().filter(|&n| graph.op(n) == OpKind::CallFunction);
    let (mut old_size, mut new_size) = (
        vec![0usize; old.tagging.partition_count()],
        vec![0usize; new.tagging.partition_count()],
    );
    // Nodes each (old, new) pair of partitions shares, in one pass. Neighbouring nodes mostly
    // share their pair, so runs are counted before touching the map.
    let mut shared: hashbrown::HashMap<(u32, u32), usize> = hashbrown::HashMap::new();
    let mut run: Option<((u32, u32), usize)> = None;
    for n in ops() {
        let (a, b) = (old.tagging.partition(n), new.tagging.partition(n));
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
                .push(new.tagging.name(t as u32).to_string());
        }
    }
    for (o, image) in old_to_new.iter().enumerate() {
        if image.is_none() {
            d.partitions_removed
                .push(old.tagging.name(o as u32).to_string());
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
                old.tagging.name(o).to_string(),
                new.tagging.name(t).to_string(),
            ));
        }
    }
    for n in ops() {
        let (was, is) = (old.tagging.partition(n), new.tagging.partition(n));
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
        p.measure
            .partitions
            .iter()
            .flat_map(|s| s.states.iter().cloned())
            .collect()
    };
    let (old_states, new_states) = (states(old), states(new));
    d.states_gained = new_states.difference(&old_states).cloned().collect();
    d.states_lost = old_states.difference(&new_states).cloned().collect();
    // In i128 and clamped: byte totals saturate at u64::MAX on absurd shapes.
    let change = |old: u64, new: u64| {
        (i128::from(new) - i128::from(old)).clamp(i64::MIN.into(), i64::MAX.into()) as i64
    };
    d.delegate_calls = change(
        old.measure.partitions.len() as u64,
        new.measure.partitions.len() as u64,
    );
    d.delegated_nodes = change(
        old.measure.delegated_nodes as u64,
        new.measure.delegated_nodes as u64,
    );
    d.boundary_bytes = change(old.measure.boundary_bytes(), new.measure.boundary_bytes());
    d.estimate_us = new.estimate.total_us - old.estimate.weighed(&new.cost);
    d
}

#[cfg(test)]
mod tests;
