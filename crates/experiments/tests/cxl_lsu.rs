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

/// Latency tests of `trials` x 32 loads hitting `tier` on `p`: (p25,
/// median, p75) in ns.
fn latency_quartiles(p: &Platform, tier: &str, trials: i64) -> (f64, f64, f64) {
    let params = Params::new()
        .with("mode", ParamValue::Str("latency".into()), "test")
        .with("tier", ParamValue::Str(tier.into()), "test")
        .with("trials", ParamValue::Int(trials), "test");
    let r = run_point("cxl_lsu", p, "device_clock_mhz", 400.0, &params, 0, false).unwrap();
    (
        r.metrics["p25_ns"],
        r.metrics["latency_ns"],
        r.metrics["p75_ns"],
    )
}

#[test]
fn the_llc_slice_of_each_line_spreads_host_hits_but_not_hmc_hits() {
    let cohet = Platform::load("cohet").unwrap();
    // 13 slices four to a row: 0 to 5 stops, 0.5 ns each way; the median
    // line is 3 stops away, the 25th percentile 2.
    for tier in ["llc", "memory"] {
        let (p25, median, p75) = latency_quartiles(&cohet, tier, 100);
        assert!(
            (median - p25 - 1.0).abs() < 0.05,
            "{tier}: {p25} {median} {p75}"
        );
        assert!(
            p75 >= median && p75 - p25 <= 5.0,
            "{tier}: {p25} {median} {p75}"
        );
    }
    let (p25, median, p75) = latency_quartiles(&cohet, "hmc", 100);
    assert_eq!((p25, p75), (median, median));
    // Without slices every line of the node is at its entry stop: the
    // quartiles close to within a quarter of a nanosecond, and the median
    // is the median line's round trip (3 stops, 3 ns) shorter.
    let flat = cohet
        .with_overrides(&[("snc.slices_per_node".into(), ParamValue::Int(0))])
        .unwrap();
    let (p25_flat, median_flat, p75_flat) = latency_quartiles(&flat, "llc", 100);
    assert!(
        p75_flat - p25_flat < 0.5,
        "{p25_flat} {median_flat} {p75_flat}"
    );
    let (_, median, _) = latency_quartiles(&cohet, "llc", 100);
    assert!(
        (median - median_flat - 3.0).abs() < 0.05,
        "{median} vs {median_flat}"
    );
}

#[test]
fn a_memory_hit_is_an_llc_hit_plus_the_ddr5_access_of_an_idle_bank() {
    // Each latency test's 32 sequential lines fall on 32 different banks
    // (4 subchannels x 8 bank groups), and the refreshes between two
    // tests (one every 3.9 us, a test takes ~22 us) close every row: the
    // median load activates an idle bank. DDR5-4800B: tRCD 39 and CL 40
    // clocks of 0.4167 ns, a BL16 burst of 8 clocks, plus the fitted
    // controller_ns.
    let cohet = Platform::load("cohet").unwrap();
    let (_, llc, _) = latency_quartiles(&cohet, "llc", 100);
    let (_, memory, _) = latency_quartiles(&cohet, "memory", 100);
    let controller = cohet
        .component("host_dram")
        .unwrap()
        .params
        .float("controller_ns");
    let t_ck = 2.0 / 4.8;
    let dram = controller + (39.0 + 40.0 + 8.0) * t_ck;
    assert!(
        (memory - llc - dram).abs() < 0.01,
        "{memory} - {llc} vs {dram}"
    );
}

#[test]
fn an_llc_too_small_for_the_lines_sends_the_llc_tier_to_memory() {
    // The LLC tier warms every line of the 100 tests (3,200); an LLC of 16
    // lines keeps almost none of them, so the loads pay the DDR5 access of
    // a memory hit. With the node's 24 MB (cohet.toml) every line stays.
    let cohet = Platform::load("cohet").unwrap();
    let small = cohet
        .with_overrides(&[("llc_home.cache_lines".into(), ParamValue::Int(16))])
        .unwrap();
    let (_, llc, _) = latency_quartiles(&cohet, "llc", 100);
    let (_, memory, _) = latency_quartiles(&cohet, "memory", 100);
    let (_, squeezed, _) = latency_quartiles(&small, "llc", 100);
    // The median moves up by the DRAM access to within the slices' 5 ns
    // spread of the memory tier's (the few lines still cached shift it).
    assert!(
        (squeezed - memory).abs() <= 5.0,
        "{squeezed} vs memory {memory}, llc {llc}"
    );
    assert!(squeezed - llc > 100.0, "{squeezed} vs llc {llc}");
}
