//! The DMA driver's path through a host memory that models the CPU's cache
//! state and DRAM refresh, and a core with the kernel's timer interrupt
//! (issue 13, items 3 and 5): device writes invalidate the CPU's lines so
//! the driver's next access misses and costs a DRAM access; a refresh
//! stalls the access that meets it at its seeded time; the timer takes the
//! core away only when it ticks.

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::dma::C2H;
use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
use ccsim_pcie::system::{PcieSystem, PcieSystemParams};

const RING: u64 = 0x1_0000_0000;
const WRITEBACK: u64 = 0x1_0010_0000;
const RX: u64 = 0x3_0000_0000;
const DRAM_NS: f64 = 100.0;
const HIT_NS: f64 = 10.0;

fn params(memory: &[(&str, ParamValue)], core: &[(&str, ParamValue)]) -> PcieSystemParams {
    let mut p = PcieSystemParams {
        host_memory: Params::new()
            .with("latency_ns", ParamValue::Float(DRAM_NS), "test")
            .with("bandwidth_gbps", ParamValue::Float(0.0), "test")
            .with("cpu_line_bytes", ParamValue::Int(64), "test")
            .with("cpu_hit_ns", ParamValue::Float(HIT_NS), "test"),
        ..Default::default()
    };
    for (k, v) in memory {
        p.host_memory.set(k, v.clone(), "test");
    }
    for (k, v) in core {
        p.core.set(k, v.clone(), "test");
    }
    p
}

/// A 128-byte load and a fence between marks `m` and `m + 1`.
fn timed_load(m: u32) -> Vec<Op> {
    vec![
        Op::Mark(m),
        Op::Load { addr: RX, len: 128 },
        Op::Fence,
        Op::Mark(m + 1),
    ]
}

fn span(sys: &PcieSystem, m: u32) -> Tick {
    sys.core().mark(m + 1).unwrap() - sys.core().mark(m).unwrap()
}

#[test]
fn lines_the_device_wrote_miss_and_each_miss_costs_a_dram_access() {
    let p = params(&[], &[]);
    let layout = DriverLayout {
        bar0: 0,
        ring: RING,
        writeback: WRITEBACK,
    };
    let mut program = timed_load(0); // cold: both lines miss
    program.extend(timed_load(2)); // held: both hit
    let driver = DmaDriver::from_params(&Params::new()).unwrap();
    let mut sys0 = PcieSystem::build(&p, vec![], 1, TraceMode::Off, |_, _| {}).unwrap();
    let bar0 = sys0.bar0;
    sys0.sim.run();
    let layout = DriverLayout { bar0, ..layout };
    // The engine writes the two lines of RX from device memory.
    program.extend(driver.transfer(
        &[Transfer {
            channel: C2H,
            host: RX,
            card: 0,
            len: 128,
        }],
        &layout,
        Completion::Poll,
        0,
    ));
    program.extend(timed_load(4)); // after the DMA write: both miss again
    let mut sys = PcieSystem::build(&p, program, 1, TraceMode::Off, |_, dev| {
        dev.data.write(0, &[7u8; 128])
    })
    .unwrap();
    sys.sim.run();
    assert!(sys.core().finished());
    let (cold, hit, after_dma) = (span(&sys, 0), span(&sys, 2), span(&sys, 4));
    // A miss is a DRAM access, a hit the cache's latency: the difference
    // is exactly the two latencies' (same issue and fence costs).
    assert_eq!(cold - hit, ((DRAM_NS - HIT_NS) * 1000.0) as Tick);
    assert_eq!(
        after_dma, cold,
        "the device's write makes the lines miss again"
    );
    let m = sys.host_memory();
    // RX's two lines and the status write-back line the CPU had cleared.
    assert_eq!(m.dma_invalidations, 3);
    assert!(!m.cpu_holds(RX + 4096), "a line never touched is not held");
    assert!(m.cpu_holds(RX), "the last load brought the line back");
    // The data is the device's.
    assert_eq!(sys.core().loads.last().unwrap().1, vec![7u8; 128]);
    let stats: std::collections::BTreeMap<_, _> = m.cache_stats("host").into_iter().collect();
    assert_eq!(stats["host.cpu_misses"], m.cpu_misses as f64);
    assert!(m.cpu_misses > 4, "RX twice and the write-back poll");
}

#[test]
fn without_the_cache_state_every_cpu_access_is_a_dram_access() {
    let mut p = params(&[], &[]);
    p.host_memory
        .set("cpu_line_bytes", ParamValue::Int(0), "test: off");
    let mut program = timed_load(0);
    program.extend(timed_load(2));
    let mut sys = PcieSystem::build(&p, program, 1, TraceMode::Off, |_, _| {}).unwrap();
    sys.sim.run();
    assert_eq!(span(&sys, 0), span(&sys, 2));
    assert!(sys.host_memory().cache_stats("host").is_empty());
}

#[test]
fn a_refresh_stalls_the_access_that_meets_it_at_its_seeded_time() {
    let refresh = [
        ("refresh_interval_ns", ParamValue::Float(7800.0)),
        ("refresh_ns", ParamValue::Float(350.0)),
    ];
    let p = params(&refresh, &[]);
    // Learn the seeded phase of seed 5 (drawn at init, before any access).
    let mut probe = PcieSystem::build(&p, vec![], 5, TraceMode::Off, |_, _| {}).unwrap();
    probe.sim.run();
    let phase = probe.host_memory().refresh_phase();
    assert!(phase < 7_800_000);
    let mut probe2 = PcieSystem::build(&p, vec![], 5, TraceMode::Off, |_, _| {}).unwrap();
    probe2.sim.run();
    assert_eq!(probe2.host_memory().refresh_phase(), phase, "seeded");
    // A cold load arriving 100 ns into the second refresh window waits
    // the remaining 250 ns; one arriving just after the window does not.
    let run = |arrive: Tick| {
        let mut program = vec![Op::Compute(arrive)];
        program.extend(timed_load(0));
        let mut sys = PcieSystem::build(&p, program, 5, TraceMode::Off, |_, _| {}).unwrap();
        sys.sim.run();
        (span(&sys, 0), sys.host_memory().refresh_stalls)
    };
    let window = phase + 7_800_000;
    let (inside, stalls_inside) = run(window + 100_000);
    let (after, stalls_after) = run(window + 350_000);
    assert_eq!(inside - after, 250_000, "the rest of tRFC");
    assert_eq!((stalls_inside, stalls_after), (1, 0));
}

#[test]
fn the_timer_delays_the_program_only_when_it_ticks() {
    let compute = vec![Op::Mark(0), Op::Compute(100_000_000), Op::Mark(1)];
    let run = |core: &[(&str, ParamValue)]| {
        let p = params(&[], core);
        let mut sys = PcieSystem::build(&p, compute.clone(), 3, TraceMode::Off, |_, _| {}).unwrap();
        sys.sim.run();
        (
            span(&sys, 0),
            sys.core().ticks,
            sys.core().tick_stats("core"),
        )
    };
    // Tickless: exactly the 100 us of work, and no statistics.
    let (tickless, ticks, stats) = run(&[("tick_ns", ParamValue::Float(2000.0))]);
    assert_eq!((tickless, ticks), (100_000_000, 0));
    assert!(stats.is_empty());
    // 100 kHz (a 10 us period) and 2 us per tick: the 100 us of work meets
    // 10 ticks, plus the ones that fall into the 20 us the handlers add.
    let (stock, ticks, _) = run(&[
        ("timer_hz", ParamValue::Float(100_000.0)),
        ("tick_ns", ParamValue::Float(2000.0)),
    ]);
    assert!((12..=13).contains(&ticks), "{ticks} ticks");
    assert_eq!(stock, 100_000_000 + ticks * 2_000_000);
}

#[test]
fn a_stream_c2h_transfer_writes_a_result_record_that_the_driver_reads_back() {
    // XDMA's C2H stream write-back (PG195; libxdma.c transfer_build zeroes
    // each record, xdma_xfer_submit reads its length): the engine writes a
    // 32-byte record per descriptor behind the data, so the driver's read
    // of it finds a line the engine wrote, and misses.
    const RESULTS: u64 = WRITEBACK + 0x2000;
    let p = params(&[], &[]);
    let mut sys0 = PcieSystem::build(&p, vec![], 1, TraceMode::Off, |_, _| {}).unwrap();
    sys0.sim.run();
    let layout = DriverLayout {
        bar0: sys0.bar0,
        ring: RING,
        writeback: WRITEBACK,
    };
    let driver = DmaDriver::from_params(&Params::new()).unwrap();
    // 6000 bytes from a page boundary: two descriptors (4096 + 1904).
    let rx = Transfer {
        channel: C2H,
        host: RX,
        card: 0,
        len: 6000,
    };
    let mut program = Vec::new();
    for _ in 0..2 {
        program.extend(driver.transfer_stream(&[rx], &layout, Completion::Poll, 0, Some(RESULTS)));
    }
    let plain = driver.transfer(&[rx], &layout, Completion::Poll, 0);
    let stream = driver.transfer_stream(&[rx], &layout, Completion::Poll, 0, Some(RESULTS));
    // Per descriptor a zeroing store and a length load; one register write
    // for the records' address.
    let count = |ops: &[Op], f: fn(&Op) -> bool| ops.iter().filter(|o| f(o)).count();
    let stores = |o: &Op| matches!(o, Op::Store { .. });
    let loads = |o: &Op| matches!(o, Op::Load { .. });
    assert_eq!(count(&stream, stores) - count(&plain, stores), 2);
    assert_eq!(count(&stream, loads) - count(&plain, loads), 2);
    let mut sys = PcieSystem::build(&p, program, 1, TraceMode::Off, |_, dev| {
        dev.data.write(0, &[9u8; 6000])
    })
    .unwrap();
    sys.sim.run();
    assert!(sys.core().finished());
    // (addr, data) of each record read back, in the order the loads
    // completed.
    let records: Vec<&(u64, Vec<u8>)> = sys
        .core()
        .loads
        .iter()
        .filter(|(a, _)| (RESULTS..RESULTS + 64).contains(a))
        .collect();
    assert_eq!(records.len(), 4, "two records read back per transfer");
    let word = |d: &[u8], i: usize| u32::from_le_bytes(d[i..i + 4].try_into().unwrap());
    for (addr, d) in records {
        // The first descriptor's record, then the last's (end of packet).
        let (eop, len) = if *addr == RESULTS {
            (0, 4096)
        } else {
            (1, 1904)
        };
        assert_eq!(word(d, 0), ccsim_pcie::dma::RESULT_MAGIC | eop, "{addr:#x}");
        assert_eq!(word(d, 4), len, "{addr:#x}");
    }
    let m = sys.host_memory();
    // Both records share one 64-byte line: the first transfer's zeroing
    // misses cold and each transfer's read misses after the engine's
    // write; the second zeroing hits the line the first read fetched.
    let result_misses = 3;
    // The write-back line: the first reset store (cold) and each poll
    // after its write-back (the second reset store hits the line the
    // first poll fetched).
    let writeback_misses = 3;
    // The data's lines (6000 B on 64 B lines) after each transfer: the
    // driver never loads them here.
    let descriptor_misses = 1; // the ring's line, cold, then held
    assert_eq!(
        m.cpu_misses,
        result_misses + writeback_misses + descriptor_misses,
        "misses by part"
    );
}
