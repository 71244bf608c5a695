//! The CPU side: a core issuing loads and stores to an LLC that is the ECI
//! remote agent and **executes the peer table** (`ir.peer`) with real data.
//!
//! * The core issues its program in order with at most `mshrs` operations
//!   outstanding (1 serializes accesses, as Table 2 of CCKit measures).
//! * A load hits when the table's `load` row in the line's state sends
//!   nothing (its `check` action reads the copy); otherwise the row's
//!   request goes out (after `miss_ns`) and the load waits until the line
//!   reaches a state where it hits. A store needs a state with write access
//!   and a `store` row; otherwise it issues the `getx` row. An operation on a
//!   line in a transient state waits (the MSHR merges it).
//! * Forwards are answered by the table (`snoop_ns` later); data comes from
//!   the LLC's copy.
//! * **Capacity.** Line state and data live in a sparse map (memory grows
//!   with the lines touched, never with the address space). With
//!   `llc_lines > 0` the LLC is set-associative (`llc_ways` ways,
//!   `set = line % sets`, LRU) and evicts by the table's `evict_dirty`,
//!   `evict_clean` or `drop` row. The TADs and the ThunderX-1 XOR address
//!   scrambler are not modelled yet.
//! * **Watchdog.** An operation outstanding for longer than `watchdog_us`
//!   stops the run with a report of every stuck line.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use ccsim_kernel::prelude::*;
use ccsim_protocol::ir::{Access, Action, IndexedOutcome};

use super::check::Checker;
use super::dc::Timed;
use super::link::EciLink;
use super::{CohMsg, Line, Tables, PEER};
use crate::util::{complete, non_negative, non_negative_f, ns_to_ps, positive};

/// Declaration of `coherent_cpu`.
pub static COHERENT_CPU: ComponentSpec = ComponentSpec {
    type_name: "coherent_cpu",
    description: "A core and its LLC acting as the ECI remote agent: executes the peer table of the protocol with real line data; MSHR limit; watchdog.",
    params: &[
        ParamSpec { name: "mshrs", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "ops", description: "Operations outstanding at once." },
        ParamSpec { name: "issue_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.5), unit: "ns", description: "Core time between issuing two operations." },
        ParamSpec { name: "hit_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", description: "Load-to-use latency of an LLC hit." },
        ParamSpec { name: "miss_ns", kind: ParamKind::Float, default: ParamDefault::Float(10.0), unit: "ns", description: "From the core's access to the request leaving the LLC on a miss (L1 and LLC lookups)." },
        ParamSpec { name: "fill_ns", kind: ParamKind::Float, default: ParamDefault::Float(5.0), unit: "ns", description: "From the grant arriving to the data reaching the core." },
        ParamSpec { name: "snoop_ns", kind: ParamKind::Float, default: ParamDefault::Float(5.0), unit: "ns", description: "From a forward arriving to its answer leaving." },
        ParamSpec { name: "llc_lines", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "lines", description: "Valid lines the LLC holds before evicting (0: unlimited)." },
        ParamSpec { name: "llc_ways", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "ways", description: "Associativity: llc_lines / llc_ways sets, set = line % sets, LRU within a set (0: fully associative)." },
        ParamSpec { name: "watchdog_us", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "us", description: "An operation outstanding this long is reported as stuck." },
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
    ],
};

const ST_LAT: usize = 0;
const ST_MISS: usize = 1;
const ST_HIT: usize = 2;
const ST_EVICT: usize = 3;

const TOK_OUTBOX: u64 = 0;
const TOK_ISSUE: u64 = 1;
const TOK_DONE: u64 = 2;
const TOK_WATCHDOG: u64 = 3;
const TOK_INBOX: u64 = 4;

/// The local (non-message) events of the peer table the LLC raises, resolved
/// to table indices once so a core operation costs no name lookup.
#[derive(Clone, Copy, Debug)]
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

/// A core operation.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuOp {
    /// Load a line.
    Load {
        /// Line index.
        line: u64,
    },
    /// Store a 64-bit word into a line.
    Store {
        /// Line index.
        line: u64,
        /// Word index (0..16).
        word: u8,
        /// Value.
        value: u64,
    },
    /// Cache maintenance: write back (if dirty) and invalidate the line
    /// (the table's `evict_dirty`, `evict_clean` or `drop` row; posted).
    Evict {
        /// Line index.
        line: u64,
    },
    /// Voluntary downgrade to Shared (the table's `downgrade` row; posted).
    Downgrade {
        /// Line index.
        line: u64,
    },
    /// Prefetch for writing (`PRFM PSTL1KEEP`): obtain the line with write
    /// access without storing (the table's `getx` row); completes when the
    /// line is held writable.
    PrefetchExclusive {
        /// Line index.
        line: u64,
    },
    /// Core work that touches no line: completes `ps` after issue (holds
    /// its MSHR slot, so later ops issue after it when `mshrs` is 1).
    Wait {
        /// Duration (ps).
        ps: Tick,
    },
}

impl CpuOp {
    /// The op's line (`None` for [`CpuOp::Wait`]).
    pub fn line(&self) -> Option<u64> {
        match self {
            CpuOp::Load { line }
            | CpuOp::Store { line, .. }
            | CpuOp::Evict { line }
            | CpuOp::Downgrade { line }
            | CpuOp::PrefetchExclusive { line } => Some(*line),
            CpuOp::Wait { .. } => None,
        }
    }
}

/// A completed operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Completed {
    /// Index in the program.
    pub op: usize,
    /// Issue tick.
    pub issued: Tick,
    /// Issue to completion.
    pub latency_ps: Tick,
    /// The line's bytes the op saw (after a store: with it).
    pub data: Line,
}

#[derive(Debug, Clone)]
struct LlcLine {
    state: u8,
    data: Option<Box<Line>>,
}

/// The `coherent_cpu` component.
pub struct CoherentCpu {
    /// The shared tables behind an `Rc`, so that a handler holding them
    /// while it mutates `self` clones a plain counter, not an atomic one.
    // The second pointer is the point: cloning an `Rc` is a plain add.
    #[allow(clippy::redundant_allocation)]
    tables: Rc<Arc<Tables>>,
    checker: Rc<RefCell<Checker>>,
    /// Peer-table event index of each [`LocalEv`] (`None`: no such event).
    local_ids: [Option<usize>; 7],
    issue: Tick,
    hit: Tick,
    miss: Tick,
    fill: Tick,
    snoop: Tick,
    mshrs: usize,
    capacity: usize,
    ways: usize,
    sets: u64,
    watchdog: Tick,
    links: u64,
    link: EciLink,
    inbox: Timed<CohMsg>,
    program: Vec<CpuOp>,
    next: usize,
    /// Issue tick of each outstanding op by program index; hashed (touched
    /// on every issue and completion), and never iterated in hash order
    /// where the order could show (see `watchdog_fire`, `outstanding_lines`).
    outstanding: HashMap<usize, Tick>,
    /// Ops waiting for each line; hashed, never iterated.
    waiting: HashMap<u64, Vec<usize>>,
    llc: HashMap<u64, LlcLine>,
    /// Valid lines per set, least recently used first.
    lru: HashMap<u64, VecDeque<u64>>,
    outbox: Timed<CohMsg>,
    done: Timed<(usize, Line)>,
    /// Completed operations in completion order.
    pub completed: Vec<Completed>,
    /// The watchdog's report, when it fired.
    pub stuck: Option<Vec<String>>,
    /// Program stores in the order they took effect: (tick, line, word, value).
    pub store_log: Vec<(Tick, u64, u8, u64)>,
    driver: Option<Driver>,
}

/// Software on the core that reacts to completed operations (a spin loop,
/// an invocation client): called with each completed op; the ops it returns
/// are appended to the program.
pub type Driver = Box<dyn FnMut(&Completed) -> Vec<CpuOp>>;

impl CoherentCpu {
    /// From `coherent_cpu` parameters.
    pub fn from_params(
        p: &Params,
        tables: Arc<Tables>,
        checker: Rc<RefCell<Checker>>,
        link: &EciLink,
        program: Vec<CpuOp>,
    ) -> Result<Self, String> {
        let p = complete(&COHERENT_CPU, p)?;
        let t = COHERENT_CPU.type_name;
        let f = |n: &str| non_negative_f(&p, t, n).map(ns_to_ps);
        for (i, op) in program.iter().enumerate() {
            if let CpuOp::Store { word, .. } = op {
                if *word >= 16 {
                    return Err(format!(
                        "program[{i}]: store word {word} is outside the 16-word line"
                    ));
                }
            }
        }
        let capacity = non_negative(&p, t, "llc_lines")? as usize;
        let ways = match non_negative(&p, t, "llc_ways")? as usize {
            0 => capacity,
            w => w,
        };
        if capacity > 0 && capacity % ways != 0 {
            return Err(format!(
                "{t}: llc_lines ({capacity}) must be a multiple of llc_ways ({ways})"
            ));
        }
        let sets = if capacity == 0 {
            1
        } else {
            (capacity / ways) as u64
        };
        Ok(CoherentCpu {
            issue: f("issue_ns")?,
            hit: f("hit_ns")?,
            miss: f("miss_ns")?,
            fill: f("fill_ns")?,
            snoop: f("snoop_ns")?,
            mshrs: positive(&p, t, "mshrs")? as usize,
            capacity,
            ways,
            sets,
            watchdog: f("watchdog_us")?.saturating_mul(1000).max(1),
            links: link.links,
            link: link.clone(),
            inbox: Timed::new(TOK_INBOX),
            program,
            next: 0,
            outstanding: HashMap::default(),
            waiting: HashMap::default(),
            llc: HashMap::default(),
            lru: HashMap::default(),
            outbox: Timed::new(TOK_OUTBOX),
            done: Timed::new(TOK_DONE),
            completed: Vec::new(),
            stuck: None,
            store_log: Vec::new(),
            driver: None,
            local_ids: LOCAL_EV_NAMES.map(|n| tables.local_event(PEER, n)),
            tables: Rc::new(tables),
            checker,
        })
    }

    /// Sets the software that extends the program as operations complete.
    pub fn set_driver(&mut self, d: Driver) {
        self.driver = Some(d);
    }

    /// Whether every operation completed.
    pub fn finished(&self) -> bool {
        self.completed.len() == self.program.len()
    }

    /// Lines with operations outstanding.
    pub fn outstanding_lines(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .outstanding
            .keys()
            .filter_map(|&i| self.program[i].line())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The LLC's state name and copy of a line.
    pub fn line(&self, line: u64) -> (&str, Option<Line>) {
        let s = self.st(line);
        (
            self.tables.state_name(PEER, s),
            self.llc.get(&line).and_then(|l| l.data.as_deref().copied()),
        )
    }

    fn st(&self, line: u64) -> usize {
        self.llc
            .get(&line)
            .map(|l| l.state as usize)
            .unwrap_or(self.tables.initial[PEER])
    }

    fn fail(&mut self, ctx: &mut Ctx<'_, CohMsg>, text: String) {
        self.checker.borrow_mut().violation(ctx.now(), text);
        ctx.stop();
    }

    fn try_issue(&mut self, ctx: &mut Ctx<'_, CohMsg>) {
        let now = ctx.now();
        if self.next < self.program.len() && self.outstanding.len() < self.mshrs {
            let i = self.next;
            self.next += 1;
            if self.outstanding.is_empty() {
                ctx.wake_after(self.watchdog, TOK_WATCHDOG);
            }
            self.outstanding.insert(i, now);
            self.attempt(ctx, i, 0);
            if self.next < self.program.len() && self.outstanding.len() < self.mshrs {
                ctx.wake_after(self.issue.max(1), TOK_ISSUE);
            }
        }
    }

    /// Runs the table row of local event `ev` on `line`; returns whether it
    /// was a `Go` row and whether it sent something.
    fn local(
        &mut self,
        ctx: &mut Ctx<'_, CohMsg>,
        line: u64,
        ev: LocalEv,
        store: Option<(u8, u64)>,
        delay: Tick,
    ) -> Option<bool> {
        let tables = self.tables.clone();
        let e = self.local_ids[ev as usize]?;
        let st = self.st(line);
        match tables.idx[PEER].lookup(st, e) {
            Some(IndexedOutcome::Go { next, actions }) => {
                let sends = actions.iter().any(|a| matches!(a, Action::Send(_)));
                self.apply(ctx, line, st, *next, actions, None, store, delay);
                Some(sends)
            }
            _ => None,
        }
    }

    /// Tries op `i`: completes it (`extra` later than an ordinary hit),
    /// sends its request, or leaves it waiting.
    fn attempt(&mut self, ctx: &mut Ctx<'_, CohMsg>, i: usize, extra: Tick) {
        let now = ctx.now();
        let op = self.program[i].clone();
        let Some(line) = op.line() else {
            let CpuOp::Wait { ps } = op else {
                unreachable!("only waits have no line")
            };
            self.done.push(ctx, now + ps, (i, [0; 128]));
            return;
        };
        let st = self.st(line);
        let acc = self.tables.access[PEER][st];
        let stable = self.tables.stable[PEER][st];
        let hit = match op {
            CpuOp::Wait { .. } => unreachable!("handled above"),
            CpuOp::PrefetchExclusive { .. } => {
                acc == Access::Write || {
                    if self
                        .local(ctx, line, LocalEv::Getx, None, self.miss)
                        .is_some()
                    {
                        ctx.count(ST_MISS, 1);
                    }
                    false
                }
            }
            CpuOp::Evict { .. } => {
                stable
                    && (acc == Access::None
                        || EVICTIONS
                            .iter()
                            .any(|&ev| self.local(ctx, line, ev, None, 0).is_some()))
            }
            CpuOp::Downgrade { .. } => {
                stable && {
                    // Nothing to do when the line is not held writable.
                    let _ = self.local(ctx, line, LocalEv::Downgrade, None, 0);
                    true
                }
            }
            CpuOp::Load { .. } => match self.local(ctx, line, LocalEv::Load, None, self.miss) {
                Some(false) => true,
                Some(true) => {
                    ctx.count(ST_MISS, 1);
                    false
                }
                None => false,
            },
            CpuOp::Store { word, value, .. } => {
                if acc == Access::Write
                    && self
                        .local(ctx, line, LocalEv::Store, Some((word, value)), 0)
                        .is_some()
                {
                    true
                } else {
                    if self
                        .local(ctx, line, LocalEv::Getx, None, self.miss)
                        .is_some()
                    {
                        ctx.count(ST_MISS, 1);
                    }
                    false
                }
            }
        };
        if hit {
            ctx.count(ST_HIT, 1);
            self.touch(line);
            let data = self.line(line).1.unwrap_or([0; 128]);
            self.done.push(ctx, now + extra + self.hit, (i, data));
        } else {
            let w = self.waiting.entry(line).or_default();
            if !w.contains(&i) {
                w.push(i);
            }
        }
    }

    /// Applies a transition of the LLC, as the checker's `apply` does.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        ctx: &mut Ctx<'_, CohMsg>,
        line: u64,
        st: usize,
        next: usize,
        actions: &[Action],
        input: Option<&Line>,
        store: Option<(u8, u64)>,
        delay: Tick,
    ) {
        let now = ctx.now();
        let tables = self.tables.clone();
        let had = tables.access[PEER][st] != Access::None;
        // The copy is taken out of the LLC entry (not cloned) and put back
        // below, so a transition costs no allocation unless a line arrives.
        let mut copy: Option<Box<Line>> = self.llc.get_mut(&line).and_then(|l| l.data.take());
        for a in actions {
            match a {
                Action::Send(x) => {
                    let mi = tables.msg(x).expect("validated");
                    let meta = &tables.msgs[mi as usize];
                    let data = if meta.data {
                        Some(copy.clone().unwrap_or_else(|| Box::new([0; 128])))
                    } else {
                        None
                    };
                    self.checker.borrow_mut().sent(line, mi);
                    self.outbox
                        .push(ctx, now + delay, tables.make(mi, line, data));
                }
                Action::Fill => {
                    copy = input.map(|d| match copy.take() {
                        Some(mut b) => {
                            *b = *d;
                            b
                        }
                        None => Box::new(*d),
                    })
                }
                Action::Store => {
                    let mut v = copy.as_deref().copied().unwrap_or([0; 128]);
                    if let Some(d) = input {
                        v = *d;
                    } else if let Some((w, val)) = store {
                        let o = w as usize * 8;
                        v[o..o + 8].copy_from_slice(&val.to_le_bytes());
                        self.store_log.push((now, line, w, val));
                    }
                    self.checker.borrow_mut().store(line, &v);
                    match copy.as_deref_mut() {
                        Some(c) => *c = v,
                        None => copy = Some(Box::new(v)),
                    }
                }
                Action::Check => {
                    let v = copy.as_deref().copied().unwrap_or([0; 128]);
                    self.checker.borrow_mut().check_read(now, line, PEER, &v);
                }
                Action::WriteMem => {
                    if let Some(l) = self.llc.get_mut(&line) {
                        l.data = copy;
                    }
                    return self.fail(
                        ctx,
                        "cpu: the table writes memory the LLC does not have".into(),
                    );
                }
            }
        }
        let has = tables.access[PEER][next] != Access::None;
        if !has {
            copy = None;
        }
        if next == tables.initial[PEER] && copy.is_none() {
            self.llc.remove(&line);
        } else {
            self.llc.insert(
                line,
                LlcLine {
                    state: next as u8,
                    data: copy,
                },
            );
        }
        {
            let mut c = self.checker.borrow_mut();
            let cp = self.llc.get(&line).and_then(|l| l.data.as_deref());
            c.transition(now, line, PEER, next, cp, None);
            if !c.violations.is_empty() {
                ctx.stop();
            }
        }
        match (had, has) {
            (false, true) => {
                self.lru
                    .entry(line % self.sets)
                    .or_default()
                    .push_back(line);
                self.enforce_capacity(ctx, line % self.sets);
            }
            (true, false) => {
                if let Some(q) = self.lru.get_mut(&(line % self.sets)) {
                    q.retain(|&l| l != line);
                }
            }
            _ => {}
        }
    }

    /// Marks `line` most recently used.
    fn touch(&mut self, line: u64) {
        if let Some(q) = self.lru.get_mut(&(line % self.sets)) {
            if let Some(pos) = q.iter().position(|&l| l == line) {
                q.remove(pos);
                q.push_back(line);
            }
        }
    }

    /// Evicts least recently used stable lines of `set` (by the table's
    /// `evict_dirty`, `evict_clean` or `drop` row) while it holds more than
    /// `ways` valid lines. Lines with open work stay; the set may overflow
    /// until they settle (as a victim buffer would).
    fn enforce_capacity(&mut self, ctx: &mut Ctx<'_, CohMsg>, set: u64) {
        if self.capacity == 0 {
            return;
        }
        loop {
            let Some(q) = self.lru.get(&set) else {
                return;
            };
            if q.len() <= self.ways {
                return;
            }
            let victim = q
                .iter()
                .copied()
                .find(|&l| self.tables.stable[PEER][self.st(l)] && !self.waiting.contains_key(&l));
            let Some(victim) = victim else {
                return;
            };
            let evicted = EVICTIONS
                .iter()
                .any(|&ev| self.local(ctx, victim, ev, None, 0).is_some());
            if !evicted {
                return;
            }
            ctx.count(ST_EVICT, 1);
        }
    }

    fn receive(&mut self, ctx: &mut Ctx<'_, CohMsg>, m: CohMsg) {
        let tables = self.tables.clone();
        let line = m.line;
        let st = self.st(line);
        let Some(ev) = tables.msg_event[PEER][m.msg as usize] else {
            return self.fail(ctx, format!("the cpu table has no event for {}", m.name));
        };
        match tables.idx[PEER].lookup(st, ev) {
            Some(IndexedOutcome::Go { next, actions }) => {
                self.checker.borrow_mut().handled(line, m.msg);
                self.apply(
                    ctx,
                    line,
                    st,
                    *next,
                    actions,
                    m.data.as_deref(),
                    None,
                    self.snoop,
                );
                // Waiting ops retry at once, before any later forward can take
                // the line away again (forward progress, as an LLC holds a
                // refilled line for the miss that asked for it); the refill
                // time is added to their completion.
                if let Some(ops) = self.waiting.remove(&line) {
                    for i in ops {
                        self.attempt(ctx, i, self.fill);
                    }
                }
            }
            other => {
                let what = if other.is_none() {
                    "has no transition"
                } else {
                    "stalls, but the cpu cannot stall"
                };
                let e = format!(
                    "unspecified reception: {} for line {line:#x} arrived at the cpu in state {}: the table {what}",
                    m.name,
                    tables.state_name(PEER, st)
                );
                self.fail(ctx, e);
            }
        }
    }

    fn watchdog_fire(&mut self, ctx: &mut Ctx<'_, CohMsg>) {
        let now = ctx.now();
        // The oldest op; among ops issued at the same tick, the first issued.
        let Some((&i, &t0)) = self.outstanding.iter().min_by_key(|(&i, &t)| (t, i)) else {
            return;
        };
        if now - t0 >= self.watchdog {
            let mut report = vec![format!(
                "watchdog: op {i} ({:?}) outstanding for {:.1} us",
                self.program[i],
                (now - t0) as f64 / 1e6
            )];
            report.extend(
                self.checker
                    .borrow()
                    .stuck_report(&self.outstanding_lines()),
            );
            self.stuck = Some(report);
            ctx.stop();
        } else {
            ctx.wake_at(t0 + self.watchdog, TOK_WATCHDOG);
        }
    }
}

impl Component<CohMsg> for CoherentCpu {
    fn spec(&self) -> &'static ComponentSpec {
        &COHERENT_CPU
    }

    fn init(&mut self, ctx: &mut Ctx<'_, CohMsg>) {
        if !self.program.is_empty() {
            ctx.wake_at(0, TOK_ISSUE);
        }
    }

    fn on_message(&mut self, _port: PortId, m: CohMsg, ctx: &mut Ctx<'_, CohMsg>) {
        match self.link.jitter_of(ctx) {
            0 => self.receive(ctx, m),
            j => {
                let at = ctx.now() + j;
                self.inbox.push(ctx, at, m);
            }
        }
    }

    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, CohMsg>) {
        let now = ctx.now();
        match token {
            TOK_OUTBOX => {
                while let Some(m) = self.outbox.pop_due(now) {
                    let meta = &self.tables.msgs[m.msg as usize];
                    let (bytes, vc) = (EciLink::bytes(meta.data), meta.vc);
                    let port = (m.line % self.links) as PortId;
                    ctx.send(port, m, bytes, vc);
                }
            }
            TOK_ISSUE => self.try_issue(ctx),
            TOK_INBOX => {
                while let Some(m) = self.inbox.pop_due(now) {
                    self.receive(ctx, m);
                }
            }
            TOK_DONE => {
                while let Some((i, data)) = self.done.pop_due(now) {
                    if let Some(t0) = self.outstanding.remove(&i) {
                        ctx.record(ST_LAT, now - t0);
                        let c = Completed {
                            op: i,
                            issued: t0,
                            latency_ps: now - t0,
                            data,
                        };
                        if let Some(d) = self.driver.as_mut() {
                            self.program.extend(d(&c));
                        }
                        self.completed.push(c);
                    }
                    self.try_issue(ctx);
                }
            }
            TOK_WATCHDOG => self.watchdog_fire(ctx),
            _ => {}
        }
    }
}
