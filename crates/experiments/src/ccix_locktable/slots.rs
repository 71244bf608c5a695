//! The lock table with `layout = "slots"`: each bucket line holds the
//! header word and seven 8 B slot words of [`crate::ccix_lock_slots`], and
//! every locker runs that module's [`Locker`] state machine. Each step's
//! access is a real one on the simulated line:
//!
//! * a **read** is a load: on a core its cache's (a hit, or a ReadShared
//!   to the home); on the U280, after the ATC lookup, the System Cache's
//!   (a hit while its copy lasts, else a CCIX ReadShared: the host's next
//!   write takes the copy back with a snoop over the link);
//! * a **CAS** is, on a core, an N1 LSE atomic (the table's `atomic`):
//!   near, a read-modify-write in its cache, when the core holds the line
//!   unique; far, an AtomicCompare the home executes, when its copy is
//!   missing or shared (the Shared copy a read left dropped as the request
//!   leaves; Arm Cortex-A76 TRM §A6.4.1), plus the CAS's ordering
//!   `host_atomic_ns` either way; on the U280, after the ATC lookup and
//!   the operands' AXI write, the far AtomicCompare (`far_atomic`) the
//!   home executes on the line's bytes, a clean copy a read left in the
//!   System Cache dropped as it leaves (§V-A: the RA "sends [it] to the
//!   host"). Neither side evicts before a CAS.
//!
//! The value a read returned (the line when the load took effect) or a CAS
//! found (the home's log, a core's read-modify-write) goes back to the
//! machine, which picks the next access. A queued locker is notified of its
//! grant when the releaser's write puts its entry into slot 0 (no
//! spinning, as in the word layout); after `hold_ns` it begins its release.
//!
//! After the run the bytes are replayed per bucket in the line's coherence
//! order (each read and CAS found the word the previous CAS left; the
//! final line, read from simulated memory, equals the replay and holds no
//! entry, its header idle), and the grants are checked against the same
//! sequential reference as the word layout (a FIFO per bucket fed the
//! successful appends and the releases' first writes into slot 0).

use std::collections::BTreeMap;

use ccsim_coherence::agents::line_engine::LineRmw;
use ccsim_coherence::agents::PROGRAM_WAKE;
use ccsim_kernel::prelude::*;
use ccsim_platform::BuiltSystem;

use super::{
    append_cas, cas_found, check_against_reference, coherence_key, coherent_value, executed_since,
    finish, hash, mean, CasEvent, HomeSeq, RunTotals, Setup, ThinkTimes, RECORDS, SLOTS, STEP,
    TABLE_LINE,
};
use crate::ccix_lock_slots::{self as protocol, Access, Locker as Machine, Slot, Variant};
use crate::invocation::percentile;
use crate::program_run::no_violation;
use crate::{werr, Point, PointResult, RunError};

/// What a locker's driver is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Its next acquire issues at this time.
    Idle(Tick),
    /// An access is in its agent's program: its op, and what it paid
    /// before the op issued (the device's ATC lookup, and for a CAS the
    /// operands' write).
    Busy { index: usize, pre: Tick },
    /// Queued: its machine's next access waits for the grant.
    Queued,
    /// The run's acquires are all issued.
    Done,
}

/// Per side, what the accesses cost (for the named parts of a latency).
#[derive(Debug, Default, Clone)]
struct Tally {
    acquires: usize,
    releases: usize,
    acquire_reads: usize,
    acquire_cases: usize,
    release_reads: usize,
    release_cases: usize,
    failed_cases: usize,
    read_ns: Vec<f64>,
    cas_ns: Vec<f64>,
    release_ns: Vec<f64>,
    /// CASes that went far (executed at the home).
    far_cases: usize,
}

struct Locker {
    agent: usize,
    device: bool,
    machine: Machine,
    phase: Phase,
    bucket: u64,
    acquire: usize,
    acquired_at: Tick,
    /// The current acquire's accesses' durations so far (the driver's
    /// step between them excluded: the lock module issues its next access
    /// at once), and the release's.
    request_ps: Tick,
    release_ps: Tick,
    /// The access in flight.
    access: Option<Access>,
    latencies: Vec<f64>,
    waits: Vec<f64>,
    tally: Tally,
}

/// One access that took effect on a bucket's line: when, by whom, what it
/// was, and the word it found.
#[derive(Debug, Clone, Copy)]
struct AccessEvent {
    at: Tick,
    seq: HomeSeq,
    bucket: u64,
    locker: usize,
    access: Access,
    found: u64,
}

fn word_at(line: &ccsim_coherence::Line, index: usize) -> u64 {
    u64::from_le_bytes(line[index * 8..index * 8 + 8].try_into().expect("8 bytes"))
}

pub(super) fn run(point: &Point<'_>, setup: Setup) -> Result<PointResult, RunError> {
    let Setup {
        mut s,
        ras,
        ha,
        buckets,
        host_lockers,
        device_lockers,
        total,
        hold,
        think,
        host_atomic,
        lookup,
        atc,
    } = setup;
    if device_lockers + host_lockers > 255 {
        return Err(werr(
            "ccix_locktable: at most 255 lockers (a slot names one in a byte)",
        ));
    }
    let mut lockers: Vec<Locker> = Vec::new();
    let mut start = 0;
    let agents: Vec<(usize, bool)> = ras
        .iter()
        .take(device_lockers)
        .map(|&a| (a, true))
        .chain(ras[1..=host_lockers].iter().map(|&a| (a, false)))
        .collect();
    for (agent, device) in agents {
        let me = lockers.len();
        lockers.push(Locker {
            agent,
            device,
            machine: Machine::new(me as u8, SLOTS, Variant::PROTOCOL),
            phase: Phase::Idle(start),
            bucket: 0,
            acquire: 0,
            acquired_at: 0,
            request_ps: 0,
            release_ps: 0,
            access: None,
            latencies: Vec::new(),
            waits: Vec::new(),
            tally: Tally::default(),
        });
        start += STEP / 2;
    }
    for l in &lockers {
        s.agent_mut(l.agent).set_program(&[], 1).map_err(werr)?;
    }
    let mut rng = SimRng::for_path(point.seed, "ccix_locktable.records");
    let mut think_times = ThinkTimes::new(point, think);
    let costs = Costs { lookup, atc };
    let mut events: Vec<AccessEvent> = Vec::new();
    // The reference's input: successful appends (acquire) and the
    // releases' first writes into slot 0 (release).
    let mut lock_events: Vec<CasEvent> = Vec::new();
    let mut grants: Vec<(u64, usize, Tick)> = Vec::new();
    let mut issued = 0usize;
    let mut queued = 0usize;
    let mut t: Tick = 0;
    loop {
        for l in lockers.iter_mut() {
            if let Phase::Idle(at) = l.phase {
                if issued == total {
                    l.phase = Phase::Done;
                    continue;
                }
                if at > t {
                    continue;
                }
                l.bucket = hash(rng.below(RECORDS)) % buckets;
                l.acquire = issued;
                issued += 1;
                l.machine.start_acquire().map_err(werr)?;
                l.request_ps = 0;
                l.tally.acquires += 1;
                issue(&mut s, l, at, t, &costs)?;
            }
        }
        s.sim.run_until(t);
        no_violation(&s)?;
        // Accesses that completed by t, in the order they took effect (a
        // far atomic executed at the home whose old value is still on its
        // way back holds up every later one; far atomics of one instant in
        // the home's log order).
        let mut done: Vec<(AccessEvent, usize, bool)> = Vec::new();
        let mut horizon = Tick::MAX;
        for (i, l) in lockers.iter().enumerate() {
            let Phase::Busy { index, .. } = l.phase else {
                continue;
            };
            let access = l.access.expect("a busy locker has an access");
            let line = TABLE_LINE + l.bucket;
            let agent = s.agent(l.agent);
            let (issued_at, end) = agent.program_times()[index];
            let is_cas = matches!(access, Access::Cas { .. });
            if end == 0 {
                // A CAS in flight may have gone far (the device's always,
                // a core's on a line it did not hold unique).
                if is_cas && issued_at > 0 {
                    if let Some(at) = executed_since(&s, ha, line, l.agent, issued_at) {
                        horizon = horizon.min(at);
                    }
                }
                continue;
            }
            let (at, seq, found, far) = if is_cas {
                cas_found(&s, ha, line, l.agent, index, end)?
            } else {
                (
                    agent.program_effects()[index],
                    0,
                    agent.program_found().get(index).copied().flatten(),
                    false,
                )
            };
            let found = found.ok_or_else(|| RunError::Violation {
                message: format!(
                    "lock table (slots): locker {i}'s {access:?} on bucket {} completed without the line it found",
                    l.bucket
                ),
            })?;
            let word = match access {
                Access::Read(w) | Access::Cas { word: w, .. } => w.index(),
            };
            done.push((
                AccessEvent {
                    at,
                    seq,
                    bucket: l.bucket,
                    locker: i,
                    access,
                    found: word_at(&found, word),
                },
                index,
                far,
            ));
        }
        done.retain(|(e, _, _)| e.at < horizon);
        done.sort_by_key(|(e, _, _)| coherence_key(e.at, e.seq, e.locker));
        for (e, _, far) in done {
            events.push(e);
            let l = &mut lockers[e.locker];
            l.tally.far_cases += usize::from(far);
            let Phase::Busy { index, pre } = l.phase else {
                unreachable!("only busy lockers complete accesses")
            };
            let times = s.agent(l.agent).program_times();
            let (start, end) = times[index];
            let is_cas = matches!(e.access, Access::Cas { .. });
            let known = if is_cas && !l.device {
                end + host_atomic
            } else {
                end
            };
            let releasing = l.machine.is_releasing() || l.machine.is_waiting();
            let duration = known - start + pre;
            if releasing {
                l.release_ps += duration;
            } else {
                l.request_ps += duration;
            }
            let took = duration as f64 / 1000.0;
            match (is_cas, releasing) {
                (false, false) => l.tally.acquire_reads += 1,
                (false, true) => l.tally.release_reads += 1,
                (true, false) => l.tally.acquire_cases += 1,
                (true, true) => l.tally.release_cases += 1,
            }
            if is_cas {
                l.tally.cas_ns.push(took);
                if let Access::Cas { expect, .. } = e.access {
                    if e.found != expect {
                        l.tally.failed_cases += 1;
                    }
                }
            } else {
                l.tally.read_ns.push(took);
            }
            let out = l
                .machine
                .complete(e.found)
                .map_err(|m| RunError::Violation {
                    message: format!(
                        "lock table (slots), bucket {} at {} ps (lock {}): {m}",
                        e.bucket, e.at, l.acquire
                    ),
                })?;
            l.access = None;
            if let Some(slot) = out.appended {
                lock_events.push(lock_event(&e, true, l.acquire));
                l.latencies.push(l.request_ps as f64 / 1000.0);
                l.acquired_at = known;
                if slot == 0 {
                    grants.push((e.bucket, l.acquire, e.at));
                    l.waits.push(0.0);
                    l.release_ps = 0;
                    l.tally.releases += 1;
                    issue(&mut s, l, known + hold, t, &costs)?;
                } else {
                    queued += 1;
                    l.phase = Phase::Queued;
                }
            } else if out.done {
                let next = think_times.next();
                l.tally.release_ns.push(l.release_ps as f64 / 1000.0);
                l.phase = Phase::Idle(known + next);
            } else {
                issue(&mut s, l, known, t, &costs)?;
            }
            if out.released {
                lock_events.push(lock_event(&e, false, lockers[e.locker].acquire));
            }
            if let Some(next) = out.granted {
                let w = lockers
                    .get_mut(next as usize)
                    .ok_or_else(|| RunError::Violation {
                        message: format!(
                            "lock table (slots): slot 0 names locker {next}, which does not exist"
                        ),
                    })?;
                if w.phase != Phase::Queued || w.bucket != e.bucket {
                    return Err(RunError::Violation {
                        message: format!(
                            "lock table (slots), bucket {} at {} ps: the new head {next} is not queued there",
                            e.bucket, e.at
                        ),
                    });
                }
                grants.push((e.bucket, w.acquire, e.at));
                let granted = e.at.max(w.acquired_at);
                w.waits
                    .push(e.at.saturating_sub(w.acquired_at) as f64 / 1000.0);
                w.release_ps = 0;
                w.tally.releases += 1;
                issue(&mut s, w, granted + hold, t, &costs)?;
            }
        }
        if lockers.iter().all(|l| l.phase == Phase::Done) {
            break;
        }
        t += STEP;
    }
    s.sim.run();
    no_violation(&s)?;
    let final_lines: Vec<[u64; SLOTS + 1]> = (0..buckets)
        .map(|b| {
            let line = coherent_value(&s, &ras, ha, TABLE_LINE + b);
            std::array::from_fn(|i| word_at(&line, i))
        })
        .collect();
    check_slot_bytes(&events, &final_lines)?;
    let holding: Vec<bool> = final_lines
        .iter()
        .map(|w| w[1..].iter().any(|&x| x & 1 == 1))
        .collect();
    check_against_reference(&lock_events, &grants, &holding, issued)?;

    let mut metrics = BTreeMap::new();
    for (name, device) in [("host", false), ("device", true)] {
        let side: Vec<&Locker> = lockers.iter().filter(|l| l.device == device).collect();
        let collect = |f: fn(&Locker) -> &Vec<f64>| -> Vec<f64> {
            let mut v: Vec<f64> = side.iter().flat_map(|l| f(l).iter().copied()).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let lat = collect(|l| &l.latencies);
        let waits = collect(|l| &l.waits);
        let sum = |f: fn(&Tally) -> usize| side.iter().map(|l| f(&l.tally)).sum::<usize>();
        let per = |n: usize, d: usize| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        let (acquires, releases) = (sum(|t| t.acquires), sum(|t| t.releases));
        let cases = sum(|t| t.acquire_cases) + sum(|t| t.release_cases);
        metrics.insert(format!("{name}_lock_ns"), mean(&lat));
        metrics.insert(
            format!("{name}_lock_p90_ns"),
            if lat.is_empty() {
                0.0
            } else {
                percentile(&lat, 90.0)
            },
        );
        metrics.insert(format!("{name}_wait_ns"), mean(&waits));
        metrics.insert(format!("{name}_grant_ns"), mean(&lat) + mean(&waits));
        metrics.insert(format!("{name}_cas"), cases as f64);
        metrics.insert(
            format!("{name}_cas_retries"),
            sum(|t| t.failed_cases) as f64,
        );
        metrics.insert(
            format!("{name}_retry_fraction"),
            per(sum(|t| t.failed_cases), cases),
        );
        metrics.insert(
            format!("{name}_acquire_reads"),
            per(sum(|t| t.acquire_reads), acquires),
        );
        metrics.insert(
            format!("{name}_acquire_cases"),
            per(sum(|t| t.acquire_cases), acquires),
        );
        metrics.insert(
            format!("{name}_release_reads"),
            per(sum(|t| t.release_reads), releases),
        );
        metrics.insert(
            format!("{name}_release_cases"),
            per(sum(|t| t.release_cases), releases),
        );
        metrics.insert(
            format!("{name}_read_ns"),
            mean(&collect(|l| &l.tally.read_ns)),
        );
        metrics.insert(
            format!("{name}_cas_ns"),
            mean(&collect(|l| &l.tally.cas_ns)),
        );
        if !device {
            metrics.insert("host_far_fraction".into(), per(sum(|t| t.far_cases), cases));
        }
        metrics.insert(
            format!("{name}_release_ns"),
            mean(&collect(|l| &l.tally.release_ns)),
        );
    }
    let run = RunTotals {
        issued: issued as f64,
        queued: queued as f64,
        grants: grants.len() as f64,
    };
    Ok(finish(&s, ha, metrics, run, point))
}

/// The fixed costs of an access's issue.
struct Costs {
    /// A device CAS's ATC lookup and operands' write.
    lookup: Tick,
    /// A device read's ATC lookup.
    atc: Tick,
}

fn lock_event(e: &AccessEvent, acquire: bool, id: usize) -> CasEvent {
    CasEvent {
        at: e.at,
        seq: e.seq,
        bucket: e.bucket,
        locker: e.locker,
        acquire,
        id,
        old: 0,
        new: 0,
        success: true,
    }
}

/// Appends the locker's machine's next access to its agent's program,
/// issuing no earlier than `at`, and wakes the agent. A read is a load
/// that keeps the line it saw; a CAS a core's LSE atomic (`atomic`: near
/// on a line it holds unique, else far) or the U280's far AtomicCompare
/// (`far_atomic`), either carrying its encoded operands.
fn issue(
    s: &mut BuiltSystem,
    l: &mut Locker,
    at: Tick,
    now: Tick,
    costs: &Costs,
) -> Result<(), RunError> {
    let access = l.machine.access().ok_or_else(|| RunError::Violation {
        message: format!(
            "lock table (slots): locker {} has no access to issue",
            l.acquire
        ),
    })?;
    let line = TABLE_LINE + l.bucket;
    let index = s.agent(l.agent).program_times().len();
    let agent = s.agent_mut(l.agent);
    let (at, pre) = match access {
        Access::Read(_) => {
            let pre = if l.device { costs.atc } else { 0 };
            agent
                .append_program(&[(line, "load")], at + pre)
                .map_err(werr)?;
            agent.set_program_snapshot(index).map_err(werr)?;
            (at + pre, pre)
        }
        Access::Cas { word, expect, new } => {
            let cas = LineRmw::Cas {
                offset: word.index() * 8,
                expected: expect,
                new,
            };
            // The lock module's far AtomicCompare (its System Cache's
            // clean copy dropped as it leaves), or a core's LSE atomic:
            // near on a line it holds unique, else far.
            let pre = if l.device { costs.lookup } else { 0 };
            append_cas(agent, l.device, line, index, cas, at + pre)?;
            (at + pre, pre)
        }
    };
    l.access = Some(access);
    l.phase = Phase::Busy { index, pre };
    let id = s.agents[l.agent];
    s.sim.wake(id, at.max(now), PROGRAM_WAKE);
    Ok(())
}

/// The bytes' own history, per bucket in the line's coherence order: each
/// read and CAS found the word the previous CAS left there (a CAS wrote
/// its swap value only on a match), every slot word is a slot, and the
/// final line (read from simulated memory) is the replay's, its header
/// idle and no slot holding an entry.
fn check_slot_bytes(
    events: &[AccessEvent],
    final_lines: &[[u64; SLOTS + 1]],
) -> Result<(), RunError> {
    let fail = |m: String| RunError::Violation {
        message: format!("lock table's bytes (slots): {m}"),
    };
    let mut order: Vec<&AccessEvent> = events.iter().collect();
    order.sort_by_key(|e| coherence_key(e.at, e.seq, e.locker));
    let mut lines: BTreeMap<u64, [u64; SLOTS + 1]> = BTreeMap::new();
    for e in order {
        let words = lines.entry(e.bucket).or_insert([0; SLOTS + 1]);
        let index = match e.access {
            Access::Read(w) | Access::Cas { word: w, .. } => w.index(),
        };
        if e.found != words[index] {
            return Err(fail(format!(
                "bucket {} at {} ps: locker {}'s {:?} found {:#x} in word {index}, the last CAS left {:#x} (a lost update or a stale read)",
                e.bucket, e.at, e.locker, e.access, e.found, words[index]
            )));
        }
        protocol::perform(words, e.access);
        if index > 0 {
            Slot::decode(words[index]).map_err(fail)?;
        }
    }
    for (b, f) in final_lines.iter().enumerate() {
        let left = lines.get(&(b as u64)).copied().unwrap_or([0; SLOTS + 1]);
        if *f != left {
            return Err(fail(format!(
                "bucket {b} holds {f:x?} at the end, its last accesses left {left:x?}"
            )));
        }
        let (_, releasing) = protocol::decode_header(f[0]).map_err(fail)?;
        if releasing || f[1..].iter().any(|&w| w & 1 == 1) {
            return Err(fail(format!("bucket {b} is not empty at the end: {f:x?}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ccix_lock_slots::{encode_header, WordRef};

    fn ev(at: Tick, locker: usize, access: Access, found: u64) -> AccessEvent {
        AccessEvent {
            at,
            seq: 0,
            bucket: 0,
            locker,
            access,
            found,
        }
    }

    #[test]
    fn the_slot_bytes_check_catches_a_stale_read_and_a_bucket_left_held() {
        let me = Slot::Entry(0).encode();
        let append = Access::Cas {
            word: WordRef::Slot(0),
            expect: 0,
            new: me,
        };
        let free = Access::Cas {
            word: WordRef::Slot(0),
            expect: me,
            new: Slot::Free(1).encode(),
        };
        let publish = Access::Cas {
            word: WordRef::Header,
            expect: 0,
            new: encode_header(1, false),
        };
        let good = [
            ev(10, 0, Access::Read(WordRef::Slot(0)), 0),
            ev(20, 0, append, 0),
            ev(30, 1, Access::Read(WordRef::Slot(0)), me),
            ev(40, 0, free, me),
            ev(50, 0, publish, 0),
        ];
        let mut end = [0u64; SLOTS + 1];
        end[0] = encode_header(1, false);
        end[1] = Slot::Free(1).encode();
        assert!(check_slot_bytes(&good, &[end]).is_ok());
        // Locker 1 read the empty slot after locker 0's append took effect.
        let mut stale = good;
        stale[2].found = 0;
        let e = check_slot_bytes(&stale, &[end]).unwrap_err();
        assert!(e.to_string().contains("stale read"), "{e}");
        // The release never ran: slot 0 still holds an entry.
        let mut held = [0u64; SLOTS + 1];
        held[1] = me;
        let e = check_slot_bytes(&good[..3], &[held]).unwrap_err();
        assert!(e.to_string().contains("not empty"), "{e}");
        // Memory that disagrees with the replay.
        assert!(check_slot_bytes(&good, &[held]).is_err());
    }
}
