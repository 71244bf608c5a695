//! # The coherent Enzian platform: ECI links, the directory controller that
//! executes the generated protocol table, and a CPU LLC that executes the
//! peer table
//!
//! Two homes share the links: FPGA-homed lines (below
//! [`cc::CPU_HOMED_BASE`]) run `eci-dc` between the CPU's LLC and the DC,
//! as drawn here; CPU-homed lines run `eci-cc` between the CPU home
//! ([`cpu_home`]) and the FPGA's cache controller ([`cc`]); [`shared`]
//! puts both on one pair of ECI links, routing by each message's
//! [`Catalogue`].
//!
//! ```text
//!   CoherentCpu (cores with L1s and write buffers + shared LLC = ECI
//!                remote agent, table ir.peer; TADs, XOR scrambler)
//!     ├─eci0── kernel link, 5 VCs (even lines) ──┐
//!     └─eci1── kernel link, 5 VCs (odd lines)  ──┤
//!                          DirectoryController: even / odd slice,
//!                          N serial DCUs each, table ir.generated,
//!                          app machine ir.local, AXI → BRAM | DDR (MIG-like)
//! ```
//!
//! * **The table that was proved is the table that runs.** [`Tables`] wraps
//!   the [`ProtocolIr`] from `ccsim-protocol` (generated from `eci-dc` or
//!   imported from its JSON export) and every agent decides every event by
//!   a cell of its `MachineIndex` table, compiled once (`compiled.rs`: the
//!   same cells with their messages resolved), interpreting actions exactly
//!   like the checker's `system.rs`: `send` takes data from the cache copy (cache agent with
//!   access), else from memory (home); `write_mem` and `fill` take the
//!   received data; `store` updates the ghost; `check` compares with it.
//! * **Real data.** Lines are 128 bytes; memory, the LLC and every data
//!   message carry real bytes ([`Line`]).
//! * **Online checks** ([`check::Checker`], shared by both agents): SWMR and
//!   data-value are asserted on every transition of every line against a
//!   per-line "latest write" ghost. A watchdog, a deadlock or a violation
//!   is reported with the stuck transactions (line, states, pending
//!   messages) instead of hanging: from the checker's mirror with checks
//!   on, from the components and the kernel's in-flight messages once the
//!   run has stopped with checks off (nothing is tracked per transaction).
//!
//! ## Example: one coherent read through the DC from BRAM
//!
//! ```
//! use ccsim_models::coherent::system::{CoherentSystem, CoherentParams, HomeMemory};
//! use ccsim_models::coherent::cpu::CpuOp;
//! let p = CoherentParams::default();
//! let mut sys = CoherentSystem::build(&p, HomeMemory::Bram, vec![CpuOp::Load { line: 7 }], 1).unwrap();
//! sys.run().unwrap();
//! let cpu = sys.cpu();
//! // The load saw the bytes the DC's memory holds for line 7.
//! assert_eq!(cpu.completed[0].data, ccsim_models::coherent::initial_line(7));
//! // Its latency is a full round trip over ECI plus the DC pipeline.
//! assert!(cpu.completed[0].latency_ps > 230_000);
//! ```

pub mod bench;
pub mod cc;
pub mod cc_invocation;
pub mod cc_system;
pub mod check;
mod compiled;
pub mod cpu;
pub mod cpu_home;
pub mod dc;
pub mod invocation;
pub mod link;
pub mod memory;
mod parked;
pub mod shared;
pub mod system;

use std::collections::BTreeMap;
use std::sync::Arc;

use ccsim_kernel::sim::Message;
use ccsim_protocol::ir::{Access, Action, IndexedOutcome, MachineIndex, MsgClass, ProtocolIr};

/// Bytes in a cache line (ThunderX-1 LLC, CCKit §4).
pub const LINE_BYTES: usize = 128;

/// One cache line of real data.
pub type Line = [u8; LINE_BYTES];

/// What a line holds before anyone writes it: a deterministic pattern of its
/// index, so a misrouted line shows.
///
/// The line is 16 little-endian words; word `j` is `z ^ (z >> 31)` with
/// `z = line * K1 + (j + 1) * K2` (wrapping). A word at a time, because an
/// unwritten line is read on every DC data response: this is on the hot
/// path.
// Out of line: inlined into the DC's handler it compiled to a scalar loop
// several times slower than this function on its own.
#[inline(never)]
pub fn initial_line(line: u64) -> Line {
    let base = line.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut l = [0u8; LINE_BYTES];
    for (j, word) in l.chunks_exact_mut(8).enumerate() {
        let z = base.wrapping_add((j as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
        word.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    l
}

/// Most spare line buffers kept for reuse per thread (128 KiB): more than
/// the data messages a system has in flight at once.
const SPARE_LINES_MAX: usize = 1024;

thread_local! {
    /// Buffers of data messages that were consumed, reused by
    /// [`boxed_line`]: a data message then costs no allocation. A cache of
    /// memory only; nothing simulated depends on it. (Boxes, not lines:
    /// the point is to keep the allocations themselves.)
    #[allow(clippy::vec_box)]
    static SPARE_LINES: std::cell::RefCell<Vec<Box<Line>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `data` in a heap buffer for a message's payload ([`CohMsg::data`]),
/// reusing a buffer returned by [`recycle_line`] when there is one.
#[inline]
pub fn boxed_line(data: Line) -> Box<Line> {
    match SPARE_LINES.with(|s| s.borrow_mut().pop()) {
        Some(mut b) => {
            *b = data;
            b
        }
        None => Box::new(data),
    }
}

/// Returns a consumed payload's buffer for [`boxed_line`] to reuse (dropping
/// it instead is correct, only slower). Receivers that are done with a data
/// message's line call this.
#[inline]
pub fn recycle_line(b: Box<Line>) {
    SPARE_LINES.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < SPARE_LINES_MAX {
            s.push(b);
        }
    });
}

/// Role index of the generated machine (the DC).
pub const GENERATED: usize = 0;
/// Role index of the peer machine (the CPU LLC).
pub const PEER: usize = 1;
/// Role index of the device-local machine (application and AXI side).
pub const LOCAL: usize = 2;

/// Which protocol's message catalogue a [`CohMsg`] index belongs to: the
/// two protocols on ECI number their messages independently, so a receiver
/// must know whose catalogue `msg` indexes before it looks it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Catalogue {
    /// FPGA-homed lines: memory at the generated agent (the DC, `eci-dc`
    /// and the invocation tables).
    FpgaHomed,
    /// CPU-homed lines: memory at the peer (the CPU home), the cache at the
    /// generated agent (the FPGA's CC, `eci-cc`).
    CpuHomed,
}

/// A message of the coherent system: a protocol message of the IR catalogue
/// about one line, with the line's data when the message carries some.
#[derive(Clone, Debug)]
pub struct CohMsg {
    /// Index in the IR's message catalogue.
    pub msg: u16,
    /// The catalogue `msg` indexes.
    pub catalogue: Catalogue,
    /// Line index (byte address / 128).
    pub line: u64,
    /// The payload (16 words) of data-carrying messages (made with
    /// [`boxed_line`] and given back with [`recycle_line`] by the hot paths,
    /// so that data messages allocate nothing in a long run).
    pub data: Option<Box<Line>>,
    /// Message name, for traces and reports ([`intern`]ed: copying it is a
    /// pointer copy, with no reference count to update per message).
    pub name: &'static str,
}

impl Message for CohMsg {
    fn label(&self) -> String {
        format!("{} line={:#x}", self.name, self.line)
    }
}

/// The process-wide copy of a message name. Each distinct name is stored
/// once for the life of the process (protocols have a few dozen names), so
/// messages can carry `&'static str` instead of a reference-counted string.
pub fn intern(name: &str) -> &'static str {
    static NAMES: std::sync::OnceLock<std::sync::Mutex<rustc_hash::FxHashSet<&'static str>>> =
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
    /// ECI virtual channel ([`link::vc_of`]) for messages on the link.
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
                vc: link::vc_of(m.class, m.data, &m.from),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_line_is_the_documented_pattern() {
        for line in (0..2000u64).chain([u64::MAX, 1 << 40, 0xDEAD_BEEF]) {
            let mut want = [0u8; LINE_BYTES];
            for (i, b) in want.iter_mut().enumerate() {
                let (j, k) = (i as u64 / 8, i % 8);
                let z = line
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add((j + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
                *b = (z ^ (z >> 31)).to_le_bytes()[k];
            }
            assert_eq!(initial_line(line), want, "line {line}");
            assert_ne!(initial_line(line), initial_line(line.wrapping_add(1)));
        }
    }
}
