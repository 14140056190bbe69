//! `CoreMLPartitioner`'s placeholder tagging after the capability pass: executorch's
//! `tag_constant_data` (when `take_over_constant_data`) and `tag_mutated_buffer` (when
//! `take_over_mutable_buffer`). Each tags a placeholder with the smallest of its users' tags, as
//! strings (`tag10` before `tag9`).
//!
//! The two executorch versions disagree on which buffers are mutated. 1.5 asks the signature:
//! a buffer named in `buffers_to_mutate`. 1.4 asks whether the placeholder has a user named in
//! `buffers_to_mutate` (a writer reading the buffer directly): a KV cache updated through
//! `index_put` on a copy is "constant" to it, and tagged even with take-over off.

use super::ExecutorchVersion;
use crate::digraph::Adjacency;
use crate::graph::{Graph, NodeId, NodeRoles, OpKind};
use crate::options::Options;

/// Tags placeholders in `partition` (fx partition numbers, `tag{number}`) as the version does.
pub(super) fn tag_placeholders<G: Adjacency<Node = NodeId>>(
    graph: &Graph,
    users: &G,
    version: ExecutorchVersion,
    options: &Options,
    partition: &mut [Option<u32>],
) {
    let data = NodeRoles::PARAMETER | NodeRoles::BUFFER | NodeRoles::LIFTED_CONSTANT;
    for (i, &op) in graph.ops.iter().enumerate() {
        let n = NodeId(i as u32);
        let roles = graph.role(n);
        if op != OpKind::Placeholder || !roles.intersects(data) {
            continue;
        }
        let mutated = match version {
            ExecutorchVersion::V1_5 => roles.contains(NodeRoles::MUTABLE_BUFFER),
            ExecutorchVersion::V1_4 => (users.successors(n).iter())
                .any(|&u| graph.role(u).contains(NodeRoles::BUFFER_WRITER)),
        };
        let tagged = if mutated {
            options.take_over_mutable_buffer && roles.contains(NodeRoles::BUFFER)
        } else {
            options.take_over_constant_data
        };
        if tagged {
            let smallest = (users.successors(n).iter())
                .filter_map(|&u| partition[u.index()])
                .min_by_key(|p| p.to_string());
            if smallest.is_some() {
                partition[i] = smallest;
            }
        }
    }
}
