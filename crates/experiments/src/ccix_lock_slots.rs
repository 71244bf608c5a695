//! `ccix_lock_slots` — the lock-queue protocol for the paper's bucket
//! layout (CCIX §V, Figs. 8, 9: a bucket line of 8 B words holding a queue
//! of lock entries, acquire by CAS-append, release by shifting the queue),
//! written down precisely and checked over every interleaving of its
//! single-word steps. Not yet wired into [`crate::ccix_locktable`], whose
//! driver still keeps the whole queue in one 8 B word.
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
//! CAS the header `(r, idle)` → `(r, releasing)` (retry while another
//! release is still publishing). Then for `i = 0, 1, ...`: read slot
//! `i + 1`.
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
//! The exhaustive check (`explore`) covers 15,079 states over its five
//! small configurations and 220,822 with three lockers of two acquires
//! each on three slots (starting at slot 0; the corrected last-free start
//! passes that configuration too); a proptest runs random schedules on a larger
//! bucket (four lockers, three acquires each, five slots).

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

/// Where an append resumes its scan after a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartHint {
    /// Slot 0 (the protocol).
    Zero,
    /// The slot where the newer tag was seen (a mutant: leaves holes).
    LastFree,
    /// That slot less the releases counted since (`r_now - r0`).
    LastFreeLessReleases,
}

/// The protocol's variant under check: the real one, or a mutant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// What one locker is about to do (each a single-word read, write or CAS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Between lock cycles (the acquires still to issue are in
    /// `State::left`).
    Idle,
    /// Append: read the header (restarting at `from`).
    ReadHeader { from: u8, seen: Option<u32> },
    /// Append: read slot `i`.
    ReadSlot { r0: u32, i: u8 },
    /// Append: CAS slot `i` from `expect`.
    Cas { r0: u32, i: u8, expect: Slot },
    /// Queued, waiting for slot 0 to name it.
    Waiting,
    /// Release: read slot `i + 1`.
    RelRead { r: u32, i: u8 },
    /// Release: write `value` into slot `i`.
    RelWrite { r: u32, i: u8, value: Slot },
    /// Release: close slot `i + 1` (CAS from `expect`).
    RelClose { r: u32, i: u8, expect: Slot },
    /// Release: free the trailing copy at slot `i`.
    RelFree { r: u32, i: u8 },
    /// Release: publish `r + 1` in the header.
    RelPublish { r: u32 },
}

/// One bucket and its lockers: the whole state the checker explores.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    header: u32,
    /// The header's releasing bit: a release is shifting the queue.
    releasing: bool,
    slots: Vec<Slot>,
    phases: Vec<Phase>,
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
            header: 0,
            releasing: false,
            slots: vec![Slot::Free(0); self.slots],
            phases: vec![Phase::Idle; self.acquires.len()],
            left: self.acquires.clone(),
            appended: Vec::new(),
            granted: Vec::new(),
        }
    }

    /// Whether locker `k` can take a step in `s`.
    fn enabled(&self, s: &State, k: usize) -> bool {
        match s.phases[k] {
            Phase::Idle => s.left[k] > 0,
            Phase::Waiting => s.slots[0] == Slot::Entry(k as u8) && !s.releasing,
            _ => true,
        }
    }

    /// Locker `k`'s next step applied to `s`.
    fn step(&self, s: &mut State, k: usize) -> Result<(), String> {
        let me = k as u8;
        let n = self.slots as u8;
        let phase = s.phases[k];
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
        let next = match phase {
            Phase::Idle => {
                s.left[k] -= 1;
                Phase::ReadHeader {
                    from: 0,
                    seen: None,
                }
            }
            Phase::ReadHeader { from, seen } => {
                let r0 = s.header;
                let i = match (self.variant.start, seen) {
                    (StartHint::Zero, _) | (_, None) => 0,
                    (StartHint::LastFree, Some(_)) => from,
                    (StartHint::LastFreeLessReleases, Some(old)) => {
                        from.saturating_sub((r0 - old).min(u8::MAX as u32) as u8)
                    }
                };
                Phase::ReadSlot { r0, i }
            }
            Phase::ReadSlot { r0, i } => decide(r0, i, s.slots[i as usize]),
            Phase::Cas { r0, i, expect } => {
                let found = s.slots[i as usize];
                if found == expect {
                    s.slots[i as usize] = Slot::Entry(me);
                    s.appended.push(me);
                    if i == 0 {
                        s.granted.push(me);
                    }
                    Phase::Waiting
                } else {
                    decide(r0, i, found)
                }
            }
            Phase::Waiting => {
                s.releasing = true;
                Phase::RelRead { r: s.header, i: 0 }
            }
            Phase::RelRead { r, i } => {
                if i + 1 == n {
                    Phase::RelFree { r, i }
                } else {
                    match s.slots[i as usize + 1] {
                        Slot::Entry(e) => Phase::RelWrite {
                            r,
                            i,
                            value: Slot::Entry(e),
                        },
                        free => Phase::RelClose { r, i, expect: free },
                    }
                }
            }
            Phase::RelWrite { r, i, value } => {
                s.slots[i as usize] = value;
                if let (0, Slot::Entry(e)) = (i, value) {
                    s.granted.push(e);
                }
                Phase::RelRead { r, i: i + 1 }
            }
            Phase::RelClose { r, i, expect } => {
                let found = s.slots[i as usize + 1];
                if found == expect {
                    s.slots[i as usize + 1] = Slot::Free(self.free_tag(r));
                    Phase::RelFree { r, i }
                } else {
                    Phase::RelWrite { r, i, value: found }
                }
            }
            Phase::RelFree { r, i } => {
                s.slots[i as usize] = Slot::Free(self.free_tag(r));
                Phase::RelPublish { r }
            }
            Phase::RelPublish { r } => {
                if !s.releasing {
                    return Err(format!("locker {me} published a release it did not begin"));
                }
                s.header = r + 1;
                s.releasing = false;
                Phase::Idle
            }
        };
        s.phases[k] = next;
        Ok(())
    }

    fn free_tag(&self, r: u32) -> u32 {
        if self.variant.count_tags {
            r + 1
        } else {
            r
        }
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
    if s.left.iter().any(|&l| l > 0) || s.phases.iter().any(|p| *p != Phase::Idle) {
        return Err(format!(
            "stuck: phases {:?}, slots {:?} (a lost entry or a hole)",
            s.phases, s.slots
        ));
    }
    if s.appended.len() != total || s.granted != s.appended {
        return Err(format!(
            "grants {:?} differ from appends {:?} (lost, duplicated or reordered)",
            s.granted, s.appended
        ));
    }
    if s.slots.iter().any(|x| matches!(x, Slot::Entry(_))) {
        return Err(format!("queue not empty at the end: {:?}", s.slots));
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
        let movers: Vec<usize> = (0..s.phases.len())
            .filter(|&k| cfg.enabled(&s, k))
            .collect();
        if movers.is_empty() {
            check_end(cfg, &s).map_err(|what| Violation {
                what,
                schedule: path.clone(),
            })?;
            finished += 1;
            continue;
        }
        for k in movers {
            let mut t = s.clone();
            let mut p = path.clone();
            p.push(k as u8);
            cfg.step(&mut t, k).map_err(|what| Violation {
                what,
                schedule: p.clone(),
            })?;
            if seen.insert(t.clone()) {
                stack.push((t, p));
            }
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
        let movers: Vec<usize> = (0..s.phases.len())
            .filter(|&k| cfg.enabled(&s, k))
            .collect();
        if movers.is_empty() {
            check_end(cfg, &s)?;
            return Ok(true);
        }
        let k = movers[pick(&movers) % movers.len()];
        cfg.step(&mut s, k)?;
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
