//! `ccsim bench coherent --platform cohet`: how fast the CXL.cache system
//! simulates, as a ratio to the event loop's own ceiling in the same run.
//!
//! * **The run.** Cohet's `[systems.cxl]` (platforms/cohet.toml): the
//!   device's DCOH loads `loads` sequential 64 B lines of host memory that
//!   hit in the LLC home, up to [`WINDOW`] in flight, through the verified
//!   cxl-cache table (RdShared, GO-S and the data over the CXL link), once
//!   with the online SWMR/data-value checks off and once with them on.
//!   Tracing is off. A transaction is one load from issue to use.
//! * **The ceiling.** The kernel benchmark's bare binary-heap loop
//!   ([`ccsim_kernel::bench`]: push and pop, no model, no kernel) runs in
//!   the same process; its events per second over this run's events per
//!   transaction is what an event loop at this granularity would reach if
//!   every model and the kernel cost nothing. Both figures come from one
//!   run, so the ratio does not depend on how fast the machine is that day.
//!
//! ```
//! let r = ccsim_experiments::bench::cxl_coherent_bench(2_000).unwrap();
//! assert_eq!(r.loads, 2_000);
//! assert!(r.transactions_per_sec > 0.0 && r.events_per_transaction > 1.0);
//! assert!(r.ceiling_ratio > 0.0);
//! ```

use std::time::Instant;

use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, Platform};
use serde::Serialize;

use crate::program_run::{no_violation, role_agent};

/// Loads in flight at once (the DCOH's program window): enough to keep
/// the CXL link and the home busy, as the bandwidth runs of Fig. 15 do.
pub const WINDOW: usize = 64;

/// Events of the bare-loop measurement (about 0.4 s on the reference
/// machine).
const BARE_LOOP_EVENTS: u64 = 4_000_000;

pub use ccsim_kernel::bench::CEILING_RATIO_GOAL;

/// What [`cxl_coherent_bench`] measured.
#[derive(Debug, Clone, Serialize)]
pub struct CxlBenchReport {
    /// Platform the loads ran on.
    pub platform: String,
    /// Its system (`[systems.<name>]`).
    pub system: String,
    /// Loads per run.
    pub loads: u64,
    /// Runs of each timed measurement ([`ccsim_kernel::bench::RUNS`]).
    pub runs: usize,
    /// Wall-clock seconds with the checks off (build and run), the fastest
    /// of the runs.
    pub seconds: f64,
    /// Completed loads per second, checks off.
    pub transactions_per_sec: f64,
    /// Kernel events per second, checks off.
    pub events_per_sec: f64,
    /// Kernel events per load.
    pub events_per_transaction: f64,
    /// Loads per second with the online checks on (the fastest run).
    pub checked_transactions_per_sec: f64,
    /// Events per second of the bare binary-heap loop, this run (the
    /// fastest of the runs, interleaved with the speed runs).
    pub bare_loop_events_per_sec: f64,
    /// `bare_loop_events_per_sec / events_per_transaction`.
    pub bare_loop_ceiling_per_sec: f64,
    /// `transactions_per_sec / bare_loop_ceiling_per_sec`.
    pub ceiling_ratio: f64,
    /// [`CEILING_RATIO_GOAL`], reported with the figure.
    pub ceiling_ratio_goal: f64,
    /// [`ccsim_kernel::bench::INSTRUCTIONS_PER_TRANSACTION_GOAL`]: the
    /// instructions are counted by `ccsim bench coherent --instructions`
    /// (callgrind), not by this run.
    pub instructions_per_transaction_goal: f64,
}

/// Builds `system` of `platform` and runs its device's `loads` sequential
/// LLC-hit loads, [`WINDOW`] in flight; returns the wall-clock seconds
/// (build and run) and the kernel events. Also what the `cxl_bench`
/// example runs alone under a profiler.
pub fn run_cxl_loads(
    platform: &Platform,
    system: &str,
    loads: u64,
    checks: bool,
) -> Result<(f64, u64), String> {
    let what = |e: String| {
        format!(
            "coherent bench, {} {system} (checks {checks}): {e}",
            platform.name
        )
    };
    let t = Instant::now();
    let mut s = platform
        .build(
            system,
            BuildOptions {
                seed: 0,
                trace: TraceMode::Off,
                checks,
                tester: None,
            },
        )
        .map_err(|e| what(e.to_string()))?;
    let device = role_agent(&s, "device", system).map_err(|e| what(e.to_string()))?;
    let home = role_agent(&s, "home", system).map_err(|e| what(e.to_string()))?;
    let ops: Vec<(u64, &str)> = (0..loads).map(|l| (l, "load")).collect();
    s.agent_mut(home).warm(0..loads);
    s.agent_mut(device)
        .set_program(&ops, WINDOW)
        .map_err(what)?;
    s.sim.run();
    let seconds = t.elapsed().as_secs_f64().max(1e-9);
    no_violation(&s).map_err(|e| what(e.to_string()))?;
    let done = s
        .agent(device)
        .program_times()
        .iter()
        .filter(|t| t.1 != 0)
        .count() as u64;
    if done != loads {
        return Err(what(format!("{done} of {loads} loads completed")));
    }
    Ok((seconds, s.sim.events_processed()))
}

/// The speed run alone, checks off, no timing: `transactions` sequential
/// reads through the Enzian DC (`platform` "enzian") or LLC-hit CXL.cache
/// loads of Cohet's device ("cohet"). What `ccsim bench coherent
/// --instructions` runs under callgrind twice, at two sizes, so that the
/// difference of the two counts is the instructions of the added
/// transactions alone (without the interpreter, the set-up and the tables'
/// generation). Returns the kernel events.
pub fn speed_run(platform: &str, transactions: u64) -> Result<u64, String> {
    match platform {
        "enzian" => {
            let tables = ccsim_coherence::Tables::eci_dc()?;
            let sys = ccsim_eci::bench::speed_run(&tables, false, transactions)?;
            Ok(sys.sim.events_processed())
        }
        "cohet" => {
            let p = Platform::load(platform).map_err(|e| e.to_string())?;
            Ok(run_cxl_loads(&p, "cxl", transactions, false)?.1)
        }
        other => Err(format!(
            "coherent bench: unknown platform {other:?} (known: enzian, cohet)"
        )),
    }
}

/// Runs `loads` LLC-hit loads of the CXL device (checks off, then on) and
/// the bare loop, each [`ccsim_kernel::bench::RUNS`] times; errors name the
/// run that failed.
pub fn cxl_coherent_bench(loads: u64) -> Result<CxlBenchReport, String> {
    if loads == 0 {
        return Err("coherent bench: loads must be at least 1".into());
    }
    let (platform_name, system) = ("cohet", "cxl");
    let platform = Platform::load(platform_name).map_err(|e| e.to_string())?;
    let run = |checks: bool| run_cxl_loads(&platform, system, loads, checks);
    let best = ccsim_kernel::bench::best_of_runs(run, BARE_LOOP_EVENTS)?;
    let (seconds, events, checked_seconds) = (best.seconds, best.events, best.checked_seconds);
    let bare = best.bare_loop_events_per_sec;
    let events_per_transaction = events as f64 / loads as f64;
    let ceiling = bare / events_per_transaction;
    let per_sec = loads as f64 / seconds;
    Ok(CxlBenchReport {
        platform: platform_name.into(),
        system: system.into(),
        loads,
        runs: ccsim_kernel::bench::RUNS,
        seconds,
        transactions_per_sec: per_sec,
        events_per_sec: events as f64 / seconds,
        events_per_transaction,
        checked_transactions_per_sec: loads as f64 / checked_seconds,
        bare_loop_events_per_sec: bare,
        bare_loop_ceiling_per_sec: ceiling,
        ceiling_ratio: per_sec / ceiling,
        ceiling_ratio_goal: CEILING_RATIO_GOAL,
        instructions_per_transaction_goal: ccsim_kernel::bench::INSTRUCTIONS_PER_TRANSACTION_GOAL,
    })
}
