//! Sets of partition slots as words of bits, and a pool of per-node rows of them kept only for the
//! nodes the capability pass may still ask about.

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

/// Two slot sets per node, `reach` and `claimed` (see the pass), for the nodes that hold a row.
/// Rows are reused once their node retires, so memory follows the nodes still asked about, not
/// the graph.
pub(super) struct Rows {
    /// Words in one slot set; a row is two sets.
    words: usize,
    data: Vec<u64>,
    row_of: Vec<u32>,
    /// The node holding each row, `NO_ROW` for a free one.
    holder: Vec<u32>,
    free: Vec<u32>,
}

impl Rows {
    pub(super) fn new(nodes: usize) -> Self {
        Rows {
            words: 1,
            data: Vec::new(),
            row_of: vec![NO_ROW; nodes],
            holder: Vec::new(),
            free: Vec::new(),
        }
    }

    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// Room for twice as many slots, every set kept.
    pub(super) fn widen(&mut self) {
        let (old, new) = (self.words, self.words * 2);
        let mut data = vec![0; self.holder.len() * 2 * new];
        for (row, chunk) in self.data.chunks(2 * old).enumerate() {
            let at = row * 2 * new;
            data[at..at + old].copy_from_slice(&chunk[..old]);
            data[at + new..at + new + old].copy_from_slice(&chunk[old..]);
        }
        self.data = data;
        self.words = new;
    }

    fn range(&self, row: u32) -> std::ops::Range<usize> {
        let at = row as usize * 2 * self.words;
        at..at + 2 * self.words
    }

    /// `node`'s sets, `(reach, claimed)`, if it holds a row.
    pub(super) fn get(&self, node: usize) -> Option<(&[u64], &[u64])> {
        let row = *self.row_of.get(node)?;
        (row != NO_ROW).then(|| self.data[self.range(row)].split_at(self.words))
    }

    /// Gives `node` a row holding these sets.
    pub(super) fn hold(&mut self, node: usize, reach: &[u64], claimed: &[u64]) {
        let row = match self.free.pop() {
            Some(row) => row,
            None => {
                self.holder.push(NO_ROW);
                self.data.resize(self.data.len() + 2 * self.words, 0);
                (self.holder.len() - 1) as u32
            }
        };
        self.row_of[node] = row;
        self.holder[row as usize] = node as u32;
        let range = self.range(row);
        let (r, c) = self.data[range].split_at_mut(self.words);
        r.copy_from_slice(reach);
        c.copy_from_slice(claimed);
    }

    /// `node` will not be asked about again: its row goes back to the pool.
    pub(super) fn retire(&mut self, node: usize) {
        let row = std::mem::replace(&mut self.row_of[node], NO_ROW);
        if row != NO_ROW {
            self.holder[row as usize] = NO_ROW;
            self.free.push(row);
        }
    }

    /// Applies `f` to the sets of `node`, if it holds a row.
    pub(super) fn update(&mut self, node: usize, f: impl FnOnce(&mut [u64], &mut [u64])) {
        if let Some(&row) = self.row_of.get(node).filter(|&&r| r != NO_ROW) {
            let range = self.range(row);
            let (r, c) = self.data[range].split_at_mut(self.words);
            f(r, c);
        }
    }

    /// Applies `f` to the sets of every node holding a row.
    pub(super) fn update_all(&mut self, mut f: impl FnMut(&mut [u64], &mut [u64])) {
        let words = self.words;
        for (chunk, &holder) in self.data.chunks_mut(2 * words).zip(&self.holder) {
            if holder != NO_ROW {
                let (r, c) = chunk.split_at_mut(words);
                f(r, c);
            }
        }
    }

    /// The union of `nodes`' sets, `(reach, claimed)`; a node without a row adds nothing.
    pub(super) fn union(&self, nodes: impl IntoIterator<Item = usize>) -> (Vec<u64>, Vec<u64>) {
        let mut reach = vec![0; self.words];
        let mut claimed = vec![0; self.words];
        for n in nodes {
            if let Some((r, c)) = self.get(n) {
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
        assert_eq!(rows.get(0), Some((&[0b101, 0][..], &[0b111, 0][..])));
        rows.retire(0);
        assert_eq!(rows.get(0), None);
        rows.hold(3, &[0, 1], &[0, 3]);
        assert_eq!(rows.get(3), Some((&[0, 1][..], &[0, 3][..])));
        assert_eq!(rows.get(2), Some((&[0b010, 0][..], &[0b010, 0][..])));
        let (r, c) = rows.union([2, 3, 1]);
        assert_eq!((r, c), (vec![0b010, 1], vec![0b010, 3]));
        assert_eq!(slots(&[0b1001, 0b10]).collect::<Vec<_>>(), vec![0, 3, 65]);
    }
}
