//! The `pcie_bench` workload (pcie-bench's device-issued DMA benchmarks on
//! platforms/nfp6000-e5.toml): TLP counts and wire bytes per transfer size
//! against hand computation from the PCIe rules (Gen3 x8, MPS 256, MRRS
//! 512, RCB 64, 256 B completions, 64-bit host addresses), and the
//! bandwidths the link's byte accounting implies.

use ccsim_experiments::{run_point, PointResult};
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn point(bench: &str, x: u64, transfers: i64) -> PointResult {
    let p = Platform::load("nfp6000-e5").unwrap();
    let mut kv = Params::new();
    kv.set("bench", ParamValue::Str(bench.to_string()), "test");
    kv.set("transfers", ParamValue::Int(transfers), "test");
    run_point("pcie_bench", &p, "message_bytes", x as f64, &kv, 1, false).unwrap()
}

fn stat(r: &PointResult, k: &str) -> u64 {
    r.stats[&format!("system.pcie.{k}")] as u64
}

/// Framing + sequence number + LCRC (8 B on Gen3) plus a 4 DW header:
/// MRd and MWr to 64-bit host addresses.
const REQ64: u64 = 8 + 16;
/// Framing plus the 3 DW header of a completion.
const CPL: u64 = 8 + 12;
/// The host's six uncached MWrs programming the engine (32-bit BAR0, 3 DW
/// headers): INLINE src/dst/len (20 B as 8 + 8 + 4 B stores), DESC_COUNT,
/// WB_ADDR, CONTROL; 36 B of payload.
const PROGRAM_TLPS: u64 = 6;
const PROGRAM_WIRE: u64 = 6 * (8 + 12) + 36;
/// The engine's status write-back: 4 B to a 64-bit host address.
const WRITEBACK_WIRE: u64 = REQ64 + 4;

/// CplDs for one DMA read of `x` bytes: MRds of at most MRRS (512 B), each
/// answered in completions of at most 256 B (aligned requests).
fn completions(x: u64) -> u64 {
    (0..x.div_ceil(512))
        .map(|i| (x - i * 512).min(512).div_ceil(256))
        .sum()
}

#[test]
fn lat_rd_tlps_and_wire_bytes_match_hand_computation() {
    for x in [8u64, 64, 100, 256, 512, 1024, 2048] {
        let r = point("LAT_RD", x, 0);
        let mrd = x.div_ceil(512);
        let cpl = completions(x);
        assert_eq!(stat(&r, "up.tlps"), mrd + 1, "x = {x}: MRds + write-back");
        assert_eq!(
            stat(&r, "up.wire_bytes"),
            mrd * REQ64 + WRITEBACK_WIRE,
            "x = {x}"
        );
        assert_eq!(stat(&r, "down.tlps"), PROGRAM_TLPS + cpl, "x = {x}");
        assert_eq!(
            stat(&r, "down.wire_bytes"),
            PROGRAM_WIRE + cpl * CPL + x,
            "x = {x}"
        );
        assert_eq!(r.stats["system.dma.h2c_bytes"] as u64, x);
    }
    assert_eq!(completions(2048), 8);
    assert_eq!(completions(100), 1);
}

#[test]
fn bw_wr_splits_writes_at_mps() {
    let n = 16;
    for x in [8u64, 64, 256, 300, 2048] {
        let r = point("BW_WR", x, n as i64);
        let mwr = n * x.div_ceil(256);
        assert_eq!(stat(&r, "up.tlps"), mwr + 1, "x = {x}");
        assert_eq!(
            stat(&r, "up.wire_bytes"),
            mwr * REQ64 + n * x + WRITEBACK_WIRE,
            "x = {x}"
        );
        assert_eq!(r.stats["system.dma.c2h_bytes"] as u64, n * x);
    }
}

/// Gen3 x8 after 128b/130b: 8 GT/s * 8 lanes * 128/130 = 63.015 Gb/s.
const LINK_GBITS: f64 = 8.0 * 8.0 * 128.0 / 130.0;

#[test]
fn bandwidth_is_the_link_rate_times_payload_efficiency() {
    // 2 KiB writes: 8 MWrs of 256 B, 24 B overhead each, upstream only.
    let wr = point("BW_WR", 2048, 0).metrics["bandwidth_gbits"];
    let want = LINK_GBITS * 2048.0 / (2048.0 + 8.0 * 24.0);
    assert!((wr / want - 1.0).abs() < 0.01, "BW_WR 2 KiB {wr} vs {want}");
    // 2 KiB reads: 8 CplDs of 256 B (20 B overhead each) downstream, plus
    // an ACK and an UpdateFC DLLP (8 B each) per 4 upstream MRds.
    let rd = point("BW_RD", 2048, 0).metrics["bandwidth_gbits"];
    let want = LINK_GBITS * 2048.0 / (2048.0 + 8.0 * 20.0 + 4.0 * 16.0 / 4.0);
    assert!((rd / want - 1.0).abs() < 0.01, "BW_RD 2 KiB {rd} vs {want}");
    // 8 B writes: 32 B on the wire per 8 B of payload.
    let wr8 = point("BW_WR", 8, 0).metrics["bandwidth_gbits"];
    let want = LINK_GBITS * 8.0 / 32.0;
    assert!((wr8 / want - 1.0).abs() < 0.01, "BW_WR 8 B {wr8} vs {want}");
}

#[test]
fn latency_grows_with_size_and_a_write_first_costs_more() {
    let lat = |b: &str, x: u64| point(b, x, 0).metrics["latency_ns"];
    let rd: Vec<f64> = [8, 64, 512, 2048]
        .iter()
        .map(|&x| lat("LAT_RD", x))
        .collect();
    assert!(rd.windows(2).all(|w| w[0] < w[1]), "{rd:?}");
    // One 8 B read: two link crossings (150 ns each), two RC crossings
    // (100 ns each) and the LLC (25 ns) at least.
    assert!(rd[0] > 525.0 && rd[0] < 800.0, "{}", rd[0]);
    for x in [8, 2048] {
        assert!(lat("LAT_WRRD", x) > lat("LAT_RD", x));
    }
}

#[test]
fn bw_rdwr_moves_both_ways_and_checks_both() {
    let r = point("BW_RDWR", 512, 64);
    assert_eq!(r.stats["system.dma.h2c_bytes"] as u64, 64 * 512);
    assert_eq!(r.stats["system.dma.c2h_bytes"] as u64, 64 * 512);
    assert!(r.metrics["bandwidth_gbits"] > 0.0);
}

#[test]
fn a_bench_that_does_not_exist_is_refused() {
    let p = Platform::load("nfp6000-e5").unwrap();
    let mut kv = Params::new();
    kv.set("bench", ParamValue::Str("LAT_RW".to_string()), "test");
    let e = run_point("pcie_bench", &p, "message_bytes", 64.0, &kv, 1, false).unwrap_err();
    assert!(e.to_string().contains("bench"), "{e}");
}
