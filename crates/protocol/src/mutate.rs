//! Mutation testing of a generated table: delete or corrupt one transition
//! and check that the checker catches it with a counterexample.
//!
//! Three mutation kinds per `Go` row of a machine (the generated one, or
//! any role's with [`mutants_of_role`]):
//! * `delete`: the row disappears (the event becomes unspecified there);
//!   rows of local events are not deleted: without one the program simply
//!   never issues that op there, which removes behaviour and cannot be
//!   wrong;
//! * `retarget`: the next state becomes the following state in table order,
//!   skipping a target that is a legal over-approximation of the correct one
//!   (see [`over_approximates`]: such a mutant is equivalent to the original
//!   and no checker can reject it);
//! * `drop-action`: the row loses one of its actions (one mutant per
//!   action; not `check`, `store` or `write`, the observers of the
//!   data-value property, nor a `fill` that a later `write` of the same row
//!   overwrites).

use std::collections::BTreeSet;

use crate::ir::{Outcome, ProtocolIr};
use crate::{check_ir, GenStats, RowKey, SpecError, SystemConfig};

/// One mutant.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// What was changed, e.g. `delete (E, VICD)`.
    pub description: String,
    /// The mutated IR.
    pub ir: ProtocolIr,
    /// The row it changed: (role index, state, event, guard), as
    /// [`crate::fired_rows`] names the rows that fire.
    pub row: RowKey,
}

/// What the exhaustive checker says of a mutant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckerVerdict {
    /// A property fails (its name: `swmr`, `data-value`, `deadlock`, ...).
    Caught(String),
    /// Every property holds: an equivalent mutant in this configuration, or
    /// one only a larger system can tell apart.
    Survived,
    /// The row never fires in the checked configuration, so no checker of
    /// it can see the change.
    Unexercised,
}

/// Every single-row mutant of every role of `ir`, judged by the checker on
/// `cfg` (`stats` from the generation of `ir`), in role and table order.
pub fn judge_all(
    ir: &ProtocolIr,
    stats: &GenStats,
    cfg: &SystemConfig,
) -> Result<Vec<(Mutant, CheckerVerdict)>, SpecError> {
    judge_roles(ir, stats, cfg, 0..ir.roles.len())
}

/// [`judge_all`] for the mutants of `roles` only.
pub fn judge_roles(
    ir: &ProtocolIr,
    stats: &GenStats,
    cfg: &SystemConfig,
    roles: impl IntoIterator<Item = usize>,
) -> Result<Vec<(Mutant, CheckerVerdict)>, SpecError> {
    let fired: BTreeSet<RowKey> = crate::exercised(ir.clone(), cfg.clone())?;
    let mut out = Vec::new();
    for r in roles {
        for m in mutants_of_role(ir, r) {
            let verdict = if !fired.contains(&m.row) {
                CheckerVerdict::Unexercised
            } else {
                let report = check_ir(m.ir.clone(), stats.clone(), cfg.clone(), 0)?;
                // No violation (verified, or stopped at the state limit
                // without one): survived.
                match report.violations.first() {
                    Some(v) => CheckerVerdict::Caught(v.property.clone()),
                    None => CheckerVerdict::Survived,
                }
            };
            out.push((m, verdict));
        }
    }
    Ok(out)
}

/// Every single-row mutant of the generated machine (or, for a role-form
/// spec, the home's), in table order.
pub fn mutants(ir: &ProtocolIr) -> Vec<Mutant> {
    let r = ir.role_index(&ir.primary().role).expect("a role");
    mutants_of_role(ir, r)
}

/// Every single-row mutant of role `r`'s machine, in table order.
pub fn mutants_of_role(ir: &ProtocolIr, r: usize) -> Vec<Mutant> {
    let m = &ir.roles[r];
    let names: Vec<&str> = m.states.iter().map(|s| s.name.as_str()).collect();
    let mut out = Vec::new();
    for (i, t) in m.transitions.iter().enumerate() {
        let Outcome::Go { next, actions } = &t.outcome else {
            continue;
        };
        let row = match t.guard {
            Some(g) => format!("{}: ({}, {} [{}])", m.name, t.state, t.event, g.as_str()),
            None if ir.generated().is_some() => format!("({}, {})", t.state, t.event),
            None => format!("{}: ({}, {})", m.name, t.state, t.event),
        };
        let local = m.events.iter().any(|e| e.name == t.event && !e.message);
        let key = (r, t.state.clone(), t.event.clone(), t.guard);
        if !local {
            let mut del = ir.clone();
            del.roles[r].transitions.remove(i);
            out.push(Mutant {
                description: format!("delete {row}"),
                ir: del,
                row: key.clone(),
            });
        }
        let k = names.iter().position(|n| n == next).expect("known state");
        let new_next = (1..names.len())
            .map(|d| names[(k + d) % names.len()])
            .find(|c| !over_approximates_in(ir, r, next, c))
            .unwrap_or(names[(k + 1) % names.len()])
            .to_string();
        let mut re = ir.clone();
        re.roles[r].transitions[i].outcome = Outcome::Go {
            next: new_next.clone(),
            actions: actions.clone(),
        };
        out.push(Mutant {
            description: format!("retarget {row}: {next} -> {new_next}"),
            ir: re,
            row: key.clone(),
        });
        for (k, dropped) in actions.iter().enumerate() {
            // `check` and `store` are the program's reads and writes, the
            // observers of the data-value property: removing one changes
            // what is observed, not the protocol, so no checker can object.
            use crate::ir::Action;
            if matches!(
                dropped,
                Action::Check | Action::CheckWindow | Action::Store | Action::Write
            ) || (*dropped == Action::Fill && actions[k..].contains(&Action::Write))
            {
                continue;
            }
            let mut dr = ir.clone();
            let mut a = actions.clone();
            a.remove(k);
            dr.roles[r].transitions[i].outcome = Outcome::Go {
                next: next.clone(),
                actions: a,
            };
            out.push(Mutant {
                description: format!("drop-action {row}: {dropped}"),
                ir: dr,
                row: key.clone(),
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
    let r = ir.role_index(&ir.primary().role).expect("a role");
    over_approximates_in(ir, r, old, new)
}

/// [`over_approximates`] for the states of role `r`.
pub fn over_approximates_in(ir: &ProtocolIr, r: usize, old: &str, new: &str) -> bool {
    over_approx(ir, r, old, new, 8)
}

fn over_approx(ir: &ProtocolIr, r: usize, old: &str, new: &str, depth: u32) -> bool {
    if old == new {
        return true;
    }
    let m = &ir.roles[r];
    let find = |n: &str| m.states.iter().find(|s| s.name == n);
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
        m.transitions.iter().filter(|t| t.state == st).collect()
    };
    let (ro, rn) = (rows(old), rows(new));
    ro.len() == rn.len()
        && ro.iter().zip(&rn).all(|(a, b)| {
            a.event == b.event
                && a.guard == b.guard
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
                    ) => aa == ab && over_approx(ir, r, na, nb, depth - 1),
                    _ => false,
                }
        })
}
