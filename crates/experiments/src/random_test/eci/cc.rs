//! The random tester on CPU-homed lines (`eci-cc`: the ThunderX-1 home
//! with its core and the FPGA's cache controller, system `cpu_homed` of
//! platforms/enzian.toml): the home's core issues x random loads, stores
//! and short pauses, the CC's device x random loads, load-exclusives,
//! whole-line stores and evictions, on a few shared CPU-homed lines. The
//! online checks apply SWMR and data-value on every transition (every read
//! checked against the latest write); at the end every line equals a
//! replay of all stores in the order they took effect.

use ccsim_eci::cc::{CcOp, CcOpKind, CPU_HOMED_BASE};
use ccsim_eci::cc_system::{random_work, CcSystem};
use ccsim_eci::cpu::CpuOp;
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use super::super::violation;
use super::{differing_lines, Tally};
use crate::{sim_result, trace_mode, werr, Point, PointResult, RunError};

/// The longest random pause of the core, so that the device's requests
/// and the core's meet in every order.
const MAX_PAUSE_PS: u64 = 300_000;

/// `ops` random operations of the home's core and `ops` of the CC's device
/// on lines `0..lines` of the CPU-homed range.
pub(crate) fn random_ops(seed: u64, ops: u64, lines: u64) -> (Vec<CpuOp>, Vec<CcOp>) {
    let mut rng = SimRng::for_path(seed, "random_test.eci_cc");
    random_work(&mut rng, ops, ops, lines, MAX_PAUSE_PS)
}

pub(super) fn run(
    point: &Point<'_>,
    system: &str,
    ops: u64,
    lines: u64,
) -> Result<PointResult, RunError> {
    let (platform, params, seed) = (point.platform, point.params, point.seed);
    let trace = trace_mode(point.trace);
    if !params.bool("checks") {
        return Err(werr(format!(
            "random_test.checks: system {system} (eci-cc) always runs its online checks; only the DC has a switch for them"
        )));
    }
    let mut sys: CcSystem = platform
        .cc_system(system, &EciOptions::new(seed, trace))
        .map_err(RunError::Config)?;
    let (program, device) = random_ops(seed, ops, lines);
    let core_loads = program
        .iter()
        .filter(|o| matches!(o, CpuOp::Load { .. }))
        .count();
    sys.home_mut()
        .set_program(program)
        .map_err(|e| werr(format!("random_test: {e}")))?;
    sys.cc_mut().push_ops(device);
    // A violation, a deadlock, the watchdog or a refused operation ends
    // the run with its report (lines, states, messages in flight).
    sys.run().map_err(violation)?;

    let mismatches = differing_lines(
        CPU_HOMED_BASE..CPU_HOMED_BASE + lines,
        |l| sys.line_value(l),
        &sys.sequential_reference(),
    );
    let (home, cc) = (sys.home(), sys.cc());
    let core_ops = home.completed.len();
    let done = core_ops + cc.completed.len();
    // Reads the online data-value check compared with the latest write.
    let loads = core_loads
        + cc.completed
            .iter()
            .filter(|d| d.op.kind == CcOpKind::Load)
            .count();
    let latency = home.completed.iter().map(|c| c.latency_ps).sum::<Tick>()
        + cc.completed.iter().map(|d| d.latency_ps).sum::<Tick>();
    let metrics = Tally {
        ops: done as u64,
        rows: sys.checker.borrow().checked,
        reads: loads as u64,
        latency_ns: latency as f64 / done.max(1) as f64 / 1000.0,
        mismatches,
    }
    .metrics()?;
    // The device's stores the table refused (no write access yet) and
    // took, so a run shows both paths were exercised.
    let mut r = sim_result(&sys.sim, metrics, trace);
    let stores = |refused: bool| {
        sys.cc()
            .completed
            .iter()
            .filter(|d| matches!(d.op.kind, CcOpKind::Store(_)) && d.refused == refused)
            .count() as f64
    };
    r.stats
        .insert("random_test.cc.stores_refused".into(), stores(true));
    r.stats
        .insert("random_test.cc.stores_taken".into(), stores(false));
    Ok(r)
}
