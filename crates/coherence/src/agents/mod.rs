//! Generic table agents: any role of any protocol given as data, in a
//! timing simulation, with no protocol-specific Rust.
//!
//! A protocol spec (`protocols/msi-dma.toml`) names its roles; a platform's
//! `[systems.<name>]` section (read by `ccsim_platform::build`) names the
//! agents, the role each plays, the links between them and the line size.
//! The pieces here run it:
//!
//! ```text
//!   ProtocolSystem   the protocol (engine tables), the agents and their
//!                    roles, the homes and their address map, the line size
//!   TableAgent       one agent: per-line state, copy or memory, directory
//!                    entry, stalled requests; every row through
//!                    `engine::execute`; optionally a random tester that
//!                    drives the role's local events (loads, stores, ...)
//!   ProtocolSwitch   forwards each message to the port of its destination
//!   InvariantChecker the online checks: `protocol::invariants` (SWMR,
//!                    data-value, no unspecified reception) on every row,
//!                    and the log of reads and writes in the order they
//!                    took effect, for a sequential reference
//! ```
//!
//! Every agent connects through a port `net`; its messages travel as
//! [`Msg::Coh`](crate::Msg::Coh) on the link's virtual channel of the
//! message's class (request, forward, response: separate channels, so a
//! stalled request never blocks the answer that would unblock it).

mod checker;
pub mod line_engine;
mod snc;
mod switch;
mod table_agent;

pub use checker::{Access, InvariantChecker, LogEntry};
pub use snc::{snc_one_way_ns, SlicePlacement, SNC_MESH};
pub use switch::{ProtocolSwitch, PROTOCOL_SWITCH, SWITCH_PORTS};
pub use table_agent::{HomeWrite, TableAgent, TesterParams, PROGRAM_WAKE, TABLE_AGENT};

use std::sync::Arc;

use ccsim_kernel::component::{
    ComponentSpec, ParamDefault, ParamKind, ParamProblem, ParamRange, ParamSpec, Params, Peers,
};
use ccsim_kernel::link::{LinkParams, VcParams};

use ccsim_protocol::engine::{AgentId, Protocol};
use ccsim_protocol::ir::MsgClass;

use crate::{initial_line, Catalogue, Line, LINE_BYTES};

/// One agent of a [`ProtocolSystem`].
#[derive(Debug, Clone)]
pub struct AgentInfo {
    /// Its name in the system (`cache0`).
    pub name: String,
    /// The role it plays (index into the protocol's roles).
    pub role: usize,
}

/// A protocol and the agents that run it: what every [`TableAgent`] and
/// the [`InvariantChecker`] of one system share.
#[derive(Debug)]
pub struct ProtocolSystem {
    /// The protocol (IR, dense tables, message facts).
    pub protocol: Protocol,
    /// The catalogue its messages travel with.
    pub catalogue: &'static Catalogue,
    /// Agents by id.
    pub agents: Vec<AgentInfo>,
    /// The home agents; line `l`'s home is `homes[l % homes.len()]`.
    pub homes: Vec<AgentId>,
    /// Bytes of a line (at most [`LINE_BYTES`]).
    pub line_bytes: usize,
    /// Bytes of a message header on the wire.
    pub header_bytes: u32,
}

impl ProtocolSystem {
    /// The same agents running `ir` instead (a mutant of the protocol, say:
    /// same name, roles and messages; the rows may differ).
    pub fn with_ir(&self, ir: ccsim_protocol::ir::ProtocolIr) -> Result<ProtocolSystem, String> {
        let protocol = Protocol::new(ir)?;
        if protocol.ir.roles.len() != self.protocol.ir.roles.len()
            || protocol.msgs.len() != self.protocol.msgs.len()
        {
            return Err(format!(
                "protocol {}: another IR needs the same roles and messages",
                self.protocol.ir.name
            ));
        }
        Ok(ProtocolSystem {
            protocol,
            catalogue: self.catalogue,
            agents: self.agents.clone(),
            homes: self.homes.clone(),
            line_bytes: self.line_bytes,
            header_bytes: self.header_bytes,
        })
    }

    /// Loads protocol `spec` (a shipped name or a path) and checks that the
    /// agents' roles exist, that every role but the home's with several
    /// agents is declared `multiple`, and that homes play the home role.
    pub fn new(
        spec: &str,
        agents: Vec<(String, String)>,
        line_bytes: usize,
        header_bytes: u32,
    ) -> Result<ProtocolSystem, String> {
        let s = ccsim_protocol::load_spec(spec).map_err(|e| e.to_string())?;
        let (ir, _) = ccsim_protocol::generate(&s).map_err(|e| e.to_string())?;
        let protocol = Protocol::new(ir)?;
        if line_bytes == 0 || line_bytes > LINE_BYTES {
            return Err(format!(
                "line_bytes must be in [1, {LINE_BYTES}], got {line_bytes}"
            ));
        }
        let mut infos = Vec::new();
        for (name, role) in agents {
            let Some(r) = protocol.ir.role_index(&role) else {
                let known: Vec<&str> = protocol.ir.roles.iter().map(|m| m.role.as_str()).collect();
                return Err(format!(
                    "agent `{name}`: protocol {spec} has no role `{role}`; its roles are: {}",
                    known.join(", ")
                ));
            };
            infos.push(AgentInfo { name, role: r });
        }
        if infos.len() > 64 {
            return Err(format!("at most 64 agents, got {}", infos.len()));
        }
        for (r, m) in protocol.ir.roles.iter().enumerate() {
            let n = infos.iter().filter(|a| a.role == r).count();
            if n > 1 && !m.multiple && r != protocol.home {
                return Err(format!(
                    "{n} agents play role `{}`, which protocol {spec} does not declare `multiple`",
                    m.role
                ));
            }
        }
        let homes: Vec<AgentId> = (0..infos.len())
            .filter(|&a| infos[a].role == protocol.home)
            .map(|a| a as AgentId)
            .collect();
        if homes.is_empty() {
            return Err(format!(
                "no agent plays the home role `{}`",
                protocol.ir.roles[protocol.home].role
            ));
        }
        let catalogue = Catalogue::of(
            &protocol.ir.name,
            &protocol.msgs.iter().map(|m| m.name).collect::<Vec<_>>(),
        );
        Ok(ProtocolSystem {
            protocol,
            catalogue,
            agents: infos,
            homes,
            line_bytes,
            header_bytes,
        })
    }

    /// The home agent of `line` (lines interleave over the homes).
    #[inline]
    pub fn home_of(&self, line: u64) -> AgentId {
        self.homes[(line % self.homes.len() as u64) as usize]
    }

    /// The agents playing `role`.
    pub fn agents_of(&self, role: usize) -> impl Iterator<Item = AgentId> + '_ {
        (0..self.agents.len())
            .filter(move |&a| self.agents[a].role == role)
            .map(|a| a as AgentId)
    }

    /// What `line` holds before anyone writes it: the documented pattern of
    /// [`initial_line`], cut to the line size.
    pub fn initial_value(&self, line: u64) -> Line {
        let mut l = initial_line(line);
        l[self.line_bytes..].fill(0);
        l
    }

    /// Bytes of message `msg` on the wire.
    #[inline]
    pub fn wire_bytes(&self, msg: u16) -> u32 {
        self.header_bytes
            + if self.protocol.msgs[msg as usize].data {
                self.line_bytes as u32
            } else {
                0
            }
    }

    /// The virtual channel of message `msg`: its class; or, for a message
    /// ordered behind others (`ordered_after`), the channel of the first
    /// of those, so that the link's in-order queue keeps the order (the
    /// CXL link layer packs H2D requests and responses into flits in the
    /// order they were issued).
    #[inline]
    pub fn vc(&self, msg: u16) -> u8 {
        let facts = &self.protocol.msgs[msg as usize];
        let class = match facts.ordered_after.first() {
            Some(&o) => self.protocol.msgs[o as usize].class,
            None => facts.class,
        };
        class_vc(class)
    }
}

/// The virtual channels of a protocol link, in order: one per message class.
pub const CLASS_VCS: [&str; 3] = ["request", "forward", "response"];

/// The channel of a message class (an index into [`CLASS_VCS`]).
#[inline]
pub fn class_vc(c: MsgClass) -> u8 {
    match c {
        MsgClass::Request => 0,
        MsgClass::Forward => 1,
        MsgClass::Response => 2,
    }
}

/// A shared handle to a system's description.
pub type SystemRef = Arc<ProtocolSystem>;

/// The declaration of `protocol_link`: the link between the agents (or an
/// agent and a switch) of a generic system.
pub static PROTOCOL_LINK: ComponentSpec = ComponentSpec {
        type_name: "protocol_link",
        description: "A point-to-point link of a generic protocol system: latency, bandwidth, and one virtual channel per message class (request, forward, response) with its credits. Wired by a system section's links, not a component of its own.",
        params: &[
            ParamSpec {
                name: "latency_ns",
                kind: ParamKind::Float,
                default: ParamDefault::Float(5.0),
                unit: "ns",
                range: ParamRange::at_least(0.0),
                from: "assumed: an on-chip hop",
                description: "One-way latency after serialization.",
            },
            ParamSpec {
                name: "bandwidth_gbps",
                kind: ParamKind::Float,
                default: ParamDefault::Float(64.0),
                unit: "GB/s",
                range: ParamRange::positive(),
                from: "assumed: 64 B per cycle at 1 GHz",
                description: "Bandwidth per direction.",
            },
            ParamSpec {
                name: "credits",
                kind: ParamKind::Int,
                default: ParamDefault::Int(0),
                unit: "messages",
                range: ParamRange::at_least(0.0),
                from: "assumed: unlimited buffering",
                description: "Receive buffers per virtual channel and direction (0: unlimited, no flow control).",
            },
            ParamSpec {
                name: "flit_bytes",
                kind: ParamKind::Int,
                default: ParamDefault::Int(0),
                unit: "bytes",
                range: ParamRange::at_least(0.0),
                from: "assumed: no flits",
                description: "Bytes of a flit on the wire (CXL 2.0: 68), carrying flit_payload_bytes of message slots; messages are whole slots (the system's header_bytes and line_bytes), so every payload byte costs flit_bytes / flit_payload_bytes on the wire (0: no flit framing).",
            },
            ParamSpec {
                name: "flit_payload_bytes",
                kind: ParamKind::Int,
                default: ParamDefault::Int(64),
                unit: "bytes",
                range: ParamRange::at_least(1.0),
                from: "CXL 2.0 §4.2: four 16 B slots per 68 B flit (2 B protocol ID, 2 B CRC)",
                description: "Bytes of message slots in a flit (the rest is the flit's framing: protocol ID and CRC).",
            },
        ],
        ports: &[],
        stats: &[],
        check: Some(check_flits),
    };

/// A flit carries at most its own bytes of slots.
fn check_flits(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let (flit, payload) = (p.int("flit_bytes"), p.int("flit_payload_bytes"));
    if flit > 0 && payload > flit {
        return Err(ParamProblem::new(
            "flit_payload_bytes",
            format!("must be at most flit_bytes ({flit}), got {payload}"),
        ));
    }
    Ok(())
}

/// The rate at which a `protocol_link` carries message bytes, in GB/s:
/// its wire rate, less the flit framing when it has flits (a CXL 2.0 flit
/// of 68 B carries 64 B of slots: 64/68 of the wire).
pub fn payload_bandwidth_gbps(p: &Params) -> f64 {
    let wire = p.float("bandwidth_gbps");
    match p.uint("flit_bytes") {
        0 => wire,
        flit => wire * p.uint("flit_payload_bytes") as f64 / flit as f64,
    }
}

/// The kernel link of a `protocol_link` instance's parameters: one channel
/// per message class ([`CLASS_VCS`]) with the declared credits.
pub fn link_params(p: &Params) -> LinkParams {
    let credits = p.uint("credits") as u32;
    LinkParams::symmetric(
        crate::util::ns_to_ps(p.float("latency_ns")),
        payload_bandwidth_gbps(p) * 1e9,
    )
    .with_vcs(
        CLASS_VCS
            .iter()
            .map(|n| VcParams::new(n, credits))
            .collect(),
    )
}
