//! What a core runs: its operations ([`CpuOp`], [`AtomicOp`]), what a
//! completed one reports ([`Completed`]), and the 64-bit words of a line
//! they read and write.

use ccsim_coherence::Line;
use ccsim_kernel::prelude::*;

/// A read-modify-write on one 64-bit word.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AtomicOp {
    /// Compare-and-swap: writes `new` if the word equals `expected`.
    Cas {
        /// Value compared with.
        expected: u64,
        /// Value written on success.
        new: u64,
    },
    /// Adds (wrapping).
    FetchAdd(u64),
    /// Writes the value.
    Swap(u64),
}

impl AtomicOp {
    /// The value to write given the `old` one (`None`: a failed CAS writes
    /// nothing).
    pub fn apply(&self, old: u64) -> Option<u64> {
        match *self {
            AtomicOp::Cas { expected, new } => (old == expected).then_some(new),
            AtomicOp::FetchAdd(d) => Some(old.wrapping_add(d)),
            AtomicOp::Swap(v) => Some(v),
        }
    }
}

/// A core operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CpuOp {
    /// Load a line.
    Load {
        /// Line index.
        line: u64,
    },
    /// Store a 64-bit word into a line.
    Store {
        /// Line index.
        line: u64,
        /// Word index (0..16).
        word: u8,
        /// Value.
        value: u64,
    },
    /// Atomic read-modify-write of a word (LDXR/STXR on ARMv8.0); completes
    /// with the old value in [`Completed::old`].
    Atomic {
        /// Line index.
        line: u64,
        /// Word index (0..16).
        word: u8,
        /// The operation.
        op: AtomicOp,
    },
    /// Barrier (DMB): completes when every earlier op completed and the
    /// write buffer drained; later ops issue after it.
    Fence,
    /// Cache maintenance (DC CIVAC): write back (if dirty) and invalidate the
    /// line (the table's `evict_dirty`, `evict_clean` or `drop` row; posted).
    Evict {
        /// Line index.
        line: u64,
    },
    /// Cache maintenance (DC CVAC): write back a dirty line and keep it (the
    /// table's `downgrade` row when dirty; posted).
    Clean {
        /// Line index.
        line: u64,
    },
    /// Voluntary downgrade to Shared (the table's `downgrade` row; posted).
    Downgrade {
        /// Line index.
        line: u64,
    },
    /// Prefetch for reading (`PRFM PLDL1KEEP`): completes at issue; starts
    /// the `load` row if the line is not readable.
    Prefetch {
        /// Line index.
        line: u64,
    },
    /// Prefetch for writing (`PRFM PSTL1KEEP`): obtain the line with write
    /// access without storing (the table's `getx` row); completes when the
    /// line is held writable.
    PrefetchExclusive {
        /// Line index.
        line: u64,
    },
    /// Core work that touches no line: completes `ps` after issue (holds
    /// its MSHR slot, so later ops issue after it when `mshrs` is 1).
    Wait {
        /// Duration (ps).
        ps: Tick,
    },
}

impl CpuOp {
    /// `ops` random operations on lines `0..lines` (a random tester's
    /// core): 10% evictions, 10% downgrades, 40% loads and 40% stores of a
    /// random word, store `i` writing `i + 1`.
    pub fn random_program(rng: &mut SimRng, ops: u64, lines: u64) -> Vec<CpuOp> {
        (0..ops)
            .map(|i| {
                let line = rng.below(lines);
                match rng.below(10) {
                    0 => CpuOp::Evict { line },
                    1 => CpuOp::Downgrade { line },
                    2..=5 => CpuOp::Load { line },
                    _ => CpuOp::Store {
                        line,
                        word: rng.below(16) as u8,
                        value: i + 1,
                    },
                }
            })
            .collect()
    }

    /// The op's kind in traces (`load`, `store`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            CpuOp::Load { .. } => "load",
            CpuOp::Store { .. } => "store",
            CpuOp::Atomic { .. } => "atomic",
            CpuOp::Fence => "fence",
            CpuOp::Evict { .. } => "evict",
            CpuOp::Clean { .. } => "clean",
            CpuOp::Downgrade { .. } => "downgrade",
            CpuOp::Prefetch { .. } => "prefetch",
            CpuOp::PrefetchExclusive { .. } => "prefetch_exclusive",
            CpuOp::Wait { .. } => "wait",
        }
    }

    /// The op's line (`None` for [`CpuOp::Wait`] and [`CpuOp::Fence`]).
    pub fn line(&self) -> Option<u64> {
        match self {
            CpuOp::Load { line }
            | CpuOp::Store { line, .. }
            | CpuOp::Atomic { line, .. }
            | CpuOp::Evict { line }
            | CpuOp::Clean { line }
            | CpuOp::Downgrade { line }
            | CpuOp::Prefetch { line }
            | CpuOp::PrefetchExclusive { line } => Some(*line),
            CpuOp::Wait { .. } | CpuOp::Fence => None,
        }
    }
}

/// A completed operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Completed {
    /// The core that ran it.
    pub core: usize,
    /// Index in the core's program.
    pub op: usize,
    /// Issue tick.
    pub issued: Tick,
    /// Issue to completion.
    pub latency_ps: Tick,
    /// The line's bytes the op saw, with the core's own older buffered
    /// stores (after a store: with it; for a buffered store, the LLC's copy
    /// if it has one, else zeros, under the buffered words).
    pub data: Line,
    /// The word's value before an atomic.
    pub old: Option<u64>,
}

pub(super) fn check_words(ops: &[CpuOp], what: &str) -> Result<(), String> {
    for (i, op) in ops.iter().enumerate() {
        if let CpuOp::Store { word, .. } | CpuOp::Atomic { word, .. } = op {
            if *word >= 16 {
                return Err(format!(
                    "{what}[{i}]: word {word} is outside the 16-word line"
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn put_word(l: &mut Line, w: u8, v: u64) {
    let o = w as usize * 8;
    l[o..o + 8].copy_from_slice(&v.to_le_bytes());
}

pub(super) fn word_of(l: &Line, w: u8) -> u64 {
    let o = w as usize * 8;
    u64::from_le_bytes(l[o..o + 8].try_into().expect("8 bytes"))
}
