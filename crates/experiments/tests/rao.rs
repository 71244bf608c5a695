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
