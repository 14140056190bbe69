//! The graph signature resolved to node ids: each input's and output's node found by name and of
//! the kind its field asks for, each node's roles, and each mutated buffer's placeholder and
//! writer.

use super::bridge::RawSignature;
use super::error::ImportError;
use crate::graph::{MutableBuffer, NameIndex, Node, NodeId, NodeRoles, OpKind, Signature};
use crate::threads;
use indexmap::IndexMap;
use std::collections::HashMap;

pub(super) fn resolve_signature(
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

fn op_name(op: OpKind) -> &'static str {
    match op {
        OpKind::Placeholder => "placeholder",
        OpKind::CallFunction => "call_function",
        OpKind::GetAttr => "get_attr",
        OpKind::Output => "output",
    }
}
