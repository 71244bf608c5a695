//! `cxl_type2_bias` — loads to a CXL type-2 device's own memory (HDM-D)
//! under host/device bias, from the device and from the host.
//!
//! * **The system** is a platform's `[systems.<system>]` running
//!   `protocols/cxl-type2.toml`: host cores (`core`), the host's home
//!   agent (`home`, the LLC with its directory), the device's DCOH
//!   (`dcoh`, the bias table in front of device memory, a
//!   `ddr5_controller`) and the device's cache (`accel`). Every access runs
//!   the verified table and moves the line's bytes.
//! * **Setup.** A fraction x (`device_bias_fraction`) of the `lines` lines,
//!   spread evenly, is put in device bias by the device itself: a store
//!   (DevRd: the DCOH flips the line with RdOwnNoData through the host)
//!   and, unless `device_copy = "dirty"`, an eviction (DevWb), so the line
//!   sits in device bias with the device's cache empty. The other lines
//!   stay in host bias, cached by nobody.
//! * **Measured access** (`access`), one at a time on every line:
//!   - `device_load`: the device's cache loads (DevRd). Device bias: the
//!     DCOH reads its DRAM and answers, no host message. Host bias: the
//!     DCOH first flips the line (RdOwnNoData to the host, MemRdFwd back),
//!     then reads its DRAM.
//!   - `device_load_current`: an uncached device read (DevRdCur). Host
//!     bias: through the host (RdCurr, MemRdFwd), no flip.
//!   - `host_load`: a host core loads (GetS; the LLC misses and sends
//!     MemRd over the CXL link). Host bias: the DCOH reads its DRAM.
//!     Device bias: the DCOH flips the line to host bias first, snooping
//!     its cache when it holds the line (`device_copy = "dirty"`).
//!     The core starts at `host_start_us`, after the setup (checked).
//! * **Nothing is calibrated**: Cohet's device has no device memory, so
//!   every value is a prediction from the links, the agents' occupancy
//!   and the DDR5 timing of the platform.
//! * **Metrics.** Mean, median and quartiles of the measured loads, and
//!   the mean over the device-bias lines and over the host-bias lines
//!   separately (0 when there are none).
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("cohet").unwrap();
//! let x = |f: f64| ccsim_experiments::run_point("cxl_type2_bias", &p, "device_bias_fraction", f, &Params::new(), 0, false).unwrap();
//! // The device's own loads: device bias skips the host round trip.
//! assert!(x(1.0).metrics["mean_ns"] < x(0.0).metrics["mean_ns"]);
//! ```

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;

use crate::program_run::{build_for_program, latency_quartiles, no_violation, role_agent};
use crate::{sim_result, trace_mode, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// The declaration of `cxl_type2_bias`.
pub static CXL_TYPE2_BIAS: WorkloadInfo = WorkloadInfo {
    name: "cxl_type2_bias",
    description: "Loads to a CXL type-2 device's own memory (HDM-D, the verified cxl-type2 table) under host/device bias: a fraction x of the lines put in device bias by the device, then one load at a time on every line by the device (cached or uncached) or by a host core; latency mean, median and quartiles, and the means over device-bias and host-bias lines. x is the fraction of lines in device bias.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("cxl_type2"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.cxl_type2]", description: "The platform's system section (cxl-type2 agents: `core`, `home`, `dcoh` with a ddr5_controller, `accel`)." },
        ParamSpec { name: "access", kind: ParamKind::Str, default: ParamDefault::Str("device_load"), unit: "", range: ParamRange::ANY, from: "assumed: the device's cached load", description: "The measured access: device_load (DevRd), device_load_current (DevRdCur, uncached) or host_load (a core's GetS)." },
        ParamSpec { name: "device_copy", kind: ParamKind::Str, default: ParamDefault::Str("none"), unit: "", range: ParamRange::ANY, from: "assumed: the device's cache empty", description: "After the setup, a device-bias line is in the device's cache `dirty` (Modified) or in `none` (written back)." },
        ParamSpec { name: "device_bias_fraction", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "", range: ParamRange::between(0.0, 1.0), from: "assumed: every line in host bias (the reset state)", description: "Fraction of the lines in device bias (x when it sweeps it)." },
        ParamSpec { name: "lines", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "lines", range: ParamRange::between(1.0, 100_000.0), from: "assumed", description: "Lines measured (sequential 64 B lines)." },
        ParamSpec { name: "host_start_us", kind: ParamKind::Float, default: ParamDefault::Float(1000.0), unit: "us", range: ParamRange::at_least(0.0), from: "assumed: after any setup of up to 100,000 lines", description: "When the host core starts its loads (the device's setup must be over by then)." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "mean_ns", unit: "ns", description: "Mean latency of the measured loads, issue to use." },
        MetricSpec { name: "latency_ns", unit: "ns", description: "Median latency of the measured loads." },
        MetricSpec { name: "p25_ns", unit: "ns", description: "25th percentile of the latency." },
        MetricSpec { name: "p75_ns", unit: "ns", description: "75th percentile of the latency." },
        MetricSpec { name: "device_bias_mean_ns", unit: "ns", description: "Mean latency of the loads of device-bias lines (0 if none)." },
        MetricSpec { name: "host_bias_mean_ns", unit: "ns", description: "Mean latency of the loads of host-bias lines (0 if none)." },
        MetricSpec { name: "ops", unit: "ops", description: "Loads measured." },
    ],
    run,
};

/// Whether line `i` of `n` is one of the `fraction` put in device bias:
/// spread evenly, so that every stretch of lines has its share.
fn in_device_bias(i: u64, fraction: f64) -> bool {
    ((i + 1) as f64 * fraction).floor() > (i as f64 * fraction).floor()
}

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let params = point.params;
    let fraction = match point.x_name {
        "device_bias_fraction" => point.x,
        other => {
            return Err(werr(format!(
                "workload cxl_type2_bias sweeps device_bias_fraction, not {other:?}"
            )))
        }
    };
    if !(0.0..=1.0).contains(&fraction) {
        return Err(werr(format!(
            "device_bias_fraction = {fraction}: must lie in [0, 1]"
        )));
    }
    let access = params.str("access");
    let device_op = match access {
        "device_load" => Some("load"),
        "device_load_current" => Some("load_current"),
        "host_load" => None,
        other => {
            return Err(werr(format!(
                "access = {other:?}: expected device_load, device_load_current or host_load"
            )))
        }
    };
    let dirty = match params.str("device_copy") {
        "none" => false,
        "dirty" => true,
        other => {
            return Err(werr(format!(
                "device_copy = {other:?}: expected none or dirty"
            )))
        }
    };
    if dirty && device_op.is_some() {
        return Err(werr(
            "device_copy = \"dirty\" goes with access = \"host_load\" (the device's own loads would hit its cache)",
        ));
    }
    let lines = params.uint("lines");
    let system = params.str("system");
    let mut s = build_for_program(point.platform, system, point)?;
    let dcoh = role_agent(&s, "dcoh", system)?;
    let cache = role_agent(&s, "accel", system)?;
    let core = role_agent(&s, "core", system)?;
    if s.agent(dcoh).memory_timing().is_none() {
        return Err(werr(format!(
            "system {system}: agent `{}` has no memory (name a ddr5_controller with `memory = ...`)",
            s.protocol.agents[dcoh].name
        )));
    }
    let db: Vec<bool> = (0..lines).map(|i| in_device_bias(i, fraction)).collect();
    let mut device_ops: Vec<(u64, &str)> = Vec::new();
    for (i, &d) in db.iter().enumerate() {
        if d {
            device_ops.push((i as u64, "store"));
            if !dirty {
                device_ops.push((i as u64, "evict"));
            }
        }
    }
    let setup = device_ops.len();
    if let Some(op) = device_op {
        device_ops.extend((0..lines).map(|i| (i, op)));
    }
    s.agent_mut(cache)
        .set_program(&device_ops, 1)
        .map_err(werr)?;
    let host_start = (params.float("host_start_us") * 1e6) as Tick;
    if device_op.is_none() {
        let ops: Vec<(u64, &str)> = (0..lines).map(|i| (i, "load")).collect();
        let agent = s.agent_mut(core);
        agent.set_program(&ops, 1).map_err(werr)?;
        agent.start_program_at(host_start);
    }
    s.sim.run();
    no_violation(&s)?;
    let device_times = s.agent(cache).program_times().to_vec();
    if let Some((i, _)) = device_times.iter().enumerate().find(|(_, t)| t.1 == 0) {
        return Err(RunError::Violation {
            message: format!("the device's operation {i} never completed"),
        });
    }
    let measured: Vec<(Tick, Tick)> = if device_op.is_some() {
        device_times[setup..].to_vec()
    } else {
        let setup_end = device_times.iter().map(|t| t.1).max().unwrap_or(0);
        if setup_end > host_start {
            return Err(werr(format!(
                "the device's setup ran until {} us, after host_start_us = {}: start the host later",
                setup_end as f64 / 1e6,
                params.float("host_start_us")
            )));
        }
        s.agent(core).program_times().to_vec()
    };
    if let Some((i, _)) = measured.iter().enumerate().find(|(_, t)| t.1 == 0) {
        return Err(RunError::Violation {
            message: format!("measured load {i} never completed"),
        });
    }
    let mut metrics = BTreeMap::new();
    latency_quartiles(&measured, &mut metrics);
    let mean = |pick: &dyn Fn(usize) -> bool| {
        let v: Vec<f64> = measured
            .iter()
            .enumerate()
            .filter(|&(i, _)| pick(i))
            .map(|(_, &(a, b))| (b - a) as f64 / 1000.0)
            .collect();
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    metrics.insert("mean_ns".to_string(), mean(&|_| true));
    metrics.insert("device_bias_mean_ns".to_string(), mean(&|i| db[i]));
    metrics.insert("host_bias_mean_ns".to_string(), mean(&|i| !db[i]));
    metrics.insert("ops".to_string(), measured.len() as f64);
    let result = sim_result(&s.sim, BTreeMap::new(), trace_mode(point.trace));
    Ok(PointResult { metrics, ..result })
}
