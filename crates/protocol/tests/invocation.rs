//! The two-line invocation protocol: completes on separate DCUs, deadlocks
//! (with a readable trace) when A and B share one.

use ccsim_protocol::invocation::{check_invocation, InvocationConfig};

fn run(
    device_initiated: bool,
    exclusive_return: bool,
    not_ready: bool,
    shared_unit: bool,
) -> ccsim_protocol::invocation::InvocationReport {
    let cfg = InvocationConfig {
        device_initiated,
        exclusive_return,
        not_ready,
        shared_unit,
        rounds: 2,
    };
    check_invocation(&cfg).unwrap()
}

#[test]
fn completes_on_separate_units_all_variants() {
    for di in [false, true] {
        for er in [true, false] {
            for nr in [false, true] {
                let r = run(di, er, nr, false);
                assert!(
                    r.verified,
                    "{:?}: {}",
                    r.config,
                    r.violation
                        .as_ref()
                        .map(|v| format!(
                            "{}: {}\n{}\n{}",
                            v.property, v.message, v.final_state, v.chart
                        ))
                        .unwrap_or_default()
                );
                println!("{:?}: {} states", r.config, r.reachable_states);
            }
        }
    }
}

#[test]
fn deadlocks_on_shared_unit() {
    for di in [false, true] {
        for er in [true, false] {
            let r = run(di, er, false, true);
            let v = r.violation.expect("deadlock expected");
            assert_eq!(v.property, "deadlock");
            println!(
                "{:?}\n{}\n{}\n{}",
                r.config, v.message, v.final_state, v.chart
            );
            assert!(v.chart.contains("RLDD"));
            assert!(
                v.final_state.contains("dc=I_RLDD")
                    && v.final_state.contains("waits: DCU 0 is busy with line"),
                "{}",
                v.final_state
            );
        }
    }
}

/// With one DCU, answering "not ready yet" frees the unit, so the
/// invocation can always still complete.
#[test]
fn not_ready_breaks_the_shared_unit_deadlock() {
    for di in [false, true] {
        for er in [true, false] {
            let r = run(di, er, true, true);
            assert!(
                r.verified,
                "{:?}: {:?}",
                r.config,
                r.violation.map(|v| v.chart)
            );
        }
    }
}

/// The shipped specs through the public `check` entry point (what
/// `ccsim protocol check` runs): separate DCUs verify, one DCU deadlocks.
#[test]
fn shipped_invocation_specs_through_check() {
    use ccsim_protocol::{check, load_spec, CheckOptions};
    let ok = check(&load_spec("invocation").unwrap(), &CheckOptions::default()).unwrap();
    assert!(ok.verified, "{}", ok.to_text());
    assert_eq!(ok.variants.len(), 8);
    let bad = check(
        &load_spec("invocation-shared-dcu").unwrap(),
        &CheckOptions::default(),
    )
    .unwrap();
    assert!(!bad.verified);
    let v = &bad.violations[0];
    assert_eq!(v.property, "deadlock");
    assert!(
        v.message
            .starts_with("Fig. 5a E-return, A and B on one DCU"),
        "{}",
        v.message
    );
    let text = bad.to_text();
    assert!(
        text.contains("LCL_CLINV(B)") || text.contains("clinv(B)"),
        "{text}"
    );
    println!("{text}");
}
