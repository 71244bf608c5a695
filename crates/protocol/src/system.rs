//! The composed system the checker explores: for every line, one instance
//! of each role (or several, for a `multiple` role), all executing their
//! rows through [`crate::engine::execute`], an unordered network (a
//! bounded multiset of messages) and real data values.
//!
//! ```text
//!   two-node form:  local (app) ──LCL──▶ generated (DC) ──FWD/RSP──▶ peer (CPU LLC)
//!                              ◀──────                 ◀──REQ/RSP──
//!   role form:      cache0, cache1 ──▶ directory (home) ◀── dma, ...
//! ```
//!
//! * **Agents.** Role instances in role order: `[check] instances` gives
//!   each role's count (one by default). A two-node spec's agents are
//!   0 = generated, 1 = peer, 2 = local.
//! * **Data.** Each line carries memory, a copy per agent whose role keeps
//!   one, and a ghost "latest write", over `values` distinct values. Stores
//!   pick any value; checks compare against the ghost. An agent whose role
//!   reads with `check_window` also keeps a read window per line: the
//!   values that were the ghost at some moment since its last local event
//!   there (a bit each), which such a read must hit.
//! * **Directory.** If the protocol uses them, the home's owner and sharers
//!   per line, and an ack counter per agent whose role counts acks.
//! * **Network.** For each line, message type and *tuple* (sender, receiver,
//!   requester if the message carries one, value if it carries data), a
//!   count of messages in flight: a canonical multiset, any of them can be
//!   delivered next, so every reordering is explored. Sending beyond
//!   `max_in_flight` identical messages is a violation.
//! * **Serial units.** Lines map to DCUs. While a serial role's agent (the
//!   generated DC) is in a transient state for a line, events of that
//!   agent for other lines on the same unit wait (CCKit §4.3: serial,
//!   blocking DCUs).
//!
//! Properties ([`crate::invariants`]): SWMR, data-value, no unspecified
//! reception, valid targets, network bound, and progress
//! (`ccsim_check`'s `CheckOptions::progress`): from every reachable state a
//! quiescent state (all agents stable, network empty) is reachable through
//! helping actions ([`System::helps`]).

use std::collections::BTreeMap;

use crate::engine::{
    execute, pick, AgentId, Cell, CompiledTable, DataSource, DirEntry, DirOp, Effects, Protocol,
    Row, SendStep,
};
use crate::invariants::{self, AgentLine, LineView};
use crate::ir::{DataHome, MsgClass, ProtocolIr, Target};
use ccsim_check::model::{ChartStep, Invariant, Model};

/// Checking configuration: lines, their units, data values, network bound,
/// instances per role.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SystemConfig {
    /// DCU of each line; the length is the number of lines.
    pub dcus: Vec<u8>,
    /// Number of distinct data values (at least 1).
    pub values: u8,
    /// Most messages of one (line, type, tuple) in flight.
    pub max_in_flight: u8,
    /// Instances per role (a role not named has one).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub instances: BTreeMap<String, u8>,
}

impl From<&crate::spec::CheckSpec> for SystemConfig {
    fn from(c: &crate::spec::CheckSpec) -> Self {
        SystemConfig {
            dcus: c.dcus.clone(),
            values: c.values,
            max_in_flight: c.max_in_flight,
            instances: c.instances.clone(),
        }
    }
}

/// A system state: one flat byte vector (cheap to hash and clone).
///
/// Layout: per line the agents' states, the copies, the ack counters, the
/// home's owner (agent + 1, 0 = none) and sharers (a bit set), memory and
/// the ghost; then the network counts `[line][message][tuple]`; then an
/// error code (0 none, 1 a check read a stale value, 2 network bound
/// exceeded, 3 a send to no agent or to an agent of another role).
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
    /// A local event of `agent` on `line`; `value` is the fresh value for a
    /// store or a data message the agent originates.
    Local {
        /// Line index.
        line: u8,
        /// Agent index (two-node form: 0 generated, 1 peer, 2 local).
        agent: u8,
        /// Event index in the agent's machine.
        event: u16,
        /// Fresh value.
        value: u8,
    },
    /// Deliver one message of type `msg` on `line`; `tuple` names its
    /// sender, receiver, requester and value ([`System::tuple`]).
    Deliver {
        /// Line index.
        line: u8,
        /// Message index in the IR catalogue.
        msg: u16,
        /// Tuple index within the message type.
        tuple: u16,
        /// The op's value a `write` in the row stores (0 without one).
        value: u8,
    },
}

/// A message in flight, decoded from its tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// Sender.
    pub src: u8,
    /// Receiver.
    pub dst: u8,
    /// The requester it carries (`None` if its type carries none).
    pub req: Option<u8>,
    /// Its data value (0 for messages without data).
    pub value: u8,
}

/// How the tuples of one message type are laid out.
#[derive(Clone, Debug)]
pub(crate) struct TupleSpace {
    pub(crate) srcs: Vec<u8>,
    pub(crate) dsts: Vec<u8>,
    /// Requesters (every agent) or one `None`.
    pub(crate) reqs: Vec<Option<u8>>,
    pub(crate) vals: u8,
    /// Offset of the message's counts within a line's network block.
    base: usize,
}

impl TupleSpace {
    pub(crate) fn len(&self) -> usize {
        self.srcs.len() * self.dsts.len() * self.reqs.len() * self.vals as usize
    }

    pub(crate) fn index(&self, e: &Envelope) -> Option<usize> {
        let s = self.srcs.iter().position(|&a| a == e.src)?;
        let d = self.dsts.iter().position(|&a| a == e.dst)?;
        let r = self.reqs.iter().position(|&a| a == e.req)?;
        Some(
            ((s * self.dsts.len() + d) * self.reqs.len() + r) * self.vals as usize
                + e.value as usize,
        )
    }

    pub(crate) fn decode(&self, mut i: usize) -> Envelope {
        let value = (i % self.vals as usize) as u8;
        i /= self.vals as usize;
        let r = i % self.reqs.len();
        i /= self.reqs.len();
        let d = i % self.dsts.len();
        let s = i / self.dsts.len();
        Envelope {
            src: self.srcs[s],
            dst: self.dsts[d],
            req: self.reqs[r],
            value,
        }
    }
}

/// The composed system built from a [`ProtocolIr`].
pub struct System {
    /// The IR being checked.
    pub ir: ProtocolIr,
    /// Configuration.
    pub cfg: SystemConfig,
    pub(crate) proto: Protocol,
    pub(crate) tables: Vec<CompiledTable<()>>,
    /// Role of each agent.
    pub(crate) agent_role: Vec<usize>,
    /// Name of each agent (`dc`, `cache0`).
    pub(crate) agent_names: Vec<String>,
    /// Agents of each role.
    pub(crate) role_agents: Vec<Vec<u8>>,
    /// The home agent.
    pub(crate) home: u8,
    /// Local (non-message) event indices per role.
    pub(crate) local_events: Vec<Vec<usize>>,
    /// Per agent: offset of its copy within a line block.
    pub(crate) copy_at: Vec<Option<usize>>,
    /// Per agent: offset of its ack counter.
    pub(crate) acks_at: Vec<Option<usize>>,
    /// Per agent whose role reads with `check_window`: offset of its read
    /// window, the set of values (a bit each) that were the latest write
    /// at some moment since its last local event on the line.
    pub(crate) window_at: Vec<Option<usize>>,
    /// Offset of the home's owner and sharers.
    pub(crate) dir_at: Option<usize>,
    mem_at: usize,
    ghost_at: usize,
    per_line: usize,
    pub(crate) tuples: Vec<TupleSpace>,
    net_per_line: usize,
}

impl System {
    /// Builds the system; fails if a table names an unknown state or event,
    /// or the configuration does not fit the protocol.
    pub fn new(ir: ProtocolIr, cfg: SystemConfig) -> Result<System, String> {
        if cfg.dcus.is_empty() || cfg.dcus.len() > 8 {
            return Err("between 1 and 8 lines".into());
        }
        if cfg.values == 0 || cfg.max_in_flight == 0 {
            return Err("values and max_in_flight must be at least 1".into());
        }
        for role in cfg.instances.keys() {
            if ir.role_index(role).is_none() {
                return Err(format!("instances: unknown role {role:?}"));
            }
        }
        let proto = Protocol::new(ir.clone())?;
        let tables: Vec<CompiledTable<()>> = (0..ir.roles.len())
            .map(|r| CompiledTable::new(&proto, r, |_, _| ()))
            .collect();
        let mut agent_role = Vec::new();
        let mut agent_names = Vec::new();
        let mut role_agents = vec![Vec::new(); ir.roles.len()];
        for (r, m) in ir.roles.iter().enumerate() {
            let n = *cfg.instances.get(&m.role).unwrap_or(&1);
            if n == 0 || (n > 1 && !m.multiple) {
                return Err(format!(
                    "instances.{}: {n} instances of a role that is not `multiple`",
                    m.role
                ));
            }
            for i in 0..n {
                role_agents[r].push(agent_role.len() as u8);
                agent_role.push(r);
                agent_names.push(if m.multiple {
                    format!("{}{i}", m.name)
                } else {
                    m.name.clone()
                });
            }
        }
        if agent_role.len() > 8 {
            return Err(format!(
                "at most 8 agents in a checked system, got {}",
                agent_role.len()
            ));
        }
        let home_role = proto.home;
        let home = role_agents[home_role][0];
        // Which roles count acks and whether the home keeps a directory.
        let sends_to_sharers = |r: usize| {
            ir.roles[r].transitions.iter().any(|t| {
                matches!(&t.outcome, crate::ir::Outcome::Go { actions, .. }
                    if actions.iter().any(|a| matches!(a, crate::ir::Action::Send { to: Target::Sharers, .. })))
            })
        };
        let counts_acks: Vec<bool> = (0..ir.roles.len())
            .map(|r| sends_to_sharers(r) || proto.msgs.iter().any(|m| m.ack && m.to == r))
            .collect();
        let uses_directory = ir.roles[home_role].transitions.iter().any(|t| {
            t.guard.is_some_and(|g| g.reads_directory())
                || matches!(&t.outcome, crate::ir::Outcome::Go { actions, .. }
                    if actions.iter().any(|a| a.is_directory() || matches!(a, crate::ir::Action::Send { to: Target::Owner | Target::Sharers, .. })))
        });
        let n = agent_role.len();
        let mut at = n;
        let mut copy_at = vec![None; n];
        for (a, &r) in agent_role.iter().enumerate() {
            if ir.roles[r].data == DataHome::Copy {
                copy_at[a] = Some(at);
                at += 1;
            }
        }
        let mut acks_at = vec![None; n];
        for (a, &r) in agent_role.iter().enumerate() {
            if counts_acks[r] {
                acks_at[a] = Some(at);
                at += 1;
            }
        }
        let reads_windows = |r: usize| {
            ir.roles[r].transitions.iter().any(|t| {
                matches!(&t.outcome, crate::ir::Outcome::Go { actions, .. }
                    if actions.contains(&crate::ir::Action::CheckWindow))
            })
        };
        let mut window_at = vec![None; n];
        for (a, &r) in agent_role.iter().enumerate() {
            if reads_windows(r) {
                window_at[a] = Some(at);
                at += 1;
            }
        }
        if window_at.iter().any(Option::is_some) && cfg.values > 8 {
            return Err(format!(
                "check_window keeps a bit per data value: at most 8 values, got {}",
                cfg.values
            ));
        }
        let dir_at = uses_directory.then(|| {
            at += 2;
            at - 2
        });
        let (mem_at, ghost_at) = (at, at + 1);
        let per_line = at + 2;
        let all: Vec<Option<u8>> = (0..n as u8).map(Some).collect();
        let mut tuples = Vec::new();
        let mut net_per_line = 0;
        for m in &proto.msgs {
            let t = TupleSpace {
                srcs: role_agents[m.from].clone(),
                dsts: role_agents[m.to].clone(),
                reqs: if m.requester { all.clone() } else { vec![None] },
                vals: if m.data { cfg.values } else { 1 },
                base: net_per_line,
            };
            net_per_line += t.len();
            tuples.push(t);
        }
        let local_events = ir
            .roles
            .iter()
            .map(|m| {
                m.events
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| !e.message)
                    .map(|(i, _)| i)
                    .collect::<Vec<_>>()
            })
            .collect();
        Ok(System {
            ir,
            cfg,
            proto,
            tables,
            agent_role,
            agent_names,
            role_agents,
            home,
            local_events,
            copy_at,
            acks_at,
            window_at,
            dir_at,
            mem_at,
            ghost_at,
            per_line,
            tuples,
            net_per_line,
        })
    }

    /// Number of agents.
    pub fn agents(&self) -> usize {
        self.agent_role.len()
    }

    /// The role of `agent`.
    pub fn role_of(&self, agent: usize) -> usize {
        self.agent_role[agent]
    }

    /// The agents of `role`.
    pub fn agents_of(&self, role: usize) -> &[u8] {
        &self.role_agents[role]
    }

    /// The message in flight that tuple `tuple` of `msg` stands for.
    pub fn tuple(&self, msg: usize, tuple: usize) -> Envelope {
        self.tuples[msg].decode(tuple)
    }

    /// The local event `event` of `agent` on `line` as an action, if the
    /// agent's table has a transition for it in the current state.
    pub fn local_action(
        &self,
        s: &SysState,
        line: usize,
        agent: usize,
        event: &str,
        value: u8,
    ) -> Option<SysAction> {
        let r = self.agent_role[agent];
        let e = *self.proto.idx[r].event_ids.get(event)?;
        (self.local_row(s, line, agent, e).is_some() && !self.unit_busy(s, line, agent)).then_some(
            SysAction::Local {
                line: line as u8,
                agent: agent as u8,
                event: e as u16,
                value,
            },
        )
    }

    /// The table row `(agent, state name, event name, guard)` an action
    /// fires; `guard` is the guard of the row the guard picked (`None` for
    /// an unguarded row).
    pub fn row_of(
        &self,
        s: &SysState,
        a: &SysAction,
    ) -> (usize, String, String, Option<crate::ir::Guard>) {
        let (line, agent, event) = match *a {
            SysAction::Local {
                line, agent, event, ..
            } => (line as usize, agent as usize, event as usize),
            SysAction::Deliver {
                line, msg, tuple, ..
            } => {
                let dst = self.tuple(msg as usize, tuple as usize).dst as usize;
                let r = self.agent_role[dst];
                (
                    line as usize,
                    dst,
                    self.proto.msg_event[r][msg as usize].expect("deliverable"),
                )
            }
        };
        let m = &self.ir.roles[self.agent_role[agent]];
        let r = self.agent_role[agent];
        let st = self.state(s, line, agent);
        let guard = match self.tables[r].cell(st, event).1 {
            Cell::Guarded(g) => {
                let (req, ack) = match *a {
                    SysAction::Deliver { msg, tuple, .. } => {
                        let e = self.tuple(msg as usize, tuple as usize);
                        (e.req.unwrap_or(e.src), self.proto.msgs[msg as usize].ack)
                    }
                    SysAction::Local { .. } => (agent as u8, false),
                };
                let mut d = self.dir(&s.0, line, agent);
                if ack {
                    d.acks -= 1;
                }
                Some(if d.holds(g.guard, AgentId::from(req)) {
                    g.guard
                } else {
                    g.guard.complement()
                })
            }
            _ => None,
        };
        (
            agent,
            self.state_name(s, line, agent).to_string(),
            m.events[event].name.clone(),
            guard,
        )
    }

    /// Whether an action only finishes open work: a delivery, or a local
    /// event of an agent in a transient state (the progress check's
    /// [`Model::is_helping`]).
    pub fn helps(&self, s: &SysState, a: &SysAction) -> bool {
        match *a {
            SysAction::Deliver { .. } => true,
            SysAction::Local { line, agent, .. } => {
                let st = self.state(s, line as usize, agent as usize);
                !self.proto.stable[self.agent_role[agent as usize]][st]
            }
        }
    }

    /// Number of lines.
    pub fn lines(&self) -> usize {
        self.cfg.dcus.len()
    }

    fn line_off(&self, line: usize) -> usize {
        line * self.per_line
    }

    fn net_off(&self, line: usize, msg: usize, tuple: usize) -> usize {
        self.lines() * self.per_line + line * self.net_per_line + self.tuples[msg].base + tuple
    }

    fn err_off(&self) -> usize {
        self.lines() * (self.per_line + self.net_per_line)
    }

    fn state(&self, s: &SysState, line: usize, agent: usize) -> usize {
        s.0[self.line_off(line) + agent] as usize
    }

    /// The state name of `agent` on `line`.
    pub fn state_name(&self, s: &SysState, line: usize, agent: usize) -> &str {
        let r = self.agent_role[agent];
        &self.ir.roles[r].states[self.state(s, line, agent)].name
    }

    fn dir(&self, s: &[u8], line: usize, agent: usize) -> DirEntry {
        let b = self.line_off(line);
        let mut d = DirEntry::default();
        if let Some(a) = self.acks_at[agent] {
            d.acks = s[b + a] as i8 as i16;
        }
        if agent as u8 == self.home {
            if let Some(o) = self.dir_at {
                d.owner = s[b + o].checked_sub(1).map(AgentId::from);
                d.sharers = u64::from(s[b + o + 1]);
            }
        }
        d
    }

    fn set_dir(&self, s: &mut [u8], line: usize, agent: usize, d: &DirEntry) {
        let b = self.line_off(line);
        if let Some(a) = self.acks_at[agent] {
            s[b + a] = d.acks as i8 as u8;
        }
        if agent as u8 == self.home {
            if let Some(o) = self.dir_at {
                s[b + o] = d.owner.map_or(0, |x| x as u8 + 1);
                s[b + o + 1] = d.sharers as u8;
            }
        }
    }

    /// The cell `agent` fires for `event` on `line`, guards resolved for
    /// requester `req` (after counting the ack of an `ack` message).
    fn cell<'a>(
        &'a self,
        s: &[u8],
        line: usize,
        agent: usize,
        event: usize,
        req: u8,
        ack: bool,
    ) -> &'a Cell<()> {
        let r = self.agent_role[agent];
        let st = s[self.line_off(line) + agent] as usize;
        let cell = self.tables[r].cell(st, event).1;
        if !matches!(cell, Cell::Guarded(_)) {
            return cell;
        }
        let mut d = self.dir(s, line, agent);
        if ack {
            d.acks -= 1;
        }
        pick(cell, |g| d.holds(g, AgentId::from(req)))
    }

    fn local_row(&self, s: &SysState, line: usize, agent: usize, event: usize) -> Option<&Row<()>> {
        match self.cell(&s.0, line, agent, event, agent as u8, false) {
            Cell::Go(row) => Some(row),
            _ => None,
        }
    }

    /// The row a delivery fires, if the receiver takes it (not a stall).
    fn delivery_row(&self, s: &[u8], line: usize, msg: usize, e: &Envelope) -> Option<&Row<()>> {
        let dst = e.dst as usize;
        let ev = self.proto.msg_event[self.agent_role[dst]][msg]?;
        let f = &self.proto.msgs[msg];
        match self.cell(s, line, dst, ev, e.req.unwrap_or(e.src), f.ack) {
            Cell::Go(row) => Some(row),
            _ => None,
        }
    }

    /// Whether message `msg` (envelope `e`) on `line` waits behind a message
    /// of a channel it is ordered after, from the same sender to the same
    /// receiver ([`crate::ir::ChannelInfo::ordered_after`]).
    pub fn held_back(&self, s: &[u8], line: usize, msg: usize, e: &Envelope) -> bool {
        self.proto.msgs[msg].ordered_after.iter().any(|&o| {
            let o = o as usize;
            (0..self.tuples[o].len()).any(|t| {
                let x = self.tuple(o, t);
                x.src == e.src && x.dst == e.dst && s[self.net_off(line, o, t)] > 0
            })
        })
    }

    /// Whether `agent` belongs to a serial role whose unit is busy with
    /// another line.
    fn unit_busy(&self, s: &SysState, line: usize, agent: usize) -> bool {
        self.unit_holder(s, line, agent).is_some()
    }

    /// The other line holding `agent`'s serial unit, if any.
    fn unit_holder(&self, s: &SysState, line: usize, agent: usize) -> Option<usize> {
        let r = self.agent_role[agent];
        if !self.ir.roles[r].serial {
            return None;
        }
        (0..self.lines()).find(|&o| {
            o != line
                && self.cfg.dcus[o] == self.cfg.dcus[line]
                && !self.proto.stable[r][self.state(s, o, agent)]
        })
    }

    /// Applies `row` for `agent` on `line`: a delivery's (its data
    /// `input`, sender, requester and whether it is an ack), or a local
    /// event's (`delivery` None; its "received data" is the op's own value
    /// `fresh`).
    fn apply(
        &self,
        s: &mut Vec<u8>,
        line: usize,
        agent: usize,
        row: &Row<()>,
        fresh: u8,
        delivery: Option<(Option<u8>, u8, u8, bool)>,
    ) {
        let local = delivery.is_none();
        let (input, src, req, ack) =
            delivery.unwrap_or((Some(fresh), agent as u8, agent as u8, false));
        let mut dir = self.dir(s, line, agent);
        if ack {
            dir.acks -= 1;
        }
        let mut fx = Apply {
            sys: self,
            s,
            line,
            agent,
            input,
            local,
            fresh,
            src,
            req,
            dir,
        };
        // A failing effect has recorded its error code in the state.
        let _ = execute(row, &mut fx);
        let dir = fx.dir;
        self.set_dir(s, line, agent, &dir);
        let b = self.line_off(line);
        s[b + agent] = row.next as u8;
        if let Some(c) = self.copy_at[agent] {
            if !row.holds_after {
                s[b + c] = 0;
            }
        }
    }

    /// Whether a state is quiescent: every agent stable and nothing in flight.
    pub fn quiescent(&self, s: &SysState) -> bool {
        (0..self.lines()).all(|l| {
            (0..self.agents()).all(|a| self.proto.stable[self.agent_role[a]][self.state(s, l, a)])
        }) && s.0[self.lines() * self.per_line..self.err_off()]
            .iter()
            .all(|&c| c == 0)
    }

    /// Messages in flight as `(line, msg index, tuple, count)`.
    pub fn in_flight(&self, s: &SysState) -> Vec<(usize, usize, usize, u8)> {
        let mut v = Vec::new();
        for l in 0..self.lines() {
            for m in 0..self.proto.msgs.len() {
                for t in 0..self.tuples[m].len() {
                    let c = s.0[self.net_off(l, m, t)];
                    if c > 0 {
                        v.push((l, m, t, c));
                    }
                }
            }
        }
        v
    }

    /// The label of a message in flight: `NAME(A)`, with its data value,
    /// and with sender, receiver and requester where a role has several
    /// instances.
    fn msg_label(&self, line: usize, msg: usize, e: &Envelope) -> String {
        let f = &self.proto.msgs[msg];
        let mut x = format!("{}({}", f.name, self.line_name(line));
        let shown = |r: usize| self.ir.roles[r].multiple;
        if shown(f.from) || shown(f.to) {
            x.push_str(&format!(
                ", {}->{}",
                self.agent_names[e.src as usize], self.agent_names[e.dst as usize]
            ));
        }
        if let Some(r) = e.req {
            x.push_str(&format!(", req={}", self.agent_names[r as usize]));
        }
        if f.data {
            x.push_str(&format!(",{}", e.value));
        }
        x.push(')');
        x
    }

    /// A one-line description of a state, for traces. Messages that wait
    /// for a busy serial unit are marked with the line holding the unit.
    pub fn describe(&self, s: &SysState) -> String {
        let mut parts = Vec::new();
        for l in 0..self.lines() {
            let b = self.line_off(l);
            let states: Vec<String> = (0..self.agents())
                .map(|a| format!("{}={}", self.agent_names[a], self.state_name(s, l, a)))
                .collect();
            let copies: Vec<String> = (0..self.agents())
                .filter_map(|a| self.copy_at[a].map(|c| (a, s.0[b + c])))
                .map(|(a, v)| {
                    if self.role_agents[self.agent_role[a]].len() == 1
                        && self.copy_at.iter().flatten().count() == 1
                    {
                        format!("cache={v}")
                    } else {
                        format!("{}.copy={v}", self.agent_names[a])
                    }
                })
                .collect();
            let mut d = String::new();
            if let Some(o) = self.dir_at {
                let owner = s.0[b + o]
                    .checked_sub(1)
                    .map_or("-".to_string(), |x| self.agent_names[x as usize].clone());
                let sharers: Vec<&str> = (0..self.agents())
                    .filter(|&a| s.0[b + o + 1] & (1 << a) != 0)
                    .map(|a| self.agent_names[a].as_str())
                    .collect();
                d = format!(" owner={owner} sharers=[{}]", sharers.join(","));
            }
            for (a, at) in self.acks_at.iter().enumerate() {
                if let Some(at) = at {
                    let v = s.0[b + at] as i8;
                    if v != 0 {
                        d.push_str(&format!(" {}.acks={v}", self.agent_names[a]));
                    }
                }
            }
            parts.push(format!(
                "line {}: {} {}{d} mem={} latest={}",
                self.line_name(l),
                states.join(" "),
                if copies.is_empty() {
                    "cache=0".to_string()
                } else {
                    copies.join(" ")
                },
                s.0[b + self.mem_at],
                s.0[b + self.ghost_at]
            ));
        }
        let net: Vec<String> = self
            .in_flight(s)
            .into_iter()
            .map(|(l, m, t, c)| {
                let e = self.tuple(m, t);
                let mut x = self.msg_label(l, m, &e);
                if c > 1 {
                    x.push_str(&format!("x{c}"));
                }
                if let Some(holder) = self.unit_holder(s, l, e.dst as usize) {
                    x.push_str(&format!(
                        " [waits: DCU {} is busy with line {} in {}]",
                        self.cfg.dcus[l],
                        self.line_name(holder),
                        self.state_name(s, holder, e.dst as usize)
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

    /// Agent names by agent index.
    pub fn agent_names(&self) -> &[String] {
        &self.agent_names
    }

    /// Message names by index.
    pub fn message_name(&self, m: usize) -> &str {
        self.proto.msgs[m].name
    }

    /// Number of message types.
    pub fn n_messages(&self) -> usize {
        self.proto.msgs.len()
    }

    /// Whether message `m` is a request.
    pub fn is_request(&self, m: usize) -> bool {
        self.proto.msgs[m].class == MsgClass::Request
    }

    /// The compiled protocol the system runs.
    pub fn protocol(&self) -> &Protocol {
        &self.proto
    }

    /// The value `agent` holds on `line`: its copy, or memory.
    fn value_of(&self, s: &[u8], line: usize, agent: usize) -> u8 {
        let b = self.line_off(line);
        match self.copy_at[agent] {
            Some(c) => s[b + c],
            None => s[b + self.mem_at],
        }
    }

    /// Applies `f` to the invariants' view of line `l`.
    fn with_view<T>(&self, s: &SysState, l: usize, f: impl FnOnce(&LineView<'_, u8>) -> T) -> T {
        let b = self.line_off(l);
        let agents: Vec<AgentLine<'_, u8>> = (0..self.agents())
            .map(|a| {
                let r = self.agent_role[a];
                let st = self.state(s, l, a);
                AgentLine {
                    name: &self.agent_names[a],
                    state: &self.ir.roles[r].states[st].name,
                    access: self.proto.access[r][st],
                    value: Some(self.value_of(&s.0, l, a)),
                }
            })
            .collect();
        let data_in_flight = (0..self.n_messages()).any(|m| {
            self.proto.moves_cached_data(m as u16)
                && (0..self.tuples[m].len()).any(|t| s.0[self.net_off(l, m, t)] > 0)
        });
        let name = self.line_name(l);
        f(&LineView {
            line: &name as &dyn std::fmt::Display,
            agents: &agents,
            memory: s.0[b + self.mem_at],
            latest: s.0[b + self.ghost_at],
            data_in_flight,
        })
    }
}

/// A row's effects on a state vector: the checker's side of
/// [`crate::engine::Effects`].
struct Apply<'a> {
    sys: &'a System,
    s: &'a mut Vec<u8>,
    line: usize,
    agent: usize,
    input: Option<u8>,
    /// A local event's row (its `input` is the op's value, not data read).
    local: bool,
    fresh: u8,
    src: u8,
    req: u8,
    dir: DirEntry,
}

impl Apply<'_> {
    fn fail(&mut self, code: u8) -> Result<(), String> {
        let e = self.sys.err_off();
        self.s[e] = self.s[e].max(code);
        Err(format!("error {code}"))
    }

    fn base(&self) -> usize {
        self.sys.line_off(self.line)
    }

    /// `v` becomes the latest write: the ghost, and a value every open
    /// read window has seen.
    fn latest(&mut self, v: u8) {
        let b = self.base();
        self.s[b + self.sys.ghost_at] = v;
        for w in self.sys.window_at.iter().flatten() {
            self.s[b + w] |= 1 << v;
        }
    }

    fn value(&self) -> u8 {
        self.sys.value_of(self.s, self.line, self.agent)
    }

    fn put(&mut self, e: Envelope, msg: usize) -> Result<(), String> {
        let Some(t) = self.sys.tuples[msg].index(&e) else {
            // A target of the wrong role.
            return self.fail(3);
        };
        let o = self.sys.net_off(self.line, msg, t);
        if self.s[o] >= self.sys.cfg.max_in_flight {
            return self.fail(2);
        }
        self.s[o] += 1;
        Ok(())
    }
}

impl Effects<()> for Apply<'_> {
    fn send(&mut self, st: &SendStep<()>) -> Result<(), String> {
        let sys = self.sys;
        let msg = st.msg as usize;
        let f = &sys.proto.msgs[msg];
        let value = if !st.data {
            0
        } else {
            match st.source {
                DataSource::Copy => self.s[self.base() + sys.copy_at[self.agent].expect("copy")],
                DataSource::Memory => self.s[self.base() + sys.mem_at],
                DataSource::Fresh => self.fresh,
            }
        };
        let req = st.requester.then_some(self.req);
        let src = self.agent as u8;
        let one = move |dst: u8| Envelope {
            src,
            dst,
            req,
            value,
        };
        if f.counts_ack && st.target != Target::Sharers {
            self.dir.acks += 1;
        }
        match st.target {
            Target::Default => {
                let dst = if f.to == sys.proto.home {
                    sys.home
                } else {
                    sys.role_agents[f.to][0]
                };
                self.put(one(dst), msg)
            }
            Target::Home => self.put(one(sys.home), msg),
            Target::Src => self.put(one(self.src), msg),
            Target::Req => self.put(one(self.req), msg),
            Target::Owner => match self.dir.owner {
                Some(o) => self.put(one(o as u8), msg),
                None => self.fail(3),
            },
            Target::Sharers => {
                // The sharers of the message's receiving role: a row may
                // send one message to the sharing caches and another to
                // the sharing devices.
                let others = self.dir.others(AgentId::from(self.req));
                for a in 0..sys.agents() as u8 {
                    if others & (1 << a) != 0 && sys.agent_role[a as usize] == f.to {
                        self.put(one(a), msg)?;
                        self.dir.acks += 1;
                    }
                }
                Ok(())
            }
        }
    }

    fn fill(&mut self) -> Result<(), String> {
        let b = self.base();
        match self.sys.copy_at[self.agent] {
            Some(c) => {
                self.s[b + c] = self.input.unwrap_or(0);
                Ok(())
            }
            None => Err("fill without a copy".into()),
        }
    }

    fn store(&mut self) -> Result<(), String> {
        let b = self.base();
        let v = self.input.unwrap_or(self.fresh);
        match self.sys.copy_at[self.agent] {
            Some(c) => self.s[b + c] = v,
            None => self.s[b + self.sys.mem_at] = v,
        }
        self.latest(v);
        Ok(())
    }

    fn check(&mut self) -> Result<(), String> {
        let b = self.base();
        if self.value() != self.s[b + self.sys.ghost_at] {
            let e = self.sys.err_off();
            self.s[e] = 1;
        }
        Ok(())
    }

    fn check_window(&mut self) -> Result<(), String> {
        let w = self.sys.window_at[self.agent].expect("a window where the role reads with one");
        // The data received; a local row (a hit) reads the agent's value.
        let v = match self.input {
            Some(d) if !self.local => d,
            _ => self.value(),
        };
        if self.s[self.base() + w] & (1 << v) == 0 {
            let e = self.sys.err_off();
            self.s[e] = 1;
        }
        Ok(())
    }

    fn write(&mut self) -> Result<(), String> {
        let b = self.base();
        let v = self.fresh;
        match self.sys.copy_at[self.agent] {
            Some(c) => self.s[b + c] = v,
            None => self.s[b + self.sys.mem_at] = v,
        }
        self.latest(v);
        Ok(())
    }

    fn write_mem(&mut self) -> Result<(), String> {
        let b = self.base();
        self.s[b + self.sys.mem_at] = self.input.unwrap_or(0);
        Ok(())
    }

    fn directory(&mut self, op: DirOp) -> Result<(), String> {
        self.dir.apply(op, AgentId::from(self.req));
        Ok(())
    }
}

pub(crate) fn inv_swmr(sys: &System, s: &SysState) -> Result<(), String> {
    (0..sys.lines()).try_for_each(|l| sys.with_view(s, l, invariants::swmr))
}

pub(crate) fn inv_data(sys: &System, s: &SysState) -> Result<(), String> {
    if s.0[sys.err_off()] == 1 {
        return Err("a read returned a value other than the latest write".into());
    }
    (0..sys.lines()).try_for_each(|l| sys.with_view(s, l, invariants::data_value))
}

pub(crate) fn inv_reception(sys: &System, s: &SysState) -> Result<(), String> {
    for (l, m, t, _) in sys.in_flight(s) {
        let e = sys.tuple(m, t);
        // A message held behind an earlier one is judged when it can arrive.
        if sys.held_back(&s.0, l, m, &e) {
            continue;
        }
        let dst = e.dst as usize;
        let r = sys.agent_role[dst];
        let st = sys.state(s, l, dst);
        let specified = sys.proto.msg_event[r][m]
            .is_some_and(|ev| !matches!(sys.tables[r].cell(st, ev).1, Cell::Unspecified));
        if !specified {
            return Err(invariants::unspecified(
                &sys.line_name(l),
                sys.message_name(m),
                &sys.agent_names[dst],
                sys.state_name(s, l, dst),
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

pub(crate) fn inv_targets(sys: &System, s: &SysState) -> Result<(), String> {
    if s.0[sys.err_off()] == 3 {
        return Err(
            "a row sent to its owner while the line had none, or to an agent of another role than the message's receiver"
                .into(),
        );
    }
    Ok(())
}

impl Model for System {
    type State = SysState;
    type Action = SysAction;

    fn init_states(&self) -> Vec<SysState> {
        let mut s = vec![0u8; self.err_off() + 1];
        for l in 0..self.lines() {
            for a in 0..self.agents() {
                s[self.line_off(l) + a] = self.proto.initial[self.agent_role[a]] as u8;
            }
        }
        vec![SysState(s.into_boxed_slice())]
    }

    fn actions(&self, s: &SysState, out: &mut Vec<SysAction>) {
        if s.0[self.err_off()] != 0 {
            return;
        }
        for l in 0..self.lines() {
            for a in 0..self.agents() {
                if self.unit_busy(s, l, a) {
                    continue;
                }
                for &e in &self.local_events[self.agent_role[a]] {
                    if let Some(row) = self.local_row(s, l, a, e) {
                        let n = if row.fresh { self.cfg.values } else { 1 };
                        for v in 0..n {
                            out.push(SysAction::Local {
                                line: l as u8,
                                agent: a as u8,
                                event: e as u16,
                                value: v,
                            });
                        }
                    }
                }
            }
            for m in 0..self.n_messages() {
                for t in 0..self.tuples[m].len() {
                    if s.0[self.net_off(l, m, t)] == 0 {
                        continue;
                    }
                    let e = self.tuple(m, t);
                    if self.unit_busy(s, l, e.dst as usize) || self.held_back(&s.0, l, m, &e) {
                        continue;
                    }
                    if let Some(row) = self.delivery_row(&s.0, l, m, &e) {
                        let n = if row.fresh { self.cfg.values } else { 1 };
                        for v in 0..n {
                            out.push(SysAction::Deliver {
                                line: l as u8,
                                msg: m as u16,
                                tuple: t as u16,
                                value: v,
                            });
                        }
                    }
                }
            }
        }
    }

    fn next_state(&self, s: &SysState, a: &SysAction) -> Option<SysState> {
        match *a {
            SysAction::Local {
                line,
                agent,
                event,
                value,
            } => {
                let (l, a) = (line as usize, agent as usize);
                let row = self.local_row(s, l, a, event as usize)?;
                let mut v = s.0.to_vec();
                // A local event starts the agent's read window on the line.
                if let Some(w) = self.window_at[a] {
                    let b = self.line_off(l);
                    v[b + w] = 1 << v[b + self.ghost_at];
                }
                self.apply(&mut v, l, a, row, value, None);
                Some(SysState(v.into_boxed_slice()))
            }
            SysAction::Deliver {
                line,
                msg,
                tuple,
                value,
            } => {
                let (l, m, t) = (line as usize, msg as usize, tuple as usize);
                let o = self.net_off(l, m, t);
                if s.0[o] == 0 {
                    return None;
                }
                let e = self.tuple(m, t);
                if self.held_back(&s.0, l, m, &e) {
                    return None;
                }
                let row = self.delivery_row(&s.0, l, m, &e)?;
                let mut v = s.0.to_vec();
                v[o] -= 1;
                let f = &self.proto.msgs[m];
                let input = f.data.then_some(e.value);
                let req = e.req.unwrap_or(e.src);
                self.apply(
                    &mut v,
                    l,
                    e.dst as usize,
                    row,
                    value,
                    Some((input, e.src, req, f.ack)),
                );
                Some(SysState(v.into_boxed_slice()))
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
            Invariant {
                name: "valid-targets",
                check: inv_targets,
            },
        ]
    }

    fn is_quiescent(&self, s: &SysState) -> bool {
        self.quiescent(s)
    }

    fn is_helping(&self, s: &SysState, a: &SysAction) -> bool {
        self.helps(s, a)
    }

    fn chart_step(&self, s: &SysState, a: &SysAction) -> ChartStep {
        match *a {
            SysAction::Local {
                line,
                agent,
                event,
                value,
            } => {
                let m = &self.ir.roles[self.agent_role[agent as usize]];
                let e = &m.events[event as usize].name;
                let stores = self
                    .local_row(s, line as usize, agent as usize, event as usize)
                    .is_some_and(|r| r.fresh);
                let me = self.agent_names[agent as usize].clone();
                ChartStep {
                    from: me.clone(),
                    to: me,
                    label: if stores {
                        format!("{e}({}={value})", self.line_name(line as usize))
                    } else {
                        format!("{e}({})", self.line_name(line as usize))
                    },
                }
            }
            SysAction::Deliver {
                line,
                msg,
                tuple,
                value,
            } => {
                let e = self.tuple(msg as usize, tuple as usize);
                let f = &self.proto.msgs[msg as usize];
                let mut label = format!("{}({}", f.name, self.line_name(line as usize));
                if let Some(r) = e.req {
                    label.push_str(&format!(", req={}", self.agent_names[r as usize]));
                }
                if f.data {
                    label.push_str(&format!(", data={}", e.value));
                }
                let writes = self
                    .delivery_row(&s.0, line as usize, msg as usize, &e)
                    .is_some_and(|r| r.fresh);
                if writes {
                    label.push_str(&format!(", write={value}"));
                }
                label.push(')');
                ChartStep {
                    from: self.agent_names[e.src as usize].clone(),
                    to: self.agent_names[e.dst as usize].clone(),
                    label,
                }
            }
        }
    }

    fn agents(&self) -> Vec<String> {
        if self.ir.generated().is_some() && self.agents() == 3 {
            // Two-node form: the remote on the left, the home in the middle.
            return vec![
                self.agent_names[1].clone(),
                self.agent_names[0].clone(),
                self.agent_names[2].clone(),
            ];
        }
        self.agent_names.clone()
    }
}
