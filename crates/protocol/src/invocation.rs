//! The two-line invocation protocol (PIO paper §5, Fig. 5a and 5b; CCKit
//! §5.7), checked on top of the generated DC.
//!
//! The per-line agents are tables from `protocols/invocation.toml`: the DC
//! (generated from state-equations; it holds every CPU read until the
//! application answers), the CPU LLC, and the application's port. This
//! module adds the two programs that drive them, as guarded steps:
//!
//! * **CPU program.** Round `r` uses a request line `Q` and a signal line
//!   `G` (round 0: `Q = B`, `G = A`; they swap every round). It makes `Q`
//!   writable (RLDX or an upgrade, the "registration"), stores the request
//!   into `Q`, then loads `G` and stalls until the data comes. If the
//!   answer is "not ready yet", it drops `G` and loads it again.
//! * **Application.** When the DC reports the CPU's read of `G`, it fetches
//!   `Q` with a clean-invalidate (the CPU's `Q` goes to I and its data to
//!   memory), reads the request, writes the result into `G`, and answers the
//!   held read Shared or Exclusive. It may answer "not ready yet" instead at
//!   any time while the read is held (a timeout).
//!
//! Fig. 5a (CPU-initiated) runs exactly this. Fig. 5b (device-initiated)
//! differs only in round 0: the CPU first waits on `G` with nothing to send
//! (the device pushes work into `G`), and from round 1 on the request line
//! carries the CPU's response to the previous work item.
//!
//! With `A` and `B` on different DCUs the invocation always completes; on
//! one DCU the held read of `G` keeps the unit busy, the clean-invalidate of
//! `Q` waits behind it, and the checker reports the deadlock with its trace.

use crate::system::{SysAction, SysState, System};
use ccsim_check::model::{ChartStep, Invariant, Model};

/// Which variant to check.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct InvocationConfig {
    /// Fig. 5b (device-initiated) instead of Fig. 5a (CPU-initiated).
    pub device_initiated: bool,
    /// Answer with Exclusive (the roles of A and B swap in place) instead of Shared.
    pub exclusive_return: bool,
    /// The application may answer "not ready yet".
    pub not_ready: bool,
    /// A and B map to the same DCU.
    pub shared_unit: bool,
    /// Invocations to run (at least 2 so that the role swap is exercised).
    pub rounds: u8,
}

impl Default for InvocationConfig {
    fn default() -> Self {
        InvocationConfig {
            device_initiated: false,
            exclusive_return: true,
            not_ready: false,
            shared_unit: false,
            rounds: 2,
        }
    }
}

/// System state plus the two programs' counters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InvState {
    /// The protocol agents and network.
    pub sys: SysState,
    /// CPU program: completed invocations.
    pub cpu_round: u8,
    /// CPU program counter (0 prepare, 1 signal, 2 wait, 3 done).
    pub cpu_pc: u8,
    /// Application: answered invocations.
    pub app_round: u8,
    /// Application counter (0 idle, 1 fetching, 2 answer, 3 grant).
    pub app_pc: u8,
    /// The last answer to the CPU was "not ready yet".
    pub not_ready: bool,
}

/// A step: an optional table event plus the programs' new counters.
#[derive(Clone, Debug)]
pub struct InvAction {
    /// The protocol action (a delivery, or an event a program triggers).
    pub sys: Option<SysAction>,
    /// Program state after the step (`None`: a plain delivery).
    pub prog: Option<(u8, u8, u8, u8, bool)>,
    /// Chart label for program steps.
    pub label: String,
}

/// The invocation model.
pub struct Invocation {
    /// The per-line protocol system (two lines, A = 0 and B = 1).
    pub sys: System,
    /// Variant.
    pub cfg: InvocationConfig,
}

const A: usize = 0;
const B: usize = 1;
const CPU: usize = 1;
const PORT: usize = 2;

impl Invocation {
    /// Builds the model from the invocation spec's IR.
    pub fn new(
        ir: crate::ProtocolIr,
        cfg: InvocationConfig,
        values: u8,
    ) -> Result<Invocation, String> {
        let sc = crate::SystemConfig {
            dcus: if cfg.shared_unit {
                vec![0, 0]
            } else {
                vec![0, 1]
            },
            values,
            max_in_flight: 2,
            instances: Default::default(),
        };
        Ok(Invocation {
            sys: System::new(ir, sc)?,
            cfg,
        })
    }

    fn lines(round: u8) -> (usize, usize) {
        // (request line Q, signal line G)
        if round % 2 == 0 {
            (B, A)
        } else {
            (A, B)
        }
    }

    fn cpu_state<'a>(&'a self, s: &'a InvState, l: usize) -> &'a str {
        self.sys.state_name(&s.sys, l, CPU)
    }

    fn port_state<'a>(&'a self, s: &'a InvState, l: usize) -> &'a str {
        self.sys.state_name(&s.sys, l, PORT)
    }

    fn step(
        &self,
        s: &InvState,
        (line, role, ev): (usize, usize, &str),
        v: u8,
        prog: (u8, u8, u8, u8, bool),
        out: &mut Vec<InvAction>,
    ) {
        if let Some(a) = self.sys.local_action(&s.sys, line, role, ev, v) {
            let who = if role == CPU { "cpu" } else { "app" };
            out.push(InvAction {
                sys: Some(a),
                prog: Some(prog),
                label: format!("{who}: {ev}({})", self.sys.line_name(line)),
            });
        }
    }

    fn values(&self) -> u8 {
        self.sys.cfg.values
    }
}

fn wrap(
    f: fn(&System, &SysState) -> Result<(), String>,
) -> impl Fn(&Invocation, &InvState) -> Result<(), String> {
    move |m, s| f(&m.sys, &s.sys)
}

fn inv_swmr(m: &Invocation, s: &InvState) -> Result<(), String> {
    wrap(crate::system::inv_swmr)(m, s)
}
fn inv_data(m: &Invocation, s: &InvState) -> Result<(), String> {
    wrap(crate::system::inv_data)(m, s)
}
fn inv_reception(m: &Invocation, s: &InvState) -> Result<(), String> {
    wrap(crate::system::inv_reception)(m, s)
}
fn inv_bound(m: &Invocation, s: &InvState) -> Result<(), String> {
    wrap(crate::system::inv_bound)(m, s)
}

impl Model for Invocation {
    type State = InvState;
    type Action = InvAction;

    fn init_states(&self) -> Vec<InvState> {
        self.sys
            .init_states()
            .into_iter()
            .map(|sys| InvState {
                sys,
                cpu_round: 0,
                cpu_pc: if self.cfg.device_initiated { 1 } else { 0 },
                app_round: 0,
                app_pc: 0,
                not_ready: false,
            })
            .collect()
    }

    fn actions(&self, s: &InvState, out: &mut Vec<InvAction>) {
        // Deliveries are free; table events only happen when a program asks.
        let mut sa = Vec::new();
        self.sys.actions(&s.sys, &mut sa);
        for a in sa {
            if matches!(a, SysAction::Deliver { .. }) {
                out.push(InvAction {
                    sys: Some(a),
                    prog: None,
                    label: String::new(),
                });
            }
        }
        let (cr, cp, ar, ap, nr) = (s.cpu_round, s.cpu_pc, s.app_round, s.app_pc, s.not_ready);
        // CPU program.
        let (q, g) = Self::lines(cr);
        match cp {
            0 => match self.cpu_state(s, q) {
                "E" | "M" => {
                    for v in 0..self.values() {
                        self.step(s, (q, CPU, "store"), v, (cr, 1, ar, ap, nr), out);
                    }
                }
                "I" | "S" => self.step(s, (q, CPU, "getx"), 0, (cr, 0, ar, ap, nr), out),
                _ => {}
            },
            1 => match self.cpu_state(s, g) {
                "I" => self.step(s, (g, CPU, "load"), 0, (cr, 2, ar, ap, nr), out),
                "S" => self.step(s, (g, CPU, "drop"), 0, (cr, 1, ar, ap, nr), out),
                _ => {}
            },
            2 => {
                if matches!(self.cpu_state(s, g), "S" | "E" | "M") {
                    if nr {
                        out.push(InvAction {
                            sys: None,
                            prog: Some((cr, 1, ar, ap, false)),
                            label: "cpu: not ready, retry".into(),
                        });
                    } else {
                        let (nr_, npc) = if cr + 1 >= self.cfg.rounds {
                            (cr + 1, 3)
                        } else {
                            (cr + 1, 0)
                        };
                        self.step(s, (g, CPU, "load"), 0, (nr_, npc, ar, ap, nr), out);
                    }
                }
            }
            _ => {}
        }
        // Application.
        if ar < self.cfg.rounds {
            let (q, g) = Self::lines(ar);
            let fetch = !(self.cfg.device_initiated && ar == 0);
            // Registration: a read of a line that is not this round's signal line.
            for l in [A, B] {
                if l != g && self.port_state(s, l) == "Pending" {
                    self.step(s, (l, PORT, "grant_e"), 0, (cr, cp, ar, ap, nr), out);
                }
            }
            if self.cfg.not_ready && self.port_state(s, g) == "Pending" && ap < 3 {
                self.step(s, (g, PORT, "nrdy"), 0, (cr, cp, ar, ap, true), out);
            }
            match ap {
                0 if self.port_state(s, g) == "Pending" => {
                    if fetch {
                        self.step(s, (q, PORT, "clinv"), 0, (cr, cp, ar, 1, nr), out);
                    } else {
                        out.push(InvAction {
                            sys: None,
                            prog: Some((cr, cp, ar, 2, nr)),
                            label: "app: work ready".into(),
                        });
                    }
                }
                1 => self.step(s, (q, PORT, "read"), 0, (cr, cp, ar, 2, nr), out),
                2 if self.port_state(s, g) == "Pending" => {
                    for v in 0..self.values() {
                        self.step(s, (g, PORT, "write"), v, (cr, cp, ar, 3, nr), out);
                    }
                }
                3 => {
                    if self.port_state(s, q) == "Owned" {
                        self.step(s, (q, PORT, "release"), 0, (cr, cp, ar, 3, nr), out);
                    } else {
                        let ev = if self.cfg.exclusive_return {
                            "grant_e"
                        } else {
                            "grant_s"
                        };
                        self.step(s, (g, PORT, ev), 0, (cr, cp, ar + 1, 0, false), out);
                    }
                }
                _ => {}
            }
        }
    }

    fn next_state(&self, s: &InvState, a: &InvAction) -> Option<InvState> {
        let sys = match &a.sys {
            Some(x) => self.sys.next_state(&s.sys, x)?,
            None => s.sys.clone(),
        };
        let mut n = InvState { sys, ..s.clone() };
        if let Some((cr, cp, ar, ap, nr)) = a.prog {
            n.cpu_round = cr;
            n.cpu_pc = cp;
            n.app_round = ar;
            n.app_pc = ap;
            n.not_ready = nr;
        }
        Some(n)
    }

    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![
            Invariant {
                name: "swmr",
                check: inv_swmr,
            },
            Invariant {
                name: "data-value",
                check: inv_data,
            },
            Invariant {
                name: "no-unspecified-reception",
                check: inv_reception,
            },
            Invariant {
                name: "network-bound",
                check: inv_bound,
            },
        ]
    }

    fn is_quiescent(&self, s: &InvState) -> bool {
        s.cpu_pc == 3 && s.app_round >= self.cfg.rounds && self.sys.quiescent(&s.sys)
    }

    fn chart_step(&self, s: &InvState, a: &InvAction) -> ChartStep {
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
        vec!["cpu".into(), "dc".into(), "app".into()]
    }
}

/// Result of checking one invocation variant.
#[derive(Clone, Debug, serde::Serialize)]
pub struct InvocationReport {
    /// The variant.
    pub config: InvocationConfig,
    /// Reachable states.
    pub reachable_states: usize,
    /// Transitions fired.
    pub transitions: usize,
    /// Whether every invocation can always complete and no property fails.
    pub verified: bool,
    /// The violation found, if any (with trace and charts).
    pub violation: Option<crate::ViolationReport>,
}

impl InvocationConfig {
    /// Short name, e.g. `5a E-return`, `5b S-return not-ready`, `shared DCU`.
    pub fn name(&self) -> String {
        format!(
            "Fig. {} {}-return{}{}",
            if self.device_initiated { "5b" } else { "5a" },
            if self.exclusive_return { "E" } else { "S" },
            if self.not_ready { ", not-ready" } else { "" },
            if self.shared_unit {
                ", A and B on one DCU"
            } else {
                ", A and B on separate DCUs"
            }
        )
    }
}

/// Loads the shipped invocation spec, generates it and checks one variant.
pub fn check_invocation(cfg: &InvocationConfig) -> Result<InvocationReport, crate::SpecError> {
    let spec = crate::load_spec("invocation")?;
    let (ir, _) = crate::generate(&spec)?;
    check_invocation_ir(ir, cfg, spec.check.values)
}

/// Checks one variant of the invocation protocol on a generated IR.
pub fn check_invocation_ir(
    ir: crate::ProtocolIr,
    cfg: &InvocationConfig,
    values: u8,
) -> Result<InvocationReport, crate::SpecError> {
    let m = Invocation::new(ir, cfg.clone(), values).map_err(|e| crate::SpecError {
        path: "invocation".into(),
        message: e,
    })?;
    // Every action of the closed invocation system helps (the trait's
    // default `is_helping`): the programs run to their end on their own.
    let mut explorer = ccsim_check::Explorer::new(&m, crate::explore_options(0));
    let r = explorer.run();
    let violation = r.violations.first().map(|v| {
        let last = &explorer.states()[v.state_id as usize];
        crate::ViolationReport::new(
            v,
            format!(
                "{}; cpu program round {} pc {}; app round {} pc {}",
                m.sys.describe(&last.sys),
                last.cpu_round,
                last.cpu_pc,
                last.app_round,
                last.app_pc
            ),
        )
    });
    Ok(InvocationReport {
        config: cfg.clone(),
        reachable_states: r.states as usize,
        transitions: r.transitions as usize,
        verified: r.passed(),
        violation,
    })
}
