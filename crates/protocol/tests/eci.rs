//! End-to-end checks of the shipped specs.

use ccsim_protocol::{check, generate, load_spec, CheckOptions, SystemConfig};

/// Generates the shipped spec `name`, prints its machine, checks it and
/// asserts it verified.
fn generates_and_verifies(name: &str) {
    let spec = load_spec(name).unwrap();
    let (ir, stats) = generate(&spec).unwrap();
    println!("{stats:?}");
    for t in &ir.roles[0].states {
        println!("{} : {}", t.name, t.description);
    }
    let r = check(&spec, &CheckOptions::default()).unwrap();
    println!("{}", r.to_text());
    assert!(r.verified, "{name}: {}", r.to_text());
}

#[test]
fn eci_dc_generates_and_verifies() {
    generates_and_verifies("eci-dc");
}

#[test]
fn eci_cc_generates_and_verifies() {
    generates_and_verifies("eci-cc");
}

fn two_lines(spec: &str, dcus: Vec<u8>, values: u8) -> ccsim_protocol::CheckReport {
    let spec = load_spec(spec).unwrap();
    let cfg = SystemConfig {
        dcus,
        values,
        max_in_flight: 2,
        instances: Default::default(),
    };
    check(
        &spec,
        &CheckOptions {
            config: Some(cfg),
            max_states: 0,
        },
    )
    .unwrap()
}

/// Two lines on one serial DCU: a stall on one line blocks the other, and
/// the DC still verifies (one data value keeps the debug suite fast).
#[test]
fn eci_dc_two_lines_one_dcu_verifies() {
    let r = two_lines("eci-dc", vec![0, 0], 1);
    assert!(r.verified, "{}", r.to_text());
    assert_eq!(r.reachable_states, 304_383);
}

/// Slow tier (`cargo test --release -p ccsim-protocol --test eci -- --ignored`):
/// two lines with two data values on one DCU, DC and CC. (Two DCUs: the
/// `protocol_check` example, 3,452,164 states, about 1 GB.)
#[test]
#[ignore]
fn two_lines_two_values_verify() {
    for (spec, dcus, states) in [
        ("eci-dc", vec![0, 0], 1_939_264),
        ("eci-cc", vec![0, 0], 1_031_036),
    ] {
        let r = two_lines(spec, dcus, 2);
        assert!(r.verified, "{}", r.to_text());
        assert_eq!(r.reachable_states, states);
    }
}

/// Pinned single-line counts (rumur reports the same; see tests/exporters.rs).
#[test]
fn pinned_counts() {
    for (name, states, transitions) in [("eci-dc", 1858, 4778), ("eci-cc", 1056, 2832)] {
        let r = check(&load_spec(name).unwrap(), &CheckOptions::default()).unwrap();
        assert_eq!(
            (r.reachable_states, r.system_transitions),
            (states, transitions),
            "{name}"
        );
    }
}
