//! The messages behind PIO Fig. 6's E-return vs S-return gap, counted in
//! the simulator's trace: returning the result Shared costs each call one
//! more ECI exchange (the next request's store upgrades the Shared line,
//! `RC2D_S`, answered with data), which Exclusive return avoids (PIO §6.1:
//! "further round trips over ECI").

use ccsim_experiments::invocation::run::{run_invocation, InvocationConfig};
use ccsim_kernel::prelude::*;
use ccsim_platform::{EciOptions, Platform};

/// Occurrences of each message name in a Full trace of `calls` calls.
fn trace_of(exclusive_return: bool, calls: usize) -> String {
    let sys = Platform::load("enzian")
        .unwrap()
        .coherent_system("invocation", &EciOptions::new(1, TraceMode::Full))
        .unwrap();
    let cfg = InvocationConfig {
        calls,
        exclusive_return,
        ..Default::default()
    };
    let r = run_invocation(sys, &cfg).unwrap();
    assert_eq!(r.verified, calls);
    r.trace_json.expect("a Full trace")
}

fn count(trace: &str, name: &str) -> usize {
    trace.matches(&format!("\"{name}")).count()
}

#[test]
fn s_return_adds_one_upgrade_exchange_per_call() {
    let calls = 8;
    let (e, s) = (trace_of(true, calls), trace_of(false, calls));
    // E-return: the result comes back Exclusive (PEMD) and the next request
    // store needs no message; S-return: Shared (PSHA), then every later
    // call's first store upgrades it.
    assert_eq!(count(&e, "RC2D_S"), 0);
    assert_eq!(
        count(&s, "RC2D_S"),
        calls - 1,
        "one upgrade per call after the first"
    );
    assert!(count(&s, "PSHA") >= calls);
    assert!(count(&e, "PEMD") >= calls);
}
