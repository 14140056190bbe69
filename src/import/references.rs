//! References between nodes: the marker a reference to a node not yet read carries while the list
//! is read, resolving those references once every name is known, and keeping each node's list of
//! distinct inputs in step with its arguments.

use super::error::ImportError;
use crate::graph::NameIndex;
use crate::graph::{Arg, Node, NodeId};
use hashbrown::HashSet;
use smallvec::SmallVec;

/// Stands for a reference to a node later in the list until the whole list is read.
pub(super) const UNRESOLVED: NodeId = NodeId(u32::MAX);

/// References to nodes not yet read when they were met, now that every name is known. Returns
/// each (node, referenced node), in reading order; the nodes' input lists are brought up to date.
pub(super) fn resolve_forward_references(
    nodes: &mut [Node],
    names: &NameIndex,
    pending: Vec<(u32, String)>,
) -> Result<Vec<(u32, NodeId)>, ImportError> {
    let asked: Vec<&str> = pending.iter().map(|(_, name)| name.as_str()).collect();
    let found = names.find_many(nodes, &asked);
    let mut resolved: Vec<(u32, NodeId)> = Vec::with_capacity(pending.len());
    for ((node, name), found) in pending.iter().zip(found) {
        match found {
            Some(id) => resolved.push((*node, id)),
            None => {
                return Err(ImportError::UnknownNode {
                    node: nodes[*node as usize].name.to_string(),
                    reference: name.clone(),
                });
            }
        }
    }
    for group in resolved.chunk_by(|a, b| a.0 == b.0) {
        let node = &mut nodes[group[0].0 as usize];
        patch(node, &mut group.iter().map(|&(_, id)| id));
        recompute_inputs(node);
    }
    Ok(resolved)
}

/// Calls `f` on every reference in a node's arguments, in reading order. Recursion follows the
/// argument nesting, which serde_json bounds (128 levels).
pub(super) fn for_each_reference(node: &mut Node, mut f: impl FnMut(&mut NodeId)) {
    fn walk(arg: &mut Arg, f: &mut dyn FnMut(&mut NodeId)) {
        match arg {
            Arg::Node(id) => f(id),
            Arg::List(items) => items.iter_mut().for_each(|a| walk(a, f)),
            Arg::Dict(entries) => entries.iter_mut().for_each(|(_, a)| walk(a, f)),
            _ => {}
        }
    }
    for a in node.args.iter_mut() {
        walk(a, &mut f);
    }
    for (_, a) in node.kwargs.iter_mut() {
        walk(a, &mut f);
    }
}

/// Replaces the `UNRESOLVED` markers of one node's arguments, in reading order, by `ids`.
fn patch(node: &mut Node, ids: &mut impl Iterator<Item = NodeId>) {
    for_each_reference(node, |id| {
        if *id == UNRESOLVED
            && let Some(real) = ids.next()
        {
            *id = real;
        }
    });
}

/// The distinct nodes a node reads, in order of first reference. Membership is a scan while the
/// list is short and a set beyond: an output node returns thousands of values.
#[derive(Default)]
pub(super) struct Inputs {
    pub list: SmallVec<[NodeId; 4]>,
    seen: Option<HashSet<NodeId>>,
}

impl Inputs {
    const SCANNED: usize = 32;

    pub fn add(&mut self, id: NodeId) {
        match &mut self.seen {
            Some(seen) => {
                if seen.insert(id) {
                    self.list.push(id);
                }
            }
            None if self.list.contains(&id) => {}
            None => {
                self.list.push(id);
                if self.list.len() > Self::SCANNED {
                    self.seen = Some(self.list.iter().copied().collect());
                }
            }
        }
    }
}

/// Sets a node's inputs from its arguments, once references have changed.
pub(super) fn recompute_inputs(node: &mut Node) {
    let mut inputs = Inputs::default();
    for_each_reference(node, |id| inputs.add(*id));
    node.inputs = inputs.list;
}
