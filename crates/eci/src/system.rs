//! A coherent system of FPGA-homed lines: a [`CoherentCpu`] (one or more
//! cores sharing an LLC) and a home ([`DirectoryController`] with BRAM or
//! DDR) over two ECI links, sharing one [`Checker`].
//!
//! Platforms declare these systems as data (`[systems.dc_bram]` in
//! `platforms/enzian.toml`, built by ccsim-platform through
//! [`crate::assemble`]); [`CoherentSystem::build`] declares the same system
//! in Rust for tests without a platform file. Either way
//! [`CoherentSystem::new`] is the view: the two agents and the checker.
//!
//! [`CoherentSystem::run`] runs to the end and turns every failure into a
//! report instead of a hang: a violation of SWMR, data-value or an
//! unspecified reception; the watchdog; or a drained event queue with work
//! left (a deadlock), each listing the stuck lines with their states and
//! pending messages.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use ccsim_kernel::prelude::*;

use super::assemble::{assemble, AgentKind, AgentPlan, Assembled, LinkPlan, SystemPlan};
use super::cpu::{CoherentCpu, CpuOp};
use super::dc::{AppOp, DirectoryController};
use super::link::EciLink;
use ccsim_coherence::check::{Checker, LineSnapshot};
use ccsim_coherence::memory::{Bram, Ddr, MemTiming};
use ccsim_coherence::{initial_line, Line, Msg, Tables};
use std::collections::BTreeMap;

/// The memory behind the home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomeMemory {
    /// `coherent_bram` (fixed latency).
    Bram,
    /// `ddr_controller`.
    Ddr,
}

/// Parameters of every part of a coherent system.
#[derive(Debug, Clone, Default)]
pub struct CoherentParams {
    /// `eci_link`.
    pub link: Params,
    /// `coherent_cpu`.
    pub cpu: Params,
    /// `directory_controller`.
    pub dc: Params,
    /// `coherent_bram`.
    pub bram: Params,
    /// `ddr_controller`.
    pub ddr: Params,
    /// The protocol; `None` is the shipped `eci-dc`.
    pub tables: Option<Arc<Tables>>,
}

impl CoherentParams {
    /// The home's memory timing (`memory` with the `bram` or `ddr`
    /// parameters) and whether the online checks run (the DC's `checks`).
    pub fn home(&self, memory: HomeMemory) -> Result<(MemTiming, bool), String> {
        let timing = match memory {
            HomeMemory::Bram => MemTiming::Bram(Bram::from_params(&self.bram)?),
            HomeMemory::Ddr => MemTiming::Ddr(Ddr::from_params(&self.ddr)?),
        };
        let checks = self.dc.get("checks").map(|(v, _)| v) != Some(&ParamValue::Bool(false));
        Ok((timing, checks))
    }
}

/// A built coherent system.
pub struct CoherentSystem {
    /// The runnable simulation.
    pub sim: Simulation<Msg>,
    /// The CPU (core + LLC).
    pub cpu: ComponentId,
    /// The home (DC).
    pub dc: ComponentId,
    /// The shared online checker.
    pub checker: Rc<RefCell<Checker>>,
}

/// Simulated-time limit of a run.
pub const TIME_LIMIT: Tick = SEC;

impl CoherentSystem {
    /// Builds the system with the core running `program`.
    pub fn build(
        p: &CoherentParams,
        memory: HomeMemory,
        program: Vec<CpuOp>,
        seed: u64,
    ) -> Result<CoherentSystem, String> {
        Self::build_with(p, memory, program, Vec::new(), seed, TraceMode::Hash)
    }

    /// Like [`CoherentSystem::build`] with application ops at the DC and a
    /// trace mode.
    pub fn build_with(
        p: &CoherentParams,
        memory: HomeMemory,
        program: Vec<CpuOp>,
        app: Vec<AppOp>,
        seed: u64,
        trace: TraceMode,
    ) -> Result<CoherentSystem, String> {
        Self::build_cores(p, memory, vec![program], app, seed, trace)
    }

    /// Like [`CoherentSystem::build_with`] with one program per core
    /// (`programs[k]` runs on core `k`; at most `cores` programs, missing
    /// ones are empty).
    pub fn build_cores(
        p: &CoherentParams,
        memory: HomeMemory,
        programs: Vec<Vec<CpuOp>>,
        app: Vec<AppOp>,
        seed: u64,
        trace: TraceMode,
    ) -> Result<CoherentSystem, String> {
        let tables = match &p.tables {
            Some(t) => t.clone(),
            None => Tables::eci_dc()?,
        };
        let link = EciLink::from_params(&p.link)?;
        let (memory, checks) = p.home(memory)?;
        let agent = |name, kind, params, memory| AgentPlan {
            name,
            kind,
            params,
            memory,
            protocol: 0,
        };
        let plan = SystemPlan {
            agents: vec![
                agent("cpu", AgentKind::Cpu, &p.cpu, None),
                agent("dc", AgentKind::Dc, &p.dc, Some(memory)),
            ],
            muxes: Vec::new(),
            links: LinkPlan::pair(),
            link,
            protocols: vec![tables],
            checks,
            seed,
            trace,
        };
        let mut sys = CoherentSystem::new(assemble(plan)?)?;
        sys.set_programs(programs)?;
        sys.dc_mut().push_app_ops(app);
        Ok(sys)
    }

    /// The view of an assembled system with one `coherent_cpu` and one
    /// `directory_controller` running one protocol.
    pub fn new(a: Assembled) -> Result<CoherentSystem, String> {
        let (cpu, dc) = (a.only(AgentKind::Cpu)?, a.only(AgentKind::Dc)?);
        let [checker] = <[_; 1]>::try_from(a.checkers)
            .map_err(|c| format!("a CPU-DC system runs one protocol, not {}", c.len()))?;
        Ok(CoherentSystem {
            sim: a.sim,
            cpu,
            dc,
            checker,
        })
    }

    /// Sets the programs of the cores: `programs[k]` runs on core `k`; at
    /// most `cores` programs, missing ones are empty.
    pub fn set_programs(&mut self, programs: Vec<Vec<CpuOp>>) -> Result<(), String> {
        let cpu = self.cpu_mut();
        if programs.len() > cpu.cores() {
            return Err(format!(
                "{} programs for {} cores (coherent_cpu.cores)",
                programs.len(),
                cpu.cores()
            ));
        }
        for (k, prog) in programs.into_iter().enumerate() {
            cpu.set_program(k, prog)?;
        }
        Ok(())
    }

    /// A line's value now: the LLC's copy, else the DC's memory.
    pub fn line_value(&self, line: u64) -> Line {
        let (_, copy) = self.cpu().line(line);
        copy.unwrap_or_else(|| self.dc().mem.read(line))
    }

    /// The sequential reference a random test compares with: every write
    /// (the cores' stores, the application's line writes) replayed on the
    /// initial memory in the order the writes took effect; lines never
    /// written are absent.
    pub fn sequential_reference(&self) -> BTreeMap<u64, Line> {
        replay_stores(&self.cpu().store_log, &self.dc().store_log)
    }

    /// The protocol its agents run (`eci-dc`, `invocation`).
    pub fn protocol(&self) -> String {
        self.checker.borrow().protocol().to_string()
    }

    /// The CPU.
    pub fn cpu(&self) -> &CoherentCpu {
        self.sim.component::<CoherentCpu>(self.cpu).expect("cpu")
    }

    /// The CPU, mutably (to set a driver before the run).
    pub fn cpu_mut(&mut self) -> &mut CoherentCpu {
        self.sim
            .component_mut::<CoherentCpu>(self.cpu)
            .expect("cpu")
    }

    /// The DC.
    pub fn dc(&self) -> &DirectoryController {
        self.sim
            .component::<DirectoryController>(self.dc)
            .expect("dc")
    }

    /// The DC, mutably (to set an observer or queue app ops before the run).
    pub fn dc_mut(&mut self) -> &mut DirectoryController {
        self.sim
            .component_mut::<DirectoryController>(self.dc)
            .expect("dc")
    }

    /// Runs to the end. `Err` carries a multi-line report: the violation,
    /// the watchdog's findings, or the deadlock with every stuck line.
    pub fn run(&mut self) -> Result<(), String> {
        let outcome = self.sim.run_until(TIME_LIMIT);
        let (cpu, dc) = (self.cpu(), self.dc());
        let done = cpu.finished() && dc.app_pending() == 0;
        let left = (!done).then(|| {
            format!(
                "{} of {} cpu ops done, {} app ops pending, {} messages queued at the dc",
                cpu.ops_completed(),
                cpu.ops_completed() + cpu.outstanding_lines().len(),
                dc.app_pending(),
                dc.queued()
            )
        });
        let checker = self.checker.borrow();
        let gather = |s: &mut LineSnapshot| snapshot_dc_side(&self.sim, cpu, dc, s);
        let side = CheckedSide {
            label: "",
            checker: &checker,
            outstanding: cpu.outstanding_lines(),
            gather: &gather,
        };
        let watchdog = cpu.stuck.as_ref().map(|r| Watchdog {
            report: r,
            side: 0,
            lines: cpu.outstanding_lines(),
        });
        let refused: Vec<&String> = dc.app_errors.iter().collect();
        verdict(outcome, &[side], watchdog, left, &refused)
    }
}

/// What one protocol's online checker says at the end of a run, with the
/// lines still outstanding at its requester (for the stuck report).
pub(crate) struct CheckedSide<'a> {
    /// Label in the report ("" when the system has one protocol).
    pub label: &'a str,
    /// The protocol's checker.
    pub checker: &'a Checker,
    /// Lines with an operation still outstanding.
    pub outstanding: Vec<u64>,
    /// With checks off, fills a snapshot of the protocol's lines from the
    /// stopped run (the agents' states, the messages the kernel and the
    /// components hold); called only when a report lists stuck lines.
    pub gather: &'a dyn Fn(&mut LineSnapshot),
}

impl CheckedSide<'_> {
    /// The side's lines with open work, plus `extra`.
    fn stuck(&self, extra: &[u64]) -> Vec<String> {
        self.checker.stuck_report_from(self.gather, extra)
    }
}

/// A watchdog's report: its header lines, from a component that stopped
/// the run, on which side, and the lines it found waiting. With checks on
/// the component already listed the stuck lines; with checks off the
/// verdict adds them (a component cannot see the kernel's messages).
pub(crate) struct Watchdog<'a> {
    /// The report as the component wrote it.
    pub report: &'a [String],
    /// Index of its side in the verdict's `sides`.
    pub side: usize,
    /// The lines the component waits for.
    pub lines: Vec<u64>,
}

/// The verdict on a finished run, shared by every coherent system: the
/// first coherence violation, else a watchdog report, else unfinished work
/// (`left` describes it; `None` when everything finished) with every stuck
/// line, else operations the tables refused.
/// Every line's value after replaying the stores of a core (words) and of
/// a device (whole lines) in the order they took effect (a sequential
/// reference of the final memory). Stable: same-tick stores keep the order
/// each agent logged them in.
pub(crate) fn replay_stores(
    words: &[(Tick, u64, u8, u64)],
    lines: &[(Tick, u64, Line)],
) -> BTreeMap<u64, Line> {
    enum Write {
        Word(u8, u64),
        Line(Line),
    }
    let mut writes: Vec<(Tick, u64, Write)> = Vec::with_capacity(words.len() + lines.len());
    for &(t, l, w, v) in words {
        writes.push((t, l, Write::Word(w, v)));
    }
    for &(t, l, v) in lines {
        writes.push((t, l, Write::Line(v)));
    }
    writes.sort_by_key(|w| w.0);
    let mut reference: BTreeMap<u64, Line> = BTreeMap::new();
    for (_, l, w) in writes {
        let r = reference.entry(l).or_insert_with(|| initial_line(l));
        match w {
            Write::Word(w, v) => {
                r[w as usize * 8..w as usize * 8 + 8].copy_from_slice(&v.to_le_bytes())
            }
            Write::Line(v) => *r = v,
        }
    }
    reference
}

pub(crate) fn verdict(
    outcome: RunOutcome,
    sides: &[CheckedSide<'_>],
    watchdog: Option<Watchdog<'_>>,
    left: Option<String>,
    refused: &[&String],
) -> Result<(), String> {
    let stuck_lines =
        || -> Vec<String> { sides.iter().flat_map(|s| s.stuck(&s.outstanding)).collect() };
    for side in sides {
        if let Some(v) = side.checker.violations.first() {
            let label = if side.label.is_empty() {
                String::new()
            } else {
                format!(" ({})", side.label)
            };
            let mut r = vec![format!("coherence check failed{label}: {v}")];
            r.extend(stuck_lines());
            return Err(r.join("\n  "));
        }
    }
    if let Some(w) = watchdog {
        let mut r = w.report.to_vec();
        let side = &sides[w.side];
        if !side.checker.enabled {
            r.extend(side.stuck(&w.lines));
        }
        return Err(r.join("\n  "));
    }
    if let Some(left) = left {
        let why = match outcome {
            RunOutcome::Drained => "deadlock: no event left but work is outstanding",
            RunOutcome::TimeLimit => "time limit reached with work outstanding",
            RunOutcome::Stopped => "stopped with work outstanding",
        };
        let mut r = vec![format!("{why} ({left})")];
        r.extend(stuck_lines());
        return Err(r.join("\n  "));
    }
    if !refused.is_empty() {
        let list: Vec<&str> = refused.iter().map(|e| e.as_str()).collect();
        return Err(format!(
            "operations refused by the table: {}",
            list.join("; ")
        ));
    }
    Ok(())
}

/// Fills a stuck report's snapshot for the ECI-DC protocol at report time:
/// the messages the kernel still holds (in flight, waiting for credits, in
/// the components' pipelines as local messages) and those queued in the
/// DCUs, with the LLC's and the DC's line states. (The CPU holds no
/// message outside the kernel.)
pub(crate) fn snapshot_dc_side(
    sim: &Simulation<Msg>,
    cpu: &CoherentCpu,
    dc: &DirectoryController,
    s: &mut LineSnapshot,
) {
    sim.in_flight()
        .filter_map(Msg::as_coh)
        .chain(dc.queued_messages())
        .for_each(|m| s.message(m));
    cpu.snapshot_states(s);
    dc.snapshot_states(s);
}
