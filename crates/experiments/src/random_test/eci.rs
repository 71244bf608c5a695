//! The random tester on systems of Enzian agents ([`cc`] for CPU-homed
//! lines, [`invocation`] for the invocation protocols, [`shared`] for both
//! homes on the same links).
//!
//! On `eci-dc` (the CPU's LLC and the FPGA's directory controller:
//! `dc_bram`, `dc_ddr`, `llc_ddr` of platforms/enzian.toml), in the spirit of gem5 Ruby's: the
//! core issues x random loads, stores, evictions and downgrades on a few
//! shared lines while the DC's application runs one random sequence for
//! every ten core operations (a clean, a clean-invalidate, or lock / read /
//! write / unlock), back to back from the start, as fast as the home takes
//! them (so on a fast home, `llc_ddr`'s, the application contends hard for
//! the lines early in the run). The online checks apply SWMR and data-value
//! on every transition (every read is checked against the latest write
//! there); at the end every line equals a sequential replay of all writes
//! in the order they took effect.

use std::collections::BTreeMap;

use ccsim_coherence::initial_line;
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use super::violation;
use crate::{sim_result, trace_mode, werr, Point, PointResult, RunError};

mod cc;
mod invocation;
mod shared;

/// One random application sequence per this many core operations.
pub(super) const CORE_OPS_PER_APP_SEQUENCE: u64 = 10;

/// Runs `ops` random core operations (and their application sequences) on
/// `lines` lines of system `system`.
pub(super) fn run(
    point: &Point<'_>,
    system: &str,
    ops: u64,
    lines: u64,
) -> Result<PointResult, RunError> {
    let (platform, params, seed) = (point.platform, point.params, point.seed);
    let trace = trace_mode(point.trace);
    // CPU-homed lines: the CPU home and the FPGA's cache controller.
    let decl = platform.system(system).map_err(RunError::Config)?;
    let type_of = |instance: &str| platform.component(instance).map(|c| c.type_name.as_str());
    let types: Vec<&str> = decl
        .agents
        .iter()
        .map(|a| type_of(&a.instance).unwrap_or_default())
        .collect();
    match (types.contains(&"cpu_home"), types.contains(&"coherent_cpu")) {
        (true, false) => return cc::run(point, system, ops, lines),
        // Both homes on shared links.
        (true, true) => return shared::run(point, system, ops, lines),
        _ => {}
    }
    let mut rng = SimRng::for_path(seed, "random_test.eci");
    let program = CpuOp::random_program(&mut rng, ops, lines);
    let app = AppOp::random_sequences(&mut rng, ops.div_ceil(CORE_OPS_PER_APP_SEQUENCE), lines);
    let app_ops = app.len();
    let opts = eci_options(seed, trace, params.bool("checks"));
    let mut sys = platform
        .coherent_system(system, &opts)
        .map_err(RunError::Config)?;
    let protocol = sys.protocol();
    if invocation::is_invocation(&sys) {
        return invocation::run(point, sys, ops, lines);
    }
    if protocol != "eci-dc" {
        return Err(werr(format!(
            "random_test on Enzian agents runs eci-dc, eci-cc and invocation systems (dc_bram, dc_ddr, llc_ddr, cpu_homed, invocation, shared); system {system} runs {protocol}"
        )));
    }
    sys.set_programs(vec![program])
        .map_err(|e| werr(format!("random_test: {e}")))?;
    sys.dc_mut().push_app_ops(app);
    // A violation, a deadlock or a refused operation ends the run with its
    // report (lines, states, messages in flight).
    sys.run().map_err(violation)?;

    let mismatches = compare_with_reference(&sys, lines);
    let cpu = sys.cpu();
    let loads = cpu
        .completed
        .iter()
        .filter(|c| matches!(cpu.program_op(c.core, c.op), Some(CpuOp::Load { .. })))
        .count();
    let latency = cpu.completed.iter().map(|c| c.latency_ps).sum::<Tick>() as f64
        / cpu.completed.len().max(1) as f64;
    let metrics = Tally {
        ops: (cpu.completed.len() + app_ops) as u64,
        rows: sys.checker.borrow().checked,
        reads: loads as u64,
        latency_ns: latency / 1000.0,
        mismatches,
    }
    .metrics()?;
    Ok(sim_result(&sys.sim, metrics, trace))
}

/// The lines whose final value differs from the sequential reference.
fn compare_with_reference(sys: &ccsim_eci::system::CoherentSystem, lines: u64) -> Vec<u64> {
    differing_lines(0..lines, |l| sys.line_value(l), &sys.sequential_reference())
}

/// The systems' options: `seed`, `trace`, and the DC's online checks off
/// unless `checks`.
fn eci_options(seed: u64, trace: TraceMode, checks: bool) -> EciOptions {
    let opts = EciOptions::new(seed, trace);
    if checks {
        return opts;
    }
    opts.set(
        "dc",
        "checks",
        ParamValue::Bool(false),
        "random_test: checks off",
    )
}

/// The lines of `lines` whose final value differs from the sequential
/// reference (lines it never wrote hold their initial value).
pub(super) fn differing_lines(
    lines: impl IntoIterator<Item = u64>,
    value: impl Fn(u64) -> ccsim_coherence::Line,
    reference: &BTreeMap<u64, ccsim_coherence::Line>,
) -> Vec<u64> {
    lines
        .into_iter()
        .filter(|&l| {
            value(l)
                != reference
                    .get(&l)
                    .copied()
                    .unwrap_or_else(|| initial_line(l))
        })
        .collect()
}

/// What one random run on Enzian agents counted.
pub(super) struct Tally {
    /// Operations completed by every random agent.
    pub ops: u64,
    /// Rows the online checks ran after.
    pub rows: u64,
    /// Reads checked against the latest write.
    pub reads: u64,
    /// Mean operation latency.
    pub latency_ns: f64,
    /// Lines that ended different from the sequential reference.
    pub mismatches: Vec<u64>,
}

impl Tally {
    /// The run's metrics, or its first line that differs from the
    /// reference as a violation.
    pub(super) fn metrics(&self) -> Result<BTreeMap<String, f64>, RunError> {
        if let Some(l) = self.mismatches.first() {
            return Err(violation(format!(
                "line {l:#x} (and {} more) differs from the sequential reference at the end",
                self.mismatches.len() - 1
            )));
        }
        Ok(BTreeMap::from([
            ("ops".to_string(), self.ops as f64),
            ("violations".to_string(), 0.0),
            ("rows_checked".to_string(), self.rows as f64),
            ("reads".to_string(), self.reads as f64),
            ("reference_mismatches".to_string(), 0.0),
            ("op_latency_ns".to_string(), self.latency_ns),
        ]))
    }
}
