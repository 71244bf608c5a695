//! The FPGA's cache controller (CC, CCKit §4.3): the FPGA as a **caching
//! agent of CPU memory**. It holds real 128-byte copies of CPU-homed lines
//! and **executes the generated table of `eci-cc`** (`ir.roles[0]`), the
//! mirror image of the DC: there the FPGA is the home and the CPU caches,
//! here the CPU is the home ([`super::cpu_home`]) and the FPGA caches.
//!
//! ```text
//!  device logic ──CcOp (ld/ldx/st/evict)──► app machine (ir.roles[2])
//!                                              │ LCL_LD/LCL_LDX/LCL_ST/LCL_EVICT
//!                                              ▼
//!  ECI ──FLDRS/FLDX/FEVX/SINV, PSHA/PEMD──► CC engine (ir.roles[0]) ──RLDD/RLDX/RC2D_S,
//!                                              │                         VICC/VICD/VICS,
//!                                              │ LCL_ACK/LCL_NACK        HAKI/HAKS/HAKD──► ECI
//!                                              ▼
//!                                         CcDone to the device logic
//! ```
//!
//! * **One table, interpreted as the checker does.** `send` takes data
//!   from the CC's copy while the state it leaves has access; `fill` takes
//!   the received line; `store` takes the value the app's `LCL_ST` carries;
//!   `check` reads the copy against the checker's ghost. A copy is dropped
//!   whenever the new state has no access.
//! * **A serial engine.** The CC handles one event per `event_cycles`
//!   (lookup and actions); an event the table stalls (an app request while
//!   the line is transient) stays queued and is retried after the next
//!   transition. Forwards and responses are tried before requests. Every
//!   ECI message pays `ingress_cycles` in and `egress_cycles` out, like the
//!   DC's transport.
//! * **Application interface.** [`CcOp`]s are issued one at a time to the
//!   app machine (`ld`, `ldx`, `st`, `evict` of `ir.roles[2]`); each completes
//!   when its `LCL_ACK`/`LCL_NACK` returns, as a [`CcDone`] with the bytes
//!   the load saw (the copy, or for a load the table let use the data
//!   once, that data). A [`CcDevice`] is told of every completion and of
//!   every forward the CPU home sends (the device's view of coherence
//!   messages, PIO §4: "it is free to react internally to these events")
//!   and returns more ops.
//! * **Watchdog.** A device op outstanding for `watchdog_us` stops the run
//!   with the stuck lines, their states and pending messages.
//! * **Only CPU-homed lines.** Lines below [`CPU_HOMED_BASE`] are homed at
//!   the DC; the CC refuses ops on them, and a message tagged with the
//!   other [`Catalogue`](ccsim_coherence::Catalogue) is reported, not misread.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use ccsim_kernel::prelude::*;
use ccsim_protocol::ir::{Access, MsgClass};

use super::link::EciLink;
use ccsim_coherence::check::{Checker, LineSnapshot};
use ccsim_coherence::util::{complete, ns_to_ps};
use ccsim_coherence::{
    boxed_line, recycle_line, CohMsg, Line, Msg, Tables, GENERATED, LOCAL, PEER,
};
use ccsim_protocol::engine::{execute, Cell, CompiledTable, Effects, SendStep, Step};

/// First CPU-homed line index. Line indices are byte address / 128, so
/// this is byte address 2^40 (1 TiB): everything below is FPGA-homed (the
/// DC's lines, which every existing workload uses from line 0), everything
/// at or above is homed in CPU memory and cached by the CC. Assumed: a
/// simulator address map, not Enzian's physical one.
pub const CPU_HOMED_BASE: u64 = 1 << 33;

/// Whether `line` is homed at the CPU (served by the CC and the CPU home)
/// rather than at the FPGA (served by the DC).
pub fn is_cpu_homed(line: u64) -> bool {
    line >= CPU_HOMED_BASE
}

/// Declaration of `cache_controller`.
pub static CACHE_CONTROLLER: ComponentSpec = ComponentSpec {
    type_name: "cache_controller",
    description: "The FPGA as caching agent of CPU memory: executes the generated eci-cc table with real line copies, serial engine, stall-and-retry; app port for device loads/stores.",
    params: &[
        ParamSpec { name: "clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(322.0), unit: "MHz", range: ParamRange::positive(), from: "CCKit §4.3: typical FPGA clock of 322 MHz", description: "CC clock." },
        ParamSpec { name: "ingress_cycles", kind: ParamKind::Int, default: ParamDefault::Int(22), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed: the ECI transport of the DC as calibrated on CCKit Table 2 (enzian dc.ingress_cycles)", description: "From the link to the CC engine (ECI transport, header/payload split)." },
        ParamSpec { name: "event_cycles", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed: like a DCU, a ROM lookup and actions in a few cycles", description: "One event: table lookup and actions (the engine is busy meanwhile)." },
        ParamSpec { name: "egress_cycles", kind: ParamKind::Int, default: ParamDefault::Int(22), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed: the ECI transport of the DC (enzian dc.egress_cycles)", description: "From the engine's send to the link." },
        ParamSpec { name: "watchdog_us", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "us", range: ParamRange::positive(), from: "assumed: far above any unloaded transaction", description: "A device op outstanding this long is reported as stuck." },
    ],
    ports: &[
        PortSpec { name: "eci0", description: "Even lines.", required: true },
        PortSpec { name: "eci1", description: "Odd lines.", required: true },
    ],
    stats: &[
        StatSpec { name: "events", kind: StatKind::Counter, unit: "events", description: "Events handled by the engine." },
        StatSpec { name: "stalls", kind: StatKind::Counter, unit: "tries", description: "Times a queued event was skipped because the table stalls it." },
        StatSpec { name: "requests", kind: StatKind::Counter, unit: "messages", description: "Requests and voluntary downgrades sent to the CPU home." },
        StatSpec { name: "forwards", kind: StatKind::Counter, unit: "messages", description: "Forwards received from the CPU home." },
    ],
    check: None,
};

/// Where a send of the CC's table goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum CcDest {
    /// Over ECI to the CPU home (through the egress pipeline).
    Eci,
    /// To the application machine (a cycle later).
    App,
}

const ST_EVENTS: usize = 0;
const ST_STALLS: usize = 1;
const ST_REQUESTS: usize = 2;
const ST_FORWARDS: usize = 3;

// Local-message tokens (`Ctx::schedule_local`): the CC's fixed-latency
// pipelines, each item a kernel event of its own.
/// Ingress to the engine's queue (from the link, or the device's requests).
const TOK_INBOX: u64 = 0;
// (Egress from the engine's send to the link: a reserved send,
// `Ctx::send_at`, not a local message.)
/// The engine's message to the device-local machine.
const TOK_LOCAL: u64 = 2;
// Wake-up tokens.
const TOK_APP: u64 = 3;
const TOK_ENGINE: u64 = 4;
const TOK_WATCHDOG: u64 = 5;

/// What the device asks of the CC.
#[derive(Clone, Debug, PartialEq)]
pub enum CcOpKind {
    /// Obtain a readable copy and read it (`ld`).
    Load,
    /// Obtain a writable copy (`ldx`).
    LoadExclusive,
    /// Store a whole line; refused (`LCL_NACK`) unless the CC holds the line
    /// writable (`st`).
    Store(Box<Line>),
    /// Drop the line, writing it back if dirty (`evict`).
    Evict,
}

impl CcOpKind {
    /// The app machine's event name.
    pub fn event(&self) -> &'static str {
        match self {
            CcOpKind::Load => "ld",
            CcOpKind::LoadExclusive => "ldx",
            CcOpKind::Store(_) => "st",
            CcOpKind::Evict => "evict",
        }
    }
}

/// One device operation on a CPU-homed line.
#[derive(Clone, Debug, PartialEq)]
pub struct CcOp {
    /// What.
    pub kind: CcOpKind,
    /// Line (must be CPU-homed).
    pub line: u64,
    /// Not issued before this tick.
    pub not_before: Tick,
}

impl CcOp {
    /// `kind` on `line`, issued once the previous op completed.
    pub fn new(kind: CcOpKind, line: u64) -> CcOp {
        CcOp {
            kind,
            line,
            not_before: 0,
        }
    }
    /// Not before tick `at`.
    pub fn at(mut self, at: Tick) -> CcOp {
        self.not_before = at;
        self
    }
}

/// A completed device operation.
#[derive(Clone, Debug, PartialEq)]
pub struct CcDone {
    /// The op.
    pub op: CcOp,
    /// Issue tick.
    pub issued: Tick,
    /// Issue to completion (ps).
    pub latency_ps: Tick,
    /// The table refused it (a store without write access: `LCL_NACK`).
    pub refused: bool,
    /// The line's bytes as the op left them (for a load: what it read).
    pub data: Option<Line>,
}

/// What the device logic is told.
#[derive(Clone, Debug)]
pub enum CcNotice<'a> {
    /// An op completed.
    Done(&'a CcDone),
    /// The CPU home sent a forward (`FLDRS`, `FLDX`, `FEVX`, `SINV`) for
    /// `line`; the CC already answered it by its table.
    Forward {
        /// Message name.
        name: &'a str,
        /// Line.
        line: u64,
    },
}

/// Device logic behind the CC's application port: returns ops to queue.
pub type CcDevice = Box<dyn FnMut(Tick, &CcNotice<'_>) -> Vec<CcOp>>;

/// The `cache_controller` component.
pub struct CacheController {
    tables: Arc<Tables>,
    /// The CC's table (`ir.roles[0]`), sends routed over ECI or to the app.
    cc_table: Rc<CompiledTable<CcDest>>,
    /// The application machine's table (`ir.roles[2]`); it sends to the CC.
    app_table: Rc<CompiledTable<()>>,
    checker: Rc<RefCell<Checker>>,
    period: Tick,
    ingress: Tick,
    event: Tick,
    egress: Tick,
    links: u64,
    link: EciLink,
    state: HashMap<u64, u8>,
    copies: HashMap<u64, Box<Line>>,
    /// The last line of data received per line, for a load the table lets
    /// use the data once without keeping it.
    received: HashMap<u64, Box<Line>>,
    app_state: HashMap<u64, u8>,
    /// Messages in the ingress, egress and local pipelines (carried by the
    /// kernel as local messages until they are due).
    in_pipelines: usize,
    queue: VecDeque<CohMsg>,
    busy_until: Tick,
    engine_wake: Tick,
    app_ops: VecDeque<CcOp>,
    app_current: Option<(CcOp, Tick)>,
    device: Option<CcDevice>,
    /// Completed ops in completion order.
    pub completed: Vec<CcDone>,
    /// Ops the app table refused to issue, with the reason.
    pub app_errors: Vec<String>,
    /// Device stores in the order they took effect: (tick, line, data).
    pub store_log: Vec<(Tick, u64, Line)>,
    watchdog: Tick,
    /// The watchdog's report, when it fired.
    pub stuck: Option<Vec<String>>,
}

impl CacheController {
    /// From `cache_controller` parameters.
    pub fn from_params(
        p: &Params,
        tables: Arc<Tables>,
        checker: Rc<RefCell<Checker>>,
        link: &EciLink,
    ) -> Result<Self, String> {
        let p = complete(&CACHE_CONTROLLER, p)?;
        let t = CACHE_CONTROLLER.type_name;
        if tables.cache_role != GENERATED {
            return Err(format!(
                "{t}: protocol {} keeps the cache at its {} agent; the CC runs a generated cache agent (e.g. eci-cc)",
                tables.ir.name, tables.ir.roles[tables.cache_role].role
            ));
        }
        let clock = Clock::from_mhz(p.float("clock_mhz"));
        let cyc = |n: &str| clock.cycles(p.uint(n));
        Ok(CacheController {
            period: clock.period(),
            ingress: cyc("ingress_cycles"),
            event: cyc("event_cycles").max(1),
            egress: cyc("egress_cycles"),
            links: link.links,
            link: link.clone(),
            state: HashMap::default(),
            copies: HashMap::default(),
            received: HashMap::default(),
            app_state: HashMap::default(),
            in_pipelines: 0,
            queue: VecDeque::new(),
            busy_until: 0,
            engine_wake: Tick::MAX,
            app_ops: VecDeque::new(),
            app_current: None,
            device: None,
            completed: Vec::new(),
            app_errors: Vec::new(),
            store_log: Vec::new(),
            watchdog: ns_to_ps(p.float("watchdog_us")).saturating_mul(1000).max(1),
            stuck: None,
            cc_table: Rc::new(tables.compile(GENERATED, |meta| {
                if meta.to == PEER {
                    CcDest::Eci
                } else {
                    CcDest::App
                }
            })),
            app_table: Rc::new(tables.compile(LOCAL, |_| ())),
            tables,
            checker,
        })
    }

    /// Queues device ops, issued one at a time from tick 0.
    pub fn push_ops(&mut self, ops: impl IntoIterator<Item = CcOp>) {
        self.app_ops.extend(ops);
    }

    /// Sets the device logic.
    pub fn set_device(&mut self, d: CcDevice) {
        self.device = Some(d);
    }

    /// Device ops not yet completed.
    pub fn pending(&self) -> usize {
        self.app_ops.len() + usize::from(self.app_current.is_some())
    }

    /// The CC's state name and copy of a line.
    pub fn line(&self, line: u64) -> (&str, Option<Line>) {
        (
            self.tables.state_name(GENERATED, self.st(line)),
            self.copies.get(&line).map(|b| **b),
        )
    }

    /// The CC's copy of a line while it holds it writable (then the copy,
    /// possibly dirty, is the line's value).
    pub fn writable_copy(&self, line: u64) -> Option<Line> {
        (self.cc_table.access[self.st(line)] == Access::Write)
            .then(|| self.copies.get(&line).map(|b| **b))
            .flatten()
    }

    /// The line of the device op in flight.
    pub fn current_line(&self) -> Option<u64> {
        self.app_current.as_ref().map(|(op, _)| op.line)
    }

    /// Adds the CC's and the application machine's lines not in their
    /// initial state to a stuck report's snapshot (report time only).
    pub(crate) fn snapshot_states(&self, s: &mut LineSnapshot) {
        for (&line, &st) in &self.state {
            s.state(line, GENERATED, st as usize);
        }
        for (&line, &st) in &self.app_state {
            s.state(line, LOCAL, st as usize);
        }
    }

    /// Every message inside the CC, sent and not yet handled by a table:
    /// in the engine's queue. (Those in the pipelines are the kernel's
    /// local messages, listed by `Simulation::in_flight`.)
    pub(crate) fn queued_messages(&self) -> impl Iterator<Item = &CohMsg> + '_ {
        self.queue.iter()
    }

    /// Messages queued or in the pipelines.
    pub fn queued(&self) -> usize {
        self.queue.len() + self.in_pipelines
    }

    fn st(&self, line: u64) -> usize {
        self.state
            .get(&line)
            .map(|&s| s as usize)
            .unwrap_or(self.cc_table.initial)
    }

    fn app_st(&self, line: u64) -> usize {
        self.app_state
            .get(&line)
            .map(|&s| s as usize)
            .unwrap_or(self.app_table.initial)
    }

    fn fail(&mut self, ctx: &mut Ctx<'_, Msg>, text: String) {
        self.checker.borrow_mut().violation(ctx.now(), text);
        ctx.stop();
    }

    /// Puts `m` in the pipeline `token` (a `TOK_*` of a local message),
    /// due at `at`.
    fn pipe(&mut self, ctx: &mut Ctx<'_, Msg>, at: Tick, token: u64, m: CohMsg) {
        self.in_pipelines += 1;
        ctx.schedule_local(at, token, Msg::Coh(m));
    }

    fn wake_engine(&mut self, ctx: &mut Ctx<'_, Msg>, at: Tick) {
        let at = at.max(ctx.now());
        if self.engine_wake > at || self.engine_wake < ctx.now() {
            self.engine_wake = at;
            ctx.wake_at(at, TOK_ENGINE);
        }
    }

    /// Picks the first queued message the table does not stall (forwards and
    /// responses before requests) and runs it.
    fn engine(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        if self.engine_wake <= now {
            self.engine_wake = Tick::MAX;
        }
        if self.queue.is_empty() {
            return;
        }
        if self.busy_until > now {
            let at = self.busy_until;
            return self.wake_engine(ctx, at);
        }
        let t = self.tables.clone();
        let table = self.cc_table.clone();
        let mut stalls = 0;
        let mut pick = None;
        'classes: for requests in [false, true] {
            for (i, m) in self.queue.iter().enumerate() {
                let meta = &t.msgs[m.msg as usize];
                if (meta.class == MsgClass::Request) != requests {
                    continue;
                }
                let Some(ev) = table.msg_event[m.msg as usize] else {
                    let e = format!("the cc table has no event for message {}", meta.name);
                    return self.fail(ctx, e);
                };
                let st = self.st(m.line);
                match table.cell(st, ev).1 {
                    Cell::Unspecified => {
                        let e = format!(
                            "unspecified reception: {} for line {:#x} arrived at the cc in state {} and the table has no transition or stall for it",
                            meta.name,
                            m.line,
                            t.state_name(GENERATED, st)
                        );
                        return self.fail(ctx, e);
                    }
                    Cell::Stall => stalls += 1,
                    Cell::Guarded(_) => unreachable!("Tables::new rejects guards"),
                    Cell::Go(_) => {
                        pick = Some(i);
                        break 'classes;
                    }
                }
            }
        }
        if stalls > 0 {
            ctx.count(ST_STALLS, stalls);
        }
        if let Some(i) = pick {
            let m = self.queue.remove(i).expect("picked");
            self.busy_until = now + self.event;
            self.execute(ctx, &m);
            if let Some(b) = m.data {
                recycle_line(b);
            }
            if !self.queue.is_empty() {
                let at = self.busy_until;
                self.wake_engine(ctx, at);
            }
        }
    }

    /// Runs one row of the CC table for message `m`.
    fn execute(&mut self, ctx: &mut Ctx<'_, Msg>, m: &CohMsg) {
        let now = ctx.now();
        let t = self.tables.clone();
        let table = self.cc_table.clone();
        let line = m.line;
        let st = self.st(line);
        let ev = table.msg_event[m.msg as usize].expect("picked");
        let Some(row) = table.row(st, ev) else {
            unreachable!("picked a Go row")
        };
        ctx.count(ST_EVENTS, 1);
        let done = now + self.event;
        let had = row.had;
        // Line buffers come from the pool and go back to it.
        let copy = self.copies.get(&line).map(|b| boxed_line(**b));
        if let Some(d) = &m.data {
            if let Some(old) = self.received.insert(line, boxed_line(**d)) {
                recycle_line(old);
            }
        }
        let mut fx = CcRow {
            cc: self,
            ctx,
            m,
            copy,
            had,
            done,
            now,
        };
        if let Err(e) = execute(row, &mut fx) {
            return self.fail(ctx, e);
        }
        let mut copy = fx.copy;
        let next = row.next;
        if !row.has {
            if let Some(b) = copy.take() {
                recycle_line(b);
            }
        }
        let replaced = match copy {
            Some(c) => self.copies.insert(line, c),
            None => self.copies.remove(&line),
        };
        if let Some(b) = replaced {
            recycle_line(b);
        }
        if row.next_initial {
            self.state.remove(&line);
        } else {
            self.state.insert(line, next as u8);
        }
        {
            let mut c = self.checker.borrow_mut();
            c.handled(line, m.msg);
            let cp = self.copies.get(&line).map(|b| **b);
            c.transition(now, line, GENERATED, next, cp.as_ref(), None);
            if !c.violations.is_empty() {
                ctx.stop();
            }
        }
        if t.msgs[m.msg as usize].class == MsgClass::Forward {
            ctx.count(ST_FORWARDS, 1);
            let name = m.name();
            self.notify(ctx, &CcNotice::Forward { name, line });
        }
    }

    fn notify(&mut self, ctx: &mut Ctx<'_, Msg>, n: &CcNotice<'_>) {
        if let Some(dev) = self.device.as_mut() {
            let ops = dev(ctx.now(), n);
            if !ops.is_empty() {
                // The device reacts a cycle later, as it issues ops.
                self.app_ops.extend(ops);
                ctx.wake_at(ctx.now() + self.period, TOK_APP);
            }
        }
    }

    /// The app machine handles a completion from the CC.
    fn local_message(&mut self, ctx: &mut Ctx<'_, Msg>, m: CohMsg) {
        let t = self.tables.clone();
        let now = ctx.now();
        let line = m.line;
        self.checker.borrow_mut().handled(line, m.msg);
        let Some(ev) = self.app_table.msg_event[m.msg as usize] else {
            return self.fail(ctx, format!("the app table has no event for {}", m.name()));
        };
        let st = self.app_st(line);
        let Some(next) = self.app_table.row(st, ev).map(|row| row.next) else {
            let e = format!(
                "app: {} on line {line:#x} in state {}: the table has no transition",
                m.name(),
                t.state_name(LOCAL, st)
            );
            return self.fail(ctx, e);
        };
        self.set_app_state(ctx, line, next);
        let Some((op, t0)) = self.app_current.take() else {
            return self.fail(ctx, format!("app: {} with no op outstanding", m.name()));
        };
        let data = self
            .copies
            .get(&line)
            .map(|b| **b)
            .or_else(|| match op.kind {
                CcOpKind::Load => self.received.get(&line).map(|b| **b),
                _ => None,
            });
        let done = CcDone {
            op,
            issued: t0,
            latency_ps: now - t0,
            refused: t.ir.messages[m.msg as usize].name == "LCL_NACK",
            data,
        };
        self.notify(ctx, &CcNotice::Done(&done));
        self.completed.push(done);
        ctx.wake_at(now + self.period, TOK_APP);
        if let Some(b) = m.data {
            recycle_line(b);
        }
    }

    fn set_app_state(&mut self, ctx: &mut Ctx<'_, Msg>, line: u64, next: usize) {
        if next == self.app_table.initial {
            self.app_state.remove(&line);
        } else {
            self.app_state.insert(line, next as u8);
        }
        let mut c = self.checker.borrow_mut();
        c.transition(ctx.now(), line, LOCAL, next, None, None);
        if !c.violations.is_empty() {
            ctx.stop();
        }
    }

    fn issue_app(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let t = self.tables.clone();
        let table = self.app_table.clone();
        while self.app_current.is_none() {
            let Some(op) = self.app_ops.pop_front() else {
                return;
            };
            let now = ctx.now();
            if op.not_before > now {
                ctx.wake_at(op.not_before, TOK_APP);
                self.app_ops.push_front(op);
                return;
            }
            if !is_cpu_homed(op.line) {
                self.app_errors.push(format!(
                    "cc: line {:#x} is FPGA-homed (the DC's); the CC caches CPU-homed lines (>= {CPU_HOMED_BASE:#x})",
                    op.line
                ));
                continue;
            }
            let Some(ev) = t.local_event(LOCAL, op.kind.event()) else {
                self.app_errors.push(format!(
                    "cc: the app table has no event {}",
                    op.kind.event()
                ));
                continue;
            };
            let st = self.app_st(op.line);
            let Some(row) = table.row(st, ev) else {
                self.app_errors.push(format!(
                    "cc: app event {} on line {:#x} in state {}: the table has no transition",
                    op.kind.event(),
                    op.line,
                    t.state_name(LOCAL, st)
                ));
                continue;
            };
            for &step in row.steps.iter() {
                if let Step::Send(SendStep { msg, data, .. }) = step {
                    let data = match (&op.kind, data) {
                        (CcOpKind::Store(v), true) => Some(boxed_line(**v)),
                        (_, true) => Some(boxed_line([0; 128])),
                        _ => None,
                    };
                    self.checker.borrow_mut().sent(op.line, msg);
                    // The request reaches the engine a cycle later.
                    self.pipe(
                        ctx,
                        now + self.period,
                        TOK_INBOX,
                        t.make(msg, op.line, data),
                    );
                }
            }
            let line = op.line;
            self.app_current = Some((op, now));
            ctx.wake_after(self.watchdog, TOK_WATCHDOG);
            self.set_app_state(ctx, line, row.next);
        }
    }
}

/// A CC row's effects (the engine decides which): sends from the CC's copy
/// (while the state it leaves has access), `fill` from the grant, `store`
/// from the app's line, `check` of the copy.
struct CcRow<'a, 'c> {
    cc: &'a mut CacheController,
    ctx: &'a mut Ctx<'c, Msg>,
    /// The message being handled.
    m: &'a CohMsg,
    /// The line's copy as the row leaves it.
    copy: Option<Box<Line>>,
    /// The CC had access before the row.
    had: bool,
    /// When the CC is done with the event.
    done: Tick,
    now: Tick,
}

impl Effects<CcDest> for CcRow<'_, '_> {
    fn send(&mut self, s: &SendStep<CcDest>) -> Result<(), String> {
        let (cc, line) = (&mut *self.cc, self.m.line);
        let data = s.data.then(|| match (&self.copy, self.had) {
            (Some(c), true) => boxed_line(**c),
            _ => boxed_line([0; 128]),
        });
        cc.checker.borrow_mut().sent(line, s.msg);
        let out = cc.tables.make(s.msg, line, data);
        match s.to {
            CcDest::Eci => {
                let request = cc.tables.msgs[s.msg as usize].class == MsgClass::Request;
                self.ctx.count(ST_REQUESTS, u64::from(request));
                // The egress ends in the send and nothing else: a
                // reserved send (`Ctx::send_at`), no event of its own.
                let at = self.done + cc.egress;
                let (bytes, vc) = EciLink::wire_of(&cc.tables.msgs[s.msg as usize]);
                let port = (line % cc.links) as PortId;
                self.ctx.send_at(at, port, Msg::Coh(out), bytes, vc);
            }
            CcDest::App => {
                let at = self.done + cc.period;
                cc.pipe(self.ctx, at, TOK_LOCAL, out);
            }
        }
        Ok(())
    }

    fn fill(&mut self) -> Result<(), String> {
        if let Some(b) = self.copy.take() {
            recycle_line(b);
        }
        self.copy = self.m.data.as_deref().map(|d| boxed_line(*d));
        Ok(())
    }

    fn store(&mut self) -> Result<(), String> {
        let (m, now) = (self.m, self.now);
        let Some(v) = m.data.as_deref() else {
            return Err(format!("cc: store on {} without data", m.name()));
        };
        self.cc.checker.borrow_mut().store(now, m.line, v);
        self.cc.store_log.push((now, m.line, *v));
        match self.copy.as_deref_mut() {
            Some(c) => *c = *v,
            None => self.copy = Some(boxed_line(*v)),
        }
        Ok(())
    }

    fn check(&mut self) -> Result<(), String> {
        let line = self.m.line;
        let v = self
            .copy
            .as_deref()
            .copied()
            .or_else(|| self.cc.received.get(&line).map(|b| **b))
            .unwrap_or([0; 128]);
        self.cc
            .checker
            .borrow_mut()
            .check_read(self.now, line, GENERATED, &v);
        Ok(())
    }
}

impl Component<Msg> for CacheController {
    fn spec(&self) -> &'static ComponentSpec {
        &CACHE_CONTROLLER
    }

    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if !self.app_ops.is_empty() {
            ctx.wake_at(0, TOK_APP);
        }
    }

    fn on_message(&mut self, _port: PortId, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = match m.into_coh_of("cc", self.tables.catalogue) {
            Ok(m) => m,
            Err(e) => return self.fail(ctx, e),
        };
        let at = ctx.now() + self.ingress + self.link.jitter_of(ctx);
        self.pipe(ctx, at, TOK_INBOX, m);
    }

    fn on_local(&mut self, token: u64, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = m.local_coh();
        self.in_pipelines -= 1;
        match token {
            TOK_INBOX => {
                self.queue.push_back(m);
                // The engine picks once every message due at this tick is
                // queued (each is an event of its own), so that it sees
                // them all, as at a clock edge.
                let now = ctx.now();
                self.wake_engine(ctx, now);
            }
            TOK_LOCAL => self.local_message(ctx, m),
            _ => unreachable!("cc: local message with token {token}"),
        }
    }

    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        match token {
            TOK_ENGINE => self.engine(ctx),
            TOK_APP => self.issue_app(ctx),
            TOK_WATCHDOG => self.watchdog_fire(ctx),
            _ => {}
        }
    }
}

impl CacheController {
    /// Stops the run with a report when the current device op has been
    /// outstanding for `watchdog_us`.
    fn watchdog_fire(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        let Some((op, t0)) = &self.app_current else {
            return;
        };
        if now - t0 >= self.watchdog {
            let mut report = vec![format!(
                "watchdog: device op {} on line {:#x} outstanding for {:.1} us",
                op.kind.event(),
                op.line,
                (now - t0) as f64 / 1e6
            )];
            // With checks off the checker has no mirror: the system adds
            // the stuck lines once the run has stopped (`system::verdict`).
            let c = self.checker.borrow();
            if c.enabled {
                report.extend(c.stuck_report(&[op.line]));
            }
            drop(c);
            self.stuck = Some(report);
            ctx.stop();
        }
    }
}
