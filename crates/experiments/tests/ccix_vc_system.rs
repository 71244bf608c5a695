//! The CCIX systems' shared link (`ccix_vc_link`, CCIX §II: CCIX on VC1,
//! regular PCIe on VC0, one physical and link layer): inside a system run
//! and in `ccix_ctg`, where ATS translations travel on VC0 of the same
//! link during the coherence run.

mod ccix_common;
use ccix_common::{build, params_of};
use std::collections::BTreeMap;

use ccsim_experiments::run_point;
use ccsim_kernel::prelude::*;
use ccsim_pcie::ccix_link::CcixVcLink;
use ccsim_pcie::vc_link::{DOWN, UP, VC0, VC1};
use ccsim_platform::Platform;

fn n1sdp_with(overrides: &[(&str, ParamValue)]) -> Platform {
    let o: Vec<(String, ParamValue)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Platform::load("n1sdp").unwrap().with_overrides(&o).unwrap()
}

fn ctg_on(
    p: &Platform,
    bytes: f64,
    settings: &[(&str, &str)],
) -> (BTreeMap<String, f64>, BTreeMap<String, f64>) {
    let params = params_of(settings);
    let r = run_point("ccix_ctg", p, "request_bytes", bytes, &params, 0, false).unwrap();
    (r.metrics, r.stats)
}

#[test]
fn both_vcs_bytes_add_up_on_the_wire_of_a_system_run() {
    let p = Platform::load("n1sdp").unwrap();
    let mut s = build(&p, "ccix");
    // 32 loads of distinct lines by the System Cache: a ReadShared up and
    // the line back in CompData per load.
    let ops: Vec<(u64, &str)> = (0..32).map(|l| (l, "load")).collect();
    s.agent_mut(0).set_program(&ops, 8).unwrap();
    s.sim.run();
    let link = s
        .sim
        .component::<CcixVcLink>(s.components["u280_ccix_pcie"])
        .unwrap();
    let (up, down) = (link.counts[UP], link.counts[DOWN]);
    // No VC0 traffic without ATS or DMA; every CCIX message a VDM on VC1.
    assert_eq!((up.tlps[VC0], down.tlps[VC0]), (0, 0));
    // A data-less message: 16 B header + 16 B CCIX header + 8 B framing and
    // LCRC; the line adds 64 B.
    assert_eq!(link.ccix_wire_bytes(false), 40);
    assert_eq!(link.ccix_wire_bytes(true), 104);
    assert_eq!(down.tlp_bytes[VC1], 32 * 104 + (down.tlps[VC1] - 32) * 40);
    assert_eq!(up.tlp_bytes[VC1], up.tlps[VC1] * 40);
    // One wire: its busy time is the serialization of every TLP and DLLP
    // byte that went on it (one ps of rounding per packet at most).
    for c in [up, down] {
        let bytes = c.tlp_bytes[VC0] + c.tlp_bytes[VC1] + c.dllp_bytes;
        let all = link.serialization_ps(bytes as u32);
        let packets = c.tlps[VC0] + c.tlps[VC1] + c.dllp_bytes / 8;
        assert!(c.busy_ps.abs_diff(all) <= packets, "{} vs {all}", c.busy_ps);
    }
    // The statistics count the same bytes.
    let stats = s.sim.stats();
    assert_eq!(
        stats.counter("system.u280_ccix_pcie.up.vc1_tlp_bytes"),
        Some(up.tlp_bytes[VC1])
    );

    // With ATS on VC0 (ccix_ctg, ATC misses forced): both VCs' bytes on the
    // same wire, the translation TLPs' exact sizes on VC0.
    let (m, st) = ctg_on(&p, 64.0, &[("atc", "cold"), ("requests", "4")]);
    assert_eq!(m["atc_miss_fraction"], 1.0);
    // Translation Request: 4 DW header + framing = 24 B up; its completion
    // a CplD with 8 B: 12 + 8 + 8 = 28 B down.
    assert_eq!(st["system.u280_ccix_pcie.up.vc0_tlp_bytes"], 4.0 * 24.0);
    assert_eq!(st["system.u280_ccix_pcie.down.vc0_tlp_bytes"], 4.0 * 28.0);
    assert!(st["system.u280_ccix_pcie.down.vc1_tlp_bytes"] >= 4.0 * 104.0);
}

#[test]
fn vc1_credit_exhaustion_does_not_block_ats_on_vc0_in_a_system_run() {
    // One VC1 posted credit, back only 500 ns after its TLP arrived: every
    // CCIX message waits for it; VC0 keeps its unlimited credits.
    let starved = n1sdp_with(&[
        ("u280_ccix_pcie.vc1_posted_credits", ParamValue::Int(1)),
        ("u280_ccix_pcie.credit_return_ns", ParamValue::Float(500.0)),
    ]);
    let free = Platform::load("n1sdp").unwrap();
    // 8 KiB, ATC misses forced: two bursts, the second translated over
    // VC0 while the first burst's lines wait for VC1 credits.
    let settings = [("atc", "cold"), ("requests", "2")];
    let (ms, ss) = ctg_on(&starved, 8192.0, &settings);
    let (mf, _) = ctg_on(&free, 8192.0, &settings);
    assert!(
        ss["system.u280_ccix_pcie.up.credit_waits"] > 100.0,
        "{ss:?}"
    );
    // The CCIX transfer crawls...
    assert!(ms["latency_ns"] > 10.0 * mf["latency_ns"], "{ms:?} {mf:?}");
    // ...while every translation takes its unloaded round trip: the first
    // burst's walk (617 ns), the later ones pre-translated (about 297 ns).
    assert!(ms["ats_ns"] <= mf["ats_ns"] + 1.0, "{ms:?} {mf:?}");
    assert!(ms["first_ns"] > 0.0);
}

#[test]
fn the_ats_round_trip_grows_under_vc1_load_in_ccix_ctg() {
    // Idle: a page crossing of sequential 256 B reads finds the link empty
    // (the previous request has long finished) and the SMMU's TLB
    // pre-translated: two VC0 trips, both TLPs, the TLB lookup.
    let p = Platform::load("n1sdp").unwrap();
    let (idle, _) = ctg_on(&p, 256.0, &[("atc", "cold"), ("pattern", "sequential")]);
    let two_trips = 2.0 * 141.85 + 10.0;
    assert!(
        (idle["ats_ns"] - two_trips).abs() < 5.0,
        "{idle:?} vs {two_trips}"
    );
    // Loaded: a 16 KiB read translates its later bursts while the earlier
    // bursts' CompData stream down VC1; each Translation Completion waits
    // for the VDM on the wire before it.
    let (loaded, _) = ctg_on(&p, 16384.0, &[("atc", "cold")]);
    assert!(
        loaded["ats_ns"] > idle["ats_ns"] + 0.5,
        "{} vs {}",
        loaded["ats_ns"],
        idle["ats_ns"]
    );
    // A VC arbiter that favours VC1 (8 TLPs in a row) makes it wait longer.
    let favour = n1sdp_with(&[("u280_ccix_pcie.vc1_weight", ParamValue::Int(8))]);
    let (heavy, _) = ctg_on(&favour, 16384.0, &[("atc", "cold")]);
    assert!(
        heavy["ats_ns"] > loaded["ats_ns"],
        "{} vs {}",
        heavy["ats_ns"],
        loaded["ats_ns"]
    );
}
