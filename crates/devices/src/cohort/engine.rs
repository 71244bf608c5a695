//! The Cohort engine (Cohort §4.2, Fig. 6) on its own tile, as a coherent
//! agent: uncached configuration registers (its only MMIO), the consumer
//! endpoint with its Reader Coherency Manager (RCM) and backoff unit, the
//! producer endpoint with its Write Coherency Manager (WCM), ratchets to
//! the accelerator ([`Accelerator`]), and the Memory Transaction Engine
//! whose Sv39 [`Mmu`] translates every queue address.
//!
//! * **Registration** (`cohort_register`, the driver's MMIO writes): the
//!   process's `satp`, the input and output queue descriptors' virtual
//!   addresses, the CSR struct's (the AES key), the backoff, then `START`:
//!   the engine reads both descriptors and the CSR struct through its MMU,
//!   then reads the input queue's write index, which leaves the line in its
//!   cache: the RCM watches that line.
//! * **Consumer.** When elements wait (`write index > consumed`), the MTE
//!   reads their lines, up to `mshrs` loads in flight, one issued a cycle;
//!   the words go to the accelerator one a cycle (the 64-bit valid/ready
//!   interface) and each full input block moves the queue's read index by
//!   the block (§4.3: pointers move by the accelerator's block size). With
//!   nothing left, the RCM waits: an invalidation of the watched line (the
//!   producer's pointer store) starts the backoff, after which it re-reads
//!   the write index (§4.2.3).
//! * **Producer.** A result block ready at the accelerator's output ratchet
//!   is stored into the output queue one 64-bit store at a time, each
//!   after the previous one's ack (the RTL's `producer_transaction_to_tri_adapter`),
//!   checking space against the read index its RCM last read. The write
//!   index counts the block once its stores are acked; the Write Coherency
//!   Manager publishes it on its own schedule (`wo_coherency_manager`):
//!   whenever the write index differs from the read index the engine last
//!   read, it waits the backoff, stores the write index, and starts again
//!   while they still differ, rewriting the same value as long as the core
//!   has not popped up to it. A second RCM watches the output queue's
//!   read-index line (`p_head_coh_mgr`) and re-reads it after each
//!   invalidation and a backoff, which is how the WCM learns to stop.
//! * **Provenance.** The Cohort authors' RTL as published in the
//!   `cohort-project/cohort-soc` snapshot (`piton/design/chip/tile/cohort/src/rtl`):
//!   `coherency_units/{ro,wo}_coherency_manager.sv`, `backoff_unit.sv`,
//!   `consumer_unit/*`, `mshr_unit/mshr_consumer_unit_top.sv` (one 16 B
//!   load in flight: the platform's `cohort.mshrs = 1`),
//!   `fifo_controller/load_unit/req_to_noc2_adapter.sv` (the load is an
//!   LR_REQ, which the L2 serves as a store request: the consumer takes
//!   the data line M), `producer_unit/*`.
//! * **MMU** (§4.2.4): a TLB miss walks the tables with coherent loads; a
//!   fault stops the endpoint and raises an interrupt at the registered
//!   core; the handler writes `RESOLVE_RETRY` (walk again) or
//!   `RESOLVE_PTE` (the PTE goes straight into the TLB); `TLB_FLUSH`
//!   empties the TLB (the driver's MMU notifier, §4.4).

use super::core::Interrupt;
use super::mmu::{AddressSpace, Mmu};
use super::{Access, Cycle, Event, World, LINE};
use crate::accel::{Accelerator, AxisBeat, StreamInterface, WORD_BYTES};

/// Register: the process's root page number (`satp.PPN`).
pub const REG_SATP: u64 = 0;
/// Register: the input queue's descriptor (virtual address).
pub const REG_IN_DESC: u64 = 1;
/// Register: the output queue's descriptor (virtual address).
pub const REG_OUT_DESC: u64 = 2;
/// Register: the accelerator's CSR struct (virtual address; 0: none).
pub const REG_CSR: u64 = 3;
/// Register: the backoff after an invalidation, in cycles.
pub const REG_BACKOFF: u64 = 4;
/// Register: start (after the others).
pub const REG_START: u64 = 5;
/// Register: stop (`cohort_unregister`).
pub const REG_STOP: u64 = 6;
/// Register: flush the TLB.
pub const REG_TLB_FLUSH: u64 = 7;
/// Register: the fault is resolved; walk again.
pub const REG_RESOLVE_RETRY: u64 = 8;
/// Register: the fault is resolved with this PTE; put it in the TLB.
pub const REG_RESOLVE_PTE: u64 = 9;
/// Register: the core that takes the page-fault interrupts.
pub const REG_IRQ_CORE: u64 = 10;
/// Register (read): elements consumed.
pub const REG_CONSUMED: u64 = 11;

/// Token: the consumer's next step.
const T_CONSUMER: u32 = 0;
/// Token: the RCM's backoff ended; re-read the write index.
const T_REREAD: u32 = 1;
/// Token: the write index's re-read completed.
const T_POINTER: u32 = 2;
/// Token: the producer's next step.
const T_PRODUCER: u32 = 3;
/// Token: the producer's data stores of a result block completed.
const T_BLOCK_STORED: u32 = 4;
/// Token: the WCM's backoff ended; store the write index.
const T_WCM: u32 = 5;
/// Token: the WCM's write-index store completed.
const T_WCM_DONE: u32 = 6;
/// Token: the output head RCM's backoff ended; re-read the read index.
const T_HEAD_REREAD: u32 = 7;
/// Token: the output head RCM's re-read completed.
const T_HEAD_DONE: u32 = 8;

/// The watch slot of the consumer's RCM (the input queue's write index).
pub const WATCH_IN_WRITE: u8 = 0;
/// The watch slot of the producer's RCM (the output queue's read index:
/// `p_head_coh_mgr`, an `ro_coherency_manager`).
pub const WATCH_OUT_READ: u8 = 1;

/// A queue as the descriptor describes it (virtual addresses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueView {
    /// The write index's address.
    pub write_index: u64,
    /// The read index's address.
    pub read_index: u64,
    /// The elements' base.
    pub base: u64,
    /// Bytes per element.
    pub element_bytes: u64,
    /// Elements.
    pub length: u64,
}

impl QueueView {
    /// Element `i`'s address (`i` counts from the queue's start; the ring
    /// wraps at `length`).
    pub fn slot(&self, i: u64) -> u64 {
        self.base + (i % self.length) * self.element_bytes
    }
}

/// What the consumer endpoint is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Consumer {
    /// Not registered.
    Off,
    /// Waiting for an invalidation of the watched line.
    Watching,
    /// In backoff, or re-reading the write index.
    Rereading,
    /// Reading elements and feeding the accelerator.
    Fetching,
    /// Stopped on a page fault.
    Faulted,
}

/// Counters of one engine.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    /// Elements consumed from the input queue.
    pub consumed: u64,
    /// Elements produced into the output queue.
    pub produced: u64,
    /// Invalidations of the watched line the RCM heard.
    pub invalidations: u64,
    /// Re-reads of the write index.
    pub rereads: u64,
    /// Write-index stores of the WCM (each a rewrite while the output
    /// queue's write index differs from the read index the engine last
    /// read, [`CohortEngine`]'s doc).
    pub publishes: u64,
    /// Of those, stores of a value the WCM had already stored (the core
    /// had not popped up to it yet): the RTL rewrites regardless.
    pub republishes: u64,
    /// Re-reads of the output queue's read index by the producer's RCM
    /// (after each invalidation of its line and a backoff).
    pub head_rereads: u64,
    /// Write-index stores of the WCM that missed: the output queue's
    /// control line had been taken (by the core's loads of the write
    /// index, or its read-index store), one half of the pointer ping-pong.
    pub publish_misses: u64,
    /// Read-index stores of the consumer that missed: the input queue's
    /// control line had been taken by the core.
    pub read_index_misses: u64,
    /// What the pointer updates cost the endpoints, in cycles (each a sum
    /// over the run). The RCM's backoffs: the wait after each invalidation
    /// of the watched write-index line before the re-read.
    pub backoff_cycles: Cycle,
    /// The RCM's re-reads of the write index: the coherent load that takes
    /// the line back from the producer that stored it.
    pub reread_cycles: Cycle,
    /// The consumer's read-index stores (one per input block), from issue
    /// to completion: off the consumer's path (nothing waits for them),
    /// but they hold the line's directory entry meanwhile.
    pub read_index_cycles: Cycle,
    /// The producer's data stores: from a result block's first store to
    /// the ack of its last (one 64-bit store at a time, each after the
    /// previous one's ack); the write index counts the block after it.
    pub wcm_data_cycles: Cycle,
    /// The WCM's write-index stores, issue to completion: taking the
    /// output queue's index line back from the core that polls it.
    pub wcm_pointer_cycles: Cycle,
}

/// One Cohort engine with its accelerator.
#[derive(Debug)]
pub struct CohortEngine {
    /// Its index among the SoC's engines.
    pub id: usize,
    /// Its tile (agent id).
    pub agent: usize,
    /// The accelerator behind the endpoints.
    pub accel: Accelerator,
    /// The MTE's MMU.
    pub mmu: Mmu,
    /// Loads the MTE keeps in flight.
    pub mshrs: usize,
    backoff: Cycle,
    in_desc: u64,
    out_desc: u64,
    csr: u64,
    irq_core: usize,
    input: QueueView,
    output: QueueView,
    state: Consumer,
    consumed: u64,
    write_seen: u64,
    pending_invalidation: bool,
    produced: u64,
    out_read_seen: u64,
    producing: bool,
    /// The producer waits for the head RCM (the output queue looked full).
    blocked_full: bool,
    /// The WCM is in its backoff or its store.
    wcm_busy: bool,
    /// The value the WCM's store in flight carries, and the last stored.
    wcm_value: u64,
    wcm_stored: u64,
    /// The output head RCM is in its backoff or re-read; an invalidation
    /// arrived meanwhile.
    head_busy: bool,
    head_pending: bool,
    /// Faults raised and not yet resolved, oldest first: the address and
    /// whether the producer (else the consumer) hit it. Each endpoint has
    /// at most one (it stops at its fault); a resolution register answers
    /// the oldest.
    faults: std::collections::VecDeque<(u64, bool)>,
    /// Counters.
    pub stats: EngineStats,
}

impl CohortEngine {
    /// Engine `id` on tile `agent` hosting `accel`.
    pub fn new(id: usize, agent: usize, accel: Accelerator, mshrs: usize) -> CohortEngine {
        CohortEngine {
            id,
            agent,
            accel,
            mmu: Mmu::default(),
            mshrs: mshrs.max(1),
            backoff: 0,
            in_desc: 0,
            out_desc: 0,
            csr: 0,
            irq_core: 0,
            input: QueueView::default(),
            output: QueueView::default(),
            state: Consumer::Off,
            consumed: 0,
            write_seen: 0,
            pending_invalidation: false,
            produced: 0,
            out_read_seen: 0,
            producing: false,
            blocked_full: false,
            wcm_busy: false,
            wcm_value: 0,
            wcm_stored: 0,
            head_busy: false,
            head_pending: false,
            faults: std::collections::VecDeque::new(),
            stats: EngineStats::default(),
        }
    }

    /// A coherent access through the MTE: translate (walking on a miss),
    /// then the access. `None` on a page fault (raised at the core).
    fn access(
        &mut self,
        world: &mut World,
        va: u64,
        access: Access,
        at: Cycle,
        producer: bool,
    ) -> Option<(u64, Cycle)> {
        let (pa, t) = self.mmu.translate(world, self.agent, va, at);
        let Some(pa) = pa else {
            self.faults.push_back((va, producer));
            let at = t + world.timing.noc_one_way;
            world.cores[self.irq_core].interrupts.push_back(Interrupt {
                at,
                engine: self.id,
                va,
            });
            return None;
        };
        Some((pa, world.coherent(self.agent, pa, access, t)))
    }

    /// Reads the word at `va` through the MTE (for descriptors and CSRs).
    fn read_word(&mut self, world: &mut World, va: u64, at: Cycle) -> Result<(u64, Cycle), String> {
        match self.access(world, va, Access::Read, at, false) {
            Some((pa, t)) => Ok((world.mem.read_u64(pa), t)),
            None => Err(format!(
                "cohort engine {}: descriptor address {va:#x} is unmapped",
                self.id
            )),
        }
    }

    fn read_queue(&mut self, world: &mut World, desc: u64, at: Cycle) -> (QueueView, Cycle) {
        let mut f = [0u64; 5];
        let mut t = at;
        for (i, field) in f.iter_mut().enumerate() {
            let (v, done) = self
                .read_word(world, desc + 8 * i as u64, t)
                .unwrap_or_else(|e| panic!("{e}"));
            *field = v;
            t = done;
        }
        let q = QueueView {
            write_index: f[0],
            read_index: f[1],
            base: f[2],
            element_bytes: f[3],
            length: f[4],
        };
        assert!(
            q.element_bytes == WORD_BYTES as u64 && q.length > 0,
            "cohort engine {}: queue at {desc:#x} has {}-byte elements and length {} (the endpoints take 8-byte elements)",
            self.id, q.element_bytes, q.length
        );
        (q, t)
    }

    /// A register write arriving at `at`; returns when it is handled.
    pub fn mmio_write(
        &mut self,
        world: &mut World,
        _space: &mut AddressSpace,
        at: Cycle,
        reg: u64,
        v: u64,
    ) -> Cycle {
        let at = at + 1;
        match reg {
            REG_SATP => self.mmu.root_ppn = v,
            REG_IN_DESC => self.in_desc = v,
            REG_OUT_DESC => self.out_desc = v,
            REG_CSR => self.csr = v,
            REG_BACKOFF => self.backoff = v,
            REG_IRQ_CORE => self.irq_core = v as usize,
            REG_START => self.start(world, at),
            REG_STOP => {
                self.state = Consumer::Off;
                world.unwatch(self.id);
                self.mmu.flush();
            }
            REG_TLB_FLUSH => self.mmu.flush(),
            REG_RESOLVE_RETRY | REG_RESOLVE_PTE => {
                if let Some((va, producer)) = self.faults.pop_front() {
                    if reg == REG_RESOLVE_PTE {
                        self.mmu.fill(va, v, 0);
                    }
                    if producer {
                        world.schedule(at, Event::Engine(self.id, T_PRODUCER));
                    } else {
                        self.state = Consumer::Fetching;
                        world.schedule(at, Event::Engine(self.id, T_CONSUMER));
                    }
                }
            }
            _ => panic!("cohort engine {}: no register {reg}", self.id),
        }
        at
    }

    /// A register read.
    pub fn mmio_read(&self, reg: u64) -> u64 {
        match reg {
            REG_CONSUMED => self.stats.consumed,
            REG_BACKOFF => self.backoff,
            _ => 0,
        }
    }

    fn start(&mut self, world: &mut World, at: Cycle) {
        let (input, t) = self.read_queue(world, self.in_desc, at);
        let (output, mut t) = self.read_queue(world, self.out_desc, t);
        if self.csr != 0 {
            let mut key = [0u8; 16];
            for half in 0..2 {
                let (w, done) = self
                    .read_word(world, self.csr + 8 * half, t)
                    .unwrap_or_else(|e| panic!("{e}"));
                key[8 * half as usize..8 * half as usize + 8].copy_from_slice(&w.to_le_bytes());
                t = done;
            }
            self.accel.set_key(key);
        }
        self.input = input;
        self.output = output;
        self.consumed = 0;
        self.produced = 0;
        self.wcm_stored = 0;
        let (r, t) = self
            .read_word(world, output.read_index, t)
            .unwrap_or_else(|e| panic!("{e}"));
        self.out_read_seen = r;
        if let Some(pa) = self.mmu.lookup(output.read_index) {
            world.watch(self.agent, pa / LINE, self.id, WATCH_OUT_READ);
        }
        let (w, t) = self
            .read_word(world, input.write_index, t)
            .unwrap_or_else(|e| panic!("{e}"));
        self.write_seen = w;
        self.arm_rcm(world);
        self.state = Consumer::Fetching;
        world.schedule(t, Event::Engine(self.id, T_CONSUMER));
    }

    fn arm_rcm(&mut self, world: &mut World) {
        if let Some(pa) = self.mmu.lookup(self.input.write_index) {
            world.watch(self.agent, pa / LINE, self.id, WATCH_IN_WRITE);
        }
    }

    /// The line watched in `slot` was invalidated at `at`.
    pub fn invalidated(&mut self, world: &mut World, at: Cycle, slot: u8) {
        if slot == WATCH_OUT_READ {
            self.head_invalidated(world, at);
            return;
        }
        self.stats.invalidations += 1;
        match self.state {
            Consumer::Watching => {
                self.state = Consumer::Rereading;
                self.stats.backoff_cycles += self.backoff;
                world.schedule(at + self.backoff, Event::Engine(self.id, T_REREAD));
            }
            Consumer::Off => {}
            _ => self.pending_invalidation = true,
        }
    }

    /// Step `token` is due at `at`.
    pub fn step(&mut self, world: &mut World, at: Cycle, token: u32) {
        match token {
            T_CONSUMER => self.consume(world, at),
            T_REREAD => {
                if self.state == Consumer::Off {
                    return;
                }
                self.stats.rereads += 1;
                match self.access(world, self.input.write_index, Access::Read, at, false) {
                    Some((_, done)) => {
                        self.stats.reread_cycles += done - at;
                        world.schedule(done, Event::Engine(self.id, T_POINTER));
                    }
                    None => self.state = Consumer::Faulted,
                }
            }
            T_POINTER => {
                if self.state == Consumer::Off {
                    return;
                }
                let pa = self
                    .mmu
                    .lookup(self.input.write_index)
                    .expect("translated for the re-read");
                self.write_seen = world.mem.read_u64(pa);
                self.arm_rcm(world);
                self.state = Consumer::Fetching;
                self.consume(world, at);
            }
            T_PRODUCER => self.produce(world, at),
            T_BLOCK_STORED => {
                let out_words = self.accel.words_per_output_block() as u64;
                self.produced += out_words;
                self.stats.produced += out_words;
                self.producing = false;
                self.wcm_kick(world, at);
                self.produce(world, at);
            }
            T_WCM => {
                if self.state == Consumer::Off {
                    self.wcm_busy = false;
                    return;
                }
                let value = self.produced;
                let missed_stores = world.counts.missed_stores();
                let Some((_, done)) =
                    self.access(world, self.output.write_index, Access::Write, at, true)
                else {
                    self.wcm_busy = false;
                    return;
                };
                if world.counts.missed_stores() > missed_stores {
                    self.stats.publish_misses += 1;
                }
                self.stats.wcm_pointer_cycles += done - at;
                self.wcm_value = value;
                world.schedule(done, Event::Engine(self.id, T_WCM_DONE));
            }
            T_WCM_DONE => {
                // Unregistered meanwhile (the TLB flushed): the store is moot.
                let Some(pa) = self.mmu.lookup(self.output.write_index) else {
                    self.wcm_busy = false;
                    return;
                };
                world.mem.write_u64(pa, self.wcm_value);
                self.stats.publishes += 1;
                if self.wcm_value == self.wcm_stored {
                    self.stats.republishes += 1;
                }
                self.wcm_stored = self.wcm_value;
                self.wcm_busy = false;
                self.wcm_kick(world, at);
            }
            T_HEAD_REREAD => {
                if self.state == Consumer::Off {
                    self.head_busy = false;
                    return;
                }
                self.stats.head_rereads += 1;
                match self.access(world, self.output.read_index, Access::Read, at, true) {
                    Some((_, done)) => world.schedule(done, Event::Engine(self.id, T_HEAD_DONE)),
                    None => self.head_busy = false,
                }
            }
            T_HEAD_DONE => {
                let Some(pa) = self.mmu.lookup(self.output.read_index) else {
                    self.head_busy = false;
                    return;
                };
                self.out_read_seen = world.mem.read_u64(pa);
                self.head_busy = false;
                if std::mem::take(&mut self.head_pending) {
                    self.head_invalidated(world, at);
                }
                self.wcm_kick(world, at);
                if std::mem::take(&mut self.blocked_full) {
                    self.produce(world, at);
                }
            }
            _ => unreachable!("engine token {token}"),
        }
    }

    /// The consumer endpoint at `at`.
    fn consume(&mut self, world: &mut World, at: Cycle) {
        if matches!(self.state, Consumer::Off | Consumer::Faulted) {
            return;
        }
        if self.consumed >= self.write_seen {
            if std::mem::take(&mut self.pending_invalidation) {
                self.state = Consumer::Rereading;
                self.stats.backoff_cycles += self.backoff;
                world.schedule(at + self.backoff, Event::Engine(self.id, T_REREAD));
            } else {
                self.state = Consumer::Watching;
            }
            return;
        }
        self.state = Consumer::Fetching;
        // The elements waiting, up to the ring's end (one pass of loads).
        let q = self.input;
        let end = self
            .write_seen
            .min(self.consumed - self.consumed % q.length + q.length);
        let mut inflight: std::collections::VecDeque<Cycle> = std::collections::VecDeque::new();
        let mut issue = at;
        let mut delivered = at;
        let per_block = self.accel.words_per_block() as u64;
        let mut i = self.consumed;
        while i < end {
            let va = q.slot(i);
            if inflight.len() == self.mshrs {
                issue = issue.max(inflight.pop_front().expect("full"));
            }
            // The consumer's load is an LR_REQ (message type 60,
            // `req_to_noc2_adapter.sv`), which the L2 serves "just same as
            // a store req" (`l2_pipe1_ctrl.v.pyv`): the engine's tile gets
            // the line M, taking it from the core that pushed into it.
            let Some((pa, done)) = self.access(world, va, Access::Write, issue, false) else {
                self.state = Consumer::Faulted;
                break;
            };
            inflight.push_back(done);
            issue += 1;
            // The words of the L1.5 line (16 B in OpenPiton: the tile's
            // L1.5 answers the MTE a line at a time) that are elements to
            // consume.
            let l15 = world.l15_line();
            let words = ((l15 - pa % l15) / WORD_BYTES as u64).min(end - i);
            for k in 0..words {
                let word = world.mem.read_u64(pa + 8 * k);
                delivered = delivered.max(done) + 1;
                if let Some(ready) = self.feed_accelerator(delivered, word) {
                    if !self.producing {
                        world.schedule(ready, Event::Engine(self.id, T_PRODUCER));
                    }
                }
                self.consumed += 1;
                self.stats.consumed += 1;
                if self.consumed % per_block == 0 {
                    // The read index moves by the block (§4.3).
                    let missed_stores = world.counts.missed_stores();
                    if let Some((rpa, stored)) =
                        self.access(world, q.read_index, Access::Write, delivered, false)
                    {
                        self.stats.read_index_cycles += stored - delivered;
                        world.mem.write_u64(rpa, self.consumed);
                        if world.counts.missed_stores() > missed_stores {
                            self.stats.read_index_misses += 1;
                        }
                    }
                }
            }
            i += words;
        }
        if self.state == Consumer::Fetching {
            world.schedule(delivered.max(at + 1), Event::Engine(self.id, T_CONSUMER));
        }
    }

    /// The consumer endpoint hands the accelerator its next word at `at`
    /// over the unit's interface: on AXI-Stream as a transfer with TLAST on
    /// a block's last word, counted by the endpoint (a framing the unit
    /// refuses is a broken engine, not a run-time condition).
    fn feed_accelerator(&mut self, at: Cycle, word: u64) -> Option<Cycle> {
        match self.accel.interface() {
            StreamInterface::ValidReady => self.accel.push_word(at, word),
            StreamInterface::AxiStream => {
                let per_block = self.accel.words_per_block() as u64;
                let tlast = (self.consumed + 1) % per_block == 0;
                let beat = AxisBeat {
                    tdata: word,
                    tkeep: 0xff,
                    tlast,
                };
                self.accel
                    .push_beat(at, beat)
                    .unwrap_or_else(|e| panic!("engine {}: AXI-Stream input: {e}", self.id))
            }
        }
    }

    /// The producer endpoint takes the accelerator's next result word; on
    /// AXI-Stream its TLAST must close the endpoint's block (`last`).
    fn take_result(&mut self, last: bool) -> u64 {
        match self.accel.interface() {
            StreamInterface::ValidReady => self.accel.pop_word().expect("a ready result word"),
            StreamInterface::AxiStream => {
                let beat = self.accel.pop_beat().expect("a ready result transfer");
                assert_eq!(
                    beat.tlast, last,
                    "engine {}: AXI-Stream output framing",
                    self.id
                );
                beat.tdata
            }
        }
    }

    /// The producer endpoint at `at`: one result block into the output
    /// queue, one 64-bit store at a time, each issued after the previous
    /// one's ack (`producer_transaction_to_tri_adapter.sv`: `S_IDLE ->
    /// S_REQ -> S_RESP`, "TODO: support outstanding memory operations").
    /// The write index is not stored here: the WCM publishes it
    /// ([`wcm_kick`](Self::wcm_kick)).
    fn produce(&mut self, world: &mut World, at: Cycle) {
        if self.producing || self.faults.iter().any(|f| f.1) || self.state == Consumer::Off {
            return;
        }
        let out_words = self.accel.words_per_output_block() as u64;
        match self.accel.output_ready_at() {
            None => return,
            Some(t) if t > at => {
                world.schedule(t, Event::Engine(self.id, T_PRODUCER));
                return;
            }
            Some(_) => {}
        }
        let q = self.output;
        if self.produced + out_words - self.out_read_seen > q.length {
            // Looks full: the head RCM's next re-read restarts it.
            self.blocked_full = true;
            return;
        }
        let mut t = at;
        let mut slots = Vec::with_capacity(out_words as usize);
        for k in 0..out_words {
            let va = q.slot(self.produced + k);
            // A fault leaves the words at the ratchet for the retry.
            let Some((pa, done)) = self.access(world, va, Access::Write, t, true) else {
                return;
            };
            t = done;
            slots.push(pa);
        }
        for (k, pa) in slots.into_iter().enumerate() {
            let word = self.take_result(k + 1 == out_words as usize);
            world.mem.write_u64(pa, word);
        }
        self.stats.wcm_data_cycles += t - at;
        self.producing = true;
        world.schedule(t, Event::Engine(self.id, T_BLOCK_STORED));
    }

    /// The Write Coherency Manager of the output queue's write index
    /// (`wo_coherency_manager.sv`): idle, it starts a backoff whenever
    /// the engine's write index differs from the read index its RCM last
    /// read (`src_ptr_r != ref_ptr_r`), then stores the write index and
    /// waits for the ack, and starts again while they still differ. It
    /// "ignore[s] all invalidation requests": while the core has not
    /// popped up to the write index it keeps rewriting it, each store
    /// taking the line back from the core that polls it.
    fn wcm_kick(&mut self, world: &mut World, at: Cycle) {
        if self.wcm_busy || self.state == Consumer::Off || self.produced == self.out_read_seen {
            return;
        }
        self.wcm_busy = true;
        self.stats.backoff_cycles += self.backoff;
        world.schedule(at + self.backoff, Event::Engine(self.id, T_WCM));
    }

    /// The producer's RCM (`p_head_coh_mgr`): an invalidation of the
    /// output queue's read-index line starts a backoff, then a re-read.
    fn head_invalidated(&mut self, world: &mut World, at: Cycle) {
        if self.state == Consumer::Off {
            return;
        }
        if self.head_busy {
            self.head_pending = true;
            return;
        }
        self.head_busy = true;
        self.stats.backoff_cycles += self.backoff;
        world.schedule(at + self.backoff, Event::Engine(self.id, T_HEAD_REREAD));
    }
}
