//! The bridge JSON v1 document as written on disk (docs/bridge-json.md). Nothing here is validated
//! beyond JSON types and names; `import::validate` turns it into a [`crate::graph::Graph`].

use super::nodes::{NodeList, NodesSeed};
use crate::options::PartialOptions;
use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use std::fmt;

pub const GRAPH_SCHEMA: &str = "partition-planner/graph@1";

/// The document's parts; the node list is read in place by [`NodesSeed`].
#[derive(Default)]
pub struct RawDocument {
    pub schema: Option<String>,
    pub nodes: Option<NodeList>,
    pub graph_signature: Option<RawSignature>,
    pub options: PartialOptions,
    /// Free-form provenance (exporter, versions, model); kept out of planning.
    pub producer: Option<serde_json::Value>,
}

const DOCUMENT_FIELDS: &[&str] = &["schema", "nodes", "graph_signature", "options", "producer"];

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
            match key.as_str() {
                "schema" => doc.schema = Some(map.next_value()?),
                "nodes" => {
                    let mut list = NodeList::default();
                    // Exported and generated nodes take about 250 bytes of JSON each. Sizing from
                    // that spares the copies and rehashes of growing; room never used is never
                    // touched, so a generous guess costs address space, not memory.
                    let guess = self.bytes / 200;
                    list.nodes.reserve(guess);
                    list.names.reserve(&list.nodes, guess);
                    map.next_value_seed(NodesSeed(&mut list))?;
                    doc.nodes = Some(list);
                }
                "graph_signature" => doc.graph_signature = Some(map.next_value()?),
                "options" => doc.options = map.next_value()?,
                "producer" => doc.producer = map.next_value()?,
                other => return Err(de::Error::unknown_field(other, DOCUMENT_FIELDS)),
            }
        }
        for (field, missing) in [
            ("schema", doc.schema.is_none()),
            ("nodes", doc.nodes.is_none()),
            ("graph_signature", doc.graph_signature.is_none()),
        ] {
            if missing {
                return Err(de::Error::missing_field(field));
            }
        }
        Ok(doc)
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

/// Read only to tell a document of another schema from a broken one.
#[derive(Deserialize)]
pub struct SchemaProbe {
    pub schema: Option<serde_json::Value>,
}
