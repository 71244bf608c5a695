//! `nic_loopback` — the PIO paper's NIC experiment (§6.3, Figs. 8–10,
//! Table 1): RX and TX latency percentiles of x-byte frames on three 100
//! Gb/s NIC designs on Enzian, with the MAC in near-end loopback as in the
//! paper.
//!
//! Each run sends `packets` frames one at a time (a ping): the software
//! waits a seeded random think time, has frame `i` (its own byte pattern) in
//! registers, **transmits** it, and then **receives** the same frame when the
//! MAC loops it back; the received bytes are compared with the sent ones.
//!
//! * `pcie_dma` (Fig. 8a): TX copies the frame behind a 64-byte header into
//!   a DMA buffer and makes a `write()` on the XDMA H2C channel (the
//!   `dma_driver` model: real descriptors in host memory, a doorbell, a
//!   polled status write-back); RX makes a `read()` on the C2H channel into
//!   a host buffer and loads it. The C2H read of the NIC's RX FIFO waits for
//!   the frame's bytes, as the XDMA stream interface does, and the engine
//!   writes a stream result record per descriptor that the driver reads
//!   back ([`DmaPingMisses`] counts what of all this misses).
//! * `pcie_pio` (Fig. 8b): TX is write-combined MMIO stores of the frame into
//!   the FPGA SRAM, a fence, and the header store as the doorbell; RX polls
//!   the RX status register with uncached MMIO reads (one non-posted round
//!   trip each) and then loads the frame with uncached 16-byte MMIO reads.
//! * `eci_pio` (Fig. 8c): the two-line protocol of Fig. 5b over the
//!   simulated DC, on the public Enzian NIC's frame layout: a control line
//!   with 64 B of control information and the frame's first 64 B, then
//!   128 B overflow lines. RX is one line per exchange; TX (`eci_tx =
//!   pipelined`, the default) stores the whole frame into lines the driver
//!   holds writable, signals once, and the NIC fetches the control line
//!   and then every overflow line at once
//!   (`eci_tx = serial`: one line per exchange). The CPU-side software and
//!   the run in [`eci`], the NIC logic on the DC's application interface in
//!   [`ccsim_devices::nic::eci`].
//!
//! **Latencies** (PIO §6.3): TX = frame in registers to its last beat on
//! the MAC's egress streaming interface; RX = its last beat on the ingress
//! interface to the software holding the whole frame (DMA: loaded from the
//! host buffer; PIO: the last MMIO load done; ECI: the last line loaded).
//!
//! **Sources of variation** between frames, all seeded: the think time
//! (uniform in `[0, think_ns)`) moves each ping's phase against the 250 MHz
//! NIC clock, the 250 MHz XDMA clock and the core clock (a few ns: the
//! loopback ping is otherwise a deterministic chain, so the receive polling
//! loops meet the frame at the same phase every time). With
//! `echo_delay_ns > 0` each frame comes back a uniform extra delay later,
//! as from a remote echo peer: the arrival then falls at a random phase of
//! the PIO status-polling loop (one ~1 us non-posted read per iteration)
//! and of the DMA write-back poll, and before or after the DMA `read()` has
//! posted its descriptor; the ECI CPU waits in a held load and has no
//! polling phase.
//!
//! **Where tails come from** (PIO §6.3, Table 1), each seeded and each
//! switched on by the platform or the `kernel` parameter:
//!
//! * the 250 Hz timer interrupt of a stock kernel (`kernel = "stock"`: the
//!   core's `timer_hz` = 250, the platform's `tick_ns` per tick); the
//!   tickless kernel of Table 1 (`kernel = "tickless"`, the default) has
//!   none;
//! * DRAM refresh in host memory (the platform's `refresh_interval_ns`,
//!   `refresh_ns`): only the DMA design's path touches host DRAM (its
//!   driver's misses, the engine's descriptor fetch, data and write-back),
//!   so only it can stall on a refresh;
//! * the driver's cache misses (the platform's `cpu_line_bytes`): lines the
//!   engine wrote (the RX buffer, the status write-back) miss and queue
//!   with the engine's own DRAM traffic;
//! * PCIe link-level replay (the link's `bit_error_rate`): off on the
//!   shipped platforms, whose links run at the PCIe specification's 10^-12
//!   bit error rate or better, a rate that replays about one TLP in 10^8
//!   bytes, i.e. none in a run of 10,000 jumbo frames.
//!
//! The ECI design's CPU side is the coherent LLC model, which has neither a
//! timer nor host DRAM on the NIC's path (the lines are homed in the FPGA's
//! BRAM), so nothing in it can produce a tail.
//!
//! **Batches.** The FPGA SRAM holds [`MAX_FRAMES`] slots, so a run of more
//! frames is split into batches of at most [`MAX_FRAMES`] frames, each a
//! fresh system (batch 0 on the run's seed, batch `b` on a seed drawn from
//! the stream `nic_loopback.batch`), with the driver's structures and the
//! transmit buffers warm in the CPU's caches as in a running system; the
//! percentiles are over every frame of every batch. The think and echo
//! times are drawn for all frames up front from their streams.

pub mod eci;

use std::collections::BTreeMap;

use ccsim_devices::nic::{
    tx_header, MacTiming, NicPcieSystem, MAX_FRAME, MAX_FRAMES, RX_BASE, RX_STATUS, SLOT_BYTES,
    TX_BASE, TX_FRAME,
};
use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::dma::{C2H, H2C, RESULT_BYTES};
use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
use ccsim_platform::EciOptions;
use ccsim_platform::Platform;

use crate::invocation::percentile;
use crate::{
    completion_of, component, driver_for, model_err, pattern, sweeps, system_params, trace_mode,
    werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo, COMPLETION, RING, WRITEBACK,
};
use eci::{run_eci_nic, EciNicConfig};

const PCT_METRICS: [(&str, f64); 4] =
    [("p50", 50.0), ("p95", 95.0), ("p99", 99.0), ("p100", 100.0)];

/// Declaration of `nic_loopback`.
pub static NIC_LOOPBACK: WorkloadInfo = WorkloadInfo {
    name: "nic_loopback",
    description: "PIO §6.3, Figs. 8-10, Table 1: x-byte frames (x = message_bytes) sent and received one at a time through a 100 Gb/s NIC on the FPGA with its MAC in loopback, by PCIe DMA with descriptor rings, PCIe PIO from FPGA SRAM, or ECI PIO (Fig. 5b variant); RX and TX latency percentiles.",
    params: &[
        ParamSpec { name: "design", kind: ParamKind::Enum(&["pcie_dma", "pcie_pio", "eci_pio"]), default: ParamDefault::Str("eci_pio"), unit: "", range: ParamRange::ANY, from: "PIO §6.3, Fig. 8c: ECI PIO", description: "NIC design of PIO Fig. 8: (a) pcie_dma, (b) pcie_pio, (c) eci_pio." },
        ParamSpec { name: "packets", kind: ParamKind::Int, default: ParamDefault::Int(200), unit: "frames", range: ParamRange::between(1.0, 1_000_000.0), from: "assumed: enough frames for P99", description: "Frames sent and received (percentiles over these; runs of more than the SRAM's slots go in batches)." },
        ParamSpec { name: "think_ns", kind: ParamKind::Float, default: ParamDefault::Float(2000.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: a few microseconds of software between frames", description: "Bound of the seeded uniform software think time before each frame (sets each ping's clock and polling phase)." },
        ParamSpec { name: "echo_delay_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "PIO §6.3: near-end loopback, no echo peer", description: "Bound of a seeded uniform extra delay before each frame comes back: 0 is the paper's near-end loopback; above 0 a remote echo peer, which moves each arrival's phase against the receive path (polling loops, DMA descriptor posting)." },
        COMPLETION,
        ParamSpec { name: "eci_tx", kind: ParamKind::Enum(&["pipelined", "serial"]), default: ParamDefault::Str("pipelined"), unit: "", range: ParamRange::ANY, from: "PIO §6.3: ECI TX needs '2 round-trips over ECI for each 128 bytes' yet 'PCIe PIO competes well with ECI across all packet sizes'", description: "eci_pio TX: pipelined, the core stores the whole frame (its write-allocate fetches overlapping in the ThunderX-1 write buffer and misses of thunderx_cpu), signals once, and the NIC fetches the control line and then every other line at once through the DC; serial, one two-round-trip exchange per 128-byte line. RX is one exchange per line either way." },
        ParamSpec { name: "eci_tx_lines", kind: ParamKind::Enum(&["prefetched", "store_miss"]), default: ParamDefault::Str("store_miss"), unit: "", range: ParamRange::ANY, from: "enzian-pio-nic sw/eci/core.c pionic_tx: the public driver stores the frame into its TX lines without making them writable first (store_miss); prefetched is a what-if", description: "eci_pio with eci_tx = pipelined: prefetched, the driver makes its TX lines writable before the frame is in its registers (off the frame's path); store_miss, the public driver's order: the frame's stores land on lines the NIC clean-invalidated for the previous frame, so each overflow line's write-allocate round trip is inside the TX latency (overlapped in the ThunderX-1's store misses)." },
        ParamSpec { name: "irq_core", kind: ParamKind::Enum(&["platform", "submitter", "other"]), default: ParamDefault::Str("platform"), unit: "", range: ParamRange::ANY, from: "assumed: the platform's dma_driver.irq_core; PIO §6.3 frees the measuring core 'from kernel tasks and IRQ processing, with the isolcpus function together with core pinning using taskset' (other)", description: "pcie_dma with completion = interrupt: the core that takes the XDMA channel's MSI-X and runs its kworker (dma_driver.irq_core). platform: the platform's value; submitter: the application's core; other: another core, as on §6.3's isolated core, so the kworker's wake-up of the application is cross-core." },
        ParamSpec { name: "kernel", kind: ParamKind::Enum(&["tickless", "stock"]), default: ParamDefault::Str("tickless"), unit: "", range: ParamRange::ANY, from: "PIO §6.3: Table 1 is measured on a tickless kernel; the other experiments on a stock Ubuntu kernel with its 250 Hz timer", description: "tickless: no periodic timer interrupt (Table 1's kernel); stock: the 250 Hz timer interrupt on the measuring core (PCIe designs; the ECI design's CPU model has no timer)." },
    ],
    metrics: &[
        MetricSpec { name: "rx_p50_ns", unit: "ns", description: "Median RX latency: last ingress beat at the MAC to the whole frame in the software's hands." },
        MetricSpec { name: "rx_p95_ns", unit: "ns", description: "95th percentile RX latency." },
        MetricSpec { name: "rx_p99_ns", unit: "ns", description: "99th percentile RX latency." },
        MetricSpec { name: "rx_p100_ns", unit: "ns", description: "Largest RX latency." },
        MetricSpec { name: "tx_p50_ns", unit: "ns", description: "Median TX latency: frame in the software's registers to its last egress beat at the MAC." },
        MetricSpec { name: "tx_p95_ns", unit: "ns", description: "95th percentile TX latency." },
        MetricSpec { name: "tx_p99_ns", unit: "ns", description: "99th percentile TX latency." },
        MetricSpec { name: "tx_p100_ns", unit: "ns", description: "Largest TX latency." },
    ],
    check: None,
    run,
};

/// Host DMA buffers, one slot per frame.
const TX_BUF: u64 = 0x2_0000_0000;
const RX_BUF: u64 = 0x3_0000_0000;
/// The C2H stream result records (the Xilinx driver's `cyclic_result`, a
/// coherent allocation of its own, after the write-back and per-transfer
/// pages).
const RESULTS: u64 = WRITEBACK + 2 * 4096;
/// The host-memory lines the PCIe DMA design's CPU side touches in one
/// ping (a `write()` of the frame, then a `read()` of it) that the engine
/// wrote since the CPU last held them, by named part: with the CPU's cache
/// state modelled (`cpu_line_bytes`), each is a DRAM miss; every other
/// line the driver touches is a hit.
///
/// Counted from the Xilinx XDMA driver's path (libxdma.c
/// `xdma_xfer_submit`, `transfer_init`/`transfer_build`; cdev_sgdma.c
/// `char_sgdma_read_write`): the descriptors go into a coherent ring the
/// engine only reads, the request, transfer and scatter list are slab
/// objects that the next call gets back from the same per-CPU free list
/// (LIFO, so warm), and the pinned pages' `struct page`s and page tables are
/// the same lines every call (the test reuses its buffers); lines the poll
/// thread or kworker wrote on another core come from the ThunderX-1's
/// shared L2 (its L1s write through, PIO §3), not from DRAM. What the
/// engine writes is what misses:
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaPingMisses {
    /// The received frame's lines (the C2H data the user then loads).
    pub rx_buffer: u64,
    /// The status write-back line, shared by both channels (poll mode):
    /// each channel's poll once its write-back landed (each reset store
    /// hits the line the previous poll fetched). None with interrupts.
    pub writeback: u64,
    /// The C2H stream result records: the lines of the records the
    /// driver reads the received lengths from, which the engine just
    /// wrote (its `memset` of them before the descriptors hits: the line
    /// is the one its read fetched last ping, as in the driver's ring,
    /// where a line of four records is read once per transfer it serves).
    pub results: u64,
}

impl DmaPingMisses {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.rx_buffer + self.writeback + self.results
    }
}

/// [`DmaPingMisses`] for a `frame_bytes` frame in its slot of the receive
/// buffer, with `completion`, on CPU lines of `line_bytes` and descriptors
/// of at most one 4 KiB page.
pub fn dma_ping_misses(frame_bytes: u64, completion: Completion, line_bytes: u64) -> DmaPingMisses {
    // Each slot starts on a page (SLOT_BYTES), so on a line.
    let descriptors = frame_bytes.div_ceil(4096);
    DmaPingMisses {
        rx_buffer: frame_bytes.div_ceil(line_bytes),
        writeback: if completion == Completion::Poll { 2 } else { 0 },
        results: (descriptors * RESULT_BYTES).div_ceil(line_bytes),
    }
}

/// The stock kernel's timer rate (PIO §6.3; CONFIG_HZ=250 of Ubuntu's
/// generic kernels).
const STOCK_TIMER_HZ: f64 = 250.0;
/// Simulated-time limit (PIO RX of jumbo frames costs ~0.6 ms a frame).
const NIC_TIME_LIMIT: Tick = 20 * SEC;

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let (x_name, x, seed, trace) = (point.x_name, point.x, point.seed, point.trace);
    sweeps("nic_loopback", "message_bytes", x_name)?;
    if !((1.0..=MAX_FRAME as f64).contains(&x) && x.fract() == 0.0) {
        return Err(werr(format!(
            "message_bytes = {x}: must be a whole number of bytes from 1 to {MAX_FRAME}"
        )));
    }
    let n = x as u64;
    let packets = params.int("packets");
    let think_ns = params.float("think_ns");
    let mac_params = component(platform, "nic_mac", "nic_loopback")?;
    let mac = MacTiming::from_params(mac_params).map_err(model_err(platform))?;
    let mut rng = SimRng::for_path(seed, "nic_loopback.think");
    let think_ps = (think_ns * 1000.0) as u64;
    let think: Vec<Tick> = (0..packets)
        .map(|_| if think_ps > 0 { rng.below(think_ps) } else { 0 })
        .collect();
    let echo_ns = params.float("echo_delay_ns");
    let echo_ps = (echo_ns * 1000.0) as u64;
    let mut rng = SimRng::for_path(seed, "nic_loopback.echo");
    let echo: Vec<Tick> = (0..packets)
        .map(|_| if echo_ps > 0 { rng.below(echo_ps) } else { 0 })
        .collect();
    let mode = trace_mode(trace);
    let mut batch_seeds = SimRng::for_path(seed, "nic_loopback.batch");
    let (mut tx, mut rx) = (Vec::new(), Vec::new());
    let mut first: Option<(BTreeMap<String, f64>, Option<String>, String)> = None;
    let mut totals: BTreeMap<String, f64> = BTreeMap::new();
    let mut start = 0usize;
    let mut batch = 0u64;
    while start < packets as usize {
        let end = (start + MAX_FRAMES as usize).min(packets as usize);
        let batch_seed = if batch == 0 {
            seed
        } else {
            batch_seeds.next_u64()
        };
        let frames: Vec<Vec<u8>> = (start as u64..end as u64)
            .map(|i| pattern(n, 100 + i))
            .collect();
        let (btx, brx, stats, json, hash) = run_batch(
            platform,
            params,
            &mac,
            &frames,
            (&think[start..end], &echo[start..end]),
            batch_seed,
            mode,
        )?;
        tx.extend(btx);
        rx.extend(brx);
        for (k, v) in &stats {
            if SUMMED.iter().any(|suffix| k.ends_with(suffix)) {
                *totals.entry(k.clone()).or_insert(0.0) += v;
            }
        }
        if first.is_none() {
            first = Some((stats, json, hash));
        }
        start = end;
        batch += 1;
    }
    let (mut stats, trace_json, trace_hash) = first.expect("at least one frame");
    if batch > 1 {
        stats.extend(totals);
        stats.insert("nic.batches".into(), batch as f64);
    }
    let mut metrics = BTreeMap::new();
    for (dir, v) in [("tx", tx), ("rx", rx)] {
        let mut v: Vec<f64> = v.iter().map(|t| *t as f64 / 1000.0).collect();
        v.sort_by(f64::total_cmp);
        for (name, p) in PCT_METRICS {
            metrics.insert(format!("{dir}_{name}_ns"), percentile(&v, p));
        }
        stats.insert(format!("nic.{dir}_min_ns"), v[0]);
    }
    Ok(PointResult {
        metrics,
        stats,
        trace_json,
        trace_events: None,
        trace_hash,
    })
}

/// Statistics that add up over batches (the rest are the first batch's).
const SUMMED: [&str; 9] = [
    "sim.events",
    "nic.rx_verified",
    "nic.tx_verified",
    ".cpu_misses",
    ".cpu_hits",
    ".dma_invalidations",
    ".refresh_stalls",
    ".timer_ticks",
    ".timer_delay_ns",
];

/// One batch of frames (at most the SRAM's slots) on a fresh system.
fn run_batch(
    platform: &Platform,
    params: &Params,
    mac: &MacTiming,
    frames: &[Vec<u8>],
    (think, echo): (&[Tick], &[Tick]),
    seed: u64,
    mode: TraceMode,
) -> Result<Outcome, RunError> {
    Ok(match params.str("design") {
        "eci_pio" => {
            let pipelined_tx = params.str("eci_tx") == "pipelined";
            let mut opts = EciOptions::new(seed, mode);
            if pipelined_tx {
                // The ThunderX-1 core of thunderx_cpu: its misses in flight,
                // its write buffer and its store path into the L2 overlap
                // the frame's lines.
                opts = crate::invocation::with_thunderx_core(
                    opts,
                    platform,
                    "nic_loopback (eci_tx = pipelined)",
                )?;
            } else {
                opts = opts.set(
                    "cpu",
                    "mshrs",
                    ParamValue::Int(1),
                    "nic_loopback: one access at a time orders each exchange's stores before its load",
                );
            }
            let sys = platform
                .coherent_system("invocation", &opts)
                .map_err(RunError::Config)?;
            let cfg = EciNicConfig {
                pipelined_tx,
                fence: pipelined_tx,
                prefetch_tx_lines: params.str("eci_tx_lines") == "prefetched",
            };
            let r = run_eci_nic(sys, mac, frames, (think, echo), cfg)
                .map_err(|e| werr(format!("platform {}: nic_loopback: {e}", platform.name)))?;
            let mut stats = r.stats;
            stats.insert(
                "nic.max_fetches_in_flight".into(),
                r.max_fetches_in_flight as f64,
            );
            stats.insert("sim.events".into(), r.events as f64);
            stats.insert("nic.rx_verified".into(), r.rx_verified as f64);
            stats.insert("nic.tx_verified".into(), r.tx_verified as f64);
            (r.tx_ps, r.rx_ps, stats, None, r.trace_hash)
        }
        design => run_pcie(
            platform,
            design == "pcie_dma",
            params,
            frames,
            (think, echo),
            seed,
            mode,
        )?,
    })
}

type Outcome = (
    Vec<Tick>,
    Vec<Tick>,
    BTreeMap<String, f64>,
    Option<String>,
    String,
);

/// The two PCIe designs: one core program of `frames.len()` pings.
#[allow(clippy::too_many_arguments)]
fn run_pcie(
    platform: &Platform,
    dma: bool,
    params: &Params,
    frames: &[Vec<u8>],
    (think, echo): (&[Tick], &[Tick]),
    seed: u64,
    trace: TraceMode,
) -> Result<Outcome, RunError> {
    let mut sp = system_params(platform, "nic_loopback")?;
    if params.str("kernel") == "stock" {
        sp.core.set(
            "timer_hz",
            ParamValue::Float(STOCK_TIMER_HZ),
            "PIO §6.3: 'the 250 Hz timer interrupt present on all cores' of the stock kernel",
        );
    }
    let driver = match params.str("irq_core") {
        "platform" => driver_for(platform, "nic_loopback")?,
        core => {
            let mut p = component(platform, "dma_driver", "nic_loopback")?.clone();
            p.set(
                "irq_core",
                ParamValue::Str(core.into()),
                "nic_loopback.irq_core",
            );
            DmaDriver::from_params(&p).map_err(model_err(platform))?
        }
    };
    let poll_loop = component(platform, "dma_driver", "nic_loopback")?
        .get("poll_loop_instructions")
        .and_then(|(v, _)| match v {
            ParamValue::Int(i) => Some(*i as u64),
            _ => None,
        })
        .unwrap_or(20);
    let (bar0, bar1) = NicPcieSystem::bars(&sp).map_err(model_err(platform))?;
    let layout = DriverLayout {
        bar0,
        ring: RING,
        writeback: WRITEBACK,
    };
    let completion = completion_of(params);
    let mut program = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let (i, n) = (i as u64, f.len() as u64);
        let slot = i * SLOT_BYTES;
        let mut header = tx_header(n, i);
        header.resize(TX_FRAME as usize, 0);
        program.push(Op::Compute(think[i as usize]));
        program.push(Op::Mark(2 * i as u32));
        if dma {
            // write(): copy the frame behind its header into the DMA buffer,
            // then one H2C transfer of header + frame.
            let mut buf = header;
            buf.extend_from_slice(f);
            program.push(Op::Store {
                addr: TX_BUF + slot,
                data: buf,
            });
            let tx = Transfer {
                channel: H2C,
                host: TX_BUF + slot,
                card: TX_BASE + slot,
                len: TX_FRAME + n,
            };
            program.extend(driver.transfer(&[tx], &layout, completion, 0));
            // read(): one C2H transfer from the RX FIFO into a host buffer,
            // then the frame is loaded from it.
            let rx = Transfer {
                channel: C2H,
                host: RX_BUF + slot,
                card: RX_BASE + slot,
                len: n,
            };
            // The NIC's receive path is an AXI-Stream C2H channel: the
            // engine writes a result record per descriptor.
            program.extend(driver.transfer_stream(&[rx], &layout, completion, 1, Some(RESULTS)));
            program.push(Op::Load {
                addr: RX_BUF + slot,
                len: n as u32,
            });
            program.push(Op::Fence);
        } else {
            program.push(Op::MmioWrite {
                addr: bar1 + TX_BASE + slot + TX_FRAME,
                data: f.clone(),
                wc: true,
            });
            program.push(Op::Fence);
            // The doorbell: the header, uncached, after the frame.
            program.push(Op::MmioWrite {
                addr: bar1 + TX_BASE + slot,
                data: tx_header(n, i),
                wc: false,
            });
            program.push(Op::PollMmioU32 {
                addr: bar1 + RX_STATUS,
                value: i as u32 + 1,
                loop_instructions: poll_loop,
            });
            program.push(Op::MmioRead {
                addr: bar1 + RX_BASE + slot,
                len: n as u32,
            });
        }
        program.push(Op::Mark(2 * i as u32 + 1));
    }
    let nic_params = component(platform, "nic_mac", "nic_loopback")?;
    let slots = frames.len() as u64 * SLOT_BYTES;
    // A running driver: its ring, write-back page (with its per-transfer
    // structures) and the recycled transmit buffers are warm in the CPU's
    // caches (no-ops unless the host memory models the cache state).
    let warm = |host: &mut ccsim_pcie::memory::Memory| {
        host.warm(RING, 4096);
        host.warm(WRITEBACK, 2 * 4096);
        host.warm(TX_BUF, slots);
    };
    let mut sys = NicPcieSystem::build(&sp, nic_params, echo.to_vec(), program, seed, trace, warm)
        .map_err(model_err(platform))?;
    let outcome = sys.sim.run_until(NIC_TIME_LIMIT);
    if !sys.core().finished() {
        // Never a silent number: what is stuck, and the state of the core,
        // the root complex, the engine, the link and the messages.
        let what = match (&sys.core().timed_out, outcome) {
            (Some(t), _) => t.clone(),
            (None, RunOutcome::Drained) => {
                "no event left but the core's program did not finish (a deadlock)".to_string()
            }
            (None, _) => format!(
                "the core's program did not finish within {} s of simulated time (a hang)",
                NIC_TIME_LIMIT / SEC
            ),
        };
        let mut report = vec![format!("nic_loopback: {what}")];
        report.extend(sys.stuck_report());
        return Err(werr(report.join("\n  ")));
    }
    let (core, nic) = (sys.core(), sys.nic());
    let (mut tx, mut rx) = (Vec::new(), Vec::new());
    let (mut tx_ok, mut rx_ok) = (0, 0);
    for (i, f) in frames.iter().enumerate() {
        let slot = i as u64 * SLOT_BYTES;
        let sent = nic.data.read(TX_BASE + slot + TX_FRAME, f.len());
        tx_ok += usize::from(&sent == f);
        let got = if dma {
            core.loads
                .iter()
                .find(|(a, _)| *a == RX_BUF + slot)
                .map(|(_, d)| d)
        } else {
            core.mmio_loads.get(i).map(|(_, d)| d)
        };
        rx_ok += usize::from(got == Some(f));
        let (Some(start), Some(end), Some(last), Some((arrived, _))) = (
            core.mark(2 * i as u32),
            core.mark(2 * i as u32 + 1),
            nic.tx_last_beat.get(&(i as u64)),
            nic.rx_last_beat.get(&(i as u64)),
        ) else {
            return Err(werr(format!(
                "nic_loopback: frame {i} was not sent and received"
            )));
        };
        tx.push(last - start);
        rx.push(end.checked_sub(*arrived).ok_or_else(|| {
            werr(format!(
                "nic_loopback: frame {i} received before it arrived"
            ))
        })?);
    }
    if tx_ok != frames.len() || rx_ok != frames.len() {
        return Err(werr(format!(
            "nic_loopback: {tx_ok} of {} frames reached the MAC intact and {rx_ok} came back intact",
            frames.len()
        )));
    }
    let mut stats = sys.sim.stats().flatten();
    // Only with link faults configured.
    stats.extend(sys.fault_stats());
    // Only with the cache state, refresh or the timer modelled.
    stats.extend(sys.host_memory().cache_stats("system.host_memory"));
    stats.extend(sys.core().tick_stats("system.core"));
    stats.insert("sim.events".into(), sys.sim.events_processed() as f64);
    stats.insert("nic.rx_verified".into(), rx_ok as f64);
    stats.insert("nic.tx_verified".into(), tx_ok as f64);
    let json = if trace == TraceMode::Full {
        sys.sim.trace_json()
    } else {
        None
    };
    Ok((
        tx,
        rx,
        stats,
        json,
        sys.sim.trace_hash().unwrap_or_default(),
    ))
}
