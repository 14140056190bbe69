//! Mutation chains: for each buffer the signature declares mutable, the nodes that compute its new
//! value from its old one, who reads it, and the convex hull a Core ML state would need.

use super::index::GraphIndex;
use super::walk::{Direction, Marks, reach};
use crate::digraph::Adjacency;
use crate::graph::{Graph, MutableBuffer, NodeId, OpKind};

/// Ops that write part of their first argument and return the whole: a chain holding one of these
/// (applied to the buffer or to a chain value) updates a slice of the buffer in place.
const SCATTER_OPS: &[&str] = &[
    "slice_scatter",
    "select_scatter",
    "diagonal_scatter",
    "as_strided_scatter",
    "masked_scatter",
    "index_put",
    "_unsafe_index_put",
    "index_copy",
    "index_add",
    "index_fill",
    "scatter",
    "scatter_add",
    "scatter_reduce",
];

/// `aten.index_put_.default` → `index_put`: the op's name without namespace, overload or `_`.
pub fn op_base_name(target: &str) -> &str {
    let mut parts = target.split('.');
    let name = match (parts.next(), parts.next()) {
        (Some(_namespace), Some(name)) => name,
        (Some(only), None) => only,
        _ => target,
    };
    name.strip_suffix('_')
        .filter(|n| !n.is_empty() && !n.ends_with('_'))
        .unwrap_or(name)
}

pub fn is_scatter_op(target: &str) -> bool {
    SCATTER_OPS.contains(&op_base_name(target))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MutationKind {
    /// A scatter-style op writes part of the buffer (the case executorch 1.4 mishandles).
    Slice,
    /// The new value is computed as a whole.
    Whole,
}

#[derive(Clone, Debug)]
pub struct BufferChain {
    pub buffer: String,
    pub placeholder: NodeId,
    pub writer: NodeId,
    /// Every node on a path from the placeholder to the writer, writer included, in topological order.
    pub chain: Vec<NodeId>,
    pub kind: MutationKind,
    /// The scatter-style ops that make this a slice mutation.
    pub scatters: Vec<NodeId>,
    /// Direct users of the placeholder: they read the old value.
    pub placeholder_readers: Vec<NodeId>,
    /// Users of chain nodes outside the chain: they read an intermediate or the new value.
    pub value_readers: Vec<NodeId>,
    /// The smallest convex set holding the placeholder, the chain and the placeholder's readers:
    /// what one partition must hold to own the buffer as a state. Topological order.
    pub state_hull: Vec<NodeId>,
}

/// Scratch space reused across buffers so that each chain costs only the nodes it touches.
pub(crate) struct ChainWalker<'a> {
    graph: &'a Graph,
    index: &'a GraphIndex,
    ahead: Marks,
    behind: Marks,
    seen: Marks,
}

impl<'a> ChainWalker<'a> {
    pub(crate) fn new(graph: &'a Graph, index: &'a GraphIndex) -> Self {
        let n = graph.len();
        ChainWalker {
            graph,
            index,
            ahead: Marks::new(n),
            behind: Marks::new(n),
            seen: Marks::new(n),
        }
    }

    pub(crate) fn chain(&mut self, decl: &MutableBuffer) -> BufferChain {
        let (p, w) = (decl.placeholder, decl.writer);
        let index = self.index;
        // The writer is always included; when the new value does not depend on the old one (a whole
        // overwrite) it is the whole chain.
        let mut chain = self.between(&[p], &[w]);
        chain.retain(|&n| n != p);
        chain.sort_by_key(|&n| index.position(n));

        self.seen.next_epoch();
        for &n in &chain {
            self.seen.mark(n);
        }
        let scatters: Vec<NodeId> = chain
            .iter()
            .copied()
            .filter(|&n| {
                let node = self.graph.node(n);
                is_scatter_op(&node.target)
                    && scatter_base(self.graph, n).is_some_and(|b| b == p || self.seen.is_marked(b))
            })
            .collect();
        let kind = if scatters.is_empty() {
            MutationKind::Whole
        } else {
            MutationKind::Slice
        };
        let placeholder_readers = index.successors(p).to_vec();
        let mut value_readers = Vec::new();
        for &c in &chain {
            for &u in index.successors(c) {
                if self.seen.mark(u) {
                    value_readers.push(u);
                }
            }
        }
        value_readers.sort_by_key(|&n| index.position(n));

        let mut members: Vec<NodeId> =
            Vec::with_capacity(chain.len() + placeholder_readers.len() + 1);
        members.push(p);
        members.extend(&chain);
        members.extend(&placeholder_readers);
        let mut state_hull = self.between(&members, &members);
        state_hull.sort_by_key(|&n| index.position(n));

        BufferChain {
            buffer: decl.buffer.clone(),
            placeholder: p,
            writer: w,
            chain,
            kind,
            scatters,
            placeholder_readers,
            value_readers,
            state_hull,
        }
    }

    /// Nodes on some path from `sources` to `sinks`, both included where they lie on such a path
    /// (sources and sinks themselves are always included). Forward search is bounded by the last
    /// sink's position, backward search by what the forward search reached.
    pub(crate) fn between(&mut self, sources: &[NodeId], sinks: &[NodeId]) -> Vec<NodeId> {
        let index = self.index;
        let last = sinks.iter().map(|&n| index.position(n)).max().unwrap_or(0);
        self.ahead.next_epoch();
        let ahead = &mut self.ahead;
        reach(index, sources, Direction::Forward, ahead, |n| {
            index.position(n) <= last
        });
        self.behind.next_epoch();
        let ahead = &self.ahead;
        let mut found = reach(index, sinks, Direction::Backward, &mut self.behind, |n| {
            ahead.is_marked(n)
        });
        for &s in sources {
            if self.behind.mark(s) {
                found.push(s);
            }
        }
        found
    }
}

/// The tensor a scatter-style op writes into: its first positional argument (or `self`/`input`).
fn scatter_base(graph: &Graph, n: NodeId) -> Option<NodeId> {
    let node = graph.node(n);
    if node.op != OpKind::CallFunction {
        return None;
    }
    node.args
        .first()
        .or_else(|| node.kwarg("self"))
        .or_else(|| node.kwarg("input"))?
        .node()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_lose_namespace_overload_and_inplace_suffix() {
        assert_eq!(op_base_name("aten.index_put_.default"), "index_put");
        assert_eq!(op_base_name("aten.slice_scatter.default"), "slice_scatter");
        assert_eq!(
            op_base_name("aten._unsafe_index_put.default"),
            "_unsafe_index_put"
        );
        assert_eq!(op_base_name("getitem"), "getitem");
        assert_eq!(op_base_name("aten.__and__.Tensor"), "__and__");
        assert!(is_scatter_op("aten.index_copy_.default"));
        assert!(is_scatter_op("aten.scatter.src"));
        assert!(!is_scatter_op("aten.copy.default"));
        assert!(!is_scatter_op("llama.gated_delta_rule.default"));
    }
}
