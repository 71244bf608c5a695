//! The CPU side of the coherent Enzian platform: L1 hits, write buffers
//! (store-to-load forwarding, full-buffer stalls, fences), atomics across
//! cores, cache maintenance, prefetches, TAD transaction limits and the XOR
//! address scrambler. Every test asserts values the mechanism determines.

use ccsim_coherence::initial_line;
use ccsim_eci::cpu::{xor_fold, AtomicOp, Completed, CpuOp};
use ccsim_eci::system::{CoherentParams, CoherentSystem, HomeMemory};
use ccsim_kernel::prelude::*;

fn cpu(params: &[(&str, ParamValue)]) -> CoherentParams {
    let mut p = Params::new();
    for (n, v) in params {
        p.set(n, v.clone(), "test");
    }
    CoherentParams {
        cpu: p,
        ..Default::default()
    }
}

fn int(v: i64) -> ParamValue {
    ParamValue::Int(v)
}

fn run(p: &CoherentParams, programs: Vec<Vec<CpuOp>>) -> CoherentSystem {
    let mut sys =
        CoherentSystem::build_cores(p, HomeMemory::Bram, programs, vec![], 1, TraceMode::Hash)
            .unwrap();
    sys.run().unwrap();
    sys
}

fn op(sys: &CoherentSystem, core: usize, i: usize) -> Completed {
    sys.cpu()
        .completed
        .iter()
        .find(|c| c.core == core && c.op == i)
        .cloned()
        .unwrap_or_else(|| panic!("core {core} op {i} did not complete"))
}

fn word(l: &[u8; 128], w: usize) -> u64 {
    u64::from_le_bytes(l[w * 8..w * 8 + 8].try_into().unwrap())
}

fn done_at(c: &Completed) -> Tick {
    c.issued + c.latency_ps
}

#[test]
fn l1_hits_take_the_l1_latency_and_cold_loads_keep_todays_latency() {
    let prog = vec![CpuOp::Load { line: 5 }, CpuOp::Load { line: 5 }];
    let off = run(&CoherentParams::default(), vec![prog.clone()]);
    let on = run(
        &cpu(&[
            ("l1_bytes", int(32 * 1024)),
            ("l1_hit_ns", ParamValue::Float(1.5)),
        ]),
        vec![prog],
    );
    // The cold miss costs the same with or without the L1 (its lookup is
    // folded into miss_ns).
    assert_eq!(op(&on, 0, 0).latency_ps, op(&off, 0, 0).latency_ps);
    assert!(op(&on, 0, 0).latency_ps > 230_000);
    // The second load: an LLC hit (hit_ns = 10) without L1, an L1 hit with.
    assert_eq!(op(&off, 0, 1).latency_ps, 10_000);
    assert_eq!(op(&on, 0, 1).latency_ps, 1_500);
    assert_eq!(op(&on, 0, 1).data, initial_line(5));
    assert_eq!(on.sim.stats().counter("system.cpu.l1_hits"), Some(1));
    assert!(on.cpu().in_l1(0, 5));
}

#[test]
fn the_l1_is_inclusive_an_llc_eviction_invalidates_it() {
    let p = cpu(&[("l1_bytes", int(32 * 1024))]);
    let prog = vec![
        CpuOp::Load { line: 5 },
        CpuOp::Evict { line: 5 },
        CpuOp::Load { line: 5 },
    ];
    let sys = run(&p, vec![prog]);
    // Without back-invalidation the third load would hit the L1 in 1.5 ns.
    assert!(op(&sys, 0, 2).latency_ps > 230_000);
    assert_eq!(sys.sim.stats().counter("system.cpu.misses"), Some(2));
    // Refilled into the LLC by another core, the line is an LLC hit for
    // core 0, not an L1 hit: the eviction removed core 0's L1 copy.
    let two = cpu(&[("l1_bytes", int(32 * 1024)), ("cores", int(2))]);
    let refill = run(
        &two,
        vec![
            vec![
                CpuOp::Load { line: 5 },
                CpuOp::Evict { line: 5 },
                CpuOp::Wait { ps: 4_000_000 },
                CpuOp::Load { line: 5 },
            ],
            vec![CpuOp::Wait { ps: 2_000_000 }, CpuOp::Load { line: 5 }],
        ],
    );
    assert_eq!(refill.cpu().line(5).0, "S");
    assert_eq!(op(&refill, 0, 3).latency_ps, 10_000);
    // Core 1 never loaded the line: only core 0's L1 holds it.
    let two = run(
        &cpu(&[("l1_bytes", int(32 * 1024)), ("cores", int(2))]),
        vec![vec![CpuOp::Load { line: 5 }], vec![CpuOp::Load { line: 6 }]],
    );
    assert!(two.cpu().in_l1(0, 5) && !two.cpu().in_l1(1, 5));
    assert!(two.cpu().in_l1(1, 6) && !two.cpu().in_l1(0, 6));
}

#[test]
fn loads_see_their_cores_buffered_stores_before_they_reach_the_llc() {
    // One op at a time: the store has committed when the second load issues.
    let p = cpu(&[
        ("l1_bytes", int(32 * 1024)),
        ("write_buffer_bytes", int(3 * 1024)),
    ]);
    let prog = vec![
        CpuOp::Load { line: 3 },
        CpuOp::Wait { ps: 1_000_000 },
        CpuOp::Store {
            line: 3,
            word: 2,
            value: 77,
        },
        CpuOp::Load { line: 3 },
    ];
    let sys = run(&p, vec![prog]);
    let st = op(&sys, 0, 2);
    let ld = op(&sys, 0, 3);
    // The store commits into the buffer at L1 speed ...
    assert_eq!(st.latency_ps, 1_500);
    // ... and the load hits the L1 with the buffered word forwarded, while
    // the store still waits for write access (an upgrade over ECI).
    assert_eq!(ld.latency_ps, 1_500);
    assert_eq!(word(&ld.data, 2), 77);
    assert_eq!(word(&ld.data, 3), word(&initial_line(3), 3));
    let log = &sys.cpu().store_log;
    assert_eq!(log.len(), 1);
    assert!(log[0].0 > done_at(&ld) + 200_000, "{log:?}");
    // In the end the LLC holds it.
    assert_eq!(word(&sys.cpu().line(3).1.unwrap(), 2), 77);
}

#[test]
fn loads_do_not_see_younger_buffered_stores() {
    // The store issues while the older load's miss is in flight and commits
    // into the buffer first; the load must still return the old word.
    let p = cpu(&[("write_buffer_bytes", int(3 * 1024)), ("mshrs", int(4))]);
    let prog = vec![
        CpuOp::Load { line: 3 },
        CpuOp::Store {
            line: 3,
            word: 2,
            value: 77,
        },
        CpuOp::Load { line: 3 },
    ];
    let sys = run(&p, vec![prog]);
    let st = op(&sys, 0, 1);
    let older = op(&sys, 0, 0);
    assert!(done_at(&st) < done_at(&older));
    assert_eq!(word(&older.data, 2), word(&initial_line(3), 2));
    assert_eq!(word(&op(&sys, 0, 2).data, 2), 77);
}

#[test]
fn a_merged_younger_store_waits_for_an_older_load_of_its_line() {
    // The older store's drain has the line coming in Exclusive; the load
    // waits for the same grant, and a younger store merges into the entry.
    // The grant arrives: the load must read the older store only.
    let p = cpu(&[("write_buffer_bytes", int(3 * 1024)), ("mshrs", int(4))]);
    let prog = vec![
        CpuOp::Store {
            line: 7,
            word: 0,
            value: 1,
        },
        CpuOp::Load { line: 7 },
        CpuOp::Store {
            line: 7,
            word: 0,
            value: 2,
        },
    ];
    let sys = run(&p, vec![prog]);
    assert_eq!(word(&op(&sys, 0, 1).data, 0), 1);
    assert!(
        op(&sys, 0, 1).latency_ps > 230_000,
        "the load waited for the grant"
    );
    assert_eq!(word(&sys.cpu().line(7).1.unwrap(), 0), 2);
    let log: Vec<u64> = sys.cpu().store_log.iter().map(|s| s.3).collect();
    assert_eq!(log, [1, 2]);
}

/// Stores to four lines the core already holds writable, then a fence:
/// when each entry reached the LLC and when the fence completed.
fn drain_times(drain_ns: f64) -> (Vec<Tick>, Tick) {
    let p = cpu(&[
        ("write_buffer_bytes", int(3 * 1024)),
        ("mshrs", int(8)),
        ("wb_drain_ns", ParamValue::Float(drain_ns)),
    ]);
    let lines = [0u64, 2, 4, 6];
    let mut prog: Vec<CpuOp> = lines
        .iter()
        .map(|&line| CpuOp::PrefetchExclusive { line })
        .collect();
    prog.push(CpuOp::Fence);
    prog.extend(lines.iter().map(|&line| CpuOp::Store {
        line,
        word: 0,
        value: line + 1,
    }));
    prog.push(CpuOp::Fence);
    let fence = prog.len() - 1;
    let sys = run(&p, vec![prog]);
    let times = sys.cpu().store_log.iter().map(|s| s.0).collect();
    (times, done_at(&op(&sys, 0, fence)))
}

#[test]
fn the_write_buffer_drains_one_entry_per_wb_drain_ns() {
    // Without a drain time every entry reaches the LLC as it commits.
    let (at_once, fence_at_once) = drain_times(0.0);
    // 4 ns per entry: the entries leave 4 ns apart, and the fence after the
    // last store completes only when the last entry has drained.
    let (paced, fence_paced) = drain_times(4.0);
    let gaps: Vec<Tick> = paced.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [4_000, 4_000, 4_000], "{paced:?}");
    let gaps0: Vec<Tick> = at_once.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps0, [500, 500, 500], "{at_once:?}");
    assert_eq!(paced[0], at_once[0]);
    assert_eq!(fence_paced, paced[3]);
    assert!(
        fence_at_once < fence_paced - 8_000,
        "{fence_at_once} {fence_paced}"
    );
}

#[test]
fn a_full_write_buffer_stalls_the_core() {
    // Two entries; stores to three lines: the third waits for a drain.
    let p = cpu(&[("write_buffer_bytes", int(256)), ("mshrs", int(8))]);
    let prog: Vec<CpuOp> = (0..3)
        .map(|l| CpuOp::Store {
            line: l * 2,
            word: 0,
            value: l + 1,
        })
        .chain([CpuOp::Store {
            line: 2,
            word: 1,
            value: 9,
        }])
        .collect();
    let sys = run(&p, vec![prog]);
    assert_eq!(op(&sys, 0, 0).latency_ps, 1_500);
    assert_eq!(op(&sys, 0, 1).latency_ps, 1_500);
    let third = op(&sys, 0, 2);
    assert!(third.latency_ps > 230_000, "{}", third.latency_ps);
    // It committed when the first entry drained.
    let first_drain = sys.cpu().store_log[0].0;
    assert_eq!(done_at(&third), first_drain + 1_500);
    // The core issued nothing while stalled: op 3 issued after op 2 committed
    // its slot.
    assert!(op(&sys, 0, 3).issued >= first_drain);
    // It merged into line 2's entry: no second stall.
    assert_eq!(op(&sys, 0, 3).latency_ps, 1_500);
    assert_eq!(sys.sim.stats().counter("system.cpu.wb_stalls"), Some(1));
    assert_eq!(sys.cpu().store_log.len(), 4);
}

#[test]
fn a_fence_waits_for_the_write_buffer_to_drain() {
    let base = [("write_buffer_bytes", int(3 * 1024)), ("mshrs", int(4))];
    let store = CpuOp::Store {
        line: 0,
        word: 0,
        value: 1,
    };
    let fenced = run(
        &cpu(&base),
        vec![vec![store, CpuOp::Fence, CpuOp::Load { line: 1 }]],
    );
    let drained = fenced.cpu().store_log[0].0;
    let fence = op(&fenced, 0, 1);
    assert_eq!(done_at(&fence), drained);
    assert!(op(&fenced, 0, 2).issued >= drained);
    // Without the fence the load overlaps the store's drain.
    let free = run(&cpu(&base), vec![vec![store, CpuOp::Load { line: 1 }]]);
    assert!(op(&free, 0, 1).issued < free.cpu().store_log[0].0 - 200_000);
}

#[test]
fn atomics_return_the_old_value_and_are_atomic_across_cores() {
    let cores = 4;
    let per_core = 25;
    let p = cpu(&[
        ("cores", int(cores)),
        ("mshrs", int(2)),
        ("l1_bytes", int(32 * 1024)),
        ("write_buffer_bytes", int(3 * 1024)),
    ]);
    let prog = |k: u64| -> Vec<CpuOp> {
        (0..per_core)
            .flat_map(|j| {
                [
                    CpuOp::Atomic {
                        line: 9,
                        word: 0,
                        op: AtomicOp::FetchAdd(1),
                    },
                    // Unrelated buffered stores between the atomics.
                    CpuOp::Store {
                        line: 20 + k,
                        word: 1,
                        value: j,
                    },
                ]
            })
            .collect()
    };
    let sys = run(&p, (0..cores as u64).map(prog).collect());
    let start = word(&initial_line(9), 0);
    let mut olds: Vec<u64> = sys
        .cpu()
        .completed
        .iter()
        .filter_map(|c| c.old)
        .map(|o| o.wrapping_sub(start))
        .collect();
    olds.sort_unstable();
    let n = cores as u64 * per_core;
    // Every increment saw a distinct old value: none was lost.
    assert_eq!(olds, (0..n).collect::<Vec<_>>());
    let (_, copy) = sys.cpu().line(9);
    let now = copy.unwrap_or_else(|| sys.dc().mem.read(9));
    assert_eq!(word(&now, 0), start.wrapping_add(n));

    // CAS fails on a mismatch (no store), succeeds on a match; swap.
    let seq = vec![
        CpuOp::Atomic {
            line: 4,
            word: 3,
            op: AtomicOp::Cas {
                expected: 1,
                new: 2,
            },
        },
        CpuOp::Store {
            line: 4,
            word: 3,
            value: 1,
        },
        CpuOp::Atomic {
            line: 4,
            word: 3,
            op: AtomicOp::Cas {
                expected: 1,
                new: 2,
            },
        },
        CpuOp::Atomic {
            line: 4,
            word: 3,
            op: AtomicOp::Swap(7),
        },
        CpuOp::Load { line: 4 },
    ];
    let p1 = cpu(&[("write_buffer_bytes", int(3 * 1024)), ("mshrs", int(4))]);
    let s = run(&p1, vec![seq]);
    assert_eq!(op(&s, 0, 0).old, Some(word(&initial_line(4), 3)));
    // The CAS after the store sees it.
    assert_eq!(op(&s, 0, 2).old, Some(1));
    assert_eq!(op(&s, 0, 3).old, Some(2));
    assert_eq!(word(&op(&s, 0, 4).data, 3), 7);
}

#[test]
fn clean_writes_back_and_keeps_the_line() {
    let prog = vec![
        CpuOp::Store {
            line: 4,
            word: 0,
            value: 0xC1EA,
        },
        CpuOp::Clean { line: 4 },
        CpuOp::Load { line: 4 },
        CpuOp::Clean { line: 4 },
    ];
    let sys = run(&CoherentParams::default(), vec![prog]);
    // Written back (VICS) and kept readable: the load hits in the LLC.
    assert_eq!(sys.cpu().line(4).0, "S");
    assert_eq!(word(&sys.dc().mem.read(4), 0), 0xC1EA);
    assert_eq!(op(&sys, 0, 2).latency_ps, 10_000);
    // A clean line is not written back again.
    assert_eq!(sys.sim.stats().counter("system.dc.axi_writes"), Some(1));
}

#[test]
fn a_read_prefetch_completes_at_issue_and_fills_the_caches() {
    let prog = vec![
        CpuOp::Prefetch { line: 6 },
        CpuOp::Wait { ps: 2_000_000 },
        CpuOp::Load { line: 6 },
    ];
    let sys = run(&CoherentParams::default(), vec![prog.clone()]);
    assert_eq!(op(&sys, 0, 0).latency_ps, 500);
    assert_eq!(op(&sys, 0, 2).latency_ps, 10_000);
    assert_eq!(op(&sys, 0, 2).data, initial_line(6));
    assert_eq!(sys.sim.stats().counter("system.cpu.misses"), Some(1));
    // PLDL1KEEP: with an L1, the prefetched line lands there.
    let l1 = run(&cpu(&[("l1_bytes", int(32 * 1024))]), vec![prog]);
    assert_eq!(op(&l1, 0, 2).latency_ps, 1_500);
    assert_eq!(op(&l1, 0, 2).data, initial_line(6));
}

#[test]
fn a_tad_admits_sixteen_transactions() {
    let mut p = cpu(&[
        ("tads", int(1)),
        ("tad_transactions", int(16)),
        ("mshrs", int(32)),
        ("issue_ns", ParamValue::Float(0.1)),
    ]);
    p.dc = Params::new().with("dcus_per_slice", ParamValue::Int(64), "test");
    let loads: Vec<CpuOp> = (0..32).map(|line| CpuOp::Load { line }).collect();
    let sys = run(&p, vec![loads.clone()]);
    assert_eq!(sys.cpu().tad_peak(), &[16]);
    assert_eq!(sys.sim.stats().counter("system.cpu.tad_waits"), Some(16));
    // The 17th load waits for the first transaction to end.
    let first_end = done_at(&op(&sys, 0, 0));
    let l16 = op(&sys, 0, 16);
    assert!(done_at(&l16) > first_end + 200_000);
    // Two TADs: 16 each, no waiting.
    let mut p2 = p.clone();
    p2.cpu.set("tads", int(2), "test");
    let two = run(&p2, vec![loads]);
    assert_eq!(two.cpu().tad_peak(), &[16, 16]);
    assert_eq!(two.sim.stats().counter("system.cpu.tad_waits"), Some(0));
    assert!(done_at(&op(&two, 0, 16)) + 150_000 < done_at(&l16));
}

#[test]
fn several_cores_are_deterministic() {
    let p = cpu(&[
        ("cores", int(3)),
        ("mshrs", int(4)),
        ("l1_bytes", int(32 * 1024)),
        ("write_buffer_bytes", int(3 * 1024)),
        ("tads", int(4)),
        ("scrambler", ParamValue::Bool(true)),
    ]);
    let prog = |k: u64| -> Vec<CpuOp> {
        (0..40)
            .map(|i| match i % 4 {
                0 => CpuOp::Load { line: i % 7 },
                1 => CpuOp::Store {
                    line: (i + k) % 7,
                    word: k as u8,
                    value: i,
                },
                2 => CpuOp::Atomic {
                    line: 3,
                    word: 15,
                    op: AtomicOp::FetchAdd(k + 1),
                },
                _ => CpuOp::Fence,
            })
            .collect()
    };
    let go = || {
        let mut sys = CoherentSystem::build_cores(
            &p,
            HomeMemory::Ddr,
            (0..3).map(prog).collect(),
            vec![],
            7,
            TraceMode::Hash,
        )
        .unwrap();
        sys.run().unwrap();
        (sys.sim.trace_hash(), sys.cpu().completed.clone())
    };
    let (h1, c1) = go();
    let (h2, c2) = go();
    assert_eq!(h1, h2);
    assert_eq!(c1, c2);
    assert_eq!(c1.len(), 120);
    assert!(c1.iter().any(|c| c.core == 2));
}

#[test]
fn the_scrambler_spreads_sequential_lines_over_tads_deterministically() {
    // The documented hash: XOR of all 3-bit chunks of the line index.
    assert_eq!(xor_fold(0b1000, 3), 1);
    assert_eq!(xor_fold(0b1001, 3), 0);
    assert_eq!(xor_fold(0b111_101_011, 3), 0b111 ^ 0b101 ^ 0b011);
    let p = cpu(&[
        ("tads", int(8)),
        ("scrambler", ParamValue::Bool(true)),
        ("llc_lines", int(131072)),
        ("llc_ways", int(16)),
    ]);
    let sys = run(&p, vec![]);
    let c = sys.cpu();
    // Every aligned block of 8 sequential lines covers all 8 TADs ...
    for block in 0..64u64 {
        let mut t: Vec<usize> = (0..8).map(|k| c.tad_of(block * 8 + k)).collect();
        t.sort_unstable();
        assert_eq!(t, (0..8).collect::<Vec<_>>(), "block {block}");
    }
    // ... in an order that differs between blocks (not line % 8).
    assert_ne!(
        (0..8).map(|k| c.tad_of(8 + k)).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
    // Sets: 8192 sets, sequential lines cover each set once per 8192 lines.
    let mut seen = vec![0u32; 8192];
    for l in 0..8192 * 2 {
        seen[c.set_of(l) as usize] += 1;
    }
    assert!(seen.iter().all(|&n| n == 2));
    assert_ne!(c.set_of(8192), 0, "the set index is scrambled");
    // A power of two is required.
    let bad = cpu(&[("tads", int(6)), ("scrambler", ParamValue::Bool(true))]);
    assert!(CoherentSystem::build(&bad, HomeMemory::Bram, vec![], 1).is_err());
}

#[test]
fn the_scrambler_breaks_up_a_strided_pattern_that_fills_one_tad() {
    // 64 loads with a stride of 8 lines over 8 TADs: `line % 8` sends them
    // all to TAD 0 (48 wait for a slot); the XOR fold spreads them 8 per TAD.
    let run_with = |scrambler: bool| {
        let mut p = cpu(&[
            ("tads", int(8)),
            ("mshrs", int(64)),
            ("issue_ns", ParamValue::Float(0.1)),
            ("scrambler", ParamValue::Bool(scrambler)),
        ]);
        p.dc = Params::new().with("dcus_per_slice", ParamValue::Int(64), "test");
        let loads: Vec<CpuOp> = (0..64).map(|k| CpuOp::Load { line: k * 8 }).collect();
        let sys = run(&p, vec![loads]);
        let waits = sys.sim.stats().counter("system.cpu.tad_waits").unwrap();
        let last = sys.cpu().completed.iter().map(done_at).max().unwrap();
        (sys.cpu().tad_peak().to_vec(), waits, last)
    };
    let (peak, waits, slow) = run_with(false);
    assert_eq!(peak, [16, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(waits, 48);
    let (peak, waits, fast) = run_with(true);
    assert_eq!(peak, [8; 8]);
    assert_eq!(waits, 0);
    eprintln!("strided: scrambled {fast} ps, unscrambled {slow} ps");
    assert!(
        fast + 200_000 < slow,
        "scrambled {fast} ps, unscrambled {slow} ps"
    );
}

/// 32 stores to distinct lines through a 2-entry write buffer into one TAD
/// of 16 transactions, with or without the store-miss path into the TAD.
fn store_stream(in_tads: bool) -> CoherentSystem {
    let mut p = cpu(&[
        ("write_buffer_bytes", int(256)),
        ("mshrs", int(8)),
        ("tads", int(1)),
        ("tad_transactions", int(16)),
        ("store_misses_in_tads", ParamValue::Bool(in_tads)),
    ]);
    p.dc = Params::new().with("dcus_per_slice", ParamValue::Int(64), "test");
    let mut prog: Vec<CpuOp> = (0..32)
        .map(|line| CpuOp::Store {
            line,
            word: 1,
            value: line + 100,
        })
        .collect();
    prog.push(CpuOp::Fence);
    run(&p, vec![prog])
}

#[test]
fn store_misses_drain_into_tad_transactions_and_overlap_past_the_write_buffer() {
    let waiting = store_stream(false);
    let in_tads = store_stream(true);
    // Waiting at the head, the two entries are the only read-exclusives in
    // flight; drained into the TAD, the stores fill its 16 slots.
    assert_eq!(waiting.cpu().tad_peak(), &[2]);
    assert_eq!(in_tads.cpu().tad_peak(), &[16]);
    let n = |s: &CoherentSystem, k: &str| s.sim.stats().counter(&format!("system.cpu.{k}"));
    // The entries past the 16th waited for a slot at the buffer's head.
    assert_eq!(n(&in_tads, "tad_waits"), Some(16));
    assert_eq!(n(&waiting, "tad_waits"), Some(0));
    // Every line was asked for once either way.
    assert_eq!(n(&in_tads, "misses"), Some(32));
    assert_eq!(n(&waiting, "misses"), Some(32));
    // 32 lines take 16 round trips two at a time, two with 16 at a time;
    // the fence completes once the last store is performed.
    let fence = |s: &CoherentSystem| done_at(&op(s, 0, 32));
    assert!(
        fence(&in_tads) * 4 < fence(&waiting),
        "{} {}",
        fence(&in_tads),
        fence(&waiting)
    );
    let last = in_tads.cpu().store_log.iter().map(|s| s.0).max().unwrap();
    assert_eq!(fence(&in_tads), last);
    // Every store reached its line, once.
    assert_eq!(in_tads.cpu().store_log.len(), 32);
    for line in 0..32 {
        assert_eq!(word(&in_tads.cpu().line(line).1.unwrap(), 1), line + 100);
    }
}

#[test]
fn stores_in_a_tad_transaction_are_seen_by_their_core_and_keep_program_order() {
    let p = cpu(&[
        ("write_buffer_bytes", int(3 * 1024)),
        ("mshrs", int(4)),
        ("tads", int(2)),
        ("store_misses_in_tads", ParamValue::Bool(true)),
    ]);
    let prog = vec![
        CpuOp::Store {
            line: 5,
            word: 0,
            value: 1,
        },
        // Issued after the first entry left the buffer for the TAD: a
        // second entry for the same line, joining the open transaction.
        CpuOp::Wait { ps: 20_000 },
        CpuOp::Store {
            line: 5,
            word: 0,
            value: 2,
        },
        CpuOp::Load { line: 5 },
    ];
    let sys = run(&p, vec![prog]);
    // One read-exclusive: the second entry joined the first's transaction.
    assert_eq!(sys.sim.stats().counter("system.cpu.misses"), Some(1));
    // The load waits for the line (merged into the miss) and sees the
    // core's newest store, which the LLC then holds.
    let ld = op(&sys, 0, 3);
    assert!(ld.latency_ps > 200_000, "{}", ld.latency_ps);
    assert_eq!(word(&ld.data, 0), 2);
    let log: Vec<u64> = sys.cpu().store_log.iter().map(|s| s.3).collect();
    assert_eq!(log, [1, 2]);
    assert_eq!(word(&sys.cpu().line(5).1.unwrap(), 0), 2);
}

#[test]
fn atomics_and_cores_see_stores_drained_into_a_tad_transaction() {
    // Core 0 stores to line 11 (a miss: the entry drains into the TAD at
    // once) and then fetch-adds the same word: the atomic waits until the
    // store is performed and returns it as the old value. Core 1 reads
    // the word afterwards: the store is performed once, before the add.
    let p = cpu(&[
        ("cores", int(2)),
        ("mshrs", int(4)),
        ("write_buffer_bytes", int(3 * 1024)),
        ("tads", int(2)),
        ("store_misses_in_tads", ParamValue::Bool(true)),
    ]);
    let core0 = vec![
        CpuOp::Store {
            line: 11,
            word: 3,
            value: 40,
        },
        CpuOp::Atomic {
            line: 11,
            word: 3,
            op: AtomicOp::FetchAdd(2),
        },
    ];
    let core1 = vec![CpuOp::Wait { ps: 3_000_000 }, CpuOp::Load { line: 11 }];
    let sys = run(&p, vec![core0, core1]);
    let add = op(&sys, 0, 1);
    assert_eq!(add.old, Some(40));
    assert!(add.latency_ps > 200_000, "{}", add.latency_ps);
    assert_eq!(word(&op(&sys, 1, 1).data, 3), 42);
    let log: Vec<u64> = sys.cpu().store_log.iter().map(|s| s.3).collect();
    assert_eq!(log[0], 40);
}

#[test]
fn a_load_retried_after_its_fill_completes_as_with_checks_on() {
    // With checks off, a load that waited for its line's fill completes in
    // `retry_after_fill`'s shortcut; with checks on, the general `attempt`
    // (the shortcut needs checks off). Runs of loads that miss, wait
    // together on one line (three in a row) and hit again later give the
    // same completions (issue, latency, bytes) and events both ways.
    let tables = ccsim_coherence::Tables::eci_dc().unwrap();
    let lines = || (0..3000u64).map(|i| (i / 3) % 500);
    let off = ccsim_eci::bench::run_loads(&tables, false, lines()).unwrap();
    let on = ccsim_eci::bench::run_loads(&tables, true, lines()).unwrap();
    assert_eq!(off.cpu().completed.len(), 3000);
    assert_eq!(off.cpu().completed, on.cpu().completed);
    assert_eq!(off.sim.events_processed(), on.sim.events_processed());
    // A read miss takes longer than a hit after the fill: both kinds ran.
    let lat: Vec<Tick> = off.cpu().completed.iter().map(|c| c.latency_ps).collect();
    assert!(lat.iter().max() > lat.iter().min(), "{lat:?}");
}

#[test]
fn a_cpu_that_keeps_no_records_runs_the_same_counts_every_op_and_still_drives() {
    // `keep_completed` off (the speed bench's setting) changes only what the
    // CPU keeps: the same events and statistics, every op counted, none
    // kept; a driver still sees every completed op, with its bytes.
    let tables = ccsim_coherence::Tables::eci_dc().unwrap();
    let kept = ccsim_eci::bench::run_loads(&tables, false, 0..3000).unwrap();
    let counted = ccsim_eci::bench::speed_run(&tables, false, 3000).unwrap();
    assert_eq!(kept.cpu().completed.len(), 3000);
    assert_eq!(kept.cpu().ops_completed(), 3000);
    assert!(counted.cpu().completed.is_empty());
    assert_eq!(counted.cpu().ops_completed(), 3000);
    assert_eq!(kept.sim.events_processed(), counted.sim.events_processed());
    assert_eq!(kept.sim.stats(), counted.sim.stats());

    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut sys = CoherentSystem::build_with(
        &CoherentParams::default(),
        HomeMemory::Bram,
        vec![CpuOp::Load { line: 7 }, CpuOp::Load { line: 9 }],
        vec![],
        1,
        TraceMode::Hash,
    )
    .unwrap();
    sys.cpu_mut().keep_completed = false;
    let log = seen.clone();
    sys.cpu_mut().set_driver(Box::new(move |c: &Completed| {
        log.borrow_mut().push((c.op, c.data));
        if c.op == 0 {
            vec![CpuOp::Load { line: 11 }]
        } else {
            vec![]
        }
    }));
    sys.run().unwrap();
    assert!(sys.cpu().completed.is_empty());
    assert_eq!(sys.cpu().ops_completed(), 3);
    let seen = seen.borrow();
    let mut ops: Vec<usize> = seen.iter().map(|s| s.0).collect();
    ops.sort();
    assert_eq!(ops, vec![0, 1, 2]);
    for (op, data) in seen.iter() {
        let line = [7, 9, 11][*op];
        assert_eq!(*data, initial_line(line), "op {op}");
    }
}
