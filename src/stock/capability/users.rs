//! A fresh node's users grouped by partition, for "all users but one partition's" in a few word
//! operations.

use crate::graph::NodeId;
use crate::stock::rows::{Rows, or_into};

/// Users past which a fresh node's users are grouped by partition rather than read per offer.
pub(super) const MANY_USERS: usize = 16;

/// Sets of a node's users by the partition holding them (`None`: in none), with the union of the
/// groups before and after each, so that "all but one group" is two unions.
pub(super) struct UsersByPartition {
    keys: Vec<Option<u32>>,
    /// `before[i]` is the union of groups `0..i`, `after[i]` of groups `i..`; each `(reach, claim)`.
    before: Vec<(Vec<u64>, Vec<u64>)>,
    after: Vec<(Vec<u64>, Vec<u64>)>,
}

impl UsersByPartition {
    pub(super) fn new(users: &[NodeId], assignment: &[Option<u32>], rows: &Rows) -> Self {
        let mut by_key: Vec<(Option<u32>, NodeId)> =
            users.iter().map(|&u| (assignment[u.index()], u)).collect();
        by_key.sort_unstable();
        let mut keys = Vec::new();
        let mut sets: Vec<(Vec<u64>, Vec<u64>)> = Vec::new();
        for group in by_key.chunk_by(|x, y| x.0 == y.0) {
            keys.push(group[0].0);
            sets.push(rows.union(group.iter().map(|(_, u)| u.index())));
        }
        let empty = || (vec![0; rows.words()], vec![0; rows.words()]);
        let mut before = vec![empty()];
        for (reach, claim) in &sets {
            let (mut r, mut c) = before[before.len() - 1].clone();
            or_into(&mut r, reach);
            or_into(&mut c, claim);
            before.push((r, c));
        }
        let mut after = vec![empty()];
        for (reach, claim) in sets.iter().rev() {
            let (mut r, mut c) = after[after.len() - 1].clone();
            or_into(&mut r, reach);
            or_into(&mut c, claim);
            after.push((r, c));
        }
        after.reverse();
        UsersByPartition {
            keys,
            before,
            after,
        }
    }

    /// The union of the users not held by partition `excluded`.
    pub(super) fn all_but(&self, excluded: u32) -> (Vec<u64>, Vec<u64>) {
        let i = self.keys.partition_point(|&k| k < Some(excluded));
        let skip = usize::from(self.keys.get(i) == Some(&Some(excluded)));
        let (mut reach, mut claim) = self.before[i].clone();
        or_into(&mut reach, &self.after[i + skip].0);
        or_into(&mut claim, &self.after[i + skip].1);
        (reach, claim)
    }
}
