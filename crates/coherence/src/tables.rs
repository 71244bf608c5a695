//! A protocol's tables as the simulator's agents use them: the IR from
//! `ccsim-protocol` (generated from a spec, or imported from its JSON
//! export) with each message's facts resolved once.

use std::collections::BTreeMap;
use std::sync::Arc;

use ccsim_protocol::engine::{CompiledTable, Protocol};
use ccsim_protocol::ir::{
    Access, Action, IndexedOutcome, MachineIndex, MsgClass, ProtocolIr, Target,
};

use crate::envelope::{Catalogue, CohMsg};
use crate::line::Line;

/// Role index of the generated machine (the DC).
pub const GENERATED: usize = 0;
/// Role index of the peer machine (the CPU LLC).
pub const PEER: usize = 1;
/// Role index of the device-local machine (application and AXI side).
pub const LOCAL: usize = 2;

/// Facts about one message type, resolved once from the IR.
#[derive(Clone, Debug)]
pub struct MsgMeta {
    /// Name (interned).
    pub name: &'static str,
    /// Whether it carries a line.
    pub data: bool,
    /// Sending role.
    pub from: usize,
    /// Receiving role.
    pub to: usize,
    /// Class (requests may stall).
    pub class: MsgClass,
    /// ECI virtual channel ([`crate::vc::vc_of`]) for messages on the link.
    pub vc: u8,
}

/// A two-node protocol (`generated`, `peer`, `local`) as the Enzian agents
/// run it: the engine's [`Protocol`] with each message's ECI virtual
/// channel, the catalogue its messages are tagged with, and the roles of
/// memory and cache. Role-form protocols run on the generic table agents,
/// which use the [`Protocol`] directly.
#[derive(Debug)]
pub struct Tables {
    /// The compiled protocol (the IR as checked, dense tables, facts).
    pub proto: Protocol,
    /// The IR (as checked).
    pub ir: ProtocolIr,
    /// Dense tables by role.
    pub idx: [MachineIndex; 3],
    /// Message facts by catalogue index.
    pub msgs: Vec<MsgMeta>,
    /// `msg_event[role][msg]`: the event index of a message in a role's table.
    pub msg_event: [Vec<Option<usize>>; 3],
    /// Whether each state of each role is stable.
    pub stable: [Vec<bool>; 3],
    /// Each state's access to the line.
    pub access: [Vec<Access>; 3],
    /// Initial state index per role.
    pub initial: [usize; 3],
    /// Role holding memory.
    pub mem_role: usize,
    /// Role holding a cached copy.
    pub cache_role: usize,
    /// The catalogue this protocol's messages are tagged with.
    pub catalogue: &'static Catalogue,
}

impl Tables {
    /// Indexes `ir`; fails with the reason when a table names an unknown
    /// state, event or message, or the protocol does not fit the Enzian
    /// agents: the two-node form, memory at the generated agent and the
    /// cache at the peer (FPGA-homed lines, run by the DC and the CPU LLC)
    /// or the reverse (CPU-homed lines, run by the FPGA's CC and the CPU
    /// home), and no guards, targets, `write` or directory actions (those
    /// are for the generic table agents).
    pub fn new(ir: ProtocolIr) -> Result<Tables, String> {
        let roles: Vec<&str> = ir.roles.iter().map(|m| m.role.as_str()).collect();
        if roles != ["generated", "peer", "local"] {
            return Err(format!(
                "{}: the Enzian agents run two-node protocols (roles generated, peer, local), not roles {}",
                ir.name,
                roles.join(", ")
            ));
        }
        for m in &ir.roles {
            for t in &m.transitions {
                let unsupported = t.guard.is_some()
                    || matches!(&t.outcome, ccsim_protocol::ir::Outcome::Go { actions, .. }
                        if actions.iter().any(|a| a.is_directory()
                            || matches!(a, Action::Write | Action::Send { to: Target::Src | Target::Req | Target::Owner | Target::Sharers | Target::Home, .. })));
                if unsupported {
                    return Err(format!(
                        "{}: ({}, {}) uses a guard, a target, `write` or a directory action, which the Enzian agents do not run",
                        m.name, t.state, t.event
                    ));
                }
            }
        }
        let proto = Protocol::new(ir.clone())?;
        let mem_role = proto.home;
        let cache_role = (0..3)
            .find(|&r| proto.keeps_copy(r))
            .ok_or_else(|| format!("{}: no role keeps a copy", ir.name))?;
        let names: Vec<&str> = ir.messages.iter().map(|m| m.name.as_str()).collect();
        let catalogue = Catalogue::of(&ir.name, &names);
        match (mem_role, cache_role) {
            (GENERATED, PEER) | (PEER, GENERATED) => {}
            _ => {
                return Err(format!(
                    "{}: the simulator runs protocols with memory at one of the generated agent and the peer and the cache at the other (got memory at {}, cache at {})",
                    ir.name, ir.roles[mem_role].role, ir.roles[cache_role].role
                ))
            }
        }
        let msgs = proto
            .msgs
            .iter()
            .zip(&ir.messages)
            .map(|(f, m)| MsgMeta {
                name: f.name,
                data: f.data,
                from: f.from,
                to: f.to,
                class: f.class,
                vc: crate::vc::vc_of(m.class, m.data, &m.from),
            })
            .collect();
        let three =
            |v: &[Vec<bool>]| -> [Vec<bool>; 3] { [v[0].clone(), v[1].clone(), v[2].clone()] };
        Ok(Tables {
            idx: [
                proto.idx[0].clone(),
                proto.idx[1].clone(),
                proto.idx[2].clone(),
            ],
            msgs,
            msg_event: [
                proto.msg_event[0].clone(),
                proto.msg_event[1].clone(),
                proto.msg_event[2].clone(),
            ],
            stable: three(&proto.stable),
            access: [
                proto.access[0].clone(),
                proto.access[1].clone(),
                proto.access[2].clone(),
            ],
            initial: [proto.initial[0], proto.initial[1], proto.initial[2]],
            mem_role,
            cache_role,
            catalogue,
            ir,
            proto,
        })
    }

    /// The shipped `eci-dc` protocol, generated from its spec.
    pub fn eci_dc() -> Result<Arc<Tables>, String> {
        Self::load("eci-dc")
    }

    /// The shipped `eci-cc` protocol (CPU-homed lines: the FPGA's cache
    /// controller and the CPU home), generated from its spec.
    pub fn eci_cc() -> Result<Arc<Tables>, String> {
        Self::load("eci-cc")
    }

    /// A shipped spec (generated once per process and shared) or a spec
    /// file (generated on every call: the file may have changed), indexed.
    pub fn load(name_or_path: &str) -> Result<Arc<Tables>, String> {
        type Cache = std::sync::Mutex<BTreeMap<String, Result<Arc<Tables>, String>>>;
        static SHIPPED: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        if ccsim_protocol::builtin_text(name_or_path).is_none() {
            return Self::generate(name_or_path);
        }
        let mut cache = SHIPPED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        cache
            .entry(name_or_path.to_string())
            .or_insert_with(|| Self::generate(name_or_path))
            .clone()
    }

    /// A shipped spec or a spec file, generated and indexed (uncached).
    fn generate(name_or_path: &str) -> Result<Arc<Tables>, String> {
        let spec = ccsim_protocol::load_spec(name_or_path).map_err(|e| e.to_string())?;
        let (ir, _) = ccsim_protocol::generate(&spec).map_err(|e| e.to_string())?;
        Tables::new(ir).map(Arc::new)
    }

    /// `role`'s table compiled for execution; `route` says where the agent
    /// sends each message (by its facts).
    pub fn compile<D: Copy>(&self, role: usize, route: impl Fn(&MsgMeta) -> D) -> CompiledTable<D> {
        CompiledTable::new(&self.proto, role, |m, _| route(&self.msgs[m as usize]))
    }

    /// The catalogue indices of the messages `role`'s row for (`state`,
    /// `event`) sends, in the order of its `send` actions (empty for a stall
    /// or an unspecified reception).
    pub fn sends(&self, role: usize, state: usize, event: usize) -> Vec<u16> {
        match self.idx[role].lookup(state, event) {
            Some(IndexedOutcome::Go { actions, .. }) => actions
                .iter()
                .filter_map(|a| a.sent().and_then(|m| self.proto.msg(m)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Message index by name.
    pub fn msg(&self, name: &str) -> Option<u16> {
        self.proto.msg(name)
    }

    /// State name of `role`.
    pub fn state_name(&self, role: usize, state: usize) -> &str {
        &self.ir.roles[role].states[state].name
    }

    /// Event index of a local (non-message) event of `role`.
    pub fn local_event(&self, role: usize, name: &str) -> Option<usize> {
        self.idx[role].event(name)
    }

    /// Machine name of `role` (`dc`, `cpu`, `app`).
    pub fn agent(&self, role: usize) -> &str {
        &self.ir.roles[role].name
    }

    /// A message of type `msg` about `line` with `data`.
    #[inline]
    pub fn make(&self, msg: u16, line: u64, data: Option<Box<Line>>) -> CohMsg {
        CohMsg::new(self.catalogue, msg, line, data)
    }

    /// Whether the protocol keeps memory at the generated agent (FPGA-homed
    /// lines on Enzian: the DC) rather than at the peer (CPU-homed: the
    /// CPU home).
    pub fn fpga_homed(&self) -> bool {
        self.mem_role == GENERATED
    }
}

/// Counts of table rows by machine, for reports (`dc: 79 states ...`).
pub fn table_summary(t: &Tables) -> BTreeMap<String, (usize, usize)> {
    t.ir.machines()
        .iter()
        .map(|m| (m.name.clone(), (m.states.len(), m.n_transitions())))
        .collect()
}
