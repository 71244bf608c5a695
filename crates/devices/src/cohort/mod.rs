//! # The Cohort SoC: Ariane-like cores, SPSC queues in memory, the Cohort
//! engine with its Sv39 MMU, and the MAPLE-like baseline unit
//!
//! Cohort (ASPLOS'23, §3–§5) feeds an accelerator from the software queues
//! programs already use: a core pushes 64-bit words into a lock-free SPSC
//! queue in ordinary cacheable memory, the Cohort engine on its own P-Mesh
//! tile sees the queue's write index change through the coherence protocol
//! (an invalidation of the line it holds), reads the new elements, feeds the
//! accelerator, and pushes the results into a second queue the core pops.
//!
//! ```text
//!  tile 0: core 0 ─ store buffer ─ L1.5 ─┐          ┌─ L1.5 ─ Cohort engine (tile 2)
//!  tile 1: core 1 ─ store buffer ─ L1.5 ─┼─ L2 dir ─┤          consumer (RCM) → ratchet → SHA/AES
//!                                        │          │          producer (WCM) ← ratchet ←
//!                                        │          └─ MAPLE-like unit (tile 3): MMIO, coherent DMA
//!                                   memory (real bytes: queues, page tables, buffers)
//! ```
//!
//! * **Time** is counted in cycles of the 100 MHz SoC (Cohort §5: every
//!   tile, the cores and the accelerators run at 100 MHz), the unit of the
//!   paper's figures (kilocycles).
//! * **Coherence** ([`World::coherent`]): every line has a directory entry
//!   at the L2 (an owner holding it E/M, a set of sharers, and the time the
//!   blocking directory is busy with it until). Its state changes are the
//!   verified P-Mesh table's (`protocols/pmesh.toml`, [`pmesh_table`]):
//!   each access, L1.5 write-back and L2 recall walks the table's `l15` and
//!   `l2` rows atomically from the entry's view of the line, the walk's end
//!   states become the entry, and its messages say what the transaction
//!   was. An access that hits (no message) costs the tile's hit; a miss
//!   costs what its messages need (a load the L2 answers, a LOAD_FWD to the
//!   owner answered with or without the line, INV_FWDs to sharers, a
//!   STORE_FWD), as [`Timing`] gives them: the experiments crate measures
//!   them by running the same table in the platform's `[systems.pmesh]`.
//!   A transition the table does not have stops the SoC with its name.
//!   An invalidation reaches the agent that lost the line when the
//!   transaction completes; the Cohort engine's Reader Coherency Manager
//!   listens for the one line it watches. The directory's state is per
//!   64 B L2 line, but each tile's L1.5 holds 16 B lines of it
//!   (OpenPiton's `L15_LINE_SIZE`): the first access to each 16 B of a
//!   line the tile already holds is a fill the L2 answers itself
//!   ([`CoherenceCounts::subline_fills`]), and losing the line loses all
//!   four. Each line counts its
//!   *migrations* ([`World::migrations`]): the transactions that took it
//!   from another agent, which is how the pointer and data ping-pong of
//!   false sharing (Cohort §6.1) is measured.
//! * **Capacities** ([`Caches`], [`cache`]): each core's L1D, each tile's
//!   L1.5 and the L2, distributed over four home slices by address bits,
//!   have OpenPiton's sizes and replacement; an L1.5 victim held modified
//!   is written back, an L2 victim's L1.5 copies are invalidated
//!   (inclusion). Every tile reaches every home in one mesh hop in the
//!   measured table (`[systems.pmesh]` has one router), so a home's place
//!   adds no cycles. Memory behind the L2 is not modelled: an L2 miss
//!   costs what a request the L2 answers costs, as before capacities.
//!   Zero-byte geometries ([`Caches::default`]) are unbounded.
//! * **Data** are real bytes ([`PhysMem`]): queue elements, indices,
//!   descriptors, Sv39 page tables, the AES key struct. A store is
//!   performed (its bytes written) when its coherence transaction
//!   completes; a load reads the bytes when it completes.
//! * **Cores** ([`core`]) run software written in direct style (the queue
//!   library and the benchmarks): each operation advances the core's clock,
//!   and before it the events of the other agents up to that time run.
//! * **The engine** ([`engine`]) is an event-driven state machine on the
//!   same event queue; **the baseline unit** ([`maple`]) issues a
//!   transfer's accesses when it starts and answers the core's reads when
//!   their results exist.
//!
//! ```
//! use ccsim_devices::accel::Accelerator;
//! use ccsim_devices::cohort::{maple::Maple, Soc, Timing};
//! let timing = Timing { load_hit: 1, l15_hit: 1, load_miss: 34, load_fwd: 68, load_fwd_clean: 52,
//!                       store_miss: 34, store_inv: 52, store_inv_extra: 2, store_fwd: 68,
//!                       store_fwd_clean: 52, noc_one_way: 3 };
//! let maple = Maple::new(0, Accelerator::sha256(1e6), 10, 8);
//! let mut soc = Soc::new(timing, 2, 8, vec![Accelerator::sha256(1e6)], 4, maple);
//! soc.map(0x1000_0000, 4096);
//! soc.store(0, 0x1000_0000, 42); // into core 0's store buffer
//! soc.fence(0);                  // drained: a store miss, 34 cycles
//! soc.world.cores[1].now = soc.world.cores[0].now;
//! assert_eq!(soc.load(1, 0x1000_0000), 42); // forwarded from core 0's modified copy
//! assert_eq!(soc.world.counts.load_fwds, 1);
//! ```
//!
//! Modules: [`core`] (Ariane-like in-order core), [`queue`] (the SPSC
//! queue library), [`mmu`] (Sv39 page tables, TLB and walker), [`engine`]
//! (the Cohort engine), [`maple`] (the MMIO and coherent-DMA baselines),
//! [`pmesh_table`] (the directory's walks of the verified P-Mesh table).

pub mod cache;
pub mod core;
pub mod engine;
pub mod maple;
pub mod mmu;
pub mod pmesh_table;
pub mod queue;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use self::pmesh_table::{LineView, Msgs, PmeshTable, Walk, Walker};

pub use self::core::CoreState;

/// A time or a duration in SoC cycles (100 MHz: 10 ns).
pub type Cycle = u64;

/// Bytes of a coherence line: the L2's 64 B line, the granularity of the
/// directory's state and sharer list (OpenPiton `pyhplib.py`:
/// `L2_LINE_SIZE = 64`).
pub const LINE: u64 = 64;

/// Bytes of a line of a tile's L1.5 in OpenPiton (`pyhplib.py`:
/// `L15_LINE_SIZE = 16`, "constants, not configurable"): the L1.5 holds a
/// 64 B L2 line as up to four 16 B lines ([`World::set_l15_line`]).
pub const L15_LINE: u64 = 16;

/// The most L1.5 lines one L2 line splits into (16 B of 64 B): the bits
/// each agent has in a directory entry's presence mask.
const MAX_SUBLINES: u64 = 4;

/// Cycles of the coherence transactions and hits, per kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// A core's load that hits (the write-through L1D, or the L1.5).
    pub load_hit: Cycle,
    /// An access of the engine or the baseline unit that hits in its
    /// tile's L1.5, or a core's store that the L1.5 holds writable.
    pub l15_hit: Cycle,
    /// A load the L2 answers (no other tile holds the line writable).
    pub load_miss: Cycle,
    /// A load the L2 forwards to the tile holding the line modified
    /// (LOAD_FWD answered with the data).
    pub load_fwd: Cycle,
    /// A load the L2 forwards to a tile holding the line clean (E: the
    /// forward's answer carries no data, the L2 sends its own).
    pub load_fwd_clean: Cycle,
    /// A store to a line no other tile holds.
    pub store_miss: Cycle,
    /// A store that invalidates one other tile's shared copy (INV_FWD).
    pub store_inv: Cycle,
    /// What each further sharer's invalidation adds (its INV_FWD and ack
    /// share the L2's links).
    pub store_inv_extra: Cycle,
    /// A store the L2 forwards to the tile holding the line modified
    /// (STORE_FWD).
    pub store_fwd: Cycle,
    /// A store the L2 forwards to a tile holding the line clean (E).
    pub store_fwd_clean: Cycle,
    /// One way across the NoC between two tiles (an uncached access or an
    /// interrupt).
    pub noc_one_way: Cycle,
}

/// Checks an L1.5 line size: it must split the 64 B L2 line into one to
/// four lines (16, 32 or 64 B); the error names the value (the platform's
/// check of `pmesh_l15.line_bytes` and [`World::set_l15_line`] both call it).
pub fn check_l15_line(bytes: u64) -> Result<(), String> {
    if !bytes.is_power_of_two() || bytes > LINE || LINE / bytes > MAX_SUBLINES {
        return Err(format!(
            "must split the {LINE} B L2 line into 1 to {MAX_SUBLINES} L1.5 lines (16, 32 or 64), got {bytes}"
        ));
    }
    Ok(())
}

/// The capacities of the SoC's caches (Cohort §5: "the default OpenPiton
/// configuration of 8KiB L1D, 16KiB L1I, 8KiB L1.5, and 64KiB 4-way L2
/// caches"; OpenPiton `piton/tools/bin/pyhplib.py`: `CONFIG_L1D_SIZE 8192`,
/// `CONFIG_L1D_ASSOCIATIVITY 4`, `CONFIG_L15_SIZE 8192`,
/// `CONFIG_L15_ASSOCIATIVITY 4`, `CONFIG_L2_SIZE 65536` per tile,
/// `CONFIG_L2_ASSOCIATIVITY 4`). A geometry of 0 bytes is unbounded (no
/// evictions: the model before capacities, [`Caches::default`]).
///
/// * **L1D** (cores only, write-through, inclusive in the L1.5): a load
///   fills it; a store does not allocate; losing the L1.5 line loses it.
/// * **L1.5**: every access fills it (its 16 B line); a victim held
///   modified is written back to the L2 (a WB_REQ, priced as a store the
///   L2 answers, holding the line's directory entry meanwhile); a clean
///   victim leaves silently, so the L2 still counts the tile as a sharer
///   (or the owner of an E line): its next access is answered by the L2
///   and a store of another tile still invalidates it (OpenPiton's L1.5
///   writes back only M victims: `l15_pipeline.v.pyv`
///   `L15_NOC3_GEN_WRITEBACK_IF_LRU_M_FROM_DCACHE`).
/// * **L2**, distributed: `slices` homes, a line's home chosen by
///   OpenPiton's reset-default mixed-order interleaving, address bits 7:6
///   XOR bits 15:14 for four homes ([`Caches::home_of`]); each slice
///   `l2` bytes, inclusive: a victim's L1.5 copies are invalidated (the
///   request that needed the way waits for the invalidation round, priced
///   as the store that would invalidate them), and a Reader Coherency
///   Manager watching it hears the invalidation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caches {
    /// A core's L1D.
    pub l1d: cache::Geometry,
    /// A tile's L1.5 (its line is the SoC's L1.5 line, [`World::set_l15_line`]).
    pub l15: cache::Geometry,
    /// One L2 slice.
    pub l2: cache::Geometry,
    /// L2 slices (homes); a power of two.
    pub slices: u64,
}

impl Default for Caches {
    fn default() -> Caches {
        let unbounded = cache::Geometry {
            bytes: 0,
            ways: 1,
            line: LINE,
        };
        Caches {
            l1d: unbounded,
            l15: unbounded,
            l2: unbounded,
            slices: 1,
        }
    }
}

impl Caches {
    /// The home slice of the L2 line `line` (a physical address / 64):
    /// OpenPiton's `HOME_ALLOC_MIXED_ORDER_BITS`, the reset default of
    /// `config_regs.v.pyv` (`home_alloc_method <=
    /// HOME_ALLOC_MIXED_ORDER_BITS`), takes address bits
    /// `HOME_ID_ADDR_POS_LOW` (from bit 6) XOR `HOME_ID_ADDR_POS_MIDDLE`
    /// (from bit 14) (`l15_csm.v.pyv`, `define.h.pyv`), and
    /// `l15_home_encoder.v.pyv` keeps the low bits for a power-of-two
    /// count of homes.
    pub fn home_of(&self, line: u64) -> usize {
        ((line ^ (line >> 8)) & (self.slices - 1)) as usize
    }

    /// Checks every geometry and the slice count; errors name the cache.
    pub fn check(&self) -> Result<(), String> {
        for (name, g) in [("l1d", self.l1d), ("l15", self.l15), ("l2", self.l2)] {
            g.check().map_err(|e| format!("{name}: {e}"))?;
        }
        if !self.slices.is_power_of_two() {
            return Err(format!(
                "l2 slices must be a power of two, got {}",
                self.slices
            ));
        }
        Ok(())
    }
}

/// The SoC's memory: real bytes, by physical address (absent lines read
/// as zero).
#[derive(Debug, Default, Clone)]
pub struct PhysMem {
    lines: HashMap<u64, [u8; LINE as usize]>,
}

impl PhysMem {
    /// The 64-bit little-endian word at `pa` (8-byte aligned).
    pub fn read_u64(&self, pa: u64) -> u64 {
        debug_assert_eq!(pa % 8, 0, "unaligned word {pa:#x}");
        let off = (pa % LINE) as usize;
        self.lines.get(&(pa / LINE)).map_or(0, |l| {
            u64::from_le_bytes(l[off..off + 8].try_into().expect("8 bytes"))
        })
    }

    /// Writes the 64-bit word `v` at `pa` (8-byte aligned).
    pub fn write_u64(&mut self, pa: u64, v: u64) {
        debug_assert_eq!(pa % 8, 0, "unaligned word {pa:#x}");
        let off = (pa % LINE) as usize;
        let line = self.lines.entry(pa / LINE).or_insert([0; LINE as usize]);
        line[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// A line's directory entry at the L2.
#[derive(Debug, Default, Clone, Copy)]
struct DirLine {
    /// The agent holding it E or M.
    owner: Option<usize>,
    /// Whether the owner has written it (M, not E).
    dirty: bool,
    /// Agents holding it (the owner included), one bit each.
    holders: u32,
    /// Which of the line's L1.5 lines each holder has, [`MAX_SUBLINES`]
    /// bits per agent (agent `a`'s at bits `4a..4a+4`): the L2 keeps the
    /// coherence state per 64 B line, a tile's L1.5 fetches 16 B at a time.
    present: u128,
    /// The blocking directory serves the line's next request from then.
    busy_until: Cycle,
}

/// What a transaction on a line was (for the statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
}

/// Something scheduled on the event queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// Core `core`'s store buffer performs its oldest store.
    Drain(usize),
    /// Core `core`'s oldest store completed.
    DrainDone(usize),
    /// Engine `id`: its step `token` is due.
    Engine(usize, u32),
    /// Engine `id`'s watched line `slot` was invalidated (its Reader
    /// Coherency Managers: [`engine::WATCH_IN_WRITE`],
    /// [`engine::WATCH_OUT_READ`]).
    Invalidated(usize, u8),
    /// Core `core`'s posted uncached store reaches the device: register
    /// `reg` of the device takes `value` ([`Soc::mmio_store`]).
    MmioWrite(usize, core::Device, u64, u64),
    /// The device's acknowledgement of core `core`'s uncached store is
    /// back: its write buffer holds no non-idempotent store any more.
    MmioAck(usize),
}

/// Coherence transactions counted by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CoherenceCounts {
    /// Accesses that hit.
    pub hits: u64,
    /// Loads answered by the L2.
    pub load_misses: u64,
    /// Loads forwarded to an owner.
    pub load_fwds: u64,
    /// Stores to lines nobody else held.
    pub store_misses: u64,
    /// Stores that invalidated sharers.
    pub store_invs: u64,
    /// Stores forwarded to an owner.
    pub store_fwds: u64,
    /// Copies invalidated (by stores of others).
    pub invalidations: u64,
    /// Accesses of an agent that held the L2 line (shared, or owned) but
    /// not the L1.5 line within it: a request the L2 answers with the 16 B
    /// itself (a LOAD_REQ from a sharer, a request from the owner), without
    /// forwarding or invalidating anything.
    pub subline_fills: u64,
    /// Core loads that missed the write-through L1D but hit the L1.5.
    pub l1d_misses: u64,
    /// 16 B lines an L1.5 evicted for room (bounded L1.5s only).
    pub l15_evictions: u64,
    /// Of those, lines the tile held modified: written back to the L2.
    pub l15_writebacks: u64,
    /// Lines an L2 slice evicted for room (bounded L2 only).
    pub l2_evictions: u64,
    /// L1.5 copies the L2's evictions invalidated (the L2 is inclusive).
    pub l2_back_invalidations: u64,
}

impl CoherenceCounts {
    /// Stores that did not hit (to a line nobody held, invalidating
    /// sharers, or forwarded to an owner).
    pub fn missed_stores(&self) -> u64 {
        self.store_misses + self.store_invs + self.store_fwds
    }
}

/// Everything the agents share: memory, the directory, the event queue,
/// the cores' state (their store buffers drain as events) and the lines
/// the engines' Reader Coherency Managers watch.
#[derive(Debug)]
pub struct World {
    /// The bytes.
    pub mem: PhysMem,
    /// Transaction costs.
    pub timing: Timing,
    dir: HashMap<u64, DirLine>,
    events: BinaryHeap<Reverse<(Cycle, u64, Event)>>,
    seq: u64,
    /// Cores by index (their agent ids are their tile numbers).
    pub cores: Vec<CoreState>,
    /// (agent, line, engine, slot): the lines the engines' Reader
    /// Coherency Managers watch (one per slot).
    watches: Vec<(usize, u64, usize, u8)>,
    /// Transactions by kind.
    pub counts: CoherenceCounts,
    /// Migrations by line: transactions that took the line (its data or
    /// its write permission) from another agent ([`World::migrations`]).
    migrations: HashMap<u64, u64>,
    /// Bytes of an L1.5 line ([`L15_LINE`] unless set).
    l15_line: u64,
    /// The caches' capacities ([`Caches`]; unbounded unless set).
    caches: Caches,
    /// Each agent's L1.5 tags (bounded L1.5s), by agent.
    l15: Vec<Option<cache::TagArray>>,
    /// Each core's L1D tags (bounded L1Ds), by agent.
    l1d: Vec<Option<cache::TagArray>>,
    /// The L2 slices' tags (bounded L2), by home slice.
    l2: Vec<cache::TagArray>,
    /// The time of the last event run.
    pub now: Cycle,
    /// The verified P-Mesh table every transaction walks
    /// ([`pmesh_table`]), with its counters of rows taken.
    pmesh: Walker,
}

impl World {
    /// An empty SoC with `cores` cores on tiles 0.. .
    pub fn new(timing: Timing, cores: usize, store_buffer: usize) -> World {
        World {
            mem: PhysMem::default(),
            timing,
            dir: HashMap::new(),
            events: BinaryHeap::new(),
            seq: 0,
            cores: (0..cores)
                .map(|c| CoreState::new(c, store_buffer))
                .collect(),
            watches: Vec::new(),
            counts: CoherenceCounts::default(),
            migrations: HashMap::new(),
            l15_line: L15_LINE,
            caches: Caches::default(),
            l15: Vec::new(),
            l1d: Vec::new(),
            l2: Vec::new(),
            now: 0,
            pmesh: Walker::new(PmeshTable::builtin()),
        }
    }

    /// Runs the directory on `table` (a variant of the shipped P-Mesh
    /// spec: a mutation test's) from now on; its counters start at zero.
    pub fn set_pmesh_table(&mut self, table: Arc<PmeshTable>) {
        self.pmesh = Walker::new(table);
    }

    /// The P-Mesh table the directory runs, with the rows taken so far
    /// ([`Walker::taken`]).
    pub fn pmesh(&self) -> &Walker {
        &self.pmesh
    }

    /// Sets the bytes of a tile's L1.5 line: 16 (OpenPiton), 32, or 64
    /// (the L2's line: a tile then holds whole lines, as a cache with one
    /// line size does). Errors name the value when it does not split a
    /// 64 B line into at most four lines.
    pub fn set_l15_line(&mut self, bytes: u64) -> Result<(), String> {
        check_l15_line(bytes)?;
        self.l15_line = bytes;
        Ok(())
    }

    /// Bytes of a tile's L1.5 line.
    pub fn l15_line(&self) -> u64 {
        self.l15_line
    }

    /// Sets the caches' capacities ([`Caches`]); before the first access.
    pub fn set_caches(&mut self, caches: Caches) -> Result<(), String> {
        caches.check()?;
        self.caches = caches;
        self.l2 = if caches.l2.bounded() {
            (0..caches.slices)
                .map(|_| cache::TagArray::new(caches.l2))
                .collect()
        } else {
            Vec::new()
        };
        Ok(())
    }

    /// The caches' capacities.
    pub fn caches(&self) -> Caches {
        self.caches
    }

    /// The L2 fills line `line` (a request that reached it) at `at`; an
    /// eviction invalidates the victim's L1.5 copies. Returns the cycles
    /// the request waits for that invalidation round.
    fn l2_access(&mut self, line: u64, at: Cycle) -> Cycle {
        if self.l2.is_empty() {
            return 0;
        }
        // The slice's index bits are the line's (`L2_TAG_INDEX`, 13:6).
        let home = self.caches.home_of(line);
        let Some(victim) = self.l2[home].access(line) else {
            return 0;
        };
        self.counts.l2_evictions += 1;
        let Some(d) = self.dir.get_mut(&victim) else {
            return 0;
        };
        if d.holders == 0 {
            return 0;
        }
        // The recall, walked through the L1.5s' rows (`Walker::recall`):
        // STORE_FWD to an owner, INV_FWD to each sharer; priced by the
        // answers, as the transactions that would take the line.
        let mut view = line_view(&self.pmesh, d);
        let walk = self.pmesh.recall(&mut view);
        let (m, t) = (self.pmesh.table().msg, &self.timing);
        let invs = u64::from(walk.count(m.inv_fwd));
        let cost = if walk.count(m.store_fwdack_data) != 0 {
            t.store_fwd
        } else if walk.count(m.store_fwdack) != 0 {
            t.store_fwd_clean
        } else {
            t.store_inv + t.store_inv_extra * invs.saturating_sub(1)
        };
        let lost = walk.lost as u32;
        let start = at.max(d.busy_until);
        let done = start + cost;
        let before = d.present;
        set_entry(d, &view, self.pmesh.table());
        d.present = 0;
        d.busy_until = done;
        self.counts.l2_back_invalidations += u64::from(lost.count_ones());
        self.counts.invalidations += u64::from(lost.count_ones());
        self.forget_l15(victim, before);
        self.notify_watchers(victim, lost, done);
        done - at
    }

    /// Tells the Reader Coherency Managers watching `line` on an agent of
    /// `lost` that their copy is gone at `at`.
    fn notify_watchers(&mut self, line: u64, lost: u32, at: Cycle) {
        let hit: Vec<(usize, u8)> = self
            .watches
            .iter()
            .filter(|w| w.1 == line && lost & (1 << w.0) != 0)
            .map(|w| (w.2, w.3))
            .collect();
        for (engine, slot) in hit {
            self.schedule(at, Event::Invalidated(engine, slot));
        }
    }

    /// Takes the L1.5 lines of L2 line `line` whose presence bits are in
    /// `lost` out of their agents' L1.5 (and L1D) tags.
    fn forget_l15(&mut self, line: u64, lost: u128) {
        if lost == 0 || (self.l15.is_empty() && self.l1d.is_empty()) {
            return;
        }
        for agent in 0..(128 / MAX_SUBLINES as usize) {
            let mine = (lost >> (MAX_SUBLINES as usize * agent)) & ((1 << MAX_SUBLINES) - 1);
            for k in 0..MAX_SUBLINES {
                if mine & (1 << k) != 0 {
                    let pa = line * LINE + k * self.l15_line;
                    if let Some(Some(t)) = self.l15.get_mut(agent) {
                        t.remove(pa / self.l15_line);
                    }
                    self.forget_l1d(agent, pa, self.l15_line);
                }
            }
        }
    }

    /// Takes the L1D lines within `bytes` from `pa` out of `agent`'s L1D.
    fn forget_l1d(&mut self, agent: usize, pa: u64, bytes: u64) {
        if let Some(Some(t)) = self.l1d.get_mut(agent) {
            let line = self.caches.l1d.line;
            let mut a = pa / line * line;
            while a < pa + bytes {
                t.remove(a / line);
                a += line;
            }
        }
    }

    /// `agent`'s L1.5 fills (or touches) the L1.5 line of `pa` at `at`; a
    /// victim leaves as [`Caches`] says.
    fn l15_access(&mut self, agent: usize, pa: u64, at: Cycle) {
        if !self.caches.l15.bounded() {
            return;
        }
        if self.l15.len() <= agent {
            self.l15.resize(agent + 1, None);
        }
        let line_bytes = self.l15_line;
        let geometry = cache::Geometry {
            line: line_bytes,
            ..self.caches.l15
        };
        let tags = self.l15[agent].get_or_insert_with(|| cache::TagArray::new(geometry));
        let Some(victim) = tags.access(pa / line_bytes) else {
            return;
        };
        self.counts.l15_evictions += 1;
        let vpa = victim * line_bytes;
        self.forget_l1d(agent, vpa, line_bytes);
        // The L1.5 invalidates the evicted line above it (the core's L1D,
        // or the engine's endpoints: `l15_pipeline.v.pyv`
        // `L15_CPX_GEN_INVALIDATION_IF_LRU_MES_AND_WAYMAP_VALID`), so a
        // Reader Coherency Manager watching it hears an invalidation and
        // re-reads after its backoff.
        self.notify_watchers(vpa / LINE, 1 << agent, at);
        let bit = self.present_bit(agent, vpa);
        let mine = ((1u128 << MAX_SUBLINES) - 1) << (MAX_SUBLINES as usize * agent);
        let store_miss = self.timing.store_miss;
        let Some(d) = self.dir.get_mut(&(vpa / LINE)) else {
            return;
        };
        // The table's `evict`: silent from S or E (the directory still
        // lists the tile, module doc of `Caches`), a WB_REQ from M.
        let mut view = line_view(&self.pmesh, d);
        let evict = self.pmesh.table().evict;
        let walk = self.pmesh.walk(agent, evict, &mut view);
        d.present &= !bit;
        if walk.count(self.pmesh.table().msg.wb_req) != 0 {
            // A WB_REQ with the 16 B: the L2's entry is busy with it.
            self.counts.l15_writebacks += 1;
            d.busy_until = d.busy_until.max(at) + store_miss;
            if d.present & mine == 0 {
                // Its last line of the L2 line: the table's end state (the
                // L2 holds it clean); before that the owner keeps the rest.
                set_entry(d, &view, self.pmesh.table());
            }
        } else if walk.any() {
            panic!(
                "P-Mesh table ({}): an eviction sends messages other than WB_REQ, which the SoC does not price",
                self.pmesh.table().origin
            );
        }
    }

    /// Whether core agent `agent`'s L1D holds `pa` (and fills it: a load
    /// that missed it brings the line in). Unbounded L1Ds hold whatever
    /// the L1.5 holds.
    pub fn l1d_load(&mut self, agent: usize, pa: u64) -> bool {
        if !self.caches.l1d.bounded() {
            return true;
        }
        if self.l1d.len() <= agent {
            self.l1d.resize(agent + 1, None);
        }
        let g = self.caches.l1d;
        let tags = self.l1d[agent].get_or_insert_with(|| cache::TagArray::new(g));
        let line = pa / g.line;
        let hit = tags.contains(line);
        // Ariane's write-through L1D: a load fills; its victim is clean and
        // leaves silently (the L1.5 keeps the line).
        tags.access(line);
        hit
    }

    /// `agent`'s presence bit for the L1.5 line of `pa` in its L2 line's
    /// entry.
    fn present_bit(&self, agent: usize, pa: u64) -> u128 {
        1u128 << (MAX_SUBLINES as usize * agent + ((pa % LINE) / self.l15_line) as usize)
    }

    /// Schedules `ev` at `at` (events at one time run in scheduling order).
    pub fn schedule(&mut self, at: Cycle, ev: Event) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    /// The time of the next event, if any.
    pub fn next_event_at(&self) -> Option<Cycle> {
        self.events.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Takes the next event due at or before `until`.
    pub fn pop_due(&mut self, until: Cycle) -> Option<(Cycle, Event)> {
        match self.events.peek() {
            Some(Reverse((t, _, _))) if *t <= until => {
                let Reverse((t, _, ev)) = self.events.pop().expect("peeked");
                self.now = self.now.max(t);
                Some((t, ev))
            }
            _ => None,
        }
    }

    /// Engine `engine` (on tile `agent`) watches `line` with its Reader
    /// Coherency Manager `slot` (one line per slot).
    pub fn watch(&mut self, agent: usize, line: u64, engine: usize, slot: u8) {
        self.watches.retain(|w| (w.2, w.3) != (engine, slot));
        self.watches.push((agent, line, engine, slot));
    }

    /// Engine `engine` stops watching.
    pub fn unwatch(&mut self, engine: usize) {
        self.watches.retain(|w| w.2 != engine);
    }

    /// Whether `agent`'s L1.5 holds the bytes of `pa` (the L2 line and,
    /// within it, the L1.5 line).
    pub fn holds(&self, agent: usize, pa: u64) -> bool {
        let bit = self.present_bit(agent, pa);
        self.dir
            .get(&(pa / LINE))
            .is_some_and(|d| d.holders & (1 << agent) != 0 && d.present & bit != 0)
    }

    /// `agent` accesses the line of `pa` at `at`: the coherence transaction
    /// the line's directory entry calls for, serialised behind the line's
    /// previous one; returns when it completes. Copies it invalidates are
    /// gone from then, and a Reader Coherency Manager watching one of them
    /// hears of it at that time.
    ///
    /// The directory's state is per 64 B L2 line, but a tile's L1.5 holds
    /// 16 B lines: an access that the line's state would allow (a load by
    /// a sharer, any access by the owner) misses when the agent's L1.5 has
    /// not got that 16 B yet, and the L2 answers it without forwarding
    /// (OpenPiton's L2 in state E answers its owner's request and adds the
    /// sub-line to its vector; in S it adds a sharer and answers). A store
    /// or a forward that takes the line away takes all four: an INV_FWD
    /// carries a full sub-line vector and the L1.5 splits it into four
    /// invalidations (`l2_pipe1_ctrl.v.pyv`, `l15_pipeline.v.pyv`).
    ///
    /// Bounded caches ([`Caches`]): a request that reaches the L2 may first
    /// wait for the invalidation round of the L2's victim; the L1.5 lines
    /// the transaction takes away leave their agents' tags, and the
    /// requester's L1.5 fills the line, perhaps evicting another.
    pub fn coherent(&mut self, agent: usize, pa: u64, access: Access, at: Cycle) -> Cycle {
        let line = pa / LINE;
        let (l15_hit, before) = match self.dir.get(&line) {
            Some(d) => {
                let permitted = match access {
                    Access::Read => d.holders & (1 << agent) != 0,
                    Access::Write => d.owner == Some(agent),
                };
                (
                    permitted && d.present & self.present_bit(agent, pa) != 0,
                    d.present,
                )
            }
            None => (false, 0),
        };
        let at = if l15_hit {
            at
        } else {
            at + self.l2_access(line, at)
        };
        // (The L2's victim is another line: `before` still holds.)
        let done = self.transaction(agent, pa, access, at);
        let after = self.dir.get(&line).map_or(0, |d| d.present);
        self.forget_l15(line, before & !after);
        self.l15_access(agent, pa, at);
        done
    }

    /// The transaction of [`coherent`](Self::coherent) on the directory
    /// entry alone (the tags are the caller's): one walk of the verified
    /// P-Mesh table ([`pmesh_table`]) from the entry's view of the line,
    /// whose end states become the entry and whose messages give the
    /// transaction's kind and cost.
    fn transaction(&mut self, agent: usize, pa: u64, access: Access, at: Cycle) -> Cycle {
        let line = pa / LINE;
        let bit = self.present_bit(agent, pa);
        let d = self.dir.entry(line).or_default();
        let me = 1u32 << agent;
        let listed = d.holders & me != 0;
        let mut view = line_view(&self.pmesh, d);
        if d.present & bit == 0 {
            // The tile has not got these 16 B: its L1.5 line is in I.
            view.l15[agent] = self.pmesh.table().l15_i;
        }
        let event = match access {
            Access::Read => self.pmesh.table().load,
            Access::Write => self.pmesh.table().store,
        };
        let walk = self.pmesh.walk(agent, event, &mut view);
        let (table, t) = (self.pmesh.table(), &self.timing);
        let m = table.msg;
        set_entry(d, &view, table);
        if !walk.any() {
            // A hit (a store to E makes it M silently: `set_entry`).
            self.counts.hits += 1;
            return at + t.l15_hit;
        }
        let request_cost = if walk.count(m.store_req) != 0 {
            t.store_miss
        } else {
            t.load_miss
        };
        if walk.forwarded == 0 && listed && walk.count(m.inv_fwd) == 0 {
            // The L1.5 line is missing: the L2 answers with its 16 B. No
            // other tile is involved, so the line's directory entry is not
            // blocked (the L2 pipeline answers without an MSHR).
            self.counts.subline_fills += 1;
            d.present |= bit;
            return at.max(d.busy_until) + request_cost;
        }
        let writes = walk.count(m.store_req) != 0;
        let cost = price(&walk, m, t, writes, &mut self.counts);
        let start = at.max(d.busy_until);
        let done = start + cost;
        d.busy_until = done;
        match access {
            // A forwarded owner keeps its L1.5 lines, shared.
            Access::Read => d.present |= bit,
            // Every other copy is gone, and the requester's own other L1.5
            // lines too when it upgraded from S (OpenPiton's INV_FWD
            // carries a sub-line vector: module doc of `pmesh_table`): it
            // holds the 16 B it wrote.
            Access::Write => d.present = bit,
        }
        self.settle(line, &walk, done);
        done
    }

    /// What a walk's end leaves besides the entry: a migration when it
    /// took the line from another tile, and the invalidations it made,
    /// which the watching agents hear of at `done`.
    fn settle(&mut self, line: u64, walk: &Walk, done: Cycle) {
        if walk.forwarded != 0 {
            *self.migrations.entry(line).or_default() += 1;
        }
        let lost = walk.lost as u32;
        if lost != 0 {
            self.counts.invalidations += u64::from(lost.count_ones());
            self.notify_watchers(line, lost, done);
        }
    }

    /// `agent`'s MESI state of the line of `pa` as the directory sees it:
    /// `"I"`, `"S"`, or `"EM"` (the owner: E until it stores, M after; a
    /// store to an E line is silent, so the directory cannot tell).
    pub fn state_of(&self, agent: usize, pa: u64) -> &'static str {
        match self.dir.get(&(pa / LINE)) {
            Some(d) if d.owner == Some(agent) => "EM",
            Some(d) if d.holders & (1 << agent) != 0 => "S",
            _ => "I",
        }
    }

    /// Migrations of the line of `pa` so far: transactions that took it
    /// from another agent (a load forwarded to the owner, a store
    /// forwarded to it, a store that invalidated another agent's copy).
    /// A line two agents keep writing and reading migrates at every turn:
    /// the ping-pong of false sharing (Cohort §6.1) shows up here.
    pub fn migrations(&self, pa: u64) -> u64 {
        self.migrations.get(&(pa / LINE)).copied().unwrap_or(0)
    }

    /// `agent`'s non-caching store to the line of `pa` at `at` (the
    /// baseline unit's SWAPWB_REQ, module doc of [`maple`]): one walk of
    /// the table's `store_noshare` rows. The L2 takes the line from the
    /// tiles (INV_FWD to the sharers, STORE_FWD to an owner), writes it and
    /// keeps it: the entry ends with no holder. Priced as the store that
    /// would take the line (`store_fwd`, `store_inv`, or `store_miss` when
    /// the L2 answers itself). Returns when the L2 has written it.
    pub fn store_noshare(&mut self, agent: usize, pa: u64, at: Cycle) -> Cycle {
        let line = pa / LINE;
        let at = at + self.l2_access(line, at);
        let d = self.dir.entry(line).or_default();
        let before = d.present;
        let mut view = line_view(&self.pmesh, d);
        // The unit's requests bypass its tile's L1.5.
        view.l15[agent] = self.pmesh.table().l15_i;
        let event = self.pmesh.table().store_noshare;
        let walk = self.pmesh.walk(agent, event, &mut view);
        let (table, t) = (self.pmesh.table(), &self.timing);
        let m = table.msg;
        set_entry(d, &view, table);
        let cost = price(&walk, m, t, true, &mut self.counts);
        let start = at.max(d.busy_until);
        let done = start + cost;
        d.busy_until = done;
        // Every copy is gone, the requester's too (it had none to keep).
        d.present = 0;
        self.forget_l15(line, before);
        self.settle(line, &walk, done);
        done
    }

    /// `agent`'s non-caching load of the line of `pa` at `at` (the
    /// baseline unit's LOAD_NOSHARE_REQ, module doc of [`maple`]): one walk
    /// of the table's `load_noshare` rows. The L2 answers without recording
    /// the tile; a tile that owns the line is downgraded first (LOAD_FWD),
    /// and keeps its L1.5 lines, shared. Nothing is filled: the data goes
    /// to the unit's buffer. Returns when the data arrives.
    pub fn load_noshare(&mut self, agent: usize, pa: u64, at: Cycle) -> Cycle {
        let line = pa / LINE;
        let at = at + self.l2_access(line, at);
        let bit = self.present_bit(agent, pa);
        let d = self.dir.entry(line).or_default();
        let mut view = line_view(&self.pmesh, d);
        if d.present & bit == 0 {
            view.l15[agent] = self.pmesh.table().l15_i;
        }
        let event = self.pmesh.table().load_noshare;
        let walk = self.pmesh.walk(agent, event, &mut view);
        let (table, t) = (self.pmesh.table(), &self.timing);
        let m = table.msg;
        set_entry(d, &view, table);
        if !walk.any() {
            // The tile's own L1.5 has the line.
            self.counts.hits += 1;
            return at + t.l15_hit;
        }
        let cost = price(&walk, m, t, false, &mut self.counts);
        let start = at.max(d.busy_until);
        let done = start + cost;
        d.busy_until = done;
        self.settle(line, &walk, done);
        done
    }
}

/// The cost of a walk that was not a hit, by the messages it exchanged,
/// counted by kind: a forward to the owner (with or without its dirty
/// data), invalidations of sharers, else a request the L2 answered itself
/// (`writes`: a store's or a load's).
fn price(walk: &Walk, m: Msgs, t: &Timing, writes: bool, counts: &mut CoherenceCounts) -> Cycle {
    let invs = u64::from(walk.count(m.inv_fwd));
    if walk.count(m.load_fwd) != 0 {
        counts.load_fwds += 1;
        if walk.count(m.load_fwdack_data) != 0 {
            t.load_fwd
        } else {
            t.load_fwd_clean
        }
    } else if walk.count(m.store_fwd) != 0 {
        counts.store_fwds += 1;
        if walk.count(m.store_fwdack_data) != 0 {
            t.store_fwd
        } else {
            t.store_fwd_clean
        }
    } else if invs != 0 {
        counts.store_invs += 1;
        t.store_inv + t.store_inv_extra * (invs - 1)
    } else if writes {
        counts.store_misses += 1;
        t.store_miss
    } else {
        counts.load_misses += 1;
        t.load_miss
    }
}

/// The table's view of a directory entry ([`pmesh_table`]'s mapping): the
/// L2 in O with its owner in M (it wrote the line) or E, in S with its
/// sharers, or in I; every other tile in I.
fn line_view(w: &Walker, d: &DirLine) -> LineView {
    let t = w.table();
    let mut v = w.idle_line();
    if let Some(o) = d.owner {
        debug_assert_eq!(d.holders, 1 << o, "an owned line lists its owner alone");
        v.l2 = t.l2_o;
        v.dir.owner = Some(o as u16);
        v.l15[o] = if d.dirty { t.l15_m } else { t.l15_e };
    } else if d.holders != 0 {
        v.l2 = t.l2_s;
        v.dir.sharers = u64::from(d.holders);
        let mut h = d.holders;
        while h != 0 {
            v.l15[h.trailing_zeros() as usize] = t.l15_s;
            h &= h - 1;
        }
    }
    v
}

/// Takes a walk's end state into the directory entry: the L2's owner or
/// sharers, and whether the owner wrote the line (its L1.5 ended in M, or
/// it already had and only filled 16 B more). Presence bits and the busy
/// time are the caller's.
fn set_entry(d: &mut DirLine, v: &LineView, t: &PmeshTable) {
    if v.l2 == t.l2_o {
        let o = usize::from(v.dir.owner.expect("the table's L2 in O has an owner"));
        d.dirty = v.l15[o] == t.l15_m || (d.owner == Some(o) && d.dirty);
        d.owner = Some(o);
        d.holders = 1 << o;
    } else if v.l2 == t.l2_s || v.l2 == t.l2_i {
        d.owner = None;
        d.dirty = false;
        d.holders = v.dir.sharers as u32;
    } else {
        panic!(
            "P-Mesh table ({}): a walk ended with the L2 in a state the SoC's directory has no counterpart for",
            t.origin
        );
    }
}

/// The SoC: the shared world, the process's address space, the Cohort
/// engines and the baseline unit. Cores run software through its methods
/// ([`core`]); the engines and the unit run as events.
#[derive(Debug)]
pub struct Soc {
    /// Memory, directory, events, cores.
    pub world: World,
    /// The process's address space (its Sv39 tables are in `world.mem`).
    pub aspace: mmu::AddressSpace,
    /// Cohort engines.
    pub engines: Vec<engine::CohortEngine>,
    /// The MAPLE-like unit.
    pub maple: maple::Maple,
    /// The page-fault handler resolves through the PTE register (else the
    /// retry register).
    pub fault_writes_tlb: bool,
    /// Page faults the handler resolved.
    pub faults_handled: u64,
}

/// The first physical frame the process's page tables and pages use.
pub const FIRST_FRAME: u64 = 0x8_0000;

impl Soc {
    /// A SoC of `cores` cores (tiles 0..cores), one Cohort engine per
    /// accelerator in `engines` (the next tiles, `mshrs` loads in flight
    /// each), and the MAPLE-like unit hosting `maple` on the tile after.
    pub fn new(
        timing: Timing,
        cores: usize,
        store_buffer: usize,
        engines: Vec<crate::accel::Accelerator>,
        mshrs: usize,
        maple: maple::Maple,
    ) -> Soc {
        let engines = engines
            .into_iter()
            .enumerate()
            .map(|(i, a)| engine::CohortEngine::new(i, cores + i, a, mshrs))
            .collect::<Vec<_>>();
        let mut maple = maple;
        maple.agent = cores + engines.len();
        Soc {
            world: World::new(timing, cores, store_buffer),
            aspace: mmu::AddressSpace::new(FIRST_FRAME),
            engines,
            maple,
            fault_writes_tlb: false,
            faults_handled: 0,
        }
    }

    /// Runs every event due at or before `t`.
    pub fn run_until(&mut self, t: Cycle) {
        while let Some((at, ev)) = self.world.pop_due(t) {
            match ev {
                Event::Drain(c) | Event::DrainDone(c) => core::drain(&mut self.world, c, at, ev),
                Event::Engine(id, token) => self.engines[id].step(&mut self.world, at, token),
                Event::Invalidated(id, slot) => {
                    self.engines[id].invalidated(&mut self.world, at, slot)
                }
                Event::MmioWrite(c, dev, reg, v) => self.mmio_write_arrives(c, at, dev, reg, v),
                Event::MmioAck(c) => self.world.cores[c].ni_pending = false,
            }
        }
    }

    /// Runs every event left (the engines finish their work).
    pub fn run_to_end(&mut self) {
        self.run_until(Cycle::MAX);
    }

    /// Writes `v` at virtual address `va` with the kernel's hands, outside
    /// time (setting up inputs and CSR structs before a run).
    pub fn poke(&mut self, va: u64, v: u64) {
        let pa = self
            .aspace
            .translate(&self.world.mem, va)
            .expect("poke of an unmapped address");
        self.world.mem.write_u64(pa, v);
    }

    /// Reads the word at `va` outside time.
    pub fn peek(&self, va: u64) -> u64 {
        let pa = self
            .aspace
            .translate(&self.world.mem, va)
            .expect("peek of an unmapped address");
        self.world.mem.read_u64(pa)
    }

    /// Maps `bytes` at `va` to fresh frames (the kernel, outside time).
    pub fn map(&mut self, va: u64, bytes: u64) {
        let mut space = self.aspace.clone();
        space.map_range(&mut self.world.mem, va, bytes, &[]);
        self.aspace = space;
    }
}

use ccsim_kernel::component::{ComponentSpec, ParamDefault, ParamKind, ParamRange, ParamSpec};

/// The declaration of `ariane_core`: a core of the Cohort SoC.
pub static ARIANE_CORE: ComponentSpec = ComponentSpec {
    type_name: "ariane_core",
    description: "An Ariane-like in-order core on a P-Mesh tile (Cohort §5): one instruction a cycle, loads stall until their data, stores drain in order from a store buffer, fence drains it (and waits for a posted uncached store's acknowledgement); an uncached store is posted, one in flight at a time, an uncached load a non-speculative round trip after every older store (Ariane 4c01614f: store_unit.sv, wt_dcache_wbuffer.sv ni_conflict, load_unit.sv stall_ni).",
    params: &[
        ParamSpec { name: "store_buffer_entries", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "stores", range: ParamRange::between(1.0, 64.0), from: "assumed: Ariane's speculative plus commit store buffer, 8 entries", description: "Stores the buffer holds before the core stalls." },
        ParamSpec { name: "load_hit_cycles", kind: ParamKind::Int, default: ParamDefault::Int(3), unit: "cycles", range: ParamRange::between(1.0, 100.0), from: "CVA6 design doc (docs/03_cva6_design/intro.rst): an L1 data-cache hit takes 3 cycles", description: "A load hit's cost to the pipeline." },
        ParamSpec { name: "l1d_bytes", kind: ParamKind::Int, default: ParamDefault::Int(8192), unit: "bytes", range: ParamRange::between(0.0, 1048576.0), from: "Cohort §5: 8KiB L1D; OpenPiton pyhplib.py CONFIG_L1D_SIZE 8192", description: "The write-through L1D's capacity (0: unbounded, the L1D holds whatever the L1.5 holds)." },
        ParamSpec { name: "l1d_ways", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "ways", range: ParamRange::between(1.0, 64.0), from: "OpenPiton pyhplib.py CONFIG_L1D_ASSOCIATIVITY 4", description: "The L1D's ways per set." },
        ParamSpec { name: "l1d_line_bytes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "bytes", range: ParamRange::between(8.0, 64.0), from: "OpenPiton's Ariane L1D: 16 B lines (8 KiB, 4 ways, 128 sets; core.rs doc)", description: "Bytes of an L1D line." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// The declaration of `pmesh_l15`: the private cache of every tile of the
/// Cohort SoC (the cores', the engine's, the baseline unit's).
pub static PMESH_L15: ComponentSpec = ComponentSpec {
    type_name: "pmesh_l15",
    description: "The L1.5 of a P-Mesh tile in the Cohort SoC (Cohort §5: every tile has one): the tile's coherence point, holding the L2's 64 B lines as smaller L1.5 lines; an access to a line whose state the tile holds but whose L1.5 line it lacks is a request the L2 answers itself.",
    params: &[
        ParamSpec { name: "line_bytes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "bytes", range: ParamRange::between(16.0, 64.0), from: "OpenPiton piton/tools/bin/pyhplib.py: L15_LINE_SIZE = 16 (L2_LINE_SIZE = 64), 'constants, not configurable'", description: "Bytes of an L1.5 line: 16, 32 or 64 (64: whole L2 lines, a tile fetches a line once)." },
        ParamSpec { name: "capacity_bytes", kind: ParamKind::Int, default: ParamDefault::Int(8192), unit: "bytes", range: ParamRange::between(0.0, 1048576.0), from: "Cohort §5: 8KiB L1.5; OpenPiton pyhplib.py CONFIG_L15_SIZE 8192", description: "The L1.5's capacity (0: unbounded, no evictions). A victim held modified is written back; a clean one leaves silently." },
        ParamSpec { name: "ways", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "ways", range: ParamRange::between(1.0, 64.0), from: "OpenPiton pyhplib.py CONFIG_L15_ASSOCIATIVITY 4; replacement: used bits and a round-robin pointer (l15_pipeline.v.pyv lru_used_bits_s2, lru_round_robin_turn_s2)", description: "The L1.5's ways per set." },
    ],
    ports: &[],
    stats: &[],
    check: Some(l15_check),
};

/// The declaration of `pmesh_l2`: the distributed shared L2 of the Cohort
/// SoC ([`Caches`]).
pub static PMESH_L2: ComponentSpec = ComponentSpec {
    type_name: "pmesh_l2",
    description: "The shared L2 of P-Mesh, one slice per tile, inclusive of the L1.5s: a line's home slice is chosen by address bits (OpenPiton's mixed-order interleaving: bits 7:6 XOR 15:14 for four homes); an eviction invalidates the victim's L1.5 copies. Memory behind it is not modelled: a miss costs what a request the L2 answers costs.",
    params: &[
        ParamSpec { name: "slice_bytes", kind: ParamKind::Int, default: ParamDefault::Int(65536), unit: "bytes", range: ParamRange::between(0.0, 16777216.0), from: "Cohort §5: 64KiB 4-way L2; OpenPiton pyhplib.py CONFIG_L2_SIZE 65536 (per tile)", description: "Bytes of one slice (0: unbounded, no evictions)." },
        ParamSpec { name: "ways", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "ways", range: ParamRange::between(1.0, 64.0), from: "OpenPiton pyhplib.py CONFIG_L2_ASSOCIATIVITY 4; replacement: invalid way first, else used bits from a round-robin pointer (l2_pipe1_dpath.v.pyv 'pseudo LRU algorithm')", description: "Ways per set of a slice." },
        ParamSpec { name: "slices", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "slices", range: ParamRange::between(1.0, 64.0), from: "Cohort §5: a four-tile design, each tile with its L2 slice", description: "Home slices (a power of two)." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// `pmesh_l15.line_bytes` must split an L2 line ([`check_l15_line`]).
fn l15_check(
    p: &ccsim_kernel::component::Params,
    _: ccsim_kernel::component::Peers<'_>,
) -> Result<(), ccsim_kernel::component::ParamProblem> {
    let bytes = u64::try_from(p.int("line_bytes")).unwrap_or(0);
    check_l15_line(bytes).map_err(|m| ccsim_kernel::component::ParamProblem::new("line_bytes", m))
}

/// The declaration of `cohort_engine`.
pub static COHORT_ENGINE: ComponentSpec = ComponentSpec {
    type_name: "cohort_engine",
    description: "The Cohort engine (Cohort §4.2) on a P-Mesh tile: configuration registers, consumer endpoint with the Reader Coherency Manager and backoff, producer endpoint with the Write Coherency Manager, ratchets to the accelerator, the MTE with an Sv39 MMU (16-entry TLB, page-table walker).",
    params: &[
        ParamSpec { name: "mshrs", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "loads", range: ParamRange::between(1.0, 64.0), from: "assumed: the MTE keeps four line reads in flight", description: "Line reads the consumer keeps in flight." },
        ParamSpec { name: "backoff_cycles", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "cycles", range: ParamRange::between(0.0, 100_000.0), from: "assumed", description: "The RCM's wait after an invalidation of the write-index line before it re-reads it (§4.2.3's configurable period)." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// The declaration of `maple_unit`.
pub static MAPLE_UNIT: ComponentSpec = ComponentSpec {
    type_name: "maple_unit",
    description: "The MAPLE-like baseline unit (Cohort §5.1) hosting the accelerator: MMIO invocation (a round trip per word) and coherent DMA (non-caching LLC prefetches and stores: LOAD_NOSHARE_REQ, SWAPWB_REQ; 256 B blocks, an API call with MMIO writes per block).",
    params: &[
        ParamSpec { name: "mmio_cycles", kind: ParamKind::Int, default: ParamDefault::Int(20), unit: "cycles", range: ParamRange::between(0.0, 10_000.0), from: "assumed", description: "The unit's cycles to handle one uncached access (beyond the NoC)." },
        ParamSpec { name: "mshrs", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "loads", range: ParamRange::between(1.0, 64.0), from: "assumed: MAPLE is a memory-parallel unit (§5.1), eight prefetches in flight", description: "Prefetch loads in flight." },
        ParamSpec { name: "dma_api_instructions", kind: ParamKind::Int, default: ParamDefault::Int(100), unit: "instructions", range: ParamRange::between(0.0, 1e6), from: "assumed: a library call's bookkeeping", description: "The DMA API call's software per 256 B block beside its MMIO accesses." },
        ParamSpec { name: "dma_setup_cycles", kind: ParamKind::Int, default: ParamDefault::Int(1000), unit: "cycles", range: ParamRange::between(0.0, 1e6), from: "assumed", description: "The unit's cycles from the API's start command to its first prefetch (configuring the transfer and its translations), which the core waits out on the status register." },
        ParamSpec { name: "dma_block_bytes", kind: ParamKind::Int, default: ParamDefault::Int(256), unit: "bytes", range: ParamRange::between(64.0, 65536.0), from: "Cohort Table 2: baseline DMA granularity 256 bytes", description: "Bytes per DMA transfer." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};
