//! One-call entry points over documents, shared by the CLI and the Python binding so that neither
//! builds requests or reports on its own: bridge JSON text in, a report out. Every subcommand of
//! the CLI goes through here.

use crate::analyse::{GraphIndex, analyse};
use crate::check::{GraphView, check};
use crate::cost::{CostError, CostOverrides};
use crate::decision::{Refusal, Strategy, StrategyRequest, UnknownStrategy};
use crate::graph::Graph;
use crate::import::{ImportError, parse_graph};
use crate::manifest::{Manifest, ManifestDiff, manifest, manifest_diff};
use crate::measure::{Measure, measure};
use crate::options::{DeploymentTarget, Options, PartialOptions};
use crate::plan::{Plan, PlanError, PlanRequest, parse_strategy_spec};
use crate::report::{self, PlanText};
use crate::rules::{Finding, RuleId};
use crate::schema::MANIFEST_SCHEMA;
use crate::stock::{self, ExecutorchVersion};
use crate::synthetic::{GenerateError, generate};
use crate::tagging::Tagging;
use crate::verify::{Verdict, plan_and_verify, plan_and_verify_then};
use crate::whatif::{Scenario, Session, WhatIf, WhatIfError};
use serde::Deserialize;
use std::collections::HashMap;

/// What a caller may override of the document's own options, and the strategies it asks for.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    #[serde(default)]
    pub options: PartialOptions,
    /// `state`, `cpu`, `io` or `auto` for every buffer, or `BUFFER=STRATEGY` for one; in order.
    #[serde(default)]
    pub strategies: Vec<String>,
    /// Cost constants replacing the defaults (docs/cost.md).
    #[serde(default)]
    pub cost: CostOverrides,
}

impl Overrides {
    pub fn options(&self, graph: &Graph) -> Options {
        self.options.apply_to(&graph.options)
    }

    /// What can be checked before there is a graph: the cost constants, the spelling of every
    /// strategy, and no `state` asked for while these overrides' own options forbid states
    /// (`take_over_mutable_buffer` false, or a target below iOS18; options left out are not
    /// assumed). Planning would demote such a state to `cpu` and explain why; a caller that builds
    /// the options itself (the export_llm entry point) refuses it up front instead.
    pub fn validate(&self) -> Result<(), ApiError> {
        self.cost.validate()?;
        for spec in &self.strategies {
            let (_, requested) = parse_strategy_spec(spec)?;
            if requested != StrategyRequest::Fixed(Strategy::State) {
                continue;
            }
            let refusal = match (
                self.options.take_over_mutable_buffer,
                self.options.minimum_deployment_target,
            ) {
                (Some(false), _) => Refusal::TakeOverOff,
                (_, Some(t)) if t < DeploymentTarget::Ios18 => Refusal::TargetBelowIos18(Some(t)),
                _ => continue,
            };
            return Err(ApiError::StateForbidden {
                spec: spec.clone(),
                rule: refusal.rule(),
                why: report::options_refusal(&refusal).unwrap_or_default(),
            });
        }
        Ok(())
    }

    pub fn request(&self, graph: &Graph) -> Result<PlanRequest, ApiError> {
        let mut request = PlanRequest::new(graph);
        request.options = self.options(graph);
        self.cost.validate()?;
        request.cost = self.cost.apply_to(&request.cost);
        for s in &self.strategies {
            match parse_strategy_spec(s)? {
                (Some(buffer), r) => request.buffer_strategies.push((buffer, r)),
                (None, r) => request.strategy = r,
            }
        }
        Ok(request)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Import(#[from] ImportError),
    #[error("{0}")]
    Plan(#[from] PlanError),
    #[error("{0}")]
    Strategy(#[from] UnknownStrategy),
    #[error("{0}")]
    Cost(#[from] CostError),
    /// A `state` strategy asked for under options that forbid states.
    #[error("strategy {spec:?} asks for a Core ML state, but {why} ({rule})")]
    StateForbidden {
        spec: String,
        rule: RuleId,
        why: String,
    },
    /// A what-if scenario the graph cannot answer (an unknown node or op, an unplannable request).
    #[error("scenario {name}: {source}")]
    Scenario { name: String, source: WhatIfError },
    #[error("{0}")]
    Manifest(serde_json::Error),
    #[error("not a {MANIFEST_SCHEMA} document")]
    NotAManifest,
    #[error("{0}")]
    Generate(#[from] GenerateError),
    /// A plan document that cannot be drawn over the graph given (`render --plan`).
    #[error("{0}")]
    PlanDocument(#[from] PlanDocumentError),
}

/// Why a `plan@1` document cannot be drawn over a graph.
#[derive(Debug, thiserror::Error)]
pub enum PlanDocumentError {
    #[error("not a {schema} document: {0}", schema = crate::schema::PLAN_SCHEMA)]
    Malformed(String),
    #[error("the plan tags node {0:?}, which the graph lacks: it was made for another graph")]
    UnknownNode(String),
    #[error("the plan says nothing of node {0:?}: it was made for another graph")]
    MissingNode(String),
    #[error("the plan gives buffer {buffer:?} the strategy {strategy:?}: state, cpu or io")]
    Strategy { buffer: String, strategy: String },
}

/// A planned document: the graph and its analysis, kept for reporting, the plan, and the
/// independent checker's verdict on it.
pub struct Planned {
    pub graph: Graph,
    pub analysis: crate::analyse::Analysis,
    pub plan: Plan,
    pub verdict: Verdict,
}

impl Planned {
    /// The `plan@1` document, written as serde serializes it.
    pub fn json(&self) -> report::PlanDocument<'_> {
        report::plan_json(&self.graph, &self.analysis, &self.plan, &self.verdict)
    }
    pub fn text(&self) -> String {
        report::plan_text(&self.graph, &self.analysis, &self.plan, &self.verdict)
    }
    /// The first violation the checker finds in the plan, in words: a planner bug.
    pub fn violation(&self) -> Option<report::Explained> {
        let v = self.verdict.violations().next()?;
        Some(report::explain(&self.graph, v))
    }
    /// One entry per delegate partition, keyed by content (docs/manifest.md).
    pub fn manifest(&self) -> Manifest {
        manifest(&self.graph, &self.plan.tagging, &self.plan.options)
    }
    /// The partition map the pictures are drawn from (`partition-planner render`).
    pub fn map(&self) -> report::map::Map<'_> {
        report::map::Map::new(&self.graph, &self.analysis, &self.plan, &self.verdict)
    }
    /// What to call the model in a picture: the model the exporter recorded, else `fallback`.
    pub fn title(&self, fallback: &str) -> String {
        title_of(&self.graph, fallback)
    }
    /// The plan drawn beside the stock proposal (docs/pictures.md).
    pub fn picture(&self, format: PictureFormat, title: &str) -> Picture {
        picture(&self.map(), format, title)
    }
}

/// A plan document drawn over its graph (`render --plan`): the tags and buffer decisions it
/// carries, checked here against every rule beside the stock proposal, as a plan made here is.
pub struct PlanOnGraph {
    pub graph: Graph,
    parts: report::map::MapParts,
}

impl PlanOnGraph {
    pub fn title(&self, fallback: &str) -> String {
        title_of(&self.graph, fallback)
    }
    /// The plan drawn beside the stock proposal.
    pub fn picture(self, format: PictureFormat, title: &str) -> Picture {
        let PlanOnGraph { graph, parts } = self;
        let index = GraphIndex::new(&graph);
        picture(
            &report::map::Map::from_parts(&graph, &index, parts),
            format,
            title,
        )
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

/// A plan's explanation as the picture reads it back: the plan's own decisions are drawn; the
/// checker finds the violations again.
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
struct PlanBufferIn {
    buffer: String,
    strategy: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct PlanCostIn {
    #[serde(default)]
    model: CostOverrides,
}

/// Reads `plan` (a `plan@1` document) over the bridge document `graph`. Every node must be in
/// the plan and every tagged node in the graph: a plan for another graph is refused.
pub fn plan_on_graph(graph: &str, plan: &str) -> Result<PlanOnGraph, ApiError> {
    let graph = parse_graph(graph)?;
    let doc: PlanDocumentIn =
        serde_json::from_str(plan).map_err(|e| PlanDocumentError::Malformed(e.to_string()))?;
    if doc.schema != crate::schema::PLAN_SCHEMA {
        return Err(PlanDocumentError::Malformed(format!("schema {:?}", doc.schema)).into());
    }
    for name in doc.node_tags.keys() {
        if graph.find(name).is_none() {
            return Err(PlanDocumentError::UnknownNode(name.clone()).into());
        }
    }
    let mut tags: Vec<Option<&str>> = Vec::with_capacity(graph.len());
    for id in graph.ids() {
        match doc.node_tags.get(graph.name(id)) {
            None => return Err(PlanDocumentError::MissingNode(graph.name(id).to_string()).into()),
            Some(tag) => tags.push(tag.as_deref()),
        }
    }
    let tagging = Tagging::from_names(tags);
    let options = doc.options.apply_to(&graph.options);
    let model = doc
        .cost
        .map_or_else(CostOverrides::default, |c| c.model)
        .apply_to(&crate::cost::CostModel::default());
    let analysis = analyse(&graph);
    let supported: Vec<bool> = graph.nodes.iter().map(|n| n.supported).collect();
    let (stock, source) = stock::proposal(&graph, analysis.index.as_ref(), &options, &supported);
    // A graph of 10^6 nodes has tens of thousands of buffers: found by name, not by a scan each.
    let given_by_name: HashMap<&str, &PlanBufferIn> =
        doc.buffers.iter().map(|b| (b.buffer.as_str(), b)).collect();
    let mut buffers = Vec::with_capacity(analysis.buffers.len());
    for chain in &analysis.buffers {
        let given = given_by_name.get(chain.buffer.as_str()).copied();
        let strategy = match given {
            // A plan says what it decided: a fixed strategy, never `auto`.
            Some(b) => match b.strategy.parse::<StrategyRequest>() {
                Ok(StrategyRequest::Fixed(s)) => s,
                _ => {
                    return Err(PlanDocumentError::Strategy {
                        buffer: b.buffer.clone(),
                        strategy: b.strategy.clone(),
                    }
                    .into());
                }
            },
            None => derived_strategy(&tagging, chain),
        };
        let partition = (strategy == Strategy::State)
            .then(|| tagging.tag(chain.placeholder).map(str::to_string))
            .flatten();
        let reason = given
            .and_then(|b| b.reason.clone())
            .unwrap_or_else(|| "read from the plan's tags".into());
        buffers.push(report::map::MapBuffer::of_chain(
            chain, strategy, partition, reason,
        ));
    }
    let plan_findings = check(&graph, &tagging, &options, &supported);
    let stock_findings = check(&graph, &stock, &options, &supported);
    let mut findings = report::map::MapFinding::all(&graph, &plan_findings, &stock_findings);
    let decisions = (doc.explanations.into_iter())
        .filter(|e| e.scope == "plan" && e.kind == "decision" && e.buffer.is_none())
        .filter_map(|e| {
            let rule = RuleId::ALL.into_iter().find(|r| r.id() == e.rule)?;
            Some(report::Explained {
                rule,
                kind: crate::rules::FindingKind::Decision,
                message: e.message,
                nodes: e.nodes,
                path: Vec::new(),
                buffer: None,
                partition: None,
                bytes: None,
            })
        });
    report::map::MapFinding::insert_plan_decisions(&graph, &mut findings, decisions);
    let mut scratch = crate::cost::Scratch::default();
    let mut estimate = |t: &Tagging| {
        crate::cost::estimate(
            &graph,
            &analysis,
            &options,
            &model,
            t.partitions(),
            t.partition_count(),
            &mut scratch,
        )
    };
    let parts = report::map::MapParts {
        plan_estimate: estimate(&tagging),
        stock_estimate: estimate(&stock),
        plan: tagging,
        stock,
        stock_source: source.as_str(),
        buffers,
        findings,
    };
    Ok(PlanOnGraph { graph, parts })
}

/// How a buffer lives under a tagging that does not say: a state when placeholder and writer
/// share a partition, on CPU when no node of its chain is tagged, otherwise passed through.
fn derived_strategy(tagging: &Tagging, chain: &crate::analyse::BufferChain) -> Strategy {
    let home = tagging.partition(chain.placeholder);
    if home.is_some() && home == tagging.partition(chain.writer) {
        Strategy::State
    } else if chain.chain.iter().all(|&n| tagging.partition(n).is_none()) {
        Strategy::Cpu
    } else {
        Strategy::Io
    }
}

fn title_of(graph: &Graph, fallback: &str) -> String {
    let recorded = graph.producer.as_ref().and_then(|p| p.get("model"));
    recorded
        .and_then(|m| m.as_str())
        .unwrap_or(fallback)
        .to_string()
}

/// A map drawn in `format`.
pub fn picture(map: &report::map::Map<'_>, format: PictureFormat, title: &str) -> Picture {
    match format {
        PictureFormat::Html => Picture::Text(report::map::html(map, title)),
        PictureFormat::Svg => Picture::Text(report::map::svg(map, title)),
        PictureFormat::Dot => Picture::Text(report::map::dot(map, title)),
        PictureFormat::ModelExplorer => Picture::Files(
            report::map::model_explorer(map)
                .into_iter()
                .map(|o| {
                    let mut text = serde_json::to_string_pretty(&o.data).unwrap_or_default();
                    text.push('\n');
                    (format!("{}.json", o.name), text)
                })
                .collect(),
        ),
    }
}

/// What `render` draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PictureFormat {
    /// One self-contained HTML page: both overviews, drill-down, buffers, findings.
    Html,
    /// Both overviews as one static SVG.
    Svg,
    /// Graphviz DOT of both overviews.
    Dot,
    /// Model Explorer node data: one file per overlay.
    ModelExplorer,
}

impl std::str::FromStr for PictureFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "html" => Ok(PictureFormat::Html),
            "svg" => Ok(PictureFormat::Svg),
            "dot" => Ok(PictureFormat::Dot),
            "model-explorer" => Ok(PictureFormat::ModelExplorer),
            other => Err(format!(
                "unknown picture format {other:?}: html, svg, dot or model-explorer"
            )),
        }
    }
}

/// A picture: one text, or named files (Model Explorer's overlays).
pub enum Picture {
    Text(String),
    Files(Vec<(String, String)>),
}

pub fn plan_document(text: &str, overrides: &Overrides) -> Result<Planned, ApiError> {
    plan_graph(parse_graph(text)?, overrides)
}

/// [`plan_document`] of a graph already imported: the CLI frees the document's text first.
pub fn plan_graph(graph: Graph, overrides: &Overrides) -> Result<Planned, ApiError> {
    let request = overrides.request(&graph)?;
    let (analysis, plan, verdict) = plan_and_verify(&graph, &request)?;
    Ok(Planned {
        graph,
        analysis,
        plan,
        verdict,
    })
}

/// [`plan_graph`] with the `plan@1` document as `serde_json::to_string_pretty` writes it. The
/// members that depend on the plan alone (most of a large plan's text) are written on the planner's
/// side as soon as the draft is checked: for a large document, while the stock proposal is still
/// being reproduced and checked on the other thread.
pub fn plan_graph_json(
    graph: Graph,
    overrides: &Overrides,
) -> Result<(Planned, serde_json::Result<PlanText>), ApiError> {
    let request = overrides.request(&graph)?;
    let (analysis, plan, verdict, alone) = plan_and_verify_then(
        &GraphView::default(),
        &graph,
        &request,
        |analysis, draft, found| report::plan_alone_json(&graph, analysis, draft, found),
    )?;
    let json =
        alone.and_then(|alone| report::plan_json_text(&graph, &analysis, &plan, &verdict, alone));
    let planned = Planned {
        graph,
        analysis,
        plan,
        verdict,
    };
    Ok((planned, json))
}

/// Which tagging `check` checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checking {
    /// The tags the document carries.
    #[default]
    Document,
    /// The stock proposal reproduced for this executorch version (the document's when `None`),
    /// whatever tags the document carries: what stock would do to it, without executorch.
    Stock(Option<ExecutorchVersion>),
}

impl Checking {
    /// From the flags the CLI and the Python binding take: `stock` checks the stock proposal, for
    /// the `executorch` version given (the document's when `None`); the version is ignored
    /// without `stock`. An unknown version is an error naming it.
    pub fn from_flags(
        stock: bool,
        executorch: Option<&str>,
    ) -> Result<Self, crate::stock::UnknownVersion> {
        Ok(match (stock, executorch) {
            (false, _) => Checking::Document,
            (true, None) => Checking::Stock(None),
            (true, Some(v)) => Checking::Stock(Some(ExecutorchVersion::parse(v)?)),
        })
    }
}

/// A checked document: the tagging checked and every finding on it.
pub struct Checked {
    pub graph: Graph,
    pub tagging: Tagging,
    /// `None` for the document's own tags; the version for a reproduced stock proposal.
    pub reproduced: Option<ExecutorchVersion>,
    pub measure: Measure,
    pub findings: Vec<Finding>,
}

impl Checked {
    pub fn ok(&self) -> bool {
        !self.findings.iter().any(Finding::is_violation)
    }
    /// The `check@1` document, written as serde serializes it.
    pub fn json(&self) -> report::CheckDocument<'_> {
        report::check_json(
            &self.graph,
            &self.tagging,
            self.reproduced,
            &self.measure,
            &self.findings,
        )
    }
    pub fn text(&self) -> String {
        report::check_text(&self.graph, self.reproduced, &self.measure, &self.findings)
    }
}

pub fn check_document(
    text: &str,
    overrides: &Overrides,
    checking: Checking,
) -> Result<Checked, ApiError> {
    let graph = parse_graph(text)?;
    let options = overrides.options(&graph);
    let supported: Vec<bool> = graph.nodes.iter().map(|n| n.supported).collect();
    let index = GraphIndex::new(&graph);
    let (tagging, reproduced) = match checking {
        Checking::Document => (Tagging::carried(&graph), None),
        Checking::Stock(version) => {
            let version = version.unwrap_or_else(|| stock::version_of(&graph));
            let tagging = stock::reproduce(&graph, &index, version, &options, &supported);
            (tagging, Some(version))
        }
    };
    let findings = check(&graph, &tagging, &options, &supported);
    Ok(Checked {
        measure: measure(&graph, &index, &tagging),
        graph,
        tagging,
        reproduced,
        findings,
    })
}

/// A document's what-if answers: the session (graph, base plan and the checker's verdict on it) and
/// each scenario's plan, diff and verdict.
pub struct Answers {
    pub session: Session,
    pub scenarios: Vec<Scenario>,
    pub results: Vec<WhatIf>,
}

impl Answers {
    fn base(&self) -> report::Base<'_> {
        report::Base {
            plan: &self.session.base,
            verdict: &self.session.base_verdict,
        }
    }

    fn answered(&self) -> Vec<report::Answered<'_>> {
        self.scenarios
            .iter()
            .zip(&self.results)
            .map(|(s, r)| report::Answered {
                name: &s.name,
                changes: &s.changes,
                plan: &r.plan,
                diff: &r.diff,
                verdict: &r.verdict,
            })
            .collect()
    }

    /// The `whatif@1` document.
    pub fn json(&self) -> serde_json::Value {
        report::whatif_json(&self.session.graph, self.base(), &self.answered())
    }

    /// One scenario's report, or, for a batch, the comparison table.
    pub fn text(&self, batch: bool) -> String {
        match self.answered().as_slice() {
            [one] if !batch => report::whatif_text(&self.session.graph, &self.session.base, one),
            all => report::comparison_table(self.base(), all),
        }
    }

    /// The first violation the checker finds in an answer, in words: a planner bug.
    pub fn violation(&self) -> Option<report::Explained> {
        let v = self
            .results
            .iter()
            .find_map(|r| r.verdict.violations().next())?;
        Some(report::explain(&self.session.graph, v))
    }
}

/// Plans the document once, then answers every scenario against that plan.
pub fn whatif_document(
    text: &str,
    overrides: &Overrides,
    scenarios: Vec<Scenario>,
) -> Result<Answers, ApiError> {
    let graph = parse_graph(text)?;
    let request = overrides.request(&graph)?;
    let session = Session::new(graph, request)?;
    let results = scenarios
        .iter()
        .map(|s| {
            session
                .what_if(&s.changes)
                .map_err(|source| ApiError::Scenario {
                    name: s.name.clone(),
                    source,
                })
        })
        .collect::<Result<_, _>>()?;
    Ok(Answers {
        session,
        scenarios,
        results,
    })
}

/// A `manifest@1` document, refused when it claims another schema.
pub fn manifest_document(text: &str) -> Result<Manifest, ApiError> {
    let m: Manifest = serde_json::from_str(text).map_err(ApiError::Manifest)?;
    if m.schema != MANIFEST_SCHEMA {
        return Err(ApiError::NotAManifest);
    }
    Ok(m)
}

/// What a Core ML cache must drop and compile going from `old` to `new`.
pub fn manifest_diff_documents(old: &Manifest, new: &Manifest) -> ManifestDiff {
    manifest_diff(old, new)
}

/// An LLM-shaped bridge document of exactly `nodes` nodes, the same for the same seed.
pub fn generate_document(nodes: usize, seed: u64) -> Result<String, ApiError> {
    Ok(generate(nodes, seed)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(json: &str) -> Overrides {
        serde_json::from_str(json).expect("valid overrides")
    }

    #[test]
    fn validate_refuses_a_state_the_overrides_own_options_forbid() {
        let off = overrides(
            r#"{"options": {"take_over_mutable_buffer": false}, "strategies": ["auto", "k_cache=state"]}"#,
        );
        let e = off.validate().expect_err("take-over off forbids states");
        assert!(
            matches!(&e, ApiError::StateForbidden { spec, rule: RuleId::NoHiddenState, .. } if spec == "k_cache=state")
        );
        assert!(
            e.to_string().contains("take_over_mutable_buffer is off"),
            "{e}"
        );

        let ios17 = overrides(
            r#"{"options": {"minimum_deployment_target": "iOS17"}, "strategies": ["state"]}"#,
        );
        let e = ios17.validate().expect_err("iOS17 forbids states");
        assert!(matches!(
            e,
            ApiError::StateForbidden {
                rule: RuleId::StateTarget,
                ..
            }
        ));
        assert!(
            e.to_string().contains("minimum deployment target is iOS17"),
            "{e}"
        );
    }

    #[test]
    fn validate_accepts_what_only_a_graph_could_refuse() {
        for ok in [
            r#"{"strategies": ["state"]}"#,
            r#"{"options": {"take_over_mutable_buffer": true, "minimum_deployment_target": "iOS18"}, "strategies": ["state"]}"#,
            r#"{"options": {"take_over_mutable_buffer": false}, "strategies": ["cpu", "io", "auto", "x=io"]}"#,
        ] {
            assert!(overrides(ok).validate().is_ok(), "{ok}");
        }
    }

    #[test]
    fn validate_names_a_misspelt_strategy_and_a_bad_cost() {
        let e = overrides(r#"{"strategies": ["k_cache=stat"]}"#)
            .validate()
            .expect_err("misspelt");
        assert!(e.to_string().contains("unknown strategy \"stat\""), "{e}");
        let e = overrides(r#"{"cost": {"bytes_per_us": -1.0}}"#)
            .validate()
            .expect_err("negative");
        assert!(matches!(e, ApiError::Cost(_)), "{e}");
    }
}
