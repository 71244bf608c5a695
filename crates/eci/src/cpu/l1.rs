//! The L1: presence only (write-through and inclusive, an L1 line always
//! equals the LLC's copy), a set-associative LRU directory per core.

use std::collections::VecDeque;

/// A set-associative LRU directory of line presence (the L1).
#[derive(Debug, Default)]
pub(super) struct PresenceCache {
    ways: usize,
    /// Lines of each set (`line % sets`), least recently used first.
    lru: Vec<VecDeque<u64>>,
}

impl PresenceCache {
    pub(super) fn new(sets: u64, ways: usize) -> PresenceCache {
        PresenceCache {
            ways,
            lru: (0..sets).map(|_| VecDeque::new()).collect(),
        }
    }
    fn set(&mut self, line: u64) -> &mut VecDeque<u64> {
        let sets = self.lru.len() as u64;
        &mut self.lru[(line % sets) as usize]
    }
    pub(super) fn contains(&self, line: u64) -> bool {
        self.lru[(line % self.lru.len() as u64) as usize].contains(&line)
    }
    pub(super) fn hit(&mut self, line: u64) -> bool {
        touch_lru(self.set(line), line)
    }
    pub(super) fn fill(&mut self, line: u64) {
        if self.hit(line) {
            return;
        }
        let ways = self.ways;
        let q = self.set(line);
        q.push_back(line);
        if q.len() > ways {
            q.pop_front();
        }
    }
    pub(super) fn invalidate(&mut self, line: u64) {
        remove_lru(self.set(line), line);
    }
}

/// Moves `line` to the most recently used end of `q`; whether it was there
/// (at most once; searched from that end, where recent lines are).
pub(super) fn touch_lru(q: &mut VecDeque<u64>, line: u64) -> bool {
    if q.back() == Some(&line) {
        // Already the most recent (a hit right after the fill).
        return true;
    }
    let Some(pos) = q.iter().rposition(|&l| l == line) else {
        return false;
    };
    if pos + 1 != q.len() {
        q.remove(pos);
        q.push_back(line);
    }
    true
}

/// Removes `line` from `q` (it is there at most once; usually at the least
/// recently used end, where `pop_front` does without `remove`'s shifting).
pub(super) fn remove_lru(q: &mut VecDeque<u64>, line: u64) {
    match q.iter().position(|&l| l == line) {
        Some(0) => {
            q.pop_front();
        }
        Some(pos) => {
            q.remove(pos);
        }
        None => {}
    }
}
