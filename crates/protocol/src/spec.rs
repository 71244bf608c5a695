//! The spec format (TOML) and its validation.
//!
//! A spec describes a two-node protocol plus a device-local agent:
//!
//! * `[protocol]`: name, description, which role holds memory and which a cache;
//! * `[[channel]]`: virtual channels, each with one message class, a data flag
//!   and a direction (`from` and `to` roles);
//! * `[[message]]`: every message with its channel and a description;
//! * `[generated]`: the agent whose transient-state machine is generated. Its
//!   stable states are (home state, remote state) pairs as in CCKit §4.2, and
//!   its behaviour is a list of `[[equation]]`s;
//! * `[peer]` and `[local]`: the other two agents, written directly as tables;
//! * `[check]`: the default checking configuration (lines, DCU mapping, data
//!   values, network bound).
//!
//! Every error names its place: `protocols/eci-dc.toml: equation[12].receive[1]:
//! unknown message "RLDZ"`.

use crate::ir::{Access, Action, MsgClass};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A bad spec: `path` names the file and the place inside it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SpecError {
    /// File and place, e.g. `protocols/eci-dc.toml: equation[3].receive[1]`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// `[protocol]` table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProtocolHeader {
    /// Short name, e.g. `eci-dc`.
    pub name: String,
    /// What the protocol is.
    pub description: String,
    /// Role holding the line's memory (`generated` or `peer`).
    pub memory_at: String,
    /// Role holding a cached copy (`generated` or `peer`).
    pub cache_at: String,
}

/// `[[channel]]` entry.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    /// Channel name.
    pub name: String,
    /// Message class carried.
    pub class: MsgClass,
    /// Whether messages carry data.
    pub data: bool,
    /// Sending role.
    pub from: String,
    /// Receiving role.
    pub to: String,
    /// What it is for.
    pub description: String,
}

/// `[[message]]` entry.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MessageSpec {
    /// Mnemonic.
    pub name: String,
    /// Channel name.
    pub channel: String,
    /// Optional class; must equal the channel's when given.
    #[serde(default)]
    pub class: Option<MsgClass>,
    /// Optional data flag; must equal the channel's when given.
    #[serde(default)]
    pub data: Option<bool>,
    /// What it means.
    pub description: String,
}

/// A stable state of the generated agent: a (home, remote) pair.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StableStateSpec {
    /// Name, e.g. `E`.
    pub name: String,
    /// The home's own state, e.g. `unlocked`.
    pub home: String,
    /// The home's view of the remote, e.g. `E`.
    pub remote: String,
    /// Access of the generated agent itself to the line.
    #[serde(default)]
    pub access: Access,
    /// Description.
    pub description: String,
}

/// A state-equation (CCKit §4.2).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EquationSpec {
    /// Name for reports.
    pub name: String,
    /// `conflict-free` or `conflict` (documentation; both are generated alike).
    #[serde(default = "default_kind")]
    pub kind: String,
    /// Initial home state.
    pub home: String,
    /// Initial remote state (home's view).
    pub remote: String,
    /// Messages received, in order; the first is the trigger.
    pub receive: Vec<String>,
    /// Actions per received message (same length as `receive`, or empty).
    #[serde(default)]
    pub actions: Vec<Vec<String>>,
    /// Actions done with the last message.
    #[serde(default)]
    pub on_complete: Vec<String>,
    /// Final home state.
    pub final_home: String,
    /// Final remote state.
    pub final_remote: String,
    /// Generate every causally possible order of the non-trigger messages.
    #[serde(default = "default_true")]
    pub reorder: bool,
    /// Optional note.
    #[serde(default)]
    pub description: String,
}

fn default_kind() -> String {
    "conflict-free".into()
}
fn default_true() -> bool {
    true
}

/// `[generated]` table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GeneratedSpec {
    /// Agent name, e.g. `dc`.
    pub name: String,
    /// Description.
    pub description: String,
    /// Initial stable state.
    pub initial: String,
    /// Stable states.
    pub state: Vec<StableStateSpec>,
}

/// A state of a hand-written table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableStateSpec {
    /// Name.
    pub name: String,
    /// Access to the line.
    #[serde(default)]
    pub access: Access,
    /// Whether no transaction is open.
    #[serde(default = "default_true")]
    pub stable: bool,
    /// Description.
    pub description: String,
}

/// A local (non-message) event of a hand-written table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
}

/// A row of a hand-written table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    /// Current state.
    pub state: String,
    /// Event (message or local event).
    pub event: String,
    /// Next state (absent together with `stall = true`).
    #[serde(default)]
    pub next: Option<String>,
    /// Actions.
    #[serde(default)]
    pub actions: Vec<String>,
    /// Stall instead of taking a transition (requests only).
    #[serde(default)]
    pub stall: bool,
}

/// `[peer]` or `[local]` table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Agent name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Initial state.
    pub initial: String,
    /// States.
    pub state: Vec<TableStateSpec>,
    /// Local events.
    #[serde(default)]
    pub event: Vec<EventSpec>,
    /// Rows.
    pub transition: Vec<RowSpec>,
}

/// `[check]` table: the default checking configuration.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// DCU (serial unit) of each line; its length is the number of lines.
    #[serde(default = "default_dcus")]
    pub dcus: Vec<u8>,
    /// Number of distinct data values.
    #[serde(default = "default_values")]
    pub values: u8,
    /// Most messages of one type in flight per line (network bound).
    #[serde(default = "default_bound")]
    pub max_in_flight: u8,
    /// An application protocol to check on top (`"invocation"`), instead of
    /// the free-running agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
}

fn default_dcus() -> Vec<u8> {
    vec![0]
}
fn default_values() -> u8 {
    2
}
fn default_bound() -> u8 {
    2
}

impl Default for CheckSpec {
    fn default() -> Self {
        CheckSpec {
            dcus: default_dcus(),
            values: default_values(),
            max_in_flight: default_bound(),
            application: None,
        }
    }
}

/// A parsed and validated spec.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Header.
    pub protocol: ProtocolHeader,
    /// Channels.
    pub channel: Vec<ChannelSpec>,
    /// Messages.
    pub message: Vec<MessageSpec>,
    /// Generated agent.
    pub generated: GeneratedSpec,
    /// State-equations.
    pub equation: Vec<EquationSpec>,
    /// Peer agent table.
    pub peer: TableSpec,
    /// Local agent table.
    pub local: TableSpec,
    /// Check configuration.
    #[serde(default)]
    pub check: CheckSpec,
    /// Where the spec came from (file path or `builtin:NAME`), for errors.
    #[serde(skip)]
    pub origin: String,
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.protocol.name, self.origin)
    }
}

/// The roles of the three agents.
pub const ROLES: [&str; 3] = ["generated", "peer", "local"];

/// Parses an action string such as `send FEVX` or `write_mem`.
pub fn parse_action(s: &str) -> Result<Action, String> {
    let s = s.trim();
    if let Some(m) = s.strip_prefix("send ") {
        return Ok(Action::Send(m.trim().to_string()));
    }
    match s {
        "write_mem" => Ok(Action::WriteMem),
        "fill" => Ok(Action::Fill),
        "store" => Ok(Action::Store),
        "check" => Ok(Action::Check),
        _ => Err(format!(
            "unknown action {s:?} (expected \"send MSG\", \"write_mem\", \"fill\", \"store\" or \"check\")"
        )),
    }
}

impl Spec {
    /// Parses TOML text; `origin` is used in error paths.
    pub fn parse(text: &str, origin: &str) -> Result<Spec, SpecError> {
        let mut spec: Spec = toml::from_str(text).map_err(|e| {
            let place = e
                .span()
                .map(|sp| {
                    let line = text[..sp.start.min(text.len())].lines().count().max(1);
                    format!("line {line}")
                })
                .unwrap_or_else(|| "toml".into());
            SpecError {
                path: format!("{origin}: {place}"),
                message: e.message().to_string(),
            }
        })?;
        spec.origin = origin.to_string();
        spec.validate()?;
        Ok(spec)
    }

    fn err(&self, place: impl fmt::Display, message: impl Into<String>) -> SpecError {
        SpecError {
            path: format!("{}: {}", self.origin, place),
            message: message.into(),
        }
    }

    /// The channel of a message.
    pub fn channel_of(&self, msg: &str) -> Option<&ChannelSpec> {
        let m = self.message.iter().find(|m| m.name == msg)?;
        self.channel.iter().find(|c| c.name == m.channel)
    }

    /// The name of the agent playing `role`.
    pub fn agent_name(&self, role: &str) -> &str {
        match role {
            "generated" => &self.generated.name,
            "peer" => &self.peer.name,
            _ => &self.local.name,
        }
    }

    /// Name of the stable state for a (home, remote) pair.
    pub fn stable_name(&self, home: &str, remote: &str) -> Option<&str> {
        self.generated
            .state
            .iter()
            .find(|s| s.home == home && s.remote == remote)
            .map(|s| s.name.as_str())
    }

    /// Checks names, channels, directions, actions and replies.
    pub fn validate(&self) -> Result<(), SpecError> {
        let p = &self.protocol;
        for (field, v) in [("memory_at", &p.memory_at), ("cache_at", &p.cache_at)] {
            if v != "generated" && v != "peer" {
                return Err(self.err(
                    format!("protocol.{field}"),
                    format!("expected \"generated\" or \"peer\", got {v:?}"),
                ));
            }
        }
        if p.memory_at == p.cache_at {
            return Err(self.err(
                "protocol.cache_at",
                "memory and cache must be at different roles",
            ));
        }
        // Channels.
        let mut chans = BTreeSet::new();
        for (i, c) in self.channel.iter().enumerate() {
            if !chans.insert(c.name.as_str()) {
                return Err(self.err(
                    format!("channel[{i}]"),
                    format!("duplicate channel {:?}", c.name),
                ));
            }
            for (f, r) in [("from", &c.from), ("to", &c.to)] {
                if !ROLES.contains(&r.as_str()) {
                    return Err(self.err(
                        format!("channel[{i}].{f}"),
                        format!("unknown role {r:?} (expected generated, peer or local)"),
                    ));
                }
            }
            if c.from == c.to {
                return Err(self.err(
                    format!("channel[{i}]"),
                    "a channel must connect two different roles",
                ));
            }
            if c.from == "local" && c.to == "peer" || c.from == "peer" && c.to == "local" {
                return Err(self.err(
                    format!("channel[{i}]"),
                    "the local agent talks only to the generated agent",
                ));
            }
        }
        // Messages.
        let mut msgs = BTreeSet::new();
        for (i, m) in self.message.iter().enumerate() {
            if !msgs.insert(m.name.as_str()) {
                return Err(self.err(
                    format!("message[{i}]"),
                    format!("duplicate message {:?}", m.name),
                ));
            }
            let Some(c) = self.channel.iter().find(|c| c.name == m.channel) else {
                return Err(self.err(
                    format!("message[{i}].channel"),
                    format!("unknown channel {:?} for message {}", m.channel, m.name),
                ));
            };
            if let Some(cl) = m.class {
                if cl != c.class {
                    return Err(self.err(
                        format!("message[{i}].channel"),
                        format!(
                            "message {} is a {} but channel {} carries {}s",
                            m.name,
                            cl.as_str(),
                            c.name,
                            c.class.as_str()
                        ),
                    ));
                }
            }
            if let Some(d) = m.data {
                if d != c.data {
                    return Err(self.err(
                        format!("message[{i}].channel"),
                        format!(
                            "message {} {} data but channel {} {}",
                            m.name,
                            if d { "carries" } else { "carries no" },
                            c.name,
                            if c.data {
                                "is a data channel"
                            } else {
                                "carries no data"
                            }
                        ),
                    ));
                }
            }
        }
        // Generated agent stable states.
        let g = &self.generated;
        let mut gstates = BTreeSet::new();
        for (i, s) in g.state.iter().enumerate() {
            if !gstates.insert(s.name.as_str()) {
                return Err(self.err(
                    format!("generated.state[{i}]"),
                    format!("duplicate state {:?}", s.name),
                ));
            }
            if self.stable_name(&s.home, &s.remote) != Some(s.name.as_str()) {
                return Err(self.err(
                    format!("generated.state[{i}]"),
                    format!(
                        "(home {:?}, remote {:?}) is declared twice",
                        s.home, s.remote
                    ),
                ));
            }
        }
        if !gstates.contains(g.initial.as_str()) {
            return Err(self.err(
                "generated.initial",
                format!("unknown state {:?}", g.initial),
            ));
        }
        let homes: BTreeSet<&str> = g.state.iter().map(|s| s.home.as_str()).collect();
        let remotes: BTreeSet<&str> = g.state.iter().map(|s| s.remote.as_str()).collect();
        // Equations.
        for (i, e) in self.equation.iter().enumerate() {
            let at = |f: &str| format!("equation[{i}].{f}");
            if e.kind != "conflict-free" && e.kind != "conflict" {
                return Err(self.err(
                    at("kind"),
                    format!(
                        "expected \"conflict-free\" or \"conflict\", got {:?}",
                        e.kind
                    ),
                ));
            }
            for (f, v, set) in [
                ("home", &e.home, &homes),
                ("final_home", &e.final_home, &homes),
                ("remote", &e.remote, &remotes),
                ("final_remote", &e.final_remote, &remotes),
            ] {
                if !set.contains(v.as_str()) {
                    return Err(self.err(at(f), format!("unknown state {v:?}")));
                }
            }
            if self.stable_name(&e.home, &e.remote).is_none() {
                return Err(self.err(
                    at("home"),
                    format!(
                        "no stable state is (home {:?}, remote {:?})",
                        e.home, e.remote
                    ),
                ));
            }
            if self.stable_name(&e.final_home, &e.final_remote).is_none() {
                return Err(self.err(
                    at("final_home"),
                    format!(
                        "no stable state is (home {:?}, remote {:?})",
                        e.final_home, e.final_remote
                    ),
                ));
            }
            if e.receive.is_empty() {
                return Err(self.err(at("receive"), "an equation receives at least one message"));
            }
            if !e.actions.is_empty() && e.actions.len() != e.receive.len() {
                return Err(self.err(
                    at("actions"),
                    format!(
                        "{} action lists for {} messages",
                        e.actions.len(),
                        e.receive.len()
                    ),
                ));
            }
            for (j, m) in e.receive.iter().enumerate() {
                let Some(c) = self.channel_of(m) else {
                    return Err(self.err(
                        format!("equation[{i}].receive[{j}]"),
                        format!("unknown message {m:?}"),
                    ));
                };
                if c.to != "generated" {
                    return Err(self.err(
                        format!("equation[{i}].receive[{j}]"),
                        format!(
                            "message {m} travels on {} from the {} to the {}; the {} cannot receive it",
                            c.name,
                            self.agent_name(&c.from),
                            self.agent_name(&c.to),
                            g.name
                        ),
                    ));
                }
            }
            let mut all_actions = Vec::new();
            for (j, list) in e.actions.iter().enumerate() {
                for (k, a) in list.iter().enumerate() {
                    all_actions.push((format!("equation[{i}].actions[{j}][{k}]"), a.clone()));
                }
            }
            for (k, a) in e.on_complete.iter().enumerate() {
                all_actions.push((format!("equation[{i}].on_complete[{k}]"), a.clone()));
            }
            for (place, a) in &all_actions {
                self.check_action(place, a, "generated")?;
            }
            // Missing reply: every forward sent must be answered later in the equation.
            for (j, list) in e.actions.iter().enumerate() {
                for a in list {
                    if let Ok(Action::Send(m)) = parse_action(a) {
                        let c = self.channel_of(&m).expect("checked");
                        if c.class == MsgClass::Forward
                            && !e.receive[j + 1..].iter().any(|r| {
                                self.channel_of(r).is_some_and(|rc| {
                                    rc.class == MsgClass::Response && rc.from == c.to
                                })
                            })
                        {
                            return Err(self.err(
                                format!("equation[{i}].actions[{j}]"),
                                format!("forward {m} is sent but no reply from the {} is received after it", self.agent_name(&c.to)),
                            ));
                        }
                    }
                }
            }
        }
        self.validate_table(&self.peer, "peer")?;
        self.validate_table(&self.local, "local")?;
        if self.check.dcus.is_empty() {
            return Err(self.err("check.dcus", "at least one line"));
        }
        if let Some(a) = &self.check.application {
            if a != "invocation" {
                return Err(self.err(
                    "check.application",
                    format!("unknown application {a:?} (expected \"invocation\")"),
                ));
            }
            if self.check.dcus.len() != 2 {
                return Err(self.err(
                    "check.dcus",
                    "the invocation protocol uses exactly two lines (A and B)",
                ));
            }
        }
        // Bounds keep the explicit-state search within memory.
        if self.check.dcus.len() > 4 {
            return Err(self.err(
                "check.dcus",
                format!("at most 4 lines, got {}", self.check.dcus.len()),
            ));
        }
        if !(1..=4).contains(&self.check.values) {
            return Err(self.err(
                "check.values",
                format!("expected 1 to 4 data values, got {}", self.check.values),
            ));
        }
        if !(1..=4).contains(&self.check.max_in_flight) {
            return Err(self.err(
                "check.max_in_flight",
                format!("expected 1 to 4, got {}", self.check.max_in_flight),
            ));
        }
        Ok(())
    }

    fn check_action(&self, place: &str, a: &str, role: &str) -> Result<(), SpecError> {
        let act = parse_action(a).map_err(|m| self.err(place, m))?;
        if let Action::Send(m) = act {
            let Some(c) = self.channel_of(&m) else {
                return Err(self.err(place, format!("unknown message {m:?}")));
            };
            if c.from != role {
                return Err(self.err(
                    place,
                    format!(
                        "message {m} travels on {} from the {}; the {} cannot send it",
                        c.name,
                        self.agent_name(&c.from),
                        self.agent_name(role)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_table(&self, t: &TableSpec, role: &str) -> Result<(), SpecError> {
        let mut states = BTreeSet::new();
        for (i, s) in t.state.iter().enumerate() {
            if !states.insert(s.name.as_str()) {
                return Err(self.err(
                    format!("{role}.state[{i}]"),
                    format!("duplicate state {:?}", s.name),
                ));
            }
        }
        if !states.contains(t.initial.as_str()) {
            return Err(self.err(
                format!("{role}.initial"),
                format!("unknown state {:?}", t.initial),
            ));
        }
        let locals: BTreeSet<&str> = t.event.iter().map(|e| e.name.as_str()).collect();
        let mut seen = BTreeMap::new();
        for (i, r) in t.transition.iter().enumerate() {
            let at = |f: &str| format!("{role}.transition[{i}].{f}");
            if !states.contains(r.state.as_str()) {
                return Err(self.err(at("state"), format!("unknown state {:?}", r.state)));
            }
            let msg_chan = self.channel_of(&r.event);
            if msg_chan.is_none() && !locals.contains(r.event.as_str()) {
                return Err(self.err(
                    at("event"),
                    format!(
                        "unknown event {:?} (not a message nor a declared local event)",
                        r.event
                    ),
                ));
            }
            if let Some(c) = msg_chan {
                if c.to != role {
                    return Err(self.err(
                        at("event"),
                        format!(
                            "message {} travels on {} from the {} to the {}; the {} cannot receive it",
                            r.event,
                            c.name,
                            self.agent_name(&c.from),
                            self.agent_name(&c.to),
                            t.name
                        ),
                    ));
                }
            }
            if let Some(prev) = seen.insert((r.state.as_str(), r.event.as_str()), i) {
                return Err(self.err(
                    format!("{role}.transition[{i}]"),
                    format!(
                        "({}, {}) is already defined by transition[{prev}]",
                        r.state, r.event
                    ),
                ));
            }
            if r.stall {
                if r.next.is_some() || !r.actions.is_empty() {
                    return Err(self.err(
                        format!("{role}.transition[{i}]"),
                        "a stall has no next state or actions",
                    ));
                }
                match msg_chan {
                    Some(c) if c.class == MsgClass::Request => {}
                    _ => {
                        return Err(self.err(
                            at("event"),
                            format!("only requests may be stalled, {} is not a request", r.event),
                        ))
                    }
                }
                continue;
            }
            let Some(next) = &r.next else {
                return Err(self.err(format!("{role}.transition[{i}]"), "missing next state"));
            };
            if !states.contains(next.as_str()) {
                return Err(self.err(at("next"), format!("unknown state {next:?}")));
            }
            for (k, a) in r.actions.iter().enumerate() {
                self.check_action(&format!("{role}.transition[{i}].actions[{k}]"), a, role)?;
            }
            // Missing reply: a forward or request to this agent that expects an answer.
            if let Some(c) = msg_chan {
                if c.class == MsgClass::Forward {
                    let answered = r.actions.iter().any(|a| {
                        matches!(parse_action(a), Ok(Action::Send(m)) if self.channel_of(&m).is_some_and(|mc| mc.class == MsgClass::Response && mc.to == c.from))
                    });
                    if !answered {
                        return Err(self.err(
                            format!("{role}.transition[{i}]"),
                            format!(
                                "forward {} in state {} is not answered (no response sent)",
                                r.event, r.state
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
