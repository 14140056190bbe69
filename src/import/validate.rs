//! What a document read must hold beyond its syntax, checked once it is read: no duplicate name
//! or bad reference, references resolved, one output that nothing reads, `getitem`s of one
//! multi-output op, no cycle (its path named), and a signature that names nodes of the right
//! kind. The result is the [`Graph`] every later stage reads.

use super::bridge::RawDocument;
use super::error::ImportError;
use super::node_list::{NodeList, Problem, getitem_of_one};
use super::references::resolve_forward_references;
use super::signature::resolve_signature;
use crate::digraph::{
    Cycle, DirectedGraph, LowestFirst, Predecessors, Successors, topological_order_or_cycle,
};
use crate::graph::{Graph, Node, NodeId, RangeConstraints};
use crate::options::Options;

/// The graph a document read describes, or the first thing wrong with it.
pub(super) fn validate(raw: RawDocument) -> Result<Graph, ImportError> {
    let RawDocument {
        nodes: list,
        graph_signature,
        options,
        producer,
        decomposed,
        range_constraints,
        ..
    } = raw;
    let (Some(list), Some(graph_signature)) = (list, graph_signature) else {
        return Err(ImportError::Json {
            line: 0,
            column: 0,
            message: "missing nodes or graph_signature".into(),
        });
    };
    let NodeList {
        mut nodes,
        names,
        pending,
        problem,
        outputs,
        placeholder_reading,
        getitem_not_of_one,
        ops,
        value_bytes,
        tags,
        refused,
        unsized_values,
        ..
    } = list;
    match problem {
        Some(Problem::Duplicate { first, second }) => {
            return Err(ImportError::DuplicateNode {
                name: nodes[second].name.to_string(),
                first,
                second,
            });
        }
        Some(Problem::BadReference {
            node,
            field,
            message,
        }) => {
            return Err(ImportError::BadReference {
                node: nodes[node].name.to_string(),
                field,
                message,
            });
        }
        None => {}
    }
    if tags.iter().any(|t| t.is_empty()) {
        // An empty `delegation_tag` names no partition: the exporter meant none, or lost the
        // name. Either way it is not taken as a partition of its own.
        let node = nodes.iter().find(|n| n.stock_tag.as_deref() == Some(""));
        return Err(ImportError::EmptyTag {
            node: node.map_or_else(String::new, |n| n.name.to_string()),
        });
    }
    let resolved = resolve_forward_references(&mut nodes, &names, pending)?;
    if let Some(node) = placeholder_reading {
        return Err(ImportError::BadReference {
            node: nodes[node as usize].name.to_string(),
            field: "args",
            message: "a placeholder cannot read another node".into(),
        });
    }
    let output = match outputs[..] {
        [output] => NodeId(output),
        _ => {
            return Err(ImportError::OutputCount {
                count: outputs.len(),
            });
        }
    };
    check_no_reads_of_output(&nodes, output, &resolved)?;
    check_getitems(&nodes, getitem_not_of_one, &resolved)?;
    // References resolved while reading point backwards; FX order holds unless one resolved
    // afterwards points forwards (or at its own node).
    let in_fx_order = resolved.iter().all(|&(node, id)| id.0 < node);
    let order = topological_order(&nodes, in_fx_order)?;
    let (signature, roles) = resolve_signature(graph_signature, &nodes, &names, output)?;
    let options = options.apply_to(&Options::default());
    Ok(Graph {
        stock_partitions: tags.len(),
        ops,
        value_bytes,
        refused_by_converter: refused.into_iter().map(NodeId).collect(),
        nodes,
        roles,
        signature,
        options,
        order,
        output,
        producer,
        decomposed,
        unsized_values: (unsized_values.into_iter())
            .map(|(n, why)| (NodeId(n), why))
            .collect(),
        range_constraints: range_constraints.map(|ranges| {
            RangeConstraints::new(
                (ranges.into_iter())
                    .map(|(size, [low, high])| (size.into_boxed_str(), low, high))
                    .collect(),
            )
        }),
        names,
    })
}

/// Nothing may read the output node. Its readers are nodes after it, or nodes whose reference to
/// it was resolved after reading (`resolved`); the first in reading order is reported.
fn check_no_reads_of_output(
    nodes: &[Node],
    output: NodeId,
    resolved: &[(u32, NodeId)],
) -> Result<(), ImportError> {
    let earlier = resolved
        .iter()
        .find(|&&(_, id)| id == output)
        .map(|&(node, _)| node as usize);
    let later = (output.index() + 1..nodes.len()).find(|&i| nodes[i].inputs.contains(&output));
    match earlier.into_iter().chain(later).min() {
        Some(user) => Err(ImportError::OutputHasUsers {
            node: nodes[output.index()].name.to_string(),
            op: "output",
            user: nodes[user].name.to_string(),
        }),
        None => Ok(()),
    }
}

/// A `getitem` indexes the output of one multi-output op: the planner and the checker keep the two
/// together (TUPLE_WHOLE), which a getitem reading several nodes would make impossible. Reading
/// found the first such getitem among nodes whose references were all resolved as they were read
/// (`read`); those with a reference resolved since (`resolved`) are judged here. The first in
/// node order is reported.
fn check_getitems(
    nodes: &[Node],
    read: Option<u32>,
    resolved: &[(u32, NodeId)],
) -> Result<(), ImportError> {
    let late = (resolved.iter().map(|&(node, _)| node))
        .filter(|&node| {
            let n = &nodes[node as usize];
            n.is_getitem() && !getitem_of_one(n)
        })
        .min();
    match read.into_iter().chain(late).min() {
        Some(node) => {
            let n = &nodes[node as usize];
            Err(ImportError::GetitemInputs {
                node: n.name.to_string(),
                count: n.inputs.len(),
            })
        }
        None => Ok(()),
    }
}

/// FX order when every reference points backwards (the normal case); otherwise Kahn's algorithm
/// preferring input order, and a typed error with the cycle's path if there is one.
fn topological_order(nodes: &[Node], in_fx_order: bool) -> Result<Vec<NodeId>, ImportError> {
    if in_fx_order {
        return Ok((0..nodes.len() as u32).map(NodeId).collect());
    }
    let mut users: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        for p in &n.inputs {
            users[p.index()].push(i as u32);
        }
    }
    match topological_order_or_cycle::<_, LowestFirst>(&NodesRead { nodes, users }) {
        Ok(order) => Ok(order),
        Err(Cycle(cycle)) => {
            let mut path: Vec<String> = (cycle.iter())
                .map(|&i| nodes[i.index()].name.to_string())
                .collect();
            if let Some(first) = path.first().cloned() {
                path.push(first);
            }
            Err(ImportError::Cycle { path })
        }
    }
}

/// The nodes as read, for Kahn's algorithm: each node's inputs, and its users.
struct NodesRead<'a> {
    nodes: &'a [Node],
    users: Vec<Vec<u32>>,
}

impl DirectedGraph for NodesRead<'_> {
    type Node = NodeId;
    fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

impl Successors for NodesRead<'_> {
    fn for_each_successor(&self, n: NodeId, f: impl FnMut(NodeId)) {
        self.users[n.index()].iter().map(|&u| NodeId(u)).for_each(f);
    }
}

impl Predecessors for NodesRead<'_> {
    fn for_each_predecessor(&self, n: NodeId, f: impl FnMut(NodeId)) {
        self.nodes[n.index()].inputs.iter().copied().for_each(f);
    }
}
