//! The mechanisms under `cohet-rpc` (Cohet §V-B): a table agent's program
//! operation that waits for an earlier one (the serializer's pointer
//! chase), and the workload's invariants on real messages.

use ccsim_experiments::run_point;
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, Platform};

fn cxl_system(p: &Platform) -> ccsim_platform::BuiltSystem {
    p.build(
        "cxl",
        BuildOptions {
            seed: 0,
            trace: TraceMode::Off,
            checks: true,
            tester: None,
        },
    )
    .unwrap()
}

fn dcoh(s: &ccsim_platform::BuiltSystem) -> usize {
    (0..s.protocol.agents.len())
        .find(|&a| s.protocol.agents[a].name == "dcoh")
        .unwrap()
}

/// A program's operations marked unwindowed (a cache's prefetches) issue
/// without room in the window and take none: with a window of one, three
/// loads run one after another, and with the middle one unwindowed it
/// overlaps the first, while the third still waits for the first.
#[test]
fn unwindowed_operations_issue_outside_the_window() {
    let p = Platform::load("cohet").unwrap();
    let run = |unwindowed: Option<Vec<bool>>| {
        let mut s = cxl_system(&p);
        let d = dcoh(&s);
        s.agent_mut(d)
            .set_program(&[(100, "load"), (200, "load"), (300, "load")], 1)
            .unwrap();
        if let Some(u) = unwindowed {
            s.agent_mut(d).set_program_unwindowed(u).unwrap();
        }
        s.sim.run();
        s.agent(d).program_times().to_vec()
    };
    // A miss's slot frees when its line arrives (its recorded completion
    // adds the DCOH's access), over 400 ns after its issue.
    let serial = run(None);
    assert!(serial[1].0 > serial[0].0 + 400 * NS, "{serial:?}");
    assert!(serial[2].0 > serial[1].0 + 400 * NS, "{serial:?}");
    let free = run(Some(vec![false, true, false]));
    assert!(
        free[1].0 < free[0].0 + 10 * NS,
        "the unwindowed load issues at once: {free:?}"
    );
    assert_eq!(free[2].0, serial[1].0, "the window still holds: {free:?}");
    assert!(free[2].1 < serial[2].1, "{free:?} vs {serial:?}");
    let mut s = cxl_system(&p);
    let d = dcoh(&s);
    s.agent_mut(d).set_program(&[(1, "load")], 1).unwrap();
    let e = s
        .agent_mut(d)
        .set_program_unwindowed(vec![true, false])
        .unwrap_err();
    assert!(
        e.contains("2 unwindowed flags for 1 program operations"),
        "{e}"
    );
}

#[test]
fn a_dependent_load_issues_when_the_load_it_waits_for_completes() {
    let p = Platform::load("cohet").unwrap();
    let run = |after: Option<Vec<Option<usize>>>| {
        let mut s = cxl_system(&p);
        let d = dcoh(&s);
        s.agent_mut(d)
            .set_program(&[(100, "load"), (200, "load"), (300, "load")], 8)
            .unwrap();
        if let Some(a) = after {
            s.agent_mut(d).set_program_after(a).unwrap();
        }
        s.sim.run();
        s.agent(d).program_times().to_vec()
    };
    let free = run(None);
    assert!(free[1].0 < free[0].1, "independent loads overlap");
    let chained = run(Some(vec![None, Some(0), Some(1)]));
    assert_eq!(
        chained[1].0, chained[0].1,
        "issues at its pointer's arrival"
    );
    assert_eq!(chained[2].0, chained[1].1);
    // A chain of three misses takes three latencies.
    let one = free[0].1 - free[0].0;
    assert!(chained[2].1 >= 3 * one - 3 * NS, "{chained:?} vs {one}");
    // Waiting for a later operation, or the wrong count, is an error.
    let mut s = cxl_system(&p);
    let d = dcoh(&s);
    s.agent_mut(d)
        .set_program(&[(1, "load"), (2, "load")], 1)
        .unwrap();
    let e = s
        .agent_mut(d)
        .set_program_after(vec![Some(1), None])
        .unwrap_err();
    assert!(e.contains("operation 0 waits for operation 1"), "{e}");
    let e = s.agent_mut(d).set_program_after(vec![None]).unwrap_err();
    assert!(e.contains("1 dependencies for 2 program operations"), "{e}");
}

fn rpc(bench: f64, settings: &[(&str, &str)]) -> std::collections::BTreeMap<String, f64> {
    let p = Platform::load("cohet").unwrap();
    let mut params = Params::new();
    for (k, v) in settings {
        params.set(k, ParamValue::Str((*v).into()), "test");
    }
    run_point("rpc_offload", &p, "bench", bench, &params, 0, false)
        .unwrap()
        .metrics
}

#[test]
fn cxl_mem_serialization_is_the_fastest_variant_on_every_bench() {
    for b in 0..6 {
        let x = b as f64;
        let mem = rpc(x, &[("phase", "serialize"), ("access", "cxl_mem")]);
        let cache = rpc(x, &[("phase", "serialize"), ("access", "cxl_cache")]);
        let pf = rpc(
            x,
            &[("phase", "serialize"), ("access", "cxl_cache_prefetch")],
        );
        assert!(mem["time_us"] < pf["time_us"], "bench{b}: {mem:?} {pf:?}");
        // The prefetcher never makes CXL.cache slower (within 1%).
        assert!(
            pf["time_us"] <= cache["time_us"] * 1.01,
            "bench{b}: {pf:?} {cache:?}"
        );
        assert!(mem["speedup"] > 1.5, "bench{b}: {mem:?}");
    }
}

#[test]
fn the_same_seed_gives_the_same_point() {
    let a = rpc(2.0, &[("phase", "deserialize")]);
    assert_eq!(a, rpc(2.0, &[("phase", "deserialize")]));
    // RpcNIC against itself is parity.
    let r = rpc(2.0, &[("nic", "rpcnic")]);
    assert_eq!(r["speedup"], 1.0);
    assert_eq!(r["rpcnic_time_us"], a["rpcnic_time_us"]);
}

/// RpcNIC's deserialization (Cohet §V-B1 steps 2-3 and its "redundant data
/// copies"): the head's own DMA write and the CPU's copy out of the DMA
/// area both lengthen it; the copy grows with the decoded bytes, so it
/// costs the most on the large-string benches.
#[test]
fn rpcnic_pays_its_head_dma_and_its_copy() {
    let p = Platform::load("cohet").unwrap();
    let run = |bench: f64, copy: bool| {
        let mut params = Params::new();
        params.set("nic", ParamValue::Str("rpcnic".into()), "test");
        params.set("messages", ParamValue::Int(1), "test");
        params.set("rpcnic_copy", ParamValue::Bool(copy), "test");
        run_point("rpc_offload", &p, "bench", bench, &params, 0, false)
            .unwrap()
            .metrics
    };
    let mut extra = Vec::new();
    for b in [1.0, 2.0, 5.0] {
        let (with, without) = (run(b, true), run(b, false));
        let copy = with["time_us"] - without["time_us"];
        assert!(copy > 0.3, "bench{b}: the copy costs {copy} us");
        // Without the copy the CPU reads the DMA area from memory; with it
        // the objects are in its own L1 and L2.
        assert!(without["rpcnic_cpu_access_us"] > 0.15, "{without:?}");
        assert!(with["rpcnic_cpu_access_us"] > 0.0, "{with:?}");
        assert!(
            with["rpcnic_cpu_access_us"] * 4.0 < without["rpcnic_cpu_access_us"],
            "{with:?} {without:?}"
        );
        extra.push(copy);
    }
    // Bench5's long strings make the largest copy; bench2's is the
    // CPU's work per field more than its lines: its 56 fields at 20
    // instructions each (8.3 ns at 2.4 GHz) are 0.47 us of its 1.0 us,
    // more than bench1's 11-field copy.
    assert!(extra[2] > extra[1] && extra[1] > extra[0], "{extra:?}");
    let fields2 = run(2.0, true)["fields"];
    assert!(extra[1] > fields2 * 20.0 * 0.417e-3, "{extra:?} {fields2}");
    // With the copy the CXL-NIC deserializes faster on every bench (the
    // claim the mechanism makes hold).
    for b in [1.0, 2.0, 5.0] {
        let d = rpc(b, &[("phase", "deserialize")]);
        assert!(d["speedup"] > 1.1, "bench{b}: {d:?}");
    }
}

fn agent(s: &ccsim_platform::BuiltSystem, name: &str) -> usize {
    (0..s.protocol.agents.len())
        .find(|&a| s.protocol.agents[a].name == name)
        .unwrap()
}

/// A program's operations write the bytes they are given (the NIC's pushes
/// carry the decoded objects, the CPU's stores the response), through the
/// verified table with the online checks on: the other side reads them.
#[test]
fn program_operations_write_the_bytes_they_are_given() {
    let p = Platform::load("cohet").unwrap();
    let pushed: Vec<u8> = (0..64u8).collect();
    let stored: Vec<u8> = (0..64u8).map(|b| 255 - b).collect();
    let mut s = cxl_system(&p);
    let (d, core) = (dcoh(&s), agent(&s, "core0"));
    // The DCOH pushes line 7 (ItoMWr) with given bytes, and line 8 with a
    // random value; the core stores line 9 with given bytes.
    let nic = s.agent_mut(d);
    nic.set_program(&[(7, "write_line"), (8, "write_line")], 4)
        .unwrap();
    nic.set_program_data(vec![Some(pushed.clone()), None])
        .unwrap();
    let cpu = s.agent_mut(core);
    cpu.set_program(&[(9, "store"), (7, "load")], 1).unwrap();
    cpu.set_program_data(vec![Some(stored[..40].to_vec()), None])
        .unwrap();
    cpu.start_program_at(100 * US);
    s.sim.run();
    assert!(s.checker.borrow().violations.is_empty());
    assert_eq!(&s.agent(core).copy_of(7).unwrap()[..64], &pushed[..]);
    // A shorter value is zero-padded.
    let mut padded = stored[..40].to_vec();
    padded.resize(64, 0);
    assert_eq!(&s.agent(core).copy_of(9).unwrap()[..64], &padded[..]);
    // Then the DCOH reads line 9 over CXL.cache: the core's bytes.
    let mut s2 = cxl_system(&p);
    let (d, core) = (dcoh(&s2), agent(&s2, "core0"));
    let cpu = s2.agent_mut(core);
    cpu.set_program(&[(9, "store")], 1).unwrap();
    cpu.set_program_data(vec![Some(stored.clone())]).unwrap();
    let nic = s2.agent_mut(d);
    nic.set_program(&[(9, "load")], 1).unwrap();
    nic.start_program_at(100 * US);
    s2.sim.run();
    assert_eq!(&s2.agent(d).copy_of(9).unwrap()[..64], &stored[..]);
    // Bad data: the wrong count, a value longer than a line.
    let e = s2.agent_mut(d).set_program_data(vec![]).unwrap_err();
    assert!(e.contains("0 values for 1 program operations"), "{e}");
    let e = s2
        .agent_mut(d)
        .set_program_data(vec![Some(vec![0; 65])])
        .unwrap_err();
    assert!(e.contains("65 bytes, a line 64"), "{e}");
}

/// Real bytes on the CXL side: every point checks that the CPU reads the
/// pushed objects' bytes and the serializer the bytes the CPU wrote (an
/// error otherwise), on the bench with the most lines and the nested one.
#[test]
fn the_cxl_nic_moves_the_objects_bytes() {
    for b in [2.0, 3.0] {
        rpc(b, &[("phase", "deserialize")]);
        for access in ["cxl_cache", "cxl_cache_prefetch", "cxl_mem"] {
            rpc(b, &[("phase", "serialize"), ("access", access)]);
        }
    }
}

/// How nesting could limit a stride prefetcher (Cohet §VI-E: Bench2's
/// "deeply nested messages limiting prefetch effectiveness"): a stream
/// that needs more confirmations before it prefetches pays more misses
/// each time a nested object leaves its stride, and a small stream table
/// is thrashed by the regions the nested objects lie in. Neither gives the
/// text's ordering on a fresh heap (`size_classes`): with 2 or 3
/// confirmations, or a single stream, Bench2 still gains the most, more
/// than 10%, since most of its nested objects are a parent's only child,
/// the next block of their size class even in the CPU's construction
/// order. On a server's recycled heap (the default) its chains no longer
/// lie in consecutive blocks and no bench gains the text's 12% average.
#[test]
fn bench2_gains_most_from_the_prefetcher_whatever_its_confirmations_or_streams() {
    let p = Platform::load("cohet").unwrap();
    let gain = |bench: f64, confirm: i64, streams: i64, heap: &str| {
        let run = |access: &str| {
            let mut params = Params::new();
            params.set("phase", ParamValue::Str("serialize".into()), "test");
            params.set("access", ParamValue::Str(access.into()), "test");
            params.set("heap", ParamValue::Str(heap.into()), "test");
            params.set("prefetch_confirm", ParamValue::Int(confirm), "test");
            params.set("prefetch_streams", ParamValue::Int(streams), "test");
            // The serializer's reads in walk order, where a prefetch saves
            // the most (by pointer, bench2's fresh-heap gain is +12%).
            params.set(
                "serializer_fetch",
                ParamValue::Str("in_order".into()),
                "test",
            );
            run_point("rpc_offload", &p, "bench", bench, &params, 0, false)
                .unwrap()
                .metrics["time_us"]
        };
        run("cxl_cache") / run("cxl_cache_prefetch")
    };
    for (confirm, streams) in [(1, 16), (2, 16), (3, 16), (1, 1)] {
        for heap in ["size_classes", "recycled"] {
            let g: Vec<f64> = (0..6)
                .map(|b| gain(b as f64, confirm, streams, heap))
                .collect();
            let best = (0..6).max_by(|&a, &b| g[a].total_cmp(&g[b])).unwrap();
            let at = format!("{heap}, confirm {confirm}, {streams} streams: {g:?}");
            eprintln!("{at}");
            if heap == "size_classes" {
                assert_eq!(best, 2, "{at}");
                assert!(g[2] > 1.1, "{at}");
            } else {
                // No bench gains 12% on the recycled heap, Bench2 included.
                assert!(g.iter().all(|&x| x < 1.12), "{at}");
            }
        }
    }
}
