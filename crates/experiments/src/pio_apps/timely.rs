//! `pio_timely` — the PIO paper's Timely Dataflow offload (§6.4, Fig. 11,
//! Table 2): a worst-case graph of 31 filter operators ([`super::dataflow`])
//! run on a batch of x bytes of 64-bit records, on the CPU or offloaded to
//! the FPGA over PCIe DMA, PCIe PIO or ECI PIO; the latency of one batch.
//!
//! The records are filtered for real on both sides and the FPGA's output
//! records and progress updates, carried back by each offload path, are
//! checked against the CPU's schedule.
//!
//! **Cost of a batch.** Timely's scheduler tracks the progress of all 31
//! operators every batch, wherever they run: `scheduler_ns_per_operator`
//! each (in every path). On the CPU each operator then reads the records
//! it consumes (`cpu_ns_per_byte_operator` per byte). Offloaded, the FPGA's
//! operator pipeline costs `fpga_ns_per_byte` of batch, and the batch, the
//! surviving records and the 31 progress updates (24 bytes each) travel by
//! the path's **existing calibrated mechanism**, not re-timed here:
//!
//! * `pcie_dma` — `xdma_invoke`'s driver calls: H2C of the batch, the
//!   pipeline, C2H of the output and the progress buffer (one transfer).
//! * `pcie_pio` — `pio_invoke`'s write-combined stores of the batch, a
//!   barrier, the pipeline, uncached 16-byte loads of output and progress.
//! * `eci_pio` — the two-line invocation over ECI, one line exchange per
//!   128 bytes each way (as many exchanges as the longer of the batch and
//!   the output plus progress), each with the pipeline's time for a line as
//!   the device's compute time; the point is the median of up to `samples`
//!   batches under seeded ECI link jitter (`jitter_ns`, 20 ns; at most 8192 exchanges a
//!   point; the PCIe paths and the CPU have no random source, so one batch
//!   is every sample).
//! * `eci_whatif` — PIO §6.4's what-if: the same ECI exchange, measured,
//!   with `lines_in_flight` lines overlapped (32) and the relative fixed
//!   overhead cut to `whatif_overhead_ns` (500 ns) per batch.
//!
//! Calibration (Table 2's baseline row and §6.4's FPGA estimate): the
//! scheduler cost (204 µs / 31), the CPU's per-byte cost (8.7 ns/B / 31
//! operators) and the FPGA pipeline's 3.6 ns/B. Every offload series' offset
//! and slope is a prediction from the mechanisms.

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_platform::{EciOptions, Platform};

use super::dataflow::{record_bytes, FilterGraph, GraphRun, RECORD_BYTES};
use super::{run_pcie_offload, whole_units, xdma_offload_ops, PcieOffload};
use crate::invocation::percentile;
use crate::invocation::run::{run_invocation, InvocationConfig};
use crate::{
    engine_bars, ns, sweeps, system_params, werr, MetricSpec, Point, PointResult, RunError,
    WorkloadInfo, COMPLETION,
};

/// Declaration of `pio_timely`.
pub static PIO_TIMELY: WorkloadInfo = WorkloadInfo {
    name: "pio_timely",
    description: "PIO §6.4, Fig. 11, Table 2: one batch of x bytes (x = batch_bytes) of 64-bit records through a Timely-Dataflow-shaped chain of 31 filters with per-operator progress tracking, on the CPU or offloaded to the FPGA by PCIe DMA, PCIe PIO or ECI PIO (and §6.4's what-if: ECI with 32 lines in flight); output records and progress updates checked against the CPU's.",
    params: &[
        ParamSpec { name: "path", kind: ParamKind::Enum(&["cpu", "pcie_dma", "pcie_pio", "eci_pio", "eci_whatif"]), default: ParamDefault::Str("eci_pio"), unit: "", range: ParamRange::ANY, from: "PIO §6.4, Fig. 11: baseline, PCIe-DMA, PCIe-PIO, ECI-PIO", description: "Where the graph runs and how batch, output and progress travel; eci_whatif: §6.4's optimized ECI protocol." },
        ParamSpec { name: "operators", kind: ParamKind::Int, default: ParamDefault::Int(31), unit: "operators", range: ParamRange::between(1.0, 256.0), from: "PIO §6.4: 'a large (31-element) graph of simple operators (filters)'", description: "Filter operators in the chain." },
        ParamSpec { name: "scheduler_ns_per_operator", kind: ParamKind::Float, default: ParamDefault::Float(6580.6), unit: "ns", range: ParamRange::at_least(0.0), from: "calibrated: PIO Table 2 baseline overhead 204 µs over the 31 operators", description: "Timely's scheduling and progress tracking per operator per batch, on every path." },
        ParamSpec { name: "cpu_ns_per_byte_operator", kind: ParamKind::Float, default: ParamDefault::Float(0.2806), unit: "ns/B", range: ParamRange::at_least(0.0), from: "calibrated: PIO Table 2 baseline 8.7 ns/B over the 31 operators", description: "CPU time of one filter operator per byte it reads." },
        ParamSpec { name: "fpga_ns_per_byte", kind: ParamKind::Float, default: ParamDefault::Float(3.6), unit: "ns/B", range: ParamRange::at_least(0.0), from: "calibrated: PIO §6.4 'estimate the per-byte cost of FPGA compute at 3.6 ns/B' (DMA's 3.7 ns/B less ~0.1 ns/B of transfer)", description: "The FPGA operator pipeline's time per byte of batch." },
        ParamSpec { name: "samples", kind: ParamKind::Int, default: ParamDefault::Int(1000), unit: "batches", range: ParamRange::between(1.0, 100_000.0), from: "PIO §6.4: 'Each is the median of 1000 samples'", description: "ECI: batches whose median is the point (at most 8192 line exchanges a point); the other paths have no random source." },
        ParamSpec { name: "jitter_ns", kind: ParamKind::Float, default: ParamDefault::Float(20.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: as coherent_invoke, a seeded spread for the medians of PIO §6.4", description: "ECI paths: seeded uniform extra delay per ECI message (overrides eci.jitter_ns), so batches differ." },
        ParamSpec { name: "lines_in_flight", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "lines", range: ParamRange::between(1.0, 1024.0), from: "PIO §6.4: 'modifying the protocol to transfer 32 lines at once'", description: "eci_whatif: line exchanges overlapped." },
        ParamSpec { name: "whatif_overhead_ns", kind: ParamKind::Float, default: ParamDefault::Float(500.0), unit: "ns", range: ParamRange::at_least(0.0), from: "PIO §6.4: 'If the relative overhead could be brought below 500ns/batch'", description: "eci_whatif: fixed cost per batch above the scheduler's." },
        COMPLETION,
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "One batch: scheduling, then the graph on the CPU or the offload (batch out, output and progress back)." },
        MetricSpec { name: "offload_ns", unit: "ns", description: "The offload mechanism with the FPGA pipeline (0 on the CPU)." },
        MetricSpec { name: "output_bytes", unit: "bytes", description: "Bytes of records surviving the 31 filters." },
    ],
    check: None,
    run,
};

/// Largest batch (bytes).
const MAX_BATCH: u64 = 4 << 20;
/// Card address of the output records and progress updates.
const RESULTS: u64 = 0x80_0000;
/// Host buffer they come back to (DMA).
const HOST_RESULTS: u64 = 0x3_0000_0000;
/// Line exchanges one ECI point simulates at most (run time).
const MAX_ECI_EXCHANGES: usize = 8192;
const LINE: usize = 128;
const WARMUP: usize = 2;

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    sweeps("pio_timely", "batch_bytes", point.x_name)?;
    let x = whole_units("batch_bytes", point.x, (RECORD_BYTES, "records"), MAX_BATCH)? as f64;
    let mut rng = SimRng::for_path(point.seed, "pio_timely.records");
    let records: Vec<u64> = (0..x as usize / RECORD_BYTES)
        .map(|_| rng.next_u64())
        .collect();
    let graph = FilterGraph::new(params.int("operators") as usize);
    let timestamp = point.seed;
    let cpu = graph.run_cpu(&records, timestamp);
    let fpga = graph.run_fpga(&records, timestamp);
    if fpga != cpu {
        return Err(werr(
            "pio_timely: the FPGA pipeline's output or progress differs from the CPU's schedule",
        ));
    }
    let batch = record_bytes(&records);
    let mut back = record_bytes(&fpga.output);
    back.extend(&fpga.progress);
    let sched = graph.operators() as f64 * params.float("scheduler_ns_per_operator");
    let fpga_ps =
        |bytes: usize| (bytes as f64 * params.float("fpga_ns_per_byte") * 1000.0).round() as Tick;
    let path = params.str("path");
    let (offload, mut r) = match path {
        "cpu" => (0.0, empty_result()),
        "eci_pio" | "eci_whatif" => eci(platform, point, batch.len(), back.len(), fpga_ps(LINE))?,
        _ => pcie(
            platform,
            point,
            path == "pcie_dma",
            &batch,
            &back,
            fpga_ps(batch.len()),
        )?,
    };
    let work = match path {
        "cpu" => cpu_work(&cpu, params.float("cpu_ns_per_byte_operator")),
        "eci_whatif" => {
            // The measured exchange (no compute), lines_in_flight at once;
            // the pipeline streams beside the transfer.
            let exchanges = batch.len().div_ceil(LINE).max(back.len().div_ceil(LINE));
            params.float("whatif_overhead_ns")
                + ns(fpga_ps(batch.len()))
                + offload * exchanges as f64 / params.int("lines_in_flight") as f64
        }
        _ => offload,
    };
    r.metrics.insert("latency_ns".into(), sched + work);
    r.metrics
        .insert("offload_ns".into(), if path == "cpu" { 0.0 } else { work });
    r.metrics.insert(
        "output_bytes".into(),
        (fpga.output.len() * RECORD_BYTES) as f64,
    );
    r.stats
        .insert("timely.records".into(), records.len() as f64);
    r.stats.insert(
        "timely.verified_progress_bytes".into(),
        fpga.progress.len() as f64,
    );
    Ok(r)
}

fn empty_result() -> PointResult {
    PointResult {
        metrics: BTreeMap::new(),
        stats: BTreeMap::new(),
        trace_json: None,
        trace_events: None,
        trace_hash: String::new(),
    }
}

/// The CPU's filter work: each operator reads the records it consumes.
fn cpu_work(run: &GraphRun, ns_per_byte: f64) -> f64 {
    run.consumed.iter().sum::<u64>() as f64 * RECORD_BYTES as f64 * ns_per_byte
}

/// ECI: the median batch of one-line exchanges (eci_pio), or for the
/// what-if the median exchange alone, without compute.
fn eci(
    platform: &Platform,
    point: &Point<'_>,
    out_bytes: usize,
    back_bytes: usize,
    line_compute_ps: Tick,
) -> Result<(f64, PointResult), RunError> {
    let whatif = point.params.str("path") == "eci_whatif";
    let exchanges = if whatif {
        1
    } else {
        out_bytes.div_ceil(LINE).max(back_bytes.div_ceil(LINE))
    };
    let samples =
        (point.params.int("samples") as usize).min((MAX_ECI_EXCHANGES / exchanges).max(1));
    let opts = EciOptions::new(point.seed, crate::trace_mode(point.trace))
        .set(
            "links",
            "jitter_ns",
            ParamValue::Float(point.params.float("jitter_ns")),
            "pio_timely.jitter_ns",
        )
        .set(
            "cpu",
            "mshrs",
            ParamValue::Int(1),
            "pio_timely: the barrier orders the request stores before the load",
        );
    let sys = platform
        .coherent_system("invocation", &opts)
        .map_err(RunError::Config)?;
    let cfg = InvocationConfig {
        calls: samples * exchanges + WARMUP,
        warmup: WARMUP,
        compute_ns: if whatif {
            0.0
        } else {
            line_compute_ps as f64 / 1000.0
        },
        ..Default::default()
    };
    let r = run_invocation(sys, &cfg)
        .map_err(|e| werr(format!("platform {}: pio_timely: {e}", platform.name)))?;
    if r.verified < cfg.calls {
        return Err(werr(format!(
            "pio_timely: only {} of {} ECI exchanges returned a verified result",
            r.verified, cfg.calls
        )));
    }
    let mut per_batch: Vec<f64> = r.spans[WARMUP..]
        .chunks(exchanges)
        .map(|c| ns(c[c.len() - 1].1 - c[0].0))
        .collect();
    per_batch.sort_by(f64::total_cmp);
    let mut stats = r.stats;
    stats.insert("sim.events".into(), r.events as f64);
    stats.insert("timely.samples".into(), samples as f64);
    stats.insert("timely.exchanges_per_batch".into(), exchanges as f64);
    let pr = PointResult {
        metrics: BTreeMap::new(),
        stats,
        trace_json: r.trace_json,
        trace_events: r.trace_events,
        trace_hash: r.trace_hash,
    };
    Ok((percentile(&per_batch, 50.0), pr))
}

/// PCIe DMA or PIO: the batch to the card, the pipeline over it, the
/// output records and progress updates back; the bytes the CPU ends up
/// with must be `back`.
fn pcie(
    platform: &Platform,
    point: &Point<'_>,
    dma: bool,
    batch: &[u8],
    back: &[u8],
    pipeline_ps: Tick,
) -> Result<(f64, PointResult), RunError> {
    let sp = system_params(platform, "pio_timely")?;
    let trace = crate::trace_mode(point.trace);
    let mut program = vec![Op::Mark(0)];
    if dma {
        program.extend(xdma_offload_ops(
            "pio_timely",
            point,
            (batch.len() as u64, back.len() as u64),
            (RESULTS, HOST_RESULTS),
            pipeline_ps,
        )?);
    } else {
        let bar1 = engine_bars(platform, "pio_timely")?.1;
        program.extend([
            Op::MmioWrite {
                addr: bar1,
                data: batch.to_vec(),
                wc: true,
            },
            Op::Fence,
            Op::Compute(pipeline_ps),
            Op::MmioRead {
                addr: bar1 + RESULTS,
                len: back.len() as u32,
            },
        ]);
    }
    program.push(Op::Mark(1));
    let offload = PcieOffload {
        workload: "pio_timely",
        sent: batch,
        sent_what: "the batch the CPU sent",
        back,
        back_what: "the output and progress read back differ from the CPU's schedule",
        card_results: RESULTS,
        host_results: HOST_RESULTS,
        by_dma: dma,
    };
    let (span_ns, mut r) = run_pcie_offload(platform, &sp, program, point.seed, trace, offload)?;
    r.stats.insert("timely.samples".into(), 1.0);
    Ok((span_ns, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(path: &str, x: f64) -> PointResult {
        let enzian = Platform::load("enzian").unwrap();
        let p = Params::new()
            .with("path", ParamValue::Str(path.into()), "test")
            .with("samples", ParamValue::Int(20), "test");
        crate::run_point("pio_timely", &enzian, "batch_bytes", x, &p, 2, false).unwrap()
    }

    fn fit(path: &str) -> (f64, f64) {
        let xs = [128.0, 1024.0, 8192.0, 32768.0];
        let ys: Vec<f64> = xs
            .iter()
            .map(|&x| latency(path, x).metrics["latency_ns"])
            .collect();
        let n = xs.len() as f64;
        let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
        let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let slope = sxy / sxx;
        (slope, (my - slope * mx) / 1000.0)
    }

    #[test]
    fn the_baseline_is_table_2s_line_within_5_percent() {
        let (slope, offset) = fit("cpu");
        assert!((slope - 8.7).abs() / 8.7 < 0.05, "{slope} ns/B");
        assert!((offset - 204.0).abs() / 204.0 < 0.05, "{offset} us");
    }

    #[test]
    fn offload_paths_are_straight_lines_ordered_by_transfer_cost() {
        let (dma, pio, eci) = (fit("pcie_dma"), fit("pcie_pio"), fit("eci_pio"));
        // Per byte: DMA just above the FPGA's 3.6 ns/B, ECI a line exchange
        // per 128 B above it, PCIe PIO a non-posted read per 16 B.
        assert!(
            dma.0 > 3.6 && dma.0 < eci.0 && eci.0 < pio.0,
            "{dma:?} {eci:?} {pio:?}"
        );
        // Every offload pays the scheduler's 204 us and then some.
        for (s, o) in [dma, pio, eci] {
            assert!(o > 204.0, "{s} {o}");
        }
        // 744 B of progress: six more uncached-read groups than lines.
        let r = latency("pcie_pio", 128.0);
        assert_eq!(r.stats["timely.verified_progress_bytes"], 744.0);
        let eci = latency("eci_pio", 128.0);
        assert_eq!(eci.stats["timely.exchanges_per_batch"], 7.0);
        assert_eq!(eci.stats["timely.samples"], 20.0);
    }

    #[test]
    fn refuses_partial_records() {
        let enzian = Platform::load("enzian").unwrap();
        let e = crate::run_point(
            "pio_timely",
            &enzian,
            "batch_bytes",
            100.0,
            &Params::new(),
            1,
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("8-byte records"), "{e}");
    }
}
