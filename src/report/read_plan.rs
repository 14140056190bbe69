//! Reading a `plan@1` document back over its graph (`render --plan`), beside the writer
//! (`json.rs`): the tags, the options and cost constants it was made with, what it says of each
//! buffer, and its own decisions. A plan for another graph is refused.

use super::findings::Explained;
use crate::cost::{CostModel, CostOverrides};
use crate::decision::{Strategy, StrategyRequest};
use crate::graph::Graph;
use crate::options::{Options, PartialOptions};
use crate::rules::{FindingKind, RuleId};
use crate::schema::PLAN_SCHEMA;
use crate::tagging::Tagging;
use serde::Deserialize;
use std::collections::HashMap;

/// Why a `plan@1` document cannot be drawn over a graph.
#[derive(Debug, thiserror::Error)]
pub enum PlanDocumentError {
    #[error("not a {PLAN_SCHEMA} document: {0}")]
    Malformed(String),
    #[error("the plan tags node {0:?}, which the graph lacks: it was made for another graph")]
    UnknownNode(String),
    #[error("the plan says nothing of node {0:?}: it was made for another graph")]
    MissingNode(String),
    #[error("the plan gives buffer {buffer:?} the strategy {strategy:?}: state, cpu or io")]
    Strategy { buffer: String, strategy: String },
}

/// A plan document read over its graph.
pub struct GivenPlan {
    pub tagging: Tagging,
    /// The graph's options with the plan's applied.
    pub options: Options,
    pub cost: CostModel,
    /// The plan's decisions that concern no buffer, as it explained them; the checker finds the
    /// violations again.
    pub decisions: Vec<Explained>,
    buffers: Vec<PlanBufferIn>,
}

/// What a plan says of one buffer: the strategy it decided, and why.
pub struct GivenBuffer<'a> {
    pub strategy: Strategy,
    pub reason: Option<&'a str>,
}

impl GivenPlan {
    /// What the plan says of each buffer, by name. A graph of 10^6 nodes has tens of thousands of
    /// buffers: found by name, not by a scan each.
    pub fn buffers(&self) -> HashMap<&str, &PlanBufferIn> {
        self.buffers
            .iter()
            .map(|b| (b.buffer.as_str(), b))
            .collect()
    }
}

/// The parts of `plan@1` a picture needs.
#[derive(Deserialize)]
struct PlanDocumentIn {
    schema: String,
    #[serde(default)]
    options: PartialOptions,
    node_tags: indexmap::IndexMap<String, Option<String>>,
    #[serde(default)]
    buffers: Vec<PlanBufferIn>,
    #[serde(default)]
    cost: Option<PlanCostIn>,
    #[serde(default)]
    explanations: Vec<PlanExplanationIn>,
}

/// A plan's explanation as the picture reads it back.
#[derive(Deserialize)]
struct PlanExplanationIn {
    scope: String,
    rule: String,
    kind: String,
    message: String,
    #[serde(default)]
    nodes: Vec<String>,
    #[serde(default)]
    buffer: Option<String>,
}

#[derive(Deserialize)]
pub struct PlanBufferIn {
    buffer: String,
    strategy: String,
    #[serde(default)]
    reason: Option<String>,
}

impl PlanBufferIn {
    /// The strategy the plan decided: a fixed one, never `auto`.
    pub fn decided(&self) -> Result<GivenBuffer<'_>, PlanDocumentError> {
        match self.strategy.parse::<StrategyRequest>() {
            Ok(StrategyRequest::Fixed(strategy)) => Ok(GivenBuffer {
                strategy,
                reason: self.reason.as_deref(),
            }),
            _ => Err(PlanDocumentError::Strategy {
                buffer: self.buffer.clone(),
                strategy: self.strategy.clone(),
            }),
        }
    }
}

#[derive(Deserialize)]
struct PlanCostIn {
    #[serde(default)]
    model: CostOverrides,
}

/// Reads `text`, a `plan@1` document, over `graph`. Every node must be in the plan and every
/// tagged node in the graph.
pub fn read_plan(graph: &Graph, text: &str) -> Result<GivenPlan, PlanDocumentError> {
    let doc: PlanDocumentIn =
        serde_json::from_str(text).map_err(|e| PlanDocumentError::Malformed(e.to_string()))?;
    if doc.schema != PLAN_SCHEMA {
        return Err(PlanDocumentError::Malformed(format!(
            "schema {:?}",
            doc.schema
        )));
    }
    for name in doc.node_tags.keys() {
        if graph.find(name).is_none() {
            return Err(PlanDocumentError::UnknownNode(name.clone()));
        }
    }
    let mut tags: Vec<Option<&str>> = Vec::with_capacity(graph.len());
    for id in graph.ids() {
        match doc.node_tags.get(graph.name(id)) {
            None => return Err(PlanDocumentError::MissingNode(graph.name(id).to_string())),
            Some(tag) => tags.push(tag.as_deref()),
        }
    }
    let tagging = Tagging::from_names(tags);
    let decisions = (doc.explanations.into_iter())
        .filter(|e| e.scope == "plan" && e.kind == "decision" && e.buffer.is_none())
        .filter_map(|e| {
            let rule = RuleId::ALL.into_iter().find(|r| r.id() == e.rule)?;
            Some(Explained {
                rule,
                kind: FindingKind::Decision,
                message: e.message,
                nodes: e.nodes,
                path: Vec::new(),
                buffer: None,
                partition: None,
                bytes: None,
            })
        })
        .collect();
    Ok(GivenPlan {
        tagging,
        options: doc.options.apply_to(&graph.options),
        cost: (doc.cost.map_or_else(CostOverrides::default, |c| c.model))
            .apply_to(&CostModel::default()),
        decisions,
        buffers: doc.buffers,
    })
}
