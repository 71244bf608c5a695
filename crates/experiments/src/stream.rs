//! `coherent_stream` — CCKit Fig. 6: read and write throughput through the
//! three homes of CCKit Fig. 5 (LLC+DDR over CCPI, DC+BRAM and DC+DDR over
//! ECI), for sequential and random access over a 1 GiB region.
//!
//! * **The CPU** is one core of the platform's `thunderx_cpu` instance: L1,
//!   3 KiB write buffer, MSHRs, and the LLC's TADs (16 transactions each)
//!   behind the XOR address scrambler.
//! * **Reads.** The paper's read tests "use prefetch hint instructions to
//!   avoid serializing on LLC refills" (CCKit §5.2): before loading line i
//!   the core issues `PRFM PLDL1KEEP` for line i + `prefetch_distance`.
//!   Prefetches complete at issue and take TAD slots (dropped when the TAD
//!   is full), so the TADs, the link, the home and its memory set the
//!   throughput.
//! * **Writes.** One 64-bit store per line into the write buffer (no
//!   prefetch hints, as in the paper): each entry drains into a transaction
//!   of its line's TAD (`store_misses_in_tads`), which obtains the line with
//!   write access (the table's `getx` row) and performs the store, so store
//!   misses overlap up to the TADs' slots as read prefetches do; once
//!   the 16 MiB LLC is full every new line evicts a dirty one, whose
//!   writeback goes to the home in eviction (LRU) order, not program order
//!   (CCKit §5.2).
//! * x = `streamed_mib`: MiB moved by the run — the first x MiB of the
//!   region (sequential) or x MiB of distinct random lines of the 1 GiB
//!   region (random). Throughput is the steady state: the bytes of the
//!   second half of the completions over the time they took (past the LLC
//!   filling for writes, so x should be at least twice the 16 MiB LLC).
//! * Every read's bytes are compared with what memory holds; every store is
//!   checked by the online data-value check, and the final value of a
//!   sample of written lines is read back from the home's memory.
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let p = Params::new().with("config", ParamValue::Str("dc_bram".into()), "doc");
//! let r = ccsim_experiments::run_point("coherent_stream", &enzian, "streamed_mib", 1.0, &p, 1, false).unwrap();
//! // Link-bound: close to, and never above, the ~20 GiB/s ECI achieves.
//! assert!(r.metrics["gibps"] > 15.0 && r.metrics["gibps"] < 20.5);
//! ```

use std::collections::BTreeMap;

use ccsim_coherence::{initial_line, LINE_BYTES};
use ccsim_eci::cpu::CpuOp;
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use crate::coherent::{coherent_system, distinct_lines, lines_in_mib};
use crate::{werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `coherent_stream`.
pub static COHERENT_STREAM: WorkloadInfo = WorkloadInfo {
    name: "coherent_stream",
    description: "CCKit Fig. 6: the CPU streams x = streamed_mib MiB of reads (many in flight, as with prefetch hints) or writes (one store per line; dirty LLC evictions write back) over a 1 GiB region, sequentially or at random, through LLC+DDR (CCPI), DC+BRAM or DC+DDR (ECI).",
    params: &[
        ParamSpec { name: "op", kind: ParamKind::Enum(&["read", "write"]), default: ParamDefault::Str("read"), unit: "", range: ParamRange::ANY, from: "CCKit Fig. 6: read throughput", description: "read: loads; write: one 64-bit store per line (the line is obtained writable, written, and later written back on eviction)." },
        ParamSpec { name: "pattern", kind: ParamKind::Enum(&["seq", "rand"]), default: ParamDefault::Str("seq"), unit: "", range: ParamRange::ANY, from: "CCKit Fig. 6: sequential access", description: "seq: consecutive lines from the region's start; rand: distinct uniformly random lines of the region." },
        ParamSpec { name: "config", kind: ParamKind::Enum(&["llc_ddr", "dc_bram", "dc_ddr"]), default: ParamDefault::Str("dc_bram"), unit: "", range: ParamRange::ANY, from: "assumed: the FPGA DC with BRAM", description: "The home: native CCPI home with DDR, or the FPGA DC with BRAM or DDR." },
        ParamSpec { name: "region_mib", kind: ParamKind::Int, default: ParamDefault::Int(1024), unit: "MiB", range: ParamRange::at_least(1.0), from: "CCKit §5.2: a contiguous 1 GiB region", description: "Region the lines are drawn from (CCKit §5.2: a contiguous 1 GiB region)." },
        ParamSpec { name: "prefetch_distance", kind: ParamKind::Int, default: ParamDefault::Int(96), unit: "lines", range: ParamRange::at_least(0.0), from: "assumed: 12 KiB, the best of 32, 64, 96, 128 and 256 lines for DC+BRAM sequential reads in this model", description: "Reads: how far ahead the prefetch hint runs (assumed: 12 KiB, the best of 32, 64, 96, 128 and 256 lines for DC+BRAM sequential reads in this model: fewer cannot cover a 20 GiB/s x 450 ns path, more overflow the scrambled TADs (8 x 16 slots), which drop hints)." },
    ],
    metrics: &[
        MetricSpec { name: "gibps", unit: "GiB/s", description: "Steady state: bytes of the second half of the completions over the time they took." },
        MetricSpec { name: "latency_ns", unit: "ns", description: "Mean issue-to-completion time of one line operation (queueing included)." },
    ],
    check: None,
    run,
};

/// Largest x (MiB).
const MAX_MIB: f64 = 1024.0;
/// Written lines read back from the home's memory at the end.
const READBACK_SAMPLE: usize = 64;

/// The value the store to `line` writes (distinct per line, so a misplaced
/// writeback shows).
fn store_value(line: u64) -> u64 {
    line.wrapping_mul(0xA24B_AED4_963E_E407) ^ 0x5EED
}

/// Runs one point of `coherent_stream`.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let (x_name, x, seed, trace) = (point.x_name, point.x, point.seed, point.trace);
    let trace = crate::trace_mode(trace);
    let n = lines_in_mib("coherent_stream", x_name, "streamed_mib", x, MAX_MIB, "")?;
    let region = params.int("region_mib");
    let distance = params.int("prefetch_distance");
    let region_lines = region as u64 * (1 << 20) / LINE_BYTES as u64;
    if n > region_lines {
        return Err(werr(format!(
            "coherent_stream: {x} MiB do not fit in the {region} MiB region"
        )));
    }
    let config = params.str("config");
    let write = params.str("op") == "write";
    // The whole chip (L1s, write buffers, TADs), one thread on it.
    let opts = EciOptions::new(seed, trace)
        .instance("cpu", "thunderx_cpu")
        .set(
            "cpu",
            "cores",
            ParamValue::Int(1),
            "coherent_stream: one thread",
        );
    let lines: Vec<u64> = if params.str("pattern") == "rand" {
        distinct_lines(seed, "coherent_stream.lines", n, region_lines)
    } else {
        (0..n).collect()
    };
    let program: Vec<CpuOp> = if write {
        lines
            .iter()
            .map(|&line| CpuOp::Store {
                line,
                word: 0,
                value: store_value(line),
            })
            .collect()
    } else {
        let ahead = distance as usize;
        let mut ops = Vec::with_capacity(2 * lines.len());
        ops.extend(
            lines
                .iter()
                .take(ahead)
                .map(|&line| CpuOp::Prefetch { line }),
        );
        for (i, &line) in lines.iter().enumerate() {
            if let Some(&next) = lines.get(i + ahead) {
                ops.push(CpuOp::Prefetch { line: next });
            }
            ops.push(CpuOp::Load { line });
        }
        ops
    };
    // Program index of each line operation (prefetches are not measured).
    let measured: Vec<Option<u64>> = program
        .iter()
        .map(|op| match op {
            CpuOp::Load { line } | CpuOp::Store { line, .. } => Some(*line),
            _ => None,
        })
        .collect();
    let mut sys = coherent_system(platform, config, &opts, program, Vec::new())?;
    let fail = |e: String| werr(format!("coherent_stream ({config}): {e}"));
    sys.run().map_err(fail)?;
    let cpu = sys.cpu();
    let mut done_at = Vec::with_capacity(cpu.completed.len());
    let mut latency_sum = 0.0;
    for c in &cpu.completed {
        let Some(line) = measured[c.op] else {
            continue;
        };
        // A load sees memory's bytes; a store that commits into the write
        // buffer sees its own word (the rest is checked on write-back).
        let seen_right = if write {
            c.data[..8] == store_value(line).to_le_bytes()
        } else {
            c.data == initial_line(line)
        };
        if !seen_right {
            return Err(fail(format!(
                "line {line:#x}: the operation saw bytes other than expected"
            )));
        }
        done_at.push(c.issued + c.latency_ps);
        latency_sum += c.latency_ps as f64 / 1000.0;
    }
    if write {
        // The first lines written that the LLC no longer holds were
        // written back on eviction: memory must hold their stores.
        let evicted = lines
            .iter()
            .filter(|&&line| cpu.line(line).1.is_none())
            .take(READBACK_SAMPLE);
        for &line in evicted {
            if sys.dc().mem.read(line)[..8] != store_value(line).to_le_bytes() {
                return Err(fail(format!(
                    "line {line:#x} was evicted but memory does not hold its store"
                )));
            }
        }
    }
    // Steady state: the second half of the completions (past the LLC
    // filling up for writes, past the ramp for reads).
    done_at.sort_unstable();
    let half = done_at.len() / 2;
    let window = done_at[done_at.len() - 1] - done_at[half.saturating_sub(1)];
    let moved = ((done_at.len() - half) * LINE_BYTES) as f64;
    let gibps = moved / (window.max(1) as f64 / SEC as f64) / (1u64 << 30) as f64;
    let mut metrics = BTreeMap::new();
    metrics.insert("gibps".to_string(), gibps);
    metrics.insert("latency_ns".to_string(), latency_sum / done_at.len() as f64);
    Ok(crate::sim_result(&sys.sim, metrics, trace))
}
