//! `pcie_bench` — the DMA microbenchmarks of pcie-bench (Neugebauer et
//! al., SIGCOMM'18; the firmware is github.com/pcie-bench/pciebench-nfp):
//! the **device** issues DMA reads and writes of x bytes to a warm host
//! buffer and times them itself.
//!
//! ```text
//!  host: programs the engine once (INLINE src/dst/len, DESC_COUNT, RUN|INLINE|REPEAT)
//!  device: n DMA commands back to back, no descriptor fetch from the host
//!     LAT_RD   one read of x bytes, one outstanding:   MRd ─► RC ─► LLC ─► CplD(s)
//!     LAT_WRRD a write of x bytes, then a read of the same x bytes
//!     BW_RD    n reads of x bytes, up to max_tags outstanding
//!     BW_WR    n posted writes of x bytes
//!     BW_RDWR  n reads and n writes at the same time (both directions)
//! ```
//!
//! pcie-bench's firmware on the NFP-6000 issues DMA commands from its own
//! cores and timestamps them on the card; so here latency is measured on
//! the engine, from the command (the doorbell it gets) to the last
//! completion, and the host's driver costs do not count. The engine's
//! `doorbell_cycles` are the card's command issue latency and
//! `desc_cycles` its per-command cost (platforms/nfp6000-e5.toml says
//! where each comes from). "Warm cache" is the host memory component's
//! latency: the platform sets it to an LLC hit through DDIO.
//!
//! Every byte moved is checked: reads land in device memory equal to the
//! host buffer, writes land in the host buffer equal to device memory, and
//! LAT_WRRD reads back what it wrote.

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::dma::{regs, C2H, H2C};
use ccsim_pcie::system::PcieSystem;
use ccsim_platform::Platform;

use crate::{
    bytes_point, driver_layout, finish, ns, pattern, result, system_params, werr, MetricSpec,
    PointResult, RunError, WorkloadInfo, REQ_BUF, WRITEBACK,
};

/// Host buffer the device writes (LAT_WRRD and BW_WR).
const WR_BUF: u64 = 0x3_0000_0000;
/// Device-memory offset where reads land (away from the writes' source).
const READBACK: u64 = 1 << 24;

/// The benchmarks (pcie-bench's names; pciebench-nfp me/pciebench.h has
/// them as LAT_DMA_RD, LAT_DMA_WRRD, BW_DMA_RD, BW_DMA_WR, BW_DMA_RW).
const BENCHES: &[&str] = &["LAT_RD", "LAT_WRRD", "BW_RD", "BW_WR", "BW_RDWR"];

pub(crate) static PCIE_BENCH: WorkloadInfo = WorkloadInfo {
    name: "pcie_bench",
    description: "pcie-bench's device-issued DMA microbenchmarks (Neugebauer et al., SIGCOMM'18): LAT_RD (one read of x bytes), LAT_WRRD (a write then a read of the same x bytes), BW_RD / BW_WR / BW_RDWR (many x-byte DMAs outstanding), timed on the device; x = message_bytes.",
    params: &[
        ParamSpec { name: "bench", kind: ParamKind::Enum(BENCHES), default: ParamDefault::Str("LAT_RD"), unit: "", range: ParamRange::ANY, from: "pcie-bench-nfp me/pciebench.h: the DMA latency and bandwidth tests", description: "LAT_RD, LAT_WRRD: latency of one DMA; BW_RD, BW_WR, BW_RDWR: bandwidth of many." },
        ParamSpec { name: "transfers", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "DMAs", range: ParamRange::at_least(0.0), from: "assumed: enough DMAs to reach steady state (4 MiB worth, 512 to 16384; pcie-bench runs 8 Mi DMAs, me/pciebench.h PCIEBENCH_BW_TRANS)", description: "DMAs per direction in the bandwidth benchmarks (0: 4 MiB worth, between 512 and 16384)." },
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Latency benchmarks: DMA command to its last completion, on the device (LAT_WRRD: the write and the read). Bandwidth benchmarks: the whole run." },
        MetricSpec { name: "bandwidth_gbits", unit: "Gb/s", description: "Bandwidth benchmarks: steady-state DMA completion rate times x, in Gb/s of payload (BW_RDWR: the mean of the two directions); latency benchmarks: x over the latency." },
    ],
    check: None,
    run: |p| bytes_point(pcie_bench, "pcie_bench", p),
};

/// Host ops that start `n` device-issued DMAs of `x` bytes on channel `ch`
/// (host address `host`, card address `card`), then wait for the status
/// write-back `n`.
fn start_stream(bar0: u64, ch: usize, host: u64, card: u64, x: u64, n: u32) -> Vec<Op> {
    let base = bar0 + ch as u64 * regs::CHANNEL_STRIDE;
    let mmio = |off: u64, data: Vec<u8>| Op::MmioWrite {
        addr: base + off,
        data,
        wc: false,
    };
    let (src, dst) = if ch == H2C {
        (host, card)
    } else {
        (card, host)
    };
    let wb = WRITEBACK + ch as u64 * 64;
    let mut inline = src.to_le_bytes().to_vec();
    inline.extend_from_slice(&dst.to_le_bytes());
    inline.extend_from_slice(&(x as u32).to_le_bytes());
    let control = regs::CTRL_RUN | regs::CTRL_INLINE | regs::CTRL_REPEAT | regs::CTRL_WRITEBACK;
    vec![
        Op::Store {
            addr: wb,
            data: vec![0; 4],
        },
        Op::Fence,
        mmio(regs::INLINE_SRC, inline),
        mmio(regs::DESC_COUNT, n.to_le_bytes().to_vec()),
        mmio(regs::WB_ADDR, wb.to_le_bytes().to_vec()),
        mmio(regs::CONTROL, control.to_le_bytes().to_vec()),
    ]
}

fn wait(ch: usize, n: u32) -> Op {
    Op::PollU32 {
        addr: WRITEBACK + ch as u64 * 64,
        value: n,
        loop_instructions: 20,
    }
}

/// Steady-state completion rate of `done` times `x`, in Gb/s (skipping
/// the first quarter while the pipeline fills).
fn rate_gbps(done: &[Tick], x: u64) -> f64 {
    let k = done.len() / 4;
    let span = done[done.len() - 1] - done[k];
    ((done.len() - 1 - k) as u64 * x * 8) as f64 / span as f64 * 1000.0
}

/// One DMA's latency on the engine: its channel's last doorbell to its
/// first completion.
fn dma_latency(sys: &PcieSystem, ch: usize) -> Tick {
    let e = sys.engine();
    e.done_times(ch)[0] - e.doorbell_times(ch).last().expect("doorbell")
}

fn pcie_bench(
    platform: &Platform,
    x: u64,
    params: &Params,
    seed: u64,
    trace: TraceMode,
) -> Result<PointResult, RunError> {
    let bench = params.str("bench").to_string();
    if !BENCHES.contains(&bench.as_str()) {
        return Err(werr(format!(
            "pcie_bench: bench = {bench:?} is not a pcie-bench benchmark (known: {})",
            BENCHES.join(", ")
        )));
    }
    let sp = system_params(platform, "pcie_bench")?;
    let bar0 = driver_layout(platform, "pcie_bench")?.bar0;
    let n = match params.uint("transfers") {
        0 => ((4u64 << 20) / x).clamp(512, 16384),
        m => m,
    };
    if x > u32::MAX as u64 || n > u32::MAX as u64 {
        return Err(werr("pcie_bench: x and transfers must fit 32 bits"));
    }
    let streams = bench.starts_with("BW_");
    let n = if streams { n as u32 } else { 1 };
    let reads = bench != "BW_WR";
    let writes = bench == "LAT_WRRD" || bench == "BW_WR" || bench == "BW_RDWR";
    let len = n as u64 * x;
    let host_data = pattern(len, 11);
    let card_data = pattern(len, 12);
    let mut program = vec![Op::Mark(0)];
    match bench.as_str() {
        "LAT_WRRD" => {
            // The write, then the read of the same host bytes.
            program.extend(start_stream(bar0, C2H, WR_BUF, 0, x, 1));
            program.push(wait(C2H, 1));
            program.extend(start_stream(bar0, H2C, WR_BUF, READBACK, x, 1));
            program.push(wait(H2C, 1));
        }
        _ => {
            if reads {
                program.extend(start_stream(bar0, H2C, REQ_BUF, READBACK, x, n));
            }
            if writes {
                program.extend(start_stream(bar0, C2H, WR_BUF, 0, x, n));
            }
            if reads {
                program.push(wait(H2C, n));
            }
            if writes {
                program.push(wait(C2H, n));
                // The host sees the write-back after the last write's data
                // (posted writes stay in order).
                program.push(Op::Mark(2));
            }
        }
    }
    program.push(Op::Mark(1));
    let (h, c) = (host_data.clone(), card_data.clone());
    let mut sys = PcieSystem::build(&sp, program, seed, trace, move |host, card| {
        host.data.write(REQ_BUF, &h);
        card.data.write(0, &c)
    })
    .map_err(crate::model_err(platform))?;
    finish(&mut sys, "pcie_bench")?;
    // Real bytes: every DMA moved what it should have.
    if bench == "LAT_WRRD" {
        let wrote = sys.host_memory().data.read(WR_BUF, x as usize);
        let back = sys.device_memory().data.read(READBACK, x as usize);
        if wrote != card_data || back != card_data {
            return Err(werr(
                "pcie_bench: LAT_WRRD did not read back the bytes it wrote",
            ));
        }
    } else {
        if reads && sys.device_memory().data.read(READBACK, len as usize) != host_data {
            return Err(werr(
                "pcie_bench: device memory does not hold the host buffer after the DMA reads",
            ));
        }
        if writes && sys.host_memory().data.read(WR_BUF, len as usize) != card_data {
            return Err(werr(
                "pcie_bench: the host buffer does not hold device memory after the DMA writes",
            ));
        }
    }
    let (latency, bandwidth) = if streams {
        let core = sys.core();
        let run = core.mark(1).expect("mark") - core.mark(0).expect("mark");
        let e = sys.engine();
        let mut rates = Vec::new();
        if reads {
            // Reads complete on the device: the steady-state rate of its
            // completions.
            rates.push(rate_gbps(e.done_times(H2C), x));
        }
        if writes {
            // A posted write is done on the device when it leaves the
            // engine, which the link's queue decouples from the wire: the
            // rate is the data over the time from the command to the host
            // seeing the write-back that follows the last write.
            let span = core.mark(2).expect("mark") - e.doorbell_times(C2H)[0];
            rates.push((len * 8) as f64 / span as f64 * 1000.0);
        }
        // BW_RDWR: the rate of each direction, averaged (the authors' model,
        // pcie-bench/pcie-model mem_bw.read_write, takes reads and writes
        // as symmetric and reports one direction).
        (run, rates.iter().sum::<f64>() / rates.len() as f64)
    } else {
        let mut lat = dma_latency(&sys, H2C);
        if bench == "LAT_WRRD" {
            lat += dma_latency(&sys, C2H);
        }
        (lat, (x * 8) as f64 / lat as f64 * 1000.0)
    };
    let metrics = BTreeMap::from([
        ("latency_ns".to_string(), ns(latency)),
        ("bandwidth_gbits".to_string(), bandwidth),
    ]);
    Ok(result(&sys, metrics, trace))
}
