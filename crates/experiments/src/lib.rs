//! # ccsim-experiments: workloads behind the experiment points
//!
//! An experiment file (`experiments/*.toml`) names, per series, a platform, a
//! workload and a metric. [`run_point`] runs **one point**: it builds the
//! workload's system from the platform's components (by type), runs the
//! core's program to the end, checks that the bytes moved are the bytes
//! expected, and returns the metrics, every statistic, and a trace hash.
//!
//! ```text
//!  Platform (cohet.toml) ─┐
//!  workload + params ─────┼─► run_point ─► PcieSystem { core program, RC, link, engine, memories }
//!  x (message_bytes) ─────┘        │ run, verify bytes
//!                                  └─► PointResult { metrics, stats, trace_hash, trace_json? }
//! ```
//!
//! Workloads ([`workloads`]):
//!
//! * `dma_read` — host-to-device DMA read of x bytes. `mode = "latency"`:
//!   one driver call end to end (system call to completion seen by the
//!   core). `mode = "bandwidth"`: many x-byte descriptors submitted with one
//!   doorbell; bandwidth is the engine's steady-state completion rate.
//!   With `system = "cxl_io"` the engine's TLPs travel as CXL.io on the CXL
//!   link the DCOH uses ([`cxl_io`]).
//! * `cxl_io_mix` — the CXL device's LSU loads over CXL.cache while its DMA
//!   engine streams over CXL.io on the same link, against the arbiter's
//!   weights: see [`cxl_io`].
//! * `xdma_invoke` — the PIO paper's "write then read" invocation over XDMA:
//!   an H2C transfer of x bytes, then a C2H transfer of x bytes back.
//! * `pio_invoke` — the same invocation by programmed I/O: write-combined
//!   MMIO stores of x bytes to BAR1, a barrier, uncached MMIO loads of x
//!   bytes back.
//! * `coherent_read` — CCKit Table 2 on the coherent Enzian platform
//!   (x = accesses): see [`coherent`].
//! * `clean_invalidate` — CCKit Table 3: the FPGA application
//!   clean-invalidates x MiB the CPU holds Shared (x = region_mib): see
//!   [`clean_invalidate`].
//! * `shared_table` — CCKit Fig. 7: a CPU scanner against a contending
//!   thread on the table's home using the DC's locking clean-invalidate
//!   (x = contended_fraction): see [`cckit_apps::shared_table`].
//! * `coherent_stream` — CCKit Fig. 6: read and write throughput over
//!   1 GiB (x = streamed_mib): see [`stream`].
//! * `coherent_invoke` — the two-line invocation over ECI (PIO Fig. 6,
//!   CCKit Fig. 10; x = percentile): see [`invocation`].
//! * `nic_loopback` — PIO §6.3: x-byte frames through a 100 Gb/s NIC on the
//!   FPGA in loopback, by PCIe DMA, PCIe PIO or ECI PIO; RX/TX latency
//!   percentiles: see [`nic`].
//! * `cohort_accel` — Cohort Figs. 8–11: x words through SHA-256 or
//!   AES-128 by the Cohort engine on SPSC queues, MMIO or coherent DMA on
//!   the OpenPiton SoC; `cohort_chain` — AES → SHA through two engines
//!   chained by a queue or through software: see [`cohort`].
//! * `random_test` — the random tester on a system declared as data (any
//!   protocol spec, x = ops per agent), online invariant checks and a
//!   sequential reference: see [`random_test`].
//! * `rao` — Cohet Fig. 17: remote atomics from CircusTent's PEs on a
//!   PCIe-NIC (DMA read, ALU, posted write, zero-length read) or a CXL-NIC
//!   (RAO PEs locking lines in the DCOH's HMC); see [`rao`].
//! * `ccix_ctg` — the CCIX traffic generator (x = request_bytes): reads
//!   or writes through the U280's System Cache on the N1-SDP, each AXI
//!   burst translated first (ATC, ATS, SMMU walk): see [`ccix_ctg`].
//! * `ccix_coherency` — the CTG and 1-3 N1 cores modify random lines of
//!   one shared buffer of x KiB (CCIX Exp. 4); `ccix_atomic` — CCIX
//!   atomics from the device (multi-step AXI4-MM) or the host (x =
//!   operand_bytes): see [`ccix_shared`].
//! * `ccix_locktable` — neoDBMS's shared lock table (CCIX §V) with x hash
//!   buckets, host and U280 lockers, grants checked against a sequential
//!   reference: see [`ccix_locktable`].
//! * `ccix_vc_share` — CCIX reads on VC1 beside PCIe-DMA and ATS on VC0
//!   of one shared PCIe link (x = vc1_credits, VC1's posted header
//!   credits): see [`ccix_vc`].
//! * `pio_bloom` — PIO §6.5, Fig. 12: Bloom-filter hashing of x bytes on
//!   the CPU or offloaded by ECI PIO, PCIe PIO or XDMA: see [`pio_apps`].
//! * `pio_timely` — PIO §6.4, Fig. 11, Table 2: a batch of x bytes through
//!   a 31-filter Timely-shaped graph on the CPU or offloaded by PCIe DMA,
//!   PCIe PIO or ECI PIO: see [`pio_apps`].
//! * `tapasco_dma` — a register-programmed (TaPaSCo-style) DMA read or
//!   write of x bytes with physical addresses.
//! * `pcie_bench` — pcie-bench's device-issued DMA latency and bandwidth
//!   benchmarks (LAT_RD, LAT_WRRD, BW_RD, BW_WR, BW_RDWR) of x bytes,
//!   timed on the device: see [`pcie_bench`].
//! * `link_pingpong` — x bytes of MWr TLPs through the platform's PCIe link
//!   to a mirror and back (exact link latency and bandwidth).
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::component::Params;
//! let enzian = Platform::load("enzian").unwrap();
//! let r = ccsim_experiments::run_point("pio_invoke", &enzian, "message_bytes", 64.0,
//!                                      &Params::new(), 4, false).unwrap();
//! // 64 B: one write-combined MWr, then four 16-byte non-posted reads.
//! assert_eq!(r.stats["system.core.mmio_read_msgs"], 4.0);
//! assert!(r.metrics["latency_ns"] > r.metrics["read_ns"]);
//! let again = ccsim_experiments::run_point("pio_invoke", &enzian, "message_bytes", 64.0,
//!                                          &Params::new(), 4, false).unwrap();
//! assert_eq!(r.trace_hash, again.trace_hash);
//! ```

pub mod bench;
pub mod cc_invocation;
pub mod ccix_ctg;
pub mod ccix_lock_slots;
pub mod ccix_locktable;
pub mod ccix_shared;
pub mod ccix_vc;
pub mod cckit_apps;
pub mod clean_invalidate;
pub mod coherent;
pub mod cohort;
pub mod cxl_expander;
pub mod cxl_io;
pub mod cxl_lsu;
pub mod cxl_type2_bias;
pub mod invocation;
pub mod mutation;
pub mod nic;
pub mod pcie_bench;
pub mod pio_apps;
mod program_run;
pub mod random_test;
pub mod rao;
pub mod rpc;
pub mod stream;

use std::collections::BTreeMap;
use std::fmt;

use ccsim_coherence::envelope::Msg;
use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::dma::{XdmaEngine, C2H, H2C};
use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
use ccsim_pcie::link::{link_config, PcieLink};
use ccsim_pcie::ping::{TlpEcho, TlpPinger};
use ccsim_pcie::system::{PcieSystem, PcieSystemParams};
use ccsim_platform::{ConfigError, Platform, WorkloadCheck, WorkloadDecl};

/// A metric a workload reports for every point.
#[derive(Debug)]
pub struct MetricSpec {
    /// Name used in experiment files (`latency_ns`).
    pub name: &'static str,
    /// Unit (`ns`, `GB/s`).
    pub unit: &'static str,
    /// What it measures.
    pub description: &'static str,
}

/// The declaration of a workload.
#[derive(Debug)]
pub struct WorkloadInfo {
    /// Name used in experiment files.
    pub name: &'static str,
    /// What it runs.
    pub description: &'static str,
    /// Parameters an experiment series may set.
    pub params: &'static [ParamSpec],
    /// Rules on the parameters their ranges cannot say, checked when an
    /// experiment is loaded (and by [`run_point`]).
    pub check: Option<WorkloadCheck>,
    /// Metrics of each point.
    pub metrics: &'static [MetricSpec],
    /// Runs one point (parameters already completed with their defaults).
    pub run: RunFn,
}

/// How a workload runs one point (its parameters already completed with
/// their defaults). Each workload checks that it knows the x name it is
/// swept over (`sweeps`).
pub type RunFn = fn(&Point<'_>) -> Result<PointResult, RunError>;

/// One point to run: the platform, the x axis and its value, the workload's
/// parameters (with their defaults filled in), the seed, and whether to keep
/// a full trace.
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    /// The platform the workload builds its system from.
    pub platform: &'a Platform,
    /// The experiment's x axis (each workload checks it knows it).
    pub x_name: &'a str,
    /// The value of x.
    pub x: f64,
    /// The workload's parameters.
    pub params: &'a Params,
    /// Seed of every random stream.
    pub seed: u64,
    /// Keep the full trace (else only its hash).
    pub trace: bool,
}

/// The trace a point keeps: everything when asked for, else only the hash
/// that determinism tests compare.
pub(crate) fn trace_mode(full: bool) -> TraceMode {
    if full {
        TraceMode::Full
    } else {
        TraceMode::Hash
    }
}

/// The outcome of one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointResult {
    /// Metric name → value.
    pub metrics: BTreeMap<String, f64>,
    /// Every statistic: dotted path → value (histograms as `path.p50` etc.).
    pub stats: BTreeMap<String, f64>,
    /// Chrome/Perfetto trace JSON when requested.
    pub trace_json: Option<String>,
    /// When requested: the messages and the components' notes (state
    /// transitions, operations) as data
    /// ([`ccsim_kernel::sim::Simulation::trace_events_json`]), which
    /// ccsim's Perfetto writer reads.
    pub trace_events: Option<String>,
    /// SHA-256 (hex) of the message log: equal for equal runs.
    pub trace_hash: String,
}

/// Why a point could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// The platform or a parameter is unusable.
    Config(ConfigError),
    /// The workload failed (bad x, missing component, wrong data, hang).
    Workload {
        /// One line saying what went wrong.
        message: String,
    },
    /// A protocol check the workload runs found a violation (an invariant,
    /// a deadlock, a read or final line the sequential reference disagrees
    /// with): the run worked, the protocol did not.
    Violation {
        /// One line naming the line, the agents and their states.
        message: String,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Config(e) => write!(f, "{e}"),
            RunError::Workload { message } | RunError::Violation { message } => {
                write!(f, "{message}")
            }
        }
    }
}

impl std::error::Error for RunError {}

/// `Ok` if the experiment sweeps `x_name`, the x axis `workload` takes
/// (`want`).
pub(crate) fn sweeps(workload: &str, want: &str, x_name: &str) -> Result<(), RunError> {
    if x_name == want {
        Ok(())
    } else {
        Err(werr(format!(
            "workload {workload} sweeps {want}, not {x_name:?}"
        )))
    }
}

pub(crate) fn werr(message: impl Into<String>) -> RunError {
    RunError::Workload {
        message: message.into(),
    }
}

/// An x that counts something (requests, threads, operations): a whole
/// number from `min` up to 10^9 (beyond, a run would not finish).
pub(crate) fn whole_number(name: &str, x: f64, min: f64) -> Result<u64, RunError> {
    if x >= min && x.fract() == 0.0 && x <= 1e9 {
        Ok(x as u64)
    } else {
        Err(werr(format!(
            "{name} = {x}: must be a whole number, at least {min}"
        )))
    }
}

pub(crate) const COMPLETION: ParamSpec = ParamSpec {
    name: "completion",
    kind: ParamKind::Enum(&["poll", "interrupt"]),
    default: ParamDefault::Str("poll"),
    unit: "",
    range: ParamRange::ANY,
    from: "assumed: polling on the status write-back, the driver's low-latency mode",
    description: "How the driver learns a DMA finished: spin on the status write-back, or sleep until the MSI-X interrupt.",
};

static DMA_READ: WorkloadInfo = WorkloadInfo {
    name: "dma_read",
    description: "Host-to-device DMA read of x bytes (x = message_bytes) through the driver, descriptor fetch and H2C channel; latency of one call or steady-state bandwidth of many.",
    params: &[
        ParamSpec { name: "mode", kind: ParamKind::Enum(&["latency", "bandwidth"]), default: ParamDefault::Str("latency"), unit: "", range: ParamRange::ANY, from: "Cohet Fig. 14: the latency of one transfer", description: "latency: one transfer end to end; bandwidth: many back-to-back transfers with the descriptor queue kept full." },
        COMPLETION,
        ParamSpec { name: "messages", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "messages", range: ParamRange::at_least(0.0), from: "assumed: 2 MiB worth of transfers, 16 to 512", description: "Transfers in bandwidth mode (0: enough for 2 MiB, between 16 and 512)." },
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str(""), unit: "", range: ParamRange::ANY, from: "Cohet §VI-A1: the PCIe-FPGA (its own PCIe link) by default", description: "Empty: the PCIe-FPGA, the engine behind its own pcie_link. Otherwise the platform's system whose cxl_flexbus carries the engine's TLPs as CXL.io beside the DCOH's CXL.cache (cohet: cxl_io)." },
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Driver call to completion seen by the core (the whole batch in bandwidth mode)." },
        MetricSpec { name: "bandwidth_gbps", unit: "GB/s", description: "Bandwidth mode: steady-state rate of descriptor completions at the engine times x; latency mode: x / latency." },
    ],
    check: None,
    run: |p| bytes_point(dma_read, "dma_read", p),
};

static TAPASCO_DMA: WorkloadInfo = WorkloadInfo {
    name: "tapasco_dma",
    description: "A TaPaSCo-style register-programmed DMA of x bytes (x = message_bytes) with physical addresses (CCIX §IV Exp. 1's PCIe-DMA baseline): the API writes source, destination and length to the engine's registers and rings it, the engine reads host memory into the card (read) or writes card memory to the host (write), and the API waits for the completion. Latency of one call.",
    params: &[
        ParamSpec { name: "direction", kind: ParamKind::Enum(&["read", "write"]), default: ParamDefault::Str("read"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 1: reads from and writes to the host", description: "read: the device reads host memory (H2C); write: the device writes host memory (C2H)." },
        COMPLETION,
        ParamSpec { name: "pcie_link", kind: ParamKind::Str, default: ParamDefault::Str(""), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 1: the baseline on each board's own attachment (Table I)", description: "The platform's pcie_link component the engine sits behind (n1sdp: u280_pcie or vck5000_pcie); empty: the platform's only one." },
        ParamSpec { name: "xdma_engine", kind: ParamKind::Str, default: ParamDefault::Str(""), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 1: the baseline on each board", description: "The platform's xdma_engine component (n1sdp: u280_dma or vck5000_dma); empty: the platform's only one." },
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "API call to the completion seen by the core." },
        MetricSpec { name: "throughput_gbps", unit: "GB/s", description: "x bytes over the latency of one call (GB = 10^9 B)." },
    ],
    check: None,
    run: |p| bytes_point(tapasco_dma, "tapasco_dma", p),
};

static XDMA_INVOKE: WorkloadInfo = WorkloadInfo {
    name: "xdma_invoke",
    description: "PIO paper 'write then read' invocation over XDMA: an H2C transfer of x bytes into device memory, then a C2H transfer of x bytes back, each a driver call.",
    params: &[COMPLETION],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Both driver calls, end to end." },
        MetricSpec { name: "h2c_ns", unit: "ns", description: "The host-to-card call." },
        MetricSpec { name: "c2h_ns", unit: "ns", description: "The card-to-host call." },
    ],
    check: None,
    run: |p| bytes_point(xdma_invoke, "xdma_invoke", p),
};

static PIO_INVOKE: WorkloadInfo = WorkloadInfo {
    name: "pio_invoke",
    description: "PIO paper 'write then read' invocation by programmed I/O: x bytes of (write-combined) MMIO stores to device memory, a barrier, then x bytes of uncached MMIO loads back.",
    params: &[ParamSpec { name: "write_combining", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "PIO paper §4: BAR1 mapped write-combining", description: "Whether BAR1 is mapped write-combining (else every store is its own MWr)." }],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Write, barrier and read, end to end." },
        MetricSpec { name: "write_ns", unit: "ns", description: "Issuing the stores and the barrier." },
        MetricSpec { name: "read_ns", unit: "ns", description: "The uncached loads." },
    ],
    check: None,
    run: |p| bytes_point(pio_invoke, "pio_invoke", p),
};

static LINK_PINGPONG: WorkloadInfo = WorkloadInfo {
    name: "link_pingpong",
    description: "x bytes of MWr TLPs through the platform's pcie_link to a mirror and back.",
    params: &[],
    metrics: &[
        MetricSpec {
            name: "rtt_ns",
            unit: "ns",
            description: "Round trip of the first TLP.",
        },
        MetricSpec {
            name: "burst_ns",
            unit: "ns",
            description: "Until the last TLP's echo is back.",
        },
        MetricSpec {
            name: "wire_bytes",
            unit: "bytes",
            description: "TLP bytes on the downstream wire.",
        },
    ],
    check: None,
    run: |p| bytes_point(link_pingpong, "link_pingpong", p),
};

/// Every workload, sorted by name.
pub fn workloads() -> Vec<&'static WorkloadInfo> {
    vec![
        &cc_invocation::CC_INVOKE,
        &ccix_shared::CCIX_ATOMIC,
        &ccix_shared::CCIX_COHERENCY,
        &ccix_ctg::CCIX_CTG,
        &ccix_locktable::CCIX_LOCKTABLE,
        &ccix_vc::CCIX_VC_SHARE,
        &clean_invalidate::CLEAN_INVALIDATE,
        &invocation::COHERENT_INVOKE,
        &coherent::COHERENT_READ,
        &stream::COHERENT_STREAM,
        &cohort::COHORT_ACCEL,
        &cohort::COHORT_CHAIN,
        &cxl_expander::CXL_EXPANDER,
        &cxl_io::CXL_IO_MIX,
        &cxl_lsu::CXL_LSU,
        &cxl_type2_bias::CXL_TYPE2_BIAS,
        &DMA_READ,
        &LINK_PINGPONG,
        &cckit_apps::materialized_view::MATERIALIZED_VIEW,
        &nic::NIC_LOOPBACK,
        &pcie_bench::PCIE_BENCH,
        &pio_apps::bloom::PIO_BLOOM,
        &PIO_INVOKE,
        &pio_apps::timely::PIO_TIMELY,
        &cckit_apps::prefetcher::PREFETCH_READ,
        &random_test::RANDOM_TEST,
        &rao::RAO,
        &rpc::RPC_OFFLOAD,
        &cckit_apps::shared_table::SHARED_TABLE,
        &TAPASCO_DMA,
        &XDMA_INVOKE,
    ]
}

/// The workloads as the config crate's validator wants them.
pub fn workload_decls() -> Vec<WorkloadDecl> {
    workloads()
        .into_iter()
        .map(|w| WorkloadDecl {
            name: w.name,
            params: w.params,
            check: w.check,
            metrics: w.metrics.iter().map(|m| m.name).collect(),
        })
        .collect()
}

/// Host address of the descriptor ring (above 4 GiB: 4 DW headers).
pub(crate) const RING: u64 = 0x1_0000_0000;
/// Host address of the status write-back.
pub(crate) const WRITEBACK: u64 = 0x1_0010_0000;
/// Host buffers: request and response.
pub(crate) const REQ_BUF: u64 = 0x2_0000_0000;
const RSP_BUF: u64 = 0x3_0000_0000;
/// Largest x accepted (bytes).
const MAX_BYTES: f64 = (64u64 << 20) as f64;
/// Simulated-time limit of one point: a run that has not finished by then is
/// a hang (e.g. a driver polling for a completion that never comes).
pub(crate) const TIME_LIMIT: Tick = SEC;

/// Runs one point of `workload` on `platform` at `x_name = x`.
pub fn run_point(
    workload: &str,
    platform: &Platform,
    x_name: &str,
    x: f64,
    params: &Params,
    seed: u64,
    trace: bool,
) -> Result<PointResult, RunError> {
    let point = Point {
        platform,
        x_name,
        x,
        params,
        seed,
        trace,
    };
    run(workload, &point)
}

/// Runs workload `workload` at `point` (its parameters are completed with
/// the workload's defaults and checked first).
pub fn run(workload: &str, point: &Point<'_>) -> Result<PointResult, RunError> {
    let Some(info) = workloads().into_iter().find(|w| w.name == workload) else {
        let names: Vec<&str> = workloads().iter().map(|w| w.name).collect();
        return Err(werr(format!(
            "unknown workload {workload:?}; workloads are: {}",
            names.join(", ")
        )));
    };
    let params = with_defaults(info, point.params)?;
    (info.run)(&Point {
        params: &params,
        ..*point
    })
}

/// A PCIe workload's point: x must be `message_bytes`, a whole number of
/// bytes in range.
fn bytes_point(
    run: fn(&Platform, u64, &Params, u64, TraceMode) -> Result<PointResult, RunError>,
    workload: &str,
    p: &Point<'_>,
) -> Result<PointResult, RunError> {
    let (platform, params) = (p.platform, p.params);
    let (x_name, x, seed, trace) = (p.x_name, p.x, p.seed, p.trace);
    sweeps(workload, "message_bytes", x_name)?;
    if !((1.0..=MAX_BYTES).contains(&x) && x.fract() == 0.0) {
        return Err(werr(format!(
            "message_bytes = {x}: must be a whole number of bytes from 1 to {MAX_BYTES}"
        )));
    }
    run(platform, x as u64, params, seed, trace_mode(trace))
}

/// `params` completed with the workload's defaults and checked against its
/// declaration (ranges, then the check hook). An experiment's series
/// parameters passed this check when the experiment was loaded; this guards
/// hand-built ones.
pub(crate) fn with_defaults(info: &WorkloadInfo, params: &Params) -> Result<Params, RunError> {
    let mut p = params.clone();
    for (name, _) in params.iter() {
        if !info.params.iter().any(|s| s.name == name) {
            return Err(werr(format!(
                "workload {} has no parameter {name:?}",
                info.name
            )));
        }
    }
    for s in info.params {
        if p.get(s.name).is_none() {
            if let Some(v) = s.default.value() {
                p.set(s.name, v, "default");
            }
        }
    }
    ccsim_kernel::component::check_ranges(info.params, &p)
        .and_then(|()| info.check.map_or(Ok(()), |check| check(&p)))
        .map_err(|e| werr(format!("{}.{e}", info.name)))?;
    Ok(p)
}

/// The parameters of the platform's only component of `type_name`.
pub(crate) fn component<'a>(
    platform: &'a Platform,
    type_name: &str,
    workload: &str,
) -> Result<&'a Params, RunError> {
    let mut found = platform
        .components
        .iter()
        .filter(|(_, c)| c.type_name == type_name);
    match (found.next(), found.next()) {
        (Some((_, c)), None) => Ok(&c.params),
        (None, _) => Err(werr(format!(
            "platform {} has no component of type `{type_name}`, which workload {workload} needs",
            platform.name
        ))),
        (Some((a, _)), Some((b, _))) => Err(werr(format!(
            "platform {} has several `{type_name}` components ({a}, {b}); workload {workload} needs exactly one",
            platform.name
        ))),
    }
}

pub(crate) fn system_params(
    platform: &Platform,
    workload: &str,
) -> Result<PcieSystemParams, RunError> {
    system_params_on(platform, workload, &EngineChoice::default())
}

/// Which `pcie_link` and `xdma_engine` a PCIe workload runs on, by
/// instance name; an empty name takes the platform's only component of
/// that type (a platform with two boards names them).
#[derive(Clone, Debug, Default)]
pub(crate) struct EngineChoice {
    pub pcie_link: String,
    pub xdma_engine: String,
}

impl EngineChoice {
    /// The choice a workload's `pcie_link` and `xdma_engine` parameters make.
    pub(crate) fn of(params: &Params) -> Self {
        let name = |key: &str| params.get(key).map_or("", |_| params.str(key)).to_string();
        EngineChoice {
            pcie_link: name("pcie_link"),
            xdma_engine: name("xdma_engine"),
        }
    }
}

/// The PCIe system's components, with the link and engine `choice` names.
pub(crate) fn system_params_on(
    platform: &Platform,
    workload: &str,
    choice: &EngineChoice,
) -> Result<PcieSystemParams, RunError> {
    Ok(PcieSystemParams {
        core: component(platform, "core", workload)?.clone(),
        host_memory: component(platform, "host_memory", workload)?.clone(),
        root_complex: component(platform, "root_complex", workload)?.clone(),
        pcie_link: named_component(platform, "pcie_link", &choice.pcie_link, workload)?.clone(),
        xdma_engine: named_component(platform, "xdma_engine", &choice.xdma_engine, workload)?
            .clone(),
        device_memory: component(platform, "device_memory", workload)?.clone(),
    })
}

/// The component instance `name` of type `type_name` (empty `name`: the
/// platform's only component of that type, as [`component`]).
pub(crate) fn named_component<'a>(
    platform: &'a Platform,
    type_name: &str,
    name: &str,
    workload: &str,
) -> Result<&'a Params, RunError> {
    if name.is_empty() {
        return component(platform, type_name, workload);
    }
    match platform.components.get(name) {
        Some(c) if c.type_name == type_name => Ok(&c.params),
        Some(c) => Err(werr(format!(
            "platform {}: component `{name}` is a `{}`, but workload {workload} needs a `{type_name}` there",
            platform.name, c.type_name
        ))),
        None => Err(werr(format!(
            "platform {} has no component `{name}` (workload {workload} asks for it as its `{type_name}`)",
            platform.name
        ))),
    }
}

pub(crate) fn model_err(platform: &Platform) -> impl Fn(String) -> RunError + '_ {
    move |m| werr(format!("platform {}: {m}", platform.name))
}

/// A deterministic test pattern (so a misplaced byte shows).
pub(crate) fn pattern(len: u64, salt: u64) -> Vec<u8> {
    (0..len)
        .map(|i| ((i.wrapping_mul(131) + salt * 17 + (i >> 8)) % 251) as u8)
        .collect()
}

/// Runs `sys` to its end. A run that did not finish (the driver's
/// `timeout_us` expired, the event queue drained, or the time limit passed
/// with the program still running) is an error whose first line says what
/// is stuck and whose next lines are the system's report
/// ([`PcieSystem::stuck_report`]): never a silent number.
pub(crate) fn finish(sys: &mut PcieSystem, workload: &str) -> Result<(), RunError> {
    let outcome = sys.sim.run_until(TIME_LIMIT);
    let core = sys.core();
    let what = match (&core.timed_out, outcome) {
        (Some(t), _) => t.clone(),
        (None, _) if core.finished() => return Ok(()),
        (None, RunOutcome::Drained) => {
            "no event left but the core's program did not finish (a deadlock)".to_string()
        }
        (None, _) => format!(
            "the core's program did not finish within {} s of simulated time (a hang)",
            TIME_LIMIT / SEC
        ),
    };
    let mut report = vec![format!("{workload}: {what}")];
    report.extend(sys.stuck_report());
    Err(werr(report.join("\n  ")))
}

pub(crate) fn result(
    sys: &PcieSystem,
    metrics: BTreeMap<String, f64>,
    trace: TraceMode,
) -> PointResult {
    let mut r = sim_result(&sys.sim, metrics, trace);
    // Only with faults configured: a fault-free point's statistics stay as
    // they were.
    r.stats.extend(sys.fault_stats());
    // Likewise only with the CPU cache state, DRAM refresh or a timer.
    r.stats
        .extend(sys.host_memory().cache_stats("system.host_memory"));
    r.stats.extend(sys.core().tick_stats("system.core"));
    r
}

/// A point's result from its finished simulation: the metrics, every
/// statistic plus `sim.events` and `sim.end_ps`, the trace hash, and the
/// trace itself when it was kept.
pub(crate) fn sim_result<M: Message>(
    sim: &Simulation<M>,
    metrics: BTreeMap<String, f64>,
    trace: TraceMode,
) -> PointResult {
    let mut stats = sim.stats().flatten();
    stats.insert("sim.events".to_string(), sim.events_processed() as f64);
    stats.insert("sim.end_ps".to_string(), sim.now() as f64);
    PointResult {
        metrics,
        stats,
        trace_json: if trace == TraceMode::Full {
            sim.trace_json()
        } else {
            None
        },
        trace_events: sim.trace_events_json(),
        trace_hash: sim.trace_hash().unwrap_or_default(),
    }
}

pub(crate) fn ns(t: Tick) -> f64 {
    t as f64 / 1000.0
}

pub(crate) fn completion_of(params: &Params) -> Completion {
    if params.str("completion") == "interrupt" {
        Completion::Interrupt
    } else {
        Completion::Poll
    }
}

pub(crate) fn driver_for(platform: &Platform, workload: &str) -> Result<DmaDriver, RunError> {
    DmaDriver::from_params(component(platform, "dma_driver", workload)?)
        .map_err(model_err(platform))
}

/// The DMA engine's BAR0 and BAR1 (from its parameters, as the system
/// places them), without building a system.
pub(crate) fn engine_bars(platform: &Platform, workload: &str) -> Result<(u64, u64), RunError> {
    engine_bars_on(platform, workload, &EngineChoice::default())
}

/// [`engine_bars`] of the engine `choice` names.
pub(crate) fn engine_bars_on(
    platform: &Platform,
    workload: &str,
    choice: &EngineChoice,
) -> Result<(u64, u64), RunError> {
    let sp = system_params_on(platform, workload, choice)?;
    let cfg = link_config(&sp.pcie_link).map_err(model_err(platform))?;
    let engine = XdmaEngine::from_params(&sp.xdma_engine, &cfg).map_err(model_err(platform))?;
    Ok((engine.bar0(), engine.bar1()))
}

/// Where the driver keeps its ring and write-back, and the engine's BAR0.
pub(crate) fn driver_layout(platform: &Platform, workload: &str) -> Result<DriverLayout, RunError> {
    driver_layout_on(platform, workload, &EngineChoice::default())
}

/// [`driver_layout`] for the engine `choice` names.
pub(crate) fn driver_layout_on(
    platform: &Platform,
    workload: &str,
    choice: &EngineChoice,
) -> Result<DriverLayout, RunError> {
    Ok(DriverLayout {
        bar0: engine_bars_on(platform, workload, choice)?.0,
        ring: RING,
        writeback: WRITEBACK,
    })
}

/// The driver's program of a DMA read (`workload`'s): `n` H2C transfers of
/// `x` bytes from `REQ_BUF` behind one doorbell, between marks 0 and 1.
pub(crate) fn dma_read_program(
    platform: &Platform,
    workload: &str,
    n: u64,
    x: u64,
    params: &Params,
) -> Result<Vec<Op>, RunError> {
    let driver = driver_for(platform, workload)?;
    let layout = driver_layout(platform, workload)?;
    let transfers: Vec<Transfer> = (0..n)
        .map(|i| Transfer {
            channel: H2C,
            host: REQ_BUF + i * x,
            card: i * x,
            len: x,
        })
        .collect();
    let mut program = vec![Op::Mark(0)];
    program.extend(driver.transfer(&transfers, &layout, completion_of(params), 0));
    program.push(Op::Mark(1));
    Ok(program)
}

/// Whether `dma_read` runs in bandwidth mode, and its number of x-byte
/// transfers.
pub(crate) fn dma_read_transfers(params: &Params, x: u64) -> (bool, u64) {
    let bandwidth_mode = params.str("mode") == "bandwidth";
    let n = if bandwidth_mode {
        match params.uint("messages") {
            0 => ((2u64 << 20) / x).clamp(16, 512),
            m => m,
        }
    } else {
        1
    };
    (bandwidth_mode, n)
}

fn dma_read(
    platform: &Platform,
    x: u64,
    params: &Params,
    seed: u64,
    trace: TraceMode,
) -> Result<PointResult, RunError> {
    let (bandwidth_mode, n) = dma_read_transfers(params, x);
    let system = params.get("system").map_or("", |_| params.str("system"));
    if !system.is_empty() {
        return cxl_io::dma_read(platform, system, x, params, seed, trace);
    }
    let sp = system_params(platform, "dma_read")?;
    let program = dma_read_program(platform, "dma_read", n, x, params)?;
    let data = pattern(n * x, 1);
    let d = data.clone();
    let mut sys = PcieSystem::build(&sp, program, seed, trace, move |host, _| {
        host.data.write(REQ_BUF, &d)
    })
    .map_err(model_err(platform))?;
    finish(&mut sys, "dma_read")?;
    if sys.device_memory().data.read(0, data.len()) != data {
        return Err(werr(
            "dma_read: device memory does not hold the host buffer after the transfer",
        ));
    }
    let core = sys.core();
    let latency = core.mark(1).expect("mark") - core.mark(0).expect("mark");
    let metrics = dma_read_metrics(latency, sys.engine().done_times(H2C), x, bandwidth_mode);
    Ok(result(&sys, metrics, trace))
}

/// A `dma_read` run's metrics: the driver call's `latency`, and the
/// bandwidth of `x`-byte descriptors, in bandwidth mode the steady-state
/// rate of their completions (`done`, skipping the first quarter while the
/// descriptor pipeline fills), otherwise `x` over the latency.
pub(crate) fn dma_read_metrics(
    latency: Tick,
    done: &[Tick],
    x: u64,
    bandwidth_mode: bool,
) -> BTreeMap<String, f64> {
    let bandwidth = if bandwidth_mode {
        let k = done.len() / 4;
        let span = done[done.len() - 1] - done[k];
        ((done.len() - 1 - k) as u64 * x) as f64 / span as f64 * 1000.0
    } else {
        x as f64 / latency as f64 * 1000.0
    };
    BTreeMap::from([
        ("latency_ns".to_string(), ns(latency)),
        ("bandwidth_gbps".to_string(), bandwidth),
    ])
}

fn tapasco_dma(
    platform: &Platform,
    x: u64,
    params: &Params,
    seed: u64,
    trace: TraceMode,
) -> Result<PointResult, RunError> {
    let choice = EngineChoice::of(params);
    let sp = system_params_on(platform, "tapasco_dma", &choice)?;
    let driver = driver_for(platform, "tapasco_dma")?;
    let write = params.str("direction") == "write";
    let completion = completion_of(params);
    let layout = driver_layout_on(platform, "tapasco_dma", &choice)?;
    let transfer = Transfer {
        channel: if write { C2H } else { H2C },
        host: if write { RSP_BUF } else { REQ_BUF },
        card: 0,
        len: x,
    };
    let mut program = vec![Op::Mark(0)];
    program.extend(driver.transfer_registers(&transfer, &layout, completion, 0));
    program.push(Op::Mark(1));
    let data = pattern(x, 5);
    let d = data.clone();
    let mut sys = PcieSystem::build(&sp, program, seed, trace, move |host, card| {
        if write {
            card.data.write(0, &d)
        } else {
            host.data.write(REQ_BUF, &d)
        }
    })
    .map_err(model_err(platform))?;
    finish(&mut sys, "tapasco_dma")?;
    let moved = if write {
        sys.host_memory().data.read(RSP_BUF, x as usize)
    } else {
        sys.device_memory().data.read(0, x as usize)
    };
    if moved != data {
        return Err(werr(
            "tapasco_dma: the destination does not hold the source bytes after the transfer",
        ));
    }
    let core = sys.core();
    let latency = core.mark(1).expect("mark") - core.mark(0).expect("mark");
    let metrics = BTreeMap::from([
        ("latency_ns".to_string(), ns(latency)),
        // Bytes per ns are GB/s.
        ("throughput_gbps".to_string(), x as f64 / ns(latency)),
    ]);
    Ok(result(&sys, metrics, trace))
}

fn xdma_invoke(
    platform: &Platform,
    x: u64,
    params: &Params,
    seed: u64,
    trace: TraceMode,
) -> Result<PointResult, RunError> {
    let sp = system_params(platform, "xdma_invoke")?;
    let driver = driver_for(platform, "xdma_invoke")?;
    let completion = completion_of(params);
    let layout = driver_layout(platform, "xdma_invoke")?;
    let mut program = vec![Op::Mark(0)];
    program.extend(driver.transfer(
        &[Transfer {
            channel: H2C,
            host: REQ_BUF,
            card: 0,
            len: x,
        }],
        &layout,
        completion,
        0,
    ));
    program.push(Op::Mark(1));
    program.extend(driver.transfer(
        &[Transfer {
            channel: C2H,
            host: RSP_BUF,
            card: 0,
            len: x,
        }],
        &layout,
        completion,
        1,
    ));
    program.push(Op::Mark(2));
    let data = pattern(x, 2);
    let d = data.clone();
    let mut sys = PcieSystem::build(&sp, program, seed, trace, move |host, _| {
        host.data.write(REQ_BUF, &d)
    })
    .map_err(model_err(platform))?;
    finish(&mut sys, "xdma_invoke")?;
    if sys.host_memory().data.read(RSP_BUF, x as usize) != data {
        return Err(werr(
            "xdma_invoke: the response buffer does not hold the request bytes",
        ));
    }
    Ok(two_phases(&sys, ["h2c_ns", "c2h_ns"], trace))
}

/// The result of a program with marks 0, 1 and 2 around two phases:
/// `latency_ns` from mark 0 to 2, and each phase under its metric name.
fn two_phases(sys: &PcieSystem, phases: [&str; 2], trace: TraceMode) -> PointResult {
    let c = sys.core();
    let [t0, t1, t2] = [0, 1, 2].map(|m| c.mark(m).expect("the program sets marks 0, 1, 2"));
    let metrics = BTreeMap::from([
        ("latency_ns".to_string(), ns(t2 - t0)),
        (phases[0].to_string(), ns(t1 - t0)),
        (phases[1].to_string(), ns(t2 - t1)),
    ]);
    result(sys, metrics, trace)
}

fn pio_invoke(
    platform: &Platform,
    x: u64,
    params: &Params,
    seed: u64,
    trace: TraceMode,
) -> Result<PointResult, RunError> {
    let sp = system_params(platform, "pio_invoke")?;
    let bar1 = engine_bars(platform, "pio_invoke")?.1;
    let data = pattern(x, 3);
    let program = vec![
        Op::Mark(0),
        Op::MmioWrite {
            addr: bar1,
            data: data.clone(),
            wc: params.bool("write_combining"),
        },
        Op::Fence,
        Op::Mark(1),
        Op::MmioRead {
            addr: bar1,
            len: x as u32,
        },
        Op::Mark(2),
    ];
    let mut sys =
        PcieSystem::build(&sp, program, seed, trace, |_, _| {}).map_err(model_err(platform))?;
    finish(&mut sys, "pio_invoke")?;
    let c = sys.core();
    if c.mmio_loads.first().map(|(_, d)| d) != Some(&data)
        || sys.device_memory().data.read(0, x as usize) != data
    {
        return Err(werr(
            "pio_invoke: the bytes read back differ from the bytes written",
        ));
    }
    Ok(two_phases(&sys, ["write_ns", "read_ns"], trace))
}

fn link_pingpong(
    platform: &Platform,
    x: u64,
    _params: &Params,
    seed: u64,
    trace: TraceMode,
) -> Result<PointResult, RunError> {
    let lp = component(platform, "pcie_link", "link_pingpong")?;
    let cfg = link_config(lp).map_err(model_err(platform))?;
    let link = PcieLink::from_params(lp).map_err(model_err(platform))?;
    let data = pattern(x, 4);
    let mut b = SystemBuilder::<Msg>::new("system", seed);
    b.trace(trace);
    let p = b.add("pinger", TlpPinger::new(&cfg, RSP_BUF, &data));
    let l = b.add("pcie", link);
    let e = b.add("echo", TlpEcho);
    b.connect(p, "io", l, "up", LinkParams::symmetric(0, 0.0));
    b.connect(l, "down", e, "io", LinkParams::symmetric(0, 0.0));
    let mut sim = b.build().map_err(|e| werr(e.to_string()))?;
    sim.run_until(TIME_LIMIT);
    let pinger = sim.component::<TlpPinger>(p).expect("pinger");
    let echoed: Vec<u8> = pinger
        .echoes
        .iter()
        .flat_map(|(_, t)| t.data.iter().copied())
        .collect();
    if echoed != data {
        return Err(werr(
            "link_pingpong: the echoed bytes differ from the bytes sent",
        ));
    }
    let stats = sim.stats();
    let metrics = BTreeMap::from([
        ("rtt_ns".to_string(), ns(pinger.echoes[0].0)),
        (
            "burst_ns".to_string(),
            ns(pinger.echoes.last().expect("echo").0),
        ),
        (
            "wire_bytes".to_string(),
            stats.counter("system.pcie.down.wire_bytes").unwrap_or(0) as f64,
        ),
    ]);
    let mut stats = stats.flatten();
    let link = sim.component::<PcieLink>(l).expect("link");
    stats.extend(
        link.fault_stats()
            .into_iter()
            .map(|(k, v)| (format!("system.pcie.{k}"), v)),
    );
    Ok(PointResult {
        metrics,
        stats,
        trace_json: if trace == TraceMode::Full {
            sim.trace_json()
        } else {
            None
        },
        trace_events: sim.trace_events_json(),
        trace_hash: sim.trace_hash().unwrap_or_default(),
    })
}
