//! The access patterns of the CircusTent atomic-memory benchmark (Williams
//! et al., MEMSYS'21; Cohet §VI-D runs six of them as remote atomic
//! operations, RAO), as programs of processing elements (PEs) that issue
//! atomics on a real array.
//!
//! CircusTent's data: `ARRAY`, `elems` 64-bit words of random values, and
//! `IDX`, `(pes + 1) × iters` random indices (into `ARRAY`, or for
//! PTRCHASE into `IDX` itself). Each PE runs `iters` iterations of its
//! kernel; an iteration is one or more atomics, each a fetch-and-add (FAA)
//! or a compare-and-swap (CAS) on one word. The kernels, as the benchmark's
//! OpenMP implementation defines them (PE `p`, iteration `i` from
//! `p × iters`):
//!
//! | pattern | atomics of an iteration |
//! |---|---|
//! | RAND | `ARRAY[IDX[i]] += 1` |
//! | STRIDE1 | `ARRAY[i] += 0xF` |
//! | STRIDEN | `ARRAY[i × stride] += 0xF` (`i` from `p × iters`) |
//! | PTRCHASE | `next = IDX[next] (+ 0)`, from `next = p × iters` |
//! | CENTRAL | `ARRAY[0] += 1` |
//! | SCATTER | `dest = IDX[i+1]`; `val = ARRAY[i] (+1)`; `ARRAY[dest] += val` |
//! | GATHER | `dest = IDX[i+1]`; `val = ARRAY[dest] (+1)`; `ARRAY[i] += val` |
//! | SG | `src = IDX[i]`; `dest = IDX[i+1]`; `val = ARRAY[src] (+1)`; `ARRAY[dest] += val` |
//!
//! The CAS variants swap a word for the value the kernel read (a CAS that
//! succeeds without changing it, except SCATTER/GATHER/SG's last step,
//! which writes `val`). A later atomic of an iteration uses an earlier
//! one's result, so a PE is a small program that asks for its next atomic
//! given the last result ([`PeProgram::next`]), and the order in which the
//! PEs' atomics reach memory decides the final array:
//! [`Memory::apply`] executes them one at a time, which is the sequential
//! reference any model of a NIC must reproduce for its own commit order.
//!
//! ```
//! use ccsim_devices::circustent::{Kind, Pattern, Workload};
//! let w = Workload::new(Pattern::Central, Kind::Add, 4, 100, 1 << 10, 1, 7).unwrap();
//! let (memory, atomics) = w.run_round_robin();
//! // 4 PEs x 100 iterations, each adding 1 to ARRAY[0].
//! assert_eq!(atomics, 400);
//! assert_eq!(memory.array[0], w.initial().array[0] + 400);
//! ```

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A CircusTent access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Random words of `ARRAY` (through `IDX`).
    Rand,
    /// Consecutive words.
    Stride1,
    /// Every `stride`-th word.
    StrideN,
    /// A chain of dependent reads through `IDX`.
    PtrChase,
    /// Every PE on `ARRAY[0]`.
    Central,
    /// Read `ARRAY[i]`, add it to a random word.
    Scatter,
    /// Read a random word, add it to `ARRAY[i]`.
    Gather,
    /// Read a random word, add it to another random word.
    Sg,
}

impl Pattern {
    /// The benchmark's names.
    pub const NAMES: [&'static str; 8] = [
        "RAND", "STRIDE1", "STRIDEN", "PTRCHASE", "CENTRAL", "SCATTER", "GATHER", "SG",
    ];

    /// From the benchmark's name (case-insensitive).
    pub fn parse(name: &str) -> Option<Pattern> {
        let all = [
            Pattern::Rand,
            Pattern::Stride1,
            Pattern::StrideN,
            Pattern::PtrChase,
            Pattern::Central,
            Pattern::Scatter,
            Pattern::Gather,
            Pattern::Sg,
        ];
        Pattern::NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| all[i])
    }

    /// Atomics per iteration (CircusTent's GAM count).
    pub fn atomics_per_iteration(self) -> u64 {
        match self {
            Pattern::Scatter | Pattern::Gather => 3,
            Pattern::Sg => 4,
            _ => 1,
        }
    }
}

/// The atomic the kernels use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fetch-and-add.
    Add,
    /// Compare-and-swap.
    Cas,
}

/// Which array a word is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `ARRAY`.
    Array,
    /// `IDX`.
    Idx,
}

/// One atomic on one 64-bit word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Atomic {
    /// Adds `add`; returns the old value.
    Add {
        /// The array.
        target: Target,
        /// The word.
        index: u64,
        /// The addend.
        add: u64,
    },
    /// Writes `new` if the word equals `expected`; returns the old value.
    Cas {
        /// The array.
        target: Target,
        /// The word.
        index: u64,
        /// The value compared with.
        expected: u64,
        /// The value written on a match.
        new: u64,
    },
}

impl Atomic {
    /// The word it touches.
    pub fn word(&self) -> (Target, u64) {
        match *self {
            Atomic::Add { target, index, .. } | Atomic::Cas { target, index, .. } => {
                (target, index)
            }
        }
    }
}

/// `ARRAY` and `IDX`, the memory the atomics act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    /// The data words.
    pub array: Vec<u64>,
    /// The index words.
    pub idx: Vec<u64>,
}

impl Memory {
    /// Executes `a`; returns the word's old value.
    pub fn apply(&mut self, a: &Atomic) -> u64 {
        let (target, index) = a.word();
        let word = match target {
            Target::Array => &mut self.array[index as usize],
            Target::Idx => &mut self.idx[index as usize],
        };
        let old = *word;
        match *a {
            Atomic::Add { add, .. } => *word = old.wrapping_add(add),
            Atomic::Cas { expected, new, .. } => {
                if old == expected {
                    *word = new;
                }
            }
        }
        old
    }
}

/// A CircusTent run's shape: the pattern, the atomic, PEs, iterations per
/// PE, `ARRAY`'s words, STRIDEN's stride, and the seed of the random data.
#[derive(Debug, Clone)]
pub struct Workload {
    pattern: Pattern,
    kind: Kind,
    pes: u64,
    iters: u64,
    stride: u64,
    initial: Memory,
}

impl Workload {
    /// The data CircusTent allocates: `ARRAY` of random words, `IDX` of
    /// random indices below `elems - 1` (PTRCHASE: below the length of
    /// `IDX`). Errors as the benchmark's own checks: no PEs, iterations or
    /// stride, or a strided walk past `ARRAY`.
    pub fn new(
        pattern: Pattern,
        kind: Kind,
        pes: u64,
        iters: u64,
        elems: u64,
        stride: u64,
        seed: u64,
    ) -> Result<Workload, String> {
        if pes == 0 || iters == 0 || stride == 0 {
            return Err("circustent: pes, iters and stride must be at least 1".into());
        }
        if pes * iters * stride - stride >= elems {
            return Err(format!(
                "circustent: ARRAY of {elems} words is not large enough for pes = {pes}, iters = {iters}, stride = {stride}"
            ));
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let n_idx = (pes + 1) * iters;
        let bound = if pattern == Pattern::PtrChase {
            n_idx
        } else {
            elems - 1
        };
        let idx = (0..n_idx).map(|_| rng.next_u64() % bound).collect();
        let array = (0..elems).map(|_| rng.next_u64() >> 33).collect();
        Ok(Workload {
            pattern,
            kind,
            pes,
            iters,
            stride,
            initial: Memory { array, idx },
        })
    }

    /// The memory before the run.
    pub fn initial(&self) -> &Memory {
        &self.initial
    }

    /// The number of PEs.
    pub fn pes(&self) -> u64 {
        self.pes
    }

    /// PE `pe`'s program.
    pub fn program(&self, pe: u64) -> PeProgram {
        PeProgram {
            pattern: self.pattern,
            kind: self.kind,
            start: pe * self.iters,
            iters: self.iters,
            stride: self.stride,
            iteration: 0,
            step: 0,
            regs: [0; 3],
            chase: pe * self.iters,
        }
    }

    /// Runs every PE's program against one memory, one atomic per PE in
    /// turn (a sequential reference); returns the final memory and the
    /// number of atomics.
    pub fn run_round_robin(&self) -> (Memory, u64) {
        let mut memory = self.initial.clone();
        let mut pes: Vec<(PeProgram, Option<u64>)> =
            (0..self.pes).map(|p| (self.program(p), None)).collect();
        let mut count = 0;
        loop {
            let mut any = false;
            for (program, last) in pes.iter_mut() {
                if let Some(a) = program.next(&memory, *last) {
                    *last = Some(memory.apply(&a));
                    count += 1;
                    any = true;
                }
            }
            if !any {
                return (memory, count);
            }
        }
    }
}

/// One PE's kernel as a program: [`next`](Self::next) gives its next
/// atomic from the result of the last one.
#[derive(Debug, Clone)]
pub struct PeProgram {
    pattern: Pattern,
    kind: Kind,
    start: u64,
    iters: u64,
    stride: u64,
    iteration: u64,
    /// The atomic within the iteration.
    step: u64,
    /// Values the iteration read (src, dest, val).
    regs: [u64; 3],
    /// PTRCHASE's next index.
    chase: u64,
}

impl PeProgram {
    /// The next atomic, given the result of the previous one (`None` at the
    /// start), or `None` when the kernel is done. The CAS variants need
    /// the word's present value to compare with, as the kernels read it
    /// just before: `memory` is the PE's view of it.
    pub fn next(&mut self, memory: &Memory, last: Option<u64>) -> Option<Atomic> {
        if let Some(v) = last {
            self.take(v);
        }
        if self.iteration == self.iters {
            return None;
        }
        let i = self.start + self.iteration;
        let a = |index: u64, add: u64| (Target::Array, index, add);
        let x = |index: u64| (Target::Idx, index, 0);
        // (target, index, FAA addend) of this step.
        let (target, index, add) = match (self.pattern, self.step) {
            (Pattern::Rand, _) => a(memory.idx[i as usize], 1),
            (Pattern::Stride1, _) => a(i, 0xF),
            (Pattern::StrideN, _) => a(i * self.stride, 0xF),
            (Pattern::PtrChase, _) => x(self.chase),
            (Pattern::Central, _) => a(0, 1),
            (Pattern::Scatter, 0) | (Pattern::Gather, 0) => x(i + 1),
            (Pattern::Scatter, 1) => a(i, 1),
            (Pattern::Scatter, _) => a(self.regs[1], self.regs[2]),
            (Pattern::Gather, 1) => a(self.regs[1], 1),
            (Pattern::Gather, _) => a(i, self.regs[2]),
            (Pattern::Sg, 0) => x(i),
            (Pattern::Sg, 1) => x(i + 1),
            (Pattern::Sg, 2) => a(self.regs[0], 1),
            (Pattern::Sg, _) => a(self.regs[1], self.regs[2]),
        };
        Some(match self.kind {
            Kind::Add => Atomic::Add { target, index, add },
            Kind::Cas => {
                let word = match target {
                    Target::Array => memory.array[index as usize],
                    Target::Idx => memory.idx[index as usize],
                };
                // The last step of SCATTER/GATHER/SG writes the value read;
                // every other CAS swaps a word for itself.
                let writes_val = self.step + 1 == self.pattern.atomics_per_iteration()
                    && self.pattern.atomics_per_iteration() > 1;
                let new = if writes_val { self.regs[2] } else { word };
                Atomic::Cas {
                    target,
                    index,
                    expected: word,
                    new,
                }
            }
        })
    }

    /// Records the result of this step's atomic and moves on.
    fn take(&mut self, v: u64) {
        match (self.pattern, self.step) {
            (Pattern::PtrChase, _) => self.chase = v,
            (Pattern::Sg, 0) => self.regs[0] = v,
            (Pattern::Scatter, 0) | (Pattern::Gather, 0) | (Pattern::Sg, 1) => self.regs[1] = v,
            (Pattern::Scatter, 1) | (Pattern::Gather, 1) | (Pattern::Sg, 2) => self.regs[2] = v,
            _ => {}
        }
        self.step += 1;
        if self.step == self.pattern.atomics_per_iteration() {
            self.step = 0;
            self.iteration += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pattern: Pattern, kind: Kind, pes: u64, iters: u64) -> (Workload, Memory, u64) {
        let w = Workload::new(pattern, kind, pes, iters, 4096, 4, 11).unwrap();
        let (m, n) = w.run_round_robin();
        (w, m, n)
    }

    #[test]
    fn every_pattern_issues_its_atomics_per_iteration() {
        for name in Pattern::NAMES {
            let p = Pattern::parse(name).unwrap();
            for kind in [Kind::Add, Kind::Cas] {
                let (_, _, n) = run(p, kind, 3, 50);
                assert_eq!(n, 3 * 50 * p.atomics_per_iteration(), "{name} {kind:?}");
            }
        }
        assert_eq!(Pattern::parse("ptrchase"), Some(Pattern::PtrChase));
        assert_eq!(Pattern::parse("HOTSPOT"), None);
    }

    #[test]
    fn adds_land_where_the_kernels_put_them() {
        // RAND: one per index of each PE's slice of IDX.
        let (w, m, _) = run(Pattern::Rand, Kind::Add, 2, 100);
        let mut want = w.initial().array.clone();
        for &k in &w.initial().idx[..200] {
            want[k as usize] += 1;
        }
        assert_eq!(m.array, want);
        // STRIDEN: 0xF on every stride-th word of the PEs' ranges.
        let (w, m, _) = run(Pattern::StrideN, Kind::Add, 2, 100);
        for (k, (&after, &before)) in m.array.iter().zip(&w.initial().array).enumerate() {
            let hit = k % 4 == 0 && k < 2 * 100 * 4;
            assert_eq!(after, before + if hit { 0xF } else { 0 }, "word {k}");
        }
        // CAS variants that swap a word for itself change nothing.
        for p in [
            Pattern::Rand,
            Pattern::Stride1,
            Pattern::PtrChase,
            Pattern::Central,
        ] {
            let (w, m, _) = run(p, Kind::Cas, 2, 100);
            assert_eq!(&m, w.initial(), "{p:?}");
        }
    }

    #[test]
    fn ptrchase_follows_the_chain_and_leaves_memory_alone() {
        let (w, m, n) = run(Pattern::PtrChase, Kind::Add, 1, 20);
        assert_eq!((&m, n), (w.initial(), 20));
        // The PE's atomics visit start, IDX[start], IDX[IDX[start]], ...
        let mut p = w.program(0);
        let mut at = 0u64;
        let mut last = None;
        while let Some(a) = p.next(&m, last) {
            assert_eq!(a.word(), (Target::Idx, at));
            last = Some(m.idx[at as usize]);
            at = m.idx[at as usize];
        }
    }

    #[test]
    fn scatter_gather_and_sg_move_values_read_in_the_same_iteration() {
        // One PE, so the order is the program order: replay it by hand.
        for p in [Pattern::Scatter, Pattern::Gather, Pattern::Sg] {
            let (w, m, _) = run(p, Kind::Add, 1, 60);
            let mut want = w.initial().clone();
            for i in 0..60usize {
                let (src, dest) = match p {
                    Pattern::Scatter => (i, want.idx[i + 1] as usize),
                    Pattern::Gather => (want.idx[i + 1] as usize, i),
                    _ => (want.idx[i] as usize, want.idx[i + 1] as usize),
                };
                let val = want.array[src];
                want.array[src] += 1;
                want.array[dest] += val;
            }
            assert_eq!(m, want, "{p:?}");
        }
    }

    #[test]
    fn the_benchmarks_size_checks() {
        // 4 PEs x 100 strides of 4: the last word is 4 x 100 x 4 - 4 = 1,596.
        assert!(Workload::new(Pattern::StrideN, Kind::Add, 4, 100, 1596, 4, 0).is_err());
        assert!(Workload::new(Pattern::StrideN, Kind::Add, 4, 100, 1597, 4, 0).is_ok());
        assert!(Workload::new(Pattern::Rand, Kind::Add, 0, 100, 1 << 10, 1, 0).is_err());
    }
}
