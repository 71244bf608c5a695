//! `prefetch_read` — CCKit §5.5, Fig. 8: sequential reads of FPGA-homed
//! table rows by 1–N client threads on DC+DDR, with and without the
//! application-specific prefetcher between the DC and the DRAM.
//!
//! ```text
//!  client c (core c of the ThunderX-1): load rows c·L .. (c+1)·L in order
//!      │ LLC misses ──ECI──► DC (eci-dc) ──AXI read──► prefetcher ──► DDR (MIG-like)
//!                                                     8 units × 8 KiB in BRAM
//! ```
//!
//! The prefetcher is [`ccsim_coherence::prefetch::Prefetcher`]: a hit in a
//! unit is served from BRAM; a miss takes the direct path to DRAM (the hot
//! line first) and a unit fetches the block in 64-beat AXI bursts; a read
//! in the second half of a block allocates a unit for the next block.
//!
//! * x = `clients`: client threads, one per core, each reading its own
//!   `lines_per_client` consecutive rows (128 B lines) with plain loads —
//!   the text names no prefetch hints for this experiment — so a core
//!   keeps up to `mshrs` (the `thunderx_cpu` instance's 8) misses in
//!   flight and the memory's latency sets each client's rate.
//! * `prefetcher = "off"` is the DC+DDR system as calibrated for Table 2;
//!   `"on"` puts the prefetcher in front of the same DDR model.
//! * Metric `gibps`: all clients' bytes over first issue to last
//!   completion. Every load's bytes are checked against memory.
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let on = Params::new().with("lines_per_client", ParamValue::Int(1024), "doc");
//! let off = on.clone().with("prefetcher", ParamValue::Str("off".into()), "doc");
//! let with = ccsim_experiments::run_point("prefetch_read", &enzian, "clients", 1.0, &on, 1, false).unwrap();
//! let without = ccsim_experiments::run_point("prefetch_read", &enzian, "clients", 1.0, &off, 1, false).unwrap();
//! assert!(with.metrics["gibps"] > without.metrics["gibps"]);
//! ```

use std::collections::BTreeMap;

use ccsim_coherence::initial_line;
use ccsim_coherence::memory::MemTiming;
use ccsim_coherence::prefetch::{PrefetchConfig, Prefetcher};
use ccsim_eci::cpu::CpuOp;
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use crate::{werr, whole_number, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `prefetch_read`.
pub static PREFETCH_READ: WorkloadInfo = WorkloadInfo {
    name: "prefetch_read",
    description: "CCKit §5.5, Fig. 8: x = clients threads each read their own rows sequentially (plain loads) from FPGA DRAM through the DC (DC+DDR, eci-dc), with or without the application-specific prefetcher (units of 8 KiB blocks in BRAM fetched in 64-beat AXI bursts, hot line first, the next block allocated on a read of a block's second half).",
    params: &[
        ParamSpec { name: "prefetcher", kind: ParamKind::Enum(&["on", "off"]), default: ParamDefault::Str("on"), unit: "", range: ParamRange::ANY, from: "CCKit §5.5, Fig. 8: with and without the prefetcher", description: "on: the prefetcher between the DC and the DRAM; off: the DC reads the DRAM directly." },
        ParamSpec { name: "units", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "units", range: ParamRange::between(1.0, 64.0), from: "CCKit §5.5: 'eight parallel blocks of 8 KiB each'", description: "Parallel prefetch units." },
        ParamSpec { name: "block_kib", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "KiB", range: ParamRange::between(1.0, 64.0), from: "CCKit §5.5: 'eight parallel blocks of 8 KiB each'", description: "Block one unit fetches and holds." },
        ParamSpec { name: "burst_beats", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "beats", range: ParamRange::between(1.0, 256.0), from: "CCKit §5.5: 'a series of 64-beat AXI burst transactions'", description: "Beats of one AXI burst of a unit's fetch." },
        ParamSpec { name: "beat_bytes", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "B", range: ParamRange::one_of(&[16, 32, 64, 128]), from: "assumed: a 512-bit AXI data bus on the MIG's user side", description: "Bytes per AXI beat." },
        ParamSpec { name: "bram_ns", kind: ParamKind::Float, default: ParamDefault::Float(9.3), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: as dc_bram.latency_ns, 3 cycles of BRAM at 322 MHz", description: "A unit's BRAM read latency." },
        ParamSpec { name: "lines_per_client", kind: ParamKind::Int, default: ParamDefault::Int(8192), unit: "lines", range: ParamRange::between(64.0, 1048576.0), from: "assumed: 1 MiB of rows per client, long enough for the steady state", description: "Rows (128 B lines) each client reads." },
    ],
    metrics: &[
        MetricSpec { name: "gibps", unit: "GiB/s", description: "All clients' bytes over first issue to last completion." },
        MetricSpec { name: "unit_hit_pct", unit: "%", description: "Reads served by a prefetch unit (0 without the prefetcher)." },
    ],
    check: None,
    run,
};

/// Largest x: the ThunderX-1's 48 cores.
const MAX_CLIENTS: f64 = 48.0;

/// Runs one point of `prefetch_read`.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let params = point.params;
    crate::sweeps("prefetch_read", "clients", point.x_name)?;
    let clients = whole_number("clients", point.x, 1.0)?;
    if clients as f64 > MAX_CLIENTS {
        return Err(werr(format!(
            "clients = {clients}: at most {MAX_CLIENTS} (one per ThunderX-1 core)"
        )));
    }
    let per = params.int("lines_per_client") as u64;
    let line_bytes = ccsim_coherence::LINE_BYTES as u64;
    let block_lines = params.int("block_kib") as u64 * 1024 / line_bytes;
    let burst_lines = (params.int("burst_beats") * params.int("beat_bytes")) as u64 / line_bytes;
    if burst_lines == 0 {
        return Err(werr(
            "prefetch_read: a burst shorter than a line (burst_beats x beat_bytes < 128 B)",
        ));
    }
    let opts = EciOptions::new(point.seed, crate::trace_mode(point.trace))
        .instance("cpu", "thunderx_cpu")
        .set(
            "cpu",
            "cores",
            ParamValue::Int(clients as i64),
            "prefetch_read: one core per client",
        );
    let mut sys = point
        .platform
        .coherent_system("dc_ddr", &opts)
        .map_err(RunError::Config)?;
    let programs: Vec<Vec<CpuOp>> = (0..clients)
        .map(|c| {
            (c * per..(c + 1) * per)
                .map(|line| CpuOp::Load { line })
                .collect()
        })
        .collect();
    sys.set_programs(programs)
        .map_err(|e| werr(format!("platform {}: {e}", point.platform.name)))?;
    let on = params.str("prefetcher") == "on";
    if on {
        let cfg = PrefetchConfig {
            units: params.int("units") as usize,
            block_lines: block_lines.max(1),
            burst_lines,
            bram: (params.float("bram_ns") * 1000.0).round() as Tick,
        };
        let t = sys.dc_mut().timing_mut();
        *t = MemTiming::Prefetched(Box::new(Prefetcher::new(t.clone(), cfg)));
    }
    let fail = |e: String| werr(format!("prefetch_read ({clients} clients): {e}"));
    sys.run().map_err(fail)?;
    let cpu = sys.cpu();
    let n = (clients * per) as usize;
    if cpu.completed.len() != n {
        return Err(fail(format!(
            "{} of {n} loads completed",
            cpu.completed.len()
        )));
    }
    let mut first = Tick::MAX;
    let mut last = 0;
    for c in &cpu.completed {
        let line = match cpu.program_op(c.core, c.op) {
            Some(CpuOp::Load { line }) => *line,
            _ => return Err(fail(format!("core {} op {} is not a load", c.core, c.op))),
        };
        if c.data != initial_line(line) {
            return Err(fail(format!(
                "the load of line {line:#x} returned wrong bytes"
            )));
        }
        first = first.min(c.issued);
        last = last.max(c.issued + c.latency_ps);
    }
    let gibps =
        (n as u64 * line_bytes) as f64 / ((last - first) as f64 / 1e12) / (1u64 << 30) as f64;
    let counts = match sys.dc_mut().timing_mut() {
        MemTiming::Prefetched(p) => p.counts,
        _ => [0; 3],
    };
    let mut metrics = BTreeMap::new();
    metrics.insert("gibps".to_string(), gibps);
    let reads = (counts[0] + counts[1]).max(1) as f64;
    metrics.insert("unit_hit_pct".to_string(), 100.0 * counts[0] as f64 / reads);
    let mut r = crate::sim_result(&sys.sim, metrics, crate::trace_mode(point.trace));
    r.stats
        .insert("prefetch.unit_reads".to_string(), counts[0] as f64);
    r.stats
        .insert("prefetch.direct_reads".to_string(), counts[1] as f64);
    r.stats
        .insert("prefetch.blocks".to_string(), counts[2] as f64);
    r.stats.insert(
        "check.transitions".to_string(),
        sys.checker.borrow().checked as f64,
    );
    Ok(r)
}
