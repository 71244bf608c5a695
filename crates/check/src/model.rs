//! The interface a model implements to be checked.
//!
//! A model is a guarded-command transition system, the same shape as a Murphi
//! program: a set of initial states, a set of rules enabled in a state, and the
//! successor a rule produces. Properties are named invariants over states.
//! Deadlock freedom is checked by the explorer itself: a reachable state with no
//! enabled rule that the model does not call [`Model::is_quiescent`] is a
//! deadlock. With [`CheckOptions::progress`](crate::CheckOptions::progress)
//! the explorer also checks that a quiescent state stays reachable from every
//! reachable state through the actions [`Model::is_helping`] allows.

use std::fmt::Debug;
use std::hash::Hash;

/// One step of a message sequence chart: `from` sent `label` to `to`, or a
/// local step when `from == to`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChartStep {
    /// The agent that acts (sends, or steps locally).
    pub from: String,
    /// The agent that receives; equal to `from` for a local step.
    pub to: String,
    /// What happened, e.g. `RLDX(A)` or `store A=1`.
    pub label: String,
}

/// A named invariant that must hold in every reachable state.
pub struct Invariant<M: Model + ?Sized> {
    /// Short name used in reports, e.g. `swmr` or `data-value`.
    pub name: &'static str,
    /// Returns `Err(explanation)` when the invariant is violated in `state`.
    pub check: fn(&M, &M::State) -> Result<(), String>,
}

/// A transition system that the explorer can check exhaustively.
pub trait Model {
    /// A system state. Must be cheap to clone and hash: the explorer stores
    /// every reachable state once.
    type State: Clone + Eq + Hash + Debug;
    /// A rule instance enabled in some state (the Murphi `rule`/`ruleset`
    /// parameters included), e.g. `Deliver { chan: Fwd, msg: 3 }`.
    type Action: Clone + Debug;

    /// The initial states (a Murphi `startstate`, possibly parameterised).
    fn init_states(&self) -> Vec<Self::State>;

    /// Pushes every action enabled in `state` onto `out` (which is cleared by
    /// the caller). The order must be deterministic.
    fn actions(&self, state: &Self::State, out: &mut Vec<Self::Action>);

    /// The successor of `state` under `action`; `None` when the action turns
    /// out to be disabled (a guard checked late).
    fn next_state(&self, state: &Self::State, action: &Self::Action) -> Option<Self::State>;

    /// The invariants to check in every reachable state.
    fn invariants(&self) -> Vec<Invariant<Self>>;

    /// Whether a state with no enabled action is an acceptable end (nothing
    /// pending), and, for the progress check, a state the system must always
    /// be able to get back to. The default treats every state with no enabled
    /// action as a deadlock.
    fn is_quiescent(&self, _state: &Self::State) -> bool {
        false
    }

    /// Whether `action` taken from `state` helps the system towards a
    /// quiescent state, for the progress check
    /// ([`CheckOptions::progress`](crate::CheckOptions::progress)): only
    /// helping actions are followed when asking whether a quiescent state is
    /// still reachable. A protocol model answers `true` for message
    /// deliveries and steps of agents already in a transaction and `false`
    /// for an agent starting a new one, so that a transaction that only
    /// finishes if someone else starts another counts as stuck. The default
    /// lets every action help.
    fn is_helping(&self, _state: &Self::State, _action: &Self::Action) -> bool {
        true
    }

    /// How `action` taken from `state` appears in a message sequence chart.
    /// The default prints the action's `Debug` form as a local step.
    fn chart_step(&self, _state: &Self::State, action: &Self::Action) -> ChartStep {
        ChartStep {
            from: "system".into(),
            to: "system".into(),
            label: format!("{action:?}"),
        }
    }

    /// The agents (lifelines) of the message sequence chart, left to right.
    fn agents(&self) -> Vec<String> {
        vec!["system".into()]
    }
}
