//! Golden tests of the message sequence charts of a counterexample: the
//! buggy German variant (exclusive grant while a client still shares) with
//! two clients. Set `CCSIM_BLESS=1` to rewrite the golden files.

use std::path::PathBuf;

use ccsim_check::refmodels::German;
use ccsim_check::{check, CheckOptions, Outcome, ViolationKind};

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("CCSIM_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with CCSIM_BLESS=1 to create)", path.display()));
    assert_eq!(
        actual,
        expected,
        "{} differs; actual output:\n{actual}",
        path.display()
    );
}

fn counterexample() -> ccsim_check::Violation {
    let report = check(&German::buggy(2), &CheckOptions::default());
    assert_eq!(report.outcome, Outcome::ViolationLimit);
    let v = report.violations.into_iter().next().unwrap();
    assert_eq!(v.kind, ViolationKind::Invariant("CntrlProp".into()));
    v
}

#[test]
fn text_chart_of_german_counterexample() {
    let v = counterexample();
    golden("german_buggy_2.txt", &v.msc_text());
}

#[test]
fn mermaid_chart_of_german_counterexample() {
    let v = counterexample();
    golden("german_buggy_2.mmd", &v.msc_mermaid());
}

#[test]
fn trace_is_shortest_and_json_serialisable() {
    let v = counterexample();
    // Shortest: c0 gets a shared copy (4 steps), c1 requests and is granted
    // exclusive (4 steps).
    assert_eq!(v.trace.steps.len(), 8);
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["kind"], "invariant");
    assert_eq!(json["name"], "CntrlProp");
    assert_eq!(json["trace"]["steps"].as_array().unwrap().len(), 8);
    assert_eq!(json["trace"]["steps"][0]["chart"]["from"], "c0");
}
