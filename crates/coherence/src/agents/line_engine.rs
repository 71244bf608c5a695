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

/// What a far atomic's request carries, as the simulator's data messages
/// hold it: a CCIX atomic request names its operation, the addressed
/// bytes (the low bits of its address) and its operands, the compare and
/// swap values of an AtomicCompare or the addend of an AtomicStore ADD
/// (CCIX Base Spec 1.0 §3.3.2, atomic requests carry their data; AMBA CHI
/// IHI0050 §2.10: the completer compares, writes the swap value on a
/// match and returns the original value). Lines in messages are bytes
/// only, so the request's operation and offset travel in the payload:
///
/// ```text
///   bytes 0..7    ATOMIC_OPERANDS_TAG (the request is an encoded operation)
///   byte  7       1: AtomicStore ADD, 2: AtomicCompare
///   bytes 8..16   the addressed word's byte offset in the line
///   bytes 16..24  the addend, or the compare value
///   bytes 24..32  the swap value (AtomicCompare)
/// ```
///
/// A home that executes far atomics runs an encoded operation on the
/// line's bytes; any other operand line is an AtomicSwap of the whole line
/// (the random tester's operands).
pub const ATOMIC_OPERANDS_TAG: [u8; 7] = *b"ATOMOP\0";

impl LineRmw {
    /// The operation as a far atomic's request data (see
    /// [`ATOMIC_OPERANDS_TAG`]).
    pub fn to_operands(&self) -> Line {
        let mut data = [0u8; crate::line::LINE_BYTES];
        data[..7].copy_from_slice(&ATOMIC_OPERANDS_TAG);
        let (code, a, b) = match *self {
            LineRmw::Add { add, .. } => (1u8, add, 0),
            LineRmw::Cas { expected, new, .. } => (2u8, expected, new),
        };
        data[7] = code;
        data[8..16].copy_from_slice(&(self.offset() as u64).to_le_bytes());
        data[16..24].copy_from_slice(&a.to_le_bytes());
        data[24..32].copy_from_slice(&b.to_le_bytes());
        data
    }

    /// The operation a far atomic's request data encodes: `None` for data
    /// without the tag (a whole line to swap in), an error naming the
    /// problem for a tagged request that no `line_bytes` line can run (an
    /// unknown operation, a word not 8-byte aligned or past the line).
    pub fn from_operands(data: &Line, line_bytes: usize) -> Option<Result<LineRmw, String>> {
        if data[..7] != ATOMIC_OPERANDS_TAG {
            return None;
        }
        let word = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
        let offset = word(8);
        if offset % 8 != 0 || offset + 8 > line_bytes as u64 {
            return Some(Err(format!(
                "a far atomic on bytes {offset}..{} of a {line_bytes} B line: the word must be 8-byte aligned inside the line",
                offset.saturating_add(8)
            )));
        }
        let offset = offset as usize;
        Some(match data[7] {
            1 => Ok(LineRmw::Add {
                offset,
                add: word(16),
            }),
            2 => Ok(LineRmw::Cas {
                offset,
                expected: word(16),
                new: word(24),
            }),
            code => Err(format!(
                "a far atomic with operation code {code}: 1 (AtomicStore ADD) or 2 (AtomicCompare)"
            )),
        })
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

    #[test]
    fn a_far_atomics_operands_round_trip_and_bad_ones_are_named() {
        let cas = LineRmw::Cas {
            offset: 24,
            expected: 7,
            new: 9,
        };
        assert_eq!(
            LineRmw::from_operands(&cas.to_operands(), 64),
            Some(Ok(cas))
        );
        let add = LineRmw::Add { offset: 0, add: 3 };
        assert_eq!(
            LineRmw::from_operands(&add.to_operands(), 64),
            Some(Ok(add))
        );
        // Untagged data is a whole line to swap in.
        assert_eq!(
            LineRmw::from_operands(&[5u8; crate::line::LINE_BYTES], 64),
            None
        );
        // A word past a 64 B line, and an unknown operation.
        let far = LineRmw::Cas {
            offset: 64,
            expected: 0,
            new: 1,
        };
        let e = LineRmw::from_operands(&far.to_operands(), 64)
            .unwrap()
            .unwrap_err();
        assert!(e.contains("bytes 64..72 of a 64 B line"), "{e}");
        let mut bad = cas.to_operands();
        bad[7] = 9;
        let e = LineRmw::from_operands(&bad, 64).unwrap().unwrap_err();
        assert!(e.contains("operation code 9"), "{e}");
    }
}
