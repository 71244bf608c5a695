//! `shared_table` — CCKit §5.4, Fig. 7: concurrent access to a shared
//! table, a CPU scanner against a contending thread on the table's home.
//!
//! ```text
//!  scanner (CPU core 0, the socket without the table)
//!     for pass in 0..=passes: for row in 0..rows: atomic row.counter += 1
//!          │  LLC misses / upgrades ──ECI (CPU–FPGA) or CCPI (CPU–CPU)──►
//!          ▼
//!  home: DC running eci-dc (DC+BRAM on the FPGA, or the ThunderX-1 home
//!        with its DDR) ── application port ── contending thread:
//!     loop over rows 0..k (k = x · rows), starting at a seeded row:
//!        lock(row)   LCL_LOCK: clean-invalidate, the CPU's copy written back,
//!                    CPU requests for the row wait from here on
//!        read(row)   the row from the home's memory (now the latest copy)
//!        write(row)  counter + 1, `contender_rmw_ns` after the lock's ack
//!        unlock(row) LCL_UNLOCK: waiting CPU requests proceed
//! ```
//!
//! The swept x is `contended_fraction`, the share of the table (a prefix of
//! it) the contending thread increments. `config` picks the home:
//! `dc_bram` is the CPU–FPGA case (CCKit's DC with the table in BRAM over
//! ECI), `llc_ddr` the CPU–CPU baseline on the two-socket ThunderX-1 (the
//! table and the contending thread on the home node, the scanner on the
//! other, over CCPI). Both homes execute the same generated `eci-dc`
//! table: the home socket's own thread takes a line from the remote socket
//! the way the DC's application does, so the two series differ only where
//! the platforms differ (link latency and bandwidth, the home's clock and
//! pipeline, the memory behind it) — which is the paper's explanation of
//! the gap ("the latency that CCKit adds to migrating a cache line across
//! the interconnect").
//!
//! **The scanner.** The paper's scanner increments a counter per row; with
//! a contending writer, a plain load and store could lose the other
//! thread's increment, so the scanner uses an atomic fetch-add (ARMv8.0's
//! LDXR/STXR loop, modelled by [`CpuOp::Atomic`] as one read-modify-write
//! at the LLC while it holds the line writable). An atomic blocks the
//! core's later issue until it completes, so the scan is serial: a row
//! still in the LLC costs a hit, a row the contending thread took costs a
//! miss through the home (and waits for the unlock if the row is locked).
//! "We warm the L2 cache": pass 0 loads every row into the LLC (the table,
//! 8 MiB, fits the 16 MiB LLC); the following `passes` are measured.
//!
//! **The contending thread** runs from a seeded start (its first row and
//! a start delay below 1 µs are drawn per iteration: the phase between the
//! two threads, the only thing that varies between iterations) until the
//! scanner's last increment completes, one row at a time.
//!
//! **Metrics.** `mrps`: the scanner's rows per second over the measured
//! passes (first to last measured completion), in millions, the mean over
//! `iterations` seeded runs (CCKit: 10); `mrps_std` their (population)
//! standard deviation.
//!
//! **Checks** (each run): every row's counter ends at its initial value
//! plus the scanner's increments (`passes + 1`) plus the contending
//! thread's increments of that row; the application port reports no
//! errors; the online SWMR/data-value checker runs on every transition.
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let p = Params::new()
//!     .with("rows", ParamValue::Int(1024), "doc: a small table")
//!     .with("iterations", ParamValue::Int(2), "doc");
//! let r = ccsim_experiments::run_point("shared_table", &enzian, "contended_fraction", 0.5, &p, 1, false).unwrap();
//! // Half of 1,024 rows contended: the contending thread made increments,
//! // and every counter was checked against both threads' counts.
//! assert!(r.stats["table.contender_increments"] > 0.0);
//! assert!(r.metrics["mrps"] > 0.0);
//! ```

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use ccsim_coherence::{initial_line, Line};
use ccsim_eci::cpu::{AtomicOp, CpuOp};
use ccsim_eci::dc::AppOp;
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use crate::{sweeps, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `shared_table`.
pub static SHARED_TABLE: WorkloadInfo = WorkloadInfo {
    name: "shared_table",
    description: "CCKit §5.4, Fig. 7: a CPU thread scans a table of rows x 128 B homed on the other socket, atomically incrementing a counter per row, while a thread on the home increments the first x = contended_fraction of the rows with the DC's locking clean-invalidate (lock, read-modify-write, unlock); CPU-FPGA (DC+BRAM over ECI) or CPU-CPU (ThunderX-1 home over CCPI), both executing eci-dc. Scanner throughput in million rows/s, mean and standard deviation over seeded iterations.",
    params: &[
        ParamSpec { name: "config", kind: ParamKind::Enum(&["dc_bram", "llc_ddr"]), default: ParamDefault::Str("dc_bram"), unit: "", range: ParamRange::ANY, from: "CCKit §5.4: the table homed in FPGA BRAM (CPU-FPGA); llc_ddr is the 2-socket CPU-CPU baseline", description: "The table's home: the FPGA DC with BRAM over ECI, or the other ThunderX-1 socket with its DDR over CCPI." },
        ParamSpec { name: "rows", kind: ParamKind::Int, default: ParamDefault::Int(65536), unit: "rows", range: ParamRange::between(1.0, 131072.0), from: "CCKit §5.4: 'The table has a size of 8 MiB (65536 rows)', each row padded to the 128 B line", description: "Rows of the table, one 128 B line each (at most the 16 MiB LLC)." },
        ParamSpec { name: "passes", kind: ParamKind::Int, default: ParamDefault::Int(2), unit: "scans", range: ParamRange::between(1.0, 1000.0), from: "assumed: the paper runs 1 s; two full scans after the warm-up pass reach the steady state", description: "Measured full scans after the warm-up scan." },
        ParamSpec { name: "iterations", kind: ParamKind::Int, default: ParamDefault::Int(10), unit: "runs", range: ParamRange::between(1.0, 1000.0), from: "CCKit §5.4: 'we report average and standard deviation for 10 iterations'", description: "Seeded runs averaged per point." },
        ParamSpec { name: "contender_rmw_ns", kind: ParamKind::Float, default: ParamDefault::Float(12.4), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: one BRAM read and one line write (dc_bram latency_ns 9.3 + line_ns 3.1); a home core's increment hitting its own LLC is about as fast (llc.hit_ns 10)", description: "The contending thread's read-modify-write of a locked row: from the lock's completion to the write." },
    ],
    metrics: &[
        MetricSpec { name: "mrps", unit: "1e6 rows/s", description: "The scanner's throughput over the measured scans, mean over the iterations." },
        MetricSpec { name: "mrps_std", unit: "1e6 rows/s", description: "Standard deviation of the scanner's throughput over the iterations." },
    ],
    check: None,
    run,
};

/// The counter: word 0 of a row.
const COUNTER_WORD: usize = 0;
/// The contending thread starts within this of the scanner (seeded).
const MAX_START_DELAY: Tick = US;

fn counter(line: &Line) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&line[COUNTER_WORD * 8..COUNTER_WORD * 8 + 8]);
    u64::from_le_bytes(w)
}

fn with_counter(mut line: Line, value: u64) -> Line {
    line[COUNTER_WORD * 8..COUNTER_WORD * 8 + 8].copy_from_slice(&value.to_le_bytes());
    line
}

/// The contending thread on the home: one row at a time, lock → RMW →
/// unlock, cycling over rows `0..region` from `first`.
struct Contender {
    region: u64,
    /// The row whose lock or unlock is outstanding, and which.
    current: u64,
    locking: bool,
    rmw: Tick,
    /// Increments made, per row of the region.
    increments: Vec<u64>,
    /// Set when the scanner's last increment completed.
    stop: Rc<Cell<bool>>,
}

impl Contender {
    /// The ops answering a completion (`LCL_ACK`) of `line`.
    fn on_ack(
        &mut self,
        now: Tick,
        line: u64,
        mem: &ccsim_coherence::memory::LineStore,
    ) -> Vec<AppOp> {
        if line != self.current {
            return Vec::new();
        }
        if self.locking {
            // Locked: the home's memory holds the latest copy and the CPU
            // cannot take the row until the unlock.
            let row = mem.read(line);
            let new = with_counter(row, counter(&row).wrapping_add(1));
            self.increments[line as usize] += 1;
            self.locking = false;
            vec![
                AppOp::new("read", line),
                AppOp::new("write", line).with_data(new).at(now + self.rmw),
                AppOp::new("unlock", line),
            ]
        } else if self.stop.get() {
            Vec::new()
        } else {
            self.current = (line + 1) % self.region;
            self.locking = true;
            vec![AppOp::new("lock", self.current)]
        }
    }
}

/// One seeded run: the scanner's throughput (Mrps), the contending
/// thread's increments, and the checker's transition count.
struct Iteration {
    mrps: f64,
    contender_increments: u64,
    /// The measured increments that found their row migrated (the
    /// contending thread incremented it since the scanner's previous
    /// visit), and the sum of their latencies and of the others' (ps).
    migrated: u64,
    migrated_ps: f64,
    kept_ps: f64,
    transitions: f64,
    /// The run's statistics and trace.
    result: PointResult,
}

#[allow(clippy::too_many_arguments)]
fn iteration(
    point: &Point<'_>,
    config: &str,
    rows: u64,
    passes: u64,
    region: u64,
    rmw: Tick,
    seed: u64,
) -> Result<Iteration, RunError> {
    let fail = |e: String| werr(format!("shared_table ({config}, seed {seed}): {e}"));
    let mut rng = SimRng::for_path(seed, "shared_table/contender");
    let opts = EciOptions::new(seed, crate::trace_mode(point.trace));
    let mut sys = point
        .platform
        .coherent_system(config, &opts)
        .map_err(RunError::Config)?;
    let scans = passes + 1;
    let program: Vec<CpuOp> = (0..scans)
        .flat_map(|_| {
            (0..rows).map(|line| CpuOp::Atomic {
                line,
                word: COUNTER_WORD as u8,
                op: AtomicOp::FetchAdd(1),
            })
        })
        .collect();
    let total = program.len();
    sys.set_programs(vec![program])
        .map_err(|e| werr(format!("platform {}: {e}", point.platform.name)))?;
    let stop = Rc::new(Cell::new(false));
    let done = stop.clone();
    let mut completed = 0usize;
    sys.cpu_mut().set_driver(Box::new(move |_| {
        completed += 1;
        if completed == total {
            done.set(true);
        }
        Vec::new()
    }));
    let contender = Rc::new(RefCell::new(Contender {
        region: region.max(1),
        current: 0,
        locking: true,
        rmw,
        increments: vec![0; region as usize],
        stop,
    }));
    if region > 0 {
        let first = rng.below(region);
        let delay = rng.below(MAX_START_DELAY);
        contender.borrow_mut().current = first;
        sys.dc_mut()
            .push_app_ops([AppOp::new("lock", first).at(delay)]);
        let c = contender.clone();
        sys.dc_mut()
            .set_device(Box::new(move |now, msg, line, mem| {
                if msg == "LCL_ACK" {
                    c.borrow_mut().on_ack(now, line, mem)
                } else {
                    Vec::new()
                }
            }));
    }
    sys.run().map_err(fail)?;
    if let Some(e) = sys.dc().app_errors.first() {
        return Err(fail(format!("the application port reported: {e}")));
    }
    let cpu = sys.cpu();
    if cpu.completed.len() != total {
        return Err(fail(format!(
            "{} of {total} scanner increments completed",
            cpu.completed.len()
        )));
    }
    // Every counter: initial + the scanner's increments + the contending
    // thread's.
    let c = contender.borrow();
    for line in 0..rows {
        let theirs = c.increments.get(line as usize).copied().unwrap_or(0);
        let want = counter(&initial_line(line))
            .wrapping_add(scans)
            .wrapping_add(theirs);
        let got = counter(&sys.line_value(line));
        if got != want {
            return Err(fail(format!(
                "row {line}: the counter is {got:#x}, expected {want:#x} (initial + {scans} scanner + {theirs} contender increments)"
            )));
        }
    }
    // Atomics complete in program order (each blocks the next issue): the
    // warm-up scan ends at completion `rows - 1`.
    let end_of = |i: usize| cpu.completed[i].issued + cpu.completed[i].latency_ps;
    let (start, end) = (end_of(rows as usize - 1), end_of(total - 1));
    if end <= start {
        return Err(fail("the measured scans took no time".to_string()));
    }
    let mrps = (passes * rows) as f64 / ((end - start) as f64 / 1e12) / 1e6;
    // A measured increment found its row migrated when the counter it read
    // is not the one the scanner left on its previous visit: the contending
    // thread took the line in between, so this increment paid a migration
    // back across the interconnect (and any wait for the row's unlock).
    let mut old_of = vec![None; total];
    for done in &cpu.completed {
        old_of[done.op] = Some((done.old, done.latency_ps));
    }
    let (mut migrated, mut migrated_ps, mut kept_ps) = (0u64, 0.0, 0.0);
    for i in rows as usize..total {
        let (Some((now, latency)), Some((before, _))) = (old_of[i], old_of[i - rows as usize])
        else {
            return Err(fail(format!("scanner increment {i} did not complete")));
        };
        if now != before.map(|v| v.wrapping_add(1)) {
            migrated += 1;
            migrated_ps += latency as f64;
        } else {
            kept_ps += latency as f64;
        }
    }
    let transitions = sys.checker.borrow().checked as f64;
    Ok(Iteration {
        mrps,
        migrated,
        migrated_ps,
        kept_ps,
        contender_increments: c.increments.iter().sum(),
        transitions,
        result: crate::sim_result(&sys.sim, BTreeMap::new(), crate::trace_mode(point.trace)),
    })
}

/// Runs one point of `shared_table`: `iterations` seeded runs.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (params, x) = (point.params, point.x);
    sweeps("shared_table", "contended_fraction", point.x_name)?;
    if !(0.0..=1.0).contains(&x) {
        return Err(werr(format!(
            "contended_fraction = {x}: must lie in [0, 1] (the share of the table the contending thread increments)"
        )));
    }
    let config = params.str("config").to_string();
    let rows = params.int("rows") as u64;
    let passes = params.int("passes") as u64;
    let iterations = params.int("iterations") as u64;
    let rmw = (params.float("contender_rmw_ns") * 1000.0).round() as Tick;
    let region = (x * rows as f64).round() as u64;
    let mut seeds = SimRng::for_path(point.seed, "shared_table/iterations");
    let mut runs = Vec::new();
    for _ in 0..iterations {
        runs.push(iteration(
            point,
            &config,
            rows,
            passes,
            region,
            rmw,
            seeds.next_u64(),
        )?);
    }
    let n = runs.len() as f64;
    let mean = runs.iter().map(|r| r.mrps).sum::<f64>() / n;
    let var = runs.iter().map(|r| (r.mrps - mean).powi(2)).sum::<f64>() / n;
    let mut metrics = BTreeMap::new();
    metrics.insert("mrps".to_string(), mean);
    metrics.insert("mrps_std".to_string(), var.sqrt());
    // The first iteration's statistics and trace stand for the point.
    let events: f64 = runs.iter().map(|r| r.result.stats["sim.events"]).sum();
    let transitions: f64 = runs.iter().map(|r| r.transitions).sum();
    let increments: f64 = runs.iter().map(|r| r.contender_increments as f64).sum();
    let mrps: Vec<f64> = runs.iter().map(|r| r.mrps).collect();
    let measured = (iterations * passes * rows) as f64;
    let migrated: f64 = runs.iter().map(|r| r.migrated as f64).sum();
    let migrated_ps: f64 = runs.iter().map(|r| r.migrated_ps).sum();
    let kept_ps: f64 = runs.iter().map(|r| r.kept_ps).sum();
    let mut result = runs.swap_remove(0).result;
    result.metrics = metrics;
    let stats = &mut result.stats;
    for (i, v) in mrps.iter().enumerate() {
        stats.insert(format!("table.iteration{i}.mrps"), *v);
    }
    stats.insert("table.rows".to_string(), rows as f64);
    stats.insert("table.contended_rows".to_string(), region as f64);
    stats.insert("table.contender_increments".to_string(), increments);
    // What a migration costs on this home (the paper's explanation of the
    // gap between the curves) and how many of the scanner's rows pay one.
    stats.insert(
        "table.migrated_pct".to_string(),
        100.0 * migrated / measured.max(1.0),
    );
    if migrated > 0.0 {
        stats.insert(
            "table.migration_ns".to_string(),
            migrated_ps / migrated / 1000.0,
        );
    }
    if measured > migrated {
        stats.insert(
            "table.kept_row_ns".to_string(),
            kept_ps / (measured - migrated) / 1000.0,
        );
    }
    stats.insert("check.transitions".to_string(), transitions);
    stats.insert("sim.events".to_string(), events);
    Ok(result)
}
