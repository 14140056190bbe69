//! Analyse: the structure of the imported graph that every plan reuses: adjacency and topological
//! positions, each mutable buffer's chain, readers and state hull, and the ops tied by values no
//! delegate can take at its boundary. Nothing here depends on what is
//! supported or on the options, so one analysis serves any number of plans.

mod chains;
mod index;
mod tied;
mod walk;

pub use crate::digraph::{Adjacency, DirectedGraph, Predecessors, Successors};
pub use chains::{BufferChain, MutationKind, is_scatter_op, op_base_name};
pub use index::GraphIndex;
pub use tied::Tied;

use crate::graph::{Graph, NodeId};
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Analysis {
    /// Shared: a large graph's stock proposal is reproduced from it while the rest of the analysis
    /// and the plan's search go on beside (`crate::pipeline`).
    pub index: Arc<GraphIndex>,
    /// One per mutable buffer, in the order of [`crate::graph::Signature::mutable_buffers`].
    pub buffers: Vec<BufferChain>,
    /// Every `getitem` with the multi-output node it reads, in topological order: each must live
    /// where its producer lives, and plans ask which again and again.
    pub getitems: Vec<(NodeId, NodeId)>,
    /// Ops tied by values no delegate can take or give at its boundary (`tied.rs`).
    pub tied: Vec<Tied>,
}

pub fn analyse(graph: &Graph) -> Analysis {
    analyse_indexed(graph, Arc::new(GraphIndex::new(graph)))
}

/// The analysis of `graph` from its adjacency, already built.
pub fn analyse_indexed(graph: &Graph, index: Arc<GraphIndex>) -> Analysis {
    let mut walker = chains::ChainWalker::new(graph, &index);
    let buffers = graph
        .signature
        .mutable_buffers
        .iter()
        .map(|b| walker.chain(b))
        .collect();
    let tied = tied::tied_groups(graph, &index, &mut walker);
    let getitems = index
        .order()
        .iter()
        .filter(|&&n| index.is_getitem(n))
        .filter_map(|&n| Some((n, *graph.node(n).inputs.first()?)))
        .collect();
    Analysis {
        index,
        buffers,
        getitems,
        tied,
    }
}

#[cfg(test)]
mod tests;
