//! What a tagging costs: per partition its inputs, outputs, states and the bytes that cross its
//! boundary; per constant the copies executorch makes of it. Measures decide nothing.

use crate::analyse::GraphIndex;
use crate::digraph::Adjacency;
use crate::graph::{Graph, NodeId, OpKind};
use crate::tagging::Tagging;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionSummary {
    pub tag: String,
    /// `call_function` nodes in the partition.
    pub nodes: usize,
    /// Values read from outside (CPU nodes, user inputs, untagged buffers, other partitions).
    pub inputs: Vec<NodeId>,
    /// Values of the partition read outside it (including by the graph output).
    pub outputs: Vec<NodeId>,
    /// Buffers the partition owns as Core ML states: placeholder and writer both inside.
    pub states: Vec<String>,
    /// Bytes of those states, as far as their sizes are known.
    pub state_bytes: u64,
    /// Those states whose size is not known: not in `state_bytes`.
    pub unsized_states: usize,
    /// Bytes of the constant data baked into the partition: each parameter, lifted constant or
    /// unmutated buffer tagged into it or copied into it, as far as sizes are known.
    pub weight_bytes: u64,
    /// Bytes of inputs and outputs whose size is known.
    pub boundary_bytes: u64,
    /// Inputs and outputs whose size is not known (symbolic shape or no meta).
    pub unsized_boundary_values: usize,
    /// Constants baked into it whose size is not known (an unknown dtype, say): not in
    /// `weight_bytes`.
    pub unsized_weights: usize,
}

/// A tagged constant read by other partitions or by CPU: executorch copies it for each of them
/// (`_maybe_duplicate_constant_nodes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstantCopy {
    pub placeholder: NodeId,
    pub owner: String,
    /// The other partitions reading it; `None` stands for CPU.
    pub readers: Vec<Option<String>>,
    /// Bytes of one copy.
    pub bytes: Option<u64>,
}

impl ConstantCopy {
    pub fn copies(&self) -> usize {
        self.readers.len()
    }
    pub fn total_bytes(&self) -> Option<u64> {
        self.bytes.map(|b| b.saturating_mul(self.copies() as u64))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measure {
    pub partitions: Vec<PartitionSummary>,
    pub constant_copies: Vec<ConstantCopy>,
    pub delegated_nodes: usize,
}

impl Measure {
    pub fn states(&self) -> usize {
        self.partitions.iter().map(|p| p.states.len()).sum()
    }
    pub fn boundary_bytes(&self) -> u64 {
        (self.partitions.iter().map(|p| p.boundary_bytes)).fold(0, u64::saturating_add)
    }
    pub fn constant_copy_bytes(&self) -> u64 {
        self.constant_copies
            .iter()
            .filter_map(ConstantCopy::total_bytes)
            .fold(0, u64::saturating_add)
    }
}

/// Per partition, the bytes of the constant data baked into it: each parameter, lifted constant or
/// unmutated buffer tagged into it, or tagged elsewhere and read by one of its ops (executorch
/// copies it), once each, as far as sizes are known. An untagged constant is a runtime input.
/// Inputs are read from `index`: at 10^6 nodes reading them from the nodes themselves, hundreds of
/// bytes each, was most of the time measuring took.
pub fn weight_bytes(graph: &Graph, index: &GraphIndex, tagging: &Tagging) -> Vec<u64> {
    weights(graph, index, tagging).0
}

/// [`weight_bytes`], and per partition how many of its constants have no known size.
fn weights(graph: &Graph, index: &GraphIndex, tagging: &Tagging) -> (Vec<u64>, Vec<usize>) {
    let tagged_constant = |q: NodeId| graph.role(q).is_constant_data() && tagging.tag(q).is_some();
    // (constant, partition holding it), each pair once.
    let mut held: Vec<(NodeId, u32)> = Vec::new();
    for n in graph.ids() {
        let Some(p) = tagging.partition(n) else {
            continue;
        };
        if tagged_constant(n) {
            held.push((n, p));
        }
        if graph.op(n) == OpKind::CallFunction {
            let read = (index.predecessors(n).iter().copied()).filter(|&q| tagged_constant(q));
            held.extend(read.map(|q| (q, p)));
        }
    }
    held.sort_unstable();
    held.dedup();
    let mut bytes = vec![0u64; tagging.partition_count()];
    let mut unknown = vec![0usize; tagging.partition_count()];
    for (q, p) in held {
        match graph.value_bytes[q.index()] {
            Some(size) => bytes[p as usize] = bytes[p as usize].saturating_add(size),
            None => unknown[p as usize] += 1,
        }
    }
    (bytes, unknown)
}

/// `index` is the graph's, read for each node's inputs (see [`weight_bytes`]).
pub fn measure(graph: &Graph, index: &GraphIndex, tagging: &Tagging) -> Measure {
    let count = tagging.partition_count();
    let mut inputs: Vec<Vec<NodeId>> = vec![Vec::new(); count];
    let mut outputs: Vec<Vec<NodeId>> = vec![Vec::new(); count];
    let mut nodes = vec![0usize; count];
    let mut copies: Vec<ConstantCopy> = Vec::new();
    let mut copy_of: std::collections::HashMap<NodeId, usize> = std::collections::HashMap::new();
    for id in graph.ids() {
        let here = tagging.partition(id);
        if let (Some(p), OpKind::CallFunction) = (here, graph.op(id)) {
            nodes[p as usize] += 1;
        }
        for &q in index.predecessors(id) {
            let there = tagging.partition(q);
            if there == here {
                continue;
            }
            let tagged_data = graph.op(q) == OpKind::Placeholder && there.is_some();
            if tagged_data {
                // A placeholder tagged elsewhere is copied here, not passed at run time.
                let entry = *copy_of.entry(q).or_insert_with(|| {
                    copies.push(ConstantCopy {
                        placeholder: q,
                        owner: tagging.tag(q).unwrap_or_default().to_string(),
                        readers: Vec::new(),
                        bytes: graph.node(q).meta.bytes(),
                    });
                    copies.len() - 1
                });
                let reader = tagging.tag(id).map(str::to_string);
                if !copies[entry].readers.contains(&reader) {
                    copies[entry].readers.push(reader);
                }
                continue;
            }
            if let Some(p) = here {
                inputs[p as usize].push(q);
            }
            if let Some(p) = there {
                outputs[p as usize].push(q);
            }
        }
    }
    let mut states: Vec<Vec<String>> = vec![Vec::new(); count];
    let mut state_bytes = vec![0u64; count];
    let mut unsized_states = vec![0usize; count];
    for b in &graph.signature.mutable_buffers {
        if let Some(p) = tagging.partition(b.placeholder)
            && tagging.partition(b.writer) == Some(p)
        {
            let p = p as usize;
            states[p].push(b.buffer.clone());
            match graph.value_bytes[b.placeholder.index()] {
                Some(bytes) => state_bytes[p] = state_bytes[p].saturating_add(bytes),
                None => unsized_states[p] += 1,
            }
        }
    }
    let (weight_bytes, unsized_weights) = weights(graph, index, tagging);
    let partitions = (0..count)
        .map(|p| {
            let mut ins = std::mem::take(&mut inputs[p]);
            let mut outs = std::mem::take(&mut outputs[p]);
            for values in [&mut ins, &mut outs] {
                values.sort();
                values.dedup();
            }
            let sizes = ins.iter().chain(&outs).map(|&v| graph.node(v).meta.bytes());
            let (mut boundary_bytes, mut unsized_boundary_values) = (0, 0);
            for size in sizes {
                match size {
                    Some(b) => boundary_bytes = u64::saturating_add(boundary_bytes, b),
                    None => unsized_boundary_values += 1,
                }
            }
            PartitionSummary {
                tag: tagging.name(p as u32).to_string(),
                nodes: nodes[p],
                inputs: ins,
                outputs: outs,
                states: std::mem::take(&mut states[p]),
                state_bytes: state_bytes[p],
                weight_bytes: weight_bytes[p],
                boundary_bytes,
                unsized_boundary_values,
                unsized_weights: unsized_weights[p],
                unsized_states: unsized_states[p],
            }
        })
        .collect();
    let delegated_nodes = nodes.iter().sum();
    Measure {
        partitions,
        constant_copies: copies,
        delegated_nodes,
    }
}
