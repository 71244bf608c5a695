//! `coherent_invoke` — the two-cache-line invocation over ECI (PIO paper §5,
//! Figs. 5a and 6; CCKit §5.7, Fig. 10) on the coherent Enzian platform.
//!
//! The core calls a checksum function on the FPGA over the DC running the
//! checked `invocation` protocol tables (system `invocation` of
//! platforms/enzian.toml: the `llc`, the `dc` with `dc_bram`, link `eci`):
//! `calls` invocations, the two lines swapping roles every call, each
//! result's bytes verified by the client (see
//! [`ccsim_eci::invocation`]). The x axis is a **percentile**
//! of the per-call latency distribution (x = 50: the median), so one series
//! gives a CDF. With x = **message_bytes** the metric is the median latency
//! of calls with an x-byte request and response, each `ceil(x / 128)`
//! one-line exchanges back to back (PIO Fig. 7). With `payload = pipelined`
//! the x-byte call moves its lines in parallel instead (the what-if of PIO
//! §6.2, [`pipelined`]). Seeded link jitter (`jitter_ns`, a uniform extra delay per
//! message) spreads the distribution.
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let p = Params::new().with("calls", ParamValue::Int(20), "doc");
//! let r = ccsim_experiments::run_point("coherent_invoke", &enzian, "percentile", 50.0, &p, 1, false).unwrap();
//! assert!(r.metrics["latency_ns"] > 500.0 && r.metrics["latency_ns"] < 1500.0);
//! assert_eq!(r.stats["invoke.verified"], 20.0);
//! ```

use std::collections::BTreeMap;

use ccsim_coherence::LINE_BYTES;
pub mod pipelined;
pub mod run;

use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;
use pipelined::{run_pipelined_invocation, PayloadConfig};
use run::{run_fastforward, run_invocation, InvocationConfig};

use crate::{werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `coherent_invoke`.
pub static COHERENT_INVOKE: WorkloadInfo = WorkloadInfo {
    name: "coherent_invoke",
    description: "PIO Fig. 5a/6, CCKit Fig. 10: the CPU invokes a checksum function on the FPGA through two cache lines over ECI (invocation protocol tables on the DC), E- or S-return; x = percentile of the per-call latency.",
    params: &[
        ParamSpec { name: "mechanism", kind: ParamKind::Enum(&["two_line", "fastforward"]), default: ParamDefault::Str("two_line"), unit: "", range: ParamRange::ANY, from: "PIO paper Fig. 6: the two-line invocation", description: "two_line: the invocation protocol over ECI to the FPGA DC; fastforward: the software baseline between the two ThunderX-1 sockets over CCPI (client spins on a response line, server on the home socket spins on the request line), with the defaults of initiator, return_state, signal, compute_ns and timeout_ns." },
        ParamSpec { name: "initiator", kind: ParamKind::Enum(&["cpu", "device"]), default: ParamDefault::Str("cpu"), unit: "", range: ParamRange::ANY, from: "PIO paper Fig. 5a: CPU-initiated", description: "cpu: PIO Fig. 5a (latency seen by the CPU: request stored to result loaded); device: Fig. 5b (latency seen by the device: work item handed out to the CPU's response fetched)." },
        ParamSpec { name: "return_state", kind: ParamKind::Enum(&["exclusive", "shared"]), default: ParamDefault::Str("exclusive"), unit: "", range: ParamRange::ANY, from: "PIO paper Fig. 6: E-return", description: "The device answers the held read Exclusive (E-return) or Shared (S-return)." },
        ParamSpec { name: "signal", kind: ParamKind::Enum(&["load", "store"]), default: ParamDefault::Str("load"), unit: "", range: ParamRange::ANY, from: "PIO paper Fig. 5a: a load of G (RLDD)", description: "How the CPU signals: a load of G (RLDD, PIO Fig. 5a) or a store to a reserved word of G (load-exclusive RLDX, CCKit §5.7; answered Exclusive, CPU-initiated only)." },
        ParamSpec { name: "calls", kind: ParamKind::Int, default: ParamDefault::Int(1000), unit: "calls", range: ParamRange::between(1.0, 1_000_000.0), from: "assumed: enough calls for stable percentiles", description: "Measured invocations (two one-line calls more warm up); with x = message_bytes, each is ceil(x / 128) line exchanges." },
        ParamSpec { name: "compute_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: a null call", description: "Device time from request to result (0: null call)." },
        ParamSpec { name: "timeout_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: never answer 'not ready yet'", description: "Answer 'not ready yet' when the result is not ready this long after the read arrived (0: never; only with initiator = cpu and signal = load)." },
        ParamSpec { name: "payload", kind: ParamKind::Enum(&["serial", "pipelined"]), default: ParamDefault::Str("serial"), unit: "", range: ParamRange::ANY, from: "PIO paper §6.2: 'the protocol simply replicates each cache line exchange'", description: "How a multi-line call (x = message_bytes above 128) moves: serial, ceil(x / 128) one-line exchanges back to back (PIO Fig. 7 as measured); pipelined, a prediction of the pipelining PIO §6.2 leaves unexplored: all request lines fetched at once by the DC (one per DC clock, on DCUs apart from the signal lines'), the response lines loaded with the ThunderX-1 core's misses in flight (thunderx_cpu's mshrs and write buffer), every byte checked. Pipelined needs mechanism = two_line, initiator = cpu, signal = load, return_state = exclusive and no timeout." },
        ParamSpec { name: "jitter_ns", kind: ParamKind::Float, default: ParamDefault::Float(20.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: spreads the latency distribution", description: "Seeded uniform extra delay per ECI message (overrides eci.jitter_ns), for the distribution." },
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "The x-th percentile of the per-call latency (request store issued to verified result loaded)." },
        MetricSpec { name: "not_ready", unit: "answers", description: "'Not ready yet' answers per call (fastforward: spin loads that saw no new value, per call)." },
    ],
    check: Some(check),
    run,
};

/// Combinations the invocation refuses: FastForward is plain loads and
/// stores between two sockets; the device-initiated protocol signals by a
/// load and always answers; a store signal (load-exclusive) is answered
/// Exclusive and always answers.
fn check(p: &Params) -> Result<(), ParamProblem> {
    let fastforward = p.str("mechanism") == "fastforward";
    let device = p.str("initiator") == "device";
    let store = p.str("signal") == "store";
    let refuse = |param: &'static str, why: &str| Err(ParamProblem::new(param, why.to_string()));
    if fastforward {
        if device {
            return refuse(
                "initiator",
                "must be cpu with mechanism = fastforward, got \"device\"",
            );
        }
        if store {
            return refuse(
                "signal",
                "must be load with mechanism = fastforward, got \"store\"",
            );
        }
        if p.str("return_state") == "shared" {
            return refuse(
                "return_state",
                "must be exclusive with mechanism = fastforward, got \"shared\"",
            );
        }
        for n in ["compute_ns", "timeout_ns"] {
            if p.float(n) > 0.0 {
                return Err(ParamProblem::new(
                    n,
                    format!("must be 0 with mechanism = fastforward, got {}", p.float(n)),
                ));
            }
        }
    }
    if p.str("payload") == "pipelined" {
        let fixed = [
            ("mechanism", "two_line"),
            ("initiator", "cpu"),
            ("signal", "load"),
            ("return_state", "exclusive"),
        ];
        for (name, want) in fixed {
            let got = p.str(name);
            if got != want {
                return Err(ParamProblem::new(
                    name,
                    format!("must be {want} with payload = pipelined, got {got:?}"),
                ));
            }
        }
        if p.float("timeout_ns") > 0.0 {
            return Err(ParamProblem::new(
                "timeout_ns",
                format!(
                    "must be 0 with payload = pipelined (the device always answers), got {}",
                    p.float("timeout_ns")
                ),
            ));
        }
    }
    if store && device {
        return refuse(
            "signal",
            "must be load with initiator = device, got \"store\"",
        );
    }
    if store && p.str("return_state") == "shared" {
        return refuse("return_state", "must be exclusive with signal = store (a load-exclusive is answered Exclusive), got \"shared\"");
    }
    let timeout = p.float("timeout_ns");
    if timeout > 0.0 && (device || store) {
        let why = if device {
            "initiator = device"
        } else {
            "signal = store"
        };
        return Err(ParamProblem::new(
            "timeout_ns",
            format!("must be 0 with {why} (the device always answers), got {timeout}"),
        ));
    }
    Ok(())
}

const WARMUP: usize = 2;
/// Largest payload (bytes).
const MAX_PAYLOAD: f64 = (1u64 << 20) as f64;

/// The `p`-th percentile (nearest rank) of sorted `v`.
pub(crate) fn percentile(v: &[f64], p: f64) -> f64 {
    let k = ((v.len() as f64 * p / 100.0).ceil() as usize).clamp(1, v.len());
    v[k - 1]
}

/// Runs one point of `coherent_invoke`.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let (x_name, x, seed) = (point.x_name, point.x, point.seed);
    // x = percentile: the x-th percentile of one-line calls. x =
    // message_bytes: the median of x-byte calls, each ceil(x / 128)
    // one-line exchanges back to back (PIO §6.1, Fig. 7).
    let (pct, lines_per_call) = match x_name {
        "percentile" if x > 0.0 && x <= 100.0 => (x, 1),
        "percentile" => return Err(werr(format!("percentile = {x}: must be in (0, 100]"))),
        "message_bytes" if (1.0..=MAX_PAYLOAD).contains(&x) && x.fract() == 0.0 => {
            (50.0, (x as usize).div_ceil(LINE_BYTES))
        }
        "message_bytes" => {
            return Err(werr(format!(
                "message_bytes = {x}: must be a whole number of bytes from 1 to {MAX_PAYLOAD}"
            )))
        }
        _ => {
            return Err(werr(format!(
                "workload coherent_invoke sweeps percentile or message_bytes, not {x_name:?}"
            )))
        }
    };
    let calls = params.int("calls");
    if params.str("payload") == "pipelined" {
        return run_payload(point, pct, lines_per_call, calls as usize);
    }
    let f = |n: &str| params.float(n);
    let (compute, timeout, jitter) = (f("compute_ns"), f("timeout_ns"), f("jitter_ns"));
    let fastforward = params.str("mechanism") == "fastforward";
    // The invocation protocol on the FPGA's DC, or FastForward over CCPI
    // between the two sockets (eci-dc on the ThunderX-1 home).
    let system = if fastforward { "llc_ddr" } else { "invocation" };
    let opts = EciOptions::new(seed, crate::trace_mode(point.trace))
        .set(
            "links",
            "jitter_ns",
            ParamValue::Float(jitter),
            "coherent_invoke.jitter_ns",
        )
        .set(
            "cpu",
            "mshrs",
            ParamValue::Int(1),
            "coherent_invoke: the barrier orders the request stores before the load",
        );
    let sys = platform
        .coherent_system(system, &opts)
        .map_err(RunError::Config)?;
    let signal_store = params.str("signal") == "store";
    let exclusive_return = params.str("return_state") == "exclusive";
    let device_initiated = params.str("initiator") == "device";
    if device_initiated && lines_per_call > 1 {
        return Err(werr(
            "coherent_invoke: initiator = device runs one-line work items (x = percentile or message_bytes up to 128)",
        ));
    }
    let cfg = InvocationConfig {
        exclusive_return,
        calls: calls as usize * lines_per_call + WARMUP,
        warmup: WARMUP,
        compute_ns: compute,
        timeout_ns: (timeout > 0.0).then_some(timeout),
        signal_store,
        device_initiated,
        ..Default::default()
    };
    let r = if fastforward {
        run_fastforward(sys, &cfg)
    } else {
        run_invocation(sys, &cfg)
    }
    .map_err(|e| werr(format!("platform {}: coherent_invoke: {e}", platform.name)))?;
    // One latency per call of lines_per_call back-to-back line exchanges.
    let mut lat: Vec<f64> = r.spans[WARMUP..]
        .chunks(lines_per_call)
        .map(|c| (c[c.len() - 1].1 - c[0].0) as f64 / 1000.0)
        .collect();
    lat.sort_by(f64::total_cmp);
    let mut metrics = BTreeMap::new();
    metrics.insert("latency_ns".to_string(), percentile(&lat, pct));
    metrics.insert(
        "not_ready".to_string(),
        r.not_ready as f64 / (cfg.calls - WARMUP) as f64 * lines_per_call as f64,
    );
    let mut stats = r.stats;
    stats.insert("sim.events".to_string(), r.events as f64);
    stats.insert(
        "invoke.verified".to_string(),
        r.verified.saturating_sub(WARMUP) as f64,
    );
    stats.insert("invoke.p50_ns".to_string(), percentile(&lat, 50.0));
    stats.insert("invoke.p99_ns".to_string(), percentile(&lat, 99.0));
    stats.insert("invoke.not_ready".to_string(), r.not_ready as f64);
    Ok(PointResult {
        metrics,
        stats,
        trace_json: r.trace_json,
        trace_events: r.trace_events,
        trace_hash: r.trace_hash,
    })
}

/// The keys of the platform's whole-CPU instance `thunderx_cpu` that a
/// pipelined exchange's core takes over: its misses in flight, its write
/// buffer, the buffer's drain into the L2, and whether store misses drain
/// into the L2's TAD transactions. One list, so that every experiment that
/// runs the ThunderX-1 core on its own system stores as `thunderx_cpu` does.
pub(crate) const THUNDERX_CORE_KEYS: [&str; 4] = [
    "mshrs",
    "write_buffer_bytes",
    "wb_drain_ns",
    "store_misses_in_tads",
];

/// `opts` with the `cpu` component's [`THUNDERX_CORE_KEYS`] set to the
/// platform's `thunderx_cpu` values (their provenance stays in the
/// platform file); `user` names the workload in the error and the reason.
pub(crate) fn with_thunderx_core(
    mut opts: EciOptions,
    platform: &ccsim_platform::Platform,
    user: &str,
) -> Result<EciOptions, RunError> {
    let core = platform.component("thunderx_cpu").map_err(|e| {
        werr(format!(
            "platform {}: {user} takes the ThunderX-1 core from component thunderx_cpu: {e}",
            platform.name
        ))
    })?;
    let why = format!("{user}: the ThunderX-1 core of thunderx_cpu");
    for key in THUNDERX_CORE_KEYS {
        let (value, _) = core.params.get(key).ok_or_else(|| {
            werr(format!(
                "platform {}: component thunderx_cpu has no parameter {key}",
                platform.name
            ))
        })?;
        opts = opts.set("cpu", key, value.clone(), &why);
    }
    Ok(opts)
}

/// One point of the pipelined payload (`payload = pipelined`): `calls`
/// calls of `lines` lines each; the `pct`-th percentile of their latency.
fn run_payload(
    point: &Point<'_>,
    pct: f64,
    lines: usize,
    calls: usize,
) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let opts = EciOptions::new(point.seed, crate::trace_mode(point.trace)).set(
        "links",
        "jitter_ns",
        ParamValue::Float(params.float("jitter_ns")),
        "coherent_invoke.jitter_ns",
    );
    let opts = with_thunderx_core(opts, platform, "coherent_invoke (payload = pipelined)")?;
    let sys = platform
        .coherent_system("invocation", &opts)
        .map_err(RunError::Config)?;
    let cfg = PayloadConfig {
        lines,
        calls: calls + WARMUP,
        warmup: WARMUP,
        compute_ns: params.float("compute_ns"),
    };
    let r = run_pipelined_invocation(sys, &cfg)
        .map_err(|e| werr(format!("platform {}: coherent_invoke: {e}", platform.name)))?;
    let mut lat: Vec<f64> = r.latencies_ps.iter().map(|t| *t as f64 / 1000.0).collect();
    lat.sort_by(f64::total_cmp);
    let mut metrics = BTreeMap::new();
    metrics.insert("latency_ns".to_string(), percentile(&lat, pct));
    metrics.insert("not_ready".to_string(), 0.0);
    let mut stats = r.stats;
    stats.insert("sim.events".to_string(), r.events as f64);
    stats.insert(
        "invoke.verified".to_string(),
        r.verified.saturating_sub(WARMUP) as f64,
    );
    stats.insert("invoke.bytes_checked".to_string(), r.bytes_checked as f64);
    stats.insert(
        "invoke.max_loads_in_flight".to_string(),
        r.max_loads_in_flight as f64,
    );
    stats.insert(
        "invoke.max_fetches_in_flight".to_string(),
        r.max_fetches_in_flight as f64,
    );
    stats.insert("invoke.p50_ns".to_string(), percentile(&lat, 50.0));
    stats.insert("invoke.p99_ns".to_string(), percentile(&lat, 99.0));
    Ok(PointResult {
        metrics,
        stats,
        trace_json: r.trace_json,
        trace_events: r.trace_events,
        trace_hash: r.trace_hash,
    })
}
