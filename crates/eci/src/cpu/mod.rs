//! The CPU side: cores with L1 caches and write buffers in front of a shared
//! LLC that is the ECI remote agent and **executes the peer table**
//! (`ir.roles[1]`) with real data.
//!
//! ```text
//!   core 0 ─ L1 (write-through) ─ write buffer ─┐
//!   core 1 ─ L1 (write-through) ─ write buffer ─┼─ LLC: TAD 0..n (XOR scrambled)
//!   ...                                         ┘     peer table → eci0 / eci1
//! ```
//!
//! * **Cores.** `cores` cores each run their own program in order with at
//!   most `mshrs` operations outstanding (1 serializes accesses, as Table 2
//!   of CCKit measures). Core 0 runs the program given at construction (the
//!   single-core API of the experiments); [`CoherentCpu::set_program`] gives
//!   the others theirs.
//! * **The LLC runs the table.** A load hits when the table's `load` row in
//!   the line's state sends nothing (its `check` action reads the copy);
//!   otherwise the row's request goes out (after `miss_ns`) and the load
//!   waits until the line reaches a state where it hits. A store needs a
//!   state with write access and a `store` row; otherwise it issues the
//!   `getx` row. An operation on a line in a transient state waits (the MSHR
//!   merges it). Forwards are answered by the table (`snoop_ns` later); data
//!   comes from the LLC's copy.
//! * **L1** (`l1_bytes > 0`; ThunderX-1: 32 KiB, 32-way, write-through, PIO
//!   §3). Presence only: being write-through and inclusive, an L1 line always
//!   equals the LLC's copy, so the data lives once, in the LLC. A load that
//!   hits the L1 completes after `l1_hit_ns` without touching the LLC; a load
//!   served by the LLC fills the L1. When the LLC loses read access to a line
//!   (forward, invalidation, eviction) every core's L1 copy is invalidated.
//!   With the L1 off, the L1 lookup of a miss is folded into `miss_ns`, so a
//!   cold single-core load costs the same either way.
//! * **Write buffer** (`write_buffer_bytes > 0`; ThunderX-1: 3 KiB per core,
//!   CCKit §5.2). A store commits when it enters the buffer ("a write
//!   instruction commits once it hits the write buffer", CCKit §5.2) after
//!   `l1_hit_ns`; stores to a line already buffered merge into its entry.
//!   The buffer drains oldest entry first into the LLC, obtaining write
//!   access by the table's `getx` row and then running its `store` row once
//!   per buffered store; while the head waits, the other entries' lines are
//!   asked for too (ARMv8 is weakly ordered), so their round trips overlap.
//!   Draining takes time (`wb_drain_ns` per entry: the core's store path
//!   into the L2 carries a line in that time), so a burst of stores longer
//!   than the buffer drains at that rate. A store that finds the buffer
//!   full stalls the core until an entry drains. Loads see the core's own older buffered stores
//!   (store-to-load forwarding, overlaid on the line they return).
//! * **Store misses in the TADs** (`store_misses_in_tads = true`). Without
//!   it the head entry waits in the buffer for its line's read-exclusive
//!   round trip, so at most one buffer's worth (24 lines on ThunderX-1) of
//!   store misses overlap. With it the LLC takes a store miss as it takes a
//!   load miss: the head entry drains (`wb_drain_ns`) into a transaction of
//!   its line's TAD, which asks for write access (`getx`) and performs the
//!   entry's stores when the line arrives writable; the buffer entry is
//!   free at once. Store misses then overlap as many read-exclusives as
//!   the TADs have slots (`tads` x `tad_transactions`), as loads overlap
//!   prefetches; an entry whose TAD is full waits at the buffer's head for
//!   a slot. A store that drains into a line already in a transaction
//!   joins it without a slot. Stores still take effect per line in program
//!   order; the core's loads see its own unperformed stores; fences,
//!   atomics and cache maintenance wait for them as for buffered ones.
//! * **Atomics** (CAS, fetch-add, swap; ThunderX-1 is ARMv8.0, so these are
//!   LDXR/STXR loops, modelled as one read-modify-write at the LLC while it
//!   holds the line with write access). An atomic waits until the core's
//!   buffered stores to its line have drained, completes with the old value
//!   in [`Completed::old`], and blocks later issue until it completes.
//! * **Fences** (DMB): complete once every earlier operation completed and
//!   the write buffer is empty; nothing issues after a fence until then.
//! * **Prefetches**: [`CpuOp::Prefetch`] (PRFM PLDL1KEEP) completes at issue
//!   and starts the `load` row if the line is not readable (taking a TAD
//!   slot; dropped, as a hint may be, when the TAD has none free); the line
//!   goes into the core's L1 once readable;
//!   [`CpuOp::PrefetchExclusive`] waits until the line is writable.
//! * **Cache maintenance**: [`CpuOp::Evict`] (DC CIVAC) writes back and
//!   invalidates by the `evict_dirty`, `evict_clean` or `drop` row;
//!   [`CpuOp::Clean`] (DC CVAC) writes back a dirty line and keeps it. The
//!   ECI peer table has no clean-but-keep row, so Clean runs the `downgrade`
//!   row (VICS: data home, line kept Shared) when the line is dirty, which
//!   the table tells by having an `evict_dirty` row in the line's state.
//!   Maintenance waits for the core's buffered stores to its line.
//! * **TADs** (`tads > 0`). The LLC is split into TADs, each admitting
//!   `tad_transactions` outstanding transactions (16 on ThunderX-1, PIO
//!   §5). A transaction is a line's stay in a transient state: it starts
//!   when the `load` / `getx` row leaves a stable state and ends when the
//!   line is stable again. A miss whose TAD is full waits in that TAD's
//!   FIFO and is served first when a slot frees.
//! * **XOR address scrambler** (`scrambler = true`). ThunderX-1 scrambles
//!   addresses to break up pathological patterns (CCKit §4.3); the hash is
//!   not public, so ours is a documented XOR fold ([`xor_fold`]): the TAD of
//!   a line is the XOR of all `log2(tads)`-bit chunks of its line index, its
//!   set the XOR of all `log2(sets)`-bit chunks. Both are permutations of
//!   each aligned block of consecutive lines, so sequential lines spread
//!   over all TADs and sets; without it, `set = line % sets` and `tad = line
//!   % tads`.
//! * **Capacity.** Line state and data live in a sparse map (memory grows
//!   with the lines touched, never with the address space). With
//!   `llc_lines > 0` the LLC is set-associative (`llc_ways` ways, LRU) and
//!   evicts by the table's `evict_dirty`, `evict_clean` or `drop` row.
//! * **Watchdog.** An operation outstanding for longer than `watchdog_us`
//!   stops the run with a report of every stuck line.
//!
//! A buffered entry holding a store younger than a load of the same core to
//! the same line that has not read yet waits for that load, so a load never
//! sees a store that follows it in program order. The write buffer drains
//! one entry at a time.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use ccsim_kernel::prelude::*;
use ccsim_protocol::ir::Access;

use super::link::EciLink;

mod l1;
mod llc;
mod program;
mod wait_map;

use ccsim_coherence::check::{Checker, LineSnapshot};
use ccsim_coherence::line_map::Slot;
use ccsim_coherence::parked::Parked;
use ccsim_coherence::util::{complete, modulo, ns_to_ps};
use ccsim_coherence::{recycle_line, CohMsg, Line, Msg, Tables, LINE_BYTES, PEER};
use ccsim_protocol::engine::{execute, Cell, CompiledTable, Row as PeerRow, Step};
use l1::PresenceCache;
use llc::{fill_copy, send_to_link, CopySlab, CopySlot, LlcLine, LlcMap, LlcRow, LruSets};
use program::{check_words, put_word, word_of};
pub use program::{AtomicOp, Completed, CpuOp};
use wait_map::WaitMap;

/// Declaration of `coherent_cpu`.
pub static COHERENT_CPU: ComponentSpec = ComponentSpec {
    type_name: "coherent_cpu",
    description: "Cores with L1s and write buffers sharing an LLC that acts as the ECI remote agent: executes the peer table of the protocol with real line data; MSHRs, TADs with an XOR scrambler; watchdog.",
    params: &[
        ParamSpec { name: "cores", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cores", range: ParamRange::at_least(1.0), from: "assumed: one core (ThunderX-1 has 48, PIO paper §3)", description: "Cores sharing the LLC, each with its own program, MSHRs, L1 and write buffer." },
        ParamSpec { name: "mshrs", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "ops", range: ParamRange::at_least(1.0), from: "assumed: one operation at a time", description: "Operations outstanding at once per core." },
        ParamSpec { name: "issue_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.5), unit: "ns", range: ParamRange::at_least(0.0), from: "PIO paper §3: 2.0 GHz core, one cycle", description: "Core time between issuing two operations." },
        ParamSpec { name: "hit_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: ThunderX-1 LLC load-to-use about 20 cycles at 2 GHz", description: "Load-to-use latency of an LLC hit." },
        ParamSpec { name: "miss_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: L1 miss and LLC tag lookup, about 20 cycles at 2 GHz", description: "From the core's access to the request leaving the LLC on a miss (L1 and LLC lookups)." },
        ParamSpec { name: "fill_ns", kind: ParamKind::Float, default: ParamDefault::Float(5.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: about 10 cycles at 2 GHz", description: "From the grant arriving to the data reaching the core." },
        ParamSpec { name: "snoop_ns", kind: ParamKind::Float, default: ParamDefault::Float(5.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "From a forward arriving to its answer leaving." },
        ParamSpec { name: "llc_lines", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "lines", range: ParamRange::at_least(0.0), from: "assumed: unlimited unless a platform sizes the LLC", description: "Valid lines the LLC holds before evicting (0: unlimited); a multiple of llc_ways, and a power-of-two number of sets with the scrambler." },
        ParamSpec { name: "llc_ways", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "ways", range: ParamRange::at_least(0.0), from: "assumed: fully associative", description: "Associativity: llc_lines / llc_ways sets, LRU within a set (0: fully associative)." },
        ParamSpec { name: "l1_bytes", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "bytes", range: ParamRange::at_least(0.0), from: "assumed: no L1 unless a platform adds one", description: "Per-core write-through L1 data cache (0: none; the L1 lookup is then folded into hit_ns / miss_ns); a multiple of l1_ways x 128 B." },
        ParamSpec { name: "l1_ways", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "ways", range: ParamRange::at_least(1.0), from: "PIO paper §3: 32-way associative L1", description: "L1 associativity (set = line % sets, LRU)." },
        ParamSpec { name: "l1_hit_ns", kind: ParamKind::Float, default: ParamDefault::Float(1.5), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: L1 load-to-use about 3 cycles at 2 GHz", description: "Load-to-use latency of an L1 hit; also the time a store takes to commit into the write buffer." },
        ParamSpec { name: "write_buffer_bytes", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "bytes", range: ParamRange::at_least(0.0), from: "assumed: no write buffer unless a platform adds one", description: "Per-core write buffer, in whole lines (0: none; a store completes once performed at the LLC)." },
        ParamSpec { name: "wb_drain_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: no drain time unless a platform sets the core's store path", description: "Time one write-buffer entry (a whole line) takes to drain into the LLC once the line is writable: the core's store bandwidth into the L2 (128 B / bytes per ns). The next entry drains no earlier; 0: entries drain at once." },
        ParamSpec { name: "store_misses_in_tads", kind: ParamKind::Bool, default: ParamDefault::Bool(false), unit: "", range: ParamRange::ANY, from: "assumed: off (a write-buffer entry waits for its line's read-exclusive)", description: "A write-buffer entry whose line is not writable drains into a transaction of the line's TAD (which obtains the line and performs the stores) instead of waiting at the buffer's head." },
        ParamSpec { name: "tads", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TADs", range: ParamRange::at_least(0.0), from: "assumed: no TAD limit unless a platform sets one", description: "LLC tag-and-data units, each with its own transaction limit (0: no limit); a power of two with the scrambler." },
        ParamSpec { name: "tad_transactions", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "transactions", range: ParamRange::at_least(1.0), from: "PIO paper §5: each TAD handles up to 16 simultaneous cache transactions", description: "Outstanding transactions (lines in a transient state) per TAD." },
        ParamSpec { name: "scrambler", kind: ParamKind::Bool, default: ParamDefault::Bool(false), unit: "", range: ParamRange::ANY, from: "assumed: off", description: "XOR-fold the line index to choose TAD and set (needs powers of two)." },
        ParamSpec { name: "watchdog_us", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "us", range: ParamRange::positive(), from: "assumed: far above any unloaded transaction", description: "An operation outstanding this long is reported as stuck." },
    ],
    ports: &[
        PortSpec { name: "eci0", description: "Even lines.", required: true },
        PortSpec { name: "eci1", description: "Odd lines.", required: true },
    ],
    stats: &[
        StatSpec { name: "latency_ps", kind: StatKind::Histogram, unit: "ps", description: "Issue to completion of each operation." },
        StatSpec { name: "misses", kind: StatKind::Counter, unit: "requests", description: "Requests sent to the home." },
        StatSpec { name: "hits", kind: StatKind::Counter, unit: "ops", description: "Operations completed by the LLC (directly or once the line arrived)." },
        StatSpec { name: "evictions", kind: StatKind::Counter, unit: "lines", description: "Capacity evictions." },
        StatSpec { name: "l1_hits", kind: StatKind::Counter, unit: "loads", description: "Loads served by the L1." },
        StatSpec { name: "wb_stalls", kind: StatKind::Counter, unit: "stores", description: "Stores that found the write buffer full." },
        StatSpec { name: "tad_waits", kind: StatKind::Counter, unit: "requests", description: "Misses that waited for a TAD slot." },
    ],
    check: Some(check),
};

/// Caches and the write buffer hold whole lines and whole sets, and the
/// XOR scrambler folds onto powers of two.
fn check(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let line = LINE_BYTES as i64;
    let (lines, ways) = (p.int("llc_lines"), p.int("llc_ways"));
    if lines > 0 && ways > 0 && lines % ways != 0 {
        return Err(ParamProblem::new(
            "llc_lines",
            format!("must be a multiple of llc_ways ({ways}), got {lines}"),
        ));
    }
    for name in ["l1_bytes", "write_buffer_bytes"] {
        let bytes = p.int(name);
        if bytes % line != 0 {
            return Err(ParamProblem::new(
                name,
                format!("must be a multiple of the {line} B line, got {bytes}"),
            ));
        }
    }
    let (l1_bytes, l1_ways) = (p.int("l1_bytes"), p.int("l1_ways"));
    if l1_bytes % (l1_ways * line) != 0 {
        return Err(ParamProblem::new(
            "l1_bytes",
            format!(
                "must be a multiple of l1_ways x {line} B ({}), got {l1_bytes}",
                l1_ways * line
            ),
        ));
    }
    if p.bool("scrambler") {
        let sets = if lines == 0 || ways == 0 {
            1
        } else {
            lines / ways
        };
        if !(sets as u64).is_power_of_two() {
            return Err(ParamProblem::new(
                "llc_lines",
                format!("must give a power-of-two number of sets (llc_lines / llc_ways) for the scrambler, got {sets} sets"),
            ));
        }
        let tads = p.int("tads");
        if tads > 0 && !(tads as u64).is_power_of_two() {
            return Err(ParamProblem::new(
                "tads",
                format!("must be 0 or a power of two for the scrambler, got {tads}"),
            ));
        }
    }
    Ok(())
}

const ST_LAT: usize = 0;
const ST_MISS: usize = 1;
const ST_HIT: usize = 2;
const ST_EVICT: usize = 3;
const ST_L1_HIT: usize = 4;
const ST_WB_STALL: usize = 5;
const ST_TAD_WAIT: usize = 6;

// Wake tokens: the low byte is the kind, the rest the core (issue) or the
// completion's slot in `done` (done).
const TOK_ISSUE: u64 = 1;
const TOK_DONE: u64 = 2;
const TOK_WATCHDOG: u64 = 3;
/// The store path into the LLC is free for core `token >> 8`'s next
/// write-buffer entry.
const TOK_DRAIN: u64 = 5;
// Local-message tokens (`Ctx::schedule_local`): the fixed-latency paths of
// messages, each item a kernel event of its own. (The path from the LLC's
// send to the link ends in a send and nothing else, so it is a reserved
// send, `Ctx::send_at`, not an event.)
/// A received message delayed by link jitter.
const TOK_INBOX: u64 = 4;

/// The local (non-message) events of the peer table the LLC raises, resolved
/// to table indices once so a core operation costs no name lookup.
#[derive(Clone, Copy, Debug, PartialEq)]
enum LocalEv {
    Load,
    Store,
    Getx,
    EvictDirty,
    EvictClean,
    Drop,
    Downgrade,
}

/// Table event names of [`LocalEv`], in its order.
const LOCAL_EV_NAMES: [&str; 7] = [
    "load",
    "store",
    "getx",
    "evict_dirty",
    "evict_clean",
    "drop",
    "downgrade",
];

/// The eviction rows tried in order: write back dirty, then clean, then drop.
const EVICTIONS: [LocalEv; 3] = [LocalEv::EvictDirty, LocalEv::EvictClean, LocalEv::Drop];

/// Who waits for a line to settle or a TAD slot to free.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Waiter {
    /// Op `1` of core `0`.
    Op(usize, usize),
    /// The write buffer of a core, draining its oldest entry.
    Drain(usize),
    /// A read prefetch of a core: fill its L1 once the line is readable.
    L1Fill(usize),
    /// The stores drained into the TAD transaction of this line
    /// ([`CoherentCpu::tad_stores`]): performed once it is writable.
    TadStores(u64),
}

/// Who waits for one line, in the order they came: usually one op (a
/// miss), held inline, so a miss neither allocates nor reuses a list.
#[derive(Debug)]
enum Waiters {
    One(Waiter),
    Many(Vec<Waiter>),
}

/// How a table row run by [`CoherentCpu::local`] went.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Row {
    /// No row for this event in this state.
    Missing,
    /// The row ran; whether it sent something.
    Ran(bool),
    /// A read-only row (a hit) with checks off: it changed nothing, so what
    /// the caller read of the line before still holds.
    ReadOnly,
    /// The row would start a transaction but the line's TAD is full.
    NoSlot,
}

/// An outstanding op of a core.
#[derive(Debug, Clone, Copy)]
struct Outstanding {
    /// Index in the core's program.
    op: usize,
    /// Issue tick.
    issued: Tick,
    /// It already read its data (its completion is on its way).
    captured: bool,
}

/// One write-buffer entry: a line and its buffered stores in program order
/// (op index, word, value). Merged stores share the entry.
#[derive(Debug, Clone)]
struct WbEntry {
    line: u64,
    stores: Vec<(usize, u8, u64)>,
}

/// How draining the head entry into a TAD transaction went.
#[derive(Debug, Clone, Copy, PartialEq)]
enum TadDrain {
    /// The entry left the buffer.
    Drained,
    /// The store path is still busy with the previous entry.
    Paced,
    /// The line's TAD has no free slot: the entry waits at the head.
    NoSlot,
    /// An older load of the core to the line has not read yet.
    Deferred,
}

/// Whether a core's write buffer is draining.
#[derive(Debug, Clone, Copy, PartialEq)]
enum DrainState {
    /// Not inside a drain and not waiting.
    Idle,
    /// Inside [`CoherentCpu::drain`] (re-entry is a no-op).
    Running,
    /// Waiting for the head entry's line or a TAD slot.
    Waiting,
    /// The store path into the LLC is busy with the previous entry until
    /// [`Core::drain_ready`] (a `TOK_DRAIN` wake resumes it).
    Paced,
    /// The head entry holds a store younger than a load of the core to the
    /// same line that has not read it yet: applying it now would let the
    /// load see a later store. Resumes when such a load reads.
    Deferred,
}

/// One core: its program, MSHRs, L1 and write buffer.
struct Core {
    program: Vec<CpuOp>,
    next: usize,
    done: usize,
    /// Outstanding ops in program order (ops issue in order; at most
    /// `mshrs` of them, so a sorted deque beats a tree).
    outstanding: VecDeque<Outstanding>,
    l1: Option<PresenceCache>,
    wb: VecDeque<WbEntry>,
    drain: DrainState,
    /// When the store path into the LLC takes the next entry
    /// (`wb_drain_ns` after the previous one drained).
    drain_ready: Tick,
    /// A store waiting for a free write-buffer entry (stalls issue).
    stalled_store: Option<usize>,
    /// A fence or atomic that later ops may not pass.
    blocking: Option<usize>,
    /// Ops waiting for buffered stores to their line to drain.
    wb_waiters: Vec<usize>,
    /// Entries drained into TAD transactions whose stores are not yet
    /// performed (`store_misses_in_tads`).
    tad_entries: usize,
}

impl Core {
    /// Position of op `i` in `outstanding` (ops mostly complete oldest
    /// first, so the front is tried before a search).
    fn outstanding_pos(&self, i: usize) -> Option<usize> {
        match self.outstanding.front() {
            Some(o) if o.op == i => Some(0),
            _ => self.outstanding.binary_search_by_key(&i, |o| o.op).ok(),
        }
    }
}

/// An op's completion on its way to the core, filled in place where it
/// waits (`Parked`).
#[derive(Debug)]
pub(crate) struct Done {
    pub core: usize,
    pub op: usize,
    pub old: Option<u64>,
    /// The line the op saw: written once here, copied once more into its
    /// [`Completed`] record.
    pub line: Line,
}

impl Default for Done {
    fn default() -> Done {
        Done {
            core: 0,
            op: 0,
            old: None,
            line: [0; LINE_BYTES],
        }
    }
}

/// What a completing op saw of its line, for [`CoherentCpu::complete_at`].
#[derive(Clone, Copy, Debug)]
enum Seen<'a> {
    /// Nothing (zeros): fences, waits, prefetches.
    Nothing,
    /// The line as the core sees it ([`CoherentCpu::view`]).
    Line(u64),
    /// The same, with the LLC's copy already looked up (the caller changed
    /// nothing since), which saves the lookup on every hit.
    LineAt(u64, Option<CopySlot>),
    /// Data the LLC received and used once without keeping it (a
    /// `check_window` row), under the core's own buffered stores.
    Received(u64, &'a Line),
}

/// The `coherent_cpu` component.
pub struct CoherentCpu {
    /// The shared tables behind an `Rc`, so that a handler holding them
    /// while it mutates `self` clones a plain counter, not an atomic one.
    // The second pointer is the point: cloning an `Rc` is a plain add.
    #[allow(clippy::redundant_allocation)]
    tables: Rc<Arc<Tables>>,
    /// The peer table as the LLC runs it (shared the same way).
    peer: Rc<CompiledTable<()>>,
    checker: Rc<RefCell<Checker>>,
    /// The checker's `enabled`: with checks off rows are not reported to it.
    checks: bool,
    /// Peer-table event index of each [`LocalEv`] (`None`: no such event).
    local_ids: [Option<usize>; 7],
    /// Per peer state: whether a load there is a hit that changes nothing
    /// (readable, a `load` row that is read-only and opens no transaction,
    /// checks off), which is what [`Self::attempt`] finds for a load that
    /// retries after its line's fill. See [`Self::retry_after_fill`].
    load_reads_unchanged: Vec<bool>,
    /// Per peer state: whether a row there reads received data once
    /// (`check_window`, gem5's `IS_I`: data a forward overtook answers the
    /// loads that began before that forward, and is not kept).
    reads_once: Vec<bool>,
    /// `reads_once` as a bit per state, modulo 64, for the test on every
    /// receipt (a state beyond 63 may alias one that reads once: then
    /// [`Self::read_once`] finds it does nothing). Nonzero where any state
    /// reads once: with checks on, the LLC's local rows then open read
    /// windows in the checker.
    once_mask: u64,
    /// When each line in a `reads_once` state entered it (the forward that
    /// overtook its data): loads issued by then may use the data.
    once_since: HashMap<u64, Tick>,
    /// Loads answered by data used once (see [`Self::loads_read_once`]).
    read_once_count: u64,
    issue: Tick,
    hit: Tick,
    miss: Tick,
    fill: Tick,
    snoop: Tick,
    l1_hit: Tick,
    mshrs: usize,
    wb_entries: usize,
    /// Whether a store miss drains into a TAD transaction.
    store_misses_in_tads: bool,
    /// Stores drained into TAD transactions, per line, in drain order:
    /// (core, entry) (never iterated, so hashed).
    tad_stores: HashMap<u64, Vec<(usize, WbEntry)>>,
    /// Time the store path into the LLC takes per write-buffer entry.
    wb_drain: Tick,
    ways: usize,
    sets: u64,
    scrambler: bool,
    tad_limit: u32,
    /// Transactions open per TAD (empty: TADs not modelled).
    tad_busy: Vec<u32>,
    /// Highest occupancy each TAD reached.
    tad_peak: Vec<u32>,
    /// Misses waiting for a slot, per TAD.
    tad_queue: Vec<VecDeque<Waiter>>,
    /// TADs that freed a slot since they were last served.
    tad_freed: Vec<usize>,
    watchdog: Tick,
    /// Whether a watchdog wake is scheduled.
    watchdog_armed: bool,
    links: u64,
    link: EciLink,
    cores: Vec<Core>,
    /// Who waits for each line (never iterated).
    waiting: WaitMap<Waiters>,
    /// Emptied `waiting` lists, reused so that a line with several
    /// waiters allocates none.
    spare_waiters: Vec<Vec<Waiter>>,
    llc: LlcMap,
    /// The copies the `llc` entries point to.
    copies: CopySlab,
    /// Valid lines of each set, least recently used first (no sets when
    /// the capacity is unlimited: nothing is ever evicted, so order is
    /// moot).
    lru: LruSets,
    /// Completions on their way to their cores, each named by the slot in
    /// its `TOK_DONE` wake-up.
    done: Parked<Done>,
    /// Completed operations of all cores in completion order (while
    /// `keep_completed`).
    pub completed: Vec<Completed>,
    /// Whether each completed operation is kept in `completed` (the
    /// default). A run that needs only its statistics turns it off, so its
    /// memory does not grow with the operations it runs (a record holds the
    /// line's 128 bytes); [`CoherentCpu::ops_completed`] still counts them,
    /// and a driver still sees each one.
    pub keep_completed: bool,
    /// The watchdog's report, when it fired.
    pub stuck: Option<Vec<String>>,
    /// Stores in the order they took effect at the LLC: (tick, line, word, value).
    pub store_log: Vec<(Tick, u64, u8, u64)>,
    driver: Option<Driver>,
}

/// Software on the cores that reacts to completed operations (a spin loop,
/// an invocation client): called with each completed op; the ops it returns
/// are appended to the program of the op's core.
pub type Driver = Box<dyn FnMut(&Completed) -> Vec<CpuOp>>;

/// XOR of all `bits`-wide chunks of `x` (0 when `bits` is 0): the address
/// scrambler's hash. For a fixed upper part it permutes the low `bits` bits,
/// so each aligned block of `2^bits` consecutive lines covers every index.
pub fn xor_fold(x: u64, bits: u32) -> u64 {
    if bits == 0 {
        return 0;
    }
    let mask = (1u64 << bits) - 1;
    let (mut h, mut v) = (0, x);
    while v != 0 {
        h ^= v & mask;
        v = v.checked_shr(bits).unwrap_or(0);
    }
    h
}

impl CoherentCpu {
    /// From `coherent_cpu` parameters; core 0 runs `program`.
    pub fn from_params(
        p: &Params,
        tables: Arc<Tables>,
        checker: Rc<RefCell<Checker>>,
        link: &EciLink,
        program: Vec<CpuOp>,
    ) -> Result<Self, String> {
        let p = complete(&COHERENT_CPU, p)?;
        let f = |n: &str| ns_to_ps(p.float(n));
        check_words(&program, "program")?;
        // `check` (run by `complete`) guarantees whole sets, lines and
        // powers of two for the scrambler.
        let capacity = p.uint("llc_lines") as usize;
        let ways = match p.uint("llc_ways") as usize {
            0 => capacity,
            w => w,
        };
        let sets = if capacity == 0 {
            1
        } else {
            (capacity / ways) as u64
        };
        let scrambler = p.bool("scrambler");
        let tads = p.uint("tads") as usize;
        let l1_lines = p.uint("l1_bytes") / LINE_BYTES as u64;
        let l1_ways = p.uint("l1_ways");
        let l1 = (l1_lines > 0).then(|| (l1_lines / l1_ways, l1_ways as usize));
        let cores = p.uint("cores") as usize;
        let mut program = Some(program);
        let cores = (0..cores)
            .map(|_| Core {
                program: program.take().unwrap_or_default(),
                next: 0,
                done: 0,
                outstanding: VecDeque::new(),
                l1: l1.map(|(sets, ways)| PresenceCache::new(sets, ways)),
                wb: VecDeque::new(),
                drain: DrainState::Idle,
                drain_ready: 0,
                stalled_store: None,
                blocking: None,
                wb_waiters: Vec::new(),
                tad_entries: 0,
            })
            .collect();
        let checks = checker.borrow().enabled;
        let local_ids = LOCAL_EV_NAMES.map(|n| tables.local_event(PEER, n));
        let peer = Rc::new(tables.compile(PEER, |_| ()));
        let load_reads_unchanged = (0..peer.access.len())
            .map(|st| {
                !checks
                    && peer.access[st] != Access::None
                    && local_ids[LocalEv::Load as usize]
                        .and_then(|e| peer.row(st, e))
                        .is_some_and(|r| r.read_only && !r.opens)
            })
            .collect();
        let reads_once = (0..peer.access.len())
            .map(|st| {
                (0..peer.n_events).any(|ev| {
                    peer.row(st, ev)
                        .is_some_and(|r| r.steps.iter().any(|s| matches!(s, Step::CheckWindow)))
                })
            })
            .collect::<Vec<bool>>();
        let once_mask = (0..reads_once.len())
            .filter(|&st| reads_once[st])
            .fold(0u64, |m, st| m | 1u64.wrapping_shl(st as u32));
        let n = tables.ir.machines()[PEER].states.len();
        if n >= <LlcLine as Slot>::ABSENT.state as usize {
            return Err(format!(
                "{}: the {} table has {n} states; the LLC keeps a state in a byte (at most {})",
                COHERENT_CPU.type_name,
                tables.agent(PEER),
                <LlcLine as Slot>::ABSENT.state - 1
            ));
        }
        Ok(CoherentCpu {
            issue: f("issue_ns"),
            hit: f("hit_ns"),
            miss: f("miss_ns"),
            fill: f("fill_ns"),
            snoop: f("snoop_ns"),
            l1_hit: f("l1_hit_ns"),
            mshrs: p.uint("mshrs") as usize,
            wb_entries: p.uint("write_buffer_bytes") as usize / LINE_BYTES,
            wb_drain: f("wb_drain_ns"),
            store_misses_in_tads: p.bool("store_misses_in_tads"),
            tad_stores: HashMap::default(),
            ways,
            sets,
            scrambler,
            tad_limit: p.uint("tad_transactions") as u32,
            tad_busy: vec![0; tads],
            tad_peak: vec![0; tads],
            tad_queue: vec![VecDeque::new(); tads],
            tad_freed: Vec::new(),
            watchdog: f("watchdog_us").saturating_mul(1000).max(1),
            watchdog_armed: false,
            links: link.links,
            link: link.clone(),
            cores,
            waiting: WaitMap::default(),
            spare_waiters: Vec::new(),
            llc: llc::llc_map(),
            copies: CopySlab::with_capacity(capacity),
            lru: if capacity == 0 {
                LruSets::default()
            } else {
                LruSets::new(sets as usize, ways)
            },
            done: Parked::new(),
            completed: Vec::new(),
            keep_completed: true,
            stuck: None,
            store_log: Vec::new(),
            driver: None,
            local_ids,
            load_reads_unchanged,
            reads_once,
            once_mask,
            once_since: HashMap::default(),
            read_once_count: 0,
            peer,
            tables: Rc::new(tables),
            checks,
            checker,
        })
    }

    /// Sets the program of `core` (before the run).
    pub fn set_program(&mut self, core: usize, program: Vec<CpuOp>) -> Result<(), String> {
        // Core 0's is "the program" of a single-core system.
        let what = match core {
            0 => "program".to_string(),
            k => format!("core {k} program"),
        };
        check_words(&program, &what)?;
        let n = self.cores.len();
        let c = self
            .cores
            .get_mut(core)
            .ok_or_else(|| format!("core {core} does not exist ({n} cores)"))?;
        c.program = program;
        Ok(())
    }

    /// Sets the software that extends the programs as operations complete.
    pub fn set_driver(&mut self, d: Driver) {
        self.driver = Some(d);
    }

    /// Op `i` of `core`'s program.
    pub fn program_op(&self, core: usize, i: usize) -> Option<&CpuOp> {
        self.cores.get(core)?.program.get(i)
    }

    /// Number of cores.
    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// Operations completed so far, by every core (kept in `completed` or
    /// not).
    pub fn ops_completed(&self) -> usize {
        self.cores.iter().map(|c| c.done).sum()
    }

    /// Loads answered by data a forward overtook (`IS_D_I`), used once and
    /// not kept, so far.
    pub fn loads_read_once(&self) -> u64 {
        self.read_once_count
    }

    /// Whether every operation of every core completed and every write
    /// buffer drained.
    pub fn finished(&self) -> bool {
        self.cores
            .iter()
            .all(|c| c.done == c.program.len() && c.wb.is_empty() && c.tad_entries == 0)
    }

    /// Lines with operations outstanding or stores buffered.
    pub fn outstanding_lines(&self) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::new();
        for c in &self.cores {
            v.extend(c.outstanding.iter().filter_map(|o| c.program[o.op].line()));
            v.extend(c.wb.iter().map(|e| e.line));
        }
        v.extend(self.tad_stores.keys());
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Adds the LLC's lines to a stuck report's snapshot (report time
    /// only).
    pub(crate) fn snapshot_states(&self, s: &mut LineSnapshot) {
        for (line, l) in self.llc.iter() {
            s.state(line, PEER, l.state as usize);
        }
    }

    /// The LLC's state name and copy of a line.
    pub fn line(&self, line: u64) -> (&str, Option<Line>) {
        let s = self.st(line);
        (self.tables.state_name(PEER, s), self.copy_of(line).copied())
    }

    /// Whether `core`'s L1 holds `line`.
    pub fn in_l1(&self, core: usize, line: u64) -> bool {
        self.cores[core]
            .l1
            .as_ref()
            .is_some_and(|l1| l1.contains(line))
    }

    /// The TAD of a line (0 when TADs are not modelled).
    pub fn tad_of(&self, line: u64) -> usize {
        let n = self.tad_busy.len() as u64;
        match n {
            0 => 0,
            _ if self.scrambler => xor_fold(line, n.trailing_zeros()) as usize,
            _ => modulo(line, n) as usize,
        }
    }

    /// The LLC set of a line.
    pub fn set_of(&self, line: u64) -> u64 {
        if self.scrambler {
            xor_fold(line, self.sets.trailing_zeros())
        } else {
            modulo(line, self.sets)
        }
    }

    /// The highest number of transactions each TAD held at once.
    pub fn tad_peak(&self) -> &[u32] {
        &self.tad_peak
    }

    fn st(&self, line: u64) -> usize {
        self.llc
            .get(line)
            .map_or(self.peer.initial, |l| l.state as usize)
    }

    /// The LLC's copy of a line.
    fn copy_of(&self, line: u64) -> Option<&Line> {
        let s = self.llc.get(line)?.copy?;
        Some(self.copies.get(s))
    }

    fn fail(&mut self, ctx: &mut Ctx<'_, Msg>, text: String) {
        self.checker.borrow_mut().violation(ctx.now(), text);
        ctx.stop();
    }

    fn try_issue(&mut self, ctx: &mut Ctx<'_, Msg>, c: usize) {
        let now = ctx.now();
        let mshrs = self.mshrs;
        let can = |k: &Core| {
            k.next < k.program.len()
                && k.outstanding.len() < mshrs
                && k.stalled_store.is_none()
                && k.blocking.is_none()
        };
        if can(&self.cores[c]) {
            // One watchdog wake armed at a time: arming one per idle-to-busy
            // transition would leave chains of re-arming wakes behind.
            if !self.watchdog_armed {
                self.watchdog_armed = true;
                ctx.wake_after(self.watchdog, TOK_WATCHDOG);
            }
            let core = &mut self.cores[c];
            let i = core.next;
            core.next += 1;
            core.outstanding.push_back(Outstanding {
                op: i,
                issued: now,
                captured: false,
            });
            self.attempt(ctx, c, i, 0);
            if can(&self.cores[c]) {
                ctx.wake_after(self.issue.max(1), TOK_ISSUE | (c as u64) << 8);
            }
        }
    }

    /// Runs the table row of local event `ev` on `line`, which is in state
    /// `st`. A `load` or `getx` row that starts a transaction first needs a
    /// slot in the line's TAD.
    #[allow(clippy::too_many_arguments)]
    fn local(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        line: u64,
        st: usize,
        ev: LocalEv,
        store: Option<(u8, u64)>,
        delay: Tick,
    ) -> Row {
        let peer = self.peer.clone();
        let Some(row) = self.local_ids[ev as usize].and_then(|e| peer.row(st, e)) else {
            return Row::Missing;
        };
        if row.opens
            && !self.tad_busy.is_empty()
            && self.tad_busy[self.tad_of(line)] >= self.tad_limit
        {
            return Row::NoSlot;
        }
        if row.read_only && !self.checks {
            // A hit with checks off changes nothing (as in `apply`, without
            // the call: every load that finds its line comes here).
            return Row::ReadOnly;
        }
        self.apply(ctx, line, row, None, None, store, delay);
        if ctx.tracing() && !row.read_only {
            self.note_row(ctx, line, st, row, LOCAL_EV_NAMES[ev as usize]);
        }
        Row::Ran(row.sends())
    }

    /// Adds the transition of `line` from state `from` by `row` (of event
    /// `event`) to the full trace, on unit 0 (the LLC).
    #[cold]
    fn note_row(
        &self,
        ctx: &mut Ctx<'_, Msg>,
        line: u64,
        from: usize,
        row: &PeerRow<()>,
        event: &str,
    ) {
        let t = &self.tables;
        let sent: Vec<&str> = row.sent.iter().map(|&m| t.msgs[m as usize].name).collect();
        let now = ctx.now();
        ctx.trace_note(Note {
            kind: NoteKind::Transition {
                opens: row.opens,
                closes: row.closes,
            },
            unit: 0,
            start: now,
            end: now,
            line: Some(line),
            name: event.to_string(),
            args: vec![
                ("track", "llc".to_string()),
                ("from", t.state_name(PEER, from).to_string()),
                ("to", t.state_name(PEER, row.next).to_string()),
                ("sent", sent.join(" ")),
                ("address", format!("{:#x}", line * LINE_BYTES as u64)),
            ],
        });
    }

    /// Whether the table has a row for `ev` in state `st`.
    fn has_row(&self, st: usize, ev: LocalEv) -> bool {
        self.local_ids[ev as usize].is_some_and(|e| self.peer.row(st, e).is_some())
    }

    /// Sends a miss's request row (`load` or `getx`) for `line` in state
    /// `st` and makes `w` wait for the line, or queues `w` at the line's TAD
    /// when it is full.
    fn request(&mut self, ctx: &mut Ctx<'_, Msg>, line: u64, st: usize, ev: LocalEv, w: Waiter) {
        match self.local(ctx, line, st, ev, None, self.miss) {
            Row::NoSlot => {
                ctx.count(ST_TAD_WAIT, 1);
                let t = self.tad_of(line);
                self.tad_queue[t].push_back(w);
            }
            r => {
                if r == Row::Ran(true) {
                    ctx.count(ST_MISS, 1);
                }
                self.wait_for(line, w);
            }
        }
    }

    fn wait_for(&mut self, line: u64, w: Waiter) {
        let (ws, made) = self.waiting.get_or_insert_with(line, || Waiters::One(w));
        if made {
            return;
        }
        match ws {
            Waiters::One(first) if *first == w => {}
            Waiters::One(first) => {
                let mut q = self.spare_waiters.pop().unwrap_or_default();
                q.extend([*first, w]);
                *ws = Waiters::Many(q);
            }
            Waiters::Many(q) => {
                if !q.contains(&w) {
                    q.push(w);
                }
            }
        }
    }

    /// Writes into `dst` the line as core `c` sees it for op `i`: `base`
    /// (the LLC's copy; zeros if none) under the core's own buffered stores
    /// older than `i`.
    fn view(
        dst: &mut Line,
        base: Option<&Line>,
        core: &Core,
        c: usize,
        tad_stores: &HashMap<u64, Vec<(usize, WbEntry)>>,
        i: usize,
        line: u64,
    ) {
        match base {
            Some(b) => *dst = *b,
            None => *dst = [0; LINE_BYTES],
        }
        // The core's stores drained into a TAD transaction but not yet
        // performed are older than the ones still buffered.
        let in_tad = (core.tad_entries > 0)
            .then(|| tad_stores.get(&line))
            .flatten()
            .into_iter()
            .flatten()
            .filter(|(k, _)| *k == c)
            .map(|(_, e)| e);
        for e in in_tad.chain(core.wb.iter().filter(|e| e.line == line)) {
            for &(op, w, val) in &e.stores {
                if op <= i {
                    put_word(dst, w, val);
                }
            }
        }
    }

    /// Completes op `i` of core `c` at `at` (its `TOK_DONE` wake-up), with
    /// the line it saw, taken now, and an atomic's `old` value.
    fn complete_at(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        at: Tick,
        c: usize,
        i: usize,
        seen: Seen<'_>,
        old: Option<u64>,
    ) {
        let (slot, done) = self.done.park();
        (done.core, done.op, done.old) = (c, i, old);
        let dst = &mut done.line;
        let core = &self.cores[c];
        let (line, base) = match seen {
            Seen::Nothing => (None, None),
            Seen::Line(line) => {
                let copy = self.llc.get(line).and_then(|l| l.copy);
                (Some(line), copy.map(|s| self.copies.get(s)))
            }
            Seen::LineAt(line, copy) => (Some(line), copy.map(|s| self.copies.get(s))),
            Seen::Received(line, data) => (Some(line), Some(data)),
        };
        match line {
            None => *dst = [0; LINE_BYTES],
            Some(line) => Self::view(dst, base, core, c, &self.tad_stores, i, line),
        }
        ctx.wake_at(at, TOK_DONE | slot << 8);
        let core = &mut self.cores[c];
        // Only the write buffer's drain asks whether an op has read.
        if self.wb_entries > 0 {
            if let Some(k) = core.outstanding_pos(i) {
                core.outstanding[k].captured = true;
            }
        }
        if core.drain == DrainState::Deferred && matches!(core.program[i], CpuOp::Load { .. }) {
            core.drain = DrainState::Idle;
            self.drain(ctx, c);
        }
    }

    /// Whether core `c` has a load of `line` older than op `upto` that has
    /// not read its data yet.
    fn older_load_pending(&self, c: usize, line: u64, upto: usize) -> bool {
        let core = &self.cores[c];
        core.outstanding
            .iter()
            .take_while(|o| o.op < upto)
            .any(|o| !o.captured && core.program[o.op] == CpuOp::Load { line })
    }

    /// Tries op `i` of core `c`: completes it (`extra` later than an
    /// ordinary hit), sends its request, or leaves it waiting.
    fn attempt(&mut self, ctx: &mut Ctx<'_, Msg>, c: usize, i: usize, extra: Tick) {
        let now = ctx.now();
        let op = self.cores[c].program[i];
        let Some(line) = op.line() else {
            match op {
                CpuOp::Wait { ps } => self.complete_at(ctx, now + ps, c, i, Seen::Nothing, None),
                _ => {
                    self.cores[c].blocking = Some(i);
                    self.check_fence(ctx, c);
                }
            }
            return;
        };
        let wb_on = self.wb_entries > 0;
        // Maintenance and atomics act on the LLC after the core's own
        // buffered stores to the line (only they look for such stores).
        if matches!(
            op,
            CpuOp::Atomic { .. }
                | CpuOp::Evict { .. }
                | CpuOp::Clean { .. }
                | CpuOp::Downgrade { .. }
        ) && self.unperformed_store(c, line)
        {
            if matches!(op, CpuOp::Atomic { .. }) {
                self.cores[c].blocking = Some(i);
            }
            self.cores[c].wb_waiters.push(i);
            return;
        }
        // One lookup for the state and the copy: a hit that changes nothing
        // (`Row::ReadOnly`) reads the copy it found here.
        let (st, copy) = match self.llc.get(line) {
            Some(l) => (l.state as usize, l.copy),
            None => (self.peer.initial, None),
        };
        let acc = self.peer.access[st];
        let stable = self.peer.stable[st];
        let mut old = None;
        let mut unchanged = false;
        let hit = match op {
            CpuOp::Wait { .. } | CpuOp::Fence => unreachable!("handled above"),
            CpuOp::Store { word, value, .. } if wb_on => {
                return self.buffer_store(ctx, c, i, line, word, value, extra)
            }
            CpuOp::Load { .. }
                if acc != Access::None
                    && self.cores[c].l1.as_mut().is_some_and(|l1| l1.hit(line)) =>
            {
                // Inclusive write-through L1: its copy is the LLC's.
                if self.checks {
                    let copy = copy.map_or(&[0; LINE_BYTES], |s| self.copies.get(s));
                    self.checker.borrow_mut().check_read(now, line, PEER, copy);
                }
                ctx.count(ST_L1_HIT, 1);
                let at = now + extra + self.l1_hit;
                return self.complete_at(ctx, at, c, i, Seen::LineAt(line, copy), None);
            }
            CpuOp::Prefetch { .. } => {
                if acc != Access::None {
                    self.fill_l1(c, line);
                } else if stable {
                    // A hint: dropped when the TAD is full; once the line
                    // arrives it is filled into the core's L1.
                    if self.local(ctx, line, st, LocalEv::Load, None, self.miss) == Row::Ran(true) {
                        ctx.count(ST_MISS, 1);
                        if self.cores[c].l1.is_some() {
                            self.wait_for(line, Waiter::L1Fill(c));
                        }
                    }
                }
                return self.complete_at(ctx, now + self.issue, c, i, Seen::Nothing, None);
            }
            CpuOp::PrefetchExclusive { .. } => {
                acc == Access::Write || {
                    if stable {
                        self.request(ctx, line, st, LocalEv::Getx, Waiter::Op(c, i));
                    } else {
                        self.wait_for(line, Waiter::Op(c, i));
                    }
                    return;
                }
            }
            CpuOp::Evict { .. } => {
                stable
                    && (acc == Access::None
                        || EVICTIONS
                            .iter()
                            .any(|&ev| self.local(ctx, line, st, ev, None, 0) != Row::Missing))
            }
            CpuOp::Clean { .. } => {
                stable && {
                    if self.has_row(st, LocalEv::EvictDirty) {
                        let _ = self.local(ctx, line, st, LocalEv::Downgrade, None, 0);
                    }
                    true
                }
            }
            CpuOp::Downgrade { .. } => {
                stable && {
                    // Nothing to do when the line is not held writable.
                    let _ = self.local(ctx, line, st, LocalEv::Downgrade, None, 0);
                    true
                }
            }
            CpuOp::Load { .. } => {
                if stable && acc == Access::None {
                    self.request(ctx, line, st, LocalEv::Load, Waiter::Op(c, i));
                    return;
                }
                match self.local(ctx, line, st, LocalEv::Load, None, self.miss) {
                    Row::ReadOnly => {
                        unchanged = true;
                        true
                    }
                    Row::Ran(false) => true,
                    Row::Ran(true) => {
                        ctx.count(ST_MISS, 1);
                        false
                    }
                    _ => false,
                }
            }
            CpuOp::Store { word, value, .. } => {
                if acc == Access::Write
                    && self.local(ctx, line, st, LocalEv::Store, Some((word, value)), 0)
                        != Row::Missing
                {
                    true
                } else {
                    if stable {
                        return self.request(ctx, line, st, LocalEv::Getx, Waiter::Op(c, i));
                    }
                    false
                }
            }
            CpuOp::Atomic { word, op: rmw, .. } => {
                self.cores[c].blocking = Some(i);
                if acc == Access::Write && self.has_row(st, LocalEv::Store) {
                    let was = word_of(copy.map_or(&[0; LINE_BYTES], |s| self.copies.get(s)), word);
                    if let Some(new) = rmw.apply(was) {
                        let _ = self.local(ctx, line, st, LocalEv::Store, Some((word, new)), 0);
                    }
                    old = Some(was);
                    true
                } else {
                    if stable {
                        return self.request(ctx, line, st, LocalEv::Getx, Waiter::Op(c, i));
                    }
                    false
                }
            }
        };
        if hit {
            ctx.count(ST_HIT, 1);
            self.touch(line);
            if matches!(op, CpuOp::Load { .. }) && acc != Access::None {
                self.fill_l1(c, line);
            }
            let seen = if unchanged {
                Seen::LineAt(line, copy)
            } else {
                Seen::Line(line)
            };
            self.complete_at(ctx, now + extra + self.hit, c, i, seen, old);
        } else {
            self.wait_for(line, Waiter::Op(c, i));
        }
    }

    /// Commits store `i` of core `c` into its write buffer (merging with an
    /// entry for the line), or stalls the core when the buffer is full.
    #[allow(clippy::too_many_arguments)]
    fn buffer_store(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        c: usize,
        i: usize,
        line: u64,
        word: u8,
        value: u64,
        extra: Tick,
    ) {
        let now = ctx.now();
        let cap = self.wb_entries;
        let core = &mut self.cores[c];
        if let Some(e) = core.wb.iter_mut().find(|e| e.line == line) {
            e.stores.push((i, word, value));
        } else if core.wb.len() < cap {
            core.wb.push_back(WbEntry {
                line,
                stores: vec![(i, word, value)],
            });
        } else {
            if core.stalled_store.is_none() {
                ctx.count(ST_WB_STALL, 1);
            }
            core.stalled_store = Some(i);
            return;
        }
        self.complete_at(ctx, now + extra + self.l1_hit, c, i, Seen::Line(line), None);
        self.drain(ctx, c);
    }

    /// Drains core `c`'s write buffer, oldest entry first, for as long as
    /// the LLC holds the head's line writable; otherwise asks for it (getx)
    /// and waits.
    fn drain(&mut self, ctx: &mut Ctx<'_, Msg>, c: usize) {
        if self.cores[c].drain != DrainState::Idle {
            return;
        }
        self.cores[c].drain = DrainState::Running;
        while let Some(line) = self.cores[c].wb.front().map(|e| e.line) {
            let st = self.st(line);
            if self.peer.access[st] == Access::Write && self.has_row(st, LocalEv::Store) {
                let newest = self.cores[c].wb[0].stores.last().map_or(0, |s| s.0);
                if self.older_load_pending(c, line, newest) {
                    self.cores[c].drain = DrainState::Deferred;
                    return;
                }
                let now = ctx.now();
                let ready = self.cores[c].drain_ready;
                if now < ready {
                    // The previous entry still occupies the store path.
                    self.cores[c].drain = DrainState::Paced;
                    ctx.wake_at(ready, TOK_DRAIN | ((c as u64) << 8));
                    return;
                }
                if self.wb_drain > 0 {
                    self.cores[c].drain_ready = now + self.wb_drain;
                }
                let e = self.cores[c].wb.pop_front().expect("front");
                for (_, w, v) in e.stores {
                    let st = self.st(line);
                    let _ = self.local(ctx, line, st, LocalEv::Store, Some((w, v)), 0);
                }
                self.touch(line);
                self.after_drain(ctx, c);
                continue;
            }
            if self.store_misses_in_tads {
                match self.drain_into_tad(ctx, c, line, st) {
                    TadDrain::Drained => continue,
                    TadDrain::Paced => {
                        self.cores[c].drain = DrainState::Paced;
                        ctx.wake_at(self.cores[c].drain_ready, TOK_DRAIN | ((c as u64) << 8));
                        return;
                    }
                    TadDrain::Deferred => {
                        self.cores[c].drain = DrainState::Deferred;
                        return;
                    }
                    TadDrain::NoSlot => {}
                }
            }
            self.cores[c].drain = DrainState::Waiting;
            if self.peer.stable[st] {
                self.request(ctx, line, st, LocalEv::Getx, Waiter::Drain(c));
            } else {
                self.wait_for(line, Waiter::Drain(c));
            }
            self.own_ahead(ctx, c);
            return;
        }
        self.cores[c].drain = DrainState::Idle;
    }

    /// While the head of core `c`'s buffer waits for write access, asks for
    /// write access (the `getx` row) to every other buffered line that is
    /// stable and not yet writable, so their round trips overlap (ARMv8 is
    /// weakly ordered; entries still retire oldest first). Like a prefetch
    /// hint, a request whose TAD has no free slot is dropped: the entry asks
    /// again when it reaches the head.
    fn own_ahead(&mut self, ctx: &mut Ctx<'_, Msg>, c: usize) {
        for k in 1..self.cores[c].wb.len() {
            let line = self.cores[c].wb[k].line;
            let st = self.st(line);
            if self.peer.stable[st]
                && self.peer.access[st] != Access::Write
                && self.local(ctx, line, st, LocalEv::Getx, None, self.miss) == Row::Ran(true)
            {
                ctx.count(ST_MISS, 1);
            }
        }
    }

    /// Whether core `c` has a store to `line` not yet performed at the LLC:
    /// buffered, or drained into the line's TAD transaction.
    fn unperformed_store(&self, c: usize, line: u64) -> bool {
        let core = &self.cores[c];
        core.wb.iter().any(|e| e.line == line)
            || (core.tad_entries > 0
                && self
                    .tad_stores
                    .get(&line)
                    .is_some_and(|v| v.iter().any(|(k, _)| *k == c)))
    }

    /// `store_misses_in_tads`: drains the head entry of core `c`'s buffer,
    /// whose `line` (in state `st`) is not writable, into a transaction of
    /// the line's TAD: a new one asking for write access when the line is
    /// stable, or the line's open one. The entry leaves the buffer; its
    /// stores are performed by [`Self::perform_tad_stores`] once the line
    /// is writable.
    fn drain_into_tad(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        c: usize,
        line: u64,
        st: usize,
    ) -> TadDrain {
        let now = ctx.now();
        if now < self.cores[c].drain_ready {
            return TadDrain::Paced;
        }
        let newest = self.cores[c].wb[0].stores.last().map_or(0, |s| s.0);
        if self.older_load_pending(c, line, newest) {
            return TadDrain::Deferred;
        }
        if self.peer.stable[st] {
            match self.local(ctx, line, st, LocalEv::Getx, None, self.miss) {
                Row::Ran(sent) => {
                    if sent {
                        ctx.count(ST_MISS, 1);
                    }
                }
                // No slot: wait at the head as without the TAD path.
                _ => return TadDrain::NoSlot,
            }
        }
        if self.wb_drain > 0 {
            self.cores[c].drain_ready = now + self.wb_drain;
        }
        let e = self.cores[c].wb.pop_front().expect("front");
        self.cores[c].tad_entries += 1;
        self.tad_stores.entry(line).or_default().push((c, e));
        if self.peer.stable[self.st(line)] && self.peer.access[self.st(line)] == Access::Write {
            // The row made the line writable at once (no round trip).
            self.perform_tad_stores(ctx, line);
        } else {
            self.wait_for(line, Waiter::TadStores(line));
        }
        self.after_drain(ctx, c);
        TadDrain::Drained
    }

    /// Performs the stores drained into `line`'s TAD transaction, in drain
    /// order, when the line is writable; otherwise asks for it again (the
    /// line arrived readable only, or was taken away first) or keeps
    /// waiting.
    fn perform_tad_stores(&mut self, ctx: &mut Ctx<'_, Msg>, line: u64) {
        if !self.tad_stores.contains_key(&line) {
            return;
        }
        let st = self.st(line);
        if self.peer.access[st] == Access::Write && self.has_row(st, LocalEv::Store) {
            let entries = self.tad_stores.remove(&line).expect("checked");
            let mut cores = Vec::with_capacity(1);
            for (c, e) in entries {
                for (_, w, v) in e.stores {
                    let st = self.st(line);
                    let _ = self.local(ctx, line, st, LocalEv::Store, Some((w, v)), 0);
                }
                self.cores[c].tad_entries -= 1;
                if !cores.contains(&c) {
                    cores.push(c);
                }
            }
            self.touch(line);
            for c in cores {
                // Ops waiting for the core's stores to the line, a fence.
                for i in std::mem::take(&mut self.cores[c].wb_waiters) {
                    self.attempt(ctx, c, i, 0);
                }
                self.check_fence(ctx, c);
            }
        } else if self.peer.stable[st] {
            self.request(ctx, line, st, LocalEv::Getx, Waiter::TadStores(line));
        } else {
            self.wait_for(line, Waiter::TadStores(line));
        }
    }

    /// After an entry of core `c`'s buffer drained: the stalled store takes
    /// the free entry, ops waiting for buffered stores retry, a fence may
    /// complete.
    fn after_drain(&mut self, ctx: &mut Ctx<'_, Msg>, c: usize) {
        if let Some(i) = self.cores[c].stalled_store.take() {
            self.attempt(ctx, c, i, 0);
        }
        for i in std::mem::take(&mut self.cores[c].wb_waiters) {
            self.attempt(ctx, c, i, 0);
        }
        self.check_fence(ctx, c);
    }

    /// Completes core `c`'s fence once it is its only outstanding op and the
    /// write buffer is empty.
    fn check_fence(&mut self, ctx: &mut Ctx<'_, Msg>, c: usize) {
        let core = &self.cores[c];
        let Some(f) = core.blocking else {
            return;
        };
        if core.program[f] == CpuOp::Fence
            && core.wb.is_empty()
            && core.tad_entries == 0
            && core.outstanding.len() == 1
            && self.cores[c].stalled_store.is_none()
        {
            let now = ctx.now();
            self.complete_at(ctx, now, c, f, Seen::Nothing, None);
        }
    }

    /// Puts `line` into core `c`'s L1 (if it has one).
    fn fill_l1(&mut self, c: usize, line: u64) {
        if let Some(l1) = self.cores[c].l1.as_mut() {
            l1.fill(line);
        }
    }

    /// Retries op `i` of core `c`, which waited for `line` that a received
    /// message has just changed: as [`Self::resume`] does (`attempt` with
    /// the fill time added), but a load of `line` that now hits without
    /// changing anything (the usual end of a read miss) completes here,
    /// without `attempt`'s general issue logic. The steps and their order
    /// are `attempt`'s for that case: its buffered-store check concerns
    /// only atomics and maintenance, its L1 check only a core with an L1
    /// (which takes the general path), and its `local` row returns
    /// `Row::ReadOnly` exactly where `load_reads_unchanged` holds.
    #[inline]
    fn retry_after_fill(&mut self, ctx: &mut Ctx<'_, Msg>, c: usize, i: usize, line: u64) {
        let core = &self.cores[c];
        if core.l1.is_none() && core.program[i] == (CpuOp::Load { line }) {
            if let Some(l) = self.llc.get(line) {
                let copy = l.copy;
                if self.load_reads_unchanged[l.state as usize] {
                    ctx.count(ST_HIT, 1);
                    self.touch(line);
                    let at = ctx.now() + self.fill + self.hit;
                    return self.complete_at(ctx, at, c, i, Seen::LineAt(line, copy), None);
                }
            }
        }
        self.attempt(ctx, c, i, self.fill)
    }

    /// Retries `w`, waiting on `line` (`None`: from a TAD queue).
    fn resume(&mut self, ctx: &mut Ctx<'_, Msg>, w: Waiter, line: Option<u64>, extra: Tick) {
        match w {
            Waiter::Op(c, i) => self.attempt(ctx, c, i, extra),
            Waiter::Drain(c) => {
                self.cores[c].drain = DrainState::Idle;
                self.drain(ctx, c);
            }
            Waiter::TadStores(line) => self.perform_tad_stores(ctx, line),
            // Nothing more to do when the line was taken away first.
            Waiter::L1Fill(c) => {
                if let Some(line) = line {
                    if self.peer.access[self.st(line)] != Access::None {
                        self.fill_l1(c, line);
                    }
                }
            }
        }
    }

    /// Applies a transition of the LLC, as the checker's `apply` does:
    /// `line` goes by `row`; `handled` is the received message
    /// that triggered it and `input` its line.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        line: u64,
        row: &PeerRow<()>,
        handled: Option<u16>,
        input: Option<&Line>,
        store: Option<(u8, u64)>,
        delay: Tick,
    ) {
        let now = ctx.now();
        let next = row.next;
        let has = row.has;
        // With checks off the checker is not told anything (a stuck
        // report is built from the LLC's own state when needed).
        let checks = self.checks;
        if !checks && row.read_only {
            // A hit with checks off changes nothing anywhere.
            return;
        }
        let local = handled.is_none();
        if checks && self.once_mask != 0 && local {
            self.checker.borrow_mut().open_window(now, line);
        }
        // The entry is read here and written back below; the copy itself
        // stays in its slab slot.
        let held = self.llc.get(line);
        let mut copy = held.and_then(|l| l.copy);
        // The two rows of every miss, a request without data and the fill,
        // run their one step here, as `execute` would, without setting up
        // the row executor for every kind of step.
        match &*row.steps {
            [Step::Send(s)] if !s.data => {
                let tables = self.tables.as_ref().as_ref();
                send_to_link(tables, ctx, line, self.links, now + delay, s.msg, None);
            }
            [Step::Fill] => fill_copy(&mut self.copies, &mut copy, input),
            _ => {
                let mut fx = LlcRow {
                    copies: &mut self.copies,
                    tables: self.tables.as_ref().as_ref(),
                    checker: &self.checker,
                    store_log: &mut self.store_log,
                    ctx,
                    copy: &mut copy,
                    line,
                    input,
                    store,
                    checks,
                    now,
                    delay,
                    links: self.links,
                };
                if let Err(e) = execute(row, &mut fx) {
                    if let Some(l) = held {
                        self.llc.insert(line, LlcLine { copy, ..l });
                    }
                    return self.fail(ctx, e);
                }
            }
        }
        if !has {
            if let Some(s) = copy.take() {
                self.copies.remove(s);
            }
        }
        if next == self.peer.initial && copy.is_none() {
            if held.is_some() {
                self.llc.remove(line);
            }
        } else {
            let l = LlcLine {
                state: next as u8,
                copy,
            };
            if held != Some(l) {
                self.llc.insert(line, l);
            }
        }
        if checks {
            let before = held.map_or(self.peer.initial, |l| l.state as usize);
            let held = copy.map(|s| self.copies.get(s));
            let mut c = self.checker.borrow_mut();
            if self.once_mask != 0 && self.peer.stable[next] && (local || !self.reads_once[before])
            {
                // Out of a `reads_once` state, the window closes in
                // `read_once`, once the loads that read the data are checked.
                c.close_window(line);
            }
            c.row(now, line, PEER, handled, &row.sent, next, held, None);
            if !c.violations.is_empty() {
                ctx.stop();
            }
        }
        if !self.tad_busy.is_empty() {
            // A transaction is a line's stay in transient states.
            let t = self.tad_of(line);
            if row.opens {
                self.tad_busy[t] += 1;
                self.tad_peak[t] = self.tad_peak[t].max(self.tad_busy[t]);
            } else if row.closes {
                self.tad_busy[t] -= 1;
                self.tad_freed.push(t);
            }
        }
        match (row.had, has) {
            (false, true) if self.lru.enabled() => {
                let set = self.set_of(line) as usize;
                self.lru.push_back(set, line);
                self.enforce_capacity(ctx, set);
            }
            (true, false) => {
                if self.lru.enabled() {
                    let set = self.set_of(line) as usize;
                    self.lru.remove(set, line);
                }
                // Inclusion: the L1s lose what the LLC loses.
                for core in &mut self.cores {
                    if let Some(l1) = core.l1.as_mut() {
                        l1.invalidate(line);
                    }
                }
            }
            _ => {}
        }
    }

    /// Marks `line` most recently used.
    fn touch(&mut self, line: u64) {
        if self.lru.enabled() {
            let set = self.set_of(line) as usize;
            self.lru.touch(set, line);
        }
    }

    /// Evicts least recently used stable lines of `set` (by the table's
    /// `evict_dirty`, `evict_clean` or `drop` row) while it holds more than
    /// `ways` valid lines. Lines with open work stay; the set may overflow
    /// until they settle (as a victim buffer would).
    fn enforce_capacity(&mut self, ctx: &mut Ctx<'_, Msg>, set: usize) {
        while self.lru.lines(set).len() > self.ways {
            let victim = self
                .lru
                .lines(set)
                .iter()
                .map(|&l| (l, self.st(l)))
                .find(|&(l, st)| self.peer.stable[st] && !self.waiting.contains_key(l));
            let Some((victim, st)) = victim else {
                return;
            };
            let evicted = EVICTIONS
                .iter()
                .any(|&ev| self.local(ctx, victim, st, ev, None, 0) != Row::Missing);
            if !evicted {
                return;
            }
            ctx.count(ST_EVICT, 1);
        }
    }

    fn receive(&mut self, ctx: &mut Ctx<'_, Msg>, m: CohMsg) {
        let peer = self.peer.clone();
        let line = m.line;
        let st = self.st(line);
        let Some(ev) = peer.msg_event[m.msg as usize] else {
            return self.fail(ctx, format!("the cpu table has no event for {}", m.name()));
        };
        let Some(row) = peer.row(st, ev) else {
            let what = match peer.cell(st, ev).1 {
                Cell::Stall => "stalls, but the cpu cannot stall",
                _ => "has no transition",
            };
            let e = format!(
                "unspecified reception: {} for line {line:#x} arrived at the cpu in state {}: the table {what}",
                m.name(),
                self.tables.state_name(PEER, st)
            );
            return self.fail(ctx, e);
        };
        self.apply(
            ctx,
            line,
            row,
            Some(m.msg),
            m.data.as_deref(),
            None,
            self.snoop,
        );
        if ctx.tracing() {
            self.note_row(ctx, line, st, row, m.name());
        }
        let mut waiters = self.waiting.remove(line);
        let once = self.once_mask;
        if (once.wrapping_shr(st as u32) | once.wrapping_shr(row.next as u32)) & 1 != 0 {
            waiters = self.read_once(ctx, line, st, row, m.data.as_deref(), waiters);
        }
        if let Some(b) = m.data {
            recycle_line(b);
        }
        // Waiting ops retry at once, before any later forward can take the
        // line away again (forward progress, as an LLC holds a refilled line
        // for the miss that asked for it); the refill time is added to their
        // completion.
        match waiters {
            None => {}
            Some(Waiters::One(Waiter::Op(c, i))) => self.retry_after_fill(ctx, c, i, line),
            Some(Waiters::One(w)) => self.resume(ctx, w, Some(line), self.fill),
            Some(Waiters::Many(mut ws)) => {
                for &w in &ws {
                    match w {
                        Waiter::Op(c, i) => self.retry_after_fill(ctx, c, i, line),
                        _ => self.resume(ctx, w, Some(line), self.fill),
                    }
                }
                ws.clear();
                self.spare_waiters.push(ws);
            }
        }
        self.serve_tads(ctx);
    }

    /// The `reads_once` states around received row `row` of `line` (from
    /// state `st`): entering one notes when (the forward that overtook the
    /// data); a `check_window` row there completes, with the received
    /// `data`, the waiting loads of the line issued by then, and returns
    /// the other `waiters` (they retry as after any row). Loads issued
    /// later may have begun after a write the data predates, so they miss
    /// again (the checker's merged-load case, `crates/protocol/tests/eci.rs`).
    #[cold]
    #[inline(never)]
    fn read_once(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        line: u64,
        st: usize,
        row: &PeerRow<()>,
        data: Option<&Line>,
        mut waiters: Option<Waiters>,
    ) -> Option<Waiters> {
        let now = ctx.now();
        let since = match (self.reads_once[st], self.reads_once[row.next]) {
            (false, false) => return waiters,
            (false, true) => {
                self.once_since.insert(line, now);
                return waiters;
            }
            (true, true) => self.once_since.get(&line).copied(),
            (true, false) => self.once_since.remove(&line),
        };
        let reads = row.steps.iter().any(|s| matches!(s, Step::CheckWindow));
        if let (true, Some(since), Some(data)) = (reads, since, data) {
            // A waiting load of the line issued by `since`: (core, op, issue).
            let reader = |cpu: &Self, w: &Waiter| match *w {
                Waiter::Op(c, i) if cpu.cores[c].program[i] == (CpuOp::Load { line }) => {
                    let core = &cpu.cores[c];
                    let issued = core.outstanding[core.outstanding_pos(i)?].issued;
                    (issued <= since).then_some((c, i, issued))
                }
                _ => None,
            };
            let mut readers = Vec::new();
            match waiters.take() {
                None => {}
                Some(Waiters::One(w)) => match reader(self, &w) {
                    Some(r) => readers.push(r),
                    None => waiters = Some(Waiters::One(w)),
                },
                Some(Waiters::Many(mut ws)) => {
                    ws.retain(|w| match reader(self, w) {
                        Some(r) => {
                            readers.push(r);
                            false
                        }
                        None => true,
                    });
                    waiters = Some(Waiters::Many(ws));
                }
            }
            for (c, i, issued) in readers {
                if self.checks {
                    let mut k = self.checker.borrow_mut();
                    k.check_window_read(now, line, PEER, Some(issued), data);
                }
                ctx.count(ST_HIT, 1);
                self.read_once_count += 1;
                let at = now + self.fill + self.hit;
                self.complete_at(ctx, at, c, i, Seen::Received(line, data), None);
            }
        }
        if self.checks && self.peer.stable[row.next] {
            self.checker.borrow_mut().close_window(line);
        }
        if self.checks && !self.checker.borrow().violations.is_empty() {
            ctx.stop();
        }
        waiters
    }

    /// Hands freed TAD slots to the misses queued for them, oldest first.
    fn serve_tads(&mut self, ctx: &mut Ctx<'_, Msg>) {
        while let Some(t) = self.tad_freed.pop() {
            while self.tad_busy[t] < self.tad_limit {
                let Some(w) = self.tad_queue[t].pop_front() else {
                    break;
                };
                self.resume(ctx, w, None, 0);
            }
        }
    }

    fn watchdog_fire(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        self.watchdog_armed = false;
        let oldest = self
            .cores
            .iter()
            .enumerate()
            .flat_map(|(c, k)| k.outstanding.iter().map(move |o| (o.issued, c, o.op)))
            .min();
        let Some((t0, c, i)) = oldest else {
            return;
        };
        if now - t0 >= self.watchdog {
            let mut report = vec![format!(
                "watchdog: op {i} ({:?}) outstanding for {:.1} us",
                self.cores[c].program[i],
                (now - t0) as f64 / 1e6
            )];
            if self.cores.len() > 1 {
                report[0] = format!("{} on core {c}", report[0]);
            }
            // With checks off the checker has no mirror: the system adds
            // the stuck lines once the run has stopped (`system::verdict`).
            if self.checks {
                report.extend(
                    self.checker
                        .borrow()
                        .stuck_report(&self.outstanding_lines()),
                );
            }
            self.stuck = Some(report);
            ctx.stop();
        } else {
            self.watchdog_armed = true;
            ctx.wake_at(t0 + self.watchdog, TOK_WATCHDOG);
        }
    }
}

impl Component<Msg> for CoherentCpu {
    fn spec(&self) -> &'static ComponentSpec {
        &COHERENT_CPU
    }

    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        // One allocation for the records of the programs as given (a driver
        // may add more).
        if self.keep_completed {
            self.completed
                .reserve(self.cores.iter().map(|c| c.program.len()).sum());
        }
        for (c, core) in self.cores.iter().enumerate() {
            if !core.program.is_empty() {
                ctx.wake_at(0, TOK_ISSUE | (c as u64) << 8);
            }
        }
    }

    fn on_message(&mut self, _port: PortId, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = match m.into_coh("cpu") {
            Ok(m) => m,
            Err(e) => return self.fail(ctx, e),
        };
        match self.link.jitter_of(ctx) {
            0 => self.receive(ctx, m),
            j => {
                let at = ctx.now() + j;
                ctx.schedule_local(at, TOK_INBOX, Msg::Coh(m));
            }
        }
    }

    fn on_local(&mut self, token: u64, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = m.local_coh();
        match token {
            TOK_INBOX => self.receive(ctx, m),
            _ => unreachable!("cpu: local message with token {token}"),
        }
    }

    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        match token & 0xFF {
            TOK_ISSUE => self.try_issue(ctx, (token >> 8) as usize),
            TOK_DONE => {
                let slot = token >> 8;
                let d = self.done.release(slot);
                let c = d.core;
                let core = &mut self.cores[c];
                if let Some(k) = core.outstanding_pos(d.op) {
                    // Usually the oldest: popping it skips `remove`'s
                    // general shifting.
                    let o = match k {
                        0 => core.outstanding.pop_front(),
                        _ => core.outstanding.remove(k),
                    };
                    let t0 = o.expect("found").issued;
                    ctx.record(ST_LAT, now - t0);
                    if ctx.tracing() {
                        let op = core.program[d.op];
                        ctx.trace_note(Note {
                            kind: NoteKind::Op,
                            unit: c as u32,
                            start: t0,
                            end: now,
                            line: op.line(),
                            name: op.kind().to_string(),
                            args: vec![("track", "core".to_string()), ("op", d.op.to_string())],
                        });
                    }
                    core.done += 1;
                    if core.blocking == Some(d.op) {
                        core.blocking = None;
                    }
                    if self.keep_completed || self.driver.is_some() {
                        // The record holds a whole line: one copy, from the
                        // completion's slot.
                        let record = Completed {
                            core: c,
                            op: d.op,
                            issued: t0,
                            latency_ps: now - t0,
                            data: d.line,
                            old: d.old,
                        };
                        if let Some(drv) = self.driver.as_mut() {
                            let more = drv(&record);
                            self.cores[c].program.extend(more);
                        }
                        if self.keep_completed {
                            self.completed.push(record);
                        }
                    }
                }
                self.check_fence(ctx, c);
                self.try_issue(ctx, c);
            }
            TOK_WATCHDOG => self.watchdog_fire(ctx),
            TOK_DRAIN => {
                let c = (token >> 8) as usize;
                if self.cores[c].drain == DrainState::Paced {
                    self.cores[c].drain = DrainState::Idle;
                    self.drain(ctx, c);
                }
            }
            _ => {}
        }
    }
}
