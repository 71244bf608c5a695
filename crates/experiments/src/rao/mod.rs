//! `rao` — Cohet §V-A and §VI-D (Figs. 8, 9, 17): remote atomic operations
//! (RAO) from CircusTent's processing elements on remote servers, offloaded
//! to a PCIe-NIC or to a CXL-NIC; the throughput of each (million RAOs per
//! second) against the NIC's RAO PEs.
//!
//! * **The requests.** CircusTent's kernel of `pattern` (RAND, STRIDE1,
//!   STRIDEN, PTRCHASE, CENTRAL, SCATTER, GATHER, SG) with fetch-and-add or
//!   compare-and-swap, `remote_pes` PEs of `iters` iterations on a real
//!   `ARRAY` of `elems` words and its `IDX` (`ccsim_devices::circustent`),
//!   both initialised in host memory. Each remote PE sends its next atomic
//!   when the last one's response is back (`network_ns` each way), so
//!   dependent atomics (PTRCHASE, SCATTER, GATHER, SG) follow their
//!   predecessors' values; the NIC's RX buffer holds `rx_depth` requests
//!   (closed loop: as fast as the NIC takes them, or at most `rate_mops`).
//! * **PCIe-NIC** (`nic = "pcie"`, Fig. 8a): the platform's host memory,
//!   root complex and PCIe link (the calibrated `cohet-dma` path), and the
//!   NIC as bus master, its DMA engine setting up each transfer in its
//!   descriptor stage (the platform's calibrated `desc_cycles`, one
//!   transfer at a time: DMA's "per-transfer setup overhead", Cohet
//!   §II-A): per RAO a DMA read (MRd) of the word's 64 B line,
//!   the ALU, a posted DMA write (MWr) of the line and a zero-length read
//!   whose completion acknowledges the write; a later RAO on the same line
//!   waits for that acknowledgement (the RAW hazard of §V-A1). `pes` RAOs
//!   on different lines overlap.
//! * **CXL-NIC** (`nic = "cxl"`, Figs. 8b, 9): the platform's `[systems.cxl]`
//!   (host cores, the LLC home with its directory and DRAM, the device's
//!   DCOH with its 128 KiB 4-way HMC, the CXL link), every message through
//!   the verified cxl-cache table with the online checks on. `pes` RAO PEs
//!   on the DCOH (a `LineEngine`): each takes a request, acquires the line
//!   in the HMC exclusively (a hit, or RdOwn over CXL.cache), LOCKS it for
//!   its modify and write stages (a host snoop waits for the unlock), and
//!   leaves the result in the HMC until the host asks for it.
//! * **Correctness.** Every fetched value is checked against the
//!   sequential reference (CircusTent's `Memory::apply` in the NIC's
//!   commit order); after the run the host reads every line of both arrays
//!   back (CXL: a host core loads each one, snooping the HMC's dirty lines
//!   back; PCIe: host memory), and the arrays must equal the reference.
//!   Either failure is an error, never a number.
//! * **Throughput** = RAOs / (last response out − first request in).
//!
//! ```
//! use ccsim_kernel::component::{Params, ParamValue};
//! let p = ccsim_platform::Platform::load("cohet").unwrap();
//! let params = Params::new()
//!     .with("nic", ParamValue::Str("cxl".into()), "doc")
//!     .with("pattern", ParamValue::Str("CENTRAL".into()), "doc")
//!     .with("iters", ParamValue::Int(8), "doc");
//! let r = ccsim_experiments::run_point("rao", &p, "pes", 4.0, &params, 0, false).unwrap();
//! assert_eq!(r.metrics["raos"], 64.0 * 8.0);
//! assert!(r.metrics["throughput_mops"] > 0.0);
//! ```

use std::collections::BTreeMap;

use ccsim_devices::circustent::{Kind, Pattern, Workload};
use ccsim_devices::rao::{ArrayLayout, CxlRaoEngine, PcieRaoNic, RaoConfig, RaoFrontEnd, LINE};
use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Core;
use ccsim_pcie::link::{link_config, PcieLink};
use ccsim_pcie::memory::Memory as HostMemory;
use ccsim_pcie::msg::Msg;
use ccsim_pcie::rc::RootComplex;
use ccsim_platform::Platform;

use crate::program_run::{build_for_program, no_violation, role_agent, role_agents};
use crate::{
    cxl_lsu, ns, sim_result, system_params, trace_mode, werr, whole_number, MetricSpec,
    PointResult, RunError, WorkloadInfo, TIME_LIMIT,
};

/// Host address of `ARRAY[0]` (line-aligned; `IDX` follows on the next
/// page).
const ARRAY_BASE: u64 = 1 << 20;

/// The declaration of `rao`.
pub static RAO: WorkloadInfo = WorkloadInfo {
    name: "rao",
    description: "Cohet Figs. 8, 9 and 17: remote atomic operations (FAA or CAS) from CircusTent's PEs on remote servers, offloaded to a PCIe-NIC (DMA read, ALU, posted DMA write, zero-length read for the write's acknowledgement; a later RAO on the line waits for it) or to a CXL-NIC (RAO PEs on the DCOH that acquire the line in the HMC through the verified cxl-cache table, lock it for the read-modify-write and keep the result until the host snoops it). Every fetched value and the host's arrays afterwards are checked against CircusTent's sequential reference in the NIC's commit order. x is the NIC's PE count.",
    params: &[
        ParamSpec { name: "nic", kind: ParamKind::Enum(&["pcie", "cxl"]), default: ParamDefault::Str("cxl"), unit: "", range: ParamRange::ANY, from: "Cohet Fig. 8: (a) PCIe-NIC, (b) CXL-NIC", description: "pcie: the RAO as two DMA transfers over PCIe; cxl: RAO PEs on the DCOH and its HMC over CXL.cache." },
        ParamSpec { name: "pattern", kind: ParamKind::Enum(&Pattern::NAMES), default: ParamDefault::Str("RAND"), unit: "", range: ParamRange::ANY, from: "Cohet §VI-D: six CircusTent patterns", description: "The CircusTent access pattern." },
        ParamSpec { name: "op", kind: ParamKind::Enum(&["add", "cas"]), default: ParamDefault::Str("add"), unit: "", range: ParamRange::ANY, from: "Cohet §V-A1: CAS and FAA", description: "The atomic: fetch-and-add or compare-and-swap (CircusTent's ADD and CAS kernels)." },
        ParamSpec { name: "pes", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "PEs", range: ParamRange::between(1.0, 256.0), from: "assumed: 8 (Cohet §V-A2: \"multiple RAO PEs\", no count given)", description: "The NIC's RAO processing elements: RAOs in flight at once (x when it sweeps pes)." },
        ParamSpec { name: "remote_pes", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "PEs", range: ParamRange::between(1.0, 4096.0), from: "assumed: 64 remote threads, enough to keep 16 NIC PEs busy", description: "CircusTent PEs on the remote servers, each with one atomic outstanding." },
        ParamSpec { name: "iters", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "iterations", range: ParamRange::between(1.0, 1_000_000.0), from: "assumed: 2,048 iterations in all with 64 remote PEs (the full cohet-rao sweep in seconds)", description: "CircusTent iterations per remote PE." },
        ParamSpec { name: "elems", kind: ParamKind::Int, default: ParamDefault::Int(65536), unit: "words", range: ParamRange::between(2.0, 16_777_216.0), from: "assumed: 512 KiB of ARRAY, four times the 128 KiB HMC (Cohet Table II)", description: "Words (8 B) of CircusTent's ARRAY." },
        ParamSpec { name: "stride", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "words", range: ParamRange::between(1.0, 65536.0), from: "assumed: 8 words, one 64 B line per STRIDEN atomic", description: "STRIDEN's stride." },
        ParamSpec { name: "rx_depth", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "requests", range: ParamRange::between(1.0, 65536.0), from: "assumed: 64 entries", description: "The NIC's RX buffer; a full buffer holds requests in the network." },
        ParamSpec { name: "network_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: 0, the NIC alone is measured (a throughput figure)", description: "One-way network latency between a remote PE and the NIC." },
        ParamSpec { name: "rate_mops", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "MRAO/s", range: ParamRange::at_least(0.0), from: "assumed: closed loop", description: "Most requests per microsecond entering the RX buffer (0: as fast as the NIC takes them)." },
        ParamSpec { name: "nic_clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(400.0), unit: "MHz", range: ParamRange::between(1.0, 10_000.0), from: "Cohet §VI-A2: the CXL and PCIe device models at 400 MHz (1.5 GHz for the ASIC)", description: "The NIC's clock: its PE cycles, on the CXL-NIC the DCOH's and the CXL link's calibrated times rescaled from 400 MHz, on the PCIe-NIC its PCIe path's latencies alike." },
        ParamSpec { name: "parse_cycles", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cycles", range: ParamRange::between(0.0, 1000.0), from: "assumed: one cycle to parse a request", description: "A PE's parse of a request before its read (PCIe-NIC; on the CXL-NIC the DCOH's pipeline, access_ns, is the read stage)." },
        ParamSpec { name: "alu_cycles", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cycles", range: ParamRange::between(0.0, 1000.0), from: "assumed: one cycle of 64-bit add or compare", description: "The modify stage (the ALU operation)." },
        ParamSpec { name: "write_cycles", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cycles", range: ParamRange::between(0.0, 1000.0), from: "assumed: one cycle to write the word into the HMC line", description: "CXL-NIC: the write stage into the HMC (the line stays locked through modify and write)." },
        ParamSpec { name: "raw_hazard", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "Cohet §V-A1: each RAO must wait for an acknowledgment of the previous write", description: "PCIe-NIC: whether a RAO waits for the acknowledgement of the last write to its line (false: a broken NIC whose lost updates the checks report)." },
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("cxl"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.cxl]", description: "CXL-NIC: the platform's system section (cxl-cache agents, one playing `device`, a core to read the arrays back)." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "throughput_mops", unit: "MRAO/s", description: "RAOs per microsecond: RAOs / (last response out - first request in)." },
        MetricSpec { name: "latency_ns", unit: "ns", description: "Median time of a RAO at the NIC, from entering the RX buffer to its response leaving." },
        MetricSpec { name: "raos", unit: "RAOs", description: "RAOs completed (and checked)." },
    ],
    run,
};

fn run(point: &crate::Point<'_>) -> Result<PointResult, RunError> {
    let params = point.params;
    let pes = match point.x_name {
        "pes" => whole_number("pes", point.x, 1.0)?,
        other => return Err(werr(format!("workload rao sweeps pes, not {other:?}"))),
    };
    let pattern = Pattern::parse(params.str("pattern")).expect("an enum value");
    let kind = if params.str("op") == "cas" {
        Kind::Cas
    } else {
        Kind::Add
    };
    let workload = Workload::new(
        pattern,
        kind,
        params.uint("remote_pes"),
        params.uint("iters"),
        params.uint("elems"),
        params.uint("stride"),
        point.seed,
    )
    .map_err(werr)?;
    let clock = params.float("nic_clock_mhz");
    let cycle = |name: &str| (params.uint(name) as f64 * 1e6 / clock).round() as Tick;
    let rate = params.float("rate_mops");
    let cfg = RaoConfig {
        pes: pes as usize,
        rx_depth: params.uint("rx_depth") as usize,
        network: (params.float("network_ns") * 1000.0).round() as Tick,
        arrival_gap: if rate > 0.0 {
            (1e6 / rate).round() as Tick
        } else {
            0
        },
    };
    let layout = ArrayLayout::new(workload.initial(), ARRAY_BASE);
    let front = RaoFrontEnd::new(&workload, layout, cfg);
    let hold = cycle("alu_cycles") + cycle("write_cycles");
    if params.str("nic") == "pcie" {
        run_pcie(
            point,
            &workload,
            front,
            clock,
            cycle("parse_cycles"),
            cycle("alu_cycles"),
        )
    } else {
        run_cxl(point, &workload, front, clock, hold)
    }
}

/// The metrics of a finished run, once its checks passed.
fn metrics(front: &RaoFrontEnd) -> BTreeMap<String, f64> {
    let mut lat: Vec<f64> = front.times().iter().map(|&(a, b)| ns(b - a)).collect();
    lat.sort_by(f64::total_cmp);
    BTreeMap::from([
        (
            "throughput_mops".to_string(),
            front.throughput_per_s() / 1e6,
        ),
        (
            "latency_ns".to_string(),
            lat.get(lat.len() / 2).copied().unwrap_or(0.0),
        ),
        ("raos".to_string(), front.times().len() as f64),
    ])
}

/// The run's checks: every remote PE done, every fetched value the
/// reference's, and the arrays read back from the host equal to the
/// reference in the NIC's commit order.
fn check(
    nic: &str,
    workload: &Workload,
    front: &RaoFrontEnd,
    host: &ccsim_devices::circustent::Memory,
) -> Result<(), RunError> {
    let fail = |m: String| {
        Err(RunError::Violation {
            message: format!("rao on the {nic}-NIC: {m}"),
        })
    };
    if !front.done() {
        return fail("the run stopped with RAOs outstanding (a deadlock or a hang)".into());
    }
    if let Some(e) = front.errors().first() {
        return fail(format!(
            "a fetched value differs from the sequential reference: {e}"
        ));
    }
    let (_, count) = workload.run_round_robin();
    if front.commits().len() as u64 != count {
        return fail(format!(
            "{} RAOs committed, the kernels issue {count}",
            front.commits().len()
        ));
    }
    // Replaying the commit order on the initial arrays gives the reference
    // (and, for order-independent kernels, the round-robin result).
    let mut replay = workload.initial().clone();
    for (a, _) in front.commits() {
        replay.apply(a);
    }
    if &replay != front.reference() {
        return fail("the commit log does not replay to the reference".into());
    }
    if host != front.reference() {
        let k = host
            .array
            .iter()
            .zip(&front.reference().array)
            .position(|(a, b)| a != b);
        return fail(format!(
            "the host's arrays after the run differ from the reference (first ARRAY word: {k:?})"
        ));
    }
    Ok(())
}

fn run_pcie(
    point: &crate::Point<'_>,
    workload: &Workload,
    front: RaoFrontEnd,
    clock: f64,
    parse: Tick,
    alu: Tick,
) -> Result<PointResult, RunError> {
    let platform = &cxl_lsu::pcie_at_clock(point.platform, clock)?;
    let err = |m: String| werr(format!("platform {}: {m}", platform.name));
    let sp = system_params(platform, "rao")?;
    let layout = front.layout();
    let cfg = link_config(&sp.pcie_link).map_err(err)?;
    let core = Core::from_params(&sp.core, Vec::new()).map_err(err)?;
    let mut host = HostMemory::host(&sp.host_memory).map_err(err)?;
    for a in layout.lines() {
        host.data
            .write(a, &layout.line_bytes(workload.initial(), a));
    }
    let rc = RootComplex::from_params(&sp.root_complex, &cfg).map_err(err)?;
    let link = PcieLink::from_params(&sp.pcie_link).map_err(err)?;
    // The DMA engine's descriptor stage sets up every transfer: the
    // calibrated cycles of the platform's engine, at the NIC's clock.
    let desc_cycles = sp.xdma_engine.uint("desc_cycles") as f64;
    let setup = (desc_cycles * 1e6 / clock).round() as Tick;
    let mut nic = PcieRaoNic::new(front, parse, alu, setup);
    if !point.params.bool("raw_hazard") {
        nic = nic.without_raw_hazard();
    }
    let mut b: SystemBuilder<Msg> = SystemBuilder::new("system", point.seed);
    b.trace(trace_mode(point.trace));
    let c = b.add("core", core);
    let hm = b.add("host_memory", host);
    let r = b.add("root_complex", rc);
    let l = b.add("pcie", link);
    let n = b.add("nic", nic);
    let wire = || LinkParams::symmetric(0, 0.0);
    b.connect(c, "mem", hm, "cpu", wire());
    b.connect(c, "io", r, "cpu", wire());
    b.connect(r, "mem", hm, "io", wire());
    b.connect(r, "pcie", l, "up", wire());
    b.connect(l, "down", n, "pcie", wire());
    let mut sim = b.build().map_err(|e| err(e.to_string()))?;
    sim.run_until(TIME_LIMIT);
    let nic = sim.component::<PcieRaoNic>(n).expect("the NIC");
    let memory = sim.component::<HostMemory>(hm).expect("host memory");
    let back = layout.read_back(|a| memory.data.read(a, LINE as usize));
    check("pcie", workload, nic.front(), &back)?;
    let m = metrics(nic.front());
    Ok(sim_result(&sim, m, trace_mode(point.trace)))
}

fn run_cxl(
    point: &crate::Point<'_>,
    workload: &Workload,
    front: RaoFrontEnd,
    clock: f64,
    hold: Tick,
) -> Result<PointResult, RunError> {
    let system = point.params.str("system");
    let platform: Platform = cxl_lsu::at_clock(point.platform, &[system], clock)?;
    let mut s = build_for_program(&platform, system, point)?;
    let device = role_agent(&s, "device", system)?;
    let home = role_agent(&s, "home", system)?;
    let core = role_agents(&s, "core", system)?[0];
    let layout = front.layout();
    // The host initialised the arrays: they are in its memory.
    let lines = layout.lines();
    for &a in &lines {
        let mut value = [0u8; ccsim_coherence::LINE_BYTES];
        value[..LINE as usize].copy_from_slice(&layout.line_bytes(workload.initial(), a));
        s.agent_mut(home)
            .preload_memory(a / LINE, value)
            .map_err(werr)?;
        s.checker.borrow_mut().preload(a / LINE, &value);
    }
    s.agent_mut(device)
        .set_engine(Box::new(CxlRaoEngine::new(front, hold)))
        .map_err(werr)?;
    s.sim.run_until(TIME_LIMIT);
    no_violation(&s)?;
    // The host asks for the arrays: a core loads every line, which snoops
    // the HMC's dirty lines back.
    let loads: Vec<(u64, &str)> = lines.iter().map(|&a| (a / LINE, "load")).collect();
    s.agent_mut(core).set_program(&loads, 16).map_err(werr)?;
    let now = s.sim.now();
    let core_id = s.agents[core];
    s.sim.wake(
        core_id,
        now,
        ccsim_coherence::agents::TableAgent::PROGRAM_WAKE,
    );
    s.sim.run_until(TIME_LIMIT);
    no_violation(&s)?;
    let reader = s.agent(core);
    let mut missing = None;
    let back = layout.read_back(|a| match reader.copy_of(a / LINE) {
        Some(l) => l[..LINE as usize].to_vec(),
        None => {
            missing.get_or_insert(a);
            vec![0; LINE as usize]
        }
    });
    if let Some(a) = missing {
        return Err(RunError::Violation {
            message: format!(
                "rao on the cxl-NIC: the host core holds no copy of line {a:#x} after loading it"
            ),
        });
    }
    let engine = s
        .agent(device)
        .engine()
        .and_then(|e| e.as_any().downcast_ref::<CxlRaoEngine>())
        .expect("the RAO engine");
    check("cxl", workload, engine.front(), &back)?;
    let m = metrics(engine.front());
    Ok(sim_result(&s.sim, m, trace_mode(point.trace)))
}
