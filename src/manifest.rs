//! Content keys and the Core ML cache manifest. Each delegate partition gets a key that changes
//! when, and only when, something that shapes its compiled model changes; docs/manifest.md lists
//! exactly what the key covers. A cache holding compiled models under these keys drops the entries
//! `manifest_diff` lists and keeps the rest.
//!
//! The key is SHA-256 over a canonical byte stream: nodes in the import's topological order
//! numbered within the partition, references as local numbers or input slots, constants and
//! states by their signature names (never node names), tag names nowhere.

use crate::graph::{Arg, Dim, Graph, NodeId, NodeRoles, OpKind};
use crate::options::Options;
use crate::schema::MANIFEST_SCHEMA;
use crate::tagging::Tagging;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Bumped whenever what the key covers changes, so old caches miss rather than collide.
const KEY_VERSION: &str = "partition-planner/key@1";

/// A value crossing a partition's boundary, as the compiled model sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundaryValue {
    /// The node in this export (informative: not part of the key).
    pub node: String,
    pub shape: Option<Vec<serde_json::Value>>,
    pub dtype: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// 64 hex digits.
    pub key: String,
    /// The partition's tag in this plan (informative: not part of the key).
    pub tag: String,
    /// `call_function` nodes in the partition.
    pub nodes: usize,
    /// Buffers the partition owns as Core ML states.
    pub states: Vec<String>,
    /// Constants compiled into the model (tagged here, or copied here by executorch).
    pub constants: usize,
    /// In the order the partition first reads them.
    pub inputs: Vec<BoundaryValue>,
    /// In the order the partition computes them.
    pub outputs: Vec<BoundaryValue>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    pub minimum_deployment_target: Option<String>,
    pub compute_unit: Option<String>,
    pub compute_precision: Option<String>,
    pub entries: Vec<ManifestEntry>,
}

/// Field tags of the canonical stream: every field is a tag byte, then length-prefixed bytes.
mod field {
    pub const VERSION: u8 = 0;
    pub const OPTION: u8 = 1;
    pub const NODE: u8 = 2;
    pub const TARGET: u8 = 3;
    pub const ARG: u8 = 4;
    pub const KWARG: u8 = 5;
    pub const META: u8 = 6;
    pub const CONSTANT: u8 = 7;
    pub const STATE: u8 = 8;
    pub const INPUT: u8 = 9;
    pub const OUTPUT: u8 = 10;
}

/// Arguments: one tag byte per kind, then the value.
mod arg {
    pub const LOCAL: u8 = 0;
    pub const INPUT: u8 = 1;
    pub const CONSTANT: u8 = 2;
    pub const NULL: u8 = 3;
    pub const BOOL: u8 = 4;
    pub const INT: u8 = 5;
    pub const UINT: u8 = 6;
    pub const FLOAT: u8 = 7;
    pub const STR: u8 = 8;
    pub const LIST: u8 = 9;
    pub const DICT: u8 = 10;
}

struct KeyStream(Sha256);

impl KeyStream {
    fn bytes(&mut self, b: &[u8]) {
        self.0.update((b.len() as u64).to_le_bytes());
        self.0.update(b);
    }
    fn field(&mut self, tag: u8, b: &[u8]) {
        self.0.update([tag]);
        self.bytes(b);
    }
    fn u64(&mut self, v: u64) {
        self.0.update(v.to_le_bytes());
    }
    fn opt(&mut self, tag: u8, v: Option<&str>) {
        match v {
            Some(s) => self.field(tag, s.as_bytes()),
            None => self.0.update([tag, 0xff]),
        }
    }
}

/// How the partition being keyed sees a node it reads.
enum Seen<'a> {
    Local(u32),
    Input(u32),
    /// A tagged placeholder of another partition: executorch copies it in, by this name; `first`
    /// on the first read, when its content enters the key.
    Constant {
        name: &'a str,
        first: bool,
    },
}

struct PartitionKeyer<'a> {
    graph: &'a Graph,
    tagging: &'a Tagging,
    /// The signature's name for each placeholder (parameter, buffer or constant name).
    data_name: &'a HashMap<NodeId, &'a str>,
    /// Each node's number within its partition.
    local: &'a [u32],
    partition: u32,
    stream: KeyStream,
    inputs: Vec<NodeId>,
    input_slot: HashMap<NodeId, u32>,
    /// Constants of other partitions already copied in.
    copied: HashSet<NodeId>,
    constants: usize,
}

impl<'a> PartitionKeyer<'a> {
    fn seen(&mut self, q: NodeId) -> Seen<'a> {
        let there = self.tagging.partition(q);
        if there == Some(self.partition) {
            return Seen::Local(self.local[q.index()]);
        }
        if there.is_some() && self.graph.node(q).op == OpKind::Placeholder {
            return Seen::Constant {
                name: self.data_name.get(&q).copied().unwrap_or(""),
                first: self.copied.insert(q),
            };
        }
        let next = self.inputs.len() as u32;
        let slot = *self.input_slot.entry(q).or_insert(next);
        if slot == next {
            self.inputs.push(q);
        }
        Seen::Input(slot)
    }

    fn meta(&mut self, n: NodeId) {
        let meta = &self.graph.node(n).meta;
        match &meta.shape {
            None => self.stream.field(field::META, &[0xff]),
            Some(dims) => {
                self.stream.u64(dims.len() as u64);
                for d in dims.iter() {
                    match d {
                        Dim::Static(v) => {
                            self.stream.0.update([0]);
                            self.stream.u64(*v);
                        }
                        Dim::Symbolic(s) => self.stream.field(1, s.as_bytes()),
                    }
                }
            }
        }
        self.stream.opt(field::META, meta.dtype.as_deref());
    }

    /// Recursion follows the argument's nesting, which import bounds (128 levels).
    fn arg(&mut self, a: &Arg) {
        match a {
            Arg::Node(q) => match self.seen(*q) {
                Seen::Local(i) => {
                    self.stream.0.update([arg::LOCAL]);
                    self.stream.u64(u64::from(i));
                }
                Seen::Input(i) => {
                    self.stream.0.update([arg::INPUT]);
                    self.stream.u64(u64::from(i));
                }
                Seen::Constant { name, first } => {
                    if first {
                        self.constant(*q, name);
                    }
                    self.stream.field(arg::CONSTANT, name.as_bytes());
                }
            },
            Arg::Null => self.stream.0.update([arg::NULL]),
            Arg::Bool(v) => self.stream.0.update([arg::BOOL, u8::from(*v)]),
            Arg::Int(v) => {
                self.stream.0.update([arg::INT]);
                self.stream.0.update(v.to_le_bytes());
            }
            Arg::UInt(v) => {
                self.stream.0.update([arg::UINT]);
                self.stream.u64(*v);
            }
            Arg::Float(v) => {
                self.stream.0.update([arg::FLOAT]);
                self.stream.u64(v.to_bits());
            }
            Arg::Str(s) => self.stream.field(arg::STR, s.as_bytes()),
            Arg::List(items) => {
                self.stream.0.update([arg::LIST]);
                self.stream.u64(items.len() as u64);
                for item in items {
                    self.arg(item);
                }
            }
            Arg::Dict(entries) => {
                self.stream.0.update([arg::DICT]);
                self.stream.u64(entries.len() as u64);
                for (k, v) in entries {
                    self.stream.bytes(k.as_bytes());
                    self.arg(v);
                }
            }
        }
    }

    /// A constant compiled into the model: its signature name, shape, dtype and digest.
    fn constant(&mut self, q: NodeId, name: &str) {
        self.constants += 1;
        self.stream.field(field::CONSTANT, name.as_bytes());
        self.meta(q);
        let digest = self.graph.node(q).meta.digest.clone();
        self.stream.opt(field::CONSTANT, digest.as_deref());
    }
}

fn boundary(graph: &Graph, n: NodeId) -> BoundaryValue {
    let meta = &graph.node(n).meta;
    BoundaryValue {
        node: graph.name(n).to_string(),
        shape: meta.shape.as_ref().map(|dims| {
            dims.iter()
                .map(|d| match d {
                    Dim::Static(v) => serde_json::json!(v),
                    Dim::Symbolic(s) => serde_json::json!(s),
                })
                .collect()
        }),
        dtype: meta.dtype.as_deref().map(str::to_string),
    }
}

/// One entry per delegate partition of `tagging`, in partition order.
pub fn manifest(graph: &Graph, tagging: &Tagging, options: &Options) -> Manifest {
    let count = tagging.partition_count();
    let mut members: Vec<Vec<NodeId>> = vec![Vec::new(); count];
    let mut local = vec![0u32; graph.len()];
    for &n in &graph.order {
        if let Some(p) = tagging.partition(n) {
            local[n.index()] = members[p as usize].len() as u32;
            members[p as usize].push(n);
        }
    }
    // Values each partition computes that something outside it reads, in local order.
    let mut outputs: Vec<BTreeMap<u32, NodeId>> = vec![BTreeMap::new(); count];
    for n in graph.ids() {
        for &q in &graph.node(n).inputs {
            if let Some(p) = tagging.partition(q)
                && tagging.partition(n) != Some(p)
                && graph.node(q).op != OpKind::Placeholder
            {
                outputs[p as usize].insert(local[q.index()], q);
            }
        }
    }
    let s = &graph.signature;
    let data_name: HashMap<NodeId, &str> = s
        .inputs_to_parameters
        .iter()
        .chain(&s.inputs_to_buffers)
        .chain(&s.inputs_to_lifted_tensor_constants)
        .map(|(id, name)| (*id, name.as_str()))
        .collect();
    let state_of: HashMap<NodeId, (&str, NodeId)> = s
        .mutable_buffers
        .iter()
        .map(|b| (b.placeholder, (b.buffer.as_str(), b.writer)))
        .collect();
    let target = options.minimum_deployment_target.map(|t| t.to_string());
    let mut entries = Vec::with_capacity(count);
    for (p, nodes) in members.iter().enumerate() {
        let mut k = PartitionKeyer {
            graph,
            tagging,
            data_name: &data_name,
            local: &local,
            partition: p as u32,
            stream: KeyStream(Sha256::new()),
            inputs: Vec::new(),
            input_slot: HashMap::new(),
            copied: HashSet::new(),
            constants: 0,
        };
        k.stream.field(field::VERSION, KEY_VERSION.as_bytes());
        k.stream.opt(field::OPTION, target.as_deref());
        k.stream.opt(field::OPTION, options.compute_unit.as_deref());
        k.stream
            .opt(field::OPTION, options.compute_precision.as_deref());
        let mut states = Vec::new();
        let mut ops = 0;
        for &n in nodes {
            let node = graph.node(n);
            k.stream.field(field::NODE, &[node.op as u8]);
            match node.op {
                OpKind::Placeholder => match state_of.get(&n) {
                    Some(&(buffer, writer)) if tagging.partition(writer) == Some(p as u32) => {
                        states.push(buffer.to_string());
                        k.stream.field(field::STATE, buffer.as_bytes());
                        k.stream.u64(u64::from(local[writer.index()]));
                        k.meta(n);
                        // Its initial value, when given, in case the compiled model embeds it.
                        k.stream.opt(field::STATE, node.meta.digest.as_deref());
                    }
                    _ => {
                        let name = data_name.get(&n).copied().unwrap_or("");
                        k.constant(n, name);
                    }
                },
                _ => {
                    ops += usize::from(node.op == OpKind::CallFunction);
                    k.stream.field(field::TARGET, node.target.as_bytes());
                    k.stream.u64(node.args.len() as u64);
                    for a in &node.args {
                        k.stream.0.update([field::ARG]);
                        k.arg(a);
                    }
                    k.stream.u64(node.kwargs.len() as u64);
                    for (name, a) in &node.kwargs {
                        k.stream.field(field::KWARG, name.as_bytes());
                        k.arg(a);
                    }
                    // Whether the signature returns it matters to the converted program.
                    let roles = graph.role(n) & (NodeRoles::USER_OUTPUT | NodeRoles::BUFFER_WRITER);
                    k.stream.0.update([roles.bits()]);
                    k.meta(n);
                }
            }
        }
        let inputs = std::mem::take(&mut k.inputs);
        for &q in &inputs {
            k.stream.0.update([field::INPUT]);
            k.meta(q);
        }
        for &at in outputs[p].keys() {
            k.stream.0.update([field::OUTPUT]);
            k.stream.u64(u64::from(at));
        }
        let digest = k.stream.0.finalize();
        let key = digest.iter().map(|b| format!("{b:02x}")).collect();
        entries.push(ManifestEntry {
            key,
            tag: tagging.name(p as u32).to_string(),
            nodes: ops,
            states,
            constants: k.constants,
            inputs: inputs.iter().map(|&q| boundary(graph, q)).collect(),
            outputs: outputs[p].values().map(|&q| boundary(graph, q)).collect(),
        });
    }
    Manifest {
        schema: MANIFEST_SCHEMA.into(),
        minimum_deployment_target: target,
        compute_unit: options.compute_unit.clone(),
        compute_precision: options.compute_precision.clone(),
        entries,
    }
}

/// What a cache keyed by content must do to go from `old` to `new`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ManifestDiff {
    /// Entries of `old` whose key `new` does not have: their compiled models are stale.
    pub drop: Vec<ManifestEntry>,
    /// Entries of `new` whose key `old` does not have: to compile.
    pub add: Vec<ManifestEntry>,
    /// Keys both have: compiled models that stay valid.
    pub keep: Vec<String>,
}

pub fn manifest_diff(old: &Manifest, new: &Manifest) -> ManifestDiff {
    let old_keys: HashSet<&str> = old.entries.iter().map(|e| e.key.as_str()).collect();
    let new_keys: HashSet<&str> = new.entries.iter().map(|e| e.key.as_str()).collect();
    ManifestDiff {
        drop: old
            .entries
            .iter()
            .filter(|e| !new_keys.contains(e.key.as_str()))
            .cloned()
            .collect(),
        add: new
            .entries
            .iter()
            .filter(|e| !old_keys.contains(e.key.as_str()))
            .cloned()
            .collect(),
        keep: old
            .entries
            .iter()
            .filter(|e| new_keys.contains(e.key.as_str()))
            .map(|e| e.key.clone())
            .collect(),
    }
}

#[cfg(test)]
mod tests;
