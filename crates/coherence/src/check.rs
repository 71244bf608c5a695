//! Online checks: SWMR and data-value on every transition, message tracking
//! and the stuck-transaction report of the watchdog.
//!
//! Both agents report every transition of a line (new state, and for the
//! cache its copy, for the home its memory) to one shared [`Checker`]. The
//! checker keeps a per-line mirror of the three agents' states and a ghost
//! "latest write" and asserts the invariants of
//! `ccsim_protocol::invariants`, the functions the exhaustive checker
//! calls:
//!
//! * **SWMR**: at most one agent with write access, and none with read
//!   access beside it;
//! * **data-value**: every agent with access holds the latest write; if no
//!   agent holds write access and no write-back is in flight, memory holds
//!   it; every `check` action (a program read) reads it, and every
//!   `check_window` action (data used once, gem5's `IS_I`) reads a value
//!   that was the latest write at some moment of its read window (see
//!   [`Checker::open_window`]).
//!
//! With checks on, messages are also tracked from send to handling (a
//! message waiting or stalled in a DCU queue is still pending), so
//! [`Checker::stuck_report`] can list, for every line with open work, its
//! states and pending messages.
//!
//! With checks off the checker keeps nothing per line: every row, send and
//! receipt would cost a hash-map update per transaction only for a report
//! that a healthy run never prints. The same report is built on demand
//! instead ([`Checker::stuck_report_from`]) from a [`LineSnapshot`] the
//! system fills once the run has stopped: each agent's lines not in their
//! initial state, the messages the kernel still holds
//! (`Simulation::in_flight`) and those queued inside the components.

use std::collections::BTreeMap;
use std::sync::Arc;

use ccsim_kernel::prelude::*;
use ccsim_protocol::invariants::{self, AgentLine};
use rustc_hash::FxHashMap as HashMap;

use crate::{initial_line, Catalogue, CohMsg, Line, LineText, Tables, GENERATED, LOCAL, PEER};

/// A line's in-flight messages as (message, count). Inline up to
/// [`PendingSet::INLINE`] distinct messages (a line rarely has more than
/// two in flight), so tracking a message never allocates; small, because
/// every line touched has one.
#[derive(Debug, Clone, Default)]
struct PendingSet {
    inline: [(u16, u32); PendingSet::INLINE],
    len: u8,
    // Boxed: one pointer instead of a vector's three in every line's view.
    #[allow(clippy::box_collection)]
    spill: Option<Box<Vec<(u16, u32)>>>,
}

impl PendingSet {
    const INLINE: usize = 2;

    fn add(&mut self, msg: u16) {
        let len = self.len as usize;
        if let Some(e) = self.inline[..len].iter_mut().find(|e| e.0 == msg) {
            e.1 += 1;
        } else if len < Self::INLINE {
            self.inline[len] = (msg, 1);
            self.len += 1;
        } else {
            let spill = self.spill.get_or_insert_with(Box::default);
            match spill.iter_mut().find(|e| e.0 == msg) {
                Some(e) => e.1 += 1,
                None => spill.push((msg, 1)),
            }
        }
    }

    /// Takes one `msg` off; nothing if none is pending.
    fn take(&mut self, msg: u16) {
        let len = self.len as usize;
        if let Some(i) = self.inline[..len].iter().position(|e| e.0 == msg) {
            self.inline[i].1 -= 1;
            if self.inline[i].1 == 0 {
                let last = len - 1;
                self.inline.swap(i, last);
                match self.spill.as_mut().and_then(|s| s.pop()) {
                    Some(moved) => self.inline[last] = moved,
                    None => self.len -= 1,
                }
            }
        } else if let Some(spill) = self.spill.as_mut() {
            if let Some(i) = spill.iter().position(|e| e.0 == msg) {
                spill[i].1 -= 1;
                if spill[i].1 == 0 {
                    spill.swap_remove(i);
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn iter(&self) -> impl Iterator<Item = (u16, u32)> + '_ {
        let spill = self.spill.as_deref().map_or(&[][..], |s| &s[..]);
        self.inline[..self.len as usize]
            .iter()
            .chain(spill)
            .copied()
    }
}

/// What the checker knows of a line (kept with checks on only): the
/// states and in-flight messages, and once a row ran on the line the
/// values the checks compare.
#[derive(Debug, Clone)]
struct LineView {
    /// The three agents' states (state indices; tables have far fewer than
    /// 65,536 states).
    state: [u16; 3],
    /// Write-backs of the line in flight.
    writebacks: u32,
    /// Messages of the line sent and not yet handled.
    pending: PendingSet,
    /// Set by the first row on the line.
    values: Option<Box<Values>>,
}

/// The line values the online checks compare.
#[derive(Debug, Clone)]
struct Values {
    copy: Option<Line>,
    mem: Option<Line>,
    /// The line's initial value, computed once when checks first look at
    /// the line: every check of a never-written line compares against it,
    /// and computing it costs more than the rest of a check.
    initial: Line,
}

impl LineView {
    /// Records `role`'s new state and the values the checks compare (the
    /// cache's copy if `role` is `cache_role`, the home's memory).
    fn set_state(
        &mut self,
        line: u64,
        role: usize,
        state: usize,
        (cache_role, copy, mem): (usize, Option<&Line>, Option<&Line>),
    ) {
        self.state[role] = state as u16;
        // One box per line, overwritten in place: no allocation per
        // transition once a line has been seen.
        let v = self.values.get_or_insert_with(|| {
            Box::new(Values {
                copy: None,
                mem: None,
                initial: initial_line(line),
            })
        });
        if role == cache_role {
            v.copy = copy.copied();
        }
        if let Some(m) = mem {
            v.mem = Some(*m);
        }
    }

    fn states(&self) -> [usize; 3] {
        self.state.map(usize::from)
    }
}

/// One protocol's lines as its agents see them, gathered when a report is
/// needed (checks off: the checker mirrored nothing during the run). The
/// components add their lines' states ([`LineSnapshot::state`]) and the
/// messages they hold ([`LineSnapshot::message`]); so does the kernel.
#[derive(Debug)]
pub struct LineSnapshot {
    catalogue: &'static Catalogue,
    initial: [u16; 3],
    /// Per line: the three agents' states (initial unless an agent said
    /// otherwise) and the messages in flight. Sorted, so the report is.
    lines: BTreeMap<u64, ([u16; 3], PendingSet)>,
}

impl LineSnapshot {
    /// An empty snapshot of the lines of the protocol of `tables`.
    pub fn new(tables: &Tables) -> LineSnapshot {
        LineSnapshot {
            catalogue: tables.catalogue,
            initial: tables.initial.map(|s| s as u16),
            lines: BTreeMap::new(),
        }
    }

    fn line(&mut self, line: u64) -> &mut ([u16; 3], PendingSet) {
        let initial = self.initial;
        self.lines
            .entry(line)
            .or_insert_with(|| (initial, PendingSet::default()))
    }

    /// `role`'s state of `line` is `state`.
    pub fn state(&mut self, line: u64, role: usize, state: usize) {
        self.line(line).0[role] = state as u16;
    }

    /// `m` is sent and not handled yet (ignored if it belongs to the other
    /// protocol on shared links).
    pub fn message(&mut self, m: &CohMsg) {
        if m.catalogue == self.catalogue {
            self.line(m.line).1.add(m.msg);
        }
    }
}

/// The shared online checker.
#[derive(Debug)]
pub struct Checker {
    tables: Arc<Tables>,
    /// Whether SWMR and data-value are asserted (test/debug mode). Only
    /// then does the checker mirror states and track messages; with checks
    /// off every per-line call is a no-op and stuck reports are built on
    /// demand ([`Checker::stuck_report_from`]). Fixed at construction:
    /// components read it once.
    pub enabled: bool,
    /// Per line (checks on): the agents' states, in-flight messages and
    /// the values; one map, so a send, a receipt or a transition costs one
    /// lookup. Empty with checks off.
    views: HashMap<u64, LineView>,
    ghost: HashMap<u64, Box<Line>>,
    /// The cache role's open read windows (checks on, tables whose cache
    /// reads with `check_window`): per line, the latest write when the
    /// window opened and every write since, with their times.
    windows: HashMap<u64, Vec<(Tick, Line)>>,
    /// Violations found, in order; the first one stops the run.
    pub violations: Vec<String>,
    /// Transitions checked.
    pub checked: u64,
}

impl Checker {
    /// The protocol it checks (`eci-dc`).
    pub fn protocol(&self) -> &str {
        &self.tables.ir.name
    }

    /// The tables it checks.
    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// A checker for `tables`.
    pub fn new(tables: Arc<Tables>, enabled: bool) -> Checker {
        Checker {
            tables,
            enabled,
            views: HashMap::default(),
            ghost: HashMap::default(),
            windows: HashMap::default(),
            violations: Vec::new(),
            checked: 0,
        }
    }

    fn view(&mut self, line: u64) -> &mut LineView {
        let init = self.tables.initial.map(|s| s as u16);
        self.views.entry(line).or_insert_with(|| LineView {
            state: init,
            writebacks: 0,
            pending: PendingSet::default(),
            values: None,
        })
    }

    /// Records a violation.
    pub fn violation(&mut self, now: Tick, text: String) {
        self.violations
            .push(format!("t={:.1} ns: {text}", now as f64 / 1000.0));
    }

    fn is_writeback(&self, msg: u16) -> bool {
        let m = &self.tables.msgs[msg as usize];
        m.data && m.from == self.tables.cache_role && m.to == self.tables.mem_role
    }

    /// A message was sent.
    pub fn sent(&mut self, line: u64, msg: u16) {
        if !self.enabled {
            return;
        }
        let writeback = self.is_writeback(msg);
        let v = self.view(line);
        v.pending.add(msg);
        if writeback {
            v.writebacks += 1;
        }
    }

    /// A message was handled by its receiver's table.
    pub fn handled(&mut self, line: u64, msg: u16) {
        if !self.enabled {
            return;
        }
        let writeback = self.is_writeback(msg);
        if let Some(v) = self.views.get_mut(&line) {
            v.pending.take(msg);
            if writeback {
                v.writebacks = v.writebacks.saturating_sub(1);
            }
        }
    }

    /// The ghost latest write of `line`.
    pub fn latest(&self, line: u64) -> Line {
        match self.ghost.get(&line) {
            Some(b) => **b,
            None => self.initial(line),
        }
    }

    /// [`initial_line`], from the line's view if checks computed it there.
    fn initial(&self, line: u64) -> Line {
        match self.views.get(&line).and_then(|v| v.values.as_deref()) {
            Some(v) => v.initial,
            None => initial_line(line),
        }
    }

    /// The memory holds `data` at `line` before the run (a workload's own
    /// initial contents instead of [`initial_line`]): both the memory's
    /// value and the latest write the checks compare against.
    pub fn preload(&mut self, line: u64, data: &Line) {
        if !self.enabled {
            return;
        }
        self.ghost.insert(line, Box::new(*data));
        self.view(line).values = Some(Box::new(Values {
            copy: None,
            mem: Some(*data),
            initial: *data,
        }));
    }

    /// A `store` action wrote `data` to `line` at `now`.
    pub fn store(&mut self, now: Tick, line: u64, data: &Line) {
        if self.enabled {
            self.ghost.insert(line, Box::new(*data));
            if let Some(w) = self.windows.get_mut(&line) {
                w.push((now, *data));
            }
        }
    }

    /// The cache role ran a local row on `line` at `now`: its read window
    /// on the line starts again, holding the latest write (the checker's
    /// `window_at`, reset at the agent's local events). Kept only while
    /// the line has open work ([`Checker::close_window`]), so windows stay
    /// as few as the misses in flight.
    pub fn open_window(&mut self, now: Tick, line: u64) {
        if self.enabled {
            let latest = self.latest(line);
            let w = self.windows.entry(line).or_default();
            w.clear();
            w.push((now, latest));
        }
    }

    /// The cache's line is stable again: no read is open on it.
    pub fn close_window(&mut self, line: u64) {
        if self.enabled {
            self.windows.remove(&line);
        }
    }

    /// A `check_window` read by `role` of `data` from `line`, for a read
    /// that began at `since` (`None`: when the window opened): `data` must
    /// be the latest write then or a write since. Without an open window
    /// only the latest write passes (the narrowest window).
    pub fn check_window_read(
        &mut self,
        now: Tick,
        line: u64,
        role: usize,
        since: Option<Tick>,
        data: &Line,
    ) {
        if !self.enabled || *data == self.latest(line) {
            return;
        }
        let seen = self.windows.get(&line).is_some_and(|w| {
            // The write that was the latest at `since`, and every later one.
            let since = since.unwrap_or(w[0].0);
            let first = w.iter().rposition(|&(t, _)| t <= since).unwrap_or(0);
            w[first..].iter().any(|(_, v)| v == data)
        });
        if !seen {
            let who = self.tables.agent(role).to_string();
            self.violation(
                now,
                format!(
                    "data-value: {who} read line {line:#x} once, but it was not the latest write at any moment since the read began"
                ),
            );
        }
    }

    /// A `check` action (a program read) read `data` from `line` at `who`.
    pub fn check_read(&mut self, now: Tick, line: u64, role: usize, data: &Line) {
        if self.enabled && *data != self.latest(line) {
            let who = self.tables.agent(role).to_string();
            self.violation(
                now,
                format!(
                    "data-value: {who} read line {line:#x} but it differs from the latest write"
                ),
            );
        }
    }

    /// A table row of `role` ran on `line`: it handled the message
    /// `handled` (if a message triggered it), sent `sent`, and left the
    /// line in `state` with `copy` and `mem` (as in
    /// [`Checker::transition`]). The same as those calls in that order, with
    /// one lookup of the line instead of one per call. Nothing with checks
    /// off (hot paths skip the call altogether).
    #[allow(clippy::too_many_arguments)]
    pub fn row(
        &mut self,
        now: Tick,
        line: u64,
        role: usize,
        handled: Option<u16>,
        sent: &[u16],
        state: usize,
        copy: Option<&Line>,
        mem: Option<&Line>,
    ) {
        if !self.enabled {
            return;
        }
        let writeback = |msg: u16| self.is_writeback(msg);
        let handled_wb = handled.is_some_and(writeback);
        let sent_wb = sent.iter().filter(|&&m| writeback(m)).count() as u32;
        let cache_role = self.tables.cache_role;
        let v = self.view(line);
        if let Some(msg) = handled {
            v.pending.take(msg);
            if handled_wb {
                v.writebacks = v.writebacks.saturating_sub(1);
            }
        }
        for &msg in sent {
            v.pending.add(msg);
        }
        v.writebacks += sent_wb;
        v.set_state(line, role, state, (cache_role, copy, mem));
        self.checked += 1;
        if let Err(e) = self.check_line(line) {
            self.violation(now, e);
        }
    }

    /// `role`'s state of `line` changed; `copy` is the cache's copy (the
    /// cache role's) and `mem` the home's memory after the transition.
    pub fn transition(
        &mut self,
        now: Tick,
        line: u64,
        role: usize,
        state: usize,
        copy: Option<&Line>,
        mem: Option<&Line>,
    ) {
        self.row(now, line, role, None, &[], state, copy, mem);
    }

    /// The shared invariants ([`invariants::swmr`],
    /// [`invariants::data_value`]) on the three agents' view of `line`.
    fn check_line(&self, line: u64) -> Result<(), String> {
        let t = &self.tables;
        let Some(v) = self.views.get(&line) else {
            return Ok(());
        };
        let state = v.states();
        let ghost = self.latest(line);
        let values = v.values.as_deref();
        let mem = match values.and_then(|x| x.mem) {
            Some(m) => m,
            None => self.initial(line),
        };
        let copy = values.and_then(|x| x.copy);
        let agents: [AgentLine<'_, LineText<'_>>; 3] = std::array::from_fn(|r| AgentLine {
            name: t.agent(r),
            state: t.state_name(r, state[r]),
            access: t.access[r][state[r]],
            value: if r == t.cache_role {
                copy.as_ref().map(|c| LineText(c))
            } else {
                Some(LineText(&mem))
            },
        });
        let name = crate::line::HexLine(line);
        let view = invariants::LineView {
            line: &name,
            agents: &agents,
            memory: LineText(&mem),
            latest: LineText(&ghost),
            data_in_flight: v.writebacks > 0,
        };
        invariants::swmr(&view)
            .and_then(|()| invariants::data_value(&view))
            .map_err(|e| format!("{e} ({})", self.describe_states(line)))
    }

    /// `dc=.. cpu=.. app=..` of a line.
    pub fn describe_states(&self, line: u64) -> String {
        self.describe(self.states_of(line))
    }

    /// `dc=.. cpu=.. app=..` of the three states `s`.
    fn describe(&self, s: [usize; 3]) -> String {
        let t = &self.tables;
        format!(
            "{}={} {}={} {}={}",
            t.agent(GENERATED),
            t.state_name(GENERATED, s[GENERATED]),
            t.agent(PEER),
            t.state_name(PEER, s[PEER]),
            t.agent(LOCAL),
            t.state_name(LOCAL, s[LOCAL])
        )
    }

    /// Pending messages of a line, e.g. `RLDD, HAKI x2`.
    pub fn pending_of(&self, line: u64) -> Vec<String> {
        match self.views.get(&line) {
            Some(v) => self.name_pending(&v.pending),
            None => Vec::new(),
        }
    }

    /// `pending` by message name, in catalogue order, with counts.
    fn name_pending(&self, pending: &PendingSet) -> Vec<String> {
        let mut of_line: Vec<(u16, u32)> = pending.iter().collect();
        of_line.sort_unstable();
        of_line
            .into_iter()
            .map(|(m, c)| {
                let n = &self.tables.msgs[m as usize].name;
                if c > 1 {
                    format!("{n} x{c}")
                } else {
                    n.to_string()
                }
            })
            .collect()
    }

    /// Whether a line in `states` with `pending` messages has open work: a
    /// transient state or a message in flight.
    fn open(&self, states: [u16; 3], pending: &PendingSet) -> bool {
        let t = &self.tables;
        !pending.is_empty() || (0..3).any(|r| !t.stable[r][states[r] as usize])
    }

    /// One line of a stuck report.
    fn stuck_line(&self, line: u64, states: [usize; 3], pending: &[String]) -> String {
        format!(
            "line {line:#x}: {}; pending messages: [{}]",
            self.describe(states),
            pending.join(", ")
        )
    }

    /// Every line with open work (a transient state or a pending message),
    /// one per line, sorted by line, plus `extra` lines the caller knows
    /// are waiting (e.g. the core's outstanding misses). From the mirror
    /// the checker keeps with checks on; with checks off it has none, see
    /// [`Checker::stuck_report_from`].
    pub fn stuck_report(&self, extra: &[u64]) -> Vec<String> {
        let open = self
            .views
            .iter()
            .filter(|(_, v)| self.open(v.state, &v.pending));
        stuck_lines(open.map(|(l, _)| *l), extra, |l| {
            self.stuck_line(l, self.states_of(l), &self.pending_of(l))
        })
    }

    /// The mirrored states of a line (initial if never seen).
    fn states_of(&self, line: u64) -> [usize; 3] {
        self.views
            .get(&line)
            .map_or(self.tables.initial, LineView::states)
    }

    /// [`Checker::stuck_report`] as the run stands: with checks on from
    /// the checker's mirror; with checks off from the snapshot `gather`
    /// fills (the agents' states and the messages in flight, gathered now):
    /// the same lines, states and messages, in the same form.
    pub fn stuck_report_from(
        &self,
        gather: impl FnOnce(&mut LineSnapshot),
        extra: &[u64],
    ) -> Vec<String> {
        if self.enabled {
            return self.stuck_report(extra);
        }
        let mut snapshot = LineSnapshot::new(&self.tables);
        gather(&mut snapshot);
        let open = snapshot
            .lines
            .iter()
            .filter(|(_, (states, pending))| self.open(*states, pending));
        let none = PendingSet::default();
        stuck_lines(open.map(|(l, _)| *l), extra, |l| {
            let (states, pending) = snapshot
                .lines
                .get(&l)
                .map_or((snapshot.initial, &none), |(s, p)| (*s, p));
            self.stuck_line(l, states.map(usize::from), &self.name_pending(pending))
        })
    }
}

/// The lines of a stuck report: the `open` lines and the `extra` ones,
/// each once, sorted, each described by `describe`.
fn stuck_lines(
    open: impl Iterator<Item = u64>,
    extra: &[u64],
    describe: impl Fn(u64) -> String,
) -> Vec<String> {
    let mut lines: Vec<u64> = open.chain(extra.iter().copied()).collect();
    lines.sort_unstable();
    lines.dedup();
    lines.into_iter().map(describe).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LINE_BYTES;

    /// A read once passes if its value was the latest write at some moment
    /// since the read began: the value latest when it began, or one written
    /// since; never a value overwritten before it began, nor one that was
    /// never written.
    #[test]
    fn a_read_once_returns_a_value_of_its_own_window() {
        let mut c = Checker::new(Tables::eci_dc().unwrap(), true);
        let line = 7;
        let old = c.latest(line);
        let (new, never) = ([1; LINE_BYTES], [2; LINE_BYTES]);
        c.open_window(100, line);
        c.store(200, line, &new);
        // Began before the write (or when the window opened): both pass.
        c.check_window_read(300, line, PEER, Some(150), &old);
        c.check_window_read(300, line, PEER, None, &old);
        c.check_window_read(300, line, PEER, Some(150), &new);
        assert!(c.violations.is_empty(), "{:?}", c.violations);
        // Began after the write: the older value is not in its window.
        c.check_window_read(300, line, PEER, Some(250), &old);
        assert_eq!(c.violations.len(), 1);
        c.check_window_read(300, line, PEER, Some(150), &never);
        assert_eq!(c.violations.len(), 2);
        assert!(
            c.violations[0].contains("read line 0x7 once"),
            "{}",
            c.violations[0]
        );
        // Closed (the line stable again): only the latest write passes.
        c.close_window(line);
        c.check_window_read(300, line, PEER, None, &old);
        assert_eq!(c.violations.len(), 3);
        c.check_window_read(300, line, PEER, None, &new);
        assert_eq!(c.violations.len(), 3);
    }
}
