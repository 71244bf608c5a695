//! The table IR: what the generator outputs, the checker and the simulated
//! agents execute (through [`crate::engine`]), and the exporters print.
//!
//! A [`ProtocolIr`] holds the message catalogue and one [`Machine`] per
//! **role**. A role is a kind of agent; a system may hold several instances
//! of a role that is `multiple` (the caches of an MSI protocol). The
//! two-node state-equation form of a spec has the three roles `generated`
//! (the machine generated from state-equations: the DC for `eci-dc`, the CC
//! for `eci-cc`), `peer` (the agent across the interconnect) and `local`
//! (the device-local agent); the role form names its roles freely
//! (`cache`, `directory`, `dma`, ...). One role is the **home**: it holds
//! the line's memory and, if the protocol uses them, its directory entry
//! (owner, sharers, ack counter).
//!
//! Every machine is a table `(state, event[, guard]) -> (next state,
//! actions) | stall`. Names are strings so the JSON is readable and
//! stable; [`Machine::index`] builds the dense lookup interpreters use.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Class of a message: decides its virtual channel rules and whether a
/// receiver may stall it (only requests may be stalled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MsgClass {
    /// A request (may be stalled by its receiver).
    Request,
    /// A forward from the home to a caching agent (must be answered).
    Forward,
    /// A response or acknowledgment (must never be stalled).
    Response,
}

impl MsgClass {
    /// Short lowercase name used in messages and exports.
    pub fn as_str(self) -> &'static str {
        match self {
            MsgClass::Request => "request",
            MsgClass::Forward => "forward",
            MsgClass::Response => "response",
        }
    }
}

/// A virtual channel of the interconnect (or the device-local channel).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelInfo {
    /// Channel name, e.g. `REQ_NODATA`.
    pub name: String,
    /// The message class every message on this channel must have.
    pub class: MsgClass,
    /// Whether messages on this channel carry a cache line of data.
    pub data: bool,
    /// What the channel is for.
    pub description: String,
    /// Channels this one is ordered behind, point to point: a message here
    /// is not delivered while a message of one of these channels, sent by
    /// the same agent to the same agent for the same line, is in flight
    /// (CXL's "a GO before a later snoop", CXL 3.0 §3.2.5.2). Empty: the
    /// channel is unordered against every other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ordered_after: Vec<String>,
}

/// One message type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageInfo {
    /// Mnemonic, e.g. `RLDD`.
    pub name: String,
    /// The virtual channel it travels on.
    pub channel: String,
    /// Class (equal to the channel's class).
    pub class: MsgClass,
    /// Whether it carries data (equal to the channel's data flag).
    pub data: bool,
    /// Sending role.
    pub from: String,
    /// Receiving role.
    pub to: String,
    /// What the message means.
    pub description: String,
    /// The message carries the identity of the requester it acts for (a
    /// forward or an invalidation on behalf of a request, and the answers
    /// to those): the `req` target of the receiving row.
    #[serde(default)]
    pub requester: bool,
    /// Receiving it counts one acknowledgement: the receiver's ack counter
    /// for the line drops by one before guards are evaluated.
    #[serde(default)]
    pub ack: bool,
    /// Sending it raises the sender's ack counter by one, whatever the
    /// target: a snoop sent to the owner is answered by an ack like an
    /// invalidation sent to the sharers (whose sends always count).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counts_ack: bool,
    /// Its data is the sending operation's own value (a far atomic's
    /// operands), never the sender's copy: a request that carries an
    /// operation, not the line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operands: bool,
}

/// How much of the line an agent holds in a state (for SWMR and data-value).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// No valid copy.
    #[default]
    None,
    /// A readable copy (shared); others may read too.
    Read,
    /// A writable copy (exclusive or modified); nobody else may hold one.
    Write,
}

/// One state of a machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateInfo {
    /// Unique name, e.g. `E` or `E.CLINV.HAKI`.
    pub name: String,
    /// Human description (what has happened, what is awaited).
    pub description: String,
    /// A stable state (no transaction open). Only stable states of the home
    /// release the line's serial unit (DCU).
    pub stable: bool,
    /// The agent's own access to the line's data in this state.
    #[serde(default)]
    pub access: Access,
    /// The agent holds the line's data in this state (it can send it), even
    /// without access (e.g. a cache evicting a dirty line). Agents whose
    /// role keeps a copy drop it in states that do not hold data.
    pub holds_data: bool,
    /// For stable states of the generated machine: the home's own state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    /// For stable states of the generated machine: the home's view of the remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

/// One event a machine reacts to: a message reception or a local event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventInfo {
    /// Message mnemonic or local event name (`store`, `evict`, ...).
    pub name: String,
    /// Human description.
    pub description: String,
    /// True when the event is the reception of a message.
    pub message: bool,
}

/// Where a `send` goes when the receiving role may have several instances.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// The receiving role's one instance (or the line's home, when the
    /// receiving role is the home).
    #[default]
    Default,
    /// The sender of the message being handled.
    Src,
    /// The requester the row acts for: the handled message's requester if
    /// it carries one, else its sender, else the agent itself.
    Req,
    /// The line's owner in the agent's directory entry (home only).
    Owner,
    /// Every sharer in the agent's directory entry except the requester
    /// (home only); the number sent is added to the agent's ack counter.
    Sharers,
    /// The line's home agent.
    Home,
}

impl Target {
    /// The spec's name (`req`, `owner`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Default => "default",
            Target::Src => "src",
            Target::Req => "req",
            Target::Owner => "owner",
            Target::Sharers => "sharers",
            Target::Home => "home",
        }
    }

    /// The target named `s` (not `default`, which is written by leaving the
    /// target out).
    pub fn parse(s: &str) -> Option<Target> {
        Some(match s {
            "src" => Target::Src,
            "req" => Target::Req,
            "owner" => Target::Owner,
            "sharers" => Target::Sharers,
            "home" => Target::Home,
            _ => return None,
        })
    }
}

/// Something a transition does besides changing state. The meaning of
/// every action is defined once, in [`crate::engine`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Action {
    /// Send a message to `to`. Data, if the message carries any, comes from
    /// the agent's copy, else from its memory, else a fresh value chosen by
    /// the environment (a new write by the local agent, a DMA write).
    Send {
        /// The message.
        msg: String,
        /// Where it goes.
        #[serde(default, skip_serializing_if = "is_default_target")]
        to: Target,
    },
    /// Write the received message's data to memory (AXI write, write-back).
    WriteMem,
    /// Fill the agent's cached copy with the received message's data.
    Fill,
    /// A program write: the agent's copy (or memory) takes the received
    /// value, or a fresh value for a local event; the latest-write ghost
    /// follows.
    Store,
    /// A program read: the agent's copy (or memory) must equal the latest
    /// write (data-value property).
    Check,
    /// A program write of the op's own value (a fresh value), even in a row
    /// a message triggers: the store that completes with the transaction
    /// it waited for (gem5's store hit on the data's arrival). The ghost
    /// follows.
    Write,
    /// Directory (home only): add the requester to the sharers.
    AddSharer,
    /// Directory: remove the requester from the sharers.
    RemoveSharer,
    /// Directory: no sharers.
    ClearSharers,
    /// Directory: the requester owns the line.
    SetOwner,
    /// Directory: no owner.
    ClearOwner,
    /// Directory: the owner becomes a sharer and there is no owner.
    OwnerToSharers,
    /// A program read that takes effect anywhere in its window: the
    /// received data (in a local row, or a message without data, the
    /// agent's value) must have been the latest write at some moment since
    /// the agent's last local event on the line, the read's start. This is the read of data a forward
    /// overtook, used once and not kept (gem5's `IS_I`): linearizable at
    /// the home's grant, though a write may have followed it.
    CheckWindow,
}

fn is_default_target(t: &Target) -> bool {
    *t == Target::Default
}

impl Action {
    /// A send of `msg` to its default target.
    pub fn send(msg: &str) -> Action {
        Action::Send {
            msg: msg.to_string(),
            to: Target::Default,
        }
    }

    /// The message a send names.
    pub fn sent(&self) -> Option<&str> {
        match self {
            Action::Send { msg, .. } => Some(msg),
            _ => None,
        }
    }

    /// Whether this is a directory action (valid at the home only).
    pub fn is_directory(&self) -> bool {
        matches!(
            self,
            Action::AddSharer
                | Action::RemoveSharer
                | Action::ClearSharers
                | Action::SetOwner
                | Action::ClearOwner
                | Action::OwnerToSharers
        )
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Send {
                msg,
                to: Target::Default,
            } => write!(f, "send {msg}"),
            Action::Send { msg, to } => write!(f, "send {msg} to {}", to.as_str()),
            Action::WriteMem => f.write_str("write_mem"),
            Action::Fill => f.write_str("fill"),
            Action::Store => f.write_str("store"),
            Action::Check => f.write_str("check"),
            Action::Write => f.write_str("write"),
            Action::AddSharer => f.write_str("add_sharer"),
            Action::RemoveSharer => f.write_str("remove_sharer"),
            Action::ClearSharers => f.write_str("clear_sharers"),
            Action::SetOwner => f.write_str("set_owner"),
            Action::ClearOwner => f.write_str("clear_owner"),
            Action::OwnerToSharers => f.write_str("owner_to_sharers"),
            Action::CheckWindow => f.write_str("check_window"),
        }
    }
}

/// A condition that picks one of two rows for the same (state, event).
/// Guards come in complementary pairs; they read the agent's directory
/// entry for the line and the handled message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// The ack counter is zero (after this message's ack was counted).
    LastAck,
    /// The ack counter is not zero.
    MoreAcks,
    /// The requester is the line's owner.
    FromOwner,
    /// The requester is not the line's owner.
    NotFromOwner,
    /// No sharer other than the requester.
    NoOtherSharers,
    /// Some sharer other than the requester.
    OtherSharers,
}

impl Guard {
    /// Every guard, in a fixed order.
    pub const ALL: [Guard; 6] = [
        Guard::LastAck,
        Guard::MoreAcks,
        Guard::FromOwner,
        Guard::NotFromOwner,
        Guard::NoOtherSharers,
        Guard::OtherSharers,
    ];

    /// The spec's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Guard::LastAck => "last_ack",
            Guard::MoreAcks => "more_acks",
            Guard::FromOwner => "from_owner",
            Guard::NotFromOwner => "not_from_owner",
            Guard::NoOtherSharers => "no_other_sharers",
            Guard::OtherSharers => "other_sharers",
        }
    }

    /// The guard named `s`.
    pub fn parse(s: &str) -> Option<Guard> {
        Guard::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// The guard that holds exactly when this one does not.
    pub fn complement(self) -> Guard {
        match self {
            Guard::LastAck => Guard::MoreAcks,
            Guard::MoreAcks => Guard::LastAck,
            Guard::FromOwner => Guard::NotFromOwner,
            Guard::NotFromOwner => Guard::FromOwner,
            Guard::NoOtherSharers => Guard::OtherSharers,
            Guard::OtherSharers => Guard::NoOtherSharers,
        }
    }

    /// Whether this is the positive guard of its pair (`last_ack`,
    /// `from_owner`, `no_other_sharers`).
    pub fn is_positive(self) -> bool {
        matches!(
            self,
            Guard::LastAck | Guard::FromOwner | Guard::NoOtherSharers
        )
    }

    /// Whether the guard reads the directory entry (home only).
    pub fn reads_directory(self) -> bool {
        !matches!(self, Guard::LastAck | Guard::MoreAcks)
    }
}

/// The outcome of an event in a state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// Take the transition.
    Go {
        /// Next state name.
        next: String,
        /// Actions, in order.
        actions: Vec<Action>,
    },
    /// Leave the message in the network and retry later (requests only).
    Stall,
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// Current state name.
    pub state: String,
    /// Event name.
    pub event: String,
    /// The condition under which this row (and not its complement) fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<Guard>,
    /// What happens.
    pub outcome: Outcome,
}

/// Where a role's data lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataHome {
    /// The agent keeps its own copy of the line (a cache).
    Copy,
    /// The agent reads and writes the line's memory (the home, or an agent
    /// beside it such as the DC's application).
    Memory,
    /// The agent keeps no data (a DMA engine that only moves it).
    #[default]
    None,
}

/// A state machine as a table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Agent name, e.g. `dc`, `cpu`, `app`, `cache`.
    pub name: String,
    /// Role in the composed system (`generated`, `peer`, `local`, or a
    /// role-form name such as `cache`).
    pub role: String,
    /// A system may hold several instances of this role.
    #[serde(default)]
    pub multiple: bool,
    /// Where the role's data lives.
    #[serde(default)]
    pub data: DataHome,
    /// The role's instances are serial units (DCUs): while one line is in
    /// a transient state, events for other lines on the same unit wait.
    #[serde(default)]
    pub serial: bool,
    /// What the agent is.
    pub description: String,
    /// Initial state name.
    pub initial: String,
    /// All states (stable first, then transient), in a deterministic order.
    pub states: Vec<StateInfo>,
    /// All events the table mentions.
    pub events: Vec<EventInfo>,
    /// Rows sorted by (state index, event index).
    pub transitions: Vec<Transition>,
}

/// Dense view of a [`Machine`]: `table[state][event]`.
#[derive(Clone, Debug)]
pub struct MachineIndex {
    /// State name to index.
    pub state_ids: BTreeMap<String, usize>,
    /// Event name to index.
    pub event_ids: BTreeMap<String, usize>,
    /// `table[state * n_events + event]`: `None` is an unspecified reception.
    pub table: Vec<Option<IndexedOutcome>>,
    /// Number of events (row stride).
    pub n_events: usize,
}

/// An [`Outcome`] with the next state resolved to an index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexedOutcome {
    /// Transition to `next` doing `actions`.
    Go {
        /// Next state index.
        next: usize,
        /// Actions in order.
        actions: Vec<Action>,
    },
    /// Stall.
    Stall,
    /// Two rows picked by a guard: `yes` when `guard` holds, else `no`.
    /// A missing branch is an unspecified reception under that guard (a
    /// spec always gives both; a mutant or a hand-edited IR may not).
    Guarded {
        /// The guard of the `yes` row.
        guard: Guard,
        /// The outcome when the guard holds.
        yes: Option<Box<IndexedOutcome>>,
        /// The outcome when it does not.
        no: Option<Box<IndexedOutcome>>,
    },
}

impl MachineIndex {
    /// The outcome of `event` in `state` (indices); `None` is an
    /// unspecified reception. This is the lookup a simulated controller
    /// performs per event, like CCKit's protocol ROM.
    pub fn lookup(&self, state: usize, event: usize) -> Option<&IndexedOutcome> {
        self.table.get(state * self.n_events + event)?.as_ref()
    }

    /// Index of a state by name.
    pub fn state(&self, name: &str) -> Option<usize> {
        self.state_ids.get(name).copied()
    }

    /// Index of an event by name.
    pub fn event(&self, name: &str) -> Option<usize> {
        self.event_ids.get(name).copied()
    }
}

impl Machine {
    /// Builds the dense lookup table. Unknown names, and rows of one
    /// (state, event) that are not one unguarded row, one guarded row (its
    /// complement unspecified) or two rows with complementary guards, are
    /// reported as `Err`.
    pub fn index(&self) -> Result<MachineIndex, String> {
        let state_ids: BTreeMap<String, usize> = self
            .states
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), i))
            .collect();
        let event_ids: BTreeMap<String, usize> = self
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        let n_events = self.events.len();
        let mut rows: Vec<Vec<(Option<Guard>, IndexedOutcome)>> =
            vec![Vec::new(); self.states.len() * n_events];
        for t in &self.transitions {
            let s = *state_ids
                .get(&t.state)
                .ok_or_else(|| format!("{}: unknown state {:?}", self.name, t.state))?;
            let e = *event_ids
                .get(&t.event)
                .ok_or_else(|| format!("{}: unknown event {:?}", self.name, t.event))?;
            let o = match &t.outcome {
                Outcome::Stall => IndexedOutcome::Stall,
                Outcome::Go { next, actions } => IndexedOutcome::Go {
                    next: *state_ids
                        .get(next)
                        .ok_or_else(|| format!("{}: unknown next state {next:?}", self.name))?,
                    actions: actions.clone(),
                },
            };
            rows[s * n_events + e].push((t.guard, o));
        }
        let mut table = Vec::with_capacity(rows.len());
        for (cell, mut r) in rows.into_iter().enumerate() {
            let at = || {
                format!(
                    "{}: ({}, {})",
                    self.name,
                    self.states[cell / n_events.max(1)].name,
                    self.events[cell % n_events.max(1)].name
                )
            };
            table.push(match r.len() {
                0 => None,
                1 => match r.pop().expect("one row") {
                    (None, o) => Some(o),
                    (Some(g), o) => Some(if g.is_positive() {
                        IndexedOutcome::Guarded {
                            guard: g,
                            yes: Some(Box::new(o)),
                            no: None,
                        }
                    } else {
                        IndexedOutcome::Guarded {
                            guard: g.complement(),
                            yes: None,
                            no: Some(Box::new(o)),
                        }
                    }),
                },
                2 => {
                    let (gb, ob) = r.pop().expect("two rows");
                    let (ga, oa) = r.pop().expect("two rows");
                    match (ga, gb) {
                        (Some(a), Some(b)) if a.complement() == b => {
                            let (guard, yes, no) = if a.is_positive() {
                                (a, oa, ob)
                            } else {
                                (b, ob, oa)
                            };
                            Some(IndexedOutcome::Guarded {
                                guard,
                                yes: Some(Box::new(yes)),
                                no: Some(Box::new(no)),
                            })
                        }
                        _ => return Err(format!("{}: two rows need complementary guards", at())),
                    }
                }
                n => return Err(format!("{}: {n} rows (at most two, guarded)", at())),
            });
        }
        Ok(MachineIndex {
            state_ids,
            event_ids,
            table,
            n_events,
        })
    }

    /// Number of `Go` rows (stalls are not transitions).
    pub fn n_transitions(&self) -> usize {
        self.transitions
            .iter()
            .filter(|t| matches!(t.outcome, Outcome::Go { .. }))
            .count()
    }

    /// Number of stall rows.
    pub fn n_stalls(&self) -> usize {
        self.transitions.len() - self.n_transitions()
    }
}

/// The whole protocol: messages plus one machine per role. This is the JSON
/// export.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolIr {
    /// Protocol name, e.g. `eci-dc`.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Virtual channels.
    pub channels: Vec<ChannelInfo>,
    /// Message catalogue.
    pub messages: Vec<MessageInfo>,
    /// One machine per role, in the spec's order (two-node form:
    /// `generated`, `peer`, `local`).
    pub roles: Vec<Machine>,
    /// The role that holds the line's memory (and directory entry).
    pub home: String,
}

impl ProtocolIr {
    /// The machines in role order.
    pub fn machines(&self) -> &[Machine] {
        &self.roles
    }

    /// The machine of `role`.
    pub fn role(&self, role: &str) -> Option<&Machine> {
        self.roles.iter().find(|m| m.role == role)
    }

    /// The index of `role`.
    pub fn role_index(&self, role: &str) -> Option<usize> {
        self.roles.iter().position(|m| m.role == role)
    }

    /// The index of the home role.
    pub fn home_index(&self) -> usize {
        self.role_index(&self.home).expect("the home is a role")
    }

    /// The machine generated from state-equations (two-node form), if any.
    pub fn generated(&self) -> Option<&Machine> {
        self.role("generated")
    }

    /// The machine reports and mutation tests are about: the generated one
    /// (two-node form), else the home's.
    pub fn primary(&self) -> &Machine {
        self.generated()
            .unwrap_or_else(|| &self.roles[self.home_index()])
    }

    /// Looks up a message by name.
    pub fn message(&self, name: &str) -> Option<&MessageInfo> {
        self.messages.iter().find(|m| m.name == name)
    }
}
