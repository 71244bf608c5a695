//! `cc_invoke` — PIO paper Fig. 5c/5d: the two-cache-line invocation with
//! both lines **homed on the CPU** and the FPGA's cache controller as a
//! caching agent (instances `cpu_home`, `cc`, link `eci`), on the checked
//! `eci-cc` tables (see [`run`] for the
//! protocol as we read it: the device learns of a request from the
//! invalidation of its Shared copy; the CPU polls its own memory).
//!
//! The x axis is a **percentile** of the per-call latency, as in
//! `coherent_invoke`. The paper publishes no number for 5c/5d: every point
//! is a pure model output.
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let p = Params::new().with("calls", ParamValue::Int(10), "doc");
//! let r = ccsim_experiments::run_point("cc_invoke", &enzian, "percentile", 50.0, &p, 1, false).unwrap();
//! assert!(r.metrics["latency_ns"] > 1000.0);
//! assert_eq!(r.stats["invoke.verified"], 10.0);
//! ```

use std::collections::BTreeMap;

pub mod run;

use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;
use run::{run_cc_invocation, CcInvocationConfig, ReturnPath};

use crate::invocation::percentile;
use crate::{sweeps, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `cc_invoke`.
pub static CC_INVOKE: WorkloadInfo = WorkloadInfo {
    name: "cc_invoke",
    description: "PIO Fig. 5c/5d: two-cache-line invocation over ECI with both lines homed on the CPU and the FPGA's cache controller caching them (eci-cc tables); x = percentile of the per-call latency.",
    params: &[
        ParamSpec { name: "initiator", kind: ParamKind::Enum(&["cpu", "device"]), default: ParamDefault::Str("cpu"), unit: "", range: ParamRange::ANY, from: "PIO paper Fig. 5c: CPU-initiated", description: "cpu: Fig. 5c (latency seen by the CPU: request stored to result loaded); device: Fig. 5d (seen by the device: work item handed out to the CPU's response fetched)." },
        ParamSpec { name: "return_path", kind: ParamKind::Enum(&["forward", "writeback"]), default: ParamDefault::Str("forward"), unit: "", range: ParamRange::ANY, from: "assumed: the device keeps line A until the CPU's read recalls it", description: "How line A (result or work item) reaches the CPU: the device keeps it Modified and the CPU's read recalls it (FLDRS/HAKD), or the device writes it back at once (VICD)." },
        ParamSpec { name: "calls", kind: ParamKind::Int, default: ParamDefault::Int(500), unit: "calls", range: ParamRange::between(1.0, 1_000_000.0), from: "assumed: enough calls for stable percentiles", description: "Measured invocations (two more warm up)." },
        ParamSpec { name: "compute_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: a null call", description: "Callee time from request to result (0: null call)." },
        ParamSpec { name: "poll_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::positive(), from: "assumed", description: "Mean pause of the CPU's polling loop between two reads of A (jittered by half)." },
        ParamSpec { name: "jitter_ns", kind: ParamKind::Float, default: ParamDefault::Float(20.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: spreads the latency distribution", description: "Seeded uniform extra delay per ECI message (overrides eci.jitter_ns), for the distribution." },
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "The x-th percentile of the per-call latency." },
        MetricSpec { name: "polls", unit: "reads", description: "CPU reads of line A per call that found no answer." },
        MetricSpec { name: "refused_stores", unit: "stores", description: "Device stores to A refused per call (a CPU poll recalled A between the device's load-exclusive and store), retried." },
    ],
    check: None,
    run,
};

const WARMUP: usize = 2;

/// Runs one point of `cc_invoke`.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let (x_name, x, seed) = (point.x_name, point.x, point.seed);
    sweeps("cc_invoke", "percentile", x_name)?;
    if !(x > 0.0 && x <= 100.0) {
        return Err(werr(format!("percentile = {x}: must be in (0, 100]")));
    }
    let calls = params.int("calls");
    let f = |n: &str| params.float(n);
    let opts = EciOptions::new(seed, TraceMode::Hash).set(
        "links",
        "jitter_ns",
        ParamValue::Float(f("jitter_ns")),
        "cc_invoke.jitter_ns",
    );
    let sys = platform
        .cc_system("cpu_homed", &opts)
        .map_err(RunError::Config)?;
    let cfg = CcInvocationConfig {
        device_initiated: params.str("initiator") == "device",
        return_path: if params.str("return_path") == "writeback" {
            ReturnPath::Writeback
        } else {
            ReturnPath::Forward
        },
        calls: calls as usize + WARMUP,
        warmup: WARMUP,
        compute_ns: f("compute_ns"),
        poll_ns: f("poll_ns"),
        ..Default::default()
    };
    let r = run_cc_invocation(sys, &cfg, seed)
        .map_err(|e| werr(format!("platform {}: cc_invoke: {e}", platform.name)))?;
    let mut lat: Vec<f64> = r.latencies_ps.iter().map(|&t| t as f64 / 1000.0).collect();
    lat.sort_by(f64::total_cmp);
    let mut metrics = BTreeMap::new();
    metrics.insert("latency_ns".to_string(), percentile(&lat, x));
    metrics.insert("polls".to_string(), r.polls_per_call);
    metrics.insert(
        "refused_stores".to_string(),
        r.refused_stores as f64 / cfg.calls as f64,
    );
    let mut stats = r.stats;
    stats.insert("sim.events".to_string(), r.events as f64);
    stats.insert(
        "invoke.verified".to_string(),
        r.verified.saturating_sub(WARMUP) as f64,
    );
    stats.insert("invoke.p50_ns".to_string(), percentile(&lat, 50.0));
    Ok(PointResult {
        metrics,
        stats,
        trace_json: None,
        trace_events: None,
        trace_hash: r.trace_hash.unwrap_or_default(),
    })
}
