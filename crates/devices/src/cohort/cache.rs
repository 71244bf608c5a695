//! Bounded set-associative tag arrays for the Cohort SoC's caches: the
//! cores' L1D, every tile's L1.5 and the L2 slices.
//!
//! A [`TagArray`] holds which lines a cache has, not their bytes (the bytes
//! live in [`PhysMem`](super::PhysMem); the directory keeps the coherence
//! state): it answers "is this line here", and on a fill names the line it
//! had to evict, which the SoC then takes out through the protocol
//! ([`World`](super::World): an L1.5 writes a dirty line back, the L2
//! invalidates the sharers of its victim).
//!
//! **Replacement** is OpenPiton's for the L1.5 and the L2: an invalid way
//! first, else, starting at the set's round-robin pointer, the first way
//! whose *used* bit is clear; an access sets its way's used bit, and when
//! every way's bit is set they are all cleared; each eviction advances the
//! pointer (`l2_pipe1_dpath.v.pyv` "pseudo LRU algorithm", `state_rb_S2 =
//! l2_rb_bits_S2 + 1`; `l15_pipeline.v.pyv` `lru_used_bits_s2`,
//! `lru_round_robin_turn_s2`; cohort-project/cohort-soc fbacbee). The
//! cores' L1D uses it too (Ariane's write-through L1D picks a random way
//! with an LFSR, `wt_dcache_missunit.sv`: a simplification, stated in the
//! platform).
//!
//! **Index** bits: the line number modulo the sets (the L1.5's
//! `L15_IDX_LOW 4`: bits 10:4 for 128 sets of 16 B; the L2's
//! `L2_TAG_INDEX`: bits 13:6 for 256 sets of 64 B).

/// Size and shape of a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes of data it holds (0: unbounded, no evictions).
    pub bytes: u64,
    /// Ways per set.
    pub ways: u64,
    /// Bytes per line.
    pub line: u64,
}

impl Geometry {
    /// Sets: bytes / (ways × line).
    pub fn sets(&self) -> u64 {
        self.bytes / (self.ways * self.line)
    }

    /// Whether the cache has a capacity.
    pub fn bounded(&self) -> bool {
        self.bytes > 0
    }

    /// Checks that the geometry gives a power-of-two number of sets (at
    /// least one); the error names the values.
    pub fn check(&self) -> Result<(), String> {
        if !self.bounded() {
            return Ok(());
        }
        if self.ways == 0
            || self.line == 0
            || self.bytes % (self.ways * self.line) != 0
            || !self.sets().is_power_of_two()
        {
            return Err(format!(
                "{} bytes of {}-way {} B lines do not give a power-of-two number of sets",
                self.bytes, self.ways, self.line
            ));
        }
        Ok(())
    }
}

/// One set: its ways' lines, used bits and round-robin pointer.
#[derive(Debug, Clone)]
struct Set {
    lines: Vec<Option<u64>>,
    used: Vec<bool>,
    rr: usize,
}

/// A set-associative array of line numbers (module doc).
#[derive(Debug, Clone)]
pub struct TagArray {
    geometry: Geometry,
    /// Sets created on first touch (most of a large cache stays cold).
    sets: std::collections::HashMap<u64, Set>,
    /// Lines evicted so far.
    pub evictions: u64,
}

impl TagArray {
    /// An empty array of `geometry` (which must be bounded and checked).
    pub fn new(geometry: Geometry) -> TagArray {
        debug_assert!(geometry.bounded() && geometry.check().is_ok());
        TagArray {
            geometry,
            sets: std::collections::HashMap::new(),
            evictions: 0,
        }
    }

    /// The line number of byte address `pa`.
    pub fn line_of(&self, pa: u64) -> u64 {
        pa / self.geometry.line
    }

    fn set_of(&self, line: u64) -> u64 {
        line % self.geometry.sets()
    }

    /// Whether line number `line` is held.
    pub fn contains(&self, line: u64) -> bool {
        self.sets
            .get(&self.set_of(line))
            .is_some_and(|s| s.lines.contains(&Some(line)))
    }

    /// An access to `line`: sets its used bit if held, else fills it,
    /// returning the line evicted to make room (if any).
    pub fn access(&mut self, line: u64) -> Option<u64> {
        let ways = self.geometry.ways as usize;
        let idx = self.set_of(line);
        let set = self.sets.entry(idx).or_insert_with(|| Set {
            lines: vec![None; ways],
            used: vec![false; ways],
            rr: 0,
        });
        let way = match set.lines.iter().position(|l| *l == Some(line)) {
            Some(w) => {
                touch(set, w);
                return None;
            }
            None => match set.lines.iter().position(Option::is_none) {
                Some(w) => w,
                None => {
                    let w = (0..ways)
                        .map(|k| (set.rr + k) % ways)
                        .find(|&w| !set.used[w])
                        .unwrap_or(set.rr);
                    set.rr = (set.rr + 1) % ways;
                    w
                }
            },
        };
        let victim = set.lines[way].replace(line);
        touch(set, way);
        if victim.is_some() {
            self.evictions += 1;
        }
        victim
    }

    /// Removes `line` (an invalidation): its way becomes invalid.
    pub fn remove(&mut self, line: u64) {
        let idx = self.set_of(line);
        if let Some(set) = self.sets.get_mut(&idx) {
            if let Some(w) = set.lines.iter().position(|l| *l == Some(line)) {
                set.lines[w] = None;
                set.used[w] = false;
            }
        }
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.sets
            .values()
            .map(|s| s.lines.iter().flatten().count())
            .sum()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Sets way `w`'s used bit; all set means all cleared (the RTL's
/// `state_lru_S2 == {L2_LRU_BITS{1'b1}}` case).
fn touch(set: &mut Set, w: usize) {
    set.used[w] = true;
    if set.used.iter().all(|&u| u) {
        set.used.iter_mut().for_each(|u| *u = false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_evicts_a_way_whose_used_bit_is_clear() {
        // One set of two ways.
        let mut t = TagArray::new(Geometry {
            bytes: 32,
            ways: 2,
            line: 16,
        });
        assert_eq!(t.access(0), None);
        assert_eq!(t.access(1), None); // both used: bits cleared
        assert_eq!(t.access(0), None); // 0 used again
        assert_eq!(t.access(2), Some(1), "1's used bit is clear");
        assert!(t.contains(0) && t.contains(2) && !t.contains(1));
        assert_eq!(t.evictions, 1);
        t.remove(0);
        assert_eq!(t.access(3), None, "an invalid way is filled first");
    }

    #[test]
    fn geometry_checks_name_bad_shapes() {
        let g = Geometry {
            bytes: 8192,
            ways: 4,
            line: 16,
        };
        assert_eq!(g.sets(), 128);
        assert!(g.check().is_ok());
        assert!(Geometry { bytes: 3000, ..g }.check().is_err());
    }
}
