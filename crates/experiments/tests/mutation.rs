//! Mutation coverage in timing runs (issue 19): every single-row mutant of
//! a shipped table is caught by the exhaustive checker or by the random
//! tester's online checks in the timing simulation, except the ones listed
//! here with the reason no test can tell them from the original.

use ccsim_experiments::mutation::{coverage, CheckerOutcome, TimingBudget, TimingVerdict};
use ccsim_platform::Platform;

const BUDGET: TimingBudget = TimingBudget {
    first_seed: 0,
    seeds: 20,
    ops: 1000,
    lines: 2,
};

#[test]
fn msi_dma_mutants_are_caught_by_the_checker_or_the_tester() {
    let p = Platform::load("msi-dma").unwrap();
    let r = coverage(&p, "random", None, &BUDGET).unwrap();
    assert_eq!(r.len(), 183);
    let checker = r.iter().filter(|m| m.by_checker.is_caught()).count();
    assert_eq!(checker, 178);
    // The checker's model of an uncached write lets a missing fill pass (the
    // buffer holds 0 instead of a new value, still a write); the timing
    // simulation's DMA engine then sends a copy it does not hold.
    let tester: Vec<&str> = r
        .iter()
        .filter(|m| matches!(m.by_timing, Some(TimingVerdict::Caught { .. })))
        .map(|m| m.mutant.as_str())
        .collect();
    assert_eq!(tester, ["drop-action dma: (I, write): fill"]);
    let neither: Vec<(&str, &CheckerOutcome)> = r
        .iter()
        .filter(|m| !m.caught())
        .map(|m| (m.mutant.as_str(), &m.by_checker))
        .collect();
    assert_eq!(
        neither,
        [
            // A stale owner entry: the directory over-approximates, and a
            // forward to a cache that no longer holds the line is answered
            // from I. Safe, only slower.
            (
                "drop-action directory: (M, PutM [from_owner]): clear_owner",
                &CheckerOutcome::Survived
            ),
            (
                "drop-action directory: (M, DmaWr): clear_owner",
                &CheckerOutcome::Survived
            ),
            // More than one InvAck outstanding needs two sharers besides
            // the requester: three caches, and both systems have two.
            (
                "delete directory: (S_M_A, InvAck [more_acks])",
                &CheckerOutcome::Unexercised
            ),
            (
                "retarget directory: (S_M_A, InvAck [more_acks]): S_M_A -> S_DD",
                &CheckerOutcome::Unexercised
            ),
        ]
    );
}

#[test]
fn an_enzian_system_is_refused() {
    let p = Platform::load("enzian").unwrap();
    let e = coverage(&p, "dc_bram", None, &BUDGET).unwrap_err();
    assert!(
        e.contains("mutation coverage takes a system of table agents"),
        "{e}"
    );
}
