//! What the workloads that drive a table-agent system with programs share
//! (`cxl_lsu`, `cxl_expander`, the CXL coherent bench): finding the agents
//! that play a role, the run's first invariant violation as an error, and
//! the latency quartiles of the operations' (issue, completion) times.

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;
use ccsim_platform::BuiltSystem;

use crate::{werr, RunError};

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
/// (issue, completion) times, into `metrics`.
pub(crate) fn latency_quartiles<'a>(
    times: impl IntoIterator<Item = &'a (Tick, Tick)>,
    metrics: &mut BTreeMap<String, f64>,
) {
    let mut hist = hdrhistogram::Histogram::<u64>::new(3).expect("3 significant digits");
    for &(start, end) in times {
        hist.record(end - start).expect("auto-resizing histogram");
    }
    let ns = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    metrics.insert("latency_ns".to_string(), ns(0.5));
    metrics.insert("p25_ns".to_string(), ns(0.25));
    metrics.insert("p75_ns".to_string(), ns(0.75));
}
