//! The CCIX traffic generator on the N1-SDP with the U280 (CCIX §IV):
//! translation before issue, the calibration points of Exp. 2, and the
//! text's statements about ATS that the mechanisms should reproduce.

mod ccix_common;
use ccix_common::{build, params_of};
use ccsim_experiments::run_point;
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn ctg(bytes: f64, settings: &[(&str, &str)]) -> std::collections::BTreeMap<String, f64> {
    let p = Platform::load("n1sdp").unwrap();
    let params = params_of(settings);
    run_point("ccix_ctg", &p, "request_bytes", bytes, &params, 0, false)
        .unwrap()
        .metrics
}

fn within(value: f64, target: f64, tol: f64) -> bool {
    (value - target).abs() <= tol * target
}

#[test]
fn a_program_operation_waits_for_its_release_time() {
    let p = Platform::load("n1sdp").unwrap();
    let run = |release: Option<Vec<Tick>>| {
        let mut s = build(&p, "ccix");
        let sc = 0; // the u280, the system's first agent
        s.agent_mut(sc)
            .set_program(&[(10, "load"), (11, "load")], 2)
            .unwrap();
        if let Some(r) = release {
            s.agent_mut(sc).set_program_release(r).unwrap();
        }
        s.sim.run();
        s.agent(sc).program_times().to_vec()
    };
    let free = run(None);
    assert_eq!((free[0].0, free[1].0), (0, 0), "both issue at once");
    let held = run(Some(vec![0, 5 * US]));
    assert_eq!(held[0], free[0]);
    assert_eq!(held[1].0, 5 * US);
    // Alone on the link, it takes what the first took.
    assert_eq!(held[1].1 - held[1].0, held[0].1 - held[0].0);
    // A count that does not match is an error naming both.
    let mut s = build(&p, "ccix");
    s.agent_mut(0).set_program(&[(1, "load")], 1).unwrap();
    let e = s.agent_mut(0).set_program_release(vec![0, 0]).unwrap_err();
    assert!(
        e.contains("2 release times for 1 program operations"),
        "{e}"
    );
}

#[test]
fn the_calibration_points_of_experiment_2() {
    // A 64 B read with an SC miss, ATC warm: ≈ 700 ns (CCIX §IV Exp. 2).
    let warm = ctg(64.0, &[]);
    assert!(within(warm["latency_ns"], 700.0, 0.05), "{warm:?}");
    assert_eq!(warm["atc_miss_fraction"], 0.0);
    // With an ATC miss: 2453 ns, and the ATS round trip at the switch
    // ≈ 617 ns.
    let cold = ctg(64.0, &[("atc", "cold")]);
    assert!(within(cold["latency_ns"], 2453.0, 0.05), "{cold:?}");
    assert!(within(cold["ats_ns"], 617.0, 0.05), "{cold:?}");
    assert_eq!(cold["atc_miss_fraction"], 1.0);
}

#[test]
fn an_atc_miss_triples_small_reads_but_not_large_ones() {
    let ratio =
        |bytes: f64| ctg(bytes, &[("atc", "cold")])["latency_ns"] / ctg(bytes, &[])["latency_ns"];
    let small = ratio(64.0);
    assert!((2.5..=3.6).contains(&small), "64 B: {small}");
    // From 32 KiB the transfer takes longer than the translations.
    for bytes in [32768.0, 65536.0] {
        let r = ratio(bytes);
        assert!(r < 2.0, "{bytes} B: {r}");
    }
}

#[test]
fn later_sequential_accesses_cost_less_even_across_a_page() {
    let seq = |bytes: f64| {
        ctg(
            bytes,
            &[
                ("atc", "cold"),
                ("pattern", "sequential"),
                ("requests", "128"),
            ],
        )
    };
    let small = seq(64.0);
    // The first access walks; within a page the ATC hits (64 lines a
    // page: one miss in 64); the next page was pre-translated.
    assert!(small["cross_ns"] < small["first_ns"] - 300.0, "{small:?}");
    assert_eq!(small["atc_miss_fraction"], 2.0 / 128.0);
    assert!(within(small["latency_ns"], 700.0, 0.05), "{small:?}");
    // 4 KiB requests cross a page every time, each still cheaper than the
    // first.
    let page = seq(4096.0);
    assert_eq!(page["atc_miss_fraction"], 1.0);
    assert!(page["cross_ns"] < page["first_ns"], "{page:?}");
}

#[test]
fn huge_pages_shorten_the_walk() {
    let small = ctg(64.0, &[("atc", "cold")]);
    let huge = ctg(64.0, &[("atc", "cold"), ("page_size", "2m")]);
    let giant = ctg(64.0, &[("atc", "cold"), ("page_size", "1g")]);
    // A 2 MiB block ends the walk a level early: one descriptor read
    // (80 ns) fewer.
    assert!(within(small["ats_ns"] - huge["ats_ns"], 80.0, 0.01));
    // The whole 1 GiB buffer is one page: after the first request's walk
    // the SMMU's TLB holds it, and the median round trip has no walk.
    assert!(within(small["ats_ns"] - giant["ats_ns"], 320.0, 0.01));
    // A 16 KiB request needs four translations with 4 KiB pages, one with
    // 64 KiB pages.
    assert_eq!(ctg(16384.0, &[])["translations"], 4.0);
    assert_eq!(ctg(16384.0, &[("page_size", "64k")])["translations"], 4.0);
    assert_eq!(
        ctg(16384.0, &[("page_size", "64k"), ("atc", "cold")])["atc_miss_fraction"],
        0.25,
        "one ATC miss, then three bursts in the same 64 KiB page"
    );
}

#[test]
fn eq1_agrees_with_the_simulation_for_one_line() {
    for atc in ["warm", "cold"] {
        let m = ctg(64.0, &[("atc", atc)]);
        assert!(within(m["eq1_ns"], m["latency_ns"], 0.02), "{atc}: {m:?}");
    }
}

#[test]
fn writes_take_ownership_and_bad_lengths_are_errors() {
    let w = ctg(64.0, &[("op", "write")]);
    assert!(w["latency_ns"] > 600.0, "{w:?}");
    let p = Platform::load("n1sdp").unwrap();
    let e = run_point(
        "ccix_ctg",
        &p,
        "request_bytes",
        0.5,
        &Params::new(),
        0,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("request_bytes = 0.5"), "{e}");
    let e = run_point("ccix_ctg", &p, "numa_node", 64.0, &Params::new(), 0, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("sweeps request_bytes"), "{e}");
}

/// A CCIX write miss (WriteUniqueFull) carries its line in the request
/// and ends with the home's Comp (CCIX Base Spec 1.0 §3.11.2: no DBIDResp
/// handshake over the link): one trip, as a read, and unlike a read it
/// waits for no memory read at the home, since it needs none of the old
/// line. With the home reading memory for every request the write pays
/// exactly the memory's 80 ns more, and the read nothing.
#[test]
fn a_ccix_write_is_one_link_round_trip_without_a_memory_read() {
    let base = Platform::load("n1sdp").unwrap();
    let read_everything = base
        .with_overrides(&[(
            "home_agent.memory_read_for_data_only".into(),
            ParamValue::Bool(false),
        )])
        .unwrap();
    let at = |p: &Platform, op: &str| {
        let mut params = Params::new();
        params.set("op", ParamValue::Str(op.into()), "test");
        run_point("ccix_ctg", p, "request_bytes", 64.0, &params, 0, false)
            .unwrap()
            .metrics["latency_ns"]
    };
    let memory_ns = 80.0; // n1sdp home_agent.memory_ns
    let (read, write) = (at(&base, "read"), at(&base, "write"));
    assert!((at(&read_everything, "read") - read).abs() < 1e-6);
    let write_with_memory = at(&read_everything, "write");
    assert!(
        (write_with_memory - write - memory_ns).abs() < 0.5,
        "{write_with_memory} vs {write}"
    );
    // The same trip over the link both ways (the line crosses once either
    // way: in the request for the write, in the CompData for the read), so
    // the write is the read less its memory read, within the System
    // Cache's few ns of read-data return; a second trip (two one-way
    // traversals of 292.65 ns) would be far outside.
    let saved = read - write;
    assert!(
        saved > memory_ns - 10.0 && saved < memory_ns + 10.0,
        "read {read} - write {write} = {saved}"
    );
}

#[test]
fn the_tapasco_dma_baseline_moves_the_bytes_both_ways() {
    let p = Platform::load("n1sdp").unwrap();
    let dma = |direction: &str, bytes: f64| {
        // The AU280's baseline (the platform also holds the VCK5000's).
        let params = Params::new()
            .with("direction", ParamValue::Str(direction.into()), "test")
            .with("pcie_link", ParamValue::Str("u280_pcie".into()), "test")
            .with("xdma_engine", ParamValue::Str("u280_dma".into()), "test");
        run_point("tapasco_dma", &p, "message_bytes", bytes, &params, 0, false)
            .unwrap()
            .metrics["latency_ns"]
    };
    // The calibration point: 700 ns / 0.67 for a 64 B read.
    assert!(within(dma("read", 64.0), 1045.0, 0.05));
    // A write needs no read round trip to host memory: shorter.
    assert!(dma("write", 64.0) < dma("read", 64.0) - 200.0);
    // Bigger transfers take longer, by their bytes at Gen3 x16 (and the
    // engine's datapath).
    assert!(dma("read", 16384.0) > dma("read", 4096.0) + 500.0);
    // CCIX reads win below 4 KiB and lose at 4 KiB.
    let ccix = |bytes: f64| ctg(bytes, &[])["latency_ns"];
    assert!(ccix(2048.0) < dma("read", 2048.0));
    assert!(ccix(4096.0) > dma("read", 4096.0));
}

/// The PCIe-DMA baseline's card side is the card's DDR4 behind a MIG
/// (TaPaSCo's PCIe platforms, pcie_base.tcl): a write to the host waits for
/// the engine's DDR4 read (159 ns), a read from the host only for the MIG's
/// posted write (26.7 ns). Against BRAM (12 ns both ways) the write is
/// longer by that read, rounded up to whole poll periods of the status
/// word (each an 80 ns DRAM read plus the loop), and the 64 B read, the
/// calibration point, stays where it was.
#[test]
fn the_pcie_dma_write_waits_for_the_cards_ddr4_read() {
    let ddr4 = Platform::load("n1sdp").unwrap();
    let bram = ddr4
        .with_overrides(&[
            ("u280_ddr4.latency_ns".into(), ParamValue::Float(12.0)),
            (
                "u280_ddr4.write_response".into(),
                ParamValue::Str("written".into()),
            ),
        ])
        .unwrap();
    let dma = |p: &Platform, direction: &str, bytes: f64| {
        let params = Params::new()
            .with("direction", ParamValue::Str(direction.into()), "test")
            .with("pcie_link", ParamValue::Str("u280_pcie".into()), "test")
            .with("xdma_engine", ParamValue::Str("u280_dma".into()), "test");
        run_point("tapasco_dma", p, "message_bytes", bytes, &params, 0, false)
            .unwrap()
            .metrics["latency_ns"]
    };
    let ddr4_read_extra_ns = 159.0 - 12.0;
    let poll_ns = dma(&ddr4, "write", 64.0) - dma(&bram, "write", 64.0);
    // One poll period covers the DDR4 read's 147 ns at 64 B: the period is
    // the status word's 80 ns DRAM read and the loop around it.
    assert!(poll_ns > 80.0 && poll_ns < 100.0, "{poll_ns}");
    assert!(poll_ns * 2.0 > ddr4_read_extra_ns);
    // At 128 B the DDR4 read crosses a second poll.
    let extra_128 = dma(&ddr4, "write", 128.0) - dma(&bram, "write", 128.0);
    assert!((extra_128 - 2.0 * poll_ns).abs() < 1.0, "{extra_128}");
    // The read's posted MIG write falls inside the poll it already waited.
    assert_eq!(dma(&ddr4, "read", 64.0), dma(&bram, "read", 64.0));
    assert!(within(dma(&ddr4, "read", 64.0), 1045.0, 0.05));
}

fn program_times_on(system: &str, agent: usize, ops: &[(u64, &str)]) -> Vec<(Tick, Tick)> {
    let mut s = build(&Platform::load("n1sdp").unwrap(), system);
    s.agent_mut(agent).set_program(ops, 1).unwrap();
    s.sim.run();
    assert!(s.checker.borrow().violations.is_empty());
    s.agent(agent).program_times().to_vec()
}

#[test]
fn the_vck5000s_l1_is_a_near_level_in_front_of_its_l2() {
    // 2049 distinct lines overflow the 2048-line L1: line 0 leaves it but
    // stays in the 16384-line L2; the last line stays in the L1.
    let mut ops: Vec<(u64, &str)> = (0..=2048u64).map(|l| (l, "load")).collect();
    ops.push((0, "load"));
    ops.push((2048, "load"));
    ops.push((2048, "store")); // a load left it SC or UC: UC hits, SC upgrades
    let t = program_times_on("ccix_vck5000", 0, &ops);
    let ns = |i: usize| (t[i].1 - t[i].0) as f64 / 1000.0;
    let n = ops.len();
    // L2 hit: access_ns (162) + the read data's 20 ns.
    assert_eq!(ns(n - 3), 182.0);
    // L1 hit: hit_ns (142) + 20.
    assert_eq!(ns(n - 2), 162.0);
    // A miss pays the L2's lookup and the CCIX round trip.
    assert!(ns(0) > 800.0, "{}", ns(0));
}

#[test]
fn a_store_hit_takes_the_hit_time_without_the_read_data() {
    let t = program_times_on("ccix", 0, &[(5, "store"), (5, "store"), (5, "load")]);
    let ns = |i: usize| (t[i].1 - t[i].0) as f64 / 1000.0;
    assert!(ns(0) > 600.0, "the first store misses: {}", ns(0));
    assert_eq!(ns(1), 72.0, "u280_sc.hit_ns");
    assert_eq!(ns(2), 92.0, "hit_ns + load_data_ns");
}

#[test]
fn data_local_calibration_points_and_the_vck5000_read_prediction() {
    let local = |system: &str, op: &str| {
        ctg(
            64.0,
            &[("system", system), ("op", op), ("locality", "local")],
        )["latency_ns"]
    };
    // CCIX §IV Exp. 3: AU280 write ~80, read ~100; VCK5000 write ~150
    // (calibrations), read ~170 (a prediction).
    assert!(within(local("ccix", "write"), 80.0, 0.05));
    assert!(within(local("ccix", "read"), 100.0, 0.05));
    assert!(within(local("ccix_vck5000", "write"), 150.0, 0.05));
    assert!(within(local("ccix_vck5000", "read"), 170.0, 0.05));
    // Every line of a data-local request hits.
    let r = ctg(
        4096.0,
        &[
            ("system", "ccix_vck5000"),
            ("op", "read"),
            ("locality", "local"),
        ],
    );
    assert!(r["latency_ns"] < 400.0, "{}", r["latency_ns"]);
    // Larger transfers: the two-level hierarchy (2 ns a line) is faster.
    let big = |system: &str| {
        ctg(
            16384.0,
            &[("system", system), ("op", "read"), ("locality", "local")],
        )["latency_ns"]
    };
    assert!(big("ccix_vck5000") < big("ccix"));
}

#[test]
fn extended_speed_mode_shortens_only_the_serialization() {
    let remote = |system: &str, bytes: f64| {
        ctg(
            bytes,
            &[("system", system), ("op", "read"), ("outstanding", "256")],
        )["latency_ns"]
    };
    // One line: the 25 GT/s link saves a few ns of serialization.
    let (base, esm) = (
        remote("ccix_vck5000", 64.0),
        remote("ccix_vck5000_esm", 64.0),
    );
    assert!(esm < base && base - esm < 10.0, "{base} vs {esm}");
    // With enough lines in flight to fill the link, 16 KiB moves at the
    // higher rate: the ESM link's share of the time shrinks by 16/25.
    let (base, esm) = (
        remote("ccix_vck5000", 16384.0),
        remote("ccix_vck5000_esm", 16384.0),
    );
    assert!(esm < base - 200.0, "{base} vs {esm}");
}
