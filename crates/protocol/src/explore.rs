//! A breadth-first explorer over any [`ccsim_check::model::Model`], with the
//! progress check this toolkit needs.
//!
//! Besides invariants and dead ends (no enabled action in a non-quiescent
//! state), it checks **progress**: from every reachable state some quiescent
//! state must be reachable (`AG EF quiescent`) through "helping" actions
//! only (for protocols: deliveries and events of agents in transient
//! states, never an agent starting a new transaction). This catches
//! deadlocks in which unrelated agents can still take self-loops, such as a
//! CPU storing to one line while another line's transaction is stuck behind
//! a busy unit, and transactions that only finish if someone else happens
//! to start another.
//! The check keeps the transition graph (successor lists) and runs a
//! backward search from the quiescent states.
//!
//! Counterexamples are shortest paths (BFS parents).

use ccsim_check::model::{ChartStep, Model};
use rustc_hash::FxHashMap;
use std::time::Instant;

/// Limits for one exploration.
#[derive(Clone, Debug)]
pub struct ExploreOptions {
    /// Stop after this many states (reported as incomplete).
    pub max_states: usize,
    /// Run the progress (`AG EF quiescent`) check.
    pub progress: bool,
    /// Return the reachable states (for coverage).
    pub keep_states: bool,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            max_states: 5_000_000,
            progress: true,
            keep_states: false,
        }
    }
}

/// A property violation with its shortest trace.
#[derive(Clone, Debug)]
pub struct Found<M: Model> {
    /// Property name (`swmr`, `data-value`, `deadlock`, ...).
    pub property: String,
    /// Explanation.
    pub message: String,
    /// States from the initial state to the bad state.
    pub states: Vec<M::State>,
    /// Actions between them (`states.len() - 1` of them).
    pub actions: Vec<M::Action>,
}

/// Result of an exploration.
#[derive(Clone, Debug)]
pub struct Explored<M: Model> {
    /// Distinct reachable states.
    pub states: usize,
    /// Transitions fired (edges, duplicates included).
    pub transitions: usize,
    /// Whether every reachable state was visited.
    pub complete: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The first violation found, if any.
    pub violation: Option<Found<M>>,
    /// Every reachable state in BFS order, when [`ExploreOptions::keep_states`] is set.
    pub reachable: Vec<M::State>,
}

/// Explores `model` breadth-first; every action counts for progress.
pub fn explore<M: Model>(model: &M, opts: &ExploreOptions) -> Explored<M> {
    explore_filtered(model, opts, &|_, _| true)
}

/// Explores `model` breadth-first. The progress check only follows actions
/// for which `helps(state, action)` is true: a protocol must be able to
/// finish its open transactions by delivering messages and completing
/// work in progress, without an agent starting a new transaction.
pub fn explore_filtered<M: Model>(
    model: &M,
    opts: &ExploreOptions,
    helps: &dyn Fn(&M::State, &M::Action) -> bool,
) -> Explored<M> {
    let t0 = Instant::now();
    let invs = model.invariants();
    let mut states: Vec<M::State> = Vec::new();
    let mut parent: Vec<(u32, Option<M::Action>)> = Vec::new();
    let mut seen: FxHashMap<M::State, u32> = FxHashMap::default();
    let mut succ_off: Vec<u32> = vec![0];
    let mut succ: Vec<u32> = Vec::new();
    let mut transitions = 0usize;
    let trace = |states: &Vec<M::State>, parent: &Vec<(u32, Option<M::Action>)>, mut i: u32| {
        let mut ss = vec![states[i as usize].clone()];
        let mut aa = Vec::new();
        while let (p, Some(a)) = &parent[i as usize] {
            aa.push(a.clone());
            ss.push(states[*p as usize].clone());
            i = *p;
        }
        ss.reverse();
        aa.reverse();
        (ss, aa)
    };
    let mut violation = None;
    for s in model.init_states() {
        if !seen.contains_key(&s) {
            seen.insert(s.clone(), states.len() as u32);
            states.push(s);
            parent.push((0, None));
        }
    }
    let mut head = 0usize;
    let mut acts = Vec::new();
    let mut complete = true;
    'bfs: while head < states.len() {
        let s = states[head].clone();
        for inv in &invs {
            if let Err(msg) = (inv.check)(model, &s) {
                let (ss, aa) = trace(&states, &parent, head as u32);
                violation = Some(Found {
                    property: inv.name.to_string(),
                    message: msg,
                    states: ss,
                    actions: aa,
                });
                break 'bfs;
            }
        }
        acts.clear();
        model.actions(&s, &mut acts);
        let mut any = false;
        for a in &acts {
            let Some(n) = model.next_state(&s, a) else {
                continue;
            };
            any = true;
            transitions += 1;
            let id = match seen.get(&n) {
                Some(&id) => id,
                None => {
                    if states.len() >= opts.max_states {
                        complete = false;
                        break 'bfs;
                    }
                    let id = states.len() as u32;
                    seen.insert(n.clone(), id);
                    states.push(n);
                    parent.push((head as u32, Some(a.clone())));
                    id
                }
            };
            if opts.progress && helps(&s, a) {
                succ.push(id);
            }
        }
        if opts.progress {
            succ_off.push(succ.len() as u32);
        }
        if !any && !model.is_quiescent(&s) {
            let (ss, aa) = trace(&states, &parent, head as u32);
            violation = Some(Found {
                property: "deadlock".into(),
                message: "no action is enabled but a transaction is pending".into(),
                states: ss,
                actions: aa,
            });
            break;
        }
        head += 1;
    }
    if violation.is_none() && complete && opts.progress {
        // Backward reachability from quiescent states.
        let n = states.len();
        let mut pred_off = vec![0u32; n + 1];
        for &t in &succ {
            pred_off[t as usize + 1] += 1;
        }
        for i in 0..n {
            pred_off[i + 1] += pred_off[i];
        }
        let mut fill = pred_off.clone();
        let mut pred = vec![0u32; succ.len()];
        for s in 0..n {
            for k in succ_off[s]..succ_off[s + 1] {
                let t = succ[k as usize] as usize;
                pred[fill[t] as usize] = s as u32;
                fill[t] += 1;
            }
        }
        let mut ok = vec![false; n];
        let mut stack: Vec<u32> = (0..n as u32)
            .filter(|&i| model.is_quiescent(&states[i as usize]))
            .collect();
        for &i in &stack {
            ok[i as usize] = true;
        }
        while let Some(t) = stack.pop() {
            for k in pred_off[t as usize]..pred_off[t as usize + 1] {
                let p = pred[k as usize];
                if !ok[p as usize] {
                    ok[p as usize] = true;
                    stack.push(p);
                }
            }
        }
        if let Some(bad) = (0..n).find(|&i| !ok[i]) {
            let (ss, aa) = trace(&states, &parent, bad as u32);
            violation = Some(Found {
                property: "deadlock".into(),
                message: "from this state no quiescent state (all agents stable, network empty) is reachable by delivering messages and finishing open work".into(),
                states: ss,
                actions: aa,
            });
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    Explored {
        states: states.len(),
        transitions,
        complete,
        seconds,
        violation,
        reachable: if opts.keep_states { states } else { Vec::new() },
    }
}

/// Renders a trace as a text message sequence chart.
pub fn chart_text(agents: &[String], steps: &[ChartStep]) -> String {
    let w = agents.iter().map(|a| a.len()).max().unwrap_or(4).max(6) + 14;
    let col = |a: &str| agents.iter().position(|x| x == a).unwrap_or(0);
    let mut out = String::new();
    for a in agents {
        out.push_str(&format!("{a:<w$}"));
    }
    out.push('\n');
    for (i, st) in steps.iter().enumerate() {
        let (f, t) = (col(&st.from), col(&st.to));
        let mut line = String::new();
        if f == t {
            line.push_str(&" ".repeat(f * w));
            line.push_str(&format!("[{}]", st.label));
        } else {
            let (lo, hi) = (f.min(t), f.max(t));
            line.push_str(&" ".repeat(lo * w));
            let len = (hi - lo) * w;
            let label = format!(" {} ", st.label);
            let dashes = len.saturating_sub(label.len() + 1).max(2);
            let (l, r) = (dashes / 2, dashes - dashes / 2);
            if f < t {
                line.push_str(&format!("{}{}{}>", "-".repeat(l), label, "-".repeat(r)));
            } else {
                line.push_str(&format!("<{}{}{}", "-".repeat(l), label, "-".repeat(r)));
            }
        }
        out.push_str(&format!("{:>3} {}\n", i + 1, line.trim_end()));
    }
    out
}

/// Renders a trace as a Mermaid sequence diagram.
pub fn chart_mermaid(agents: &[String], steps: &[ChartStep]) -> String {
    let mut out = String::from("sequenceDiagram\n");
    for a in agents {
        out.push_str(&format!("    participant {a}\n"));
    }
    for st in steps {
        if st.from == st.to {
            out.push_str(&format!("    Note over {}: {}\n", st.from, st.label));
        } else {
            out.push_str(&format!("    {}->>{}: {}\n", st.from, st.to, st.label));
        }
    }
    out
}
