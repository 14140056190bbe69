//! Slots: where each live partition's bit sits in every set, kept in fx's order of partitions.

use super::Pass;
use crate::stock::rows::{put, slots, take};

impl Pass {
    /// The slot above every live one for a new partition (the latest in order), closing the holes
    /// or widening every slot set when the top is reached.
    pub(super) fn allocate_slot(&mut self, owner: u32) -> usize {
        if self.slot_owner.len() == self.rows.words() * 64 {
            if self.holes * 2 >= self.slot_owner.len() {
                self.close_holes();
            }
            if self.slot_owner.len() == self.rows.words() * 64 {
                self.rows.widen();
                let words = self.rows.words();
                for id in self.live_ids() {
                    if let Some(p) = self.part_mut(id) {
                        for set in [
                            &mut p.downstream,
                            &mut p.refused,
                            &mut p.users_reach,
                            &mut p.users_claim,
                        ] {
                            set.resize(words, 0);
                        }
                    }
                }
                self.live.resize(words, 0);
            }
        }
        let slot = self.slot_owner.len();
        self.slot_owner.push(Some(owner));
        put(&mut self.live, slot);
        slot
    }

    pub(super) fn free_slot(&mut self, slot: usize) {
        self.slot_owner[slot] = None;
        take(&mut self.live, slot);
        self.holes += 1;
        while let Some(None) = self.slot_owner.last() {
            self.slot_owner.pop();
            self.holes -= 1;
        }
    }

    /// Renumbers the live partitions' slots `0..` in order, in every set.
    fn close_holes(&mut self) {
        self.catch_up_everything();
        let ids = self.live_ids();
        let mut renumbered = vec![usize::MAX; self.slot_owner.len()];
        for (new, &id) in ids.iter().enumerate() {
            if let Some(p) = self.part(id) {
                renumbered[p.slot] = new;
            }
        }
        let remap = |set: &mut [u64]| {
            let old = set.to_vec();
            set.fill(0);
            for s in slots(&old) {
                if let Some(&new) = renumbered.get(s).filter(|&&n| n != usize::MAX) {
                    put(set, new);
                }
            }
        };
        self.rows.update_all(|reach, claims| {
            remap(reach);
            remap(claims);
        });
        for &id in &ids {
            if let Some(p) = self.partitions.get_mut(id) {
                p.slot = renumbered[p.slot];
                for set in [
                    &mut p.downstream,
                    &mut p.refused,
                    &mut p.users_reach,
                    &mut p.users_claim,
                ] {
                    remap(set);
                }
            }
        }
        self.slot_owner = ids.iter().map(|&id| Some(id)).collect();
        self.holes = 0;
        self.live.fill(0);
        for slot in 0..ids.len() {
            put(&mut self.live, slot);
        }
    }
}
