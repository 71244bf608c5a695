//! The coherence invariants, written once.
//!
//! The exhaustive checker ([`crate::system::System`]) applies them to every
//! reachable state, line by line; the simulator's online checker
//! (`ccsim_coherence::check`) applies them to a line after every simulated
//! transition. Both describe one line as a [`LineView`]: each agent's name,
//! state, access and the value it holds, memory, the latest write (a ghost
//! variable that follows every `store`), and whether cached data is on its
//! way somewhere (a write-back or a cache-to-cache transfer).
//!
//! * **SWMR** (single writer, multiple readers): at most one agent with
//!   write access, and none with read access beside it.
//! * **Data-value**: every agent with access holds the latest write; when
//!   no agent has write access and no cached data is in flight, memory holds
//!   it. (Reads are checked where they happen: the `check` action.)
//! * **No unspecified reception**: a message that can arrive at an agent
//!   finds a row (or a stall) in the agent's state; [`unspecified`] words
//!   the violation for both drivers.
//!
//! ```
//! use ccsim_protocol::invariants::{swmr, data_value, AgentLine, LineView};
//! use ccsim_protocol::ir::Access;
//! let agents = [
//!     AgentLine { name: "cache0", state: "M", access: Access::Write, value: Some(7u8) },
//!     AgentLine { name: "cache1", state: "S", access: Access::Read, value: Some(7u8) },
//! ];
//! let line = LineView { line: &"A", agents: &agents, memory: 3, latest: 7, data_in_flight: false };
//! assert_eq!(
//!     swmr(&line).unwrap_err(),
//!     "line A: single-writer-multiple-reader violated: cache0 in M (Write), cache1 in S (Read)"
//! );
//! assert!(data_value(&line).is_ok());
//! ```

use std::fmt::Display;

use crate::ir::Access;

/// One agent's part of a line.
#[derive(Clone, Debug)]
pub struct AgentLine<'a, V> {
    /// Agent name (`dc`, `cache1`).
    pub name: &'a str,
    /// Its state's name.
    pub state: &'a str,
    /// Its access in that state.
    pub access: Access,
    /// The value it holds (its copy, or memory for an agent that works on
    /// memory); `None` when it holds none.
    pub value: Option<V>,
}

/// One line as the invariants see it.
#[derive(Clone)]
pub struct LineView<'a, V> {
    /// How the line is named in messages (`A`, `0x3`): formatted only when
    /// a message is (checks run on every simulated row).
    pub line: &'a dyn Display,
    /// Every agent of the line.
    pub agents: &'a [AgentLine<'a, V>],
    /// Memory's value.
    pub memory: V,
    /// The latest write.
    pub latest: V,
    /// Cached data is in flight (a data message sent by an agent that keeps
    /// a copy: a write-back, or a transfer to another cache).
    pub data_in_flight: bool,
}

/// SWMR on one line.
// The checks run after every simulated row: the test is inlined into the
// checker's loop, the wording is out of line and only runs on a violation.
#[inline]
pub fn swmr<V>(v: &LineView<'_, V>) -> Result<(), String> {
    let (mut writers, mut readers) = (0, 0);
    for a in v.agents {
        match a.access {
            Access::Write => writers += 1,
            Access::Read => readers += 1,
            Access::None => {}
        }
    }
    if writers > 1 || (writers == 1 && readers > 0) {
        return Err(swmr_violation(v));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn swmr_violation<V>(v: &LineView<'_, V>) -> String {
    let who: Vec<String> = v
        .agents
        .iter()
        .filter(|a| a.access != Access::None)
        .map(|a| format!("{} in {} ({:?})", a.name, a.state, a.access))
        .collect();
    format!(
        "line {}: single-writer-multiple-reader violated: {}",
        v.line,
        who.join(", ")
    )
}

/// Data-value on one line: every agent with access holds the latest write;
/// with no writer and no cached data in flight, memory holds it.
#[inline]
pub fn data_value<V: PartialEq + Display>(v: &LineView<'_, V>) -> Result<(), String> {
    let mut writer = false;
    for a in v.agents {
        if a.access == Access::None {
            continue;
        }
        writer |= a.access == Access::Write;
        match &a.value {
            Some(x) if *x == v.latest => {}
            held => return Err(stale_copy(v, a, held.as_ref())),
        }
    }
    if !writer && !v.data_in_flight && v.memory != v.latest {
        return Err(stale_memory(v));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn stale_copy<V: Display>(v: &LineView<'_, V>, a: &AgentLine<'_, V>, held: Option<&V>) -> String {
    match held {
        Some(x) => format!(
            "line {}: {} in {} holds value {x} but the latest write is {}",
            v.line, a.name, a.state, v.latest
        ),
        None => format!(
            "line {}: {} in {} has access but holds no value (the latest write is {})",
            v.line, a.name, a.state, v.latest
        ),
    }
}

#[cold]
#[inline(never)]
fn stale_memory<V: Display>(v: &LineView<'_, V>) -> String {
    format!(
        "line {}: memory holds {} but the latest write is {} and no agent holds it",
        v.line, v.memory, v.latest
    )
}

/// The violation text of a read (`check`) that saw another value than the
/// latest write.
pub fn stale_read(line: &str, agent: &str, state: &str) -> String {
    format!("line {line}: {agent} in {state} read a value other than the latest write")
}

/// The violation text of an unspecified reception: `msg` arrives (or can
/// arrive) at `agent` in `state`, whose table has no row or stall for it.
pub fn unspecified(line: &str, msg: &str, agent: &str, state: &str) -> String {
    format!(
        "line {line}: {msg} can arrive at {agent} in state {state} but the table has no transition or stall for it"
    )
}
