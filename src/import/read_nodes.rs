//! The node list, read in one pass straight into [`Node`]s by serde visitors: the list, each node,
//! its `meta` and shape. Each reference to an earlier node is resolved as it is read (FX order makes
//! that nearly every reference; `read_args` reads the arguments), and no intermediate document is
//! built.

use super::node_list::{NodeList, intern};
use super::read_args::{ArgContext, ArgSeed, ArgsSeed, Key};
use super::references::{Inputs, recompute_inputs};
use crate::graph::{Arg, Conversion, Dim, Node, OpKind, TensorMeta};
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

pub(super) const NODE_FIELDS: &[&str] = &[
    "name",
    "op",
    "target",
    "args",
    "kwargs",
    "supported",
    "delegation_tag",
    "module_path",
    "meta",
    "conversion",
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
        let mut parts = NodeParts::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key.as_str() {
                "name" => parts.name = Some(CompactString::new(map.next_value::<Key>()?.as_str())),
                "op" => parts.op = Some(map.next_value::<OpKind>()?),
                "target" => parts.target = Some(map.next_value::<Key>()?),
                "args" => {
                    let mut ctx = ArgContext {
                        list,
                        node: index,
                        field: "args",
                        inputs: &mut parts.inputs,
                    };
                    parts.args_read = true;
                    parts.args = map.next_value_seed(ArgsSeed(&mut ctx))?;
                }
                "kwargs" => {
                    let mut ctx = ArgContext {
                        list,
                        node: index,
                        field: "kwargs",
                        inputs: &mut parts.inputs,
                    };
                    parts.kwargs_first = !parts.args_read;
                    let kwargs = map.next_value_seed(ArgSeed(&mut ctx))?;
                    parts.kwargs = kwargs_of(kwargs)
                        .ok_or_else(|| de::Error::custom("kwargs must be a JSON object"))?;
                }
                "supported" => parts.supported = map.next_value::<Option<bool>>()?,
                "delegation_tag" => {
                    parts.tag = map
                        .next_value::<Option<Key>>()?
                        .map(|t| intern(&mut list.tags, t.as_str()));
                }
                "module_path" => {
                    parts.module_path = map
                        .next_value::<Option<Key>>()?
                        .map(|m| list.symbol(m.as_str()));
                }
                "meta" => parts.meta = map.next_value_seed(MetaSeed(list))?,
                "conversion" => {
                    parts.conversion = map.next_value::<Option<Conversion>>()?.map(Box::new);
                }
                other => return Err(de::Error::unknown_field(other, NODE_FIELDS)),
            }
        }
        parts.into_node(list).map_err(de::Error::missing_field)
    }
}

/// A node's fields as read, in whatever order the document gives them; the serde visitor and the
/// fast reader (`import::scan`) both assemble nodes from these.
#[derive(Default)]
pub(super) struct NodeParts<'t> {
    pub name: Option<CompactString>,
    pub op: Option<OpKind>,
    pub target: Option<Key<'t>>,
    pub args: SmallVec<[Arg; 2]>,
    pub kwargs: Kwargs,
    pub supported: Option<bool>,
    pub tag: Option<crate::graph::Symbol>,
    pub module_path: Option<crate::graph::Symbol>,
    pub meta: TensorMeta,
    pub conversion: Option<Box<Conversion>>,
    pub inputs: Inputs,
    /// Inputs are in order of first reference, args before kwargs, whatever the key order: when
    /// kwargs come first, the list is recomputed once the node is whole.
    pub args_read: bool,
    pub kwargs_first: bool,
}

impl NodeParts<'_> {
    /// The node, or the name of the first required field it lacks.
    pub fn into_node(self, list: &mut NodeList) -> Result<Node, &'static str> {
        let name = self.name.ok_or("name")?;
        let op = self.op.ok_or("op")?;
        let target = match self.target {
            Some(t) if shares_target(op) => list.symbol(t.as_str()),
            Some(t) => t.as_str().into(),
            None => list.symbol(""),
        };
        let mut node = Node {
            name,
            op,
            target,
            args: self.args,
            kwargs: self.kwargs,
            inputs: self.inputs.list,
            supported: self.supported.unwrap_or(self.tag.is_some()),
            stock_tag: self.tag,
            module_path: self.module_path,
            meta: self.meta,
            conversion: self.conversion,
        };
        if self.kwargs_first {
            recompute_inputs(&mut node);
        }
        Ok(node)
    }
}

/// A node's keyword arguments, in input order.
type Kwargs = Box<[(Box<str>, Arg)]>;

/// A node's keyword arguments from the value of `kwargs`: a JSON object, or `{"node": NAME}`, read
/// as one keyword argument `node` referring to NAME. `None` for anything else.
pub(super) fn kwargs_of(value: Arg) -> Option<Kwargs> {
    match value {
        Arg::Dict(entries) => Some(entries),
        reference @ Arg::Node(_) => Some(Box::new([("node".into(), reference)])),
        _ => None,
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
