//! The LLC's data: each line's state and where its copy is ([`LlcLine`]),
//! the copies in one slab ([`CopySlab`]), and a row's effects on them
//! ([`LlcRow`], the LLC's side of the protocol engine's `Effects`).

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_coherence::check::Checker;
use ccsim_coherence::line_map::{DenseLineMap, Slot};
use ccsim_coherence::{boxed_line, Line, Msg, Tables, LINE_BYTES, PEER};
use ccsim_kernel::prelude::*;
use ccsim_protocol::engine::{Effects, SendStep};

use super::program::put_word;
use crate::link::EciLink;
use ccsim_coherence::util::modulo;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LlcLine {
    pub(super) state: u8,
    /// Where the LLC's copy is (`None`: it has none).
    pub(super) copy: Option<CopySlot>,
}

/// The LLC's lines not in the initial state or holding a copy (absent:
/// initial, no copy): a dense range up to 4 Ki lines, beyond it at most 4
/// eight-byte slots per stored line (about a hash map entry's cost).
pub(super) type LlcMap = DenseLineMap<LlcLine>;

/// An empty [`LlcMap`].
pub(super) fn llc_map() -> LlcMap {
    DenseLineMap::new(1 << 12, 4)
}

/// A state no table has (the CPU checks its table's states fit below).
impl Slot for LlcLine {
    const ABSENT: LlcLine = LlcLine {
        state: u8::MAX,
        copy: None,
    };
    #[inline]
    fn is_absent(&self) -> bool {
        self.state == u8::MAX
    }
}

/// A slot of [`CopySlab`] (1-based, so that an absent copy costs no space).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct CopySlot(std::num::NonZeroU32);

/// The LLC's copies of lines in one array whose freed slots are reused: a
/// line that arrives costs a 128-byte copy out of its message's buffer
/// (which goes back to the pool, [`ccsim_coherence::recycle_line`]) instead of an
/// allocation kept per line, and dropping the LLC frees one array instead
/// of one box per line.
#[derive(Debug)]
pub(super) struct CopySlab {
    lines: Vec<Line>,
    free: Vec<CopySlot>,
}

impl CopySlab {
    /// An empty slab with room for `lines` copies (the LLC's capacity; 0
    /// when it is unlimited): a bounded LLC's copies never move, and its
    /// slab is never copied to grow.
    pub(super) fn with_capacity(lines: usize) -> Self {
        CopySlab {
            lines: Vec::with_capacity(lines),
            free: Vec::new(),
        }
    }
    pub(super) fn insert(&mut self, data: &Line) -> CopySlot {
        if let Some(s) = self.free.pop() {
            *self.get_mut(s) = *data;
            return s;
        }
        self.lines.push(*data);
        let n = u32::try_from(self.lines.len()).expect("fewer than 2^32 LLC copies");
        CopySlot(std::num::NonZeroU32::new(n).expect("one-based"))
    }
    pub(super) fn remove(&mut self, s: CopySlot) {
        self.free.push(s);
    }
    pub(super) fn get(&self, s: CopySlot) -> &Line {
        &self.lines[s.0.get() as usize - 1]
    }
    pub(super) fn get_mut(&mut self, s: CopySlot) -> &mut Line {
        &mut self.lines[s.0.get() as usize - 1]
    }
}

/// An LLC row's effects (the engine decides which) on the LLC's copy of
/// the line, which lives in the copy slab: the fields of the CPU a row
/// touches, borrowed apart from the LLC's map so that the map entry is
/// held across the row.
pub(super) struct LlcRow<'a, 'c> {
    pub(super) copies: &'a mut CopySlab,
    pub(super) tables: &'a Tables,
    pub(super) checker: &'a Rc<RefCell<Checker>>,
    pub(super) store_log: &'a mut Vec<(Tick, u64, u8, u64)>,
    pub(super) ctx: &'a mut Ctx<'c, Msg>,
    /// The line's copy (its slab slot) as the row leaves it.
    pub(super) copy: &'a mut Option<CopySlot>,
    pub(super) line: u64,
    /// The received line, if the row handles a data message.
    pub(super) input: Option<&'a Line>,
    /// The core's store (word, value) for `store`.
    pub(super) store: Option<(u8, u64)>,
    /// Whether the online checks run.
    pub(super) checks: bool,
    pub(super) now: Tick,
    /// When the row's messages leave.
    pub(super) delay: Tick,
    /// The CPU's ECI links (a line's messages go on link `line % links`).
    pub(super) links: u64,
}

/// Sends message `msg` of `line` (with `data`) from the LLC at `at`, on
/// link `line % links`. The path from the LLC to the link is a fixed delay
/// that ends in the send and nothing else: the send's place is reserved now
/// and the kernel makes it there (`Ctx::send_at`), no event of its own.
#[inline]
pub(super) fn send_to_link(
    tables: &Tables,
    ctx: &mut Ctx<'_, Msg>,
    line: u64,
    links: u64,
    at: Tick,
    msg: u16,
    data: Option<Box<Line>>,
) {
    let out = tables.make(msg, line, data);
    let (bytes, vc) = EciLink::wire_of(&tables.msgs[msg as usize]);
    let port = modulo(line, links) as PortId;
    ctx.send_at(at, port, Msg::Coh(out), bytes, vc);
}

/// A row's `fill`: the line's copy (`copy`, a slot of `copies`) becomes
/// the received line `input`, or goes when nothing was received.
#[inline]
pub(super) fn fill_copy(copies: &mut CopySlab, copy: &mut Option<CopySlot>, input: Option<&Line>) {
    *copy = match (*copy, input) {
        (None, None) => None,
        (Some(s), None) => {
            copies.remove(s);
            None
        }
        (Some(s), Some(d)) => {
            *copies.get_mut(s) = *d;
            Some(s)
        }
        (None, Some(d)) => Some(copies.insert(d)),
    };
}

impl Effects<()> for LlcRow<'_, '_> {
    #[inline]
    fn send(&mut self, s: &SendStep<()>) -> Result<(), String> {
        let copies = &*self.copies;
        let data = s
            .data
            .then(|| boxed_line(self.copy.map_or([0; LINE_BYTES], |c| *copies.get(c))));
        let at = self.now + self.delay;
        send_to_link(
            self.tables,
            self.ctx,
            self.line,
            self.links,
            at,
            s.msg,
            data,
        );
        Ok(())
    }

    #[inline]
    fn fill(&mut self) -> Result<(), String> {
        fill_copy(self.copies, self.copy, self.input);
        Ok(())
    }

    #[inline]
    fn store(&mut self) -> Result<(), String> {
        let s = match *self.copy {
            Some(s) => s,
            None => *self.copy.insert(self.copies.insert(&[0; LINE_BYTES])),
        };
        let v = self.copies.get_mut(s);
        if let Some(d) = self.input {
            *v = *d;
        } else if let Some((w, val)) = self.store {
            put_word(v, w, val);
            self.store_log.push((self.now, self.line, w, val));
        }
        if self.checks {
            self.checker.borrow_mut().store(self.now, self.line, v);
        }
        Ok(())
    }

    #[inline]
    fn check(&mut self) -> Result<(), String> {
        if self.checks {
            let v = self.copy.map_or(&[0; LINE_BYTES], |s| self.copies.get(s));
            self.checker
                .borrow_mut()
                .check_read(self.now, self.line, PEER, v);
        }
        Ok(())
    }

    /// The received data (a local row: the copy) was the latest write at
    /// some moment of the LLC's read window; the loads that use it are
    /// checked against their own windows in `CoherentCpu::read_once`.
    #[inline]
    fn check_window(&mut self) -> Result<(), String> {
        if self.checks {
            let copy = self.copy.map(|s| self.copies.get(s));
            let v = self.input.or(copy).unwrap_or(&[0; LINE_BYTES]);
            self.checker
                .borrow_mut()
                .check_window_read(self.now, self.line, PEER, None, v);
        }
        Ok(())
    }
}

/// Where a set's lines are in [`LruSets::lines`].
#[derive(Debug, Clone, Copy, Default)]
struct SetChunk {
    start: usize,
    len: u32,
    /// Places reserved for the set (0: none yet).
    cap: u32,
}

/// The valid lines of each LLC set, least recently used first, all in one
/// arena: a set gets a chunk of `ways + 1` places (its lines plus the one
/// that makes it evict) when it first holds a line, appended to the arena.
/// So filling the LLC costs no allocation per set (a long stream touches
/// every set), and memory still follows the sets used. A set that
/// overflows (its lines have open work, see `enforce_capacity`) moves to a
/// chunk twice as large at the end; the old chunk stays unused.
#[derive(Debug, Default)]
pub(super) struct LruSets {
    lines: Vec<u64>,
    sets: Vec<SetChunk>,
    ways: usize,
}

impl LruSets {
    /// `sets` sets of `ways` ways (no sets: capacity unlimited, nothing to
    /// order).
    pub(super) fn new(sets: usize, ways: usize) -> LruSets {
        LruSets {
            lines: Vec::new(),
            sets: vec![SetChunk::default(); sets],
            ways,
        }
    }

    /// Whether sets are kept (the capacity is limited).
    #[inline]
    pub(super) fn enabled(&self) -> bool {
        !self.sets.is_empty()
    }

    /// Set `set`'s lines, least recently used first.
    #[inline]
    pub(super) fn lines(&self, set: usize) -> &[u64] {
        let c = self.sets[set];
        &self.lines[c.start..c.start + c.len as usize]
    }

    #[inline]
    fn lines_mut(&mut self, set: usize) -> &mut [u64] {
        let c = self.sets[set];
        &mut self.lines[c.start..c.start + c.len as usize]
    }

    /// Adds `line` as the most recently used line of `set`.
    #[inline]
    pub(super) fn push_back(&mut self, set: usize, line: u64) {
        if self.sets[set].len == self.sets[set].cap {
            self.grow(set);
        }
        let c = &mut self.sets[set];
        self.lines[c.start + c.len as usize] = line;
        c.len += 1;
    }

    /// Gives `set` a chunk with room for one more line.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, set: usize) {
        let c = self.sets[set];
        let start = self.lines.len();
        let cap = if c.cap == 0 {
            self.ways + 1
        } else {
            self.lines
                .extend_from_within(c.start..c.start + c.len as usize);
            2 * c.cap as usize
        };
        self.lines.resize(start + cap, 0);
        self.sets[set] = SetChunk {
            start,
            len: c.len,
            cap: u32::try_from(cap).expect("fewer than 2^32 lines in a set"),
        };
    }

    /// Moves `line` to the most recently used end of `set`; whether it was
    /// there (at most once; searched from that end, where recent lines
    /// are). The order is that of a removal and a push at the back.
    #[inline]
    pub(super) fn touch(&mut self, set: usize, line: u64) -> bool {
        let q = self.lines_mut(set);
        if q.last() == Some(&line) {
            // Already the most recent (a hit right after the fill).
            return true;
        }
        let Some(pos) = q.iter().rposition(|&l| l == line) else {
            return false;
        };
        q[pos..].rotate_left(1);
        true
    }

    /// Removes `line` from `set` (it is there at most once), keeping the
    /// order of the others.
    #[inline]
    pub(super) fn remove(&mut self, set: usize, line: u64) {
        let q = self.lines_mut(set);
        if let Some(pos) = q.iter().position(|&l| l == line) {
            q[pos..].rotate_left(1);
            self.sets[set].len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::super::l1::{remove_lru, touch_lru};
    use super::{llc_map, CopySlot, LlcLine, LruSets};

    /// The arena keeps each set in the order the per-set deques did,
    /// through fills, touches, removals and overflows past `ways + 1`.
    #[test]
    fn lru_sets_keep_the_order_of_a_deque_per_set() {
        let (sets, ways) = (4, 3);
        let mut arena = LruSets::new(sets, ways);
        let mut deques: Vec<VecDeque<u64>> = vec![VecDeque::new(); sets];
        let mut x: u64 = 11;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let set = (x >> 60) as usize % sets;
            let line = (x >> 40) % 12;
            let q = &mut deques[set];
            match (x >> 20) % 3 {
                0 if !q.contains(&line) && q.len() < 3 * ways => {
                    q.push_back(line);
                    arena.push_back(set, line);
                }
                1 => assert_eq!(arena.touch(set, line), touch_lru(q, line)),
                _ => {
                    remove_lru(q, line);
                    arena.remove(set, line);
                }
            }
            for (s, q) in deques.iter().enumerate() {
                assert!(arena.lines(s).iter().eq(q.iter()), "set {s}");
            }
        }
    }

    /// The map holds what a hash map would, whether a line lands in the
    /// dense range, in the sparse map, or moves from one to the other as
    /// the dense range grows.
    #[test]
    fn llc_map_holds_what_a_hash_map_does() {
        let mut map = llc_map();
        let mut reference = std::collections::HashMap::new();
        let mut x: u64 = 5;
        for step in 0..40_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Mostly a growing sequential front, some scattered lines far
            // above it, some lines below it again.
            let line = match (x >> 60) % 4 {
                0 => (x >> 8) % (1 << 30),
                1 => (x >> 8) % (step + 1),
                _ => step,
            };
            if (x >> 33) % 5 == 0 {
                map.remove(line);
                reference.remove(&line);
            } else {
                let l = LlcLine {
                    state: (x >> 40) as u8 % 7,
                    copy: std::num::NonZeroU32::new((x >> 44) as u32 % 3).map(CopySlot),
                };
                map.insert(line, l);
                reference.insert(line, l);
            }
            let probe = (x >> 12) % (step + 2);
            assert_eq!(map.get(probe), reference.get(&probe).copied());
        }
        let mut all: Vec<_> = map.iter().collect();
        all.sort_by_key(|&(l, _)| l);
        let mut want: Vec<_> = reference.into_iter().collect();
        want.sort_by_key(|&(l, _)| l);
        assert_eq!(all, want);
        let (dense, sparse) = map.spread();
        assert!(dense > 0 && sparse > 0);
    }
}
