//! The random tester on the invocation protocols (`invocation` and
//! `invocation-shared-dcu`: the ThunderX-1 LLC and the FPGA's directory
//! controller whose CPU reads are held until the application answers;
//! systems `invocation` and `invocation_shared_dcu` of
//! platforms/enzian.toml).
//!
//! * The core issues x random loads, stores, evictions and downgrades on a
//!   few FPGA-homed lines (one at a time on the `llc` instance), so its
//!   loads and stores of uncached lines become held reads (`RLDD`,
//!   `RLDX`).
//! * The device answers every held read after a random delay, sometimes
//!   writing new bytes into the line first, with a random grant the DC's
//!   state allows (Shared, Exclusive or "not ready yet" for a load;
//!   Exclusive for a load-exclusive). Half of the time it first fetches
//!   another line as the invocation's device does with its request line:
//!   a clean-invalidate, a read, sometimes a write, a release; only then
//!   the answer. With both lines on one DCU this is the invocation's
//!   deadlock (`invocation-shared-dcu`), which the tester reports.
//!
//! The online checks apply SWMR and data-value on every transition; at the
//! end every line equals a replay of the core's and the device's writes in
//! the order they took effect.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::dc::AppOp;
use ccsim_eci::system::CoherentSystem;
use ccsim_kernel::prelude::*;

use super::super::violation;
use super::{differing_lines, Tally};
use crate::{sim_result, trace_mode, werr, Point, PointResult, RunError};

/// Whether `sys` runs an invocation protocol (its application port answers
/// held reads).
pub(super) fn is_invocation(sys: &CoherentSystem) -> bool {
    sys.protocol().starts_with("invocation")
}

/// The device's longest think time before an answer.
const MAX_DELAY_PS: u64 = 400_000;

/// What the random device did.
#[derive(Debug, Default)]
struct DeviceLog {
    answers: u64,
    fetches: u64,
    writes: u64,
    /// Answers by grant: Exclusive, Shared, "not ready yet".
    grants: [u64; 3],
}

/// The random device behind the DC's application port.
struct RandomDevice {
    rng: SimRng,
    lines: u64,
    /// Lines with a held read not answered yet.
    held: BTreeSet<u64>,
    /// A fetch of another line in progress: (fetched line, the held read it
    /// delays).
    fetching: Option<(u64, u64, bool)>,
    writes: u64,
    log: Rc<RefCell<DeviceLog>>,
}

impl RandomDevice {
    /// A line no core store can produce: the device's write number in word
    /// 0, a marker in word 1, the line number after.
    fn data(&mut self, line: u64) -> Line {
        self.writes += 1;
        self.log.borrow_mut().writes += 1;
        let mut v = [0u8; LINE_BYTES];
        v[..8].copy_from_slice(&(0xD000_0000_0000 + self.writes).to_le_bytes());
        v[8..16].copy_from_slice(&0x1_4E70_CA7Eu64.to_le_bytes());
        v[16..24].copy_from_slice(&line.to_le_bytes());
        v
    }

    /// The answer to the held read of `line`: maybe a write, then a grant
    /// the DC's state allows, after a random delay.
    fn answer(&mut self, now: Tick, line: u64, exclusive_only: bool) -> Vec<AppOp> {
        self.held.remove(&line);
        self.log.borrow_mut().answers += 1;
        let at = now + self.rng.below(MAX_DELAY_PS);
        let mut ops = Vec::new();
        if self.rng.below(2) == 0 {
            let d = self.data(line);
            ops.push(AppOp::new("write", line).with_data(d).at(at));
        }
        let grant = match (exclusive_only, self.rng.below(3)) {
            (true, _) | (false, 0) => 0,
            (false, 1) => 1,
            (false, _) => 2,
        };
        self.log.borrow_mut().grants[grant] += 1;
        ops.push(AppOp::new(["grant_e", "grant_s", "nrdy"][grant], line).at(at));
        ops
    }

    fn on_message(&mut self, now: Tick, msg: &str, line: u64, state: &str) -> Vec<AppOp> {
        match msg {
            "LCL_RDREQ" => {
                self.held.insert(line);
                // The DC holds a load-exclusive in I_RLDX: only an
                // Exclusive grant answers it.
                let exclusive_only = state.ends_with("RLDX");
                let other = self.rng.below(self.lines);
                if self.fetching.is_none() && !self.held.contains(&other) && self.rng.below(2) == 0
                {
                    // The invocation's pattern: fetch the request line
                    // first, answer after.
                    self.fetching = Some((other, line, exclusive_only));
                    self.log.borrow_mut().fetches += 1;
                    return vec![AppOp::new("clinv", other)];
                }
                self.answer(now, line, exclusive_only)
            }
            "LCL_ACK" => match self.fetching {
                Some((fetched, held, exclusive_only)) if fetched == line => {
                    self.fetching = None;
                    let mut ops = vec![AppOp::new("read", line)];
                    if self.rng.below(2) == 0 {
                        let d = self.data(line);
                        ops.push(AppOp::new("write", line).with_data(d));
                    }
                    ops.push(AppOp::new("release", line));
                    ops.extend(self.answer(now, held, exclusive_only));
                    ops
                }
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }
}

pub(super) fn run(
    point: &Point<'_>,
    mut sys: CoherentSystem,
    ops: u64,
    lines: u64,
) -> Result<PointResult, RunError> {
    let (seed, trace) = (point.seed, trace_mode(point.trace));
    let mut rng = SimRng::for_path(seed, "random_test.invocation");
    let program = CpuOp::random_program(&mut rng, ops, lines);
    let loads = program
        .iter()
        .filter(|o| matches!(o, CpuOp::Load { .. }))
        .count();
    sys.set_programs(vec![program])
        .map_err(|e| werr(format!("random_test: {e}")))?;
    let log = Rc::new(RefCell::new(DeviceLog::default()));
    let mut device = RandomDevice {
        rng: SimRng::for_path(seed, "random_test.invocation.device"),
        lines,
        held: BTreeSet::new(),
        fetching: None,
        writes: 0,
        log: log.clone(),
    };
    sys.dc_mut()
        .set_state_device(Box::new(move |now, msg, line, state, _mem| {
            device.on_message(now, msg, line, state)
        }));
    // A violation, a deadlock or a refused operation ends the run with its
    // report (lines, states, messages in flight).
    sys.run().map_err(violation)?;

    let mismatches = differing_lines(0..lines, |l| sys.line_value(l), &sys.sequential_reference());
    let cpu = sys.cpu();
    let latency = cpu.completed.iter().map(|c| c.latency_ps).sum::<Tick>() as f64
        / cpu.completed.len().max(1) as f64;
    let d = log.borrow();
    let metrics = Tally {
        ops: cpu.completed.len() as u64 + d.answers + d.fetches,
        rows: sys.checker.borrow().checked,
        reads: loads as u64,
        latency_ns: latency / 1000.0,
        mismatches,
    }
    .metrics()?;
    // What the device did, so a run shows which paths it exercised.
    let mut r = sim_result(&sys.sim, metrics, trace);
    for (k, v) in [
        ("grant_e", d.grants[0]),
        ("grant_s", d.grants[1]),
        ("nrdy", d.grants[2]),
        ("writes", d.writes),
        ("fetches", d.fetches),
    ] {
        r.stats.insert(format!("random_test.device.{k}"), v as f64);
    }
    Ok(r)
}
