//! CXL.io on the link CXL.cache uses: the Cohet CXL-FPGA as one device
//! whose DCOH and DMA engine share a `cxl_flexbus`.
//!
//! ```text
//!  core ──mem── host_memory                core0, core1 ── mesh ── llc (home)
//!    └─io── root_complex ──mem──┘                            │
//!              └── io_host ─┐                      cachemem_host
//!                           └──── flexbus (68 B flits, ARB/MUX) ────┐
//!                       io_device ─── dma (BAR0 doorbells) ─ bram    └ cachemem_device ── dcoh (LSU)
//! ```
//!
//! The system is a platform's `[systems.<system>]` of table agents with a
//! `cxl_flexbus` link (Cohet's `cxl_io`); [`attach`] adds the PCIe side of
//! `dma_read` (core and driver, host memory, root complex, the XDMA engine
//! and its on-chip memory) with the root complex and the engine on the
//! flexbus's CXL.io ports, so MMIO to the engine's BAR (the driver's
//! doorbell), the descriptor fetches and the data reads travel as CXL.io
//! TLPs in the same flits as the DCOH's CXL.cache messages.
//!
//! * `dma_read` with `system = "cxl_io"` ([`dma_read`]): the PCIe-FPGA's
//!   DMA read, over CXL.io.
//! * `cxl_io_mix` ([`CXL_IO_MIX`]): the LSU's CXL.cache loads (all in
//!   flight, as in `cohet-cxl-bandwidth`) while the engine streams a DMA
//!   read over CXL.io; LSU and DMA bandwidth, and the loads' latency,
//!   against the arbiter's weights.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::{Core, Op};
use ccsim_pcie::dma::{XdmaEngine, H2C};
use ccsim_pcie::flexbus::FlexBus;
use ccsim_pcie::memory::Memory;
use ccsim_pcie::system::{attach_host_and_dma, AttachedHost};
use ccsim_platform::{BuildOptions, BuiltSystem, Platform};

use crate::program_run::{latency_quartiles, no_violation, role_agent};
use crate::{
    model_err, ns, pattern, sim_result, system_params, trace_mode, werr, whole_number, MetricSpec,
    Point, PointResult, RunError, WorkloadInfo, COMPLETION, REQ_BUF, TIME_LIMIT,
};

/// A built CXL.io system: the table agents' system and the PCIe side
/// attached to its flexbus.
pub struct CxlIoSystem {
    /// The table agents, the flexbus and the attached components.
    pub built: BuiltSystem,
    /// The attached PCIe side.
    pub host: AttachedHost,
    /// The flexbus.
    pub flexbus: ComponentId,
}

impl CxlIoSystem {
    /// The core.
    pub fn core(&self) -> &Core {
        self.built
            .sim
            .component::<Core>(self.host.core)
            .expect("core")
    }
    /// The DMA engine.
    pub fn engine(&self) -> &XdmaEngine {
        self.built
            .sim
            .component::<XdmaEngine>(self.host.engine)
            .expect("engine")
    }
    /// The flexbus.
    pub fn flexbus(&self) -> &FlexBus {
        self.built
            .sim
            .component::<FlexBus>(self.flexbus)
            .expect("flexbus")
    }
    /// Device memory.
    pub fn device_memory(&self) -> &Memory {
        self.built
            .sim
            .component::<Memory>(self.host.device_memory)
            .expect("device memory")
    }
}

/// The flexbus instance of `system`: the instance of its only
/// `cxl_flexbus` link.
fn flexbus_instance(platform: &Platform, system: &str) -> Result<String, RunError> {
    let decl = platform.system(system).map_err(RunError::Config)?;
    let found: Vec<&str> = decl
        .links
        .iter()
        .filter(|l| {
            platform
                .component(&l.instance)
                .is_ok_and(|c| c.type_name == "cxl_flexbus")
        })
        .map(|l| l.instance.as_str())
        .collect();
    match found[..] {
        [one] => Ok(one.to_string()),
        [] => Err(werr(format!(
            "system {system} of platform {} has no cxl_flexbus link, which CXL.io needs (see [systems.cxl_io] of cohet)",
            platform.name
        ))),
        _ => Err(werr(format!(
            "system {system} has several cxl_flexbus links; CXL.io needs one"
        ))),
    }
}

/// Builds `system` with the PCIe side attached to its flexbus, the core
/// running `program` and `host` holding `preload` at `REQ_BUF`.
pub fn attach(
    platform: &Platform,
    system: &str,
    workload: &str,
    program: Vec<Op>,
    preload: &[u8],
    seed: u64,
    trace: TraceMode,
) -> Result<CxlIoSystem, RunError> {
    let sp = system_params(platform, workload)?;
    let bus = flexbus_instance(platform, system)?;
    let mut host = Memory::host(&sp.host_memory).map_err(model_err(platform))?;
    host.data.write(REQ_BUF, preload);
    let dev = Memory::device(&sp.device_memory).map_err(model_err(platform))?;
    let mut parts = Some((program, host, dev));
    let attached: Rc<Cell<Option<AttachedHost>>> = Rc::new(Cell::new(None));
    let out = attached.clone();
    let bus_name = bus.clone();
    let mut hook = move |b: &mut SystemBuilder<_>, named: &BTreeMap<String, ComponentId>| {
        let (program, host, dev) = parts.take().expect("attached once");
        let fb = named[&bus_name];
        let a = attach_host_and_dma(
            b,
            &sp,
            program,
            host,
            dev,
            (fb, "io_host"),
            (fb, "io_device"),
        )?;
        out.set(Some(a));
        Ok(())
    };
    let built = platform
        .build_attached(
            system,
            BuildOptions {
                seed,
                trace,
                checks: true,
                tester: None,
            },
            &mut hook,
        )
        .map_err(RunError::Config)?;
    let host = attached.take().expect("the hook ran");
    let flexbus = built.components[&bus];
    Ok(CxlIoSystem {
        built,
        host,
        flexbus,
    })
}

/// Runs `s` until the core's program ends (or the time limit); a run that
/// did not finish is an error naming what is stuck.
fn finish(s: &mut CxlIoSystem, workload: &str) -> Result<(), RunError> {
    s.built.sim.run_until(TIME_LIMIT);
    let core = s.core();
    if let Some(t) = &core.timed_out {
        return Err(werr(format!("{workload}: {t}")));
    }
    if !core.finished() {
        let mut report = vec![format!(
            "{workload}: the core's program did not finish over CXL.io"
        )];
        report.push(core.report());
        report.extend(s.engine().report());
        report.extend(s.flexbus().report());
        return Err(werr(report.join("\n  ")));
    }
    no_violation(&s.built)
}

/// `dma_read` over CXL.io: the same driver, engine and metrics, with the
/// root complex and the engine on `system`'s flexbus.
pub(crate) fn dma_read(
    platform: &Platform,
    system: &str,
    x: u64,
    params: &ccsim_kernel::component::Params,
    seed: u64,
    trace: TraceMode,
) -> Result<PointResult, RunError> {
    let (bandwidth_mode, n) = crate::dma_read_transfers(params, x);
    let program = crate::dma_read_program(platform, "dma_read", n, x, params)?;
    let data = pattern(n * x, 1);
    let mut s = attach(platform, system, "dma_read", program, &data, seed, trace)?;
    finish(&mut s, "dma_read")?;
    if s.device_memory().data.read(0, data.len()) != data {
        return Err(werr(
            "dma_read: device memory does not hold the host buffer after the transfer over CXL.io",
        ));
    }
    let core = s.core();
    let latency = core.mark(1).expect("mark") - core.mark(0).expect("mark");
    let metrics = crate::dma_read_metrics(latency, s.engine().done_times(H2C), x, bandwidth_mode);
    Ok(sim_result(&s.built.sim, metrics, trace))
}

/// Bytes a load moves (Cohet §VI-B: 64 B granularity).
const LOAD_BYTES: f64 = 64.0;

/// The declaration of `cxl_io_mix`.
pub static CXL_IO_MIX: WorkloadInfo = WorkloadInfo {
    name: "cxl_io_mix",
    description: "The CXL-FPGA's LSU reads host lines through CXL.cache (all loads in flight, LLC or memory hits) while its DMA engine streams an H2D read over CXL.io on the same CXL link (cxl_flexbus); x is an arbiter weight (io_weight or cache_weight) or the link width. LSU and DMA bandwidth over the time both run, and the loads' latency.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("cxl_io"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.cxl_io]", description: "The platform's system with a cxl_flexbus link and a `device` agent." },
        ParamSpec { name: "tier", kind: ParamKind::Enum(&["llc", "memory"]), default: ParamDefault::Str("llc"), unit: "", range: ParamRange::ANY, from: "Cohet Fig. 15: LLC hit", description: "Where the loads hit: the host LLC or host memory (each a CXL.cache request and a line of data over the link)." },
        ParamSpec { name: "requests", kind: ParamKind::Int, default: ParamDefault::Int(16384), unit: "requests", range: ParamRange::between(1.0, 1_048_576.0), from: "assumed: 1 MiB of loads, long enough to run entirely beside the DMA stream", description: "LSU loads, all allowed in flight." },
        ParamSpec { name: "dma", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "assumed", description: "Whether the DMA engine streams beside the loads (false: the LSU alone on the link)." },
        ParamSpec { name: "dma_bytes", kind: ParamKind::Int, default: ParamDefault::Int(16384), unit: "bytes", range: ParamRange::between(64.0, 1_048_576.0), from: "assumed: 16 KiB descriptors, near the engine's peak (Cohet Fig. 16)", description: "Bytes per DMA descriptor." },
        ParamSpec { name: "dma_messages", kind: ParamKind::Int, default: ParamDefault::Int(256), unit: "descriptors", range: ParamRange::between(1.0, 65_536.0), from: "assumed: 4 MiB in all, outlasting the loads", description: "DMA descriptors behind one doorbell." },
        COMPLETION,
        ParamSpec { name: "io_weight", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "flits", range: ParamRange::between(0.0, 1024.0), from: "the platform's flexbus", description: "The arbiter's CXL.io weight (0: the platform's; x when it sweeps io_weight)." },
        ParamSpec { name: "cache_weight", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "flits", range: ParamRange::between(0.0, 1024.0), from: "the platform's flexbus", description: "The arbiter's CXL.cache weight (0: the platform's; x when it sweeps cache_weight)." },
        ParamSpec { name: "lanes", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "lanes", range: ParamRange::one_of(&[0, 1, 2, 4, 8, 16]), from: "the platform's flexbus", description: "The link width (0: the platform's; x when it sweeps lanes)." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "lsu_bandwidth_gbps", unit: "GB/s", description: "64 B per load completed in the window over the window: from the DMA's first completed descriptor (or the first load without DMA) to the end of whichever of the loads and the DMA ends first." },
        MetricSpec { name: "latency_ns", unit: "ns", description: "Median issue-to-use latency of the loads completed in the window (queueing behind the LSU's own backlog included)." },
        MetricSpec { name: "dma_bandwidth_gbps", unit: "GB/s", description: "Bytes of DMA descriptors completed in the window over the window (0 without DMA)." },
    ],
    run: mix,
};

fn mix(point: &Point<'_>) -> Result<PointResult, RunError> {
    let params = point.params;
    let system = params.str("system");
    let bus = flexbus_instance(point.platform, system)?;
    let mut overrides: Vec<(String, ParamValue)> = Vec::new();
    let mut set = |name: &str, v: u64| {
        if v > 0 {
            overrides.push((format!("{bus}.{name}"), ParamValue::Int(v as i64)));
        }
    };
    let x = match point.x_name {
        "io_weight" | "cache_weight" | "lanes" => whole_number(point.x_name, point.x, 1.0)?,
        other => {
            return Err(werr(format!(
                "workload cxl_io_mix sweeps io_weight, cache_weight or lanes, not {other:?}"
            )))
        }
    };
    for name in ["io_weight", "cache_weight", "lanes"] {
        let v = if point.x_name == name {
            x
        } else {
            params.uint(name)
        };
        set(name, v);
    }
    let platform = point
        .platform
        .with_overrides(&overrides)
        .map_err(RunError::Config)?;
    let with_dma = params.bool("dma");
    let (dx, dn) = (params.uint("dma_bytes"), params.uint("dma_messages"));
    let (program, data) = if with_dma {
        (
            crate::dma_read_program(&platform, "cxl_io_mix", dn, dx, params)?,
            pattern(dn * dx, 1),
        )
    } else {
        (vec![], vec![])
    };
    let trace = trace_mode(point.trace);
    let mut s = attach(
        &platform,
        system,
        "cxl_io_mix",
        program,
        &data,
        point.seed,
        trace,
    )?;
    let device = role_agent(&s.built, "device", system)?;
    let home = role_agent(&s.built, "home", system)?;
    let n = params.uint("requests");
    let ops: Vec<(u64, &str)> = (0..n).map(|l| (l, "load")).collect();
    if params.str("tier") == "llc" {
        s.built.agent_mut(home).warm(0..n);
    }
    s.built
        .agent_mut(device)
        .set_program(&ops, n as usize)
        .map_err(werr)?;
    finish(&mut s, "cxl_io_mix")?;
    if with_dma && s.device_memory().data.read(0, data.len()) != data {
        return Err(werr(
            "cxl_io_mix: device memory does not hold the host buffer after the DMA",
        ));
    }
    let times = s.built.agent(device).program_times().to_vec();
    if let Some(i) = times.iter().position(|&(_, end)| end == 0) {
        return Err(RunError::Violation {
            message: format!("load {i} never completed (the run stopped with work open)"),
        });
    }
    let done = s.engine().done_times(H2C).to_vec();
    let first_issue = times.iter().map(|t| t.0).min().unwrap_or(0);
    let last_use = times.iter().map(|t| t.1).max().unwrap_or(0);
    // The window in which both stream: from the DMA's first completed
    // descriptor (its pipeline full) to whichever of the two ends first.
    let (start, stop) = match (with_dma, done.first(), done.last()) {
        (true, Some(&first), Some(&last)) => (first.max(first_issue), last.min(last_use)),
        _ => (first_issue, last_use),
    };
    if stop <= start {
        return Err(werr(format!(
            "cxl_io_mix: the loads and the DMA stream never ran together (window {} to {} ns): raise requests or dma_messages",
            ns(start),
            ns(stop)
        )));
    }
    let span_s = (stop - start) as f64 * 1e-12;
    let in_window: Vec<(Tick, Tick)> = times
        .iter()
        .copied()
        .filter(|t| t.1 > start && t.1 <= stop)
        .collect();
    let dma_bytes = done.iter().filter(|&&t| t > start && t <= stop).count() as f64 * dx as f64;
    let mut metrics = BTreeMap::new();
    metrics.insert(
        "lsu_bandwidth_gbps".to_string(),
        in_window.len() as f64 * LOAD_BYTES / span_s / 1e9,
    );
    let mut quartiles = BTreeMap::new();
    latency_quartiles(&in_window, &mut quartiles);
    metrics.insert("latency_ns".to_string(), quartiles["latency_ns"]);
    metrics.insert(
        "dma_bandwidth_gbps".to_string(),
        if with_dma {
            dma_bytes / span_s / 1e9
        } else {
            0.0
        },
    );
    Ok(sim_result(&s.built.sim, metrics, trace))
}
