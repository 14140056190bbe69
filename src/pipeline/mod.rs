//! The pipeline: the one place that runs the stages in order, for every entry (the API, and so the
//! CLI and the Python binding; what-if; render):
//!
//! ```text
//! import → analyse ─┬─ draft (plan/) ──────────── check the draft ─┬─ compare → report
//!                   └─ stock proposal (stock/) ── check the stock ─┘
//! ```
//!
//! For a large document the two sides run on two threads from the moment the adjacency is built.
//! The planner never sees the stock proposal and never runs the checker; the checker never sees
//! the planner: the pipeline hands each the other's result as a value.

mod check_tags;
mod checking;
mod compare;
mod given_plan;
mod whatif;

pub use check_tags::{CheckedTags, Checking, check_tags};
pub use checking::{claims, verify, verify_in, verify_plan, verify_stock};
pub use compare::{estimated_stock, stock_comparison, stock_proposal};
pub use given_plan::given_plan;
pub use whatif::Session;

use crate::analyse::{Analysis, GraphIndex, analyse_indexed};
use crate::check::GraphView;
use crate::graph::Graph;
use crate::outcome::{Plan, Verdict};
use crate::plan::{Draft, PlanError, PlanRequest, draft};
use crate::report::{self, PlanText};
use crate::rules::Finding;
use crate::threads;
use std::sync::Arc;

/// A planned graph: its analysis, kept for reporting, the plan compared with the stock proposal,
/// and the checker's verdict on both.
pub struct Run {
    pub analysis: Analysis,
    pub plan: Plan,
    pub verdict: Verdict,
}

/// Plans `graph` for `request` and checks the plan and the stock proposal.
pub fn run(graph: &Graph, request: &PlanRequest) -> Result<Run, PlanError> {
    run_in(&GraphView::default(), graph, request)
}

/// [`run`] in `view`, the checker's view of `graph`: the side that checks first builds it, and the
/// other, and later checks of the same graph (what-if's scenarios), reuse it.
pub fn run_in(view: &GraphView, graph: &Graph, request: &PlanRequest) -> Result<Run, PlanError> {
    run_then(view, graph, request, |_, _, _| ()).map(|(run, ())| run)
}

/// [`run`], with the `plan@1` document as `serde_json::to_string_pretty` writes it. The members
/// that depend on the plan alone (most of a large plan's text) are written on the planner's side
/// as soon as the draft is checked: for a large document, while the stock side is still at work.
pub fn run_to_plan_json(
    graph: &Graph,
    request: &PlanRequest,
) -> Result<(Run, serde_json::Result<PlanText>), PlanError> {
    let (run, alone) = run_then(
        &GraphView::default(),
        graph,
        request,
        |analysis, draft, found| report::plan_alone_json(graph, analysis, draft, found),
    )?;
    let json = alone.and_then(|alone| {
        report::plan_json_text(graph, &run.analysis, &run.plan, &run.verdict, alone)
    });
    Ok((run, json))
}

/// The run, with `report` called on the planner's side once the draft is checked (its analysis,
/// the draft and the checker's findings on it), while the stock side may still be at work.
fn run_then<T>(
    view: &GraphView,
    graph: &Graph,
    request: &PlanRequest,
    report: impl FnOnce(&Analysis, &Draft, &[Finding]) -> T,
) -> Result<(Run, T), PlanError> {
    request.fits(graph)?;
    let index = Arc::new(GraphIndex::new(graph));
    let ((tagging, source, stock_findings), (analysis, drafted)) = threads::both(
        graph.len() >= threads::BESIDE_FROM_NODES,
        || {
            let (tagging, source) = stock_proposal(graph, index.as_ref(), request);
            let findings = verify_stock(view, graph, &tagging, request);
            (tagging, source, findings)
        },
        || {
            let analysis = analyse_indexed(graph, Arc::clone(&index));
            let drafted = draft(graph, &analysis, request).map(|draft| {
                let findings = verify_plan(view, graph, &draft, request);
                let reported = report(&analysis, &draft, &findings);
                (draft, findings, reported)
            });
            (analysis, drafted)
        },
    );
    let (draft, plan_findings, reported) = drafted?;
    let stock = estimated_stock(graph, &analysis, request, tagging, source);
    let verdict = Verdict {
        plan: plan_findings,
        stock: stock_findings,
    };
    let plan = draft.compared_with(stock);
    Ok((
        Run {
            analysis,
            plan,
            verdict,
        },
        reported,
    ))
}

/// Plans `graph` for `request` and compares the plan with the stock proposal, unchecked (what-if's
/// answers, tools and tests; [`verify`] checks it). A large untagged document's stock proposal,
/// reproduced, takes longer than the search: it runs beside it.
pub fn plan(graph: &Graph, analysis: &Analysis, request: &PlanRequest) -> Result<Plan, PlanError> {
    request.fits(graph)?;
    let (stock, draft) = threads::both(
        graph.stock_partitions == 0 && graph.len() >= threads::BESIDE_FROM_NODES,
        || stock_comparison(graph, analysis, request),
        || draft(graph, analysis, request),
    );
    Ok(draft?.compared_with(stock))
}
