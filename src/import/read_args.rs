//! A node's arguments, read by serde visitors into [`Arg`]s: any JSON value, a reference written
//! `{"node": NAME}` resolved on the spot when NAME is an earlier node and marked to be resolved
//! once the list is complete otherwise. A malformed reference is kept as a problem, so that import
//! can name the node.

use super::node_list::{NodeList, Problem};
use super::references::{Inputs, UNRESOLVED};
use crate::graph::Arg;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use smallvec::SmallVec;
use std::fmt;

/// Where the arguments being read belong: the list, the node and its field (`args` or `kwargs`).
pub(super) struct ArgContext<'a> {
    pub list: &'a mut NodeList,
    pub node: u32,
    pub field: &'static str,
    /// The distinct nodes read so far, in order of first reference; `UNRESOLVED` stands for
    /// every reference to a later node (import then recomputes the list once they are resolved).
    pub inputs: &'a mut Inputs,
}

impl ArgContext<'_> {
    /// A reference to `name`: resolved when the node has been read, else left for later.
    pub fn reference(&mut self, name: &str) -> Arg {
        let id = match self.list.names.find(&self.list.nodes, name) {
            Some(id) => id,
            None => {
                self.list.pending.push((self.node, name.to_string()));
                UNRESOLVED
            }
        };
        self.inputs.add(id);
        Arg::Node(id)
    }

    fn malformed(&mut self, message: String) {
        let p = Problem::BadReference {
            node: self.node as usize,
            field: self.field,
            message,
        };
        self.list.problem(p);
    }
}

/// The items of an argument list, each handed to `push`.
fn read_items<'de, A: SeqAccess<'de>>(
    ctx: &mut ArgContext<'_>,
    seq: &mut A,
    mut push: impl FnMut(Arg),
) -> Result<(), A::Error> {
    ctx.list.nesting.enter();
    while let Some(item) = seq.next_element_seed(ArgSeed(&mut *ctx))? {
        push(item);
    }
    ctx.list.nesting.leave();
    Ok(())
}

/// A node's `args`: a JSON array of arguments, kept in the node when short.
pub(super) struct ArgsSeed<'a, 'b>(pub &'a mut ArgContext<'b>);

impl<'de> DeserializeSeed<'de> for ArgsSeed<'_, '_> {
    type Value = SmallVec<[Arg; 2]>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed<'_, '_> {
    type Value = SmallVec<[Arg; 2]>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("args as a JSON array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut args = SmallVec::new();
        read_items(self.0, &mut seq, |item| args.push(item))?;
        Ok(args)
    }
}

/// One argument. Recursion follows the JSON nesting, which serde_json bounds (128 levels).
pub(super) struct ArgSeed<'a, 'b>(pub &'a mut ArgContext<'b>);

impl<'de> DeserializeSeed<'de> for ArgSeed<'_, '_> {
    type Value = Arg;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Arg, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgSeed<'_, '_> {
    type Value = Arg;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an FX argument: a JSON value, references written {\"node\": NAME}")
    }
    fn visit_unit<E>(self) -> Result<Arg, E> {
        Ok(Arg::Null)
    }
    fn visit_none<E>(self) -> Result<Arg, E> {
        Ok(Arg::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Arg, E> {
        Ok(Arg::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Arg, E> {
        Ok(Arg::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Arg, E> {
        Ok(i64::try_from(v).map_or(Arg::UInt(v), Arg::Int))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Arg, E> {
        Ok(Arg::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Arg, E> {
        Ok(Arg::Str(v.into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Arg, A::Error> {
        // Gathered inline, then stored at its exact size: growing a Vec would leave most lists
        // (two or three items) in allocations of four.
        let mut items: SmallVec<[Arg; 6]> = SmallVec::new();
        read_items(self.0, &mut seq, |item| items.push(item))?;
        Ok(Arg::List(items.into_vec().into_boxed_slice()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Arg, A::Error> {
        let mut entries: Vec<(Box<str>, Arg)> = Vec::new();
        // A `node` key: its string value, or `None` when the value is not a string.
        let mut reference: Option<Option<Arg>> = None;
        self.0.list.nesting.enter();
        while let Some(key) = map.next_key::<Key>()? {
            if key.as_str() == "node" {
                let value = map.next_value::<NodeName>()?;
                reference = Some(value.0.map(|name| self.0.reference(name.as_str())));
            } else {
                let value = map.next_value_seed(ArgSeed(&mut *self.0))?;
                entries.push((key.as_str().into(), value));
            }
        }
        self.0.list.nesting.leave();
        match object_arg(entries, reference) {
            Some(arg) => Ok(arg),
            None => {
                self.0
                    .malformed("a reference is {\"node\": NAME} with nothing else".into());
                Ok(Arg::Null)
            }
        }
    }
}

/// The argument a JSON object stands for: a dictionary of `entries`, or, when it had a `node` key
/// (`reference`: the reference when that key's value was a name), the reference. `None` for a
/// malformed reference: a `node` key that is not a name, or keys besides it.
pub(super) fn object_arg(
    entries: Vec<(Box<str>, Arg)>,
    reference: Option<Option<Arg>>,
) -> Option<Arg> {
    match reference {
        None => Some(Arg::Dict(entries.into_boxed_slice())),
        Some(Some(arg)) if entries.is_empty() => Some(arg),
        Some(_) => None,
    }
}

/// The value of a `node` key: a name, or anything else (then the reference is malformed).
struct NodeName<'de>(Option<Key<'de>>);

impl<'de> Deserialize<'de> for NodeName<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NodeName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a node name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<NodeName<'de>, E> {
                Ok(NodeName(Some(Key::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<NodeName<'de>, E> {
                Ok(NodeName(Some(Key::Owned(v.to_string()))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<NodeName<'de>, E> {
                Ok(NodeName(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<NodeName<'de>, E> {
                Ok(NodeName(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<NodeName<'de>, E> {
                Ok(NodeName(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<NodeName<'de>, E> {
                Ok(NodeName(None))
            }
            fn visit_unit<E>(self) -> Result<NodeName<'de>, E> {
                Ok(NodeName(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeName<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(NodeName(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeName<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(NodeName(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// An object key or a string read without copying when the text has no escapes.
pub(super) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}
