//! Both homes on one pair of ECI links: FPGA-homed lines (the CPU's LLC
//! and the DC, `eci-dc` or the invocation tables) and CPU-homed lines (the
//! CPU home and the FPGA's CC, `eci-cc`) share the same two kernel links,
//! as on Enzian, where one ECI carries both directions' protocols.
//!
//! ```text
//!   CoherentCpu ─fpga_homed0/1─┐                         ┌─fpga_homed0/1─ DirectoryController
//!                              EciMux ══ eci0, eci1 ══ EciMux
//!   CpuHome ─────cpu_homed0/1──┘   (line l on link l % 2) └─cpu_homed0/1── CacheController
//! ```
//!
//! * **Which home.** A line is CPU-homed iff `line >= CPU_HOMED_BASE`
//!   ([`super::cc::is_cpu_homed`]); each agent refuses lines of the other
//!   home, so the split is enforced, not just a convention.
//! * **Which catalogue.** The two protocols number their messages
//!   independently; every [`CohMsg`](ccsim_coherence::CohMsg) carries its [`Catalogue`](ccsim_coherence::Catalogue), and an
//!   [`EciMux`] routes by it and looks up the virtual channel in *that*
//!   protocol's tables. Both use the same five VCs per message class
//!   (requests with and without data, forwards, responses with and without
//!   data), so a request of one protocol and a response of the other never
//!   share a buffer class, and credits are per VC as before.
//! * **No added time.** A mux is a wiring point: the links between a mux
//!   and its agents have no latency, infinite bandwidth and no credit
//!   limit; all timing (serialization shared by both protocols in send
//!   order, latency, credits) is the ECI link's.
//! * **Checks.** Each protocol has its own online [`Checker`] (its tables,
//!   its ghost values); [`SharedSystem::run`] reports a violation of
//!   either.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use ccsim_kernel::prelude::*;

use super::assemble::{assemble, AgentKind, AgentPlan, Assembled, LinkPlan, MuxPlan, SystemPlan};
use super::cc::{CacheController, CcOp};
use super::cc_system::{cc_side_watchdog, snapshot_cc_side};
use super::cpu::{CoherentCpu, CpuOp};
use super::cpu_home::CpuHome;
use super::dc::{AppOp, DirectoryController};
use super::link::EciLink;
use super::system::{
    replay_stores, snapshot_dc_side, verdict, CheckedSide, CoherentParams, HomeMemory, Watchdog,
    TIME_LIMIT,
};
use ccsim_coherence::check::{Checker, LineSnapshot};
use ccsim_coherence::{Line, Msg, Tables};

/// Declaration of `eci_mux`.
pub static ECI_MUX: ComponentSpec = ComponentSpec {
    type_name: "eci_mux",
    description: "Shares the two ECI links between the FPGA-homed protocol (LLC/DC) and the CPU-homed one (CPU home/CC): routes each message by its catalogue and parity, VC from its own protocol's tables; adds no time.",
    params: &[],
    ports: &[
        PortSpec { name: "eci0", description: "Even lines, to the ECI link.", required: true },
        PortSpec { name: "eci1", description: "Odd lines, to the ECI link.", required: true },
        PortSpec { name: "fpga_homed0", description: "Even FPGA-homed lines, to the local agent.", required: true },
        PortSpec { name: "fpga_homed1", description: "Odd FPGA-homed lines, to the local agent.", required: true },
        PortSpec { name: "cpu_homed0", description: "Even CPU-homed lines, to the local agent.", required: true },
        PortSpec { name: "cpu_homed1", description: "Odd CPU-homed lines, to the local agent.", required: true },
    ],
    stats: &[
        StatSpec { name: "fpga_homed", kind: StatKind::Counter, unit: "messages", description: "FPGA-homed protocol messages routed." },
        StatSpec { name: "cpu_homed", kind: StatKind::Counter, unit: "messages", description: "CPU-homed protocol messages routed." },
    ],
    check: None,
};

/// The `eci_mux` component.
pub struct EciMux {
    fpga_homed: Arc<Tables>,
    cpu_homed: Arc<Tables>,
}

impl EciMux {
    /// A mux for the two protocols' tables.
    pub fn new(fpga_homed: Arc<Tables>, cpu_homed: Arc<Tables>) -> Result<EciMux, String> {
        if !fpga_homed.fpga_homed() || cpu_homed.fpga_homed() {
            return Err(format!(
                "eci_mux: expected an FPGA-homed and a CPU-homed protocol, got {} and {}",
                fpga_homed.ir.name, cpu_homed.ir.name
            ));
        }
        Ok(EciMux {
            fpga_homed,
            cpu_homed,
        })
    }
}

impl Component<Msg> for EciMux {
    fn spec(&self) -> &'static ComponentSpec {
        &ECI_MUX
    }

    fn on_message(&mut self, port: PortId, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let Msg::Coh(c) = &m else {
            unreachable!("the ECI mux joins coherent agents to ECI links")
        };
        let (tables, local, stat) = if c.catalogue == self.fpga_homed.catalogue {
            (&self.fpga_homed, 2, 0)
        } else {
            (&self.cpu_homed, 4, 1)
        };
        let (bytes, vc) = EciLink::wire_of(&tables.msgs[c.msg as usize]);
        // From the link to the agent of the message's protocol, or from an
        // agent to the link of the line's parity.
        let out = if port < 2 { local + port } else { port % 2 };
        ctx.count(stat, 1);
        ctx.send(out, m, bytes, vc);
    }
}

/// Parameters of the shared system.
#[derive(Debug, Clone, Default)]
pub struct SharedParams {
    /// The FPGA-homed side (link, LLC, DC, memories, its tables).
    pub coherent: CoherentParams,
    /// `cpu_home`.
    pub home: Params,
    /// `cache_controller`.
    pub cc: Params,
    /// The CPU-homed protocol; `None` is the shipped `eci-cc`.
    pub cc_tables: Option<Arc<Tables>>,
}

/// Work for every agent of a shared system.
#[derive(Debug, Clone, Default)]
pub struct SharedWork {
    /// The LLC's core (FPGA-homed lines).
    pub cpu: Vec<CpuOp>,
    /// The DC's application (FPGA-homed lines).
    pub app: Vec<AppOp>,
    /// The CPU home's core (CPU-homed lines).
    pub home: Vec<CpuOp>,
    /// The device through the CC (CPU-homed lines).
    pub device: Vec<CcOp>,
}

/// A built shared system.
pub struct SharedSystem {
    /// The runnable simulation.
    pub sim: Simulation<Msg>,
    cpu: ComponentId,
    dc: ComponentId,
    home: ComponentId,
    cc: ComponentId,
    /// The FPGA-homed protocol's checker.
    pub dc_checker: Rc<RefCell<Checker>>,
    /// The CPU-homed protocol's checker.
    pub cc_checker: Rc<RefCell<Checker>>,
}

impl SharedSystem {
    /// Builds the system; FPGA-homed lines use the DC with `memory`.
    pub fn build(
        p: &SharedParams,
        memory: HomeMemory,
        work: SharedWork,
        seed: u64,
    ) -> Result<SharedSystem, String> {
        let c = &p.coherent;
        let dc_tables = match &c.tables {
            Some(t) => t.clone(),
            None => Tables::eci_dc()?,
        };
        let cc_tables = match &p.cc_tables {
            Some(t) => t.clone(),
            None => Tables::eci_cc()?,
        };
        let link = EciLink::from_params(&c.link)?;
        let (memory, checks) = c.home(memory)?;
        let agent = |name, kind, params, memory, protocol| AgentPlan {
            name,
            kind,
            params,
            memory,
            protocol,
        };
        // Agents 0-3, muxes 4 (CPU side) and 5 (FPGA side).
        let (cpu_mux, fpga_mux) = (4, 5);
        let mut links = Vec::new();
        for i in 0..2 {
            let eci = ["eci0", "eci1"][i];
            links.push(LinkPlan {
                a: (cpu_mux, eci),
                b: (fpga_mux, eci),
                wire: false,
            });
            for (agent, mux, port) in [
                (0, cpu_mux, ["fpga_homed0", "fpga_homed1"][i]),
                (1, cpu_mux, ["cpu_homed0", "cpu_homed1"][i]),
                (2, fpga_mux, ["fpga_homed0", "fpga_homed1"][i]),
                (3, fpga_mux, ["cpu_homed0", "cpu_homed1"][i]),
            ] {
                links.push(LinkPlan {
                    a: (agent, eci),
                    b: (mux, port),
                    wire: true,
                });
            }
        }
        let plan = SystemPlan {
            agents: vec![
                agent("cpu", AgentKind::Cpu, &c.cpu, None, 0),
                agent("cpu_home", AgentKind::CpuHome, &p.home, None, 1),
                agent("dc", AgentKind::Dc, &c.dc, Some(memory), 0),
                agent("cc", AgentKind::Cc, &p.cc, None, 1),
            ],
            muxes: vec![MuxPlan { name: "cpu_mux" }, MuxPlan { name: "fpga_mux" }],
            links,
            link,
            protocols: vec![dc_tables, cc_tables],
            checks,
            seed,
            trace: TraceMode::Hash,
        };
        let mut sys = SharedSystem::new(assemble(plan)?)?;
        sys.set_work(work)?;
        Ok(sys)
    }

    /// Gives every agent its work (before the run). The LLC and the DC
    /// serve FPGA-homed lines only; the home's core and the CC refuse
    /// FPGA-homed lines themselves.
    pub fn set_work(&mut self, work: SharedWork) -> Result<(), String> {
        if let Some(op) = work
            .cpu
            .iter()
            .find(|op| op.line().is_some_and(super::cc::is_cpu_homed))
        {
            return Err(format!(
                "{op:?}: a CPU-homed line (>= {:#x}) goes to the home's core, not the LLC's",
                super::cc::CPU_HOMED_BASE
            ));
        }
        if let Some(op) = work.app.iter().find(|op| super::cc::is_cpu_homed(op.line)) {
            return Err(format!(
                "{op:?}: a CPU-homed line (>= {:#x}) is not the DC's",
                super::cc::CPU_HOMED_BASE
            ));
        }
        self.cpu_mut().set_program(0, work.cpu)?;
        self.dc_mut().push_app_ops(work.app);
        self.home_mut().set_program(work.home)?;
        self.cc_mut().push_ops(work.device);
        Ok(())
    }

    /// The view of an assembled system with a `coherent_cpu`, a
    /// `directory_controller`, a `cpu_home` and a `cache_controller`, two
    /// protocols (FPGA-homed, CPU-homed) on shared links.
    pub fn new(a: Assembled) -> Result<SharedSystem, String> {
        let only = |k| a.only(k);
        let (cpu, dc, home, cc) = (
            only(AgentKind::Cpu)?,
            only(AgentKind::Dc)?,
            only(AgentKind::CpuHome)?,
            only(AgentKind::Cc)?,
        );
        let [dc_checker, cc_checker] = <[_; 2]>::try_from(a.checkers)
            .map_err(|c| format!("a shared system runs two protocols, not {}", c.len()))?;
        let (dc_checker, cc_checker) = if dc_checker.borrow().tables().fpga_homed() {
            (dc_checker, cc_checker)
        } else {
            (cc_checker, dc_checker)
        };
        Ok(SharedSystem {
            sim: a.sim,
            cpu,
            dc,
            home,
            cc,
            dc_checker,
            cc_checker,
        })
    }

    /// The LLC, mutably (to set programs or a driver before the run).
    pub fn cpu_mut(&mut self) -> &mut CoherentCpu {
        self.sim
            .component_mut::<CoherentCpu>(self.cpu)
            .expect("cpu")
    }

    /// The DC, mutably.
    pub fn dc_mut(&mut self) -> &mut DirectoryController {
        self.sim
            .component_mut::<DirectoryController>(self.dc)
            .expect("dc")
    }

    /// The CPU home, mutably.
    pub fn home_mut(&mut self) -> &mut CpuHome {
        self.sim.component_mut::<CpuHome>(self.home).expect("home")
    }

    /// The CC, mutably.
    pub fn cc_mut(&mut self) -> &mut CacheController {
        self.sim
            .component_mut::<CacheController>(self.cc)
            .expect("cc")
    }

    /// The LLC (FPGA-homed lines).
    pub fn cpu(&self) -> &CoherentCpu {
        self.sim.component::<CoherentCpu>(self.cpu).expect("cpu")
    }

    /// The DC.
    pub fn dc(&self) -> &DirectoryController {
        self.sim
            .component::<DirectoryController>(self.dc)
            .expect("dc")
    }

    /// The CPU home (CPU-homed lines).
    pub fn home(&self) -> &CpuHome {
        self.sim.component::<CpuHome>(self.home).expect("home")
    }

    /// The CC.
    pub fn cc(&self) -> &CacheController {
        self.sim.component::<CacheController>(self.cc).expect("cc")
    }

    /// The line's current value: for an FPGA-homed line the LLC's copy if
    /// it holds one, else the DC's memory; for a CPU-homed line the CC's
    /// copy while it holds the line writable, else CPU memory.
    pub fn line_value(&self, line: u64) -> Line {
        if super::cc::is_cpu_homed(line) {
            self.cc()
                .writable_copy(line)
                .unwrap_or_else(|| self.home().mem.read(line))
        } else {
            let (_, copy) = self.cpu().line(line);
            copy.unwrap_or_else(|| self.dc().mem.read(line))
        }
    }

    /// Every line's value after replaying each home's stores in the order
    /// they took effect (the LLC's core and the DC's application for
    /// FPGA-homed lines, the home's core and the CC's device for CPU-homed
    /// ones): what [`SharedSystem::line_value`] must equal at the end.
    pub fn sequential_reference(&self) -> BTreeMap<u64, Line> {
        let mut r = replay_stores(&self.cpu().store_log, &self.dc().store_log);
        r.extend(replay_stores(&self.home().store_log, &self.cc().store_log));
        r
    }

    /// Runs to the end; `Err` names the protocol and what went wrong.
    pub fn run(&mut self) -> Result<(), String> {
        let outcome = self.sim.run_until(TIME_LIMIT);
        let (cpu, dc, home, cc) = (self.cpu(), self.dc(), self.home(), self.cc());
        let done = cpu.finished() && dc.app_pending() == 0 && home.finished() && cc.pending() == 0;
        let left = (!done).then(|| {
            format!(
                "llc {} ops done, dc app {} pending, home {} ops done, cc {} pending",
                cpu.completed.len(),
                dc.app_pending(),
                home.completed.len(),
                cc.pending()
            )
        });
        let (dc_checker, cc_checker) = (self.dc_checker.borrow(), self.cc_checker.borrow());
        // A snapshot keeps only its own protocol's messages (by catalogue);
        // states come from that protocol's agents.
        let dc_gather = |s: &mut LineSnapshot| snapshot_dc_side(&self.sim, cpu, dc, s);
        let cc_gather = |s: &mut LineSnapshot| snapshot_cc_side(&self.sim, home, cc, s);
        let sides = [
            CheckedSide {
                label: "eci-dc side",
                checker: &dc_checker,
                outstanding: cpu.outstanding_lines(),
                gather: &dc_gather,
            },
            CheckedSide {
                label: "eci-cc side",
                checker: &cc_checker,
                outstanding: home.outstanding_lines(),
                gather: &cc_gather,
            },
        ];
        let llc_watchdog = cpu.stuck.as_ref().map(|r| Watchdog {
            report: r,
            side: 0,
            lines: cpu.outstanding_lines(),
        });
        let watchdog = llc_watchdog.or_else(|| cc_side_watchdog(home, cc, 1));
        let refused: Vec<&String> = dc.app_errors.iter().chain(&cc.app_errors).collect();
        verdict(outcome, &sides, watchdog, left, &refused)
    }
}
