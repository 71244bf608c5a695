//! A generated table compiled once for execution, shared by every agent
//! that runs one: the LLC (`ir.peer`), the DC and its local machine
//! (`ir.generated`, `ir.local`), the CC and its application machine, and
//! the CPU home.
//!
//! [`MachineIndex`](ccsim_protocol::ir::MachineIndex) keeps each cell's
//! outcome as the IR states it: actions that name their messages. Running
//! that directly would look every sent message up by name and re-derive
//! facts about the row's two states on every transition. A
//! [`CompiledTable`] keeps the **same cells** (same indices, same
//! outcomes, so every decision is the table's) with those lookups done:
//!
//! * each `send` is a catalogue index with its data flag, its name and
//!   where the agent routes it (`D`, chosen by the agent: the DC tells its
//!   ECI, AXI and DCU sends apart, the LLC has one destination);
//! * each row carries what it does to the line: its next state, whether
//!   that state is the initial one (the line leaves the agent's sparse
//!   map) or stable, whether it opens or closes a transaction, whether the
//!   agent has access to the line before and after, and whether it is a
//!   read-only hit.
//!
//! ```text
//!   MachineIndex.table[state * n_events + event]  ──compile──▶  Cell<D>
//!     None                                                      Unspecified
//!     Stall                                                     Stall
//!     Go { next, actions: [send X, fill, ...] }                 Go(Row { next, steps: [Send{msg, ..}, Fill, ...], facts })
//! ```

use ccsim_protocol::ir::{Access, Action, IndexedOutcome};

use crate::{MsgMeta, Tables};

/// One action of a compiled row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step<D> {
    /// Sends catalogue message `msg` (with a line when `data`), routed to
    /// `to`.
    Send {
        /// Catalogue index of the message.
        msg: u16,
        /// Its name (interned).
        name: &'static str,
        /// Whether it carries the line.
        data: bool,
        /// Where the agent routes it.
        to: D,
    },
    /// Take the received line as the copy.
    Fill,
    /// Update the line with the stored value (the ghost follows).
    Store,
    /// Compare what is read with the latest write.
    Check,
    /// Write the received line to memory.
    WriteMem,
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
    /// The row keeps the state and only reads (`check` actions): a hit.
    pub read_only: bool,
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
}

/// One machine's table compiled for execution (see the module docs).
#[derive(Debug)]
pub struct CompiledTable<D> {
    /// Events of the machine (the row stride of `cells`).
    pub n_events: usize,
    /// By `state * n_events + event`, as `MachineIndex::table`.
    pub cells: Vec<Cell<D>>,
    /// The table's event for each catalogue message (`None`: it has none).
    pub msg_event: Vec<Option<usize>>,
    /// The initial state.
    pub initial: usize,
    /// Whether each state is stable.
    pub stable: Vec<bool>,
    /// Each state's access to the line.
    pub access: Vec<Access>,
}

impl<D: Copy> CompiledTable<D> {
    /// Compiles `role`'s table of `tables`; `route` says where the agent
    /// sends each message.
    pub fn new(tables: &Tables, role: usize, route: impl Fn(&MsgMeta) -> D) -> CompiledTable<D> {
        let idx = &tables.idx[role];
        let n_events = idx.n_events;
        let stable = &tables.stable[role];
        let access = &tables.access[role];
        let cells = idx
            .table
            .iter()
            .enumerate()
            .map(|(cell, outcome)| match outcome {
                None => Cell::Unspecified,
                Some(IndexedOutcome::Stall) => Cell::Stall,
                Some(IndexedOutcome::Go { next, actions }) => {
                    let (state, next) = (cell / n_events, *next);
                    let sent: Box<[u16]> = tables.sends(role, state, cell % n_events).into();
                    let mut to_send = sent.iter().copied();
                    let steps: Box<[Step<D>]> = actions
                        .iter()
                        .map(|a| match a {
                            Action::Send(_) => {
                                let msg = to_send.next().expect("resolved with the table");
                                let meta = &tables.msgs[msg as usize];
                                Step::Send {
                                    msg,
                                    name: meta.name,
                                    data: meta.data,
                                    to: route(meta),
                                }
                            }
                            Action::Fill => Step::Fill,
                            Action::Store => Step::Store,
                            Action::Check => Step::Check,
                            Action::WriteMem => Step::WriteMem,
                        })
                        .collect();
                    Cell::Go(Row {
                        next,
                        sent,
                        next_initial: next == tables.initial[role],
                        next_stable: stable[next],
                        opens: stable[state] && !stable[next],
                        closes: !stable[state] && stable[next],
                        had: access[state] != Access::None,
                        has: access[next] != Access::None,
                        read_only: next == state
                            && actions.iter().all(|a| matches!(a, Action::Check)),
                        steps,
                    })
                }
            })
            .collect();
        CompiledTable {
            n_events,
            cells,
            msg_event: tables.msg_event[role].clone(),
            initial: tables.initial[role],
            stable: stable.clone(),
            access: access.clone(),
        }
    }

    /// The cell of (`state`, `event`) and its index; out of range is
    /// unspecified, as with `MachineIndex::lookup`.
    #[inline]
    pub fn cell(&self, state: usize, event: usize) -> (usize, &Cell<D>) {
        let i = state * self.n_events + event;
        (i, self.cells.get(i).unwrap_or(&Cell::Unspecified))
    }

    /// The `Go` row of (`state`, `event`), if the cell has one.
    #[inline]
    pub fn row(&self, state: usize, event: usize) -> Option<&Row<D>> {
        match self.cells.get(state * self.n_events + event)? {
            Cell::Go(row) => Some(row),
            _ => None,
        }
    }
}
