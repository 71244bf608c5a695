//! The random tester on both homes sharing the ECI links (system `shared`
//! of platforms/enzian.toml: the LLC and the DC on FPGA-homed lines,
//! `eci-dc`; the CPU home and the FPGA's cache controller on CPU-homed
//! lines, `eci-cc`; a mux at each end). All four agents work at once, so
//! both protocols' messages meet on the same links and virtual channels:
//! the LLC's core and the DC's application as on `dc_bram`, the home's
//! core and the CC's device as on `cpu_homed`. Each protocol's online
//! checks run on every transition; at the end every line of both homes
//! equals its replay.

use ccsim_eci::cc::{CcOpKind, CPU_HOMED_BASE};
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_eci::shared::SharedWork;
use ccsim_kernel::prelude::*;

use super::super::violation;
use super::CORE_OPS_PER_APP_SEQUENCE;
use super::{differing_lines, eci_options, Tally};
use crate::{sim_result, trace_mode, werr, Point, PointResult, RunError};

pub(super) fn run(
    point: &Point<'_>,
    system: &str,
    ops: u64,
    lines: u64,
) -> Result<PointResult, RunError> {
    let (platform, params, seed) = (point.platform, point.params, point.seed);
    let trace = trace_mode(point.trace);
    let mut rng = SimRng::for_path(seed, "random_test.shared");
    let cpu = CpuOp::random_program(&mut rng, ops, lines);
    let app = AppOp::random_sequences(&mut rng, ops.div_ceil(CORE_OPS_PER_APP_SEQUENCE), lines);
    let (home, device) = super::cc::random_ops(seed, ops, lines);
    let app_ops = app.len();
    let is_load = |o: &&CpuOp| matches!(o, CpuOp::Load { .. });
    let core_loads = cpu.iter().filter(is_load).count() + home.iter().filter(is_load).count();
    let opts = eci_options(seed, trace, params.bool("checks"));
    let mut sys = platform
        .shared_system(system, &opts)
        .map_err(RunError::Config)?;
    sys.set_work(SharedWork {
        cpu,
        app,
        home,
        device,
    })
    .map_err(|e| werr(format!("random_test: {e}")))?;
    // A violation of either protocol, a deadlock, a watchdog or a refused
    // operation ends the run with its report.
    sys.run().map_err(violation)?;

    let mismatches = differing_lines(
        (0..lines).chain(CPU_HOMED_BASE..CPU_HOMED_BASE + lines),
        |l| sys.line_value(l),
        &sys.sequential_reference(),
    );
    let (llc, home, cc) = (sys.cpu(), sys.home(), sys.cc());
    let done = llc.completed.len() + app_ops + home.completed.len() + cc.completed.len();
    let rows = sys.dc_checker.borrow().checked + sys.cc_checker.borrow().checked;
    // Reads the online data-value checks compared with the latest write.
    let reads = core_loads
        + cc.completed
            .iter()
            .filter(|d| d.op.kind == CcOpKind::Load)
            .count();
    let latency = llc.completed.iter().map(|c| c.latency_ps).sum::<Tick>()
        + home.completed.iter().map(|c| c.latency_ps).sum::<Tick>()
        + cc.completed.iter().map(|d| d.latency_ps).sum::<Tick>();
    let timed = llc.completed.len() + home.completed.len() + cc.completed.len();
    let metrics = Tally {
        ops: done as u64,
        rows,
        reads: reads as u64,
        latency_ns: latency as f64 / timed.max(1) as f64 / 1000.0,
        mismatches,
    }
    .metrics()?;
    Ok(sim_result(&sys.sim, metrics, trace))
}
