//! The caller's side of the checker. As regalloc2's fuzzer runs the allocator and then its checker,
//! callers (the API, what-if, the CLI, tests) run the planner and then this: the plan's account of
//! itself is turned into the checker's claims, and the checker sees the plan's tags and the stock
//! proposal's, knowing nothing of how either was made.

use crate::analyse::Analysis;
use crate::check::{BufferClaim, Claims, Lives, check, check_claims};
use crate::graph::Graph;
use crate::plan::{self, Plan, PlanError, PlanRequest, StockComparison, Strategy};
use crate::rules::Finding;
use crate::threads;

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
    let (stock, plan) = threads::both(
        graph.len() >= threads::BESIDE_FROM_NODES,
        || verify_stock(graph, &plan.stock, request),
        || verify_plan(graph, plan, request),
    );
    Verdict { plan, stock }
}

/// Plans `graph` for `request` and runs the checker on the plan and on the stock proposal. A large
/// document's stock side (the proposal, reproduced for an untagged one, and its check) runs on a
/// second thread beside the planner's side (the draft and its check): the same plan and verdict
/// as [`crate::plan`] then [`verify`], sooner.
pub fn plan_and_verify(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
) -> Result<(Plan, Verdict), PlanError> {
    let ((stock, stock_findings), drafted) = threads::both(
        graph.len() >= threads::BESIDE_FROM_NODES,
        || {
            let stock = plan::stock_comparison(graph, analysis, request);
            let findings = verify_stock(graph, &stock, request);
            (stock, findings)
        },
        || {
            plan::draft(graph, analysis, request).map(|draft| {
                let findings = verify_plan(graph, &draft, request);
                (draft, findings)
            })
        },
    );
    let (draft, plan_findings) = drafted?;
    let verdict = Verdict {
        plan: plan_findings,
        stock: stock_findings,
    };
    Ok((draft.compared_with(stock), verdict))
}

/// The checker's findings on a plan or a draft made for `request`: costs, and violations (each a
/// planner bug).
pub fn verify_plan<S>(graph: &Graph, plan: &Plan<S>, request: &PlanRequest) -> Vec<Finding> {
    // A node kept on CPU may be tagged by nobody: to the checker it is unsupported.
    let mut delegable = request.supported.clone();
    for n in &request.on_cpu {
        delegable[n.index()] = false;
    }
    let claims = claims(plan);
    check_claims(graph, &plan.tagging, &plan.options, &delegable, &claims)
}

/// The checker's findings on the stock proposal: what the planner fixed.
pub fn verify_stock(graph: &Graph, stock: &StockComparison, request: &PlanRequest) -> Vec<Finding> {
    check(graph, &stock.tagging, &request.options, &request.supported)
}
