//! One-call entry points over documents, shared by the CLI and the Python binding so that neither
//! builds requests or reports on its own: bridge JSON text in, a report out.

use crate::analyse::analyse;
use crate::check::check;
use crate::cost::CostOverrides;
use crate::graph::Graph;
use crate::import::{ImportError, parse_graph};
use crate::manifest::{Manifest, manifest};
use crate::measure::{Measure, measure};
use crate::options::{Options, PartialOptions};
use crate::plan::{Plan, PlanError, PlanRequest, parse_strategy_spec, plan};
use crate::report;
use crate::rules::Finding;
use crate::tagging::Tagging;
use crate::verify::{Verdict, verify};
use serde::Deserialize;

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

    pub fn request(&self, graph: &Graph) -> Result<PlanRequest, ApiError> {
        let mut request = PlanRequest::new(graph);
        request.options = self.options(graph);
        self.cost
            .validate()
            .map_err(|e| ApiError::Usage(e.to_string()))?;
        request.cost = self.cost.apply_to(&request.cost);
        for s in &self.strategies {
            match parse_strategy_spec(s).map_err(ApiError::Usage)? {
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
    Usage(String),
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
    /// One entry per delegate partition, keyed by content (docs/manifest.md).
    pub fn manifest(&self) -> Manifest {
        manifest(&self.graph, &self.plan.tagging, &self.plan.options)
    }
}

pub fn plan_document(text: &str, overrides: &Overrides) -> Result<Planned, ApiError> {
    let graph = parse_graph(text)?;
    let request = overrides.request(&graph)?;
    let analysis = analyse(&graph);
    let plan = plan(&graph, &analysis, &request)?;
    let verdict = verify(&graph, &plan, &request);
    Ok(Planned {
        graph,
        analysis,
        plan,
        verdict,
    })
}

/// A checked document: the tags it carries and every finding on them.
pub struct Checked {
    pub graph: Graph,
    pub tagging: Tagging,
    pub measure: Measure,
    pub findings: Vec<Finding>,
}

impl Checked {
    pub fn ok(&self) -> bool {
        !self.findings.iter().any(Finding::is_violation)
    }
    /// The `check@1` document, written as serde serializes it.
    pub fn json(&self) -> report::CheckDocument<'_> {
        report::check_json(&self.graph, &self.tagging, &self.measure, &self.findings)
    }
    pub fn text(&self) -> String {
        report::check_text(&self.graph, &self.measure, &self.findings)
    }
}

pub fn check_document(text: &str, overrides: &Overrides) -> Result<Checked, ApiError> {
    let graph = parse_graph(text)?;
    let options = overrides.options(&graph);
    let tagging = Tagging::stock(&graph);
    let supported: Vec<bool> = graph.nodes.iter().map(|n| n.supported).collect();
    let findings = check(&graph, &tagging, &options, &supported);
    Ok(Checked {
        measure: measure(&graph, &tagging),
        graph,
        tagging,
        findings,
    })
}
