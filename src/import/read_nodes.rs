//! The node list, read in one pass straight into [`Node`]s by serde visitors: the list, each node,
//! its `meta` and shape. Each reference to an earlier node is resolved as it is read (FX order makes
//! that nearly every reference; `read_args` reads the arguments), and no intermediate document is
//! built.

use super::node_list::{NodeList, intern};
use super::read_args::{ArgContext, ArgSeed, ArgsSeed, Key};
use super::references::{Inputs, recompute_inputs};
use crate::graph::{Arg, Dim, Node, OpKind, TensorMeta};
use compact_str::CompactString;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use smallvec::SmallVec;
use std::fmt;

/// Reads the `nodes` array into a [`NodeList`].
pub(super) struct NodesSeed<'a>(pub &'a mut NodeList);

impl<'de> DeserializeSeed<'de> for NodesSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for NodesSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of nodes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let list = self.0;
        if let Some(n) = seq.size_hint() {
            list.nodes.reserve(n);
        }
        loop {
            if list.nodes.len() >= u32::MAX as usize - 1 {
                return Err(de::Error::custom("too many nodes"));
            }
            let index = list.nodes.len() as u32;
            match seq.next_element_seed(NodeSeed { list, index })? {
                None => break,
                Some(node) => list.push(node),
            }
        }
        Ok(())
    }
}

const NODE_FIELDS: &[&str] = &[
    "name",
    "op",
    "target",
    "args",
    "kwargs",
    "supported",
    "delegation_tag",
    "meta",
];

/// Reads one node; its index in the list is `index`.
pub(super) struct NodeSeed<'a> {
    pub list: &'a mut NodeList,
    pub index: u32,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a node object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let NodeSeed { list, index } = self;
        let (mut name, mut op, mut target) = (None, None, None);
        let (mut args, mut kwargs) = (SmallVec::new(), Box::default());
        let (mut supported, mut tag, mut meta) = (None, None, TensorMeta::default());
        let mut inputs = Inputs::default();
        // Inputs are in order of first reference, args before kwargs, whatever the key order.
        let (mut args_read, mut kwargs_first) = (false, false);
        while let Some(key) = map.next_key::<Key>()? {
            match key.as_str() {
                "name" => name = Some(CompactString::new(map.next_value::<Key>()?.as_str())),
                "op" => op = Some(map.next_value::<OpKind>()?),
                "target" => target = Some(map.next_value::<Key>()?),
                "args" => {
                    let mut ctx = ArgContext {
                        list,
                        node: index,
                        field: "args",
                        inputs: &mut inputs,
                    };
                    args_read = true;
                    args = map.next_value_seed(ArgsSeed(&mut ctx))?;
                }
                "kwargs" => {
                    let mut ctx = ArgContext {
                        list,
                        node: index,
                        field: "kwargs",
                        inputs: &mut inputs,
                    };
                    kwargs_first = !args_read;
                    kwargs = match map.next_value_seed(ArgSeed(&mut ctx))? {
                        Arg::Dict(entries) => entries,
                        // `{"node": NAME}` as kwargs: one keyword argument `node` referring to NAME.
                        reference @ Arg::Node(_) => Box::new([("node".into(), reference)]),
                        _ => return Err(de::Error::custom("kwargs must be a JSON object")),
                    };
                }
                "supported" => supported = map.next_value::<Option<bool>>()?,
                "delegation_tag" => {
                    tag = map
                        .next_value::<Option<Key>>()?
                        .map(|t| intern(&mut list.tags, t.as_str()));
                }
                "meta" => meta = map.next_value_seed(MetaSeed(list))?,
                other => return Err(de::Error::unknown_field(other, NODE_FIELDS)),
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        let op = op.ok_or_else(|| de::Error::missing_field("op"))?;
        let target = match target {
            Some(t) if shares_target(op) => list.symbol(t.as_str()),
            Some(t) => t.as_str().into(),
            None => list.symbol(""),
        };
        let mut node = Node {
            name,
            op,
            target,
            args,
            kwargs,
            inputs: inputs.list,
            supported: supported.unwrap_or(tag.is_some()),
            stock_tag: tag,
            meta,
        };
        if kwargs_first {
            recompute_inputs(&mut node);
        }
        Ok(node)
    }
}

/// Whether nodes of this kind share their targets: operators do; a placeholder's or get_attr's
/// target is its own name, which interning would only copy into a table that every node misses.
fn shares_target(op: OpKind) -> bool {
    op == OpKind::CallFunction
}

/// `meta`: only `shape`, `dtype` and `digest` are read; exporters may add anything else. Shapes are
/// read into one reused buffer and shared between nodes, so most nodes allocate nothing here.
struct MetaSeed<'a>(&'a mut NodeList);

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = TensorMeta;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TensorMeta, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = TensorMeta;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a meta object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TensorMeta, A::Error> {
        let list = self.0;
        let mut meta = TensorMeta::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key.as_str() {
                "shape" => {
                    let mut dims = std::mem::take(&mut list.scratch);
                    dims.clear();
                    if map.next_value_seed(ShapeSeed(&mut dims))? {
                        meta.shape = Some(list.shape(&dims));
                    }
                    list.scratch = dims;
                }
                "dtype" => {
                    meta.dtype = map
                        .next_value::<Option<Key>>()?
                        .map(|d| list.symbol(d.as_str()));
                }
                "digest" => meta.digest = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(meta)
    }
}

/// A shape into a buffer: `true` for an array, `false` for null.
struct ShapeSeed<'a>(&'a mut Vec<Dim>);

impl<'de> DeserializeSeed<'de> for ShapeSeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ShapeSeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a shape: an array of sizes, or null")
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_none<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while let Some(d) = seq.next_element::<Dim>()? {
            self.0.push(d);
        }
        Ok(true)
    }
}

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dim;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size: a non-negative integer, or a string for a symbolic size")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dim, E> {
                // torch sizes are int64.
                match i64::try_from(v) {
                    Ok(_) => Ok(Dim::Static(v)),
                    Err(_) => Err(E::custom(format!(
                        "a size is at most {}, found {v}",
                        i64::MAX
                    ))),
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dim, E> {
                u64::try_from(v)
                    .map(Dim::Static)
                    .map_err(|_| E::custom(format!("a size cannot be negative, found {v}")))
            }
            fn visit_str<E>(self, v: &str) -> Result<Dim, E> {
                Ok(Dim::Symbolic(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}
