//! `pio_bloom` — the PIO paper's Bloom-filter offload (§6.5, Fig. 12): a
//! Timely Dataflow operator hashes x bytes of 128-byte elements with k = 8
//! byte-wide hash functions, on the CPU or on the FPGA reached by ECI PIO,
//! PCIe PIO or XDMA; the latency of the whole batch against its size.
//!
//! The hashes are computed for real ([`super::hash`]): the CPU reference,
//! and the FPGA pipeline model (64-cycle latency, II 2, 512-bit bus) whose
//! results must equal it; the offload paths move the FPGA's result bytes
//! back and the run checks them against the CPU's.
//!
//! Every offload path is an **existing calibrated invocation mechanism**,
//! not re-timed here:
//!
//! * `eci_pio` — the two-line invocation over ECI ([`crate::invocation`]):
//!   one line exchange per element (the 128-byte element is one request
//!   line, its 64-byte result fits one response line); the device's compute
//!   time per exchange is the pipeline's latency (64 cycles at the FPGA
//!   clock). The CPU stores the element's 128 bytes into the request line;
//!   the device hashes the line it reads and writes the 64 result bytes
//!   into the result line, which the CPU's load returns and the run checks
//!   against the CPU reference.
//! * `pcie_pio` — the `pio_invoke` program: write-combined MMIO stores of
//!   the batch into BAR1, a barrier, then uncached MMIO loads of the 64-byte
//!   results. The CPU waits the pipeline's latency before its first load;
//!   later results are ready long before their load (one every 2 cycles,
//!   6 ns, against one ~1 µs non-posted read per 16 bytes).
//! * `xdma` — the `xdma_invoke` driver calls: H2C of the batch, the whole
//!   batch through the pipeline, C2H of the results.
//!
//! On top of each, the Timely operator's fixed cost (`operator_overhead_ns`,
//! scheduling and "streaming the input data", §6.5) is paid once per batch.
//! Calibration (both on the CPU series, §6.5's only CPU numbers): the CPU's
//! per-element cost (2.6 µs: the simulator has no model of the Timely
//! operator's SIMD code on the ThunderX-1, so its cost per element is a
//! number, not a mechanism) and the operator overhead (a 1-element batch on
//! the CPU takes "around 25 µs"). ECI's 1.7 µs per element, PIO's 25 µs
//! start and XDMA's lead after 8 KiB are predictions.

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_platform::{EciOptions, Platform};

use super::hash::{cpu_hashes, result_bytes, FpgaBloomPipeline, ELEMENT_BYTES, RESULT_BYTES};
use super::{run_pcie_offload, whole_units, xdma_offload_ops, PcieOffload};
use crate::invocation::run::{run_invocation, DeviceFunction, InvocationConfig, Payload};
use crate::{
    engine_bars, ns, pattern, sweeps, system_params, werr, MetricSpec, Point, PointResult,
    RunError, WorkloadInfo, COMPLETION,
};
use ccsim_coherence::Line;

/// Declaration of `pio_bloom`.
pub static PIO_BLOOM: WorkloadInfo = WorkloadInfo {
    name: "pio_bloom",
    description: "PIO §6.5, Fig. 12: a Bloom filter's k = 8 byte-wide hashes of x bytes (x = data_bytes) of 128-byte elements, on the CPU or offloaded to the FPGA pipeline (64-cycle latency, II 2, 512-bit bus) by ECI PIO, PCIe PIO or XDMA; the FPGA's hashes are checked against the CPU's.",
    params: &[
        ParamSpec { name: "path", kind: ParamKind::Enum(&["cpu", "eci_pio", "pcie_pio", "xdma"]), default: ParamDefault::Str("eci_pio"), unit: "", range: ParamRange::ANY, from: "PIO §6.5, Fig. 12: CPU, ECI PIO, PCIe PIO, XDMA", description: "Where the hashes are computed and how the elements and results travel." },
        ParamSpec { name: "cpu_element_ns", kind: ParamKind::Float, default: ParamDefault::Float(2600.0), unit: "ns", range: ParamRange::at_least(0.0), from: "calibrated: PIO §6.5 'The real processing time of one element is 2.6 µs on the CPU'", description: "CPU time to hash one element in the Timely operator." },
        ParamSpec { name: "operator_overhead_ns", kind: ParamKind::Float, default: ParamDefault::Float(22400.0), unit: "ns", range: ParamRange::at_least(0.0), from: "calibrated: PIO §6.5 'latencies for PIO and CPU both start around 25 µs' less one CPU element (25 - 2.6 µs)", description: "Fixed cost of the Timely operator per batch (scheduling, streaming the input), on every path." },
        ParamSpec { name: "fpga_clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(322.0), unit: "MHz", range: ParamRange::between(1.0, 1000.0), from: "CCKit §4.3: typical FPGA clock of 322 MHz (as the DC)", description: "Clock of the FPGA hash pipeline." },
        COMPLETION,
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "The whole batch: operator overhead plus hashing (CPU) or the offload (elements out, hashes back)." },
        MetricSpec { name: "per_element_ns", unit: "ns", description: "Latency less the operator overhead, per element." },
        MetricSpec { name: "offload_ns", unit: "ns", description: "The offload mechanism alone (0 on the CPU)." },
    ],
    check: None,
    run,
};

/// Largest batch (bytes): 1024 elements.
const MAX_DATA: u64 = 128 * 1024;
/// Where the FPGA keeps the results (card address, above the elements).
const RESULTS: u64 = 0x10_0000;
/// Host buffer of the results (XDMA).
const HOST_RESULTS: u64 = 0x3_0000_0000;

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    sweeps("pio_bloom", "data_bytes", point.x_name)?;
    let x = whole_units("data_bytes", point.x, (ELEMENT_BYTES, "elements"), MAX_DATA)? as f64;
    let data = pattern(x as u64, 12);
    let n = data.len() / ELEMENT_BYTES;
    let cpu = cpu_hashes(&data).map_err(werr)?;
    let pipe = FpgaBloomPipeline::paper();
    let fpga = pipe.run(&data).map_err(werr)?;
    if fpga.hashes != cpu {
        return Err(werr(
            "pio_bloom: the FPGA pipeline's hashes differ from the CPU reference",
        ));
    }
    let want: Vec<u8> = cpu.iter().flat_map(result_bytes).collect();
    let cycle_ps = (1e6 / params.float("fpga_clock_mhz")).round() as Tick;
    let overhead = params.float("operator_overhead_ns");
    let (offload_ns, mut r) = match params.str("path") {
        "cpu" => {
            let mut stats = BTreeMap::new();
            stats.insert("bloom.cpu_hashed".to_string(), n as f64);
            let r = PointResult {
                metrics: BTreeMap::new(),
                stats,
                trace_json: None,
                trace_events: None,
                trace_hash: String::new(),
            };
            (0.0, r)
        }
        "eci_pio" => eci(platform, point, (&data, &want), pipe.stages() * cycle_ps)?,
        path => pcie(
            platform,
            point,
            path == "xdma",
            &data,
            &want,
            (
                pipe.stages() * cycle_ps,
                pipe.batch_cycles(n as u64) * cycle_ps,
            ),
        )?,
    };
    let work = if params.str("path") == "cpu" {
        n as f64 * params.float("cpu_element_ns")
    } else {
        offload_ns
    };
    r.metrics.insert("latency_ns".to_string(), overhead + work);
    r.metrics
        .insert("per_element_ns".to_string(), work / n as f64);
    r.metrics.insert("offload_ns".to_string(), offload_ns);
    r.stats.insert("bloom.elements".to_string(), n as f64);
    r.stats.insert("bloom.verified".to_string(), n as f64);
    r.stats.insert(
        "bloom.pipeline_cycles".to_string(),
        *fpga.done_cycle.last().expect("one element") as f64,
    );
    Ok(r)
}

/// The FPGA side of one ECI exchange: the hashes of the element that fills
/// the request line, as the 64 result bytes.
fn hash_request_line(line: &Line) -> Vec<u8> {
    let run = FpgaBloomPipeline::paper()
        .run(line)
        .expect("a request line is one whole element");
    result_bytes(&run.hashes[0])
}

/// ECI PIO: one exchange of the calibrated two-line invocation per element
/// of `data` (the element's 128 bytes are the request line; the device
/// hashes it and returns the 64 result bytes, which must equal `want`),
/// each with the pipeline's latency as the device's compute time.
fn eci(
    platform: &Platform,
    point: &Point<'_>,
    (data, want): (&[u8], &[u8]),
    latency_ps: Tick,
) -> Result<(f64, PointResult), RunError> {
    const WARMUP: usize = 2;
    let elements: Vec<Line> = data
        .chunks(ELEMENT_BYTES)
        .map(|e| e.try_into().expect("one element is one line"))
        .collect();
    let n = elements.len();
    // The warm-up calls hash the first elements again.
    let requests: Vec<Line> = elements
        .iter()
        .cycle()
        .take(WARMUP)
        .chain(&elements)
        .copied()
        .collect();
    let opts = EciOptions::new(point.seed, crate::trace_mode(point.trace)).set(
        "cpu",
        "mshrs",
        ParamValue::Int(1),
        "pio_bloom: the barrier orders the request stores before the load",
    );
    let sys = platform
        .coherent_system("invocation", &opts)
        .map_err(RunError::Config)?;
    let cfg = InvocationConfig {
        calls: n + WARMUP,
        warmup: WARMUP,
        compute_ns: latency_ps as f64 / 1000.0,
        payload: Some(Payload {
            requests,
            function: DeviceFunction(hash_request_line),
        }),
        ..Default::default()
    };
    let r = run_invocation(sys, &cfg)
        .map_err(|e| werr(format!("platform {}: pio_bloom: {e}", platform.name)))?;
    let got: Vec<u8> = r.results[WARMUP..]
        .iter()
        .flat_map(|l| l[16..16 + RESULT_BYTES].iter().copied())
        .collect();
    if got != want {
        return Err(werr(
            "pio_bloom: the hashes the CPU read over ECI differ from the CPU reference",
        ));
    }
    if r.verified < n + WARMUP {
        return Err(werr(format!(
            "pio_bloom: only {} of {} ECI exchanges returned a verified result",
            r.verified,
            n + WARMUP
        )));
    }
    let span = r.spans[r.spans.len() - 1].1 - r.spans[WARMUP].0;
    let mut stats = r.stats;
    stats.insert("sim.events".to_string(), r.events as f64);
    let pr = PointResult {
        metrics: BTreeMap::new(),
        stats,
        trace_json: r.trace_json,
        trace_events: r.trace_events,
        trace_hash: r.trace_hash,
    };
    Ok((ns(span), pr))
}

/// PCIe PIO or XDMA: the elements to the card, the pipeline, the results
/// back; the result bytes the CPU ends up with must be `want`.
fn pcie(
    platform: &Platform,
    point: &Point<'_>,
    xdma: bool,
    data: &[u8],
    want: &[u8],
    (first_ps, batch_ps): (Tick, Tick),
) -> Result<(f64, PointResult), RunError> {
    let sp = system_params(platform, "pio_bloom")?;
    let trace = crate::trace_mode(point.trace);
    let (n_in, n_out) = (data.len() as u64, want.len() as u64);
    let mut program = vec![Op::Mark(0)];
    if xdma {
        // The whole batch through the pipeline before the results go back.
        program.extend(xdma_offload_ops(
            "pio_bloom",
            point,
            (n_in, n_out),
            (RESULTS, HOST_RESULTS),
            batch_ps,
        )?);
    } else {
        let bar1 = engine_bars(platform, "pio_bloom")?.1;
        program.extend([
            Op::MmioWrite {
                addr: bar1,
                data: data.to_vec(),
                wc: true,
            },
            Op::Fence,
            // The first result is ready one pipeline latency after the
            // last store; the loads then never catch up with the pipeline.
            Op::Compute(first_ps),
            Op::MmioRead {
                addr: bar1 + RESULTS,
                len: n_out as u32,
            },
        ]);
    }
    program.push(Op::Mark(1));
    let offload = PcieOffload {
        workload: "pio_bloom",
        sent: data,
        sent_what: "the elements the CPU sent",
        back: want,
        back_what: "the hashes read back differ from the CPU reference",
        card_results: RESULTS,
        host_results: HOST_RESULTS,
        by_dma: xdma,
    };
    run_pcie_offload(platform, &sp, program, point.seed, trace, offload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(path: &str, x: f64) -> PointResult {
        let enzian = Platform::load("enzian").unwrap();
        let p = Params::new().with("path", ParamValue::Str(path.into()), "test");
        crate::run_point("pio_bloom", &enzian, "data_bytes", x, &p, 3, false).unwrap()
    }

    #[test]
    fn every_path_returns_the_cpu_hashes_and_pays_the_operator_once() {
        for path in ["cpu", "eci_pio", "pcie_pio", "xdma"] {
            let r = point(path, 1024.0);
            assert_eq!(r.stats["bloom.verified"], 8.0, "{path}");
            let m = &r.metrics;
            let work = m["latency_ns"] - 22400.0;
            assert!((m["per_element_ns"] * 8.0 - work).abs() < 1e-6, "{path}");
        }
        // The CPU is its two calibrated numbers exactly.
        assert_eq!(point("cpu", 128.0).metrics["latency_ns"], 25000.0);
        assert_eq!(
            point("cpu", 1280.0).metrics["latency_ns"],
            22400.0 + 26000.0
        );
    }

    #[test]
    fn eci_pays_one_line_exchange_and_the_pipeline_per_element() {
        let one = point("eci_pio", 128.0).metrics["offload_ns"];
        let many = point("eci_pio", 128.0 * 32.0).metrics["offload_ns"];
        // 64 cycles at 322 MHz (198.8 ns) plus one ~850 ns exchange.
        assert!((950.0..1200.0).contains(&one), "{one}");
        let per = many / 32.0;
        assert!((per - one).abs() / one < 0.05, "{per} vs {one}");
    }

    #[test]
    fn pcie_paths_move_the_real_bytes_and_xdma_wins_big_batches() {
        let pio = point("pcie_pio", 2048.0);
        // 16 elements of 64-byte results in 16-byte non-posted reads.
        assert_eq!(pio.stats["system.core.mmio_read_msgs"], 64.0);
        let (x, e) = (point("xdma", 32768.0), point("eci_pio", 32768.0));
        assert!(x.metrics["latency_ns"] < e.metrics["latency_ns"]);
        assert!(
            point("xdma", 128.0).metrics["latency_ns"]
                > point("eci_pio", 128.0).metrics["latency_ns"]
        );
    }

    #[test]
    fn refuses_partial_elements_and_other_axes() {
        let enzian = Platform::load("enzian").unwrap();
        let p = Params::new();
        let e =
            crate::run_point("pio_bloom", &enzian, "data_bytes", 100.0, &p, 1, false).unwrap_err();
        assert!(e.to_string().contains("128-byte elements"), "{e}");
        let e = crate::run_point("pio_bloom", &enzian, "message_bytes", 128.0, &p, 1, false)
            .unwrap_err();
        assert!(e.to_string().contains("sweeps data_bytes"), "{e}");
    }
}
