//! A merge carried out: one partition absorbs another, and every set naming either follows.

use super::{Partition, Pass};
use crate::graph::NodeId;
use crate::stock::rows::{Merge, has, or_into, put, take};

impl Pass {
    /// `into` absorbs `gone`; their users outside both have these sets together. `fresh` when
    /// `gone` is the partition just created, still its node alone: no set but that node's names it.
    pub(super) fn absorb(
        &mut self,
        into: u32,
        mut gone: Partition,
        (users_reach, users_claim): (Vec<u64>, Vec<u64>),
        fresh: bool,
    ) {
        let mut record = self.rows.copy_of(&users_claim);
        for &m in &gone.members {
            self.assignment[m.index()] = Some(into);
        }
        // Its record is read in place, not copied (it is replaced below).
        let Some(absorbing) = self.part(into) else {
            return;
        };
        let (a, into_order) = (absorbing.slot, absorbing.order);
        let g = gone.slot;
        // The merged partition takes the slot of the older of the two, which keeps slots in order.
        let (keep, drop) = if gone.order < into_order {
            (g, a)
        } else {
            (a, g)
        };
        // fx: the record is both records, then what the new users reach and their records name,
        // never the two themselves.
        or_into(&mut record, &absorbing.downstream);
        or_into(&mut record, &gone.downstream);
        take(&mut record, a);
        take(&mut record, g);
        let gained = (record.iter().zip(&absorbing.downstream)).any(|(new, old)| new & !old != 0);
        for set in [
            std::mem::take(&mut gone.downstream),
            std::mem::take(&mut gone.refused),
            std::mem::take(&mut gone.users_reach),
            std::mem::take(&mut gone.users_claim),
        ] {
            self.rows.recycle(set);
        }
        let merge = Merge {
            a,
            g,
            keep,
            gained,
            fresh,
        };
        if fresh && !gained {
            // Only the visited node reaches a fresh partition, and nothing else changes.
            if let Some(&v) = gone.members.first() {
                self.rows.merge_one(v.index(), merge, &record);
            }
        } else {
            // Every row and every other live partition follows when next read; `into` now, before
            // its sets are replaced below.
            self.rows.merge_all(merge, &record);
            self.catch_up(into);
            if self.rows.log_full() {
                self.catch_up_everything();
            }
        }
        self.free_slot(drop);
        self.slot_owner[keep] = Some(into);
        put(&mut self.live, keep);
        // The users outside both: `gone`'s join `into`'s, less the members of either. A fresh
        // node's users add to a list that stays as it was (a node is never its users' user).
        let Some(mut users) = self.part_mut(into).map(|p| std::mem::take(&mut p.users)) else {
            return;
        };
        let mut unasked: Vec<NodeId> = Vec::new();
        if !fresh {
            if users.len() < gone.users.len() {
                std::mem::swap(&mut users, &mut gone.users);
            }
            // Members of either are assigned `into` by now.
            let assignment = &self.assignment;
            users.retain(|u| {
                let inside = assignment[u.index()] == Some(into);
                if inside {
                    unasked.push(*u);
                }
                !inside
            });
        }
        for u in gone.users.drain() {
            let inside = matches!(self.assignment[u.index()], Some(p) if p == into);
            if inside || !users.insert(u) {
                unasked.push(u);
            }
        }
        self.spare_users.push(std::mem::take(&mut gone.users));
        let Some(p) = self.partitions.get_mut(into) else {
            return;
        };
        p.users = users;
        p.slot = keep;
        p.order = into_order.min(gone.order);
        let replaced = [
            std::mem::replace(&mut p.downstream, record),
            std::mem::replace(&mut p.users_reach, users_reach),
            std::mem::replace(&mut p.users_claim, users_claim),
        ];
        p.members.extend(gone.members);
        if !fresh {
            p.refused.fill(0);
        }
        for set in replaced {
            self.rows.recycle(set);
        }
        for u in unasked {
            self.unask(u);
        }
    }

    /// Brings partition `id`'s sets up to date with the merges logged since it last looked.
    /// Records keep naming `into` wherever its slot went; fx deletes the record of `gone`, and
    /// records still naming it never match again. Refusals involving `into` may no longer hold
    /// once it has absorbed more than a fresh node.
    pub(super) fn catch_up(&mut self, id: u32) {
        let Some(p) = self.partitions.get_mut(id) else {
            return;
        };
        for (merge, record) in self.rows.log().skip(p.seen) {
            let (a, g, keep) = (merge.a, merge.g, merge.keep);
            // A union of rows: whoever in it reached either claims the whole record.
            let whole_record = Merge {
                gained: true,
                ..*merge
            };
            whole_record.relabel(record, &mut p.users_reach, &mut p.users_claim);
            let (recorded, refused) = (has(&p.downstream, a), has(&p.refused, a));
            for set in [&mut p.downstream, &mut p.refused] {
                take(set, a);
                take(set, g);
            }
            if recorded {
                put(&mut p.downstream, keep);
            }
            if refused && merge.fresh {
                put(&mut p.refused, keep);
            }
        }
        p.seen = self.rows.log_len();
    }

    /// Every live partition and row up to date, and the log emptied: before every set is
    /// resized or renumbered, and when the log grows as large as the rows.
    pub(super) fn catch_up_everything(&mut self) {
        for id in self.live_ids() {
            self.catch_up(id);
            if let Some(p) = self.part_mut(id) {
                p.seen = 0;
            }
        }
        self.rows.catch_up_all();
    }
}
