//! Plan: decide, for every mutable buffer, where its whole chain lives (a Core ML state, CPU, or
//! delegate input/output), then split what is left for the delegate into the fewest convex
//! partitions. The result is a value, a [`Plan`], that can be checked, reported, diffed and applied.

mod levels;
mod search;
mod strategy;

pub use search::Alternative;

use crate::analyse::{Analysis, DirectedGraph};
use crate::check;
use crate::cost::{CostEstimate, CostModel, Scratch, estimate};
use crate::graph::{Graph, NodeId};
use crate::measure::{Measure, measure};
use crate::options::Options;
use crate::rules::{Finding, RuleId};
use crate::tagging::Tagging;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a mutable buffer's chain lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The whole chain in one delegate partition that owns the buffer as a Core ML state.
    State,
    /// The whole chain on CPU, the placeholder untagged; delegates read the buffer as a plain input.
    Cpu,
    /// The chain in delegates where supported, the placeholder untagged, the new value returned as an
    /// ordinary output and written back by the runtime.
    Io,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::State => "state",
            Strategy::Cpu => "cpu",
            Strategy::Io => "io",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the user asked for one buffer or all: a strategy, or the planner's choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StrategyRequest {
    #[default]
    Auto,
    Fixed(Strategy),
}

/// `STRATEGY` for every buffer, or `BUFFER=STRATEGY` for one: the spelling `--strategy` and the
/// what-if change `strategy=` share.
pub fn parse_strategy_spec(s: &str) -> Result<(Option<String>, StrategyRequest), String> {
    match s.split_once('=') {
        Some((buffer, strategy)) => Ok((Some(buffer.to_string()), strategy.parse()?)),
        None => Ok((None, s.parse()?)),
    }
}

impl FromStr for StrategyRequest {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "auto" => StrategyRequest::Auto,
            "state" => StrategyRequest::Fixed(Strategy::State),
            "cpu" => StrategyRequest::Fixed(Strategy::Cpu),
            "io" => StrategyRequest::Fixed(Strategy::Io),
            _ => {
                return Err(format!(
                    "unknown strategy {s:?} (expected state, cpu, io or auto)"
                ));
            }
        })
    }
}

impl fmt::Display for StrategyRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrategyRequest::Auto => f.write_str("auto"),
            StrategyRequest::Fixed(s) => s.fmt(f),
        }
    }
}

/// Everything a plan depends on besides the graph's structure. What-if questions are requests.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanRequest {
    pub options: Options,
    /// For every buffer not named in `buffer_strategies`.
    pub strategy: StrategyRequest,
    /// Per buffer, by buffer or placeholder name; a later entry wins.
    pub buffer_strategies: Vec<(String, StrategyRequest)>,
    /// Whether the backend can run each node, in node order.
    pub supported: Vec<bool>,
    /// Nodes the caller keeps on CPU whatever their support.
    pub on_cpu: Vec<NodeId>,
    /// The constants `auto` weighs plans by.
    pub cost: CostModel,
    /// Run the independent checker on the plan and on the stock tagging.
    pub verify: bool,
}

impl PlanRequest {
    /// The request the document itself makes: its options and support, every buffer on auto.
    pub fn new(graph: &Graph) -> Self {
        PlanRequest {
            options: graph.options.clone(),
            strategy: StrategyRequest::Auto,
            buffer_strategies: Vec::new(),
            supported: graph.nodes.iter().map(|n| n.supported).collect(),
            on_cpu: Vec::new(),
            cost: CostModel::default(),
            verify: true,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no mutable buffer is named {name:?} (known: {known})")]
    UnknownBuffer { name: String, known: String },
    #[error("the support table has {got} entries for a graph of {expected} nodes")]
    SupportLength { got: usize, expected: usize },
}

/// The decision for one mutable buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecision {
    pub buffer: String,
    pub placeholder: NodeId,
    pub writer: NodeId,
    pub requested: StrategyRequest,
    pub strategy: Strategy,
    /// Why, in a sentence a person reads.
    pub reason: String,
    /// The rule behind the decision, where one is.
    pub rule: Option<RuleId>,
    /// The partition owning the state, for `state`.
    pub partition: Option<String>,
    /// For `auto`: each strategy the options allow, with the whole plan's estimate had this
    /// buffer's class taken it (the chosen one is the plan's own estimate).
    pub alternatives: Vec<Alternative>,
    /// For `auto`: how many buffers of the same shape were decided together (itself included).
    pub class_size: usize,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub options: Options,
    pub tagging: Tagging,
    pub buffers: Vec<BufferDecision>,
    pub measure: Measure,
    /// The cost model's constants and its estimate of this plan.
    pub cost: CostModel,
    pub estimate: CostEstimate,
    /// The same model's estimate of the stock proposal the input carried.
    pub stock_estimate: CostEstimate,
    /// Candidate plans the `auto` search estimated.
    pub candidates_estimated: usize,
    /// Partitions in the stock proposal the input carried.
    pub stock_partitions: usize,
    /// Why the planner chose what it chose, citing rules.
    pub decisions: Vec<Finding>,
    /// The checker on this plan: costs (a violation here is a planner bug).
    pub findings: Vec<Finding>,
    /// The checker on the stock proposal: what the planner fixed.
    pub stock_findings: Vec<Finding>,
}

impl Plan {
    pub fn violations(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.is_violation())
    }
}

pub fn plan(graph: &Graph, analysis: &Analysis, request: &PlanRequest) -> Result<Plan, PlanError> {
    if request.supported.len() != graph.len() {
        return Err(PlanError::SupportLength {
            got: request.supported.len(),
            expected: graph.len(),
        });
    }
    let requested = strategy::resolve_requests(graph, analysis, request)?;
    let searched = search::search(graph, analysis, request, &requested);
    let decided = searched.decided;
    let tagging = tag_nodes(
        graph,
        analysis,
        &request.options,
        &decided.partition,
        decided.partition_count,
    );
    let buffers: Vec<BufferDecision> = analysis
        .buffers
        .iter()
        .zip(decided.outcomes)
        .zip(&requested)
        .zip(searched.alternatives.into_iter().zip(searched.class_size))
        .map(
            |(((chain, mut outcome), &requested), (alternatives, class_size))| {
                let partition = (outcome.strategy == Strategy::State).then(|| {
                    tagging
                        .tag(chain.placeholder)
                        .unwrap_or_default()
                        .to_string()
                });
                if let Some(tag) = &partition {
                    outcome.reason = strategy::kept_reason(chain, tag);
                }
                let (reason, rule) = match requested {
                    StrategyRequest::Auto => {
                        search::explain(request, &outcome, &alternatives, class_size)
                    }
                    StrategyRequest::Fixed(_) => (outcome.reason, outcome.rule),
                };
                BufferDecision {
                    buffer: chain.buffer.clone(),
                    placeholder: chain.placeholder,
                    writer: chain.writer,
                    requested,
                    strategy: outcome.strategy,
                    partition,
                    reason,
                    rule,
                    alternatives,
                    class_size,
                }
            },
        )
        .collect();
    let mut decisions = decided.findings;
    decisions.extend(searched.refusals);
    for b in &buffers {
        if let (Some(rule), StrategyRequest::Auto | StrategyRequest::Fixed(Strategy::State)) =
            (b.rule, b.requested)
        {
            let mut f = Finding::new(
                rule,
                crate::rules::FindingKind::Decision,
                format!("{}: {}", b.buffer, b.reason),
            )
            .buffer(&b.buffer)
            .nodes([graph.name(b.placeholder), graph.name(b.writer)]);
            if let Some(p) = &b.partition {
                f = f.partition(p);
            }
            decisions.push(f);
        }
    }
    let stock = Tagging::stock(graph);
    let stock_estimate = estimate(
        graph,
        analysis,
        &request.options,
        &request.cost,
        stock.partitions(),
        stock.partition_count(),
        &mut Scratch::default(),
    );
    let mut plan = Plan {
        options: request.options.clone(),
        measure: measure(graph, &tagging),
        cost: request.cost,
        estimate: searched.estimate,
        stock_estimate,
        candidates_estimated: searched.evaluated,
        tagging,
        buffers,
        stock_partitions: graph.stock_partitions,
        decisions,
        findings: Vec::new(),
        stock_findings: Vec::new(),
    };
    if request.verify {
        // A node kept on CPU may be tagged by nobody: to the checker it is unsupported.
        let mut delegable = request.supported.clone();
        for n in &request.on_cpu {
            delegable[n.index()] = false;
        }
        plan.findings = check::verify_plan(graph, &plan, &delegable);
        plan.stock_findings = check::check(graph, &stock, &request.options, &request.supported);
    }
    Ok(plan)
}

/// Names partitions `tag0`, `tag1`, … by level, then tags placeholders the way executorch does:
/// a state's placeholder with its partition (already set by its group), constant data with the
/// smallest tag among its users (`tag_constant_data`), every other placeholder untagged.
fn tag_nodes(
    graph: &Graph,
    analysis: &Analysis,
    options: &Options,
    partition: &[Option<u32>],
    count: u32,
) -> Tagging {
    let names: Vec<String> = (0..count).map(|i| format!("tag{i}")).collect();
    let mut of = partition.to_vec();
    if options.take_over_constant_data {
        for id in graph.ids() {
            if graph.role(id).is_constant_data() {
                of[id.index()] = analysis
                    .index
                    .successors(id)
                    .iter()
                    .filter_map(|u| partition[u.index()])
                    .min_by(|a, b| names[*a as usize].cmp(&names[*b as usize]));
            }
        }
    }
    Tagging::new(names, of)
}

#[cfg(test)]
mod tests;
