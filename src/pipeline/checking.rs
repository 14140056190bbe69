//! The caller's side of the checker. As regalloc2's fuzzer runs the allocator and then its checker,
//! the pipeline (and tests) run the planner and then this: the plan's account of itself is turned
//! into the checker's claims, and the checker sees the plan's tags and the stock proposal's,
//! knowing nothing of how either was made.

use crate::check::{BufferClaim, Claims, GraphView, Lives, check_claims_in, check_in};
use crate::graph::Graph;
use crate::outcome::{Plan, Verdict};
use crate::plan::{self, PlanRequest, Strategy};
use crate::rules::Finding;
use crate::tagging::Tagging;
use crate::threads;

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

/// The checker's findings on a plan or a draft made for `request`: costs, and violations (each a
/// planner bug).
pub fn verify_plan<S>(
    view: &GraphView,
    graph: &Graph,
    plan: &plan::Plan<S>,
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
