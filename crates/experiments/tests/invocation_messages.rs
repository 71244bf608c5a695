//! The messages behind PIO Fig. 6's E-return vs S-return gap, counted in
//! the simulator's trace: returning the result Shared leaves the roles of
//! the two lines as they were (PIO §5), so each later call must restore the
//! start state: the request store misses on the request line the device
//! took (`RLDX`), and before granting it the device invalidates the Shared
//! result line (`SINV`, answered `HAKI`) so that the next load signals
//! (PIO §6.1: "further round trips over ECI to (unnecessarily) invalidate
//! the line ... before sending the next message"). Exclusive return needs
//! neither.

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
fn s_return_adds_a_request_fetch_and_an_invalidation_per_call() {
    let calls = 8;
    let (e, s) = (trace_of(true, calls), trace_of(false, calls));
    // E-return: the result comes back Exclusive (PEMD) and the next request
    // store needs no message: one RLDX only, the first call's registration.
    assert_eq!(count(&e, "RLDX"), 1);
    assert_eq!(count(&e, "SINV"), 0);
    // S-return: Shared (PSHA); every later call's first store fetches the
    // request line again (RLDX) and the device first invalidates the
    // Shared result line (SINV answered HAKI); nothing is upgraded.
    assert_eq!(count(&s, "RLDX"), calls, "a request fetch per call");
    assert_eq!(
        count(&s, "SINV"),
        calls - 1,
        "an invalidation per later call"
    );
    assert_eq!(count(&s, "RC2D_S"), 0);
    assert!(count(&s, "PSHA") >= calls);
    assert!(count(&e, "PEMD") >= calls);
}
