//! The baselines of Cohort §5.1: a MAPLE decoupling unit repurposed to host
//! the accelerator, invoked two ways.
//!
//! * **MMIO.** The core writes each input word to the unit's input register
//!   and reads each result word from its output register, every access
//!   uncached, the stores posted but one in flight at a time and each load
//!   a non-speculative round trip behind them (Ariane's non-idempotent
//!   accesses, see [`super::core`]; no memory-level parallelism): "the
//!   core cannot achieve memory-level parallelism and so must receive the
//!   accelerator's output word by word before passing the next input word"
//!   (§5.3). A read of the output register is answered once the word exists.
//! * **Coherent DMA.** Per 256 B block (Table 2: "Baseline DMA Granularity
//!   256 Bytes") the core calls the DMA API, whose MMIO writes give the
//!   source, the destination and the length and start the transfer; the
//!   unit prefetches the source lines from the LLC with non-caching loads
//!   (MAPLE's LLC prefetching: LOAD_NOSHARE_REQ, the default request of
//!   PrincetonUniversity/maple `rtl/dcp_noc1encoder.v`, which the L2
//!   answers without recording the tile; a line the core still holds
//!   dirty is forwarded from its L1.5 first), feeds the accelerator, and
//!   stores the results with non-caching SWAPWB_REQs (cohort-project/
//!   cohort-soc `piton/design/chip/tile/maple/rtl/custom_acc.sv`: "Use
//!   DREAM_SW_WB for Stores!", encoded as `MSG_TYPE_SWAPWB_REQ` by
//!   `dcp_noc1encoder.v`): the L2 takes the line from the tiles (INV_FWD
//!   to sharers, STORE_FWD to an owner), writes it and keeps it; the unit
//!   keeps nothing. Both are rows of the verified P-Mesh table
//!   (`protocols/pmesh.toml`). The core reads a
//!   status register, answered when the block's results are stored.
//!   Addresses are virtual: MAPLE translates them with a RISC-V MMU (§5.1;
//!   assumed: its TLB hits). The core learns the transfer's end by polling
//!   the status register: each read is answered at once, 0 while the
//!   transfer runs and 1 once its results are stored (the driver's polling
//!   loop: a spinning core that retires a turn per MMIO round trip; the
//!   MMIO result register, by contrast, holds its answer until the word
//!   exists, as MAPLE's consume does, and the core retires nothing).
//!
//! Every access costs the unit `mmio_cycles` to handle, and a DMA waits
//! `dma_setup` cycles after its start command before its first prefetch
//! (both calibrated on SHA, see `platforms/openpiton.toml`).

use super::mmu::AddressSpace;
use super::{Cycle, World, LINE};
use crate::accel::Accelerator;

/// Register: the AES key's low 8 bytes.
pub const REG_KEY_LO: u64 = 0;
/// Register: the AES key's high 8 bytes.
pub const REG_KEY_HI: u64 = 1;
/// Register: an input word (MMIO invocation).
pub const REG_IN: u64 = 2;
/// Register (read): the next result word (MMIO invocation).
pub const REG_OUT: u64 = 3;
/// Register: the DMA source (virtual address).
pub const REG_DMA_SRC: u64 = 4;
/// Register: the DMA destination (virtual address).
pub const REG_DMA_DST: u64 = 5;
/// Register: the DMA length in bytes (input).
pub const REG_DMA_LEN: u64 = 6;
/// Register: start the DMA.
pub const REG_DMA_GO: u64 = 7;
/// Register (read): 1 once the DMA's results are stored, 0 before (each
/// read answered at once: the driver polls it).
pub const REG_DMA_STATUS: u64 = 8;

/// The MAPLE-like unit with its accelerator.
#[derive(Debug)]
pub struct Maple {
    /// Its tile.
    pub agent: usize,
    /// The accelerator it hosts.
    pub accel: Accelerator,
    /// Cycles to handle one uncached access.
    pub mmio_cycles: Cycle,
    /// Prefetch loads in flight.
    pub mshrs: usize,
    /// Cycles from a DMA's start command to its first prefetch.
    pub dma_setup: Cycle,
    key: [u8; 16],
    src: u64,
    dst: u64,
    len: u64,
    dma_done: Option<Cycle>,
    /// Accesses handled, DMA transfers.
    pub accesses: u64,
    /// DMA transfers.
    pub transfers: u64,
}

impl Maple {
    /// The unit on tile `agent` with `accel`.
    pub fn new(agent: usize, accel: Accelerator, mmio_cycles: Cycle, mshrs: usize) -> Maple {
        Maple {
            agent,
            accel,
            mmio_cycles,
            mshrs: mshrs.max(1),
            dma_setup: 0,
            key: [0; 16],
            src: 0,
            dst: 0,
            len: 0,
            dma_done: None,
            accesses: 0,
            transfers: 0,
        }
    }

    /// A register write arriving at `at`; returns when it is handled.
    pub fn mmio_write(
        &mut self,
        world: &mut World,
        space: &AddressSpace,
        at: Cycle,
        reg: u64,
        v: u64,
    ) -> Cycle {
        self.accesses += 1;
        let handled = at + self.mmio_cycles;
        match reg {
            REG_KEY_LO | REG_KEY_HI => {
                let o = 8 * (reg - REG_KEY_LO) as usize;
                self.key[o..o + 8].copy_from_slice(&v.to_le_bytes());
                self.accel.set_key(self.key);
            }
            REG_IN => {
                self.accel.push_word(handled, v);
            }
            REG_DMA_SRC => self.src = v,
            REG_DMA_DST => self.dst = v,
            REG_DMA_LEN => self.len = v,
            REG_DMA_GO => self.dma(world, space, handled + self.dma_setup),
            _ => panic!("MAPLE: no writable register {reg}"),
        }
        handled
    }

    /// When a read of `reg` arriving at `at` can be answered (`None`: not
    /// known yet).
    pub fn read_ready_at(&self, reg: u64, at: Cycle, _world: &mut World) -> Option<Cycle> {
        let base = at + self.mmio_cycles;
        match reg {
            REG_OUT => self.accel.output_ready_at().map(|t| t.max(base)),
            REG_DMA_STATUS => Some(base),
            _ => Some(base),
        }
    }

    /// Answers a read of `reg` at `at` (when [`read_ready_at`](Self::read_ready_at) said).
    pub fn mmio_read(&mut self, _world: &mut World, at: Cycle, reg: u64) -> (u64, Cycle) {
        self.accesses += 1;
        match reg {
            REG_OUT => (self.accel.pop_word().expect("MAPLE: a result word"), at),
            REG_DMA_STATUS => match self.dma_done {
                Some(done) if done <= at => {
                    self.dma_done = None;
                    (1, at)
                }
                _ => (0, at),
            },
            _ => (0, at),
        }
    }

    /// The transfer started at `at`: prefetch, compute, TRI-store the
    /// results; its end is the status register's answer.
    fn dma(&mut self, world: &mut World, space: &AddressSpace, at: Cycle) {
        self.transfers += 1;
        let lines = self.len.div_ceil(LINE);
        let mut inflight = std::collections::VecDeque::new();
        let mut issue = at;
        let mut delivered = at;
        for l in 0..lines {
            if inflight.len() == self.mshrs {
                issue = issue.max(inflight.pop_front().expect("full"));
            }
            let pa = space
                .translate(&world.mem, self.src + l * LINE)
                .expect("MAPLE: DMA source unmapped");
            // MAPLE's LLC prefetch: a LOAD_NOSHARE_REQ into the unit's
            // buffer, the tile not recorded as a sharer.
            let done = world.load_noshare(self.agent, pa, issue);
            inflight.push_back(done);
            issue += 1;
            for k in 0..(LINE / 8).min((self.len - l * LINE) / 8) {
                delivered = delivered.max(done) + 1;
                self.accel
                    .push_word(delivered, world.mem.read_u64(pa + 8 * k));
            }
        }
        let mut end = delivered;
        let mut out = 0u64;
        let mut issue = 0;
        while let (Some(ready), Some(word)) = (self.accel.output_ready_at(), self.accel.pop_word())
        {
            let pa = space
                .translate(&world.mem, self.dst + out)
                .expect("MAPLE: DMA destination unmapped");
            // A non-caching store (SWAPWB_REQ): written at the L2 once the
            // tiles' copies are gone, kept nowhere; one issued a cycle.
            issue = ready.max(issue + 1);
            let t = world.store_noshare(self.agent, pa, issue);
            world.mem.write_u64(pa, word);
            end = end.max(t);
            out += 8;
        }
        self.dma_done = Some(end);
    }
}
