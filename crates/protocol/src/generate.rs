//! The generator: state-equations in, transient-state machine out (CCKit §4.2).
//!
//! Passes, in order:
//!
//! 1. **Equations.** The spec lists conflict-free transactions and the
//!    conflicts that interconnect latency causes. Each is a state-equation:
//!    initial (home, remote), the messages the home receives, final
//!    (home, remote), and actions.
//! 2. **Reorderings.** For every equation with `n > 1` messages and
//!    `reorder = true`, every order of the non-trigger messages (up to
//!    `(n-1)!`; the trigger, which starts the transaction, stays first) is
//!    added, except orders that break causality: a response cannot arrive
//!    before the step that sent the forward it answers.
//! 3. **Break into single events.** Every equation becomes a path in a
//!    prefix tree rooted at its initial stable state: each received message
//!    is one transition, each proper prefix an intermediate state. Two
//!    equations that share a prefix must agree on its actions; an equation
//!    that completes where another continues is ambiguous. Both are errors.
//! 4. **Collapse.** Intermediate states with identical futures (the same
//!    events, actions and successors) cannot be told apart by the home and
//!    are merged, bottom-up (minimisation of the tree into a DAG).
//! 5. **Stall requests.** In every state, each request the agent can receive
//!    that has no transition stalls. Responses and forwards never stall;
//!    if one arrives without a transition the checker reports an
//!    unspecified reception.
//!
//! Intermediate states are named `<initial>_<received...>` after the
//! shortest path that reaches them, e.g. `E_LOCK_HAKI` (the `LCL_` prefix of
//! device-local messages is dropped).

use crate::ir::{
    Access, Action, ChannelInfo, DataHome, EventInfo, Guard, Machine, MessageInfo, MsgClass,
    Outcome, ProtocolIr, StateInfo, Transition,
};
use crate::spec::{parse_action, Spec, SpecError, TableSpec};
use std::collections::{BTreeMap, BTreeSet};

/// Counts reported by the generator.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GenStats {
    /// Equations in the spec.
    pub equations: usize,
    /// Equations after adding reorderings.
    pub equations_with_reorderings: usize,
    /// Prefix-tree nodes before collapsing (stable roots included).
    pub tree_states: usize,
    /// States of the generated machine (stable + transient).
    pub states: usize,
    /// Stable states.
    pub stable_states: usize,
    /// Transitions (stalls excluded).
    pub transitions: usize,
    /// Stall rows.
    pub stalls: usize,
    /// Message types the generated machine sends or receives.
    pub messages: usize,
}

/// One concrete (reordered) equation: steps of (message, actions).
#[derive(Clone, Debug)]
struct Path {
    origin: usize,
    start: String,
    steps: Vec<(String, Vec<Action>)>,
    on_complete: Vec<Action>,
    end: String,
}

fn short(m: &str) -> &str {
    m.strip_prefix("LCL_").unwrap_or(m)
}

/// Generates the protocol IR and the generator's counts: for the two-node
/// form the generated machine plus the peer and local tables, for the role
/// form one machine per role table.
pub fn generate(spec: &Spec) -> Result<(ProtocolIr, GenStats), SpecError> {
    if !spec.is_two_node() {
        return Ok(role_form(spec));
    }
    let err = |place: String, message: String| SpecError {
        path: format!("{}: {}", spec.origin, place),
        message,
    };
    let mut stats = GenStats {
        equations: spec.equation.len(),
        ..Default::default()
    };
    // Pass 1-2: equations and reorderings.
    let mut paths = Vec::new();
    for (i, e) in spec.equation.iter().enumerate() {
        let acts: Vec<Vec<Action>> = (0..e.receive.len())
            .map(|j| {
                e.actions
                    .get(j)
                    .map(|l| {
                        l.iter()
                            .map(|a| parse_action(a).expect("validated"))
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();
        let steps: Vec<(String, Vec<Action>)> = e.receive.iter().cloned().zip(acts).collect();
        let on_complete: Vec<Action> = e
            .on_complete
            .iter()
            .map(|a| parse_action(a).expect("validated"))
            .collect();
        let start = spec
            .stable_name(&e.home, &e.remote)
            .expect("validated")
            .to_string();
        let end = spec
            .stable_name(&e.final_home, &e.final_remote)
            .expect("validated")
            .to_string();
        let orders = if e.reorder && steps.len() > 2 {
            permutations(steps.len() - 1)
                .into_iter()
                .map(|p| {
                    let mut v = vec![steps[0].clone()];
                    v.extend(p.into_iter().map(|k| steps[k + 1].clone()));
                    v
                })
                .filter(|v| causal(spec, v))
                .collect::<Vec<_>>()
        } else {
            vec![steps.clone()]
        };
        for o in orders {
            paths.push(Path {
                origin: i,
                start: start.clone(),
                steps: o,
                on_complete: on_complete.clone(),
                end: end.clone(),
            });
        }
    }
    stats.equations_with_reorderings = paths.len();

    // Pass 3: prefix tree. Node 0..n_stable are the stable roots.
    let stable: Vec<&str> = spec
        .generated()
        .state
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    #[derive(Clone, Default)]
    struct Node {
        root: usize,
        received: Vec<String>,
        edges: BTreeMap<String, (Vec<Action>, Target, usize)>,
    }
    #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
    enum Target {
        Node(usize),
        Stable(usize),
    }
    let mut nodes: Vec<Node> = (0..stable.len())
        .map(|r| Node {
            root: r,
            ..Default::default()
        })
        .collect();
    let stable_idx = |n: &str| stable.iter().position(|s| *s == n).expect("stable");
    for p in &paths {
        let mut cur = stable_idx(&p.start);
        for (j, (msg, acts)) in p.steps.iter().enumerate() {
            let last = j + 1 == p.steps.len();
            let mut acts = acts.clone();
            if last {
                acts.extend(p.on_complete.iter().cloned());
            }
            let place = format!("equation[{}] ({})", p.origin, spec.equation[p.origin].name);
            match nodes[cur].edges.get(msg).cloned() {
                Some((a, t, other)) => {
                    if a != acts {
                        return Err(err(
                            place,
                            format!(
                                "{}: receiving {msg} does [{}] here but [{}] in equation[{other}] ({})",
                                describe_prefix(stable[nodes[cur].root], &nodes[cur].received),
                                fmt_actions(&acts),
                                fmt_actions(&a),
                                spec.equation[other].name
                            ),
                        ));
                    }
                    match (t, last) {
                        (Target::Node(n), false) => cur = n,
                        (Target::Stable(s), true) if stable[s] == p.end => {}
                        (Target::Stable(s), true) => {
                            return Err(err(
                                place,
                                format!(
                                    "ends in {} but equation[{other}] ({}) ends the same messages in {}",
                                    p.end, spec.equation[other].name, stable[s]
                                ),
                            ))
                        }
                        _ => {
                            return Err(err(
                                place,
                                format!(
                                    "ambiguous: {}: after receiving {msg} one of this equation and equation[{other}] ({}) is complete and the other is not",
                                    describe_prefix(stable[nodes[cur].root], &nodes[cur].received),
                                    spec.equation[other].name
                                ),
                            ))
                        }
                    }
                }
                None => {
                    let t = if last {
                        Target::Stable(stable_idx(&p.end))
                    } else {
                        let mut received = nodes[cur].received.clone();
                        received.push(msg.clone());
                        nodes.push(Node {
                            root: nodes[cur].root,
                            received,
                            edges: BTreeMap::new(),
                        });
                        Target::Node(nodes.len() - 1)
                    };
                    nodes[cur].edges.insert(msg.clone(), (acts, t, p.origin));
                    if let Target::Node(n) = t {
                        cur = n;
                    }
                }
            }
        }
    }
    stats.tree_states = nodes.len();

    // Pass 4: collapse transient nodes with identical futures (bottom-up).
    // Children always have larger indices than parents, so iterate backwards.
    let n = nodes.len();
    let mut class = vec![usize::MAX; n];
    let mut by_sig: BTreeMap<Vec<(String, Vec<Action>, Target)>, usize> = BTreeMap::new();
    let mut reps: Vec<usize> = Vec::new(); // class -> representative node
    for i in (stable.len()..n).rev() {
        let sig: Vec<(String, Vec<Action>, Target)> = nodes[i]
            .edges
            .iter()
            .map(|(m, (a, t, _))| {
                let t = match t {
                    Target::Node(c) => Target::Node(class[*c]),
                    s => *s,
                };
                (m.clone(), a.clone(), t)
            })
            .collect();
        let c = *by_sig.entry(sig).or_insert_with(|| {
            reps.push(i);
            reps.len() - 1
        });
        class[i] = c;
        // Keep the representative with the shortest (then smallest) name.
        let r = reps[c];
        let key = |k: usize| {
            (
                nodes[k].received.len(),
                stable[nodes[k].root],
                nodes[k].received.clone(),
            )
        };
        if key(i) < key(r) {
            reps[c] = i;
        }
    }
    let name_of = |k: usize| -> String {
        let mut s = stable[nodes[k].root].to_string();
        for m in &nodes[k].received {
            s.push('_');
            s.push_str(short(m));
        }
        s
    };

    // Build the machine.
    let mut states: Vec<StateInfo> = spec
        .generated()
        .state
        .iter()
        .map(|s| StateInfo {
            name: s.name.clone(),
            description: format!(
                "stable: home {}, remote {}: {}",
                s.home, s.remote, s.description
            ),
            stable: true,
            access: s.access,
            holds_data: s.access != Access::None,
            home: Some(s.home.clone()),
            remote: Some(s.remote.clone()),
        })
        .collect();
    // Order transient classes by their representative's name for determinism.
    let mut class_order: Vec<usize> = (0..reps.len()).collect();
    class_order.sort_by_key(|&c| name_of(reps[c]));
    // Successor lists of the tree, for describing each state's futures.
    let fut_edges: FutEdges = nodes
        .iter()
        .map(|n| {
            n.edges
                .iter()
                .map(|(m, (_, t, _))| {
                    let t = match t {
                        Target::Node(x) => Err(*x),
                        Target::Stable(s) => Ok(stable[*s].to_string()),
                    };
                    (m.clone(), t)
                })
                .collect()
        })
        .collect();
    let mut class_name = vec![String::new(); reps.len()];
    for &c in &class_order {
        let r = reps[c];
        class_name[c] = name_of(r);
        // Describe the futures: the messages awaited and where they lead.
        let mut futures = BTreeSet::new();
        collect_futures(&fut_edges, r, String::new(), &mut futures);
        let fut: Vec<String> = futures.into_iter().collect();
        let merged = (stable.len()..n).filter(|&k| class[k] == c).count();
        states.push(StateInfo {
            name: class_name[c].clone(),
            description: format!(
                "transient: {}; then one of: {}{}",
                describe_prefix(stable[nodes[r].root], &nodes[r].received),
                fut.join(" | "),
                if merged > 1 {
                    format!(" ({merged} tree states collapsed)")
                } else {
                    String::new()
                }
            ),
            stable: false,
            access: crate::ir::Access::None,
            holds_data: false,
            home: None,
            remote: None,
        });
    }
    let target_name = |t: &Target| match t {
        Target::Node(c) => class_name[class[*c]].clone(),
        Target::Stable(s) => stable[*s].to_string(),
    };
    let mut rows: Vec<(String, String, Option<Guard>, Outcome)> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let from = if i < stable.len() {
            stable[i].to_string()
        } else if reps[class[i]] == i {
            class_name[class[i]].clone()
        } else {
            continue;
        };
        for (m, (a, t, _)) in &node.edges {
            rows.push((
                from.clone(),
                m.clone(),
                None,
                Outcome::Go {
                    next: target_name(t),
                    actions: a.clone(),
                },
            ));
        }
    }
    // Pass 5: stall requests without a transition.
    let requests: Vec<&str> = spec
        .message
        .iter()
        .filter(|m| {
            let c = spec.channel_of(&m.name).expect("validated");
            c.to == "generated" && c.class == MsgClass::Request
        })
        .map(|m| m.name.as_str())
        .collect();
    let have: BTreeSet<(String, String)> = rows
        .iter()
        .map(|(s, e, _, _)| (s.clone(), e.clone()))
        .collect();
    for s in &states {
        for r in &requests {
            if !have.contains(&(s.name.clone(), r.to_string())) {
                rows.push((s.name.clone(), r.to_string(), None, Outcome::Stall));
            }
        }
    }
    // Events: every message the generated agent receives.
    let events: Vec<EventInfo> = spec
        .message
        .iter()
        .filter(|m| spec.channel_of(&m.name).expect("validated").to == "generated")
        .map(|m| EventInfo {
            name: m.name.clone(),
            description: m.description.clone(),
            message: true,
        })
        .collect();
    let generated = finish_machine(
        &spec.generated().name,
        "generated",
        &spec.generated().description,
        &spec.generated().initial,
        states,
        events,
        rows,
    );
    stats.states = generated.states.len();
    stats.stable_states = stable.len();
    stats.transitions = generated.n_transitions();
    stats.stalls = generated.n_stalls();
    let mut used = BTreeSet::new();
    for t in &generated.transitions {
        used.insert(t.event.clone());
        if let Outcome::Go { actions, .. } = &t.outcome {
            for a in actions {
                if let Some(m) = a.sent() {
                    used.insert(m.to_string());
                }
            }
        }
    }
    stats.messages = used.len();

    let cache_at = spec.protocol.cache_at.as_deref().unwrap_or("");
    let data = |role: &str| {
        if role == cache_at {
            DataHome::Copy
        } else {
            DataHome::Memory
        }
    };
    let mut generated = generated;
    generated.serial = true;
    generated.data = data("generated");
    let mut peer = table_machine(spec, spec.peer.as_ref().expect("validated"), "peer");
    peer.data = data("peer");
    let mut local = table_machine(spec, spec.local.as_ref().expect("validated"), "local");
    local.data = data("local");
    let ir = ProtocolIr {
        name: spec.protocol.name.clone(),
        description: spec.protocol.description.clone(),
        channels: channels(spec),
        messages: messages(spec),
        roles: vec![generated, peer, local],
        home: spec.home_role().to_string(),
    };
    Ok((ir, stats))
}

type FutEdges = Vec<Vec<(String, Result<String, usize>)>>;

fn collect_futures(edges: &FutEdges, node: usize, prefix: String, out: &mut BTreeSet<String>) {
    for (m, t) in &edges[node] {
        let p = if prefix.is_empty() {
            m.clone()
        } else {
            format!("{prefix},{m}")
        };
        match t {
            Ok(s) => {
                out.insert(format!("{p} -> {s}"));
            }
            Err(c) => collect_futures(edges, *c, p, out),
        }
        if out.len() > 12 {
            return;
        }
    }
}

fn describe_prefix(root: &str, received: &[String]) -> String {
    if received.is_empty() {
        format!("in {root}")
    } else {
        format!("from {root} having received {}", received.join(", "))
    }
}

fn fmt_actions(a: &[Action]) -> String {
    a.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every permutation of `0..n`, in lexicographic order.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    fn rec(cur: &mut Vec<usize>, used: &mut Vec<bool>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == used.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..used.len() {
            if !used[i] {
                used[i] = true;
                cur.push(i);
                rec(cur, used, out);
                cur.pop();
                used[i] = false;
            }
        }
    }
    let mut out = Vec::new();
    rec(&mut Vec::new(), &mut vec![false; n], &mut out);
    out
}

/// The spec's channels as the IR lists them.
fn channels(spec: &Spec) -> Vec<ChannelInfo> {
    spec.channel
        .iter()
        .map(|c| ChannelInfo {
            name: c.name.clone(),
            class: c.class,
            data: c.data,
            description: c.description.clone(),
            ordered_after: c.ordered_after.clone(),
        })
        .collect()
}

/// The spec's messages with their channel's class, data flag and roles.
fn messages(spec: &Spec) -> Vec<MessageInfo> {
    spec.message
        .iter()
        .map(|m| {
            let c = spec.channel_of(&m.name).expect("validated");
            MessageInfo {
                name: m.name.clone(),
                channel: c.name.clone(),
                class: c.class,
                data: c.data,
                from: c.from.clone(),
                to: c.to.clone(),
                description: m.description.clone(),
                requester: m.requester,
                ack: m.ack,
                counts_ack: m.counts_ack,
                operands: m.operands,
            }
        })
        .collect()
}

/// The IR of a role-form spec: one machine per role table. Its counts are
/// those of the home's machine (nothing is generated).
fn role_form(spec: &Spec) -> (ProtocolIr, GenStats) {
    let roles: Vec<Machine> = spec
        .role
        .iter()
        .map(|r| {
            let mut m = table_machine(spec, r, &r.name);
            m.multiple = r.multiple;
            m.data = r.data.unwrap_or_default();
            m.serial = r.serial;
            m
        })
        .collect();
    let ir = ProtocolIr {
        name: spec.protocol.name.clone(),
        description: spec.protocol.description.clone(),
        channels: channels(spec),
        messages: messages(spec),
        roles,
        home: spec.home_role().to_string(),
    };
    let home = ir.primary();
    let stats = GenStats {
        equations: 0,
        equations_with_reorderings: 0,
        tree_states: home.states.len(),
        states: home.states.len(),
        stable_states: home.states.iter().filter(|s| s.stable).count(),
        transitions: home.n_transitions(),
        stalls: home.n_stalls(),
        messages: machine_messages(&ir, home).len(),
    };
    (ir, stats)
}

/// A response may only be received after a step that sent something to its
/// sender (the forward it answers).
fn causal(spec: &Spec, steps: &[(String, Vec<Action>)]) -> bool {
    let mut sent_to: BTreeSet<String> = BTreeSet::new();
    for (m, acts) in steps {
        let c = spec.channel_of(m).expect("validated");
        if c.class == MsgClass::Response && !sent_to.contains(&c.from) {
            return false;
        }
        for a in acts {
            if let Some(s) = a.sent() {
                sent_to.insert(spec.channel_of(s).expect("validated").to.clone());
            }
        }
    }
    true
}

fn finish_machine(
    name: &str,
    role: &str,
    description: &str,
    initial: &str,
    states: Vec<StateInfo>,
    events: Vec<EventInfo>,
    rows: Vec<(String, String, Option<Guard>, Outcome)>,
) -> Machine {
    let sidx: BTreeMap<&str, usize> = states
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let eidx: BTreeMap<&str, usize> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.as_str(), i))
        .collect();
    let mut rows = rows;
    rows.sort_by_key(|(s, e, _, _)| (sidx[s.as_str()], eidx[e.as_str()]));
    Machine {
        name: name.into(),
        role: role.into(),
        multiple: false,
        data: DataHome::None,
        serial: false,
        description: description.into(),
        initial: initial.into(),
        transitions: rows
            .into_iter()
            .map(|(state, event, guard, outcome)| Transition {
                state,
                event,
                guard,
                outcome,
            })
            .collect(),
        states,
        events,
    }
}

/// Converts a hand-written table of the spec into a [`Machine`].
pub fn table_machine(spec: &Spec, t: &TableSpec, role: &str) -> Machine {
    let states = t
        .state
        .iter()
        .map(|s| StateInfo {
            name: s.name.clone(),
            description: s.description.clone(),
            stable: s.stable,
            access: s.access,
            holds_data: s.holds_data.unwrap_or(s.access != Access::None),
            home: None,
            remote: None,
        })
        .collect();
    let mut events: Vec<EventInfo> = t
        .event
        .iter()
        .map(|e| EventInfo {
            name: e.name.clone(),
            description: e.description.clone(),
            message: false,
        })
        .collect();
    for m in &spec.message {
        if spec.channel_of(&m.name).expect("validated").to == role {
            events.push(EventInfo {
                name: m.name.clone(),
                description: m.description.clone(),
                message: true,
            });
        }
    }
    let rows = t
        .transition
        .iter()
        .map(|r| {
            let o = if r.stall {
                Outcome::Stall
            } else {
                Outcome::Go {
                    next: r.next.clone().expect("validated"),
                    actions: r
                        .actions
                        .iter()
                        .map(|a| parse_action(a).expect("validated"))
                        .collect(),
                }
            };
            let guard = r
                .guard
                .as_deref()
                .map(|g| Guard::parse(g).expect("validated"));
            (r.state.clone(), r.event.clone(), guard, o)
        })
        .collect();
    finish_machine(
        &t.name,
        role,
        &t.description,
        &t.initial,
        states,
        events,
        rows,
    )
}

/// Message types of a machine (received or sent), sorted.
pub fn machine_messages(ir: &ProtocolIr, m: &Machine) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in &m.transitions {
        if ir.message(&t.event).is_some() {
            out.insert(t.event.clone());
        }
        if let Outcome::Go { actions, .. } = &t.outcome {
            for a in actions {
                if let Some(s) = a.sent() {
                    out.insert(s.to_string());
                }
            }
        }
    }
    out
}
