//! The random tester on a system of Enzian agents running `eci-dc` (the
//! CPU's LLC and the FPGA's directory controller: `dc_bram`, `dc_ddr`,
//! `llc_ddr` of platforms/enzian.toml), in the spirit of gem5 Ruby's: the
//! core issues x random loads, stores, evictions and downgrades on a few
//! shared lines while the DC's application issues one random sequence per
//! ten core operations (a clean, a clean-invalidate, or lock / read /
//! write / unlock). The online checks apply SWMR and data-value on every
//! transition (every read is checked against the latest write there); at
//! the end every line equals a sequential replay of all writes in the
//! order they took effect.

use std::collections::BTreeMap;

use ccsim_coherence::{initial_line, Line};
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_kernel::prelude::*;
use ccsim_platform::EciOptions;

use super::violation;
use crate::{sim_result, trace_mode, werr, Point, PointResult, RunError};

/// One random application sequence per this many core operations.
const CORE_OPS_PER_APP_SEQUENCE: u64 = 10;

/// Runs `ops` random core operations (and their application sequences) on
/// `lines` lines of system `system`.
pub(super) fn run(
    point: &Point<'_>,
    system: &str,
    ops: u64,
    lines: u64,
) -> Result<PointResult, RunError> {
    let (platform, params, seed) = (point.platform, point.params, point.seed);
    let trace = trace_mode(point.trace);
    let mut rng = SimRng::for_path(seed, "random_test.eci");
    let program: Vec<CpuOp> = (0..ops)
        .map(|i| {
            let line = rng.below(lines);
            match rng.below(10) {
                0 => CpuOp::Evict { line },
                1 => CpuOp::Downgrade { line },
                2..=5 => CpuOp::Load { line },
                _ => CpuOp::Store {
                    line,
                    word: rng.below(16) as u8,
                    value: i + 1,
                },
            }
        })
        .collect();
    let app = random_app_ops(&mut rng, ops.div_ceil(CORE_OPS_PER_APP_SEQUENCE), lines);
    let app_ops = app.len();
    let mut opts = EciOptions::new(seed, trace);
    if !params.bool("checks") {
        opts = opts.set(
            "dc",
            "checks",
            ParamValue::Bool(false),
            "random_test: checks off",
        );
    }
    let mut sys = platform
        .coherent_system(system, &opts)
        .map_err(RunError::Config)?;
    let protocol = sys.protocol();
    if protocol != "eci-dc" {
        return Err(werr(format!(
            "random_test on Enzian agents runs eci-dc systems (dc_bram, dc_ddr, llc_ddr); system {system} runs {protocol}"
        )));
    }
    sys.set_programs(vec![program])
        .map_err(|e| werr(format!("random_test: {e}")))?;
    sys.dc_mut().push_app_ops(app);
    // A violation, a deadlock or a refused operation ends the run with its
    // report (lines, states, messages in flight).
    sys.run().map_err(violation)?;

    let mismatches = compare_with_reference(&sys, lines);
    let cpu = sys.cpu();
    let loads = cpu
        .completed
        .iter()
        .filter(|c| matches!(cpu.program_op(c.core, c.op), Some(CpuOp::Load { .. })))
        .count();
    let latency = cpu.completed.iter().map(|c| c.latency_ps).sum::<Tick>() as f64
        / cpu.completed.len().max(1) as f64;
    let metrics = BTreeMap::from([
        ("ops".to_string(), (cpu.completed.len() + app_ops) as f64),
        ("violations".to_string(), 0.0),
        (
            "rows_checked".to_string(),
            sys.checker.borrow().checked as f64,
        ),
        ("reads".to_string(), loads as f64),
        ("reference_mismatches".to_string(), mismatches.len() as f64),
        ("op_latency_ns".to_string(), latency / 1000.0),
    ]);
    if let Some(l) = mismatches.first() {
        return Err(violation(format!(
            "line {l:#x} (and {} more) differs from the sequential reference at the end",
            mismatches.len() - 1
        )));
    }
    Ok(sim_result(&sys.sim, metrics, trace))
}

/// `seqs` random application sequences on `lines` lines: a clean, a
/// clean-invalidate, or lock / read / write / unlock.
fn random_app_ops(rng: &mut SimRng, seqs: u64, lines: u64) -> Vec<AppOp> {
    let mut app = Vec::new();
    for k in 0..seqs {
        let line = rng.below(lines);
        match rng.below(3) {
            0 => app.push(AppOp::new("clean", line)),
            1 => app.push(AppOp::new("clinv", line)),
            _ => {
                app.push(AppOp::new("lock", line));
                app.push(AppOp::new("read", line));
                app.push(AppOp::new("write", line).with_data([k as u8; 128]));
                app.push(AppOp::new("unlock", line));
            }
        }
    }
    app
}

/// The lines whose final value (the LLC's copy, else the DC's memory)
/// differs from a sequential replay of every write (the core's stores and
/// the application's line writes) in the order they took effect.
fn compare_with_reference(sys: &ccsim_eci::system::CoherentSystem, lines: u64) -> Vec<u64> {
    enum Write {
        Word(u8, u64),
        Line(Line),
    }
    let mut writes: Vec<(Tick, u64, Write)> = Vec::new();
    for &(t, l, w, v) in &sys.cpu().store_log {
        writes.push((t, l, Write::Word(w, v)));
    }
    for &(t, l, v) in &sys.dc().store_log {
        writes.push((t, l, Write::Line(v)));
    }
    // Stable: same-tick writes keep the order each agent logged them in.
    writes.sort_by_key(|w| w.0);
    let mut reference: BTreeMap<u64, Line> = BTreeMap::new();
    for (_, l, w) in writes {
        let r = reference.entry(l).or_insert_with(|| initial_line(l));
        match w {
            Write::Word(w, v) => {
                r[w as usize * 8..w as usize * 8 + 8].copy_from_slice(&v.to_le_bytes())
            }
            Write::Line(v) => *r = v,
        }
    }
    (0..lines)
        .filter(|&l| {
            let (_, copy) = sys.cpu().line(l);
            let now = copy.unwrap_or_else(|| sys.dc().mem.read(l));
            now != reference
                .get(&l)
                .copied()
                .unwrap_or_else(|| initial_line(l))
        })
        .collect()
}
