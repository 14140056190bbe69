//! The bridge JSON v1 document exactly as written on disk (docs/bridge-json.md). Nothing here is
//! validated beyond JSON types; `import::validate` turns it into a [`crate::graph::Graph`].

use crate::graph::OpKind;
use crate::options::PartialOptions;
use indexmap::IndexMap;
use serde::Deserialize;

pub const GRAPH_SCHEMA: &str = "partition-planner/graph@1";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDocument {
    pub schema: String,
    pub nodes: Vec<RawNode>,
    pub graph_signature: RawSignature,
    #[serde(default)]
    pub options: PartialOptions,
    /// Free-form provenance (exporter, versions, model); kept out of planning.
    #[serde(default)]
    pub producer: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNode {
    pub name: String,
    pub op: OpKind,
    #[serde(default)]
    pub target: String,
    #[serde(default = "empty_array")]
    pub args: serde_json::Value,
    #[serde(default = "empty_object")]
    pub kwargs: serde_json::Value,
    #[serde(default)]
    pub supported: Option<bool>,
    #[serde(default)]
    pub delegation_tag: Option<String>,
    #[serde(default)]
    pub meta: RawMeta,
}

fn empty_array() -> serde_json::Value {
    serde_json::Value::Array(Vec::new())
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// Only `shape` and `dtype` are read; anything else an exporter adds is kept out of planning.
#[derive(Debug, Default, Deserialize)]
pub struct RawMeta {
    #[serde(default)]
    pub shape: Option<Vec<RawDim>>,
    #[serde(default)]
    pub dtype: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawDim {
    Static(u64),
    Symbolic(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSignature {
    #[serde(default)]
    pub inputs_to_parameters: IndexMap<String, String>,
    #[serde(default)]
    pub inputs_to_buffers: IndexMap<String, String>,
    #[serde(default)]
    pub inputs_to_lifted_tensor_constants: IndexMap<String, String>,
    #[serde(default)]
    pub buffers_to_mutate: IndexMap<String, String>,
    #[serde(default)]
    pub user_inputs: Vec<String>,
    #[serde(default)]
    pub user_outputs: Vec<Option<String>>,
}

/// Read only to tell a document of another schema from a broken one.
#[derive(Deserialize)]
pub struct SchemaProbe {
    pub schema: Option<serde_json::Value>,
}
