//! The LLC's data: each line's state and where its copy is ([`LlcLine`]),
//! the copies in one slab ([`CopySlab`]), and a row's effects on them
//! ([`LlcRow`], the LLC's side of the protocol engine's `Effects`).

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_coherence::check::Checker;
use ccsim_coherence::{boxed_line, Line, Msg, Tables, LINE_BYTES, PEER};
use ccsim_kernel::prelude::*;
use ccsim_protocol::engine::{Effects, SendStep};

use super::program::put_word;
use super::TOK_OUTBOX;

#[derive(Debug, Clone, Copy)]
pub(super) struct LlcLine {
    pub(super) state: u8,
    /// Where the LLC's copy is (`None`: it has none).
    pub(super) copy: Option<CopySlot>,
}

/// A slot of [`CopySlab`] (1-based, so that an absent copy costs no space).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct CopySlot(std::num::NonZeroU32);

/// The LLC's copies of lines in one array whose freed slots are reused: a
/// line that arrives costs a 128-byte copy out of its message's buffer
/// (which goes back to the pool, [`ccsim_coherence::recycle_line`]) instead of an
/// allocation kept per line, and dropping the LLC frees one array instead
/// of one box per line.
#[derive(Debug, Default)]
pub(super) struct CopySlab {
    lines: Vec<Line>,
    free: Vec<CopySlot>,
}

impl CopySlab {
    pub(super) fn insert(&mut self, data: &Line) -> CopySlot {
        if let Some(s) = self.free.pop() {
            *self.get_mut(s) = *data;
            return s;
        }
        self.lines.push(*data);
        let n = u32::try_from(self.lines.len()).expect("fewer than 2^32 LLC copies");
        CopySlot(std::num::NonZeroU32::new(n).expect("one-based"))
    }
    pub(super) fn remove(&mut self, s: CopySlot) {
        self.free.push(s);
    }
    pub(super) fn get(&self, s: CopySlot) -> &Line {
        &self.lines[s.0.get() as usize - 1]
    }
    pub(super) fn get_mut(&mut self, s: CopySlot) -> &mut Line {
        &mut self.lines[s.0.get() as usize - 1]
    }
}

/// An LLC row's effects (the engine decides which) on the LLC's copy of
/// the line, which lives in the copy slab: the fields of the CPU a row
/// touches, borrowed apart from the LLC's map so that the map entry is
/// held across the row.
pub(super) struct LlcRow<'a, 'c> {
    pub(super) copies: &'a mut CopySlab,
    pub(super) tables: &'a Tables,
    pub(super) checker: &'a Rc<RefCell<Checker>>,
    pub(super) store_log: &'a mut Vec<(Tick, u64, u8, u64)>,
    pub(super) ctx: &'a mut Ctx<'c, Msg>,
    /// The line's copy (its slab slot) as the row leaves it.
    pub(super) copy: &'a mut Option<CopySlot>,
    pub(super) line: u64,
    /// The received line, if the row handles a data message.
    pub(super) input: Option<&'a Line>,
    /// The core's store (word, value) for `store`.
    pub(super) store: Option<(u8, u64)>,
    /// Whether the online checks run.
    pub(super) checks: bool,
    pub(super) now: Tick,
    /// When the row's messages leave.
    pub(super) delay: Tick,
}

impl Effects<()> for LlcRow<'_, '_> {
    #[inline]
    fn send(&mut self, s: &SendStep<()>) -> Result<(), String> {
        let copies = &*self.copies;
        let data = s
            .data
            .then(|| boxed_line(self.copy.map_or([0; LINE_BYTES], |c| *copies.get(c))));
        let out = self.tables.make(s.msg, self.line, data);
        self.ctx
            .schedule_local(self.now + self.delay, TOK_OUTBOX, Msg::Coh(out));
        Ok(())
    }

    #[inline]
    fn fill(&mut self) -> Result<(), String> {
        *self.copy = match (*self.copy, self.input) {
            (None, None) => None,
            (Some(s), None) => {
                self.copies.remove(s);
                None
            }
            (Some(s), Some(d)) => {
                *self.copies.get_mut(s) = *d;
                Some(s)
            }
            (None, Some(d)) => Some(self.copies.insert(d)),
        };
        Ok(())
    }

    #[inline]
    fn store(&mut self) -> Result<(), String> {
        let s = match *self.copy {
            Some(s) => s,
            None => *self.copy.insert(self.copies.insert(&[0; LINE_BYTES])),
        };
        let v = self.copies.get_mut(s);
        if let Some(d) = self.input {
            *v = *d;
        } else if let Some((w, val)) = self.store {
            put_word(v, w, val);
            self.store_log.push((self.now, self.line, w, val));
        }
        if self.checks {
            self.checker.borrow_mut().store(self.line, v);
        }
        Ok(())
    }

    #[inline]
    fn check(&mut self) -> Result<(), String> {
        if self.checks {
            let v = self.copy.map_or(&[0; LINE_BYTES], |s| self.copies.get(s));
            self.checker
                .borrow_mut()
                .check_read(self.now, self.line, PEER, v);
        }
        Ok(())
    }
}
