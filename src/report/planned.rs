//! The report stage's value: a planned graph, with everything each report reads (its analysis, the
//! plan compared with the stock proposal, the checker's verdict), written in the form asked.

use super::map::{Map, Picture, PictureFormat, picture};
use super::{Explained, PlanDocument, Shown, explain, plan_json, plan_text};
use crate::analyse::Analysis;
use crate::graph::Graph;
use crate::manifest::{Manifest, manifest};
use crate::outcome::{Plan, Run, Verdict};

/// A planned document: the graph and its analysis, kept for reporting, the plan, and the
/// independent checker's verdict on it.
pub struct Planned {
    pub graph: Graph,
    pub analysis: Analysis,
    pub plan: Plan,
    pub verdict: Verdict,
}

impl Planned {
    /// `run`, made on `graph`, ready to be reported.
    pub fn of(graph: Graph, run: Run) -> Self {
        let Run {
            analysis,
            plan,
            verdict,
        } = run;
        Planned {
            graph,
            analysis,
            plan,
            verdict,
        }
    }
    /// The `plan@1` document, written as serde serializes it.
    pub fn json(&self) -> PlanDocument<'_> {
        plan_json(&self.graph, &self.analysis, &self.plan, &self.verdict)
    }
    /// The text report, every line of it.
    pub fn text(&self) -> String {
        self.text_with(&Shown::ALL)
    }
    /// The text report, as much of it as `shown` allows.
    pub fn text_with(&self, shown: &Shown) -> String {
        plan_text(
            &self.graph,
            &self.analysis,
            &self.plan,
            &self.verdict,
            shown,
        )
    }
    /// The first violation the checker finds in the plan, in words: a planner bug.
    pub fn violation(&self) -> Option<Explained> {
        let v = self.verdict.violations().next()?;
        Some(explain(&self.graph, v))
    }
    /// One entry per delegate partition, keyed by content (docs/manifest.md).
    pub fn manifest(&self) -> Manifest {
        manifest(
            &self.graph,
            &self.plan.draft.tagging,
            &self.plan.draft.options,
        )
    }
    /// The partition map the pictures are drawn from (`partition-planner render`).
    pub fn map(&self) -> Map<'_> {
        Map::new(&self.graph, &self.analysis, &self.plan, &self.verdict)
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

/// What to call the model `graph` describes in a picture: the model its exporter recorded, else
/// `fallback`.
pub fn title_of(graph: &Graph, fallback: &str) -> String {
    let recorded = graph.producer.as_ref().and_then(|p| p.get("model"));
    recorded
        .and_then(|m| m.as_str())
        .unwrap_or(fallback)
        .to_string()
}
