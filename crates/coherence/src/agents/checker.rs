//! The online checker of a generic system: the invariants of
//! `ccsim_protocol::invariants`, the same functions the exhaustive checker
//! calls, applied to a line after every row any agent runs on it.

use ccsim_kernel::prelude::*;
use ccsim_protocol::engine::AgentId;
use ccsim_protocol::invariants::{self, AgentLine, LineView};
use rustc_hash::FxHashMap as HashMap;

use super::SystemRef;
use crate::{Line, LineText};

pub use ccsim_protocol::ir::Access;

/// One read or write, in the order they took effect (the order rows ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEntry {
    /// `agent` made `value` the latest write of `line`.
    Write {
        /// The line.
        line: u64,
        /// The writer.
        agent: AgentId,
        /// The line's new bytes (`line_bytes` of them).
        value: Vec<u8>,
    },
    /// `agent` read `value` from `line` (a `check` action).
    Read {
        /// The line.
        line: u64,
        /// The reader.
        agent: AgentId,
        /// The bytes read.
        value: Vec<u8>,
    },
}

/// What the checker mirrors of one line.
#[derive(Debug, Clone)]
struct Mirror {
    /// Each agent's state.
    state: Vec<u16>,
    /// Each agent's value: its copy, or memory for an agent without one.
    value: Vec<Option<Line>>,
    /// The home's memory.
    memory: Line,
    /// The latest write (the ghost).
    latest: Line,
    /// Cached data in flight (write-backs, cache-to-cache transfers).
    cached_in_flight: u32,
}

/// The shared online checker of one generic system (checks on), and the
/// log of reads and writes (kept with checks on or off: a test replays it
/// against a sequential reference).
#[derive(Debug)]
pub struct InvariantChecker {
    sys: SystemRef,
    /// Whether invariants are checked on every row.
    pub enabled: bool,
    lines: HashMap<u64, Mirror>,
    /// Violations found, in order; the first one stops the run.
    pub violations: Vec<String>,
    /// Rows checked.
    pub checked: u64,
    /// Every read and write, in order (while `keep_log`).
    pub log: Vec<LogEntry>,
    /// Whether reads and writes go to `log` (on by default; a system built
    /// without a random tester, which alone replays the log, turns it off
    /// and saves an allocation per read and write).
    pub keep_log: bool,
}

impl InvariantChecker {
    /// A checker for the agents of `sys`.
    pub fn new(sys: SystemRef, enabled: bool) -> InvariantChecker {
        InvariantChecker {
            sys,
            enabled,
            lines: HashMap::default(),
            violations: Vec::new(),
            checked: 0,
            log: Vec::new(),
            keep_log: true,
        }
    }

    fn mirror(&mut self, line: u64) -> &mut Mirror {
        let sys = &self.sys;
        self.lines.entry(line).or_insert_with(|| {
            let init = sys.initial_value(line);
            Mirror {
                state: sys
                    .agents
                    .iter()
                    .map(|a| sys.protocol.initial[a.role] as u16)
                    .collect(),
                value: vec![None; sys.agents.len()],
                memory: init,
                latest: init,
                cached_in_flight: 0,
            }
        })
    }

    /// `line` holds `value` in the home's memory before the run (an array
    /// the host initialised): it is the line's memory and latest write.
    /// Call before the run touches the line.
    pub fn preload(&mut self, line: u64, value: &Line) {
        let m = self.mirror(line);
        m.memory = *value;
        m.latest = *value;
    }

    /// `agent` wrote `value` to `line`: it is the latest write.
    pub fn store(&mut self, line: u64, agent: AgentId, value: &Line) {
        let n = self.sys.line_bytes;
        if self.enabled {
            self.mirror(line).latest = *value;
        }
        if self.keep_log {
            self.log.push(LogEntry::Write {
                line,
                agent,
                value: value[..n].to_vec(),
            });
        }
    }

    /// `agent` in `state` read `value` from `line`; it must be the latest
    /// write.
    // The entry points below are inline and return at once when there is
    // nothing to do: a timing run (checks and log off) calls them on every
    // row, about seven times a CXL.cache load, and a call that only
    // returns cost 17 instructions each.
    #[inline]
    pub fn read(&mut self, now: Tick, line: u64, agent: AgentId, state: usize, value: &Line) {
        if self.keep_log || self.enabled {
            self.read_logged(now, line, agent, state, value);
        }
    }

    #[inline(never)]
    fn read_logged(&mut self, now: Tick, line: u64, agent: AgentId, state: usize, value: &Line) {
        let n = self.sys.line_bytes;
        if self.keep_log {
            self.log.push(LogEntry::Read {
                line,
                agent,
                value: value[..n].to_vec(),
            });
        }
        if self.enabled && self.mirror(line).latest != *value {
            let sys = self.sys.clone();
            let a = &sys.agents[agent as usize];
            let text = invariants::stale_read(
                &format!("{line:#x}"),
                &a.name,
                &sys.protocol.ir.roles[a.role].states[state].name,
            );
            self.violation(now, text);
        }
    }

    /// A message `msg` of `line` was sent (`+1`) or handled (`-1`).
    #[inline]
    pub fn in_flight(&mut self, line: u64, msg: u16, delta: i32) {
        if self.enabled {
            self.count_in_flight(line, msg, delta);
        }
    }

    #[inline(never)]
    fn count_in_flight(&mut self, line: u64, msg: u16, delta: i32) {
        if !self.sys.protocol.moves_cached_data(msg) {
            return;
        }
        let m = self.mirror(line);
        m.cached_in_flight = m.cached_in_flight.saturating_add_signed(delta);
    }

    /// `agent` ran a row on `line`: it is now in `state`, holds `value`,
    /// and (the home) memory holds `memory`. Checks SWMR and data-value on
    /// the line.
    #[inline]
    pub fn row(
        &mut self,
        now: Tick,
        line: u64,
        agent: AgentId,
        state: usize,
        value: Option<&Line>,
        memory: Option<&Line>,
    ) {
        if self.enabled {
            self.check_row(now, line, agent, state, value, memory);
        }
    }

    #[inline(never)]
    fn check_row(
        &mut self,
        now: Tick,
        line: u64,
        agent: AgentId,
        state: usize,
        value: Option<&Line>,
        memory: Option<&Line>,
    ) {
        let m = self.mirror(line);
        m.state[agent as usize] = state as u16;
        m.value[agent as usize] = value.copied();
        if let Some(mem) = memory {
            m.memory = *mem;
        }
        self.checked += 1;
        if let Err(e) = self.check_line(line) {
            self.violation(now, e);
        }
    }

    /// An unspecified reception: `msg` arrived at `agent` in `state`.
    pub fn unspecified(&mut self, now: Tick, line: u64, msg: u16, agent: AgentId, state: usize) {
        let sys = self.sys.clone();
        let a = &sys.agents[agent as usize];
        let text = invariants::unspecified(
            &format!("{line:#x}"),
            sys.protocol.msgs[msg as usize].name,
            &a.name,
            &sys.protocol.ir.roles[a.role].states[state].name,
        );
        self.violation(now, text);
    }

    /// Records a violation at `now`.
    pub fn violation(&mut self, now: Tick, text: String) {
        self.violations.push(format!("at {} ns: {text}", now / NS));
    }

    fn check_line(&self, line: u64) -> Result<(), String> {
        let Some(m) = self.lines.get(&line) else {
            return Ok(());
        };
        let sys = &self.sys;
        let n = sys.line_bytes;
        let name = crate::line::HexLine(line);
        let agents: Vec<AgentLine<'_, LineText<'_>>> = sys
            .agents
            .iter()
            .enumerate()
            .map(|(a, info)| {
                let st = m.state[a] as usize;
                let value = if sys.protocol.keeps_copy(info.role) {
                    m.value[a].as_ref().map(|v| LineText(&v[..n]))
                } else {
                    Some(LineText(&m.memory[..n]))
                };
                AgentLine {
                    name: &info.name,
                    state: &sys.protocol.ir.roles[info.role].states[st].name,
                    access: sys.protocol.access[info.role][st],
                    value,
                }
            })
            .collect();
        let view = LineView {
            line: &name,
            agents: &agents,
            memory: LineText(&m.memory[..n]),
            latest: LineText(&m.latest[..n]),
            data_in_flight: m.cached_in_flight > 0,
        };
        invariants::swmr(&view)?;
        invariants::data_value(&view)
    }
}
