//! Compressed adjacency of the imported graph in both directions, plus each node's position in a
//! topological order. Built once per graph; every walk reads it through [`Adjacency`].

use crate::digraph::{Adjacency, DirectedGraph};
use crate::graph::{Graph, Node, NodeId};
use crate::threads;

/// Compressed sparse rows: the neighbours of node i are `targets[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, Default)]
struct Csr {
    offsets: Vec<u32>,
    targets: Vec<NodeId>,
}

impl Csr {
    fn row(&self, n: NodeId) -> &[NodeId] {
        let i = n.index();
        &self.targets[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

#[derive(Clone, Debug)]
pub struct GraphIndex {
    users: Csr,
    inputs: Csr,
    /// `position[n]` is n's index in `order`.
    position: Vec<u32>,
    order: Vec<NodeId>,
    /// Whether each node is a `getitem` ([`crate::graph::Node::is_getitem`]), read while the
    /// nodes are streamed through for their inputs: the stock reproduction asks it of every
    /// node's first user, which is a node anywhere in a quarter of a gigabyte at 10^6.
    getitem: Vec<bool>,
}

/// Below this many nodes their inputs are gathered on one thread.
const GATHER_ON_TWO_THREADS_FROM: usize = 100_000;

/// The inputs of `nodes` as rows (offsets from 0, one more than the nodes) and which are getitems:
/// one pass streaming through the nodes, a quarter of a gigabyte at 10^6.
fn gather(nodes: &[Node]) -> (Csr, Vec<bool>) {
    let mut inputs = Csr {
        offsets: Vec::with_capacity(nodes.len() + 1),
        targets: Vec::new(),
    };
    let mut getitem = Vec::with_capacity(nodes.len());
    inputs.offsets.push(0);
    for node in nodes {
        getitem.push(node.is_getitem());
        inputs.targets.extend_from_slice(&node.inputs);
        inputs.offsets.push(inputs.targets.len() as u32);
    }
    (inputs, getitem)
}

impl GraphIndex {
    pub fn new(graph: &Graph) -> Self {
        let n = graph.len();
        // Before both sides of planning can start: the two halves on two threads when large.
        let (inputs, getitem) = if n >= GATHER_ON_TWO_THREADS_FROM {
            let (first, second) = graph.nodes.split_at(n / 2);
            let ((tail, tail_getitem), (mut head, mut head_getitem)) =
                threads::both(true, || gather(second), || gather(first));
            let base = head.targets.len() as u32;
            head.offsets
                .extend(tail.offsets[1..].iter().map(|o| o + base));
            head.targets.extend_from_slice(&tail.targets);
            head_getitem.extend_from_slice(&tail_getitem);
            (head, head_getitem)
        } else {
            gather(&graph.nodes)
        };
        let mut user_counts = vec![0u32; n];
        for p in &inputs.targets {
            user_counts[p.index()] += 1;
        }
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u32);
        for c in &user_counts {
            offsets.push(offsets[offsets.len() - 1] + c);
        }
        // Filled from the inputs just gathered, not from the nodes again: a million nodes are a
        // quarter of a gigabyte to stream through, their inputs a few megabytes.
        let mut fill = offsets.clone();
        let mut targets = vec![NodeId(0); inputs.targets.len()];
        for (i, row) in inputs.offsets.windows(2).enumerate() {
            for p in &inputs.targets[row[0] as usize..row[1] as usize] {
                let slot = &mut fill[p.index()];
                targets[*slot as usize] = NodeId(i as u32);
                *slot += 1;
            }
        }
        let mut position = vec![0u32; n];
        for (i, id) in graph.order.iter().enumerate() {
            position[id.index()] = i as u32;
        }
        GraphIndex {
            users: Csr { offsets, targets },
            inputs,
            position,
            order: graph.order.clone(),
            getitem,
        }
    }

    pub fn is_getitem(&self, n: NodeId) -> bool {
        self.getitem[n.index()]
    }

    /// Nodes in topological order.
    pub fn order(&self) -> &[NodeId] {
        &self.order
    }

    pub fn position(&self, n: NodeId) -> u32 {
        self.position[n.index()]
    }
}

impl DirectedGraph for GraphIndex {
    type Node = NodeId;
    fn node_count(&self) -> usize {
        self.position.len()
    }
}

impl Adjacency for GraphIndex {
    fn successors(&self, n: NodeId) -> &[NodeId] {
        self.users.row(n)
    }
    fn predecessors(&self, n: NodeId) -> &[NodeId] {
        self.inputs.row(n)
    }
}
