//! The caller's side of the checker. As regalloc2's fuzzer runs the allocator and then its checker,
//! callers (the API, what-if, the CLI, tests) run the planner and then this: the plan's account of
//! itself is turned into the checker's claims, and the checker sees the plan's tags and the stock
//! proposal's, knowing nothing of how either was made.

use crate::analyse::{Analysis, GraphIndex, analyse_indexed};
use crate::check::{BufferClaim, Claims, GraphView, Lives, check_claims_in, check_in};
use crate::graph::Graph;
use crate::plan::{self, Draft, Plan, PlanError, PlanRequest, Strategy};
use crate::rules::Finding;
use crate::stock;
use crate::tagging::Tagging;
use crate::threads;
use std::sync::Arc;

/// The checker's findings on a plan and on the stock proposal it replaces.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// On the plan: costs, and violations (each a planner bug).
    pub plan: Vec<Finding>,
    /// On the stock proposal the document carries: what the planner fixed.
    pub stock: Vec<Finding>,
}

impl Verdict {
    /// The plan's violations: a planner bug each.
    pub fn violations(&self) -> impl Iterator<Item = &Finding> {
        self.plan.iter().filter(|f| f.is_violation())
    }
}

/// What `plan` (or a draft) says of itself, in the checker's terms.
pub fn claims<S>(plan: &Plan<S>) -> Claims<'_> {
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

/// Runs the checker on `plan`, made for `request`, and on the stock proposal it is compared with.
pub fn verify(graph: &Graph, plan: &Plan, request: &PlanRequest) -> Verdict {
    verify_in(&GraphView::default(), graph, plan, request)
}

/// [`verify`] in `view`, the checker's view of `graph`, which later checks of the same graph reuse
/// (what-if's scenarios).
pub fn verify_in(view: &GraphView, graph: &Graph, plan: &Plan, request: &PlanRequest) -> Verdict {
    let (stock, plan) = threads::both(
        graph.len() >= threads::BESIDE_FROM_NODES,
        || verify_stock(view, graph, &plan.stock.tagging, request),
        || verify_plan(view, graph, plan, request),
    );
    Verdict { plan, stock }
}

/// Analyses `graph`, plans it for `request`, and runs the checker on the plan and on the stock
/// proposal: the same analysis, plan and verdict as [`crate::analyse()`], [`crate::plan()`] then
/// [`verify`], sooner. A large document's stock side (the proposal, reproduced for an untagged
/// one, and its check) runs on a second thread from the moment the adjacency is built, beside the
/// planner's side (the rest of the analysis, the draft and its check); the stock proposal's cost
/// estimate, which reads the analysis, follows both.
pub fn plan_and_verify(
    graph: &Graph,
    request: &PlanRequest,
) -> Result<(Analysis, Plan, Verdict), PlanError> {
    plan_and_verify_in(&GraphView::default(), graph, request)
}

/// [`plan_and_verify`] in `view`, the checker's view of `graph`: the side that checks first builds
/// it, and the other, and later checks of the same graph, reuse it.
pub fn plan_and_verify_in(
    view: &GraphView,
    graph: &Graph,
    request: &PlanRequest,
) -> Result<(Analysis, Plan, Verdict), PlanError> {
    plan_and_verify_then(view, graph, request, |_, _, _| ()).map(|(a, p, v, ())| (a, p, v))
}

/// [`plan_and_verify_in`], running `then` on the planner's side once the draft is checked, with the
/// analysis, the draft and the checker's findings on it: for a large document, while the stock
/// side may still be at work. The CLI writes most of the plan document there
/// ([`crate::report::plan_alone_json`]).
pub fn plan_and_verify_then<T>(
    view: &GraphView,
    graph: &Graph,
    request: &PlanRequest,
    then: impl FnOnce(&Analysis, &Draft, &[Finding]) -> T,
) -> Result<(Analysis, Plan, Verdict, T), PlanError> {
    request.fits(graph)?;
    let index = Arc::new(GraphIndex::new(graph));
    let ((tagging, source, stock_findings), (analysis, drafted)) = threads::both(
        graph.len() >= threads::BESIDE_FROM_NODES,
        || {
            let (tagging, source) =
                stock::proposal(graph, index.as_ref(), &request.options, &request.supported);
            let findings = verify_stock(view, graph, &tagging, request);
            (tagging, source, findings)
        },
        || {
            let analysis = analyse_indexed(graph, Arc::clone(&index));
            let drafted = plan::draft(graph, &analysis, request).map(|draft| {
                let findings = verify_plan(view, graph, &draft, request);
                let then = then(&analysis, &draft, &findings);
                (draft, findings, then)
            });
            (analysis, drafted)
        },
    );
    let (draft, plan_findings, then) = drafted?;
    let stock = plan::estimated_stock(graph, &analysis, request, tagging, source);
    let verdict = Verdict {
        plan: plan_findings,
        stock: stock_findings,
    };
    Ok((analysis, draft.compared_with(stock), verdict, then))
}

/// The checker's findings on a plan or a draft made for `request`: costs, and violations (each a
/// planner bug).
pub fn verify_plan<S>(
    view: &GraphView,
    graph: &Graph,
    plan: &Plan<S>,
    request: &PlanRequest,
) -> Vec<Finding> {
    // A node kept on CPU may be tagged by nobody: to the checker it is unsupported.
    let mut delegable = request.supported.clone();
    for n in &request.on_cpu {
        delegable[n.index()] = false;
    }
    let claims = claims(plan);
    check_claims_in(
        view,
        graph,
        &plan.tagging,
        &plan.options,
        &delegable,
        &claims,
    )
}

/// The checker's findings on the stock proposal's tags: what the planner fixed.
pub fn verify_stock(
    view: &GraphView,
    graph: &Graph,
    stock: &Tagging,
    request: &PlanRequest,
) -> Vec<Finding> {
    check_in(view, graph, stock, &request.options, &request.supported)
}
