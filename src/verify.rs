//! The caller's side of the checker. As regalloc2's fuzzer runs the allocator and then its checker,
//! callers (the API, what-if, the CLI, tests) run the planner and then this: the plan's account of
//! itself is turned into the checker's claims, and the checker sees the plan's tags and the stock
//! proposal's, knowing nothing of how either was made.

use crate::check::{BufferClaim, Claims, Lives, check, check_claims};
use crate::graph::Graph;
use crate::plan::{Plan, PlanRequest, Strategy};
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

/// What `plan` says of itself, in the checker's terms.
pub fn claims(plan: &Plan) -> Claims<'_> {
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

/// Runs the checker on `plan`, made for `request`, and on the document's stock proposal.
pub fn verify(graph: &Graph, plan: &Plan, request: &PlanRequest) -> Verdict {
    // A node kept on CPU may be tagged by nobody: to the checker it is unsupported.
    let mut delegable = request.supported.clone();
    for n in &request.on_cpu {
        delegable[n.index()] = false;
    }
    let (stock, plan) = threads::both(
        graph.len() >= CHECKS_BESIDE_FROM,
        || check(graph, &plan.stock, &request.options, &request.supported),
        || {
            let claims = claims(plan);
            check_claims(graph, &plan.tagging, &plan.options, &delegable, &claims)
        },
    );
    Verdict { plan, stock }
}

/// Graphs from this many nodes check the stock proposal on a second thread beside the plan.
const CHECKS_BESIDE_FROM: usize = 50_000;
