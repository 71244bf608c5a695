//! Mutation coverage in timing runs: is every single-row mutant of a
//! protocol's tables caught, by the exhaustive checker or by the random
//! tester's online checks in the timing simulator?
//!
//! Every mutant of every role ([`ccsim_protocol::mutate`]: a deleted row, a
//! retargeted next state, a dropped action) is first judged by the checker
//! on the spec's `[check]` configuration. The ones it does not catch (it
//! survives there, or its row never fires in that small configuration)
//! run in a system of the platform (`[systems.<name>]`, table agents) with
//! the mutated tables, under the random tester: caught when a seed ends
//! with an invariant violation, a deadlock (work left open) or reads and
//! memory that differ from the sequential reference. What neither catches
//! is listed for a reader to judge (an equivalent mutant, or a row the
//! tester never reaches).
//!
//! ```
//! let p = ccsim_platform::Platform::load("msi-dma").unwrap();
//! let opts = ccsim_experiments::mutation::TimingBudget { first_seed: 0, seeds: 2, ops: 200, lines: 2 };
//! let r = ccsim_experiments::mutation::coverage(&p, "random", None, &opts).unwrap();
//! assert_eq!(r.len(), 183);
//! // The checker decides most; the tester sees only what it let pass.
//! assert_eq!(r.iter().filter(|m| m.by_checker.is_caught()).count(), 178);
//! assert!(r.iter().all(|m| m.by_timing.is_some() != m.by_checker.is_caught()));
//! ```

use ccsim_coherence::agents::TesterParams;
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, BuiltSystem, Platform};
use ccsim_protocol::mutate::{judge_all, CheckerVerdict};
use ccsim_protocol::SystemConfig;
use serde::Serialize;

use crate::program_run::no_violation;
use crate::random_test::{compare_with_reference, open_work};
use crate::RunError;

/// How hard the random tester tries on each mutant the checker lets pass.
#[derive(Debug, Clone, Copy)]
pub struct TimingBudget {
    /// The first seed tried.
    pub first_seed: u64,
    /// Seeds tried, from `first_seed` on (each a separate run, stopping at
    /// the first that catches the mutant).
    pub seeds: u64,
    /// Operations per agent with local events, per seed.
    pub ops: u64,
    /// Lines the operations pick from (few, so that agents contend).
    pub lines: u64,
}

/// What the random tester says of a mutant.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum TimingVerdict {
    /// A seed ended with `problem`.
    Caught {
        /// The seed that caught it (it replays alone).
        seed: u64,
        /// The first violation, the deadlock or the reference mismatch.
        problem: String,
    },
    /// No seed of the budget found anything.
    NotCaught {
        /// Seeds tried.
        seeds: u64,
    },
}

/// One mutant and who caught it.
#[derive(Debug, Clone, Serialize)]
pub struct MutantCoverage {
    /// The mutant, e.g. `retarget cache: (S, Inv): I -> IM_AD`.
    pub mutant: String,
    /// The checker's verdict on the spec's `[check]` configuration.
    pub by_checker: CheckerOutcome,
    /// The random tester's, when the checker did not catch it.
    pub by_timing: Option<TimingVerdict>,
}

/// [`CheckerVerdict`], serialisable.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum CheckerOutcome {
    /// A property fails.
    Caught {
        /// Its name (`swmr`, `data-value`, `deadlock`, ...).
        property: String,
    },
    /// Every property holds.
    Survived,
    /// The row never fires in the checked configuration.
    Unexercised,
}

impl CheckerOutcome {
    /// Whether the checker caught the mutant.
    pub fn is_caught(&self) -> bool {
        matches!(self, CheckerOutcome::Caught { .. })
    }
}

impl MutantCoverage {
    /// Whether the checker or the tester caught it.
    pub fn caught(&self) -> bool {
        self.by_checker.is_caught() || matches!(self.by_timing, Some(TimingVerdict::Caught { .. }))
    }
}

/// Judges every mutant of the protocol of `platform`'s system `system`
/// (table agents): the checker first (on `checker`, or the spec's `[check]`
/// configuration), then, for what it lets pass, the random tester within
/// `budget`.
pub fn coverage(
    platform: &Platform,
    system: &str,
    checker: Option<SystemConfig>,
    budget: &TimingBudget,
) -> Result<Vec<MutantCoverage>, String> {
    let decl = platform.system(system).map_err(|e| e.to_string())?;
    if decl.is_eci() {
        return Err(format!(
            "system {system}: Enzian agents run their own tables; mutation coverage takes a system of table agents"
        ));
    }
    let spec = ccsim_protocol::load_spec(&decl.protocol).map_err(|e| e.to_string())?;
    let (ir, stats) = ccsim_protocol::generate(&spec).map_err(|e| e.to_string())?;
    let cfg = checker.unwrap_or_else(|| (&spec.check).into());
    let judged = judge_all(&ir, &stats, &cfg).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(judged.len());
    for (m, verdict) in judged {
        let by_checker = match verdict {
            CheckerVerdict::Caught(property) => CheckerOutcome::Caught { property },
            CheckerVerdict::Survived => CheckerOutcome::Survived,
            CheckerVerdict::Unexercised => CheckerOutcome::Unexercised,
        };
        let by_timing = if by_checker.is_caught() {
            None
        } else {
            Some(in_timing(platform, system, m.ir, budget)?)
        };
        out.push(MutantCoverage {
            mutant: m.description,
            by_checker,
            by_timing,
        });
    }
    Ok(out)
}

/// Runs the random tester on `system` with the agents running `ir`, seed
/// after seed, until one finds a problem.
fn in_timing(
    platform: &Platform,
    system: &str,
    ir: ccsim_protocol::ir::ProtocolIr,
    budget: &TimingBudget,
) -> Result<TimingVerdict, String> {
    for seed in (0..budget.seeds).map(|k| budget.first_seed.wrapping_add(k)) {
        let opts = BuildOptions {
            seed,
            trace: TraceMode::Off,
            checks: true,
            tester: Some(TesterParams {
                ops: budget.ops,
                lines: budget.lines,
                think: 0,
            }),
        };
        let mut s = platform
            .build_with_ir(system, ir.clone(), opts)
            .map_err(|e| e.to_string())?;
        s.sim.run();
        if let Some(problem) = first_problem(&s, budget.lines) {
            return Ok(TimingVerdict::Caught { seed, problem });
        }
    }
    Ok(TimingVerdict::NotCaught {
        seeds: budget.seeds,
    })
}

/// The first thing wrong with a finished random-tester run: an invariant
/// violation (the run stopped there), work left open (a deadlock), or
/// reads and final lines that differ from the sequential reference.
pub fn first_problem(s: &BuiltSystem, lines: u64) -> Option<String> {
    if let Err(RunError::Violation { message }) = no_violation(s) {
        return Some(message);
    }
    if let Some(deadlock) = open_work(s) {
        return Some(deadlock);
    }
    let (_, mismatches) = compare_with_reference(s, lines);
    (mismatches > 0)
        .then(|| format!("{mismatches} reads or final lines differ from the sequential reference"))
}
