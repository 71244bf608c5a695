//! Logic at a device's coherence agent that reads, modifies and writes
//! lines of its cache through the agent's verified table: the hook remote
//! atomic operation (RAO) processing elements use in a CXL device's DCOH
//! (Cohet §V-A2, Fig. 9).
//!
//! ```text
//!   LineEngine (e.g. RAO PEs)      TableAgent (the DCOH, cxl-cache table)
//!     poll ──── EngineOp ────────► `store` event on the line: a hit in E/M,
//!                                  RdOwn on a miss or from S; the row that
//!                                  writes applies the op's LineRmw to the
//!                                  line's real bytes
//!     acquired(old, new) ◄──────── the line is stable and exclusive (M)
//!       returns the hold time ───► the line is LOCKED: every message for
//!                                  it (a host snoop) waits in its queue
//!     released ◄────────────────── the hold is over: the waiting snoops run
//! ```
//!
//! The engine never touches the table: it asks for a line, and the agent
//! runs the same rows a device store runs, so the online checks see every
//! value the engine writes. The lock is the PE's "locks the target RAO
//! cacheline to prevent any invalidation during the RMW operation" (Cohet
//! §V-A2): a snoop that arrives while the line is held is answered after
//! the write stage, from the written line.

use std::any::Any;

use ccsim_kernel::time::Tick;

use crate::Line;

/// A read-modify-write of one little-endian 64-bit word of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRmw {
    /// Fetch-and-add: the word plus `add` (wrapping).
    Add {
        /// Byte offset of the word in the line.
        offset: usize,
        /// The addend.
        add: u64,
    },
    /// Compare-and-swap: `new` if the word equals `expected`.
    Cas {
        /// Byte offset of the word in the line.
        offset: usize,
        /// The value compared with.
        expected: u64,
        /// The value written on a match.
        new: u64,
    },
}

impl LineRmw {
    /// The word the operation acts on, read from `line`.
    pub fn word(&self, line: &[u8]) -> u64 {
        let o = self.offset();
        u64::from_le_bytes(line[o..o + 8].try_into().expect("8 bytes"))
    }

    /// The byte offset of its word.
    pub fn offset(&self) -> usize {
        match *self {
            LineRmw::Add { offset, .. } | LineRmw::Cas { offset, .. } => offset,
        }
    }

    /// `line` after the operation (the other words unchanged).
    pub fn apply(&self, line: &Line) -> Line {
        let old = self.word(line);
        let new = match *self {
            LineRmw::Add { add, .. } => old.wrapping_add(add),
            LineRmw::Cas { expected, new, .. } => {
                if old == expected {
                    new
                } else {
                    old
                }
            }
        };
        let mut out = *line;
        let o = self.offset();
        out[o..o + 8].copy_from_slice(&new.to_le_bytes());
        out
    }
}

/// One operation an engine asks its agent for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineOp {
    /// The engine's name for it, given back on completion.
    pub id: u64,
    /// The line.
    pub line: u64,
    /// What the write stage does to the line.
    pub rmw: LineRmw,
}

/// Device logic that drives its agent's lines (see the module docs).
pub trait LineEngine: Any {
    /// The next operation to issue at `now`, if the engine has one whose
    /// line is not `busy` (an operation of the agent open on it, the line
    /// locked, or a transient state): the engine keeps the others.
    fn poll(&mut self, now: Tick, busy: &mut dyn FnMut(u64) -> bool) -> Option<EngineOp>;

    /// The earliest time after `now` at which the engine has something to
    /// do without being told (a request arriving), if any.
    fn next_wake(&self, now: Tick) -> Option<Tick>;

    /// Operation `id` holds its line exclusively at `now` (the agent's
    /// pipeline included): `old` before and `new` after the write. Returns
    /// how long the line stays locked (the modify and write stages).
    fn acquired(&mut self, id: u64, old: &Line, new: &Line, now: Tick) -> Tick;

    /// The lock of operation `id` is released at `now`.
    fn released(&mut self, id: u64, now: Tick);

    /// Whether every operation the engine will ever issue is released.
    fn done(&self) -> bool;

    /// The engine, to read its results after a run.
    fn as_any(&self) -> &dyn Any;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmw_changes_only_its_word() {
        let mut line = [0u8; crate::line::LINE_BYTES];
        line[8..16].copy_from_slice(&41u64.to_le_bytes());
        line[0] = 7;
        let add = LineRmw::Add { offset: 8, add: 1 };
        let after = add.apply(&line);
        assert_eq!(add.word(&after), 42);
        assert_eq!(after[0], 7);
        let hit = LineRmw::Cas {
            offset: 8,
            expected: 42,
            new: 5,
        };
        assert_eq!(hit.word(&hit.apply(&after)), 5);
        let miss = LineRmw::Cas {
            offset: 8,
            expected: 1,
            new: 5,
        };
        assert_eq!(miss.apply(&after), after);
    }
}
