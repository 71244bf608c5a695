//! The livelock between a core's store and the DC application's cleans and
//! clean-invalidates (BENCHMARKS.md, found by the random tester on
//! `dc_bram`): with the DC's contended-grant hold off, the store re-requests
//! its line again and again, each grant given back unused (`IE_D_I`), until
//! the watchdog stops the run; with the platform's hold
//! (`dc.contended_grant_hold_ns`) every seed finishes, checked against the
//! sequential reference. The mechanism is explained in
//! `ccsim_eci::dc`'s module docs.

use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_eci::system::CoherentSystem;
use ccsim_kernel::prelude::*;
use ccsim_platform::{EciOptions, Platform};

/// The random tester's `dc_bram` run of `ops` core operations on 4 lines
/// (one application sequence per ten core operations), seed `seed`, with
/// the DC's hold set to `hold_ns` (None: the platform's).
fn random_run(
    system: &str,
    seed: u64,
    ops: u64,
    hold_ns: Option<f64>,
) -> (CoherentSystem, Result<(), String>) {
    let enzian = Platform::load("enzian").unwrap();
    let mut rng = SimRng::for_path(seed, "random_test.eci");
    let program = CpuOp::random_program(&mut rng, ops, 4);
    let app = AppOp::random_sequences(&mut rng, ops.div_ceil(10), 4);
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
        let cpu = sys.cpu();
        assert_eq!(cpu.completed.len(), 200_000, "{system} seed {seed}");
        let reference = sys.sequential_reference();
        for line in 0..4 {
            assert_eq!(
                sys.line_value(line),
                reference
                    .get(&line)
                    .copied()
                    .unwrap_or_else(|| ccsim_coherence::initial_line(line)),
                "{system} seed {seed}: line {line}"
            );
        }
    }
}
