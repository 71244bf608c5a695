//! The CXL device's load-store unit through a bounded HMC (the DCOH's
//! `capacity_lines` and `ways`): lines beyond the capacity are evicted with
//! the cxl-cache table's `evict` row, LRU within a set.

use ccsim_experiments::run_point;
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn cohet_with(capacity: i64, ways: i64) -> Platform {
    Platform::load("cohet")
        .unwrap()
        .with_overrides(&[
            ("dcoh.capacity_lines".into(), ParamValue::Int(capacity)),
            ("dcoh.ways".into(), ParamValue::Int(ways)),
        ])
        .unwrap()
}

fn hmc_bandwidth(p: &Platform, requests: f64) -> (f64, f64) {
    let params = Params::new()
        .with("mode", ParamValue::Str("bandwidth".into()), "test")
        .with("tier", ParamValue::Str("hmc".into()), "test");
    let r = run_point("cxl_lsu", p, "requests", requests, &params, 0, false).unwrap();
    (r.metrics["bandwidth_gbps"], r.stats["system.dcoh.rows"])
}

#[test]
fn a_sequence_that_fits_hits_and_one_that_does_not_thrashes() {
    let small = cohet_with(64, 4);
    // 64 lines fit: the second pass hits at the pipeline's rate, as with
    // an unbounded HMC.
    let (fits, _) = hmc_bandwidth(&small, 64.0);
    let (unbounded, _) = hmc_bandwidth(&cohet_with(0, 1), 64.0);
    assert_eq!(fits, unbounded);
    // 128 sequential lines through 64 ways of LRU: every line is evicted
    // before its second load, which misses to the LLC.
    let (thrash, rows) = hmc_bandwidth(&small, 128.0);
    let (_, rows_unbounded) = hmc_bandwidth(&cohet_with(0, 1), 128.0);
    assert!(
        thrash < 0.7 * fits,
        "{thrash} GB/s vs {fits} GB/s when it fits"
    );
    // The extra rows are the 192 evictions (CleanEvict out, the write-pull
    // back; 256 loads, 64 lines left) and the 128 second-pass misses (GO-S
    // and the data).
    assert_eq!(rows - rows_unbounded, 192.0 * 2.0 + 128.0 * 2.0);
}

#[test]
fn capacity_must_hold_whole_ways() {
    let e = Platform::load("cohet")
        .unwrap()
        .with_overrides(&[
            ("dcoh.capacity_lines".into(), ParamValue::Int(10)),
            ("dcoh.ways".into(), ParamValue::Int(4)),
        ])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("must be a multiple of ways (4), got 10"),
        "{e}"
    );
}
