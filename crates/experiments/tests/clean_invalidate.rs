//! `clean_invalidate` (CCKit Table 3) on the shipped Enzian platform. These
//! tests use 1/8 MiB (1,024 lines) so the debug suite stays fast. The paper's
//! 8 MiB points run in release through the Python suite: their values are
//! pinned by `tests/python/test_golden_points.py`, and the paper's Table 3
//! bounds are checked by `tests/python/test_reproduce.py`.

use ccsim_experiments::{run_point, PointResult, RunError};
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

/// 1/8 MiB = 1,024 lines.
const SMALL: f64 = 0.125;

fn params(config: &str, mode: &str) -> Params {
    Params::new()
        .with("config", ParamValue::Str(config.into()), "test")
        .with("mode", ParamValue::Str(mode.into()), "test")
}

fn point_on(
    platform: &Platform,
    config: &str,
    mode: &str,
    mib: f64,
) -> Result<PointResult, RunError> {
    run_point(
        "clean_invalidate",
        platform,
        "region_mib",
        mib,
        &params(config, mode),
        3,
        false,
    )
}

fn point(config: &str, mode: &str, mib: f64) -> PointResult {
    let enzian = Platform::load("enzian").unwrap();
    point_on(&enzian, config, mode, mib).unwrap()
}

fn dc_clock_mhz(p: &Platform) -> f64 {
    match p.components["dc"].params.get("clock_mhz") {
        Some((ParamValue::Float(f), _)) => *f,
        Some((ParamValue::Int(i), _)) => *i as f64,
        _ => 322.0,
    }
}

#[test]
fn one_at_a_time_costs_an_eci_round_trip_per_line() {
    for config in ["dc_bram", "dc_ddr"] {
        let r = point(config, "latency", SMALL);
        assert_eq!(r.stats["clinv.lines"], 1024.0);
        let lat = r.metrics["latency_ns"];
        // SINV out and HAKI back: at least the calibrated 230 ns ECI round
        // trip, plus DC ingress/egress; well below a microsecond.
        assert!((230.0..1000.0).contains(&lat), "{config}: {lat} ns");
        // One at a time: the rate is the inverse of the latency (plus one
        // DC clock between an ack and the next issue).
        let serial = 1e3 / lat;
        let tput = r.metrics["throughput_mcls"];
        assert!(
            tput <= serial * 1.001 && tput > serial * 0.95,
            "{config}: {tput} vs {serial}"
        );
        // The fill read every line once from memory; the clean-invalidates
        // of clean lines read and write nothing.
        assert_eq!(r.stats["system.dc.axi_reads"], 1024.0, "{config}");
        assert_eq!(r.stats["system.dc.axi_writes"], 0.0, "{config}");
        assert!(r.stats["check.transitions"] > 4.0 * 1024.0);
    }
}

#[test]
fn pipelined_issue_is_bounded_by_the_clock_and_the_dcus() {
    let enzian = Platform::load("enzian").unwrap();
    let mhz = dc_clock_mhz(&enzian);
    for config in ["dc_bram", "dc_ddr"] {
        let serial = point_on(&enzian, config, "latency", SMALL).unwrap();
        let piped = point_on(&enzian, config, "throughput", SMALL).unwrap();
        let t = piped.metrics["throughput_mcls"];
        // Never faster than one request per DC clock.
        assert!(t < mhz, "{config}: {t} >= {mhz}");
        // 64 serial DCUs each hold a line for about one round trip.
        let dcu_bound = 64.0 * 1e3 / serial.metrics["latency_ns"];
        assert!(
            t <= dcu_bound * 1.02 && t > dcu_bound * 0.8,
            "{config}: {t} vs {dcu_bound}"
        );
        // Far above one at a time; queueing makes each request slower.
        assert!(t > 20.0 * serial.metrics["throughput_mcls"], "{config}");
        assert!(
            piped.metrics["latency_ns"] > serial.metrics["latency_ns"],
            "{config}"
        );
    }
}

#[test]
fn throughput_scales_with_the_number_of_dcus() {
    let mut enzian = Platform::load("enzian").unwrap();
    let full = point_on(&enzian, "dc_bram", "throughput", SMALL).unwrap();
    let dc = enzian.components.get_mut("dc").unwrap();
    dc.params
        .set("dcus_per_slice", ParamValue::Int(16), "test: half the DCUs");
    let half = point_on(&enzian, "dc_bram", "throughput", SMALL).unwrap();
    let ratio = full.metrics["throughput_mcls"] / half.metrics["throughput_mcls"];
    assert!((1.8..2.1).contains(&ratio), "ratio {ratio}");
}

#[test]
fn same_seed_same_run() {
    let a = point("dc_ddr", "throughput", SMALL);
    let b = point("dc_ddr", "throughput", SMALL);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.metrics, b.metrics);
    assert_eq!(a.stats, b.stats);
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let enzian = Platform::load("enzian").unwrap();
    for (mib, needle) in [
        (0.0, "positive"),
        (17.0, "at most 16"),
        (1e-6, "whole number"),
    ] {
        let e = point_on(&enzian, "dc_bram", "latency", mib)
            .unwrap_err()
            .to_string();
        assert!(e.contains("region_mib") && e.contains(needle), "{mib}: {e}");
    }
    let e = run_point(
        "clean_invalidate",
        &enzian,
        "accesses",
        8.0,
        &params("dc_bram", "latency"),
        1,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sweeps region_mib"), "{e}");
    let p = Params::new().with("lines", ParamValue::Int(3), "test");
    let e = run_point("clean_invalidate", &enzian, "region_mib", 1.0, &p, 1, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no parameter \"lines\""), "{e}");
    let mut no_dc = enzian.clone();
    no_dc.components.remove("dc");
    let e = point_on(&no_dc, "dc_bram", "latency", SMALL)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`dc`"), "{e}");
}
