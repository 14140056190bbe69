//! The caller's side of the checker. As regalloc2's fuzzer runs the allocator and then its checker,
//! the pipeline (and tests) run the planner and then this: the plan's account of itself is turned
//! into the checker's claims, and the checker sees the plan's tags and the stock proposal's,
//! knowing nothing of how either was made.

use super::claims;
use crate::check::{GraphView, check_claims_in, check_in};
use crate::graph::Graph;
use crate::outcome::{Plan, Verdict};
use crate::plan::{Draft, PlanRequest};
use crate::rules::Finding;
use crate::tagging::Tagging;
use crate::threads;

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
        || verify_plan(view, graph, &plan.draft, request),
    );
    Verdict { plan, stock }
}

/// The checker's findings on a plan or a draft made for `request`: costs, and violations (each a
/// planner bug).
pub fn verify_plan(
    view: &GraphView,
    graph: &Graph,
    plan: &Draft,
    request: &PlanRequest,
) -> Vec<Finding> {
    let delegable = request.delegable();
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
