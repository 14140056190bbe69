//! The node list, read in one pass straight into [`Node`]s: each reference to an earlier node is
//! resolved as it is read (FX order makes that nearly every reference), strings many nodes share are
//! stored once, and no intermediate document is built. What serde cannot report with a node's name
//! (a duplicate name, a malformed reference) is kept as a [`Problem`] for import to raise.

use crate::graph::{Arg, Dim, NameIndex, Node, NodeId, OpKind, Symbol, TensorMeta};
use compact_str::CompactString;
use hashbrown::HashSet;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use smallvec::SmallVec;
use std::fmt;
use std::sync::Arc;

/// Stands for a reference to a node later in the list until the whole list is read.
pub(super) const UNRESOLVED: NodeId = NodeId(u32::MAX);

#[derive(Debug)]
pub(super) enum Problem {
    Duplicate {
        first: usize,
        second: usize,
    },
    BadReference {
        node: usize,
        field: &'static str,
        message: String,
    },
}

#[derive(Default)]
pub(super) struct NodeList {
    pub nodes: Vec<Node>,
    pub names: NameIndex,
    /// (node, name) of each reference to a node not yet read, in reading order.
    pub pending: Vec<(u32, String)>,
    pub problem: Option<Problem>,
    /// The `output` nodes, in reading order.
    pub outputs: Vec<u32>,
    /// The first placeholder that reads another node (an error import reports).
    pub placeholder_reading: Option<u32>,
    /// Distinct delegation tags: the stock proposal's partitions.
    pub tags: HashSet<Symbol>,
    /// How deep values nest inside the nodes read so far.
    pub nesting: Nesting,
    symbols: HashSet<Symbol>,
    shapes: HashSet<Arc<[Dim]>>,
    /// Reused while reading each node's shape.
    scratch: Vec<Dim>,
}

impl NodeList {
    /// Room for the nodes of `bytes` of JSON. Exported and generated nodes take about 250 bytes
    /// each; sizing from that spares the copies and rehashes of growing. Room never used is never
    /// touched, so a generous guess costs address space, not memory.
    pub fn for_bytes(bytes: usize) -> Self {
        let mut list = NodeList::default();
        let guess = bytes / 200;
        list.nodes.reserve(guess);
        list.names.reserve(&list.nodes, guess);
        list
    }

    /// Appends the nodes another thread read after this list's last node (their ids start at 0),
    /// as if this list had read them: ids shifted, names indexed (a name already taken is a
    /// duplicate), tags taken from this list, problems kept in reading order. Each step is a pass
    /// of its own over the appended nodes: these are cold, and a pass streams through them.
    pub fn append(&mut self, tail: NodeList) {
        let base = self.nodes.len() as u32;
        let NodeList {
            mut nodes,
            pending,
            problem,
            outputs,
            placeholder_reading,
            ..
        } = tail;
        for node in &mut nodes {
            for_each_reference(node, |id| {
                if *id != UNRESOLVED {
                    id.0 += base;
                }
            });
            for id in node.inputs.iter_mut().filter(|id| **id != UNRESOLVED) {
                id.0 += base;
            }
            node.stock_tag = node.stock_tag.take().map(|t| intern(&mut self.tags, &t));
        }
        self.outputs.extend(outputs.iter().map(|o| o + base));
        if let Some(p) = placeholder_reading {
            self.placeholder_reading.get_or_insert(p + base);
        }
        self.pending
            .extend(pending.into_iter().map(|(node, name)| (node + base, name)));
        self.nodes.append(&mut nodes);
        // The first problem in reading order: this list's own, else the tail's first malformed
        // reference or first duplicate name, whichever node comes first (a node's references are
        // read before its name is indexed). The tail's duplicates among its own nodes are found
        // again here, against the whole list.
        let bad_reference = match problem {
            Some(Problem::BadReference {
                node,
                field,
                message,
            }) => Some((node + base as usize, field, message)),
            _ => None,
        };
        let stop = bad_reference
            .as_ref()
            .map_or(self.nodes.len(), |&(node, ..)| node);
        for i in base as usize..self.nodes.len() {
            if let Err(first) = self.names.insert(&self.nodes, NodeId(i as u32))
                && i < stop
            {
                self.problem(Problem::Duplicate {
                    first: first.index(),
                    second: i,
                });
            }
        }
        if let Some((node, field, message)) = bad_reference {
            self.problem(Problem::BadReference {
                node,
                field,
                message,
            });
        }
    }

    /// Adds a node read in order and indexes its name.
    pub fn push(&mut self, node: Node) {
        let id = NodeId(self.nodes.len() as u32);
        match node.op {
            OpKind::Output => self.outputs.push(id.0),
            OpKind::Placeholder if !node.inputs.is_empty() => {
                self.placeholder_reading.get_or_insert(id.0);
            }
            _ => {}
        }
        self.nodes.push(node);
        if let Err(first) = self.names.insert(&self.nodes, id) {
            self.problem(Problem::Duplicate {
                first: first.index(),
                second: id.index(),
            });
        }
    }

    fn symbol(&mut self, s: &str) -> Symbol {
        intern(&mut self.symbols, s)
    }

    fn shape(&mut self, dims: &[Dim]) -> Arc<[Dim]> {
        if let Some(shape) = self.shapes.get(dims) {
            return shape.clone();
        }
        let shape: Arc<[Dim]> = dims.into();
        self.shapes.insert(shape.clone());
        shape
    }

    fn problem(&mut self, p: Problem) {
        self.problem.get_or_insert(p);
    }
}

/// `s` as stored in `set`, stored there first if it is new.
fn intern(set: &mut HashSet<Symbol>, s: &str) -> Symbol {
    if let Some(sym) = set.get(s) {
        return sym.clone();
    }
    let sym: Symbol = s.into();
    set.insert(sym.clone());
    sym
}

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

/// An object key or a string read without copying when the text has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
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

struct ArgContext<'a> {
    list: &'a mut NodeList,
    node: u32,
    field: &'static str,
    /// The distinct nodes read so far, in order of first reference; `UNRESOLVED` stands for
    /// every reference to a later node (import then recomputes the list once they are resolved).
    inputs: &'a mut Inputs,
}

impl ArgContext<'_> {
    /// A reference to `name`: resolved when the node has been read, else left for later.
    fn reference(&mut self, name: &str) -> Arg {
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

/// The items of an argument list into `out`.
fn read_items<'de, A: SeqAccess<'de>>(
    ctx: &mut ArgContext<'_>,
    seq: &mut A,
    out: &mut impl Extend<Arg>,
) -> Result<(), A::Error> {
    ctx.list.nesting.enter();
    while let Some(item) = seq.next_element_seed(ArgSeed(&mut *ctx))? {
        out.extend([item]);
    }
    ctx.list.nesting.leave();
    Ok(())
}

/// A node's `args`: a JSON array of arguments, kept in the node when short.
struct ArgsSeed<'a, 'b>(&'a mut ArgContext<'b>);

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
        read_items(self.0, &mut seq, &mut args)?;
        Ok(args)
    }
}

/// One argument. Recursion follows the JSON nesting, which serde_json bounds (128 levels).
struct ArgSeed<'a, 'b>(&'a mut ArgContext<'b>);

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
        read_items(self.0, &mut seq, &mut items)?;
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
        match reference {
            None => Ok(Arg::Dict(entries.into_boxed_slice())),
            Some(Some(arg)) if entries.is_empty() => Ok(arg),
            Some(_) => {
                self.0
                    .malformed("a reference is {\"node\": NAME} with nothing else".into());
                Ok(Arg::Null)
            }
        }
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

/// How deep arguments nest. serde_json limits how deep the values it reads for us nest (values it
/// skips, it skips without limit); reading a node on its own (`import::split`) allows two levels
/// more than reading it inside the document, and knowing the deepest nesting lets that reader leave
/// documents near the limit to the other.
#[derive(Default)]
pub(super) struct Nesting {
    depth: usize,
    pub deepest: usize,
}

impl Nesting {
    fn enter(&mut self) {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
    }

    fn leave(&mut self) {
        self.depth -= 1;
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
            fn visit_u64<E>(self, v: u64) -> Result<Dim, E> {
                Ok(Dim::Static(v))
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

/// Calls `f` on every reference in a node's arguments, in reading order. Recursion follows the
/// argument nesting, which serde_json bounds (128 levels).
fn for_each_reference(node: &mut Node, mut f: impl FnMut(&mut NodeId)) {
    fn walk(arg: &mut Arg, f: &mut dyn FnMut(&mut NodeId)) {
        match arg {
            Arg::Node(id) => f(id),
            Arg::List(items) => items.iter_mut().for_each(|a| walk(a, f)),
            Arg::Dict(entries) => entries.iter_mut().for_each(|(_, a)| walk(a, f)),
            _ => {}
        }
    }
    for a in node.args.iter_mut() {
        walk(a, &mut f);
    }
    for (_, a) in node.kwargs.iter_mut() {
        walk(a, &mut f);
    }
}

/// Replaces the `UNRESOLVED` markers of one node's arguments, in reading order, by `ids`.
pub(super) fn patch(node: &mut Node, ids: &mut impl Iterator<Item = NodeId>) {
    for_each_reference(node, |id| {
        if *id == UNRESOLVED
            && let Some(real) = ids.next()
        {
            *id = real;
        }
    });
}

/// The distinct nodes a node reads, in order of first reference. Membership is a scan while the
/// list is short and a set beyond: an output node returns thousands of values.
#[derive(Default)]
struct Inputs {
    list: SmallVec<[NodeId; 4]>,
    seen: Option<HashSet<NodeId>>,
}

impl Inputs {
    const SCANNED: usize = 32;

    fn add(&mut self, id: NodeId) {
        match &mut self.seen {
            Some(seen) => {
                if seen.insert(id) {
                    self.list.push(id);
                }
            }
            None if self.list.contains(&id) => {}
            None => {
                self.list.push(id);
                if self.list.len() > Self::SCANNED {
                    self.seen = Some(self.list.iter().copied().collect());
                }
            }
        }
    }
}

/// Sets a node's inputs from its arguments, once references have changed.
pub(super) fn recompute_inputs(node: &mut Node) {
    let mut inputs = Inputs::default();
    for_each_reference(node, |id| inputs.add(*id));
    node.inputs = inputs.list;
}
