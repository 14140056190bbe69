//! Import: bridge JSON v1 text to a validated [`Graph`], or a typed [`ImportError`] naming the place.

mod bridge;
mod error;
mod framed;
mod node_list;
mod read_args;
mod read_nodes;
mod references;
mod scan;

use crate::schema::GRAPH_SCHEMA;
use crate::threads;
pub use error::ImportError;

use crate::digraph::{Cycle, LowestFirst, NumberedGraph, topological_order_or_cycle};
use crate::graph::{Graph, MutableBuffer, NameIndex, Node, NodeId, NodeRoles, OpKind, Signature};
use crate::options::Options;
use bridge::{DocumentSeed, RawDocument, RawSignature, SchemaProbe};
use indexmap::IndexMap;
use node_list::{NodeList, Problem, getitem_of_one};
use references::resolve_forward_references;
use serde::de::DeserializeSeed;
use std::collections::HashMap;

/// Parses and validates one bridge JSON document.
pub fn parse_graph(text: &str) -> Result<Graph, ImportError> {
    let raw = match framed::read_framed(text) {
        Some(raw) => raw,
        None => read_document(text)?,
    };
    finish(raw)
}

/// Parses a document with serde's visitors alone: the reader the faster route (`framed`, `scan`)
/// must always agree with. For differential tests and fuzzing; planning uses [`parse_graph`].
#[doc(hidden)]
pub fn parse_graph_by_serde(text: &str) -> Result<Graph, ImportError> {
    read_document(text).and_then(finish)
}

/// Reads a document on one thread, with the errors a user should see.
fn read_document(text: &str) -> Result<RawDocument, ImportError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = DocumentSeed { bytes: text.len() };
    match seed
        .deserialize(&mut de)
        .and_then(|raw| de.end().map(|()| raw))
    {
        Ok(raw) => Ok(raw),
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
            Err(ImportError::from_json(&e))
        }
    }
}

fn finish(raw: RawDocument) -> Result<Graph, ImportError> {
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
        decomposed,
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
        Ok(order) => Ok(order.into_iter().map(|i| NodeId(i as u32)).collect()),
        Err(Cycle(cycle)) => {
            let mut path: Vec<String> = cycle.iter().map(|&i| nodes[i].name.to_string()).collect();
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

impl NumberedGraph for NodesRead<'_> {
    fn node_count(&self) -> usize {
        self.nodes.len()
    }
    fn for_each_successor(&self, n: usize, f: impl FnMut(usize)) {
        self.users[n].iter().map(|&u| u as usize).for_each(f);
    }
    fn for_each_predecessor(&self, n: usize, f: impl FnMut(usize)) {
        self.nodes[n].inputs.iter().map(|p| p.index()).for_each(f);
    }
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
    raw: RawSignature,
    nodes: &[Node],
    names: &NameIndex,
    output: NodeId,
) -> Result<(Signature, Vec<NodeRoles>), ImportError> {
    let mut roles = vec![NodeRoles::empty(); nodes.len()];
    // Each input field gives one role, so a placeholder's roles say which field named it first.
    const INPUT_FIELDS: [(NodeRoles, &str); 4] = [
        (NodeRoles::PARAMETER, "inputs_to_parameters"),
        (NodeRoles::BUFFER, "inputs_to_buffers"),
        (
            NodeRoles::LIFTED_CONSTANT,
            "inputs_to_lifted_tensor_constants",
        ),
        (NodeRoles::USER_INPUT, "user_inputs"),
    ];
    let lookup = |field: &'static str, name: &str| -> Result<NodeId, ImportError> {
        names
            .find(nodes, name)
            .ok_or_else(|| ImportError::SignatureUnknownNode {
                field,
                name: name.into(),
            })
    };
    let mut placeholder = |field: &'static str,
                           name: &str,
                           found: Option<(NodeId, OpKind)>,
                           role: NodeRoles|
     -> Result<NodeId, ImportError> {
        let (id, op) = found.ok_or_else(|| ImportError::SignatureUnknownNode {
            field,
            name: name.into(),
        })?;
        if op != OpKind::Placeholder {
            return Err(ImportError::SignatureWrongNode {
                field,
                name: name.into(),
                op: op_name(op),
                expected: "placeholder",
            });
        }
        let named = roles[id.index()];
        if let Some(&(_, first)) = INPUT_FIELDS.iter().find(|(r, _)| named.contains(*r)) {
            return Err(ImportError::SignatureConflict {
                name: name.into(),
                first,
                second: field,
            });
        }
        roles[id.index()] |= role;
        Ok(id)
    };
    // Each lookup reads a node at random, and a large mixture-of-experts model names hundreds of
    // thousands of placeholders.
    let keys: Vec<&str> = (raw.inputs_to_parameters.keys())
        .chain(raw.inputs_to_buffers.keys())
        .chain(raw.inputs_to_lifted_tensor_constants.keys())
        .map(String::as_str)
        .collect();
    let mut found = find_all(names, nodes, &keys).into_iter();
    drop(keys);
    let mut signature = Signature::default();
    for (field, role, from, to) in [
        (
            "inputs_to_parameters",
            NodeRoles::PARAMETER,
            raw.inputs_to_parameters,
            &mut signature.inputs_to_parameters,
        ),
        (
            "inputs_to_buffers",
            NodeRoles::BUFFER,
            raw.inputs_to_buffers,
            &mut signature.inputs_to_buffers,
        ),
        (
            "inputs_to_lifted_tensor_constants",
            NodeRoles::LIFTED_CONSTANT,
            raw.inputs_to_lifted_tensor_constants,
            &mut signature.inputs_to_lifted_tensor_constants,
        ),
    ] {
        to.reserve(from.len());
        for ((input, target), found) in from.into_iter().zip(&mut found) {
            to.push((placeholder(field, &input, found, role)?, target));
        }
    }
    for input in &raw.user_inputs {
        let found = names
            .find(nodes, input)
            .map(|id| (id, nodes[id.index()].op));
        let id = placeholder("user_inputs", input, found, NodeRoles::USER_INPUT)?;
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
        resolve_mutations(&raw.buffers_to_mutate, &signature, nodes, names, returned)?;
    for b in &signature.mutable_buffers {
        roles[b.placeholder.index()] |= NodeRoles::MUTABLE_BUFFER;
        roles[b.writer.index()] |= NodeRoles::BUFFER_WRITER;
    }
    Ok((signature, roles))
}

/// Each name's node and its kind; on two threads when there are many.
fn find_all(names: &NameIndex, nodes: &[Node], keys: &[&str]) -> Vec<Option<(NodeId, OpKind)>> {
    const ON_TWO_THREADS_FROM: usize = 20_000;
    let find = |keys: &[&str]| -> Vec<_> {
        (names.find_many(nodes, keys).into_iter())
            .map(|id| id.map(|id| (id, nodes[id.index()].op)))
            .collect()
    };
    if keys.len() < ON_TWO_THREADS_FROM || !threads::two_cores() {
        return find(keys);
    }
    let (first, second) = keys.split_at(keys.len() / 2);
    std::thread::scope(|scope| {
        let second = scope.spawn(|| find(second));
        let mut found = find(first);
        found.extend(threads::join(second));
        found
    })
}

fn resolve_mutations(
    buffers_to_mutate: &IndexMap<String, String>,
    signature: &Signature,
    nodes: &[Node],
    names: &NameIndex,
    returned: &[NodeId],
) -> Result<Vec<MutableBuffer>, ImportError> {
    // A set: a model returns every mutated buffer, thousands of them in a large LLM.
    let returned: hashbrown::HashSet<NodeId> = returned.iter().copied().collect();
    let mut writer_of: IndexMap<&str, NodeId> = IndexMap::new();
    let writers: Vec<&str> = buffers_to_mutate.keys().map(String::as_str).collect();
    let found = names.find_many(nodes, &writers);
    for ((writer_name, buffer), found) in buffers_to_mutate.iter().zip(found) {
        let writer = found.ok_or_else(|| ImportError::SignatureUnknownNode {
            field: "buffers_to_mutate",
            name: writer_name.clone(),
        })?;
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
                first: nodes[first.index()].name.to_string(),
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
                    writer: nodes[writer.index()].name.to_string(),
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
