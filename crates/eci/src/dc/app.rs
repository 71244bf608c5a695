//! The DC's application interface: the requests the FPGA application
//! issues ([`AppOp`]), what the interface reports ([`DcEvent`]), the device
//! logic behind it ([`Device`]), and an application row's effects
//! ([`AppRow`]).

use ccsim_coherence::memory::LineStore;
use ccsim_coherence::{CohMsg, Line, Msg, LOCAL};
use ccsim_kernel::prelude::*;
use ccsim_protocol::engine::{Effects, SendStep};

use super::{Dest, DirectoryController, TOK_INBOX};

/// A request of the FPGA application: a local event of `ir.roles[2]` on a line
/// (`clean`, `clinv`, `lock`, `unlock`, `read`, `write`).
#[derive(Clone, Debug, PartialEq)]
pub struct AppOp {
    /// Event name in the local table.
    pub event: String,
    /// Line.
    pub line: u64,
    /// Data for `write`.
    pub data: Option<Box<Line>>,
    /// Not issued before this tick (application think time).
    pub not_before: Tick,
}

impl AppOp {
    /// Event `event` on `line`, issued as soon as the previous op completed.
    pub fn new(event: &str, line: u64) -> AppOp {
        AppOp {
            event: event.to_string(),
            line,
            data: None,
            not_before: 0,
        }
    }
    /// With the data of a `write`.
    pub fn with_data(mut self, data: Line) -> AppOp {
        self.data = Some(Box::new(data));
        self
    }
    /// Not before tick `at`.
    pub fn at(mut self, at: Tick) -> AppOp {
        self.not_before = at;
        self
    }

    /// `seqs` random sequences on lines `0..lines` (a random tester's
    /// application): a clean, a clean-invalidate, or lock / read / write /
    /// unlock, the write's bytes all the sequence's number.
    pub fn random_sequences(rng: &mut SimRng, seqs: u64, lines: u64) -> Vec<AppOp> {
        let mut app = Vec::new();
        for k in 0..seqs {
            let line = rng.below(lines);
            match rng.below(3) {
                0 => app.push(AppOp::new("clean", line)),
                1 => app.push(AppOp::new("clinv", line)),
                _ => {
                    app.push(AppOp::new("lock", line));
                    app.push(AppOp::new("read", line));
                    app.push(AppOp::new("write", line).with_data([k as u8; 128]));
                    app.push(AppOp::new("unlock", line));
                }
            }
        }
        app
    }
}

/// What the application interface reports.
#[derive(Clone, Debug, PartialEq)]
pub enum DcEvent {
    /// A DC transition of `line`.
    Transition {
        /// Line.
        line: u64,
        /// Event name.
        event: String,
        /// State before.
        from: String,
        /// State after.
        to: String,
    },
    /// The DC read a line from memory (AXI read).
    Read {
        /// Line.
        line: u64,
    },
    /// The DC wrote a line to memory.
    Write {
        /// Line.
        line: u64,
    },
    /// An application op completed.
    AppDone {
        /// The op's event.
        event: String,
        /// Line.
        line: u64,
        /// Issue to completion (ps).
        latency_ps: Tick,
    },
}

/// An observer of the application interface.
pub type Observer = Box<dyn FnMut(Tick, &DcEvent)>;

/// Device logic behind the application interface: called after the
/// device-local machine handled a message from the DC (a notification such
/// as the invocation protocol's `LCL_RDREQ`, or a completion such as
/// `LCL_ACK`) with (now, message name, line, the DC's memory); returns
/// application ops to queue. This is how an application *holds* a CPU
/// request: the protocol table keeps the request's line transient until an
/// op the device queues later answers it (see [`crate::invocation`]).
pub type Device = Box<dyn FnMut(Tick, &str, u64, &LineStore) -> Vec<AppOp>>;

/// A [`Device`] that also sees the line's state in the DC's machine (after
/// the message): (now, message name, line, state, the DC's memory). A
/// device that answers held reads of any kind needs it: the invocation
/// protocol holds a load (`I_RLDD`, answered Shared, Exclusive or "not
/// ready yet") and a load-exclusive (`I_RLDX`, answered Exclusive only)
/// with the same notification.
pub type StateDevice = Box<dyn FnMut(Tick, &str, u64, &str, &LineStore) -> Vec<AppOp>>;

/// The device-local machine's row effects: AXI completions and the
/// application's reads and writes of the DC's memory.
pub(super) struct AppRow<'a, 'c> {
    pub(super) dc: &'a mut DirectoryController,
    pub(super) ctx: &'a mut Ctx<'c, Msg>,
    pub(super) line: u64,
    /// The data the event brings (an application write's line).
    pub(super) data: Option<&'a Line>,
    pub(super) now: Tick,
}

impl Effects<Dest> for AppRow<'_, '_> {
    #[inline]
    fn send(&mut self, s: &SendStep<Dest>) -> Result<(), String> {
        let out = CohMsg::new(self.dc.catalogue, s.msg, self.line, None);
        // AXI completions and app requests reach the DCU a cycle later.
        let at = self.now + self.dc.period;
        self.dc.pipe(self.ctx, at, TOK_INBOX, out);
        Ok(())
    }

    fn store(&mut self) -> Result<(), String> {
        let (dc, line) = (&mut *self.dc, self.line);
        let v = self.data.copied().unwrap_or_else(|| dc.mem.read(line));
        dc.mem.write(line, &v);
        dc.checker.borrow_mut().store(self.now, line, &v);
        dc.store_log.push((self.now, line, v));
        dc.observe(self.now, DcEvent::Write { line });
        Ok(())
    }

    fn check(&mut self) -> Result<(), String> {
        let (dc, line) = (&mut *self.dc, self.line);
        let v = dc.mem.read(line);
        dc.checker
            .borrow_mut()
            .check_read(self.now, line, LOCAL, &v);
        dc.observe(self.now, DcEvent::Read { line });
        Ok(())
    }
}
