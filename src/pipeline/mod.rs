//! The pipeline: the one place that runs the stages in order, for every entry (the API, and so the
//! CLI and the Python binding; what-if; render):
//!
//! ```text
//! import → analyse ─┬─ draft (plan/) ────────────────────────── check the draft ─┬─ compare → report
//!                   └─ stock proposal (stock/), its estimate ── check the stock ─┘
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
use crate::outcome::{Plan, Run, StockComparison, Verdict};
use crate::plan::{self, Draft, PlanError, PlanRequest, Strategy, draft};
use crate::report::{self, PlanText, Planned};
use crate::rules::Finding;
use crate::stock;
use crate::threads;
use std::sync::Arc;

/// Every stage on `graph` for `request`: the plan and the stock proposal, checked, ready to be
/// reported.
pub fn planned(graph: Graph, request: &PlanRequest) -> Result<Planned, PlanError> {
    let run = run(&graph, request)?;
    Ok(Planned::of(graph, run))
}

/// [`planned`], with the `plan@1` document as `serde_json::to_string_pretty` writes it. The members
/// that depend on the plan alone (most of a large plan's text) are written on the planner's side
/// as soon as the draft is checked: for a large document, while the stock side is still at work.
pub fn planned_with_json(
    graph: Graph,
    request: &PlanRequest,
) -> Result<(Planned, serde_json::Result<PlanText>), PlanError> {
    let (run, alone) = run_with(
        &GraphView::default(),
        &graph,
        request,
        report::plan_alone_json,
    )?;
    let planned = Planned::of(graph, run);
    let json = alone.and_then(|alone| {
        report::plan_json_text(
            &planned.graph,
            &planned.analysis,
            &planned.plan,
            &planned.verdict,
            alone,
        )
    });
    Ok((planned, json))
}

/// Plans `graph` for `request` and checks the plan and the stock proposal.
pub fn run(graph: &Graph, request: &PlanRequest) -> Result<Run, PlanError> {
    run_in(&GraphView::default(), graph, request)
}

/// [`run`] in `view`, the checker's view of `graph`: the side that checks first builds it, and the
/// other, and later checks of the same graph (what-if's scenarios), reuse it.
pub fn run_in(view: &GraphView, graph: &Graph, request: &PlanRequest) -> Result<Run, PlanError> {
    run_with(view, graph, request, |_, _, _, _| ()).map(|(run, ())| run)
}

/// The run. Once the draft is checked, the planner's side also does `with_checked_draft`: writing
/// what of the `plan@1` document the draft already says, while the stock side may still be at
/// work. The stages are called here, in order, each once.
fn run_with<T: Send>(
    view: &GraphView,
    graph: &Graph,
    request: &PlanRequest,
    with_checked_draft: impl FnOnce(&Graph, &Analysis, &Draft, &[Finding]) -> T + Send,
) -> Result<(Run, T), PlanError> {
    request.fits(graph)?;
    let delegable = request.delegable();
    let index = Arc::new(GraphIndex::new(graph));
    let ((stock, stock_findings), (analysis, drafted)) = threads::both(
        graph.len() >= threads::BESIDE_FROM_NODES,
        || {
            // The stock side: the proposal (reproduced for an untagged document), estimated by
            // the request's cost model, and checked.
            let stock = stock_comparison(graph, &index, request);
            let found = check_in(
                view,
                graph,
                &stock.tagging,
                &request.options,
                &request.supported,
            );
            (stock, found)
        },
        || {
            // The planner's side: the analysis, the draft, checked against what it claims, and
            // what the caller does with the checked draft.
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
                let written = with_checked_draft(graph, &analysis, &draft, &found);
                (draft, found, written)
            });
            (analysis, drafted)
        },
    );
    let (draft, plan_findings, written) = drafted?;
    let verdict = Verdict {
        plan: plan_findings,
        stock: stock_findings,
    };
    let plan = Plan { draft, stock };
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
pub fn claims(plan: &Draft) -> Claims<'_> {
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

/// Plans `graph` for `request` and compares the plan with the stock proposal, unchecked (what-if's
/// answers, tools and tests; [`verify`] checks it). A large untagged document's stock proposal,
/// reproduced, takes longer than the search: it runs beside it.
pub fn plan(graph: &Graph, analysis: &Analysis, request: &PlanRequest) -> Result<Plan, PlanError> {
    request.fits(graph)?;
    let (stock, draft) = threads::both(
        graph.stock_partitions == 0 && graph.len() >= threads::BESIDE_FROM_NODES,
        || stock_comparison(graph, &analysis.index, request),
        || draft(graph, analysis, request),
    );
    Ok(Plan {
        draft: draft?,
        stock,
    })
}

/// The stock proposal for `graph` and `request`, with the request's cost model's estimate of it.
pub fn stock_comparison(
    graph: &Graph,
    index: &GraphIndex,
    request: &PlanRequest,
) -> StockComparison {
    let (tagging, source) = stock::proposal(graph, index, &request.options, &request.supported);
    let estimate = estimate(
        graph,
        index,
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
