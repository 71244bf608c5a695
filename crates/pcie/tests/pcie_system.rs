//! End-to-end checks of the PCIe models: exact link timing, write combining,
//! DMA moving real bytes, and determinism.

use ccsim_coherence::envelope::Msg;
use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::dma::{C2H, H2C};
use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
use ccsim_pcie::link::PcieLink;
use ccsim_pcie::ping::{TlpEcho, TlpPinger};
use ccsim_pcie::system::{PcieSystem, PcieSystemParams};
use ccsim_pcie::tlp::{Generation, LinkConfig};

fn ping(
    cfg: LinkConfig,
    latency: Tick,
    addr: u64,
    len: usize,
) -> (Vec<(Tick, Vec<u8>)>, StatsReport) {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8).collect();
    let mut b = SystemBuilder::<Msg>::new("system", 1);
    let p = b.add("pinger", TlpPinger::new(&cfg, addr, &data));
    let l = b.add("pcie", PcieLink::new(cfg, latency));
    let e = b.add("echo", TlpEcho);
    b.connect(p, "io", l, "up", LinkParams::symmetric(0, 0.0));
    b.connect(l, "down", e, "io", LinkParams::symmetric(0, 0.0));
    let mut sim = b.build().unwrap();
    sim.run();
    let echoes = sim
        .component::<TlpPinger>(p)
        .unwrap()
        .echoes
        .iter()
        .map(|(t, tlp)| (*t, tlp.data.clone()))
        .collect::<Vec<_>>();
    let got: Vec<u8> = echoes.iter().flat_map(|(_, d)| d.clone()).collect();
    assert_eq!(got, data, "the echoed bytes differ");
    (echoes, sim.stats())
}

#[test]
fn gen3_x8_4kib_write_takes_exact_time() {
    // No DLLPs: the wire carries only the 16 TLPs of 280 B (256 B + 24 B).
    let cfg = LinkConfig {
        ack_every: 0,
        update_fc_every: 0,
        ..LinkConfig::new(Generation::Gen3, 8)
    };
    let (echoes, stats) = ping(cfg, 100 * NS, 0x1_0000_0000, 4096);
    assert_eq!(echoes.len(), 16);
    // One TLP serializes in ceil(280*8*130e6/(128*8000*8)) = 35547 ps.
    // First echo: 35547 down + 100 ns + 35547 up + 100 ns.
    assert_eq!(echoes[0].0, 2 * 35_547 + 200_000);
    // Last echo: 16 TLPs leave back to back (568752 ps), fly 100 ns, and the
    // last one's echo follows its predecessors on the idle up wire.
    assert_eq!(echoes[15].0, 16 * 35_547 + 100_000 + 35_547 + 100_000);
    assert_eq!(stats.counter("system.pcie.down.wire_bytes"), Some(16 * 280));
    assert_eq!(stats.counter("system.pcie.down.payload_bytes"), Some(4096));
    // Bandwidth seen by the burst: 4096 B in 568752 ps = 7.2017 GB/s,
    // i.e. 256/280 of the 7.877 GB/s Gen3 x8 raw rate.
    let bw: f64 = 4096.0 / (16.0 * 35_547.0) * 1000.0;
    assert!((bw - 7.2017).abs() < 1e-3, "{bw}");
}

#[test]
fn dllps_use_the_reverse_wire() {
    let cfg = LinkConfig::new(Generation::Gen3, 8); // ACK + UpdateFC every 4 TLPs
    let (_, stats) = ping(cfg, 100 * NS, 0x1000, 4096);
    // 16 down TLPs -> 4 x (ACK + UpdateFC) = 8 DLLPs x 8 B on the up wire,
    // and the 16 echoes cause the same on the down wire.
    assert_eq!(stats.counter("system.pcie.up.dllp_bytes"), Some(64));
    assert_eq!(stats.counter("system.pcie.down.dllp_bytes"), Some(64));
    // 32-bit address: 3 DW header, 276 B per TLP.
    assert_eq!(stats.counter("system.pcie.down.wire_bytes"), Some(16 * 276));
}

fn thunderx_params() -> PcieSystemParams {
    PcieSystemParams {
        core: Params::new()
            .with("wc_bytes", ParamValue::Int(64), "test")
            .with("store_bytes", ParamValue::Int(8), "test")
            .with("uncached_read_bytes", ParamValue::Int(16), "test"),
        ..Default::default()
    }
}

#[test]
fn write_combining_turns_256_bytes_of_stores_into_4_tlps() {
    let bar1 = 0xE000_0000u64;
    let data: Vec<u8> = (0..256).map(|i| (255 - i) as u8).collect();
    let program = vec![
        Op::MmioWrite {
            addr: bar1 + 0x100,
            data: data.clone(),
            wc: true,
        },
        Op::Fence,
    ];
    let mut sys =
        PcieSystem::build(&thunderx_params(), program, 3, TraceMode::Off, |_, _| {}).unwrap();
    sys.sim.run();
    let s = sys.sim.stats();
    assert_eq!(s.counter("system.pcie.down.tlps"), Some(4));
    assert_eq!(s.counter("system.pcie.down.payload_bytes"), Some(256));
    assert_eq!(sys.device_memory().data.read(0x100, 256), data);

    // Uncached: every 8-byte store is its own MWr.
    let program = vec![Op::MmioWrite {
        addr: bar1,
        data: data.clone(),
        wc: false,
    }];
    let mut sys =
        PcieSystem::build(&thunderx_params(), program, 3, TraceMode::Off, |_, _| {}).unwrap();
    sys.sim.run();
    assert_eq!(sys.sim.stats().counter("system.pcie.down.tlps"), Some(32));

    // A partial line is flushed by the fence as one write of the bytes
    // present: 24 B at offset 8 -> one 24-byte MWr.
    let program = vec![
        Op::MmioWrite {
            addr: bar1 + 8,
            data: vec![1; 24],
            wc: true,
        },
        Op::Fence,
    ];
    let mut sys =
        PcieSystem::build(&thunderx_params(), program, 3, TraceMode::Off, |_, _| {}).unwrap();
    sys.sim.run();
    assert_eq!(sys.sim.stats().counter("system.pcie.down.tlps"), Some(1));
    assert_eq!(
        sys.sim.stats().counter("system.pcie.down.payload_bytes"),
        Some(24)
    );
}

#[test]
fn uncached_reads_are_serialized_one_at_a_time() {
    let bar1 = 0xE000_0000u64;
    let run = |len: u32| {
        let program = vec![Op::Mark(0), Op::MmioRead { addr: bar1, len }, Op::Mark(1)];
        let mut sys =
            PcieSystem::build(&thunderx_params(), program, 3, TraceMode::Off, |_, dev| {
                dev.data.write(0, &(0..=255u8).collect::<Vec<_>>())
            })
            .unwrap();
        sys.sim.run();
        let c = sys.core();
        assert_eq!(
            c.mmio_loads[0].1,
            (0..len).map(|i| i as u8).collect::<Vec<_>>()
        );
        c.mark(1).unwrap() - c.mark(0).unwrap()
    };
    let one = run(16);
    let four = run(64);
    // Four 16-byte reads, one outstanding: four round trips (plus at most a
    // few cycles of issue cost).
    assert!(
        four >= 4 * one - 4 * NS && four <= 4 * one + 4 * NS,
        "one {one} four {four}"
    );
}

fn dma_round_trip(completion: Completion) -> (PcieSystem, Vec<u8>) {
    let driver = DmaDriver::from_params(&Params::new()).unwrap();
    let layout = DriverLayout {
        bar0: 0xF000_0000,
        ring: 0x1_0000_0000,
        writeback: 0x1_0000_F000,
    };
    let src = 0x2_0000_0000u64;
    let dst = 0x3_0000_0000u64;
    let len = 10_000u64;
    let data: Vec<u8> = (0..len).map(|i| (i * 31 % 253) as u8).collect();
    let mut program = driver.transfer(
        &[Transfer {
            channel: H2C,
            host: src,
            card: 0x40,
            len,
        }],
        &layout,
        completion,
        0,
    );
    program.extend(driver.transfer(
        &[Transfer {
            channel: C2H,
            host: dst,
            card: 0x40,
            len,
        }],
        &layout,
        completion,
        1,
    ));
    let d2 = data.clone();
    let mut sys = PcieSystem::build(
        &PcieSystemParams::default(),
        program,
        9,
        TraceMode::Hash,
        move |host, _| host.data.write(src, &d2),
    )
    .unwrap();
    sys.sim.run();
    (sys, data)
}

#[test]
fn dma_moves_the_right_bytes_both_ways() {
    for completion in [Completion::Poll, Completion::Interrupt] {
        let (sys, data) = dma_round_trip(completion);
        assert!(
            sys.core().finished(),
            "{completion:?}: the driver did not finish"
        );
        assert_eq!(
            sys.device_memory().data.read(0x40, data.len()),
            data,
            "{completion:?}: H2C"
        );
        assert_eq!(
            sys.host_memory().data.read(0x3_0000_0000, data.len()),
            data,
            "{completion:?}: C2H"
        );
        let s = sys.sim.stats();
        // 10000 B from a page-aligned buffer: 3 descriptors (4096, 4096, 1808) per direction.
        assert_eq!(s.counter("system.dma.descriptors"), Some(6));
        assert_eq!(s.counter("system.dma.h2c_bytes"), Some(10_000));
        assert_eq!(s.counter("system.dma.c2h_bytes"), Some(10_000));
        assert_eq!(s.counter("system.dma.errors"), Some(0));
        let irqs = s.counter("system.core.interrupts").unwrap();
        assert_eq!(
            irqs,
            if completion == Completion::Interrupt {
                2
            } else {
                0
            }
        );
        // The STATUS register read back over MMIO reports 3 completed, idle.
        assert_eq!(
            sys.core().mmio_loads.last().unwrap().1,
            3u32.to_le_bytes().to_vec()
        );
    }
}

#[test]
fn same_seed_same_trace_hash() {
    let (a, _) = dma_round_trip(Completion::Poll);
    let (b, _) = dma_round_trip(Completion::Poll);
    let (c, _) = dma_round_trip(Completion::Interrupt);
    assert_eq!(a.sim.trace_hash(), b.sim.trace_hash());
    assert_ne!(a.sim.trace_hash(), c.sim.trace_hash());
}

#[test]
fn a_descriptor_without_magic_stops_the_engine() {
    let layout = DriverLayout {
        bar0: 0xF000_0000,
        ring: 0x1_0000_0000,
        writeback: 0x1_0000_F000,
    };
    let driver = DmaDriver::from_params(&Params::new()).unwrap();
    let mut program = driver.transfer(
        &[Transfer {
            channel: H2C,
            host: 0x2_0000_0000,
            card: 0,
            len: 64,
        }],
        &layout,
        Completion::Poll,
        0,
    );
    // Corrupt the descriptor store: zero control word.
    for op in program.iter_mut() {
        if let Op::Store { addr, data } = op {
            if *addr == layout.ring {
                data[..4].copy_from_slice(&[0, 0, 0, 0]);
            }
        }
    }
    let mut sys = PcieSystem::build(
        &PcieSystemParams::default(),
        program,
        1,
        TraceMode::Off,
        |_, _| {},
    )
    .unwrap();
    // The driver spins forever on a write-back that never comes: bound the run.
    assert_eq!(sys.sim.run_until(100 * US), RunOutcome::TimeLimit);
    assert!(!sys.core().finished(), "the driver must still be polling");
    assert_eq!(sys.sim.stats().counter("system.dma.errors"), Some(1));
    assert_ne!(
        sys.engine().status(H2C) & ccsim_pcie::dma::regs::STATUS_ERROR,
        0
    );
}

#[test]
fn bad_parameters_are_clear_errors() {
    let p = PcieSystemParams {
        pcie_link: Params::new().with("generation", ParamValue::Int(7), "test"),
        ..Default::default()
    };
    let err = PcieSystem::build(&p, vec![], 1, TraceMode::Off, |_, _| {})
        .err()
        .unwrap();
    assert_eq!(err, "pcie_link.generation: must be from 1 to 5, got 7");
    let p = PcieSystemParams {
        xdma_engine: Params::new().with("desc_batch", ParamValue::Int(64), "test"),
        ..Default::default()
    };
    let err = PcieSystem::build(&p, vec![], 1, TraceMode::Off, |_, _| {})
        .err()
        .unwrap();
    assert_eq!(
        err,
        "xdma_engine.desc_prefetch: must be at least desc_batch (64), got 32"
    );
    // The batch against the link's MRRS: a platform check (see
    // ccsim-platform); hand-built parameters meet the constructor's guard.
    let p = PcieSystemParams {
        xdma_engine: Params::new()
            .with("desc_batch", ParamValue::Int(64), "test")
            .with("desc_prefetch", ParamValue::Int(64), "test"),
        ..Default::default()
    };
    let err = PcieSystem::build(&p, vec![], 1, TraceMode::Off, |_, _| {})
        .err()
        .unwrap();
    assert_eq!(
        err,
        "xdma_engine.desc_batch: must be at most 16 (32 B descriptors in one 512 B read request of the link), got 64"
    );
}

#[test]
fn unaligned_writes_flush_per_combining_line() {
    let bar1 = 0xE000_0000u64;
    // 100 B at offset 32: bytes 32..64 (line 0), 64..128 (line 1, full ->
    // flushed at once), 128..132 (line 2, flushed by the fence).
    let data: Vec<u8> = (0..100).map(|i| i as u8 ^ 0x5A).collect();
    let program = vec![
        Op::MmioWrite {
            addr: bar1 + 32,
            data: data.clone(),
            wc: true,
        },
        Op::Fence,
    ];
    let mut sys =
        PcieSystem::build(&thunderx_params(), program, 3, TraceMode::Full, |_, _| {}).unwrap();
    sys.sim.run();
    let s = sys.sim.stats();
    assert_eq!(s.counter("system.pcie.down.tlps"), Some(3));
    assert_eq!(sys.device_memory().data.read(32, 100), data);
    let json = sys.sim.trace_json().unwrap();
    for label in [
        "MWr 0xe0000020 32B",
        "MWr 0xe0000040 64B",
        "MWr 0xe0000080 4B",
    ] {
        assert!(json.contains(label), "missing {label}");
    }
}

#[test]
fn outstanding_limit_serializes_stores() {
    // 8 stores to a memory with 80 ns latency (the default), 1 ns per 64 B
    // at 20 GB/s is negligible; the fence waits for the last ack.
    let run = |max: i64| {
        let p = PcieSystemParams {
            core: Params::new().with("max_outstanding", ParamValue::Int(max), "test"),
            ..Default::default()
        };
        let mut program = vec![Op::Mark(0)];
        program.extend((0..8).map(|i| Op::Store {
            addr: 0x1000 + 64 * i,
            data: vec![i as u8; 64],
        }));
        program.extend([Op::Fence, Op::Mark(1)]);
        let mut sys = PcieSystem::build(&p, program, 1, TraceMode::Off, |_, _| {}).unwrap();
        sys.sim.run();
        assert_eq!(
            sys.host_memory().data.read(0x1000 + 64 * 7, 64),
            vec![7; 64]
        );
        let c = sys.core();
        c.mark(1).unwrap() - c.mark(0).unwrap()
    };
    let serial = run(1);
    let parallel = run(8);
    // One at a time: 8 round trips of >= 80 ns; eight at once: about one.
    assert!(serial >= 8 * 80 * NS, "{serial}");
    assert!(parallel < 2 * 100 * NS, "{parallel}");
}
