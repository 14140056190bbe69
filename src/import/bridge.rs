//! The bridge JSON v1 document exactly as written on disk (docs/bridge-json.md). Nothing here is
//! validated beyond JSON types; `import::validate` turns it into a [`crate::graph::Graph`].

use crate::graph::{Arg, OpKind};
use crate::options::PartialOptions;
use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

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
    #[serde(default)]
    pub args: Vec<RawArg>,
    #[serde(default, deserialize_with = "kwargs")]
    pub kwargs: Vec<(Box<str>, RawArg)>,
    #[serde(default)]
    pub supported: Option<bool>,
    #[serde(default)]
    pub delegation_tag: Option<String>,
    #[serde(default)]
    pub meta: RawMeta,
}

/// An argument as written: a reference is `Node(NAME)`. An object holding a `node` key that is not
/// exactly `{"node": NAME}` stays a `Dict`, for import to refuse with the node's name.
pub type RawArg = Arg<String>;

/// kwargs are an object; read as its entries in order without building a map.
fn kwargs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(Box<str>, RawArg)>, D::Error> {
    match RawArg::deserialize(d)? {
        Arg::Dict(entries) => Ok(entries),
        // `{"node": NAME}` as kwargs: one keyword argument `node` referring to NAME.
        Arg::Node(name) => Ok(vec![("node".into(), Arg::Node(name))]),
        _ => Err(de::Error::custom("kwargs must be a JSON object")),
    }
}

impl<'de> Deserialize<'de> for RawArg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ArgVisitor)
    }
}

struct ArgVisitor;

impl<'de> Visitor<'de> for ArgVisitor {
    type Value = RawArg;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an FX argument: a JSON value, references written {\"node\": NAME}")
    }
    fn visit_unit<E>(self) -> Result<RawArg, E> {
        Ok(Arg::Null)
    }
    fn visit_none<E>(self) -> Result<RawArg, E> {
        Ok(Arg::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<RawArg, E> {
        Ok(Arg::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<RawArg, E> {
        Ok(Arg::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<RawArg, E> {
        Ok(i64::try_from(v).map_or(Arg::UInt(v), Arg::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<RawArg, E> {
        Ok(Arg::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<RawArg, E> {
        Ok(Arg::Str(v.into()))
    }
    fn visit_string<E>(self, v: String) -> Result<RawArg, E> {
        Ok(Arg::Str(v.into_boxed_str()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawArg, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Arg::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawArg, A::Error> {
        let mut entries: Vec<(Box<str>, RawArg)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<Box<str>, RawArg>()? {
            entries.push((key, value));
        }
        match entries.as_mut_slice() {
            [(key, Arg::Str(name))] if &**key == "node" => {
                Ok(Arg::Node(std::mem::take(name).into_string()))
            }
            _ => Ok(Arg::Dict(entries)),
        }
    }
}

/// Only `shape`, `dtype` and `digest` are read; anything else an exporter adds is kept out of
/// planning.
#[derive(Debug, Default, Deserialize)]
pub struct RawMeta {
    #[serde(default)]
    pub shape: Option<Vec<RawDim>>,
    #[serde(default)]
    pub dtype: Option<String>,
    #[serde(default)]
    pub digest: Option<String>,
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
