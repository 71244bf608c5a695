//! The CPU side of CPU-homed lines: the ThunderX-1 **home** (directory and
//! CPU memory with real bytes) executing the **peer table of `eci-cc`**,
//! with a core whose loads and stores are the table's `rd`, `wr` and
//! `commit` events.
//!
//! This is the mirror of [`super::dc`]: for FPGA-homed lines the FPGA keeps
//! the directory and the CPU caches; here the CPU keeps the directory of
//! what the FPGA's cache controller ([`super::cc`]) holds.
//!
//! * **Core ops** ([`CpuOp::Load`], [`CpuOp::Store`], [`CpuOp::Wait`]) issue
//!   in program order, one at a time. A load completes when the `rd` row of
//!   the line's state sends nothing (its `check` reads memory); otherwise
//!   the row's forward goes out and the load retries after each transition
//!   of the line, so it completes once the FPGA answered. A store runs the
//!   `wr` row (which invalidates or recalls the FPGA's copy), then `commit`
//!   (its `store` writes the word into memory) once the table allows it.
//! * **ECI requests from the CC** are decided by the table; a request it
//!   stalls (the line is in a transient state) waits at the home and is
//!   retried after the line's next transition. The home answers
//!   `request_ns` after a request arrives (directory lookup and the line
//!   read from the LLC or DRAM).
//! * The core's time: `access_ns` for an access the directory lets it make
//!   at once, `forward_ns` from an access to the forward leaving,
//!   `response_ns` from the FPGA's answer to the access completing.
//!   **Watchdog**: an op outstanding for `watchdog_us` stops the run with
//!   the stuck lines.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use ccsim_kernel::prelude::*;

use super::cc::{is_cpu_homed, CPU_HOMED_BASE};
use super::cpu::{Completed, CpuOp, Done, Driver};
use super::link::EciLink;
use ccsim_coherence::check::{Checker, LineSnapshot};
use ccsim_coherence::memory::LineStore;
use ccsim_coherence::parked::Parked;
use ccsim_coherence::util::{complete, ns_to_ps};
use ccsim_coherence::{boxed_line, recycle_line, CohMsg, Line, Msg, Tables, PEER};
use ccsim_protocol::engine::{execute, Cell, CompiledTable, Effects, Row, SendStep};

/// Declaration of `cpu_home`.
pub static CPU_HOME: ComponentSpec = ComponentSpec {
    type_name: "cpu_home",
    description: "The CPU's home agent for CPU-homed lines: directory + CPU memory with real bytes, executing the eci-cc peer table; a core issuing loads/stores in order; watchdog.",
    params: &[
        ParamSpec { name: "issue_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.5), unit: "ns", range: ParamRange::at_least(0.0), from: "PIO paper §3: 2.0 GHz core, one cycle", description: "Core time between two operations." },
        ParamSpec { name: "access_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: LLC load-to-use about 20 cycles at 2 GHz", description: "A core access the directory allows at once (the line is in the LLC)." },
        ParamSpec { name: "forward_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: LLC lookup and directory check before the forward leaves", description: "From a core access to the forward it needs leaving the home." },
        ParamSpec { name: "response_ns", kind: ParamKind::Float, default: ParamDefault::Float(5.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: about 10 cycles at 2 GHz", description: "From the FPGA's answer arriving to the waiting access completing." },
        ParamSpec { name: "request_ns", kind: ParamKind::Float, default: ParamDefault::Float(30.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: ECI ingress, directory lookup and an LLC read", description: "From an ECI request arriving to the home's answer leaving (directory lookup, line read)." },
        ParamSpec { name: "watchdog_us", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "us", range: ParamRange::positive(), from: "assumed: far above any unloaded transaction", description: "An operation outstanding this long is reported as stuck." },
    ],
    ports: &[
        PortSpec { name: "eci0", description: "Even lines.", required: true },
        PortSpec { name: "eci1", description: "Odd lines.", required: true },
    ],
    stats: &[
        StatSpec { name: "latency_ps", kind: StatKind::Histogram, unit: "ps", description: "Issue to completion of each core operation." },
        StatSpec { name: "forwards", kind: StatKind::Counter, unit: "messages", description: "Forwards sent to the FPGA." },
        StatSpec { name: "stalls", kind: StatKind::Counter, unit: "requests", description: "ECI requests the table stalled." },
    ],
    check: None,
};

const ST_LAT: usize = 0;
const ST_FWD: usize = 1;
const ST_STALLS: usize = 2;

// Wake-up tokens: the low byte is the kind, the rest the completion's slot
// in `done` (done only).
const TOK_ISSUE: u64 = 1;
const TOK_DONE: u64 = 2;
const TOK_WATCHDOG: u64 = 3;
// Local-message tokens (`Ctx::schedule_local`), each item a kernel event.
// (The path from the home's send to the link is a reserved send,
// `Ctx::send_at`, not a local message.)
/// A received message delayed by link jitter.
const TOK_INBOX: u64 = 4;

/// The `cpu_home` component.
pub struct CpuHome {
    tables: Arc<Tables>,
    /// The home's table (`ir.roles[1]` of `eci-cc`).
    table: Rc<CompiledTable<()>>,
    checker: Rc<RefCell<Checker>>,
    ev_rd: usize,
    ev_wr: usize,
    ev_commit: usize,
    issue: Tick,
    access: Tick,
    forward: Tick,
    response: Tick,
    request: Tick,
    watchdog: Tick,
    links: u64,
    link: EciLink,
    state: HashMap<u64, u8>,
    /// CPU memory: the real bytes of CPU-homed lines.
    pub mem: LineStore,
    /// ECI requests the table stalls, by line, in arrival order.
    stalled: HashMap<u64, VecDeque<CohMsg>>,
    /// Received messages delayed by link jitter (carried by the kernel).
    in_inbox: usize,
    /// Completions (op, data) on their way to the core, each named by the
    /// slot in its `TOK_DONE` wake-up.
    done: Parked<Done>,
    program: Vec<CpuOp>,
    next: usize,
    /// Issue tick of each issued op.
    issued: Vec<Tick>,
    /// The op in flight: (index, issue tick, whether its `wr` ran).
    current: Option<(usize, Tick, bool)>,
    driver: Option<Driver>,
    /// Completed core ops in completion order.
    pub completed: Vec<Completed>,
    /// Core stores in the order they took effect: (tick, line, word, value).
    pub store_log: Vec<(Tick, u64, u8, u64)>,
    /// The watchdog's report, when it fired.
    pub stuck: Option<Vec<String>>,
}

impl CpuHome {
    /// From `cpu_home` parameters; `program` may hold loads, stores and
    /// waits on CPU-homed lines.
    pub fn from_params(
        p: &Params,
        tables: Arc<Tables>,
        checker: Rc<RefCell<Checker>>,
        link: &EciLink,
        program: Vec<CpuOp>,
    ) -> Result<Self, String> {
        let p = complete(&CPU_HOME, p)?;
        let t = CPU_HOME.type_name;
        if tables.mem_role != PEER {
            return Err(format!(
                "{t}: protocol {} keeps memory at its {} agent; the CPU home runs a peer home (e.g. eci-cc)",
                tables.ir.name, tables.ir.home
            ));
        }
        for (i, op) in program.iter().enumerate() {
            check_op(i, op)?;
        }
        let ev = |n: &str| {
            tables.local_event(PEER, n).ok_or_else(|| {
                format!("{t}: the peer table of {} has no event {n}", tables.ir.name)
            })
        };
        let f = |n: &str| ns_to_ps(p.float(n));
        Ok(CpuHome {
            ev_rd: ev("rd")?,
            ev_wr: ev("wr")?,
            ev_commit: ev("commit")?,
            issue: f("issue_ns"),
            access: f("access_ns"),
            forward: f("forward_ns"),
            response: f("response_ns"),
            request: f("request_ns"),
            watchdog: f("watchdog_us").saturating_mul(1000).max(1),
            links: link.links,
            link: link.clone(),
            state: HashMap::default(),
            mem: LineStore::default(),
            stalled: HashMap::default(),
            in_inbox: 0,
            done: Parked::new(),
            program,
            next: 0,
            issued: Vec::new(),
            current: None,
            driver: None,
            completed: Vec::new(),
            store_log: Vec::new(),
            stuck: None,
            table: Rc::new(tables.compile(PEER, |_| ())),
            tables,
            checker,
        })
    }

    /// Sets the program of the home's core (before the run).
    pub fn set_program(&mut self, program: Vec<CpuOp>) -> Result<(), String> {
        for (i, op) in program.iter().enumerate() {
            check_op(i, op)?;
        }
        self.program = program;
        Ok(())
    }

    /// Sets the software that extends the program as operations complete.
    pub fn set_driver(&mut self, d: Driver) {
        self.driver = Some(d);
    }

    /// Whether every core op completed.
    pub fn finished(&self) -> bool {
        self.completed.len() == self.program.len()
    }

    /// The directory state name of a line.
    pub fn line_state(&self, line: u64) -> &str {
        self.tables.state_name(PEER, self.st(line))
    }

    /// Lines with a core op or an ECI request waiting.
    pub fn outstanding_lines(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .current
            .and_then(|(i, _, _)| self.program[i].line())
            .into_iter()
            .chain(
                self.stalled
                    .iter()
                    .filter(|(_, q)| !q.is_empty())
                    .map(|(l, _)| *l),
            )
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Adds the home's lines not in their initial state to a stuck
    /// report's snapshot (report time only).
    pub(crate) fn snapshot_states(&self, s: &mut LineSnapshot) {
        for (&line, &st) in &self.state {
            s.state(line, PEER, st as usize);
        }
    }

    /// Every message inside the home, sent and not yet handled by a table:
    /// stalled requests. (Those in the pipelines are the kernel's local
    /// messages, listed by `Simulation::in_flight`.)
    pub(crate) fn queued_messages(&self) -> impl Iterator<Item = &CohMsg> + '_ {
        self.stalled.values().flatten()
    }

    /// Requests waiting at the home.
    pub fn queued(&self) -> usize {
        self.stalled.values().map(VecDeque::len).sum::<usize>() + self.in_inbox
    }

    fn st(&self, line: u64) -> usize {
        self.state
            .get(&line)
            .map(|&s| s as usize)
            .unwrap_or(self.table.initial)
    }

    fn fail(&mut self, ctx: &mut Ctx<'_, Msg>, text: String) {
        self.checker.borrow_mut().violation(ctx.now(), text);
        ctx.stop();
    }

    /// Completes op `op`, which saw `line`, at `at`.
    fn complete_at(&mut self, ctx: &mut Ctx<'_, Msg>, at: Tick, (op, line): (usize, Line)) {
        let (slot, done) = self.done.park();
        // One core; no atomics on CPU-homed lines yet.
        *done = Done {
            core: 0,
            op,
            old: None,
            line,
        };
        ctx.wake_at(at, TOK_DONE | slot << 8);
    }

    fn try_issue(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if self.current.is_some() || self.next >= self.program.len() {
            return;
        }
        let i = self.next;
        self.next += 1;
        if let Err(e) = check_op(i, &self.program[i]) {
            return self.fail(ctx, e);
        }
        let now = ctx.now();
        self.current = Some((i, now, false));
        self.issued.push(now);
        ctx.wake_after(self.watchdog, TOK_WATCHDOG);
        self.attempt(ctx, self.access);
    }

    /// Advances the current op: completes it `delay` later, or sends what
    /// its row sends and leaves it waiting for the line's next transition.
    fn attempt(&mut self, ctx: &mut Ctx<'_, Msg>, delay: Tick) {
        let Some((i, t0, wrote)) = self.current else {
            return;
        };
        let now = ctx.now();
        let table = self.table.clone();
        match self.program[i] {
            CpuOp::Wait { ps } => {
                self.current = None;
                self.complete_at(ctx, now + ps, (i, [0; 128]));
            }
            CpuOp::Load { line } => {
                let st = self.st(line);
                if let Some(row) = table.row(st, self.ev_rd) {
                    self.apply(ctx, line, row, None, None, self.forward);
                    if !row.sends() {
                        self.current = None;
                        let v = self.mem.read(line);
                        self.complete_at(ctx, now + delay, (i, v));
                    }
                }
            }
            CpuOp::Store { line, word, value } => {
                let st = self.st(line);
                if wrote {
                    if let Some(row) = table.row(st, self.ev_commit) {
                        self.apply(ctx, line, row, None, Some((word, value)), 0);
                        self.current = None;
                        let v = self.mem.read(line);
                        self.complete_at(ctx, now + delay, (i, v));
                    }
                } else if let Some(row) = table.row(st, self.ev_wr) {
                    self.apply(ctx, line, row, None, None, self.forward);
                    self.current = Some((i, t0, true));
                    if !row.sends() {
                        self.attempt(ctx, delay);
                    }
                }
            }
            other => {
                let e = format!("cpu_home: op {i} ({other:?}) is not a load, store or wait");
                self.fail(ctx, e);
            }
        }
    }

    /// Applies a transition of the home, as the checker's `apply` does:
    /// sent data comes from memory; `write_mem` takes the received line;
    /// `store` writes the core's word; `check` reads memory.
    fn apply(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        line: u64,
        row: &Row<()>,
        input: Option<&Line>,
        store: Option<(u8, u64)>,
        delay: Tick,
    ) {
        let now = ctx.now();
        let mut fx = HomeRow {
            home: self,
            ctx,
            line,
            input,
            store,
            delay,
            now,
        };
        if let Err(e) = execute(row, &mut fx) {
            return self.fail(ctx, e);
        }
        let next = row.next;
        if row.next_initial {
            self.state.remove(&line);
        } else {
            self.state.insert(line, next as u8);
        }
        let mut c = self.checker.borrow_mut();
        let mem = c.enabled.then(|| self.mem.read(line));
        c.transition(now, line, PEER, next, None, mem.as_ref());
        if !c.violations.is_empty() {
            ctx.stop();
        }
    }

    /// An ECI message from the CC: run its row, or keep a stalled request.
    fn receive(&mut self, ctx: &mut Ctx<'_, Msg>, m: CohMsg) -> bool {
        let table = self.table.clone();
        let line = m.line;
        let st = self.st(line);
        let Some(ev) = table.msg_event[m.msg as usize] else {
            self.fail(
                ctx,
                format!("the cpu home table has no event for {}", m.name()),
            );
            return false;
        };
        match table.cell(st, ev).1 {
            Cell::Go(row) => {
                self.checker.borrow_mut().handled(line, m.msg);
                self.apply(ctx, line, row, m.data.as_deref(), None, self.request);
                if let Some(b) = m.data {
                    recycle_line(b);
                }
                true
            }
            Cell::Stall => {
                ctx.count(ST_STALLS, 1);
                self.stalled.entry(line).or_default().push_back(m);
                false
            }
            Cell::Guarded(_) => unreachable!("Tables::new rejects guards"),
            Cell::Unspecified => {
                let e = format!(
                    "unspecified reception: {} for line {line:#x} arrived at the cpu home in state {}: the table has no transition or stall for it",
                    m.name(),
                    self.tables.state_name(PEER, st)
                );
                self.fail(ctx, e);
                false
            }
        }
    }

    /// After a transition of `line`: the waiting core op and stalled
    /// requests retry, the core first (it started the transaction).
    fn settle(&mut self, ctx: &mut Ctx<'_, Msg>, line: u64) {
        loop {
            let before = self.st(line);
            if self
                .current
                .and_then(|(i, _, _)| self.program[i].line())
                .is_some_and(|l| l == line)
            {
                self.attempt(ctx, self.response);
            }
            let Some(mut q) = self.stalled.remove(&line) else {
                return;
            };
            let mut progressed = false;
            let mut rest = VecDeque::new();
            while let Some(m) = q.pop_front() {
                if !progressed {
                    let st = self.st(line);
                    let ev = self.table.msg_event[m.msg as usize].expect("stalled once");
                    if self.table.row(st, ev).is_some() {
                        progressed = self.receive(ctx, m);
                        continue;
                    }
                }
                rest.push_back(m);
            }
            if !rest.is_empty() {
                self.stalled.entry(line).or_default().extend(rest);
            }
            if !progressed && self.st(line) == before {
                return;
            }
        }
    }

    fn watchdog_fire(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        let Some((i, t0, _)) = self.current else {
            return;
        };
        if now - t0 >= self.watchdog {
            let mut report = vec![format!(
                "watchdog: cpu_home op {i} ({:?}) outstanding for {:.1} us",
                self.program[i],
                (now - t0) as f64 / 1e6
            )];
            // With checks off the checker has no mirror: the system adds
            // the stuck lines once the run has stopped (`system::verdict`).
            let c = self.checker.borrow();
            if c.enabled {
                report.extend(c.stuck_report(&self.outstanding_lines()));
            }
            drop(c);
            self.stuck = Some(report);
            ctx.stop();
        } else {
            ctx.wake_at(t0 + self.watchdog, TOK_WATCHDOG);
        }
    }
}

/// The home's row effects (the engine decides which): data from memory,
/// `write_mem` from the received line, `store` of the core's word,
/// `check` of memory.
struct HomeRow<'a, 'c> {
    home: &'a mut CpuHome,
    ctx: &'a mut Ctx<'c, Msg>,
    line: u64,
    /// The received line, if the row handles a data message.
    input: Option<&'a Line>,
    /// The core's store (word, value) for `store`.
    store: Option<(u8, u64)>,
    /// When the row's messages leave.
    delay: Tick,
    now: Tick,
}

impl Effects<()> for HomeRow<'_, '_> {
    fn send(&mut self, s: &SendStep<()>) -> Result<(), String> {
        let (h, line) = (&mut *self.home, self.line);
        let data = s.data.then(|| boxed_line(h.mem.read(line)));
        if h.tables.msgs[s.msg as usize].class == ccsim_protocol::ir::MsgClass::Forward {
            self.ctx.count(ST_FWD, 1);
        }
        h.checker.borrow_mut().sent(line, s.msg);
        let out = h.tables.make(s.msg, line, data);
        // The path to the link ends in the send and nothing else: a
        // reserved send (`Ctx::send_at`), no event of its own.
        let (bytes, vc) = EciLink::wire_of(&h.tables.msgs[s.msg as usize]);
        let port = (line % h.links) as PortId;
        self.ctx
            .send_at(self.now + self.delay, port, Msg::Coh(out), bytes, vc);
        Ok(())
    }

    fn write_mem(&mut self) -> Result<(), String> {
        match self.input {
            Some(v) => {
                self.home.mem.write(self.line, v);
                Ok(())
            }
            None => Err("cpu_home: write_mem without data".into()),
        }
    }

    fn store(&mut self) -> Result<(), String> {
        let (h, line) = (&mut *self.home, self.line);
        let mut v = h.mem.read(line);
        if let Some(d) = self.input {
            v = *d;
        } else if let Some((w, val)) = self.store {
            let o = w as usize * 8;
            v[o..o + 8].copy_from_slice(&val.to_le_bytes());
            h.store_log.push((self.now, line, w, val));
        }
        h.mem.write(line, &v);
        h.checker.borrow_mut().store(self.now, line, &v);
        Ok(())
    }

    fn check(&mut self) -> Result<(), String> {
        let v = self.home.mem.read(self.line);
        self.home
            .checker
            .borrow_mut()
            .check_read(self.now, self.line, PEER, &v);
        Ok(())
    }
}

/// Rejects ops the home cannot run.
fn check_op(i: usize, op: &CpuOp) -> Result<(), String> {
    match op {
        CpuOp::Store { word, .. } if *word >= 16 => Err(format!(
            "program[{i}]: store word {word} is outside the 16-word line"
        )),
        CpuOp::Load { line } | CpuOp::Store { line, .. } if !is_cpu_homed(*line) => Err(format!(
            "program[{i}]: line {line:#x} is FPGA-homed; the cpu home serves CPU-homed lines (>= {CPU_HOMED_BASE:#x})"
        )),
        CpuOp::Load { .. } | CpuOp::Store { .. } | CpuOp::Wait { .. } => Ok(()),
        other => Err(format!(
            "program[{i}]: {other:?}: the cpu home's core runs loads, stores and waits"
        )),
    }
}

impl Component<Msg> for CpuHome {
    fn spec(&self) -> &'static ComponentSpec {
        &CPU_HOME
    }

    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if !self.program.is_empty() {
            ctx.wake_at(0, TOK_ISSUE);
        }
    }

    fn on_message(&mut self, _port: PortId, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = match m.into_coh_of("cpu home", self.tables.catalogue) {
            Ok(m) => m,
            Err(e) => return self.fail(ctx, e),
        };
        let at = ctx.now() + self.link.jitter_of(ctx);
        self.in_inbox += 1;
        ctx.schedule_local(at, TOK_INBOX, Msg::Coh(m));
    }

    fn on_local(&mut self, token: u64, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let m = m.local_coh();
        match token {
            TOK_INBOX => {
                self.in_inbox -= 1;
                let line = m.line;
                if self.receive(ctx, m) {
                    self.settle(ctx, line);
                }
            }
            _ => unreachable!("cpu_home: local message with token {token}"),
        }
    }

    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        match token & 0xFF {
            TOK_ISSUE => self.try_issue(ctx),
            TOK_DONE => {
                let d = self.done.release(token >> 8);
                let issued = self.issued[d.op];
                ctx.record(ST_LAT, now - issued);
                let c = Completed {
                    core: d.core,
                    op: d.op,
                    issued,
                    latency_ps: now - issued,
                    data: d.line,
                    old: d.old,
                };
                if let Some(d) = self.driver.as_mut() {
                    self.program.extend(d(&c));
                }
                self.completed.push(c);
                ctx.wake_after(self.issue.max(1), TOK_ISSUE);
            }
            TOK_WATCHDOG => self.watchdog_fire(ctx),
            _ => {}
        }
    }
}
