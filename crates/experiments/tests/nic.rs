//! `nic_loopback` (PIO §6.3): frames verified end to end, percentiles
//! ordered, the paper's qualitative claims, and determinism.

use ccsim_experiments::{run_point, PointResult};
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

/// One nic_loopback point on Enzian: `design`, `packets` frames of
/// `bytes`, and any further workload parameters.
fn nic_point(
    design: &str,
    bytes: f64,
    (packets, seed): (i64, u64),
    more: &[(&str, &str)],
) -> PointResult {
    let enzian = Platform::load("enzian").unwrap();
    let mut p = Params::new()
        .with("design", ParamValue::Str(design.into()), "test")
        .with("packets", ParamValue::Int(packets), "test");
    for (k, v) in more {
        p = p.with(k, ParamValue::Str((*v).into()), "test");
    }
    run_point(
        "nic_loopback",
        &enzian,
        "message_bytes",
        bytes,
        &p,
        seed,
        false,
    )
    .unwrap()
}

fn point(design: &str, bytes: f64, packets: i64, seed: u64) -> PointResult {
    nic_point(design, bytes, (packets, seed), &[])
}

fn m(r: &PointResult, k: &str) -> f64 {
    r.metrics[k]
}

#[test]
fn every_frame_is_verified_and_percentiles_are_ordered() {
    for design in ["pcie_dma", "pcie_pio", "eci_pio"] {
        let r = point(design, 200.0, 12, 3);
        assert_eq!(r.stats["nic.rx_verified"], 12.0, "{design}");
        assert_eq!(r.stats["nic.tx_verified"], 12.0, "{design}");
        for dir in ["rx", "tx"] {
            let p: Vec<f64> = ["p50", "p95", "p99", "p100"]
                .iter()
                .map(|q| m(&r, &format!("{dir}_{q}_ns")))
                .collect();
            assert!(p.windows(2).all(|w| w[0] <= w[1]), "{design} {dir}: {p:?}");
            assert!(r.stats[&format!("nic.{dir}_min_ns")] > 0.0);
        }
    }
}

#[test]
fn eci_receives_small_frames_faster_than_dma_and_pio() {
    // PIO §6.3: PIO over ECI and PCIe offer much lower receive latency than
    // DMA for small packets; ECI beats PCIe PIO.
    let dma = point("pcie_dma", 64.0, 8, 1);
    let pio = point("pcie_pio", 64.0, 8, 1);
    let eci = point("eci_pio", 64.0, 8, 1);
    assert!(m(&eci, "rx_p50_ns") < m(&pio, "rx_p50_ns"));
    assert!(m(&pio, "rx_p50_ns") < m(&dma, "rx_p50_ns"));
    // Fig. 10: both PIO designs transmit faster than DMA, and ECI is
    // slightly slower than PCIe PIO for small packets (two ECI round trips
    // per 128 bytes against posted, write-combined PCIe stores).
    assert!(m(&eci, "tx_p50_ns") < m(&dma, "tx_p50_ns"));
    assert!(m(&pio, "tx_p50_ns") < m(&eci, "tx_p50_ns"));
}

#[test]
fn pcie_pio_receive_grows_with_16_byte_reads() {
    // PIO §4/§6.3: every 16 bytes is one non-posted read, so 8 KiB costs
    // hundreds of microseconds; ECI stays far below.
    let small = point("pcie_pio", 64.0, 2, 1);
    let big = point("pcie_pio", 8192.0, 2, 1);
    let per_read = (m(&big, "rx_p50_ns") - m(&small, "rx_p50_ns")) / (512.0 - 4.0);
    assert!(
        (500.0..1500.0).contains(&per_read),
        "{per_read} ns per 16-byte read"
    );
    let eci = point("eci_pio", 8192.0, 2, 1);
    assert!(m(&eci, "rx_p50_ns") * 4.0 < m(&big, "rx_p50_ns"));
}

#[test]
fn the_8_kib_bound_puts_pcie_pio_at_1_kib_above_this_dma_receive() {
    // PIO §6.3 says PCIe PIO receive is "over 350 us for 8 KiB packets" and
    // "much lower" than DMA up to 1024 bytes. With a read cost linear in
    // size (one serialized 16-byte read after another, PIO §4) the first
    // gives at least 350 us / 8192 B per byte, 43.75 us at 1 KiB, whatever
    // the read's width or round trip: the second can then hold only if DMA
    // receive at 1 KiB is above that. The model's is not (pio-nic's claim 2
    // is declared not held for this reason); when the DMA path changes so
    // that it is, this fails and the claim's verdict must be revisited.
    let floor_1k = 350_000.0 / 8192.0 * 1024.0;
    let pio = point("pcie_pio", 1024.0, 2, 1);
    let dma = point("pcie_dma", 1024.0, 2, 1);
    assert!(m(&pio, "rx_p50_ns") > floor_1k, "{}", m(&pio, "rx_p50_ns"));
    assert!(
        m(&dma, "rx_p50_ns") < floor_1k,
        "DMA receive at 1 KiB {} ns",
        m(&dma, "rx_p50_ns")
    );
}

#[test]
fn same_seed_same_trace() {
    for design in ["pcie_dma", "pcie_pio", "eci_pio"] {
        let a = point(design, 100.0, 4, 7);
        let b = point(design, 100.0, 4, 7);
        let c = point(design, 100.0, 4, 8);
        assert_eq!(a.trace_hash, b.trace_hash, "{design}");
        assert_eq!(a.metrics, b.metrics, "{design}");
        assert!(!a.trace_hash.is_empty());
        assert_ne!(
            a.trace_hash, c.trace_hash,
            "{design}: the seed sets the think times"
        );
    }
}

#[test]
fn bad_parameters_are_refused() {
    let enzian = Platform::load("enzian").unwrap();
    let p = Params::new().with("packets", ParamValue::Int(0), "test");
    assert!(run_point("nic_loopback", &enzian, "message_bytes", 64.0, &p, 1, false).is_err());
    let e = run_point(
        "nic_loopback",
        &enzian,
        "message_bytes",
        1e6,
        &Params::new(),
        1,
        false,
    );
    assert!(e.unwrap_err().to_string().contains("message_bytes"));
}

#[test]
fn the_experiment_file_loads_and_its_lower_bound_claim_is_met() {
    use ccsim_platform::Experiment;
    let e = Experiment::load("pio-nic", &ccsim_experiments::workload_decls())
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(e.x_values(true), &[64.0, 1536.0, 9600.0]);
    // Every series is nic_loopback; each design appears for RX and TX.
    for s in [
        "rx_dma_p50",
        "rx_pio_p99",
        "rx_eci_p50",
        "tx_dma_p99",
        "tx_pio_p50",
        "tx_eci_p99",
    ] {
        assert_eq!(e.series(s).unwrap().workload, "nic_loopback", "{s}");
    }
    // PIO §6.3: PCIe PIO receive 'reaching over 350 us for 8 KiB packets'
    // (a lower bound, the experiment's first claim).
    assert!(e.references.is_empty(), "a bound is a claim, not a point");
    let c = &e.claims[0];
    assert_eq!(c.kind, ccsim_platform::ClaimKind::Bound);
    let (x, lower) = (c.x[0], c.lower.unwrap());
    let s = e.series(&c.series[0]).unwrap();
    let mut p = s.params.clone();
    p.set("packets", ParamValue::Int(2), "test");
    let platform = Platform::load(&s.platform).unwrap();
    let sim = run_point(&s.workload, &platform, "message_bytes", x, &p, 0, false).unwrap();
    assert!(
        sim.metrics[&s.metric] > lower,
        "{} ns",
        sim.metrics[&s.metric]
    );
}

#[test]
fn an_echo_peer_spreads_polling_receivers_but_not_the_held_eci_load() {
    let enzian = Platform::load("enzian").unwrap();
    let run = |design: &str, echo: f64| {
        let p = Params::new()
            .with("design", ParamValue::Str(design.into()), "test")
            .with("packets", ParamValue::Int(40), "test")
            .with("echo_delay_ns", ParamValue::Float(echo), "test");
        run_point("nic_loopback", &enzian, "message_bytes", 64.0, &p, 2, false).unwrap()
    };
    let spread = |r: &PointResult| m(r, "rx_p100_ns") - r.stats["nic.rx_min_ns"];
    // Loopback: a deterministic chain; only clock phases differ for the
    // PIO designs. DMA's DRAM accesses also meet refreshes (tRFC 350 ns on
    // Enzian), one or two a frame at most.
    for design in ["pcie_pio", "eci_pio"] {
        assert!(spread(&run(design, 0.0)) < 20.0, "{design}");
    }
    let dma = spread(&run("pcie_dma", 0.0));
    assert!((20.0..800.0).contains(&dma), "pcie_dma: {dma}");
    // Echo peer: the PIO status poll is met at a random phase of its ~1 us
    // iteration; DMA is fast when read() posted its descriptor in time
    // (write()'s completion hand-off and read()'s setup take ~30 us on
    // Enzian, so echoes up to 60 us reach both modes).
    let pio = run("pcie_pio", 20_000.0);
    assert!((500.0..1300.0).contains(&spread(&pio)), "{}", spread(&pio));
    let dma = run("pcie_dma", 60_000.0);
    assert!(dma.stats["nic.rx_min_ns"] * 2.0 < m(&dma, "rx_p100_ns"));
    // TX does not depend on when frames come back.
    let tx_loopback = m(&run("pcie_pio", 0.0), "tx_p50_ns");
    assert!((m(&pio, "tx_p50_ns") - tx_loopback).abs() < 10.0);
}

#[test]
fn dma_interrupt_completion_costs_the_kworker_hop_and_three_reads() {
    // PIO §6.3: polled and interrupt-driven XDMA "differ little"; not so
    // here (a known gap, pio-nic's notes): the Xilinx driver's interrupt
    // path adds the handler's kworker hand-off and three non-posted
    // register reads, ~10 us a transfer at ThunderX-1 speed, and RX pays
    // for write()'s completion and read()'s.
    let enzian = Platform::load("enzian").unwrap();
    let run = |c: &str| {
        let p = Params::new()
            .with("design", ParamValue::Str("pcie_dma".into()), "test")
            .with("packets", ParamValue::Int(4), "test")
            .with("completion", ParamValue::Str(c.into()), "test");
        run_point("nic_loopback", &enzian, "message_bytes", 64.0, &p, 1, false).unwrap()
    };
    let (poll, irq) = (run("poll"), run("interrupt"));
    assert_eq!(irq.stats["nic.rx_verified"], 4.0);
    let (p, i) = (m(&poll, "rx_p50_ns"), m(&irq, "rx_p50_ns"));
    assert!(i > 1.3 * p && i < 1.6 * p, "poll {p} ns, interrupt {i} ns");
}

fn eci_tx(mode: &str, bytes: f64) -> PointResult {
    nic_point("eci_pio", bytes, (4, 1), &[("eci_tx", mode)])
}

/// Pipelined ECI transmit with the TX lines already writable
/// (`eci_tx_lines = prefetched`), so only the NIC's fetches are timed.
fn eci_tx_prefetched(bytes: f64) -> PointResult {
    nic_point(
        "eci_pio",
        bytes,
        (4, 1),
        &[("eci_tx", "pipelined"), ("eci_tx_lines", "prefetched")],
    )
}

fn point_with(design: &str, bytes: f64, packets: i64, seed: u64, kernel: &str) -> PointResult {
    nic_point(design, bytes, (packets, seed), &[("kernel", kernel)])
}

#[test]
fn pipelined_eci_transmit_overlaps_lines_and_competes_with_pcie_pio() {
    // PIO §6.3, Fig. 10: two ECI round trips per 128 B, yet PCIe PIO
    // "competes well with ECI across all packet sizes" and both PIO designs
    // beat DMA: the frame's lines overlap.
    let pipelined = eci_tx("pipelined", 8192.0);
    let serial = eci_tx("serial", 8192.0);
    for r in [&pipelined, &serial] {
        assert_eq!(r.stats["nic.tx_verified"], 4.0);
        assert_eq!(r.stats["nic.rx_verified"], 4.0);
    }
    // The control line (64 B of the frame) first, then the 64 overflow
    // lines of the frame at once; the serial exchange fetches one at a
    // time.
    assert_eq!(pipelined.stats["nic.max_fetches_in_flight"], 64.0);
    assert_eq!(serial.stats["nic.max_fetches_in_flight"], 1.0);
    let (p, s) = (m(&pipelined, "tx_p50_ns"), m(&serial, "tx_p50_ns"));
    // Serial: ~0.83 us per line; pipelined: a few microseconds (the
    // public driver's order: the write-allocates, the control line, then
    // the overflow lines, each step's lines overlapped).
    assert!(s > 60.0 * 800.0, "{s}");
    assert!(p < 3500.0, "{p}");
    let dma = point("pcie_dma", 8192.0, 2, 1);
    let pio = point("pcie_pio", 8192.0, 2, 1);
    assert!(p < m(&dma, "tx_p50_ns"));
    let ratio = m(&pio, "tx_p50_ns") / p;
    assert!((0.7..1.5).contains(&ratio), "PCIe PIO / ECI = {ratio}");
}

#[test]
fn the_control_line_is_fetched_before_the_rest_of_the_frame() {
    // The public Enzian NIC clean-invalidates the TX control line first (it
    // holds the frame's length and its first 64 bytes) and only then the
    // overflow lines: a frame above 64 B costs one clean-invalidate round
    // trip (~230 ns on the link, plus the DC's and the core's pipelines)
    // more than a one-line frame, while each further line adds only its
    // share of the overlapped fetches and of the wire. The TX lines are
    // writable beforehand, so the store misses' round trip is not in it.
    let one = m(&eci_tx_prefetched(64.0), "tx_p50_ns");
    let two = m(&eci_tx_prefetched(192.0), "tx_p50_ns");
    let four = m(&eci_tx_prefetched(448.0), "tx_p50_ns");
    assert!((300.0..500.0).contains(&(two - one)), "{one} -> {two}");
    assert!(four - two < 100.0, "{two} -> {four}");
}

#[test]
fn one_line_frames_transmit_in_two_round_trips_either_way() {
    // A one-line frame is one exchange in both modes: within the write
    // buffer's store commits of each other (~2 round trips, ~0.6-0.8 us).
    let p = m(&eci_tx("pipelined", 64.0), "tx_p50_ns");
    let s = m(&eci_tx("serial", 64.0), "tx_p50_ns");
    assert!((550.0..700.0).contains(&p), "{p}");
    assert!((700.0..850.0).contains(&s), "{s}");
}

#[test]
fn the_serial_eci_transmit_keeps_the_points_of_the_unpipelined_model() {
    // pio-nic's tx_eci_serial_p50 (100 frames, seed 0): the values the
    // one-line-per-exchange transmit gave before the pipelined one existed,
    // with the control line carrying 64 B of the frame (so 1536 B is 13
    // exchanges, not 12: one more, ~0.99 us, than 11822.846 ns).
    for (bytes, want) in [(64.0, 796.489), (1536.0, 12814.654)] {
        let r = nic_point("eci_pio", bytes, (100, 0), &[("eci_tx", "serial")]);
        assert!(
            (m(&r, "tx_p50_ns") - want).abs() < 1e-3,
            "{bytes}: {}",
            m(&r, "tx_p50_ns")
        );
    }
}

fn tail(r: &PointResult, dir: &str) -> f64 {
    m(r, &format!("{dir}_p99_ns")) / m(r, &format!("{dir}_p50_ns"))
}

#[test]
fn the_dma_drivers_misses_are_counted_and_only_dma_has_a_refresh_tail() {
    // Issue 13 items 3 and 5, PIO §6.3 Table 1: the DMA driver's accesses
    // to the lines the engine wrote miss (the write-back and the RX
    // buffer: at least two per frame), each a DRAM access that can meet a
    // refresh; PCIe PIO and ECI touch no host DRAM.
    let dma = point_with("pcie_dma", 64.0, 1000, 7, "tickless");
    let misses = dma.stats["system.host_memory.cpu_misses"];
    assert!(misses >= 2.0 * 1000.0, "{misses} misses");
    assert!(dma.stats["system.host_memory.dma_invalidations"] >= 2.0 * 1000.0);
    assert!(dma.stats["system.host_memory.refresh_stalls"] > 0.0);
    let pio = point_with("pcie_pio", 64.0, 1000, 7, "tickless");
    // PIO never touches host memory: no DRAM access, so no counters at all.
    assert!(!pio.stats.contains_key("system.host_memory.cpu_misses"));
    assert!(!pio.stats.contains_key("system.host_memory.refresh_stalls"));
    let eci = point_with("eci_pio", 64.0, 1000, 7, "tickless");
    for dir in ["rx", "tx"] {
        // A refresh (tRFC 350 ns) in P99: at least 150 ns above P50.
        let above = m(&dma, &format!("{dir}_p99_ns")) - m(&dma, &format!("{dir}_p50_ns"));
        assert!(above > 150.0, "DMA {dir}: P99 - P50 = {above} ns");
        assert!(tail(&pio, dir) < tail(&dma, dir), "PIO {dir}");
        assert!(tail(&eci, dir) < 1.01, "ECI {dir}: {}", tail(&eci, dir));
    }
}

#[test]
fn the_same_seed_gives_identical_percentiles_over_batches() {
    // 2,000 frames run in three batches of at most 960 (the SRAM's slots).
    let a = point_with("pcie_dma", 64.0, 2000, 11, "tickless");
    let b = point_with("pcie_dma", 64.0, 2000, 11, "tickless");
    assert_eq!(a.metrics, b.metrics);
    assert_eq!(a.stats["nic.batches"], 3.0);
    assert_eq!(a.stats["nic.rx_verified"], 2000.0);
    let c = point_with("pcie_dma", 64.0, 2000, 12, "tickless");
    assert_ne!(a.metrics, c.metrics, "another seed, other refresh phases");
}

#[test]
fn the_tickless_kernel_removes_the_timers_contribution() {
    // PIO §6.3: the stock kernel's 250 Hz timer interrupt; Table 1 uses a
    // tickless kernel. ~950 frames of ~50 us span ~47 ms: about twelve.
    let stock = point_with("pcie_dma", 64.0, 950, 5, "stock");
    let tickless = point_with("pcie_dma", 64.0, 950, 5, "tickless");
    let ticks = stock.stats["system.core.timer_ticks"];
    assert!((9.0..=15.0).contains(&ticks), "{ticks} ticks");
    assert!(!tickless.stats.contains_key("system.core.timer_ticks"));
    // The handler's 4 us shows in the worst frame and nowhere near P50.
    let (s100, t100) = (
        m(&stock, "rx_p100_ns").max(m(&stock, "tx_p100_ns")),
        m(&tickless, "rx_p100_ns").max(m(&tickless, "tx_p100_ns")),
    );
    assert!(s100 > t100 + 2000.0, "{s100} vs {t100}");
    assert_eq!(m(&stock, "rx_p50_ns"), m(&tickless, "rx_p50_ns"));
}

#[test]
fn the_dma_pings_misses_are_the_lines_the_engine_wrote_by_part() {
    // Issue 13 item 3, PIO §6.3 ('dominated by cache misses manipulating
    // DMA data structures in main memory'): the misses the host memory
    // counts are exactly the named parts the Xilinx driver's path gives
    // (the received frame's lines, the shared write-back line, the line
    // of the C2H stream result records), plus the first ping's zeroing of
    // the records, which finds their line cold.
    use ccsim_experiments::nic::dma_ping_misses;
    use ccsim_pcie::driver::Completion;
    // (Up to four descriptors' 32-byte records share one 128-byte line.)
    for (bytes, frame_lines) in [(64u64, 1), (1024, 8), (9600, 75)] {
        let parts = dma_ping_misses(bytes, Completion::Poll, 128);
        assert_eq!(
            (parts.rx_buffer, parts.writeback, parts.results),
            (frame_lines, 2, 1),
            "{bytes} B"
        );
        let r = nic_point("pcie_dma", bytes as f64, (50, 5), &[]);
        let misses = r.stats["system.host_memory.cpu_misses"];
        assert_eq!(misses, (50 * parts.total() + 1) as f64, "{bytes} B");
    }
    // With interrupts there is no write-back to poll.
    let parts = dma_ping_misses(64, Completion::Interrupt, 128);
    assert_eq!(parts.total(), 1 + 1);
    let r = nic_point("pcie_dma", 64.0, (50, 5), &[("completion", "interrupt")]);
    assert_eq!(
        r.stats["system.host_memory.cpu_misses"],
        (50 * parts.total() + 1) as f64
    );
}

#[test]
fn public_driver_order_puts_the_tx_lines_write_allocate_in_the_frame() {
    // enzian-pio-nic sw/eci/core.c pionic_tx stores the frame into lines the
    // NIC clean-invalidated for the previous frame, with no prefetch: the
    // overflow lines' write-allocate round trips (overlapped in the
    // ThunderX-1's store misses) fall inside the TX latency, which the
    // public harness times from the CPU holding the frame (data/eci/plot.py:
    // exit - host_got_tx_buf - half the ECI round trip).
    let run = |lines: &str| {
        nic_point(
            "eci_pio",
            1536.0,
            (4, 1),
            &[("eci_tx", "pipelined"), ("eci_tx_lines", lines)],
        )
    };
    let (held, missed) = (run("prefetched"), run("store_miss"));
    for r in [&held, &missed] {
        assert_eq!(r.stats["nic.tx_verified"], 4.0);
        assert_eq!(r.stats["nic.rx_verified"], 4.0);
    }
    let (h, s) = (m(&held, "tx_p50_ns"), m(&missed, "tx_p50_ns"));
    // About one more ECI round trip (~0.4 us: the 11 overflow lines'
    // write-allocates overlap; one after another they would add ~4 us).
    assert!(
        s > h + 300.0 && s < h + 1000.0,
        "prefetched {h} ns, store_miss {s} ns"
    );
    // RX is untouched (up to a clock phase).
    let (rh, rs) = (m(&held, "rx_p50_ns"), m(&missed, "rx_p50_ns"));
    assert!((rh - rs).abs() < 1.0, "rx {rh} vs {rs}");
}
