//! The index from a node's name to its id that import fills and `Graph::find` reads. Hand-written
//! rather than hashbrown's `HashTable<u32>` fed the same precomputed hashes, because it wins
//! clearly where it matters (2026-12-07, a generated 10^6-node document): importing it took 1.25×
//! as long with `HashTable` (620 against 495 ms in-process, `examples/parse_only`), the whole
//! `plan` process 1.08× (15 pairs, `farm-bench`); at 10^5 nodes and on Qwen3.5 the two are level.

use super::{Node, NodeId};
use hashbrown::DefaultHashBuilder;
use std::hash::BuildHasher;
use std::sync::OnceLock;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{OpKind, TensorMeta};
    use smallvec::SmallVec;

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
}
