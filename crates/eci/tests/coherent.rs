//! The coherent Enzian slice: ECI link calibration, the DC executing the
//! generated table, online checks, mutated tables, the watchdog, and a
//! random stress run checked against a sequential reference.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use ccsim_coherence::memory::{Ddr, MemTiming};
use ccsim_coherence::{initial_line, Line, Tables};
use ccsim_eci::cpu::{AtomicOp, CpuOp};
use ccsim_eci::dc::{AppOp, DcEvent};
use ccsim_eci::link::{EciLink, HEADER_BYTES};
use ccsim_eci::system::{CoherentParams, CoherentSystem, HomeMemory};
use ccsim_kernel::prelude::*;
use ccsim_protocol::ir::Outcome;

fn loads(lines: impl IntoIterator<Item = u64>) -> Vec<CpuOp> {
    lines.into_iter().map(|line| CpuOp::Load { line }).collect()
}

#[test]
fn link_round_trip_is_the_calibrated_230_ns() {
    let l = EciLink::default();
    let rtt = l.one_way_ps(HEADER_BYTES) + l.one_way_ps(HEADER_BYTES + 128);
    assert!((rtt as f64 - 230_000.0).abs() < 500.0, "rtt {rtt} ps");
    // 30 GiB/s raw over two links, 70.8% usable.
    let per_link = l.bytes_per_sec / (1u64 << 30) as f64;
    assert!((per_link - 15.0 * 0.7083).abs() < 0.01);
}

#[test]
fn link_carries_about_20_gib_per_s_of_lines() {
    // Many outstanding reads of distinct lines through a fast BRAM DC: the
    // grant data saturates both links (CCKit §4: ~20 GiB/s achieved).
    let p = CoherentParams {
        cpu: Params::new()
            .with("mshrs", ParamValue::Int(256), "test")
            .with("issue_ns", ParamValue::Float(0.1), "test"),
        dc: Params::new()
            .with("dcus_per_slice", ParamValue::Int(128), "test")
            .with("checks", ParamValue::Bool(false), "test"),
        bram: Params::new().with("line_ns", ParamValue::Float(0.0), "test"),
        ..Default::default()
    };
    let n = 20_000u64;
    let mut sys = CoherentSystem::build(&p, HomeMemory::Bram, loads(0..n), 1).unwrap();
    sys.run().unwrap();
    let c = &sys.cpu().completed;
    let first = c.iter().map(|x| x.issued + x.latency_ps).min().unwrap();
    let last = c.iter().map(|x| x.issued + x.latency_ps).max().unwrap();
    let gib_s = (n - 1) as f64 * 128.0 / ((last - first) as f64 * 1e-12) / (1u64 << 30) as f64;
    assert!((gib_s - 20.0).abs() / 20.0 < 0.05, "{gib_s} GiB/s");
}

#[test]
fn one_read_runs_the_table_and_returns_memory_bytes() {
    let p = CoherentParams::default();
    let mut sys = CoherentSystem::build(&p, HomeMemory::Bram, loads([5, 6]), 3).unwrap();
    sys.run().unwrap();
    let cpu = sys.cpu();
    assert_eq!(cpu.completed.len(), 2);
    assert_eq!(cpu.completed[0].data, initial_line(5));
    assert_eq!(cpu.completed[1].data, initial_line(6));
    assert_eq!(cpu.line(5).0, "S");
    assert_eq!(sys.dc().line_state(5), "S");
    // RLDD, AXI_RD_DONE per read: two DC events each, two AXI reads.
    let stats = sys.sim.stats();
    assert_eq!(stats.counter("system.dc.events"), Some(4));
    assert_eq!(stats.counter("system.dc.axi_reads"), Some(2));
    assert!(sys.checker.borrow().checked >= 6);
    // Unloaded latency: link RTT 230 + DC pipeline + BRAM + CPU overheads.
    let lat = cpu.completed[0].latency_ps;
    assert!(lat > 300_000 && lat < 600_000, "{lat}");
    // Same seed, same trace.
    let mut again = CoherentSystem::build(&p, HomeMemory::Bram, loads([5, 6]), 3).unwrap();
    again.run().unwrap();
    assert_eq!(sys.sim.trace_hash(), again.sim.trace_hash());
}

#[test]
fn ddr_random_reads_pay_row_conflicts() {
    let mut d = MemTiming::Ddr(Ddr::from_params(&Params::new()).unwrap());
    let mut t = 0;
    let mut seq = 0;
    for l in 0..256u64 {
        let done = d.access(t, l * 2, false);
        seq += done - t;
        t = done + 1000;
    }
    let mut rnd = 0;
    let mut rng = SimRng::for_path(1, "t");
    for _ in 0..256 {
        let l = rng.below(1 << 23) * 2;
        let done = d.access(t, l, false);
        rnd += done - t;
        t = done + 1000;
    }
    assert!(rnd > seq + 256 * 20_000, "seq {seq} rand {rnd}");
}

#[test]
fn upgrade_store_and_writeback_move_real_data() {
    let p = CoherentParams {
        cpu: Params::new().with("llc_lines", ParamValue::Int(1), "test"),
        ..Default::default()
    };
    let prog = vec![
        CpuOp::Store {
            line: 2,
            word: 3,
            value: 0xDEAD_BEEF,
        },
        CpuOp::Load { line: 4 }, // evicts line 2 (dirty): VICD carries the data home
        CpuOp::Load { line: 2 },
    ];
    let mut sys = CoherentSystem::build(&p, HomeMemory::Ddr, prog, 1).unwrap();
    sys.run().unwrap();
    let mut want = initial_line(2);
    want[24..32].copy_from_slice(&0xDEAD_BEEFu64.to_le_bytes());
    assert_eq!(sys.dc().mem.read(2), want);
    assert_eq!(sys.cpu().completed[2].data, want);
    assert_eq!(sys.sim.stats().counter("system.dc.axi_writes"), Some(1));
}

#[test]
fn app_clean_invalidate_lock_and_write_through_the_table() {
    let prog = vec![CpuOp::Store {
        line: 8,
        word: 0,
        value: 7,
    }];
    let data: Box<Line> = Box::new([0xAB; 128]);
    let app = vec![
        AppOp::new("clinv", 8),
        AppOp::new("lock", 8),
        AppOp::new("write", 8).with_data(*data),
        AppOp::new("unlock", 8),
    ];
    let p = CoherentParams::default();
    let mut sys =
        CoherentSystem::build_with(&p, HomeMemory::Bram, prog, app, 1, TraceMode::Hash).unwrap();
    sys.run().unwrap();
    let dc = sys.dc();
    assert_eq!(dc.app_pending(), 0);
    assert_eq!(dc.observed[3], 4, "four app ops completed");
    assert_eq!(dc.store_log.len(), 1);
    // Whatever the interleaving, the line ends up holding a consistent value.
    let (st, copy) = sys.cpu().line(8);
    let final_v = copy.unwrap_or_else(|| dc.mem.read(8));
    assert!(final_v == *data || st != "I", "state {st}");
}

/// Random CPU loads/stores (with evictions) and app clean / clean-invalidate
/// / lock-write-unlock on a few shared lines; checks on; the final contents
/// must equal a sequential replay of the stores in the order they took effect.
fn stress(seed: u64, cpu_ops: usize, app_seqs: usize, lines: u64) {
    let mut rng = SimRng::for_path(seed, "stress");
    let prog = CpuOp::random_program(&mut rng, cpu_ops as u64, lines);
    let app = AppOp::random_sequences(&mut rng, app_seqs as u64, lines);
    let p = CoherentParams {
        cpu: Params::new()
            .with("mshrs", ParamValue::Int(4), "test")
            .with("llc_lines", ParamValue::Int(3), "test"),
        dc: Params::new().with("dcus_per_slice", ParamValue::Int(2), "test"),
        link: Params::new().with("jitter_ns", ParamValue::Float(200.0), "test"),
        ..Default::default()
    };
    let mut sys =
        CoherentSystem::build_with(&p, HomeMemory::Ddr, prog, app, seed, TraceMode::Off).unwrap();
    sys.run().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(sys.checker.borrow().violations.is_empty());
    // Sequential reference: every write replayed in effect order.
    let reference = sys.sequential_reference();
    for l in 0..lines {
        let now = sys.line_value(l);
        let want = reference
            .get(&l)
            .copied()
            .unwrap_or_else(|| initial_line(l));
        assert_eq!(
            now, want,
            "seed {seed}: line {l} differs from the sequential reference"
        );
    }
    assert_eq!(sys.cpu().completed.len(), cpu_ops);
}

#[test]
fn stress_small_has_no_violations_and_matches_reference() {
    for seed in 1..=6 {
        stress(seed, 400, 40, 6);
    }
}

/// Slow tier: `cargo test -p ccsim-eci --test coherent -- --ignored`.
#[test]
#[ignore]
fn stress_large() {
    for seed in 1..=40 {
        stress(seed, 20_000, 2_000, 16);
    }
}

/// The multi-core CPU side under stress: `cores` cores with L1s, write
/// buffers, two small TADs behind the XOR scrambler and a tiny LLC run random
/// loads, buffered stores, atomics, fences, cleans, evictions and prefetches
/// on shared lines while the app cleans, invalidates and rewrites them. The
/// final contents must equal a sequential replay of every store in the order
/// it took effect, every increment of a shared counter must be seen exactly
/// once, and the online SWMR / data-value checks must stay silent. With
/// `in_tads` the write buffer drains store misses into TAD transactions
/// (`store_misses_in_tads`).
fn stress_cores(
    seed: u64,
    cores: usize,
    ops_per_core: usize,
    app_seqs: usize,
    lines: u64,
    in_tads: bool,
) {
    let mut rng = SimRng::for_path(seed, "stress_cores");
    // A counter line only atomics touch (the app and plain stores never do).
    let counter = lines;
    let mut increments = 0u64;
    let programs: Vec<Vec<CpuOp>> = (0..cores)
        .map(|k| {
            (0..ops_per_core)
                .map(|i| {
                    let line = rng.below(lines);
                    let value = ((k as u64) << 32) | (i as u64 + 1);
                    match rng.below(20) {
                        0 => CpuOp::Evict { line },
                        1 => CpuOp::Clean { line },
                        2 => CpuOp::Downgrade { line },
                        3 => CpuOp::Prefetch { line },
                        4 => CpuOp::PrefetchExclusive { line },
                        5 => CpuOp::Fence,
                        6 => {
                            increments += 1;
                            CpuOp::Atomic {
                                line: counter,
                                word: 0,
                                op: AtomicOp::FetchAdd(1),
                            }
                        }
                        7 => CpuOp::Atomic {
                            line,
                            word: rng.below(16) as u8,
                            op: if rng.below(2) == 0 {
                                AtomicOp::Swap(value)
                            } else {
                                AtomicOp::Cas {
                                    expected: 0,
                                    new: value,
                                }
                            },
                        },
                        8..=12 => CpuOp::Load { line },
                        _ => CpuOp::Store {
                            line,
                            word: rng.below(16) as u8,
                            value,
                        },
                    }
                })
                .collect()
        })
        .collect();
    let app = AppOp::random_sequences(&mut rng, app_seqs as u64, lines);
    let p = CoherentParams {
        cpu: Params::new()
            .with("cores", ParamValue::Int(cores as i64), "test")
            .with("mshrs", ParamValue::Int(4), "test")
            .with("llc_lines", ParamValue::Int(4), "test")
            .with("llc_ways", ParamValue::Int(2), "test")
            .with("l1_bytes", ParamValue::Int(256), "test")
            .with("l1_ways", ParamValue::Int(1), "test")
            .with("write_buffer_bytes", ParamValue::Int(384), "test")
            .with("tads", ParamValue::Int(2), "test")
            .with("tad_transactions", ParamValue::Int(2), "test")
            .with("scrambler", ParamValue::Bool(true), "test")
            .with("store_misses_in_tads", ParamValue::Bool(in_tads), "test"),
        dc: Params::new().with("dcus_per_slice", ParamValue::Int(2), "test"),
        link: Params::new().with("jitter_ns", ParamValue::Float(200.0), "test"),
        ..Default::default()
    };
    let mut sys =
        CoherentSystem::build_cores(&p, HomeMemory::Ddr, programs, app, seed, TraceMode::Off)
            .unwrap();
    sys.run().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert!(sys.checker.borrow().violations.is_empty());
    let cpu = sys.cpu();
    assert_eq!(cpu.completed.len(), cores * ops_per_core, "seed {seed}");
    // Sequential reference: every write replayed in effect order.
    let reference = sys.sequential_reference();
    let contents = |l: u64| sys.line_value(l);
    for l in 0..=counter {
        let want = reference
            .get(&l)
            .copied()
            .unwrap_or_else(|| initial_line(l));
        assert_eq!(
            contents(l),
            want,
            "seed {seed}: line {l} differs from the sequential reference"
        );
    }
    // The counter: every increment saw a distinct old value.
    let w0 = |l: &Line| u64::from_le_bytes(l[0..8].try_into().unwrap());
    let start = w0(&initial_line(counter));
    let mut olds: Vec<u64> = cpu
        .completed
        .iter()
        .filter(|c| {
            matches!(
                programs_op(&sys, c.core, c.op),
                Some(CpuOp::Atomic { line, .. }) if line == counter
            )
        })
        .filter_map(|c| c.old.map(|o| o.wrapping_sub(start)))
        .collect();
    olds.sort_unstable();
    assert_eq!(olds, (0..increments).collect::<Vec<_>>(), "seed {seed}");
    assert_eq!(w0(&contents(counter)), start.wrapping_add(increments));
    // The mechanisms under test were exercised.
    let stats = sys.sim.stats();
    let n = |s: &str| stats.counter(&format!("system.cpu.{s}")).unwrap_or(0);
    eprintln!(
        "seed {seed}: l1_hits {} wb_stalls {} tad_waits {} evictions {} misses {}",
        n("l1_hits"),
        n("wb_stalls"),
        n("tad_waits"),
        n("evictions"),
        n("misses")
    );
    for s in ["l1_hits", "wb_stalls", "tad_waits", "evictions"] {
        assert!(n(s) > 0, "seed {seed}: no {s}");
    }
}

fn programs_op(sys: &CoherentSystem, core: usize, i: usize) -> Option<CpuOp> {
    sys.cpu().program_op(core, i).cloned()
}

#[test]
fn stress_cores_small_has_no_violations_and_matches_reference() {
    for seed in 1..=6 {
        stress_cores(seed, 3, 300, 30, 6, false);
    }
}

#[test]
fn stress_cores_with_store_misses_in_tads_has_no_violations_and_matches_reference() {
    for seed in 1..=6 {
        stress_cores(seed, 3, 300, 30, 6, true);
    }
}

/// Slow tier: `cargo test -p ccsim-eci --test coherent -- --ignored`.
#[test]
#[ignore]
fn stress_cores_large() {
    for seed in 1..=20 {
        stress_cores(seed, 4, 10_000, 2_000, 16, false);
        stress_cores(seed, 4, 10_000, 2_000, 16, true);
    }
}

fn with_generated(f: impl FnOnce(&mut ccsim_protocol::ProtocolIr)) -> Arc<Tables> {
    let mut ir = Tables::eci_dc().unwrap().ir.clone();
    f(&mut ir);
    Arc::new(Tables::new(ir).unwrap())
}

#[test]
fn a_deleted_dc_row_fails_with_a_clear_report() {
    // Delete the DC's reaction to a read-shared request in state I.
    let t = with_generated(|ir| {
        ir.roles[0]
            .transitions
            .retain(|t| !(t.state == "I" && t.event == "RLDD"))
    });
    let p = CoherentParams {
        tables: Some(t),
        ..Default::default()
    };
    let mut sys = CoherentSystem::build(&p, HomeMemory::Bram, loads([3]), 1).unwrap();
    let e = sys.run().unwrap_err();
    assert!(
        e.contains("unspecified reception: RLDD for line 0x3"),
        "{e}"
    );
    assert!(e.contains("dc=I cpu=IS_D"), "{e}");
    assert!(e.contains("pending messages: [RLDD]"), "{e}");
}

#[test]
fn a_retargeted_dc_row_fails_swmr() {
    // Mutant: after granting Shared the DC records the CPU as I instead of S.
    // A read alone still works; an app lock after it locks the line while the
    // CPU still holds it Shared, and the online check must catch that.
    let t = with_generated(|ir| {
        for tr in ir.roles[0].transitions.iter_mut() {
            if let Outcome::Go { next, actions } = &mut tr.outcome {
                if next == "S" && actions.iter().any(|a| a.to_string() == "send PSHA") {
                    *next = "I".into();
                }
            }
        }
    });
    let p = CoherentParams {
        tables: Some(t),
        ..Default::default()
    };
    let mut alone = CoherentSystem::build(&p, HomeMemory::Bram, loads([3]), 1).unwrap();
    alone
        .run()
        .expect("a read alone does not expose the mutant");
    let app = vec![AppOp::new("lock", 3)];
    let mut sys =
        CoherentSystem::build_with(&p, HomeMemory::Bram, loads([3]), app, 1, TraceMode::Off)
            .unwrap();
    sys.dc_mut().set_app_start(2 * US);
    let e = sys.run().unwrap_err();
    assert!(
        e.contains("line 0x3: single-writer-multiple-reader violated"),
        "{e}"
    );
    assert!(e.contains("cpu=S app=Locked"), "{e}");
}

#[test]
fn a_stuck_transaction_is_reported_not_hung() {
    // The DC never answers the AXI read: the mutant drops `send PSHA`.
    let t = with_generated(|ir| {
        for tr in ir.roles[0].transitions.iter_mut() {
            if let Outcome::Go { actions, .. } = &mut tr.outcome {
                actions.retain(|a| format!("{a}") != "send PSHA");
            }
        }
    });
    let p = CoherentParams {
        tables: Some(t),
        ..Default::default()
    };
    let mut sys = CoherentSystem::build(&p, HomeMemory::Bram, loads([6]), 1).unwrap();
    let e = sys.run().unwrap_err();
    assert!(e.contains("deadlock") || e.contains("watchdog"), "{e}");
    assert!(e.contains("line 0x6: dc=S cpu=IS_D"), "{e}");
}

#[test]
fn a_dcu_is_serial_and_blocking_per_line() {
    // Lines 0 and 2 are both even; with one DCU per slice they share it and
    // the second read waits for the first transaction; with two DCUs they
    // overlap.
    let run = |dcus: i64| {
        let p = CoherentParams {
            cpu: Params::new().with("mshrs", ParamValue::Int(2), "test"),
            dc: Params::new().with("dcus_per_slice", ParamValue::Int(dcus), "test"),
            ..Default::default()
        };
        let mut sys = CoherentSystem::build(&p, HomeMemory::Bram, loads([0, 2]), 1).unwrap();
        sys.run().unwrap();
        let c = &sys.cpu().completed;
        c.iter().find(|x| x.op == 1).unwrap().latency_ps
    };
    let shared = run(1);
    let separate = run(2);
    // The waiting read pays at least the first one's AXI read and grant.
    assert!(
        shared > separate + 20_000,
        "shared {shared} separate {separate}"
    );
}

/// Two MSHRs, a 5 us watchdog and one DCU per slice, so lines 0 and 2
/// share a DCU.
fn one_dcu_params() -> CoherentParams {
    CoherentParams {
        cpu: Params::new()
            .with("mshrs", ParamValue::Int(2), "test")
            .with("watchdog_us", ParamValue::Float(5.0), "test"),
        dc: Params::new().with("dcus_per_slice", ParamValue::Int(1), "test"),
        ..Default::default()
    }
}

/// The CPU loads lines 0 and 2 while the app locks line 0 and never
/// unlocks it.
fn loads_behind_a_lock(p: &CoherentParams) -> CoherentSystem {
    let app = vec![AppOp::new("lock", 0)];
    CoherentSystem::build_with(p, HomeMemory::Bram, loads([0, 2]), app, 1, TraceMode::Off).unwrap()
}

#[test]
fn a_stalled_request_lets_the_dcu_take_another_and_the_watchdog_reports_it() {
    // The app locks line 0 and never unlocks: the CPU's RLDD for line 0 is
    // stalled by the table (state L), the DCU takes line 2's request instead,
    // and the watchdog reports line 0 with its states and pending message.
    let mut sys = loads_behind_a_lock(&one_dcu_params());
    let e = sys.run().unwrap_err();
    assert!(e.starts_with("watchdog: op 0"), "{e}");
    assert!(
        e.contains("line 0x0: dc=L cpu=IS_D app=Locked; pending messages: [RLDD]"),
        "{e}"
    );
    let done: Vec<usize> = sys.cpu().completed.iter().map(|c| c.op).collect();
    assert_eq!(done, vec![1], "line 2 was served past the stalled line 0");
    assert!(sys.sim.stats().counter("system.dc.stalls").unwrap() >= 1);
}

/// `p` with the online checks off: the checker then mirrors nothing during
/// the run, and stuck reports are built from the components and the kernel
/// once the run has stopped.
fn checks_off(mut p: CoherentParams) -> CoherentParams {
    p.dc = p.dc.with("checks", ParamValue::Bool(false), "test");
    p
}

/// Runs `build(p)` with checks on and with checks off; both must fail with
/// the same report (same lines, states and pending messages).
fn same_report_either_way(
    p: CoherentParams,
    build: impl Fn(&CoherentParams) -> CoherentSystem,
) -> String {
    let on = build(&p).run().unwrap_err();
    let off = build(&checks_off(p)).run().unwrap_err();
    assert_eq!(on, off, "checks on:\n{on}\nchecks off:\n{off}");
    assert!(on.contains("pending messages"), "{on}");
    off
}

#[test]
fn with_checks_off_a_deadlock_reports_the_stuck_line_from_the_components() {
    // The DC locks an idle line for the app but never acknowledges it (the
    // mutant drops `send LCL_ACK` from `I LCL_LOCK`): the app waits in
    // WLock forever. App ops arm no watchdog, so the run drains.
    let t = with_generated(|ir| {
        for tr in ir.roles[0].transitions.iter_mut() {
            if let Outcome::Go { actions, .. } = &mut tr.outcome {
                if tr.state == "I" && tr.event == "LCL_LOCK" {
                    actions.retain(|a| format!("{a}") != "send LCL_ACK");
                }
            }
        }
    });
    let p = CoherentParams {
        tables: Some(t),
        ..Default::default()
    };
    let app = || vec![AppOp::new("lock", 0)];
    let e = same_report_either_way(p.clone(), |p| {
        CoherentSystem::build_with(p, HomeMemory::Bram, Vec::new(), app(), 1, TraceMode::Off)
            .unwrap()
    });
    assert!(e.starts_with("deadlock: no event left"), "{e}");
    assert!(
        e.contains("line 0x0: dc=L cpu=I app=WLock; pending messages: []"),
        "{e}"
    );
    // A CPU read of the line then stalls in its DCU behind the lock (the
    // CPU's watchdog is set beyond the run's time limit).
    let p = CoherentParams {
        cpu: Params::new().with("watchdog_us", ParamValue::Float(2e6), "test"),
        ..p
    };
    let e = same_report_either_way(p, |p| {
        CoherentSystem::build_with(p, HomeMemory::Bram, loads([0]), app(), 1, TraceMode::Off)
            .unwrap()
    });
    assert!(e.starts_with("time limit reached"), "{e}");
    assert!(
        e.contains("line 0x0: dc=L cpu=IS_D app=WLock; pending messages: [RLDD]"),
        "{e}"
    );
}

#[test]
fn with_checks_off_a_lost_grant_is_reported_by_the_watchdog() {
    // The DC never grants: the mutant drops `send PSHA`, so the read of
    // line 6 waits in IS_D with the DC in S until the watchdog fires.
    let t = with_generated(|ir| {
        for tr in ir.roles[0].transitions.iter_mut() {
            if let Outcome::Go { actions, .. } = &mut tr.outcome {
                actions.retain(|a| format!("{a}") != "send PSHA");
            }
        }
    });
    let p = CoherentParams {
        tables: Some(t),
        ..Default::default()
    };
    let e = same_report_either_way(p, |p| {
        CoherentSystem::build(p, HomeMemory::Bram, loads([6]), 1).unwrap()
    });
    assert!(e.starts_with("watchdog: op 0"), "{e}");
    assert!(
        e.contains("line 0x6: dc=S cpu=IS_D app=Idle; pending messages: []"),
        "{e}"
    );
}

#[test]
fn with_checks_off_an_unspecified_reception_lists_the_waiting_message() {
    // The DC has no row for RLDD in I: the request stays in its DCU queue.
    let t = with_generated(|ir| {
        ir.roles[0]
            .transitions
            .retain(|t| !(t.state == "I" && t.event == "RLDD"))
    });
    let p = CoherentParams {
        tables: Some(t),
        ..Default::default()
    };
    let e = same_report_either_way(p, |p| {
        CoherentSystem::build(p, HomeMemory::Bram, loads([3]), 1).unwrap()
    });
    assert!(
        e.contains("unspecified reception: RLDD for line 0x3"),
        "{e}"
    );
    assert!(
        e.contains("line 0x3: dc=I cpu=IS_D app=Idle; pending messages: [RLDD]"),
        "{e}"
    );
}

#[test]
fn with_checks_off_the_watchdog_reports_stalled_and_in_flight_messages() {
    // As in the stalled-request test: the RLDD of line 0 stalls in its DCU
    // behind the app's lock; with checks off the watchdog's report is
    // completed by the system from the DC's queues and states.
    let e = same_report_either_way(one_dcu_params(), loads_behind_a_lock);
    assert!(e.starts_with("watchdog: op 0"), "{e}");
    assert!(
        e.contains("line 0x0: dc=L cpu=IS_D app=Locked; pending messages: [RLDD]"),
        "{e}"
    );
    // Stopped while messages are on the link: a watchdog firing mid-flight
    // lists them, from the kernel's queue, like the checker's mirror does.
    let p = CoherentParams {
        cpu: Params::new()
            .with("mshrs", ParamValue::Int(64), "test")
            .with("watchdog_us", ParamValue::Float(0.3), "test"),
        ..Default::default()
    };
    let e = same_report_either_way(p, |p| {
        CoherentSystem::build(p, HomeMemory::Ddr, loads(0..64), 1).unwrap()
    });
    assert!(e.starts_with("watchdog: op"), "{e}");
    assert!(e.lines().count() > 10, "{e}");
    assert!(
        e.contains("dc=S cpu=IS_D app=Idle; pending messages: [PSHA]"),
        "{e}"
    );
    assert!(
        e.contains("dc=I_RLDD cpu=IS_D app=Idle; pending messages: [AXI_RD]"),
        "{e}"
    );
}

/// Every single-row mutant of the generated DC table (`ccsim_protocol::
/// mutate`) run through a small random CPU+app workload with the online
/// checks on: counts how many the simulation rejects with a report.
/// About 10 s in a debug build (160 mutants x up to 12 short runs: the
/// rows this workload reaches).
#[test]
fn mutants_are_caught_by_the_online_checks() {
    let base = Tables::eci_dc().unwrap();
    // The unmutated table must pass the same runs, or "caught" means nothing.
    for seed in 1..=12 {
        run_mutant(&base, seed).unwrap_or_else(|e| panic!("the shipped table fails: {e}"));
    }
    let ms: Vec<_> = ccsim_protocol::mutate::mutants(&base.ir)
        .into_iter()
        .filter(|m| reached_by_the_core_workload(&m.description))
        .collect();
    // The mutants of the core rows (164 before issue 13 item 8, when they
    // were all the mutants; some retargets now pick other states).
    assert_eq!(ms.len(), 160, "{} mutants", ms.len());
    let mut caught = 0;
    let mut survivors = Vec::new();
    for m in &ms {
        let t = Arc::new(Tables::new(m.ir.clone()).unwrap());
        let mut failed = false;
        for seed in 1..=12 {
            if run_mutant(&t, seed).is_err() {
                failed = true;
                break;
            }
        }
        if failed {
            caught += 1;
        } else {
            survivors.push(m.description.clone());
        }
    }
    eprintln!(
        "caught {caught} of {} mutants; survivors: {survivors:?}",
        ms.len()
    );
    assert!(survivors.is_empty(), "only {caught} of {} caught", ms.len());
}

/// Whether a mutant's row is one this workload reaches: it issues the core
/// operations only (loads, stores, evictions, downgrades; clean,
/// clean-invalidate, lock and unlock of unlocked lines), so the rows the
/// complete DC added for request variants, non-caching stores, atomics,
/// I/O, the locking clean and operations on locked lines are never fired
/// (the protocol checker exercises and catches them: `ccsim-protocol`'s
/// `tests/mutation.rs`), nor is the one equivalent mutant pinned there.
fn reached_by_the_core_workload(description: &str) -> bool {
    const COMPLETION_EVENTS: [&str; 13] = [
        "RLDI",
        "RLDT",
        "RSTT",
        "RSTP",
        "RINC",
        "RDEC",
        "RSWP",
        "RSET",
        "RCLR",
        "RCAS",
        "IOBLD",
        "IOBST",
        "LCL_LOCK_CLEAN",
    ];
    if description == "retarget (E, LCL_LOCK): E_LOCK -> E_LOCK_CLEAN" {
        return false;
    }
    let row = description
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(r, _)| r)
        .expect("a mutant names its row");
    let (state, event) = row.split_once(", ").expect("(state, event)");
    let completion_event = COMPLETION_EVENTS.contains(&event);
    let locked_clean = state == "L" && matches!(event, "LCL_CLEAN" | "LCL_CLINV");
    let completion_state = state.starts_with("LS")
        || state.starts_with("E_LOCK_CLEAN")
        || state.starts_with("I_RCAS")
        || state == "I_RSTP";
    !(completion_event || locked_clean || completion_state)
}

fn run_mutant(t: &Arc<Tables>, seed: u64) -> Result<(), String> {
    let mut rng = SimRng::for_path(seed, "mutant");
    // Few lines, frequent evictions and app operations: the conflict rows
    // (an eviction crossing a forward) need the two to overlap in flight.
    let lines = 1 + seed % 3;
    let prog: Vec<CpuOp> = (0..400)
        .map(|i| {
            let line = rng.below(lines);
            match rng.below(12) {
                0 | 1 => CpuOp::Evict { line },
                2 => CpuOp::Downgrade { line },
                3 => CpuOp::Load { line },
                4 | 5 => CpuOp::PrefetchExclusive { line },
                6..=8 => CpuOp::Wait {
                    ps: rng.below(1_000_000),
                },
                _ => CpuOp::Store {
                    line,
                    word: 0,
                    value: i + 1,
                },
            }
        })
        .collect();
    let mut app = Vec::new();
    let mut at = 0;
    for k in 0..60u8 {
        let line = rng.below(lines);
        // Think time spreads the app's ops over the CPU's run.
        at += rng.below(1_000_000);
        match rng.below(3) {
            0 => app.push(AppOp::new("clean", line).at(at)),
            1 => app.push(AppOp::new("clinv", line).at(at)),
            _ => {
                app.push(AppOp::new("lock", line).at(at));
                app.push(AppOp::new("write", line).with_data([k; 128]));
                app.push(AppOp::new("unlock", line));
            }
        }
    }
    let p = CoherentParams {
        cpu: Params::new()
            .with("mshrs", ParamValue::Int(4), "test")
            .with("llc_lines", ParamValue::Int(2), "test")
            .with("watchdog_us", ParamValue::Float(500.0), "test"),
        // Unordered delivery: a VIC can arrive after the HAKI it crossed.
        link: Params::new().with("jitter_ns", ParamValue::Float(300.0), "test"),
        tables: Some(t.clone()),
        ..Default::default()
    };
    let mut sys =
        CoherentSystem::build_with(&p, HomeMemory::Bram, prog, app, seed, TraceMode::Off)?;
    sys.run()
}

#[test]
fn the_llc_is_set_associative_with_lru() {
    // 4 lines, 2 ways: 2 sets; even lines share set 0.
    let p = CoherentParams {
        cpu: Params::new()
            .with("llc_lines", ParamValue::Int(4), "test")
            .with("llc_ways", ParamValue::Int(2), "test"),
        ..Default::default()
    };
    // 0 and 2 fill set 0; touching 0 makes 2 the LRU; 4 evicts 2; 1 and 3
    // (set 1) do not disturb set 0.
    let mut sys =
        CoherentSystem::build(&p, HomeMemory::Bram, loads([0, 2, 0, 1, 3, 4]), 1).unwrap();
    sys.run().unwrap();
    let cpu = sys.cpu();
    let states: Vec<&str> = [0, 2, 4, 1, 3].iter().map(|&l| cpu.line(l).0).collect();
    assert_eq!(states, ["S", "I", "S", "S", "S"]);
    assert_eq!(sys.sim.stats().counter("system.cpu.evictions"), Some(1));
    assert_eq!(sys.sim.stats().counter("system.cpu.misses"), Some(5));
    let bad = CoherentParams {
        cpu: Params::new()
            .with("llc_lines", ParamValue::Int(6), "test")
            .with("llc_ways", ParamValue::Int(4), "test"),
        ..Default::default()
    };
    let e = CoherentSystem::build(&bad, HomeMemory::Bram, vec![], 1)
        .err()
        .unwrap();
    assert!(
        e.contains("coherent_cpu.llc_lines: must be a multiple of llc_ways (4), got 6"),
        "{e}"
    );
}

/// Throughput of the simulator itself (not a pass/fail figure):
/// `cargo test --release -p ccsim-eci --test coherent -- --ignored speed --nocapture`.
#[test]
#[ignore]
fn speed_of_sequential_reads_through_the_dc() {
    let t0 = std::time::Instant::now();
    let tables = Tables::eci_dc().unwrap();
    let gen = t0.elapsed();
    for checks in [false, true] {
        let p = ccsim_eci::bench::bench_params(&tables, checks);
        let n = 200_000u64;
        let t = std::time::Instant::now();
        let mut sys = CoherentSystem::build(&p, HomeMemory::Ddr, loads(0..n), 1).unwrap();
        sys.run().unwrap();
        let s = t.elapsed().as_secs_f64();
        eprintln!(
            "checks={checks}: {n} reads in {s:.3} s = {:.0} transactions/s ({} events); table generation {:?}",
            n as f64 / s,
            sys.sim.events_processed(),
            gen
        );
    }
}

#[test]
fn the_app_window_issues_one_op_per_clock_and_keeps_them_in_flight() {
    // The CPU holds 8 lines Shared; the application clean-invalidates them
    // with a window of 8 (issued one per DC clock, all in flight at once)
    // and then once more line 0 (it waits for line 0's first op).
    let lines = 8u64;
    let prog: Vec<CpuOp> = (0..lines).map(|line| CpuOp::Load { line }).collect();
    let start = 20 * US;
    let mut app: Vec<AppOp> = (0..lines).map(|l| AppOp::new("clinv", l)).collect();
    app[0].not_before = start;
    app.push(AppOp::new("clinv", 0));
    let p = CoherentParams::default();
    let mut sys =
        CoherentSystem::build_with(&p, HomeMemory::Bram, prog, app, 1, TraceMode::Hash).unwrap();
    sys.dc_mut().set_app_window(lines as usize);
    let done: Rc<RefCell<Vec<(Tick, u64, Tick)>>> = Rc::default();
    let sink = done.clone();
    sys.dc_mut().set_observer(Box::new(move |t, e| {
        if let DcEvent::AppDone {
            line, latency_ps, ..
        } = e
        {
            sink.borrow_mut().push((t, *line, *latency_ps));
        }
    }));
    sys.run().unwrap();
    let done = done.borrow();
    assert_eq!(done.len(), lines as usize + 1);
    let period = (1e6_f64 / 322.0).round() as Tick; // 322 MHz in ps
    let issued: Vec<Tick> = done[..lines as usize]
        .iter()
        .map(|(t, _, l)| t - l)
        .collect();
    // One issue per clock, in order.
    for w in issued.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap.abs_diff(period) <= 1, "issue gap {gap} ps");
    }
    // All eight were in flight together: the last issued before the first completed.
    assert!(issued[lines as usize - 1] < done[0].0);
    // The second op on line 0 issued only after the first one completed.
    let (t_again, line_again, lat_again) = done[lines as usize];
    assert_eq!(line_again, 0);
    let first_on_0 = done.iter().find(|d| d.1 == 0).unwrap().0;
    assert!(t_again - lat_again >= first_on_0);
    assert_eq!(sys.dc().app_pending(), 0);
}

/// A full trace keeps the components' notes (the LLC's and the DC's
/// transitions, the core's operations) beside the messages; it hashes as
/// a run with the hash only, and the numbers match the statistics.
#[test]
fn full_trace_notes_match_the_statistics_and_keep_the_hash() {
    let p = CoherentParams::default();
    let program = vec![
        CpuOp::Load { line: 5 },
        CpuOp::Store {
            line: 6,
            word: 1,
            value: 7,
        },
        CpuOp::Load { line: 5 },
    ];
    let run = |mode| {
        let mut sys =
            CoherentSystem::build_with(&p, HomeMemory::Bram, program.clone(), vec![], 3, mode)
                .unwrap();
        sys.run().unwrap();
        sys
    };
    let (hashed, full) = (run(TraceMode::Hash), run(TraceMode::Full));
    assert_eq!(hashed.sim.trace_hash(), full.sim.trace_hash());
    assert_eq!(hashed.sim.trace_events_json(), None);
    let doc: serde_json::Value =
        serde_json::from_str(&full.sim.trace_events_json().unwrap()).unwrap();
    let stats = full.sim.stats();
    let notes = doc["notes"].as_array().unwrap();
    let comps = doc["components"].as_array().unwrap();
    let of = |comp: &str, kind: &str| {
        notes
            .iter()
            .filter(|n| {
                comps[n["component"].as_u64().unwrap() as usize] == comp && n["kind"] == kind
            })
            .collect::<Vec<_>>()
    };
    // One note per operation, with the latency the histogram recorded.
    let ops = of("system.cpu", "op");
    assert_eq!(
        ops.len() as u64,
        stats.histogram("system.cpu.latency_ps").unwrap().count
    );
    let lat: Vec<u64> = full.cpu().completed.iter().map(|c| c.latency_ps).collect();
    let mut noted: Vec<u64> = ops
        .iter()
        .map(|n| n["end"].as_u64().unwrap() - n["start"].as_u64().unwrap())
        .collect();
    let mut want = lat.clone();
    noted.sort_unstable();
    want.sort_unstable();
    assert_eq!(noted, want);
    // Two misses: two transactions opened and closed at the CPU, each
    // I -> transient -> stable; one DC note per DC event.
    let llc = of("system.cpu", "transition");
    let opened = llc.iter().filter(|n| n["opens"] == true).count();
    let closed = llc.iter().filter(|n| n["closes"] == true).count();
    assert_eq!((opened, closed), (2, 2));
    assert_eq!(stats.counter("system.cpu.misses"), Some(2));
    let first = llc[0]["args"].as_array().unwrap();
    assert_eq!(first[0], serde_json::json!(["track", "llc"]));
    assert_eq!(first[1], serde_json::json!(["from", "I"]));
    // One DCU note per DC event; the FPGA-side machine's own transitions
    // (the AXI reads here) are on its `app` track.
    let dc = of("system.dc", "transition");
    let dcu = dc
        .iter()
        .filter(|n| n["args"][0] == serde_json::json!(["track", "dcu"]))
        .count();
    assert_eq!(Some(dcu as u64), stats.counter("system.dc.events"));
    assert!(dc.len() > dcu);
    assert_eq!(
        doc["messages"].as_array().unwrap().len(),
        full.sim
            .trace_json()
            .unwrap()
            .matches("\"ph\":\"X\"")
            .count()
    );
}
