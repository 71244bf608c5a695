//! The progress check (`CheckOptions::progress`, `AG EF quiescent` over
//! helping actions): models with no dead end that still cannot get back to
//! quiescence are caught, correct ones pass, and non-helping actions are not
//! followed.

use ccsim_check::{check, CheckOptions, Invariant, Model, Outcome, ViolationKind};

const IDLE: u8 = 0;
const WAITING: u8 = 1;
const HOLDING: u8 = 2;

/// Two clients and a lock. A client requests the lock (starting a
/// transaction), acquires it when free or retries while it is busy, and
/// releases it. With `lost_unlock`, client 1's release forgets to free the
/// lock: nothing ever dead-ends (a waiting client can always retry, an idle
/// one can always request), yet the system never gets back to quiescence.
struct Lock {
    lost_unlock: bool,
}

/// `(phases of client 0 and 1, lock owner + 1 or 0 when free)`.
type LockState = ([u8; 2], u8);

#[derive(Clone, Debug, PartialEq)]
enum LockAction {
    Request(usize),
    Acquire(usize),
    Retry(usize),
    Release(usize),
}

impl Model for Lock {
    type State = LockState;
    type Action = LockAction;

    fn init_states(&self) -> Vec<LockState> {
        vec![([IDLE, IDLE], 0)]
    }

    fn actions(&self, (phase, lock): &LockState, out: &mut Vec<LockAction>) {
        for (i, &p) in phase.iter().enumerate() {
            out.push(match p {
                IDLE => LockAction::Request(i),
                WAITING if *lock == 0 => LockAction::Acquire(i),
                WAITING => LockAction::Retry(i),
                _ => LockAction::Release(i),
            });
        }
    }

    fn next_state(&self, (phase, lock): &LockState, a: &LockAction) -> Option<LockState> {
        let (mut phase, mut lock) = (*phase, *lock);
        match *a {
            LockAction::Request(i) => phase[i] = WAITING,
            LockAction::Acquire(i) => {
                phase[i] = HOLDING;
                lock = i as u8 + 1;
            }
            LockAction::Retry(_) => {}
            LockAction::Release(i) => {
                phase[i] = IDLE;
                if !(self.lost_unlock && i == 1) {
                    lock = 0;
                }
            }
        }
        Some((phase, lock))
    }

    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![Invariant {
            name: "mutex",
            check: |_, (phase, _)| {
                if phase == &[HOLDING, HOLDING] {
                    Err("both clients hold the lock".into())
                } else {
                    Ok(())
                }
            },
        }]
    }

    fn is_quiescent(&self, (phase, lock): &LockState) -> bool {
        phase == &[IDLE, IDLE] && *lock == 0
    }

    /// Starting a new transaction does not help finish the open ones.
    fn is_helping(&self, _s: &LockState, a: &LockAction) -> bool {
        !matches!(a, LockAction::Request(_))
    }
}

fn with_progress() -> CheckOptions {
    CheckOptions {
        progress: true,
        ..CheckOptions::default()
    }
}

#[test]
fn correct_lock_makes_progress() {
    let off = check(&Lock { lost_unlock: false }, &CheckOptions::default());
    let on = check(&Lock { lost_unlock: false }, &with_progress());
    // 8 states: every pair of phases except both holding; 2 actions each.
    for r in [&off, &on] {
        assert!(r.passed(), "{}", r.summary());
        assert_eq!((r.states, r.transitions), (8, 16));
    }
}

#[test]
fn lost_unlock_has_no_dead_end_but_no_progress() {
    let model = Lock { lost_unlock: true };
    // The dead-end check alone passes: every state has an enabled action.
    let off = check(&model, &CheckOptions::default());
    assert!(off.passed(), "{}", off.summary());
    assert_eq!((off.states, off.transitions), (12, 24));

    let on = check(&model, &with_progress());
    assert_eq!((on.states, on.transitions), (12, 24), "same exploration");
    assert_eq!(on.outcome, Outcome::ViolationLimit);
    assert_eq!(on.violations.len(), 1);
    let v = &on.violations[0];
    assert_eq!(v.kind, ViolationKind::NoProgress);
    assert_eq!(v.kind.name(), "no-progress");
    // Shortest: once client 1 has requested, the only way on is for it to
    // acquire and then release, which keeps the lock forever. Only the
    // initial state, client 0 waiting and client 0 holding can settle.
    assert_eq!(v.trace.steps.len(), 1);
    assert_eq!(v.trace.steps[0].action, "Request(1)");
    assert_eq!(v.trace.steps[0].state, "([0, 1], 0)");
    assert!(
        v.explanation
            .ends_with("(9 of 12 reachable states cannot reach one)"),
        "{}",
        v.explanation
    );
    assert!(
        v.msc_text()
            .contains("!! no progress: no quiescent state is reachable"),
        "{}",
        v.msc_text()
    );
    assert!(v.msc_mermaid().contains("no progress"));
}

/// A graph given as edges `(from, to, helping)`; state 0 is quiescent.
struct Graph {
    edges: &'static [(u8, u8, bool)],
    /// When false, every action helps (the trait's default).
    use_helping: bool,
    /// A state the invariant forbids, if any.
    forbidden: Option<u8>,
}

impl Model for Graph {
    type State = u8;
    type Action = (u8, bool);

    fn init_states(&self) -> Vec<u8> {
        vec![0]
    }
    fn actions(&self, s: &u8, out: &mut Vec<(u8, bool)>) {
        out.extend(
            self.edges
                .iter()
                .filter(|e| e.0 == *s)
                .map(|&(_, to, helping)| (to, helping)),
        );
    }
    fn next_state(&self, _s: &u8, a: &(u8, bool)) -> Option<u8> {
        Some(a.0)
    }
    fn invariants(&self) -> Vec<Invariant<Self>> {
        vec![Invariant {
            name: "not-forbidden",
            check: |m, s| match m.forbidden {
                Some(f) if f == *s => Err(format!("reached {s}")),
                _ => Ok(()),
            },
        }]
    }
    fn is_quiescent(&self, s: &u8) -> bool {
        *s == 0
    }
    fn is_helping(&self, _s: &u8, a: &(u8, bool)) -> bool {
        !self.use_helping || a.1
    }
}

/// 0 -> 1 starts work; from 1 the work either finishes (2 -> 0), spins
/// forever in 3, or spins in 5, whose only way out (5 -> 6 -> 0) starts new
/// work. BFS order: 0, 1, 5, 2, 3, 6.
const EDGES: &[(u8, u8, bool)] = &[
    (0, 1, false),
    (1, 5, true),
    (1, 2, true),
    (1, 3, true),
    (2, 0, true),
    (3, 3, true),
    (5, 5, true),
    (5, 6, false),
    (6, 0, true),
];

#[test]
fn only_helping_actions_count_towards_progress() {
    let strict = Graph {
        edges: EDGES,
        use_helping: true,
        forbidden: None,
    };
    let r = check(&strict, &with_progress());
    assert_eq!((r.states, r.transitions), (6, 9));
    let v = &r.violations[0];
    assert_eq!(v.kind, ViolationKind::NoProgress);
    // 5 can only leave by starting new work: stuck, and first in BFS order.
    assert_eq!(r.violations.len(), 1);
    assert_eq!(
        v.trace.steps.iter().map(|s| &s.state).collect::<Vec<_>>(),
        ["1", "5"]
    );
    assert!(v.explanation.contains("(2 of 6 "), "{}", v.explanation);

    // With every action helping, only the spin in 3 is stuck.
    let lax = Graph {
        use_helping: false,
        ..strict
    };
    let r = check(&lax, &with_progress());
    let v = &r.violations[0];
    assert_eq!(
        v.trace.steps.iter().map(|s| &s.state).collect::<Vec<_>>(),
        ["1", "3"]
    );
    assert!(v.explanation.contains("(1 of 6 "), "{}", v.explanation);

    // Without the option there is no dead end, so nothing is reported.
    assert!(check(&lax, &CheckOptions::default()).passed());
}

/// With several violations collected, a state already reported (here an
/// invariant violation, which is not expanded) is not blamed again, nor are
/// its ancestors for lack of a way through it.
#[test]
fn reported_states_are_not_blamed_twice() {
    let m = Graph {
        edges: EDGES,
        use_helping: false,
        forbidden: Some(5),
    };
    let opts = CheckOptions {
        max_violations: usize::MAX,
        ..with_progress()
    };
    let r = check(&m, &opts);
    assert_eq!(r.outcome, Outcome::Complete);
    // 5 is not expanded, so 6 is never found.
    assert_eq!((r.states, r.transitions), (5, 6));
    let kinds: Vec<_> = r.violations.iter().map(|v| v.kind.name()).collect();
    assert_eq!(kinds, ["not-forbidden", "no-progress"]);
    assert_eq!(r.violations[1].trace.steps[1].state, "3");
}
