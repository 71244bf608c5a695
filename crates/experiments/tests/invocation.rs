//! `coherent_invoke` on the shipped Enzian platform: E- and S-return
//! medians against PIO Fig. 6 and CCKit Fig. 10, determinism, the "not
//! ready yet" path and bad input.

use ccsim_experiments::{run_point, PointResult, RunError};
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn try_point(pct: f64, set: &[(&str, ParamValue)]) -> Result<PointResult, RunError> {
    let enzian = Platform::load("enzian").unwrap();
    let mut p = Params::new().with("calls", ParamValue::Int(100), "test");
    for (n, v) in set {
        p.set(n, v.clone(), "test");
    }
    run_point("coherent_invoke", &enzian, "percentile", pct, &p, 7, false)
}

fn point(pct: f64, set: &[(&str, ParamValue)]) -> PointResult {
    try_point(pct, set).unwrap()
}

fn s(v: &str) -> ParamValue {
    ParamValue::Str(v.into())
}

#[test]
fn e_return_median_near_pio_fig6() {
    let r = point(50.0, &[]);
    let m = r.metrics["latency_ns"];
    // PIO Fig. 6: about 900 ns (a prediction: nothing was fitted to it).
    assert!((m - 900.0).abs() < 900.0 * 0.05, "E-return median {m}");
    assert_eq!(r.stats["invoke.verified"], 100.0);
    assert_eq!(r.metrics["not_ready"], 0.0);
    assert!(r.stats["invoke.p99_ns"] >= m);
}

#[test]
fn s_return_is_slower_by_two_round_trips() {
    let e = point(50.0, &[]).metrics["latency_ns"];
    let r = point(50.0, &[("return_state", s("shared"))]);
    let sh = r.metrics["latency_ns"];
    // The next call's request store fetches the request line (one ECI round
    // trip, > 230 ns) and the device invalidates the Shared result line
    // before granting it (a second, nested one): PIO Fig. 6's ~700 ns gap
    // (1600 vs 900 ns), a prediction.
    assert!(sh - e > 700.0 && sh - e < 1000.0, "E {e} S {sh}");
    assert!((sh - 1600.0).abs() < 0.1 * 1600.0, "S-return median {sh}");
    // Two misses per call (request fetch + signal read) instead of one.
    assert!(r.stats["system.cpu.misses"] > 1.9 * 100.0);
}

#[test]
fn store_signal_is_cckit_rpc() {
    let r = point(50.0, &[("signal", s("store"))]);
    let m = r.metrics["latency_ns"];
    // CCKit Fig. 10: median 930 ns.
    assert!((m - 930.0).abs() < 930.0 * 0.06, "RPC median {m}");
}

#[test]
fn same_seed_same_trace_and_percentiles_are_ordered() {
    let a = point(50.0, &[]);
    let b = point(50.0, &[]);
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.metrics, b.metrics);
    let p10 = point(10.0, &[]).metrics["latency_ns"];
    let p90 = point(90.0, &[]).metrics["latency_ns"];
    assert!(p10 < p90, "jitter spreads the distribution: {p10} {p90}");
    let flat = point(10.0, &[("jitter_ns", ParamValue::Float(0.0))]).metrics["latency_ns"];
    let flat90 = point(90.0, &[("jitter_ns", ParamValue::Float(0.0))]).metrics["latency_ns"];
    assert_eq!(flat, flat90);
}

#[test]
fn not_ready_yet_then_the_result() {
    // The device needs 2 us; it answers "not ready yet" 500 ns after each
    // read, so the client reads again several times per call.
    let r = point(
        50.0,
        &[
            ("compute_ns", ParamValue::Float(2000.0)),
            ("timeout_ns", ParamValue::Float(500.0)),
        ],
    );
    assert!(r.metrics["not_ready"] >= 2.0, "{:?}", r.metrics);
    assert!(r.metrics["latency_ns"] > 2000.0);
    assert_eq!(r.stats["invoke.verified"], 100.0);
    // A timeout longer than the computation never fires.
    let r = point(
        50.0,
        &[
            ("compute_ns", ParamValue::Float(100.0)),
            // (measured from the read's arrival: the fetch of the request counts)
            ("timeout_ns", ParamValue::Float(2000.0)),
        ],
    );
    assert_eq!(r.metrics["not_ready"], 0.0);
}

#[test]
fn bad_input_is_an_error() {
    let e = try_point(0.0, &[]).unwrap_err().to_string();
    assert!(e.contains("percentile"), "{e}");
    let e = try_point(50.0, &[("calls", ParamValue::Int(0))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("calls"), "{e}");
    let e = try_point(50.0, &[("compute_ns", ParamValue::Float(-1.0))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("compute_ns"), "{e}");
    let e = try_point(
        50.0,
        &[("signal", s("store")), ("return_state", s("shared"))],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("Exclusive"), "{e}");
}

#[test]
fn fastforward_over_ccpi() {
    let r = point(50.0, &[("mechanism", s("fastforward"))]);
    let m = r.metrics["latency_ns"];
    // PIO Fig. 6: about 1150 ns. With FastForward's dequeue store the
    // distribution is bimodal (the spin loops sometimes contend): these 100
    // calls' median is ~1360 ns, the experiment's 1000 calls give ~1130 ns;
    // 863 ns without the dequeue (see experiments/pio-invocation-eci.toml).
    assert!((m - 1150.0).abs() < 1150.0 * 0.25, "FastForward median {m}");
    // PIO §6.1: "the optimized protocol comfortably outperforms FastForward".
    let e_return = point(50.0, &[]).metrics["latency_ns"];
    assert!(e_return < m, "E-return {e_return} vs FastForward {m}");
    assert_eq!(r.stats["invoke.verified"], 100.0);
    // The client spun: several loads per call saw no new value.
    assert!(r.metrics["not_ready"] > 1.0);
    // FastForward is a CCPI configuration only.
    let e = try_point(
        50.0,
        &[
            ("mechanism", s("fastforward")),
            ("return_state", s("shared")),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("fastforward"), "{e}");
}

fn bytes_point(workload: &str, bytes: f64, calls: i64) -> f64 {
    let enzian = Platform::load("enzian").unwrap();
    let mut p = Params::new();
    if workload == "coherent_invoke" {
        p.set("calls", ParamValue::Int(calls), "test");
    }
    run_point(workload, &enzian, "message_bytes", bytes, &p, 7, false)
        .unwrap()
        .metrics["latency_ns"]
}

#[test]
fn payload_latency_is_flat_to_a_line_then_linear() {
    let l16 = bytes_point("coherent_invoke", 16.0, 20);
    let l128 = bytes_point("coherent_invoke", 128.0, 20);
    let l256 = bytes_point("coherent_invoke", 256.0, 20);
    let l1k = bytes_point("coherent_invoke", 1024.0, 20);
    assert!((l16 - l128).abs() < 30.0, "{l16} {l128}");
    assert!(l256 > 1.8 * l128 && l256 < 2.2 * l128, "{l256} {l128}");
    assert!(l1k > 7.5 * l128 && l1k < 8.5 * l128, "{l1k} {l128}");
    // Far below XDMA at 1 KiB (PIO Fig. 7); above it at 8 KiB.
    assert!(l1k < 0.5 * bytes_point("xdma_invoke", 1024.0, 0));
    let e8k = bytes_point("coherent_invoke", 8192.0, 3);
    assert!(e8k > bytes_point("xdma_invoke", 8192.0, 0));
    let e = try_point(50.0, &[]).map(|_| ()).and_then(|_| {
        let enzian = Platform::load("enzian").unwrap();
        run_point(
            "coherent_invoke",
            &enzian,
            "message_bytes",
            0.5,
            &Params::new(),
            1,
            false,
        )
        .map(|_| ())
    });
    assert!(e.unwrap_err().to_string().contains("message_bytes"));
}

#[test]
fn device_initiated_variant_matches_the_cpu_initiated_cycle() {
    for ret in ["exclusive", "shared"] {
        let a = point(50.0, &[("return_state", s(ret))]).metrics["latency_ns"];
        let r = point(
            50.0,
            &[("return_state", s(ret)), ("initiator", s("device"))],
        );
        let b = r.metrics["latency_ns"];
        // The same exchange seen from the device: within 10% of Fig. 5a.
        assert!((a - b).abs() < 0.1 * a, "{ret}: 5a {a} 5b {b}");
        // 99 responses verified by the device, 2 of them warm-up.
        assert_eq!(r.stats["invoke.verified"], 99.0);
    }
}

fn payload_point(bytes: f64, payload: &str) -> Result<PointResult, RunError> {
    let enzian = Platform::load("enzian").unwrap();
    let p = Params::new()
        .with("calls", ParamValue::Int(6), "test")
        .with("payload", s(payload), "test");
    run_point(
        "coherent_invoke",
        &enzian,
        "message_bytes",
        bytes,
        &p,
        7,
        false,
    )
}

#[test]
fn pipelined_payload_overlaps_lines_and_checks_every_byte() {
    // PIO §6.2: the measured exchange replicates the one-line call; the
    // pipelined what-if fetches and loads lines in parallel.
    let serial = payload_point(4096.0, "serial").unwrap();
    let piped = payload_point(4096.0, "pipelined").unwrap();
    let (ls, lp) = (serial.metrics["latency_ns"], piped.metrics["latency_ns"]);
    // Serial: 32 exchanges of ~890 ns.
    assert!((ls / 32.0 - 890.0).abs() < 890.0 * 0.05, "{ls}");
    assert!(lp * 5.0 < ls, "pipelined {lp} vs serial {ls}");
    // 6 measured calls + 2 warm-up, 32 lines of 128 B each.
    assert_eq!(piped.stats["invoke.verified"], 6.0);
    assert_eq!(piped.stats["invoke.bytes_checked"], 8.0 * 4096.0);
    assert_eq!(piped.stats["invoke.max_fetches_in_flight"], 32.0);
    assert_eq!(piped.stats["invoke.max_loads_in_flight"], 8.0);
    // One line: the same two round trips as the serial call, within the
    // write buffer's and barrier's few nanoseconds.
    let one = payload_point(128.0, "pipelined").unwrap().metrics["latency_ns"];
    let one_serial = payload_point(128.0, "serial").unwrap().metrics["latency_ns"];
    assert!(
        (one - one_serial).abs() < 0.02 * one_serial,
        "{one} vs {one_serial}"
    );
}

#[test]
fn pipelined_payload_refuses_what_it_does_not_model() {
    let enzian = Platform::load("enzian").unwrap();
    let p = Params::new().with("payload", s("pipelined"), "test").with(
        "initiator",
        s("device"),
        "test",
    );
    let e = run_point(
        "coherent_invoke",
        &enzian,
        "message_bytes",
        256.0,
        &p,
        1,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("initiator") && e.contains("payload = pipelined"),
        "{e}"
    );
}

#[test]
fn the_serial_payload_keeps_the_points_of_the_replicated_exchange() {
    // pio-invocation-payload's eci series (20 calls, seed 0): unchanged by
    // the pipelined variant.
    let enzian = Platform::load("enzian").unwrap();
    let p = Params::new().with("calls", ParamValue::Int(20), "test");
    for (bytes, want) in [(256.0, 1785.808), (4096.0, 28532.819)] {
        let r = run_point(
            "coherent_invoke",
            &enzian,
            "message_bytes",
            bytes,
            &p,
            0,
            false,
        )
        .unwrap();
        let got = r.metrics["latency_ns"];
        assert!((got - want).abs() < 1e-3, "{bytes}: {got}");
    }
}
