//! What-if questions as values: changes to a plan request (parsed from `--change` and scenario
//! files), the request they make of a graph, and how an answer's plan differs from the base plan.
//! The session that plans and answers them is the pipeline's (`crate::pipeline::Session`).

use crate::graph::{Graph, NodeId, OpKind, Symbol};
use crate::outcome::{Plan, Verdict};
use crate::plan::{PlanError, PlanRequest};
use std::collections::HashMap;

mod changes;
mod diff;

pub use changes::{Change, ChangeError, Scenario, ScenarioError, ScenarioFault, parse_scenarios};
pub use diff::{NodeMove, PlanDiff, diff};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WhatIfError {
    #[error("no node is named {0:?}")]
    UnknownNode(String),
    #[error("no node calls the op {0:?}")]
    UnknownOp(String),
    #[error("{0}")]
    Plan(#[from] PlanError),
}

/// One answer: the plan for the changed request, how it differs from the base plan, and the
/// independent checker's verdict on it.
pub struct WhatIf {
    pub plan: Plan,
    pub diff: PlanDiff,
    /// The independent checker's, on `plan`.
    pub verdict: Verdict,
}

/// Op target to the `call_function` nodes calling it: what `op-supported` changes.
pub struct Callers(HashMap<Symbol, Vec<NodeId>>);

impl Callers {
    pub fn of(graph: &Graph) -> Self {
        let mut callers: HashMap<Symbol, Vec<NodeId>> = HashMap::new();
        for id in graph.ids().filter(|&n| graph.op(n) == OpKind::CallFunction) {
            callers
                .entry(graph.node(id).target.clone())
                .or_default()
                .push(id);
        }
        Callers(callers)
    }

    /// `base` with `changes` applied in order.
    pub fn request(
        &self,
        graph: &Graph,
        base: &PlanRequest,
        changes: &[Change],
    ) -> Result<PlanRequest, WhatIfError> {
        let mut r = base.clone();
        let node = |name: &str| {
            graph
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
                        .0
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
}
