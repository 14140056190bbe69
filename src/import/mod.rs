//! Import: bridge JSON v1 text to a validated [`Graph`], or a typed [`ImportError`] naming the place.

mod bridge;
mod error;
mod nodes;

pub use bridge::GRAPH_SCHEMA;
pub use error::ImportError;

use crate::graph::{Graph, MutableBuffer, NameIndex, Node, NodeId, NodeRoles, OpKind, Signature};
use crate::options::Options;
use bridge::{DocumentSeed, RawDocument, RawSignature, SchemaProbe};
use indexmap::IndexMap;
use nodes::{NodeList, Problem, UNRESOLVED, inputs_of, patch};
use serde::de::DeserializeSeed;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Parses and validates one bridge JSON document.
pub fn parse_graph(text: &str) -> Result<Graph, ImportError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = DocumentSeed { bytes: text.len() };
    let raw = match seed
        .deserialize(&mut de)
        .and_then(|raw| de.end().map(|()| raw))
    {
        Ok(raw) => raw,
        Err(e) => {
            // A document of another schema is reported as such, not as the first field it lacks.
            if let Ok(SchemaProbe {
                schema: Some(found),
            }) = serde_json::from_str::<SchemaProbe>(text)
                && found.as_str() != Some(GRAPH_SCHEMA)
            {
                return Err(ImportError::Schema {
                    found: found.to_string(),
                    expected: GRAPH_SCHEMA,
                });
            }
            return Err(ImportError::from_json(&e));
        }
    };
    if raw.schema.as_deref() != Some(GRAPH_SCHEMA) {
        return Err(ImportError::Schema {
            found: format!("{:?}", raw.schema.unwrap_or_default()),
            expected: GRAPH_SCHEMA,
        });
    }
    validate(raw)
}

fn validate(raw: RawDocument) -> Result<Graph, ImportError> {
    let RawDocument {
        nodes: list,
        graph_signature,
        options,
        producer,
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
        ..
    } = list;
    match problem {
        Some(Problem::Duplicate { first, second }) => {
            return Err(ImportError::DuplicateNode {
                name: nodes[second].name.clone(),
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
                node: nodes[node].name.clone(),
                field,
                message,
            });
        }
        None => {}
    }
    resolve_forward_references(&mut nodes, &names, pending)?;
    for node in &mut nodes {
        if node.inputs.contains(&UNRESOLVED) {
            node.inputs = inputs_of(node);
        }
        if node.op == OpKind::Placeholder && !node.inputs.is_empty() {
            return Err(ImportError::BadReference {
                node: node.name.clone(),
                field: "args",
                message: "a placeholder cannot read another node".into(),
            });
        }
    }
    let output = single_output(&nodes)?;
    check_no_reads_of_output(&nodes)?;
    let order = topological_order(&nodes)?;
    let (signature, roles) = resolve_signature(&graph_signature, &nodes, &names, output)?;
    let options = options.apply_to(&Options::default());
    // Tags are interned: equal tags are one allocation.
    let stock_partitions = nodes
        .iter()
        .filter_map(|n| n.stock_tag.as_ref().map(|t| t.as_ptr()))
        .collect::<hashbrown::HashSet<_>>()
        .len();
    Ok(Graph {
        stock_partitions,
        nodes,
        roles,
        signature,
        options,
        order,
        output,
        producer,
        names,
    })
}

/// References to nodes later in the list, now that every name is known.
fn resolve_forward_references(
    nodes: &mut [Node],
    names: &NameIndex,
    pending: Vec<(u32, String)>,
) -> Result<(), ImportError> {
    let mut resolved: Vec<(u32, NodeId)> = Vec::with_capacity(pending.len());
    for (node, name) in pending {
        match names.find(nodes, &name) {
            Some(id) => resolved.push((node, id)),
            None => {
                return Err(ImportError::UnknownNode {
                    node: nodes[node as usize].name.clone(),
                    reference: name,
                });
            }
        }
    }
    for group in resolved.chunk_by(|a, b| a.0 == b.0) {
        let node = &mut nodes[group[0].0 as usize];
        patch(node, &mut group.iter().map(|&(_, id)| id));
    }
    Ok(())
}

fn single_output(nodes: &[Node]) -> Result<NodeId, ImportError> {
    let mut outputs = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.op == OpKind::Output);
    match (outputs.next(), outputs.next()) {
        (Some((i, _)), None) => Ok(NodeId(i as u32)),
        (None, _) => Err(ImportError::OutputCount { count: 0 }),
        (Some(_), Some(_)) => Err(ImportError::OutputCount {
            count: 2 + outputs.count(),
        }),
    }
}

fn check_no_reads_of_output(nodes: &[Node]) -> Result<(), ImportError> {
    for node in nodes {
        if let Some(&read) = node
            .inputs
            .iter()
            .find(|i| nodes[i.index()].op == OpKind::Output)
        {
            return Err(ImportError::OutputHasUsers {
                node: nodes[read.index()].name.clone(),
                op: "output",
                user: node.name.clone(),
            });
        }
    }
    Ok(())
}

/// FX order when every reference points backwards (the normal case, checked in O(E)); otherwise
/// Kahn's algorithm preferring input order, and a typed error with the cycle's path if there is one.
fn topological_order(nodes: &[Node]) -> Result<Vec<NodeId>, ImportError> {
    let in_fx_order = nodes
        .iter()
        .enumerate()
        .all(|(i, n)| n.inputs.iter().all(|p| p.index() < i));
    if in_fx_order {
        return Ok((0..nodes.len() as u32).map(NodeId).collect());
    }
    let mut users: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
    let mut pending: Vec<usize> = vec![0; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        pending[i] = n.inputs.len();
        for p in &n.inputs {
            users[p.index()].push(i as u32);
        }
    }
    let mut ready: BinaryHeap<Reverse<u32>> = (0..nodes.len())
        .filter(|&i| pending[i] == 0)
        .map(|i| Reverse(i as u32))
        .collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(Reverse(i)) = ready.pop() {
        order.push(NodeId(i));
        for &u in &users[i as usize] {
            pending[u as usize] -= 1;
            if pending[u as usize] == 0 {
                ready.push(Reverse(u));
            }
        }
    }
    if order.len() == nodes.len() {
        return Ok(order);
    }
    // Every node left has an unprocessed input; walking those backwards must revisit a node.
    let start = (0..nodes.len()).find(|&i| pending[i] > 0).unwrap_or(0);
    let mut seen_at: HashMap<usize, usize> = HashMap::new();
    let mut walk = Vec::new();
    let mut at = start;
    while !seen_at.contains_key(&at) {
        seen_at.insert(at, walk.len());
        walk.push(at);
        match nodes[at].inputs.iter().find(|p| pending[p.index()] > 0) {
            Some(p) => at = p.index(),
            None => break,
        }
    }
    let from = seen_at.get(&at).copied().unwrap_or(0);
    let mut path: Vec<String> = walk[from..]
        .iter()
        .rev()
        .map(|&i| nodes[i].name.clone())
        .collect();
    if let Some(first) = path.first().cloned() {
        path.push(first);
    }
    Err(ImportError::Cycle { path })
}

fn op_name(op: OpKind) -> &'static str {
    match op {
        OpKind::Placeholder => "placeholder",
        OpKind::CallFunction => "call_function",
        OpKind::GetAttr => "get_attr",
        OpKind::Output => "output",
    }
}

fn resolve_signature(
    raw: &RawSignature,
    nodes: &[Node],
    names: &NameIndex,
    output: NodeId,
) -> Result<(Signature, Vec<NodeRoles>), ImportError> {
    let mut roles = vec![NodeRoles::empty(); nodes.len()];
    let mut role_field: Vec<Option<&'static str>> = vec![None; nodes.len()];
    let lookup = |field: &'static str, name: &str| -> Result<NodeId, ImportError> {
        names
            .find(nodes, name)
            .ok_or_else(|| ImportError::SignatureUnknownNode {
                field,
                name: name.into(),
            })
    };
    let mut placeholder =
        |field: &'static str, name: &str, role: NodeRoles| -> Result<NodeId, ImportError> {
            let id = lookup(field, name)?;
            let op = nodes[id.index()].op;
            if op != OpKind::Placeholder {
                return Err(ImportError::SignatureWrongNode {
                    field,
                    name: name.into(),
                    op: op_name(op),
                    expected: "placeholder",
                });
            }
            if let Some(first) = role_field[id.index()].replace(field) {
                return Err(ImportError::SignatureConflict {
                    name: name.into(),
                    first,
                    second: field,
                });
            }
            roles[id.index()] |= role;
            Ok(id)
        };
    let mut signature = Signature::default();
    for (input, param) in &raw.inputs_to_parameters {
        let id = placeholder("inputs_to_parameters", input, NodeRoles::PARAMETER)?;
        signature.inputs_to_parameters.push((id, param.clone()));
    }
    for (input, buffer) in &raw.inputs_to_buffers {
        let id = placeholder("inputs_to_buffers", input, NodeRoles::BUFFER)?;
        signature.inputs_to_buffers.push((id, buffer.clone()));
    }
    for (input, constant) in &raw.inputs_to_lifted_tensor_constants {
        let id = placeholder(
            "inputs_to_lifted_tensor_constants",
            input,
            NodeRoles::LIFTED_CONSTANT,
        )?;
        signature
            .inputs_to_lifted_tensor_constants
            .push((id, constant.clone()));
    }
    for input in &raw.user_inputs {
        let id = placeholder("user_inputs", input, NodeRoles::USER_INPUT)?;
        signature.user_inputs.push(id);
    }
    let returned = &nodes[output.index()].inputs;
    for name in &raw.user_outputs {
        let id = match name {
            Some(name) => Some(lookup("user_outputs", name)?),
            None => None,
        };
        if let Some(id) = id {
            roles[id.index()] |= NodeRoles::USER_OUTPUT;
        }
        signature.user_outputs.push(id);
    }
    signature.mutable_buffers =
        resolve_mutations(&raw.buffers_to_mutate, &signature, nodes, &lookup, returned)?;
    for b in &signature.mutable_buffers {
        roles[b.placeholder.index()] |= NodeRoles::MUTABLE_BUFFER;
        roles[b.writer.index()] |= NodeRoles::BUFFER_WRITER;
    }
    Ok((signature, roles))
}

fn resolve_mutations(
    buffers_to_mutate: &IndexMap<String, String>,
    signature: &Signature,
    nodes: &[Node],
    lookup: &dyn Fn(&'static str, &str) -> Result<NodeId, ImportError>,
    returned: &[NodeId],
) -> Result<Vec<MutableBuffer>, ImportError> {
    let mut writer_of: IndexMap<&str, NodeId> = IndexMap::new();
    for (writer_name, buffer) in buffers_to_mutate {
        let writer = lookup("buffers_to_mutate", writer_name)?;
        if !returned.contains(&writer) {
            return Err(ImportError::WriterNotReturned {
                name: writer_name.clone(),
            });
        }
        if nodes[writer.index()].op == OpKind::Placeholder {
            return Err(ImportError::WriterIsPlaceholder {
                buffer: buffer.clone(),
                writer: writer_name.clone(),
            });
        }
        if let Some(first) = writer_of.insert(buffer.as_str(), writer) {
            return Err(ImportError::TwoWriters {
                buffer: buffer.clone(),
                first: nodes[first.index()].name.clone(),
                second: writer_name.clone(),
            });
        }
    }
    let placeholder_of: HashMap<&str, NodeId> = signature
        .inputs_to_buffers
        .iter()
        .map(|(id, b)| (b.as_str(), *id))
        .collect();
    let mut mutable = Vec::with_capacity(writer_of.len());
    for (buffer, writer) in writer_of {
        let placeholder =
            placeholder_of
                .get(buffer)
                .copied()
                .ok_or_else(|| ImportError::MutatedNeverRead {
                    buffer: buffer.into(),
                    writer: nodes[writer.index()].name.clone(),
                })?;
        mutable.push(MutableBuffer {
            buffer: buffer.into(),
            placeholder,
            writer,
        });
    }
    mutable.sort_by_key(|b| b.placeholder);
    Ok(mutable)
}

#[cfg(test)]
mod tests;
