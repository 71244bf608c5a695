//! Who waits for which line: a small open-addressing table keyed by line.
//!
//! The CPU parks an op (or a drain, a prefetch fill, the stores of a TAD
//! transaction) on a line until a message settles it, and takes the line's
//! waiters out when one arrives: an insert and a removal per miss, with at
//! most a few dozen lines waiting at a time (one per outstanding miss). A
//! general hash map pays for its group probing and control bytes on every
//! one; this table is a power-of-two array probed linearly from the line's
//! multiplicative hash, kept at most half full, with backward-shift deletion
//! (no tombstones), so a lookup is a multiply, a shift and usually one
//! compare. Nothing iterates it, so the order of its slots is never
//! observable.

/// A map from line to `V` (see the module docs).
#[derive(Debug)]
pub(super) struct WaitMap<V> {
    /// `None`: a free slot. The length is a power of two.
    slots: Vec<Option<(u64, V)>>,
    len: usize,
    /// `64 - log2(slots.len())`: the hash's top bits index the table.
    shift: u32,
}

impl<V> Default for WaitMap<V> {
    fn default() -> Self {
        Self::with_slots(Self::MIN_SLOTS)
    }
}

impl<V> WaitMap<V> {
    /// Slots of a new table (a core's 64 MSHRs fill half of it).
    const MIN_SLOTS: usize = 128;

    fn with_slots(n: usize) -> Self {
        debug_assert!(n.is_power_of_two());
        WaitMap {
            slots: (0..n).map(|_| None).collect(),
            len: 0,
            shift: 64 - n.trailing_zeros(),
        }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot `line` is probed from.
    #[inline]
    fn home(&self, line: u64) -> usize {
        (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The slot holding `line`, or the free slot that ends its probe.
    #[inline]
    fn probe(&self, line: u64) -> (usize, bool) {
        let mask = self.mask();
        let mut i = self.home(line);
        loop {
            match &self.slots[i] {
                None => return (i, false),
                Some((k, _)) if *k == line => return (i, true),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    /// Whether `line` has an entry.
    #[inline]
    pub(super) fn contains_key(&self, line: u64) -> bool {
        self.probe(line).1
    }

    /// The entry of `line`, made with `make` if it has none; `true` with
    /// it when it was made.
    #[inline]
    pub(super) fn get_or_insert_with(
        &mut self,
        line: u64,
        make: impl FnOnce() -> V,
    ) -> (&mut V, bool) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let (i, found) = self.probe(line);
        if !found {
            self.slots[i] = Some((line, make()));
            self.len += 1;
        }
        let (_, v) = self.slots[i].as_mut().expect("probed");
        (v, !found)
    }

    /// Takes `line`'s entry out.
    #[inline]
    pub(super) fn remove(&mut self, line: u64) -> Option<V> {
        let (mut hole, found) = self.probe(line);
        if !found {
            return None;
        }
        let (_, out) = self.slots[hole].take().expect("probed");
        self.len -= 1;
        // Backward shift: an entry after the hole whose probe passed the
        // hole moves into it, so every probe still ends at a free slot.
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let Some((k, _)) = &self.slots[j] else {
                return Some(out);
            };
            let home = self.home(*k);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j].take();
                hole = j;
            }
        }
    }

    /// Doubles the table.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let old = std::mem::replace(self, Self::with_slots(2 * self.slots.len()));
        for (line, v) in old.slots.into_iter().flatten() {
            let (i, _) = self.probe(line);
            self.slots[i] = Some((line, v));
            self.len += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::WaitMap;

    /// Random inserts, updates, lookups and removals give what a hash map
    /// gives, through growth and the backward shifts of clustered lines.
    #[test]
    fn wait_map_agrees_with_a_hash_map() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut rand = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut m: WaitMap<u32> = WaitMap::default();
        let mut reference: HashMap<u64, u32> = HashMap::new();
        let mut shifts = 0;
        for step in 0..200_000u32 {
            // Lines from a window that drifts (as misses stream), with
            // spells of many waiting lines (the table grows) and few.
            let base = u64::from(step / 64);
            let spread = if (step / 20_000) % 2 == 0 { 40 } else { 400 };
            let line = base + rand(spread);
            match rand(3) {
                0 => {
                    let (v, made) = m.get_or_insert_with(line, || step);
                    let r = reference.entry(line);
                    let expect_made = matches!(r, std::collections::hash_map::Entry::Vacant(_));
                    assert_eq!(made, expect_made, "line {line} at step {step}");
                    let rv = r.or_insert(step);
                    *v += 1;
                    *rv += 1;
                    assert_eq!(*v, *rv);
                }
                1 => {
                    let before = m.slots.iter().filter(|s| s.is_some()).count();
                    assert_eq!(m.remove(line), reference.remove(&line), "line {line}");
                    let misplaced = m
                        .slots
                        .iter()
                        .enumerate()
                        .filter(|(i, s)| s.as_ref().is_some_and(|(k, _)| m.home(*k) != *i))
                        .count();
                    shifts += usize::from(before > 0 && misplaced > 0);
                }
                _ => assert_eq!(m.contains_key(line), reference.contains_key(&line)),
            }
            assert_eq!(m.len, reference.len());
        }
        assert!(m.slots.len() >= 512, "the table grew: {}", m.slots.len());
        assert!(shifts > 1000, "collisions exercised the shifts: {shifts}");
        for (line, v) in &reference {
            assert_eq!(m.remove(*line), Some(*v));
        }
        assert!(m.slots.iter().all(Option::is_none));
    }
}
