//! The `partition-planner/plan@1` and `partition-planner/check@1` documents (docs/bridge-json.md),
//! as serde writes them: each member streamed from the plan, not built as a JSON value first. The
//! CLI writes a plan's text in pieces (`plan_pieces.rs`), to the byte the same.

use super::Prose;
use super::findings::{Explained, explain_all};
use super::reasons::cut_sentence;
use crate::analyse::{Analysis, MutationKind};
use crate::cost::CostEstimate;
use crate::decision::{Strategy, StrategyRequest};
use crate::graph::{Graph, NodeId};
use crate::measure::Measure;
use crate::outcome::{Plan, Verdict};
use crate::plan::{BufferDecision, Cut, CutReason, Draft};
use crate::rules::{Finding, RuleId};
use crate::schema::{CHECK_SCHEMA, PLAN_SCHEMA};
use crate::stock::ExecutorchVersion;
use crate::tagging::Tagging;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::json;
use std::ops::Range;

/// Nodes by name, written as a sequence without building it.
struct Names<'a>(&'a Graph, &'a [NodeId]);

impl Serialize for Names<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Names(graph, ids) = *self;
        s.collect_seq(ids.iter().map(|&n| graph.name(n)))
    }
}

/// A value written as its `Display` says it.
struct Shown<T>(T);

impl<T: std::fmt::Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// A sequence written as it is produced, without building it first.
struct SeqOf<F>(F);

impl<F, I> Serialize for SeqOf<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

/// A map written as it is produced, keys in the order given.
struct MapOf<F>(F);

impl<F, I, K, V> Serialize for MapOf<F>
where
    F: Fn() -> I,
    I: IntoIterator<Item = (K, V)>,
    K: Serialize,
    V: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map((self.0)())
    }
}

/// Every node's tag, `null` for CPU: the part of a plan that grows with the graph.
fn node_tags<'a>(graph: &'a Graph, tagging: &'a Tagging) -> impl Serialize + 'a {
    MapOf(move || graph.ids().map(|n| (graph.name(n), tagging.tag(n))))
}

/// One partition of the plan document (written field by field, not built as a JSON value).
#[derive(Serialize)]
struct PartitionEntry<'a> {
    tag: &'a str,
    nodes: usize,
    inputs: Names<'a>,
    outputs: Names<'a>,
    states: &'a [String],
    state_bytes: u64,
    weight_bytes: u64,
    boundary_bytes: u64,
    unsized_boundary_values: usize,
    unsized_weights: usize,
    unsized_states: usize,
}

fn partitions<'a>(graph: &'a Graph, measure: &'a Measure) -> impl Serialize + 'a {
    SeqOf(move || {
        measure.partitions.iter().map(|p| PartitionEntry {
            tag: &p.tag,
            nodes: p.nodes,
            inputs: Names(graph, &p.inputs),
            outputs: Names(graph, &p.outputs),
            states: &p.states,
            state_bytes: p.state_bytes,
            weight_bytes: p.weight_bytes,
            boundary_bytes: p.boundary_bytes,
            unsized_boundary_values: p.unsized_boundary_values,
            unsized_weights: p.unsized_weights,
            unsized_states: p.unsized_states,
        })
    })
}

/// One mutable buffer's decision in the plan document.
#[derive(Serialize)]
struct BufferEntry<'a> {
    buffer: &'a str,
    placeholder: &'a str,
    writer: &'a str,
    chain: Names<'a>,
    kind: MutationKind,
    requested: Shown<StrategyRequest>,
    strategy: Strategy,
    partition: Option<&'a str>,
    rule: Option<RuleId>,
    reason: String,
    alternatives: Vec<AlternativeEntry<'a>>,
    decided_with: usize,
}

/// One strategy a buffer's class could have taken, with the whole plan's estimate.
#[derive(Serialize)]
struct AlternativeEntry<'a> {
    strategy: Strategy,
    estimate: &'a CostEstimate,
    refused: Option<RefusalEntry>,
}

#[derive(Serialize)]
struct RefusalEntry {
    rule: RuleId,
    reason: String,
}

/// Why a cut is there, as one word of the plan document.
fn cut_kind(reason: &CutReason) -> &'static str {
    match reason {
        CutReason::WeightBudget { .. } => "max_weight_bytes",
        CutReason::OpBudget { .. } => "max_ops",
        CutReason::Asked { after: true, .. } => "cut_after",
        CutReason::Asked { after: false, .. } => "cut_before",
    }
}

/// A finding with the scope it belongs to: the plan, the stock proposal or a checked tagging.
#[derive(Serialize)]
pub(super) struct Scoped {
    #[serde(flatten)]
    finding: Explained,
    scope: &'static str,
}

pub(super) fn scoped(scope: &'static str, list: Vec<Explained>) -> impl Iterator<Item = Scoped> {
    list.into_iter()
        .map(move |finding| Scoped { finding, scope })
}

/// The `partition-planner/plan@1` document; serialize it with serde_json (streamed, not built).
#[derive(Clone)]
pub struct PlanDocument<'a> {
    graph: &'a Graph,
    analysis: &'a Analysis,
    plan: &'a Plan,
    verdict: &'a Verdict,
    /// The members written, by [`Member`]: all of them, but for the pieces `plan_pieces.rs`
    /// writes.
    pub(super) members: Range<usize>,
}

impl PlanDocument<'_> {
    /// The same document with only `members` written.
    pub(super) fn only(&self, members: Range<usize>) -> Self {
        PlanDocument {
            members,
            ..self.clone()
        }
    }
}

/// The plan document's members, in the order they are written.
#[derive(Clone, Copy)]
pub(super) enum Member {
    Schema,
    Options,
    Cost,
    NodeTags,
    Partitions,
    Cuts,
    Buffers,
    Explanations,
    Stats,
}

pub(super) const MEMBERS: usize = Member::Stats as usize + 1;

/// The members that depend on the plan alone, not on the stock proposal nor the checker's verdict:
/// node tags, partitions, cuts and buffers, most of a large plan's text.
pub(super) const PLAN_ALONE: Range<usize> =
    Member::NodeTags as usize..Member::Explanations as usize;

impl Member {
    const ALL: [Member; MEMBERS] = [
        Member::Schema,
        Member::Options,
        Member::Cost,
        Member::NodeTags,
        Member::Partitions,
        Member::Cuts,
        Member::Buffers,
        Member::Explanations,
        Member::Stats,
    ];
}

/// `verdict` is the checker's, run on `plan` by the caller.
pub fn plan_json<'a>(
    graph: &'a Graph,
    analysis: &'a Analysis,
    plan: &'a Plan,
    verdict: &'a Verdict,
) -> PlanDocument<'a> {
    PlanDocument {
        graph,
        analysis,
        plan,
        verdict,
        members: 0..MEMBERS,
    }
}

/// The members in [`PLAN_ALONE`] (those of `members` among them), from a plan or a draft.
pub(super) struct PlanAlone<'a> {
    graph: &'a Graph,
    analysis: &'a Analysis,
    tagging: &'a Tagging,
    measure: &'a Measure,
    cuts: &'a [Cut],
    buffers: &'a [BufferDecision],
    members: Range<usize>,
}

impl<'a> PlanAlone<'a> {
    pub(super) fn of(
        graph: &'a Graph,
        analysis: &'a Analysis,
        plan: &'a Draft,
        members: Range<usize>,
    ) -> Self {
        PlanAlone {
            graph,
            analysis,
            tagging: &plan.tagging,
            measure: &plan.measure,
            cuts: &plan.cuts,
            buffers: &plan.buffers,
            members,
        }
    }

    /// Writes `member` into `map`, if it is one of these.
    fn entry<M: SerializeMap>(&self, map: &mut M, member: Member) -> Result<(), M::Error> {
        let PlanAlone {
            graph,
            analysis,
            tagging,
            measure,
            cuts,
            buffers,
            ..
        } = *self;
        match member {
            Member::NodeTags => map.serialize_entry("node_tags", &node_tags(graph, tagging)),
            Member::Partitions => map.serialize_entry("partitions", &partitions(graph, measure)),
            Member::Cuts => {
                let cuts = SeqOf(|| {
                    cuts.iter().map(|c| {
                        json!({
                            "after": graph.name(c.after),
                            "before": graph.name(c.before),
                            "partitions": [tagging.tag(c.after), tagging.tag(c.before)],
                            "why": cut_kind(&c.reason),
                            "crossing_bytes": c.crossing_bytes,
                            "pattern": match &c.reason { CutReason::Asked { pattern, .. } => Some(pattern), _ => None },
                            "reason": cut_sentence(graph, c),
                        })
                    })
                });
                map.serialize_entry("cuts", &cuts)
            }
            Member::Buffers => {
                let prose = Prose { graph, analysis };
                let buffers = SeqOf(|| {
                    buffers
                        .iter()
                        .zip(&analysis.buffers)
                        .map(|(b, chain)| BufferEntry {
                            buffer: &b.buffer,
                            placeholder: graph.name(b.placeholder),
                            writer: graph.name(b.writer),
                            chain: Names(graph, &chain.chain),
                            kind: chain.kind,
                            requested: Shown(b.requested),
                            strategy: b.strategy,
                            partition: b.partition.as_deref(),
                            rule: b.rule,
                            reason: prose.reason(b),
                            alternatives: (b.alternatives.iter())
                                .map(|a| AlternativeEntry {
                                    strategy: a.strategy,
                                    estimate: &a.estimate,
                                    refused: a.refused.as_ref().map(|r| RefusalEntry {
                                        rule: r.rule(),
                                        reason: prose.refusal(r),
                                    }),
                                })
                                .collect(),
                            decided_with: b.class_size,
                        })
                });
                map.serialize_entry("buffers", &buffers)
            }
            _ => Ok(()),
        }
    }
}

/// A piece of the document: an object of the members in `members` that depend on the plan alone.
impl Serialize for PlanAlone<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.members.len()))?;
        for member in &Member::ALL[self.members.clone()] {
            self.entry(&mut map, *member)?;
        }
        map.end()
    }
}

impl Serialize for PlanDocument<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let PlanDocument {
            graph,
            analysis,
            plan,
            verdict,
            ref members,
        } = *self;
        let prose = Prose { graph, analysis };
        let explanations = SeqOf(|| {
            scoped("plan", prose.decisions(&plan.draft))
                .chain(scoped("plan", explain_all(graph, &verdict.plan)))
                .chain(scoped("stock", explain_all(graph, &verdict.stock)))
        });
        let m = &plan.draft.measure;
        let stats = || {
            json!({
                "nodes": graph.len(),
                "nodes_delegated": m.delegated_nodes,
                "partitions": m.partitions.len(),
                "stock_partitions": plan.stock.tagging.partition_count(),
                "stock_proposal": plan.stock.source.as_str(),
                "states": m.states(),
                "boundary_bytes": m.boundary_bytes(),
                "constant_copies": m.constant_copies.iter().filter(|c| graph.role(c.placeholder).is_constant_data()).map(|c| c.copies()).sum::<usize>(),
                "constant_copy_bytes": m.constant_copy_bytes(),
                "violations": verdict.violations().count(),
                "estimate_us": plan.draft.estimate.total_us,
                "stock_estimate_us": plan.stock.estimate.total_us,
            })
        };
        let cost = || {
            json!({
                "model": plan.draft.cost,
                "estimate": plan.draft.estimate,
                "stock_estimate": plan.stock.estimate,
                "candidates_estimated": plan.draft.candidates_estimated,
            })
        };
        let alone = PlanAlone::of(graph, analysis, &plan.draft, members.clone());
        let mut map = s.serialize_map(Some(members.len()))?;
        for &member in &Member::ALL[members.clone()] {
            match member {
                Member::Schema => map.serialize_entry("schema", PLAN_SCHEMA)?,
                Member::Options => map.serialize_entry("options", &plan.draft.options)?,
                Member::Cost => map.serialize_entry("cost", &cost())?,
                Member::Explanations => map.serialize_entry("explanations", &explanations)?,
                Member::Stats => map.serialize_entry("stats", &stats())?,
                Member::NodeTags | Member::Partitions | Member::Cuts | Member::Buffers => {
                    alone.entry(&mut map, member)?
                }
            }
        }
        map.end()
    }
}

/// The `partition-planner/check@1` document.
pub struct CheckDocument<'a> {
    graph: &'a Graph,
    tagging: &'a Tagging,
    reproduced: Option<ExecutorchVersion>,
    measure: &'a Measure,
    found: &'a [Finding],
}

pub fn check_json<'a>(
    graph: &'a Graph,
    tagging: &'a Tagging,
    reproduced: Option<ExecutorchVersion>,
    measure: &'a Measure,
    found: &'a [Finding],
) -> CheckDocument<'a> {
    CheckDocument {
        graph,
        tagging,
        reproduced,
        measure,
        found,
    }
}

impl Serialize for CheckDocument<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let found = self.found;
        let mut map = s.serialize_map(Some(7 + usize::from(self.reproduced.is_some())))?;
        map.serialize_entry("schema", CHECK_SCHEMA)?;
        // What was checked: the document's tags, or the stock proposal reproduced for a version.
        match self.reproduced {
            None => map.serialize_entry("checked", "document")?,
            Some(version) => {
                map.serialize_entry("checked", "stock_reproduced")?;
                map.serialize_entry("executorch", version.as_str())?;
            }
        }
        map.serialize_entry("ok", &!found.iter().any(Finding::is_violation))?;
        map.serialize_entry(
            "violations",
            &found.iter().filter(|f| f.is_violation()).count(),
        )?;
        map.serialize_entry(
            "findings",
            &SeqOf(|| scoped("checked", explain_all(self.graph, found))),
        )?;
        map.serialize_entry("partitions", &partitions(self.graph, self.measure))?;
        map.serialize_entry("node_tags", &node_tags(self.graph, self.tagging))?;
        map.end()
    }
}
