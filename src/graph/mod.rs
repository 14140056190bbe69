//! The imported program: nodes in FX order with their references resolved, and the graph signature
//! resolved to node ids. It is what `import` produces and every later stage reads; it holds no
//! decision of the planner.

mod boundary;
mod name_index;

pub use boundary::{MAX_BOUNDARY_RANK, RangeConstraints, Uncrossable};

use crate::options::Options;
use bitflags::bitflags;
use compact_str::CompactString;
use smallvec::SmallVec;
use std::fmt;
use std::sync::Arc;

pub(crate) use name_index::NameIndex;

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

/// Why a value whose meta names a dtype has no size: reports count it as of unknown size, and the
/// importer warns of it, since a weight counted as nothing would slip under any budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unsized {
    /// A dtype the planner does not know the element size of.
    UnknownDtype(String),
    /// A static shape whose byte count does not fit in 64 bits.
    Overflows,
}

impl std::fmt::Display for Unsized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsized::UnknownDtype(dtype) => {
                write!(f, "dtype {dtype:?} is not one the planner knows")
            }
            Unsized::Overflows => write!(f, "its shape's byte count does not fit in 64 bits"),
        }
    }
}

impl TensorMeta {
    /// Why [`TensorMeta::bytes`] is `None` although a dtype is given: an unknown dtype, or a
    /// static shape too large to count. `None` for a value sized, or without a dtype or a
    /// static shape to size it by (what an exporter leaves out is not an error).
    pub fn why_unsized(&self) -> Option<Unsized> {
        let dtype = self.dtype.as_deref()?;
        let Some(elem) = dtype_size(dtype) else {
            return Some(Unsized::UnknownDtype(dtype.to_string()));
        };
        let mut total = elem;
        for d in self.shape.as_deref()? {
            match d {
                Dim::Static(n) => match total.checked_mul(*n) {
                    Some(t) => total = t,
                    None => return Some(Unsized::Overflows),
                },
                Dim::Symbolic(_) => return None,
            }
        }
        None
    }
}

/// Element size of a torch dtype as torch spells it (`float32`, `torch.float16`, `bool`, ...): its
/// `itemsize` in torch 2.13, so a value's bytes are what `Tensor.nbytes` says. The sub-byte and
/// packed dtypes (`uint4`, `float4_e2m1fn_x2`, `quint4x2`, ...) take one byte an element there.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    let name = dtype.strip_prefix("torch.").unwrap_or(dtype);
    Some(match name {
        "complex128" | "cdouble" => 16,
        "float64" | "double" | "int64" | "long" | "uint64" | "complex64" | "cfloat" => 8,
        "float32" | "float" | "int32" | "int" | "uint32" | "complex32" | "chalf" | "qint32" => 4,
        "float16" | "half" | "bfloat16" | "int16" | "short" | "uint16" | "bits16" => 2,
        "int8" | "uint8" | "bool" | "qint8" | "quint8" | "quint4x2" | "quint2x4" => 1,
        "float8_e4m3fn" | "float8_e5m2" | "float8_e4m3fnuz" | "float8_e5m2fnuz" => 1,
        "float8_e8m0fnu" | "float4_e2m1fn_x2" => 1,
        "bits8" | "bits1x8" | "bits2x4" | "bits4x2" => 1,
        "uint1" | "uint2" | "uint3" | "uint4" | "uint5" | "uint6" | "uint7" | "bit" => 1,
        "int1" | "int2" | "int3" | "int4" | "int5" | "int6" | "int7" => 1,
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
    /// Why the converter met an error, where it met one.
    #[serde(default)]
    pub cause: Option<Cause>,
    /// The probe fed the node values of the program's example sizes, since it reads a value of a
    /// symbolic size Core ML takes only inside a program.
    #[serde(default)]
    pub static_sizes: bool,
}

/// Why a probe met an error: the op itself (the node is refused), or the probe's own inputs and
/// outputs, which a planned partition need not share (the node is trusted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// It fails alone and beside its neighbours.
    Op,
    /// It fails alone and converts beside its neighbours.
    Boundary,
    /// It fails while coremltools reads the probe's inputs, alone and beside its neighbours.
    Inconclusive,
}

impl Cause {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "op" => Cause::Op,
            "boundary" => Cause::Boundary,
            "inconclusive" => Cause::Inconclusive,
            _ => return None,
        })
    }
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
    /// Values whose meta gives a dtype but no size ([`Unsized`]), in node order: the importer's
    /// warnings.
    pub unsized_values: Vec<(NodeId, Unsized)>,
    /// The sizes a model input may have besides numbers, when the document gives them.
    pub range_constraints: Option<RangeConstraints>,
    pub(crate) names: NameIndex,
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

    /// What the document says the backend supports, as a table by node: what the planner, the
    /// stock reproduction and the checker are handed unless a request says otherwise.
    pub fn supported(&self) -> Vec<bool> {
        self.nodes.iter().map(|n| n.supported).collect()
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
        // Packed and sub-byte dtypes take a byte an element, as torch's itemsize says.
        assert_eq!(meta(vec![Dim::Static(2)], "quint4x2").bytes(), Some(2));
        assert_eq!(meta(vec![Dim::Static(3)], "torch.uint4").bytes(), Some(3));
        assert_eq!(meta(vec![Dim::Static(2)], "float128").bytes(), None);
        assert_eq!(TensorMeta::default().bytes(), None);
    }

    #[test]
    fn constant_data_excludes_mutable_buffers() {
        assert!(NodeRoles::PARAMETER.is_constant_data());
        assert!(NodeRoles::BUFFER.is_constant_data());
        assert!(!(NodeRoles::BUFFER | NodeRoles::MUTABLE_BUFFER).is_constant_data());
        assert!(!NodeRoles::USER_INPUT.is_constant_data());
    }
}
