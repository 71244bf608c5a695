//! The composed system the checker explores: for every line, the generated
//! machine, the peer agent and the device-local agent, all *interpreted from
//! the IR tables*, plus an unordered network (a bounded multiset per message
//! type) and real data values.
//!
//! ```text
//!   local (app) --LCL_REQ--> generated (DC) --FWD/RSP--> peer (CPU LLC)
//!               <--LCL_RSP--                <--REQ/RSP--
//! ```
//!
//! * **Data.** Each line carries the memory value, the cached copy and a
//!   ghost "latest write" value, over `values` distinct values. Stores pick
//!   any value; checks compare against the ghost.
//! * **Network.** For each line, message type and data value, a count of
//!   messages in flight (a canonical multiset; any of them can be delivered
//!   next, so every reordering is explored). Sending beyond `max_in_flight`
//!   is a violation.
//! * **Serial units.** Lines map to DCUs. While the generated machine of a
//!   line is in a transient state, the unit is busy with it and events for
//!   other lines on the same unit wait (CCKit §4.3: serial, blocking DCUs).
//!
//! Properties: SWMR, data-value, no unspecified reception, network bound,
//! and progress (`ccsim_check`'s `CheckOptions::progress`): from every
//! reachable state a quiescent state (all agents stable, network empty) is
//! reachable through helping actions ([`System::helps`]).

use crate::ir::{Access, Action, IndexedOutcome, MachineIndex, MsgClass, ProtocolIr};
use ccsim_check::model::{ChartStep, Invariant, Model};

/// Checking configuration: lines, their units, data values, network bound.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SystemConfig {
    /// DCU of each line; the length is the number of lines.
    pub dcus: Vec<u8>,
    /// Number of distinct data values (at least 1).
    pub values: u8,
    /// Most messages of one (line, type, value) in flight.
    pub max_in_flight: u8,
}

impl From<&crate::spec::CheckSpec> for SystemConfig {
    fn from(c: &crate::spec::CheckSpec) -> Self {
        SystemConfig {
            dcus: c.dcus.clone(),
            values: c.values,
            max_in_flight: c.max_in_flight,
        }
    }
}

/// A system state: one flat byte vector (cheap to hash and clone).
///
/// Layout: per line `[generated, peer, local, cache, memory, ghost]`, then
/// the network counts `[line][message][value]`, then an error code
/// (0 none, 1 a check read a stale value, 2 network bound exceeded).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SysState(pub Box<[u8]>);

impl std::fmt::Debug for SysState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", &self.0)
    }
}

/// A rule instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysAction {
    /// A local event of `role` on `line`; `value` is the fresh value for a
    /// store or a data message the agent originates.
    Local {
        /// Line index.
        line: u8,
        /// 0 generated, 1 peer, 2 local.
        role: u8,
        /// Event index in the role's machine.
        event: u16,
        /// Fresh value.
        value: u8,
    },
    /// Deliver one message of type `msg` with `data` on `line`.
    Deliver {
        /// Line index.
        line: u8,
        /// Message index in the IR catalogue.
        msg: u16,
        /// Data value (0 for messages without data).
        data: u8,
    },
}

#[derive(Clone, Debug)]
struct MsgMeta {
    name: String,
    data: bool,
    from: usize,
    to: usize,
    class: MsgClass,
}

/// The composed system built from a [`ProtocolIr`].
pub struct System {
    /// The IR being checked.
    pub ir: ProtocolIr,
    /// Configuration.
    pub cfg: SystemConfig,
    idx: [MachineIndex; 3],
    access: [Vec<Access>; 3],
    stable: [Vec<bool>; 3],
    msgs: Vec<MsgMeta>,
    /// `msg_event[role][msg]`: the event index of message `msg` in `role`'s machine.
    msg_event: [Vec<Option<usize>>; 3],
    /// Local (non-message) event indices per role.
    local_events: [Vec<usize>; 3],
    mem_role: usize,
    cache_role: usize,
    names: [String; 3],
}

const PER_LINE: usize = 6;
const CACHE: usize = 3;
const MEM: usize = 4;
const GHOST: usize = 5;

fn role_index(r: &str) -> usize {
    match r {
        "generated" => 0,
        "peer" => 1,
        _ => 2,
    }
}

impl System {
    /// Builds the system; fails if a table names an unknown state or event.
    pub fn new(ir: ProtocolIr, cfg: SystemConfig) -> Result<System, String> {
        if cfg.dcus.is_empty() || cfg.dcus.len() > 8 {
            return Err("between 1 and 8 lines".into());
        }
        if cfg.values == 0 || cfg.max_in_flight == 0 {
            return Err("values and max_in_flight must be at least 1".into());
        }
        let ms = ir.machines();
        let idx = [ms[0].index()?, ms[1].index()?, ms[2].index()?];
        let access = ms.map(|m| m.states.iter().map(|s| s.access).collect::<Vec<_>>());
        let stable = ms.map(|m| m.states.iter().map(|s| s.stable).collect::<Vec<_>>());
        let msgs: Vec<MsgMeta> = ir
            .messages
            .iter()
            .map(|m| MsgMeta {
                name: m.name.clone(),
                data: m.data,
                from: role_index(&m.from),
                to: role_index(&m.to),
                class: m.class,
            })
            .collect();
        let msg_event = [0, 1, 2].map(|r| {
            msgs.iter()
                .map(|m| idx[r].event_ids.get(&m.name).copied())
                .collect::<Vec<_>>()
        });
        let local_events = ms.map(|m| {
            m.events
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.message)
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        });
        for (r, m) in ms.iter().enumerate() {
            if !idx[r].state_ids.contains_key(&m.initial) {
                return Err(format!("{}: unknown initial state {}", m.name, m.initial));
            }
            if m.states.len() > 255 {
                return Err(format!("{}: more than 255 states", m.name));
            }
            for t in &m.transitions {
                if let crate::ir::Outcome::Go { actions, .. } = &t.outcome {
                    for a in actions {
                        if let Action::Send(x) = a {
                            match msgs.iter().find(|mm| &mm.name == x) {
                                None => {
                                    return Err(format!(
                                        "{}: ({}, {}) sends unknown message {x}",
                                        m.name, t.state, t.event
                                    ))
                                }
                                Some(mm) if mm.from != r => {
                                    return Err(format!(
                                        "{}: ({}, {}) sends {x}, which another agent sends",
                                        m.name, t.state, t.event
                                    ))
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
        let names = ms.map(|m| m.name.clone());
        Ok(System {
            mem_role: role_index(&ir.memory_at),
            cache_role: role_index(&ir.cache_at),
            ir,
            cfg,
            idx,
            access,
            stable,
            msgs,
            msg_event,
            local_events,
            names,
        })
    }

    /// The local event `event` of `role` on `line` as an action, if the
    /// role's table has a transition for it in the current state.
    pub fn local_action(
        &self,
        s: &SysState,
        line: usize,
        role: usize,
        event: &str,
        value: u8,
    ) -> Option<SysAction> {
        let e = *self.idx[role].event_ids.get(event)?;
        let st = s.0[line * PER_LINE + role];
        if r_is_go(self.outcome(role, st, e)) && !(role == 0 && self.unit_busy(s, line)) {
            Some(SysAction::Local {
                line: line as u8,
                role: role as u8,
                event: e as u16,
                value,
            })
        } else {
            None
        }
    }

    /// The table row `(role, state name, event name)` an action fires.
    pub fn row_of(&self, s: &SysState, a: &SysAction) -> (usize, String, String) {
        let (line, role, event) = match *a {
            SysAction::Local {
                line, role, event, ..
            } => (line as usize, role as usize, event as usize),
            SysAction::Deliver { line, msg, .. } => {
                let to = self.msgs[msg as usize].to;
                (
                    line as usize,
                    to,
                    self.msg_event[to][msg as usize].expect("deliverable"),
                )
            }
        };
        let m = self.ir.machines()[role];
        (
            role,
            self.state_name(s, line, role).to_string(),
            m.events[event].name.clone(),
        )
    }

    /// Whether an action only finishes open work: a delivery, or a local
    /// event of an agent in a transient state (the progress check's
    /// [`Model::is_helping`]).
    pub fn helps(&self, s: &SysState, a: &SysAction) -> bool {
        match *a {
            SysAction::Deliver { .. } => true,
            SysAction::Local { line, role, .. } => {
                !self.stable[role as usize][s.0[line as usize * PER_LINE + role as usize] as usize]
            }
        }
    }

    /// Number of lines.
    pub fn lines(&self) -> usize {
        self.cfg.dcus.len()
    }

    fn vals(&self) -> usize {
        self.cfg.values as usize
    }

    fn net_off(&self, line: usize, msg: usize, v: usize) -> usize {
        self.lines() * PER_LINE + (line * self.msgs.len() + msg) * self.vals() + v
    }

    fn err_off(&self) -> usize {
        self.lines() * PER_LINE + self.lines() * self.msgs.len() * self.vals()
    }

    /// The state name of `role` on `line`.
    pub fn state_name(&self, s: &SysState, line: usize, role: usize) -> &str {
        &self.ir.machines()[role].states[s.0[line * PER_LINE + role] as usize].name
    }

    fn outcome(&self, role: usize, state: u8, event: usize) -> Option<&IndexedOutcome> {
        self.idx[role].table[state as usize * self.idx[role].n_events + event].as_ref()
    }

    /// Whether the unit of `line` is busy with another line.
    fn unit_busy(&self, s: &SysState, line: usize) -> bool {
        (0..self.lines()).any(|o| {
            o != line
                && self.cfg.dcus[o] == self.cfg.dcus[line]
                && !self.stable[0][s.0[o * PER_LINE] as usize]
        })
    }

    fn needs_fresh(&self, role: usize, state: u8, actions: &[Action], has_input: bool) -> bool {
        actions.iter().any(|a| match a {
            Action::Store => !has_input,
            Action::Send(m) => {
                let mi = self
                    .msgs
                    .iter()
                    .position(|x| &x.name == m)
                    .expect("known message");
                self.msgs[mi].data
                    && role != self.mem_role
                    && !(role == self.cache_role
                        && self.access[role][state as usize] != Access::None)
            }
            _ => false,
        })
    }

    fn value_of(&self, s: &[u8], line: usize, role: usize) -> u8 {
        if role == self.cache_role {
            s[line * PER_LINE + CACHE]
        } else {
            s[line * PER_LINE + MEM]
        }
    }

    /// Applies a transition of `role` on `line`; `input` is the received data.
    fn apply(
        &self,
        st: &SysState,
        (line, role): (usize, usize),
        next: usize,
        actions: &[Action],
        input: Option<u8>,
        fresh: u8,
    ) -> SysState {
        let mut s = st.0.to_vec();
        let base = line * PER_LINE;
        let src = s[base + role];
        let err = self.err_off();
        for a in actions {
            match a {
                Action::Send(m) => {
                    let mi = self
                        .msgs
                        .iter()
                        .position(|x| &x.name == m)
                        .expect("known message");
                    let d = if !self.msgs[mi].data {
                        0
                    } else if role == self.cache_role
                        && self.access[role][src as usize] != Access::None
                    {
                        s[base + CACHE]
                    } else if role == self.mem_role {
                        s[base + MEM]
                    } else {
                        fresh
                    };
                    let o = self.net_off(line, mi, d as usize);
                    if s[o] >= self.cfg.max_in_flight {
                        s[err] = s[err].max(2);
                    } else {
                        s[o] += 1;
                    }
                }
                Action::WriteMem => s[base + MEM] = input.unwrap_or(0),
                Action::Fill => s[base + CACHE] = input.unwrap_or(0),
                Action::Store => {
                    let v = input.unwrap_or(fresh);
                    if role == self.cache_role {
                        s[base + CACHE] = v;
                    } else {
                        s[base + MEM] = v;
                    }
                    s[base + GHOST] = v;
                }
                Action::Check => {
                    if self.value_of(&s, line, role) != s[base + GHOST] {
                        s[err] = 1;
                    }
                }
            }
        }
        s[base + role] = next as u8;
        let cs = s[base + self.cache_role];
        if self.access[self.cache_role][cs as usize] == Access::None {
            s[base + CACHE] = 0;
        }
        SysState(s.into_boxed_slice())
    }

    /// Whether a state is quiescent: every agent stable and nothing in flight.
    pub fn quiescent(&self, s: &SysState) -> bool {
        let lines = self.lines();
        (0..lines).all(|l| (0..3).all(|r| self.stable[r][s.0[l * PER_LINE + r] as usize]))
            && s.0[lines * PER_LINE..self.err_off()]
                .iter()
                .all(|&c| c == 0)
    }

    /// Messages in flight as `(line, msg index, data, count)`.
    pub fn in_flight(&self, s: &SysState) -> Vec<(usize, usize, u8, u8)> {
        let mut v = Vec::new();
        for l in 0..self.lines() {
            for m in 0..self.msgs.len() {
                for d in 0..self.vals() {
                    let c = s.0[self.net_off(l, m, d)];
                    if c > 0 {
                        v.push((l, m, d as u8, c));
                    }
                }
            }
        }
        v
    }

    /// A one-line description of a state, for traces. Messages that wait
    /// for a busy serial unit are marked with the line holding the unit.
    pub fn describe(&self, s: &SysState) -> String {
        let mut parts = Vec::new();
        for l in 0..self.lines() {
            let b = l * PER_LINE;
            parts.push(format!(
                "line {}: {}={} {}={} {}={} cache={} mem={} latest={}",
                self.line_name(l),
                self.names[0],
                self.state_name(s, l, 0),
                self.names[1],
                self.state_name(s, l, 1),
                self.names[2],
                self.state_name(s, l, 2),
                s.0[b + CACHE],
                s.0[b + MEM],
                s.0[b + GHOST]
            ));
        }
        let net: Vec<String> = self
            .in_flight(s)
            .into_iter()
            .map(|(l, m, d, c)| {
                let mut x = format!("{}({}", self.msgs[m].name, self.line_name(l));
                if self.msgs[m].data {
                    x.push_str(&format!(",{d}"));
                }
                x.push(')');
                if c > 1 {
                    x.push_str(&format!("x{c}"));
                }
                if self.msgs[m].to == 0 && self.unit_busy(s, l) {
                    let holder = (0..self.lines())
                        .find(|&o| {
                            o != l
                                && self.cfg.dcus[o] == self.cfg.dcus[l]
                                && !self.stable[0][s.0[o * PER_LINE] as usize]
                        })
                        .expect("busy unit has a holder");
                    x.push_str(&format!(
                        " [waits: DCU {} is busy with line {} in {}]",
                        self.cfg.dcus[l],
                        self.line_name(holder),
                        self.state_name(s, holder, 0)
                    ));
                }
                x
            })
            .collect();
        format!("{}; net: [{}]", parts.join("; "), net.join(", "))
    }

    /// Display name of a line (`A`, `B`, or `L<n>` beyond two lines).
    pub fn line_name(&self, l: usize) -> String {
        if self.lines() <= 2 {
            ["A", "B"][l].to_string()
        } else {
            format!("L{l}")
        }
    }

    /// Agent names by role.
    pub fn agent_names(&self) -> &[String; 3] {
        &self.names
    }

    /// Message names by index.
    pub fn message_name(&self, m: usize) -> &str {
        &self.msgs[m].name
    }

    /// Number of message types.
    pub fn n_messages(&self) -> usize {
        self.msgs.len()
    }

    /// Whether message `m` is a request.
    pub fn is_request(&self, m: usize) -> bool {
        self.msgs[m].class == MsgClass::Request
    }
}

fn r_is_go(o: Option<&IndexedOutcome>) -> bool {
    matches!(o, Some(IndexedOutcome::Go { .. }))
}

pub(crate) fn inv_swmr(sys: &System, s: &SysState) -> Result<(), String> {
    for l in 0..sys.lines() {
        let acc: Vec<Access> = (0..3)
            .map(|r| sys.access[r][s.0[l * PER_LINE + r] as usize])
            .collect();
        let writers = acc.iter().filter(|a| **a == Access::Write).count();
        let readers = acc.iter().filter(|a| **a == Access::Read).count();
        if writers > 1 || (writers == 1 && readers > 0) {
            let who: Vec<String> = (0..3)
                .filter(|&r| acc[r] != Access::None)
                .map(|r| {
                    format!(
                        "{} in {} ({:?})",
                        sys.names[r],
                        sys.state_name(s, l, r),
                        acc[r]
                    )
                })
                .collect();
            return Err(format!(
                "line {}: single-writer-multiple-reader violated: {}",
                sys.line_name(l),
                who.join(", ")
            ));
        }
    }
    Ok(())
}

pub(crate) fn inv_data(sys: &System, s: &SysState) -> Result<(), String> {
    if s.0[sys.err_off()] == 1 {
        return Err("a read returned a value other than the latest write".into());
    }
    for l in 0..sys.lines() {
        let b = l * PER_LINE;
        let ghost = s.0[b + GHOST];
        let mut writer = false;
        for r in 0..3 {
            let a = sys.access[r][s.0[b + r] as usize];
            writer |= a == Access::Write;
            if a != Access::None && sys.value_of(&s.0, l, r) != ghost {
                return Err(format!(
                    "line {}: {} in {} holds value {} but the latest write is {}",
                    sys.line_name(l),
                    sys.names[r],
                    sys.state_name(s, l, r),
                    sys.value_of(&s.0, l, r),
                    ghost
                ));
            }
        }
        let writeback = (0..sys.msgs.len()).any(|m| {
            let mm = &sys.msgs[m];
            mm.data
                && mm.from == sys.cache_role
                && mm.to == sys.mem_role
                && (0..sys.vals()).any(|d| s.0[sys.net_off(l, m, d)] > 0)
        });
        if !writer && !writeback && s.0[b + MEM] != ghost {
            return Err(format!(
                "line {}: memory holds {} but the latest write is {} and no agent holds it",
                sys.line_name(l),
                s.0[b + MEM],
                ghost
            ));
        }
    }
    Ok(())
}

pub(crate) fn inv_reception(sys: &System, s: &SysState) -> Result<(), String> {
    for (l, m, _, _) in sys.in_flight(s) {
        let to = sys.msgs[m].to;
        let st = s.0[l * PER_LINE + to];
        let ev = sys.msg_event[to][m];
        if ev.and_then(|e| sys.outcome(to, st, e)).is_none() {
            return Err(format!(
                "line {}: {} can arrive at {} in state {} but the table has no transition or stall for it",
                sys.line_name(l),
                sys.msgs[m].name,
                sys.names[to],
                sys.state_name(s, l, to)
            ));
        }
    }
    Ok(())
}

pub(crate) fn inv_bound(sys: &System, s: &SysState) -> Result<(), String> {
    if s.0[sys.err_off()] == 2 {
        return Err(format!(
            "more than {} identical messages in flight",
            sys.cfg.max_in_flight
        ));
    }
    Ok(())
}

impl Model for System {
    type State = SysState;
    type Action = SysAction;

    fn init_states(&self) -> Vec<SysState> {
        let mut s = vec![0u8; self.err_off() + 1];
        for l in 0..self.lines() {
            for r in 0..3 {
                let m = self.ir.machines()[r];
                s[l * PER_LINE + r] = self.idx[r].state_ids[&m.initial] as u8;
            }
        }
        vec![SysState(s.into_boxed_slice())]
    }

    fn actions(&self, s: &SysState, out: &mut Vec<SysAction>) {
        if s.0[self.err_off()] != 0 {
            return;
        }
        for l in 0..self.lines() {
            for r in 0..3 {
                if r == 0 && self.unit_busy(s, l) {
                    continue;
                }
                let st = s.0[l * PER_LINE + r];
                for &e in &self.local_events[r] {
                    if let Some(IndexedOutcome::Go { actions, .. }) = self.outcome(r, st, e) {
                        let n = if self.needs_fresh(r, st, actions, false) {
                            self.cfg.values
                        } else {
                            1
                        };
                        for v in 0..n {
                            out.push(SysAction::Local {
                                line: l as u8,
                                role: r as u8,
                                event: e as u16,
                                value: v,
                            });
                        }
                    }
                }
            }
            for m in 0..self.msgs.len() {
                let to = self.msgs[m].to;
                if to == 0 && self.unit_busy(s, l) {
                    continue;
                }
                let Some(e) = self.msg_event[to][m] else {
                    continue;
                };
                let st = s.0[l * PER_LINE + to];
                let Some(IndexedOutcome::Go { .. }) = self.outcome(to, st, e) else {
                    continue;
                };
                for d in 0..self.vals() {
                    if s.0[self.net_off(l, m, d)] > 0 {
                        out.push(SysAction::Deliver {
                            line: l as u8,
                            msg: m as u16,
                            data: d as u8,
                        });
                    }
                }
            }
        }
    }

    fn next_state(&self, s: &SysState, a: &SysAction) -> Option<SysState> {
        match *a {
            SysAction::Local {
                line,
                role,
                event,
                value,
            } => {
                let (l, r) = (line as usize, role as usize);
                let st = s.0[l * PER_LINE + r];
                let Some(IndexedOutcome::Go { next, actions }) =
                    self.outcome(r, st, event as usize)
                else {
                    return None;
                };
                Some(self.apply(s, (l, r), *next, actions, None, value))
            }
            SysAction::Deliver { line, msg, data } => {
                let (l, m) = (line as usize, msg as usize);
                let to = self.msgs[m].to;
                let st = s.0[l * PER_LINE + to];
                let e = self.msg_event[to][m]?;
                let Some(IndexedOutcome::Go { next, actions }) = self.outcome(to, st, e) else {
                    return None;
                };
                let mut base = s.clone();
                let o = self.net_off(l, m, data as usize);
                if base.0[o] == 0 {
                    return None;
                }
                base.0[o] -= 1;
                let input = if self.msgs[m].data { Some(data) } else { None };
                Some(self.apply(&base, (l, to), *next, actions, input, 0))
            }
        }
    }

    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![
            Invariant {
                name: "swmr",
                check: inv_swmr,
            },
            Invariant {
                name: "data-value",
                check: inv_data,
            },
            Invariant {
                name: "no-unspecified-reception",
                check: inv_reception,
            },
            Invariant {
                name: "network-bound",
                check: inv_bound,
            },
        ]
    }

    fn is_quiescent(&self, s: &SysState) -> bool {
        self.quiescent(s)
    }

    fn is_helping(&self, s: &SysState, a: &SysAction) -> bool {
        self.helps(s, a)
    }

    fn chart_step(&self, _s: &SysState, a: &SysAction) -> ChartStep {
        match *a {
            SysAction::Local {
                line,
                role,
                event,
                value,
            } => {
                let m = self.ir.machines()[role as usize];
                let e = &m.events[event as usize].name;
                let st = _s.0[line as usize * PER_LINE + role as usize];
                let stores = matches!(self.outcome(role as usize, st, event as usize), Some(IndexedOutcome::Go { actions, .. }) if self.needs_fresh(role as usize, st, actions, false));
                ChartStep {
                    from: self.names[role as usize].clone(),
                    to: self.names[role as usize].clone(),
                    label: if stores {
                        format!("{e}({}={value})", self.line_name(line as usize))
                    } else {
                        format!("{e}({})", self.line_name(line as usize))
                    },
                }
            }
            SysAction::Deliver { line, msg, data } => {
                let mm = &self.msgs[msg as usize];
                ChartStep {
                    from: self.names[mm.from].clone(),
                    to: self.names[mm.to].clone(),
                    label: if mm.data {
                        format!(
                            "{}({}, data={data})",
                            mm.name,
                            self.line_name(line as usize)
                        )
                    } else {
                        format!("{}({})", mm.name, self.line_name(line as usize))
                    },
                }
            }
        }
    }

    fn agents(&self) -> Vec<String> {
        vec![
            self.names[1].clone(),
            self.names[0].clone(),
            self.names[2].clone(),
        ]
    }
}
