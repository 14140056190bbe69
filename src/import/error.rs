//! Everything that can be wrong with an input document, each naming the place: a JSON line and
//! column, or the node.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ImportError {
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },

    #[error(
        "not a bridge document: expected a JSON object with \"schema\", \"nodes\" and \"graph_signature\" (docs/bridge-json.md), found {found}"
    )]
    NotADocument { found: &'static str },

    #[error("unsupported schema {found}: expected \"{expected}\"")]
    Schema {
        found: String,
        expected: &'static str,
    },

    #[error("two nodes are named {name:?} (nodes {first} and {second} in the node list)")]
    DuplicateNode {
        name: String,
        first: usize,
        second: usize,
    },

    #[error(
        "node {node:?} has an empty delegation_tag: give the partition's name, or null for none"
    )]
    EmptyTag { node: String },

    #[error("node {node:?} refers to {reference:?}, which is not a node of the graph")]
    UnknownNode { node: String, reference: String },

    #[error("node {node:?} has a malformed reference in its {field}: {message}")]
    BadReference {
        node: String,
        field: &'static str,
        message: String,
    },

    #[error("the graph has {count} output nodes; an exported program has exactly one")]
    OutputCount { count: usize },

    #[error("node {node:?} is an {op} node but has users ({user:?})")]
    OutputHasUsers {
        node: String,
        op: &'static str,
        user: String,
    },

    #[error(
        "node {node:?} is a getitem reading {count} nodes; a getitem reads exactly one, the multi-output op it indexes"
    )]
    GetitemInputs { node: String, count: usize },

    #[error("the input graph has a cycle: {}", path.join(" -> "))]
    Cycle { path: Vec<String> },

    #[error("graph_signature.{field} names {name:?}, which is not a node of the graph")]
    SignatureUnknownNode { field: &'static str, name: String },

    #[error(
        "graph_signature.buffers_to_mutate names {name:?} as a writer, but the output node does not return it"
    )]
    WriterNotReturned { name: String },

    #[error("graph_signature.{field} names {name:?}, which is a {op} node, not a {expected}")]
    SignatureWrongNode {
        field: &'static str,
        name: String,
        op: &'static str,
        expected: &'static str,
    },

    #[error(
        "placeholder {name:?} is listed both in graph_signature.{first} and graph_signature.{second}"
    )]
    SignatureConflict {
        name: String,
        first: &'static str,
        second: &'static str,
    },

    #[error(
        "buffer {buffer:?} has two writers in graph_signature.buffers_to_mutate: {first:?} and {second:?}"
    )]
    TwoWriters {
        buffer: String,
        first: String,
        second: String,
    },

    #[error(
        "buffer {buffer:?} is mutated (written by {writer:?}) but never read: no placeholder maps to it in graph_signature.inputs_to_buffers"
    )]
    MutatedNeverRead { buffer: String, writer: String },

    #[error(
        "the writer {writer:?} of buffer {buffer:?} is a placeholder; a writer must compute the new value"
    )]
    WriterIsPlaceholder { buffer: String, writer: String },
}

impl ImportError {
    pub(crate) fn from_json(e: &serde_json::Error) -> Self {
        // serde_json appends " at line L column C" to its own message; keep the bare message.
        let full = e.to_string();
        let message = match full.rfind(" at line ") {
            Some(cut) => full[..cut].to_string(),
            None => full,
        };
        ImportError::Json {
            line: e.line(),
            column: e.column(),
            message,
        }
    }
}
