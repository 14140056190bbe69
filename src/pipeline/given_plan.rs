//! A plan made elsewhere, drawn over its graph (`render --plan`): its tags and buffer decisions,
//! checked against every rule beside the stock proposal, as a plan made here is.

use crate::analyse::{BufferChain, analyse};
use crate::check::check;
use crate::cost::{Scratch, estimate};
use crate::decision::Strategy;
use crate::graph::Graph;
use crate::report::map::{MapBuffer, MapFinding, MapParts};
use crate::report::{GivenPlan, PlanDocumentError};
use crate::stock;
use crate::tagging::Tagging;

/// The parts of a partition map for `given` over `graph`: the plan's tags and the stock
/// proposal's, the checker's findings on both, the plan's own decisions and both estimates.
pub fn given_plan(graph: &Graph, given: GivenPlan) -> Result<MapParts, PlanDocumentError> {
    let analysis = analyse(graph);
    let supported = graph.supported();
    let (stock, source) =
        stock::proposal(graph, analysis.index.as_ref(), &given.options, &supported);
    let given_buffers = given.buffers();
    let mut buffers = Vec::with_capacity(analysis.buffers.len());
    for chain in &analysis.buffers {
        let said = match given_buffers.get(chain.buffer.as_str()) {
            Some(b) => Some(b.decided()?),
            None => None,
        };
        let strategy = said
            .as_ref()
            .map_or_else(|| derived_strategy(&given.tagging, chain), |b| b.strategy);
        let partition = (strategy == Strategy::State)
            .then(|| given.tagging.tag(chain.placeholder).map(str::to_string))
            .flatten();
        let reason = said
            .and_then(|b| b.reason)
            .unwrap_or("read from the plan's tags")
            .to_string();
        buffers.push(MapBuffer::of_chain(chain, strategy, partition, reason));
    }
    let plan_findings = check(graph, &given.tagging, &given.options, &supported);
    let stock_findings = check(graph, &stock, &given.options, &supported);
    let mut findings = MapFinding::all(graph, &plan_findings, &stock_findings);
    MapFinding::insert_plan_decisions(graph, &mut findings, given.decisions);
    let mut scratch = Scratch::default();
    let mut estimate = |t: &Tagging| {
        estimate(
            graph,
            &analysis.index,
            &given.options,
            &given.cost,
            t.partitions(),
            t.partition_count(),
            &mut scratch,
        )
    };
    Ok(MapParts {
        plan_estimate: estimate(&given.tagging),
        stock_estimate: estimate(&stock),
        plan: given.tagging,
        stock,
        stock_source: source.as_str(),
        buffers,
        findings,
    })
}

/// How a buffer lives under a tagging that does not say: a state when placeholder and writer
/// share a partition, on CPU when no node of its chain is tagged, otherwise passed through.
fn derived_strategy(tagging: &Tagging, chain: &BufferChain) -> Strategy {
    let home = tagging.partition(chain.placeholder);
    if home.is_some() && home == tagging.partition(chain.writer) {
        Strategy::State
    } else if chain.chain.iter().all(|&n| tagging.partition(n).is_none()) {
        Strategy::Cpu
    } else {
        Strategy::Io
    }
}
