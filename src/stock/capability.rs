//! torch.fx's `CapabilityBasedPartitioner.propose_partitions`, as `CoreMLPartitioner` runs it
//! (single-node partitions allowed, horizontal fusion on, no non-compute ops), reproduced decision
//! for decision without its per-node descendant sets.
//!
//! The fx pass visits nodes in reverse order. A supported node starts a partition of its own; then
//! the new partition (or, at an unsupported node, the oldest one) is offered every partition in
//! order of creation, one after another, absorbing those it can. A merge is refused when a user of
//! the two partitions outside them reaches back into them (a cycle), or reaches a partition whose
//! record of "partitions downstream of me" names one of the two. That record (`partition_map` in
//! fx) is updated only when its own partition is created or merges: it can miss partitions reached
//! through later merges, and refusals follow it exactly as it is, stale or not.
//!
//! Here every node visited keeps two sets of live partitions (a few words of bits, partitions
//! being few): `reach`, those holding it or a descendant, and `claimed`, those plus what their
//! records name. A merge is refused exactly when the users' `claimed` names either partition, so a
//! check costs a few word operations per user. A refused merge stays refused until one of the two
//! absorbs a partition other than the one just created, which lets the pass skip the retries fx
//! makes at every node. Sets are relabelled when partitions merge, and kept only for nodes that a
//! later node or a partition's users may still ask about. After the pass, `getitem`s join their
//! producer's partition, as fx does.

use super::rows::{Rows, has, or_into, put, slots};
use crate::digraph::Adjacency;
use crate::graph::NodeId;
use by_number::ByNumber;
use hashbrown::HashSet;
use smallvec::{SmallVec, smallvec};
use std::borrow::Cow;
use users::{MANY_USERS, UsersByPartition};

/// One partition of the pass: fx's `Partition` with the bookkeeping fx keeps beside it.
struct Partition {
    /// fx's `partitions_order`: the smallest creation number merged into it.
    order: u32,
    /// Inline while few: most partitions are one node absorbed at the next merge.
    members: SmallVec<[NodeId; 2]>,
    /// Users of the members outside the partition (fx's `partition_users`).
    users: HashSet<NodeId>,
    /// The union of the users' sets, `reach` and `claimed`, kept as theirs change.
    users_reach: Vec<u64>,
    users_claim: Vec<u64>,
    /// fx's `partition_map`: partitions recorded as downstream, as slots of live partitions.
    downstream: Vec<u64>,
    /// Where this partition's bit sits in every slot set.
    slot: usize,
    /// Partitions a merge with was refused, as slots. A refusal holds until one of the two absorbs
    /// a partition other than the one just created (see `Pass::absorb`).
    refused: Vec<u64>,
    /// How much of the merge log (`Rows::log`) its sets have followed: they are brought up to
    /// date when the partition is offered or absorbs (`Pass::catch_up`).
    seen: usize,
}

/// Each node's partition number as fx assigns it (`tag{number}` in `CoreMLPartitioner`), or
/// `None` for a node left out. `order` is the program's node order (a topological one);
/// `supported` answers `is_node_supported`.
pub fn propose_partitions<G: Adjacency<Node = NodeId>>(
    graph: &G,
    order: &[NodeId],
    supported: impl Fn(NodeId) -> bool,
    getitem: impl Fn(NodeId) -> bool,
) -> Vec<Option<u32>> {
    let n = graph.node_count();
    // A node's sets are asked for by its predecessors that compute sets: those that are supported
    // or have such a predecessor. Nodes outside (placeholders, what only they feed) need none.
    let mut computes = vec![false; n];
    for &v in order {
        computes[v.index()] =
            supported(v) || (graph.predecessors(v).iter()).any(|q| computes[q.index()]);
    }
    let mut pass = Pass::new(n);
    for &v in order {
        if computes[v.index()] {
            for &s in graph.successors(v) {
                pass.asked[s.index()] += 1;
            }
        }
    }
    let mut merged_at_last_node = false;
    for &v in order.iter().rev() {
        let created = if computes[v.index()] {
            pass.visit(graph, v, supported(v))
        } else {
            None
        };
        // With nothing created here and nothing merged at the node before, fx's round of merges
        // would try exactly what the last round tried, against the same state: skip it.
        if created.is_some() || merged_at_last_node {
            merged_at_last_node = pass.merge_round(created);
        }
    }
    pass.getitems_join_producers(graph, order, getitem);
    pass.assignment
}

/// A side's users' sets in a merge: those `computed`, or else the side's union kept, borrowed
/// (most offers are refused, and need no copy).
type Sets<'p> = (Cow<'p, [u64]>, Cow<'p, [u64]>);

/// The slots an absorbing partition may be offered, a word at a time: live, not refused, and,
/// while it is a fresh node alone, not claimed by its node's users (less those `spared`: slots
/// holding a user, judged without it). A set shorter than `live` counts as zeros past its end.
struct Offerable<'p> {
    live: &'p [u64],
    refused: &'p [u64],
    claimed: &'p [u64],
    spared: &'p [u64],
}

impl Offerable<'_> {
    fn bits(&self, word: usize) -> u64 {
        let at = |set: &[u64]| set.get(word).copied().unwrap_or(0);
        at(self.live) & !(at(self.refused) | at(self.claimed) & !at(self.spared))
    }

    /// The first word at or after `from` with a slot to offer. A round ends by passing every word
    /// after its last offer, most of them empty: they are passed in blocks, in straight-line code
    /// the compiler vectorizes.
    fn first_word(&self, from: usize) -> Option<usize> {
        const BLOCK: usize = 8;
        let n = self.live.len();
        let mut w = from.min(n);
        let sets = [self.live, self.refused, self.claimed, self.spared];
        if sets.iter().all(|set| set.len() >= n) {
            while w + BLOCK <= n {
                let [l, r, c, s] = sets.map(|set| &set[w..w + BLOCK]);
                let any = (0..BLOCK).fold(0, |any, i| any | l[i] & !(r[i] | c[i] & !s[i]));
                if any != 0 {
                    break;
                }
                w += BLOCK;
            }
        }
        (w..n).find(|&w| self.bits(w) != 0)
    }
}

/// A side's set to keep: a copy from the pool if it was borrowed.
fn owned(rows: &Rows, set: Cow<'_, [u64]>) -> Vec<u64> {
    match set {
        Cow::Owned(set) => set,
        Cow::Borrowed(kept) => rows.copy_of(kept),
    }
}

/// A side's set no longer needed: back to the pool if it was computed for the offer.
fn recycle(rows: &Rows, set: Cow<'_, [u64]>) {
    if let Cow::Owned(set) = set {
        rows.recycle(set);
    }
}

fn computed_or_kept(p: &Partition, computed: Option<(Vec<u64>, Vec<u64>)>) -> Sets<'_> {
    match computed {
        Some((reach, claimed)) => (Cow::Owned(reach), Cow::Owned(claimed)),
        None => (Cow::Borrowed(&p.users_reach), Cow::Borrowed(&p.users_claim)),
    }
}

/// The partition created at the current node while it is that node alone, with what the node's
/// users reach and claim: merging it with a partition they name is surely refused.
struct Fresh {
    id: u32,
    users: Vec<NodeId>,
    claimed: Vec<u64>,
    /// The slots of the partitions holding the node's users.
    user_slots: Vec<u64>,
    /// The node's users grouped by the partition holding them, for the union of all users but
    /// one partition's in a few word operations (a node feeding every layer is offered to most);
    /// made on first need, for nodes with many users.
    groups: std::cell::OnceCell<UsersByPartition>,
}

struct Pass {
    assignment: Vec<Option<u32>>,
    /// By number; none once merged away.
    partitions: ByNumber,
    rows: Rows,
    /// Per node: predecessors still to visit that will ask for its sets, plus partitions listing
    /// it among their users. At zero its row retires.
    asked: Vec<u32>,
    /// Each slot's partition, `None` for a hole. Slots follow `order`: a partition's slot is below
    /// every later partition's, so "the next partition in fx's order" is the next set bit.
    slot_owner: Vec<Option<u32>>,
    /// Slots below the top whose partition merged away.
    holes: usize,
    /// The slots of live partitions.
    live: Vec<u64>,
    fresh: Option<Fresh>,
    /// Emptied user sets of partitions merged away, for reuse by new partitions.
    spare_users: Vec<HashSet<NodeId>>,
}

impl Pass {
    fn new(n: usize) -> Self {
        Pass {
            assignment: vec![None; n],
            partitions: ByNumber::default(),
            rows: Rows::new(n),
            asked: vec![0; n],
            slot_owner: Vec::new(),
            holes: 0,
            live: vec![0],
            fresh: None,
            spare_users: Vec::new(),
        }
    }

    fn part(&self, id: u32) -> Option<&Partition> {
        self.partitions.get(id)
    }

    fn part_mut(&mut self, id: u32) -> Option<&mut Partition> {
        self.partitions.get_mut(id)
    }

    /// The live partitions in fx's order (their slots' order).
    fn live_ids(&self) -> Vec<u32> {
        slots(&self.live)
            .filter_map(|slot| self.slot_owner.get(slot).copied().flatten())
            .collect()
    }

    /// The slots of the partitions holding any of `nodes`.
    fn slots_holding(&self, nodes: &[NodeId]) -> Vec<u64> {
        let mut set = self.rows.empty_set();
        for u in nodes {
            if let Some(p) = self.assignment[u.index()].and_then(|id| self.part(id)) {
                put(&mut set, p.slot);
            }
        }
        set
    }

    /// One less reason to keep `node`'s row.
    fn unask(&mut self, node: NodeId) {
        let asked = &mut self.asked[node.index()];
        *asked = asked.saturating_sub(1);
        if *asked == 0 {
            self.rows.retire(node.index());
        }
    }

    /// Visits `v`: its sets from its successors' (all visited), and a partition of its own when
    /// supported, which is returned.
    fn visit(
        &mut self,
        graph: &impl Adjacency<Node = NodeId>,
        v: NodeId,
        supported: bool,
    ) -> Option<u32> {
        let users = graph.successors(v);
        if !supported {
            // No partition here: the sets are needed only as a row, and only if asked for.
            if self.asked[v.index()] > 0 {
                self.rows
                    .hold_union(v.index(), users.iter().map(|u| u.index()));
            }
            for &u in users {
                self.unask(u);
            }
            return None;
        }
        // The slot first: making room may renumber the sets read next.
        let id = self.partitions.len() as u32;
        let slot = self.allocate_slot(id);
        let (reach, claimed) = self.rows.union(users.iter().map(|u| u.index()));
        // fx's `_update_partition_map`: what the node's users reach and their records name.
        self.fresh = Some(Fresh {
            id,
            users: users.to_vec(),
            claimed: self.rows.copy_of(&claimed),
            user_slots: self.slots_holding(users),
            groups: std::cell::OnceCell::new(),
        });
        self.assignment[v.index()] = Some(id);
        for u in users {
            self.asked[u.index()] += 1;
        }
        if self.asked[v.index()] > 0 {
            // Its row: what its users reach and claim, and its own partition.
            self.rows.hold(v.index(), &reach, &claimed);
            self.rows.put_in(v.index(), slot);
        }
        let users_set = self.users_set(users);
        self.partitions.push(Partition {
            order: id,
            members: smallvec![v],
            users: users_set,
            users_reach: reach,
            users_claim: self.rows.copy_of(&claimed),
            downstream: claimed,
            slot,
            refused: self.rows.empty_set(),
            seen: self.rows.log_len(),
        });
        for &u in users {
            self.unask(u);
        }
        Some(id)
    }

    /// One round of fx's merges at a node: `created` (if any) first, then every live partition by
    /// `order`, each offered to the partition absorbing them. Whether any merge happened.
    ///
    /// Offering a partition that is surely refused changes nothing, so only the others are offered,
    /// found with a few word operations: those the absorbing partition has not been refused by
    /// since it last changed, and, while it is the one-node partition just created, those its
    /// node's users do not claim.
    fn merge_round(&mut self, created: Option<u32>) -> bool {
        if created.is_none() {
            self.end_fresh();
        }
        let oldest = || {
            slots(&self.live)
                .next()
                .and_then(|slot| self.slot_owner[slot])
        };
        let Some(first) = created.or_else(oldest) else {
            return false;
        };
        let mut absorbing = first;
        // The slot of the last partition offered: the round's list is fixed at its start, sorted
        // by order, so the rest lie in slots above it (merges only remove what was offered).
        let mut past: Option<usize> = None;
        let mut merged = false;
        self.catch_up(absorbing);
        while let Some((slot, other)) = self.next_offer(absorbing, first, past) {
            past = Some(slot);
            self.catch_up(other);
            if let Some(into) = self.try_merge(absorbing, other, created) {
                absorbing = into;
                merged = true;
            }
        }
        self.end_fresh();
        merged
    }

    /// A set of `users`, in an emptied set of a partition merged away when there is one.
    fn users_set(&mut self, users: &[NodeId]) -> HashSet<NodeId> {
        let mut set = self.spare_users.pop().unwrap_or_default();
        set.extend(users.iter().copied());
        set
    }

    /// The partition just created is no longer fresh: its sets go back to the rows' pool.
    fn end_fresh(&mut self) {
        if let Some(fresh) = self.fresh.take() {
            self.rows.recycle(fresh.claimed);
            self.rows.recycle(fresh.user_slots);
        }
    }

    /// The fresh partition, if `id` is it and it is still its one node.
    fn fresh_alone(&self, id: u32) -> Option<&Fresh> {
        let fresh = self.fresh.as_ref().filter(|f| f.id == id)?;
        (self.part(id)?.members.len() == 1).then_some(fresh)
    }

    /// The first live partition in a slot above `past` that `absorbing` is not surely refused by,
    /// with its slot; never `first`.
    fn next_offer(&self, absorbing: u32, first: u32, past: Option<usize>) -> Option<(usize, u32)> {
        let a = self.part(absorbing)?;
        let first = self.part(first).map_or(a.slot, |f| f.slot);
        // A partition holding one of the node's users is judged without that user.
        let (claimed, spared) = match self.fresh_alone(absorbing) {
            Some(fresh) => (&fresh.claimed[..], &fresh.user_slots[..]),
            // Claims less themselves: nothing.
            None => (&a.refused[..], &a.refused[..]),
        };
        let offerable = Offerable {
            live: &self.live,
            refused: &a.refused,
            claimed,
            spared,
        };
        let from = past.map_or(0, |p| p + 1);
        let mut word = from / 64;
        while let Some(w) = offerable.first_word(word) {
            let mut open = offerable.bits(w);
            for slot in [a.slot, first] {
                if slot / 64 == w {
                    open &= !(1 << (slot % 64));
                }
            }
            if w == from / 64 {
                open &= u64::MAX << (from % 64);
            }
            if open != 0 {
                let slot = w * 64 + open.trailing_zeros() as usize;
                return Some((slot, self.slot_owner.get(slot).copied().flatten()?));
            }
            word = w + 1;
        }
        None
    }

    /// fx's `maybe_merge_partition`: the surviving partition, or `None` when refused.
    fn try_merge(&mut self, a: u32, b: u32, created: Option<u32>) -> Option<u32> {
        let (pa, pb) = (self.part(a)?, self.part(b)?);
        let (slot_a, slot_b) = (pa.slot, pb.slot);
        if has(&pa.refused, slot_b) {
            return None;
        }
        let inside = |u: &NodeId| matches!(self.assignment[u.index()], Some(p) if p == a || p == b);
        // The users' sets, one side at a time: a side whose users do not reach the other has no
        // user inside it, and its union kept is exact; otherwise its users outside both, read.
        let fresh = self.fresh.as_ref();
        // `None` when the side's union kept will do.
        let computed = |p: &Partition, id: u32, other: u32, other_slot: usize| {
            if let Some(f) = fresh.filter(|f| f.id == id && p.members.len() == 1) {
                if f.users.len() <= MANY_USERS {
                    let outside = f.users.iter().filter(|u| !inside(u));
                    Some(self.rows.union(outside.map(|u| u.index())))
                } else {
                    let groups = f.groups.get_or_init(|| {
                        UsersByPartition::new(&f.users, &self.assignment, &self.rows)
                    });
                    Some(groups.all_but(other))
                }
            } else if has(&p.users_reach, other_slot) {
                let outside = p.users.iter().filter(|u| !inside(u));
                Some(self.rows.union(outside.map(|u| u.index())))
            } else {
                None
            }
        };
        let (reach_a, claimed_a) = computed_or_kept(pa, computed(pa, a, b, slot_b));
        let (reach_b, claimed_b) = computed_or_kept(pb, computed(pb, b, a, slot_a));
        // A cycle: the users reach back into a or b, or reach a partition whose record names one.
        let claims = |slot| has(&claimed_a, slot) || has(&claimed_b, slot);
        if claims(slot_a) || claims(slot_b) {
            for set in [reach_a, claimed_a, reach_b, claimed_b] {
                recycle(&self.rows, set);
            }
            // Not remembered for the partition just created while it is its node alone: its slot
            // is freed without a sweep when it merges.
            if self.fresh_alone(a).is_none() && self.fresh_alone(b).is_none() {
                put(&mut self.part_mut(a)?.refused, slot_b);
                put(&mut self.part_mut(b)?.refused, slot_a);
            }
            return None;
        }
        let (mut reach, mut claimed) = (owned(&self.rows, reach_a), owned(&self.rows, claimed_a));
        or_into(&mut reach, &reach_b);
        or_into(&mut claimed, &claimed_b);
        recycle(&self.rows, reach_b);
        recycle(&self.rows, claimed_b);
        // The smaller merges into the larger; on a tie, into `a`.
        let (into, gone) = if pa.members.len() < pb.members.len() {
            (b, a)
        } else {
            (a, b)
        };
        let gone_partition = self.partitions.take(gone)?;
        let fresh = created == Some(gone) && gone_partition.members.len() == 1;
        self.absorb(into, gone_partition, (reach, claimed), fresh);
        Some(into)
    }

    /// fx's post-processing: a node all of whose users are `getitem`s takes them into its
    /// partition (or out of any, when it has none), repeated until nothing moves.
    fn getitems_join_producers(
        &mut self,
        graph: &impl Adjacency<Node = NodeId>,
        order: &[NodeId],
        getitem: impl Fn(NodeId) -> bool,
    ) {
        // The producers whose users are all getitems (and who have users), found once.
        let producers: Vec<NodeId> = (order.iter().copied())
            .filter(|&n| {
                let users = graph.successors(n);
                !users.is_empty() && users.iter().all(|&u| getitem(u))
            })
            .collect();
        // Each round moves getitems one level further down nested getitems: at most n rounds.
        for _ in 0..=order.len() {
            let mut moves: Vec<(NodeId, Option<u32>)> = Vec::new();
            for &n in &producers {
                let id = self.assignment[n.index()];
                for &u in graph.successors(n) {
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

mod absorb;
mod by_number;
mod slots;
mod users;

#[cfg(test)]
mod tests;
