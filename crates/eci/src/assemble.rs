//! Any Enzian system from a plan: which agents (by type, with their
//! parameters, protocol and memory), which muxes sharing the ECI links
//! between two protocols, which links between which ports.
//!
//! This is the one place Enzian agents are instantiated and wired. A
//! platform's `[systems.<name>]` section (ccsim-platform) becomes a
//! [`SystemPlan`]; so do the programmatic builders the crate's own tests use
//! ([`crate::system::CoherentSystem::build`], [`crate::cc_system::CcSystem::build`]).
//! The handles ([`CoherentSystem`](crate::system::CoherentSystem),
//! [`CcSystem`](crate::cc_system::CcSystem)) are views of an
//! [`Assembled`] system that find their agents by kind.
//!
//! Each agent kind runs one role of a two-node protocol and needs the
//! protocol's memory and cache where it expects them:
//!
//! | type | role it runs | memory at | cache at |
//! | --- | --- | --- | --- |
//! | `directory_controller` | generated (`dc`) | generated | peer |
//! | `coherent_cpu` | peer (`cpu`) | generated | peer |
//! | `cache_controller` | generated (`cc`) | peer | generated |
//! | `cpu_home` | peer (`home`) | peer | generated |

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use ccsim_coherence::check::Checker;
use ccsim_coherence::memory::MemTiming;
use ccsim_coherence::tables::{GENERATED, PEER};
use ccsim_coherence::{Msg, Tables};
use ccsim_kernel::prelude::*;

use crate::cc::CacheController;
use crate::cpu::CoherentCpu;
use crate::cpu_home::CpuHome;
use crate::dc::DirectoryController;
use crate::link::{EciLink, VC_NAMES};
use crate::shared::EciMux;

/// The Enzian coherent agents a system can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// `coherent_cpu`: cores and the LLC, remote caching agent of
    /// FPGA-homed lines.
    Cpu,
    /// `directory_controller`: the FPGA's home of FPGA-homed lines.
    Dc,
    /// `cache_controller`: the FPGA's caching agent of CPU-homed lines.
    Cc,
    /// `cpu_home`: the CPU's home of CPU-homed lines, with a core.
    CpuHome,
}

impl AgentKind {
    /// Every kind.
    pub const ALL: [AgentKind; 4] = [
        AgentKind::Cpu,
        AgentKind::Dc,
        AgentKind::Cc,
        AgentKind::CpuHome,
    ];

    /// The kind of platform component type `type_name`, if it is an agent.
    pub fn of_type(type_name: &str) -> Option<AgentKind> {
        Self::ALL.into_iter().find(|k| k.type_name() == type_name)
    }

    /// Its platform component type.
    pub fn type_name(self) -> &'static str {
        match self {
            AgentKind::Cpu => crate::cpu::COHERENT_CPU.type_name,
            AgentKind::Dc => crate::dc::DIRECTORY_CONTROLLER.type_name,
            AgentKind::Cc => crate::cc::CACHE_CONTROLLER.type_name,
            AgentKind::CpuHome => crate::cpu_home::CPU_HOME.type_name,
        }
    }

    /// Whether it runs the generated role (else the peer).
    fn generated(self) -> bool {
        matches!(self, AgentKind::Dc | AgentKind::Cc)
    }

    /// Whether it serves FPGA-homed lines (memory at the generated role).
    fn fpga_homed(self) -> bool {
        matches!(self, AgentKind::Cpu | AgentKind::Dc)
    }

    /// The role index it runs in `tables`, or why it cannot run them.
    pub fn role_in(self, tables: &Tables) -> Result<usize, String> {
        if self.fpga_homed() != tables.fpga_homed() {
            let (kind, proto) = if self.fpga_homed() {
                ("FPGA-homed", "CPU-homed")
            } else {
                ("CPU-homed", "FPGA-homed")
            };
            return Err(format!(
                "a {} serves {kind} lines; protocol {} is {proto}",
                self.type_name(),
                tables.ir.name
            ));
        }
        Ok(if self.generated() { GENERATED } else { PEER })
    }

    /// Whether it has memory of its own behind it (the DC's BRAM or DDR).
    pub fn takes_memory(self) -> bool {
        self == AgentKind::Dc
    }
}

/// One agent of a plan.
pub struct AgentPlan<'a> {
    /// Component name in the system (`system.<name>`).
    pub name: &'a str,
    /// What it is.
    pub kind: AgentKind,
    /// Its parameters (the platform instance's).
    pub params: &'a Params,
    /// The memory behind it (directory controllers only).
    pub memory: Option<MemTiming>,
    /// The protocol it runs: an index into [`SystemPlan::protocols`].
    pub protocol: usize,
}

/// An [`EciMux`]: one pair of ECI links shared by
/// an FPGA-homed and a CPU-homed protocol.
pub struct MuxPlan<'a> {
    /// Component name in the system.
    pub name: &'a str,
}

/// A link between `a` and `b`, each (node index, port): nodes are the
/// agents, then the muxes.
pub struct LinkPlan<'a> {
    /// First end.
    pub a: (usize, &'a str),
    /// Second end.
    pub b: (usize, &'a str),
    /// A wiring point inside a chip (a mux to its agents: no time, no
    /// credits) rather than an ECI link.
    pub wire: bool,
}

impl LinkPlan<'static> {
    /// The two ECI links between agents 0 and 1 (`eci0` to `eci0`, `eci1`
    /// to `eci1`): a two-agent system.
    pub fn pair() -> Vec<LinkPlan<'static>> {
        ["eci0", "eci1"]
            .map(|port| LinkPlan {
                a: (0, port),
                b: (1, port),
                wire: false,
            })
            .into()
    }
}

/// Everything [`assemble`] needs.
pub struct SystemPlan<'a> {
    /// Agents, added to the simulation in this order.
    pub agents: Vec<AgentPlan<'a>>,
    /// Muxes, added after the agents.
    pub muxes: Vec<MuxPlan<'a>>,
    /// Links, connected in this order.
    pub links: Vec<LinkPlan<'a>>,
    /// The ECI link every link is (the agents map lines to links by it).
    pub link: EciLink,
    /// Protocols; each gets its own online checker.
    pub protocols: Vec<Arc<Tables>>,
    /// Online SWMR/data-value checks.
    pub checks: bool,
    /// Seed of every random stream.
    pub seed: u64,
    /// Message trace.
    pub trace: TraceMode,
}

/// An assembled system.
pub struct Assembled {
    /// The runnable simulation.
    pub sim: Simulation<Msg>,
    /// Each agent's kind and component, in plan order.
    pub agents: Vec<(AgentKind, ComponentId)>,
    /// One online checker per protocol, in plan order.
    pub checkers: Vec<Rc<RefCell<Checker>>>,
}

impl Assembled {
    /// The single agent of `kind`, or why there is not exactly one.
    pub fn only(&self, kind: AgentKind) -> Result<ComponentId, String> {
        let mut of = self.agents.iter().filter(|(k, _)| *k == kind);
        match (of.next(), of.next()) {
            (Some(&(_, id)), None) => Ok(id),
            (None, _) => Err(format!("the system has no {}", kind.type_name())),
            (Some(_), Some(_)) => Err(format!(
                "the system has several {}s; this view takes one",
                kind.type_name()
            )),
        }
    }
}

/// Instantiates and wires the plan's agents (their programs and device
/// logic are set afterwards, before the run).
pub fn assemble(plan: SystemPlan<'_>) -> Result<Assembled, String> {
    let checkers: Vec<Rc<RefCell<Checker>>> = plan
        .protocols
        .iter()
        .map(|t| Rc::new(RefCell::new(Checker::new(t.clone(), plan.checks))))
        .collect();
    let mut b = SystemBuilder::new("system", plan.seed);
    b.trace(plan.trace);
    let mut agents = Vec::with_capacity(plan.agents.len());
    for a in plan.agents {
        let tables = plan
            .protocols
            .get(a.protocol)
            .ok_or_else(|| format!("{}: no protocol {}", a.name, a.protocol))?
            .clone();
        a.kind
            .role_in(&tables)
            .map_err(|e| format!("{}: {e}", a.name))?;
        let checker = checkers[a.protocol].clone();
        let link = &plan.link;
        let id = match (a.kind, a.memory) {
            (AgentKind::Dc, Some(memory)) => b.add(
                a.name,
                DirectoryController::from_params(a.params, tables, checker, memory, link)?,
            ),
            (AgentKind::Dc, None) => {
                return Err(format!("{}: a directory_controller needs a memory", a.name))
            }
            (_, Some(_)) => {
                return Err(format!(
                    "{}: a {} has no memory of its own",
                    a.name,
                    a.kind.type_name()
                ))
            }
            (AgentKind::Cpu, None) => b.add(
                a.name,
                CoherentCpu::from_params(a.params, tables, checker, link, Vec::new())?,
            ),
            (AgentKind::Cc, None) => b.add(
                a.name,
                CacheController::from_params(a.params, tables, checker, link)?,
            ),
            (AgentKind::CpuHome, None) => b.add(
                a.name,
                CpuHome::from_params(a.params, tables, checker, link, Vec::new())?,
            ),
        };
        agents.push((a.kind, id));
    }
    let mut nodes: Vec<ComponentId> = agents.iter().map(|&(_, id)| id).collect();
    if !plan.muxes.is_empty() {
        let homed = |fpga: bool| {
            plan.protocols
                .iter()
                .find(|t| t.fpga_homed() == fpga)
                .cloned()
                .ok_or_else(|| {
                    "an eci_mux joins an FPGA-homed and a CPU-homed protocol; the system runs one kind".to_string()
                })
        };
        let (fpga_homed, cpu_homed) = (homed(true)?, homed(false)?);
        for m in &plan.muxes {
            let mux = EciMux::new(fpga_homed.clone(), cpu_homed.clone())?;
            nodes.push(b.add(m.name, mux));
        }
    }
    for l in &plan.links {
        let end = |(i, port): (usize, &str)| -> Result<ComponentId, String> {
            nodes
                .get(i)
                .copied()
                .ok_or_else(|| format!("link end {i}.{port}: no node {i}"))
        };
        let params = if l.wire {
            wire_params()
        } else {
            plan.link.params()
        };
        b.connect(end(l.a)?, l.a.1, end(l.b)?, l.b.1, params);
    }
    let sim = b.build().map_err(|e| e.to_string())?;
    Ok(Assembled {
        sim,
        agents,
        checkers,
    })
}

/// A wiring point: no latency, infinite bandwidth, no credit limit (the
/// ECI link's five VCs, so messages keep their class).
fn wire_params() -> LinkParams {
    LinkParams::symmetric(0, 0.0).with_vcs(VC_NAMES.iter().map(|n| VcParams::new(n, 0)).collect())
}
