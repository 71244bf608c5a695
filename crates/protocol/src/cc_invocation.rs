//! The two-line invocation with both lines **homed on the CPU** (PIO paper
//! Fig. 5c and 5d), checked on top of the generated `eci-cc` cache
//! controller, as [`crate::invocation`] checks 5a/5b on the DC.
//!
//! The agents are the three `eci-cc` tables per line: the FPGA's CC
//! (generated), the CPU home (peer: directory, memory and the core's `rd`,
//! `wr`, `commit`) and the device's port (local: `ld`, `ldx`, `st`,
//! `evict`). This module adds the two programs that drive them, the same
//! ones the simulator runs (`ccsim_eci::cc_invocation`):
//!
//! * **5c, core.** Once the device holds `B` (start-up; a request written
//!   earlier would never reach it, which the checker finds as a
//!   deadlock), round `r`: write the request into `B` (`wr`, which
//!   invalidates the device's Shared copy, then `commit`), then poll `A`
//!   (`rd`) until the device's answer is there.
//! * **5c, device.** Take `B` Shared once (arming); each time its copy of
//!   `B` is gone (the core's write invalidated it) load `B` (the request),
//!   take `A` Exclusive and store the answer (a store the table refuses,
//!   because a poll recalled `A` in between, is retried from `ldx`), then
//!   keep `A` Modified (forward) or evict it (write-back).
//! * **5d** swaps who starts: the device stores a work item into `A`, the
//!   core polls `A`, writes its response into `B`, and the device loads `B`
//!   once its copy is invalidated.
//!
//! Whether the core "sees" the answer is tracked by the programs' counters
//! (the device counts a store when its `LCL_ACK` is delivered); the
//! data itself is checked by the system's data-value invariant. Every
//! variant verifies: the usual invariants hold and all rounds can always
//! complete (the refusal loop always has a way out).

use crate::system::{SysAction, SysState, System};
use ccsim_check::model::{ChartStep, Invariant, Model};

/// Which variant to check.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CcInvocationConfig {
    /// Fig. 5d (device-initiated) instead of Fig. 5c.
    pub device_initiated: bool,
    /// The device writes `A` back after storing instead of keeping it
    /// Modified for the core's read to recall.
    pub writeback: bool,
    /// Invocations to run.
    pub rounds: u8,
}

impl Default for CcInvocationConfig {
    fn default() -> Self {
        CcInvocationConfig {
            device_initiated: false,
            writeback: false,
            rounds: 2,
        }
    }
}

impl CcInvocationConfig {
    /// Short name, e.g. `Fig. 5c, forward`.
    pub fn name(&self) -> String {
        format!(
            "Fig. {}, {}",
            if self.device_initiated { "5d" } else { "5c" },
            if self.writeback {
                "write-back"
            } else {
                "forward"
            }
        )
    }
}

/// System state plus the programs' counters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CcInvState {
    /// The protocol agents and network.
    pub sys: SysState,
    /// Core: completed rounds.
    pub cpu_round: u8,
    /// Core program counter.
    pub cpu_pc: u8,
    /// Device: answers (5c) or work items (5d) stored into `A`.
    pub stored: u8,
    /// Device: completed rounds (5d: responses fetched).
    pub dev_round: u8,
    /// Device program counter.
    pub dev_pc: u8,
}

/// A step: an optional table event plus the programs' new counters.
#[derive(Clone, Debug)]
pub struct CcInvAction {
    /// The protocol action.
    pub sys: Option<SysAction>,
    /// (cpu_round, cpu_pc, stored, dev_round, dev_pc) after the step.
    pub prog: Option<[u8; 5]>,
    /// Chart label of program steps.
    pub label: String,
}

/// The 5c/5d model.
pub struct CcInvocation {
    /// Two lines, A = 0 and B = 1, on separate CC units.
    pub sys: System,
    /// Variant.
    pub cfg: CcInvocationConfig,
}

const A: usize = 0;
const B: usize = 1;
const CC: usize = 0;
const HOME: usize = 1;
const APP: usize = 2;
/// Program counter of a finished program.
const DONE: u8 = 9;

impl CcInvocation {
    /// Builds the model from the `eci-cc` IR.
    pub fn new(
        ir: crate::ProtocolIr,
        cfg: CcInvocationConfig,
        values: u8,
    ) -> Result<CcInvocation, String> {
        let sc = crate::SystemConfig {
            dcus: vec![0, 1],
            values,
            max_in_flight: 2,
        };
        Ok(CcInvocation {
            sys: System::new(ir, sc)?,
            cfg,
        })
    }

    fn st<'a>(&'a self, s: &'a CcInvState, line: usize, role: usize) -> &'a str {
        self.sys.state_name(&s.sys, line, role)
    }

    fn idle(&self, s: &CcInvState, line: usize) -> bool {
        self.st(s, line, APP) == "Idle"
    }

    fn step(
        &self,
        s: &CcInvState,
        (line, role, ev): (usize, usize, &str),
        v: u8,
        prog: [u8; 5],
        out: &mut Vec<CcInvAction>,
    ) {
        if let Some(a) = self.sys.local_action(&s.sys, line, role, ev, v) {
            let who = if role == HOME { "cpu" } else { "device" };
            out.push(CcInvAction {
                sys: Some(a),
                prog: Some(prog),
                label: format!("{who}: {ev}({})", self.sys.line_name(line)),
            });
        }
    }

    fn note(prog: [u8; 5], label: &str, out: &mut Vec<CcInvAction>) {
        out.push(CcInvAction {
            sys: None,
            prog: Some(prog),
            label: label.to_string(),
        });
    }

    /// The device stores into `A`: `ldx` until writable, `st` (pc 11: the
    /// delivery of `LCL_ACK` counts it, `LCL_NACK` retries; see
    /// `actions`), and with write-back `evict`. `then(stored)` is the
    /// counter after the write-back.
    fn store_a(
        &self,
        s: &CcInvState,
        p: [u8; 5],
        then: &dyn Fn(u8) -> u8,
        out: &mut Vec<CcInvAction>,
    ) {
        let [cr, cp, sd, dr, dp] = p;
        match dp {
            10 if self.idle(s, A) => {
                if matches!(self.st(s, A, CC), "E" | "M") {
                    for v in 0..self.sys.cfg.values {
                        self.step(s, (A, APP, "st"), v, [cr, cp, sd, dr, 11], out);
                    }
                } else {
                    self.step(s, (A, APP, "ldx"), 0, [cr, cp, sd, dr, 10], out);
                }
            }
            12 if self.idle(s, A) => {
                self.step(s, (A, APP, "evict"), 0, [cr, cp, sd, dr, then(sd)], out)
            }
            _ => {}
        }
    }
}

impl Model for CcInvocation {
    type State = CcInvState;
    type Action = CcInvAction;

    fn init_states(&self) -> Vec<CcInvState> {
        self.sys
            .init_states()
            .into_iter()
            .map(|sys| CcInvState {
                sys,
                cpu_round: 0,
                cpu_pc: 0,
                stored: 0,
                dev_round: 0,
                dev_pc: 0,
            })
            .collect()
    }

    fn actions(&self, s: &CcInvState, out: &mut Vec<CcInvAction>) {
        let p = [s.cpu_round, s.cpu_pc, s.stored, s.dev_round, s.dev_pc];
        let [cr, cp, sd, dr, dp] = p;
        let rounds = self.cfg.rounds;
        // After the round's store, the device's next counter (5c: wait
        // for the next request or finish; 5d: wait for the response).
        let then = |stored: u8| {
            if self.cfg.device_initiated {
                2
            } else if stored >= rounds {
                DONE
            } else {
                1
            }
        };
        let mut sa = Vec::new();
        self.sys.actions(&s.sys, &mut sa);
        for a in sa {
            if let SysAction::Deliver { line, msg, .. } = a {
                // The device learns whether its store of A took effect
                // from the completion it receives.
                let name = self.sys.message_name(msg as usize);
                let prog = match (dp, line as usize, name) {
                    (11, A, "LCL_NACK") => Some([cr, cp, sd, dr, 10]),
                    (11, A, "LCL_ACK") => {
                        let next = if self.cfg.writeback { 12 } else { then(sd + 1) };
                        Some([cr, cp, sd + 1, dr, next])
                    }
                    _ => None,
                };
                out.push(CcInvAction {
                    sys: Some(a),
                    prog,
                    label: String::new(),
                });
            }
        }
        let values = self.sys.cfg.values;
        // The core's poll of A: a read the home serves at once (I, S) sees
        // the answer once the device stored it; in E the read recalls A.
        let poll = |got: [u8; 5], out: &mut Vec<CcInvAction>| match self.st(s, A, HOME) {
            "I" | "S" => {
                let next = if sd > cr { got } else { p };
                self.step(s, (A, HOME, "rd"), 0, next, out);
            }
            "E" => self.step(s, (A, HOME, "rd"), 0, p, out),
            _ => {}
        };
        // The core's write of B: `wr`, then `commit` once the home allows.
        let write_b = |may_start: bool, after: [u8; 5], out: &mut Vec<CcInvAction>| {
            if self.st(s, B, HOME) == "I_W" {
                for v in 0..values {
                    self.step(s, (B, HOME, "commit"), v, after, out);
                }
            } else if may_start {
                self.step(s, (B, HOME, "wr"), 0, p, out);
            }
        };
        if !self.cfg.device_initiated {
            // 5c core: pc 0 write B, pc 1 poll A. The first request waits
            // until the device holds B (the start-up handshake; the
            // simulator's core waits 2 us): a request written before the
            // device armed would never reach it as an invalidation.
            let armed = dp != 0 && (cr > 0 || self.st(s, B, CC) == "S");
            match cp {
                0 => write_b(armed, [cr, 1, sd, dr, dp], out),
                1 => {
                    let pc = if cr + 1 >= rounds { DONE } else { 0 };
                    poll([cr + 1, pc, sd, dr, dp], out);
                }
                _ => {}
            }
            // 5c device: 0 arm, 1 wait for the invalidation of B, 2 fetch
            // done, 10.. store the answer into A.
            match dp {
                0 => self.step(s, (B, APP, "ld"), 0, [cr, cp, sd, dr, 1], out),
                1 if self.idle(s, B) && self.st(s, B, CC) == "I" => {
                    self.step(s, (B, APP, "ld"), 0, [cr, cp, sd, dr, 2], out)
                }
                2 if self.idle(s, B) => Self::note([cr, cp, sd, dr, 10], "device: request", out),
                // The device's round ends with the answer stored (and
                // written back); then it waits for the next request.
                10..=12 => {
                    self.store_a(s, p, &|stored| if stored >= rounds { DONE } else { 1 }, out)
                }
                _ => {}
            }
        } else {
            // 5d core: 0 poll A for item cr + 1, 1 write the response to B.
            match cp {
                0 => poll([cr, 1, sd, dr, dp], out),
                1 => {
                    let pc = if cr + 1 >= rounds { DONE } else { 0 };
                    write_b(true, [cr + 1, pc, sd, dr, dp], out);
                }
                _ => {}
            }
            // 5d device: 0 arm, 1 hand out the next item (10..), 2 wait for
            // the invalidation of B, 3 fetch done.
            match dp {
                0 => self.step(s, (B, APP, "ld"), 0, [cr, cp, sd, dr, 1], out),
                1 if self.idle(s, B) => Self::note([cr, cp, sd, dr, 10], "device: work", out),
                10..=12 => self.store_a(s, p, &then, out),
                2 if self.idle(s, B) && self.st(s, B, CC) == "I" => {
                    self.step(s, (B, APP, "ld"), 0, [cr, cp, sd, dr, 3], out)
                }
                3 if self.idle(s, B) => {
                    let pc = if dr + 1 >= rounds { DONE } else { 10 };
                    Self::note([cr, cp, sd, dr + 1, pc], "device: response", out)
                }
                _ => {}
            }
        }
    }

    fn next_state(&self, s: &CcInvState, a: &CcInvAction) -> Option<CcInvState> {
        let sys = match &a.sys {
            Some(x) => self.sys.next_state(&s.sys, x)?,
            None => s.sys.clone(),
        };
        let mut n = CcInvState { sys, ..s.clone() };
        if let Some([cr, cp, sd, dr, dp]) = a.prog {
            n.cpu_round = cr;
            n.cpu_pc = cp;
            n.stored = sd;
            n.dev_round = dr;
            n.dev_pc = dp;
        }
        Some(n)
    }

    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![
            Invariant {
                name: "swmr",
                check: |m, s| crate::system::inv_swmr(&m.sys, &s.sys),
            },
            Invariant {
                name: "data-value",
                check: |m, s| crate::system::inv_data(&m.sys, &s.sys),
            },
            Invariant {
                name: "no-unspecified-reception",
                check: |m, s| crate::system::inv_reception(&m.sys, &s.sys),
            },
            Invariant {
                name: "network-bound",
                check: |m, s| crate::system::inv_bound(&m.sys, &s.sys),
            },
        ]
    }

    fn is_quiescent(&self, s: &CcInvState) -> bool {
        s.cpu_pc == DONE
            && s.dev_pc == DONE
            && self.idle(s, A)
            && self.idle(s, B)
            && self.sys.quiescent(&s.sys)
    }

    fn chart_step(&self, s: &CcInvState, a: &CcInvAction) -> ChartStep {
        match (&a.sys, a.prog) {
            (Some(x), None) => self.sys.chart_step(&s.sys, x),
            _ => {
                let who = a.label.split(':').next().unwrap_or("cpu").to_string();
                ChartStep {
                    from: who.clone(),
                    to: who,
                    label: a.label.split(": ").nth(1).unwrap_or(&a.label).to_string(),
                }
            }
        }
    }

    fn agents(&self) -> Vec<String> {
        vec!["cpu".into(), "cc".into(), "device".into()]
    }
}

/// Result of checking one variant.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CcInvocationReport {
    /// The variant.
    pub config: CcInvocationConfig,
    /// Reachable states.
    pub reachable_states: usize,
    /// Whether every round can always complete and no property fails.
    pub verified: bool,
    /// The violation found, if any.
    pub violation: Option<crate::ViolationReport>,
}

/// Loads `eci-cc`, generates it and checks one 5c/5d variant.
pub fn check_cc_invocation(
    cfg: &CcInvocationConfig,
) -> Result<CcInvocationReport, crate::SpecError> {
    let spec = crate::load_spec("eci-cc")?;
    let (ir, _) = crate::generate(&spec)?;
    check_cc_invocation_ir(ir, cfg, spec.check.values)
}

/// Checks one 5c/5d variant on a generated `eci-cc` IR.
pub fn check_cc_invocation_ir(
    ir: crate::ProtocolIr,
    cfg: &CcInvocationConfig,
    values: u8,
) -> Result<CcInvocationReport, crate::SpecError> {
    let m = CcInvocation::new(ir, cfg.clone(), values).map_err(|e| crate::SpecError {
        path: "cc-invocation".into(),
        message: e,
    })?;
    let mut explorer = ccsim_check::Explorer::new(&m, crate::explore_options(0));
    let r = explorer.run();
    let violation = r.violations.first().map(|v| {
        let last = &explorer.states()[v.state_id as usize];
        crate::ViolationReport::new(
            v,
            format!(
                "{}; cpu round {} pc {}; device stored {} round {} pc {}",
                m.sys.describe(&last.sys),
                last.cpu_round,
                last.cpu_pc,
                last.stored,
                last.dev_round,
                last.dev_pc
            ),
        )
    });
    Ok(CcInvocationReport {
        config: cfg.clone(),
        reachable_states: r.states as usize,
        verified: r.passed(),
        violation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_5c_5d_variant_verifies() {
        for device_initiated in [false, true] {
            for writeback in [false, true] {
                let cfg = CcInvocationConfig {
                    device_initiated,
                    writeback,
                    rounds: 2,
                };
                let r = check_cc_invocation(&cfg).unwrap();
                assert!(
                    r.verified,
                    "{}: {:?}",
                    cfg.name(),
                    r.violation.as_ref().map(|v| format!("{v:?}"))
                );
                assert!(r.reachable_states > 100, "{}", r.reachable_states);
                eprintln!("{}: {} states", cfg.name(), r.reachable_states);
            }
        }
    }

    #[test]
    fn a_cc_that_refuses_every_store_is_caught() {
        // Mutant CC: it refuses every store, even when writable. The device
        // retries forever, and the checker reports that the rounds cannot
        // complete (instead of the simulator spinning to its time limit).
        let spec = crate::load_spec("eci-cc").unwrap();
        let (mut ir, _) = crate::generate(&spec).unwrap();
        // Make every store refused: the CC's store rows answer LCL_NACK.
        for t in &mut ir.generated.transitions {
            if t.event == "LCL_ST" {
                if let crate::ir::Outcome::Go { actions, next } = &mut t.outcome {
                    if t.state == "E" || t.state == "M" {
                        *actions = vec![crate::ir::Action::Send("LCL_NACK".into())];
                        *next = t.state.clone();
                    }
                }
            }
        }
        let r = check_cc_invocation_ir(ir, &CcInvocationConfig::default(), 2).unwrap();
        assert!(!r.verified);
        let v = r.violation.expect("a violation");
        assert_eq!(v.property, "deadlock", "{v:?}");
    }
}
