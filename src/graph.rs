//! The imported program: nodes in FX order with their references resolved, and the graph signature
//! resolved to node ids. It is what `import` produces and every later stage reads; it holds no
//! decision of the planner.

use crate::options::Options;
use bitflags::bitflags;
use compact_str::CompactString;
use hashbrown::DefaultHashBuilder;
use smallvec::SmallVec;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::{Arc, OnceLock};

/// A string many nodes share (op targets, dtypes, tags), stored once per graph.
pub type Symbol = Arc<str>;

/// Index of a node in [`Graph::nodes`] (its position in the input's node list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl NodeId {
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Placeholder,
    CallFunction,
    GetAttr,
    Output,
}

bitflags! {
    /// What the graph signature says a node is.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct NodeRoles: u8 {
        const USER_INPUT = 1 << 0;
        const PARAMETER = 1 << 1;
        const BUFFER = 1 << 2;
        const MUTABLE_BUFFER = 1 << 3;
        const LIFTED_CONSTANT = 1 << 4;
        /// The output value whose `buffers_to_mutate` entry names a buffer.
        const BUFFER_WRITER = 1 << 5;
        const USER_OUTPUT = 1 << 6;
    }
}

impl NodeRoles {
    /// Parameters, lifted constants and buffers nobody mutates: what `take_over_constant_data` is about.
    pub fn is_constant_data(self) -> bool {
        self.intersects(Self::PARAMETER | Self::LIFTED_CONSTANT)
            || (self.contains(Self::BUFFER) && !self.contains(Self::MUTABLE_BUFFER))
    }
}

/// One dimension of a value's shape; symbolic sizes stay symbolic.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Static(u64),
    Symbolic(String),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TensorMeta {
    /// Shared between nodes of the same shape.
    pub shape: Option<Arc<[Dim]>>,
    pub dtype: Option<Symbol>,
    /// A digest of a constant's content, when the exporter gives one (any string, e.g. sha256 hex).
    pub digest: Option<String>,
}

impl TensorMeta {
    /// Bytes of the value, when its shape is static and its dtype known.
    pub fn bytes(&self) -> Option<u64> {
        let elem = dtype_size(self.dtype.as_deref()?)?;
        let mut total = elem;
        for d in self.shape.as_deref()? {
            match d {
                Dim::Static(n) => total = total.checked_mul(*n)?,
                Dim::Symbolic(_) => return None,
            }
        }
        Some(total)
    }
}

/// Element size of a torch dtype as torch spells it (`float32`, `torch.float16`, `bool`, ...).
pub fn dtype_size(dtype: &str) -> Option<u64> {
    let name = dtype.strip_prefix("torch.").unwrap_or(dtype);
    Some(match name {
        "float64" | "double" | "int64" | "long" | "complex64" | "uint64" => 8,
        "float32" | "float" | "int32" | "int" | "uint32" => 4,
        "float16" | "half" | "bfloat16" | "int16" | "short" | "uint16" => 2,
        "int8" | "uint8" | "bool" | "float8_e4m3fn" | "float8_e5m2" => 1,
        "complex128" => 16,
        _ => return None,
    })
}

/// One FX argument, references resolved to `R` (a [`NodeId`] once imported; the referenced name
/// while reading). Literals stay exact: they shape the compiled model and so its content key.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg<R = NodeId> {
    Node(R),
    Null,
    Bool(bool),
    Int(i64),
    /// An integer above `i64::MAX`.
    UInt(u64),
    Float(f64),
    Str(Box<str>),
    List(Box<[Arg<R>]>),
    /// A JSON object other than a reference, keys in input order.
    Dict(Box<[(Box<str>, Arg<R>)]>),
}

impl<R: Copy> Arg<R> {
    /// The node this argument refers to, when it is a reference.
    pub fn node(&self) -> Option<R> {
        match self {
            Arg::Node(r) => Some(*r),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Stored in the node when short (most FX names are), saving an allocation per node.
    pub name: CompactString,
    pub op: OpKind,
    /// Qualified operator name as FX prints it, e.g. `aten.slice_scatter.default`.
    pub target: Symbol,
    /// The FX args and kwargs as given, references resolved. Most ops take two arguments or
    /// fewer: those are kept in the node.
    pub args: SmallVec<[Arg; 2]>,
    pub kwargs: Box<[(Box<str>, Arg)]>,
    /// Distinct nodes this node reads, in order of first reference.
    pub inputs: SmallVec<[NodeId; 4]>,
    /// Whether the backend can run the op.
    pub supported: bool,
    /// The tag the stock partitioner proposed.
    pub stock_tag: Option<Symbol>,
    /// The module the node came from, as torch.export records it (`nn_module_stack`'s innermost
    /// path, e.g. `layers.7.attention`): what `cut_after`/`cut_before` patterns match.
    pub module_path: Option<Symbol>,
    pub meta: TensorMeta,
    /// What the converter said when asked to convert the node, where it was asked.
    pub conversion: Option<Box<Conversion>>,
}

/// A conversion verdict, as the bridge document's `conversion` carries it: whether coremltools
/// converts the node, how that was found, and the converter's error when it does not. Read from
/// the document, never inferred.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conversion {
    pub converts: bool,
    #[serde(default)]
    pub found_by: Option<FoundBy>,
    /// The converter that gave the verdict, e.g. `coremltools 9.0`.
    #[serde(default)]
    pub converter: Option<Box<str>>,
    /// The op with its literal arguments, e.g. `aten.max_pool2d_with_indices.default(dilation=[2, 2])`.
    #[serde(default)]
    pub call: Option<Box<str>>,
    /// The converter's first error line.
    #[serde(default)]
    pub error: Option<Box<str>>,
}

/// An op the partitioner would have kept whole for Core ML (`ops_to_not_decompose`) and let
/// decompose instead, because the converter refuses it: its parts are what the graph holds.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecomposedOp {
    /// The op's qualified name, e.g. `aten.pad.default`.
    pub op: String,
    pub conversion: Conversion,
}

/// How a conversion verdict was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// The node converted alone, before planning.
    Probe,
    /// A planned partition converted, and bisected to the node.
    Verification,
}

impl FoundBy {
    pub fn as_str(self) -> &'static str {
        match self {
            FoundBy::Probe => "probe",
            FoundBy::Verification => "verification",
        }
    }
}

impl Node {
    /// The keyword argument `key`, if given.
    pub fn kwarg(&self, key: &str) -> Option<&Arg> {
        self.kwargs
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| v)
    }

    /// `getitem` picks one value out of a multi-output op; it must live where its producer lives.
    pub fn is_getitem(&self) -> bool {
        self.op == OpKind::CallFunction
            && (&*self.target == "getitem" || self.target.ends_with(".getitem"))
    }
}

/// A buffer that the program updates, as the signature declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutableBuffer {
    /// The buffer's name (the value of `buffers_to_mutate`), e.g. `layers.0.attention.kv_cache.k_cache`.
    pub buffer: String,
    /// The placeholder whose `inputs_to_buffers` entry is the buffer: its old value.
    pub placeholder: NodeId,
    /// The output value whose `buffers_to_mutate` entry is the buffer: its new value.
    pub writer: NodeId,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Signature {
    /// Placeholder to buffer, parameter or constant name, as in the input.
    pub inputs_to_parameters: Vec<(NodeId, String)>,
    pub inputs_to_buffers: Vec<(NodeId, String)>,
    pub inputs_to_lifted_tensor_constants: Vec<(NodeId, String)>,
    pub user_inputs: Vec<NodeId>,
    pub user_outputs: Vec<Option<NodeId>>,
    /// In the order of their placeholders.
    pub mutable_buffers: Vec<MutableBuffer>,
}

#[derive(Clone, Debug)]
pub struct Graph {
    pub nodes: Vec<Node>,
    /// Each node's `op`, packed: passes over every node that need only the kind read 1 byte a
    /// node rather than a node's cache line (what-if answers make several such passes).
    pub ops: Vec<OpKind>,
    /// Each node's value size in bytes ([`TensorMeta::bytes`]), `None` when unknown (symbolic
    /// shape, no meta): every cost estimate asks for it by node, and it is worked out while each
    /// node is read, rather than in a later pass through a quarter of a gigabyte of nodes.
    pub value_bytes: Vec<Option<u64>>,
    /// The nodes whose conversion verdict says the converter refuses them, in node order: noted
    /// while reading, so that planning never looks through every node for them.
    pub refused_by_converter: Vec<NodeId>,
    pub roles: Vec<NodeRoles>,
    pub signature: Signature,
    /// Options given in the document (defaults where absent).
    pub options: Options,
    /// A topological order of all nodes: FX order when the input is in FX order.
    pub order: Vec<NodeId>,
    /// The graph's single `output` node.
    pub output: NodeId,
    /// Provenance the exporter wrote (versions, model), echoed into reports.
    pub producer: Option<serde_json::Value>,
    /// Distinct tags the input carries: partitions in the stock proposal.
    pub stock_partitions: usize,
    /// Ops decomposed before the graph was exported because the converter refuses them whole.
    pub decomposed: Vec<DecomposedOp>,
    pub(crate) names: NameIndex,
}

/// Node name to id, hashing the names where the nodes keep them rather than copying them: open
/// addressing, probing one slot after another, each slot a node id and the high half of its name's
/// hash, so that a probe reads a node's name only when those match. A million names make a table
/// far larger than the caches, and inserting is then a cache miss: a reader that knows a name early
/// ([`NameIndex::prefetch`]) has its slot fetched while it reads the rest of the node.
#[derive(Clone, Debug, Default)]
pub(crate) struct NameIndex {
    /// `EMPTY`, or `hash >> 32 << 32 | id + 1`; a power of two long (or none). Empty is not zero:
    /// a table of zeros would be memory the kernel maps on first touch, and a probe reading an
    /// untouched page before a write would fault twice.
    slots: Vec<u64>,
    len: usize,
}

/// The name hasher of every index in this process: seeded at random once (a document cannot aim
/// its names at one slot), and the same for the tables two threads fill, so that one's hashes
/// serve the other.
fn name_hasher() -> &'static DefaultHashBuilder {
    static HASHER: OnceLock<DefaultHashBuilder> = OnceLock::new();
    HASHER.get_or_init(DefaultHashBuilder::default)
}

const EMPTY: u64 = u64::MAX;

/// The node a full slot holds (ids stay below `u32::MAX - 1`: import refuses more nodes).
fn held(slot: u64) -> usize {
    (slot as u32 - 1) as usize
}

/// Asks the processor to bring the cache line at `address` in: a hint, never a fault.
#[inline]
#[allow(unsafe_code)] // a prefetch intrinsic
fn prefetch_address<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

impl NameIndex {
    /// Room for `n` names without growing: growing rehashes every name read so far.
    pub(crate) fn reserve(&mut self, nodes: &[Node], n: usize) {
        // At most three quarters full.
        let wanted = (self.len + n).saturating_mul(4) / 3 + 1;
        if wanted > self.slots.len() {
            self.rebuild(nodes, wanted.next_power_of_two());
        }
    }

    /// The hash a name is indexed under.
    pub(crate) fn hash(&self, name: &str) -> u64 {
        name_hasher().hash_one(name)
    }

    /// Asks the processor to fetch the slot where a name of this hash is found or goes, ahead of
    /// finding or inserting it. Only a hint: nothing changes.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        if let Some(slot) = self.slots.get(self.home(hash)) {
            prefetch_address(slot);
        }
    }

    fn home(&self, hash: u64) -> usize {
        hash as usize & self.slots.len().wrapping_sub(1)
    }

    /// The slot holding `name` (hashed to `hash`), or the empty one where it would go.
    fn probe(&self, nodes: &[Node], name: &str, hash: u64) -> Result<usize, usize> {
        let tag = hash >> 32 << 32;
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                return Err(at);
            }
            if slot >> 32 << 32 == tag && nodes[held(slot)].name == name {
                return Ok(at);
            }
            at = (at + 1) & mask;
        }
    }

    pub(crate) fn find(&self, nodes: &[Node], name: &str) -> Option<NodeId> {
        if self.len == 0 {
            return None;
        }
        let found = self.probe(nodes, name, self.hash(name)).ok()?;
        Some(NodeId(held(self.slots[found]) as u32))
    }

    /// Each of `names`' node, as [`NameIndex::find`] finds them one by one, sooner when they are
    /// many: a lookup waits on memory three times (the slot, the node in it, a long name's
    /// bytes), so each name's slot is fetched sixteen names ahead, the node in it eight ahead and
    /// that node's name four ahead, and the waits overlap.
    pub(crate) fn find_many(&self, nodes: &[Node], names: &[&str]) -> Vec<Option<NodeId>> {
        if self.len == 0 {
            return vec![None; names.len()];
        }
        let hashes: Vec<u64> = names.iter().map(|n| self.hash(n)).collect();
        let candidate = |at: usize| {
            let slot = *hashes.get(at).and_then(|&h| self.slots.get(self.home(h)))?;
            (slot != EMPTY).then(|| &nodes[held(slot)])
        };
        let mut found = Vec::with_capacity(names.len());
        for (i, (name, &hash)) in names.iter().zip(&hashes).enumerate() {
            if let Some(&later) = hashes.get(i + 16) {
                self.prefetch(later);
            }
            if let Some(node) = candidate(i + 8) {
                prefetch_address(node);
            }
            if let Some(node) = candidate(i + 4) {
                prefetch_address(node.name.as_ptr());
            }
            let at = self.probe(nodes, name, hash).ok();
            found.push(at.map(|at| NodeId(held(self.slots[at]) as u32)));
        }
        found
    }

    /// Indexes `nodes[id]` under its name, whose hash is `hash` ([`NameIndex::hash`]); the id
    /// already there when the name is taken.
    pub(crate) fn insert(&mut self, nodes: &[Node], id: NodeId, hash: u64) -> Result<(), NodeId> {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.rebuild(nodes, (self.slots.len() * 2).max(16));
        }
        match self.probe(nodes, &nodes[id.index()].name, hash) {
            Ok(taken) => Err(NodeId(held(self.slots[taken]) as u32)),
            Err(empty) => {
                self.slots[empty] = hash >> 32 << 32 | u64::from(id.0 + 1);
                self.len += 1;
                Ok(())
            }
        }
    }

    /// The same names in a table of `size` slots.
    fn rebuild(&mut self, nodes: &[Node], size: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; size]);
        let mask = size - 1;
        for slot in old.into_iter().filter(|&s| s != EMPTY) {
            let mut at = self.hash(&nodes[held(slot)].name) as usize & mask;
            while self.slots[at] != EMPTY {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }
}

impl Graph {
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn name(&self, id: NodeId) -> &str {
        &self.nodes[id.index()].name
    }

    pub fn role(&self, id: NodeId) -> NodeRoles {
        self.roles[id.index()]
    }

    pub fn op(&self, id: NodeId) -> OpKind {
        self.ops[id.index()]
    }

    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.names.find(&self.nodes, name)
    }

    pub fn ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// The mutable buffer declared under `name`, matched by buffer name or by placeholder name.
    pub fn mutable_buffer(&self, name: &str) -> Option<&MutableBuffer> {
        self.signature
            .mutable_buffers
            .iter()
            .find(|b| b.buffer == name)
            .or_else(|| {
                self.signature
                    .mutable_buffers
                    .iter()
                    .find(|b| self.name(b.placeholder) == name)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_need_static_shape_and_known_dtype() {
        let meta = |shape: Vec<Dim>, dtype: &str| TensorMeta {
            shape: Some(shape.into()),
            dtype: Some(dtype.into()),
            digest: None,
        };
        assert_eq!(
            meta(vec![Dim::Static(2), Dim::Static(3)], "float16").bytes(),
            Some(12)
        );
        assert_eq!(meta(vec![], "torch.int64").bytes(), Some(8));
        assert_eq!(
            meta(vec![Dim::Symbolic("s0".into())], "float32").bytes(),
            None
        );
        assert_eq!(meta(vec![Dim::Static(2)], "quint4x2").bytes(), None);
        assert_eq!(TensorMeta::default().bytes(), None);
    }

    fn named(names: impl IntoIterator<Item = String>) -> Vec<Node> {
        (names.into_iter())
            .map(|name| Node {
                name: name.into(),
                op: OpKind::CallFunction,
                target: "aten.add.Tensor".into(),
                args: SmallVec::new(),
                kwargs: Box::new([]),
                inputs: SmallVec::new(),
                supported: false,
                stock_tag: None,
                module_path: None,
                meta: TensorMeta::default(),
                conversion: None,
            })
            .collect()
    }

    #[test]
    fn the_name_index_finds_every_name_through_growth_and_keeps_the_first_of_two() {
        // Long names (kept outside the node) and short ones; no room reserved, so it grows.
        let nodes = named((0..5000).map(|i| {
            if i % 2 == 0 {
                format!("n{i}")
            } else {
                format!("aten_slice_scatter_default_{i}")
            }
        }));
        let mut index = NameIndex::default();
        assert_eq!(index.find(&nodes, "n0"), None);
        for (i, node) in nodes.iter().enumerate() {
            let hash = index.hash(&node.name);
            assert_eq!(index.insert(&nodes, NodeId(i as u32), hash), Ok(()));
        }
        for (i, node) in nodes.iter().enumerate() {
            assert_eq!(index.find(&nodes, &node.name), Some(NodeId(i as u32)));
        }
        assert_eq!(index.find(&nodes, "n1"), None);
        assert_eq!(index.find(&nodes, ""), None);
        // Many at once, as one by one.
        let mut asked: Vec<String> = nodes.iter().map(|n| n.name.to_string()).collect();
        asked.extend(["n1".to_string(), String::new(), "n4998".to_string()]);
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        let one_by_one: Vec<Option<NodeId>> = asked.iter().map(|a| index.find(&nodes, a)).collect();
        assert_eq!(index.find_many(&nodes, &asked), one_by_one);
        assert_eq!(
            NameIndex::default().find_many(&nodes, &asked[..2]),
            [None, None]
        );
        // A second node of a taken name is refused with the first's id, and changes nothing.
        let mut twice = nodes.clone();
        twice.extend(named(["n42".to_string()]));
        let hash = index.hash("n42");
        index.prefetch(hash);
        assert_eq!(index.insert(&twice, NodeId(5000), hash), Err(NodeId(42)));
        assert_eq!(index.find(&twice, "n42"), Some(NodeId(42)));
        // Reserving room keeps what is there.
        index.reserve(&nodes, 100_000);
        assert_eq!(
            index.find(&nodes, "aten_slice_scatter_default_4999"),
            Some(NodeId(4999))
        );
    }

    #[test]
    fn constant_data_excludes_mutable_buffers() {
        assert!(NodeRoles::PARAMETER.is_constant_data());
        assert!(NodeRoles::BUFFER.is_constant_data());
        assert!(!(NodeRoles::BUFFER | NodeRoles::MUTABLE_BUFFER).is_constant_data());
        assert!(!NodeRoles::USER_INPUT.is_constant_data());
    }
}
