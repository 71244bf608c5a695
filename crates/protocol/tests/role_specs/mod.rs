// Each test binary that includes this module uses a part of it.
#![allow(dead_code)]

//! Helpers the role-form spec tests share: a spec's checking configuration
//! with other instance counts, a check with it, and a golden message
//! sequence driven step by step through the composed system.

use ccsim_check::model::Model;
use ccsim_protocol::mutate::{judge_roles, CheckerVerdict};
use ccsim_protocol::system::{SysAction, System};
use ccsim_protocol::{check, generate, load_spec, CheckOptions, SystemConfig};

/// `spec`'s checking configuration with `instances` per role.
pub fn config_of(spec: &str, instances: &[(&str, u8)]) -> SystemConfig {
    let spec = load_spec(spec).unwrap();
    let mut cfg: SystemConfig = (&spec.check).into();
    for &(role, n) in instances {
        cfg.instances.insert(role.into(), n);
    }
    cfg
}

/// Checks `spec` on `cfg` (the default state limit).
pub fn check_with(spec: &str, cfg: SystemConfig) -> ccsim_protocol::CheckReport {
    let spec = load_spec(spec).unwrap();
    check(
        &spec,
        &CheckOptions {
            config: Some(cfg),
            max_states: 0,
        },
    )
    .unwrap()
}

/// Drives the composed system through `script`: each step names the
/// chart arrow `from -> to: label` (or `agent: event(...)` for a local
/// step) exactly, and the enabled action that matches runs. Returns the
/// final state, which must be quiescent.
pub fn run_script(sys: &System, script: &[&str]) -> String {
    let s = run_steps(sys, script);
    assert!(sys.quiescent(&s), "{}", sys.describe(&s));
    sys.describe(&s)
}

/// The state after `script` (see [`run_script`]).
pub fn run_steps(sys: &System, script: &[&str]) -> <System as Model>::State {
    let mut s = sys.init_states().remove(0);
    let mut actions = Vec::new();
    for want in script {
        actions.clear();
        sys.actions(&s, &mut actions);
        let found: Option<SysAction> = actions.iter().find(|a| arrow(sys, &s, a) == *want).cloned();
        let a = found.unwrap_or_else(|| {
            let enabled: Vec<String> = actions.iter().map(|a| arrow(sys, &s, a)).collect();
            panic!("step {want:?} is not enabled; enabled: {enabled:#?}")
        });
        s = sys.next_state(&s, &a).expect("enabled");
    }
    s
}

/// An action as a chart arrow: `from -> to: label`, or `agent: label`.
pub fn arrow(sys: &System, s: &<System as Model>::State, a: &SysAction) -> String {
    let c = sys.chart_step(s, a);
    if c.from == c.to {
        format!("{}: {}", c.from, c.label)
    } else {
        format!("{} -> {}: {}", c.from, c.to, c.label)
    }
}

/// The composed system of `spec` in its `[check]` configuration.
pub fn shipped_system(spec: &str) -> System {
    let spec = load_spec(spec).unwrap();
    let (ir, _) = generate(&spec).unwrap();
    System::new(ir, (&spec.check).into()).unwrap()
}

/// The single-row mutants of `role` the checker does not catch in `spec`'s
/// `[check]` configuration (it lets them pass, or their row never runs), as
/// `description (verdict)`.
pub fn escapes(spec: &str, role: &str) -> Vec<String> {
    let spec = load_spec(spec).unwrap();
    let (ir, stats) = generate(&spec).unwrap();
    let r = ir.role_index(role).unwrap();
    judge_roles(&ir, &stats, &(&spec.check).into(), [r])
        .unwrap()
        .into_iter()
        .filter(|(_, v)| !matches!(v, CheckerVerdict::Caught(_)))
        .map(|(m, v)| format!("{} ({v:?})", m.description))
        .collect()
}
