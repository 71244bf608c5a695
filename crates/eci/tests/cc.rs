//! CPU-homed lines: the FPGA's cache controller executing the generated
//! `eci-cc` table against the CPU home executing its peer table, with real
//! data, online checks, a mutated table, and a random stress run checked
//! against a sequential reference.

use std::sync::Arc;

use ccsim_coherence::{initial_line, Tables};
use ccsim_eci::cc::{CcOp, CcOpKind, CPU_HOMED_BASE};
use ccsim_eci::cc_system::{random_work, CcParams, CcSystem};
use ccsim_eci::cpu::CpuOp;
use ccsim_kernel::prelude::*;
use ccsim_protocol::ir::Outcome;

const A: u64 = CPU_HOMED_BASE + 0x40;

#[test]
fn the_cc_runs_eci_cc_with_the_roles_swapped() {
    let t = Tables::eci_cc().unwrap();
    assert!(!t.fpga_homed() && Tables::eci_dc().unwrap().fpga_homed());
    assert_eq!(t.catalogue.protocol, "eci-cc");
    assert_ne!(t.catalogue, Tables::eci_dc().unwrap().catalogue);
    assert_eq!(t.agent(0), "cc");
    assert_eq!(t.agent(1), "home");
}

#[test]
fn a_device_load_returns_cpu_memory_bytes() {
    let ops = vec![CcOp::new(CcOpKind::Load, A), CcOp::new(CcOpKind::Load, A)];
    let mut sys = CcSystem::build(&CcParams::default(), Vec::new(), ops, 1).unwrap();
    sys.run().unwrap();
    let c = &sys.cc().completed;
    assert_eq!(c[0].data, Some(initial_line(A)));
    assert_eq!(c[1].data, Some(initial_line(A)));
    // The miss is one ECI round trip (230 ns) plus the CC's transport both
    // ways (44 cycles at 322 MHz) and the home's answer; the second is a hit.
    assert!(
        (400_000..600_000).contains(&c[0].latency_ps),
        "{}",
        c[0].latency_ps
    );
    assert!(c[1].latency_ps < 50_000, "{}", c[1].latency_ps);
    assert_eq!(sys.cc().line(A).0, "S");
    assert_eq!(sys.home().line_state(A), "S");
    assert!(sys.checker.borrow().checked > 0);
}

#[test]
fn a_cpu_store_after_a_device_read_invalidates_the_copy() {
    // Device reads A; the core then stores into A (the home must invalidate
    // the FPGA's Shared copy first); the device reads A again and sees it.
    let program = vec![
        CpuOp::Wait { ps: 2_000_000 },
        CpuOp::Store {
            line: A,
            word: 3,
            value: 0xDEAD_BEEF,
        },
    ];
    let ops = vec![
        CcOp::new(CcOpKind::Load, A),
        CcOp::new(CcOpKind::Load, A).at(5_000_000),
    ];
    let mut sys = CcSystem::build(&CcParams::default(), program, ops, 1).unwrap();
    sys.run().unwrap();
    let mut want = initial_line(A);
    want[24..32].copy_from_slice(&0xDEAD_BEEFu64.to_le_bytes());
    let c = &sys.cc().completed;
    assert_eq!(c[0].data, Some(initial_line(A)));
    assert_eq!(c[1].data, Some(want));
    // The store waited for the invalidation: at least a round trip.
    let store = &sys.home().completed[1];
    assert!(store.latency_ps > 230_000, "{}", store.latency_ps);
    assert_eq!(sys.home().mem.read(A), want);
}

#[test]
fn a_device_store_reaches_the_cpu_by_a_forward() {
    let mut v = [0u8; 128];
    v[0] = 42;
    let ops = vec![
        CcOp::new(CcOpKind::LoadExclusive, A),
        CcOp::new(CcOpKind::Store(Box::new(v)), A),
    ];
    let program = vec![CpuOp::Wait { ps: 3_000_000 }, CpuOp::Load { line: A }];
    let mut sys = CcSystem::build(&CcParams::default(), program, ops, 1).unwrap();
    sys.run().unwrap();
    assert!(!sys.cc().completed[1].refused);
    // The core's load recalled the Modified line (FLDRS, HAKD): a round trip.
    let load = &sys.home().completed[1];
    assert_eq!(load.data, v);
    assert!(load.latency_ps > 230_000, "{}", load.latency_ps);
    assert_eq!(sys.cc().line(A).0, "S");
}

#[test]
fn a_store_without_write_access_is_refused_by_the_table() {
    let ops = vec![CcOp::new(CcOpKind::Store(Box::new([1; 128])), A)];
    let mut sys = CcSystem::build(&CcParams::default(), Vec::new(), ops, 1).unwrap();
    sys.run().unwrap();
    assert!(sys.cc().completed[0].refused);
    assert_eq!(sys.home().mem.read(A), initial_line(A));
}

#[test]
fn fpga_homed_lines_are_refused() {
    let err = CcSystem::build(
        &CcParams::default(),
        vec![CpuOp::Load { line: 7 }],
        Vec::new(),
        1,
    )
    .err()
    .unwrap();
    assert!(err.contains("FPGA-homed"), "{err}");
    let mut sys = CcSystem::build(
        &CcParams::default(),
        Vec::new(),
        vec![CcOp::new(CcOpKind::Load, 7)],
        1,
    )
    .unwrap();
    let err = sys.run().unwrap_err();
    assert!(err.contains("FPGA-homed"), "{err}");
}

/// Random core loads/stores and device loads/load-exclusives/stores/evicts
/// over `lines` CPU-homed lines with reordering jitter; ends with zero
/// violations and every line equal to a sequential replay of the stores in
/// the order they took effect.
fn stress(seed: u64, cpu_ops: usize, dev_ops: usize, lines: u64) {
    let mut rng = SimRng::for_path(seed, "cc-stress");
    let (program, ops) = random_work(&mut rng, cpu_ops as u64, dev_ops as u64, lines, 300_000);
    let p = CcParams {
        link: Params::new().with("jitter_ns", ParamValue::Float(50.0), "test"),
        ..Default::default()
    };
    let mut sys = CcSystem::build(&p, program, ops, seed).unwrap();
    sys.run().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(sys.checker.borrow().violations.is_empty());
    assert_eq!(sys.home().completed.len(), cpu_ops);
    assert_eq!(sys.cc().completed.len(), dev_ops);
    // Sequential reference: every store replayed in effect order.
    let reference = sys.sequential_reference();
    let stores = sys.cc().store_log.len();
    assert!(stores > 0, "seed {seed}: the device never stored");
    for l in CPU_HOMED_BASE..CPU_HOMED_BASE + lines {
        let want = reference
            .get(&l)
            .copied()
            .unwrap_or_else(|| initial_line(l));
        assert_eq!(sys.line_value(l), want, "seed {seed}: line {l:#x}");
    }
}

#[test]
fn stress_small_has_no_violations_and_matches_reference() {
    for seed in 1..=4 {
        stress(seed, 300, 300, 4);
    }
}

/// Slow tier: `cargo test -p ccsim-eci --test cc -- --ignored`.
#[test]
#[ignore]
fn stress_large() {
    for seed in 1..=40 {
        stress(seed, 5_000, 5_000, 8);
    }
}

fn with_generated(f: impl FnOnce(&mut ccsim_protocol::ProtocolIr)) -> Arc<Tables> {
    let mut ir = Tables::eci_cc().unwrap().ir.clone();
    f(&mut ir);
    Arc::new(Tables::new(ir).unwrap())
}

fn device_writes_then_cpu_reads_and_writes(t: Arc<Tables>) -> Result<(), String> {
    let ops = vec![
        CcOp::new(CcOpKind::LoadExclusive, A),
        CcOp::new(CcOpKind::Store(Box::new([9; 128])), A),
    ];
    let program = vec![
        CpuOp::Wait { ps: 3_000_000 },
        CpuOp::Load { line: A },
        CpuOp::Store {
            line: A,
            word: 1,
            value: 7,
        },
    ];
    let p = CcParams {
        tables: Some(t),
        ..Default::default()
    };
    let mut sys = CcSystem::build(&p, program, ops, 1).unwrap();
    sys.run()
}

#[test]
fn a_retargeted_home_row_fails_swmr() {
    // Mutant: a core write while the FPGA holds the line Exclusive commits
    // at once instead of recalling it with FEVX: two writers.
    let mut ir = Tables::eci_cc().unwrap().ir.clone();
    for tr in &mut ir.roles[1].transitions {
        if tr.state == "E" && tr.event == "wr" {
            tr.outcome = Outcome::Go {
                next: "I_W".into(),
                actions: Vec::new(),
            };
        }
    }
    let t = Arc::new(Tables::new(ir).unwrap());
    // Control: the unmutated tables pass the same run.
    device_writes_then_cpu_reads_and_writes(Tables::eci_cc().unwrap()).unwrap();
    let ops = vec![
        CcOp::new(CcOpKind::LoadExclusive, A),
        CcOp::new(CcOpKind::Store(Box::new([9; 128])), A),
    ];
    let program = vec![
        CpuOp::Wait { ps: 3_000_000 },
        CpuOp::Store {
            line: A,
            word: 1,
            value: 7,
        },
    ];
    let p = CcParams {
        tables: Some(t),
        ..Default::default()
    };
    let mut sys = CcSystem::build(&p, program, ops, 1).unwrap();
    let err = sys.run().unwrap_err();
    assert!(err.contains("coherence check failed"), "{err}");
    assert!(
        err.contains(&format!(
            "line {A:#x}: single-writer-multiple-reader violated"
        )),
        "{err}"
    );
    assert!(err.contains("cc=M home=I_W"), "{err}");
}

#[test]
fn a_retargeted_cc_row_fails_with_a_clear_report() {
    // Mutant: on a forward read-shared while Modified, the CC answers with
    // its data but stays Modified; the core's next write then invalidates a
    // copy the home believes Shared and the CC has no row for that.
    let t = with_generated(|ir| {
        for tr in &mut ir.roles[0].transitions {
            if tr.state == "M" && tr.event == "FLDRS" {
                if let Outcome::Go { next, .. } = &mut tr.outcome {
                    *next = "M".into();
                }
            }
        }
    });
    let err = device_writes_then_cpu_reads_and_writes(t).unwrap_err();
    assert!(
        err.contains("coherence check failed") && err.contains(&format!("{A:#x}")),
        "{err}"
    );
}

#[test]
fn a_deleted_cc_row_fails_as_an_unspecified_reception() {
    let t = with_generated(|ir| {
        ir.roles[0]
            .transitions
            .retain(|tr| !(tr.state == "S" && tr.event == "SINV"));
    });
    let ops = vec![CcOp::new(CcOpKind::Load, A)];
    let program = vec![
        CpuOp::Wait { ps: 2_000_000 },
        CpuOp::Store {
            line: A,
            word: 0,
            value: 1,
        },
    ];
    let p = CcParams {
        tables: Some(t),
        ..Default::default()
    };
    let mut sys = CcSystem::build(&p, program, ops, 1).unwrap();
    let err = sys.run().unwrap_err();
    assert!(
        err.contains("unspecified reception: SINV") && err.contains("at the cc in state S"),
        "{err}"
    );
}

#[test]
fn a_message_of_the_other_catalogue_is_rejected() {
    // A DC-protocol table on the CC side: the roles do not fit.
    let p = CcParams {
        tables: Some(Tables::eci_dc().unwrap()),
        ..Default::default()
    };
    let err = CcSystem::build(&p, Vec::new(), Vec::new(), 1)
        .err()
        .unwrap();
    assert!(
        err.contains("a cpu_home serves CPU-homed lines; protocol eci-dc is FPGA-homed"),
        "{err}"
    );
}

#[test]
fn runs_are_deterministic() {
    let hash = |seed| {
        let ops = vec![
            CcOp::new(CcOpKind::LoadExclusive, A),
            CcOp::new(CcOpKind::Store(Box::new([3; 128])), A),
            CcOp::new(CcOpKind::Evict, A),
        ];
        let p = CcParams {
            link: Params::new().with("jitter_ns", ParamValue::Float(30.0), "test"),
            ..Default::default()
        };
        let prog = vec![CpuOp::Load { line: A }, CpuOp::Load { line: A + 1 }];
        let mut sys = CcSystem::build(&p, prog, ops, seed).unwrap();
        sys.run().unwrap();
        sys.sim.trace_hash().unwrap()
    };
    assert_eq!(hash(5), hash(5));
}

mod shared_links {
    use super::*;
    use ccsim_eci::shared::{SharedParams, SharedSystem, SharedWork};
    use ccsim_eci::system::HomeMemory;

    #[test]
    fn with_checks_off_a_stuck_device_op_is_reported_on_its_side() {
        // The CPU-homed side's home stalls the device's read forever while
        // the LLC streams FPGA-homed lines: the CC's watchdog reports the
        // CPU-homed line only, whether the checks ran or not.
        let run = |checks: bool| {
            let mut p = SharedParams {
                cc_tables: Some(home_stalls_rldd()),
                cc: Params::new().with("watchdog_us", ParamValue::Float(5.0), "test"),
                ..Default::default()
            };
            p.coherent.dc = Params::new().with("checks", ParamValue::Bool(checks), "test");
            let work = SharedWork {
                cpu: (0..40).map(|line| CpuOp::Load { line }).collect(),
                device: vec![CcOp::new(CcOpKind::Load, A)],
                ..Default::default()
            };
            let mut sys = SharedSystem::build(&p, HomeMemory::Bram, work, 1).unwrap();
            sys.run().unwrap_err()
        };
        let (on, off) = (run(true), run(false));
        assert_eq!(on, off);
        assert!(off.starts_with("watchdog: device op ld"), "{off}");
        assert!(off.contains("pending messages: [RLDD]"), "{off}");
        assert_eq!(off.lines().count(), 2, "{off}");
    }

    fn device_load_alone() -> Tick {
        let ops = vec![CcOp::new(CcOpKind::Load, A)];
        let mut sys = CcSystem::build(&CcParams::default(), Vec::new(), ops, 1).unwrap();
        sys.run().unwrap();
        sys.cc().completed[0].latency_ps
    }

    #[test]
    fn both_homes_share_the_eci_links_without_added_time() {
        let work = SharedWork {
            device: vec![CcOp::new(CcOpKind::Load, A)],
            ..Default::default()
        };
        let mut sys =
            SharedSystem::build(&SharedParams::default(), HomeMemory::Bram, work, 1).unwrap();
        sys.run().unwrap();
        // The muxes are wiring points: the same latency as on private links.
        assert_eq!(sys.cc().completed[0].latency_ps, device_load_alone());
    }

    #[test]
    fn fpga_and_cpu_homed_traffic_mix_on_one_link_with_right_data() {
        // The LLC streams FPGA-homed lines from the DC while the device
        // reads CPU-homed lines through the CC; a core also stores to a
        // CPU-homed line the device later reads. Both protocols' checkers
        // stay clean, every load sees its home's bytes, and the device's
        // read is slowed by the DC's grants serialized on the same wires.
        let fpga_lines: Vec<CpuOp> = (0..400).map(|line| CpuOp::Load { line }).collect();
        let device: Vec<CcOp> = (0..8)
            .map(|i| CcOp::new(CcOpKind::Load, A + 2 * i).at(1_000_000))
            .chain([CcOp::new(CcOpKind::Load, A + 1).at(3_000_000)])
            .collect();
        let home = vec![CpuOp::Store {
            line: A + 1,
            word: 0,
            value: 77,
        }];
        let mut p = SharedParams::default();
        p.coherent.cpu = Params::new().with("mshrs", ParamValue::Int(64), "test");
        let work = SharedWork {
            cpu: fpga_lines,
            device,
            home,
            ..Default::default()
        };
        let mut sys = SharedSystem::build(&p, HomeMemory::Bram, work, 1).unwrap();
        sys.run().unwrap();
        for c in &sys.cpu().completed {
            assert_eq!(c.data, initial_line(c.op as u64));
        }
        let cc = &sys.cc().completed;
        for d in &cc[..8] {
            assert_eq!(d.data, Some(initial_line(d.op.line)));
        }
        let mut want = initial_line(A + 1);
        want[..8].copy_from_slice(&77u64.to_le_bytes());
        assert_eq!(cc[8].data, Some(want));
        let alone = device_load_alone();
        let slowest = cc[..8].iter().map(|d| d.latency_ps).max().unwrap();
        assert!(slowest > alone, "{slowest} vs {alone}");
        let stats = sys.sim.stats().flatten();
        assert!(stats["system.fpga_mux.fpga_homed"] >= 800.0);
        assert!(stats["system.fpga_mux.cpu_homed"] >= 18.0);
        assert!(sys.dc_checker.borrow().checked > 0 && sys.cc_checker.borrow().checked > 0);
    }

    /// Random traffic of both homes at once, with reordering jitter: every
    /// op completes and both protocols' online checkers (SWMR, data-value
    /// on every transition and every read) stay clean.
    #[test]
    fn mixed_random_traffic_of_both_homes_is_coherent() {
        for seed in 1..=3 {
            let mut rng = SimRng::for_path(seed, "shared-stress");
            let cpu: Vec<CpuOp> = (0..300)
                .map(|i| {
                    let line = rng.below(6);
                    if rng.below(2) == 0 {
                        CpuOp::Load { line }
                    } else {
                        CpuOp::Store {
                            line,
                            word: rng.below(16) as u8,
                            value: i + 1,
                        }
                    }
                })
                .collect();
            let home: Vec<CpuOp> = (0..300)
                .map(|i| {
                    let line = CPU_HOMED_BASE + rng.below(4);
                    if rng.below(2) == 0 {
                        CpuOp::Load { line }
                    } else {
                        CpuOp::Store {
                            line,
                            word: rng.below(16) as u8,
                            value: 1000 + i,
                        }
                    }
                })
                .collect();
            let device: Vec<CcOp> = (0..300)
                .map(|i| {
                    let line = CPU_HOMED_BASE + rng.below(4);
                    let kind = match rng.below(4) {
                        0 => CcOpKind::Load,
                        1 => CcOpKind::LoadExclusive,
                        2 => CcOpKind::Store(Box::new([(i % 250) as u8 + 1; 128])),
                        _ => CcOpKind::Evict,
                    };
                    CcOp::new(kind, line)
                })
                .collect();
            let mut p = SharedParams::default();
            p.coherent.link = Params::new().with("jitter_ns", ParamValue::Float(50.0), "test");
            p.coherent.cpu = Params::new().with("mshrs", ParamValue::Int(4), "test");
            let work = SharedWork {
                cpu,
                home,
                device,
                ..Default::default()
            };
            let mut sys = SharedSystem::build(&p, HomeMemory::Bram, work, seed).unwrap();
            sys.run().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(sys.cpu().completed.len(), 300);
            assert_eq!(sys.home().completed.len(), 300);
            assert_eq!(sys.cc().completed.len(), 300);
            assert!(sys.cc_checker.borrow().violations.is_empty());
            assert!(sys.dc_checker.borrow().violations.is_empty());
            assert!(sys.cc_checker.borrow().checked > 300);
        }
    }

    #[test]
    fn a_line_of_the_wrong_home_is_refused() {
        let work = SharedWork {
            cpu: vec![CpuOp::Load { line: A }],
            ..Default::default()
        };
        let err = SharedSystem::build(&SharedParams::default(), HomeMemory::Bram, work, 1)
            .err()
            .unwrap();
        assert!(err.contains("CPU-homed"), "{err}");
    }
}

#[test]
fn a_stuck_device_op_is_reported_by_the_watchdog() {
    // Mutant: the home stalls a read-shared from an idle line forever.
    let mut ir = Tables::eci_cc().unwrap().ir.clone();
    for tr in &mut ir.roles[1].transitions {
        if tr.state == "I" && tr.event == "RLDD" {
            tr.outcome = Outcome::Stall;
        }
    }
    let p = CcParams {
        tables: Some(Arc::new(Tables::new(ir).unwrap())),
        cc: Params::new().with("watchdog_us", ParamValue::Float(5.0), "test"),
        ..Default::default()
    };
    let mut sys = CcSystem::build(&p, Vec::new(), vec![CcOp::new(CcOpKind::Load, A)], 1).unwrap();
    let err = sys.run().unwrap_err();
    assert!(err.contains("watchdog: device op ld"), "{err}");
    assert!(err.contains("pending messages: [RLDD]"), "{err}");
}

/// The eci-cc tables with the home stalling a read-shared from an idle line
/// forever.
fn home_stalls_rldd() -> Arc<Tables> {
    let mut ir = Tables::eci_cc().unwrap().ir.clone();
    for tr in &mut ir.roles[1].transitions {
        if tr.state == "I" && tr.event == "RLDD" {
            tr.outcome = Outcome::Stall;
        }
    }
    Arc::new(Tables::new(ir).unwrap())
}

#[test]
fn with_checks_off_the_watchdog_reports_the_stalled_request() {
    // As above; with checks off the checker keeps nothing during the run,
    // and the system builds the same report from the home's stalled
    // requests and the agents' states once the watchdog stopped the run.
    let run = |checks: bool| {
        let p = CcParams {
            tables: Some(home_stalls_rldd()),
            cc: Params::new().with("watchdog_us", ParamValue::Float(5.0), "test"),
            checks,
            ..Default::default()
        };
        let ops = vec![CcOp::new(CcOpKind::Load, A)];
        let mut sys = CcSystem::build(&p, Vec::new(), ops, 1).unwrap();
        sys.run().unwrap_err()
    };
    let (on, off) = (run(true), run(false));
    assert_eq!(on, off);
    assert!(off.starts_with("watchdog: device op ld"), "{off}");
    assert!(
        off.contains(&format!(
            "line {A:#x}: cc=I_LD home=I app=Wait; pending messages: [RLDD]"
        )),
        "{off}"
    );
}
