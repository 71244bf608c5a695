//! CCIX (`protocols/ccix.toml`): request agents with I/SC/UC/UD caches and
//! the blocking home agent with its directory, CHI-like (ReadShared,
//! ReadUnique, CleanUnique, Evict, WriteBackFull, WriteUniqueFull with its
//! line in the request, AtomicCompare; SnpToS, SnpToI; CompData, Comp,
//! CompAck).
//!
//! Pinned: reachable states and rules for two, three (the spec's
//! `[check]`; rumur agrees, `tests/exporters.rs`) and four request agents,
//! every home row exercised with three, a CleanUnique that loses its copy
//! to a crossing snoop and a far AtomicCompare that takes a dirty line
//! from its holder as golden message sequences, and the mutation results.

mod role_specs;

use ccsim_protocol::{check, load_spec, CheckOptions, SystemConfig};
use role_specs::{check_with, config_of, escapes, run_script, shipped_system};

fn ras(n: u8) -> SystemConfig {
    config_of("ccix", &[("ra", n)])
}

#[test]
fn three_request_agents_verify_and_exercise_every_home_row() {
    let spec = load_spec("ccix").unwrap();
    let r = check(&spec, &CheckOptions::default()).unwrap();
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (128_754, 633_462)
    );
    assert_eq!(r.machine, "home machine `ha`");
    assert_eq!(r.unexercised, Vec::<String>::new());
}

#[test]
fn two_request_agents_verify() {
    let r = check_with("ccix", ras(2));
    assert!(r.verified, "{}", r.to_text());
    assert_eq!((r.reachable_states, r.system_transitions), (3_324, 13_432));
    // Collecting more than one snoop response needs two sharers besides
    // the requester.
    assert_eq!(
        r.unexercised,
        [
            "RU_S/SnpResp_I [more_acks]",
            "CU_S/SnpResp_I [more_acks]",
            "W_S/SnpResp_I [more_acks]",
            "A_S/SnpResp_I [more_acks]"
        ]
    );
}

/// Slow tier (about 45 s in release): `cargo test --release -p
/// ccsim-protocol --test ccix -- --ignored`.
#[test]
#[ignore]
fn four_request_agents_verify() {
    let r = check_with("ccix", ras(4));
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (4_399_544, 25_599_496)
    );
}

/// Two request agents share a line and both store to it. The home serves
/// ra1's CleanUnique first: its SnpToI takes ra0's Shared copy while ra0's
/// own CleanUnique waits, so ra0 is granted Unique without data (Comp_UC)
/// after the home took ra1's dirty line back, and ra0's whole-line store
/// fills it.
#[test]
fn a_clean_unique_that_loses_its_copy_to_a_snoop_is_the_golden_sequence() {
    let sys = shipped_system("ccix");
    let end = run_script(
        &sys,
        &[
            "ra0: load(A)",
            "ra0 -> ha: ReadShared(A)",
            "ha -> ra0: CompData_UC(A, data=0)",
            "ra0 -> ha: CompAck(A)",
            "ra1: load(A)",
            "ra1 -> ha: ReadShared(A)",
            "ha -> ra0: SnpToS(A, req=ra1)",
            "ra0 -> ha: SnpResp_SC(A, req=ra1)",
            "ha -> ra1: CompData_SC(A, data=0)",
            "ra1 -> ha: CompAck(A)",
            // Both upgrade; ra1's CleanUnique reaches the home first.
            "ra0: store(A)",
            "ra1: store(A)",
            "ra1 -> ha: CleanUnique(A)",
            "ha -> ra0: SnpToI(A, req=ra1)",
            "ra0 -> ha: SnpResp_I(A, req=ra1)",
            "ha -> ra1: Comp_UC(A, write=1)",
            "ra1 -> ha: CompAck(A)",
            // ra0's CleanUnique, now from an RA without a copy.
            "ra0 -> ha: CleanUnique(A)",
            "ha -> ra1: SnpToI(A, req=ra0)",
            "ra1 -> ha: SnpRespData_I(A, req=ra0, data=1)",
            "ha -> ra0: Comp_UC(A, write=0)",
            "ra0 -> ha: CompAck(A)",
        ],
    );
    assert_eq!(
        end,
        "line A: ra0=UD ra1=I ra2=I ha=U ra0.copy=0 ra1.copy=0 ra2.copy=0 owner=ra0 sharers=[] mem=1 latest=0; net: []"
    );
}

// The single-row mutants the checker does not catch on three request
// agents (it lets them pass, or their row never runs), and why each is
// benign:
// * The home snoops with SnpToS only the line's unique holder, so the
//   request agent's SnpToS rows in SC, SU_C and SI_C never run; CCIX still
//   requires an answer to any snoop in any state, so they stay.
// * UC and UD differ only in whether the line is dirty, and the model's
//   line is one value that an eviction writes back either way (UC -> UD;
//   UC's Evict answered as from MI_C, which holds the data).
// * SI_C retargeted to UI_C: both wait for Comp and answer SnpToI alike;
//   they differ only on SnpToS, which a Shared holder never receives.
// * The home's clear_owner before set_owner (ReadUnique, CleanUnique) is
//   overwritten at once; after an eviction from the holder, or a
//   WriteUniqueFull's or an AtomicCompare's snoop of it, the state ends in I, where the owner
//   field is not read before the next set_owner.

#[test]
fn request_agent_mutants_are_caught() {
    assert_eq!(
        escapes("ccix", "ra"),
        [
            "retarget ra: (SC, evict): SI_C -> UI_C (Survived)",
            "delete ra: (SC, SnpToS) (Unexercised)",
            "retarget ra: (SC, SnpToS): SC -> UC (Unexercised)",
            "drop-action ra: (SC, SnpToS): send SnpResp_SC (Unexercised)",
            "retarget ra: (UC, load): UC -> UD (Survived)",
            "retarget ra: (UC, evict): UI_C -> MI_C (Survived)",
            "retarget ra: (IS_D, CompData_UC): UC -> UD (Survived)",
            "delete ra: (SU_C, SnpToS) (Unexercised)",
            "retarget ra: (SU_C, SnpToS): SU_C -> IU_C (Unexercised)",
            "drop-action ra: (SU_C, SnpToS): send SnpResp_SC (Unexercised)",
            "delete ra: (SI_C, SnpToS) (Unexercised)",
            "retarget ra: (SI_C, SnpToS): SI_C -> UI_C (Unexercised)",
            "drop-action ra: (SI_C, SnpToS): send SnpResp_SC (Unexercised)",
        ]
    );
}

#[test]
fn home_agent_mutants_are_caught() {
    assert_eq!(
        escapes("ccix", "ha"),
        [
            "drop-action ha: (U, ReadUnique): clear_owner (Survived)",
            "drop-action ha: (U, CleanUnique): clear_owner (Survived)",
            "drop-action ha: (U, Evict [from_owner]): clear_owner (Survived)",
            "drop-action ha: (U, WriteBackFull [from_owner]): clear_owner (Survived)",
            "drop-action ha: (U, WriteUniqueFull): clear_owner (Survived)",
            "drop-action ha: (U, AtomicCompare [from_owner]): clear_owner (Survived)",
            "drop-action ha: (U, AtomicCompare [not_from_owner]): clear_owner (Survived)",
        ]
    );
}

/// A non-allocating write of a line another RA holds dirty: the line
/// goes in the request (CCIX Base Spec 1.0 §3.11.2, no DBIDResp
/// handshake), the home invalidates the dirty copy with SnpToI (its data
/// dropped: the whole line is overwritten), writes the request's line and
/// answers Comp; no one holds the line after.
#[test]
fn a_write_unique_invalidates_the_dirty_holder_and_leaves_the_line_in_memory() {
    let sys = shipped_system("ccix");
    let end = run_script(
        &sys,
        &[
            "ra1: store(A)",
            "ra1 -> ha: ReadUnique(A)",
            "ha -> ra1: CompData_UC(A, data=0, write=1)",
            "ra1 -> ha: CompAck(A)",
            "ra0: write(A=0)",
            "ra0 -> ha: WriteUniqueFull(A, data=0)",
            "ha -> ra1: SnpToI(A, req=ra0)",
            "ra1 -> ha: SnpRespData_I(A, req=ra0, data=1, write=0)",
            "ha -> ra0: Comp(A)",
        ],
    );
    assert_eq!(
        end,
        "line A: ra0=I ra1=I ra2=I ha=I ra0.copy=0 ra1.copy=0 ra2.copy=0 owner=- sharers=[] mem=0 latest=0; net: []"
    );
}

/// A far atomic on a line another RA holds dirty (the lock table's case:
/// the host core's CAS left the bucket's line in its L1, then the U280's
/// lock module sends its AtomicCompare): the home takes the dirty line
/// back with SnpToI, reads the latest value (the write-back), returns it
/// as CompData_I and writes the result into memory at the home; no RA
/// holds the line after, and no CompAck follows.
#[test]
fn a_far_atomic_takes_the_dirty_line_back_and_executes_at_the_home() {
    let sys = shipped_system("ccix");
    let end = run_script(
        &sys,
        &[
            "ra1: store(A)",
            "ra1 -> ha: ReadUnique(A)",
            "ha -> ra1: CompData_UC(A, data=0, write=1)",
            "ra1 -> ha: CompAck(A)",
            "ra0: atomic(A=0)",
            "ra0 -> ha: AtomicCompare(A, data=0)",
            "ha -> ra1: SnpToI(A, req=ra0)",
            "ra1 -> ha: SnpRespData_I(A, req=ra0, data=1, write=0)",
            "ha -> ra0: CompData_I(A, data=1)",
        ],
    );
    assert_eq!(
        end,
        "line A: ra0=I ra1=I ra2=I ha=I ra0.copy=0 ra1.copy=0 ra2.copy=0 owner=- sharers=[] mem=0 latest=0; net: []"
    );
}
