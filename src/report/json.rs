//! `partition-planner/plan@1` and `partition-planner/check@1` documents (docs/bridge-json.md).

use super::Prose;
use super::findings::{Explained, explain_all};
use super::reasons::cut_sentence;
use crate::analyse::{Analysis, MutationKind};
use crate::cost::CostEstimate;
use crate::decision::{Strategy, StrategyRequest};
use crate::graph::{Graph, NodeId};
use crate::measure::Measure;
use crate::outcome::{Plan, Verdict};
use crate::plan::{self, BufferDecision, Cut, CutReason};
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
struct Scoped {
    #[serde(flatten)]
    finding: Explained,
    scope: &'static str,
}

fn scoped(scope: &'static str, list: Vec<Explained>) -> impl Iterator<Item = Scoped> {
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
    /// The members written, by [`Member`]: all of them, but for [`plan_json_text`]'s pieces.
    members: Range<usize>,
}

/// The plan document's members, in the order they are written.
#[derive(Clone, Copy)]
enum Member {
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

const MEMBERS: usize = Member::Stats as usize + 1;

/// The members that depend on the plan alone, not on the stock proposal nor the checker's verdict:
/// node tags, partitions, cuts and buffers, most of a large plan's text.
const PLAN_ALONE: Range<usize> = Member::NodeTags as usize..Member::Explanations as usize;

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

/// A plan document's pretty JSON, as `serde_json::to_string_pretty(&plan_json(..))` writes it,
/// kept in the pieces it was written in and written out one after another: joining them would
/// copy most of a large plan once more.
#[derive(Default)]
pub struct PlanText {
    /// Each an object of some of the document's members, in order, written at the depth they
    /// have in the whole: `{\n  "key": value,\n  …\n}`.
    pieces: Vec<String>,
}

impl PlanText {
    /// The text, in parts to be written one after another: each piece without the braces that
    /// close it and open the next, and a comma between.
    pub fn parts(&self) -> impl Iterator<Item = &str> {
        let last = self.pieces.len().saturating_sub(1);
        self.pieces.iter().enumerate().flat_map(move |(i, piece)| {
            let from = if i == 0 { 0 } else { 2 };
            let to = if i == last {
                piece.len()
            } else {
                piece.len() - 2
            };
            let comma = if i == last { "" } else { ",\n" };
            [&piece[from..to], comma]
        })
    }

    /// The text's length in bytes.
    pub fn len(&self) -> usize {
        self.parts().map(str::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Display for PlanText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.parts().try_for_each(|part| f.write_str(part))
    }
}

/// What of the plan document a draft already has, written: the members in [`PLAN_ALONE`], and the
/// explanations of the planner's decisions and of the checker's findings on it. A caller can write
/// it while the stock side is still at work; [`plan_json_text`] writes the rest around it.
pub struct DraftJson {
    /// A piece of the document holding `node_tags` alone ([`node_tags_piece`]).
    node_tags: String,
    /// A piece of the document: an object of the other [`PLAN_ALONE`] members.
    members: String,
    /// The plan's explanations, as the items of the `explanations` array at their depth (empty
    /// for none).
    explanations: String,
}

/// The part of the plan document that the draft `plan` and the checker's findings on it (`found`)
/// already say: see [`DraftJson`].
pub fn plan_alone_json<S>(
    graph: &Graph,
    analysis: &Analysis,
    plan: &plan::Plan<S>,
    found: &[Finding],
) -> serde_json::Result<DraftJson> {
    let node_tags = node_tags_piece(graph, &plan.tagging);
    let after_node_tags = Member::NodeTags as usize + 1..PLAN_ALONE.end;
    let members =
        serde_json::to_string_pretty(&PlanAlone::of(graph, analysis, plan, after_node_tags))?;
    let prose = Prose { graph, analysis };
    let explanations = explanation_items(
        scoped("plan", prose.decisions(plan)).chain(scoped("plan", explain_all(graph, found))),
    )?;
    Ok(DraftJson {
        node_tags,
        members,
        explanations,
    })
}

/// A piece of the document holding the `node_tags` member alone, as serde's pretty writer writes
/// it, to the byte (the pieces test holds it to that), but written here: at 10^6 nodes it is most
/// of a plan's text, and serde's writer (an escape table read per byte) took 98 ms where this takes
/// 73 ms, most of it reading the names from the nodes.
fn node_tags_piece(graph: &Graph, tagging: &Tagging) -> String {
    if graph.is_empty() {
        return "{\n  \"node_tags\": {}\n}".to_string();
    }
    // A tag's text once per partition.
    let tags: Vec<String> = (0..tagging.partition_count())
        .map(|p| json_string(tagging.name(p as u32)))
        .collect();
    let mut out = String::with_capacity(graph.len() * 48);
    out.push_str("{\n  \"node_tags\": {");
    for (i, n) in graph.ids().enumerate() {
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        push_json_string(&mut out, graph.name(n));
        out.push_str(": ");
        match tagging.partition(n) {
            Some(p) => out.push_str(&tags[p as usize]),
            None => out.push_str("null"),
        }
    }
    out.push_str("\n  }\n}");
    out
}

/// `s` as a JSON string, as serde_json writes it.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

/// Appends `s` as a JSON string, as serde_json writes it: as it is between quotes unless it holds
/// a quote, a backslash or a control character, which serde escapes.
fn push_json_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b != b'"' && b != b'\\' && b >= 0x20) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        // Writing a string cannot fail.
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

/// `scoped`'s items as pretty JSON at the depth of the `explanations` array's items, without the
/// brackets around them: empty for none.
fn explanation_items(items: impl Iterator<Item = Scoped>) -> serde_json::Result<String> {
    /// A piece of the document holding the explanations alone (written, not built as a value).
    #[derive(Serialize)]
    struct Piece<'a> {
        explanations: &'a [Scoped],
    }
    let items: Vec<Scoped> = items.collect();
    let piece = serde_json::to_string_pretty(&Piece {
        explanations: &items,
    })?;
    Ok(piece
        .strip_prefix(EXPLANATIONS_OPEN)
        .and_then(|rest| rest.strip_suffix(EXPLANATIONS_CLOSE))
        .unwrap_or_default()
        .to_string())
}

/// How a piece holding the `explanations` member alone begins and ends when the array has items.
const EXPLANATIONS_OPEN: &str = "{\n  \"explanations\": [\n";
const EXPLANATIONS_CLOSE: &str = "\n  ]\n}";

/// The plan document's pretty text around `alone`, what [`plan_alone_json`] wrote for the draft
/// `plan` was made from and its findings (`verdict.plan`): the same text as
/// `serde_json::to_string_pretty(&plan_json(..))`.
pub fn plan_json_text(
    graph: &Graph,
    analysis: &Analysis,
    plan: &Plan,
    verdict: &Verdict,
    alone: DraftJson,
) -> serde_json::Result<PlanText> {
    let whole = plan_json(graph, analysis, plan, verdict);
    let piece = |members: Range<usize>| {
        serde_json::to_string_pretty(&PlanDocument {
            members,
            ..whole.clone()
        })
    };
    let stock = explanation_items(scoped("stock", explain_all(graph, &verdict.stock)))?;
    let explanations = match (alone.explanations.is_empty(), stock.is_empty()) {
        (true, true) => "{\n  \"explanations\": []\n}".to_string(),
        (plan_none, stock_none) => {
            let between = if plan_none || stock_none { "" } else { ",\n" };
            [
                EXPLANATIONS_OPEN,
                &alone.explanations,
                between,
                &stock,
                EXPLANATIONS_CLOSE,
            ]
            .concat()
        }
    };
    let explanations_at = Member::Explanations as usize;
    Ok(PlanText {
        pieces: vec![
            piece(0..PLAN_ALONE.start)?,
            alone.node_tags,
            alone.members,
            explanations,
            piece(explanations_at + 1..MEMBERS)?,
        ],
    })
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
struct PlanAlone<'a> {
    graph: &'a Graph,
    analysis: &'a Analysis,
    tagging: &'a Tagging,
    measure: &'a Measure,
    cuts: &'a [Cut],
    buffers: &'a [BufferDecision],
    members: Range<usize>,
}

impl<'a> PlanAlone<'a> {
    fn of<S>(
        graph: &'a Graph,
        analysis: &'a Analysis,
        plan: &'a plan::Plan<S>,
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
            scoped("plan", prose.decisions(plan))
                .chain(scoped("plan", explain_all(graph, &verdict.plan)))
                .chain(scoped("stock", explain_all(graph, &verdict.stock)))
        });
        let m = &plan.measure;
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
                "estimate_us": plan.estimate.total_us,
                "stock_estimate_us": plan.stock.estimate.total_us,
            })
        };
        let cost = || {
            json!({
                "model": plan.cost,
                "estimate": plan.estimate,
                "stock_estimate": plan.stock.estimate,
                "candidates_estimated": plan.candidates_estimated,
            })
        };
        let alone = PlanAlone::of(graph, analysis, plan, members.clone());
        let mut map = s.serialize_map(Some(members.len()))?;
        for &member in &Member::ALL[members.clone()] {
            match member {
                Member::Schema => map.serialize_entry("schema", PLAN_SCHEMA)?,
                Member::Options => map.serialize_entry("options", &plan.options)?,
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

#[cfg(test)]
mod tests {
    use crate::api::{Overrides, plan_graph_json};
    use crate::fixtures::load;
    use crate::synthetic::BridgeBuilder;

    /// The text written in pieces, part of it from the draft, is serde's text of the whole
    /// document, whichever scopes have explanations: none, the plan's, the stock proposal's, both.
    #[test]
    fn the_pieces_are_the_whole_document_whoever_explains() {
        let graph = |tags: &[(&str, &str)], supported: bool| {
            let mut b = BridgeBuilder::new();
            b.user_input("x", &[1, 8])
                .op("a", "aten.relu.default", &["x"], supported)
                .op("b", "aten.sin.default", &["a"], false)
                .op("c", "aten.add.Tensor", &["b", "a"], supported)
                .output(&["c"]);
            for (node, tag) in tags {
                b.tag(node, Some(tag));
            }
            load(&b)
        };
        // A mutated buffer: the plan explains where its chain goes.
        let buffer = |tagged: bool, reads_output: bool| {
            let mut b = BridgeBuilder::new();
            b.buffer("b_cache", "cache", &[1, 16, 8])
                .user_input("x", &[1, 8])
                .op("mul", "aten.mul.Tensor", &["b_cache", "x"], true)
                .op(
                    "scatter",
                    "aten.slice_scatter.default",
                    &["b_cache", "mul"],
                    true,
                )
                .op("sin", "aten.sin.default", &["mul"], false)
                .op(
                    "add",
                    "aten.add.Tensor",
                    &[if reads_output { "sin" } else { "mul" }, "x"],
                    true,
                )
                .mutates("scatter", "cache")
                .output(&["add"]);
            if tagged {
                for node in ["b_cache", "mul", "scatter", "add"] {
                    b.tag(node, Some("tag0"));
                }
            }
            load(&b)
        };
        // Where states are allowed, the stock proposal of a whole chain breaks no rule.
        let ios18 = Overrides {
            options: crate::options::PartialOptions {
                minimum_deployment_target: Some(crate::options::DeploymentTarget::Ios18),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut scopes = Vec::new();
        for g in [
            // Nothing the backend runs: nothing to explain.
            graph(&[], false),
            // One partition around an op it cannot run: a cycle the stock proposal has.
            graph(&[("a", "tag0"), ("c", "tag0")], true),
            buffer(true, false),
            buffer(true, true),
            buffer(false, false),
        ] {
            let (planned, pieces) = plan_graph_json(g, &ios18).expect("plans");
            let whole = serde_json::to_string_pretty(&planned.json()).expect("writes");
            assert!(pieces.expect("writes").to_string() == whole);
            let said = |scope: &str| {
                let doc: serde_json::Value = serde_json::from_str(&whole).expect("json");
                (doc["explanations"].as_array().expect("array").iter()).any(|e| e["scope"] == scope)
            };
            scopes.push((said("plan"), said("stock")));
        }
        for both in [(false, false), (false, true), (true, false), (true, true)] {
            assert!(scopes.contains(&both), "{both:?} not among {scopes:?}");
        }
    }

    /// Node names serde escapes (quotes, backslashes, control characters) and names it writes as
    /// they are (other unicode, DEL) come out of the hand-written `node_tags` piece as serde
    /// writes them.
    #[test]
    fn node_tags_written_by_hand_are_serdes_text() {
        let names = [
            "plain",
            "quo\"te",
            "back\\slash",
            "new\nline",
            "bell\u{7}",
            "del\u{7f}",
            "caf\u{e9} \u{1F600}",
            "tab\t/slash",
        ];
        let mut b = BridgeBuilder::new();
        b.user_input(names[0], &[1, 8]);
        for pair in names.windows(2) {
            b.op(pair[1], "aten.relu.default", &[pair[0]], true);
        }
        b.op("cpu", "aten.sin.default", &[names[names.len() - 1]], false)
            .output(&["cpu"]);
        let (planned, pieces) = plan_graph_json(load(&b), &Overrides::default()).expect("plans");
        let whole = serde_json::to_string_pretty(&planned.json()).expect("writes");
        assert!(pieces.expect("writes").to_string() == whole);
        let doc: serde_json::Value = serde_json::from_str(&whole).expect("json");
        let tags = doc["node_tags"].as_object().expect("an object");
        assert_eq!(
            tags.keys().map(String::as_str).collect::<Vec<_>>()[..names.len()],
            names
        );
        assert!(tags["cpu"].is_null() && tags["plain"].is_null() && tags["del\u{7f}"].is_string());
    }
}
