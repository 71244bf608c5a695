//! CXL.cache (`protocols/cxl-cache.toml`): host cores with MESI, the
//! device's coherency engine and the LLC with an embedded directory, a
//! protocol that entered as data only; and CXL.mem with back-invalidation
//! (`protocols/cxl-mem-bi.toml`, at the end).
//!
//! Pinned: reachable states and rules of the shipped configuration (two
//! host cores, one device; rumur agrees, `tests/exporters.rs`) and of two
//! devices, the rows each configuration cannot exercise, the Cohet Fig. 7
//! flow as a golden message sequence, the two ordering rules of CXL (drop
//! one and the checker finds the violation), and the mutation results.

mod role_specs;

use ccsim_check::model::Model;
use ccsim_protocol::mutate::{judge_roles, CheckerVerdict};
use ccsim_protocol::system::System;
use ccsim_protocol::{check, check_ir, generate, load_spec, CheckOptions, SystemConfig};
use role_specs::{check_with, config_of, run_script, run_steps};

fn config(cores: u8, devices: u8) -> SystemConfig {
    config_of("cxl-cache", &[("core", cores), ("device", devices)])
}

#[test]
fn two_cores_and_a_device_verify() {
    let spec = load_spec("cxl-cache").unwrap();
    let r = check(&spec, &CheckOptions::default()).unwrap();
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (48_680, 182_078)
    );
    assert_eq!(r.machine, "home machine `home`");
    // With one device, nothing snoops a device for another device's
    // request: exactly the device-to-device rows stay unexercised.
    assert_eq!(r.unexercised.len(), 37, "{:?}", r.unexercised);
    assert!(r.unexercised.iter().all(|u| u.starts_with("MD/")
        || u.starts_with("SD_A/")
        || u.starts_with("SD_OA/")
        || u.starts_with("CUR_A/")
        || u.starts_with("FL_A/")
        || u.starts_with("WR_A/")
        || u.starts_with("MD_EV/BogusData")
        || u.starts_with("MX_EV/")
        || u == "S_A/RspIFwdM [more_acks]"));
}

#[test]
fn one_core_and_two_devices_verify() {
    let r = check_with("cxl-cache", config(1, 2));
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (108_336, 400_092)
    );
}

/// Two cores and two devices: 1.8 million states. Slow tier: `cargo test
/// --release -p ccsim-protocol --test cxl -- --ignored` (about 20 s, 0.7 GB).
#[test]
#[ignore]
fn two_cores_and_two_devices_verify() {
    let r = check_with("cxl-cache", config(2, 2));
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (1_809_810, 8_248_344)
    );
}

fn shipped_system() -> System {
    let spec = load_spec("cxl-cache").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    System::new(ir, (&spec.check).into()).unwrap()
}

/// Cohet Fig. 7: the device takes a line a core holds Modified, writes it
/// silently, and evicts it. Phase 1: RdOwn; the LLC recalls CoreX's M copy
/// (the paper's SnpInv to CoreX), writes it back, and grants E with the
/// data. Phase 2: the store completes in the HMC without a message (E ->
/// M). Phase 3: DirtyEvict, GO_WritePull, the data, GO-I.
#[test]
fn the_fig7_flow_is_the_golden_message_sequence() {
    let sys = shipped_system();
    let end = run_script(
        &sys,
        &[
            "core0: store(A)",
            "core0 -> home: GetM(A)",
            "home -> core0: Data(A, data=0, write=1)",
            "core0 -> home: Unblock(A)",
            // Phase 1: read for ownership.
            "device0: store(A)",
            "device0 -> home: RdOwn(A)",
            "home -> core0: Recall(A, req=device0)",
            "core0 -> home: WbData(A, req=device0, data=1)",
            "home -> device0: GO_E(A)",
            // Phase 2: the store completes on the data, silently.
            "home -> device0: H2DData(A, data=1, write=0)",
            // Phase 3: data eviction.
            "device0: evict(A)",
            "device0 -> home: DirtyEvict(A)",
            "home -> device0: GO_WritePull(A)",
            "device0 -> home: DirtyData(A, data=0)",
            "home -> device0: GO_I(A)",
        ],
    );
    assert_eq!(
        end,
        "line A: core0=I core1=I device0=I home=I core0.copy=0 core1.copy=0 device0.copy=0 owner=- sharers=[] mem=0 latest=0; net: []"
    );
}

/// A snoop the home sends after a GO waits for that GO: with the GO
/// delivered first, the device that was granted E answers from E.
#[test]
fn a_snoop_sent_after_a_go_is_not_delivered_before_it() {
    let sys = shipped_system();
    let s = run_steps(
        &sys,
        &[
            "device0: store(A)",
            "device0 -> home: RdOwn(A)",
            "home -> device0: H2DData(A, data=0)",
            "core0: load(A)",
            "core0 -> home: GetS(A)",
        ],
    );
    let mut actions = Vec::new();
    // GO_E and the SnpData the home sent after it are both in flight;
    // only the GO may arrive.
    sys.actions(&s, &mut actions);
    let to_device: Vec<String> = actions
        .iter()
        .map(|a| sys.chart_step(&s, a))
        .filter(|c| c.to == "device0" && c.from == "home")
        .map(|c| c.label)
        .collect();
    assert_eq!(to_device, ["GO_E(A, write=0)", "GO_E(A, write=1)"]);
}

/// Without the ordering rule (the channel unordered), a snoop overtakes
/// the GO, the device answers it from its pre-grant state, and two agents
/// end up writable: the checker finds it.
#[test]
fn without_the_snoop_go_ordering_swmr_fails() {
    let spec = load_spec("cxl-cache").unwrap();
    let (mut ir, stats) = generate(&spec).unwrap();
    for c in &mut ir.channels {
        c.ordered_after.clear();
    }
    let r = check_ir(ir, stats, config(2, 1), 0).unwrap();
    assert!(!r.verified);
    let v = r.violations.first().expect("a violation");
    assert!(
        v.property == "swmr" || v.property == "no-unspecified-reception",
        "{}",
        r.to_text()
    );
}

/// The rows that fire in `cfg`, as `role: (STATE, EVENT [guard])`.
/// The single-row mutants of `role` that the checker does not catch in
/// `cfg`, leaving out those of rows that never fire there (no checker can
/// see a change to a row that does not run). Each survivor is an
/// equivalent mutant, named in the tests.
fn surviving_mutants(spec: &str, role: &str, cfg: SystemConfig) -> Vec<String> {
    let spec = load_spec(spec).unwrap();
    let (ir, stats) = generate(&spec).unwrap();
    let r = ir.role_index(role).unwrap();
    let judged = judge_roles(&ir, &stats, &cfg, [r]).unwrap();
    assert!(!judged.is_empty());
    judged
        .into_iter()
        .filter(|(_, v)| *v == CheckerVerdict::Survived)
        .map(|(m, _)| m.description)
        .collect()
}

// The equivalent mutants, by reason:
// * E -> M: E and M differ only in whether the line is dirty, and the
//   model's line is one value that an eviction writes back either way.
// * A dropped fill before a store's own write: the model's store writes
//   the whole line (one value), so the value filled first is never read.
// * I -> S at the home, and a dropped remove_sharer, clear_sharers or
//   clear_owner: the directory over-approximates. An S line with no
//   sharers behaves as I except that a core's GetS gets S instead of E,
//   and a stale sharer or owner entry costs a snoop answered RspIHitI.
//   Safe, only slower; CXL's host snoop filters may be imprecise in the
//   same way.
// * A deleted more_acks row when another one remains: the acks are
//   collected in a fixed order instead of any order.
// * A send to sharers that cannot have that role in the configuration
//   (no second device; no core sharer while a device owns the line).

#[test]
fn device_mutants_are_caught() {
    assert_eq!(
        surviving_mutants("cxl-cache", "device", config(1, 1)),
        [
            // As the DMA agent's of msi-dma: the uncached write's buffer
            // holds 0 instead of a new value, still a write.
            "drop-action device: (I, write_line): fill",
            "retarget device: (E, load): E -> M",
            "retarget device: (E, load_any): E -> M",
            "retarget device: (IA_G, GO_E): E -> M",
            "retarget device: (IE_D, H2DData): E -> M",
            "drop-action device: (IM_GD, H2DData): fill",
            "drop-action device: (SM_GD, H2DData): fill",
            // FL_G waits for GO-I and answers snoops RspIHitI, as II_B does.
            "retarget device: (II_G, GO_WritePull): II_B -> FL_G",
        ]
    );
}

/// Slow tier (about 30 s with the home's, in release): `cargo test
/// --release -p ccsim-protocol --test cxl -- --ignored`.
#[test]
#[ignore]
fn core_mutants_are_caught() {
    assert_eq!(
        surviving_mutants("cxl-cache", "core", config(2, 1)),
        [
            "retarget core: (E, load): E -> M",
            "retarget core: (IS_D, DataE): E -> M",
        ]
    );
}

/// Slow tier, as above.
#[test]
#[ignore]
fn home_mutants_are_caught() {
    assert_eq!(
        surviving_mutants("cxl-cache", "home", config(2, 1)),
        [
            "retarget home: (I, PutS): I -> S",
            "retarget home: (I, PutM): I -> S",
            "retarget home: (I, RdCurr): I -> S",
            "retarget home: (I, CleanEvict): I -> S",
            "retarget home: (I, DirtyEvict): I_EV -> S_EV",
            "retarget home: (I, CLFlush): I -> S",
            "retarget home: (S, PutS [no_other_sharers]): I -> S",
            "retarget home: (S, PutM [no_other_sharers]): I -> S",
            "drop-action home: (S, RdOwn [no_other_sharers]): clear_sharers",
            "drop-action home: (S, RdOwn [other_sharers]): send SnpInv to sharers",
            "retarget home: (S, CleanEvict [no_other_sharers]): I -> S",
            "drop-action home: (S, CleanEvict [no_other_sharers]): remove_sharer",
            "drop-action home: (S, CleanEvict [other_sharers]): remove_sharer",
            "retarget home: (S, CLFlush [no_other_sharers]): I -> S",
            "drop-action home: (S, CLFlush [no_other_sharers]): clear_sharers",
            "drop-action home: (S, CLFlush [other_sharers]): send SnpInv to sharers",
            "drop-action home: (S, ItoMWr [no_other_sharers]): clear_sharers",
            "drop-action home: (S, ItoMWr [other_sharers]): send SnpInv to sharers",
            "retarget home: (MC, PutM [from_owner]): I -> S",
            "drop-action home: (MC, PutM [from_owner]): clear_owner",
            "drop-action home: (MC, RdOwn): clear_owner",
            "drop-action home: (MC, CLFlush): clear_owner",
            "drop-action home: (MC, ItoMWr): clear_owner",
            "drop-action home: (MD, GetM): send Inv to sharers",
            "drop-action home: (MD, GetM): clear_sharers",
            "retarget home: (MD, CleanEvict [from_owner]): I -> S",
            "drop-action home: (MD, CleanEvict [from_owner]): clear_owner",
            "delete home: (S_A, InvAck [more_acks])",
            "delete home: (S_A, RspIHitI [more_acks])",
            "delete home: (S_A, RspIHitSE [more_acks])",
            "retarget home: (FL_A, InvAck [last_ack]): I -> S",
            "retarget home: (FL_W, WbData): I -> S",
            "retarget home: (WR_D, WrData): I -> S",
            "retarget home: (MD_EV, DirtyData): I -> S",
            "drop-action home: (MD_EV, DirtyData): clear_owner",
            "retarget home: (I_EV, BogusData): I -> S",
            "drop-action home: (I_EV, BogusData): remove_sharer",
            "drop-action home: (S_EV, BogusData): remove_sharer",
            "drop-action home: (MC_EV, BogusData): remove_sharer",
        ]
    );
}

// --- CXL.mem with back-invalidation (CXL 3.0 HDM-DB) -----------------------

fn bi_config(hosts: u8) -> SystemConfig {
    config_of("cxl-mem-bi", &[("host", hosts)])
}

fn bi_check(hosts: u8) -> ccsim_protocol::CheckReport {
    check_with("cxl-mem-bi", bi_config(hosts))
}

#[test]
fn back_invalidation_with_two_hosts_verifies() {
    let r = bi_check(2);
    assert!(r.verified, "{}", r.to_text());
    assert_eq!((r.reachable_states, r.system_transitions), (13_858, 45_082));
    assert_eq!(r.machine, "home machine `dcoh`");
    // Two hosts: a MemRd_A back-invalidates at most one other sharer.
    assert_eq!(r.unexercised, ["BI_RA/BIRspI [more_acks]"]);
}

#[test]
fn back_invalidation_with_three_hosts_exercises_every_dcoh_row() {
    let r = bi_check(3);
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (243_726, 1_050_358)
    );
    assert!(r.unexercised.is_empty(), "{:?}", r.unexercised);
}

/// Without the ordering of BIConflictAck behind the completions, a host
/// cannot tell a back-invalidation that came before its grant from one
/// that came after: the checker finds the reception the host cannot
/// handle.
#[test]
fn without_the_bi_conflict_ack_ordering_the_check_fails() {
    let spec = load_spec("cxl-mem-bi").unwrap();
    let (mut ir, stats) = generate(&spec).unwrap();
    for c in &mut ir.channels {
        c.ordered_after.clear();
    }
    let r = check_ir(ir, stats, bi_config(2), 0).unwrap();
    assert!(!r.verified);
}

/// A BISnp that crosses a host's MemRd: the host holds it and sends
/// BIConflict; the grant arrives before the BIConflictAck (which travels
/// behind it), so the snoop came after the grant: the host completes its
/// load and only then gives the line up. Golden sequence.
#[test]
fn a_bisnp_that_crosses_a_grant_is_answered_after_the_load() {
    let spec = load_spec("cxl-mem-bi").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    let sys = System::new(ir, bi_config(2)).unwrap();
    let end = run_script(
        &sys,
        &[
            "host0: load(A)",
            "host0 -> dcoh: MemRd_S(A)",
            "host1: store(A)",
            "host1 -> dcoh: MemRd_A(A)",
            "dcoh -> host0: BISnpInv(A, req=host1)",
            "host0 -> dcoh: BIConflict(A)",
            "dcoh -> host0: Cmp_E(A)",
            "dcoh -> host0: BIConflictAck(A)",
            "dcoh -> host0: MemData(A, data=0)",
            "host0 -> dcoh: BIRspI(A)",
            "dcoh -> host1: Cmp_E(A)",
            "dcoh -> host1: MemData(A, data=0, write=1)",
        ],
    );
    assert_eq!(
        end,
        "line A: host0=I host1=M dcoh=MH accel=I host0.copy=0 host1.copy=1 accel.copy=0 owner=host1 sharers=[] mem=0 latest=1; net: []"
    );
}

#[test]
fn back_invalidation_mutants_are_caught() {
    let survivors: Vec<String> = ["host", "dcoh", "accel"]
        .iter()
        .flat_map(|role| surviving_mutants("cxl-mem-bi", role, bi_config(2)))
        .collect();
    // The equivalent mutants, by the reasons above the CXL.cache ones, and:
    // granting Exclusive where Shared was asked (BI_RA's completion for a
    // MemRd_S) is safe, the host takes Cmp_E in every state it takes
    // Cmp_S; a clean eviction that waits for its Cmp before answering the
    // BISnp (MI_C's way) is only slower.
    assert_eq!(
        survivors,
        [
            "retarget host: (E, load): E -> M",
            "retarget host: (IE_D, MemData): E -> M",
            "retarget host: (IS_C, Cmp_E): E -> M",
            "drop-action host: (IM_CD, MemData): fill",
            "drop-action host: (IM_CDX, MemData): fill",
            "retarget host: (CI_CX, BIConflictAck): CI_C -> MI_C",
            "drop-action dcoh: (S, MemClnEvct [other_sharers]): remove_sharer",
            "retarget dcoh: (MH, MemRd_S): BI_RS -> BI_RA",
            "drop-action dcoh: (MH, MemRd_S): clear_sharers",
            "drop-action dcoh: (MH, MemClnEvct [from_owner]): clear_owner",
            "drop-action dcoh: (MH, MemWr [from_owner]): clear_owner",
            "retarget dcoh: (BI_RS, BIConflict): BI_RS -> BI_RA",
            "retarget dcoh: (BI_RS, MemWr): BI_RS -> BI_RA",
            "drop-action accel: (I, write): fill",
        ]
    );
}

// --- CXL.mem for a type-3 expander (CXL 2.0 HDM-H) --------------------------

/// Two host threads on one line of the expander: the device orders their
/// reads and writes; every read returns the latest write.
#[test]
fn type3_expander_with_two_hosts_verifies() {
    let r = check_with("cxl-mem", config_of("cxl-mem", &[("host", 2)]));
    assert!(r.verified, "{}", r.to_text());
    assert_eq!((r.reachable_states, r.system_transitions), (120, 304));
    assert!(r.unexercised.is_empty(), "{:?}", r.unexercised);
}

/// Every mutant of the memory controller's two rows is caught (a MemWr
/// that does not store, a reply to the wrong agent, a dropped completion);
/// the host's survivors are listed with their reason.
#[test]
fn type3_expander_mutants_are_caught() {
    let cfg = config_of("cxl-mem", &[("host", 2)]);
    // The controller has one state: a "retarget" to it is the row itself.
    assert_eq!(
        surviving_mutants("cxl-mem", "mc", cfg.clone()),
        [
            "retarget mc: (I, MemRd): I -> I",
            "retarget mc: (I, MemWr): I -> I"
        ]
    );
    // The checker's write is the controller's `store` of what the MemWr
    // carries, and a read is checked where the device serves it (a check
    // at the host fails on a write that overtakes the MemData, a legal
    // order: the device serialises them). So the host's own copy of the
    // line is never compared: dropping either `fill` goes unseen.
    assert_eq!(
        surviving_mutants("cxl-mem", "host", cfg),
        [
            "drop-action host: (I, store): fill",
            "drop-action host: (R_D, MemData): fill"
        ]
    );
}
