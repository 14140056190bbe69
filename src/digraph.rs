//! The one graph vocabulary of the planner's side, in the manner of rustc's
//! `rustc_data_structures::graph`: small traits that compose, and the one Kahn's algorithm import,
//! analyse and plan share. A graph says how many nodes it has ([`DirectedGraph`]), hands each
//! node's neighbours to a callback ([`Successors`], [`Predecessors`]), which any graph can do, even
//! one worked out on the fly (the contracted units of `plan/levels.rs`), and, when it stores its
//! adjacency, lends them as slices ([`Adjacency`], which gives both of the others). Neutral ground:
//! import, analyse and plan all use it, and it uses none of them. The checker keeps its own
//! (petgraph), so that a bug here cannot hide in it too.

use crate::graph::NodeId;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;

/// A node's number: an index into the graph's per-node arrays.
pub trait Idx: Copy + Eq + Hash + std::fmt::Debug {
    fn new(index: usize) -> Self;
    fn index(self) -> usize;
}

impl Idx for usize {
    fn new(index: usize) -> Self {
        index
    }
    fn index(self) -> usize {
        self
    }
}

impl Idx for NodeId {
    fn new(index: usize) -> Self {
        NodeId(index as u32)
    }
    fn index(self) -> usize {
        NodeId::index(self)
    }
}

/// A directed graph: its nodes are numbered below `node_count()`.
pub trait DirectedGraph {
    type Node: Idx;
    fn node_count(&self) -> usize;
    /// Every node once. Nodes ready at the start are queued in this order, and a cycle is looked
    /// for from the first node in it that no order can place. A number it leaves out is no node:
    /// no edge leads to it, and it is never placed.
    fn nodes(&self) -> impl Iterator<Item = Self::Node> {
        (0..self.node_count()).map(Self::Node::new)
    }
}

/// Each node's successors, handed to a callback once per edge: a graph worked out on the fly keeps
/// its loops plain loops, where chained iterators would cost a call per node.
pub trait Successors: DirectedGraph {
    fn for_each_successor(&self, n: Self::Node, f: impl FnMut(Self::Node));
}

/// Each node's predecessors, handed to a callback once per edge.
pub trait Predecessors: DirectedGraph {
    fn for_each_predecessor(&self, n: Self::Node, f: impl FnMut(Self::Node));
    /// How many predecessors each node has, once per edge: one count for each number below
    /// `node_count()`. Counts fit in u32 as edge offsets do everywhere here.
    fn in_degrees(&self) -> Vec<u32> {
        let mut counts = vec![0; self.node_count()];
        for v in self.nodes() {
            let count = &mut counts[v.index()];
            self.for_each_predecessor(v, |_| *count += 1);
        }
        counts
    }
}

/// A graph that stores its adjacency and lends each node's neighbours as slices: the index analyse
/// builds once and every walk reads. It is a [`Successors`] and a [`Predecessors`] graph too.
pub trait Adjacency: DirectedGraph {
    fn successors(&self, n: Self::Node) -> &[Self::Node];
    fn predecessors(&self, n: Self::Node) -> &[Self::Node];
}

impl<G: Adjacency> Successors for G {
    #[inline]
    fn for_each_successor(&self, n: Self::Node, f: impl FnMut(Self::Node)) {
        self.successors(n).iter().copied().for_each(f);
    }
}

impl<G: Adjacency> Predecessors for G {
    #[inline]
    fn for_each_predecessor(&self, n: Self::Node, f: impl FnMut(Self::Node)) {
        self.predecessors(n).iter().copied().for_each(f);
    }
}

/// Which ready node Kahn's algorithm places next.
pub trait ReadyNodes: Default {
    fn push(&mut self, n: usize);
    fn pop(&mut self) -> Option<usize>;
}

/// The lowest-numbered ready node first: of all topological orders, the one nearest the numbering.
#[derive(Default)]
pub struct LowestFirst(BinaryHeap<Reverse<usize>>);

impl ReadyNodes for LowestFirst {
    fn push(&mut self, n: usize) {
        self.0.push(Reverse(n));
    }
    fn pop(&mut self) -> Option<usize> {
        self.0.pop().map(|Reverse(n)| n)
    }
}

/// The ready node made ready last: the cheapest, for callers that need any topological order.
#[derive(Default)]
pub struct AnyOrder(Vec<usize>);

impl ReadyNodes for AnyOrder {
    fn push(&mut self, n: usize) {
        self.0.push(n);
    }
    fn pop(&mut self) -> Option<usize> {
        self.0.pop()
    }
}

/// Nodes on a cycle, in the direction of its edges: each node has an edge to the next, and the last
/// to the first (a self-loop is one node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle<N = usize>(pub Vec<N>);

/// Kahn's algorithm: every node in an order where each comes after its predecessors, the ready
/// node to place next chosen by `R`; or, when the graph has a cycle, one concrete cycle. Iterative,
/// O(V + E).
pub fn topological_order_or_cycle<G: Successors + Predecessors, R: ReadyNodes>(
    graph: &G,
) -> Result<Vec<G::Node>, Cycle<G::Node>> {
    let mut order = Vec::with_capacity(graph.node_count());
    place_in_topological_order::<G, R>(graph, |v| order.push(v))?;
    Ok(order)
}

/// Kahn's algorithm as [`topological_order_or_cycle`], handing each node to `place` as it is placed
/// instead of collecting the order: a caller that works out something per node in topological order
/// does it while the node's neighbours are still in cache.
pub fn place_in_topological_order<G: Successors + Predecessors, R: ReadyNodes>(
    graph: &G,
    mut place: impl FnMut(G::Node),
) -> Result<(), Cycle<G::Node>> {
    // How many of each node's predecessors are not placed yet; a node is ready at zero.
    let mut waiting = graph.in_degrees();
    let mut ready = R::default();
    let mut listed = 0;
    for v in graph.nodes() {
        listed += 1;
        if waiting[v.index()] == 0 {
            ready.push(v.index());
        }
    }
    let mut placed = 0;
    while let Some(v) = ready.pop() {
        let v = G::Node::new(v);
        place(v);
        placed += 1;
        graph.for_each_successor(v, |s| {
            let count = &mut waiting[s.index()];
            *count -= 1;
            if *count == 0 {
                ready.push(s.index());
            }
        });
    }
    if placed == listed {
        Ok(())
    } else {
        Err(cycle_among_unplaced(graph, &waiting))
    }
}

/// Every node never placed waits on a predecessor never placed, so walking back through such
/// predecessors from the first of them must come back to a node it passed: from there on, a cycle.
fn cycle_among_unplaced<G: Predecessors>(graph: &G, waiting: &[u32]) -> Cycle<G::Node> {
    let unplaced = |v: G::Node| waiting[v.index()] > 0;
    // Some node listed is unplaced; None only when the in-degrees disagree with the edges.
    let Some(start) = graph.nodes().find(|&v| unplaced(v)) else {
        return Cycle(Vec::new());
    };
    let mut seen_at: HashMap<G::Node, usize> = HashMap::new();
    let mut walk = Vec::new();
    let mut at = start;
    while !seen_at.contains_key(&at) {
        seen_at.insert(at, walk.len());
        walk.push(at);
        match first_predecessor(graph, at, unplaced) {
            Some(p) => at = p,
            // Only when successors and predecessors disagree: the walk so far ends at `at`.
            None => break,
        }
    }
    let from = seen_at.get(&at).copied().unwrap_or(0);
    let mut cycle = walk.split_off(from);
    cycle.reverse();
    Cycle(cycle)
}

/// The first predecessor of `n`, in the graph's order, that `wanted` accepts.
fn first_predecessor<G: Predecessors>(
    graph: &G,
    n: G::Node,
    wanted: impl Fn(G::Node) -> bool,
) -> Option<G::Node> {
    let mut first = None;
    graph.for_each_predecessor(n, |p| {
        if first.is_none() && wanted(p) {
            first = Some(p);
        }
    });
    first
}

/// A graph given by its edges: for tests here and in the walks'.
#[cfg(test)]
pub(crate) struct EdgeLists {
    succ: Vec<Vec<NodeId>>,
    pred: Vec<Vec<NodeId>>,
}

#[cfg(test)]
impl EdgeLists {
    pub fn new(n: usize, edges: impl IntoIterator<Item = (u32, u32)>) -> Self {
        let mut lists = EdgeLists {
            succ: vec![Vec::new(); n],
            pred: vec![Vec::new(); n],
        };
        for (a, b) in edges {
            lists.succ[a as usize].push(NodeId(b));
            lists.pred[b as usize].push(NodeId(a));
        }
        lists
    }
}

#[cfg(test)]
impl DirectedGraph for EdgeLists {
    type Node = NodeId;
    fn node_count(&self) -> usize {
        self.succ.len()
    }
}

#[cfg(test)]
impl Adjacency for EdgeLists {
    fn successors(&self, n: NodeId) -> &[NodeId] {
        &self.succ[n.index()]
    }
    fn predecessors(&self, n: NodeId) -> &[NodeId] {
        &self.pred[n.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An order or a cycle by node number.
    fn numbered(found: Result<Vec<NodeId>, Cycle<NodeId>>) -> Result<Vec<usize>, Cycle> {
        let numbers = |nodes: Vec<NodeId>| nodes.into_iter().map(NodeId::index).collect();
        found.map(numbers).map_err(|Cycle(c)| Cycle(numbers(c)))
    }

    /// Whether `cycle` is one of `graph`'s: non-empty, no node twice, an edge from each to the next.
    fn is_cycle(graph: &EdgeLists, cycle: &Cycle) -> bool {
        let c = &cycle.0;
        let mut distinct = c.clone();
        distinct.sort();
        distinct.dedup();
        let edge = |a: usize, b: usize| graph.succ[a].contains(&NodeId(b as u32));
        !c.is_empty()
            && distinct.len() == c.len()
            && (0..c.len()).all(|i| edge(c[i], c[(i + 1) % c.len()]))
    }

    #[test]
    fn an_acyclic_graph_is_ordered_lowest_first_or_any_way() {
        // 4 -> 1 -> 0, 4 -> 3, 2 alone.
        let g = EdgeLists::new(5, [(4, 1), (1, 0), (4, 3)]);
        assert_eq!(
            numbered(topological_order_or_cycle::<_, LowestFirst>(&g)),
            Ok(vec![2, 4, 1, 0, 3])
        );
        let Ok(order) = numbered(topological_order_or_cycle::<_, AnyOrder>(&g)) else {
            panic!("acyclic");
        };
        let mut position = [0; 5];
        for (i, &v) in order.iter().enumerate() {
            position[v] = i;
        }
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
        assert!(
            [(4, 1), (1, 0), (4, 3)]
                .iter()
                .all(|&(a, b)| position[a] < position[b])
        );
    }

    #[test]
    fn a_self_loop_is_a_cycle_of_one_node() {
        let g = EdgeLists::new(3, [(0, 1), (1, 1), (1, 2)]);
        assert_eq!(
            numbered(topological_order_or_cycle::<_, LowestFirst>(&g)),
            Err(Cycle(vec![1]))
        );
    }

    #[test]
    fn a_long_cycle_is_found_whole_from_a_node_downstream_of_it() {
        // Node 0 reads the cycle 1 -> 2 -> ... -> 999 -> 1 without being on it.
        let n = 1000;
        let ring = (1..n).map(|i| (i, if i + 1 == n { 1 } else { i + 1 }));
        let g = EdgeLists::new(n as usize, ring.chain([(500, 0)]));
        let Err(cycle) = numbered(topological_order_or_cycle::<_, AnyOrder>(&g)) else {
            panic!("cyclic");
        };
        assert_eq!(cycle.0.len(), n as usize - 1);
        assert!(is_cycle(&g, &cycle), "{cycle:?}");
    }

    #[test]
    fn two_cycles_give_one_of_them() {
        let g = EdgeLists::new(6, [(0, 1), (1, 0), (2, 3), (3, 4), (4, 2), (1, 5), (4, 5)]);
        let Err(cycle) = numbered(topological_order_or_cycle::<_, LowestFirst>(&g)) else {
            panic!("cyclic");
        };
        assert!(is_cycle(&g, &cycle), "{cycle:?}");
    }

    /// A graph whose number 1 is no node.
    struct WithHole(EdgeLists);

    impl DirectedGraph for WithHole {
        type Node = NodeId;
        fn node_count(&self) -> usize {
            self.0.node_count()
        }
        fn nodes(&self) -> impl Iterator<Item = NodeId> {
            (0..self.node_count() as u32)
                .filter(|&v| v != 1)
                .map(NodeId)
        }
    }

    impl Successors for WithHole {
        fn for_each_successor(&self, n: NodeId, f: impl FnMut(NodeId)) {
            self.0.for_each_successor(n, f);
        }
    }

    impl Predecessors for WithHole {
        fn for_each_predecessor(&self, n: NodeId, f: impl FnMut(NodeId)) {
            self.0.for_each_predecessor(n, f);
        }
    }

    #[test]
    fn a_number_that_is_no_node_is_never_placed() {
        let g = WithHole(EdgeLists::new(4, [(0, 2), (2, 3)]));
        assert_eq!(
            numbered(topological_order_or_cycle::<_, LowestFirst>(&g)),
            Ok(vec![0, 2, 3])
        );
        let g = WithHole(EdgeLists::new(4, [(0, 2), (2, 3), (3, 2)]));
        assert_eq!(
            numbered(topological_order_or_cycle::<_, LowestFirst>(&g)),
            Err(Cycle(vec![3, 2]))
        );
    }

    /// A million nodes in a chain, then in a ring: neither ordering nor the cycle walk recurses.
    #[test]
    fn a_million_nodes_in_a_chain_or_a_ring_do_not_recurse() {
        let n = 1_000_000;
        let chain = EdgeLists::new(n as usize, (0..n - 1).map(|i| (i, i + 1)));
        assert_eq!(
            numbered(topological_order_or_cycle::<_, AnyOrder>(&chain)),
            Ok((0..n as usize).collect())
        );
        let ring = EdgeLists::new(n as usize, (0..n).map(|i| (i, (i + 1) % n)));
        let Err(cycle) = numbered(topological_order_or_cycle::<_, LowestFirst>(&ring)) else {
            panic!("cyclic");
        };
        assert_eq!(cycle.0.len(), n as usize);
        assert!(is_cycle(&ring, &cycle));
    }
}
