//! What a run of the pipeline yields, as values the reports read: the plan compared with the stock
//! proposal it replaces, and the independent checker's verdict on both.

use crate::analyse::Analysis;
use crate::cost::CostEstimate;
use crate::plan::Draft;
use crate::rules::Finding;
use crate::stock;
use crate::tagging::Tagging;

/// A planned graph: its analysis, kept for reporting, the plan compared with the stock proposal,
/// and the checker's verdict on both.
pub struct Run {
    pub analysis: Analysis,
    pub plan: Plan,
    pub verdict: Verdict,
}

/// A plan compared with the stock proposal: the planner's draft and the comparison the pipeline
/// adds.
#[derive(Clone, Debug)]
pub struct Plan {
    pub draft: Draft,
    pub stock: StockComparison,
}

/// The stock proposal a plan is compared with: the tags the input carried, or, for an untagged
/// input, executorch's reproduced (`crate::stock`) for the same options and support.
#[derive(Clone, Debug, PartialEq)]
pub struct StockComparison {
    pub tagging: Tagging,
    pub source: stock::Source,
    /// The plan's cost model's estimate of it.
    pub estimate: CostEstimate,
}

/// The checker's findings on a plan and on the stock proposal it replaces.
#[derive(Clone, Debug, Default, PartialEq)]
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
