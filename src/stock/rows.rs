//! Sets of partition slots as words of bits, and a pool of per-node rows of them kept only for the
//! nodes the capability pass may still ask about.

use std::cell::RefCell;

/// Whether `slot` is in `set` (a slot past its end is not).
pub(super) fn has(set: &[u64], slot: usize) -> bool {
    set.get(slot / 64)
        .is_some_and(|w| w & (1 << (slot % 64)) != 0)
}

pub(super) fn put(set: &mut [u64], slot: usize) {
    set[slot / 64] |= 1 << (slot % 64);
}

pub(super) fn take(set: &mut [u64], slot: usize) {
    set[slot / 64] &= !(1 << (slot % 64));
}

pub(super) fn or_into(into: &mut [u64], from: &[u64]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a |= b;
    }
}

/// The slots in `set`, ascending.
pub(super) fn slots(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
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

const NO_ROW: u32 = u32::MAX;

/// The row `node` holds in `row_of`, if any.
fn row_in(row_of: &[u32], node: usize) -> Option<u32> {
    row_of.get(node).copied().filter(|&r| r != NO_ROW)
}

/// Merges the log may hold before every row catches up, however few the rows (a handful under
/// test, so that the property tests go through catching up often).
const MIN_LOG: usize = if cfg!(test) { 3 } else { 1024 };

/// Two partitions merging, as every set naming them must follow: slots `a` (the absorbing
/// partition's) and `g` (the absorbed one's) become `keep`; `gained` says whether the merged
/// partition's record of downstream partitions (kept beside it) names any the absorbing one's did
/// not.
#[derive(Clone, Copy)]
pub(super) struct Merge {
    pub a: usize,
    pub g: usize,
    pub keep: usize,
    pub gained: bool,
    /// Whether the absorbed partition was the one just created, still its node alone (a
    /// partition's refusals of `a` then hold for the merged one).
    pub fresh: bool,
}

impl Merge {
    /// One node's (or union's) sets after the merge: whoever reached either reaches the merged
    /// partition and claims its record (whoever reached `a` already claims the old one, so needs
    /// only what was gained); a claim of `a` moves with its slot; a claim of `g` alone names a
    /// partition that is no more.
    ///
    /// Inlined where rows catch up: at 10^6 nodes 98% of the 45 million calls name neither
    /// partition, and the test is four loads.
    #[inline]
    pub(super) fn relabel(&self, record: &[u64], reach: &mut [u64], claims: &mut [u64]) {
        let names = |slot: usize| {
            let word = |set: &[u64]| set.get(slot / 64).copied().unwrap_or(0);
            (word(reach) | word(claims)) & (1 << (slot % 64)) != 0
        };
        if !(names(self.a) || names(self.g)) {
            // Names neither: nothing to do, and nothing written (most rows, most merges).
            return;
        }
        self.relabel_named(record, reach, claims);
    }

    /// [`Merge::relabel`] for sets naming `a` or `g`.
    #[inline(never)]
    fn relabel_named(&self, record: &[u64], reach: &mut [u64], claims: &mut [u64]) {
        let (a, g, keep) = (self.a, self.g, self.keep);
        let (reached_a, reached_g) = (has(reach, a), has(reach, g));
        let claimed_a = has(claims, a);
        take(reach, a);
        take(reach, g);
        take(claims, a);
        take(claims, g);
        if reached_a || reached_g {
            put(reach, keep);
            put(claims, keep);
            if self.gained || !reached_a {
                or_into(claims, record);
            }
        } else if claimed_a {
            put(claims, keep);
        }
    }
}

/// Two slot sets per node, `reach` and `claimed` (see the pass), for the nodes that hold a row.
/// Rows are reused once their node retires, so memory follows the nodes still asked about, not
/// the graph.
///
/// A merge relabels every row, and rows are many (every node a later node or a partition's users
/// may ask about) while each is read a few times. So merges are logged, and a row applies the
/// merges it has not seen when it is next read or written: the same steps in the same order as if
/// applied at once, for only the rows read again, each in cache once.
pub(super) struct Rows {
    /// Words in one slot set; a row is two sets.
    words: usize,
    /// The rows' words and how much of the log each has applied; in a cell, as reading a row
    /// first brings it up to date.
    cells: RefCell<Cells>,
    row_of: Vec<u32>,
    /// The node holding each row, `NO_ROW` for a free one.
    holder: Vec<u32>,
    free: Vec<u32>,
    /// Merges not yet applied to every row, with their records (`words` each, in order).
    log: Vec<Merge>,
    records: Vec<u64>,
    /// Sets of the current width no longer used, for reuse: the pass makes several sets at every
    /// supported node and drops most of them at the next merge, and allocating and freeing them
    /// was a quarter of its time at 10^6 nodes.
    spare: RefCell<Vec<Vec<u64>>>,
}

#[derive(Default)]
struct Cells {
    data: Vec<u64>,
    seen: Vec<u32>,
}

impl Cells {
    /// `row`'s two sets, `(reach, claimed)`, of `words` words each.
    fn sets(&self, row: u32, words: usize) -> (&[u64], &[u64]) {
        let at = row as usize * 2 * words;
        self.data[at..at + 2 * words].split_at(words)
    }

    fn sets_mut(&mut self, row: u32, words: usize) -> (&mut [u64], &mut [u64]) {
        let at = row as usize * 2 * words;
        self.data[at..at + 2 * words].split_at_mut(words)
    }

    /// Applies the merges `row` has not seen.
    fn catch_up(&mut self, row: u32, words: usize, log: &[Merge], records: &[u64]) {
        let from = self.seen[row as usize] as usize;
        if from == log.len() {
            return;
        }
        let (reach, claims) = self.sets_mut(row, words);
        for (i, merge) in log.iter().enumerate().skip(from) {
            merge.relabel(&records[i * words..(i + 1) * words], reach, claims);
        }
        self.seen[row as usize] = log.len() as u32;
    }
}

impl Rows {
    pub(super) fn new(nodes: usize) -> Self {
        Rows {
            words: 1,
            cells: RefCell::new(Cells::default()),
            row_of: vec![NO_ROW; nodes],
            holder: Vec::new(),
            free: Vec::new(),
            log: Vec::new(),
            records: Vec::new(),
            spare: RefCell::new(Vec::new()),
        }
    }

    /// An empty set of the current width.
    pub(super) fn empty_set(&self) -> Vec<u64> {
        match self.spare.borrow_mut().pop() {
            Some(mut set) => {
                set.fill(0);
                set
            }
            None => vec![0; self.words],
        }
    }

    /// A copy of `set` (every set the pass keeps has the current width; any other is copied anew).
    pub(super) fn copy_of(&self, set: &[u64]) -> Vec<u64> {
        if set.len() != self.words {
            return set.to_vec();
        }
        match self.spare.borrow_mut().pop() {
            Some(mut copy) => {
                copy.copy_from_slice(set);
                copy
            }
            None => set.to_vec(),
        }
    }

    /// `set` is no longer used: kept for reuse if it has the current width.
    pub(super) fn recycle(&self, set: Vec<u64>) {
        if set.len() == self.words {
            self.spare.borrow_mut().push(set);
        }
    }

    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// Room for twice as many slots, every set kept. The log is kept too, its records widened
    /// like the rows: merges name slots below the old width, so a row catches up on them as
    /// before when next read (bringing every row up to date here would relabel rows never read
    /// again: half the relabelling of a 10^6-node pass).
    pub(super) fn widen(&mut self) {
        let (old, new) = (self.words, self.words * 2);
        let widened = |sets: &[u64], per_item: usize| {
            let mut wide = vec![0; sets.len() / old * new];
            for (item, chunk) in sets.chunks(per_item * old).enumerate() {
                for set in 0..per_item {
                    let at = (item * per_item + set) * new;
                    wide[at..at + old].copy_from_slice(&chunk[set * old..(set + 1) * old]);
                }
            }
            wide
        };
        let cells = self.cells.get_mut();
        cells.data = widened(&cells.data, 2);
        self.records = widened(&self.records, 1);
        self.words = new;
        self.spare.get_mut().clear();
    }

    fn row(&self, node: usize) -> Option<u32> {
        row_in(&self.row_of, node)
    }

    /// Gives `node` a row holding these sets (current: it has seen every merge).
    pub(super) fn hold(&mut self, node: usize, reach: &[u64], claimed: &[u64]) {
        let row = self.take_row(node);
        let (r, c) = self.cells.get_mut().sets_mut(row, self.words);
        r.copy_from_slice(reach);
        c.copy_from_slice(claimed);
    }

    /// Gives `node` a row holding the union of `nodes`' sets, each row brought up to date first:
    /// what `hold` of `union` gives, made in place (most nodes visited need no copy of it).
    pub(super) fn hold_union(&mut self, node: usize, nodes: impl IntoIterator<Item = usize>) {
        let row = self.take_row(node);
        let width = 2 * self.words;
        let at = row as usize * width;
        let cells = self.cells.get_mut();
        cells.data[at..at + width].fill(0);
        for n in nodes {
            // Not `self.row`: the cells are borrowed.
            let Some(from) = row_in(&self.row_of, n) else {
                continue;
            };
            cells.catch_up(from, self.words, &self.log, &self.records);
            let from = from as usize * width;
            for w in 0..width {
                cells.data[at + w] |= cells.data[from + w];
            }
        }
    }

    /// Puts `slot` in both sets of `node`'s row, which must be current (just held).
    pub(super) fn put_in(&mut self, node: usize, slot: usize) {
        if let Some(row) = self.row(node) {
            let (r, c) = self.cells.get_mut().sets_mut(row, self.words);
            put(r, slot);
            put(c, slot);
        }
    }

    /// A row for `node` (a free one, or a new one), current: it has seen every merge.
    fn take_row(&mut self, node: usize) -> u32 {
        let words = self.words;
        let cells = self.cells.get_mut();
        let row = match self.free.pop() {
            Some(row) => row,
            None => {
                self.holder.push(NO_ROW);
                cells.data.resize(cells.data.len() + 2 * words, 0);
                cells.seen.push(0);
                (self.holder.len() - 1) as u32
            }
        };
        self.row_of[node] = row;
        self.holder[row as usize] = node as u32;
        cells.seen[row as usize] = self.log.len() as u32;
        row
    }

    /// `node` will not be asked about again: its row goes back to the pool.
    pub(super) fn retire(&mut self, node: usize) {
        let row = std::mem::replace(&mut self.row_of[node], NO_ROW);
        if row != NO_ROW {
            self.holder[row as usize] = NO_ROW;
            self.free.push(row);
        }
    }

    /// Every row relabelled for `merge`: logged, applied to each row when next read.
    pub(super) fn merge_all(&mut self, merge: Merge, record: &[u64]) {
        self.log.push(merge);
        self.records.extend_from_slice(&record[..self.words]);
    }

    /// The merges logged since the log was last emptied, each with its record.
    pub(super) fn log(&self) -> impl Iterator<Item = (&Merge, &[u64])> {
        self.log.iter().zip(self.records.chunks(self.words))
    }

    pub(super) fn log_len(&self) -> usize {
        self.log.len()
    }

    /// Whether the log's records take as much room as the rows: then everything that follows the
    /// log should catch up and empty it, which costs what relabelling at once would have.
    pub(super) fn log_full(&self) -> bool {
        self.log.len() >= self.holder.len().max(MIN_LOG)
    }

    /// `node`'s row alone relabelled for `merge` (the only row naming a partition just created).
    pub(super) fn merge_one(&mut self, node: usize, merge: Merge, record: &[u64]) {
        self.update(node, |reach, claims| merge.relabel(record, reach, claims));
    }

    /// Applies `f` to the sets of `node`, if it holds a row, once it is up to date.
    fn update(&mut self, node: usize, f: impl FnOnce(&mut [u64], &mut [u64])) {
        if let Some(row) = self.row(node) {
            let words = self.words;
            let cells = self.cells.get_mut();
            cells.catch_up(row, words, &self.log, &self.records);
            let (r, c) = cells.sets_mut(row, words);
            f(r, c);
        }
    }

    /// Brings every row up to date and empties the log.
    pub(super) fn catch_up_all(&mut self) {
        let words = self.words;
        let cells = self.cells.get_mut();
        for (row, &holder) in self.holder.iter().enumerate() {
            if holder != NO_ROW {
                cells.catch_up(row as u32, words, &self.log, &self.records);
            }
        }
        cells.seen.fill(0);
        self.log.clear();
        self.records.clear();
    }

    /// Applies `f` to the sets of every node holding a row, each up to date first.
    pub(super) fn update_all(&mut self, mut f: impl FnMut(&mut [u64], &mut [u64])) {
        self.catch_up_all();
        let words = self.words;
        let cells = self.cells.get_mut();
        for (chunk, &holder) in cells.data.chunks_mut(2 * words).zip(&self.holder) {
            if holder != NO_ROW {
                let (r, c) = chunk.split_at_mut(words);
                f(r, c);
            }
        }
    }

    /// The union of `nodes`' sets, `(reach, claimed)`, each row brought up to date first; a node
    /// without a row adds nothing.
    pub(super) fn union(&self, nodes: impl IntoIterator<Item = usize>) -> (Vec<u64>, Vec<u64>) {
        let words = self.words;
        let mut reach = self.empty_set();
        let mut claimed = self.empty_set();
        let mut cells = self.cells.borrow_mut();
        for n in nodes {
            if let Some(row) = self.row(n) {
                cells.catch_up(row, words, &self.log, &self.records);
                let (r, c) = cells.sets(row, words);
                or_into(&mut reach, r);
                or_into(&mut claimed, c);
            }
        }
        (reach, claimed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_sets_through_widening_and_reuse() {
        let mut rows = Rows::new(4);
        rows.hold(0, &[0b101], &[0b111]);
        rows.hold(2, &[0b010], &[0b010]);
        rows.widen();
        assert_eq!(rows.union([0]), (vec![0b101, 0], vec![0b111, 0]));
        rows.retire(0);
        assert_eq!(rows.union([0]), (vec![0, 0], vec![0, 0]));
        rows.hold(3, &[0, 1], &[0, 3]);
        assert_eq!(rows.union([3]), (vec![0, 1], vec![0, 3]));
        assert_eq!(rows.union([2]), (vec![0b010, 0], vec![0b010, 0]));
        let (r, c) = rows.union([2, 3, 1]);
        assert_eq!((r, c), (vec![0b010, 1], vec![0b010, 3]));
        assert_eq!(slots(&[0b1001, 0b10]).collect::<Vec<_>>(), vec![0, 3, 65]);
    }

    #[test]
    fn spare_sets_come_back_empty_or_copied_at_the_current_width() {
        let mut rows = Rows::new(2);
        rows.recycle(vec![0b101]);
        assert_eq!(rows.empty_set(), vec![0]);
        rows.recycle(vec![0b101]);
        assert_eq!(rows.copy_of(&[0b11]), vec![0b11]);
        // A set of another width is copied anew, and not kept once given back.
        assert_eq!(rows.copy_of(&[1, 2]), vec![1, 2]);
        rows.recycle(vec![1, 2]);
        rows.widen();
        rows.recycle(vec![7]);
        assert_eq!(rows.empty_set(), vec![0, 0]);
        assert_eq!(rows.copy_of(&[3, 4]), vec![3, 4]);
    }

    #[test]
    fn logged_merges_apply_in_order_when_a_row_is_read() {
        // Slot 1 absorbs slot 3 (record {4}, gained), then slot 0 absorbs slot 1 (record {5}).
        let first = Merge {
            a: 1,
            g: 3,
            keep: 1,
            gained: true,
            fresh: false,
        };
        let second = Merge {
            a: 1,
            g: 0,
            keep: 0,
            gained: false,
            fresh: false,
        };
        let rows_now = |lazy: bool| {
            let mut rows = Rows::new(3);
            rows.hold(0, &[0b1000], &[0b1000]);
            rows.hold(1, &[0b0010], &[0b10010]);
            rows.hold(2, &[0b0100], &[0b0100]);
            for (merge, record) in [(first, [0b10000u64]), (second, [0b100000])] {
                if lazy {
                    rows.merge_all(merge, &record);
                } else {
                    rows.update_all(|r, c| merge.relabel(&record, r, c));
                }
            }
            (0..3).map(|n| rows.union([n])).collect::<Vec<_>>()
        };
        assert_eq!(rows_now(true), rows_now(false));
        assert_eq!(rows_now(true)[0], (vec![0b1], vec![0b10001]));
        assert_eq!(rows_now(true)[2], (vec![0b0100], vec![0b0100]));
    }
}
