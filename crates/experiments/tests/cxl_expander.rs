//! `cxl_expander` on Cohet's `[systems.cxl_expander]`: determinism, the
//! flit bound from the platform's link parameters, and its errors.

use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn point(x_name: &str, x: f64, kv: &[(&str, i64)], seed: u64) -> ccsim_experiments::PointResult {
    let p = Platform::load("cohet").unwrap();
    let mut params = Params::new();
    for &(k, v) in kv {
        params.set(k, ParamValue::Int(v), "test");
    }
    ccsim_experiments::run_point("cxl_expander", &p, x_name, x, &params, seed, false).unwrap()
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let kv = [
        ("outstanding", 8),
        ("reads", 2),
        ("writes", 1),
        ("ops_per_thread", 300),
    ];
    let a = point("threads", 6.0, &kv, 7);
    let b = point("threads", 6.0, &kv, 7);
    assert_eq!(a.metrics, b.metrics);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert!(!a.trace_hash.is_empty());
}

/// All reads: the S2M direction carries a header slot and four data slots
/// per load, each 64 B of slots a 68 B flit at the x8 rate; twelve
/// threads of 16 requests come within 5% of that bound and never above.
#[test]
fn read_bandwidth_reaches_the_flit_bound_and_stays_below_it() {
    let p = Platform::load("cohet").unwrap();
    let link = &p.component("expander_link").unwrap().params;
    let payload = link.float("bandwidth_gbps") * link.int("flit_payload_bytes") as f64
        / link.int("flit_bytes") as f64;
    let bound = payload * 64.0 / (16.0 + 64.0);
    let r = point(
        "threads",
        12.0,
        &[("outstanding", 16), ("ops_per_thread", 1000)],
        0,
    );
    let bw = r.metrics["bandwidth_gbps"];
    assert!(bw <= bound && bw >= 0.95 * bound, "{bw} vs {bound}");
}

#[test]
fn bad_points_are_errors() {
    let p = Platform::load("cohet").unwrap();
    let run = |x_name: &str, x: f64, kv: &[(&str, i64)]| {
        let mut params = Params::new();
        for &(k, v) in kv {
            params.set(k, ParamValue::Int(v), "test");
        }
        ccsim_experiments::run_point("cxl_expander", &p, x_name, x, &params, 0, false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(run("threads", 13.0, &[]).contains("has 12 host agents"));
    assert!(run("threads", 1.5, &[]).contains("must be a whole number"));
    assert!(run("threads", 1.0, &[("reads", 0), ("writes", 0)]).contains("at least one operation"));
    assert!(run("requests", 1.0, &[]).contains("sweeps threads or outstanding"));
}
