//! Behaviour of the explorer on small hand-made models.

use ccsim_check::{check, CheckOptions, Explorer, Invariant, Model, Outcome, ViolationKind};

/// A walker on a W x H grid from (0, 0) (and optionally also from (1, 0)):
/// `Right` and `Up` move while inside the grid; at the right edge a `Jump`
/// action is listed but always disabled (`next_state` returns `None`).
struct Grid {
    w: u8,
    h: u8,
    two_starts: bool,
    quiescent_corner: bool,
    max_sum: Option<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Right,
    Up,
    Jump,
}

impl Grid {
    fn new(w: u8, h: u8) -> Self {
        Grid {
            w,
            h,
            two_starts: false,
            quiescent_corner: false,
            max_sum: None,
        }
    }
}

impl Model for Grid {
    type State = (u8, u8);
    type Action = Step;

    fn init_states(&self) -> Vec<(u8, u8)> {
        if self.two_starts {
            vec![(0, 0), (1, 0), (0, 0)]
        } else {
            vec![(0, 0)]
        }
    }
    fn actions(&self, &(x, y): &(u8, u8), out: &mut Vec<Step>) {
        if x + 1 < self.w {
            out.push(Step::Right);
        } else {
            out.push(Step::Jump);
        }
        if y + 1 < self.h {
            out.push(Step::Up);
        }
    }
    fn next_state(&self, &(x, y): &(u8, u8), a: &Step) -> Option<(u8, u8)> {
        match a {
            Step::Right => Some((x + 1, y)),
            Step::Up => Some((x, y + 1)),
            Step::Jump => None,
        }
    }
    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![Invariant {
            name: "sum-bound",
            check: |m, &(x, y)| match m.max_sum {
                Some(k) if x + y > k => Err(format!("x + y = {} > {k}", x + y)),
                _ => Ok(()),
            },
        }]
    }
    fn is_quiescent(&self, &(x, y): &(u8, u8)) -> bool {
        self.quiescent_corner && x + 1 == self.w && y + 1 == self.h
    }
}

#[test]
fn counts_and_late_guards() {
    let g = Grid {
        quiescent_corner: true,
        ..Grid::new(4, 3)
    };
    let r = check(&g, &CheckOptions::default());
    assert!(r.passed(), "{}", r.summary());
    assert_eq!(r.states, 12);
    // Right: 3 columns x 3 rows, Up: 4 x 2; Jump never fires.
    assert_eq!(r.transitions, 9 + 8);
    assert_eq!(r.initial_states, 1);
    assert_eq!(r.max_depth, 5);
}

#[test]
fn deadlock_when_only_disabled_actions_remain() {
    let r = check(&Grid::new(4, 3), &CheckOptions::default());
    assert_eq!(r.outcome, Outcome::ViolationLimit);
    let v = &r.violations[0];
    assert_eq!(v.kind, ViolationKind::Deadlock);
    assert!(v.explanation.contains("disabled"), "{}", v.explanation);
    assert_eq!(v.trace.steps.len(), 5);
    assert_eq!(v.trace.steps.last().unwrap().state, "(3, 2)");
    let no_deadlock = CheckOptions {
        check_deadlock: false,
        ..CheckOptions::default()
    };
    assert!(check(&Grid::new(4, 3), &no_deadlock).passed());
}

#[test]
fn state_limit_gives_incomplete_result() {
    let opts = CheckOptions {
        max_states: Some(5),
        check_deadlock: false,
        ..CheckOptions::default()
    };
    let r = check(&Grid::new(10, 10), &opts);
    assert_eq!(r.outcome, Outcome::StateLimit);
    assert!(!r.complete() && !r.passed());
    assert_eq!(r.states, 5);
    assert!(r.summary().contains("INCOMPLETE"));
}

#[test]
fn invariant_violation_has_shortest_trace_and_typed_path() {
    let g = Grid {
        max_sum: Some(3),
        quiescent_corner: true,
        ..Grid::new(5, 5)
    };
    let mut ex = Explorer::new(&g, CheckOptions::default());
    let r = ex.run();
    assert_eq!(r.outcome, Outcome::ViolationLimit);
    let v = &r.violations[0];
    assert_eq!(v.kind, ViolationKind::Invariant("sum-bound".into()));
    assert_eq!(v.explanation, "x + y = 4 > 3");
    assert_eq!(v.trace.steps.len(), 4);
    assert_eq!(v.trace.initial, "(0, 0)");
    let path = ex.path_to(v.state_id);
    assert_eq!(path.len(), 5);
    assert_eq!(path[0], (None, (0, 0)));
    assert_eq!(ex.depth_of(v.state_id), 4);
    assert_eq!(ex.find(&path[4].1), Some(v.state_id));
    // First action that reaches each child: BFS explores Right before Up.
    assert_eq!(path[1].0, Some(Step::Right));
}

#[test]
fn collects_several_violations_and_does_not_expand_bad_states() {
    let g = Grid {
        max_sum: Some(2),
        quiescent_corner: true,
        ..Grid::new(3, 3)
    };
    let opts = CheckOptions {
        max_violations: usize::MAX,
        ..CheckOptions::default()
    };
    let r = check(&g, &opts);
    assert_eq!(r.outcome, Outcome::Complete);
    // (2,1) and (1,2) violate x + y <= 2 and are not expanded, so (2,2) is
    // never reached.
    assert_eq!(r.violations.len(), 2);
    assert_eq!(r.states, 8);
    let opts = CheckOptions {
        max_violations: 1,
        ..opts
    };
    assert_eq!(check(&g, &opts).violations.len(), 1);
}

#[test]
fn duplicate_initial_states_are_stored_once() {
    let g = Grid {
        two_starts: true,
        quiescent_corner: true,
        ..Grid::new(3, 1)
    };
    let r = check(&g, &CheckOptions::default());
    assert!(r.passed(), "{}", r.summary());
    assert_eq!(r.initial_states, 2);
    assert_eq!(r.states, 3);
    // (0,0)->(1,0), (1,0)->(2,0): 2 transitions.
    assert_eq!(r.transitions, 2);
}

#[test]
fn report_serialises_to_json() {
    let r = check(&Grid::new(2, 2), &CheckOptions::default());
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["outcome"], "violation-limit");
    assert_eq!(j["violations"][0]["kind"], "deadlock");
    assert_eq!(j["violations"][0]["trace"]["agents"][0], "system");
    assert!(j["seconds"].is_number());
}

#[test]
fn progress_callback_is_called() {
    let g = Grid {
        quiescent_corner: true,
        ..Grid::new(10, 10)
    };
    let mut seen = Vec::new();
    let r = Explorer::new(&g, CheckOptions::default()).run_with_progress(25, |p| seen.push(*p));
    assert!(r.passed());
    assert_eq!(
        seen.iter().map(|p| p.expanded).collect::<Vec<_>>(),
        vec![25, 50, 75, 100]
    );
    assert!(seen.iter().all(|p| p.states >= p.expanded));
}
