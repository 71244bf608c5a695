//! A line engine on Cohet's CXL DCOH (`[systems.cxl]`): its read-modify-
//! write runs the cxl-cache table (RdOwn on a miss), and a host snoop for
//! the line it holds LOCKED waits for the release, then takes the written
//! value (the RAO PEs' lock, Cohet §V-A2).

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_coherence::agents::line_engine::{EngineOp, LineEngine, LineRmw};
use ccsim_coherence::agents::TableAgent;
use ccsim_coherence::Line;
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuildOptions, BuiltSystem, Platform};

const LINE: u64 = 40;

/// One fetch-and-add on word 0 of `LINE`, held `hold` after the read.
struct OneAdd {
    issued: bool,
    hold: Tick,
    /// (acquired, released, old word, new word)
    log: Rc<RefCell<Vec<(Tick, u64, u64)>>>,
    released_at: Rc<RefCell<Option<Tick>>>,
}

impl LineEngine for OneAdd {
    fn poll(&mut self, _now: Tick, busy: &mut dyn FnMut(u64) -> bool) -> Option<EngineOp> {
        if self.issued || busy(LINE) {
            return None;
        }
        self.issued = true;
        Some(EngineOp {
            id: 7,
            line: LINE,
            rmw: LineRmw::Add { offset: 0, add: 5 },
        })
    }
    fn next_wake(&self, _now: Tick) -> Option<Tick> {
        None
    }
    fn acquired(&mut self, id: u64, old: &Line, new: &Line, now: Tick) -> Tick {
        assert_eq!(id, 7);
        let word = |l: &Line| u64::from_le_bytes(l[..8].try_into().unwrap());
        self.log.borrow_mut().push((now, word(old), word(new)));
        self.hold
    }
    fn released(&mut self, id: u64, now: Tick) {
        assert_eq!(id, 7);
        *self.released_at.borrow_mut() = Some(now);
    }
    fn done(&self) -> bool {
        self.released_at.borrow().is_some()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Cohet's CXL system, checks on.
fn cohet_cxl() -> BuiltSystem {
    Platform::load("cohet")
        .unwrap()
        .build(
            "cxl",
            BuildOptions {
                seed: 1,
                trace: TraceMode::Off,
                checks: true,
                tester: None,
            },
        )
        .unwrap()
}

/// Runs the engine's add with `hold`, a host core loading the line at
/// 3 us; returns (acquired, released, the load's completion, the word the
/// core read, the word before the add).
fn run(hold: Tick) -> (Tick, Tick, Tick, u64, u64) {
    let mut s = cohet_cxl();
    let dcoh = s.agent_id("dcoh").unwrap();
    let core = s.agent_id("core0").unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let released = Rc::new(RefCell::new(None));
    s.agent_mut(dcoh)
        .set_engine(Box::new(OneAdd {
            issued: false,
            hold,
            log: log.clone(),
            released_at: released.clone(),
        }))
        .unwrap();
    s.agent_mut(core).set_program(&[(LINE, "load")], 1).unwrap();
    s.agent_mut(core).set_program_release(vec![3 * US]).unwrap();
    s.sim.run();
    assert!(
        s.checker.borrow().violations.is_empty(),
        "{:?}",
        s.checker.borrow().violations
    );
    assert!(s.agent(dcoh).finished() && s.agent(core).finished());
    let (acquired, old, new) = log.borrow()[0];
    assert_eq!(new, old.wrapping_add(5));
    let copy = s
        .agent(core)
        .copy_of(LINE)
        .expect("the core holds the line");
    let read = u64::from_le_bytes(copy[..8].try_into().unwrap());
    let done = s.agent(core).program_times()[0].1;
    let released = released.borrow().expect("released");
    (acquired, released, done, read, old)
}

#[test]
fn a_snoop_for_a_locked_line_waits_for_the_release_and_sees_the_write() {
    // The add acquires the line (RdOwn, a memory hit: well under 3 us) and
    // holds it until 10 us; the core's load at 3 us snoops the DCOH, and
    // the snoop waits for the release.
    let (acquired, released, done, read, old) = run(10 * US);
    assert!(acquired < 3 * US, "acquired at {acquired}");
    assert_eq!(released, acquired + 10 * US);
    assert!(
        done > released,
        "the load completed at {done}, before the release at {released}"
    );
    assert_eq!(read, old.wrapping_add(5), "the load sees the add");
    // Without a hold the same load is not held up.
    let (_, released, done_free, read_free, old) = run(0);
    assert!(done_free < 3 * US + 2 * US && done_free > released);
    assert_eq!(read_free, old.wrapping_add(5));
    assert!(done_free + 5 * US < done);
}

#[test]
fn the_engine_needs_a_store_event_and_the_lock_is_visible() {
    let mut s = cohet_cxl();
    // The home role has no local `store` event.
    let llc = s.agent_id("llc").unwrap();
    let e = s
        .agent_mut(llc)
        .set_engine(Box::new(OneAdd {
            issued: false,
            hold: 0,
            log: Rc::default(),
            released_at: Rc::default(),
        }))
        .unwrap_err();
    assert!(e.contains("llc") && e.contains("store"), "{e}");
    let dcoh = s.agent_id("dcoh").unwrap();
    assert!(!s.agent(dcoh).is_locked(LINE));
    let _ = TableAgent::PROGRAM_WAKE;
}

#[test]
fn an_agent_takes_an_engine_or_a_program_not_both() {
    // The engine's operations are the agent's program: a program given
    // beside an engine would silently replace the engine's bookkeeping (or
    // never be issued), so either order is refused with the agent's name.
    let engine = || {
        Box::new(OneAdd {
            issued: false,
            hold: 0,
            log: Rc::default(),
            released_at: Rc::default(),
        })
    };
    let mut s = cohet_cxl();
    let dcoh = s.agent_id("dcoh").unwrap();
    s.agent_mut(dcoh).set_engine(engine()).unwrap();
    let e = s
        .agent_mut(dcoh)
        .set_program(&[(LINE + 3, "store")], 1)
        .unwrap_err();
    assert!(e.contains("dcoh") && e.contains("line engine"), "{e}");
    // The engine still runs its add, alone.
    s.sim.run();
    assert!(s.checker.borrow().violations.is_empty());
    assert!(s.agent(dcoh).finished());

    let mut s = cohet_cxl();
    s.agent_mut(dcoh)
        .set_program(&[(LINE + 3, "store")], 1)
        .unwrap();
    let e = s.agent_mut(dcoh).set_engine(engine()).unwrap_err();
    assert!(
        e.contains("dcoh") && e.contains("already has a program"),
        "{e}"
    );
}
