//! torch.fx's `CapabilityBasedPartitioner.propose_partitions`, as `CoreMLPartitioner` runs it
//! (single-node partitions allowed, horizontal fusion on, no non-compute ops), reproduced decision
//! for decision in near-linear time.
//!
//! The fx pass visits nodes in reverse order. A supported node starts a partition of its own; then
//! the new partition (or, at an unsupported node, the oldest one) tries to absorb every partition
//! in order of creation, one after another. A merge is refused when a user of the two partitions
//! outside them reaches back into them (a cycle), or reaches a partition whose record of
//! "partitions downstream of me" names one of the two. That record (`partition_map` in fx) is
//! updated only when its own partition is created or merges: it can miss partitions it reaches
//! through later merges, and the refusals follow it exactly as it is, stale or not.
//!
//! Where fx keeps a descendant set per node and walks it for every merge it tries, this keeps, for
//! every visited node, the set of live partitions it reaches (a few bits: partitions are few),
//! relabelled when partitions merge; a refused merge stays refused until one of the two absorbs
//! a partition other than the one just created, which is what lets the pass skip the retries fx
//! makes at every node. After the pass, `getitem`s join their producer's partition, as fx does.

use crate::digraph::DirectedGraph;
use crate::graph::NodeId;
use std::collections::BTreeMap;

/// One partition of the pass: fx's `Partition` with the bookkeeping fx keeps beside it.
struct Partition {
    /// fx's `partitions_order`: the smallest creation number merged into it.
    order: u32,
    members: Vec<NodeId>,
    /// Users of the members outside the partition (fx's `partition_users`).
    users: Vec<NodeId>,
    /// fx's `partition_map`: partitions recorded as downstream, as slots of live partitions.
    downstream: Vec<u64>,
    /// Where this partition's bit sits in every slot set.
    slot: usize,
    /// The node its oldest part was created at: only nodes visited since can reach it.
    first_node: usize,
    /// Partitions a merge with was refused, as slots. A refusal holds until one of the two absorbs
    /// a partition other than the one just created (see `Pass::absorb`).
    refused: Vec<u64>,
}

/// Each node's partition number as fx assigns it (`tag{number}` in `CoreMLPartitioner`), or
/// `None` for a node left out. `supported` answers `is_node_supported` for every node; nodes are
/// taken in `graph`'s numbering, which must be the program's node order.
pub fn propose_partitions<G: DirectedGraph>(
    graph: &G,
    supported: impl Fn(NodeId) -> bool,
    getitem: impl Fn(NodeId) -> bool,
) -> Vec<Option<u32>> {
    let mut pass = Pass::new(graph.node_count());
    let mut merged_at_last_node = false;
    for i in (0..graph.node_count()).rev() {
        let v = NodeId(i as u32);
        pass.at = i;
        let created = supported(v).then(|| pass.create(graph, v));
        pass.record_reach(graph, v, created);
        // With nothing created here and nothing merged at the node before, fx's round of merges
        // would try exactly what the last round tried, against the same state: skip it.
        if created.is_some() || merged_at_last_node {
            merged_at_last_node = pass.merge_round(v, created);
        }
    }
    pass.getitems_join_producers(graph, getitem);
    pass.assignment
}

/// The partition created at the current node, with what its users reach (see `Pass::fresh`).
struct Fresh {
    id: u32,
    node: NodeId,
    reach: Vec<u64>,
    claimed: Vec<u64>,
}

struct Pass {
    assignment: Vec<Option<u32>>,
    /// By number; `None` once merged away (or for numbers not yet given).
    partitions: Vec<Option<Partition>>,
    /// Live partitions by `order`: the order fx tries merges in.
    by_order: BTreeMap<u32, u32>,
    next_id: u32,
    /// Slot sets are `words` u64s long; slots are reused once their partition has merged away.
    words: usize,
    /// For each visited node, the live partitions holding it or one of its descendants.
    reach: Vec<u64>,
    slot_owner: Vec<Option<u32>>,
    /// The slots of live partitions.
    live: Vec<u64>,
    /// The node being visited.
    at: usize,
    free_slots: Vec<usize>,
}

fn has(set: &[u64], slot: usize) -> bool {
    set.get(slot / 64)
        .is_some_and(|w| w & (1 << (slot % 64)) != 0)
}

fn put(set: &mut [u64], slot: usize) {
    set[slot / 64] |= 1 << (slot % 64);
}

fn take(set: &mut [u64], slot: usize) {
    set[slot / 64] &= !(1 << (slot % 64));
}

fn or_into(into: &mut [u64], from: &[u64]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a |= b;
    }
}

fn slots(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
    set.iter().enumerate().flat_map(|(w, &bits)| {
        let mut bits = bits;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                w * 64 + b
            })
        })
    })
}

impl Pass {
    fn new(n: usize) -> Self {
        Pass {
            assignment: vec![None; n],
            partitions: Vec::new(),
            by_order: BTreeMap::new(),
            next_id: 0,
            words: 1,
            reach: vec![0; n],
            slot_owner: Vec::new(),
            live: vec![0],
            at: n,
            free_slots: Vec::new(),
        }
    }

    fn part(&self, id: u32) -> Option<&Partition> {
        self.partitions.get(id as usize)?.as_ref()
    }

    fn reach_of(&self, n: NodeId) -> &[u64] {
        &self.reach[n.index() * self.words..(n.index() + 1) * self.words]
    }

    /// A free slot, widening every slot set when all are taken.
    fn allocate_slot(&mut self, owner: u32) -> usize {
        if let Some(slot) = self.free_slots.pop() {
            self.slot_owner[slot] = Some(owner);
            put(&mut self.live, slot);
            return slot;
        }
        let slot = self.slot_owner.len();
        if slot == self.words * 64 {
            let (old, new) = (self.words, self.words * 2);
            let nodes = self.reach.len() / old;
            let mut reach = vec![0; nodes * new];
            for (row, chunk) in self.reach.chunks(old).enumerate() {
                reach[row * new..row * new + old].copy_from_slice(chunk);
            }
            self.reach = reach;
            for &id in self.by_order.values() {
                if let Some(p) = self.partitions[id as usize].as_mut() {
                    p.downstream.resize(new, 0);
                    p.refused.resize(new, 0);
                }
            }
            self.live.resize(new, 0);
            self.words = new;
        }
        self.slot_owner.push(Some(owner));
        put(&mut self.live, slot);
        slot
    }

    /// The live partitions holding one of `nodes` or a descendant of one.
    fn reached_from(&self, nodes: &[NodeId]) -> Vec<u64> {
        let mut set = vec![0; self.words];
        for &u in nodes {
            or_into(&mut set, self.reach_of(u));
        }
        set
    }

    /// fx's `downstream_partitions`: the partitions `reached` names, and those their records name.
    fn downstream_of(&self, reached: &[u64]) -> Vec<u64> {
        let mut set = reached.to_vec();
        for slot in slots(reached) {
            if let Some(p) = self.slot_owner[slot].and_then(|id| self.part(id)) {
                or_into(&mut set, &p.downstream);
            }
        }
        set
    }

    /// A partition of its own for supported node `v`.
    fn create(&mut self, graph: &impl DirectedGraph, v: NodeId) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        let slot = self.allocate_slot(id);
        let users = graph.successors(v).to_vec();
        let mut downstream = self.downstream_of(&self.reached_from(&users));
        take(&mut downstream, slot);
        self.assignment[v.index()] = Some(id);
        self.by_order.insert(id, id);
        self.partitions.push(Some(Partition {
            order: id,
            members: vec![v],
            users,
            downstream,
            slot,
            first_node: v.index(),
            refused: vec![0; self.words],
        }));
        id
    }

    /// `v`'s reach: its successors' (all visited already) and its own partition's.
    fn record_reach(&mut self, graph: &impl DirectedGraph, v: NodeId, own: Option<u32>) {
        let mut set = self.reached_from(graph.successors(v));
        if let Some(p) = own.and_then(|id| self.part(id)) {
            put(&mut set, p.slot);
        }
        let w = self.words;
        self.reach[v.index() * w..(v.index() + 1) * w].copy_from_slice(&set);
    }

    /// One round of fx's merges at a node: `created` (if any) first, then every live partition by
    /// `order`, each offered to the partition absorbing them. Whether any merge happened.
    ///
    /// fx offers every partition; offering one that is surely refused changes nothing, so only the
    /// others are offered, found with a few word operations: those the absorbing partition has not
    /// been refused by since it last changed, and, while it is the one-node partition just created,
    /// those its node's users do not surely reach (`refused_to_fresh`).
    fn merge_round(&mut self, v: NodeId, created: Option<u32>) -> bool {
        let Some(first) = created.or_else(|| self.by_order.values().next().copied()) else {
            return false;
        };
        let fresh = created.and_then(|id| self.fresh(id, v, None));
        let mut absorbing = first;
        // The order of the last partition offered: the round's list is fixed at its start, sorted
        // by order, and merges only ever remove from it what was already offered.
        let mut past: Option<u32> = None;
        let mut merged = false;
        'offers: loop {
            for (order, other) in self.worth_offering(absorbing, first, fresh.as_ref(), past) {
                past = Some(order);
                if absorbing == first && self.refused_to_fresh(fresh.as_ref(), other) {
                    continue;
                }
                if let Some(into) = self.try_merge(absorbing, other, created) {
                    absorbing = into;
                    merged = true;
                    // What is surely refused has changed with the absorbing partition.
                    continue 'offers;
                }
            }
            return merged;
        }
    }

    /// The live partitions after order `past` that `absorbing` may not surely be refused by, with
    /// their orders, in order; never `first`.
    fn worth_offering(
        &self,
        absorbing: u32,
        first: u32,
        fresh: Option<&Fresh>,
        past: Option<u32>,
    ) -> Vec<(u32, u32)> {
        let Some(a) = self.part(absorbing) else {
            return Vec::new();
        };
        let mut skip = a.refused.clone();
        put(&mut skip, a.slot);
        if let Some(f) = self.part(first) {
            put(&mut skip, f.slot);
        }
        if let Some(fresh) = fresh.filter(|f| f.id == absorbing && a.members.len() == 1) {
            or_into(&mut skip, &fresh.reach);
            or_into(&mut skip, &fresh.claimed);
            // Partitions holding one of the node's users are judged without that user.
            for u in &a.users {
                if let Some(p) = self.assignment[u.index()].and_then(|id| self.part(id)) {
                    take(&mut skip, p.slot);
                }
            }
        }
        let open: Vec<u64> = (self.live.iter().zip(&skip))
            .map(|(live, skip)| live & !skip)
            .collect();
        let mut offers: Vec<(u32, u32)> = slots(&open)
            .filter_map(|slot| {
                let id = self.slot_owner[slot]?;
                let order = self.part(id)?.order;
                past.is_none_or(|past| order > past).then_some((order, id))
            })
            .collect();
        offers.sort_unstable();
        offers
    }

    /// What the partition just created at `v` reaches through its users (outside `excluded`),
    /// and the partitions the records of those name. Without exclusion that is `v`'s own reach
    /// and the record `create` just made.
    fn fresh(&self, id: u32, v: NodeId, excluded: Option<u32>) -> Option<Fresh> {
        let p = self.part(id)?;
        if excluded.is_none() {
            let mut reach = self.reach_of(v).to_vec();
            take(&mut reach, p.slot);
            return Some(Fresh {
                id,
                node: v,
                reach,
                claimed: p.downstream.clone(),
            });
        }
        let users: Vec<NodeId> = (p.users.iter())
            .filter(|u| self.assignment[u.index()] != excluded)
            .copied()
            .collect();
        let reach = self.reached_from(&users);
        let claimed = self.downstream_of(&reach);
        Some(Fresh {
            id,
            node: v,
            reach,
            claimed,
        })
    }

    /// A sure refusal of merging the partition just created, still one node, with `other`,
    /// without the users of `other`: the node's own users reach `other`, or reach a partition whose
    /// record names `other`. The full check would find the same cycle; this finds it in a few
    /// word operations, where fx's retries of every partition at every new node cost the most.
    fn refused_to_fresh(&self, fresh: Option<&Fresh>, other: u32) -> bool {
        let (Some(fresh), Some(p)) = (fresh, self.part(other)) else {
            return false;
        };
        let Some(own) = self.part(fresh.id).filter(|own| own.members.len() == 1) else {
            return false;
        };
        let in_other = |u: &NodeId| self.assignment[u.index()] == Some(other);
        let sure = |f: &Fresh| has(&f.reach, p.slot) || has(&f.claimed, p.slot);
        if own.users.iter().any(in_other) {
            self.fresh(fresh.id, fresh.node, Some(other))
                .is_some_and(|f| sure(&f))
        } else {
            sure(fresh)
        }
    }

    /// fx's `maybe_merge_partition`: the surviving partition, or `None` when refused.
    fn try_merge(&mut self, a: u32, b: u32, created: Option<u32>) -> Option<u32> {
        let (pa, pb) = (self.part(a)?, self.part(b)?);
        let (slot_a, slot_b) = (pa.slot, pb.slot);
        let a_is_smaller = pa.members.len() < pb.members.len();
        if has(&pa.refused, slot_b) {
            return None;
        }
        let inside = |u: &NodeId| matches!(self.assignment[u.index()], Some(p) if p == a || p == b);
        let mut users: Vec<NodeId> = (pa.users.iter().chain(&pb.users))
            .filter(|u| !inside(u))
            .copied()
            .collect();
        users.sort_unstable();
        users.dedup();
        let reached = self.reached_from(&users);
        // A cycle: the users reach back into a or b, or reach a partition whose record says it
        // reaches a or b.
        let cycle = has(&reached, slot_a)
            || has(&reached, slot_b)
            || slots(&reached).any(|s| {
                let p = self.slot_owner[s].and_then(|id| self.part(id));
                p.is_some_and(|p| has(&p.downstream, slot_a) || has(&p.downstream, slot_b))
            });
        if cycle {
            if let Some(p) = self.partitions[a as usize].as_mut() {
                put(&mut p.refused, slot_b);
            }
            if let Some(p) = self.partitions[b as usize].as_mut() {
                put(&mut p.refused, slot_a);
            }
            return None;
        }
        // The smaller merges into the larger; on a tie, into `a`.
        let (into, gone) = if a_is_smaller { (b, a) } else { (a, b) };
        let gone = self
            .partitions
            .get_mut(gone as usize)?
            .take()
            .map(|p| (gone, p))?;
        self.absorb(into, gone, users, created);
        Some(into)
    }

    fn absorb(
        &mut self,
        into: u32,
        (gone_id, gone): (u32, Partition),
        users: Vec<NodeId>,
        created: Option<u32>,
    ) {
        for &m in &gone.members {
            self.assignment[m.index()] = Some(into);
        }
        self.by_order.remove(&gone.order);
        let Some(slot) = self.part(into).map(|p| p.slot) else {
            return;
        };
        // Every node reaching the partition gone now reaches the one it merged into. Only nodes
        // visited since its oldest part was created can reach it: for the partition created at
        // this node, that is this node alone.
        let w = self.words;
        for n in self.at..=gone.first_node {
            let row = &mut self.reach[n * w..(n + 1) * w];
            if has(row, gone.slot) {
                take(row, gone.slot);
                put(row, slot);
            }
        }
        // Absorbing the partition just created only adds users and reach, so refusals involving
        // `into` still hold; absorbing an older one can remove the path that caused them.
        let absorbed_fresh = created == Some(gone_id);
        // fx deletes the record of the partition gone; records still naming it never match again.
        // Its slot is freed for reuse, so nothing may keep naming it.
        for &id in self.by_order.values() {
            if let Some(p) = self.partitions[id as usize].as_mut() {
                take(&mut p.downstream, gone.slot);
                take(&mut p.refused, gone.slot);
                if !absorbed_fresh {
                    take(&mut p.refused, slot);
                }
            }
        }
        self.slot_owner[gone.slot] = None;
        take(&mut self.live, gone.slot);
        self.free_slots.push(gone.slot);
        let mut downstream = self.downstream_of(&self.reached_from(&users));
        let Some(p) = self
            .partitions
            .get_mut(into as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        if p.order > gone.order {
            self.by_order.remove(&p.order);
            p.order = gone.order;
            self.by_order.insert(p.order, into);
        }
        p.first_node = p.first_node.max(gone.first_node);
        or_into(&mut downstream, &gone.downstream);
        or_into(&mut p.downstream, &downstream);
        take(&mut p.downstream, p.slot);
        p.members.extend(gone.members);
        p.users = users;
        if !absorbed_fresh {
            p.refused.fill(0);
        }
    }

    /// fx's post-processing: a node all of whose users are `getitem`s takes them into its
    /// partition (or out of any, when it has none), repeated until nothing moves.
    fn getitems_join_producers(
        &mut self,
        graph: &impl DirectedGraph,
        getitem: impl Fn(NodeId) -> bool,
    ) {
        // Each round moves getitems one level further down nested getitems: at most n rounds.
        for _ in 0..=graph.node_count() {
            let mut moves: Vec<(NodeId, Option<u32>)> = Vec::new();
            for i in 0..graph.node_count() {
                let n = NodeId(i as u32);
                let users = graph.successors(n);
                if !users.iter().all(|&u| getitem(u)) {
                    continue;
                }
                let id = self.assignment[i];
                for &u in users {
                    if self.assignment[u.index()] != id {
                        moves.push((u, id));
                    }
                }
            }
            if moves.is_empty() {
                return;
            }
            for (n, id) in moves {
                self.assignment[n.index()] = id;
            }
        }
    }
}
