//! A protocol's tables as the simulator's agents use them: the IR from
//! `ccsim-protocol` (generated from a spec, or imported from its JSON
//! export) with each message's facts resolved once.

use std::collections::BTreeMap;
use std::sync::Arc;

use ccsim_protocol::ir::{Access, Action, IndexedOutcome, MachineIndex, MsgClass, ProtocolIr};

use crate::envelope::{intern, Catalogue, CohMsg};
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
    /// Name ([`intern`]ed).
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

/// The three machines of a protocol, indexed for interpretation.
#[derive(Debug)]
pub struct Tables {
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
    /// The catalogue this protocol's messages are tagged with (from where
    /// its memory is).
    pub catalogue: Catalogue,
    /// Name to index; hashed, never iterated.
    msg_ids: rustc_hash::FxHashMap<String, u16>,
    /// `send_ids[role][cell]`: the catalogue indices of the messages a table
    /// cell (`idx[role].table[cell]`) sends, in action order, resolved once
    /// so a simulated send does not look its message up by name.
    send_ids: [Vec<Box<[u16]>>; 3],
}

fn role_index(r: &str) -> Result<usize, String> {
    match r {
        "generated" => Ok(GENERATED),
        "peer" => Ok(PEER),
        "local" => Ok(LOCAL),
        _ => Err(format!("unknown role {r:?}")),
    }
}

impl Tables {
    /// Indexes `ir`; fails with the reason when a table names an unknown
    /// state, event or message, or the roles do not fit the simulator:
    /// memory at the generated agent and the cache at the peer (FPGA-homed
    /// lines, run by the DC and the CPU LLC) or the reverse (CPU-homed
    /// lines, run by the FPGA's CC and the CPU home).
    pub fn new(ir: ProtocolIr) -> Result<Tables, String> {
        let ms = ir.machines();
        let idx = [ms[0].index()?, ms[1].index()?, ms[2].index()?];
        let mut initial = [0; 3];
        for r in 0..3 {
            initial[r] = idx[r].state(&ms[r].initial).ok_or_else(|| {
                format!("{}: unknown initial state {}", ms[r].name, ms[r].initial)
            })?;
        }
        let mut msgs = Vec::new();
        for m in &ir.messages {
            msgs.push(MsgMeta {
                name: intern(&m.name),
                data: m.data,
                from: role_index(&m.from)?,
                to: role_index(&m.to)?,
                class: m.class,
                vc: crate::vc::vc_of(m.class, m.data, &m.from),
            });
        }
        let msg_event = [0, 1, 2].map(|r| {
            msgs.iter()
                .map(|m| idx[r].event(m.name))
                .collect::<Vec<_>>()
        });
        for (r, m) in ms.iter().enumerate() {
            for t in &m.transitions {
                if let ccsim_protocol::ir::Outcome::Go { actions, .. } = &t.outcome {
                    for a in actions {
                        if let Action::Send(x) = a {
                            let Some(mm) = msgs.iter().find(|mm| mm.name == x) else {
                                return Err(format!(
                                    "{}: ({}, {}) sends unknown message {x}",
                                    m.name, t.state, t.event
                                ));
                            };
                            if mm.from != r {
                                return Err(format!(
                                    "{}: ({}, {}) sends {x}, which another agent sends",
                                    m.name, t.state, t.event
                                ));
                            }
                        }
                    }
                }
            }
        }
        let mem_role = role_index(&ir.memory_at)?;
        let cache_role = role_index(&ir.cache_at)?;
        let catalogue = match (mem_role, cache_role) {
            (GENERATED, PEER) => Catalogue::FpgaHomed,
            (PEER, GENERATED) => Catalogue::CpuHomed,
            _ => {
                return Err(format!(
                    "{}: the simulator runs protocols with memory at one of the generated agent and the peer and the cache at the other (got memory_at={}, cache_at={})",
                    ir.name, ir.memory_at, ir.cache_at
                ))
            }
        };
        let msg_ids: rustc_hash::FxHashMap<String, u16> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name.to_string(), i as u16))
            .collect();
        // Every sent name was checked above, so each resolves.
        let send_ids = [0, 1, 2].map(|r| {
            idx[r]
                .table
                .iter()
                .map(|cell| match cell {
                    Some(IndexedOutcome::Go { actions, .. }) => actions
                        .iter()
                        .filter_map(|a| match a {
                            Action::Send(x) => msg_ids.get(x.as_str()).copied(),
                            _ => None,
                        })
                        .collect(),
                    _ => Box::default(),
                })
                .collect()
        });
        Ok(Tables {
            msg_ids,
            send_ids,
            stable: ms.map(|m| m.states.iter().map(|s| s.stable).collect()),
            access: ms.map(|m| m.states.iter().map(|s| s.access).collect()),
            idx,
            msgs,
            msg_event,
            initial,
            mem_role,
            cache_role,
            catalogue,
            ir,
        })
    }

    /// The shipped `eci-dc` protocol, generated from its spec.
    pub fn eci_dc() -> Result<Arc<Tables>, String> {
        static CACHE: std::sync::OnceLock<Result<Arc<Tables>, String>> = std::sync::OnceLock::new();
        CACHE
            .get_or_init(|| {
                let spec = ccsim_protocol::load_spec("eci-dc").map_err(|e| e.to_string())?;
                let (ir, _) = ccsim_protocol::generate(&spec).map_err(|e| e.to_string())?;
                Tables::new(ir).map(Arc::new)
            })
            .clone()
    }

    /// The shipped `eci-cc` protocol (CPU-homed lines: the FPGA's cache
    /// controller and the CPU home), generated from its spec.
    pub fn eci_cc() -> Result<Arc<Tables>, String> {
        static CACHE: std::sync::OnceLock<Result<Arc<Tables>, String>> = std::sync::OnceLock::new();
        CACHE
            .get_or_init(|| {
                let spec = ccsim_protocol::load_spec("eci-cc").map_err(|e| e.to_string())?;
                let (ir, _) = ccsim_protocol::generate(&spec).map_err(|e| e.to_string())?;
                Tables::new(ir).map(Arc::new)
            })
            .clone()
    }

    /// The catalogue indices of the messages `role`'s row for (`state`,
    /// `event`) sends, in the order of its `send` actions (empty for a stall
    /// or an unspecified reception).
    pub fn sends(&self, role: usize, state: usize, event: usize) -> &[u16] {
        self.send_ids[role]
            .get(state * self.idx[role].n_events + event)
            .map_or(&[], |ids| ids)
    }

    /// Message index by name.
    pub fn msg(&self, name: &str) -> Option<u16> {
        self.msg_ids.get(name).copied()
    }

    /// State name of `role`.
    pub fn state_name(&self, role: usize, state: usize) -> &str {
        &self.ir.machines()[role].states[state].name
    }

    /// Event index of a local (non-message) event of `role`.
    pub fn local_event(&self, role: usize, name: &str) -> Option<usize> {
        self.idx[role].event(name)
    }

    /// Machine name of `role` (`dc`, `cpu`, `app`).
    pub fn agent(&self, role: usize) -> &str {
        &self.ir.machines()[role].name
    }

    /// A message of type `msg` about `line` with `data`.
    pub fn make(&self, msg: u16, line: u64, data: Option<Box<Line>>) -> CohMsg {
        CohMsg {
            msg,
            catalogue: self.catalogue,
            line,
            data,
            name: self.msgs[msg as usize].name,
        }
    }
}

/// Counts of table rows by machine, for reports (`dc: 79 states ...`).
pub fn table_summary(t: &Tables) -> BTreeMap<String, (usize, usize)> {
    t.ir.machines()
        .iter()
        .map(|m| (m.name.clone(), (m.states.len(), m.n_transitions())))
        .collect()
}
