//! Explicit-state model checker of ccsim.
//!
//! A model is a guarded-command transition system written in Rust against the
//! [`Model`] trait — the same shape as a Murphi program: initial states, the
//! rule instances enabled in a state, the successor each produces, and named
//! invariants. [`check`] (or [`Explorer`]) explores every reachable state
//! breadth-first, checks every invariant in every state, detects deadlocks,
//! optionally checks progress (a quiescent state stays reachable), and
//! returns a [`CheckReport`] with shortest counterexample traces that render
//! as message sequence charts ([`msc`]).
//!
//! # How the exploration works
//!
//! - **Visited set.** Each reachable state is stored exactly once, in
//!   discovery order, in a `Vec`; the visited set is a hash table of `u32`
//!   indices into it, hashed with FxHash. A parallel `Vec<u32>` holds each
//!   state's parent. Models should therefore use compact, cheaply hashed
//!   states (packed integers or small arrays; no heap data if possible).
//! - **Breadth-first.** Because discovery order is BFS order, the state vector
//!   is also the queue: states `0, 1, 2, …` are expanded in turn. For each, the
//!   model lists its enabled actions ([`Model::actions`], into a reused
//!   buffer) and each action's successor ([`Model::next_state`]; `None` means
//!   the action turned out to be disabled and is not counted).
//! - **Counts.** `states` is the number of distinct reachable states (initial
//!   states included); `transitions` counts every successful `next_state`
//!   call, duplicates included — the same quantity as rumur's and CMurphi's
//!   "rules fired". The reference models in [`refmodels`] reproduce both of
//!   rumur's figures exactly.
//! - **Invariants** are checked on every state when it is first found
//!   (initial states included), in the order [`Model::invariants`] lists
//!   them; the first one that fails is reported for that state.
//! - **Deadlock**: a state with no successor (no listed action, or all of them
//!   returned `None`) for which [`Model::is_quiescent`] is false. Note that
//!   this is rumur's `--deadlock-detection stuck`, not CMurphi's default
//!   "stuttering" notion (where a state whose every successor is itself also
//!   counts).
//! - **Progress** ([`CheckOptions::progress`], off by default): from every
//!   reachable state some quiescent state ([`Model::is_quiescent`]) must be
//!   reachable through *helping* actions ([`Model::is_helping`]; by default
//!   every action helps) — `AG EF quiescent`. This catches what the dead-end
//!   check cannot: livelocks, agents stuck while unrelated ones keep taking
//!   steps, and (when starting a new transaction is declared non-helping)
//!   transactions that only finish if someone else starts another. While
//!   exploring, the explorer records the helping successors of every state
//!   (one `u32` per helping transition); after a complete exploration it
//!   searches backwards from the quiescent states, and reports the first
//!   state in BFS order that the search did not reach as
//!   [`ViolationKind::NoProgress`], with a shortest trace. Used by
//!   `ccsim-protocol` for every generated protocol.
//! - **Traces.** A violation's trace is rebuilt from the parent indices: the
//!   path from an initial state, re-deriving for each edge the first action
//!   that leads from parent to child. Since BFS finds every state at its
//!   minimal depth, traces are shortest. A [`Trace`] holds the initial state,
//!   then each action, its [`ChartStep`] and the state it leads to, as text
//!   (`Debug` forms), so reports are plain data ([`serde::Serialize`], for
//!   `--json`); [`Explorer::path_to`] gives the typed states and actions.
//! - **Limits.** [`CheckOptions::max_states`] stops the search with
//!   [`Outcome::StateLimit`] — an explicitly incomplete result — instead of
//!   exhausting memory. [`CheckOptions::max_violations`] (default 1) stops at
//!   the first violation, or keeps going to collect more; states that violate
//!   an invariant are then not expanded.
//!
//! # Example
//!
//! A counter that two clients increment; it may not exceed 2, and a client
//! may only increment while the counter is below 3. The invariant fails after
//! three increments; the trace is the shortest such path.
//!
//! ```
//! use ccsim_check::{check, CheckOptions, ChartStep, Invariant, Model, Outcome};
//!
//! struct Counter;
//!
//! impl Model for Counter {
//!     type State = u8;
//!     type Action = usize; // which client increments
//!
//!     fn init_states(&self) -> Vec<u8> {
//!         vec![0]
//!     }
//!     fn actions(&self, s: &u8, out: &mut Vec<usize>) {
//!         if *s < 3 {
//!             out.extend([0, 1]);
//!         }
//!     }
//!     fn next_state(&self, s: &u8, _client: &usize) -> Option<u8> {
//!         Some(s + 1)
//!     }
//!     fn invariants(&self) -> Vec<Invariant<Self>> {
//!         vec![Invariant {
//!             name: "at-most-2",
//!             check: |_, s| if *s <= 2 { Ok(()) } else { Err(format!("counter is {s}")) },
//!         }]
//!     }
//!     fn chart_step(&self, _s: &u8, client: &usize) -> ChartStep {
//!         ChartStep { from: format!("c{client}"), to: "counter".into(), label: "inc".into() }
//!     }
//!     fn agents(&self) -> Vec<String> {
//!         vec!["c0".into(), "c1".into(), "counter".into()]
//!     }
//! }
//!
//! let report = check(&Counter, &CheckOptions::default());
//! assert_eq!(report.outcome, Outcome::ViolationLimit);
//! let v = &report.violations[0];
//! assert_eq!(v.kind.name(), "at-most-2");
//! assert_eq!(v.trace.steps.len(), 3);
//! assert_eq!(v.trace.steps[2].state, "3");
//! assert!(v.msc_text().contains("!! invariant at-most-2 violated: counter is 3"));
//!
//! // Collecting every violation explores the whole space: states 0..=3 and
//! // 6 transitions. State 3 violates the invariant, so it is not expanded
//! // (and not also reported as a deadlock, though it has no enabled action).
//! let opts = CheckOptions { max_violations: usize::MAX, ..CheckOptions::default() };
//! let report = check(&Counter, &opts);
//! assert_eq!((report.states, report.transitions), (4, 6));
//! assert_eq!(report.outcome, Outcome::Complete);
//! assert_eq!(report.violations.len(), 1);
//! ```
//!
//! The progress check: a client takes a lock and can retry forever while
//! holding it, so no state is a dead end, yet once the lock is taken the
//! system never gets back to its quiescent start.
//!
//! ```
//! use ccsim_check::{check, CheckOptions, Invariant, Model, ViolationKind};
//!
//! struct SpinForever;
//!
//! impl Model for SpinForever {
//!     type State = bool; // lock taken
//!     type Action = &'static str;
//!
//!     fn init_states(&self) -> Vec<bool> {
//!         vec![false]
//!     }
//!     fn actions(&self, taken: &bool, out: &mut Vec<&'static str>) {
//!         out.push(if *taken { "retry" } else { "take" });
//!     }
//!     fn next_state(&self, _taken: &bool, _a: &&'static str) -> Option<bool> {
//!         Some(true)
//!     }
//!     fn invariants(&self) -> Vec<Invariant<Self>> {
//!         Vec::new()
//!     }
//!     fn is_quiescent(&self, taken: &bool) -> bool {
//!         !*taken
//!     }
//! }
//!
//! assert!(check(&SpinForever, &CheckOptions::default()).passed()); // no dead end
//! let opts = CheckOptions { progress: true, ..CheckOptions::default() };
//! let report = check(&SpinForever, &opts);
//! let v = &report.violations[0];
//! assert_eq!(v.kind, ViolationKind::NoProgress);
//! assert_eq!(v.trace.steps[0].action, "\"take\"");
//! assert!(v.msc_text().contains("!! no progress:"));
//! ```
//!
//! # Modules
//! - [`model`]: the [`Model`] trait.
//! - [`explore`]: the explorer and report types (re-exported at the root).
//! - [`msc`]: text and Mermaid message sequence charts.
//! - [`refmodels`]: external reference models (German's protocol after
//!   Cubicle's `german_baukus.m`, and CMurphi's `cache3.m`) with the state
//!   counts rumur reports for the originals ([`refmodels::REFERENCE_COUNTS`]).
//! - [`bench`](mod@bench): runs ccsim's explorer and rumur on the same model and compares
//!   their speed.

pub mod bench;
pub mod explore;
pub mod model;
pub mod msc;
pub mod refmodels;

pub use explore::{
    check, CheckOptions, CheckReport, Explorer, Outcome, Progress, StateId, Trace, TraceStep,
    Violation, ViolationKind,
};
pub use model::{ChartStep, Invariant, Model};
