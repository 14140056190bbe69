//! The stock side of a run: the proposal a plan is compared with, where it comes from (carried by
//! the document, or reproduced as executorch's `CoreMLPartitioner` would tag it), and the plan's
//! cost model's estimate of it.

use crate::analyse::{Analysis, GraphIndex};
use crate::cost::{Scratch, estimate};
use crate::graph::Graph;
use crate::outcome::StockComparison;
use crate::plan::PlanRequest;
use crate::stock;
use crate::tagging::Tagging;

/// The stock proposal for `graph` and `request`: its tags and where they come from.
pub fn stock_proposal(
    graph: &Graph,
    index: &GraphIndex,
    request: &PlanRequest,
) -> (Tagging, stock::Source) {
    stock::proposal(graph, index, &request.options, &request.supported)
}

/// The stock proposal for `graph` and `request`, with the request's cost model's estimate of it.
pub fn stock_comparison(
    graph: &Graph,
    analysis: &Analysis,
    request: &PlanRequest,
) -> StockComparison {
    let (tagging, source) = stock_proposal(graph, analysis.index.as_ref(), request);
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
