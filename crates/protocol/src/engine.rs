//! The protocol engine: the one place where a table row's meaning is
//! defined, and the one executor every agent runs rows with.
//!
//! Both drivers of a protocol use it: the exhaustive checker
//! ([`crate::system::System`]) executes rows on its byte-vector states,
//! and every simulated agent (the DC, the LLC, the CC, the CPU home, the
//! generic table agents) executes the same rows on real lines. What an
//! agent supplies is only *how* an effect happens to its data
//! ([`Effects`]); *which* effects a row has, in which order, with which
//! data, to which agent, is decided here.
//!
//! ```text
//!   ProtocolIr ──Protocol::new──▶ Protocol (dense tables, message facts)
//!                                    │ CompiledTable::new(role, route)
//!                                    ▼
//!   (state, event) ──cell──▶ Cell::Go(Row) | Stall | Unspecified | Guarded
//!                                    │ pick(guard holds?)
//!                                    ▼
//!                     execute(row, &mut impl Effects) → send / fill /
//!                     write_mem / store / check / directory op
//! ```
//!
//! **The actions** (spec syntax in brackets):
//!
//! * `send` \[`send M`, `send M to T`\]: one message `M` to the target `T`
//!   ([`Target`]); `to sharers` sends one to every sharer except the
//!   requester and adds the number sent to the agent's ack counter. Its
//!   data, if `M` carries data, comes from ([`DataSource`], resolved when
//!   the table is compiled): the op's own value if `M` is declared
//!   `operands` (a far atomic's operands); else the agent's copy if its
//!   role keeps a copy and the row starts in a state that holds data; else
//!   memory if the agent is the home; else a fresh value (a new write
//!   entering the protocol, e.g. a DMA write). A message that carries a requester carries the
//!   row's requester.
//! * `fill`: the agent's copy := the received data.
//! * `write_mem`: memory := the received data.
//! * `store`: the agent's value (its copy if it keeps one, else memory) :=
//!   the received data; the latest-write ghost follows (this is the write's
//!   linearization point).
//! * `write`: the agent's value := the op's own value (a fresh value), even
//!   in a row a message triggers (the store that completes when the data it
//!   waited for arrives); the ghost follows.
//! * `check`: the agent's value must equal the latest write (a read).
//!
//! In a row a local event triggers, "the received data" is the op's own
//! data: a fresh value the environment (the checker) or the program (the
//! simulator's core, tester or DMA) chooses.
//! * directory actions (home only), on the row's requester
//!   ([`DirOp`]): `add_sharer`, `remove_sharer`, `clear_sharers`,
//!   `set_owner`, `clear_owner`, `owner_to_sharers`.
//!
//! After a row, an agent whose role keeps a copy drops it when the new state
//! does not hold data.
//!
//! **The row's requester** (`req`): the handled message's requester if its
//! type carries one, else its sender, else (a local event) the agent itself.
//!
//! **Guards** pick one of two rows of a (state, event): see [`Guard`] and
//! [`DirEntry::holds`]. An agent that receives a message declared `ack`
//! decrements its ack counter for the line before the guard is evaluated.
//!
//! ```
//! use ccsim_protocol::engine::{CompiledTable, Protocol, Cell};
//! let spec = ccsim_protocol::load_spec("msi-dma").unwrap();
//! let (ir, _) = ccsim_protocol::generate(&spec).unwrap();
//! let p = Protocol::new(ir).unwrap();
//! let cache = p.ir.role_index("cache").unwrap();
//! let t = CompiledTable::new(&p, cache, |_, _| ());
//! // A load in I sends GetS and waits for the data.
//! let (i, load) = (p.state(cache, "I").unwrap(), p.event(cache, "load").unwrap());
//! let Cell::Go(row) = t.cell(i, load).1 else { panic!() };
//! assert_eq!(p.ir.roles[cache].states[row.next].name, "IS_D");
//! assert_eq!(row.sent.len(), 1);
//! ```

use std::collections::BTreeMap;

use crate::ir::{
    Access, Action, DataHome, Guard, IndexedOutcome, MachineIndex, MsgClass, ProtocolIr, Target,
};

/// The process-wide copy of a message name. Each distinct name is stored
/// once for the life of the process (protocols have a few dozen names), so
/// compiled rows and simulated messages carry `&'static str` names.
pub fn intern(name: &str) -> &'static str {
    use std::collections::BTreeSet;
    static NAMES: std::sync::OnceLock<std::sync::Mutex<BTreeSet<&'static str>>> =
        std::sync::OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(n);
    n
}

/// Facts about one message type, resolved once.
#[derive(Clone, Debug)]
pub struct MsgFacts {
    /// Name ([`intern`]ed).
    pub name: &'static str,
    /// Whether it carries a line.
    pub data: bool,
    /// Sending role (index into [`ProtocolIr::roles`]).
    pub from: usize,
    /// Receiving role.
    pub to: usize,
    /// Class (only requests may stall).
    pub class: MsgClass,
    /// It carries the requester it acts for.
    pub requester: bool,
    /// Receiving it counts one acknowledgement.
    pub ack: bool,
    /// Sending it expects one acknowledgement (any target but the sharers,
    /// whose sends always count one each).
    pub counts_ack: bool,
    /// Its data is the sending operation's own value (see
    /// [`crate::ir::MessageInfo::operands`]).
    pub operands: bool,
    /// Messages this one is ordered behind, point to point (the messages
    /// of its channel's `ordered_after` channels).
    pub ordered_after: Vec<u16>,
}

/// A protocol ready to execute: the IR, one dense table per role and the
/// facts of every message, all resolved once.
#[derive(Clone, Debug)]
pub struct Protocol {
    /// The IR (as checked).
    pub ir: ProtocolIr,
    /// Dense tables by role.
    pub idx: Vec<MachineIndex>,
    /// Message facts by catalogue index.
    pub msgs: Vec<MsgFacts>,
    /// `msg_event[role][msg]`: the event index of a message in a role's table.
    pub msg_event: Vec<Vec<Option<usize>>>,
    /// Initial state per role.
    pub initial: Vec<usize>,
    /// Whether each state of each role is stable.
    pub stable: Vec<Vec<bool>>,
    /// Each state's access to the line.
    pub access: Vec<Vec<Access>>,
    /// Whether each state holds the line's data.
    pub holds: Vec<Vec<bool>>,
    /// The home role.
    pub home: usize,
    msg_ids: BTreeMap<String, u16>,
}

impl Protocol {
    /// Indexes `ir`; fails with the reason when a table names an unknown
    /// state, event or message, or sends a message another role sends.
    pub fn new(ir: ProtocolIr) -> Result<Protocol, String> {
        let idx = ir
            .roles
            .iter()
            .map(|m| m.index())
            .collect::<Result<Vec<_>, _>>()?;
        let role_of = |r: &str| {
            ir.role_index(r)
                .ok_or_else(|| format!("{}: unknown role {r:?}", ir.name))
        };
        let mut msgs = Vec::with_capacity(ir.messages.len());
        for m in &ir.messages {
            msgs.push(MsgFacts {
                name: intern(&m.name),
                data: m.data,
                from: role_of(&m.from)?,
                to: role_of(&m.to)?,
                class: m.class,
                requester: m.requester,
                ack: m.ack,
                counts_ack: m.counts_ack,
                operands: m.operands,
                ordered_after: Vec::new(),
            });
        }
        let msg_ids: BTreeMap<String, u16> = ir
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.clone(), i as u16))
            .collect();
        for (mi, m) in ir.messages.iter().enumerate() {
            let channel = ir.channels.iter().find(|c| c.name == m.channel);
            let behind = channel.map_or(&[][..], |c| &c.ordered_after[..]);
            msgs[mi].ordered_after = ir
                .messages
                .iter()
                .enumerate()
                .filter(|(_, o)| behind.contains(&o.channel))
                .map(|(oi, _)| oi as u16)
                .collect();
        }
        let mut initial = Vec::new();
        for (r, m) in ir.roles.iter().enumerate() {
            initial.push(
                idx[r]
                    .state(&m.initial)
                    .ok_or_else(|| format!("{}: unknown initial state {}", m.name, m.initial))?,
            );
            if m.states.len() > 255 {
                return Err(format!("{}: more than 255 states", m.name));
            }
            for t in &m.transitions {
                if let crate::ir::Outcome::Go { actions, .. } = &t.outcome {
                    for x in actions.iter().filter_map(Action::sent) {
                        match msg_ids.get(x) {
                            None => {
                                return Err(format!(
                                    "{}: ({}, {}) sends unknown message {x}",
                                    m.name, t.state, t.event
                                ))
                            }
                            Some(&mi) if msgs[mi as usize].from != r => {
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
        let msg_event = (0..ir.roles.len())
            .map(|r| msgs.iter().map(|m| idx[r].event(m.name)).collect())
            .collect();
        Ok(Protocol {
            stable: ir
                .roles
                .iter()
                .map(|m| m.states.iter().map(|s| s.stable).collect())
                .collect(),
            access: ir
                .roles
                .iter()
                .map(|m| m.states.iter().map(|s| s.access).collect())
                .collect(),
            holds: ir
                .roles
                .iter()
                .map(|m| m.states.iter().map(|s| s.holds_data).collect())
                .collect(),
            home: ir.home_index(),
            idx,
            msgs,
            msg_event,
            initial,
            msg_ids,
            ir,
        })
    }

    /// Message index by name.
    pub fn msg(&self, name: &str) -> Option<u16> {
        self.msg_ids.get(name).copied()
    }

    /// Index of `role`'s state `name`.
    pub fn state(&self, role: usize, name: &str) -> Option<usize> {
        self.idx[role].state(name)
    }

    /// Index of `role`'s event `name` (a message or a local event).
    pub fn event(&self, role: usize, name: &str) -> Option<usize> {
        self.idx[role].event(name)
    }

    /// State name of `role`.
    pub fn state_name(&self, role: usize, state: usize) -> &str {
        &self.ir.roles[role].states[state].name
    }

    /// Machine name of `role` (`dc`, `cpu`, `cache`, ...).
    pub fn agent(&self, role: usize) -> &str {
        &self.ir.roles[role].name
    }

    /// Whether `role` keeps its own copy of the line.
    pub fn keeps_copy(&self, role: usize) -> bool {
        self.ir.roles[role].data == DataHome::Copy
    }

    /// Whether a data message `msg` moves a caching agent's data to the
    /// home or to another cache: a write-back or a cache-to-cache transfer.
    /// While one is in flight, memory may lag the latest write.
    pub fn moves_cached_data(&self, msg: u16) -> bool {
        let m = &self.msgs[msg as usize];
        m.data && self.keeps_copy(m.from) && (m.to == self.home || self.keeps_copy(m.to))
    }
}

/// Where a `send`'s data comes from (resolved when a table is compiled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataSource {
    /// The agent's own copy.
    Copy,
    /// The line's memory at the home.
    Memory,
    /// A fresh value chosen by the environment (a new write entering).
    Fresh,
}

/// A compiled `send`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendStep<D> {
    /// Catalogue index of the message.
    pub msg: u16,
    /// Its name (interned).
    pub name: &'static str,
    /// Whether it carries the line.
    pub data: bool,
    /// Where its data comes from.
    pub source: DataSource,
    /// Which agent(s) it goes to.
    pub target: Target,
    /// It carries the row's requester.
    pub requester: bool,
    /// Where the agent routes it (chosen by the agent when it compiles its
    /// table: a port, a pipeline, ...).
    pub to: D,
}

/// A directory operation (home only), on the row's requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirOp {
    /// The requester becomes a sharer.
    AddSharer,
    /// The requester is no longer a sharer.
    RemoveSharer,
    /// No sharers.
    ClearSharers,
    /// The requester owns the line.
    SetOwner,
    /// No owner.
    ClearOwner,
    /// The owner becomes a sharer; no owner.
    OwnerToSharers,
}

/// One action of a compiled row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step<D> {
    /// Send a message.
    Send(SendStep<D>),
    /// Take the received line as the copy.
    Fill,
    /// Update the line with the stored value (the ghost follows).
    Store,
    /// Compare what is read with the latest write.
    Check,
    /// Compare what is read with the writes of the read's window.
    CheckWindow,
    /// Write the op's own value (the ghost follows).
    Write,
    /// Write the received line to memory.
    WriteMem,
    /// Update the directory entry.
    Dir(DirOp),
}

/// A `Go` cell: the transition and what it does to the line.
#[derive(Debug)]
pub struct Row<D> {
    /// The next state.
    pub next: usize,
    /// The row's actions, compiled.
    pub steps: Box<[Step<D>]>,
    /// The messages the row sends, in order.
    pub sent: Box<[u16]>,
    /// `next` is the machine's initial state (the line leaves the sparse map).
    pub next_initial: bool,
    /// `next` is stable.
    pub next_stable: bool,
    /// The row leaves / reaches a stable state: it starts / ends a
    /// transaction.
    pub opens: bool,
    /// See `opens`.
    pub closes: bool,
    /// The agent has access to the line before / after the row.
    pub had: bool,
    /// See `had`.
    pub has: bool,
    /// The agent holds the line's data after the row (else an agent that
    /// keeps a copy drops it).
    pub holds_after: bool,
    /// The row keeps the state and only reads (`check` actions): a hit.
    pub read_only: bool,
    /// The row needs a fresh value (the op's data): in a row of a local
    /// event any step that takes data or a data `send` from
    /// [`DataSource::Fresh`]; in a row of a message, a `write`.
    pub fresh: bool,
}

impl<D> Row<D> {
    /// Whether any step sends.
    #[inline]
    pub fn sends(&self) -> bool {
        !self.sent.is_empty()
    }
}

/// A cell of a compiled table.
#[derive(Debug)]
pub enum Cell<D> {
    /// No transition: an unspecified reception.
    Unspecified,
    /// Leave the message queued (requests only).
    Stall,
    /// Take the row.
    Go(Row<D>),
    /// One of two cells, picked by a guard ([`pick`]).
    Guarded(Box<GuardedCell<D>>),
}

/// The two cells of a guarded (state, event).
#[derive(Debug)]
pub struct GuardedCell<D> {
    /// The guard of `yes` (the positive guard of its pair).
    pub guard: Guard,
    /// The cell when the guard holds.
    pub yes: Cell<D>,
    /// The cell when it does not.
    pub no: Cell<D>,
}

/// The cell a guard picks: `cell` itself unless it is guarded, then the
/// branch whose guard `holds` says holds.
#[inline]
pub fn pick<D>(cell: &Cell<D>, holds: impl Fn(Guard) -> bool) -> &Cell<D> {
    match cell {
        Cell::Guarded(g) => {
            if holds(g.guard) {
                &g.yes
            } else {
                &g.no
            }
        }
        other => other,
    }
}

/// One role's table compiled for execution.
#[derive(Debug)]
pub struct CompiledTable<D> {
    /// Events of the machine (the row stride of `cells`).
    pub n_events: usize,
    /// By `state * n_events + event`, as [`MachineIndex::table`].
    pub cells: Vec<Cell<D>>,
    /// The table's event for each catalogue message (`None`: it has none).
    pub msg_event: Vec<Option<usize>>,
    /// The initial state.
    pub initial: usize,
    /// Whether each state is stable.
    pub stable: Vec<bool>,
    /// Each state's access to the line.
    pub access: Vec<Access>,
    /// Whether each state holds the line's data.
    pub holds: Vec<bool>,
}

impl<D: Copy> CompiledTable<D> {
    /// Compiles `role`'s table of `p`; `route` says where the agent sends
    /// each message (given its catalogue index and facts).
    pub fn new(p: &Protocol, role: usize, route: impl Fn(u16, &MsgFacts) -> D) -> CompiledTable<D> {
        let idx = &p.idx[role];
        let n_events = idx.n_events;
        let machine = &p.ir.roles[role];
        let is_home = role == p.home;
        let compile = |state: usize, event: usize, outcome: &IndexedOutcome| -> Cell<D> {
            compile_outcome(
                p,
                role,
                (state, event),
                outcome,
                is_home,
                machine.data,
                &route,
            )
        };
        let cells = idx
            .table
            .iter()
            .enumerate()
            .map(|(cell, outcome)| match outcome {
                None => Cell::Unspecified,
                Some(o) => compile(cell / n_events.max(1), cell % n_events.max(1), o),
            })
            .collect();
        CompiledTable {
            n_events,
            cells,
            msg_event: p.msg_event[role].clone(),
            initial: p.initial[role],
            stable: p.stable[role].clone(),
            access: p.access[role].clone(),
            holds: p.holds[role].clone(),
        }
    }
}

fn compile_outcome<D: Copy>(
    p: &Protocol,
    role: usize,
    (state, event): (usize, usize),
    outcome: &IndexedOutcome,
    is_home: bool,
    data: DataHome,
    route: &impl Fn(u16, &MsgFacts) -> D,
) -> Cell<D> {
    match outcome {
        IndexedOutcome::Stall => Cell::Stall,
        IndexedOutcome::Guarded { guard, yes, no } => {
            let branch = |o: &Option<Box<IndexedOutcome>>| match o {
                Some(o) => compile_outcome(p, role, (state, event), o, is_home, data, route),
                None => Cell::Unspecified,
            };
            Cell::Guarded(Box::new(GuardedCell {
                guard: *guard,
                yes: branch(yes),
                no: branch(no),
            }))
        }
        IndexedOutcome::Go { next, actions } => {
            let next = *next;
            let stable = &p.stable[role];
            let access = &p.access[role];
            let holds = &p.holds[role];
            let source = if data == DataHome::Copy && holds[state] {
                DataSource::Copy
            } else if is_home {
                DataSource::Memory
            } else {
                DataSource::Fresh
            };
            let steps: Box<[Step<D>]> = actions
                .iter()
                .map(|a| match a {
                    Action::Send { msg, to } => {
                        let m = p.msg(msg).expect("checked by Protocol::new");
                        let f = &p.msgs[m as usize];
                        Step::Send(SendStep {
                            msg: m,
                            name: f.name,
                            data: f.data,
                            source: if f.operands {
                                DataSource::Fresh
                            } else {
                                source
                            },
                            target: *to,
                            requester: f.requester,
                            to: route(m, f),
                        })
                    }
                    Action::Fill => Step::Fill,
                    Action::Store => Step::Store,
                    Action::Check => Step::Check,
                    Action::CheckWindow => Step::CheckWindow,
                    Action::Write => Step::Write,
                    Action::WriteMem => Step::WriteMem,
                    Action::AddSharer => Step::Dir(DirOp::AddSharer),
                    Action::RemoveSharer => Step::Dir(DirOp::RemoveSharer),
                    Action::ClearSharers => Step::Dir(DirOp::ClearSharers),
                    Action::SetOwner => Step::Dir(DirOp::SetOwner),
                    Action::ClearOwner => Step::Dir(DirOp::ClearOwner),
                    Action::OwnerToSharers => Step::Dir(DirOp::OwnerToSharers),
                })
                .collect();
            let sent: Box<[u16]> = steps
                .iter()
                .filter_map(|s| match s {
                    Step::Send(x) => Some(x.msg),
                    _ => None,
                })
                .collect();
            let local = !p.ir.roles[role].events[event].message;
            let fresh = steps.iter().any(|s| match s {
                Step::Write => true,
                Step::Store | Step::Fill | Step::WriteMem => local,
                Step::Send(x) => local && x.data && x.source == DataSource::Fresh,
                _ => false,
            });
            Cell::Go(Row {
                next,
                sent,
                next_initial: next == p.initial[role],
                next_stable: stable[next],
                opens: stable[state] && !stable[next],
                closes: !stable[state] && stable[next],
                had: access[state] != Access::None,
                has: access[next] != Access::None,
                holds_after: holds[next],
                read_only: next == state && actions.iter().all(|a| matches!(a, Action::Check)),
                fresh,
                steps,
            })
        }
    }
}

impl<D> CompiledTable<D> {
    /// The cell of (`state`, `event`) and its index; out of range is
    /// unspecified, as with [`MachineIndex::lookup`].
    #[inline]
    pub fn cell(&self, state: usize, event: usize) -> (usize, &Cell<D>) {
        let i = state * self.n_events + event;
        (i, self.cells.get(i).unwrap_or(&Cell::Unspecified))
    }

    /// The `Go` row of (`state`, `event`), if the cell has an unguarded one.
    #[inline]
    pub fn row(&self, state: usize, event: usize) -> Option<&Row<D>> {
        match self.cells.get(state * self.n_events + event)? {
            Cell::Go(row) => Some(row),
            _ => None,
        }
    }

    /// Whether any cell is guarded (the agent must keep a directory entry
    /// or an ack counter to run this table).
    pub fn has_guards(&self) -> bool {
        self.cells.iter().any(|c| matches!(c, Cell::Guarded(_)))
    }
}

/// An agent's identity within a system (0-based; sharer sets hold at most
/// 64 agents).
pub type AgentId = u16;

/// The home's directory entry for one line, and any agent's ack counter.
/// What the directory actions update and the guards read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DirEntry {
    /// The owner, if any.
    pub owner: Option<AgentId>,
    /// Sharers as a bit set over agent ids.
    pub sharers: u64,
    /// Acknowledgements still expected.
    pub acks: i16,
}

impl DirEntry {
    /// Whether `guard` holds for a row acting for `req`.
    #[inline]
    pub fn holds(&self, guard: Guard, req: AgentId) -> bool {
        match guard {
            Guard::LastAck => self.acks == 0,
            Guard::MoreAcks => self.acks != 0,
            Guard::FromOwner => self.owner == Some(req),
            Guard::NotFromOwner => self.owner != Some(req),
            Guard::NoOtherSharers => self.others(req) == 0,
            Guard::OtherSharers => self.others(req) != 0,
        }
    }

    /// The sharers other than `req`, as a bit set.
    #[inline]
    pub fn others(&self, req: AgentId) -> u64 {
        self.sharers & !bit(req)
    }

    /// Applies a directory operation for requester `req`.
    #[inline]
    pub fn apply(&mut self, op: DirOp, req: AgentId) {
        match op {
            DirOp::AddSharer => self.sharers |= bit(req),
            DirOp::RemoveSharer => self.sharers &= !bit(req),
            DirOp::ClearSharers => self.sharers = 0,
            DirOp::SetOwner => self.owner = Some(req),
            DirOp::ClearOwner => self.owner = None,
            DirOp::OwnerToSharers => {
                if let Some(o) = self.owner.take() {
                    self.sharers |= bit(o);
                }
            }
        }
    }
}

#[inline]
fn bit(a: AgentId) -> u64 {
    1u64.checked_shl(a as u32).unwrap_or(0)
}

/// How an agent carries out a row's effects on its own data. The engine
/// decides what happens; an implementation only does it to the agent's
/// real line (a simulated agent) or to a state vector (the checker).
///
/// An agent implements `send` and the effects its role's tables use; the
/// others keep the default, an error naming the action (a table the agent
/// cannot run: the run stops with that error as its violation).
pub trait Effects<D> {
    /// Send `s` (its target, data source and requester are resolved by
    /// the engine; the agent moves the bytes and picks the port).
    fn send(&mut self, s: &SendStep<D>) -> Result<(), String>;
    /// The agent's copy := the received data.
    fn fill(&mut self) -> Result<(), String> {
        Err(cannot("fill"))
    }
    /// The agent's value := the received data or a fresh value; the
    /// latest-write ghost follows.
    fn store(&mut self) -> Result<(), String> {
        Err(cannot("store"))
    }
    /// The agent's value must equal the latest write.
    fn check(&mut self) -> Result<(), String> {
        Err(cannot("check"))
    }
    /// The received data (in a local row, or without data, the agent's
    /// value) must have been the latest write at some moment since the
    /// read began ([`crate::ir::Action::CheckWindow`]).
    fn check_window(&mut self) -> Result<(), String> {
        Err(cannot("check_window"))
    }
    /// The agent's value := the op's own value; the ghost follows.
    fn write(&mut self) -> Result<(), String> {
        Err(cannot("write"))
    }
    /// Memory := the received data.
    fn write_mem(&mut self) -> Result<(), String> {
        Err(cannot("write_mem"))
    }
    /// A directory operation on the row's requester.
    fn directory(&mut self, op: DirOp) -> Result<(), String> {
        Err(cannot(&format!("directory action {op:?}")))
    }
}

#[cold]
fn cannot(action: &str) -> String {
    format!("the table asks this agent for `{action}`, which it does not have (a copy, memory or a directory)")
}

/// Runs a row's steps in order: the one row executor of ccsim. Stops at the
/// first effect that fails and returns its error.
#[inline]
pub fn execute<D, E: Effects<D>>(row: &Row<D>, e: &mut E) -> Result<(), String> {
    for step in row.steps.iter() {
        match step {
            Step::Send(s) => e.send(s)?,
            Step::Fill => e.fill()?,
            Step::Store => e.store()?,
            Step::Check => e.check()?,
            Step::CheckWindow => e.check_window()?,
            Step::Write => e.write()?,
            Step::WriteMem => e.write_mem()?,
            Step::Dir(op) => e.directory(*op)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_entry_guards_and_operations() {
        let mut d = DirEntry::default();
        d.apply(DirOp::AddSharer, 1);
        d.apply(DirOp::AddSharer, 2);
        assert!(d.holds(Guard::OtherSharers, 1));
        d.apply(DirOp::RemoveSharer, 2);
        assert!(d.holds(Guard::NoOtherSharers, 1));
        assert!(!d.holds(Guard::NoOtherSharers, 3));
        d.apply(DirOp::SetOwner, 3);
        assert!(d.holds(Guard::FromOwner, 3) && d.holds(Guard::NotFromOwner, 1));
        d.apply(DirOp::OwnerToSharers, 0);
        assert_eq!((d.owner, d.sharers), (None, 0b1010));
        d.apply(DirOp::ClearSharers, 0);
        assert_eq!(d.sharers, 0);
        d.acks = 1;
        assert!(d.holds(Guard::MoreAcks, 0) && !d.holds(Guard::LastAck, 0));
    }
}
