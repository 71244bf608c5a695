//! A per-line map for an agent's line states: lines below `dense.len()` are
//! a slot each (a marker value for absent lines), so sequential or
//! clustered lines, the usual case, cost an index instead of a hash probe;
//! the dense range grows in powers of two while it stays within
//! `slots_per_line` slots per stored line (beyond `dense_min` lines), so
//! scattered lines cost no more memory than in a hash map, where the lines
//! above the range are kept.

use rustc_hash::FxHashMap as HashMap;

/// A value a [`DenseLineMap`] stores, with the marker of an absent line
/// (a value the agent never stores).
pub trait Slot: Copy {
    /// The marker of an empty slot.
    const ABSENT: Self;
    /// Whether this is the marker.
    fn is_absent(&self) -> bool;
}

impl Slot for u8 {
    const ABSENT: u8 = u8::MAX;
    #[inline]
    fn is_absent(&self) -> bool {
        *self == u8::MAX
    }
}

/// The map; see the module docs.
#[derive(Debug)]
pub struct DenseLineMap<T> {
    dense: Vec<T>,
    /// Lines stored in `dense`.
    dense_count: usize,
    sparse: HashMap<u64, T>,
    /// The dense range may always grow to this many lines.
    dense_min: u64,
    /// Beyond `dense_min`, the dense range's slots per stored line at most.
    slots_per_line: u64,
}

impl<T: Slot> DenseLineMap<T> {
    /// An empty map whose dense range may grow to `dense_min` lines, and
    /// beyond while it holds at most `slots_per_line` slots per stored line.
    pub fn new(dense_min: u64, slots_per_line: u64) -> Self {
        DenseLineMap {
            dense: Vec::new(),
            dense_count: 0,
            sparse: HashMap::default(),
            dense_min,
            slots_per_line,
        }
    }

    /// The line's value, if stored.
    #[inline]
    pub fn get(&self, line: u64) -> Option<T> {
        if line < self.dense.len() as u64 {
            let v = self.dense[line as usize];
            return (!v.is_absent()).then_some(v);
        }
        if self.sparse.is_empty() {
            return None;
        }
        self.sparse.get(&line).copied()
    }

    /// A reference to the line's value, if stored.
    #[inline]
    pub fn get_ref(&self, line: u64) -> Option<&T> {
        if line < self.dense.len() as u64 {
            let v = &self.dense[line as usize];
            return (!v.is_absent()).then_some(v);
        }
        self.sparse.get(&line)
    }

    /// A mutable reference to the line's value, if stored: a caller that
    /// changes a stored value does so in place instead of copying it out
    /// and [`insert`](Self::insert)ing it back (the table agent's line
    /// states are about 150 bytes). It must not set the absent marker
    /// ([`remove`](Self::remove) forgets a line).
    #[inline]
    pub fn get_mut(&mut self, line: u64) -> Option<&mut T> {
        if line < self.dense.len() as u64 {
            let v = &mut self.dense[line as usize];
            return (!v.is_absent()).then_some(v);
        }
        if self.sparse.is_empty() {
            return None;
        }
        self.sparse.get_mut(&line)
    }

    /// Stores `v` (not the absent marker) for `line`. Always inline: the
    /// growth-limit test made it large enough that the compiler stopped
    /// inlining it into the DC (55 instructions a transaction more).
    #[inline(always)]
    pub fn insert(&mut self, line: u64, v: T) {
        debug_assert!(!v.is_absent());
        // A line at or past the growth limit is refused by `grow_to` too
        // (its range would be longer than the limit), so the test spares
        // the call where lines stream far past a few stored ones.
        if line >= self.dense.len() as u64 && (line >= self.growth_limit() || !self.grow_to(line)) {
            self.sparse.insert(line, v);
            return;
        }
        let slot = &mut self.dense[line as usize];
        if slot.is_absent() {
            self.dense_count += 1;
        }
        *slot = v;
    }

    /// Forgets `line`.
    #[inline]
    pub fn remove(&mut self, line: u64) {
        if line < self.dense.len() as u64 {
            let slot = &mut self.dense[line as usize];
            if !slot.is_absent() {
                *slot = T::ABSENT;
                self.dense_count -= 1;
            }
        } else if !self.sparse.is_empty() {
            self.sparse.remove(&line);
        }
    }

    /// How long the dense range may grow with one more line stored.
    #[inline]
    fn growth_limit(&self) -> u64 {
        let stored = (self.dense_count + self.sparse.len()) as u64 + 1;
        self.dense_min
            .max(stored.saturating_mul(self.slots_per_line))
    }

    /// Extends the dense range over `line` if it stays dense enough
    /// (moving the sparse lines it now covers); false if not.
    #[cold]
    fn grow_to(&mut self, line: u64) -> bool {
        let Some(len) = line.checked_add(1).and_then(u64::checked_next_power_of_two) else {
            return false;
        };
        let len = len.max(self.dense_min);
        if len > self.growth_limit() {
            return false;
        }
        self.dense.resize(len as usize, T::ABSENT);
        let mut moved = Vec::new();
        self.sparse.retain(|&l, &mut v| {
            let keep = l >= len;
            if !keep {
                moved.push((l, v));
            }
            keep
        });
        for (l, v) in moved {
            self.dense[l as usize] = v;
            self.dense_count += 1;
        }
        true
    }

    /// Every stored (line, value): the dense range in line order, then the
    /// lines above it.
    pub fn iter(&self) -> impl Iterator<Item = (u64, T)> + '_ {
        let dense = self.dense.iter().enumerate();
        dense
            .filter(|&(_, v)| !v.is_absent())
            .map(|(l, &v)| (l as u64, v))
            .chain(self.sparse.iter().map(|(&l, &v)| (l, v)))
    }

    /// (lines stored in the dense range, lines stored above it).
    pub fn spread(&self) -> (usize, usize) {
        (self.dense_count, self.sparse.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The DC's parameters.
    const DENSE_MIN: u64 = 1 << 16;
    const SLOTS_PER_LINE: u64 = 16;

    #[test]
    fn line_states_behave_like_a_map_across_dense_and_sparse_lines() {
        let mut s = DenseLineMap::<u8>::new(DENSE_MIN, SLOTS_PER_LINE);
        let mut want = std::collections::BTreeMap::new();
        // Sequential lines (dense), scattered far lines (sparse), then
        // enough lines for the dense range to grow over some sparse ones.
        let lines: Vec<u64> = (0..3000)
            .chain([1 << 20, 1 << 40, u64::MAX, 70_000, 200_000])
            .chain((0..20_000).map(|i| 100_000 + 7 * i))
            .collect();
        for (i, &l) in lines.iter().enumerate() {
            let st = (i % 200) as u8;
            s.insert(l, st);
            want.insert(l, st);
        }
        for &l in lines.iter().step_by(3) {
            s.remove(l);
            want.remove(&l);
        }
        s.remove(5_000_000); // never stored
        for &l in &lines {
            assert_eq!(s.get(l), want.get(&l).copied(), "line {l}");
        }
        assert_eq!(s.get(2_999_999), None);
        let got: std::collections::BTreeMap<u64, u8> = s.iter().collect();
        assert_eq!(got, want);
        assert!(s.dense.len() as u64 <= DENSE_MIN.max(SLOTS_PER_LINE * lines.len() as u64));
        assert!(s.sparse.contains_key(&(1 << 40)), "far lines stay sparse");
    }

    #[test]
    fn get_mut_changes_a_stored_line_in_place_dense_or_sparse() {
        let mut s = DenseLineMap::<u8>::new(4, 2);
        s.insert(1, 10);
        s.insert(1 << 30, 20);
        assert_eq!(s.spread(), (1, 1), "one dense line, one sparse");
        *s.get_mut(1).expect("dense line") += 1;
        *s.get_mut(1 << 30).expect("sparse line") += 2;
        assert_eq!((s.get(1), s.get(1 << 30)), (Some(11), Some(22)));
        // Absent lines, in the dense range and above it: nothing to change,
        // nothing stored by asking.
        assert_eq!(s.get_mut(2), None);
        assert_eq!(s.get_mut(1 << 31), None);
        s.remove(1);
        assert_eq!(s.get_mut(1), None);
        assert_eq!(s.spread(), (0, 1));
    }

    #[test]
    fn the_dense_range_grows_exactly_up_to_its_limit() {
        // 4 lines always, beyond that 2 slots per stored line.
        let mut s = DenseLineMap::<u8>::new(4, 2);
        for l in 0..4 {
            s.insert(l, 1);
        }
        assert_eq!((s.dense.len(), s.spread()), (4, (4, 0)));
        // Five lines stored allow 10 slots: line 7 needs 8.
        s.insert(7, 1);
        assert_eq!((s.dense.len(), s.spread()), (8, (5, 0)));
        // Six allow 12: line 9 would need 16, line 12 is past the limit.
        s.insert(9, 1);
        s.insert(12, 1);
        assert_eq!((s.dense.len(), s.spread()), (8, (5, 2)));
        // Eight allow 16, exactly what line 8 needs: the range grows and
        // takes the sparse lines it now covers.
        s.insert(8, 1);
        assert_eq!((s.dense.len(), s.spread()), (16, (8, 0)));
        for l in [0, 1, 2, 3, 7, 8, 9, 12] {
            assert_eq!(s.get(l), Some(1), "line {l}");
        }
    }
}
