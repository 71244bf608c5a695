//! The spec format (TOML) and its validation.
//!
//! A spec is written in one of two forms.
//!
//! **Two-node form** (CCKit §4.2): a home and a remote caching agent plus a
//! device-local agent, in the roles `generated`, `peer` and `local`:
//!
//! * `[protocol]`: name, description, which role holds memory (`memory_at`)
//!   and which a cache (`cache_at`);
//! * `[generated]`: the agent whose transient-state machine is generated. Its
//!   stable states are (home state, remote state) pairs as in CCKit §4.2, and
//!   its behaviour is a list of `[[equation]]`s;
//! * `[peer]` and `[local]`: the other two agents, written directly as tables.
//!
//! **Role form**: any number of roles, each a hand-written table:
//!
//! * `[protocol]`: name, description, and `home`, the role holding memory;
//! * `[[role]]`: `name`, `description`, `initial`, `multiple` (a system may
//!   hold several instances), `data` (`copy`, `memory` or `none`), `serial`,
//!   `blocking` (every request without a row in a transient state stalls,
//!   as gem5 Ruby's blocking directories do), `[[role.state]]`,
//!   `[[role.event]]` (local events) and `[[role.transition]]` rows, which
//!   may carry a `guard`. A send `to sharers` reaches the sharers of the
//!   message's receiving role, so one row can invalidate sharing caches
//!   with one message and sharing devices with another
//!   (`protocols/cxl-cache.toml`).
//!
//! Both forms share:
//!
//! * `[[channel]]`: virtual channels, each with one message class, a data flag
//!   and a direction (`from` and `to` roles), and optionally
//!   `ordered_after` (channels in the same direction it is ordered behind,
//!   point to point: CXL's "a GO before a later snoop");
//! * `[[message]]`: every message with its channel and a description, and
//!   optionally `requester = true` (it carries the requester it acts for),
//!   `ack = true` (it counts one acknowledgement at its receiver) and
//!   `counts_ack = true` (sending it, to any target, expects one) and
//!   `operands = true` (its data is the sending operation's own value,
//!   such as a far atomic's operands, even from a state holding the line);
//! * `[check]`: the default checking configuration (lines, DCU mapping, data
//!   values, network bound, instances per role).
//!
//! Every error names its place: `protocols/eci-dc.toml: equation[12].receive[1]:
//! unknown message "RLDZ"`.

use crate::ir::{Access, Action, DataHome, Guard, MsgClass, Target};
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
    /// Two-node form: role holding the line's memory (`generated` or `peer`).
    #[serde(default)]
    pub memory_at: Option<String>,
    /// Two-node form: role holding a cached copy (`generated` or `peer`).
    #[serde(default)]
    pub cache_at: Option<String>,
    /// Role form: the role holding the line's memory and directory entry.
    #[serde(default)]
    pub home: Option<String>,
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
    /// Channels this one is ordered behind, point to point (see
    /// [`crate::ir::ChannelInfo::ordered_after`]); each must connect the
    /// same two roles in the same direction.
    #[serde(default)]
    pub ordered_after: Vec<String>,
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
    /// It carries the identity of the requester it acts for.
    #[serde(default)]
    pub requester: bool,
    /// Receiving it counts one acknowledgement.
    #[serde(default)]
    pub ack: bool,
    /// Sending it expects one acknowledgement, whatever the target.
    #[serde(default)]
    pub counts_ack: bool,
    /// Its data is the sending operation's own value (an atomic's
    /// operands), whatever line the sender holds.
    #[serde(default)]
    pub operands: bool,
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
    /// Whether the agent holds the line's data (default: it has access).
    #[serde(default)]
    pub holds_data: Option<bool>,
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
    /// Guard: this row fires only when it holds (its complement names the
    /// other row of the same state and event).
    #[serde(default)]
    pub guard: Option<String>,
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

/// `[peer]`, `[local]` or `[[role]]` table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Agent name (the role's name in the role form).
    pub name: String,
    /// Description.
    pub description: String,
    /// Initial state.
    pub initial: String,
    /// Role form: a system may hold several instances of this role.
    #[serde(default)]
    pub multiple: bool,
    /// Role form: where the role's data lives (default `none`).
    #[serde(default)]
    pub data: Option<DataHome>,
    /// Role form: the role's instances are serial units (gated by
    /// `[check] dcus`).
    #[serde(default)]
    pub serial: bool,
    /// Role form: a blocking controller. In every transient state, each
    /// request the role receives and has no row for stalls (gem5 Ruby's
    /// blocking directories); the rows are added at load.
    #[serde(default)]
    pub blocking: bool,
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
    /// Instances per role (role form; a role not named has one).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub instances: BTreeMap<String, u8>,
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
            instances: BTreeMap::new(),
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
    /// Two-node form: the generated agent.
    #[serde(default)]
    pub generated: Option<GeneratedSpec>,
    /// Two-node form: state-equations.
    #[serde(default)]
    pub equation: Vec<EquationSpec>,
    /// Two-node form: the peer agent's table.
    #[serde(default)]
    pub peer: Option<TableSpec>,
    /// Two-node form: the local agent's table.
    #[serde(default)]
    pub local: Option<TableSpec>,
    /// Role form: one table per role.
    #[serde(default)]
    pub role: Vec<TableSpec>,
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

/// The roles of the two-node form.
pub const ROLES: [&str; 3] = ["generated", "peer", "local"];

/// Parses an action string such as `send FEVX`, `send Data to req` or
/// `write_mem`.
pub fn parse_action(s: &str) -> Result<Action, String> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix("send ") {
        let mut words = rest.split_whitespace();
        let msg = words.next().unwrap_or("").to_string();
        return match (words.next(), words.next(), words.next()) {
            (None, _, _) => Ok(Action::send(&msg)),
            (Some("to"), Some(t), None) => match Target::parse(t) {
                Some(to) => Ok(Action::Send { msg, to }),
                None => Err(format!(
                    "unknown target {t:?} (expected src, req, owner, sharers or home)"
                )),
            },
            _ => Err(format!(
                "bad send {s:?} (expected \"send MSG\" or \"send MSG to TARGET\")"
            )),
        };
    }
    match s {
        "write_mem" => Ok(Action::WriteMem),
        "fill" => Ok(Action::Fill),
        "store" => Ok(Action::Store),
        "check" => Ok(Action::Check),
        "check_window" => Ok(Action::CheckWindow),
        "write" => Ok(Action::Write),
        "add_sharer" => Ok(Action::AddSharer),
        "remove_sharer" => Ok(Action::RemoveSharer),
        "clear_sharers" => Ok(Action::ClearSharers),
        "set_owner" => Ok(Action::SetOwner),
        "clear_owner" => Ok(Action::ClearOwner),
        "owner_to_sharers" => Ok(Action::OwnerToSharers),
        _ => Err(format!(
            "unknown action {s:?} (expected \"send MSG\", \"write_mem\", \"fill\", \"store\", \"check\", \"check_window\", \"write\" or a directory action: add_sharer, remove_sharer, clear_sharers, set_owner, clear_owner, owner_to_sharers)"
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
            // The TOML parser's message may span lines; errors are one line.
            let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
            SpecError {
                path: format!("{origin}: {place}"),
                message,
            }
        })?;
        spec.origin = origin.to_string();
        spec.add_blocking_stalls();
        spec.validate()?;
        Ok(spec)
    }

    /// Adds, for every `blocking` role, a stall row for each request it
    /// receives in each transient state that has no row for it.
    fn add_blocking_stalls(&mut self) {
        let requests: Vec<(String, String)> = self
            .message
            .iter()
            .filter_map(|m| {
                let c = self.channel.iter().find(|c| c.name == m.channel)?;
                (c.class == MsgClass::Request).then(|| (m.name.clone(), c.to.clone()))
            })
            .collect();
        for table in self.role.iter_mut().filter(|t| t.blocking) {
            let transient: Vec<String> = table
                .state
                .iter()
                .filter(|s| !s.stable)
                .map(|s| s.name.clone())
                .collect();
            for state in &transient {
                for (msg, _) in requests.iter().filter(|(_, to)| *to == table.name) {
                    if !table
                        .transition
                        .iter()
                        .any(|r| r.state == *state && r.event == *msg)
                    {
                        table.transition.push(RowSpec {
                            state: state.clone(),
                            event: msg.clone(),
                            guard: None,
                            next: None,
                            actions: Vec::new(),
                            stall: true,
                        });
                    }
                }
            }
        }
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

    /// Whether the spec is in the two-node form (`[generated]`, `[peer]`,
    /// `[local]`) rather than the role form.
    pub fn is_two_node(&self) -> bool {
        self.role.is_empty()
    }

    /// The generated agent (two-node form).
    pub fn generated(&self) -> &GeneratedSpec {
        self.generated
            .as_ref()
            .expect("a validated two-node spec has [generated]")
    }

    /// The role names, in order.
    pub fn role_names(&self) -> Vec<&str> {
        if self.is_two_node() {
            ROLES.to_vec()
        } else {
            self.role.iter().map(|r| r.name.as_str()).collect()
        }
    }

    /// The role holding memory.
    pub fn home_role(&self) -> &str {
        let p = &self.protocol;
        if self.is_two_node() {
            p.memory_at.as_deref().unwrap_or("")
        } else {
            p.home.as_deref().unwrap_or("")
        }
    }

    /// The table of a hand-written role (`peer`, `local`, or a role-form
    /// role).
    pub fn table(&self, role: &str) -> Option<&TableSpec> {
        match role {
            "peer" if self.is_two_node() => self.peer.as_ref(),
            "local" if self.is_two_node() => self.local.as_ref(),
            _ => self.role.iter().find(|r| r.name == role),
        }
    }

    /// The name of the agent playing `role`.
    pub fn agent_name<'a>(&'a self, role: &'a str) -> &'a str {
        match role {
            "generated" if self.is_two_node() => &self.generated().name,
            _ => self.table(role).map_or(role, |t| t.name.as_str()),
        }
    }

    /// Name of the stable state for a (home, remote) pair.
    pub fn stable_name(&self, home: &str, remote: &str) -> Option<&str> {
        self.generated()
            .state
            .iter()
            .find(|s| s.home == home && s.remote == remote)
            .map(|s| s.name.as_str())
    }

    /// Checks names, channels, directions, actions and replies.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.is_two_node() {
            self.validate_two_node_header()?;
        } else {
            self.validate_role_header()?;
        }
        self.validate_channels_and_messages()?;
        if self.is_two_node() {
            self.validate_equations()?;
            self.validate_table(self.peer.as_ref().expect("checked"), "peer", "peer")?;
            self.validate_table(self.local.as_ref().expect("checked"), "local", "local")?;
        } else {
            for (i, r) in self.role.iter().enumerate() {
                self.validate_table(r, &r.name, &format!("role[{i}]"))?;
            }
        }
        self.validate_check()
    }

    fn validate_two_node_header(&self) -> Result<(), SpecError> {
        let p = &self.protocol;
        if p.home.is_some() {
            return Err(self.err(
                "protocol.home",
                "`home` names the home of a role-form spec; the two-node form uses memory_at and cache_at",
            ));
        }
        for (field, present) in [
            ("generated", self.generated.is_some()),
            ("peer", self.peer.is_some()),
            ("local", self.local.is_some()),
        ] {
            if !present {
                return Err(self.err(
                    field,
                    format!("missing [{field}] (a spec has [generated], [[equation]], [peer] and [local], or [[role]] tables)"),
                ));
            }
        }
        for (field, v) in [("memory_at", &p.memory_at), ("cache_at", &p.cache_at)] {
            let Some(v) = v else {
                return Err(self.err(
                    format!("protocol.{field}"),
                    "missing field (expected \"generated\" or \"peer\")",
                ));
            };
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
        for (name, t) in [("peer", &self.peer), ("local", &self.local)] {
            let t = t.as_ref().expect("checked");
            if t.multiple || t.data.is_some() || t.serial {
                return Err(self.err(
                    name,
                    "multiple, data and serial belong to role-form tables ([[role]])",
                ));
            }
        }
        Ok(())
    }

    fn validate_role_header(&self) -> Result<(), SpecError> {
        let p = &self.protocol;
        if self.generated.is_some()
            || self.peer.is_some()
            || self.local.is_some()
            || !self.equation.is_empty()
        {
            return Err(self.err(
                "role",
                "a spec is written either with [generated], [[equation]], [peer] and [local] (the two-node form) or with [[role]] tables, not both",
            ));
        }
        for field in ["memory_at", "cache_at"] {
            let set = if field == "memory_at" {
                p.memory_at.is_some()
            } else {
                p.cache_at.is_some()
            };
            if set {
                return Err(self.err(
                    format!("protocol.{field}"),
                    "a role-form spec names its home with `home`; each role says where its data lives",
                ));
            }
        }
        let mut names = BTreeSet::new();
        for (i, r) in self.role.iter().enumerate() {
            if !names.insert(r.name.as_str()) {
                return Err(self.err(
                    format!("role[{i}].name"),
                    format!("duplicate role {:?}", r.name),
                ));
            }
        }
        let Some(home) = &p.home else {
            return Err(self.err(
                "protocol.home",
                "missing field: the role that holds the line's memory",
            ));
        };
        let Some(h) = self.role.iter().position(|r| &r.name == home) else {
            return Err(self.err(
                "protocol.home",
                format!(
                    "unknown role {home:?} (roles: {})",
                    self.role_names().join(", ")
                ),
            ));
        };
        if self.role[h].multiple {
            return Err(self.err(
                format!("role[{h}].multiple"),
                "the home holds the line's memory and directory entry: a line has one home",
            ));
        }
        if self.role.len() > 8 {
            return Err(self.err("role", format!("at most 8 roles, got {}", self.role.len())));
        }
        Ok(())
    }

    fn validate_channels_and_messages(&self) -> Result<(), SpecError> {
        let roles = self.role_names();
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
                if !roles.contains(&r.as_str()) {
                    let expected = if self.is_two_node() {
                        "generated, peer or local".to_string()
                    } else {
                        roles.join(", ")
                    };
                    return Err(self.err(
                        format!("channel[{i}].{f}"),
                        format!("unknown role {r:?} (expected {expected})"),
                    ));
                }
            }
            if c.from == c.to && !self.table(&c.from).is_some_and(|t| t.multiple) {
                return Err(self.err(
                    format!("channel[{i}]"),
                    "a channel must connect two different roles",
                ));
            }
            if self.is_two_node()
                && (c.from == "local" && c.to == "peer" || c.from == "peer" && c.to == "local")
            {
                return Err(self.err(
                    format!("channel[{i}]"),
                    "the local agent talks only to the generated agent",
                ));
            }
        }
        for (i, c) in self.channel.iter().enumerate() {
            for (k, o) in c.ordered_after.iter().enumerate() {
                let place = format!("channel[{i}].ordered_after[{k}]");
                let Some(oc) = self.channel.iter().find(|x| x.name == *o) else {
                    return Err(self.err(place, format!("unknown channel {o:?}")));
                };
                if oc.name == c.name || oc.from != c.from || oc.to != c.to {
                    return Err(self.err(
                        place,
                        format!(
                            "channel {} runs from {} to {}; {} can only be ordered behind another channel in the same direction",
                            oc.name, oc.from, oc.to, c.name
                        ),
                    ));
                }
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
            if m.ack && c.class == MsgClass::Request {
                return Err(self.err(
                    format!("message[{i}].ack"),
                    format!("{} is a request; acknowledgements are responses", m.name),
                ));
            }
        }
        Ok(())
    }

    fn validate_equations(&self) -> Result<(), SpecError> {
        // Generated agent stable states.
        let g = self.generated();
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
                self.check_action(place, a, "generated", None)?;
            }
            // Missing reply: every forward sent must be answered later in the equation.
            for (j, list) in e.actions.iter().enumerate() {
                for a in list {
                    if let Ok(Action::Send { msg: m, .. }) = parse_action(a) {
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
        Ok(())
    }

    fn validate_check(&self) -> Result<(), SpecError> {
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
        let mut agents = 0usize;
        for role in self.role_names() {
            agents += *self.check.instances.get(role).unwrap_or(&1) as usize;
        }
        for (role, &n) in &self.check.instances {
            let place = format!("check.instances.{role}");
            let Some(t) = self.table(role).filter(|_| !self.is_two_node()) else {
                return Err(self.err(
                    place,
                    format!("unknown role {role:?} (instances are set for role-form roles)"),
                ));
            };
            if n == 0 {
                return Err(self.err(place, "at least one instance"));
            }
            if n > 1 && !t.multiple {
                return Err(self.err(
                    place,
                    format!("role {role} is not `multiple`, so a system has one instance of it"),
                ));
            }
        }
        if agents > 8 {
            return Err(self.err(
                "check.instances",
                format!("at most 8 agents in a checked system, got {agents}"),
            ));
        }
        Ok(())
    }

    /// Checks one action of a row of `role` (`event` is the message the row
    /// handles, if any).
    fn check_action(
        &self,
        place: &str,
        a: &str,
        role: &str,
        event: Option<&ChannelSpec>,
    ) -> Result<(), SpecError> {
        let act = parse_action(a).map_err(|m| self.err(place, m))?;
        let home = self.home_role();
        if act.is_directory() && role != home {
            return Err(self.err(
                place,
                format!("{act} updates the directory entry, which only the home ({home}) keeps"),
            ));
        }
        if let Action::Send { msg: m, to } = act {
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
            let multiple = self.table(&c.to).is_some_and(|t| t.multiple);
            let bad = match to {
                Target::Default if multiple => Some(format!(
                    "message {m} goes to the role {}, which may have several instances: name its target (send {m} to src|req|owner|sharers)",
                    c.to
                )),
                Target::Owner | Target::Sharers if role != home => Some(format!(
                    "only the home ({home}) keeps the owner and sharers"
                )),
                Target::Home if c.to != home => Some(format!(
                    "message {m} goes to the {}, not to the home ({home})",
                    c.to
                )),
                Target::Src if event.is_some_and(|e| e.from != c.to) || event.is_none() => {
                    Some(format!(
                        "`to src` answers the sender of the handled message, which is not a {}",
                        c.to
                    ))
                }
                _ => None,
            };
            if let Some(b) = bad {
                return Err(self.err(place, b));
            }
        }
        Ok(())
    }

    /// Checks a hand-written table of `role`; `at` prefixes error places
    /// (`peer`, `local`, `role[2]`).
    fn validate_table(&self, t: &TableSpec, role: &str, at_table: &str) -> Result<(), SpecError> {
        let mut states = BTreeSet::new();
        for (i, s) in t.state.iter().enumerate() {
            if !states.insert(s.name.as_str()) {
                return Err(self.err(
                    format!("{at_table}.state[{i}]"),
                    format!("duplicate state {:?}", s.name),
                ));
            }
        }
        if !states.contains(t.initial.as_str()) {
            return Err(self.err(
                format!("{at_table}.initial"),
                format!("unknown state {:?}", t.initial),
            ));
        }
        let home = self.home_role();
        let locals: BTreeSet<&str> = t.event.iter().map(|e| e.name.as_str()).collect();
        let mut seen: BTreeMap<(&str, &str), (usize, Option<Guard>)> = BTreeMap::new();
        for (i, r) in t.transition.iter().enumerate() {
            let at = |f: &str| format!("{at_table}.transition[{i}].{f}");
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
            let guard = match &r.guard {
                None => None,
                Some(g) => {
                    let Some(g) = Guard::parse(g) else {
                        return Err(self.err(
                            at("guard"),
                            format!("unknown guard {g:?} (expected last_ack, more_acks, from_owner, not_from_owner, no_other_sharers or other_sharers)"),
                        ));
                    };
                    if g.reads_directory() && role != home {
                        return Err(self.err(
                            at("guard"),
                            format!(
                                "{} reads the directory entry, which only the home ({home}) keeps",
                                g.as_str()
                            ),
                        ));
                    }
                    let acked = self.message.iter().any(|m| m.name == r.event && m.ack);
                    if !g.reads_directory() && !acked {
                        return Err(self.err(
                            at("guard"),
                            format!(
                                "{} counts acknowledgements: {} is not a message with `ack = true`",
                                g.as_str(),
                                r.event
                            ),
                        ));
                    }
                    Some(g)
                }
            };
            match seen.get(&(r.state.as_str(), r.event.as_str())) {
                None => {
                    seen.insert((r.state.as_str(), r.event.as_str()), (i, guard));
                }
                Some(&(prev, pg)) => {
                    let complementary =
                        matches!((pg, guard), (Some(a), Some(b)) if a.complement() == b);
                    if !complementary {
                        let msg = match (pg, guard) {
                            (None, None) => format!(
                                "({}, {}) is already defined by transition[{prev}]",
                                r.state, r.event
                            ),
                            _ => format!(
                                "({}, {}) has two rows (transition[{prev}] and this one); two rows need complementary guards such as last_ack / more_acks",
                                r.state, r.event
                            ),
                        };
                        return Err(self.err(format!("{at_table}.transition[{i}]"), msg));
                    }
                    // A third row finds two entries: mark the pair as used.
                    seen.insert((r.state.as_str(), r.event.as_str()), (i, None));
                }
            }
            if r.stall {
                if r.next.is_some() || !r.actions.is_empty() {
                    return Err(self.err(
                        format!("{at_table}.transition[{i}]"),
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
                return Err(self.err(format!("{at_table}.transition[{i}]"), "missing next state"));
            };
            if !states.contains(next.as_str()) {
                return Err(self.err(at("next"), format!("unknown state {next:?}")));
            }
            for (k, a) in r.actions.iter().enumerate() {
                self.check_action(
                    &format!("{at_table}.transition[{i}].actions[{k}]"),
                    a,
                    role,
                    msg_chan,
                )?;
            }
            // Missing reply: a forward to this agent must be answered (two-node
            // form: to its sender; role form: by some response, which may go
            // to the requester the forward acts for).
            if let Some(c) = msg_chan {
                if c.class == MsgClass::Forward {
                    let answered = r.actions.iter().any(|a| {
                        matches!(parse_action(a), Ok(Action::Send { msg: m, .. }) if self.channel_of(&m).is_some_and(|mc| mc.class == MsgClass::Response && (mc.to == c.from || !self.is_two_node())))
                    });
                    if !answered {
                        return Err(self.err(
                            format!("{at_table}.transition[{i}]"),
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
