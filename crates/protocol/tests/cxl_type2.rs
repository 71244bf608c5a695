//! CXL 2.0 type-2 device memory with host/device bias (HDM-D,
//! `protocols/cxl-type2.toml`): host cores with MESI behind the host's
//! home agent, the device's DCOH with its bias table in front of device
//! memory, and the device's cache.
//!
//! Pinned: reachable states and rules with two host cores (rumur agrees,
//! `tests/exporters.rs`) and with three, the rows two cores cannot
//! exercise, a bias flip in each direction as a golden message sequence,
//! a device-bias access that sends nothing to the host, the M2S ordering
//! rule (drop it and the checker finds the stale read), and the mutation
//! results.

mod role_specs;

use ccsim_check::model::Model;
use ccsim_protocol::mutate::{judge_roles, CheckerVerdict};
use ccsim_protocol::system::System;
use ccsim_protocol::{check_ir, generate, load_spec, SystemConfig};
use role_specs::{check_with, config_of, run_script, run_steps};

fn config(cores: u8) -> SystemConfig {
    config_of("cxl-type2", &[("core", cores)])
}

#[test]
fn two_cores_verify() {
    let r = check_with("cxl-type2", config(2));
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (81_456, 299_076)
    );
    assert_eq!(r.machine, "home machine `home`");
    // Two cores: a GetM invalidates at most one other sharer.
    assert_eq!(r.unexercised, ["S_A/InvAck [more_acks]"]);
}

#[test]
fn three_cores_exercise_every_home_row() {
    let r = check_with("cxl-type2", config(3));
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (1_224_868, 5_515_898)
    );
    assert!(r.unexercised.is_empty(), "{:?}", r.unexercised);
}

fn shipped_system() -> System {
    let spec = load_spec("cxl-type2").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    System::new(ir, config(2)).unwrap()
}

/// Host bias to device bias. A core holds the line Modified; the device
/// stores to it: its DCOH finds the line in host bias and sends
/// RdOwnNoData; the host recalls the core's copy, writes it through to
/// device memory (MemWr, Cmp) and answers MemRdFwd; the DCOH flips the
/// line to device bias and gives its cache the line from memory, where
/// the store completes. A second store and a load then hit in the
/// device's cache, and a miss after an eviction is served from device
/// memory with no message to the host.
#[test]
fn a_device_store_flips_a_host_bias_line_to_device_bias() {
    let sys = shipped_system();
    let end = run_script(
        &sys,
        &[
            "core0: store(A)",
            "core0 -> home: GetM(A)",
            "home -> dcoh: MemRd(A)",
            "dcoh -> home: MemData(A, data=0)",
            "home -> core0: Data(A, data=0, write=1)",
            "core0 -> home: Unblock(A)",
            // the flip
            "accel: store(A)",
            "accel -> dcoh: DevRd(A)",
            "dcoh -> home: RdOwnNoData(A)",
            "home -> core0: Recall(A, req=dcoh)",
            "core0 -> home: WbData(A, req=dcoh, data=1)",
            "home -> dcoh: MemWr(A, data=1)",
            "dcoh -> home: Cmp(A)",
            "home -> dcoh: MemRdFwd(A)",
            "dcoh -> accel: DevData(A, data=1, write=0)",
            // device bias: the device's cache and memory, no host message
            "accel: load(A)",
            "accel: evict(A)",
            "accel -> dcoh: DevWb(A, data=0)",
            "dcoh -> accel: DevCmp(A)",
            "accel: load(A)",
            "accel -> dcoh: DevRd(A)",
            "dcoh -> accel: DevData(A, data=0)",
        ],
    );
    // The LLC's copy (mem) is stale: device memory (dcoh.copy) is current.
    assert_eq!(
        end,
        "line A: core0=I core1=I home=I dcoh=DBC accel=E core0.copy=0 core1.copy=0 dcoh.copy=0 accel.copy=0 owner=- sharers=[] mem=1 latest=0; net: []"
    );
}

/// Device bias to host bias. The device's cache holds the line Modified
/// in device bias; a core loads it: the host (holding nothing) sends
/// MemRd; the DCOH snoops its cache, takes the dirty line back into
/// memory, flips the line to host bias and answers MemData; the core gets
/// the line Exclusive.
#[test]
fn a_host_load_flips_a_device_bias_line_to_host_bias() {
    let sys = shipped_system();
    let end = run_script(
        &sys,
        &[
            "accel: store(A)",
            "accel -> dcoh: DevRd(A)",
            "dcoh -> home: RdOwnNoData(A)",
            "home -> dcoh: MemRdFwd(A)",
            "dcoh -> accel: DevData(A, data=0, write=1)",
            // the flip
            "core0: load(A)",
            "core0 -> home: GetS(A)",
            "home -> dcoh: MemRd(A)",
            "dcoh -> accel: DSnpInv(A)",
            "accel -> dcoh: DWbData(A, data=1)",
            "dcoh -> home: MemData(A, data=1)",
            "home -> core0: DataE(A, data=1)",
            "core0 -> home: Unblock(A)",
            // host bias: the device's uncached read goes through the host
            "accel: load_current(A)",
            "accel -> dcoh: DevRdCur(A)",
            "dcoh -> home: RdCurr(A)",
            "home -> core0: FwdGetS(A, req=dcoh)",
            "core0 -> home: WbData(A, req=dcoh, data=1)",
            "home -> dcoh: MemWr(A, data=1)",
            "dcoh -> home: Cmp(A)",
            "home -> dcoh: MemRdFwd(A)",
            "dcoh -> accel: DevData(A, data=1)",
        ],
    );
    assert_eq!(
        end,
        "line A: core0=S core1=I home=S dcoh=HB accel=I core0.copy=1 core1.copy=0 dcoh.copy=1 accel.copy=0 owner=- sharers=[core0] mem=1 latest=1; net: []"
    );
}

/// A MemRd the host sends after a MemWrFwd waits for it: with the forward
/// delivered first, the DCOH holds the read until the device's write has
/// landed in memory.
#[test]
fn a_mem_rd_sent_after_a_forward_is_not_delivered_before_it() {
    let sys = shipped_system();
    let s = run_steps(
        &sys,
        &[
            "accel: write_line(A=1)",
            "accel -> dcoh: DevWr(A)",
            "dcoh -> home: ItoMWr(A)",
            "core0: load(A)",
            "core0 -> home: GetS(A)",
        ],
    );
    let mut actions = Vec::new();
    sys.actions(&s, &mut actions);
    let to_dcoh: Vec<String> = actions
        .iter()
        .map(|a| sys.chart_step(&s, a))
        .filter(|c| c.to == "dcoh" && c.from == "home")
        .map(|c| c.label)
        .collect();
    assert_eq!(to_dcoh, ["MemWrFwd(A)"]);
}

/// Without the ordering rules (every channel unordered), a host read
/// overtakes the device's forwarded write and caches the old value, or a
/// snoop overtakes the data it must follow: the checker finds it.
#[test]
fn without_the_ordering_rules_the_check_fails() {
    let spec = load_spec("cxl-type2").unwrap();
    let (mut ir, stats) = generate(&spec).unwrap();
    for c in &mut ir.channels {
        c.ordered_after.clear();
    }
    let r = check_ir(ir, stats, config(2), 0).unwrap();
    assert!(!r.verified);
}

fn surviving_mutants(role: &str) -> Vec<String> {
    let spec = load_spec("cxl-type2").unwrap();
    let (ir, stats) = generate(&spec).unwrap();
    let r = ir.role_index(role).unwrap();
    let judged = judge_roles(&ir, &stats, &config(2), [r]).unwrap();
    assert!(!judged.is_empty());
    judged
        .into_iter()
        .filter(|(_, v)| *v == CheckerVerdict::Survived)
        .map(|(m, _)| m.description)
        .collect()
}

// The equivalent mutants, by reason:
// * E -> M: E and M differ only in whether the line is dirty, and the
//   model's line is one value that a write-back carries either way.
// * HB_M -> DB (and W_HM -> W_D): a host-bias line the host holds no copy
//   of may as well be in device bias; the flip is a performance choice.
// * A load that turns into a store (I_D -> IM_D): the checker checks
//   coherence, not the program, and a store in the granted state is legal.
// * A dropped fill of an uncached write's own value or of an uncached
//   read's data: the write's value is a fresh one either way, and an
//   uncached read in host bias is not checked (see C_D in the spec).
// * A dropped clear_owner at the home: the stale owner entry is
//   overwritten by the next set_owner before anything reads it.

#[test]
fn dcoh_mutants_are_caught() {
    assert_eq!(
        surviving_mutants("dcoh"),
        [
            "retarget dcoh: (HBM_R, MemRdFwd): HB_M -> DB",
            "retarget dcoh: (HBM_W, MemWrFwd): W_HM -> W_D",
            "retarget dcoh: (W_H, DevWrData): HB_M -> DB",
            "retarget dcoh: (W_HM, DevWrData): HB_M -> DB"
        ]
    );
}

#[test]
fn accel_mutants_are_caught() {
    assert_eq!(
        surviving_mutants("accel"),
        [
            "retarget accel: (I, load): I_D -> IM_D",
            "drop-action accel: (I, write_line): fill",
            "retarget accel: (E, load): E -> M",
            "retarget accel: (I_D, DSnpInv): I_D -> IM_D",
            "retarget accel: (I_D, DevData): E -> M",
            "drop-action accel: (C_D, DevData): fill"
        ]
    );
}

#[test]
fn home_mutants_are_caught() {
    assert_eq!(
        surviving_mutants("home"),
        [
            "drop-action home: (MC, PutM [from_owner]): clear_owner",
            "drop-action home: (MC, ItoMWr): clear_owner",
            "drop-action home: (MC, RdOwnNoData): clear_owner"
        ]
    );
}

#[test]
fn core_mutants_are_caught() {
    assert_eq!(
        surviving_mutants("core"),
        [
            "retarget core: (E, load): E -> M",
            "retarget core: (IS_D, DataE): E -> M"
        ]
    );
}
