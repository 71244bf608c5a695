//! The table IR: what the generator outputs, the checker interprets, the
//! exporters print and the simulator will load (as JSON).
//!
//! A [`ProtocolIr`] holds the message catalogue and three [`Machine`]s:
//! the generated agent (the DC for `eci-dc`, the CC for `eci-cc`), the peer
//! agent across the interconnect (written by hand in the spec), and the
//! device-local agent (the FPGA application issuing clean / lock / ...).
//! Every machine is a table `(state, event) -> (next state, actions) | stall`.
//! Names are strings so the JSON is readable and stable; [`Machine::index`]
//! builds the dense lookup used by interpreters.

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
    /// Sending agent role (`generated`, `peer` or `local`).
    pub from: String,
    /// Receiving agent role.
    pub to: String,
    /// What the message means.
    pub description: String,
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

/// Something a transition does besides changing state.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op", content = "arg")]
pub enum Action {
    /// Send a message to its declared receiver. Data, if the message carries
    /// any, comes from the agent's copy, else from its memory, else a fresh
    /// value chosen by the environment (a new write by the local agent).
    Send(String),
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
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Action::Send(m) => write!(f, "send {m}"),
            Action::WriteMem => f.write_str("write_mem"),
            Action::Fill => f.write_str("fill"),
            Action::Store => f.write_str("store"),
            Action::Check => f.write_str("check"),
        }
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
    /// What happens.
    pub outcome: Outcome,
}

/// A state machine as a table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// Agent name, e.g. `dc`, `cpu`, `app`.
    pub name: String,
    /// Role in the composed system: `generated`, `peer` or `local`.
    pub role: String,
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
    /// Builds the dense lookup table. Unknown names are reported as `Err`.
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
        let mut table = vec![None; self.states.len() * n_events];
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
            table[s * n_events + e] = Some(o);
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

/// The whole protocol: messages plus the three machines. This is the JSON
/// export and what the simulator loads.
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
    /// The generated machine (from state-equations).
    pub generated: Machine,
    /// The peer agent across the interconnect (hand-written table).
    pub peer: Machine,
    /// The device-local agent (hand-written table).
    pub local: Machine,
    /// Which agent holds the line's memory: `generated` or `peer`.
    pub memory_at: String,
    /// Which agent holds a cached copy: `generated` or `peer`.
    pub cache_at: String,
}

impl ProtocolIr {
    /// The machines in role order: generated, peer, local.
    pub fn machines(&self) -> [&Machine; 3] {
        [&self.generated, &self.peer, &self.local]
    }

    /// Looks up a message by name.
    pub fn message(&self, name: &str) -> Option<&MessageInfo> {
        self.messages.iter().find(|m| m.name == name)
    }
}
