//! The `rao` workload (Cohet §V-A, Fig. 17): both NICs run CircusTent's
//! patterns on real arrays in host memory. Inside the workload every
//! fetched value is checked against the sequential reference in the NIC's
//! commit order, and so are the arrays the host reads back after the run
//! (a mismatch is an error, so a run that returns is a checked run).

use std::collections::BTreeMap;

use ccsim_kernel::component::{ParamValue, Params};
use ccsim_platform::Platform;

fn run(nic: &str, pattern: &str, op: &str, pes: f64, iters: i64) -> BTreeMap<String, f64> {
    let p = Platform::load("cohet").unwrap();
    let params = Params::new()
        .with("nic", ParamValue::Str(nic.into()), "test")
        .with("pattern", ParamValue::Str(pattern.into()), "test")
        .with("op", ParamValue::Str(op.into()), "test")
        .with("remote_pes", ParamValue::Int(16), "test")
        .with("iters", ParamValue::Int(iters), "test")
        .with("elems", ParamValue::Int(4096), "test");
    match ccsim_experiments::run_point("rao", &p, "pes", pes, &params, 3, false) {
        Ok(r) => r.metrics,
        Err(e) => panic!("{nic} {pattern} {op} pes={pes}: {e}"),
    }
}

#[test]
fn every_pattern_and_op_leaves_the_host_arrays_equal_to_the_reference_on_both_nics() {
    for pattern in [
        "RAND", "STRIDE1", "STRIDEN", "PTRCHASE", "CENTRAL", "SCATTER", "GATHER", "SG",
    ] {
        for op in ["add", "cas"] {
            for nic in ["pcie", "cxl"] {
                let m = run(nic, pattern, op, 4.0, 6);
                let per_iter = match pattern {
                    "SCATTER" | "GATHER" => 3.0,
                    "SG" => 4.0,
                    _ => 1.0,
                };
                assert_eq!(m["raos"], 16.0 * 6.0 * per_iter, "{nic} {pattern} {op}");
                assert!(m["throughput_mops"] > 0.0);
            }
        }
    }
}

#[test]
fn the_pcie_nics_raw_hazard_serialises_one_line_and_overlaps_different_lines() {
    // CENTRAL: every RAO on ARRAY[0], each waits for the previous write's
    // acknowledgement, so more PEs do not help.
    let one = run("pcie", "CENTRAL", "add", 1.0, 8)["throughput_mops"];
    let four = run("pcie", "CENTRAL", "add", 4.0, 8)["throughput_mops"];
    assert!((four / one - 1.0).abs() < 1e-9, "{one} vs {four}");
    // One RAO = a 64 B DMA read and a write acknowledged by a zero-length
    // read: two round trips of the calibrated path (link and root complex
    // 473 ns there and back, DRAM 100 ns) and two descriptor setups of 28
    // cycles at 400 MHz (70 ns each): about 1.3 us.
    let per_rao_ns = 1e3 / one;
    assert!(
        (1200.0..1400.0).contains(&per_rao_ns),
        "{per_rao_ns} ns per RAO"
    );
    // STRIDE1: different lines overlap, four PEs give four times the rate.
    let one = run("pcie", "STRIDE1", "add", 1.0, 8)["throughput_mops"];
    let four = run("pcie", "STRIDE1", "add", 4.0, 8)["throughput_mops"];
    assert!((four / one - 4.0).abs() < 0.2, "{one} vs {four}");
}

#[test]
fn the_cxl_nic_hits_in_the_hmc_and_beats_the_pcie_nic() {
    // CENTRAL on the CXL-NIC: after the first RdOwn the line stays in the
    // HMC, and each RAO is the DCOH's pipeline (115 ns) plus the locked
    // modify and write cycles (2 x 2.5 ns), one at a time.
    let cxl = run("cxl", "CENTRAL", "add", 4.0, 8)["throughput_mops"];
    let per_rao_ns = 1e3 / cxl;
    assert!(
        (118.0..125.0).contains(&per_rao_ns),
        "{per_rao_ns} ns per RAO"
    );
    for pattern in ["RAND", "STRIDE1", "PTRCHASE", "CENTRAL", "SG"] {
        let pcie = run("pcie", pattern, "add", 4.0, 8)["throughput_mops"];
        let cxl = run("cxl", pattern, "add", 4.0, 8)["throughput_mops"];
        assert!(cxl > pcie, "{pattern}: CXL {cxl} vs PCIe {pcie}");
    }
}

#[test]
fn without_the_hazard_table_the_pcie_nic_loses_updates_and_the_check_says_so() {
    let p = Platform::load("cohet").unwrap();
    let params = Params::new()
        .with("nic", ParamValue::Str("pcie".into()), "test")
        .with("pattern", ParamValue::Str("CENTRAL".into()), "test")
        .with("remote_pes", ParamValue::Int(8), "test")
        .with("iters", ParamValue::Int(4), "test")
        .with("elems", ParamValue::Int(1024), "test")
        .with("raw_hazard", ParamValue::Bool(false), "test");
    let e = ccsim_experiments::run_point("rao", &p, "pes", 4.0, &params, 0, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("pcie-NIC") && e.contains("differs from the sequential reference"),
        "{e}"
    );
}

#[test]
fn a_bad_sweep_is_an_error() {
    let p = Platform::load("cohet").unwrap();
    let e = ccsim_experiments::run_point("rao", &p, "iters", 4.0, &Params::new(), 0, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rao sweeps pes"), "{e}");
    let e = ccsim_experiments::run_point("rao", &p, "pes", 0.5, &Params::new(), 0, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("pes = 0.5"), "{e}");
}

fn run_with(
    nic: &str,
    pattern: &str,
    pes: f64,
    extra: &[(&str, ParamValue)],
) -> BTreeMap<String, f64> {
    let p = Platform::load("cohet").unwrap();
    let mut params = Params::new()
        .with("nic", ParamValue::Str(nic.into()), "test")
        .with("pattern", ParamValue::Str(pattern.into()), "test")
        .with("elems", ParamValue::Int(4096), "test");
    for (k, v) in extra {
        params = params.with(k, v.clone(), "test");
    }
    match ccsim_experiments::run_point("rao", &p, "pes", pes, &params, 3, false) {
        Ok(r) => r.metrics,
        Err(e) => panic!("{nic} {pattern} pes={pes}: {e}"),
    }
}

#[test]
fn the_network_side_paces_requests_at_a_rate_or_by_its_round_trip() {
    // At 2 requests a microsecond the CXL-NIC (8.3 MRAO/s on CENTRAL) keeps
    // up: the throughput is the offered rate.
    let m = run_with(
        "cxl",
        "CENTRAL",
        4.0,
        &[
            ("remote_pes", ParamValue::Int(16)),
            ("iters", ParamValue::Int(8)),
            ("rate_mops", ParamValue::Float(2.0)),
        ],
    );
    assert!((m["throughput_mops"] / 2.0 - 1.0).abs() < 0.03, "{m:?}");
    // Closed loop over a 1 us network: 4 remote PEs, each with one atomic
    // out, send one a (2 x 1 us + up to 4 x 120 ns of CENTRAL's service):
    // about 4 / 2.12 us.
    let m = run_with(
        "cxl",
        "CENTRAL",
        4.0,
        &[
            ("remote_pes", ParamValue::Int(4)),
            ("iters", ParamValue::Int(32)),
            ("network_ns", ParamValue::Float(1000.0)),
        ],
    );
    assert!((1.8..2.0).contains(&m["throughput_mops"]), "{m:?}");
}

#[test]
fn the_cxl_nics_results_stay_in_the_hmc_until_the_host_asks() {
    use ccsim_coherence::agents::TableAgent;
    use ccsim_devices::circustent::{Kind, Pattern, Workload};
    use ccsim_devices::rao::{ArrayLayout, CxlRaoEngine, RaoConfig, RaoFrontEnd};
    use ccsim_kernel::prelude::*;

    let p = Platform::load("cohet").unwrap();
    let mut s = p
        .build(
            "cxl",
            ccsim_platform::BuildOptions {
                seed: 1,
                trace: TraceMode::Off,
                checks: true,
                tester: None,
            },
        )
        .unwrap();
    let (dcoh, llc, core) = (
        s.agent_id("dcoh").unwrap(),
        s.agent_id("llc").unwrap(),
        s.agent_id("core0").unwrap(),
    );
    // 4 remote PEs x 10 adds of 1 on ARRAY[0].
    let w = Workload::new(Pattern::Central, Kind::Add, 4, 10, 64, 1, 5).unwrap();
    let layout = ArrayLayout::new(w.initial(), 1 << 20);
    for a in layout.lines() {
        let mut v = [0u8; ccsim_coherence::LINE_BYTES];
        v[..64].copy_from_slice(&layout.line_bytes(w.initial(), a));
        s.agent_mut(llc).preload_memory(a / 64, v).unwrap();
        s.checker.borrow_mut().preload(a / 64, &v);
    }
    let cfg = RaoConfig {
        pes: 2,
        rx_depth: 8,
        network: 0,
        arrival_gap: 0,
    };
    let engine = CxlRaoEngine::new(RaoFrontEnd::new(&w, layout, cfg), 5_000);
    s.agent_mut(dcoh).set_engine(Box::new(engine)).unwrap();
    s.sim.run();
    assert!(s.checker.borrow().violations.is_empty());
    let line = (1u64 << 20) / 64;
    let word = |l: &[u8]| u64::from_le_bytes(l[..8].try_into().unwrap());
    let before = w.initial().array[0];
    // The 40 adds are in the DCOH's modified copy; host memory still holds
    // the value from before the run.
    assert_eq!(s.agent(dcoh).state_of(line), "M");
    assert_eq!(word(s.agent(dcoh).copy_of(line).unwrap()), before + 40);
    assert_eq!(word(&s.agent(llc).memory_of(line)), before);
    // The host asks: its load snoops the line out of the HMC.
    s.agent_mut(core).set_program(&[(line, "load")], 1).unwrap();
    let (id, now) = (s.agents[core], s.sim.now());
    s.sim.wake(id, now, TableAgent::PROGRAM_WAKE);
    s.sim.run();
    assert!(s.checker.borrow().violations.is_empty());
    assert_eq!(word(s.agent(core).copy_of(line).unwrap()), before + 40);
    assert_ne!(s.agent(dcoh).state_of(line), "M");
}
