//! `ccsim_protocol::check` runs `ccsim-check`'s explorer with the progress
//! check on; the plain explorer (progress off, as for the reference models)
//! gives the same counts (which rumur also reports, see `exporters.rs`), so
//! the progress option changes what is checked, never what is explored.

use ccsim_check::{check as generic_check, CheckOptions, Outcome};
use ccsim_protocol::{check, generate, load_spec, system, CheckOptions as Opts};

#[test]
fn generic_explorer_agrees() {
    for name in ["eci-dc", "eci-cc"] {
        let spec = load_spec(name).unwrap();
        let mine = check(&spec, &Opts::default()).unwrap();
        let (ir, _) = generate(&spec).unwrap();
        let sys = system(ir, (&spec.check).into()).unwrap();
        let r = generic_check(&sys, &CheckOptions::default());
        assert_eq!(r.outcome, Outcome::Complete, "{name}");
        assert!(r.violations.is_empty(), "{name}");
        assert_eq!(r.states as usize, mine.reachable_states, "{name}");
        assert_eq!(r.transitions as usize, mine.system_transitions, "{name}");
    }
}

/// The generic explorer also finds the invocation deadlock on one DCU.
#[test]
fn generic_explorer_finds_invocation_deadlock() {
    use ccsim_protocol::invocation::{Invocation, InvocationConfig};
    let spec = load_spec("invocation").unwrap();
    let (ir, _) = generate(&spec).unwrap();
    let cfg = InvocationConfig {
        shared_unit: true,
        ..Default::default()
    };
    let m = Invocation::new(ir, cfg, 2).unwrap();
    let r = generic_check(&m, &CheckOptions::default());
    assert_eq!(r.violations.len(), 1);
    assert_eq!(r.violations[0].kind.name(), "deadlock");
}
