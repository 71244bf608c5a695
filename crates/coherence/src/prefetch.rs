//! CCKit §5.5's application-specific prefetcher: a timing model that sits
//! between a home's AXI side and its DRAM ([`MemTiming`]).
//!
//! ```text
//!   DC ──AXI read(line)──► Prefetcher ── hit in a unit: from its BRAM ──────► data
//!                              │ miss: the hot line first, direct path ─► DRAM
//!                              └─ a unit fetches the line's whole block in
//!                                 the background, burst after burst ──► DRAM
//! ```
//!
//! * **Units.** `units` parallel prefetch units (CCKit: eight), each
//!   holding one aligned block of `block_bytes` (8 KiB) in on-chip BRAM,
//!   with the tick each of its lines arrives.
//! * **A read of a line whose block a unit holds** is served from the
//!   unit: `bram` after the request, or when the line arrives if its burst
//!   is still in flight.
//! * **A read of a line no unit holds** goes to DRAM through the direct
//!   path at once (the hot line first), and a unit (a free one, else the
//!   least recently used) is assigned the block: it fetches the rest of
//!   the block in `burst_lines`-line AXI bursts (CCKit: 64 beats) queued
//!   on the DRAM behind the hot line, so they compete with later direct
//!   reads for the banks and the bus.
//! * **Sequential overlap.** A read in the second half of a block makes
//!   sure the next block is held or being fetched, allocating another unit
//!   preemptively (CCKit: "when a sequential read to the second half of a
//!   block is detected, another prefetch unit is preemptively allocated to
//!   get the next block").
//! * **Writes** go to DRAM; a unit holding the written line's block drops
//!   it (its copy would be stale).
//!
//! Only timing lives here: the line bytes stay in the home's
//! [`LineStore`](crate::memory::LineStore), so a prefetcher bug shows as a
//! time, never as wrong data.
//!
//! ```
//! use ccsim_coherence::memory::{Ddr, MemTiming};
//! use ccsim_coherence::prefetch::{Prefetcher, PrefetchConfig};
//! use ccsim_kernel::prelude::*;
//! let ddr = MemTiming::Ddr(Ddr::from_params(&Params::new()).unwrap());
//! let cfg = PrefetchConfig { units: 8, block_lines: 64, burst_lines: 32, bram: 9_300 };
//! let mut p = MemTiming::Prefetched(Box::new(Prefetcher::new(ddr.clone(), cfg)));
//! let mut plain = ddr;
//! // The first line of a block costs a DRAM access either way ...
//! let miss = p.access(0, 0, false);
//! assert_eq!(miss, plain.access(0, 0, false));
//! // ... the following lines come from the unit once their burst is in.
//! let later = 1_000_000;
//! assert_eq!(p.access(later, 1, false), later + 9_300);
//! ```

use ccsim_kernel::prelude::*;

use crate::memory::MemTiming;

/// The prefetcher's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrefetchConfig {
    /// Parallel prefetch units.
    pub units: usize,
    /// Lines per block (one unit's BRAM).
    pub block_lines: u64,
    /// Lines per AXI burst.
    pub burst_lines: u64,
    /// BRAM read latency of a unit (ps).
    pub bram: Tick,
}

/// One prefetch unit: the block it holds and when each line arrives.
#[derive(Debug, Clone)]
struct Unit {
    block: Option<u64>,
    ready: Vec<Tick>,
    last_use: Tick,
}

/// The prefetcher in front of a memory timing model.
#[derive(Debug, Clone)]
pub struct Prefetcher {
    inner: MemTiming,
    cfg: PrefetchConfig,
    units: Vec<Unit>,
    /// Reads served by a unit, by the direct path, and blocks fetched.
    pub counts: [u64; 3],
}

impl Prefetcher {
    /// A prefetcher with `cfg.units` empty units in front of `inner`.
    pub fn new(inner: MemTiming, cfg: PrefetchConfig) -> Prefetcher {
        let unit = Unit {
            block: None,
            ready: vec![0; cfg.block_lines as usize],
            last_use: 0,
        };
        Prefetcher {
            inner,
            units: vec![unit; cfg.units],
            cfg,
            counts: [0; 3],
        }
    }

    fn holder(&self, block: u64) -> Option<usize> {
        self.units.iter().position(|u| u.block == Some(block))
    }

    /// Assigns `block` to a free unit, else the least recently used one,
    /// and queues its bursts on the DRAM from `now`; `skip` (the hot line,
    /// already fetched by the direct path at `skip_ready`) is not fetched
    /// again.
    fn fetch(&mut self, now: Tick, block: u64, skip: Option<(u64, Tick)>) {
        let i = self
            .units
            .iter()
            .position(|u| u.block.is_none())
            .unwrap_or_else(|| {
                (0..self.units.len())
                    .min_by_key(|&i| self.units[i].last_use)
                    .expect("at least one unit")
            });
        self.counts[2] += 1;
        let first = block * self.cfg.block_lines;
        let mut ready = std::mem::take(&mut self.units[i].ready);
        for burst in 0..self.cfg.block_lines.div_ceil(self.cfg.burst_lines) {
            let lo = burst * self.cfg.burst_lines;
            let hi = (lo + self.cfg.burst_lines).min(self.cfg.block_lines);
            // A burst's data arrives as one AXI transaction: its lines are
            // usable once its last beat is in.
            let mut end = now;
            for off in lo..hi {
                let line = first + off;
                let t = match skip {
                    Some((hot, at)) if hot == line => at,
                    _ => self.inner.access_burst_line(now, line),
                };
                end = end.max(t);
            }
            for r in &mut ready[lo as usize..hi as usize] {
                *r = end;
            }
        }
        if let Some((hot, at)) = skip {
            ready[(hot - first) as usize] = at;
        }
        let u = &mut self.units[i];
        u.ready = ready;
        u.block = Some(block);
        u.last_use = now;
    }

    /// A read or write of `line` at `now`; returns when it completes.
    pub fn access(&mut self, now: Tick, line: u64, write: bool) -> Tick {
        let (block, off) = (line / self.cfg.block_lines, line % self.cfg.block_lines);
        if write {
            if let Some(i) = self.holder(block) {
                self.units[i].block = None;
            }
            return self.inner.access(now, line, true);
        }
        let done = match self.holder(block) {
            Some(i) => {
                self.counts[0] += 1;
                let u = &mut self.units[i];
                u.last_use = now;
                (now + self.cfg.bram).max(u.ready[off as usize])
            }
            None => {
                // The hot line first, through the direct path; then the
                // block in the background.
                self.counts[1] += 1;
                let at = self.inner.access(now, line, false);
                self.fetch(now, block, Some((line, at)));
                at
            }
        };
        if off >= self.cfg.block_lines / 2 && self.holder(block + 1).is_none() {
            self.fetch(now, block + 1, None);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Ddr;

    const BRAM: Tick = 9_300;

    fn prefetcher(units: usize) -> Prefetcher {
        let ddr = MemTiming::Ddr(Ddr::from_params(&Params::new()).unwrap());
        let cfg = PrefetchConfig {
            units,
            block_lines: 64,
            burst_lines: 32,
            bram: BRAM,
        };
        Prefetcher::new(ddr, cfg)
    }

    #[test]
    fn a_miss_fetches_the_block_and_later_lines_hit_the_unit() {
        let mut p = prefetcher(8);
        p.access(0, 5, false);
        assert_eq!(p.counts, [0, 1, 1]);
        // Line 6 asked at once waits for its burst; asked late, BRAM only.
        let early = p.access(1, 6, false);
        assert!(early > 1 + BRAM);
        assert_eq!(p.access(10_000_000, 7, false), 10_000_000 + BRAM);
        assert_eq!(p.counts, [2, 1, 1]);
    }

    #[test]
    fn a_read_in_a_blocks_second_half_allocates_the_next_block() {
        let mut p = prefetcher(8);
        p.access(0, 0, false);
        p.access(10_000_000, 31, false);
        assert_eq!(p.counts[2], 1, "first half: no next block yet");
        p.access(10_000_000, 32, false);
        assert_eq!(p.counts[2], 2, "second half: block 1 allocated");
        // Block 1's first line then hits.
        assert_eq!(p.access(20_000_000, 64, false), 20_000_000 + BRAM);
        assert_eq!(p.counts[1], 1);
    }

    #[test]
    fn a_write_drops_the_block_so_a_stale_copy_is_never_served() {
        let mut p = prefetcher(8);
        p.access(0, 0, false);
        p.access(10_000_000, 3, true);
        p.access(20_000_000, 4, false);
        assert_eq!(p.counts[1], 2, "the read after the write goes to DRAM");
    }

    #[test]
    fn more_streams_than_units_evict_the_least_recently_used_block() {
        let mut p = prefetcher(2);
        p.access(0, 0, false); // block 0
        p.access(1_000_000, 640, false); // block 10
        p.access(2_000_000, 1, false); // block 0 used again
        p.access(3_000_000, 1280, false); // block 20 takes block 10's unit
        p.access(4_000_000, 2, false);
        assert_eq!(p.counts[1], 3, "block 0 still held");
        p.access(5_000_000, 641, false);
        assert_eq!(p.counts[1], 4, "block 10 was evicted");
    }
}
