//! The node list being read: the nodes in reading order with their names indexed in place,
//! strings many nodes share (operator targets, dtypes, tags) stored once, shapes shared, and what
//! serde cannot report with a node's name (a duplicate name, a malformed reference) kept as a
//! [`Problem`] for import to raise. A list another thread read is appended as if read here.

use super::references::{UNRESOLVED, for_each_reference};
use crate::graph::NameIndex;
use crate::graph::{Dim, Node, NodeId, OpKind, Symbol, Unsized};
use crate::threads::{join, two_cores};
use hashbrown::HashSet;
use std::mem::MaybeUninit;
use std::sync::Arc;

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
    /// The first getitem whose inputs are all read and are not one node (an error import
    /// reports); one reading a later node is judged once that reference is resolved.
    pub getitem_not_of_one: Option<u32>,
    /// Each node's kind, in order: the graph's packed `ops`, gathered while each node is at hand.
    pub ops: Vec<OpKind>,
    /// Each node's value size: the graph's `value_bytes`, gathered the same way.
    pub value_bytes: Vec<Option<u64>>,
    /// Distinct delegation tags: the stock proposal's partitions.
    pub tags: HashSet<Symbol>,
    /// Nodes whose conversion verdict says the converter refuses them, in reading order.
    pub refused: Vec<u32>,
    /// The nodes whose value has a dtype but no size, and why: the graph's `unsized_values`.
    pub unsized_values: Vec<(u32, Unsized)>,
    /// How deep values nest inside the nodes read so far.
    pub nesting: Nesting,
    symbols: HashSet<Symbol>,
    shapes: HashSet<Arc<[Dim]>>,
    /// Reused while reading each node's shape.
    pub scratch: Vec<Dim>,
    /// Each node's name hash, kept by a list that will be appended to another
    /// ([`NodeList::keeping_hashes`]): indexing its names there needs them again.
    hashes: Option<Vec<u64>>,
}

impl NodeList {
    /// Room for the nodes of `bytes` of JSON. Exported and generated nodes take about 250 bytes
    /// each; sizing from that spares the copies and rehashes of growing. Room never used is never
    /// touched, so a generous guess costs address space, not memory.
    pub fn for_bytes(bytes: usize) -> Self {
        let mut list = NodeList::default();
        let guess = bytes / 200;
        list.nodes.reserve(guess);
        list.ops.reserve(guess);
        list.value_bytes.reserve(guess);
        list.names.reserve(&list.nodes, guess);
        list
    }

    /// This list, keeping its names' hashes for the list it will be appended to.
    pub fn keeping_hashes(mut self) -> Self {
        self.hashes = Some(Vec::with_capacity(self.nodes.capacity()));
        self
    }

    /// Appends the nodes another thread read after this list's last node (their ids start at 0),
    /// as if this list had read them: ids shifted, names indexed (a name already taken is a
    /// duplicate), tags taken from this list, problems kept in reading order. Each step is a pass
    /// of its own over the appended nodes: these are cold, and a pass streams through them.
    pub fn append(&mut self, tail: NodeList) {
        let base = self.nodes.len() as u32;
        let mut nodes = tail.nodes;
        if !tail.tags.is_empty() {
            for node in &mut nodes {
                node.stock_tag = node.stock_tag.take().map(|t| intern(&mut self.tags, &t));
            }
        }
        self.outputs.extend(tail.outputs.iter().map(|o| o + base));
        if let Some(p) = tail.placeholder_reading {
            self.placeholder_reading.get_or_insert(p + base);
        }
        if let Some(g) = tail.getitem_not_of_one {
            self.getitem_not_of_one.get_or_insert(g + base);
        }
        self.ops.extend_from_slice(&tail.ops);
        self.value_bytes.extend_from_slice(&tail.value_bytes);
        self.refused.extend(tail.refused.iter().map(|r| r + base));
        (self.unsized_values).extend(
            tail.unsized_values
                .into_iter()
                .map(|(n, why)| (n + base, why)),
        );
        self.pending.extend(
            tail.pending
                .into_iter()
                .map(|(node, name)| (node + base, name)),
        );
        move_shifted(&mut self.nodes, nodes, base);
        // The first problem in reading order: this list's own, else the tail's first malformed
        // reference or first duplicate name, whichever node comes first (a node's references are
        // read before its name is indexed). The tail's duplicates among its own nodes are found
        // again here, against the whole list.
        let bad_reference = match tail.problem {
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
        // Each name's slot fetched a few names ahead of inserting it: the table is far larger
        // than the caches.
        const AHEAD: usize = 8;
        // The second thread keeps them as it reads; recomputed for a list that did not.
        let hashes = tail
            .hashes
            .filter(|h| h.len() == self.nodes.len() - base as usize)
            .unwrap_or_else(|| {
                (self.nodes[base as usize..].iter())
                    .map(|n| self.names.hash(&n.name))
                    .collect()
            });
        for (i, &hash) in (base as usize..).zip(&hashes) {
            if let Some(&later) = hashes.get(i - base as usize + AHEAD) {
                self.names.prefetch(later);
            }
            if let Err(first) = self.names.insert(&self.nodes, NodeId(i as u32), hash)
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
        if node.is_getitem() && !getitem_of_one(&node) && !node.inputs.contains(&UNRESOLVED) {
            self.getitem_not_of_one.get_or_insert(id.0);
        }
        if node.conversion.as_ref().is_some_and(|c| !c.converts) {
            self.refused.push(id.0);
        }
        self.ops.push(node.op);
        let bytes = node.meta.bytes();
        if bytes.is_none()
            && let Some(why) = node.meta.why_unsized()
        {
            self.unsized_values.push((id.0, why));
        }
        self.value_bytes.push(bytes);
        let hash = self.names.hash(&node.name);
        self.nodes.push(node);
        if let Some(hashes) = &mut self.hashes {
            hashes.push(hash);
        }
        if let Err(first) = self.names.insert(&self.nodes, id, hash) {
            self.problem(Problem::Duplicate {
                first: first.index(),
                second: id.index(),
            });
        }
    }

    /// `s` stored once for every node that names it: an operator target, a dtype.
    pub fn symbol(&mut self, s: &str) -> Symbol {
        intern(&mut self.symbols, s)
    }

    /// `dims` as a shape shared with every node of the same shape.
    pub fn shape(&mut self, dims: &[Dim]) -> Arc<[Dim]> {
        if let Some(shape) = self.shapes.get(dims) {
            return shape.clone();
        }
        let shape: Arc<[Dim]> = dims.into();
        self.shapes.insert(shape.clone());
        shape
    }

    /// Keeps `p` unless an earlier node already has a problem: import reports the first.
    pub fn problem(&mut self, p: Problem) {
        self.problem.get_or_insert(p);
    }
}

/// Below this many nodes (about 2 MB) a list is moved on one thread: starting a second costs
/// about a tenth of a millisecond here.
const MOVE_ON_TWO_THREADS_FROM: usize = 10_000;

/// Moves `from`'s nodes to the end of `to`, every reference they hold shifted by `base` (their
/// ids counted from `to`'s end), on two threads for a long list: most of the time is the first
/// touch of `to`'s fresh memory, page by page, which two cores share.
#[allow(unsafe_code)] // nodes moved bit for bit into spare capacity
fn move_shifted(to: &mut Vec<Node>, mut from: Vec<Node>, base: u32) {
    let shift = |node: &mut Node| {
        for_each_reference(node, |id| {
            if *id != UNRESOLVED {
                id.0 += base;
            }
        });
        for id in node.inputs.iter_mut().filter(|id| **id != UNRESOLVED) {
            id.0 += base;
        }
    };
    // A few hundred nodes at a time, shifted then copied while in cache.
    let copy = |src: &mut [Node], dst: &mut [MaybeUninit<Node>]| {
        for (src, dst) in src.chunks_mut(256).zip(dst.chunks_mut(256)) {
            src.iter_mut().for_each(shift);
            // SAFETY: `dst` is as long as `src` and in another allocation; the nodes are copied bit
            // for bit, and `from` forgets them once every copy is made (below).
            unsafe {
                std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast(), src.len());
            }
        }
    };
    let n = from.len();
    to.reserve(n);
    let spare = &mut to.spare_capacity_mut()[..n];
    if n >= MOVE_ON_TWO_THREADS_FROM && two_cores() {
        let (src_first, src_second) = from.split_at_mut(n / 2);
        let (dst_first, dst_second) = spare.split_at_mut(n / 2);
        std::thread::scope(|scope| {
            let second = scope.spawn(|| copy(src_second, dst_second));
            copy(src_first, dst_first);
            join(second);
        });
    } else {
        copy(&mut from, spare);
    }
    // SAFETY: `to`'s next `n` slots now hold `from`'s nodes, each initialised by a copy above; a
    // panic before this point leaves them owned by `from` alone.
    unsafe {
        from.set_len(0);
        to.set_len(to.len() + n);
    }
}

/// Whether a getitem node reads one node, as a getitem must: it indexes the output of one
/// multi-output op.
pub(super) fn getitem_of_one(node: &Node) -> bool {
    node.inputs.len() == 1
}

/// `s` as stored in `set`, stored there first if it is new.
pub(super) fn intern(set: &mut HashSet<Symbol>, s: &str) -> Symbol {
    if let Some(sym) = set.get(s) {
        return sym.clone();
    }
    let sym: Symbol = s.into();
    set.insert(sym.clone());
    sym
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
    pub fn enter(&mut self) {
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
    }

    pub fn leave(&mut self) {
        self.depth -= 1;
    }
}
