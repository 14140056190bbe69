//! The pipeline: the one place that runs the stages in order, for every entry (the API, and so the
//! CLI and the Python binding; what-if; render):
//!
//! ```text
//! import → analyse ─┬─ draft (plan/) ──────────── check the draft ─┬─ compare → report
//!                   └─ stock proposal (stock/) ── check the stock ─┘
//! ```
//!
//! The graph comes in imported (`api` imports a document; the CLI frees its text first). For a
//! large document the two sides run on two threads from the moment the adjacency is built.
//! The planner never sees the stock proposal and never runs the checker; the checker never sees
//! the planner: the pipeline hands each the other's result as a value.

mod check_tags;
mod checking;
mod given_plan;
mod whatif;

pub use check_tags::{CheckedTags, Checking, check_tags};
pub use checking::{verify, verify_in, verify_plan, verify_stock};
pub use given_plan::given_plan;
pub use whatif::Session;

use crate::analyse::{Analysis, GraphIndex, analyse_indexed};
use crate::check::{BufferClaim, Claims, GraphView, Lives, check_claims_in, check_in};
use crate::cost::{Scratch, estimate};
use crate::graph::Graph;
use crate::outcome::{Plan, StockComparison, Verdict};
use crate::plan::{self, PlanError, PlanRequest, Strategy, draft};
use crate::report::{self, DraftJson, PlanText};
use crate::stock;
use crate::tagging::Tagging;
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
    run_with(view, graph, request, false).map(|(run, _)| run)
}

/// [`run`], with the `plan@1` document as `serde_json::to_string_pretty` writes it. The members
/// that depend on the plan alone (most of a large plan's text) are written on the planner's side
/// as soon as the draft is checked: for a large document, while the stock side is still at work.
pub fn run_to_plan_json(
    graph: &Graph,
    request: &PlanRequest,
) -> Result<(Run, serde_json::Result<PlanText>), PlanError> {
    let (run, alone) = run_with(&GraphView::default(), graph, request, true)?;
    let alone = alone.unwrap_or_else(|| {
        report::plan_alone_json(graph, &run.analysis, &run.plan, &run.verdict.plan)
    });
    let json = alone.and_then(|alone| {
        report::plan_json_text(graph, &run.analysis, &run.plan, &run.verdict, alone)
    });
    Ok((run, json))
}

/// The run. With `write_json`, the planner's side also writes what of the `plan@1` document the
/// draft already says, once the draft is checked, while the stock side may still be at work. The
/// stages are called here, in order, each once.
fn run_with(
    view: &GraphView,
    graph: &Graph,
    request: &PlanRequest,
    write_json: bool,
) -> Result<(Run, Option<serde_json::Result<DraftJson>>), PlanError> {
    request.fits(graph)?;
    let delegable = delegable(request);
    let index = Arc::new(GraphIndex::new(graph));
    let ((tagging, source, stock_findings), (analysis, drafted)) = threads::both(
        graph.len() >= threads::BESIDE_FROM_NODES,
        || {
            // The stock side: the proposal (reproduced for an untagged document), checked.
            let (tagging, source) =
                stock::proposal(graph, &index, &request.options, &request.supported);
            let found = check_in(view, graph, &tagging, &request.options, &request.supported);
            (tagging, source, found)
        },
        || {
            // The planner's side: the analysis, the draft, checked against what it claims, and
            // what of the plan document the draft already says.
            let analysis = analyse_indexed(graph, Arc::clone(&index));
            let drafted = draft(graph, &analysis, request).map(|draft| {
                let claims = claims(&draft);
                let found = check_claims_in(
                    view,
                    graph,
                    &draft.tagging,
                    &draft.options,
                    &delegable,
                    &claims,
                );
                let written =
                    write_json.then(|| report::plan_alone_json(graph, &analysis, &draft, &found));
                (draft, found, written)
            });
            (analysis, drafted)
        },
    );
    let (draft, plan_findings, written) = drafted?;
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
        written,
    ))
}

/// What `plan` (or a draft) says of itself, in the checker's terms.
pub fn claims<S>(plan: &plan::Plan<S>) -> Claims<'_> {
    Claims {
        buffers: plan
            .buffers
            .iter()
            .map(|b| BufferClaim {
                buffer: &b.buffer,
                placeholder: b.placeholder,
                writer: b.writer,
                lives: match b.strategy {
                    Strategy::State => Lives::State(b.partition.as_deref()),
                    Strategy::Cpu => Lives::Cpu,
                    Strategy::Io => Lives::Io,
                },
            })
            .collect(),
        partitions: plan.measure.partitions.len(),
        states: plan.measure.states(),
        boundary_bytes: plan.measure.boundary_bytes(),
    }
}

/// Which nodes a plan for `request` may delegate, as the checker reads it: a node kept on CPU may
/// be tagged by nobody, so to the checker it is unsupported.
pub(crate) fn delegable(request: &PlanRequest) -> Vec<bool> {
    let mut delegable = request.supported.clone();
    for n in &request.on_cpu {
        // A table of the wrong length is refused by `PlanRequest::fits`, not here.
        if let Some(d) = delegable.get_mut(n.index()) {
            *d = false;
        }
    }
    delegable
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

/// The stock proposal for `graph` and `request`, with the request's cost model's estimate of it.
pub fn stock_comparison(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
) -> StockComparison {
    let (tagging, source) = stock::proposal(
        graph,
        analysis.index.as_ref(),
        &request.options,
        &request.supported,
    );
    estimated_stock(graph, analysis, request, tagging, source)
}

/// The stock proposal `tagging` from `source`, with the request's cost model's estimate of it.
pub fn estimated_stock(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
    tagging: Tagging,
    source: stock::Source,
) -> StockComparison {
    let estimate = estimate(
        graph,
        analysis,
        &request.options,
        &request.cost,
        tagging.partitions(),
        tagging.partition_count(),
        &mut Scratch::default(),
    );
    StockComparison {
        tagging,
        source,
        estimate,
    }
}
