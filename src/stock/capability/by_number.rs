//! The pass's partitions by number. fx numbers partitions in the order it creates them, one for
//! every supported node, and most are merged away at the next round: kept in a vector by number
//! they were hundreds of megabytes of fresh memory at 10^6 nodes, cleared by the kernel page by
//! page. Here a number maps to a place, and places are reused once their partition is gone.

use super::Partition;

const GONE: u32 = u32::MAX;

#[derive(Default)]
pub(super) struct ByNumber {
    /// By number: the place holding the partition, or `GONE`.
    place: Vec<u32>,
    places: Vec<Option<Partition>>,
    free: Vec<u32>,
}

impl ByNumber {
    /// Numbers given so far: the next partition's number.
    pub(super) fn len(&self) -> usize {
        self.place.len()
    }

    pub(super) fn get(&self, id: u32) -> Option<&Partition> {
        let at = *self.place.get(id as usize)?;
        self.places.get(at as usize)?.as_ref()
    }

    pub(super) fn get_mut(&mut self, id: u32) -> Option<&mut Partition> {
        let at = *self.place.get(id as usize)?;
        self.places.get_mut(at as usize)?.as_mut()
    }

    /// Keeps `p` under the next number.
    pub(super) fn push(&mut self, p: Partition) {
        let at = match self.free.pop() {
            Some(at) => {
                self.places[at as usize] = Some(p);
                at
            }
            None => {
                self.places.push(Some(p));
                (self.places.len() - 1) as u32
            }
        };
        self.place.push(at);
    }

    /// Partition `id`, no longer kept.
    pub(super) fn take(&mut self, id: u32) -> Option<Partition> {
        let at = std::mem::replace(self.place.get_mut(id as usize)?, GONE);
        let p = self.places.get_mut(at as usize)?.take();
        self.free.push(at);
        p
    }
}
