//! Wiring CPU-homed lines: the [`CpuHome`] (CPU memory, directory and a
//! core) and the FPGA's [`CacheController`] over the two ECI links, sharing
//! one [`Checker`] that runs the `eci-cc` tables.
//!
//! The links are the same `eci_link` as the DC's (line `l` on link
//! `l % 2`, one VC per message class, [`super::link::vc_of`]); every
//! message is tagged with its [`Catalogue`](ccsim_coherence::Catalogue), so a receiver rejects a
//! message of the other protocol instead of misreading its index.
//!
//! ```
//! use ccsim_eci::cc::{CcOp, CcOpKind, CPU_HOMED_BASE};
//! use ccsim_eci::cc_system::{CcParams, CcSystem};
//! use ccsim_coherence::initial_line;
//! let line = CPU_HOMED_BASE + 5;
//! let ops = vec![CcOp::new(CcOpKind::Load, line)];
//! let mut sys = CcSystem::build(&CcParams::default(), Vec::new(), ops, 1).unwrap();
//! sys.run().unwrap();
//! // The device read the bytes CPU memory holds, one ECI round trip away.
//! let done = &sys.cc().completed[0];
//! assert_eq!(done.data, Some(initial_line(line)));
//! assert!(done.latency_ps > 230_000);
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use ccsim_kernel::prelude::*;

use super::assemble::{assemble, AgentKind, AgentPlan, Assembled, LinkPlan, SystemPlan};
use super::cc::{CacheController, CcOp, CcOpKind, CPU_HOMED_BASE};
use super::cpu::CpuOp;
use super::cpu_home::CpuHome;
use super::link::EciLink;
use super::system::{replay_stores, verdict, CheckedSide, Watchdog, TIME_LIMIT};
use ccsim_coherence::check::{Checker, LineSnapshot};
use ccsim_coherence::{Line, Msg, Tables};

/// Parameters of a CPU-homed system.
#[derive(Debug, Clone)]
pub struct CcParams {
    /// `eci_link`.
    pub link: Params,
    /// `cpu_home`.
    pub home: Params,
    /// `cache_controller`.
    pub cc: Params,
    /// Online SWMR/data-value checks.
    pub checks: bool,
    /// The protocol; `None` is the shipped `eci-cc`.
    pub tables: Option<Arc<Tables>>,
}

impl Default for CcParams {
    fn default() -> Self {
        CcParams {
            link: Params::new(),
            home: Params::new(),
            cc: Params::new(),
            checks: true,
            tables: None,
        }
    }
}

/// A built CPU-homed system.
pub struct CcSystem {
    /// The runnable simulation.
    pub sim: Simulation<Msg>,
    /// The CPU home.
    pub home: ComponentId,
    /// The FPGA's CC.
    pub cc: ComponentId,
    /// The shared online checker.
    pub checker: Rc<RefCell<Checker>>,
}

/// The watchdog report of the home or else the CC, if one fired, for the
/// CPU-homed protocol's side `side` of a verdict.
pub(crate) fn cc_side_watchdog<'a>(
    home: &'a CpuHome,
    cc: &'a CacheController,
    side: usize,
) -> Option<Watchdog<'a>> {
    let home_report = home.stuck.as_ref().map(|r| Watchdog {
        report: r,
        side,
        lines: home.outstanding_lines(),
    });
    home_report.or_else(|| {
        cc.stuck.as_ref().map(|r| Watchdog {
            report: r,
            side,
            lines: cc.current_line().into_iter().collect(),
        })
    })
}

impl CcSystem {
    /// Builds the system: the core runs `program`, the device `ops`.
    pub fn build(
        p: &CcParams,
        program: Vec<CpuOp>,
        ops: Vec<CcOp>,
        seed: u64,
    ) -> Result<CcSystem, String> {
        Self::build_with(p, program, ops, seed, TraceMode::Hash)
    }

    /// Like [`CcSystem::build`] with a trace mode.
    pub fn build_with(
        p: &CcParams,
        program: Vec<CpuOp>,
        ops: Vec<CcOp>,
        seed: u64,
        trace: TraceMode,
    ) -> Result<CcSystem, String> {
        let tables = match &p.tables {
            Some(t) => t.clone(),
            None => Tables::eci_cc()?,
        };
        let agent = |name, kind, params| AgentPlan {
            name,
            kind,
            params,
            memory: None,
            protocol: 0,
        };
        let plan = SystemPlan {
            agents: vec![
                agent("cpu_home", AgentKind::CpuHome, &p.home),
                agent("cc", AgentKind::Cc, &p.cc),
            ],
            muxes: Vec::new(),
            links: LinkPlan::pair(),
            link: EciLink::from_params(&p.link)?,
            protocols: vec![tables],
            checks: p.checks,
            seed,
            trace,
        };
        let mut sys = CcSystem::new(assemble(plan)?)?;
        sys.home_mut().set_program(program)?;
        sys.cc_mut().push_ops(ops);
        Ok(sys)
    }

    /// The view of an assembled system with one `cpu_home` and one
    /// `cache_controller` running one protocol.
    pub fn new(a: Assembled) -> Result<CcSystem, String> {
        let (home, cc) = (a.only(AgentKind::CpuHome)?, a.only(AgentKind::Cc)?);
        let [checker] = <[_; 1]>::try_from(a.checkers)
            .map_err(|c| format!("a home-CC system runs one protocol, not {}", c.len()))?;
        Ok(CcSystem {
            sim: a.sim,
            home,
            cc,
            checker,
        })
    }

    /// The CPU home.
    pub fn home(&self) -> &CpuHome {
        self.sim.component::<CpuHome>(self.home).expect("home")
    }

    /// The CPU home, mutably (to set a driver before the run).
    pub fn home_mut(&mut self) -> &mut CpuHome {
        self.sim.component_mut::<CpuHome>(self.home).expect("home")
    }

    /// The CC.
    pub fn cc(&self) -> &CacheController {
        self.sim.component::<CacheController>(self.cc).expect("cc")
    }

    /// The CC, mutably (to set the device logic before the run).
    pub fn cc_mut(&mut self) -> &mut CacheController {
        self.sim
            .component_mut::<CacheController>(self.cc)
            .expect("cc")
    }

    /// The line's current value: the CC's copy while it holds the line
    /// writable (it may be dirty), else CPU memory.
    pub fn line_value(&self, line: u64) -> Line {
        self.cc()
            .writable_copy(line)
            .unwrap_or_else(|| self.home().mem.read(line))
    }

    /// The lines' values after replaying every store (the core's words,
    /// the device's whole lines) in the order they took effect: what
    /// [`CcSystem::line_value`] must equal at the end of a correct run.
    pub fn sequential_reference(&self) -> BTreeMap<u64, Line> {
        replay_stores(&self.home().store_log, &self.cc().store_log)
    }

    /// Runs to the end. `Err` carries a multi-line report: the violation,
    /// the watchdog's findings, or the deadlock with every stuck line.
    pub fn run(&mut self) -> Result<(), String> {
        let outcome = self.sim.run_until(TIME_LIMIT);
        let (home, cc) = (self.home(), self.cc());
        let done = home.finished() && cc.pending() == 0;
        let left = (!done).then(|| {
            format!(
                "{} cpu ops done, {} device ops pending, {} messages queued at the cc, {} at the home",
                home.completed.len(),
                cc.pending(),
                cc.queued(),
                home.queued()
            )
        });
        let checker = self.checker.borrow();
        let gather = |s: &mut LineSnapshot| snapshot_cc_side(&self.sim, home, cc, s);
        let side = CheckedSide {
            label: "",
            checker: &checker,
            outstanding: home.outstanding_lines(),
            gather: &gather,
        };
        let watchdog = cc_side_watchdog(home, cc, 0);
        let refused: Vec<&String> = cc.app_errors.iter().collect();
        verdict(outcome, &[side], watchdog, left, &refused)
    }
}

/// A random tester's work on CPU-homed lines `CPU_HOMED_BASE + 0..lines`:
/// `core_ops` of the home's core (loads, stores of a random word, store
/// `i` writing `i + 1`, and pauses of up to `max_pause_ps`, so that the
/// device's requests and the core's meet in every order) and `device_ops`
/// of the CC's device (loads, load-exclusives, whole-line stores no core
/// store can produce, evictions), in equal shares.
pub fn random_work(
    rng: &mut SimRng,
    core_ops: u64,
    device_ops: u64,
    lines: u64,
    max_pause_ps: u64,
) -> (Vec<CpuOp>, Vec<CcOp>) {
    let line = |r: &mut SimRng| CPU_HOMED_BASE + r.below(lines);
    let core = (0..core_ops)
        .map(|i| match rng.below(3) {
            0 => CpuOp::Load { line: line(rng) },
            1 => CpuOp::Store {
                line: line(rng),
                word: rng.below(16) as u8,
                value: i + 1,
            },
            _ => CpuOp::Wait {
                ps: rng.below(max_pause_ps),
            },
        })
        .collect();
    let device = (0..device_ops)
        .map(|i| {
            let l = line(rng);
            let kind = match rng.below(4) {
                0 => CcOpKind::Load,
                1 => CcOpKind::LoadExclusive,
                2 => {
                    // The device's op number in word 0, its marker in word 1.
                    let mut v = [0u8; 128];
                    v[..8].copy_from_slice(&(0xF000_0000_0000 + i).to_le_bytes());
                    v[8..16].copy_from_slice(&0xDE71_CE00u64.to_le_bytes());
                    CcOpKind::Store(Box::new(v))
                }
                _ => CcOpKind::Evict,
            };
            CcOp::new(kind, l)
        })
        .collect();
    (core, device)
}

/// Fills a stuck report's snapshot for the ECI-CC protocol at report time:
/// the messages the kernel still holds and those queued at the home and
/// the CC, with their line states.
pub(crate) fn snapshot_cc_side(
    sim: &Simulation<Msg>,
    home: &CpuHome,
    cc: &CacheController,
    s: &mut LineSnapshot,
) {
    sim.in_flight()
        .filter_map(Msg::as_coh)
        .chain(home.queued_messages())
        .chain(cc.queued_messages())
        .for_each(|m| s.message(m));
    home.snapshot_states(s);
    cc.snapshot_states(s);
}
