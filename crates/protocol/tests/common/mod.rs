//! Specs that more than one test binary builds from the shipped ones.

use ccsim_protocol::load_spec;

/// The complete DC restricted to the core operations: the CPU's events of
/// the original 15-message protocol (load, getx, store, evictions,
/// downgrade, drop) and the application's clean, clean-invalidate, lock and
/// unlock of an unlocked line. The new rows are never fired, and the
/// composed system is the one the core protocol had, state for state, with
/// the CPU's read window (`IS_D_I` uses overtaken data once) added.
pub fn core_subset() -> ccsim_protocol::Spec {
    const COMPLETION_EVENTS: [&str; 15] = [
        "ifetch",
        "load_through",
        "store_full",
        "store_partial",
        "atomic_rinc",
        "atomic_rdec",
        "atomic_rswp",
        "atomic_rset",
        "atomic_rclr",
        "atomic_rcas",
        "io_load",
        "io_store",
        "lock_clean",
        "clean",
        "clinv",
    ];
    let mut spec = load_spec("eci-dc").unwrap();
    spec.peer
        .as_mut()
        .unwrap()
        .transition
        .retain(|r| !COMPLETION_EVENTS.contains(&r.event.as_str()));
    // The local agent keeps clean and clean-invalidate of an unlocked line.
    spec.local
        .as_mut()
        .unwrap()
        .transition
        .retain(|r| r.state == "Idle" || !COMPLETION_EVENTS.contains(&r.event.as_str()));
    spec.local
        .as_mut()
        .unwrap()
        .transition
        .retain(|r| r.event != "lock_clean");
    spec
}

/// `eci-dc` with its CPU's load hits reading by `check_window` instead of
/// `check`: a windowed read in a local row, which reads the agent's copy.
pub fn eci_dc_with_windowed_load_hits() -> ccsim_protocol::Spec {
    let mut spec = load_spec("eci-dc").unwrap();
    for r in spec.peer.as_mut().unwrap().transition.iter_mut() {
        if r.event == "load" && r.actions == ["check"] {
            r.actions = vec!["check_window".into()];
        }
    }
    spec
}

/// `spec` with a second load merged into the CPU's outstanding miss after
/// an invalidation (a row `IS_D_I` + `load`, staying in `IS_D_I`): a read
/// that begins after the write that follows the invalidation, which the
/// overtaken data must not answer.
pub fn with_a_merged_load(mut spec: ccsim_protocol::Spec) -> ccsim_protocol::Spec {
    let peer = spec.peer.as_mut().unwrap();
    let mut merge = peer.transition[0].clone();
    (merge.state, merge.event, merge.guard) = ("IS_D_I".into(), "load".into(), None);
    (merge.next, merge.actions, merge.stall) = (Some("IS_D_I".into()), vec![], false);
    peer.transition.push(merge);
    spec
}
