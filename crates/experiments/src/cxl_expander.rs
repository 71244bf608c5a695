//! `cxl_expander` — a CXL type-3 memory expander (the Samsung expander of
//! Cohet §VI-A1, on PCIe 5.0 x8) under host threads' loads and stores.
//!
//! * **The system** is a platform's `[systems.<system>]` of table agents
//!   running `protocols/cxl-mem.toml` (CXL.mem, HDM-H): host threads (the
//!   `host` role) and the expander's controller (the `mc` role, the
//!   home), whose memory is a `ddr5_controller`. A load is a MemRd
//!   answered by MemData, a store a MemWr (with its line) answered by Cmp;
//!   each runs the verified table and moves real bytes.
//! * **Threads.** The first `threads` host agents each run a program:
//!   `ops_per_thread` operations, up to `outstanding` open at once (a
//!   core's misses in flight). Operation `i` is a store when
//!   `i mod (reads + writes) >= reads`, so `reads = 3, writes = 1` is a
//!   3:1 mix; loads read sequential lines of one buffer of the thread's
//!   own, stores write sequential lines of another.
//! * **What the numbers come from.** The host path (the thread's
//!   `access_ns`, the mesh links), the link (latency, and serialization of
//!   whole 16 B slots in 68 B flits at the x8 rate: the system's
//!   `header_bytes` and the link's `flit_bytes`), the controller's
//!   pipeline (its `occupancy_ns`) and the DRAM's banks, bursts and
//!   refresh. Nothing is fitted to a measurement.
//! * **Metrics.** Latency of every operation (issue to use: median and
//!   quartiles), bandwidth (64 B per operation over the run, first issue to
//!   last use) and the link's bytes per operation in each direction.
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("cohet").unwrap();
//! let r = ccsim_experiments::run_point("cxl_expander", &p, "threads", 1.0, &Params::new(), 0, false).unwrap();
//! // One thread, one load at a time: a read costs one slot of request and
//! // five (header and four of data) of response, 17 B each on the wire.
//! assert_eq!(r.metrics["m2s_bytes_per_op"], 16.0);
//! assert_eq!(r.metrics["s2m_bytes_per_op"], 80.0);
//! ```

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;

use crate::program_run::{
    build_for_program, latency_quartiles, no_violation, role_agent, role_agents,
};
use crate::{
    sim_result, trace_mode, werr, whole_number, MetricSpec, Point, PointResult, RunError,
    WorkloadInfo,
};

/// Bytes an operation moves (a 64 B line, CXL 2.0 §3.3).
const LINE_BYTES: f64 = 64.0;

/// Lines between two threads' buffers: a prime, so that the buffers start
/// on different banks and rows, as separately allocated pages do.
const THREAD_STRIDE_LINES: u64 = 1_048_573;

/// The declaration of `cxl_expander`.
pub static CXL_EXPANDER: WorkloadInfo = WorkloadInfo {
    name: "cxl_expander",
    description: "A CXL type-3 memory expander (CXL.mem HDM-H, the verified cxl-mem table) under host threads: each thread loads (MemRd) and stores (MemWr) sequential 64 B lines of its own buffer with a window of outstanding requests, in a read:write mix; latency (median and quartiles), bandwidth, and the link's bytes per operation each way. x is the number of threads or the window.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("cxl_expander"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.cxl_expander]", description: "The platform's system section (cxl-mem agents: threads playing `host`, the expander's controller playing `mc`)." },
        ParamSpec { name: "threads", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "threads", range: ParamRange::at_least(1.0), from: "assumed: one thread (idle latency)", description: "Host threads issuing (the first host agents of the system; x when it sweeps threads)." },
        ParamSpec { name: "outstanding", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "requests", range: ParamRange::between(1.0, 1024.0), from: "assumed: one at a time (a pointer chase)", description: "Requests each thread keeps open at once (x when it sweeps outstanding)." },
        ParamSpec { name: "reads", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "ops", range: ParamRange::at_least(0.0), from: "assumed: all reads", description: "Reads per `reads + writes` operations." },
        ParamSpec { name: "writes", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "ops", range: ParamRange::at_least(0.0), from: "assumed: all reads", description: "Full-line writes per `reads + writes` operations." },
        ParamSpec { name: "ops_per_thread", kind: ParamKind::Int, default: ParamDefault::Int(1000), unit: "ops", range: ParamRange::between(1.0, 1_000_000.0), from: "assumed", description: "Operations each thread issues." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Median operation latency, issue to use." },
        MetricSpec { name: "p25_ns", unit: "ns", description: "25th percentile of the latency." },
        MetricSpec { name: "p75_ns", unit: "ns", description: "75th percentile of the latency." },
        MetricSpec { name: "bandwidth_gbps", unit: "GB/s", description: "64 B per operation over the run (first issue to last use; GB = 10^9 B)." },
        MetricSpec { name: "m2s_bytes_per_op", unit: "B", description: "Bytes of messages host to device (M2S) on the CXL link per operation (whole slots; the wire adds the flit's framing)." },
        MetricSpec { name: "s2m_bytes_per_op", unit: "B", description: "Bytes of messages device to host (S2M) on the CXL link per operation." },
        MetricSpec { name: "ops", unit: "ops", description: "Operations measured." },
    ],
    run,
};

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let params = point.params;
    let mut threads = params.uint("threads");
    let mut outstanding = params.uint("outstanding");
    match point.x_name {
        "threads" => threads = whole_number("threads", point.x, 1.0)?,
        "outstanding" => outstanding = whole_number("outstanding", point.x, 1.0)?,
        other => {
            return Err(werr(format!(
                "workload cxl_expander sweeps threads or outstanding, not {other:?}"
            )))
        }
    }
    let (reads, writes) = (params.uint("reads"), params.uint("writes"));
    if reads + writes == 0 {
        return Err(werr(
            "reads = 0 and writes = 0: the mix needs at least one operation",
        ));
    }
    let per_thread = params.uint("ops_per_thread");
    let system = params.str("system");
    let mut s = build_for_program(point.platform, system, point)?;
    let mc = role_agent(&s, "mc", system)?;
    let hosts = role_agents(&s, "host", system)?;
    if threads as usize > hosts.len() {
        return Err(werr(format!(
            "threads = {threads}: system {system} has {} host agents",
            hosts.len()
        )));
    }
    if s.agent(mc).memory_timing().is_none() {
        return Err(werr(format!(
            "system {system}: agent `{}` has no memory (name a ddr5_controller with `memory = ...`)",
            s.protocol.agents[mc].name
        )));
    }
    for (t, &agent) in hosts.iter().take(threads as usize).enumerate() {
        // Loads and stores stream through two buffers of the thread's own
        // (as a read:write benchmark's source and destination), so each
        // stream covers every subchannel whatever the mix's period.
        let load_base = t as u64 * THREAD_STRIDE_LINES;
        let store_base = load_base + THREAD_STRIDE_LINES / 2;
        let (mut loads, mut stores) = (0, 0);
        let ops: Vec<(u64, &str)> = (0..per_thread)
            .map(|i| {
                if i % (reads + writes) >= reads {
                    stores += 1;
                    (store_base + stores - 1, "store")
                } else {
                    loads += 1;
                    (load_base + loads - 1, "load")
                }
            })
            .collect();
        s.agent_mut(agent)
            .set_program(&ops, outstanding as usize)
            .map_err(werr)?;
    }
    s.sim.run();
    no_violation(&s)?;
    let (mut first, mut last) = (u64::MAX, 0);
    for &agent in hosts.iter().take(threads as usize) {
        for (i, &(start, end)) in s.agent(agent).program_times().iter().enumerate() {
            if end == 0 {
                return Err(RunError::Violation {
                    message: format!(
                        "{} operation {i} never completed (the run stopped with work open)",
                        s.protocol.agents[agent].name
                    ),
                });
            }
            first = first.min(start);
            last = last.max(end);
        }
    }
    let n = threads * per_thread;
    let mut metrics = BTreeMap::new();
    let threads_used = &hosts[..threads as usize];
    latency_quartiles(
        threads_used
            .iter()
            .flat_map(|&a| s.agent(a).program_times()),
        &mut metrics,
    );
    let seconds = (last - first) as f64 * 1e-12;
    metrics.insert(
        "bandwidth_gbps".to_string(),
        n as f64 * LINE_BYTES / seconds / 1e9,
    );
    metrics.insert("ops".to_string(), n as f64);
    let result = sim_result(&s.sim, BTreeMap::new(), trace_mode(point.trace));
    // The device's link: the one that ends at the controller.
    let mc_name = &s.protocol.agents[mc].name;
    let link_bytes = |suffix: &str| {
        result
            .stats
            .iter()
            .find(|(k, _)| k.contains(&format!("--{mc_name}.")) && k.ends_with(suffix))
            .map(|(_, v)| *v)
    };
    let (m2s, s2m) = (link_bytes("a_to_b.bytes"), link_bytes("b_to_a.bytes"));
    let (Some(m2s), Some(s2m)) = (m2s, s2m) else {
        return Err(werr(format!(
            "system {system}: no link `<switch>--{mc_name}` (the device's link, with the controller as its b end)"
        )));
    };
    metrics.insert("m2s_bytes_per_op".to_string(), m2s / n as f64);
    metrics.insert("s2m_bytes_per_op".to_string(), s2m / n as f64);
    Ok(PointResult { metrics, ..result })
}
