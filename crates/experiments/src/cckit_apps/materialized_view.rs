//! `materialized_view` — CCKit §5.6, Fig. 9: view maintenance offloaded to
//! the FPGA as an application-specific coherence protocol on the DC.
//!
//! ```text
//!  CPU core 0, per transaction (x = updates tuples):
//!     store O_CUSTKEY, O_TOTALPRICE into the next tuple slots   (lines taken
//!     exclusive from the DC: RLDX ──ECI──► DC ──AXI──► DDR)
//!     DMB; load SYNC  (commit)  ──ECI──► DC ──AXI_RD(SYNC)──► view operator
//!  view operator (device logic on the DC's application port):
//!     from the table's tail line on: lock (clean-invalidate: the CPU's dirty
//!     line is written back over ECI), read, unlock; stop at the first line
//!     with an empty slot
//!     recompute SELECT O_CUSTKEY, SUM(O_TOTALPRICE) FROM ORDERS
//!               GROUP BY O_CUSTKEY ORDER BY O_CUSTKEY   into the BRAM view
//!     clean-invalidate SYNC (the next commit's load misses again)
//! ```
//!
//! **Data.** The ORDERS rows come from `tpchgen` (the Rust port of TPC-H's
//! dbgen from the Apache DataFusion contributors) at `scale_factor`: the
//! first `base_orders` rows are the base table, the following rows are what
//! the transactions append, in order. A tuple is 16 B — O_CUSTKEY and
//! O_TOTALPRICE (in cents) as little-endian 64-bit integers — eight to a
//! 128 B line, tuple `i` in line `i / 8`, from line 0 of the FPGA's DDR
//! (DC+DDR). The table's lines, and the empty slots after it (zeros: a
//! TPC-H customer key is at least 1, so 0 marks an empty slot), are real
//! bytes in the DC's memory before the run.
//!
//! **Timing.** The line migrations are the DC's (the `eci-dc` table, ECI,
//! the DDR model). The recomputation scans the whole base table at
//! `scan_gibps` (assumed: one 512-bit AXI port at the DC's 322 MHz); the
//! `incremental` what-if (the text's suggested optimisation) updates only
//! the touched aggregates, `bram_update_ns` each. The view is held by the
//! operator (BRAM on the FPGA; DC+DDR has no second coherent range, so the
//! CPU's reads of it are not modelled).
//!
//! **Checks** (every run): after every transaction the operator's view
//! equals a group-by of the rows the generator produced up to that
//! transaction, and the rows the operator read back from the DC's memory
//! are those rows; every trigger is one transaction; the application port
//! reports no errors; the online SWMR/data-value checker runs throughout.
//! `dump` writes each transaction's base rows and view as JSON for an
//! outside SQL engine (the Python tests compare them with DuckDB).
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let p = Params::new()
//!     .with("scale_factor", ParamValue::Float(0.001), "doc")
//!     .with("base_orders", ParamValue::Int(1000), "doc");
//! let r = ccsim_experiments::run_point("materialized_view", &enzian, "updates", 8.0, &p, 1, false).unwrap();
//! assert!(r.metrics["view_us"] > 0.0);
//! assert_eq!(r.stats["view.transactions"], 4.0);
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use ccsim_coherence::memory::LineStore;
use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use crate::{sweeps, werr, whole_number, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `materialized_view`.
pub static MATERIALIZED_VIEW: WorkloadInfo = WorkloadInfo {
    name: "materialized_view",
    description: "CCKit §5.6, Fig. 9: TPC-H ORDERS (tpchgen; O_CUSTKEY, O_TOTALPRICE in cents as 64-bit integers, 8 tuples per 128 B line) in FPGA DRAM behind the DC (DC+DDR); CPU transactions append x = updates tuples each with stores and commit with a load of a synchronization line; the FPGA's view-maintenance operator (device logic on the application port) locks (clean-invalidates) the updated lines, reads them and recomputes SELECT O_CUSTKEY, SUM(O_TOTALPRICE) GROUP BY O_CUSTKEY ORDER BY O_CUSTKEY (or, as a what-if, updates only the touched aggregates).",
    params: &[
        ParamSpec { name: "maintenance", kind: ParamKind::Enum(&["recompute", "incremental"]), default: ParamDefault::Str("recompute"), unit: "", range: ParamRange::ANY, from: "CCKit §5.6: 'the view is recomputed by recalculating all aggregations. This could be optimized by computing only those that need to be modified'", description: "recompute: scan the whole base table per transaction; incremental (what-if): update only the touched aggregates." },
        ParamSpec { name: "scale_factor", kind: ParamKind::Float, default: ParamDefault::Float(0.025), unit: "SF", range: ParamRange::between(0.001, 1.0), from: "assumed: TPC-H SF 0.025 (37,500 orders), room for the largest base table plus the appends", description: "TPC-H scale factor of the generated ORDERS (1,500,000 rows per unit)." },
        ParamSpec { name: "base_orders", kind: ParamKind::Int, default: ParamDefault::Int(15000), unit: "rows", range: ParamRange::between(1.0, 1500000.0), from: "assumed: the ORDERS of TPC-H SF 0.01 (the text names no size); a small table so a run stays short", description: "Rows of the base table before the transactions (the generator's first rows)." },
        ParamSpec { name: "transactions", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "txns", range: ParamRange::between(1.0, 1000.0), from: "assumed: four commits per point; each is checked", description: "Transactions per run; the metrics are their means." },
        ParamSpec { name: "scan_gibps", kind: ParamKind::Float, default: ParamDefault::Float(19.2), unit: "GiB/s", range: ParamRange::at_least(0.001), from: "assumed: the operator streams the base table through one 512-bit AXI port at the DC's 322 MHz (64 B x 322 MHz = 20.6 GB/s = 19.2 GiB/s)", description: "Rate at which the recomputation scans the base table." },
        ParamSpec { name: "bram_update_ns", kind: ParamKind::Float, default: ParamDefault::Float(6.2), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: two cycles at 322 MHz, a read and a write of one BRAM view entry", description: "Incremental what-if: time to update one aggregate." },
        ParamSpec { name: "txn_gap_us", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "us", range: ParamRange::at_least(0.0), from: "assumed: the CPU's think time between commits, longer than any view generation here (the run fails if a commit overtakes the operator)", description: "Time the CPU waits after a commit before the next transaction." },
        ParamSpec { name: "dump", kind: ParamKind::Str, default: ParamDefault::Str(""), unit: "", range: ParamRange::ANY, from: "assumed: for checks against an outside SQL engine", description: "If not empty: a file path; each transaction's base rows and view are written there as JSON." },
    ],
    metrics: &[
        MetricSpec { name: "view_us", unit: "us", description: "View generation time: the commit's read reaching the operator to the view consistent, mean over the transactions." },
        MetricSpec { name: "gibps", unit: "GiB/s", description: "Base-table bytes over the view generation time (the operator's throughput), mean over the transactions." },
        MetricSpec { name: "wb_gibps", unit: "GiB/s", description: "Written-back line bytes over the invalidation phase (trigger to the last unlock), mean over the transactions." },
    ],
    check: None,
    run,
};

/// Bytes of one tuple: O_CUSTKEY and O_TOTALPRICE, 64 bits each.
pub const TUPLE_BYTES: u64 = 16;
/// Tuples in a 128 B line.
pub const TUPLES_PER_LINE: u64 = LINE_BYTES as u64 / TUPLE_BYTES;
/// The synchronization line: beyond any table this workload builds.
pub const SYNC_LINE: u64 = 1 << 24;
/// The most updates a transaction makes.
const MAX_UPDATES: f64 = 4096.0;

/// The first `n` ORDERS rows of TPC-H at `scale_factor` as (O_CUSTKEY,
/// O_TOTALPRICE in cents), from `tpchgen`.
pub fn tpch_orders(scale_factor: f64, n: usize) -> Vec<(i64, i64)> {
    tpchgen::generators::OrderGenerator::new(scale_factor, 1, 1)
        .iter()
        .take(n)
        .map(|o| (o.o_custkey, o.o_totalprice.0))
        .collect()
}

/// `SELECT O_CUSTKEY, SUM(O_TOTALPRICE) ... GROUP BY O_CUSTKEY ORDER BY
/// O_CUSTKEY` over `rows`.
pub fn group_by_custkey(rows: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut view = BTreeMap::new();
    for &(k, p) in rows {
        *view.entry(k).or_insert(0i64) += p;
    }
    view.into_iter().collect()
}

fn word(line: &Line, w: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&line[w * 8..w * 8 + 8]);
    i64::from_le_bytes(b)
}

/// The table's tuples as lines (empty slots zero).
fn table_lines(rows: &[(i64, i64)], lines: u64) -> Vec<Line> {
    let mut out = vec![[0u8; LINE_BYTES]; lines as usize];
    for (i, &(k, p)) in rows.iter().enumerate() {
        let (l, s) = (i / TUPLES_PER_LINE as usize, i % TUPLES_PER_LINE as usize);
        out[l][s * 16..s * 16 + 8].copy_from_slice(&k.to_le_bytes());
        out[l][s * 16 + 8..s * 16 + 16].copy_from_slice(&p.to_le_bytes());
    }
    out
}

/// One maintenance round (a commit).
struct Round {
    trigger: Tick,
    last_unlock: Tick,
    ready: Tick,
    lines: u64,
    tuples: u64,
    view: Vec<(i64, i64)>,
    /// The base table as read back from the DC's memory (recompute, or
    /// when dumping).
    rows: Option<Vec<(i64, i64)>>,
}

/// The view-maintenance operator: device logic on the application port.
struct Operator {
    /// Tuples in the base table.
    tail: u64,
    busy: bool,
    /// The line locked (or being unlocked) and which.
    line: u64,
    locking: bool,
    /// The locked line was full: the transaction may go on in the next.
    more: bool,
    incremental: bool,
    keep_rows: bool,
    scan_ps_per_byte: f64,
    update_ps: Tick,
    /// The view (in BRAM): O_CUSTKEY → SUM(O_TOTALPRICE).
    view: BTreeMap<i64, i64>,
    new: Vec<(i64, i64)>,
    trigger: Tick,
    lines: u64,
    rounds: Vec<Round>,
    errors: Vec<String>,
}

impl Operator {
    fn on_message(&mut self, now: Tick, msg: &str, line: u64, mem: &LineStore) -> Vec<AppOp> {
        if line == SYNC_LINE && msg == "AXI_RD" {
            if self.busy {
                self.errors.push(format!(
                    "a commit reached the operator at {now} ps while it maintained the previous one (raise txn_gap_us)"
                ));
                return Vec::new();
            }
            self.busy = true;
            self.trigger = now;
            self.lines = 0;
            self.new.clear();
            self.line = self.tail / TUPLES_PER_LINE;
            self.locking = true;
            return vec![AppOp::new("lock", self.line)];
        }
        if !self.busy || msg != "LCL_ACK" || line != self.line {
            return Vec::new();
        }
        if self.locking {
            // Locked: the CPU's copy is written back and the DC's memory holds
            // the latest bytes; take the new tuples from the tail on.
            let bytes = mem.read(line);
            let first = if self.tail / TUPLES_PER_LINE == line {
                self.tail % TUPLES_PER_LINE
            } else {
                0
            };
            self.more = true;
            for s in first..TUPLES_PER_LINE {
                let (k, p) = (
                    word(&bytes, 2 * s as usize),
                    word(&bytes, 2 * s as usize + 1),
                );
                if k == 0 {
                    self.more = false;
                    break;
                }
                self.new.push((k, p));
                self.tail += 1;
            }
            self.locking = false;
            self.lines += 1;
            return vec![AppOp::new("read", line), AppOp::new("unlock", line)];
        }
        // Unlocked.
        if self.more {
            self.line += 1;
            self.locking = true;
            return vec![AppOp::new("lock", self.line)];
        }
        let rows = if self.keep_rows || !self.incremental {
            let n = self.tail;
            let mut rows = Vec::with_capacity(n as usize);
            for l in 0..n.div_ceil(TUPLES_PER_LINE) {
                let b = mem.read(l);
                for s in 0..TUPLES_PER_LINE.min(n - l * TUPLES_PER_LINE) {
                    rows.push((word(&b, 2 * s as usize), word(&b, 2 * s as usize + 1)));
                }
            }
            Some(rows)
        } else {
            None
        };
        let compute = if self.incremental {
            for &(k, p) in &self.new {
                *self.view.entry(k).or_insert(0) += p;
            }
            self.new.len() as Tick * self.update_ps
        } else {
            let rows = rows.as_ref().expect("kept for recompute");
            self.view = group_by_custkey(rows).into_iter().collect();
            (self.tail as f64 * TUPLE_BYTES as f64 * self.scan_ps_per_byte).round() as Tick
        };
        self.rounds.push(Round {
            trigger: self.trigger,
            last_unlock: now,
            ready: now + compute,
            lines: self.lines,
            tuples: self.tail,
            view: self.view.iter().map(|(k, v)| (*k, *v)).collect(),
            rows: if self.keep_rows { rows } else { None },
        });
        self.busy = false;
        // Re-arm the trigger: the CPU's next commit load must miss again.
        vec![AppOp::new("clinv", SYNC_LINE)]
    }
}

fn json_pairs(out: &mut String, v: &[(i64, i64)]) {
    out.push('[');
    for (i, (a, b)) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!("[{a},{b}]"));
    }
    out.push(']');
}

/// Runs one point of `materialized_view`.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let params = point.params;
    sweeps("materialized_view", "updates", point.x_name)?;
    let updates = whole_number("updates", point.x, 1.0)?;
    if updates as f64 > MAX_UPDATES {
        return Err(werr(format!(
            "updates = {updates}: at most {MAX_UPDATES} appends per transaction"
        )));
    }
    let sf = params.float("scale_factor");
    let base = params.int("base_orders") as u64;
    let txns = params.int("transactions") as u64;
    let total = base + txns * updates;
    let available = (sf * 1_500_000.0).floor() as u64;
    if total > available {
        return Err(werr(format!(
            "materialized_view: base_orders + transactions x updates = {total} rows, but TPC-H at scale_factor {sf} has {available} ORDERS rows"
        )));
    }
    let incremental = params.str("maintenance") == "incremental";
    let dump = params.str("dump").to_string();
    let rows = tpch_orders(sf, total as usize);
    if rows.len() as u64 != total {
        return Err(werr(format!(
            "tpchgen produced {} of {total} ORDERS rows",
            rows.len()
        )));
    }
    let fail = |e: String| werr(format!("materialized_view ({updates} updates): {e}"));
    let opts = EciOptions::new(point.seed, crate::trace_mode(point.trace));
    let mut sys = point
        .platform
        .coherent_system("dc_ddr", &opts)
        .map_err(RunError::Config)?;
    // The base table and the empty slots the transactions fill (one more
    // line: the operator's stop test may read past a full last line).
    let lines = total.div_ceil(TUPLES_PER_LINE) + 1;
    for (l, bytes) in table_lines(&rows[..base as usize], lines)
        .iter()
        .enumerate()
    {
        sys.dc_mut().mem.write(l as u64, bytes);
        sys.checker.borrow_mut().preload(l as u64, bytes);
    }
    // The transactions: stores into the next slots, DMB, the commit's load
    // of SYNC, DMB, think time.
    let gap = (params.float("txn_gap_us") * 1e6).round() as Tick;
    let mut program = Vec::new();
    for t in 0..txns {
        for j in 0..updates {
            let i = base + t * updates + j;
            let (k, p) = rows[i as usize];
            let (line, s) = (i / TUPLES_PER_LINE, (i % TUPLES_PER_LINE) as u8);
            program.push(CpuOp::Store {
                line,
                word: 2 * s,
                value: k as u64,
            });
            program.push(CpuOp::Store {
                line,
                word: 2 * s + 1,
                value: p as u64,
            });
        }
        program.push(CpuOp::Fence);
        program.push(CpuOp::Load { line: SYNC_LINE });
        program.push(CpuOp::Fence);
        program.push(CpuOp::Wait { ps: gap });
        program.push(CpuOp::Fence);
    }
    sys.set_programs(vec![program])
        .map_err(|e| werr(format!("platform {}: {e}", point.platform.name)))?;
    let scan_gibps = params.float("scan_gibps");
    let op = Rc::new(RefCell::new(Operator {
        tail: base,
        busy: false,
        line: 0,
        locking: false,
        more: false,
        incremental,
        keep_rows: !dump.is_empty(),
        scan_ps_per_byte: 1e12 / (scan_gibps * (1u64 << 30) as f64),
        update_ps: (params.float("bram_update_ns") * 1000.0).round() as Tick,
        view: group_by_custkey(&rows[..base as usize])
            .into_iter()
            .collect(),
        new: Vec::new(),
        trigger: 0,
        lines: 0,
        rounds: Vec::new(),
        errors: Vec::new(),
    }));
    let dev = op.clone();
    sys.dc_mut()
        .set_device(Box::new(move |now, msg, line, mem| {
            dev.borrow_mut().on_message(now, msg, line, mem)
        }));
    sys.run().map_err(fail)?;
    if let Some(e) = sys.dc().app_errors.first() {
        return Err(fail(format!("the application port reported: {e}")));
    }
    let op = op.borrow();
    if let Some(e) = op.errors.first() {
        return Err(fail(e.clone()));
    }
    if op.rounds.len() as u64 != txns || op.busy {
        return Err(fail(format!(
            "{} of {txns} transactions maintained",
            op.rounds.len()
        )));
    }
    // After every transaction: the view is the group-by of the generator's
    // rows so far, and the rows read back are those rows.
    for (t, r) in op.rounds.iter().enumerate() {
        let n = (base + (t as u64 + 1) * updates) as usize;
        if r.tuples as usize != n {
            return Err(fail(format!(
                "transaction {t}: the operator found {} tuples, expected {n}",
                r.tuples
            )));
        }
        if r.view != group_by_custkey(&rows[..n]) {
            return Err(fail(format!(
                "transaction {t}: the view differs from the group-by of the table's rows"
            )));
        }
        if let Some(read) = &r.rows {
            if read[..] != rows[..n] {
                return Err(fail(format!(
                    "transaction {t}: the base table read back from the DC's memory differs from the rows appended"
                )));
            }
        }
    }
    if !dump.is_empty() {
        let mut out = String::from("{\"transactions\":[");
        for (t, r) in op.rounds.iter().enumerate() {
            if t > 0 {
                out.push(',');
            }
            out.push_str("{\"rows\":");
            json_pairs(&mut out, r.rows.as_deref().unwrap_or(&[]));
            out.push_str(",\"view\":");
            json_pairs(&mut out, &r.view);
            out.push('}');
        }
        out.push_str("]}\n");
        std::fs::write(&dump, out)
            .map_err(|e| werr(format!("materialized_view: dump = {dump:?}: {e}")))?;
    }
    let n = op.rounds.len() as f64;
    let view_ps: Vec<f64> = op
        .rounds
        .iter()
        .map(|r| (r.ready - r.trigger) as f64)
        .collect();
    let gib = (1u64 << 30) as f64;
    let view_us = view_ps.iter().sum::<f64>() / n / 1e6;
    let gibps = op
        .rounds
        .iter()
        .zip(&view_ps)
        .map(|(r, ps)| (r.tuples * TUPLE_BYTES) as f64 / (ps / 1e12) / gib)
        .sum::<f64>()
        / n;
    let wb_gibps = op
        .rounds
        .iter()
        .map(|r| {
            let ps = (r.last_unlock - r.trigger).max(1) as f64;
            (r.lines * LINE_BYTES as u64) as f64 / (ps / 1e12) / gib
        })
        .sum::<f64>()
        / n;
    let mut metrics = BTreeMap::new();
    metrics.insert("view_us".to_string(), view_us);
    metrics.insert("gibps".to_string(), gibps);
    metrics.insert("wb_gibps".to_string(), wb_gibps);
    let mut r = crate::sim_result(&sys.sim, metrics, crate::trace_mode(point.trace));
    let lines_moved: u64 = op.rounds.iter().map(|r| r.lines).sum();
    r.stats.insert("view.transactions".to_string(), n);
    r.stats
        .insert("view.lines_invalidated".to_string(), lines_moved as f64);
    r.stats
        .insert("view.groups".to_string(), op.view.len() as f64);
    r.stats
        .insert("view.base_rows_final".to_string(), op.tail as f64);
    r.stats.insert(
        "check.transitions".to_string(),
        sys.checker.borrow().checked as f64,
    );
    Ok(r)
}
