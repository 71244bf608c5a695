//! Coherent workloads on the Enzian platform (issue 4).
//!
//! * `coherent_read` — CCKit Table 2: the core reads `x = accesses` distinct
//!   lines, one at a time (one MSHR, no prefetch), sequentially or at random
//!   in a `region_mib` region, through one of three homes:
//!   - `llc_ddr`: the native 2-socket ThunderX-1 over CCPI (instances `ccpi`,
//!     `thunderx_home`, `thunderx_ddr`): the same protocol table executed by
//!     a pipelined 2 GHz home;
//!   - `dc_bram`: ECI (`eci`) to the FPGA DC (`dc`) with BRAM (`dc_bram`);
//!   - `dc_ddr`: the same DC with a MIG-like DDR controller (`dc_ddr`).
//!
//!   Every load's bytes are checked against what memory holds. Metric:
//!   mean round-trip read latency (`latency_ns`).
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let p = Params::new().with("config", ParamValue::Str("dc_bram".into()), "doc");
//! let r = ccsim_experiments::run_point("coherent_read", &enzian, "accesses", 64.0, &p, 1, false).unwrap();
//! assert!((r.metrics["latency_ns"] - 454.0).abs() < 454.0 * 0.05);
//! ```

use std::collections::{BTreeMap, BTreeSet};

use ccsim_coherence::initial_line;
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_eci::system::CoherentSystem;
use ccsim_kernel::prelude::*;
use ccsim_platform::{EciOptions, Platform};

use crate::{sweeps, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `coherent_read`.
pub static COHERENT_READ: WorkloadInfo = WorkloadInfo {
    name: "coherent_read",
    description: "CCKit Table 2: x = accesses distinct cache lines read one at a time (sequential or random) by the CPU through LLC+DDR (2-socket ThunderX-1 over CCPI), DC+BRAM or DC+DDR over ECI; every table is the generated eci-dc protocol.",
    params: &[
        ParamSpec { name: "pattern", kind: ParamKind::Enum(&["seq", "rand"]), default: ParamDefault::Str("seq"), unit: "", range: ParamRange::ANY, from: "CCKit Table 2: sequential reads", description: "seq: consecutive lines; rand: distinct uniformly random lines of the region." },
        ParamSpec { name: "config", kind: ParamKind::Enum(&["llc_ddr", "dc_bram", "dc_ddr"]), default: ParamDefault::Str("dc_bram"), unit: "", range: ParamRange::ANY, from: "assumed: the FPGA DC with BRAM", description: "The home: native CCPI home with DDR, or the FPGA DC with BRAM or DDR." },
        ParamSpec { name: "region_mib", kind: ParamKind::Int, default: ParamDefault::Int(1024), unit: "MiB", range: ParamRange::at_least(1.0), from: "CCKit §5.2: reads over 1 GiB", description: "Region the random lines are drawn from (CCKit: 1 GiB)." },
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Mean issue-to-data latency of a read." },
        MetricSpec { name: "p99_ns", unit: "ns", description: "99th percentile of the read latency." },
    ],
    check: None,
    run,
};

/// Largest x.
const MAX_ACCESSES: f64 = 1_000_000.0;

/// The coherent system `config` of the platform, one of CCKit Fig. 5's
/// homes declared as data in `[systems.<config>]` (platforms/enzian.toml):
/// `llc_ddr` is the native CCPI home (`ccpi`, `thunderx_home`,
/// `thunderx_ddr`); `dc_bram` and `dc_ddr` are ECI (`eci`) to the FPGA DC
/// (`dc`) with `dc_bram` or `dc_ddr` behind it; the CPU is the calibrated
/// LLC alone (`llc`) unless `opts` swaps in the whole chip. Core 0 runs
/// `program`, the DC's application `app`.
pub(crate) fn coherent_system(
    platform: &Platform,
    config: &str,
    opts: &EciOptions,
    program: Vec<CpuOp>,
    app: Vec<AppOp>,
) -> Result<CoherentSystem, RunError> {
    let mut sys = platform
        .coherent_system(config, opts)
        .map_err(RunError::Config)?;
    sys.set_programs(vec![program])
        .map_err(|e| werr(format!("platform {}: {e}", platform.name)))?;
    sys.dc_mut().push_app_ops(app);
    Ok(sys)
}

/// The cache lines in `x` MiB, the swept x of `workload` (which must be
/// `want`): `x` must be a positive whole number of lines and at most
/// `max_mib` (`why_max`, if any, says what bounds it).
pub(crate) fn lines_in_mib(
    workload: &str,
    x_name: &str,
    want: &str,
    x: f64,
    max_mib: f64,
    why_max: &str,
) -> Result<u64, RunError> {
    sweeps(workload, want, x_name)?;
    let line = ccsim_coherence::LINE_BYTES as u64;
    let bytes = x * (1u64 << 20) as f64;
    if !(x > 0.0 && x <= max_mib && bytes.fract() == 0.0 && bytes as u64 % line == 0) {
        return Err(werr(format!(
            "{want} = {x}: must be a positive whole number of {line} B lines, at most {max_mib} MiB{why_max}"
        )));
    }
    Ok(bytes as u64 / line)
}

/// `n` distinct lines drawn uniformly from `0..region_lines`, in draw
/// order, from the seeded stream `path`.
pub(crate) fn distinct_lines(seed: u64, path: &str, n: u64, region_lines: u64) -> Vec<u64> {
    let mut rng = SimRng::for_path(seed, path);
    let mut seen = BTreeSet::new();
    let mut v = Vec::with_capacity(n as usize);
    while (v.len() as u64) < n {
        let l = rng.below(region_lines);
        if seen.insert(l) {
            v.push(l);
        }
    }
    v
}

/// Runs one point of `coherent_read`.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let (x_name, x, seed, trace) = (point.x_name, point.x, point.seed, point.trace);
    let trace = crate::trace_mode(trace);
    sweeps("coherent_read", "accesses", x_name)?;
    if !((1.0..=MAX_ACCESSES).contains(&x) && x.fract() == 0.0) {
        return Err(werr(format!(
            "accesses = {x}: must be a whole number from 1 to {MAX_ACCESSES}"
        )));
    }
    let n = x as u64;
    let region = params.int("region_mib");
    let region_lines = region as u64 * (1 << 20) / 128;
    if n > region_lines {
        return Err(werr(format!(
            "coherent_read: {n} distinct lines do not fit in {region} MiB"
        )));
    }
    let config = params.str("config");
    // One access per line, serialized (CCKit §5.2: no prefetching).
    let opts = EciOptions::new(seed, trace).set(
        "cpu",
        "mshrs",
        ParamValue::Int(1),
        "coherent_read: one access at a time",
    );
    let lines: Vec<u64> = if params.str("pattern") == "rand" {
        distinct_lines(seed, "coherent_read.lines", n, region_lines)
    } else {
        (0..n).collect()
    };
    let program = lines.iter().map(|&line| CpuOp::Load { line }).collect();
    let mut sys = coherent_system(platform, config, &opts, program, Vec::new())?;
    sys.run()
        .map_err(|e| werr(format!("coherent_read ({config}): {e}")))?;
    let cpu = sys.cpu();
    for c in &cpu.completed {
        let line = lines[c.op];
        if c.data != initial_line(line) {
            return Err(werr(format!(
                "coherent_read: the read of line {line:#x} returned bytes other than memory holds"
            )));
        }
    }
    let mut lat: Vec<f64> = cpu
        .completed
        .iter()
        .map(|c| c.latency_ps as f64 / 1000.0)
        .collect();
    lat.sort_by(f64::total_cmp);
    let mean = lat.iter().sum::<f64>() / lat.len() as f64;
    let p99 = lat[((lat.len() as f64 * 0.99).ceil() as usize).clamp(1, lat.len()) - 1];
    let mut metrics = BTreeMap::new();
    metrics.insert("latency_ns".to_string(), mean);
    metrics.insert("p99_ns".to_string(), p99);
    let mut r = crate::sim_result(&sys.sim, metrics, trace);
    r.stats.insert(
        "check.transitions".to_string(),
        sys.checker.borrow().checked as f64,
    );
    Ok(r)
}
