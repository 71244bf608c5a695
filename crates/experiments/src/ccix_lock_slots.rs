//! `ccix_lock_slots` — the lock-queue protocol for the paper's bucket
//! layout (CCIX §V, Figs. 8, 9: a bucket line of 8 B words holding a queue
//! of lock entries, acquire by CAS-append, release by shifting the queue),
//! written down precisely as one locker's state machine ([`Locker`]: each
//! step one single-word read or CAS) and checked over every interleaving
//! of those steps. The same machine drives the lock table's simulation
//! ([`crate::ccix_locktable`] with `layout = "slots"`), which performs
//! each [`Access`] on the simulated bucket line.
//!
//! # Why a protocol is needed
//!
//! With one CAS word per slot a device append fails only when *its* slot
//! changed, but the queue is no longer changed atomically: a release
//! shifts it one slot at a time while appends land at its end. A naive
//! shift loses or reorders an entry appended behind a slot the releaser is
//! about to free; a "moving" mark does not repair it.
//!
//! # The line
//!
//! * word 0, the **header**: the bucket's release count `r` and a
//!   *releasing* bit. The lock passes to the new head at the write into
//!   slot 0, while the old head still tidies the queue's tail; the new
//!   head begins its own release by a CAS of the header from
//!   `(r, idle)` to `(r, releasing)`, so releases of one bucket never
//!   overlap (the checker finds the overlap without it);
//! * words 1..=N, the **slots**: `Entry(locker)` or `Free(tag)`, where the
//!   tag is the release count at which the slot was last freed (the table
//!   starts all zero: header 0, every slot `Free(0)`).
//!
//! # Append (acquire)
//!
//! 1. Read the header: `r0`. Start at slot 0.
//! 2. Read slot `i`. `Entry` → `i + 1` (past the last slot: the queue is
//!    full, restart at 1). `Free(t)` with `t > r0` → a release closed this
//!    slot after `r0` was read: restart at 1. `Free(t)` with `t <= r0` →
//!    3.
//! 3. CAS slot `i` from `Free(t)` to `Entry(me)`. Success: appended (and
//!    granted if `i == 0`). Failure returns the word found: decide on it as
//!    in 2 without another read.
//!
//! # Release (by the head, slot 0)
//!
//! CAS the header `(r, idle)` → `(r, releasing)`, `r` the locker's guess
//! (the count it read plus the slot it appended at); a failure returns the
//! header, and the retry compares with its count (plus one while another
//! release is still publishing: a CAS that spins until the publish). Then
//! for `i = 0, 1, ...`: read slot `i + 1`.
//! * `Entry(e)`: write `Entry(e)` to slot `i` (slot `i` now only ever holds
//!   the releaser's own copy, which no append touches; at `i == 0` this is
//!   `e`'s grant) and go on at `i + 1`.
//! * `Free(t)`: **close** it: CAS slot `i + 1` from `Free(t)` to
//!   `Free(r + 1)`. If an append got there first the CAS returns its
//!   `Entry(e)`: treat as above. Otherwise write `Free(r + 1)` to slot `i`
//!   (the trailing copy), then write `(r + 1, idle)` to the header.
//! * No slot `i + 1` (the last slot): write `Free(r + 1)` to slot `i`, then
//!   the header.
//!
//! The release's writes are CASes from the value the protocol says the
//! word holds (slot `i` the releaser's own copy, the header its releasing
//! count): no other step touches those words then, so each must match,
//! and a mismatch is reported as a violation (the driver's bytes then
//! check the claim on the simulated line). On CCIX this is also how the
//! U280's lock module writes: its only operation on host memory besides
//! reads is the AtomicCompare (§V-A).
//!
//! # The words
//!
//! The zeroed line is the empty bucket: the header `r << 1 | releasing`,
//! a slot `Free(t)` as `t << 1` and `Entry(e)` as `e << 1 | 1`
//! ([`Slot::encode`], [`encode_header`]).
//!
//! Why it holds: an append that read `r0 = r` before the release and is
//! about to CAS the queue's end finds it re-tagged `r + 1` (its CAS fails,
//! it restarts), or won the CAS first (the releaser's close fails and moves
//! its entry). Until the header says `r + 1` every append sees the closed
//! slots as newer than its count and restarts, so nothing lands behind the
//! trailing copy before that copy is freed. Its cost: an append reads every
//! queued entry (a CCIX round trip each from the device), and appends wait
//! out the tail of a release.
//!
//! # Where an append may start (issue 16, item 2)
//!
//! [`StartHint`] picks the first slot after a restart. Starting at the slot
//! it last saw free ([`StartHint::LastFree`]) is **wrong**: a release that
//! completed meanwhile moved the queue's end one slot left and tagged both
//! that slot and the old end `r + 1`, so the append lands one past a free
//! slot (a hole: that entry is never granted). The checker finds it with
//! two lockers. Starting that many slots lower than the releases it missed
//! ([`StartHint::LastFreeLessReleases`], `i - (r_now - r0)`: each release
//! moves the queue's end left by exactly one) passes the same exhaustive
//! check, so a restarted append may skip that many entries' reads. The
//! first scan of an acquire still starts at slot 0 (no earlier count to
//! correct by). The untagged mutant (`count_tags: false`) and `LastFree`
//! both leave a stuck waiter behind a hole with two lockers and two slots.
//!
//! The exhaustive check (`explore`) covers 15,117 states over its five
//! small configurations and 222,982 with three lockers of two acquires
//! each on three slots (starting at slot 0; the corrected last-free start
//! passes that configuration too); a step that would change nothing (a
//! header CAS spinning on another release) is not a move, so a waiter
//! stuck behind a hole still ends the search. A proptest runs random
//! schedules on a larger bucket (four lockers, three acquires each, five
//! slots).

use std::collections::HashSet;

/// A slot word: a queued locker, or free with the release count that freed
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// A lock entry of this locker.
    Entry(u8),
    /// Free since this release count.
    Free(u32),
}

impl Slot {
    /// The slot as its 8 B word: `Free(t)` is `t << 1`, `Entry(e)` is
    /// `e << 1 | 1` (so the zeroed table is every slot `Free(0)`).
    pub fn encode(self) -> u64 {
        match self {
            Slot::Free(t) => u64::from(t) << 1,
            Slot::Entry(e) => u64::from(e) << 1 | 1,
        }
    }

    /// The slot a word holds; an error names a word no slot encodes.
    pub fn decode(word: u64) -> Result<Slot, String> {
        let v = word >> 1;
        match word & 1 {
            0 => u32::try_from(v)
                .map(Slot::Free)
                .map_err(|_| format!("slot word {word:#018x}: a free tag past 32 bits")),
            _ => u8::try_from(v)
                .map(Slot::Entry)
                .map_err(|_| format!("slot word {word:#018x}: a locker past 255")),
        }
    }
}

/// The header word: the release count `r` and the releasing bit, as
/// `r << 1 | releasing` (the zeroed table is `(0, idle)`).
pub fn encode_header(r: u32, releasing: bool) -> u64 {
    u64::from(r) << 1 | u64::from(releasing)
}

/// The release count and releasing bit a header word holds.
pub fn decode_header(word: u64) -> Result<(u32, bool), String> {
    u32::try_from(word >> 1)
        .map(|r| (r, word & 1 == 1))
        .map_err(|_| format!("header word {word:#018x}: a release count past 32 bits"))
}

/// Which word of the bucket line an access addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WordRef {
    /// Word 0: the release count and the releasing bit.
    Header,
    /// Slot `i`: word `i + 1`.
    Slot(u8),
}

impl WordRef {
    /// The word's index in the line (its byte offset over 8).
    pub fn index(self) -> usize {
        match self {
            WordRef::Header => 0,
            WordRef::Slot(i) => i as usize + 1,
        }
    }
}

/// One step's single-word access, as its words are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A plain read of the word.
    Read(WordRef),
    /// A compare-and-swap: `new` where the word holds `expect`. A
    /// release's writes are CASes too, from the copy the protocol says the
    /// word holds (their failure is a violation).
    Cas {
        /// The word.
        word: WordRef,
        /// The compare value.
        expect: u64,
        /// The swap value.
        new: u64,
    },
}

/// What completing an access did to the lock (for the reference FIFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The append's CAS succeeded at this slot (slot 0: granted at once).
    pub appended: Option<u8>,
    /// The release's first write into slot 0: the lock leaves its holder.
    pub released: bool,
    /// That write put this locker's entry at the head: its grant.
    pub granted: Option<u8>,
    /// The release published its count: the locker is idle again.
    pub done: bool,
}

/// Where an append resumes its scan after a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StartHint {
    /// Slot 0 (the protocol).
    Zero,
    /// The slot where the newer tag was seen (a mutant: leaves holes).
    LastFree,
    /// That slot less the releases counted since (`r_now - r0`).
    LastFreeLessReleases,
}

/// The protocol's variant under check: the real one, or a mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Variant {
    /// Where a restarted append resumes.
    pub start: StartHint,
    /// Whether a release tags the slots it frees with the new count
    /// (`false`: the mutant without count tags, which frees with the old
    /// tag and so lets stale appends land behind the trailing copy).
    pub count_tags: bool,
}

impl Variant {
    /// The protocol as documented above.
    pub const PROTOCOL: Variant = Variant {
        start: StartHint::Zero,
        count_tags: true,
    };
}

/// What one locker is about to do (each a single-word read or CAS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Between lock cycles.
    Idle,
    /// Append: read the header (restarting at `from`).
    ReadHeader { from: u8, seen: Option<u32> },
    /// Append: read slot `i`.
    ReadSlot { r0: u32, i: u8 },
    /// Append: CAS slot `i` from `expect`.
    Cas { r0: u32, i: u8, expect: Slot },
    /// Queued (or holding, once slot 0 names it): its release begins with
    /// a CAS of the header from `(r, idle)`, `r` its guess of the count.
    Waiting { r: u32 },
    /// Release: read slot `i + 1` (slot `i` holds the releaser's `own`).
    RelRead { r: u32, i: u8, own: Slot },
    /// Release: write `value` into slot `i` (a CAS from `own`).
    RelWrite {
        r: u32,
        i: u8,
        own: Slot,
        value: Slot,
    },
    /// Release: close slot `i + 1` (CAS from `expect`).
    RelClose {
        r: u32,
        i: u8,
        own: Slot,
        expect: Slot,
    },
    /// Release: free the trailing copy at slot `i` (a CAS from `own`).
    RelFree { r: u32, i: u8, own: Slot },
    /// Release: publish `r + 1` in the header (a CAS from releasing).
    RelPublish { r: u32 },
}

/// One locker's side of the protocol: the step logic both the checker
/// below and the lock table's driver ([`crate::ccix_locktable`], with
/// `layout = "slots"`) run. The caller performs each [`Access`] on the
/// bucket's words (here on a vector, there on the simulated line) and
/// hands back the word it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Locker {
    me: u8,
    slots: u8,
    variant: Variant,
    phase: Phase,
}

impl Locker {
    /// Locker `me` of a bucket with `slots` slots, running `variant`.
    pub fn new(me: u8, slots: usize, variant: Variant) -> Locker {
        Locker {
            me,
            slots: slots as u8,
            variant,
            phase: Phase::Idle,
        }
    }

    /// Whether it is between lock cycles.
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    /// Whether its entry is queued: its next access (the release's first)
    /// waits for its grant.
    pub fn is_waiting(&self) -> bool {
        matches!(self.phase, Phase::Waiting { .. })
    }

    /// Whether it is releasing (its accesses are the release's).
    pub fn is_releasing(&self) -> bool {
        matches!(
            self.phase,
            Phase::RelRead { .. }
                | Phase::RelWrite { .. }
                | Phase::RelClose { .. }
                | Phase::RelFree { .. }
                | Phase::RelPublish { .. }
        )
    }

    /// Begins an acquire: the append reads the header first.
    pub fn start_acquire(&mut self) -> Result<(), String> {
        if self.phase != Phase::Idle {
            return Err(format!(
                "locker {} acquires while {:?}",
                self.me, self.phase
            ));
        }
        self.phase = Phase::ReadHeader {
            from: 0,
            seen: None,
        };
        Ok(())
    }

    /// The access its next step performs (`None` when idle). A waiting
    /// locker's is its release's first, to run once it is granted.
    pub fn access(&self) -> Option<Access> {
        let slot = |i: u8| WordRef::Slot(i);
        let cas = |word, expect: u64, new: u64| Access::Cas { word, expect, new };
        Some(match self.phase {
            Phase::Idle => return None,
            Phase::ReadHeader { .. } => Access::Read(WordRef::Header),
            Phase::ReadSlot { i, .. } => Access::Read(slot(i)),
            Phase::Cas { i, expect, .. } => {
                cas(slot(i), expect.encode(), Slot::Entry(self.me).encode())
            }
            Phase::Waiting { r } => cas(
                WordRef::Header,
                encode_header(r, false),
                encode_header(r, true),
            ),
            Phase::RelRead { i, .. } => Access::Read(slot(i + 1)),
            Phase::RelWrite { i, own, value, .. } => cas(slot(i), own.encode(), value.encode()),
            Phase::RelClose { r, i, expect, .. } => cas(
                slot(i + 1),
                expect.encode(),
                Slot::Free(self.free_tag(r)).encode(),
            ),
            Phase::RelFree { r, i, own } => {
                cas(slot(i), own.encode(), Slot::Free(self.free_tag(r)).encode())
            }
            Phase::RelPublish { r } => cas(
                WordRef::Header,
                encode_header(r, true),
                encode_header(r + 1, false),
            ),
        })
    }

    /// Completes the access of [`access`](Self::access), which found
    /// `found` (a CAS succeeded where that equals its compare value): the
    /// next phase, and what it did to the lock. An error names a word no
    /// step can have found (a release's write that found another value
    /// than its own copy).
    pub fn complete(&mut self, found: u64) -> Result<Outcome, String> {
        let me = self.me;
        let n = self.slots;
        let mut out = Outcome::default();
        let decide = |r0: u32, i: u8, found: Slot| -> Phase {
            match found {
                Slot::Entry(_) if i + 1 < n => Phase::ReadSlot { r0, i: i + 1 },
                Slot::Entry(_) => Phase::ReadHeader {
                    from: 0,
                    seen: None,
                },
                Slot::Free(t) if t > r0 => Phase::ReadHeader {
                    from: i,
                    seen: Some(r0),
                },
                Slot::Free(_) => Phase::Cas {
                    r0,
                    i,
                    expect: found,
                },
            }
        };
        // Reading slot `i + 1`, or, past the last slot, freeing slot `i`.
        let rel_read = |r: u32, i: u8, own: Slot| -> Phase {
            if i + 1 == n {
                Phase::RelFree { r, i, own }
            } else {
                Phase::RelRead { r, i, own }
            }
        };
        let own_write = |what: &str, own: Slot, found: u64| -> Result<(), String> {
            if found == own.encode() {
                Ok(())
            } else {
                Err(format!(
                    "locker {me}'s release {what} found {:?}, not its own copy {own:?}",
                    Slot::decode(found)
                ))
            }
        };
        let next = match self.phase {
            Phase::Idle => return Err(format!("locker {me} completed an access while idle")),
            Phase::ReadHeader { from, seen } => {
                let (r0, _) = decode_header(found)?;
                let i = match (self.variant.start, seen) {
                    (StartHint::Zero, _) | (_, None) => 0,
                    (StartHint::LastFree, Some(_)) => from,
                    (StartHint::LastFreeLessReleases, Some(old)) => {
                        from.saturating_sub(r0.saturating_sub(old).min(u8::MAX as u32) as u8)
                    }
                };
                Phase::ReadSlot { r0, i }
            }
            Phase::ReadSlot { r0, i } => decide(r0, i, Slot::decode(found)?),
            Phase::Cas { r0, i, expect } => {
                if found == expect.encode() {
                    out.appended = Some(i);
                    // Each release ahead of it counts one: the header's
                    // count when its own release can begin, a guess its
                    // CAS corrects.
                    Phase::Waiting {
                        r: r0 + u32::from(i),
                    }
                } else {
                    decide(r0, i, Slot::decode(found)?)
                }
            }
            Phase::Waiting { r } => match decode_header(found)? {
                (h, false) if h == r => rel_read(r, 0, Slot::Entry(me)),
                // A release is still publishing: it will leave `h + 1`.
                (h, true) => Phase::Waiting { r: h + 1 },
                (h, false) => Phase::Waiting { r: h },
            },
            Phase::RelRead { r, i, own } => match Slot::decode(found)? {
                entry @ Slot::Entry(_) => Phase::RelWrite {
                    r,
                    i,
                    own,
                    value: entry,
                },
                free => Phase::RelClose {
                    r,
                    i,
                    own,
                    expect: free,
                },
            },
            Phase::RelWrite { r, i, own, value } => {
                own_write(&format!("write into slot {i}"), own, found)?;
                if i == 0 {
                    out.released = true;
                    if let Slot::Entry(e) = value {
                        out.granted = Some(e);
                    }
                }
                rel_read(r, i + 1, value)
            }
            Phase::RelClose { r, i, own, expect } => {
                if found == expect.encode() {
                    Phase::RelFree { r, i, own }
                } else {
                    Phase::RelWrite {
                        r,
                        i,
                        own,
                        value: Slot::decode(found)?,
                    }
                }
            }
            Phase::RelFree { r, i, own } => {
                own_write(&format!("free of slot {i}"), own, found)?;
                out.released = i == 0;
                Phase::RelPublish { r }
            }
            Phase::RelPublish { r } => {
                if found != encode_header(r, true) {
                    return Err(format!(
                        "locker {me} published release {r} it did not begin (header {:?})",
                        decode_header(found)
                    ));
                }
                out.done = true;
                Phase::Idle
            }
        };
        self.phase = next;
        Ok(out)
    }

    fn free_tag(&self, r: u32) -> u32 {
        if self.variant.count_tags {
            r + 1
        } else {
            r
        }
    }
}

/// Performs `access` on `words` (the header, then the slots): the word it
/// found, with a CAS's swap applied on a match.
pub fn perform(words: &mut [u64], access: Access) -> u64 {
    match access {
        Access::Read(w) => words[w.index()],
        Access::Cas { word, expect, new } => {
            let found = words[word.index()];
            if found == expect {
                words[word.index()] = new;
            }
            found
        }
    }
}

/// One bucket and its lockers: the whole state the checker explores.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    /// The bucket line's words: the header, then the slots.
    words: Vec<u64>,
    lockers: Vec<Locker>,
    /// Acquires each locker has still to issue.
    left: Vec<u8>,
    /// Lockers in the order their appends succeeded (the reference FIFO).
    appended: Vec<u8>,
    /// Lockers in the order they were granted.
    granted: Vec<u8>,
}

/// A violation and the schedule (locker per step) that reached it.
#[derive(Debug)]
pub struct Violation {
    /// What went wrong.
    pub what: String,
    /// The lockers' steps, in order.
    pub schedule: Vec<u8>,
}

/// One bucket of `slots` slots shared by lockers that each issue
/// `acquires[k]` lock cycles under `variant`.
#[derive(Clone, Debug)]
pub struct Config {
    /// Slots in the bucket (the queue's length bound).
    pub slots: usize,
    /// Acquires per locker.
    pub acquires: Vec<u8>,
    /// The protocol or a mutant.
    pub variant: Variant,
}

impl Config {
    fn initial(&self) -> State {
        State {
            words: vec![0; self.slots + 1],
            lockers: (0..self.acquires.len())
                .map(|k| Locker::new(k as u8, self.slots, self.variant))
                .collect(),
            left: self.acquires.clone(),
            appended: Vec::new(),
            granted: Vec::new(),
        }
    }

    /// Locker `k`'s next step from `s`, if it may take one: an idle
    /// locker with acquires left starts one, a queued one waits for slot
    /// 0 to name it, and a step that would change nothing (a CAS spinning
    /// on a header another release holds) waits too.
    fn next(&self, s: &State, k: usize) -> Result<Option<State>, String> {
        let l = &s.lockers[k];
        let mut t = s.clone();
        if l.is_idle() {
            if s.left[k] == 0 {
                return Ok(None);
            }
            t.left[k] -= 1;
            t.lockers[k].start_acquire()?;
            return Ok(Some(t));
        }
        if l.is_waiting() && s.words[WordRef::Slot(0).index()] != Slot::Entry(k as u8).encode() {
            return Ok(None);
        }
        let access = l.access().expect("a busy locker has an access");
        let found = perform(&mut t.words, access);
        let out = t.lockers[k].complete(found)?;
        if let Some(slot) = out.appended {
            t.appended.push(k as u8);
            if slot == 0 {
                t.granted.push(k as u8);
            }
        }
        if let Some(e) = out.granted {
            t.granted.push(e);
        }
        Ok((t != *s).then_some(t))
    }
}

/// What an exhaustive check found.
#[derive(Debug)]
pub struct Explored {
    /// Distinct states visited.
    pub states: usize,
    /// States where every locker finished (each one checked).
    pub finished: usize,
}

/// Checks a finished or stuck state: every acquire appended and granted
/// once, grants in append order (FIFO), the queue empty.
fn check_end(cfg: &Config, s: &State) -> Result<(), String> {
    let total: usize = cfg.acquires.iter().map(|&a| a as usize).sum();
    let slots = || s.words[1..].iter().map(|&w| Slot::decode(w));
    if s.left.iter().any(|&l| l > 0) || s.lockers.iter().any(|l| !l.is_idle()) {
        return Err(format!(
            "stuck: lockers {:?}, slots {:?} (a lost entry or a hole)",
            s.lockers.iter().map(|l| l.phase).collect::<Vec<_>>(),
            slots().collect::<Vec<_>>()
        ));
    }
    if s.appended.len() != total || s.granted != s.appended {
        return Err(format!(
            "grants {:?} differ from appends {:?} (lost, duplicated or reordered)",
            s.granted, s.appended
        ));
    }
    if slots().any(|x| matches!(x, Ok(Slot::Entry(_)) | Err(_))) {
        return Err(format!(
            "queue not empty at the end: {:?}",
            slots().collect::<Vec<_>>()
        ));
    }
    Ok(())
}

/// Visits every interleaving of the lockers' steps (depth-first, states
/// deduplicated) and checks each step and each end state.
pub fn explore(cfg: &Config) -> Result<Explored, Violation> {
    let start = cfg.initial();
    let mut seen: HashSet<State> = HashSet::new();
    let mut stack: Vec<(State, Vec<u8>)> = vec![(start.clone(), Vec::new())];
    seen.insert(start);
    let mut finished = 0;
    while let Some((s, path)) = stack.pop() {
        let mut moved = false;
        for k in 0..s.lockers.len() {
            let mut p = path.clone();
            p.push(k as u8);
            let next = cfg.next(&s, k).map_err(|what| Violation {
                what,
                schedule: p.clone(),
            })?;
            if let Some(t) = next {
                moved = true;
                if seen.insert(t.clone()) {
                    stack.push((t, p));
                }
            }
        }
        if !moved {
            check_end(cfg, &s).map_err(|what| Violation {
                what,
                schedule: path.clone(),
            })?;
            finished += 1;
        }
    }
    Ok(Explored {
        states: seen.len(),
        finished,
    })
}

/// Runs one schedule: at each step the locker `pick(enabled)` chooses
/// moves, for at most `max_steps` steps; the end state is checked when
/// every locker finished.
pub fn run_schedule(
    cfg: &Config,
    mut pick: impl FnMut(&[usize]) -> usize,
    max_steps: usize,
) -> Result<bool, String> {
    let mut s = cfg.initial();
    for _ in 0..max_steps {
        let mut movers = Vec::new();
        let mut nexts = Vec::new();
        for k in 0..s.lockers.len() {
            if let Some(t) = cfg.next(&s, k)? {
                movers.push(k);
                nexts.push(t);
            }
        }
        if movers.is_empty() {
            check_end(cfg, &s)?;
            return Ok(true);
        }
        let at = pick(&movers) % movers.len();
        s = nexts.swap_remove(at);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg(slots: usize, acquires: &[u8], variant: Variant) -> Config {
        Config {
            slots,
            acquires: acquires.to_vec(),
            variant,
        }
    }

    /// The small configurations of issue 16: 2-3 lockers, queues of 2-3
    /// slots (never fuller than the lockers), 1-2 acquires each.
    fn small_configs(variant: Variant) -> Vec<Config> {
        vec![
            cfg(2, &[1, 1], variant),
            cfg(2, &[2, 2], variant),
            cfg(3, &[2, 2], variant),
            cfg(3, &[1, 1, 1], variant),
            cfg(3, &[2, 1, 1], variant),
        ]
    }

    #[test]
    fn protocol_passes_every_interleaving_of_small_configurations() {
        let mut total = 0;
        for c in small_configs(Variant::PROTOCOL) {
            let e = explore(&c).unwrap_or_else(|v| panic!("{c:?}: {v:?}"));
            assert!(e.finished > 0, "{c:?}: no run finished");
            total += e.states;
        }
        assert!(total > 10_000, "explored only {total} states");
    }

    #[test]
    fn protocol_passes_three_lockers_two_acquires_each_on_three_slots() {
        for start in [StartHint::Zero, StartHint::LastFreeLessReleases] {
            let c = cfg(
                3,
                &[2, 2, 2],
                Variant {
                    start,
                    ..Variant::PROTOCOL
                },
            );
            let e = explore(&c).unwrap_or_else(|v| panic!("{start:?}: {v:?}"));
            assert!(e.finished > 0 && e.states > 100_000, "{start:?}: {e:?}");
        }
    }

    #[test]
    fn mutant_without_count_tags_fails_the_checker() {
        let mutant = Variant {
            count_tags: false,
            ..Variant::PROTOCOL
        };
        assert_caught_as_stuck(mutant, "the checker missed the untagged release");
    }

    /// Some small configuration of `mutant` fails the checker, and every
    /// failure is a waiter stuck behind a hole (`why`: the message if none).
    fn assert_caught_as_stuck(mutant: Variant, why: &str) {
        let failed: Vec<_> = small_configs(mutant)
            .iter()
            .filter_map(|c| explore(c).err().map(|v| (c.clone(), v)))
            .collect();
        assert!(
            failed.iter().all(|(_, v)| v.what.starts_with("stuck")),
            "{failed:?}"
        );
        assert!(!failed.is_empty(), "{why}");
    }

    #[test]
    fn append_restarting_at_last_free_slot_leaves_a_hole() {
        let mutant = Variant {
            start: StartHint::LastFree,
            ..Variant::PROTOCOL
        };
        assert_caught_as_stuck(mutant, "restarting at the last free slot should be caught");
    }

    #[test]
    fn append_restarting_at_last_free_less_releases_passes() {
        let v = Variant {
            start: StartHint::LastFreeLessReleases,
            ..Variant::PROTOCOL
        };
        for c in small_configs(v) {
            explore(&c).unwrap_or_else(|e| panic!("{c:?}: {e:?}"));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Random schedules on larger buckets than the exhaustive check
        /// reaches: four lockers, three acquires each, five slots.
        #[test]
        fn random_schedules_keep_fifo_and_every_entry(picks in proptest::collection::vec(0usize..64, 4000)) {
            let c = cfg(5, &[3, 3, 3, 3], Variant::PROTOCOL);
            let mut it = picks.into_iter().cycle();
            let done = run_schedule(&c, |_| it.next().unwrap(), 100_000);
            prop_assert_eq!(done, Ok(true));
        }
    }
}
