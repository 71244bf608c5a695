//! What the workloads that drive a table-agent system with programs share
//! (`cxl_lsu`, `cxl_expander`, `cxl_type2_bias`, `ccix_ctg`, the CXL
//! coherent bench): building the system for a point, finding the agents
//! that play a role, growing an agent's program while the run goes on, the
//! run's first invariant violation as an error, and the latency quartiles
//! of the operations' (issue, completion) times.

use std::collections::BTreeMap;

use ccsim_coherence::agents::PROGRAM_WAKE;
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, BuiltSystem, Platform};

use crate::invocation::percentile;
use crate::{trace_mode, werr, Point, RunError};

/// `platform`'s `system` for one point: its seed and trace, online checks
/// on, no random tester (the workload gives the agents programs).
pub(crate) fn build_for_program(
    platform: &Platform,
    system: &str,
    point: &Point<'_>,
) -> Result<BuiltSystem, RunError> {
    platform
        .build(
            system,
            BuildOptions {
                seed: point.seed,
                trace: trace_mode(point.trace),
                checks: true,
                tester: None,
            },
        )
        .map_err(RunError::Config)
}

/// The agents of `system` that play `role`, in agent order (at least one).
pub(crate) fn role_agents(
    s: &BuiltSystem,
    role: &str,
    system: &str,
) -> Result<Vec<usize>, RunError> {
    let r = s.protocol.protocol.ir.role_index(role).ok_or_else(|| {
        werr(format!(
            "system {system}: its protocol has no `{role}` role"
        ))
    })?;
    let agents: Vec<usize> = (0..s.protocol.agents.len())
        .filter(|&a| s.protocol.agents[a].role == r)
        .collect();
    if agents.is_empty() {
        return Err(werr(format!(
            "system {system}: no agent plays the `{role}` role"
        )));
    }
    Ok(agents)
}

/// The first agent of `system` that plays `role`.
pub(crate) fn role_agent(s: &BuiltSystem, role: &str, system: &str) -> Result<usize, RunError> {
    Ok(role_agents(s, role, system)?[0])
}

/// Appends `ops` to `agent`'s program, issued from `release`, and wakes the
/// agent then (or now, if `release` has passed) so that it takes them;
/// returns the index of the first appended operation.
pub(crate) fn append_and_wake(
    s: &mut BuiltSystem,
    agent: usize,
    ops: &[(u64, &str)],
    release: Tick,
) -> Result<usize, RunError> {
    let first = s.agent(agent).program_times().len();
    s.agent_mut(agent)
        .append_program(ops, release)
        .map_err(werr)?;
    let now = s.sim.now();
    let id = s.agents[agent];
    s.sim.wake(id, release.max(now), PROGRAM_WAKE);
    Ok(first)
}

/// The run's first invariant violation, as the error that reports it.
pub(crate) fn no_violation(s: &BuiltSystem) -> Result<(), RunError> {
    match s.checker.borrow().violations.first() {
        Some(v) => Err(RunError::Violation {
            message: format!("invariant violated: {v}"),
        }),
        None => Ok(()),
    }
}

/// `latency_ns` (the median), `p25_ns` and `p75_ns` of the operations'
/// (issue, completion) times, into `metrics`: exact (nearest rank), since
/// a spread of a nanosecond must not vanish into a histogram's buckets.
pub(crate) fn latency_quartiles<'a>(
    times: impl IntoIterator<Item = &'a (Tick, Tick)>,
    metrics: &mut BTreeMap<String, f64>,
) {
    let mut ns: Vec<f64> = times
        .into_iter()
        .map(|&(start, end)| (end - start) as f64 / 1000.0)
        .collect();
    ns.sort_by(f64::total_cmp);
    let at = |p: f64| {
        if ns.is_empty() {
            0.0
        } else {
            percentile(&ns, p)
        }
    };
    metrics.insert("latency_ns".to_string(), at(50.0));
    metrics.insert("p25_ns".to_string(), at(25.0));
    metrics.insert("p75_ns".to_string(), at(75.0));
}
