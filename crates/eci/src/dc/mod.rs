//! The directory controller (CCKit §4.3, Figs. 3-4): an even and an odd
//! slice of serial, blocking DCUs that **execute the generated DC table**,
//! the device-local machine (application interface and AXI side), and the
//! memory behind it.
//!
//! * **Routing.** Line `l` goes to slice `l % 2` (the ECI link it came on)
//!   and to DCU `(l / 2) % dcus_per_slice` of that slice.
//! * **A DCU is serial and blocking.** It handles one event at a time
//!   (`event_cycles` each: header decode, table lookup, actions). While its
//!   current line is in a transient state it only takes events of that line
//!   (at most one coherence transaction, hence one AXI read and one write,
//!   outstanding). Per-line state lives in a sparse map (absent = initial).
//! * **Scheduling.** Each dispatch round visits the slice's DCUs round
//!   robin; an idle DCU takes the first event it can handle, responses before
//!   requests. An event the table stalls, or one for another line while the
//!   DCU is busy, stays queued and the DCU tries the next one. A round runs
//!   when a message enters a DCU queue (at once, in the same event, unless
//!   a round of the slice is already due at that tick and will find it) and
//!   is due when a DCU becomes free; a round of a slice with nothing queued
//!   only advances the pointer, so it is reserved
//!   (`Ctx::defer_wake`) rather than queued, and becomes a kernel event only
//!   if work arrives before it is due (see `DirectoryController::schedule`).
//! * **Header and payload are separated.** A data message's payload goes to
//!   the DCU's buffer (and memory, functionally, at `write_mem`), and the
//!   AXI write carries it from there.
//! * **AXI side.** `AXI_RD`/`AXI_WR` go to the device-local machine, whose
//!   table answers `AXI_RD_DONE`/`AXI_WR_DONE` when the memory timing model
//!   ([`MemTiming`]: BRAM or DDR) completes the access.
//! * **Application interface.** [`AppOp`]s (clean, clean-invalidate, lock,
//!   unlock, and reads/writes while locked) are local events of `ir.roles[2]`;
//!   every read, write and state change is reported as a [`DcEvent`] to the
//!   optional observer and counted.
//! * **Contended grants** (`contended_grant_hold_ns > 0`). ECI has no
//!   acknowledgment of a grant (no CHI-style CompAck), so a forward the DC
//!   sends right behind a grant can find the CPU with the grant not yet
//!   used, or already given back. With an application that works on one
//!   line back to back this livelocks a core's store (found by the random
//!   tester on `dc_bram`): the store's request waits behind the
//!   application's operation; the grant comes; the application's next
//!   clean or clean-invalidate forwards at once; the CPU, whose new request
//!   was invalidated by the previous forward (`IE_D_I`), gives the grant
//!   back unused (`VICC`) and asks again, and the next forward, sent before
//!   that give-back reached the DC, invalidates the new request too.
//!   The hold breaks the cycle at the DC: after granting a line whose CPU
//!   request had to wait behind an application operation on it, the port
//!   starts no operation on that line until the CPU's answer to the grant
//!   can have arrived, so the next operation sees the line given back (and
//!   forwards nothing) or finds the store performed. An application
//!   request the port had already started, waiting in the DCU's queue
//!   behind the CPU's transaction, waits for the hold too: the dispatch
//!   rounds skip it until the hold ends (found by the random tester on
//!   `dc_ddr` with two lines, where such a request forwarded right behind
//!   the grant; and on `llc_ddr`, whose home answers in a few ns and has a
//!   hold of its own, with a load as well until the CPU used overtaken data
//!   once: its new request, invalidated by the forward behind the previous
//!   grant, found its data in `IS_D_I` and asked again; now the data
//!   answers the load, and only a store's grant goes back). Uncontended
//!   grants (every invocation and NIC exchange) are never held.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use ccsim_coherence::line_map::{DenseLineMap, Slot};

use ccsim_kernel::prelude::*;
use ccsim_kernel::sim::DeferredWake;
use ccsim_protocol::ir::MsgClass;

use super::link::EciLink;
use ccsim_coherence::check::{Checker, LineSnapshot};
use ccsim_coherence::memory::{LineStore, MemTiming};
use ccsim_coherence::util::{complete, modulo, ns_to_ps};
use ccsim_coherence::{
    boxed_line, boxed_line_with, recycle_line, Catalogue, CohMsg, Line, Msg, Tables, GENERATED,
    LINE_BYTES, LOCAL, PEER,
};
use ccsim_protocol::engine::{execute, Cell, CompiledTable, Effects, Row, SendStep};

/// Declaration of `directory_controller`.
pub static DIRECTORY_CONTROLLER: ComponentSpec = ComponentSpec {
    type_name: "directory_controller",
    description: "A home agent executing the generated directory table: even/odd slices of serial blocking DCUs, round-robin, responses first, stall-and-try-another; AXI to BRAM or DDR.",
    params: &[
        ParamSpec { name: "clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(322.0), unit: "MHz", range: ParamRange::positive(), from: "CCKit §4.3: typical FPGA clock of 322 MHz", description: "DC clock." },
        ParamSpec { name: "dcus_per_slice", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "DCUs", range: ParamRange::at_least(1.0), from: "CCKit §4.3: an example configuration of 64 DCUs in odd and even slices", description: "DCUs in each of the two slices." },
        ParamSpec { name: "ingress_cycles", kind: ParamKind::Int, default: ParamDefault::Int(10), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed", description: "From the link to a DCU queue (transport, header/payload split, routing)." },
        ParamSpec { name: "event_cycles", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed: a non-pipelined DCU reads its protocol ROM and acts in a few cycles (CCKit §4.3, Fig. 4)", description: "One event in a DCU: table lookup and actions (the DCU is busy meanwhile)." },
        ParamSpec { name: "egress_cycles", kind: ParamKind::Int, default: ParamDefault::Int(10), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed", description: "From a DCU's send to the link (merge of header and payload, arbitration)." },
        ParamSpec { name: "axi_cycles", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed: one AXI interconnect hop each way", description: "AXI interconnect, each way, between a DCU and the memory." },
        ParamSpec { name: "checks", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "assumed: online checks on (test/debug mode)", description: "Assert SWMR and data-value on every transition (test/debug mode)." },
        ParamSpec { name: "contended_grant_hold_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: no hold unless a platform sets one", description: "After granting a line to the CPU whose request waited behind an application operation on that line, the application port starts no operation on the line for this long (and a started one waiting in the DCU's queue waits too), so that the CPU's answer to the grant (its use, or its give-back) reaches the DCU first (0: no hold; see the module docs: the store / clean-invalidate livelock)." },
    ],
    ports: &[
        PortSpec { name: "eci0", description: "Even lines.", required: true },
        PortSpec { name: "eci1", description: "Odd lines.", required: true },
    ],
    stats: &[
        StatSpec { name: "events", kind: StatKind::Counter, unit: "events", description: "Events handled by DCUs." },
        StatSpec { name: "stalls", kind: StatKind::Counter, unit: "tries", description: "Times a DCU skipped a queued event the table stalls." },
        StatSpec { name: "axi_reads", kind: StatKind::Counter, unit: "lines", description: "AXI reads." },
        StatSpec { name: "axi_writes", kind: StatKind::Counter, unit: "lines", description: "AXI writes." },
    ],
    check: Some(check),
};

/// The DC's even and odd slices each need their own link: every ECI link
/// of a platform with a DC must have two.
fn check(_: &Params, peers: Peers<'_>) -> Result<(), ParamProblem> {
    for link in peers.of_type("eci_link") {
        let links = link.params.int("links");
        if links != 2 {
            return Err(ParamProblem::of_peer(
                link,
                "links",
                format!("must be 2 in a platform with a directory_controller (its even and odd slices), got {links}"),
            ));
        }
    }
    Ok(())
}

const ST_EVENTS: usize = 0;
const ST_STALLS: usize = 1;
const ST_AXI_RD: usize = 2;
const ST_AXI_WR: usize = 3;

// Tokens of local messages (`Ctx::schedule_local`): the DC's fixed-latency
// pipelines. Each item is a kernel event of its own, handled at its place
// among the events of its tick. (The egress pipeline, from a DCU's send to
// the link, ends in a send and nothing else, so it is a reserved send,
// `Ctx::send_at`, not an event.)
/// Ingress to a DCU queue (from the link, or from the local machine).
const TOK_INBOX: u64 = 0;
/// A DCU's message to the device-local machine (AXI, completions).
const TOK_LOCAL: u64 = 2;
// Tokens of wake-ups.
const TOK_APP: u64 = 3;
const TOK_SLICE: u64 = 8;

mod app;

use app::AppRow;
pub use app::{AppOp, DcEvent, Device, Observer, StateDevice};

/// A DC message to the device-local machine, as the AXI side sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum AxiKind {
    Read,
    Write,
    /// A completion or notification for the application.
    NotAxi,
}

impl AxiKind {
    fn of(name: &str) -> AxiKind {
        if name.starts_with("AXI_RD") {
            AxiKind::Read
        } else if name.starts_with("AXI_WR") {
            AxiKind::Write
        } else {
            AxiKind::NotAxi
        }
    }
}

/// Where a row's `send` goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Dest {
    /// Over ECI to the CPU (through the egress pipeline).
    Peer,
    /// To the device-local machine (AXI side or application).
    Local(AxiKind),
    /// To a DCU (a send of the local machine, through the ingress).
    Dcu,
}

/// What [`DirectoryController::pick`] chose: the message's place in its
/// DCU's queues and the table cell it runs (so `execute` looks up neither
/// the line's state nor the table again).
#[derive(Debug, Clone, Copy)]
struct Picked {
    /// 0: responses, 1: requests.
    queue: usize,
    pos: usize,
    state: usize,
    cell: usize,
}

/// A DCU's buffer: the payload held for the current transaction (in a
/// recycled payload box, so filling it does not allocate), with the line
/// and the memory generation it was read or written at. A data send of
/// the same line while memory has not been written since (so the bytes
/// are those memory holds) takes the box as the message's payload instead
/// of reading memory again.
#[derive(Debug)]
struct Buffered {
    bytes: Box<Line>,
    line: u64,
    generation: u64,
}

/// A slice's reserved dispatch rounds in (tick, reservation) order: a
/// vector consumed from `head` and cleared when used up (the lists are
/// short and empty out often, so this beats a ring buffer's wrapping).
/// A list that never quite empties (a slice busy for a whole run, a new
/// round reserved before the last one is consumed) drops its consumed
/// prefix once that is at least [`ReservedRounds::COMPACT_FROM`] rounds
/// and half the list, so its memory follows the rounds pending, not the
/// length of the run.
#[derive(Debug, Default)]
struct ReservedRounds {
    list: Vec<DeferredWake>,
    /// The first round not consumed (0 when the list is empty).
    head: usize,
}

impl ReservedRounds {
    /// Consumed rounds kept before the list is compacted.
    const COMPACT_FROM: usize = 64;

    #[inline]
    fn front(&self) -> Option<&DeferredWake> {
        self.list.get(self.head)
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.head == self.list.len()
    }

    #[inline]
    fn pop_front(&mut self) -> Option<DeferredWake> {
        let w = *self.list.get(self.head)?;
        self.head += 1;
        if self.head == self.list.len() {
            self.list.clear();
            self.head = 0;
        }
        Some(w)
    }

    /// Drops the consumed rounds. Moves at most `head` rounds, so it costs
    /// amortised O(1) per round; out of line to keep `push` small.
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        self.list.drain(..self.head);
        self.head = 0;
    }

    /// Adds `w` after the rounds of its tick or earlier.
    #[inline]
    fn push(&mut self, w: DeferredWake) {
        // A round is reserved only by a round that emptied its slice, one
        // event time after it, so reservations come in tick order and
        // this is a push at the back; the search keeps the order whatever
        // the caller.
        if self.head >= Self::COMPACT_FROM && 2 * self.head >= self.list.len() {
            self.compact();
        }
        if self.list.last().is_none_or(|b| b.at <= w.at) {
            self.list.push(w);
        } else {
            let i = self.list[self.head..]
                .iter()
                .rposition(|b| b.at <= w.at)
                .map_or(self.head, |i| self.head + i + 1);
            self.list.insert(i, w);
        }
    }

    /// Removes and returns every round.
    fn take_all(&mut self) -> impl Iterator<Item = DeferredWake> + '_ {
        let head = std::mem::take(&mut self.head);
        self.list.drain(..).skip(head)
    }
}

/// The DC's line states: a dense range up to 64 Ki lines, beyond it at most
/// 16 one-byte slots per stored line (about a hash map entry's cost).
type LineStates = DenseLineMap<u8>;

fn line_states() -> LineStates {
    DenseLineMap::new(1 << 16, 16)
}

#[derive(Debug, Default)]
struct Dcu {
    line: Option<u64>,
    responses: VecDeque<CohMsg>,
    requests: VecDeque<CohMsg>,
    busy_until: Tick,
    buffer: Option<Buffered>,
}

/// The `directory_controller` component.
pub struct DirectoryController {
    /// The shared tables behind an `Rc`, so that a handler holding them
    /// while it mutates `self` clones a plain counter, not an atomic one.
    // The second pointer is the point: cloning an `Rc` is a plain add.
    #[allow(clippy::redundant_allocation)]
    tables: Rc<Arc<Tables>>,
    checker: Rc<RefCell<Checker>>,
    /// The checker's `enabled`: with checks off rows are not reported to it.
    checks: bool,
    period: Tick,
    ingress: Tick,
    event: Tick,
    egress: Tick,
    axi: Tick,
    per_slice: usize,
    link: EciLink,
    state: LineStates,
    app_state: LineStates,
    /// The DC's table (`GENERATED`), compiled (behind an `Rc` so a row
    /// runs from it while the handler mutates `self`).
    dc_table: Rc<CompiledTable<Dest>>,
    /// The device-local machine's table (`LOCAL`), compiled.
    app_table: Rc<CompiledTable<Dest>>,
    /// Whether each catalogue message is a request (queued behind responses).
    is_request: Vec<bool>,
    catalogue: &'static Catalogue,
    /// The memory's real bytes.
    pub mem: LineStore,
    timing: MemTiming,
    dcus: Vec<Dcu>,
    rr: [usize; 2],
    /// DCUs of each slice with a queued message (so a dispatch round stops
    /// once it has visited them all instead of scanning every DCU).
    nonempty: [usize; 2],
    /// The same DCUs as a bit set by DCU index, so a round jumps from one
    /// to the next instead of stepping over the idle ones.
    nonempty_bits: Vec<u64>,
    scheduled: [Tick; 2],
    /// Dispatch rounds reserved while their slice had no queued message
    /// (see [`DirectoryController::schedule`]), in tick order (and in
    /// reservation order within a tick), so the ones already past are a
    /// prefix: [`DirectoryController::settle`] looks at the fronts only.
    deferred: [ReservedRounds; 2],
    /// Each slice's earliest reserved round's tick (`Tick::MAX`: none), so
    /// that `settle` passes over a slice at once before it.
    deferred_from: [Tick; 2],
    /// Messages in the ingress and local pipelines (carried by the kernel
    /// as local messages until they are due; the egress's are the kernel's
    /// reserved sends).
    in_pipelines: usize,
    app_ops: VecDeque<AppOp>,
    /// Application ops in flight, by line (at most one per line), with
    /// their issue tick.
    app_outstanding: BTreeMap<u64, (AppOp, Tick)>,
    /// Application ops the port keeps in flight (see [`Self::set_app_window`]).
    app_window: usize,
    /// See [`DIRECTORY_CONTROLLER`]'s `contended_grant_hold_ns`.
    contended_hold: Tick,
    /// Lines whose CPU request waited behind an application operation and
    /// has not been granted yet.
    contended: BTreeSet<u64>,
    /// Lines the application port leaves alone until the tick given.
    held_until: BTreeMap<u64, Tick>,
    /// With a window above one: the next DC clock edge an op may issue at.
    app_next_issue: Tick,
    /// The earliest application-port wake scheduled (`Tick::MAX`: none).
    app_wake_at: Tick,
    app_start: Tick,
    observer: Option<Observer>,
    device: Option<Device>,
    state_device: Option<StateDevice>,
    /// Counts of application-interface events: transitions, reads, writes,
    /// completed app ops.
    pub observed: [u64; 4],
    /// Application ops the local table refused, with the reason.
    pub app_errors: Vec<String>,
    /// Application writes in the order they took effect: (tick, line, data).
    pub store_log: Vec<(Tick, u64, Line)>,
}

impl DirectoryController {
    /// From `directory_controller` parameters.
    pub fn from_params(
        p: &Params,
        tables: Arc<Tables>,
        checker: Rc<RefCell<Checker>>,
        timing: MemTiming,
        link: &EciLink,
    ) -> Result<Self, String> {
        let checks = checker.borrow().enabled;
        let p = complete(&DIRECTORY_CONTROLLER, p)?;
        let t = DIRECTORY_CONTROLLER.type_name;
        // A guard: the platform's check requires two links of every ECI link.
        if link.links != 2 {
            return Err(format!(
                "{t}: the DC has an even and an odd slice and needs exactly 2 links, got {}",
                link.links
            ));
        }
        for role in [GENERATED, LOCAL] {
            let n = tables.ir.machines()[role].states.len();
            if n >= <u8 as Slot>::ABSENT as usize {
                return Err(format!(
                    "{t}: the {} table has {n} states; the DC keeps a state in a byte (at most {})",
                    tables.agent(role),
                    <u8 as Slot>::ABSENT - 1
                ));
            }
        }
        let clock = Clock::from_mhz(p.float("clock_mhz"));
        let cyc = |n: &str| clock.cycles(p.uint(n));
        let per_slice = p.uint("dcus_per_slice") as usize;
        Ok(DirectoryController {
            period: clock.period(),
            ingress: cyc("ingress_cycles"),
            event: cyc("event_cycles").max(1),
            egress: cyc("egress_cycles"),
            axi: cyc("axi_cycles"),
            per_slice,
            link: link.clone(),
            state: line_states(),
            app_state: line_states(),
            dc_table: Rc::new(tables.compile(GENERATED, |meta| {
                if meta.to == PEER {
                    Dest::Peer
                } else {
                    Dest::Local(AxiKind::of(meta.name))
                }
            })),
            app_table: Rc::new(tables.compile(LOCAL, |_| Dest::Dcu)),
            is_request: tables
                .msgs
                .iter()
                .map(|m| m.class == MsgClass::Request)
                .collect(),
            catalogue: tables.catalogue,
            mem: LineStore::default(),
            timing,
            dcus: (0..2 * per_slice).map(|_| Dcu::default()).collect(),
            rr: [0; 2],
            nonempty: [0; 2],
            nonempty_bits: vec![0; (2 * per_slice).div_ceil(64)],
            scheduled: [Tick::MAX; 2],
            deferred: Default::default(),
            deferred_from: [Tick::MAX; 2],
            in_pipelines: 0,
            app_ops: VecDeque::new(),
            app_outstanding: BTreeMap::new(),
            app_window: 1,
            contended_hold: ns_to_ps(p.float("contended_grant_hold_ns")),
            contended: BTreeSet::new(),
            held_until: BTreeMap::new(),
            app_next_issue: 0,
            app_wake_at: Tick::MAX,
            app_start: 0,
            observer: None,
            device: None,
            state_device: None,
            observed: [0; 4],
            app_errors: Vec::new(),
            store_log: Vec::new(),
            tables: Rc::new(tables),
            checks,
            checker,
        })
    }

    /// The timing model of the memory behind the AXI side, to put device
    /// logic in front of it (CCKit §5.5's prefetcher) before the run.
    pub fn timing_mut(&mut self) -> &mut MemTiming {
        &mut self.timing
    }

    /// Queues application ops, issued one at a time from tick 0.
    pub fn push_app_ops(&mut self, ops: impl IntoIterator<Item = AppOp>) {
        self.app_ops.extend(ops);
    }

    /// Lets the application keep up to `window` ops in flight (default 1:
    /// each op waits for the previous one's completion). With a window
    /// above one the port issues at most one op per DC clock, in order, and
    /// an op waits while an earlier op on its line is in flight (CCKit
    /// Table 3: "the application issues as many requests at a time as
    /// possible", one per clock).
    pub fn set_app_window(&mut self, window: usize) {
        self.app_window = window.max(1);
    }

    /// Delays the first application op to `at`.
    pub fn set_app_start(&mut self, at: Tick) {
        self.app_start = at;
    }

    /// Sets the observer of reads, writes, state changes and app completions.
    pub fn set_observer(&mut self, o: Observer) {
        self.observer = Some(o);
    }

    /// Sets the device logic that reacts to messages reaching the
    /// application port by queueing app ops.
    pub fn set_device(&mut self, d: Device) {
        self.device = Some(d);
    }

    /// Sets device logic that also sees the line's DC state
    /// ([`StateDevice`]); it is called after the [`Device`], if both are set.
    pub fn set_state_device(&mut self, d: StateDevice) {
        self.state_device = Some(d);
    }

    /// The DCU that serves `line` (slice `line % 2`, then `(line / 2) %
    /// dcus_per_slice` within it; odd-slice DCUs follow the even ones), so
    /// that device logic can place lines on distinct DCUs.
    pub fn dcu_of_line(&self, line: u64) -> usize {
        self.dcu_of(line)
    }

    /// DCUs in both slices.
    pub fn dcus(&self) -> usize {
        self.dcus.len()
    }

    /// The DC state name of a line.
    pub fn line_state(&self, line: u64) -> &str {
        self.tables.state_name(GENERATED, self.st(line))
    }

    /// Application ops not yet completed.
    pub fn app_pending(&self) -> usize {
        self.app_ops.len() + self.app_outstanding.len()
    }

    fn st(&self, line: u64) -> usize {
        self.state
            .get(line)
            .map(|s| s as usize)
            .unwrap_or(self.tables.initial[GENERATED])
    }

    fn app_st(&self, line: u64) -> usize {
        self.app_state
            .get(line)
            .map(|s| s as usize)
            .unwrap_or(self.tables.initial[LOCAL])
    }

    /// The DCU of `line`: slice `line % 2`, DCU `(line / 2) % per_slice`
    /// of it.
    #[inline]
    fn dcu_of(&self, line: u64) -> usize {
        let slice = (line & 1) as usize;
        slice * self.per_slice + modulo(line >> 1, self.per_slice as u64) as usize
    }

    /// Whether a request of the CPU for `line` waits in its DCU's queue.
    fn cpu_request_queued(&self, line: u64) -> bool {
        self.dcus[self.dcu_of(line)]
            .requests
            .iter()
            .any(|m| m.line == line && self.tables.msgs[m.msg as usize].from == PEER)
    }

    fn observe(&mut self, now: Tick, e: DcEvent) {
        let k = match e {
            DcEvent::Transition { .. } => 0,
            DcEvent::Read { .. } => 1,
            DcEvent::Write { .. } => 2,
            DcEvent::AppDone { .. } => 3,
        };
        self.observed[k] += 1;
        if let Some(o) = self.observer.as_mut() {
            o(now, &e);
        }
    }

    #[cold]
    #[inline(never)]
    fn fail(&mut self, ctx: &mut Ctx<'_, Msg>, text: String) {
        self.checker.borrow_mut().violation(ctx.now(), text);
        ctx.stop();
    }

    /// Advances slice `s`'s round-robin pointer by one round.
    #[inline]
    fn advance_rr(&mut self, s: usize) {
        let r = self.rr[s] + 1;
        self.rr[s] = if r == self.per_slice { 0 } else { r };
    }

    /// Asks for a dispatch round of `slice` at `at`.
    ///
    /// A round of a slice with no queued message does nothing but advance
    /// the round-robin pointer, and the follow-up round after each table row
    /// (when the DCU becomes free) usually is one. So while the slice is
    /// empty the round is only *reserved* (its place in the run fixed, no
    /// kernel event); [`DirectoryController::enqueue`] queues the reserved
    /// rounds if a message arrives before they are due, and
    /// [`DirectoryController::settle`] applies the pointer advance of those
    /// that passed empty. The rounds that run, and everything they do, are
    /// the same as with an event per round.
    fn schedule(&mut self, ctx: &mut Ctx<'_, Msg>, slice: usize, at: Tick) {
        if self.scheduled[slice] != at {
            self.scheduled[slice] = at;
            if self.nonempty[slice] == 0 {
                let w = ctx.defer_wake(at);
                self.deferred[slice].push(w);
                self.deferred_from[slice] = self.deferred_from[slice].min(w.at);
            } else {
                ctx.wake_at(at, TOK_SLICE + slice as u64);
            }
        }
    }

    /// Recomputes `deferred_from` of `slice` after reserved rounds left
    /// its list.
    #[inline]
    fn refresh_deferred_from(&mut self, slice: usize) {
        self.deferred_from[slice] = self.deferred[slice].front().map_or(Tick::MAX, |w| w.at);
    }

    /// Applies the reserved rounds that would have run (empty) before the
    /// current event: each advances the round-robin pointer and ends the
    /// wait for its tick, as the round's own wake-up would have. (No other
    /// DC event ran between them, so their order does not matter.)
    #[inline]
    fn settle(&mut self, ctx: &Ctx<'_, Msg>) {
        // A slice with nothing reserved up to now: one comparison.
        let now = ctx.now();
        for s in 0..2 {
            if now >= self.deferred_from[s] {
                self.settle_slice(ctx, s);
            }
        }
    }

    fn settle_slice(&mut self, ctx: &Ctx<'_, Msg>, s: usize) {
        // The list is in (tick, reservation) order, the order `is_past`
        // compares: the past rounds are a prefix.
        while let Some(w) = self.deferred[s].front() {
            if !ctx.is_past(w) {
                break;
            }
            let at = w.at;
            self.deferred[s].pop_front();
            self.advance_rr(s);
            if self.scheduled[s] == at {
                self.scheduled[s] = Tick::MAX;
            }
        }
        self.refresh_deferred_from(s);
    }

    fn enqueue(&mut self, ctx: &mut Ctx<'_, Msg>, m: CohMsg) {
        let d = self.dcu_of(m.line);
        let slice = (m.line & 1) as usize;
        let dcu = &self.dcus[d];
        if dcu.responses.is_empty() && dcu.requests.is_empty() {
            if self.nonempty[slice] == 0 {
                if !self.deferred[slice].is_empty() {
                    // The slice has work again. A reserved round still due
                    // at this tick would find it, so it becomes a real
                    // wake-up; later ones wait for the end of the next
                    // round, which decides again (see `dispatch`).
                    // (`settle` ran: none is past, so those of this tick
                    // are the first ones.)
                    let now = ctx.now();
                    while self.deferred[slice].front().is_some_and(|w| w.at == now) {
                        let w = self.deferred[slice].pop_front().expect("front");
                        ctx.wake_deferred(w, TOK_SLICE + slice as u64);
                    }
                    self.refresh_deferred_from(slice);
                }
                // The message is the slice's only work: when the round runs
                // now and its DCU takes it, run it without queueing it.
                if self.scheduled[slice] != ctx.now() {
                    if let Some(p) = self.lone_pick(ctx.now(), d, &m) {
                        return self.run_alone(ctx, slice, d, m, p);
                    }
                }
            }
            self.nonempty[slice] += 1;
            self.nonempty_bits[d / 64] |= 1 << (d % 64);
        }
        let request = self.is_request[m.msg as usize];
        let dcu = &mut self.dcus[d];
        if request {
            dcu.requests.push_back(m);
        } else {
            dcu.responses.push_back(m);
        }
        // The slice's dispatch round runs now, in this event, unless one is
        // already due at this tick (it will find the message). (A separate
        // round at the same tick, as before, cost a kernel event per
        // message and ran after other work of the tick, e.g. the other
        // slice's round: the order of the slices' memory accesses at a tick
        // differs between the two.)
        if self.scheduled[slice] != ctx.now() {
            self.dispatch(ctx, slice);
        }
    }

    /// What a dispatch round at `now` would pick for message `m` as the only
    /// message queued in its slice (at DCU `d`): its `Go` cell if the DCU is
    /// free and takes it. `None` when the round would leave it queued (the
    /// DCU busy or on another line, the table stalling it) or fail on it;
    /// the message then goes the ordinary way, through the queue.
    #[inline]
    fn lone_pick(&self, now: Tick, d: usize, m: &CohMsg) -> Option<Picked> {
        let dcu = &self.dcus[d];
        if dcu.busy_until > now
            || dcu.line.is_some_and(|l| l != m.line)
            || self.app_held(m, now).is_some()
        {
            return None;
        }
        let table = &*self.dc_table;
        let state = self.st(m.line);
        let event = table.msg_event[m.msg as usize]?;
        match table.cell(state, event) {
            (cell, Cell::Go(_)) => Some(Picked {
                queue: 0,
                pos: 0,
                state,
                cell,
            }),
            _ => None,
        }
    }

    /// The dispatch round of `slice` when message `m`, the slice's only
    /// work, is what DCU `d` takes (`p`, from [`Self::lone_pick`]): exactly
    /// what [`Self::dispatch`] does with it (the DCU busy for an event, its
    /// row, the pointer's advance, the next round when the DCU is free),
    /// without the queue's push and pop and the round's scan of the slice.
    fn run_alone(&mut self, ctx: &mut Ctx<'_, Msg>, slice: usize, d: usize, m: CohMsg, p: Picked) {
        let until = ctx.now() + self.event;
        self.dcus[d].busy_until = until;
        self.execute(ctx, d, &m, p);
        if let Some(b) = m.data {
            recycle_line(b);
        }
        self.advance_rr(slice);
        self.schedule(ctx, slice, until);
    }

    /// The first event DCU `d` can handle at `now`, with the number of
    /// queued events the table stalls before it and the earliest end of a
    /// contended grant's hold that keeps an application request waiting
    /// (see the module docs). Errors are unspecified receptions.
    // Indexed loops on purpose (see the loop).
    #[allow(clippy::needless_range_loop)]
    fn pick(&self, d: usize, now: Tick) -> Result<(Option<Picked>, u64, Option<Tick>), String> {
        let dcu = &self.dcus[d];
        let table = &*self.dc_table;
        let mut stalls = 0;
        let mut held = None;
        for (queue, q) in [&dcu.responses, &dcu.requests].into_iter().enumerate() {
            // By index: the queues are short (usually one message), and
            // indexing skips an iterator's set-up over the ring's halves.
            for pos in 0..q.len() {
                let m = &q[pos];
                if dcu.line.is_some_and(|l| l != m.line) {
                    continue;
                }
                if let Some(until) = self.app_held(m, now) {
                    held = Some(held.map_or(until, |h: Tick| h.min(until)));
                    continue;
                }
                let state = self.st(m.line);
                let Some(event) = table.msg_event[m.msg as usize] else {
                    return Err(self.no_event(m));
                };
                match table.cell(state, event) {
                    (_, Cell::Unspecified) => return Err(self.unspecified(m, state)),
                    (_, Cell::Stall) => stalls += 1,
                    (_, Cell::Guarded(_)) => unreachable!("Tables::new rejects guards"),
                    (cell, Cell::Go(_)) => {
                        let p = Picked {
                            queue,
                            pos,
                            state,
                            cell,
                        };
                        return Ok((Some(p), stalls, held));
                    }
                }
            }
        }
        Ok((None, stalls, held))
    }

    /// When `m` is an application request on a line under a contended
    /// grant's hold at `now`: the hold's end.
    #[inline]
    fn app_held(&self, m: &CohMsg, now: Tick) -> Option<Tick> {
        // No hold configured or none given yet: one comparison.
        if self.held_until.is_empty()
            || !self.is_request[m.msg as usize]
            || self.tables.msgs[m.msg as usize].from != LOCAL
        {
            return None;
        }
        self.held_until
            .get(&m.line)
            .copied()
            .filter(|&until| until > now)
    }

    #[cold]
    #[inline(never)]
    fn no_event(&self, m: &CohMsg) -> String {
        let name = self.tables.msgs[m.msg as usize].name;
        format!("the dc table has no event for message {name}")
    }

    #[cold]
    #[inline(never)]
    fn unspecified(&self, m: &CohMsg, state: usize) -> String {
        format!(
            "unspecified reception: {} for line {:#x} arrived at the dc in state {} and the table has no transition or stall for it",
            self.tables.msgs[m.msg as usize].name,
            m.line,
            self.tables.state_name(GENERATED, state)
        )
    }

    fn dispatch(&mut self, ctx: &mut Ctx<'_, Msg>, slice: usize) {
        let now = ctx.now();
        let mut next: Option<Tick> = None;
        // Visit the slice's DCUs with queued work from the round-robin
        // pointer, wrapping once. (A round only empties queues, so the set
        // can be read as it goes.)
        let first = slice * self.per_slice;
        let end = first + self.per_slice;
        let start = first + self.rr[slice];
        let mut from = start;
        let mut wrapped = false;
        loop {
            let d = match self.next_nonempty(from, if wrapped { start } else { end }) {
                Some(d) => d,
                None if !wrapped => {
                    wrapped = true;
                    from = first;
                    continue;
                }
                None => break,
            };
            from = d + 1;
            let dcu = &self.dcus[d];
            if dcu.busy_until > now {
                next = Some(next.map_or(dcu.busy_until, |n| n.min(dcu.busy_until)));
                continue;
            }
            match self.pick(d, now) {
                Err(e) => return self.fail(ctx, e),
                Ok((found, stalls, held)) => {
                    if stalls > 0 {
                        ctx.count(ST_STALLS, stalls);
                    }
                    // Only a held application request: a round when its
                    // hold ends.
                    if let (None, Some(t)) = (&found, held) {
                        next = Some(next.map_or(t, |n| n.min(t)));
                    }
                    if let Some(p) = found {
                        let dcu = &mut self.dcus[d];
                        let q = if p.queue == 0 {
                            &mut dcu.responses
                        } else {
                            &mut dcu.requests
                        };
                        // Usually the head: `pop_front` skips `remove`'s shifting.
                        let m = if p.pos == 0 {
                            q.pop_front()
                        } else {
                            q.remove(p.pos)
                        }
                        .expect("picked");
                        if dcu.responses.is_empty() && dcu.requests.is_empty() {
                            self.nonempty[slice] -= 1;
                            self.nonempty_bits[d / 64] &= !(1 << (d % 64));
                        }
                        dcu.busy_until = now + self.event;
                        let until = dcu.busy_until;
                        next = Some(next.map_or(until, |n| n.min(until)));
                        self.execute(ctx, d, &m, p);
                        if let Some(b) = m.data {
                            recycle_line(b);
                        }
                    }
                }
            }
        }
        self.advance_rr(slice);
        if let Some(t) = next {
            self.schedule(ctx, slice, t);
        }
        if self.nonempty[slice] > 0 && !self.deferred[slice].is_empty() {
            // Work stays queued, so the reserved rounds would find it: they
            // become real wake-ups. (A slice emptied by this round keeps
            // them reserved; the next `enqueue` always leads to a round at
            // its own tick, before any of them, which decides again.)
            for w in self.deferred[slice].take_all() {
                ctx.wake_deferred(w, TOK_SLICE + slice as u64);
            }
            self.refresh_deferred_from(slice);
        }
    }

    /// The first DCU in `from..end` with queued work.
    fn next_nonempty(&self, from: usize, end: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = self.nonempty_bits.get(w)? & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                let d = w * 64 + bits.trailing_zeros() as usize;
                return (d < end).then_some(d);
            }
            w += 1;
            if w * 64 >= end {
                return None;
            }
            bits = self.nonempty_bits[w];
        }
    }

    /// A payload with the bytes memory holds for `line`: DCU `d`'s buffer
    /// when it holds them (read or written for `line` with no memory write
    /// since), which empties the buffer, else a read of memory.
    #[inline]
    fn payload(&mut self, d: usize, line: u64) -> Box<Line> {
        let generation = self.mem.generation();
        let buffer = &mut self.dcus[d].buffer;
        if buffer
            .as_ref()
            .is_some_and(|b| b.line == line && b.generation == generation)
        {
            return buffer.take().expect("checked").bytes;
        }
        boxed_line_with(|b| self.mem.read_into(line, b))
    }

    /// Sets DCU `d`'s buffer (its box goes back to the payload pool).
    #[inline]
    fn set_buffer(&mut self, d: usize, b: Option<Buffered>) {
        if let Some(old) = std::mem::replace(&mut self.dcus[d].buffer, b) {
            recycle_line(old.bytes);
        }
    }

    /// Runs one table row of the DC for message `m` in DCU `d`: the cell
    /// `pick` found for it.
    fn execute(&mut self, ctx: &mut Ctx<'_, Msg>, d: usize, m: &CohMsg, p: Picked) {
        let now = ctx.now();
        let table = self.dc_table.clone();
        let Cell::Go(row) = &table.cells[p.cell] else {
            unreachable!("picked a Go row")
        };
        let line = m.line;
        ctx.count(ST_EVENTS, 1);
        let done = now + self.event;
        let mut fx = DcRow {
            dc: self,
            ctx,
            d,
            m,
            now,
            done,
        };
        if let Err(e) = execute(row, &mut fx) {
            return self.fail(ctx, e);
        }
        let next = row.next;
        if ctx.tracing() {
            self.note_row(ctx, d, m, p.state, row, done);
        }
        // Sparse: a line back in the initial state costs nothing.
        if row.next_initial {
            self.state.remove(line);
        } else {
            self.state.insert(line, next as u8);
        }
        self.dcus[d].line = if row.next_stable {
            self.set_buffer(d, None);
            None
        } else {
            Some(line)
        };
        if self.checks {
            self.check_row(ctx, m, row);
        }
        if self.observer.is_none() {
            self.observed[0] += 1;
        } else {
            self.observe_transition(now, m, p.state, next);
        }
    }

    /// The trace note of DCU `d`'s row for `m` from `state` (tracing runs
    /// only: out of line, so the row's hot path stays small).
    #[cold]
    #[inline(never)]
    fn note_row(
        &self,
        ctx: &mut Ctx<'_, Msg>,
        d: usize,
        m: &CohMsg,
        state: usize,
        row: &Row<Dest>,
        done: Tick,
    ) {
        let (kind, args) = transition_parts(&self.tables, GENERATED, state, row, "dcu", m.line);
        ctx.trace_note(Note {
            kind,
            unit: d as u32,
            start: ctx.now(),
            end: done,
            line: Some(m.line),
            name: m.name().to_string(),
            args,
        });
    }

    /// Reports the DC's row for `m` to the online checker (checks on only;
    /// out of line, so the row's hot path stays small).
    #[inline(never)]
    fn check_row(&mut self, ctx: &mut Ctx<'_, Msg>, m: &CohMsg, row: &Row<Dest>) {
        let mut c = self.checker.borrow_mut();
        let mem = self.mem.read(m.line);
        c.row(
            ctx.now(),
            m.line,
            GENERATED,
            Some(m.msg),
            &row.sent,
            row.next,
            None,
            Some(&mem),
        );
        if !c.violations.is_empty() {
            ctx.stop();
        }
    }

    /// Tells the observer of the DC's transition of `m`'s line from
    /// `from` to `to` (runs with an observer only).
    #[inline(never)]
    fn observe_transition(&mut self, now: Tick, m: &CohMsg, from: usize, to: usize) {
        let tables = self.tables.clone();
        let e = DcEvent::Transition {
            line: m.line,
            event: m.name().to_string(),
            from: tables.state_name(GENERATED, from).to_string(),
            to: tables.state_name(GENERATED, to).to_string(),
        };
        self.observe(now, e);
    }

    /// Holds the application port off `line` until `contended_hold` after
    /// `leaves` if the grant that leaves then answers a request that waited
    /// for the application (out of line: only with a hold configured, so the
    /// row's send does not prepare the map lookups).
    #[cold]
    #[inline(never)]
    fn hold_if_contended(&mut self, line: u64, leaves: Tick) {
        if self.contended.remove(&line) {
            self.held_until.insert(line, leaves + self.contended_hold);
        }
    }

    /// A DC message to the device-local machine (`kind` on the AXI side):
    /// AXI through the memory timing model, completions to the application.
    fn send_local(&mut self, ctx: &mut Ctx<'_, Msg>, d: usize, at: Tick, m: CohMsg, kind: AxiKind) {
        let line = m.line;
        let arrive = match kind {
            AxiKind::Read => {
                ctx.count(ST_AXI_RD, 1);
                self.observe(at, DcEvent::Read { line });
                let b = Buffered {
                    bytes: boxed_line_with(|b| self.mem.read_into(line, b)),
                    line,
                    generation: self.mem.generation(),
                };
                self.set_buffer(d, Some(b));
                self.timing.access(at + self.axi, line, false) + self.axi
            }
            AxiKind::Write => {
                ctx.count(ST_AXI_WR, 1);
                self.set_buffer(d, None);
                self.timing.access(at + self.axi, line, true) + self.axi
            }
            AxiKind::NotAxi => at + self.period,
        };
        self.pipe(ctx, arrive, TOK_LOCAL, m);
    }

    /// Puts `m` in the pipeline `token` (a `TOK_*` of a local message),
    /// due at `at`.
    #[inline]
    fn pipe(&mut self, ctx: &mut Ctx<'_, Msg>, at: Tick, token: u64, m: CohMsg) {
        self.in_pipelines += 1;
        ctx.schedule_local(at, token, Msg::Coh(m));
    }

    /// The local machine handles a message (an AXI request or a completion).
    fn local_message(&mut self, ctx: &mut Ctx<'_, Msg>, m: CohMsg) {
        let Some(ev) = self.app_table.msg_event[m.msg as usize] else {
            return self.fail(ctx, format!("the app table has no event for {}", m.name()));
        };
        if self.local_event(ctx, m.line, ev, m.data.as_deref(), Some(m.msg)) {
            if let Some(dev) = self.device.as_mut() {
                let ops = dev(ctx.now(), m.name(), m.line, &self.mem);
                if !ops.is_empty() {
                    // The application reacts a cycle later, as it issues ops.
                    self.app_ops.extend(ops);
                    self.wake_app(ctx, ctx.now() + self.period);
                }
            }
            if self.state_device.is_some() {
                let state = self.line_state(m.line).to_string();
                let dev = self.state_device.as_mut().expect("checked");
                let ops = dev(ctx.now(), m.name(), m.line, &state, &self.mem);
                if !ops.is_empty() {
                    self.app_ops.extend(ops);
                    self.wake_app(ctx, ctx.now() + self.period);
                }
            }
        }
        if let Some(b) = m.data {
            recycle_line(b);
        }
    }

    /// Runs the local table's row for event `ev` on `line`; `message` is
    /// the message that triggered it (`None` for an application op).
    fn local_event(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        line: u64,
        ev: usize,
        data: Option<&Line>,
        message: Option<u16>,
    ) -> bool {
        let table = self.app_table.clone();
        let now = ctx.now();
        let st = self.app_st(line);
        let row = match table.cell(st, ev) {
            (_, Cell::Go(row)) => row,
            (_, other) => {
                let what = if matches!(other, Cell::Unspecified) {
                    "has no transition"
                } else {
                    "stalls"
                };
                let e = format!(
                    "app: event {} on line {line:#x} in state {}: the table {what}",
                    self.tables.ir.roles[LOCAL].events[ev].name,
                    self.tables.state_name(LOCAL, st)
                );
                if let Some(msg) = message {
                    self.checker.borrow_mut().handled(line, msg);
                    self.fail(ctx, e);
                } else {
                    self.app_errors.push(e);
                }
                return false;
            }
        };
        let mut fx = AppRow {
            dc: self,
            ctx,
            line,
            data,
            now,
        };
        if let Err(e) = execute(row, &mut fx) {
            self.fail(ctx, e);
            return false;
        }
        let next = row.next;
        if ctx.tracing() {
            let (kind, args) = transition_parts(&self.tables, LOCAL, st, row, "app", line);
            ctx.trace_note(Note {
                kind,
                unit: 0,
                start: now,
                end: now,
                line: Some(line),
                name: self.tables.ir.roles[LOCAL].events[ev].name.clone(),
                args,
            });
        }
        if row.next_initial {
            self.app_state.remove(line);
        } else {
            self.app_state.insert(line, next as u8);
        }
        if self.checks {
            let mut c = self.checker.borrow_mut();
            let mem = self.mem.read(line);
            c.row(now, line, LOCAL, message, &row.sent, next, None, Some(&mem));
            if !c.violations.is_empty() {
                ctx.stop();
            }
        }
        // An app op completes when its event sends nothing (read/write while
        // locked) or when the completion (a message) brings the app back. An
        // op whose own row sends and lands in a stable state (the invocation
        // protocol's grants) expects no completion and is done at once.
        let posted = message.is_none() && row.next_stable;
        if !row.sends() || posted {
            if let Some((op, t0)) = self.app_outstanding.remove(&line) {
                if self.contended_hold > 0 && self.cpu_request_queued(line) {
                    self.contended.insert(line);
                }
                if ctx.tracing() {
                    ctx.trace_note(Note {
                        kind: NoteKind::Op,
                        unit: 0,
                        start: t0,
                        end: now,
                        line: Some(line),
                        name: op.event.clone(),
                        args: vec![("track", "device".to_string())],
                    });
                }
                self.observe(
                    now,
                    DcEvent::AppDone {
                        event: op.event,
                        line,
                        latency_ps: now - t0,
                    },
                );
                self.wake_app(ctx, now + self.period);
            }
        }
        true
    }

    /// Wakes the application port at `at` unless a wake is already due by
    /// then: one chain of port wakes, not one per completion (each wake
    /// that issues schedules the next).
    fn wake_app(&mut self, ctx: &mut Ctx<'_, Msg>, at: Tick) {
        if at < self.app_wake_at {
            self.app_wake_at = at;
            ctx.wake_at(at, TOK_APP);
        }
    }

    fn issue_app(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        let paced = self.app_window > 1;
        while self.app_outstanding.len() < self.app_window {
            let Some(op) = self.app_ops.front() else {
                return;
            };
            let at = if paced {
                op.not_before.max(self.app_next_issue)
            } else {
                op.not_before
            };
            if at > now {
                self.wake_app(ctx, at);
                return;
            }
            if self.app_outstanding.contains_key(&op.line) {
                // Resumed by that op's completion.
                return;
            }
            if let Some(&until) = self.held_until.get(&op.line) {
                if until > now {
                    // A contended grant's hold (see the module docs).
                    self.wake_app(ctx, until);
                    return;
                }
                self.held_until.remove(&op.line);
            }
            let op = self.app_ops.pop_front().expect("front");
            let Some(ev) = self.tables.local_event(LOCAL, &op.event) else {
                self.app_errors
                    .push(format!("app: unknown event {:?}", op.event));
                continue;
            };
            let (line, data) = (op.line, op.data.as_deref().copied());
            self.app_outstanding.insert(line, (op, now));
            if paced {
                self.app_next_issue = now + self.period;
            }
            if !self.local_event(ctx, line, ev, data.as_ref(), None) {
                self.app_outstanding.remove(&line);
            }
        }
    }
}

impl Component<Msg> for DirectoryController {
    fn spec(&self) -> &'static ComponentSpec {
        &DIRECTORY_CONTROLLER
    }

    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if !self.app_ops.is_empty() {
            let at = self.app_start;
            self.wake_app(ctx, at);
        }
    }

    fn on_message(&mut self, _port: PortId, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = match m.into_coh("dc") {
            Ok(m) => m,
            Err(e) => return self.fail(ctx, e),
        };
        let at = ctx.now() + self.ingress + self.link.jitter_of(ctx);
        self.pipe(ctx, at, TOK_INBOX, m);
    }

    fn on_local(&mut self, token: u64, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = m.local_coh();
        self.settle(ctx);
        self.in_pipelines -= 1;
        match token {
            TOK_INBOX => self.enqueue(ctx, m),
            TOK_LOCAL => self.local_message(ctx, m),
            _ => unreachable!("dc: local message with token {token}"),
        }
    }

    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        self.settle(ctx);
        match token {
            TOK_APP => {
                if self.app_wake_at <= ctx.now() {
                    self.app_wake_at = Tick::MAX;
                }
                self.issue_app(ctx)
            }
            t if t >= TOK_SLICE => {
                let s = (t - TOK_SLICE) as usize;
                if self.scheduled[s] == now {
                    self.scheduled[s] = Tick::MAX;
                }
                self.dispatch(ctx, s);
            }
            _ => {}
        }
    }
}

impl DirectoryController {
    /// Adds the DC's and the application machine's lines not in their
    /// initial state to a stuck report's snapshot (report time only).
    pub(crate) fn snapshot_states(&self, s: &mut LineSnapshot) {
        for (line, st) in self.state.iter() {
            s.state(line, GENERATED, st as usize);
        }
        for (line, st) in self.app_state.iter() {
            s.state(line, LOCAL, st as usize);
        }
    }

    /// Every message inside the DC, sent and not yet handled by a table:
    /// in the DCU queues. (Those in the ingress and AXI pipelines are the
    /// kernel's local messages, and those in the egress its reserved
    /// sends, both listed by `Simulation::in_flight`.)
    pub(crate) fn queued_messages(&self) -> impl Iterator<Item = &CohMsg> + '_ {
        self.dcus
            .iter()
            .flat_map(|d| d.responses.iter().chain(&d.requests))
    }

    /// Messages queued in DCUs (waiting or stalled) and in the ingress and
    /// local pipelines (not the egress: those are the kernel's reserved
    /// sends, in `Simulation::in_flight`).
    pub fn queued(&self) -> usize {
        self.dcus
            .iter()
            .map(|d| d.requests.len() + d.responses.len())
            .sum::<usize>()
            + self.in_pipelines
    }
}

/// A DC table row's effects (the engine decides which; these say how,
/// on the DC's memory, DCU buffer and pipelines).
struct DcRow<'a, 'c> {
    dc: &'a mut DirectoryController,
    ctx: &'a mut Ctx<'c, Msg>,
    /// The DCU running the row.
    d: usize,
    /// The message being handled.
    m: &'a CohMsg,
    now: Tick,
    /// When the DCU is done with the event.
    done: Tick,
}

impl Effects<Dest> for DcRow<'_, '_> {
    #[inline]
    fn send(&mut self, s: &SendStep<Dest>) -> Result<(), String> {
        let dc = &mut *self.dc;
        let line = self.m.line;
        let data = s.data.then(|| dc.payload(self.d, line));
        let out = CohMsg::new(dc.catalogue, s.msg, line, data);
        match s.to {
            Dest::Peer => {
                let leaves = self.done + dc.egress;
                // A grant (the DC sends data to the CPU only in grants)
                // answering a request that waited for the application.
                if s.data && !dc.contended.is_empty() {
                    dc.hold_if_contended(line, leaves);
                }
                // The egress pipeline is a fixed delay that ends in the
                // send and nothing else: the send's place is reserved now
                // and the kernel makes it there (`Ctx::send_at`), with
                // the credits and wire of that moment, no event of its own.
                let (bytes, vc) = EciLink::wire_of(&dc.tables.msgs[out.msg as usize]);
                // Even lines on `eci0`, odd ones on `eci1` (the DC has
                // exactly two links).
                let port = (line & 1) as PortId;
                self.ctx.send_at(leaves, port, Msg::Coh(out), bytes, vc)
            }
            Dest::Local(kind) => dc.send_local(self.ctx, self.d, self.done, out, kind),
            Dest::Dcu => unreachable!("the dc table sends to the peer or the app"),
        }
        Ok(())
    }

    #[inline]
    fn write_mem(&mut self) -> Result<(), String> {
        let (m, dc) = (self.m, &mut *self.dc);
        let Some(v) = m.data.as_deref() else {
            return Err(format!("dc: write_mem on {} without data", m.name()));
        };
        dc.mem.write(m.line, v);
        let b = Buffered {
            bytes: boxed_line(*v),
            line: m.line,
            generation: dc.mem.generation(),
        };
        dc.set_buffer(self.d, Some(b));
        dc.observe(self.now, DcEvent::Write { line: m.line });
        Ok(())
    }

    #[inline]
    fn store(&mut self) -> Result<(), String> {
        if let Some(v) = self.m.data.as_deref() {
            self.dc.mem.write(self.m.line, v);
            self.dc.checker.borrow_mut().store(self.now, self.m.line, v);
        }
        Ok(())
    }

    #[inline]
    fn check(&mut self) -> Result<(), String> {
        let v = self.dc.mem.read(self.m.line);
        self.dc
            .checker
            .borrow_mut()
            .check_read(self.now, self.m.line, GENERATED, &v);
        Ok(())
    }
}

/// A row's trace-note kind and arguments (its track, the states it goes
/// from and to in `role`, the messages it sends, the line's address): what
/// the DCUs' and the application port's notes share.
fn transition_parts<D>(
    tables: &Tables,
    role: usize,
    from: usize,
    row: &Row<D>,
    track: &'static str,
    line: u64,
) -> (NoteKind, Vec<(&'static str, String)>) {
    let sent: Vec<&str> = row
        .sent
        .iter()
        .map(|&s| tables.msgs[s as usize].name)
        .collect();
    let kind = NoteKind::Transition {
        opens: row.opens,
        closes: row.closes,
    };
    let args = vec![
        ("track", track.to_string()),
        ("from", tables.state_name(role, from).to_string()),
        ("to", tables.state_name(role, row.next).to_string()),
        ("sent", sent.join(" ")),
        ("address", format!("{:#x}", line * LINE_BYTES as u64)),
    ];
    (kind, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_rounds_follow_the_pending_rounds_not_the_run_length() {
        use super::super::cpu::CpuOp;
        use super::super::system::{CoherentParams, CoherentSystem, HomeMemory};
        // Even lines only: one slice is busy for the whole run and a round
        // is reserved before the last one is consumed, so its list never
        // empties (before compaction it held one entry per read).
        let reads = 5_000;
        let program = (0..reads).map(|i| CpuOp::Load { line: 10 * i }).collect();
        let p = CoherentParams {
            cpu: Params::new().with("mshrs", ParamValue::Int(64), "test"),
            ..Default::default()
        };
        let mut sys =
            CoherentSystem::build_with(&p, HomeMemory::Ddr, program, Vec::new(), 1, TraceMode::Off)
                .expect("build");
        sys.run().expect("run");
        assert_eq!(sys.cpu().completed.len() as u64, reads);
        for r in &sys.dc().deferred {
            assert!(
                r.list.capacity() <= 4 * ReservedRounds::COMPACT_FROM,
                "{} reserved rounds kept",
                r.list.capacity()
            );
        }
    }
}
