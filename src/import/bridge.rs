//! The bridge JSON v1 document as written on disk (docs/bridge-json.md). Nothing here is validated
//! beyond JSON types and names; `import::validate` turns it into a [`crate::graph::Graph`].

use super::node_list::NodeList;
use super::read_nodes::NodesSeed;
use crate::graph::DecomposedOp;
use crate::options::PartialOptions;
use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use std::fmt;

/// The document's parts; the node list is read in place by [`NodesSeed`].
#[derive(Default)]
pub struct RawDocument {
    pub schema: Option<String>,
    pub nodes: Option<NodeList>,
    pub graph_signature: Option<RawSignature>,
    pub options: PartialOptions,
    /// Free-form provenance (exporter, versions, model); kept out of planning.
    pub producer: Option<serde_json::Value>,
    /// Ops the partitioner let decompose because the converter refuses them.
    pub decomposed: Vec<DecomposedOp>,
    /// The program's range constraints: each size a model input may have, with its bounds.
    pub range_constraints: Option<IndexMap<String, [Option<i64>; 2]>>,
}

const DOCUMENT_FIELDS: &[&str] = &[
    "schema",
    "nodes",
    "graph_signature",
    "options",
    "producer",
    "decomposed",
    "range_constraints",
];

impl RawDocument {
    pub fn set(&mut self, field: Field) {
        match field {
            Field::Schema(s) => self.schema = Some(s),
            Field::GraphSignature(s) => self.graph_signature = Some(*s),
            Field::Options(o) => self.options = o,
            Field::Producer(p) => self.producer = p,
            Field::Decomposed(d) => self.decomposed = d,
            Field::RangeConstraints(r) => self.range_constraints = r,
        }
    }

    /// The first required field the document lacks.
    pub fn missing(&self) -> Option<&'static str> {
        [
            ("schema", self.schema.is_none()),
            ("nodes", self.nodes.is_none()),
            ("graph_signature", self.graph_signature.is_none()),
        ]
        .into_iter()
        .find_map(|(field, missing)| missing.then_some(field))
    }
}

/// A top-level field other than `nodes`, read by [`FieldSeed`].
pub enum Field {
    Schema(String),
    GraphSignature(Box<RawSignature>),
    Options(PartialOptions),
    Producer(Option<serde_json::Value>),
    Decomposed(Vec<DecomposedOp>),
    RangeConstraints(Option<IndexMap<String, [Option<i64>; 2]>>),
}

/// Reads the value of the top-level field named `.0`; an unknown name is an error.
pub struct FieldSeed<'a>(pub &'a str);

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Field;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        match self.0 {
            "schema" => String::deserialize(d).map(Field::Schema),
            "graph_signature" => {
                RawSignature::deserialize(d).map(|s| Field::GraphSignature(Box::new(s)))
            }
            "options" => PartialOptions::deserialize(d).map(Field::Options),
            "producer" => Option::deserialize(d).map(Field::Producer),
            "decomposed" => Vec::deserialize(d).map(Field::Decomposed),
            "range_constraints" => Option::deserialize(d).map(Field::RangeConstraints),
            other => Err(de::Error::unknown_field(other, DOCUMENT_FIELDS)),
        }
    }
}

/// Reads a whole document; unknown fields are errors, as everywhere outside `meta` and `producer`.
pub struct DocumentSeed {
    /// The document's length in bytes, to size the name index before reading.
    pub bytes: usize,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed {
    type Value = RawDocument;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawDocument, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed {
    type Value = RawDocument;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a bridge JSON document")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDocument, A::Error> {
        let mut doc = RawDocument::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "nodes" {
                if doc.nodes.is_some() {
                    return Err(de::Error::duplicate_field("nodes"));
                }
                let mut list = NodeList::for_bytes(self.bytes);
                map.next_value_seed(NodesSeed(&mut list))?;
                doc.nodes = Some(list);
            } else {
                doc.set(map.next_value_seed(FieldSeed(&key))?);
            }
        }
        match doc.missing() {
            Some(field) => Err(de::Error::missing_field(field)),
            None => Ok(doc),
        }
    }
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
