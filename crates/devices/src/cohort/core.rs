//! An Ariane-like core (Cohort §5: 64-bit, 6-stage, in-order RV64GC) as
//! the software sees it: one instruction a cycle when nothing stalls,
//! loads that stall the pipeline until their data come back (an in-order
//! core uses a load's value in the next instructions), stores that retire
//! into a FIFO store buffer and drain to the L1.5 one at a time, `fence`
//! that waits for the buffer to drain, and MMIO to non-idempotent space as
//! Ariane does it: an uncached store is *posted* (it retires into the store
//! buffer and the core goes on), but only one is in flight at a time, and
//! an uncached load is a non-speculative round trip that waits for every
//! older store, cached or not.
//!
//! **Uncached (non-idempotent) accesses on the Cohort SoC's Ariane.** The
//! Cohort authors' SoC (cohort-project/cohort-soc, branch `cohort`,
//! fbacbee) pins Ariane/CVA6 at `4c01614f` and declares
//! `0xe1_0000_0000`-`0x100_0000_0000` non-idempotent
//! (`piton/design/chip/tile/rtl/tile.v.pyv` l. 1095-1097), which holds the
//! MAPLE tile and the Cohort engines' registers (`dcpn.h`: `BASE_MAPLE
//! 0xe100800000`). At that commit: the store unit treats every store
//! alike, retiring it into the store buffer (`core/store_unit.sv`: no
//! non-idempotent case), so the pipeline does not wait for an uncached
//! store's acknowledgement; the write-through L1D's write buffer grants a
//! non-idempotent write only when no other is pending and keeps it pending
//! until its acknowledgement returns
//! (`core/cache_subsystem/wt_dcache_wbuffer.sv` l. 47-49, 403-406, 451,
//! 470-474: `ni_conflict`), so uncached stores leave one round trip apart;
//! a load to non-idempotent space waits until it is the oldest
//! instruction, the store buffer is empty and no non-idempotent write is
//! pending (`core/load_unit.sv` l. 85-88: `stall_ni`), then makes its
//! round trip; `fence` waits for `no_st_pending`, which includes the write
//! buffer (module doc below). [`Soc::mmio_store`] models this: the store
//! departs once older stores have drained and the previous uncached store
//! is acknowledged, the core retires it in a cycle, and the device takes it
//! when it arrives (an event). Simplification: a second uncached store
//! waits at issue rather than in Ariane's commit queue (4 entries with
//! `WT_DCACHE`, `core/include/ariane_pkg.sv` l. 149-157), so the few
//! instructions Ariane could run between it and the next uncached access
//! or fence are not overlapped.
//!
//! **What `fence` does on the Ariane OpenPiton builds.** OpenPiton pins
//! Ariane/CVA6 at `4c01614f` (submodule `piton/design/chip/tile/ariane`;
//! its MAPLE branches pin `cbbcf356`) and defines `WT_DCACHE`
//! (`piton/tools/src/proto/common/setup.tcl` l. 97, `manycore.config`
//! l. 73): the write-through L1D. At both commits the commit stage holds a
//! `FENCE` until `no_st_pending` (`core/commit_stage.sv` l. 193–197),
//! which is the store buffer *and* the write-through cache's write buffer
//! empty (`core/cva6.sv` l. 515), i.e. every older store acknowledged by
//! the L1.5; the controller then flushes the pipeline and refetches, and
//! raises `flush_dcache` only `` `ifndef WT_DCACHE `` (`core/controller.sv`
//! l. 84–87). So a `fence` does **not** flush or invalidate the L1D: it
//! costs the drain of older stores, which is what [`Soc::fence`] waits
//! for and counts ([`CoreState::fence_cycles`]). (Had it flushed, the WT
//! cache's FLUSH state clears one set a cycle, `wt_dcache_missunit.sv`
//! l. 120–121, 478: 128 cycles for OpenPiton's 8 KiB 4-way L1D of 16 B
//! lines.) The pipeline refill after the fence is not modelled.
//!
//! **The L1D.** OpenPiton's 8 KiB L1D is write-through and inclusive in the
//! L1.5: every store goes to the L1.5, and an invalidation of the L1.5's
//! line invalidates the L1D's copy. The coherence state is therefore the
//! L1.5's, which the directory keeps; what the L1D adds is the cost of a
//! load hit ([`Timing::load_hit`](super::Timing)), and a load after an
//! invalidation misses (test `a_load_after_an_invalidation_misses`). With
//! a bounded L1D ([`Caches`](super::Caches)) a load fills it (a store does
//! not), and a load of a line the L1.5 holds but the L1D lost costs the
//! L1D's lookup and the L1.5's hit ([`CoherenceCounts::l1d_misses`](super::CoherenceCounts)).
//!
//! **Retired instructions** count the software's instructions as the
//! library and the benchmarks state them per loop (each call says how
//! many), so that IPC = retired / cycles.

use std::collections::VecDeque;

use super::{Access, Cycle, Event, Soc, World};

/// A device an uncached access goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Device {
    /// The configuration registers of Cohort engine `id`.
    Engine(usize),
    /// The MAPLE-like baseline unit.
    Maple,
}

/// A page-fault interrupt a Cohort engine raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupt {
    /// When it reaches the core.
    pub at: Cycle,
    /// The engine that raised it.
    pub engine: usize,
    /// The virtual address that faulted.
    pub va: u64,
}

/// One core's state.
#[derive(Debug, Clone)]
pub struct CoreState {
    /// Its tile (its agent id in the directory).
    pub agent: usize,
    /// Its clock: the cycle its next instruction issues.
    pub now: Cycle,
    /// Instructions retired.
    pub retired: u64,
    /// Cycles the pipeline stood still waiting for a load.
    pub load_stall: Cycle,
    /// Instructions retired by poll turns (of [`retired`](Self::retired)):
    /// a spinning core retires its loop, unlike a core stalled on an MMIO
    /// load, which retires nothing until the answer.
    pub spin_retired: u64,
    /// Cycles the core spent waiting for the other side (the accelerator,
    /// the engine or the baseline unit): its spins on a queue index here;
    /// the benchmarks add their MMIO result loads and their DMA polling.
    pub wait_cycles: Cycle,
    /// Instructions retired during those cycles: what a waiting core
    /// retires depends on how it waits (a spin on a cached line retires
    /// its loop every few cycles, an uncached load stalls the pipeline).
    pub wait_retired: u64,
    /// Cycles the core's `fence`s stood waiting for older stores to
    /// drain (a queue library's data-before-pointer order costs this).
    pub fence_cycles: Cycle,
    /// Per line (physical address / [`LINE`](super::LINE)): the stores
    /// drained to it and the cycles their coherence transactions took
    /// (what a store to a queue's index line costs: taking the line back
    /// from the agent that read it). Off the core's path unless something
    /// waits for the store, as a `fence` after it does.
    pub store_cycles_by_line: std::collections::HashMap<u64, (u64, Cycle)>,
    /// Uncached accesses made.
    pub mmio: u64,
    /// Whether a posted uncached store waits for its acknowledgement (the
    /// write buffer's pending non-idempotent write: no further uncached
    /// access leaves, and `fence` waits, until it is back).
    pub ni_pending: bool,
    /// Loads and stores made (cacheable).
    pub accesses: u64,
    store_buffer: VecDeque<(u64, u64)>,
    capacity: usize,
    draining: bool,
    /// Page-fault interrupts waiting to be taken.
    pub interrupts: VecDeque<Interrupt>,
}

impl CoreState {
    /// A core on tile `agent` with a store buffer of `capacity` entries.
    pub fn new(agent: usize, capacity: usize) -> CoreState {
        CoreState {
            agent,
            now: 0,
            retired: 0,
            spin_retired: 0,
            load_stall: 0,
            wait_cycles: 0,
            wait_retired: 0,
            fence_cycles: 0,
            store_cycles_by_line: std::collections::HashMap::new(),
            mmio: 0,
            ni_pending: false,
            accesses: 0,
            store_buffer: VecDeque::new(),
            capacity: capacity.max(1),
            draining: false,
            interrupts: VecDeque::new(),
        }
    }

    /// Stores waiting in the buffer.
    pub fn buffered(&self) -> usize {
        self.store_buffer.len()
    }
}

/// Runs a store-buffer event of core `c` at `at`.
pub(super) fn drain(world: &mut World, c: usize, at: Cycle, ev: Event) {
    match ev {
        Event::Drain(_) => {
            let Some(&(pa, _)) = world.cores[c].store_buffer.front() else {
                world.cores[c].draining = false;
                return;
            };
            let agent = world.cores[c].agent;
            let done = world.coherent(agent, pa, Access::Write, at);
            let per_line = world.cores[c]
                .store_cycles_by_line
                .entry(pa / super::LINE)
                .or_default();
            per_line.0 += 1;
            per_line.1 += done - at;
            world.schedule(done, Event::DrainDone(c));
        }
        Event::DrainDone(_) => {
            let (pa, v) = world.cores[c]
                .store_buffer
                .pop_front()
                .expect("a store was draining");
            world.mem.write_u64(pa, v);
            if world.cores[c].store_buffer.is_empty() {
                world.cores[c].draining = false;
            } else {
                world.schedule(at, Event::Drain(c));
            }
        }
        _ => unreachable!("not a store-buffer event"),
    }
}

impl Soc {
    /// Core `c` executes `n` instructions that touch no memory.
    pub fn exec(&mut self, c: usize, n: u64) {
        let core = &mut self.world.cores[c];
        core.now += n;
        core.retired += n;
    }

    /// Runs events until `done` says stop, then brings core `c`'s clock
    /// to the time of the last event run.
    fn core_wait(&mut self, c: usize, mut done: impl FnMut(&World) -> bool) {
        let start = self.world.cores[c].now;
        self.run_until(start);
        while !done(&self.world) {
            let Some(t) = self.world.next_event_at() else {
                panic!("core {c} waits for an event that will never come");
            };
            self.run_until(t);
            let core = &mut self.world.cores[c];
            core.now = core.now.max(t);
        }
    }

    /// Core `c` loads the word at virtual address `va` (one instruction):
    /// from its store buffer when a store to it waits there, else through
    /// its L1D/L1.5, stalling until the data are back.
    pub fn load(&mut self, c: usize, va: u64) -> u64 {
        let pa = self
            .aspace
            .translate(&self.world.mem, va)
            .expect("core load of an unmapped address");
        let at = self.world.cores[c].now;
        self.run_until(at);
        let core = &mut self.world.cores[c];
        core.retired += 1;
        core.accesses += 1;
        if let Some(&(_, v)) = core.store_buffer.iter().rev().find(|(p, _)| *p == pa) {
            core.now += self.world.timing.load_hit;
            return v;
        }
        let agent = core.agent;
        let done = if self.world.holds(agent, pa) {
            if self.world.l1d_load(agent, pa) {
                at + self.world.timing.load_hit
            } else {
                // The L1D's lookup missed; the L1.5 answers (and its tags
                // and replacement state see the access).
                self.world.counts.l1d_misses += 1;
                self.world
                    .coherent(agent, pa, Access::Read, at + self.world.timing.load_hit)
            }
        } else {
            let done = self.world.coherent(agent, pa, Access::Read, at);
            self.world.l1d_load(agent, pa);
            done
        };
        self.run_until(done);
        let core = &mut self.world.cores[c];
        core.load_stall += (done - at).saturating_sub(1);
        core.now = done;
        self.world.mem.read_u64(pa)
    }

    /// Core `c` stores `v` at `va` (one instruction): into the store
    /// buffer, after waiting for a free entry.
    pub fn store(&mut self, c: usize, va: u64, v: u64) {
        let pa = self
            .aspace
            .translate(&self.world.mem, va)
            .expect("core store to an unmapped address");
        self.store_physical(c, pa, v);
    }

    /// Core `c` stores `v` at physical address `pa` (the kernel's store to
    /// a page table; one instruction).
    pub fn store_physical(&mut self, c: usize, pa: u64, v: u64) {
        let cap = self.world.cores[c].capacity;
        if self.world.cores[c].store_buffer.len() >= cap {
            self.core_wait(c, |w| w.cores[c].store_buffer.len() < cap);
        }
        let core = &mut self.world.cores[c];
        core.retired += 1;
        core.accesses += 1;
        core.store_buffer.push_back((pa, v));
        let at = core.now;
        core.now += 1;
        if !core.draining {
            core.draining = true;
            self.world.schedule(at, Event::Drain(c));
        }
    }

    /// Core `c` executes `fence` (one instruction): it waits for its store
    /// buffer to drain (counted in [`CoreState::fence_cycles`]); the L1D
    /// stays as it is (module doc).
    pub fn fence(&mut self, c: usize) {
        let before = self.world.cores[c].now;
        // `no_st_pending`: the store buffer and the write buffer (a posted
        // uncached store until its acknowledgement) are empty.
        self.core_wait(c, |w| {
            w.cores[c].store_buffer.is_empty() && !w.cores[c].ni_pending
        });
        let core = &mut self.world.cores[c];
        core.fence_cycles += core.now - before;
        core.retired += 1;
        core.now += 1;
    }

    /// Core `c` waits until an uncached access may leave: its older stores
    /// have drained and no posted uncached store awaits its
    /// acknowledgement (Ariane's `stall_ni` and `ni_conflict`, module doc).
    fn wait_for_uncached_turn(&mut self, c: usize) {
        self.core_wait(c, |w| {
            w.cores[c].store_buffer.is_empty() && !w.cores[c].ni_pending
        });
    }

    /// The cycles of an uncached load from core `c` that arrives at the
    /// device: its older stores drain first, then the request crosses the
    /// NoC.
    fn mmio_arrival(&mut self, c: usize) -> Cycle {
        self.wait_for_uncached_turn(c);
        let core = &mut self.world.cores[c];
        core.retired += 1;
        core.mmio += 1;
        let arrive = core.now + self.world.timing.noc_one_way;
        self.run_until(arrive);
        arrive
    }

    /// Core `c` writes `v` to register `reg` of `dev` (one instruction), a
    /// posted uncached store: it leaves once older stores have drained and
    /// the previous uncached store is acknowledged, the core retires it in
    /// a cycle and goes on, the device takes it when it arrives, and its
    /// acknowledgement (a NoC crossing after the device handled it) frees
    /// the way for the next uncached access (module doc: Ariane's write
    /// buffer).
    pub fn mmio_store(&mut self, c: usize, dev: Device, reg: u64, v: u64) {
        self.wait_for_uncached_turn(c);
        let noc = self.world.timing.noc_one_way;
        let core = &mut self.world.cores[c];
        core.retired += 1;
        core.mmio += 1;
        core.ni_pending = true;
        let arrive = core.now + noc;
        core.now += 1;
        self.world
            .schedule(arrive, Event::MmioWrite(c, dev, reg, v));
    }

    /// Core `c`'s posted store reaches `dev` at `at`: the device handles
    /// it and its acknowledgement crosses back.
    pub(super) fn mmio_write_arrives(
        &mut self,
        c: usize,
        at: Cycle,
        dev: Device,
        reg: u64,
        v: u64,
    ) {
        let handled = match dev {
            Device::Engine(id) => {
                let e = &mut self.engines[id];
                e.mmio_write(&mut self.world, &mut self.aspace, at, reg, v)
            }
            Device::Maple => self
                .maple
                .mmio_write(&mut self.world, &self.aspace, at, reg, v),
        };
        let ack = handled + self.world.timing.noc_one_way;
        self.world.schedule(ack, Event::MmioAck(c));
    }

    /// Core `c` reads register `reg` of `dev` (one instruction): a
    /// non-speculative round trip that returns when the device answers
    /// (a result queue's register answers when a result is there).
    pub fn mmio_load(&mut self, c: usize, dev: Device, reg: u64) -> u64 {
        let arrive = self.mmio_arrival(c);
        let (v, answered) = match dev {
            Device::Engine(id) => (self.engines[id].mmio_read(reg), arrive + 1),
            Device::Maple => {
                // The unit answers once the result exists: events up to it run.
                let ready = self.maple.read_ready_at(reg, arrive, &mut self.world);
                let ready = self.wait_for_maple(reg, ready);
                self.maple.mmio_read(&mut self.world, ready, reg)
            }
        };
        let core = &mut self.world.cores[c];
        core.now = answered + self.world.timing.noc_one_way;
        v
    }

    /// Runs events until the baseline unit can answer a read of `reg`.
    fn wait_for_maple(&mut self, reg: u64, mut ready: Option<Cycle>) -> Cycle {
        loop {
            if let Some(t) = ready {
                self.run_until(t);
                return t;
            }
            let Some(t) = self.world.next_event_at() else {
                panic!(
                    "an MMIO read of MAPLE register {reg} waits for a result that will never come"
                );
            };
            self.run_until(t);
            ready = self.maple.read_ready_at(reg, t, &mut self.world);
        }
    }

    /// Core `c` spins on the word at `va` until it differs from `seen`
    /// (a `load; beq` loop, `per_iteration` instructions a turn), taking
    /// the page-fault interrupts that arrive meanwhile with `on_interrupt`.
    /// While the line stays in the core's cache every turn hits, so the
    /// spin jumps to the next event that could change it, counting the
    /// turns in between.
    pub fn spin_while_equal(
        &mut self,
        c: usize,
        va: u64,
        seen: u64,
        per_iteration: u64,
        mut on_interrupt: impl FnMut(&mut Soc, usize, super::core::Interrupt),
    ) -> u64 {
        let (began, retired_before) = (self.world.cores[c].now, self.world.cores[c].retired);
        let v = self.spin_turns(c, va, seen, per_iteration, &mut on_interrupt);
        let core = &mut self.world.cores[c];
        core.wait_cycles += core.now - began;
        core.wait_retired += core.retired - retired_before;
        v
    }

    /// The turns of [`spin_while_equal`](Self::spin_while_equal).
    fn spin_turns(
        &mut self,
        c: usize,
        va: u64,
        seen: u64,
        per_iteration: u64,
        on_interrupt: &mut impl FnMut(&mut Soc, usize, super::core::Interrupt),
    ) -> u64 {
        loop {
            if let Some(irq) = self.take_interrupt(c) {
                on_interrupt(self, c, irq);
            }
            let v = self.load(c, va);
            self.exec(c, per_iteration.saturating_sub(1));
            self.world.cores[c].spin_retired += per_iteration.max(1);
            if v != seen {
                return v;
            }
            let pa = self.aspace.translate(&self.world.mem, va).expect("mapped");
            let agent = self.world.cores[c].agent;
            if self.world.holds(agent, pa) {
                // Hits until something happens: skip to the next event.
                let now = self.world.cores[c].now;
                let Some(next) = self.world.next_event_at() else {
                    panic!("core {c} spins on {va:#x} and nothing will change it");
                };
                if next > now {
                    let turn = per_iteration.max(1) + self.world.timing.load_hit - 1;
                    let turns = (next - now).div_ceil(turn.max(1));
                    let core = &mut self.world.cores[c];
                    core.now += turns * turn;
                    core.retired += turns * per_iteration;
                    core.spin_retired += turns * per_iteration;
                    core.accesses += turns;
                }
            }
        }
    }

    /// The oldest page-fault interrupt that has reached core `c`, if any.
    pub fn take_interrupt(&mut self, c: usize) -> Option<Interrupt> {
        let core = &mut self.world.cores[c];
        match core.interrupts.front() {
            Some(i) if i.at <= core.now => core.interrupts.pop_front(),
            _ => None,
        }
    }

    /// Core `c` waits for its next interrupt (the page-fault handler's
    /// `wfi`), then takes it.
    pub fn wait_for_interrupt(&mut self, c: usize) -> Interrupt {
        self.core_wait(c, |w| !w.cores[c].interrupts.is_empty());
        let core = &mut self.world.cores[c];
        let irq = core.interrupts.pop_front().expect("waited for it");
        core.now = core.now.max(irq.at);
        irq
    }
}
