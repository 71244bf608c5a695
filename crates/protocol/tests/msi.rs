//! The role-form MSI protocol (`protocols/msi-dma.toml`): a protocol that
//! entered as data only, checked like the generated ECI tables.
//!
//! Pinned: reachable states and rules of two and three caches (rumur
//! agrees on the two-cache export, `tests/exporters.rs`), the one row two
//! caches cannot exercise, and the mutation results of every role.

use ccsim_protocol::mutate::mutants_of_role;
use ccsim_protocol::{check, check_ir, generate, load_spec, CheckOptions, SystemConfig};

fn config(caches: u8) -> SystemConfig {
    let spec = load_spec("msi-dma").unwrap();
    let mut cfg: SystemConfig = (&spec.check).into();
    cfg.instances.insert("cache".into(), caches);
    cfg
}

#[test]
fn two_caches_a_directory_and_a_dma_agent_verify() {
    let spec = load_spec("msi-dma").unwrap();
    let r = check(&spec, &CheckOptions::default()).unwrap();
    assert!(r.verified, "{}", r.to_text());
    assert_eq!((r.reachable_states, r.system_transitions), (11_486, 40_114));
    assert_eq!(r.machine, "home machine `directory`");
    // With two caches a GetM invalidates at most one other sharer.
    assert_eq!(r.unexercised, ["S_M_A/InvAck [more_acks]"]);
}

#[test]
fn three_caches_verify_and_exercise_every_directory_row() {
    let spec = load_spec("msi-dma").unwrap();
    let r = check(
        &spec,
        &CheckOptions {
            config: Some(config(3)),
            max_states: 0,
        },
    )
    .unwrap();
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(
        (r.reachable_states, r.system_transitions),
        (196_034, 845_192)
    );
    assert!(r.unexercised.is_empty(), "{:?}", r.unexercised);
}

/// Every single-row mutant of every role is caught, except the equivalent
/// mutants named here, each with the reason no checker can object.
fn mutants_are_caught(caches: u8, role: &str) -> Vec<String> {
    let spec = load_spec("msi-dma").unwrap();
    let (ir, stats) = generate(&spec).unwrap();
    let r = ir.role_index(role).unwrap();
    let ms = mutants_of_role(&ir, r);
    assert!(!ms.is_empty());
    ms.into_iter()
        .filter(|m| {
            check_ir(m.ir.clone(), stats.clone(), config(caches), 0)
                .unwrap()
                .verified
        })
        .map(|m| m.description)
        .collect()
}

#[test]
fn every_cache_mutant_is_caught() {
    assert_eq!(mutants_are_caught(2, "cache"), Vec::<String>::new());
}

#[test]
fn every_dma_mutant_but_its_write_value_is_caught() {
    // Without the fill the DMA writes the value its buffer happens to hold
    // (0) instead of a new one: still a write, only of a value already
    // explored, so nothing observes a difference.
    assert_eq!(
        mutants_are_caught(2, "dma"),
        ["drop-action dma: (I, write): fill"]
    );
}

/// The directory with three caches (with two, `S_M_A/InvAck [more_acks]`
/// never fires). Slow tier: `cargo test -p ccsim-protocol --release --test
/// msi -- --ignored` (about 30 s in release).
#[test]
#[ignore]
fn every_directory_mutant_but_a_dead_owner_is_caught() {
    // In I_W, I and M_W the owner field is never read (M is entered only by
    // rows that set it), so forgetting to clear it changes nothing.
    assert_eq!(
        mutants_are_caught(3, "directory"),
        [
            "drop-action directory: (M, PutM [from_owner]): clear_owner",
            "drop-action directory: (M, DmaWr): clear_owner",
        ]
    );
}

/// The default suite's directory mutants, with two caches: the two
/// mutants of the row two caches never fire survive too.
#[test]
fn every_directory_mutant_with_two_caches() {
    assert_eq!(
        mutants_are_caught(2, "directory"),
        [
            "drop-action directory: (M, PutM [from_owner]): clear_owner",
            "drop-action directory: (M, DmaWr): clear_owner",
            "delete directory: (S_M_A, InvAck [more_acks])",
            "retarget directory: (S_M_A, InvAck [more_acks]): S_M_A -> S_DD",
        ]
    );
}

#[test]
fn the_role_form_round_trips_through_json() {
    let spec = load_spec("msi-dma").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    let j = ccsim_protocol::export::export_json(&ir);
    assert_eq!(ccsim_protocol::export::import_json(&j).unwrap(), ir);
    assert!(j.contains("\"guard\": \"last_ack\""));
    assert!(j.contains("\"to\": \"sharers\""));
}
