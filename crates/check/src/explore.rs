//! Breadth-first explicit-state exploration of a [`Model`].
//!
//! The explorer keeps every reachable state exactly once, in discovery order,
//! in one vector; a hash table of `u32` indices into that vector (hashed with
//! FxHash) is the visited set, and a parallel vector holds each state's parent
//! index. Because discovery order is breadth-first order, the vector doubles as
//! the BFS queue: the explorer simply expands state 0, 1, 2, … until it catches
//! up with the end. Counterexample traces are rebuilt from the parent indices
//! (re-deriving the action between each parent and child), so they are
//! shortest traces.
//!
//! With [`CheckOptions::progress`] the explorer also records, for every
//! expanded state, the indices of the successors reached by helping actions
//! ([`Model::is_helping`]) in one compressed successor array. After a
//! complete exploration it inverts that array and searches backwards from
//! the quiescent states; every state the search does not reach cannot get
//! back to quiescence, and the first such state in BFS order (hence one with
//! a shortest trace) is reported as [`ViolationKind::NoProgress`].

use std::hash::BuildHasher;
use std::time::Instant;

use hashbrown::hash_table::{Entry, HashTable};
use rustc_hash::FxBuildHasher;
use serde::Serialize;

use crate::model::{ChartStep, Invariant, Model};

/// Index of a state in the explorer's discovery order (0 is the first initial
/// state).
pub type StateId = u32;

const NO_PARENT: u32 = u32::MAX;

/// Options of one exploration.
#[derive(Clone, Debug, Serialize)]
pub struct CheckOptions {
    /// Stop with [`Outcome::StateLimit`] (an incomplete result) once this many
    /// distinct states have been found. `None`: no limit (besides the
    /// `u32::MAX - 1` states the explorer can index).
    pub max_states: Option<usize>,
    /// Stop once this many violations have been collected. The default, 1,
    /// stops at the first violation; `usize::MAX` keeps going to the end.
    /// States that violate an invariant are not expanded.
    pub max_violations: usize,
    /// Report reachable states with no enabled action (that the model does
    /// not call quiescent) as deadlocks. Default `true`.
    pub check_deadlock: bool,
    /// Check progress (`AG EF quiescent`): from every reachable state some
    /// state that [`Model::is_quiescent`] accepts must be reachable through
    /// actions that [`Model::is_helping`] allows. A violation is reported as
    /// [`ViolationKind::NoProgress`]. The check runs after a complete
    /// exploration (not after one stopped by a limit). It keeps one `u32`
    /// per helping transition and one `usize` per state while exploring, and
    /// about as much again for the final backward search; default `false`
    /// (no extra memory or time).
    pub progress: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            max_states: None,
            max_violations: 1,
            check_deadlock: true,
            progress: false,
        }
    }
}

/// A progress snapshot passed to the callback of
/// [`Explorer::run_with_progress`].
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Progress {
    /// States expanded so far.
    pub expanded: u64,
    /// Distinct states found so far (`states - expanded` are queued).
    pub states: u64,
    /// Transitions fired so far.
    pub transitions: u64,
    /// Seconds since the start.
    pub seconds: f64,
}

/// How an exploration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every reachable state was visited (violations, if any, were collected
    /// along the way without reaching `max_violations`).
    Complete,
    /// Stopped after collecting `max_violations` violations; the state space
    /// was not fully explored.
    ViolationLimit,
    /// Stopped because `max_states` distinct states were found; the result is
    /// incomplete.
    StateLimit,
}

/// What kind of property a [`Violation`] breaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "kebab-case")]
pub enum ViolationKind {
    /// The named invariant is false in the last state of the trace.
    Invariant(String),
    /// The last state of the trace has no enabled action and is not quiescent.
    Deadlock,
    /// No quiescent state is reachable from the last state of the trace
    /// through helping actions, although actions may still be enabled (a
    /// livelock, or a deadlock of some agents while others keep taking
    /// steps). Only reported with [`CheckOptions::progress`].
    NoProgress,
}

impl ViolationKind {
    /// The invariant's name, `deadlock` or `no-progress`.
    pub fn name(&self) -> &str {
        match self {
            ViolationKind::Invariant(n) => n,
            ViolationKind::Deadlock => "deadlock",
            ViolationKind::NoProgress => "no-progress",
        }
    }
}

/// One step of a counterexample trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceStep {
    /// The action taken (its `Debug` form).
    pub action: String,
    /// How the action appears in a message sequence chart
    /// ([`Model::chart_step`]).
    pub chart: ChartStep,
    /// The state reached (its `Debug` form).
    pub state: String,
}

/// A counterexample trace: the initial state, then each action and the state
/// it leads to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// The lifelines of the chart ([`Model::agents`]), left to right.
    pub agents: Vec<String>,
    /// The initial state (its `Debug` form).
    pub initial: String,
    /// The steps from the initial state to the violating state.
    pub steps: Vec<TraceStep>,
}

impl Trace {
    /// The chart steps of the trace, in order.
    pub fn chart_steps(&self) -> Vec<ChartStep> {
        self.steps.iter().map(|s| s.chart.clone()).collect()
    }

    /// The trace as a text message sequence chart (see [`crate::msc`]).
    pub fn msc_text(&self) -> String {
        crate::msc::render_text(&self.agents, &self.chart_steps(), None)
    }

    /// The trace as a Mermaid `sequenceDiagram` (see [`crate::msc`]).
    pub fn msc_mermaid(&self) -> String {
        crate::msc::render_mermaid(&self.agents, &self.chart_steps(), None)
    }
}

/// A property violation with its (shortest) counterexample trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Which property is violated.
    #[serde(flatten)]
    pub kind: ViolationKind,
    /// The invariant's explanation, or a description of the deadlock or
    /// missing progress.
    pub explanation: String,
    /// Index of the violating state in discovery order (for
    /// [`Explorer::path_to`]).
    pub state_id: StateId,
    /// The trace from an initial state to the violating state.
    pub trace: Trace,
}

impl Violation {
    /// The counterexample as a text message sequence chart, with the
    /// violation written under it.
    pub fn msc_text(&self) -> String {
        crate::msc::render_text(
            &self.trace.agents,
            &self.trace.chart_steps(),
            Some(&self.footer()),
        )
    }

    /// The counterexample as a Mermaid `sequenceDiagram`, with the violation
    /// as a final note.
    pub fn msc_mermaid(&self) -> String {
        crate::msc::render_mermaid(
            &self.trace.agents,
            &self.trace.chart_steps(),
            Some(&self.footer()),
        )
    }

    fn footer(&self) -> String {
        match &self.kind {
            ViolationKind::Invariant(n) => {
                format!("invariant {n} violated: {}", self.explanation)
            }
            ViolationKind::Deadlock => format!("deadlock: {}", self.explanation),
            ViolationKind::NoProgress => format!("no progress: {}", self.explanation),
        }
    }
}

/// The result of an exploration.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// Distinct reachable states found (all of them when `outcome` is
    /// [`Outcome::Complete`]).
    pub states: u64,
    /// Transitions fired: successful `next_state` calls over all expanded
    /// states, duplicates included (rumur's and CMurphi's "rules fired").
    pub transitions: u64,
    /// Distinct initial states.
    pub initial_states: u64,
    /// Depth (BFS level) of the deepest state found; initial states are at 0.
    pub max_depth: u32,
    /// Wall-clock time of the exploration.
    pub seconds: f64,
    /// How the exploration ended.
    pub outcome: Outcome,
    /// The violations found, in discovery order (at most `max_violations`).
    pub violations: Vec<Violation>,
}

impl CheckReport {
    /// `true` when every reachable state was visited.
    pub fn complete(&self) -> bool {
        self.outcome == Outcome::Complete
    }

    /// `true` when the exploration was complete and found no violation: the
    /// model is verified.
    pub fn passed(&self) -> bool {
        self.complete() && self.violations.is_empty()
    }

    /// States found per second of wall-clock time.
    pub fn states_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.states as f64 / self.seconds
        } else {
            f64::INFINITY
        }
    }

    /// A one-paragraph human-readable summary (states, transitions, time,
    /// outcome, and each violation's kind and explanation).
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} states, {} transitions, depth {}, {:.3} s ({:.0} states/s): ",
            self.states,
            self.transitions,
            self.max_depth,
            self.seconds,
            self.states_per_second()
        );
        match (self.outcome, self.violations.is_empty()) {
            (Outcome::Complete, true) => s.push_str("no violation, state space complete"),
            (Outcome::Complete, false) => s.push_str("state space complete"),
            (Outcome::ViolationLimit, _) => s.push_str("stopped at violation limit"),
            (Outcome::StateLimit, _) => {
                s.push_str("INCOMPLETE: state limit reached, no verdict for unexplored states")
            }
        }
        for v in &self.violations {
            s.push_str(&format!(
                "\n  {} after {} steps: {}",
                v.kind.name(),
                v.trace.steps.len(),
                v.explanation
            ));
        }
        s
    }
}

/// Explores a model breadth-first and checks it: the convenience form of
/// [`Explorer::new`] followed by [`Explorer::run`].
pub fn check<M: Model>(model: &M, options: &CheckOptions) -> CheckReport {
    Explorer::new(model, options.clone()).run()
}

/// A breadth-first explorer. Keeps the reachable states after
/// [`run`](Explorer::run) so callers can inspect them and rebuild typed traces.
pub struct Explorer<'m, M: Model> {
    model: &'m M,
    options: CheckOptions,
    hasher: FxBuildHasher,
    states: Vec<M::State>,
    parents: Vec<u32>,
    table: HashTable<u32>,
}

/// Result of trying to add a state to the visited set.
enum Insert {
    New(u32),
    Seen(u32),
    Full,
}

impl<'m, M: Model> Explorer<'m, M> {
    /// A new explorer of `model`; nothing is explored until
    /// [`run`](Explorer::run).
    pub fn new(model: &'m M, options: CheckOptions) -> Self {
        Explorer {
            model,
            options,
            hasher: FxBuildHasher,
            states: Vec::new(),
            parents: Vec::new(),
            table: HashTable::new(),
        }
    }

    /// The states found, in discovery (BFS) order; `states()[id]` is state
    /// `id`.
    pub fn states(&self) -> &[M::State] {
        &self.states
    }

    /// The parent of state `id` (the state it was first reached from), `None`
    /// for an initial state.
    pub fn parent(&self, id: StateId) -> Option<StateId> {
        match self.parents[id as usize] {
            NO_PARENT => None,
            p => Some(p),
        }
    }

    /// The index of `state` if it has been found.
    pub fn find(&self, state: &M::State) -> Option<StateId> {
        let h = self.hasher.hash_one(state);
        self.table
            .find(h, |&i| self.states[i as usize] == *state)
            .copied()
    }

    fn limit(&self) -> usize {
        let hard = (NO_PARENT - 1) as usize;
        self.options.max_states.map_or(hard, |m| m.min(hard))
    }

    fn insert(&mut self, state: M::State, parent: u32, limit: usize) -> Insert {
        let hash = self.hasher.hash_one(&state);
        let states = &self.states;
        let hasher = &self.hasher;
        match self.table.entry(
            hash,
            |&i| states[i as usize] == state,
            |&i| hasher.hash_one(&states[i as usize]),
        ) {
            Entry::Occupied(o) => Insert::Seen(*o.get()),
            Entry::Vacant(v) => {
                if states.len() >= limit {
                    return Insert::Full;
                }
                let id = states.len() as u32;
                v.insert(id);
                self.states.push(state);
                self.parents.push(parent);
                Insert::New(id)
            }
        }
    }

    /// Runs the exploration from scratch and returns the report. Calling it
    /// again re-explores.
    pub fn run(&mut self) -> CheckReport {
        self.run_with_progress(0, |_| {})
    }

    /// Like [`run`](Explorer::run), calling `progress` after every `every`
    /// expanded states (never if `every` is 0), e.g. to print a progress
    /// line during a long search.
    pub fn run_with_progress(
        &mut self,
        every: u64,
        mut progress: impl FnMut(&Progress),
    ) -> CheckReport {
        let start = Instant::now();
        self.states.clear();
        self.parents.clear();
        self.table.clear();
        let model = self.model;
        let invariants = model.invariants();
        let limit = self.limit();
        let mut violations: Vec<Violation> = Vec::new();
        let mut transitions: u64 = 0;
        let mut outcome = Outcome::Complete;
        // States that violate an invariant are kept but not expanded.
        let mut bad: rustc_hash::FxHashSet<u32> = Default::default();

        'init: for s in model.init_states() {
            match self.insert(s, NO_PARENT, limit) {
                Insert::New(id) => {
                    if let Some(v) = self.check_invariants(&invariants, id) {
                        bad.insert(id);
                        violations.push(v);
                        if violations.len() >= self.options.max_violations {
                            outcome = Outcome::ViolationLimit;
                            break 'init;
                        }
                    }
                }
                Insert::Seen(_) => {}
                Insert::Full => {
                    outcome = Outcome::StateLimit;
                    break 'init;
                }
            }
        }
        let initial_states = self.states.len() as u64;

        // The helping-successor graph for the progress check, in compressed
        // form: the successors of state `i` are
        // `helping[helping_end[i - 1]..helping_end[i]]` (from 0 for `i == 0`).
        let progress_on = self.options.progress;
        let mut helping: Vec<u32> = Vec::new();
        let mut helping_end: Vec<usize> = Vec::new();
        // States already reported (not reported again for missing progress).
        let mut reported: Vec<u32> = violations.iter().map(|v| v.state_id).collect();

        let mut actions: Vec<M::Action> = Vec::new();
        let mut next: usize = 0;
        'bfs: while outcome == Outcome::Complete && next < self.states.len() {
            let id = next as u32;
            next += 1;
            if every != 0 && next as u64 % every == 0 {
                progress(&Progress {
                    expanded: next as u64,
                    states: self.states.len() as u64,
                    transitions,
                    seconds: start.elapsed().as_secs_f64(),
                });
            }
            if !bad.is_empty() && bad.contains(&id) {
                if progress_on {
                    helping_end.push(helping.len());
                }
                continue;
            }
            let state = self.states[id as usize].clone();
            actions.clear();
            model.actions(&state, &mut actions);
            let mut fired = 0u32;
            for a in &actions {
                let Some(succ) = model.next_state(&state, a) else {
                    continue;
                };
                fired += 1;
                transitions += 1;
                match self.insert(succ, id, limit) {
                    Insert::Seen(to) => {
                        if progress_on && model.is_helping(&state, a) {
                            helping.push(to);
                        }
                    }
                    Insert::New(new_id) => {
                        if progress_on && model.is_helping(&state, a) {
                            helping.push(new_id);
                        }
                        if invariants.is_empty() {
                            continue;
                        }
                        if let Some(v) = self.check_invariants(&invariants, new_id) {
                            bad.insert(new_id);
                            reported.push(new_id);
                            violations.push(v);
                            if violations.len() >= self.options.max_violations {
                                outcome = Outcome::ViolationLimit;
                                break 'bfs;
                            }
                        }
                    }
                    Insert::Full => {
                        outcome = Outcome::StateLimit;
                        break 'bfs;
                    }
                }
            }
            if progress_on {
                helping_end.push(helping.len());
            }
            if fired == 0 && self.options.check_deadlock && !model.is_quiescent(&state) {
                let explanation = if actions.is_empty() {
                    "no action is enabled and the state is not quiescent".to_string()
                } else {
                    format!(
                        "all {} listed actions are disabled (next_state returned None) \
                         and the state is not quiescent",
                        actions.len()
                    )
                };
                violations.push(Violation {
                    kind: ViolationKind::Deadlock,
                    explanation,
                    state_id: id,
                    trace: self.trace_to(id),
                });
                reported.push(id);
                if violations.len() >= self.options.max_violations {
                    outcome = Outcome::ViolationLimit;
                    break 'bfs;
                }
            }
        }
        if progress_on && outcome == Outcome::Complete {
            if let Some(v) = self.progress_violation(&helping, &helping_end, &reported) {
                violations.push(v);
                if violations.len() >= self.options.max_violations {
                    outcome = Outcome::ViolationLimit;
                }
            }
        }
        // The deepest level found: the level of the last state discovered.
        let max_depth = if self.states.is_empty() {
            0
        } else {
            self.depth_of((self.states.len() - 1) as u32)
        };

        CheckReport {
            states: self.states.len() as u64,
            transitions,
            initial_states,
            max_depth,
            seconds: start.elapsed().as_secs_f64(),
            outcome,
            violations,
        }
    }

    /// The progress check on the helping-successor graph of a complete
    /// exploration: a backward search from the quiescent states marks every
    /// state that can still reach one; the first unmarked state (lowest
    /// index, so shortest trace) is the violation. States already `reported`
    /// (invariant violations, which are not expanded, and deadlocks) seed the
    /// search as if quiescent, so their ancestors are not blamed a second
    /// time for the same bug.
    fn progress_violation(
        &self,
        helping: &[u32],
        helping_end: &[usize],
        reported: &[u32],
    ) -> Option<Violation> {
        let n = self.states.len();
        debug_assert_eq!(helping_end.len(), n);
        // Invert the successor lists into predecessor lists (counting sort).
        let mut pred_start = vec![0usize; n + 1];
        for &t in helping {
            pred_start[t as usize + 1] += 1;
        }
        for i in 0..n {
            pred_start[i + 1] += pred_start[i];
        }
        let mut fill = pred_start.clone();
        let mut pred = vec![0u32; helping.len()];
        let mut begin = 0;
        for (s, &end) in helping_end.iter().enumerate() {
            for &t in &helping[begin..end] {
                pred[fill[t as usize]] = s as u32;
                fill[t as usize] += 1;
            }
            begin = end;
        }
        drop(fill);
        let mut can_settle = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        for (i, s) in self.states.iter().enumerate() {
            if self.model.is_quiescent(s) {
                can_settle[i] = true;
                stack.push(i as u32);
            }
        }
        for &i in reported {
            if !can_settle[i as usize] {
                can_settle[i as usize] = true;
                stack.push(i);
            }
        }
        let mut settled = stack.len();
        while let Some(t) = stack.pop() {
            for &p in &pred[pred_start[t as usize]..pred_start[t as usize + 1]] {
                if !can_settle[p as usize] {
                    can_settle[p as usize] = true;
                    settled += 1;
                    stack.push(p);
                }
            }
        }
        let stuck = n - settled;
        let first = (0..n as u32).find(|&i| !can_settle[i as usize])?;
        Some(Violation {
            kind: ViolationKind::NoProgress,
            explanation: format!(
                "no quiescent state is reachable from this state through helping actions \
                 ({stuck} of {n} reachable states cannot reach one)"
            ),
            state_id: first,
            trace: self.trace_to(first),
        })
    }

    fn check_invariants(&self, invariants: &[Invariant<M>], id: u32) -> Option<Violation> {
        let state = &self.states[id as usize];
        for inv in invariants {
            if let Err(explanation) = (inv.check)(self.model, state) {
                return Some(Violation {
                    kind: ViolationKind::Invariant(inv.name.to_string()),
                    explanation,
                    state_id: id,
                    trace: self.trace_to(id),
                });
            }
        }
        None
    }

    /// The BFS depth of state `id` (number of steps from an initial state).
    pub fn depth_of(&self, id: StateId) -> u32 {
        let mut d = 0;
        let mut cur = id;
        while let Some(p) = self.parent(cur) {
            d += 1;
            cur = p;
        }
        d
    }

    /// The shortest path to state `id`: the initial state with `None`, then
    /// each action and the state it leads to.
    ///
    /// # Panics
    /// If `id` was not found by the last run, or the model is not
    /// deterministic (no enabled action of a parent leads to its child).
    pub fn path_to(&self, id: StateId) -> Vec<(Option<M::Action>, M::State)> {
        let mut ids = vec![id];
        let mut cur = id;
        while let Some(p) = self.parent(cur) {
            ids.push(p);
            cur = p;
        }
        ids.reverse();
        let mut out = Vec::with_capacity(ids.len());
        out.push((None, self.states[ids[0] as usize].clone()));
        let mut actions = Vec::new();
        for w in ids.windows(2) {
            let (from, to) = (&self.states[w[0] as usize], &self.states[w[1] as usize]);
            actions.clear();
            self.model.actions(from, &mut actions);
            let action = actions
                .iter()
                .find(|a| self.model.next_state(from, a).as_ref() == Some(to))
                .expect("model is not deterministic: no action leads from parent to child")
                .clone();
            out.push((Some(action), to.clone()));
        }
        out
    }

    /// The trace to state `id` in report form (strings and chart steps).
    pub fn trace_to(&self, id: StateId) -> Trace {
        let path = self.path_to(id);
        let initial = format!("{:?}", path[0].1);
        let mut steps = Vec::with_capacity(path.len() - 1);
        for w in path.windows(2) {
            let action = w[1].0.as_ref().expect("non-initial step has an action");
            steps.push(TraceStep {
                action: format!("{action:?}"),
                chart: self.model.chart_step(&w[0].1, action),
                state: format!("{:?}", w[1].1),
            });
        }
        Trace {
            agents: self.model.agents(),
            initial,
            steps,
        }
    }
}
