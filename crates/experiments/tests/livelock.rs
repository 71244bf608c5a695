//! The livelock between a core's store and the DC application's cleans and
//! clean-invalidates (BENCHMARKS.md, found by the random tester on
//! `dc_bram`): with the DC's contended-grant hold off, the store re-requests
//! its line again and again, each grant given back unused (`IE_D_I`), until
//! the watchdog stops the run; with the platform's hold
//! (`dc.contended_grant_hold_ns`) every seed finishes, checked against the
//! sequential reference. An application request already started, waiting
//! in the DCU's queue behind the CPU's transaction, waits for the hold too
//! (found on `dc_ddr` with two lines, and on `llc_ddr`, whose home has a
//! hold of its own). The mechanism is explained in
//! `ccsim_eci::dc`'s module docs.

use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_eci::system::CoherentSystem;
use ccsim_kernel::prelude::*;
use ccsim_platform::{EciOptions, Platform};

/// The random tester's run of `ops` core operations on 4 lines (and one
/// application sequence for every ten, back to back) of `system`, seed `seed`,
/// with the DC's hold set to `hold_ns` (None: the platform's).
fn random_run(
    system: &str,
    seed: u64,
    ops: u64,
    hold_ns: Option<f64>,
) -> (CoherentSystem, Result<(), String>) {
    random_run_on(system, seed, ops, 4, hold_ns)
}

/// [`random_run`] on `lines` lines (the hold is set on the system's agent
/// `dc`, its home).
fn random_run_on(
    system: &str,
    seed: u64,
    ops: u64,
    lines: u64,
    hold_ns: Option<f64>,
) -> (CoherentSystem, Result<(), String>) {
    let enzian = Platform::load("enzian").unwrap();
    let mut rng = SimRng::for_path(seed, "random_test.eci");
    let program = CpuOp::random_program(&mut rng, ops, lines);
    let app = AppOp::random_sequences(&mut rng, ops.div_ceil(10), lines);
    let mut opts = EciOptions::new(seed, TraceMode::Hash);
    if let Some(h) = hold_ns {
        opts = opts.set(
            "dc",
            "contended_grant_hold_ns",
            ParamValue::Float(h),
            "test",
        );
    }
    let mut sys = enzian.coherent_system(system, &opts).unwrap();
    sys.set_programs(vec![program]).unwrap();
    sys.dc_mut().push_app_ops(app);
    let r = sys.run();
    (sys, r)
}

#[test]
fn without_the_hold_a_store_livelocks_against_the_applications_cleans() {
    // Seed 1 (the random tester's `point` seed): the watchdog stops the run
    // on a store whose line the LLC holds in IE_D_I (invalidated before its
    // data came), 100 us after it issued.
    let (_, r) = random_run("dc_bram", 1, 1_000_000, Some(0.0));
    let e = r.unwrap_err();
    assert!(e.contains("watchdog") && e.contains("Store"), "{e}");
    assert!(e.contains("cpu=IE_D_I"), "{e}");
}

#[test]
fn with_the_hold_every_store_completes_and_memory_matches_the_reference() {
    for (system, seed) in [
        ("dc_bram", 1),
        ("dc_bram", 0),
        ("dc_bram", 2),
        ("dc_ddr", 1),
    ] {
        let (sys, r) = random_run(system, seed, 200_000, None);
        r.unwrap_or_else(|e| panic!("{system} seed {seed}: {e}"));
        assert_completes_as_the_reference(&sys, 200_000, 4, &format!("{system} seed {seed}"));
    }
}

/// A load whose grant a forward overtook (the LLC in `IS_D_I`, the lock's or
/// clean-invalidate's `SINV` ahead of the `PSHA`) completes with that data,
/// used once and not kept (gem5's `IS_I`), instead of asking again; the
/// online checks compare each such read with its own window, the values
/// that were the latest write at some moment since the load issued.
#[test]
fn overtaken_grants_answer_their_loads_once() {
    for (system, seed, once) in [("dc_bram", 1, 59), ("dc_ddr", 1, 24)] {
        let (sys, r) = random_run(system, seed, 200_000, None);
        r.unwrap_or_else(|e| panic!("{system} seed {seed}: {e}"));
        assert_eq!(sys.cpu().loads_read_once(), once, "{system} seed {seed}");
    }
}

/// Every core operation completed and every line equals the sequential
/// reference.
fn assert_completes_as_the_reference(sys: &CoherentSystem, ops: usize, lines: u64, what: &str) {
    assert_eq!(sys.cpu().completed.len(), ops, "{what}");
    let reference = sys.sequential_reference();
    for line in 0..lines {
        assert_eq!(
            sys.line_value(line),
            reference
                .get(&line)
                .copied()
                .unwrap_or_else(|| ccsim_coherence::initial_line(line)),
            "{what}: line {line}"
        );
    }
}

#[test]
fn an_application_request_behind_the_cpus_grant_waits_for_the_hold() {
    // Two lines on dc_ddr: the application's clean, clean-invalidate or lock
    // waits in the DCU's queue behind the CPU's request and, before the
    // hold covered it, forwarded right behind the grant (seeds 17-19 stopped
    // on the watchdog: stores given back in IE_D_I).
    for seed in [17, 18, 19] {
        let (sys, r) = random_run_on("dc_ddr", seed, 100_000, 2, None);
        r.unwrap_or_else(|e| panic!("dc_ddr seed {seed}: {e}"));
        assert_completes_as_the_reference(&sys, 100_000, 2, &format!("dc_ddr seed {seed}"));
    }
}

#[test]
fn the_native_homes_hold_breaks_its_livelock() {
    // llc_ddr's home (the other ThunderX-1 socket) answers in a few ns, so
    // without a hold its application forwards right behind every grant and
    // a load or a store of the core asks again and again.
    let (_, r) = random_run_on("llc_ddr", 0, 50_000, 4, Some(0.0));
    let e = r.unwrap_err();
    assert!(e.contains("watchdog"), "{e}");
    assert!(e.contains("cpu=IE_D_I") || e.contains("cpu=IS_D_I"), "{e}");
    // With the platform's (thunderx_home.contended_grant_hold_ns) every
    // operation completes.
    for seed in [0, 1, 2] {
        let (sys, r) = random_run_on("llc_ddr", seed, 50_000, 4, None);
        r.unwrap_or_else(|e| panic!("llc_ddr seed {seed}: {e}"));
        assert_completes_as_the_reference(&sys, 50_000, 4, &format!("llc_ddr seed {seed}"));
    }
}
