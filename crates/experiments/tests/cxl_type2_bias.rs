//! The type-2 bias workload (`cxl_type2_bias`, experiment
//! `cohet-type2-bias`): the orderings the mechanisms imply, and two
//! latencies as the sum of the delays on their path, from the platform's
//! parameters.

use ccsim_experiments::{run_point, PointResult};
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn point(access: &str, copy: &str, fraction: f64, lines: i64) -> PointResult {
    let p = Platform::load("cohet").unwrap();
    let params = Params::new()
        .with("access", ParamValue::Str(access.into()), "test")
        .with("device_copy", ParamValue::Str(copy.into()), "test")
        .with("lines", ParamValue::Int(lines), "test");
    run_point(
        "cxl_type2_bias",
        &p,
        "device_bias_fraction",
        fraction,
        &params,
        1,
        false,
    )
    .unwrap()
}

fn mean(access: &str, copy: &str, fraction: f64, lines: i64) -> f64 {
    point(access, copy, fraction, lines).metrics["mean_ns"]
}

/// The device's own loads: in device bias the DCOH serves them from its
/// DRAM; in host bias each one crosses the CXL link to the host's home
/// and back first (RdOwnNoData or RdCurr, then MemRdFwd).
#[test]
fn device_loads_in_device_bias_are_faster_than_in_host_bias() {
    for access in ["device_load", "device_load_current"] {
        let (host, device) = (mean(access, "none", 0.0, 64), mean(access, "none", 1.0, 64));
        assert!(
            device < host,
            "{access}: device bias {device} ns, host bias {host} ns"
        );
        // The host detour is two CXL link crossings (210.4 ns each) and more.
        assert!(host - device > 2.0 * 210.4, "{access}: {host} - {device}");
        // A mix lies between, and its device-bias lines are the fast ones.
        let mix = point(access, "none", 0.5, 64).metrics;
        assert!(device < mix["mean_ns"] && mix["mean_ns"] < host, "{mix:?}");
        assert!(
            mix["device_bias_mean_ns"] < mix["host_bias_mean_ns"],
            "{mix:?}"
        );
        assert_eq!(mix["ops"], 64.0);
    }
}

/// The platform's numbers a path is made of, in ns.
struct Path {
    device_link: f64,
    device_link_gbps: f64,
    xbar_hop: f64,
    dcoh: f64,
    cache: f64,
    dram_controller: f64,
    t_ck: f64,
    cl: f64,
    burst_ck: f64,
    header: f64,
    line: f64,
}

fn path() -> Path {
    let p = Platform::load("cohet").unwrap();
    let c = |i: &str| p.component(i).unwrap().params.clone();
    let (link, dram) = (c("device_link"), c("type2_dram"));
    let d = p.system("cxl_type2").unwrap();
    Path {
        device_link: link.float("latency_ns"),
        device_link_gbps: link.float("bandwidth_gbps"),
        xbar_hop: c("device_xbar").float("hop_ns"),
        dcoh: c("type2_dcoh").float("occupancy_ns"),
        cache: c("type2_cache").float("occupancy_ns"),
        dram_controller: dram.float("controller_ns"),
        // DDR: two transfers per clock.
        t_ck: 2e3 / dram.float("data_rate_mts"),
        cl: dram.int("cl") as f64,
        burst_ck: dram.int("burst_length") as f64 / 2.0,
        header: d.header_bytes as f64,
        line: d.line_bytes as f64,
    }
}

impl Path {
    /// One way between the DCOH and the device's cache through the
    /// crossbar: two links (latency and serialization each) and the hop.
    fn device_way(&self, bytes: f64) -> f64 {
        2.0 * (self.device_link + bytes / self.device_link_gbps) + self.xbar_hop
    }
}

/// One load of a device-bias line by the device's cache (whose row the
/// setup's write-back left open): DevRd to the DCOH, the DCOH's lookup
/// and a DRAM row hit (controller, CL, the burst), DevData back, the
/// cache's lookup. Nothing crosses the CXL link.
#[test]
fn a_device_bias_load_is_the_sum_of_the_delays_on_its_path() {
    let p = path();
    let dram_row_hit = p.dram_controller + (p.cl + p.burst_ck) * p.t_ck;
    let want =
        p.device_way(p.header) + p.dcoh + dram_row_hit + p.device_way(p.header + p.line) + p.cache;
    let got = point("device_load", "none", 1.0, 1).metrics["latency_ns"];
    assert!(
        (got - want).abs() < 0.01,
        "simulated {got} ns, path {want} ns"
    );
    assert!((want - 77.5).abs() < 0.01, "{want}");
}

/// A host load of a device-bias line: flipping a line the device's cache
/// does not hold costs nothing on the path (the DCOH reads its DRAM as in
/// host bias); flipping one the cache holds dirty adds the snoop: DSnpInv
/// to the cache and DWbData back, the cache's and the DCOH's lookups, and
/// the posted DRAM write (the controller's latency) before the read.
#[test]
fn a_host_loads_bias_flip_costs_the_device_snoop() {
    let p = path();
    let host_bias = mean("host_load", "none", 0.0, 1);
    let clean_flip = mean("host_load", "none", 1.0, 1);
    let dirty_flip = mean("host_load", "dirty", 1.0, 1);
    assert!(
        (clean_flip - host_bias).abs() < 0.01,
        "{clean_flip} vs {host_bias}"
    );
    let snoop = p.device_way(p.header)
        + p.cache
        + p.device_way(p.header + p.line)
        + p.dcoh
        + p.dram_controller;
    assert!(
        (dirty_flip - host_bias - snoop).abs() < 0.01,
        "dirty flip {dirty_flip} ns, host bias {host_bias} ns, snoop path {snoop} ns"
    );
    // Over many lines the dirty flips keep costing more.
    assert!(mean("host_load", "dirty", 1.0, 64) > mean("host_load", "none", 1.0, 64));
}

#[test]
fn bad_parameters_are_named() {
    let p = Platform::load("cohet").unwrap();
    let run = |k: &str, v: &str| {
        let params = Params::new().with(k, ParamValue::Str(v.into()), "test");
        run_point(
            "cxl_type2_bias",
            &p,
            "device_bias_fraction",
            0.5,
            &params,
            1,
            false,
        )
        .unwrap_err()
        .to_string()
    };
    assert!(run("access", "store").contains("access = \"store\": expected device_load"));
    assert!(run("device_copy", "clean").contains("device_copy = \"clean\": expected none or dirty"));
    assert!(run("device_copy", "dirty").contains("goes with access = \"host_load\""));
}
