//! OpenPiton's P-Mesh (`protocols/pmesh.toml`): private L1.5 caches with
//! MESI, silent clean evictions and guarded write-backs, and the L2 slice
//! as the blocking directory home, in OpenPiton's message names.
//!
//! Pinned: reachable states and rules for two, three (the spec's
//! `[check]`; rumur agrees, `tests/exporters.rs`) and four L1.5 caches,
//! every L2 row exercised with three, a forward to a tile that dropped its
//! clean line silently as a golden message sequence, the one NoC ordering
//! the model needs, and the mutation results. The counts grew (17 534 →
//! 92 300 states with three tiles) when the spec gained the non-caching
//! LOAD_NOSHARE_REQ and SWAPWB_REQ (a MAPLE unit's loads and stores) and
//! the STORE_REQ of S's only sharer (OpenPiton's INV_FWD to the requester
//! itself).

mod role_specs;

use ccsim_protocol::{check, check_ir, generate, load_spec, CheckOptions, SystemConfig};
use role_specs::{check_with, config_of, escapes, run_script, shipped_system};

fn tiles(n: u8) -> SystemConfig {
    config_of("pmesh", &[("l15", n)])
}

#[test]
fn three_tiles_verify_and_exercise_every_l2_row() {
    let spec = load_spec("pmesh").unwrap();
    let r = check(&spec, &CheckOptions::default()).unwrap();
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (92_300, 376_320)
    );
    assert_eq!(r.machine, "home machine `l2`");
    assert_eq!(r.unexercised, Vec::<String>::new());
}

#[test]
fn two_and_four_tiles_verify() {
    let two = check_with("pmesh", tiles(2));
    assert!(two.verified, "{}", two.to_text());
    assert_eq!(
        (two.reachable_states, two.system_transitions),
        (2_694, 8_352)
    );
    // Collecting a second INV_FWDACK needs two sharers besides the writer.
    assert_eq!(
        two.unexercised,
        ["WS_A/INV_FWDACK [more_acks]", "SM_A/INV_FWDACK [more_acks]"]
    );
    let four = check_with("pmesh", tiles(4));
    assert!(four.verified, "{}", four.to_text());
    assert_eq!(
        (four.reachable_states, four.system_transitions),
        (2_727_286, 13_989_912)
    );
}

/// Without NoC2's in-order delivery a forward can pass the completion the
/// slice sent the tile before it: the tile, still waiting for its line,
/// answers the forward as stale, then takes the line the L2 already gave
/// away. The shortest such run now has a non-caching store take the line
/// (STORE_FWD passes tile 0's DATA_ACK_E; the L2 writes the new value and
/// tile 0 keeps the old one, Exclusive): a stale read. With caching stores
/// alone the same overtaking leaves two tiles holding the line writable.
#[test]
fn without_the_noc2_ordering_the_check_fails() {
    let spec = load_spec("pmesh").unwrap();
    let (mut ir, stats) = generate(&spec).unwrap();
    for c in ir.channels.iter_mut() {
        c.ordered_after.clear();
    }
    let r = check_ir(ir, stats, (&spec.check).into(), 0).unwrap();
    assert!(!r.verified);
    assert_eq!(r.violations[0].property, "data-value", "{}", r.to_text());
}

/// Tile 0 (`l150`) loads the line alone (E), drops it silently, and loads
/// it again; tile 1's load, served first, forwards to tile 0 as the owner
/// the directory still lists: tile 0 answers without data from its pending
/// miss, the L2 gives tile 1 the line Shared from its own up-to-date copy,
/// then serves tile 0's load.
#[test]
fn a_forward_to_a_tile_that_dropped_its_clean_line_is_the_golden_sequence() {
    let sys = shipped_system("pmesh");
    let end = run_script(
        &sys,
        &[
            "l150: load(A)",
            "l150 -> l2: LOAD_REQ(A)",
            "l2 -> l150: DATA_ACK_E(A, data=0)",
            "l150: evict(A)",
            "l150: load(A)",
            "l151: load(A)",
            "l151 -> l2: LOAD_REQ(A)",
            "l2 -> l150: LOAD_FWD(A, req=l151)",
            "l150 -> l2: LOAD_FWDACK(A, req=l151)",
            "l2 -> l151: DATA_ACK_S(A, data=0)",
            "l150 -> l2: LOAD_REQ(A)",
            "l2 -> l150: DATA_ACK_S(A, data=0)",
        ],
    );
    assert_eq!(
        end,
        "line A: l150=S l151=S l152=I l2=S l150.copy=0 l151.copy=0 l152.copy=0 owner=- sharers=[l150,l151] mem=0 latest=0; net: []"
    );
}

// The single-row mutants the checker does not catch on three tiles, and
// why each is benign:
// * An eviction is the cache's choice: keeping a Shared line instead of
//   dropping it ((S, evict) -> S) removes nothing anyone waits for.
// * E and M differ only in whether the line is dirty, and the model's line
//   is one value that a write-back carries either way.
// * A sharer or owner entry the L2 fails to clear makes the directory
//   over-approximate (a later forward is answered as stale, as after a
//   silent eviction); the owner field is set again before it is read.
// * An L2 in S that lists nobody (a non-caching request, a write-back or
//   a non-caching store's end in S instead of I, or a non-caching store
//   that leaves its sharers listed) serves like I: a load adds its sharer to
//   the empty list, and a store finds no other sharer and takes the
//   requester's own INV_FWD round (one forward more, nothing wrong).

#[test]
fn l15_mutants_are_caught() {
    assert_eq!(
        escapes("pmesh", "l15"),
        [
            "retarget l15: (S, evict): I -> S (Survived)",
            "retarget l15: (E, load): E -> M (Survived)",
            "retarget l15: (E, load_noshare): E -> M (Survived)",
            "retarget l15: (IS_D, DATA_ACK_E): E -> M (Survived)",
        ]
    );
}

#[test]
fn l2_mutants_are_caught() {
    assert_eq!(
        escapes("pmesh", "l2"),
        [
            "retarget l2: (I, LOAD_NOSHARE_REQ): I -> S (Survived)",
            "retarget l2: (I, SWAPWB_REQ): I -> S (Survived)",
            "retarget l2: (I, WB_REQ): I -> S (Survived)",
            "drop-action l2: (S, SWAPWB_REQ [other_sharers]): clear_sharers (Survived)",
            "retarget l2: (S, SWAPWB_REQ [no_other_sharers]): I -> S (Survived)",
            "drop-action l2: (S, SWAPWB_REQ [no_other_sharers]): clear_sharers (Survived)",
            "drop-action l2: (S, STORE_REQ [other_sharers]): clear_sharers (Survived)",
            "drop-action l2: (S, STORE_REQ [no_other_sharers]): clear_sharers (Survived)",
            "drop-action l2: (O, SWAPWB_REQ [not_from_owner]): clear_owner (Survived)",
            "retarget l2: (O, SWAPWB_REQ [from_owner]): I -> S (Survived)",
            "drop-action l2: (O, SWAPWB_REQ [from_owner]): clear_owner (Survived)",
            "drop-action l2: (O, STORE_REQ [not_from_owner]): clear_owner (Survived)",
            "retarget l2: (O, WB_REQ [from_owner]): I -> S (Survived)",
            "drop-action l2: (O, WB_REQ [from_owner]): clear_owner (Survived)",
            "retarget l2: (WS_A, INV_FWDACK [last_ack]): I -> S (Survived)",
            "retarget l2: (WO_A, STORE_FWDACK): I -> S (Survived)",
            "retarget l2: (WO_A, STORE_FWDACK_DATA): I -> S (Survived)",
        ]
    );
}
