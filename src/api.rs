//! The facade every entry calls (the CLI, the Python binding, the fuzz targets): a document or a
//! graph in, a value with its reports out. It builds requests from the caller's overrides and
//! hands them to the pipeline (`crate::pipeline`), which runs the stages; what the CLI needs of
//! the stages' vocabulary is re-exported here, so that it calls nothing else.

use crate::analyse::GraphIndex;
use crate::decision::{Refusal, Strategy, StrategyRequest, UnknownStrategy};
use crate::manifest::{ManifestDiff, manifest_diff};
use crate::measure::Measure;
use crate::options::Options;
use crate::pipeline::{self, Session};
use crate::plan::{PlanError, PlanRequest, parse_strategy_spec};
use crate::report::map::{Map, MapParts, Side};
use crate::report::{self, PlanText};
use crate::rules::{Finding, FindingKind, RuleId};
use crate::schema::MANIFEST_SCHEMA;
use crate::stock::ExecutorchVersion;
use crate::synthetic::{GenerateError, generate};
use crate::tagging::Tagging;
use crate::whatif::{WhatIf, WhatIfError};
use serde::Deserialize;

pub use crate::cost::{CostError, CostOverrides};
pub use crate::graph::Graph;
pub use crate::import::{ImportError, parse_graph};
pub use crate::manifest::Manifest;
pub use crate::options::{ByteSize, DeploymentTarget, PartialOptions};
pub use crate::pipeline::Checking;
pub use crate::report::manifest_diff_text;
pub use crate::report::map::{Picture, PictureFormat};
pub use crate::report::{
    Explained, PlanDocumentError, Planned, Shown, read_plan, unsized_warnings, verdict_line,
};
pub use crate::whatif::{ChangeError, Scenario, parse_scenarios};

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
        self.check_spelling()?;
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

    /// The cost constants and the spelling of every strategy: what a caller can be told is wrong
    /// with its own arguments before a graph is read.
    pub fn check_spelling(&self) -> Result<(), ApiError> {
        self.cost.validate()?;
        for spec in &self.strategies {
            parse_strategy_spec(spec)?;
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
    #[error("not a manifest ({MANIFEST_SCHEMA}, docs/manifest.md): found {found}")]
    NotAManifest { found: String },
    #[error("{0}")]
    Generate(#[from] GenerateError),
    /// A plan document that cannot be drawn over the graph given (`render --plan`).
    #[error("{0}")]
    PlanDocument(#[from] PlanDocumentError),
}

pub fn plan_document(text: &str, overrides: &Overrides) -> Result<Planned, ApiError> {
    plan_graph(parse_graph(text)?, overrides)
}

/// [`plan_document`] of a graph already imported: the CLI frees the document's text first.
pub fn plan_graph(graph: Graph, overrides: &Overrides) -> Result<Planned, ApiError> {
    let request = overrides.request(&graph)?;
    Ok(pipeline::planned(graph, &request)?)
}

/// [`plan_graph`] with the `plan@1` document as `serde_json::to_string_pretty` writes it, most of
/// it written while the stock side is at work (`pipeline::planned_with_json`).
pub fn plan_graph_json(
    graph: Graph,
    overrides: &Overrides,
) -> Result<(Planned, serde_json::Result<PlanText>), ApiError> {
    let request = overrides.request(&graph)?;
    Ok(pipeline::planned_with_json(graph, &request)?)
}

/// A plan document drawn over its graph (`render --plan`): the tags and buffer decisions it
/// carries, checked here against every rule beside the stock proposal, as a plan made here is.
pub struct PlanOnGraph {
    pub graph: Graph,
    parts: MapParts,
}

impl PlanOnGraph {
    pub fn title(&self, fallback: &str) -> String {
        report::title_of(&self.graph, fallback)
    }
    /// The plan drawn beside the stock proposal.
    /// The rules the plan breaks, as the checker finds them here: a plan to fix before use.
    pub fn violations(&self) -> Vec<&report::Explained> {
        (self.parts.findings.iter())
            .filter(|f| f.side == Side::Plan && f.explained.kind == FindingKind::Violation)
            .map(|f| &f.explained)
            .collect()
    }
    pub fn picture(self, format: PictureFormat, title: &str) -> Picture {
        let PlanOnGraph { graph, parts } = self;
        let index = GraphIndex::new(&graph);
        report::map::picture(&Map::from_parts(&graph, &index, parts), format, title)
    }
}

/// Reads `plan` (a `plan@1` document) over the bridge document `graph`. Every node must be in
/// the plan and every tagged node in the graph: a plan for another graph is refused.
pub fn plan_on_graph(graph: &str, plan: &str) -> Result<PlanOnGraph, ApiError> {
    plan_on(parse_graph(graph)?, plan)
}

/// [`plan_on_graph`] of a graph already imported.
pub fn plan_on(graph: Graph, plan: &str) -> Result<PlanOnGraph, ApiError> {
    let given = read_plan(&graph, plan)?;
    let parts = pipeline::given_plan(&graph, given)?;
    Ok(PlanOnGraph { graph, parts })
}

/// A document's bytes as text, checked on both cores for a large one; `None` if not UTF-8.
pub fn document_text(bytes: &[u8]) -> Option<&str> {
    crate::threads::utf8(bytes)
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
    /// The text report, every line of it.
    pub fn text(&self) -> String {
        self.text_with(&Shown::ALL)
    }
    /// The text report, as much of it as `shown` allows.
    pub fn text_with(&self, shown: &Shown) -> String {
        let (graph, measure) = (&self.graph, &self.measure);
        report::check_text(graph, self.reproduced, measure, &self.findings, shown)
    }
}

pub fn check_document(
    text: &str,
    overrides: &Overrides,
    checking: Checking,
) -> Result<Checked, ApiError> {
    Ok(check_graph(parse_graph(text)?, overrides, checking))
}

/// [`check_document`] of a graph already imported.
pub fn check_graph(graph: Graph, overrides: &Overrides, checking: Checking) -> Checked {
    let checked = pipeline::check_tags(&graph, &overrides.options(&graph), checking);
    Checked {
        graph,
        tagging: checked.tagging,
        reproduced: checked.reproduced,
        measure: checked.measure,
        findings: checked.findings,
    }
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

    /// One scenario's report, or, for a batch, the comparison table: every line of it.
    pub fn text(&self, batch: bool) -> String {
        self.text_with(batch, &Shown::ALL)
    }

    /// [`Answers::text`], as much of it as `shown` allows.
    pub fn text_with(&self, batch: bool, shown: &Shown) -> String {
        match self.answered().as_slice() {
            [one] if !batch => {
                report::whatif_text(&self.session.graph, &self.session.base, one, shown)
            }
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
    whatif_graph(parse_graph(text)?, overrides, scenarios)
}

/// [`whatif_document`] of a graph already imported.
pub fn whatif_graph(
    graph: Graph,
    overrides: &Overrides,
    scenarios: Vec<Scenario>,
) -> Result<Answers, ApiError> {
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
    // serde would read a manifest from an array of its fields' values too.
    if let Some(found) = crate::schema::not_an_object(text) {
        return Err(ApiError::NotAManifest {
            found: found.to_string(),
        });
    }
    match serde_json::from_str::<Manifest>(text) {
        Ok(m) if m.schema == MANIFEST_SCHEMA => Ok(m),
        Ok(m) => Err(ApiError::NotAManifest {
            found: format!("{:?}", m.schema),
        }),
        // Another document (a plan, say) is named by its schema, not by the first field it lacks.
        Err(e) => match crate::schema::declared(text) {
            Some(found) if found != MANIFEST_SCHEMA => Err(ApiError::NotAManifest {
                found: found.to_string(),
            }),
            _ => Err(ApiError::Manifest(e)),
        },
    }
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
