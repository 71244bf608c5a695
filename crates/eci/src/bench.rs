//! `ccsim bench coherent`: how fast the coherent Enzian slice simulates, and
//! how its memory grows.
//!
//! * **Speed.** Sequential 128 B reads from the core through the ECI link
//!   and the directory controller (which executes the generated table) to
//!   DDR, 64 MSHRs, a 16-way LLC of 131,072 lines (so the LLC evicts, as in
//!   a long stream); once with the online SWMR/data-value checks off and
//!   once with them on. Tracing is off (the kernel's fast default), and the
//!   core counts its completed loads without keeping a record of each
//!   ([`speed_run`]). Each run is repeated [`ccsim_kernel::bench::RUNS`]
//!   times, interleaved with the bare loop below, and the fastest counts.
//! * **Memory.** The same reads spread evenly over a 64 MiB and over a
//!   1 GiB region (same number of lines touched, at an odd stride so both
//!   runs fill every LLC set), counted as in the speed runs
//!   ([`counted_run`]: no record per load, so what grows is the
//!   simulator's state). Per-line state lives in sparse maps, so the
//!   resident-memory growth of the two runs should be
//!   about equal: it follows the lines touched, never the address space.
//!   Growth is the `VmRSS` delta from `/proc/self/status` around building
//!   and running each system. The memory runs come first (before the speed
//!   runs free anything the allocator could reuse) and both systems are
//!   kept alive until both are measured, so neither reuses the other's
//!   freed pages.
//! * **The event loop's own ceiling.** The kernel benchmark's bare
//!   binary-heap loop ([`ccsim_kernel::bench`]: push and pop, no model, no
//!   kernel) runs in the same process; its events per second over this
//!   run's events per transaction is what a simulator could reach at this
//!   event granularity if every model and the kernel cost nothing.
//!
//! ```
//! let r = ccsim_eci::bench::coherent_bench(2_000, 1_000).unwrap();
//! assert_eq!(r.reads, 2_000);
//! assert!(r.transactions_per_sec > 0.0 && r.events_per_transaction > 1.0);
//! assert_eq!(r.memory.len(), 2);
//! ```

use std::sync::Arc;
use std::time::Instant;

use ccsim_kernel::prelude::*;
use serde::Serialize;

use super::cpu::CpuOp;
use super::system::{CoherentParams, CoherentSystem, HomeMemory};
use ccsim_coherence::Tables;

/// Events of the bare-loop measurement (about 0.4 s on the reference
/// machine).
const BARE_LOOP_EVENTS: u64 = 4_000_000;

/// Bytes per cache line (ECI).
const LINE_BYTES: u64 = 128;

/// Issue 4's speed target: simulated coherent transactions per wall-clock
/// second, checks off.
pub const SPEED_TARGET_PER_SEC: f64 = 2_000_000.0;

/// One memory run: `lines` reads spread over `region_bytes`.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryRun {
    /// Size of the address range the reads cover.
    pub region_bytes: u64,
    /// Distinct lines read.
    pub lines: u64,
    /// Resident-memory growth while building and running the system
    /// (`None` where `/proc/self/status` is not readable).
    pub rss_delta_bytes: Option<u64>,
}

/// What [`coherent_bench`] measured.
#[derive(Debug, Clone, Serialize)]
pub struct CoherentBenchReport {
    /// Sequential reads per speed run.
    pub reads: u64,
    /// Runs of each timed measurement ([`ccsim_kernel::bench::RUNS`]).
    pub runs: usize,
    /// Wall-clock seconds with checks off, the fastest of
    /// [`ccsim_kernel::bench::RUNS`].
    pub seconds: f64,
    /// Completed reads (coherent transactions) per second, checks off.
    pub transactions_per_sec: f64,
    /// Kernel events per second, checks off.
    pub events_per_sec: f64,
    /// Kernel events per transaction.
    pub events_per_transaction: f64,
    /// Wall-clock seconds with the online checks on, the fastest of
    /// [`ccsim_kernel::bench::RUNS`].
    pub checked_seconds: f64,
    /// Transactions per second with the online checks on.
    pub checked_transactions_per_sec: f64,
    /// The speed target ([`SPEED_TARGET_PER_SEC`]), reported with the
    /// figure so a reader sees how far off it is.
    pub speed_target_per_sec: f64,
    /// Whether `transactions_per_sec` reaches the target in this run.
    pub speed_target_met: bool,
    /// Events per second of the bare binary-heap loop (the kernel
    /// benchmark's baseline: no model, no kernel), measured in this run,
    /// the fastest of [`ccsim_kernel::bench::RUNS`] interleaved with the
    /// speed runs.
    pub bare_loop_events_per_sec: f64,
    /// `bare_loop_events_per_sec / events_per_transaction`: transactions
    /// per second at this many events per transaction with models and
    /// kernel free, the ceiling of any event loop on this machine.
    pub bare_loop_ceiling_per_sec: f64,
    /// `transactions_per_sec / bare_loop_ceiling_per_sec`.
    pub ceiling_ratio: f64,
    /// [`ccsim_kernel::bench::CEILING_RATIO_GOAL`], reported with the figure.
    pub ceiling_ratio_goal: f64,
    /// [`ccsim_kernel::bench::INSTRUCTIONS_PER_TRANSACTION_GOAL`]: the
    /// instructions are counted by `ccsim bench coherent --instructions`
    /// (callgrind), not by this run.
    pub instructions_per_transaction_goal: f64,
    /// The 64 MiB and the 1 GiB run, in that order.
    pub memory: Vec<MemoryRun>,
    /// `rss_delta_bytes` of the 1 GiB run over that of the 64 MiB run
    /// (about 1 when memory follows the lines touched).
    pub memory_ratio: Option<f64>,
}

/// Resident set size of this process, from `/proc/self/status`.
fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The stride that spreads `n` reads over `region_lines` lines: as wide as
/// fits, and odd. With the scrambler off the LLC set is the line modulo a
/// power of two, so an even stride would leave sets unused and the two
/// memory runs would hold different amounts of cache (a stride of 2 fills
/// half the sets); an odd stride visits every set in both runs, so they
/// compare like with like. (`stride - 1` of an even stride still fits.)
fn odd_stride(region_lines: u64, n: u64) -> u64 {
    let widest = (region_lines / n).max(1);
    if widest % 2 == 0 {
        widest - 1
    } else {
        widest
    }
}

/// The benchmark's system parameters: 64 MSHRs, a 16-way LLC of 131,072
/// lines, the DC's online checks on or off.
pub fn bench_params(tables: &Arc<Tables>, checks: bool) -> CoherentParams {
    CoherentParams {
        cpu: Params::new()
            .with("mshrs", ParamValue::Int(64), "bench")
            .with("llc_lines", ParamValue::Int(131072), "bench")
            .with("llc_ways", ParamValue::Int(16), "bench"),
        dc: Params::new().with("checks", ParamValue::Bool(checks), "bench"),
        tables: Some(tables.clone()),
        ..Default::default()
    }
}

/// Builds the benchmark's system (see the module docs) with the core
/// loading `lines` in order, and runs it to the end, every completed load
/// kept in `cpu().completed`. Also what the `coherent_mem` example runs
/// under valgrind.
pub fn run_loads(
    tables: &Arc<Tables>,
    checks: bool,
    lines: impl Iterator<Item = u64>,
) -> Result<CoherentSystem, String> {
    let mut sys = build_loads(tables, checks, lines)?;
    sys.run()?;
    Ok(sys)
}

/// The speed run: `reads` sequential loads, counted ([`counted_run`]).
/// Also what the `coherent_prof` example runs under valgrind.
pub fn speed_run(tables: &Arc<Tables>, checks: bool, reads: u64) -> Result<CoherentSystem, String> {
    counted_run(tables, checks, 0..reads)
}

/// Loads `lines` as [`run_loads`], but the CPU only counts its completed
/// loads (`keep_completed` off), as a long run that needs its statistics
/// would: a record holds the line's 128 bytes, so keeping 200,000 of them
/// writes 35 MB of fresh memory (a page fault every 23 loads), memory that
/// grows with the loads run, not with the lines the simulator tracks.
/// What the bench's speed and memory runs run. Errors if a load did not
/// complete.
pub fn counted_run(
    tables: &Arc<Tables>,
    checks: bool,
    lines: impl Iterator<Item = u64>,
) -> Result<CoherentSystem, String> {
    let mut loads = 0u64;
    let mut sys = build_loads(tables, checks, lines.inspect(|_| loads += 1))?;
    sys.cpu_mut().keep_completed = false;
    sys.run()?;
    let done = sys.cpu().ops_completed() as u64;
    if done != loads {
        return Err(format!("{done} of {loads} reads completed"));
    }
    Ok(sys)
}

fn build_loads(
    tables: &Arc<Tables>,
    checks: bool,
    lines: impl Iterator<Item = u64>,
) -> Result<CoherentSystem, String> {
    let program = lines.map(|line| CpuOp::Load { line }).collect();
    CoherentSystem::build_with(
        &bench_params(tables, checks),
        HomeMemory::Ddr,
        program,
        Vec::new(),
        1,
        TraceMode::Off,
    )
}

/// Runs the benchmark: `reads` sequential reads with checks off and on, and
/// `memory_lines` reads over 64 MiB and over 1 GiB. Errors name the run
/// that failed.
pub fn coherent_bench(reads: u64, memory_lines: u64) -> Result<CoherentBenchReport, String> {
    if reads == 0 || memory_lines == 0 {
        return Err("coherent bench: reads and memory lines must be at least 1".into());
    }
    let tables = Tables::eci_dc()?;
    let speed = |checks: bool| -> Result<(f64, u64), String> {
        let t = Instant::now();
        let sys = speed_run(&tables, checks, reads)
            .map_err(|e| format!("coherent bench, sequential reads (checks {checks}): {e}"))?;
        let s = t.elapsed().as_secs_f64().max(1e-9);
        Ok((s, sys.sim.events_processed()))
    };

    let mut memory = Vec::new();
    let mut alive = Vec::new();
    for region_bytes in [64u64 << 20, 1u64 << 30] {
        let region_lines = region_bytes / LINE_BYTES;
        let n = memory_lines.min(region_lines);
        let stride = odd_stride(region_lines, n);
        let before = rss_bytes();
        let sys = counted_run(&tables, false, (0..n).map(|i| i * stride))
            .map_err(|e| format!("coherent bench, {region_bytes}-byte region: {e}"))?;
        let after = rss_bytes();
        alive.push(sys);
        memory.push(MemoryRun {
            region_bytes,
            lines: n,
            rss_delta_bytes: before.zip(after).map(|(b, a)| a.saturating_sub(b)),
        });
    }
    drop(alive);

    let best = ccsim_kernel::bench::best_of_runs(speed, BARE_LOOP_EVENTS)?;
    let (seconds, events, checked_seconds) = (best.seconds, best.events, best.checked_seconds);
    let bare_loop_events_per_sec = best.bare_loop_events_per_sec;
    let events_per_transaction = events as f64 / reads as f64;
    let memory_ratio = match (memory[0].rss_delta_bytes, memory[1].rss_delta_bytes) {
        (Some(small), Some(big)) if small > 0 => Some(big as f64 / small as f64),
        _ => None,
    };
    Ok(CoherentBenchReport {
        reads,
        runs: ccsim_kernel::bench::RUNS,
        seconds,
        transactions_per_sec: reads as f64 / seconds,
        events_per_sec: events as f64 / seconds,
        events_per_transaction,
        checked_seconds,
        checked_transactions_per_sec: reads as f64 / checked_seconds,
        speed_target_per_sec: SPEED_TARGET_PER_SEC,
        speed_target_met: reads as f64 / seconds >= SPEED_TARGET_PER_SEC,
        bare_loop_events_per_sec,
        bare_loop_ceiling_per_sec: bare_loop_events_per_sec / events_per_transaction,
        ceiling_ratio: reads as f64 / seconds / (bare_loop_events_per_sec / events_per_transaction),
        ceiling_ratio_goal: ccsim_kernel::bench::CEILING_RATIO_GOAL,
        instructions_per_transaction_goal: ccsim_kernel::bench::INSTRUCTIONS_PER_TRANSACTION_GOAL,
        memory,
        memory_ratio,
    })
}

#[cfg(test)]
mod tests {
    use super::odd_stride;

    #[test]
    fn memory_runs_use_the_widest_odd_stride_that_fits() {
        // The default 100 k lines: 524,288 / 100,000 = 5 and
        // 8,388,608 / 100,000 = 83 are odd already.
        assert_eq!(odd_stride(524_288, 100_000), 5);
        assert_eq!(odd_stride(8_388_608, 100_000), 83);
        // 200 k lines over 64 MiB: 2 would fill half the LLC's sets.
        assert_eq!(odd_stride(524_288, 200_000), 1);
        assert_eq!(odd_stride(8_388_608, 200_000), 41);
        // The reads always stay inside the region, and the stride is never 0.
        for (region, n) in [(524_288, 524_288), (524_288, 262_144), (64, 3), (1, 1)] {
            let s = odd_stride(region, n);
            assert!(s % 2 == 1 && (n - 1) * s < region, "{region} {n} -> {s}");
        }
    }
}
