//! `ccix_locktable` — neoDBMS's shared lock table (CCIX §V, Figs. 8, 9):
//! hash buckets in host memory on a huge page (the ATC warmed once), each
//! bucket one 64 B line holding a queue of lock entries. A locker acquires
//! a record's lock by a compare-and-swap that appends its entry to the
//! bucket's queue (the head slot holds the lock, the others wait) and
//! releases it by a compare-and-swap that shifts the queue left, granting
//! the lock to the new head.
//!
//! * **The lockers.** neoDBMS on 1-3 N1 cores and the U280's lock module,
//!   each a loop: draw a record, acquire, hold the lock `hold_ns`, release,
//!   think `think_ns`, until the run's `lock_ops` acquires are issued.
//!   Every CAS is a real coherent access of the bucket's line through the
//!   verified ccix table on `[systems.ccix_host]`: on a core a local atomic
//!   (a store to the line, its L1 hit or miss, plus the CAS's ordering
//!   `host_atomic_ns`, as `ccix_atomic`); on the U280 the lock module's
//!   CCIX Atomic Compare and Swap, which "the CCIX-RA on the AU280 then
//!   sends to the host" (§V-A): after the ATC lookup and the operands'
//!   AXI write into the System Cache, a far AtomicCompare that the home
//!   executes after invalidating every copy (a core's dirty line comes
//!   back with SnpToI) and answers with the old value. The line then sits
//!   at the home only, so the host's next CAS on a contended bucket misses
//!   in its caches and goes to the home (ReadUnique), behind the device's
//!   atomic when that is still there.
//! * **Waiting.** A locker whose entry is not at the head waits for the
//!   grant (notified when the holder's release shifts it to the head;
//!   neoDBMS's wait is not described, and spinning is not modelled). The
//!   driver runs the simulation in 20 ns steps and appends each locker's
//!   next CAS when its previous one completed or its grant came
//!   ([`TableAgent::append_program`](ccsim_coherence::agents::TableAgent::append_program)).
//! * **Order.** A core's CAS takes effect when its core holds the line
//!   unique (`program_effects`), the device's when the home executes it
//!   (`home_writes`): on one line these instants follow the line's
//!   coherence order, so the lock table's queues are updated in that order.
//!   The table is the paper's layout (a fixed array of slots, appended at
//!   the first free slot, shifted left on release); after the run its
//!   grants are checked against a sequential reference (a FIFO per bucket
//!   fed the same acquires and releases in the same order): the same grant
//!   order, every acquire granted exactly once, no two holders of a bucket
//!   at once, every queue empty at the end.
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("n1sdp").unwrap();
//! let r = ccsim_experiments::run_point("ccix_locktable", &p, "buckets", 4096.0, &Params::new(), 0, false).unwrap();
//! assert!(r.metrics["device_lock_ns"] > r.metrics["host_lock_ns"]);
//! assert_eq!(r.metrics["grants"], r.metrics["lock_ops"]);
//! ```

use std::collections::{BTreeMap, VecDeque};

use ccsim_coherence::agents::PROGRAM_WAKE;
use ccsim_kernel::prelude::*;
use ccsim_platform::BuiltSystem;

use crate::invocation::percentile;
use crate::program_run::{build_for_program, no_violation, role_agents};
use crate::{sim_result, trace_mode, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// The lock table's first bucket line (a huge page's frames).
const TABLE_LINE: u64 = 0x8_8000_0000 / 64;
/// Lock entries a bucket's line holds (64 B: eight 8 B words, one for the
/// bucket's header).
const SLOTS: usize = 7;
/// The driver's step: completions are seen, and the next CASes appended,
/// at most this late (a locker's think time grows by up to it).
const STEP: Tick = 20 * 1000;
/// Records the lockers draw from (many more than buckets).
const RECORDS: u64 = 1 << 20;

/// The declaration of `ccix_locktable`.
pub static CCIX_LOCKTABLE: WorkloadInfo = WorkloadInfo {
    name: "ccix_locktable",
    description: "CCIX §V: neoDBMS's shared lock table in host memory (huge page, ATC warm): x hash buckets, each a 64 B line holding a lock queue; neoDBMS on 1-3 N1 cores and the U280's lock module acquire by a CAS that appends to the queue and release by a CAS that shifts it, every CAS a coherent access through the verified ccix table (a local atomic on a core; a far AtomicCompare executed at the home from the U280); grants checked against a sequential reference.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("ccix_host"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.ccix_host]", description: "The system: the first `ra` is the device's cache, the next ones the host cores." },
        ParamSpec { name: "host_lockers", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cores", range: ParamRange::between(0.0, 16.0), from: "CCIX §V-B: neoDBMS on a single CPU core", description: "Host cores that lock (one locker each)." },
        ParamSpec { name: "device_lockers", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "lockers", range: ParamRange::between(0.0, 1.0), from: "CCIX §V-A: one lock module on the FPGA", description: "The U280's lock module (0: the host alone)." },
        ParamSpec { name: "lock_ops", kind: ParamKind::Int, default: ParamDefault::Int(2000), unit: "locks", range: ParamRange::between(1.0, 100_000_000.0), from: "assumed: enough for stable means", description: "Acquires issued in the run, over all lockers (each followed by its release)." },
        ParamSpec { name: "hold_ns", kind: ParamKind::Float, default: ParamDefault::Float(200.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: the record's update under the lock (not given)", description: "Time a locker holds a granted lock before its release CAS." },
        ParamSpec { name: "think_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: the next lock request's preparation", description: "Time from a release's completion to the locker's next acquire." },
        ParamSpec { name: "host_atomic_ns", kind: ParamKind::Float, default: ParamDefault::Float(48.46), unit: "ns", range: ParamRange::at_least(0.0), from: "calibrated (as ccix_atomic.host_atomic_ns): CCIX §IV Exp. 5, a host AtomicCompare takes 50 ns", description: "A host CAS's cost beyond its access of the line." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "host_lock_ns", unit: "ns", description: "Mean latency of the host's lock requests (the acquire CAS)." },
        MetricSpec { name: "device_lock_ns", unit: "ns", description: "Mean latency of the U280's lock requests (the ATC lookup, the operands' AXI write, the far AtomicCompare to its old value)." },
        MetricSpec { name: "host_lock_p90_ns", unit: "ns", description: "90th percentile of the host's lock requests." },
        MetricSpec { name: "device_lock_p90_ns", unit: "ns", description: "90th percentile of the U280's lock requests." },
        MetricSpec { name: "host_wait_ns", unit: "ns", description: "Mean time from the host's acquire taking effect to its grant (0 when the queue was empty)." },
        MetricSpec { name: "device_wait_ns", unit: "ns", description: "Mean time from the U280's acquire taking effect to its grant." },
        MetricSpec { name: "host_grant_ns", unit: "ns", description: "Mean time from the host's acquire request to its grant (the request's latency and the wait)." },
        MetricSpec { name: "device_grant_ns", unit: "ns", description: "Mean time from the U280's acquire request to its grant." },
        MetricSpec { name: "queued_fraction", unit: "", description: "Acquires that found the bucket's queue non-empty." },
        MetricSpec { name: "lock_ops", unit: "locks", description: "Acquires completed." },
        MetricSpec { name: "grants", unit: "locks", description: "Grants (each checked against the sequential reference: equal to lock_ops)." },
        MetricSpec { name: "device_cas", unit: "CASes", description: "The U280's CASes (acquires and releases) that completed." },
        MetricSpec { name: "home_atomics", unit: "atomics", description: "Far atomics the home executed (one per device CAS)." },
    ],
    run,
};

/// What a locker is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Its next acquire issues at this time.
    Idle(Tick),
    /// Its acquire CAS is in the program from this op index.
    Acquiring(usize),
    /// Its entry waits in the queue.
    Waiting,
    /// Its release CAS is in the program from this op index.
    Releasing(usize),
    /// The run's acquires are all issued.
    Done,
}

struct Locker {
    agent: usize,
    device: bool,
    phase: Phase,
    bucket: u64,
    /// The current acquire's id, its issue and when it took effect.
    acquire: usize,
    issued_at: Tick,
    /// When the locker knows its acquire completed (its grant can start no
    /// earlier).
    acquired_at: Tick,
    latencies: Vec<f64>,
    waits: Vec<f64>,
}

/// The paper's bucket: a fixed array of slots, the head holding the lock.
#[derive(Clone, Copy, Default)]
struct Bucket {
    slots: [Option<usize>; SLOTS],
}

impl Bucket {
    /// CAS-append at the first free slot; the slot's index (0: granted).
    fn append(&mut self, entry: usize) -> Result<usize, String> {
        let free = self
            .slots
            .iter()
            .position(Option::is_none)
            .ok_or_else(|| format!("a bucket's {SLOTS} slots are full"))?;
        self.slots[free] = Some(entry);
        Ok(free)
    }

    /// CAS-shift: the head leaves (it must be `entry`), the rest move one
    /// slot left; the new head, if any.
    fn shift(&mut self, entry: usize) -> Result<Option<usize>, String> {
        if self.slots[0] != Some(entry) {
            return Err(format!(
                "release of lock {entry} by a locker that is not the head ({:?})",
                self.slots[0]
            ));
        }
        self.slots.copy_within(1.., 0);
        self.slots[SLOTS - 1] = None;
        Ok(self.slots[0])
    }
}

/// One CAS that took effect: when, on which bucket, by which locker, and
/// whether it acquires or releases.
#[derive(Debug, Clone, Copy)]
struct CasEvent {
    at: Tick,
    bucket: u64,
    locker: usize,
    acquire: bool,
    id: usize,
}

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    if point.x_name != "buckets" {
        return Err(werr(format!(
            "workload ccix_locktable sweeps buckets, not {:?}",
            point.x_name
        )));
    }
    let x = point.x;
    if !((1.0..=1_048_576.0).contains(&x) && x.fract() == 0.0) {
        return Err(werr(format!(
            "buckets = {x}: must be a whole number from 1 to 1048576 (lines of the lock table)"
        )));
    }
    let buckets = x as u64;
    let params = point.params;
    let system = params.str("system");
    let host_lockers = params.uint("host_lockers") as usize;
    let device_lockers = params.uint("device_lockers") as usize;
    if host_lockers + device_lockers == 0 {
        return Err(werr(
            "ccix_locktable: no locker (host_lockers and device_lockers are both 0)",
        ));
    }
    let total = params.uint("lock_ops") as usize;
    let ps = |name: &str| (params.float(name) * 1000.0).round() as Tick;
    let (hold, think, host_atomic) = (ps("hold_ns"), ps("think_ns"), ps("host_atomic_ns"));
    // The device's CAS issues after the ATC lookup and the operands' write.
    let lookup = crate::ccix_shared::atc_lookup(point.platform)?
        + crate::ccix_shared::device_operand_write(point.platform, system)?;

    let mut s = build_for_program(point.platform, system, point)?;
    let ras = role_agents(&s, "ra", system)?;
    if ras.len() < 1 + host_lockers {
        return Err(werr(format!(
            "system {system} has {} request agents: the device and {host_lockers} host locker(s) need {}",
            ras.len(),
            1 + host_lockers
        )));
    }
    let ha = role_agents(&s, "ha", system)?[0];
    // neoDBMS allocated and initialised the table: its lines are in the L3.
    s.agent_mut(ha).warm(TABLE_LINE..TABLE_LINE + buckets);
    // The instants the home executes the device's atomics.
    s.agent_mut(ha).record_home_writes();
    let mut lockers: Vec<Locker> = Vec::new();
    let mut start = 0;
    // The U280 (the first `ra`) when it locks, then the host cores.
    for &a in ras.iter().take(device_lockers) {
        lockers.push(new_locker(a, true, start));
        start += STEP / 2;
    }
    for &a in &ras[1..=host_lockers] {
        lockers.push(new_locker(a, false, start));
        start += STEP / 2;
    }
    for l in &lockers {
        s.agent_mut(l.agent).set_program(&[], 1).map_err(werr)?;
    }

    let mut rng = SimRng::for_path(point.seed, "ccix_locktable.records");
    let mut table = vec![Bucket::default(); buckets as usize];
    let mut events: Vec<CasEvent> = Vec::new();
    let mut grants: Vec<(u64, usize, Tick)> = Vec::new(); // (bucket, acquire id, at)
    let mut holder_of: Vec<usize> = Vec::new(); // acquire id -> locker
    let mut issued = 0usize;
    let mut queued = 0usize;
    let mut t: Tick = 0;
    loop {
        // Issue what is due: acquires of idle lockers.
        for (i, l) in lockers.iter_mut().enumerate() {
            if let Phase::Idle(at) = l.phase {
                if issued == total {
                    l.phase = Phase::Done;
                    continue;
                }
                if at > t {
                    continue;
                }
                let record = rng.below(RECORDS);
                l.bucket = hash(record) % buckets;
                l.acquire = issued;
                holder_of.push(i);
                issued += 1;
                l.issued_at = at;
                let first = issue_cas(&mut s, l, at, t, lookup)?;
                l.phase = Phase::Acquiring(first);
            }
        }
        s.sim.run_until(t);
        no_violation(&s)?;
        // CASes that completed by t, in the order they took effect. A
        // device atomic the home executed whose old value is still on its
        // way back holds up every later CAS (its place in the line's order
        // is known, its completion not yet).
        let mut done: Vec<CasEvent> = Vec::new();
        let mut horizon = Tick::MAX;
        for (i, l) in lockers.iter().enumerate() {
            let (first, acquire) = match l.phase {
                Phase::Acquiring(f) => (f, true),
                Phase::Releasing(f) => (f, false),
                _ => continue,
            };
            let agent = s.agent(l.agent);
            let (issued_at, end) = agent.program_times()[first];
            if end == 0 {
                if l.device && issued_at > 0 {
                    if let Some(at) =
                        executed_since(&s, ha, TABLE_LINE + l.bucket, l.agent, issued_at)
                    {
                        horizon = horizon.min(at);
                    }
                }
                continue;
            }
            let at = if l.device {
                executed_at_home(&s, ha, TABLE_LINE + l.bucket, l.agent, end)?
            } else {
                agent.program_effects()[first]
            };
            done.push(CasEvent {
                at,
                bucket: l.bucket,
                locker: i,
                acquire,
                id: l.acquire,
            });
        }
        done.retain(|e| e.at < horizon);
        done.sort_by_key(|e| (e.at, e.locker));
        for e in done {
            let l = &mut lockers[e.locker];
            let (first, _) = match l.phase {
                Phase::Acquiring(f) | Phase::Releasing(f) => (f, ()),
                _ => unreachable!("a completed CAS's locker is acquiring or releasing"),
            };
            let end = s.agent(l.agent).program_times()[first].1;
            let known = if l.device { end } else { end + host_atomic };
            events.push(e);
            let bucket = &mut table[e.bucket as usize];
            if e.acquire {
                let start = if l.device {
                    s.agent(l.agent).program_times()[first].0 - lookup
                } else {
                    s.agent(l.agent).program_times()[first].0
                };
                l.latencies.push((known - start) as f64 / 1000.0);
                l.acquired_at = known;
                let slot = bucket.append(e.id).map_err(|m| violation(e, &m))?;
                if slot == 0 {
                    grants.push((e.bucket, e.id, e.at));
                    l.waits.push(0.0);
                    l.phase = Phase::Releasing(issue_cas(&mut s, l, known + hold, t, lookup)?);
                } else {
                    queued += 1;
                    l.phase = Phase::Waiting;
                }
            } else {
                let next = bucket.shift(e.id).map_err(|m| violation(e, &m))?;
                l.phase = Phase::Idle(known + think);
                if let Some(next) = next {
                    grants.push((e.bucket, next, e.at));
                    let w = &mut lockers[holder_of[next]];
                    if w.phase != Phase::Waiting || w.acquire != next {
                        return Err(violation(
                            e,
                            "the granted entry's locker is not waiting for it",
                        ));
                    }
                    // The grant reaches the waiter no earlier than its own
                    // acquire's completion.
                    let granted = e.at.max(w.acquired_at);
                    w.waits
                        .push((e.at.saturating_sub(w.acquired_at)) as f64 / 1000.0);
                    w.phase = Phase::Releasing(issue_cas(&mut s, w, granted + hold, t, lookup)?);
                }
            }
        }
        if lockers.iter().all(|l| l.phase == Phase::Done) {
            break;
        }
        t += STEP;
    }
    s.sim.run();
    no_violation(&s)?;
    check_against_reference(&events, &grants, &table, issued)?;

    let mut metrics = BTreeMap::new();
    let side = |device: bool, f: fn(&Locker) -> &Vec<f64>| -> Vec<f64> {
        let mut v: Vec<f64> = lockers
            .iter()
            .filter(|l| l.device == device)
            .flat_map(|l| f(l).iter().copied())
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    for (name, device) in [("host", false), ("device", true)] {
        let lat = side(device, |l| &l.latencies);
        let waits = side(device, |l| &l.waits);
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
    }
    metrics.insert("queued_fraction".into(), queued as f64 / issued as f64);
    metrics.insert("lock_ops".into(), issued as f64);
    metrics.insert("grants".into(), grants.len() as f64);
    metrics.insert(
        "device_cas".into(),
        events.iter().filter(|e| lockers[e.locker].device).count() as f64,
    );
    metrics.insert(
        "home_atomics".into(),
        s.agent(ha).home_writes().len() as f64,
    );
    Ok(sim_result(&s.sim, metrics, trace_mode(point.trace)))
}

fn new_locker(agent: usize, device: bool, start: Tick) -> Locker {
    Locker {
        agent,
        device,
        phase: Phase::Idle(start),
        bucket: 0,
        acquire: 0,
        issued_at: 0,
        acquired_at: 0,
        latencies: Vec::new(),
        waits: Vec::new(),
    }
}

/// When the home executed `device`'s far atomic on `line` that completed
/// at `end`: the home's last write for it on that line by then (the device
/// has one CAS in flight at a time).
fn executed_at_home(
    s: &BuiltSystem,
    ha: usize,
    line: u64,
    device: usize,
    end: Tick,
) -> Result<Tick, RunError> {
    s.agent(ha)
        .home_writes()
        .iter()
        .rev()
        .find(|&&(l, req, at, _)| l == line && req as usize == device && at <= end)
        .map(|&(_, _, at, _)| at)
        .ok_or_else(|| RunError::Violation {
            message: format!(
                "lock table: the device's atomic on line {line:#x} completed at {end} ps but the home never executed it"
            ),
        })
}

/// When the home executed `device`'s far atomic on `line` issued at
/// `issued` (the device's in-flight CAS), if it has.
fn executed_since(
    s: &BuiltSystem,
    ha: usize,
    line: u64,
    device: usize,
    issued: Tick,
) -> Option<Tick> {
    s.agent(ha)
        .home_writes()
        .iter()
        .rev()
        .take_while(|&&(_, _, at, _)| at >= issued)
        .find(|&&(l, req, _, _)| l == line && req as usize == device)
        .map(|&(_, _, at, _)| at)
}

/// A record's bucket (a multiplicative hash).
fn hash(record: u64) -> u64 {
    record.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn violation(e: CasEvent, message: &str) -> RunError {
    RunError::Violation {
        message: format!(
            "lock table, bucket {} at {} ps (lock {}): {message}",
            e.bucket, e.at, e.id
        ),
    }
}

/// Appends the locker's CAS on its bucket to its agent's program, issuing
/// no earlier than `at` (the device's after its ATC lookup), and wakes the
/// agent; the CAS's first operation's index.
fn issue_cas(
    s: &mut BuiltSystem,
    l: &Locker,
    at: Tick,
    now: Tick,
    lookup: Tick,
) -> Result<usize, RunError> {
    let line = TABLE_LINE + l.bucket;
    let first = s.agent(l.agent).program_times().len();
    let (ops, at): (&[(u64, &str)], Tick) = if l.device {
        // The CCIX atomic, sent to the home (after the ATC lookup and the
        // operands' AXI write, `lookup` here).
        (&[(line, "atomic")], at + lookup)
    } else {
        (&[(line, "store")], at)
    };
    s.agent_mut(l.agent).append_program(ops, at).map_err(werr)?;
    let id = s.agents[l.agent];
    s.sim.wake(id, at.max(now), PROGRAM_WAKE);
    Ok(first)
}

/// The simulated lock table against a sequential reference: a FIFO per
/// bucket fed the same CASes in the order they took effect must grant
/// the same locks in the same order; every acquire is granted exactly
/// once, the holders of a bucket never overlap, and every queue is empty
/// at the end.
fn check_against_reference(
    events: &[CasEvent],
    grants: &[(u64, usize, Tick)],
    table: &[Bucket],
    acquires: usize,
) -> Result<(), RunError> {
    let fail = |m: String| RunError::Violation {
        message: format!("lock table against its sequential reference: {m}"),
    };
    let mut order: Vec<CasEvent> = events.to_vec();
    order.sort_by_key(|e| (e.at, e.locker));
    let mut fifo: BTreeMap<u64, VecDeque<usize>> = BTreeMap::new();
    let mut reference: Vec<(u64, usize)> = Vec::new();
    for e in &order {
        let q = fifo.entry(e.bucket).or_default();
        if e.acquire {
            q.push_back(e.id);
            if q.len() == 1 {
                reference.push((e.bucket, e.id));
            }
        } else {
            if q.pop_front() != Some(e.id) {
                return Err(fail(format!("lock {} released without being held", e.id)));
            }
            if let Some(&next) = q.front() {
                reference.push((e.bucket, next));
            }
        }
    }
    let simulated: Vec<(u64, usize)> = {
        let mut g = grants.to_vec();
        g.sort_by_key(|&(_, _, at)| at);
        g.into_iter().map(|(b, id, _)| (b, id)).collect()
    };
    if simulated != reference {
        let at = simulated
            .iter()
            .zip(&reference)
            .position(|(a, b)| a != b)
            .unwrap_or(simulated.len().min(reference.len()));
        return Err(fail(format!(
            "grant {at} differs: simulated {:?}, reference {:?}",
            simulated.get(at),
            reference.get(at)
        )));
    }
    let mut granted = vec![0u32; acquires];
    for &(_, id, _) in grants {
        granted[id] += 1;
    }
    if let Some(id) = granted.iter().position(|&n| n != 1) {
        return Err(fail(format!("lock {id} granted {} times", granted[id])));
    }
    // Holders of one bucket never overlap: walking each bucket's grants
    // and releases in time (a release before the grant it makes at the
    // same instant), a grant finds the bucket free and a release held.
    let mut timeline: Vec<(u64, Tick, u8)> = grants.iter().map(|&(b, _, at)| (b, at, 1)).collect();
    timeline.extend(
        order
            .iter()
            .filter(|e| !e.acquire)
            .map(|e| (e.bucket, e.at, 0)),
    );
    timeline.sort_unstable();
    let mut held: BTreeMap<u64, bool> = BTreeMap::new();
    for (b, at, grant) in timeline {
        let h = held.entry(b).or_default();
        if (grant == 1) == *h {
            return Err(fail(format!(
                "bucket {b} at {at} ps: a {} while {}",
                if grant == 1 { "grant" } else { "release" },
                if *h { "held" } else { "free" }
            )));
        }
        *h = grant == 1;
    }
    if let Some(b) = table
        .iter()
        .position(|b| b.slots.iter().any(Option::is_some))
    {
        return Err(fail(format!("bucket {b} still holds entries at the end")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at: Tick, bucket: u64, locker: usize, acquire: bool, id: usize) -> CasEvent {
        CasEvent {
            at,
            bucket,
            locker,
            acquire,
            id,
        }
    }

    #[test]
    fn the_papers_bucket_appends_at_the_first_free_slot_and_shifts_on_release() {
        let mut b = Bucket::default();
        assert_eq!(b.append(10), Ok(0));
        assert_eq!(b.append(11), Ok(1));
        assert!(b.shift(11).is_err(), "only the head releases");
        assert_eq!(b.shift(10), Ok(Some(11)));
        assert_eq!(b.shift(11), Ok(None));
        for id in 0..SLOTS {
            b.append(id).unwrap();
        }
        assert!(b.append(99).unwrap_err().contains("full"));
    }

    #[test]
    fn the_reference_catches_a_lost_a_duplicated_and_a_reordered_grant() {
        // Lock 0 then lock 1 on bucket 3; lock 1 waits for 0's release.
        let events = [
            ev(10, 3, 0, true, 0),
            ev(20, 3, 1, true, 1),
            ev(30, 3, 0, false, 0),
            ev(40, 3, 1, false, 1),
        ];
        let good = [(3, 0, 10), (3, 1, 30)];
        let empty = [Bucket::default()];
        assert!(check_against_reference(&events, &good, &empty, 2).is_ok());
        let lost = [(3, 0, 10)];
        assert!(check_against_reference(&events, &lost, &empty, 2).is_err());
        let duplicated = [(3, 0, 10), (3, 1, 30), (3, 1, 31)];
        assert!(check_against_reference(&events, &duplicated, &empty, 2).is_err());
        let reordered = [(3, 1, 10), (3, 0, 30)];
        assert!(check_against_reference(&events, &reordered, &empty, 2).is_err());
        // A grant before the holder's release: two holders at once.
        let early = [(3, 0, 10), (3, 1, 25)];
        let e = check_against_reference(&events, &early, &empty, 2).unwrap_err();
        assert!(e.to_string().contains("while held"), "{e}");
        // An entry left in the table.
        let mut left = Bucket::default();
        left.append(7).unwrap();
        assert!(check_against_reference(&events, &good, &[left], 2).is_err());
    }
}
