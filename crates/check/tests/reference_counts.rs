//! ccsim's explorer must find exactly the numbers of states and of rules
//! fired that rumur reports for the Murphi originals, and the same deadlock
//! verdict (see REFERENCE.md).

use ccsim_check::refmodels::{reference_count, RefModel, REFERENCE_COUNTS};
use ccsim_check::{CheckOptions, Outcome, ViolationKind};

fn check_reference(name: &str) {
    let r = reference_count(name).expect("reference count recorded");
    let model = RefModel::by_name(name).expect("known reference model");

    // Deadlock states have no successors, so exploring to the end while
    // collecting deadlocks gives the same counts as rumur's
    // `--deadlock-detection off`, and the deadlock verdict of its
    // `--deadlock-detection stuck`.
    let opts = CheckOptions {
        max_violations: usize::MAX,
        ..CheckOptions::default()
    };
    let report = model.check(&opts);
    assert_eq!(
        report.outcome,
        Outcome::Complete,
        "{name}: {}",
        report.summary()
    );
    assert_eq!(
        (report.states, report.transitions),
        (r.states, r.rules_fired),
        "{name}: ccsim (states, transitions) vs rumur (states, rules fired)"
    );
    assert!(
        report
            .violations
            .iter()
            .all(|v| v.kind == ViolationKind::Deadlock),
        "{name}: {}",
        report.summary()
    );
    assert_eq!(
        !report.violations.is_empty(),
        r.deadlock,
        "{name}: deadlock verdict differs from rumur's"
    );
}

#[test]
fn quick_reference_counts_equal_rumur() {
    for r in REFERENCE_COUNTS.iter().filter(|r| r.quick) {
        check_reference(r.name);
    }
}

#[test]
fn german_1_deadlock_matches_rumur_stopping_point() {
    // rumur --deadlock-detection stuck stops german-1 with "deadlock" after
    // 25 states and 29 rules fired; so does ccsim, with a 4-step trace.
    let report = RefModel::by_name("german-1")
        .unwrap()
        .check(&CheckOptions::default());
    assert_eq!((report.states, report.transitions), (25, 29));
    assert_eq!(report.violations[0].kind, ViolationKind::Deadlock);
    assert_eq!(report.violations[0].trace.steps.len(), 4);
}

#[test]
#[ignore = "11.4 million states, about 10 s in release mode; run with --release -- --ignored"]
fn slow_reference_counts_equal_rumur() {
    for r in REFERENCE_COUNTS.iter().filter(|r| !r.quick) {
        check_reference(r.name);
    }
}

#[test]
fn configuration_names() {
    let params = |n: &str| match RefModel::by_name(n) {
        Some(RefModel::Cache3(c)) => Some(c.params()),
        _ => None,
    };
    assert_eq!(params("cache3"), Some((2, 1)));
    assert_eq!(params("cache3-p3"), Some((3, 1)));
    assert_eq!(params("cache3-v2"), Some((2, 2)));
    assert_eq!(params("cache3-p3v2"), Some((3, 2)));
    for bad in [
        "cache3-",
        "cache3-x",
        "cache3-p9",
        "cache3p3",
        "cache3-p3v",
        "german-0",
        "german-7",
        "german",
    ] {
        assert!(RefModel::by_name(bad).is_none(), "{bad}");
    }
    assert!(matches!(RefModel::by_name("german-6"), Some(RefModel::German(g)) if g.n() == 6));
    for r in REFERENCE_COUNTS {
        assert!(RefModel::by_name(r.name).is_some(), "{}", r.name);
    }
}
