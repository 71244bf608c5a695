//! `random_test`: a protocol's random tester in a timing simulation of a
//! system declared as data (`[systems.<name>]` of a platform file): every
//! agent with local events (caches, DMA engines) issues x random
//! operations; online checks apply the shared invariants on every row; at
//! the end the reads and the final memory are compared with a sequential
//! reference that replays the writes in the order they took effect.
//!
//! On a system of Enzian agents ([`eci`]) the Enzian agents are the random
//! agents instead: the core and the DC's application interface (`eci-dc`),
//! the CPU home's core and the FPGA's cache controller (`eci-cc`), the core
//! and a random device answering held reads (`invocation`,
//! `invocation-shared-dcu`), and all four at once when both homes share
//! the links (`shared`).
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("msi-dma").unwrap();
//! let r = ccsim_experiments::run_point("random_test", &p, "ops", 200.0, &Params::new(), 0, false).unwrap();
//! assert_eq!(r.metrics["violations"], 0.0);
//! assert_eq!(r.metrics["ops"], 600.0); // two caches and the DMA engine
//! assert_eq!(r.metrics["reference_mismatches"], 0.0);
//! ```

use std::collections::BTreeMap;

use ccsim_coherence::agents::{LogEntry, TesterParams};
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, BuiltSystem};

use crate::{
    sim_result, sweeps, trace_mode, werr, whole_number, MetricSpec, Point, PointResult, RunError,
    WorkloadInfo,
};

mod eci;

/// Operations per agent one seed may run: the log of reads and writes the
/// sequential reference replays keeps every one (about 130 B each), so a
/// seed of 10^7 operations on three agents holds about 4 GB; longer tests
/// run as more seeds (`ccsim simulate --seeds`).
pub const MAX_OPS_PER_SEED: u64 = 10_000_000;

/// The declaration of `random_test`.
pub static RANDOM_TEST: WorkloadInfo = WorkloadInfo {
    name: "random_test",
    description: "The random tester on a system declared as data: every agent with local events issues x random operations (x = ops) on random lines, one at a time, with online invariant checks; the reads and the final memory are compared with a sequential reference. On Enzian agents: eci-dc systems, the core issues x random loads, stores, evictions and downgrades and the DC's application one clean, clean-invalidate or locked write per ten of them; eci-cc (cpu_homed), the home's core x loads, stores and pauses and the FPGA's cache controller x loads, load-exclusives, stores and evictions; invocation systems, the core x random operations whose held reads a random device answers (Shared, Exclusive or not ready, after fetching another line half of the time); shared (eci-dc and eci-cc on the same links), all four agents at once.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("random"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.random]", description: "The platform's system section to build." },
        ParamSpec { name: "lines", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "lines", range: ParamRange::between(1.0, 1_048_576.0), from: "assumed: few lines, so that agents contend", description: "Lines the operations pick from." },
        ParamSpec { name: "think_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: back to back", description: "Pause between one operation's end and the next one's start." },
        ParamSpec { name: "checks", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "assumed: a tester runs with checks", description: "Check SWMR and data-value on every row." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "ops", unit: "ops", description: "Operations completed by all agents." },
        MetricSpec { name: "violations", unit: "violations", description: "Invariant violations found (the run stops at the first)." },
        MetricSpec { name: "rows_checked", unit: "rows", description: "Rows after which the invariants were checked." },
        MetricSpec { name: "reads", unit: "reads", description: "Reads checked against the latest write (by the sequential reference; on Enzian agents, by the online data-value check)." },
        MetricSpec { name: "reference_mismatches", unit: "lines", description: "Reads and final lines that differ from the sequential reference." },
        MetricSpec { name: "op_latency_ns", unit: "ns", description: "Mean operation latency." },
    ],
    run,
};

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let (platform, params) = (point.platform, point.params);
    let (x_name, x, seed, trace) = (point.x_name, point.x, point.seed, point.trace);
    sweeps("random_test", "ops", x_name)?;
    if x > MAX_OPS_PER_SEED as f64 {
        return Err(werr(format!(
            "ops = {x}: at most {MAX_OPS_PER_SEED} per agent in one seed (the read/write log the sequential reference replays grows with them); shard a longer test over seeds (ccsim simulate --seeds N)"
        )));
    }
    whole_number("ops", x, 1.0)?;
    let lines = params.uint("lines");
    let system = params.str("system");
    if platform.system(system).map_err(RunError::Config)?.is_eci() {
        if params.float("think_ns") != 0.0 {
            return Err(werr(
                "random_test.think_ns: the Enzian agents issue back to back; think_ns applies to table agents",
            ));
        }
        return eci::run(point, system, x as u64, lines);
    }
    let opts = BuildOptions {
        seed,
        trace: trace_mode(trace),
        checks: params.bool("checks"),
        tester: Some(TesterParams {
            ops: x as u64,
            lines,
            think: ccsim_coherence::util::ns_to_ps(params.float("think_ns")),
        }),
    };
    let mut s = platform.build(system, opts).map_err(RunError::Config)?;
    s.sim.run();
    let (reads, mismatches) = compare_with_reference(&s, lines);
    let c = s.checker.borrow();
    let n = s.protocol.agents.len();
    let ops: u64 = (0..n).map(|a| s.agent(a).ops_done()).sum();
    if c.violations.is_empty() {
        if let Some(deadlock) = open_work(&s) {
            return Err(violation(deadlock));
        }
    }
    let stats = s.sim.stats().flatten();
    let latency: f64 = (0..n)
        .map(|a| {
            let k = format!("system.{}.op_latency.mean", s.protocol.agents[a].name);
            stats.get(&k).copied().unwrap_or(0.0) * s.agent(a).ops_done() as f64
        })
        .sum::<f64>()
        / ops.max(1) as f64;
    let metrics = BTreeMap::from([
        ("ops".to_string(), ops as f64),
        ("violations".to_string(), c.violations.len() as f64),
        ("rows_checked".to_string(), c.checked as f64),
        ("reads".to_string(), reads as f64),
        ("reference_mismatches".to_string(), mismatches as f64),
        ("op_latency_ns".to_string(), latency / 1000.0),
    ]);
    if let Some(v) = c.violations.first() {
        return Err(violation(format!("invariant violated: {v}")));
    }
    if mismatches > 0 {
        return Err(violation(format!(
            "{mismatches} reads or final lines differ from the sequential reference"
        )));
    }
    drop(c);
    Ok(sim_result(&s.sim, metrics, trace_mode(trace)))
}

/// Work a finished run left open (a deadlock): the agents that did not
/// finish their operations and the lines in a transient state or with
/// stalled requests; None when there is none.
pub(crate) fn open_work(s: &BuiltSystem) -> Option<String> {
    let n = s.protocol.agents.len();
    let open: Vec<String> = (0..n).flat_map(|a| s.agent(a).open_lines()).collect();
    let unfinished: Vec<&str> = (0..n)
        .filter(|&a| !s.agent(a).finished())
        .map(|a| s.protocol.agents[a].name.as_str())
        .collect();
    (!open.is_empty() || !unfinished.is_empty()).then(|| {
        format!(
            "the run stopped with work open (a deadlock): unfinished agents [{}]; open lines [{}]",
            unfinished.join(", "),
            open.join("; ")
        )
    })
}

fn violation(message: String) -> RunError {
    RunError::Violation { message }
}

/// Replays the log on a plain memory: returns (reads compared, reads and
/// final lines that differ). The final image of a line is the copy of the
/// agent with write access, else its home's memory.
pub fn compare_with_reference(s: &BuiltSystem, lines: u64) -> (u64, u64) {
    let lb = s.protocol.line_bytes;
    let init = |l: u64| s.protocol.initial_value(l)[..lb].to_vec();
    let mut memory: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let (mut reads, mut bad) = (0, 0);
    for e in &s.checker.borrow().log {
        match e {
            LogEntry::Write { line, value, .. } => {
                memory.insert(*line, value.clone());
            }
            LogEntry::Read { line, value, .. } => {
                reads += 1;
                if *value != memory.get(line).cloned().unwrap_or_else(|| init(*line)) {
                    bad += 1;
                }
            }
        }
    }
    let n = s.protocol.agents.len();
    for line in 0..lines {
        let image = match (0..n).find(|&a| s.agent(a).writes(line)) {
            Some(a) => s.agent(a).copy_of(line).map(|c| c[..lb].to_vec()),
            None => Some(s.agent(s.protocol.home_of(line) as usize).memory_of(line)[..lb].to_vec()),
        };
        if image != Some(memory.get(&line).cloned().unwrap_or_else(|| init(line))) {
            bad += 1;
        }
    }
    (reads, bad)
}
