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

/// FastForward over CCPI (PIO §5, Fig. 4; the baseline of Fig. 6) on the
/// `llc_ddr` system, `calls` calls, without link jitter: the Full trace and
/// the run.
fn fastforward(calls: usize) -> (String, ccsim_experiments::invocation::run::InvocationRun) {
    let sys = Platform::load("enzian")
        .unwrap()
        .coherent_system("llc_ddr", &EciOptions::new(1, TraceMode::Full))
        .unwrap();
    let cfg = InvocationConfig {
        calls,
        warmup: 2,
        line_a: 0,
        line_b: 1,
        ..Default::default()
    };
    let r = ccsim_experiments::invocation::run::run_fastforward(sys, &cfg).unwrap();
    assert_eq!(r.verified, calls);
    (r.trace_json.clone().expect("a Full trace"), r)
}

#[test]
fn fastforward_dequeues_with_a_store_before_it_answers() {
    // FastForward's consumer frees the slot it took by storing NULL into it
    // (Giacomoni et al., PPoPP 2008), and the server's answer is a release
    // store behind it (ARMv8-A, PIO §5). Per call, on the request line R
    // (0): the client fetches R to store its request (RLDX, PEMD), the
    // server's spin reads it (FLDRS, HAKD), its dequeue invalidates the
    // client's copy (SINV, HAKI); on the response line P (1): the answer
    // recalls the client's copy that its own dequeue made Modified (FLDX,
    // HAKD), the client's spin load fetches the answer (RLDD, PSHA) and its
    // dequeue upgrades it (RC2D_S, PEMD). Five round trips per call, six
    // on the first (the client's first spin load finds no answer yet).
    let calls = 8;
    let (t, r) = fastforward(calls);
    assert_eq!(count(&t, "RLDX line=0x0"), calls);
    assert_eq!(count(&t, "FLDRS line=0x0"), calls);
    assert_eq!(
        count(&t, "SINV line=0x0"),
        calls,
        "a dequeue store per call"
    );
    assert_eq!(
        count(&t, "FLDX line=0x1"),
        calls - 1,
        "the answer recalls P"
    );
    assert_eq!(count(&t, "RC2D_S line=0x1"), calls, "the client's dequeue");
    assert_eq!(count(&t, "RLDD line=0x1"), calls + 1);
    // Without jitter every steady call takes the same time: the five round
    // trips of about 200 ns (CCKit §5.1's CCPI round trip) and the home's
    // DDR, 1026.5 ns (PIO Fig. 6's median is about 1150 ns).
    let steady = &r.latencies_ps;
    assert!(steady.iter().all(|&l| l == steady[0]), "{steady:?}");
    assert!(
        (steady[0] as f64 / 1000.0 - 1026.5).abs() < 1.0,
        "{}",
        steady[0]
    );
}
