//! The TaPaSCo-style PCIe-DMA baseline on each of the N1-SDP's two boards
//! (CCIX §IV Exp. 1, Fig. 2): the workload names the `pcie_link` and
//! `xdma_engine` it runs on, and a wrong name is an error that says what
//! is wrong.

mod ccix_common;
use ccix_common::params_of;
use ccsim_experiments::run_point;
use ccsim_platform::Platform;

fn dma(bytes: f64, settings: &[(&str, &str)]) -> Result<f64, String> {
    let p = Platform::load("n1sdp").unwrap();
    run_point(
        "tapasco_dma",
        &p,
        "message_bytes",
        bytes,
        &params_of(settings),
        0,
        false,
    )
    .map(|r| r.metrics["latency_ns"])
    .map_err(|e| e.to_string())
}

const AU280: [(&str, &str); 2] = [("pcie_link", "u280_pcie"), ("xdma_engine", "u280_dma")];
const VCK5000: [(&str, &str); 2] = [
    ("pcie_link", "vck5000_pcie"),
    ("xdma_engine", "vck5000_dma"),
];

#[test]
fn gen4_x8_and_gen3_x16_move_a_transfer_alike() {
    // Both attachments carry 15.75 GB/s (16 GT/s x 8 and 8 GT/s x 16 at
    // 128b/130b), and the VCK5000's engine is the AU280's: the same
    // latency at every size, read and write.
    for dir in ["read", "write"] {
        for bytes in [64.0, 4096.0, 16384.0] {
            let a = dma(bytes, &[AU280[0], AU280[1], ("direction", dir)]).unwrap();
            let v = dma(bytes, &[VCK5000[0], VCK5000[1], ("direction", dir)]).unwrap();
            assert_eq!(a, v, "{dir} {bytes}");
        }
    }
}

#[test]
fn a_narrower_link_shows_in_the_large_transfers_only() {
    // The same engine behind the VCK5000's link at Gen4 x4 (half the
    // rate): a small read changes by its few TLPs' serialization only, a
    // 16 KiB read pays for the slower serialization of all its bytes.
    let p = Platform::load("n1sdp")
        .unwrap()
        .with_overrides(&[(
            "vck5000_pcie.lanes".into(),
            ccsim_kernel::prelude::ParamValue::Int(4),
        )])
        .unwrap();
    let run = |p: &Platform, bytes: f64| {
        run_point(
            "tapasco_dma",
            p,
            "message_bytes",
            bytes,
            &params_of(&VCK5000),
            0,
            false,
        )
        .unwrap()
        .metrics["latency_ns"]
    };
    let full = Platform::load("n1sdp").unwrap();
    assert!((run(&p, 32.0) - run(&full, 32.0)).abs() < 5.0);
    assert!(run(&p, 16384.0) > run(&full, 16384.0) + 500.0);
}

#[test]
fn a_wrong_component_name_says_what_is_wrong() {
    let e = dma(64.0, &[("pcie_link", "no_such_link"), AU280[1]]).unwrap_err();
    assert!(e.contains("no component `no_such_link`"), "{e}");
    let e = dma(64.0, &[("pcie_link", "u280_dma"), AU280[1]]).unwrap_err();
    assert!(e.contains("`u280_dma` is a `xdma_engine`"), "{e}");
    // With two boards the platform has two links: one must be named.
    let e = dma(64.0, &[]).unwrap_err();
    assert!(e.contains("several `pcie_link` components"), "{e}");
}
