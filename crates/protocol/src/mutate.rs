//! Mutation testing of a generated table: delete or corrupt one transition
//! and check that the checker catches it with a counterexample.
//!
//! Three mutation kinds per `Go` row of the generated machine:
//! * `delete`: the row disappears (the event becomes unspecified there);
//! * `retarget`: the next state becomes the following state in table order,
//!   skipping a target that is a legal over-approximation of the correct one
//!   (see [`over_approximates`]: such a mutant is equivalent to the original
//!   and no checker can reject it);
//! * `drop-action`: the row loses one of its actions (one mutant per
//!   action; not `check` or `store`, the observers of the data-value property).

use crate::ir::{Outcome, ProtocolIr};

/// One mutant.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// What was changed, e.g. `delete (E, VICD)`.
    pub description: String,
    /// The mutated IR.
    pub ir: ProtocolIr,
}

/// Every single-row mutant of the generated machine, in table order.
pub fn mutants(ir: &ProtocolIr) -> Vec<Mutant> {
    let m = &ir.generated;
    let names: Vec<&str> = m.states.iter().map(|s| s.name.as_str()).collect();
    let mut out = Vec::new();
    for (i, t) in m.transitions.iter().enumerate() {
        let Outcome::Go { next, actions } = &t.outcome else {
            continue;
        };
        let row = format!("({}, {})", t.state, t.event);
        let mut del = ir.clone();
        del.generated.transitions.remove(i);
        out.push(Mutant {
            description: format!("delete {row}"),
            ir: del,
        });
        let k = names.iter().position(|n| n == next).expect("known state");
        let new_next = (1..names.len())
            .map(|d| names[(k + d) % names.len()])
            .find(|c| !over_approximates(ir, next, c))
            .unwrap_or(names[(k + 1) % names.len()])
            .to_string();
        let mut re = ir.clone();
        re.generated.transitions[i].outcome = Outcome::Go {
            next: new_next.clone(),
            actions: actions.clone(),
        };
        out.push(Mutant {
            description: format!("retarget {row}: {next} -> {new_next}"),
            ir: re,
        });
        for (k, dropped) in actions.iter().enumerate() {
            // `check` and `store` are the program's reads and writes, the
            // observers of the data-value property: removing one changes
            // what is observed, not the protocol, so no checker can object.
            if matches!(dropped, crate::ir::Action::Check | crate::ir::Action::Store) {
                continue;
            }
            let mut dr = ir.clone();
            let mut a = actions.clone();
            a.remove(k);
            dr.generated.transitions[i].outcome = Outcome::Go {
                next: next.clone(),
                actions: a,
            };
            out.push(Mutant {
                description: format!("drop-action {row}: {dropped}"),
                ir: dr,
            });
        }
    }
    out
}

/// Whether state `new` only over-approximates state `old`, so that a
/// transition retargeted from `old` to `new` is an *equivalent* mutant that
/// no checker can reject:
/// * stable states with the same home state whose remote view is `S` where
///   it was `I` (a directory may believe a silently dropped copy is still
///   shared) or `M` where it was `E` (a clean exclusive copy treated as dirty
///   costs one write-back of unchanged data);
/// * transient states whose rows match event for event, with the same
///   actions, and whose successors over-approximate pairwise (e.g. "wait for
///   the AXI write, then S" instead of "..., then I").
pub fn over_approximates(ir: &ProtocolIr, old: &str, new: &str) -> bool {
    over_approx(ir, old, new, 8)
}

fn over_approx(ir: &ProtocolIr, old: &str, new: &str, depth: u32) -> bool {
    if old == new {
        return true;
    }
    let find = |n: &str| ir.generated.states.iter().find(|s| s.name == n);
    let (Some(o), Some(n)) = (find(old), find(new)) else {
        return false;
    };
    if o.stable && n.stable {
        return o.home == n.home
            && matches!(
                (o.remote.as_deref(), n.remote.as_deref()),
                (Some("I"), Some("S")) | (Some("E"), Some("M"))
            );
    }
    if o.stable || n.stable || depth == 0 {
        return false;
    }
    let rows = |st: &str| -> Vec<&crate::ir::Transition> {
        ir.generated
            .transitions
            .iter()
            .filter(|t| t.state == st)
            .collect()
    };
    let (ro, rn) = (rows(old), rows(new));
    ro.len() == rn.len()
        && ro.iter().zip(&rn).all(|(a, b)| {
            a.event == b.event
                && match (&a.outcome, &b.outcome) {
                    (Outcome::Stall, Outcome::Stall) => true,
                    (
                        Outcome::Go {
                            next: na,
                            actions: aa,
                        },
                        Outcome::Go {
                            next: nb,
                            actions: ab,
                        },
                    ) => aa == ab && over_approx(ir, na, nb, depth - 1),
                    _ => false,
                }
        })
}
