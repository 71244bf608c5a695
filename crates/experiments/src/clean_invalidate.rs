//! `clean_invalidate` — CCKit §5.3, Table 3: how fast can the FPGA
//! application clean-invalidate lines the CPU holds?
//!
//! ```text
//!  phase 1 (fill)         CPU loads x MiB sequentially ──RLDD──► DC ──PSHA──► LLC: every line S
//!  phase 2 (measured)     app: clinv(l) ──LCL_CLINV──► DCU ──SINV──► LLC (S → I)
//!                                         DCU ◄──HAKI── LLC;  app ◄──LCL_ACK── DCU
//! ```
//!
//! The x variable is the region size `region_mib` (CCKit: 8 MiB = 65,536
//! lines of 128 B). Phase 1 runs until the CPU holds every line Shared
//! (checked); the application phase starts at a fixed tick after it
//! (`start`, checked to lie after the last fill). Both phases execute the
//! generated `eci-dc` table with the online SWMR/data-value checker on.
//!
//! * `mode = "latency"`: one clean-invalidate outstanding at a time; metric
//!   `latency_ns` is the mean issue-to-`LCL_ACK` time of a request.
//! * `mode = "throughput"`: the application issues a request every DC clock
//!   without waiting for completions (the DCUs queue and stall what they
//!   cannot take yet); `latency_ns` is then issue to the DC's final
//!   transition, queueing included; metric `throughput_mcls` is lines / (last `LCL_ACK` −
//!   first issue), in 10^6 cache lines per second.
//!
//! After the run every line must be Invalid in the LLC with no copy, back in
//! the DC's initial state, and memory must hold the line's bytes.
//!
//! **How throughput mode issues concurrently.** The DC's application port
//! ([`ccsim_eci::dc`]) gets an issue window as large as the
//! region (`set_app_window`): it issues one request per DC clock, in order,
//! without waiting for acknowledgements; each request completes when its
//! `LCL_ACK` reaches the application. The shipped `eci-dc` tables run
//! unchanged.
//!
//! ```
//! use ccsim_platform::Platform;
//! use ccsim_kernel::prelude::*;
//! let enzian = Platform::load("enzian").unwrap();
//! let p = Params::new().with("mode", ParamValue::Str("latency".into()), "doc");
//! // 1/16 MiB = 512 lines.
//! let r = ccsim_experiments::run_point("clean_invalidate", &enzian, "region_mib", 0.0625, &p, 1, false).unwrap();
//! assert_eq!(r.stats["clinv.lines"], 512.0);
//! // A clean-invalidate of a Shared line is at least an ECI round trip (SINV, HAKI).
//! assert!(r.metrics["latency_ns"] > 230.0);
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use ccsim_coherence::initial_line;
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::{AppOp, DcEvent};
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use crate::{werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// Declaration of `clean_invalidate`.
pub static CLEAN_INVALIDATE: WorkloadInfo = WorkloadInfo {
    name: "clean_invalidate",
    description: "CCKit Table 3: the CPU reads x = region_mib MiB sequentially into its LLC (Shared); the FPGA application then clean-invalidates every line through the DC (generated eci-dc table), one at a time (latency) or one issue per DC clock (throughput), with BRAM or DDR behind the DC.",
    params: &[
        ParamSpec { name: "mode", kind: ParamKind::Enum(&["latency", "throughput"]), default: ParamDefault::Str("latency"), unit: "", range: ParamRange::ANY, from: "CCKit Table 3: latency", description: "latency: one clean-invalidate outstanding at a time; throughput: the application issues one request per DC clock without waiting." },
        ParamSpec { name: "config", kind: ParamKind::Enum(&["dc_bram", "dc_ddr"]), default: ParamDefault::Str("dc_bram"), unit: "", range: ParamRange::ANY, from: "assumed: the FPGA DC with BRAM", description: "The memory behind the DC: BRAM or a MIG-like DDR controller." },
    ],
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Mean issue-to-completion time of one clean-invalidate (in throughput mode: issue to the DC's final transition, queueing included)." },
        MetricSpec { name: "throughput_mcls", unit: "1e6 CL/s", description: "Lines invalidated per second over the whole region, first issue to last completion." },
    ],
    check: None,
    run,
};

/// Largest region: the 16 MiB LLC (more would evict during the fill).
const MAX_MIB: f64 = 16.0;
/// Upper bound on one fill read, to place the application phase after the
/// fill (checked after the run, never assumed).
const FILL_BOUND_PER_LINE: Tick = 2 * US;
/// Runs one point of `clean_invalidate`.
pub(crate) fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let (x_name, x, seed, trace) = (point.x_name, point.x, point.seed, point.trace);
    let trace = crate::trace_mode(trace);
    let n = crate::coherent::lines_in_mib(
        "clean_invalidate",
        x_name,
        "region_mib",
        x,
        MAX_MIB,
        " (the LLC)",
    )?;
    let throughput_mode = params.str("mode") == "throughput";
    let config = params.str("config");
    let start = n * FILL_BOUND_PER_LINE;
    let program: Vec<CpuOp> = (0..n).map(|line| CpuOp::Load { line }).collect();
    let mut app: Vec<AppOp> = (0..n).map(|line| AppOp::new("clinv", line)).collect();
    app[0].not_before = start;
    let opts = EciOptions::new(seed, trace);
    let mut sys = crate::coherent::coherent_system(platform, config, &opts, program, app)?;
    if throughput_mode {
        // As many requests in flight as there are lines: one per clock.
        sys.dc_mut().set_app_window(n as usize);
    }
    // The DC's initial state: where a line lands when its clean-invalidate
    // completes (the row that sends LCL_ACK).
    let initial = sys.dc().line_state(u64::MAX).to_string();
    let events: Rc<RefCell<Vec<(Tick, DcEvent)>>> = Rc::default();
    let sink = events.clone();
    let home = initial.clone();
    sys.dc_mut().set_observer(Box::new(move |t, e| {
        let keep = match e {
            DcEvent::AppDone { .. } => true,
            DcEvent::Transition { to, .. } => *to == home,
            _ => false,
        };
        if keep {
            sink.borrow_mut().push((t, e.clone()));
        }
    }));
    let fail = |e: String| werr(format!("clean_invalidate ({config}): {e}"));

    // Phase 1: the fill. Every line must be Shared in the LLC with the
    // memory's bytes before the application starts.
    sys.sim.run_until(start - 1);
    {
        let cpu = sys.cpu();
        if !cpu.finished() || cpu.completed.len() as u64 != n {
            return Err(fail(format!(
                "the CPU's fill of {n} lines did not finish before the application phase at {} ns",
                start / 1000
            )));
        }
        for c in &cpu.completed {
            if c.data != initial_line(c.op as u64) {
                return Err(fail(format!(
                    "the fill read of line {:#x} returned wrong bytes",
                    c.op
                )));
            }
        }
        for line in 0..n {
            let (state, copy) = cpu.line(line);
            if state != "S" || copy != Some(initial_line(line)) {
                return Err(fail(format!(
                    "after the fill, line {line:#x} is {state} in the LLC (expected S with the memory's bytes)"
                )));
            }
        }
    }
    let fill_events = events.borrow().len();

    // Phase 2: the clean-invalidates.
    sys.run().map_err(fail)?;
    let end = sys.sim.now();
    for line in 0..n {
        let (state, copy) = sys.cpu().line(line);
        if state != "I" || copy.is_some() {
            return Err(fail(format!(
                "after the clean-invalidate, line {line:#x} is {state} in the LLC (expected I, no copy)"
            )));
        }
        if sys.dc().mem.read(line) != initial_line(line) {
            return Err(fail(format!(
                "after the clean-invalidate, memory does not hold the bytes of line {line:#x}"
            )));
        }
    }
    if let Some(line) = (0..n).find(|&l| sys.dc().line_state(l) != initial) {
        return Err(fail(format!(
            "after the clean-invalidate, the DC holds line {line:#x} in {} (expected {initial})",
            sys.dc().line_state(line)
        )));
    }

    let events = events.borrow();
    let phase2 = &events[fill_events..];
    // Issue time per line: an AppDone is reported at completion with its
    // latency, so issue = t - latency.
    let mut issued: BTreeMap<u64, Tick> = BTreeMap::new();
    let mut acked: BTreeMap<u64, Tick> = BTreeMap::new();
    let mut app_latency: Vec<Tick> = Vec::new();
    for (t, e) in phase2 {
        match e {
            DcEvent::AppDone {
                line, latency_ps, ..
            } => {
                issued.insert(*line, t - latency_ps);
                app_latency.push(*latency_ps);
            }
            // The DC's last transition of a line (HAKI, sending LCL_ACK).
            DcEvent::Transition { line, to, .. } if *to == initial => {
                acked.insert(*line, *t);
            }
            _ => {}
        }
    }
    if issued.len() as u64 != n || acked.len() as u64 != n {
        return Err(fail(format!(
            "{} clean-invalidates issued and {} completed at the DC, expected {n} each",
            issued.len(),
            acked.len()
        )));
    }
    let first = *issued.values().min().expect("n > 0");
    let latency_ns = if throughput_mode {
        let total: Tick = issued.iter().map(|(l, &t)| acked[l] - t).sum();
        total as f64 / n as f64 / 1000.0
    } else {
        app_latency.iter().sum::<Tick>() as f64 / n as f64 / 1000.0
    };
    // `end` is the last event of the run: the application handling the last
    // LCL_ACK (nothing else is left to happen after it).
    let span = end - first;
    let throughput_mcls = n as f64 / (span as f64 / 1e12) / 1e6;

    let mut metrics = BTreeMap::new();
    metrics.insert("latency_ns".to_string(), latency_ns);
    metrics.insert("throughput_mcls".to_string(), throughput_mcls);
    let mut r = crate::sim_result(&sys.sim, metrics, trace);
    r.stats.insert("clinv.lines".to_string(), n as f64);
    r.stats.insert("clinv.start_ps".to_string(), first as f64);
    r.stats.insert("clinv.span_ps".to_string(), span as f64);
    r.stats.insert(
        "check.transitions".to_string(),
        sys.checker.borrow().checked as f64,
    );
    Ok(r)
}
