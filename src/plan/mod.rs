//! Plan: decide, for every mutable buffer, where its whole chain lives (a Core ML state, CPU, or
//! delegate input/output), then split what is left for the delegate into the fewest convex
//! partitions. The result is a value, a [`Draft`], that can be checked, reported, diffed and
//! applied. The planner neither looks at the stock proposal nor runs the checker: the pipeline
//! (`crate::pipeline`) sets the draft beside both.

mod chunks;
mod cut_patterns;
mod levels;
mod pieces;
mod search;
mod strategy;

pub use crate::decision::{
    Alternative, BufferDecision, Cut, CutReason, Decision, Reason, Strategy, StrategyRequest,
    parse_strategy_spec,
};

use crate::analyse::{Adjacency, Analysis};
use crate::cost::{CostEstimate, CostModel};
use crate::graph::{Graph, NodeId};
use crate::measure::{Measure, measure};
use crate::options::Options;
use crate::tagging::Tagging;

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
}

impl PlanRequest {
    /// Whether the request is one for `graph`: a support table entry for each node. Checked before
    /// any work, since the stock side and the checker read the table by node.
    pub fn fits(&self, graph: &Graph) -> Result<(), PlanError> {
        if self.supported.len() != graph.len() {
            return Err(PlanError::SupportLength {
                got: self.supported.len(),
                expected: graph.len(),
            });
        }
        Ok(())
    }

    /// Which nodes a plan for this request may delegate, as the checker reads it: a node kept on
    /// CPU may be tagged by nobody, so to the checker it is unsupported.
    pub fn delegable(&self) -> Vec<bool> {
        let mut delegable = self.supported.clone();
        for n in &self.on_cpu {
            // A table of the wrong length is refused by `fits`, not here.
            if let Some(d) = delegable.get_mut(n.index()) {
                *d = false;
            }
        }
        delegable
    }

    /// The request the document itself makes: its options and support, every buffer on auto.
    pub fn new(graph: &Graph) -> Self {
        PlanRequest {
            options: graph.options.clone(),
            strategy: StrategyRequest::Auto,
            buffer_strategies: Vec::new(),
            supported: graph.supported(),
            on_cpu: Vec::new(),
            cost: CostModel::default(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no mutable buffer is named {name:?} (known: {known})")]
    UnknownBuffer { name: String, known: String },
    #[error("the support table has {got} entries for a graph of {expected} nodes")]
    SupportLength { got: usize, expected: usize },
    /// A `cut_after`/`cut_before` pattern no op's name or module path matches.
    #[error(
        "{flag} pattern {pattern:?} matches no op's name or module path{}",
        did_you_mean(nearest)
    )]
    CutMatchesNothing {
        pattern: String,
        flag: &'static str,
        nearest: Vec<String>,
    },
}

/// ` (did you mean "a" or "b"?)`, or nothing when there is nothing near.
fn did_you_mean(nearest: &[String]) -> String {
    let quoted: Vec<String> = nearest.iter().map(|n| format!("{n:?}")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => format!(" (did you mean {one}?)"),
        [rest @ .., last] => format!(" (did you mean {} or {last}?)", rest.join(", ")),
    }
}

/// A plan as the planner makes it: the tags and every decision behind them, compared with nothing.
/// All the checker needs to verify it; the pipeline adds the stock comparison
/// ([`crate::outcome::Plan`]).
#[derive(Clone, Debug)]
pub struct Draft {
    pub options: Options,
    pub tagging: Tagging,
    pub buffers: Vec<BufferDecision>,
    pub measure: Measure,
    /// The cost model's constants and its estimate of this plan.
    pub cost: CostModel,
    pub estimate: CostEstimate,
    /// Candidate plans the `auto` search estimated.
    pub candidates_estimated: usize,
    /// Why the planner chose what it chose beyond each buffer's line, citing rules.
    pub decisions: Vec<Decision>,
    /// Where partitions were cut for the budgets or as the user asked, in order.
    pub cuts: Vec<Cut>,
}

/// The plan for `request`.
pub fn draft(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
) -> Result<Draft, PlanError> {
    request.fits(graph)?;
    let requested = strategy::resolve_requests(graph, analysis, request)?;
    let cuts = cut_patterns::asked_cuts(graph, analysis, &request.options)?;
    let searched = search::search(graph, analysis, request, &requested, &cuts);
    let mut decided = searched.decided;
    let plan_cuts = std::mem::take(&mut decided.cuts);
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
            |(((chain, outcome), &requested), (alternatives, class_size))| {
                let partition = (outcome.strategy == Strategy::State).then(|| {
                    tagging
                        .tag(chain.placeholder)
                        .unwrap_or_default()
                        .to_string()
                });
                let kept = partition
                    .as_deref()
                    .map(|tag| strategy::kept_state(chain, tag));
                let (reason, rule) = match (requested, kept) {
                    (StrategyRequest::Auto, kept) => {
                        search::explain(request, &outcome, kept, &alternatives, class_size)
                    }
                    (StrategyRequest::Fixed(_), Some(kept)) => (Reason::Kept(kept), outcome.rule),
                    // Every fixed strategy but a kept state is stated when decided.
                    (StrategyRequest::Fixed(s), None) => (
                        outcome.reason.clone().unwrap_or(Reason::Requested(s)),
                        outcome.rule,
                    ),
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
    let mut decisions = not_convertible(graph, request);
    decisions.extend(decided.decisions);
    decisions.extend(searched.refusals);
    decisions.extend(buffers.iter().enumerate().filter_map(|(i, b)| {
        let cites_a_rule = b.rule.is_some()
            && matches!(
                b.requested,
                StrategyRequest::Auto | StrategyRequest::Fixed(Strategy::State)
            );
        cites_a_rule.then_some(Decision::Buffer(i))
    }));
    Ok(Draft {
        options: request.options.clone(),
        measure: measure(graph, &analysis.index, &tagging),
        cost: request.cost,
        estimate: searched.estimate,
        candidates_estimated: searched.evaluated,
        tagging,
        buffers,
        decisions,
        cuts: plan_cuts,
    })
}

/// The ops decomposed because the converter refuses them whole, then the ops the support check
/// accepts but the converter was found to refuse: they run on CPU. One decision per verdict (nodes
/// with the same call, error and way of finding), in node order.
fn not_convertible(graph: &Graph, request: &PlanRequest) -> Vec<Decision> {
    let mut groups: Vec<(&crate::graph::Conversion, Vec<NodeId>)> = Vec::new();
    for &n in &graph.refused_by_converter {
        if !request.supported[n.index()] {
            continue; // SUPPORTED already keeps it on CPU, verdict or not
        }
        let Some(verdict) = graph.node(n).conversion.as_deref() else {
            continue;
        };
        match groups.iter_mut().find(|(v, _)| *v == verdict) {
            Some((_, nodes)) => nodes.push(n),
            None => groups.push((verdict, vec![n])),
        }
    }
    (0..graph.decomposed.len())
        .map(Decision::Decomposed)
        .chain((groups.into_iter()).map(|(_, nodes)| Decision::NotConvertibleOnCpu(nodes)))
        .collect()
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
