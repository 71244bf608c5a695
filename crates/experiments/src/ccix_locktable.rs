//! `ccix_locktable` — neoDBMS's shared lock table (CCIX §V, Figs. 8, 9):
//! hash buckets in host memory on a huge page (the ATC warmed once), each
//! bucket one 64 B line whose first 8 B word is a queue of lock entries
//! (see [`queue`]: seven one-byte slots, the head holding the lock, and the
//! entry count). A locker acquires a record's lock by a compare-and-swap
//! that appends its entry to the bucket's queue and releases it by one
//! that shifts the queue left, granting the lock to the new head.
//!
//! * **Two layouts** (`layout`). `word` (the default): the whole queue in
//!   the line's first 8 B word, each change one CAS, as the text suggests
//!   (§V-A: the lock module "creates a CCIX Atomic Compare and Swap (CAS)
//!   operation to place the lock and update the queue"; a release shifts
//!   "the entire queue left"). `slots`: a header word and seven 8 B slot
//!   words run by the checked protocol of [`crate::ccix_lock_slots`], its
//!   state machine driving every read and CAS on the simulated line (see
//!   the `slots` submodule). What follows describes `word`.
//! * **Real bytes, real CAS loops.** Every CAS compares the bucket's word
//!   with the word its locker last saw there (the table starts empty, all
//!   zero) and swaps in that word appended or shifted. It fails when
//!   another locker changed the word meanwhile; it then returns the word
//!   it found, which becomes the compare value of the retry.
//!   - On the U280 the lock module's CAS is what "the CCIX-RA on the AU280
//!     then sends to the host" (§V-A): after the ATC lookup and the
//!     operands' AXI write into the System Cache, a far AtomicCompare
//!     carrying its encoded operands (`LineRmw::to_operands`), which the
//!     home executes on the line's bytes after invalidating every copy (a
//!     core's dirty line comes back with SnpToI) and answers with the line
//!     it found (CompData_I). A retry is another such sequence: at least
//!     one more CCIX round trip.
//!   - On an N1 core the CAS is an LSE atomic (the table's `atomic`, Arm
//!     Cortex-A76 TRM §A6.4.1): near, a read-modify-write in its cache
//!     (`TableAgent::set_program_rmw`), when the core holds the line
//!     unique; far, the same encoded AtomicCompare executed at the home,
//!     when the line is missing or shared. With the queue in one word the
//!     host never loads the line, so its CASes go far. Either way plus the
//!     CAS's ordering `host_atomic_ns`.
//! * **The lockers.** neoDBMS on 1-3 N1 cores and the U280's lock module,
//!   each a loop: draw a record, acquire, hold the lock `hold_ns`, release,
//!   think (`think_ns`, exponential or fixed), until the run's `lock_ops`
//!   acquires are issued. A locker whose entry is not at the head waits
//!   for its grant: it is notified when the holder's shift puts it at the
//!   head and learns the word from it (what its read would return;
//!   neoDBMS's wait is not described, and spinning is not modelled). The
//!   driver runs the simulation in 20 ns steps and appends each locker's
//!   next CAS when its previous one completed or its grant came
//!   ([`TableAgent::append_program`](ccsim_coherence::agents::TableAgent::append_program)).
//! * **Checks.** A core's near CAS takes effect when its core holds the
//!   line unique, a far one (the device's, a core's) when the home
//!   executes it (`home_writes`, with
//!   the line it found): on one line these instants follow the line's
//!   coherence order. After the run the table's bytes are checked: in that
//!   order each CAS found the word the previous successful one left (no
//!   lost update), and the final words, read from simulated memory (or a
//!   core's dirty copy), are every queue empty. The grants, read from the
//!   words (an append into an empty queue, a shift's new head), are
//!   checked against a sequential reference (a FIFO per bucket fed the
//!   same successful CASes in the same order): the same grant order, every
//!   acquire granted exactly once, no two holders of a bucket at once.
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("n1sdp").unwrap();
//! let r = ccsim_experiments::run_point("ccix_locktable", &p, "buckets", 4096.0, &Params::new(), 0, false).unwrap();
//! assert!(r.metrics["device_lock_ns"] > r.metrics["host_lock_ns"]);
//! assert_eq!(r.metrics["grants"], r.metrics["lock_ops"]);
//! ```

use std::collections::{BTreeMap, HashMap, VecDeque};

use ccsim_coherence::agents::line_engine::LineRmw;
use ccsim_coherence::agents::PROGRAM_WAKE;
use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_kernel::prelude::*;
use ccsim_platform::BuiltSystem;

use crate::ccix_shared::{word0, ATOMIC_OPERANDS_BYTES};

mod slots;
use crate::invocation::percentile;
use crate::program_run::{build_for_program, no_violation, role_agents};
use crate::{sim_result, trace_mode, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// The lock table's first bucket line (a huge page's frames).
const TABLE_LINE: u64 = 0x8_8000_0000 / 64;
/// Lock entries a bucket holds: the slots of its queue word (see
/// [`queue`]).
const SLOTS: usize = 7;
/// The driver's step: completions are seen, and the next CASes appended,
/// at most this late (a locker's think time grows by up to it).
const STEP: Tick = 20 * 1000;
/// Records the lockers draw from (many more than buckets).
const RECORDS: u64 = 1 << 20;

/// The declaration of `ccix_locktable`.
pub static CCIX_LOCKTABLE: WorkloadInfo = WorkloadInfo {
    name: "ccix_locktable",
    description: "CCIX §V: neoDBMS's shared lock table in host memory (huge page, ATC warm): x hash buckets, each a 64 B line whose first word is a lock queue; neoDBMS on 1-3 N1 cores and the U280's lock module acquire by a CAS that appends to the queue and release by a CAS that shifts it, every CAS on the line's real bytes through the verified ccix table (an N1 LSE atomic from a core, near on a line it holds unique, else far; a far AtomicCompare with encoded operands executed at the home from the U280), compared with the word its locker last saw and retried with the word it found when that was stale; the table's bytes and grants checked against a sequential reference.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("ccix_host"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.ccix_host]", description: "The system: the first `ra` is the device's cache, the next ones the host cores." },
        ParamSpec { name: "host_lockers", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cores", range: ParamRange::between(0.0, 16.0), from: "CCIX §V-B: neoDBMS on a single CPU core", description: "Host cores that lock (one locker each)." },
        ParamSpec { name: "device_lockers", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "lockers", range: ParamRange::between(0.0, 1.0), from: "CCIX §V-A: one lock module on the FPGA", description: "The U280's lock module (0: the host alone)." },
        ParamSpec { name: "lock_ops", kind: ParamKind::Int, default: ParamDefault::Int(2000), unit: "locks", range: ParamRange::between(1.0, 100_000_000.0), from: "assumed: enough for stable means", description: "Acquires issued in the run, over all lockers (each followed by its release)." },
        ParamSpec { name: "hold_ns", kind: ParamKind::Float, default: ParamDefault::Float(200.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: the record's update under the lock (not given)", description: "Time a locker holds a granted lock before its release CAS." },
        ParamSpec { name: "think_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: the next lock request's preparation", description: "Mean time from a release's completion to the locker's next acquire (see think)." },
        ParamSpec { name: "think", kind: ParamKind::Enum(&["exponential", "fixed"]), default: ParamDefault::Str("exponential"), unit: "", range: ParamRange::ANY, from: "assumed: lock requests arrive as a transaction stream's do (memoryless); 'fixed' makes every locker periodic", description: "How think_ns is spent: exponentially distributed with that mean, or exactly think_ns. Fixed periods can lock the device's CAS loop in phase with the host's (each retry compares with a word the host has changed again since: starvation at one bucket)." },
        ParamSpec { name: "layout", kind: ParamKind::Enum(&["word", "slots"]), default: ParamDefault::Str("word"), unit: "", range: ParamRange::ANY, from: "CCIX §V-A: 'a CCIX Atomic Compare and Swap (CAS) operation to place the lock and update the queue' and §V-A 'shifting the entire queue left' (one CAS per queue change: the word layout); the line of per-slot words is Fig. 8's slots (see ccix_lock_slots)", description: "The bucket's bytes: word (the whole queue in the line's first 8 B word, each change one CAS) or slots (a header word and seven 8 B slot words, run by the checked protocol of ccix_lock_slots: every read and CAS a real access)." },
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
        MetricSpec { name: "device_cas", unit: "CASes", description: "The U280's CASes (acquires, releases and their retries) that completed." },
        MetricSpec { name: "host_cas", unit: "CASes", description: "The host's CASes (acquires, releases and their retries) that completed." },
        MetricSpec { name: "device_cas_retries", unit: "CASes", description: "The U280's CASes that failed (compared with a word another locker had changed) and were retried with the word returned." },
        MetricSpec { name: "host_cas_retries", unit: "CASes", description: "The host's CASes that failed and were retried." },
        MetricSpec { name: "device_retry_fraction", unit: "", description: "Failed CASes over all CASes of the U280." },
        MetricSpec { name: "host_retry_fraction", unit: "", description: "Failed CASes over all CASes of the host." },
        MetricSpec { name: "home_atomics", unit: "atomics", description: "Far atomics the home executed (every device CAS, and a core's CAS on a line it did not hold unique)." },
        MetricSpec { name: "host_far_fraction", unit: "", description: "The host's CASes that went far (an N1 LSE atomic on a line missing or shared in its cache, executed at the home) over all its CASes." },
        MetricSpec { name: "host_acquire_reads", unit: "reads", description: "layout = slots: the host's reads per append (the header, then one per slot scanned, restarts included)." },
        MetricSpec { name: "device_acquire_reads", unit: "reads", description: "layout = slots: the U280's reads per append." },
        MetricSpec { name: "host_acquire_cases", unit: "CASes", description: "layout = slots: the host's CASes per append (1 when the first succeeds)." },
        MetricSpec { name: "device_acquire_cases", unit: "CASes", description: "layout = slots: the U280's CASes per append." },
        MetricSpec { name: "host_release_reads", unit: "reads", description: "layout = slots: the host's reads per release (one per slot shifted, and the first free one)." },
        MetricSpec { name: "device_release_reads", unit: "reads", description: "layout = slots: the U280's reads per release." },
        MetricSpec { name: "host_release_cases", unit: "CASes", description: "layout = slots: the host's CASes per release (the header's begin and its retries, the shifting writes, the close, the free, the publish; 4 with an empty queue)." },
        MetricSpec { name: "device_release_cases", unit: "CASes", description: "layout = slots: the U280's CASes per release." },
        MetricSpec { name: "host_read_ns", unit: "ns", description: "layout = slots: mean latency of the host's reads (its L1D/L2, or a miss to the home)." },
        MetricSpec { name: "device_read_ns", unit: "ns", description: "layout = slots: mean latency of the U280's reads (the ATC lookup, then a System Cache hit or a CCIX ReadShared)." },
        MetricSpec { name: "host_cas_ns", unit: "ns", description: "layout = slots: mean latency of the host's CASes (an N1 LSE atomic, near or far, with its ordering)." },
        MetricSpec { name: "device_cas_ns", unit: "ns", description: "layout = slots: mean latency of the U280's CASes (the ATC lookup, the operands' write, the far AtomicCompare, which drops a System Cache copy as it leaves)." },
        MetricSpec { name: "host_release_ns", unit: "ns", description: "layout = slots: mean time of the host's release accesses (from its header CAS to its publish, the driver's steps excluded)." },
        MetricSpec { name: "device_release_ns", unit: "ns", description: "layout = slots: mean time of the U280's release accesses." },
    ],
    run,
};

/// A bucket's lock queue as the one 8 B word of its line that every CAS
/// compares and swaps (little-endian): bytes 0-6 the slots, slot 0 the
/// holder, each a locker's tag (its index + 1; 0 free), byte 7 the number
/// of entries (the header). One word, because a CAS must shift the whole
/// queue at once.
mod queue {
    use super::SLOTS;

    fn bytes(word: u64) -> [u8; 8] {
        word.to_le_bytes()
    }

    /// The entries' tags, head first; an error names a malformed word (a
    /// count that disagrees with the slots, a gap, a count past the slots).
    pub fn entries(word: u64) -> Result<Vec<u8>, String> {
        let b = bytes(word);
        let n = b[SLOTS] as usize;
        let used = b[..SLOTS].iter().take_while(|&&t| t != 0).count();
        if n > SLOTS || used != n || b[n.min(SLOTS)..SLOTS].iter().any(|&t| t != 0) {
            return Err(format!(
                "bucket word {word:#018x} is not a queue (count {n}, slots {:?})",
                &b[..SLOTS]
            ));
        }
        Ok(b[..n].to_vec())
    }

    /// The holder's tag, if any.
    pub fn head(word: u64) -> Result<Option<u8>, String> {
        Ok(entries(word)?.first().copied())
    }

    fn pack(entries: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b[..entries.len()].copy_from_slice(entries);
        b[SLOTS] = entries.len() as u8;
        u64::from_le_bytes(b)
    }

    /// The CAS-append: `tag` at the first free slot; the new word and the
    /// slot (0: the lock is granted at once).
    pub fn append(word: u64, tag: u8) -> Result<(u64, usize), String> {
        let mut e = entries(word)?;
        if e.len() == SLOTS {
            return Err(format!("a bucket's {SLOTS} slots are full"));
        }
        if e.contains(&tag) {
            return Err(format!(
                "locker tag {tag} is already queued in {word:#018x}"
            ));
        }
        e.push(tag);
        Ok((pack(&e), e.len() - 1))
    }

    /// The CAS-shift: the head (which must be `tag`) leaves, the rest move
    /// one slot left; the new word.
    pub fn shift(word: u64, tag: u8) -> Result<u64, String> {
        let e = entries(word)?;
        if e.first() != Some(&tag) {
            return Err(format!(
                "release by locker tag {tag}, which does not hold the bucket ({word:#018x})"
            ));
        }
        Ok(pack(&e[1..]))
    }
}

/// What a locker is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Its next acquire issues at this time.
    Idle(Tick),
    /// A CAS of its acquire is in the program from this op index.
    Acquiring(usize),
    /// Its entry waits in the queue.
    Waiting,
    /// A CAS of its release is in the program from this op index.
    Releasing(usize),
    /// The run's acquires are all issued.
    Done,
}

struct Locker {
    agent: usize,
    device: bool,
    /// Its entry in a queue (index + 1).
    tag: u8,
    phase: Phase,
    bucket: u64,
    /// The current acquire's id, and when it took effect.
    acquire: usize,
    /// When the locker knows its acquire completed (its grant can start no
    /// earlier).
    acquired_at: Tick,
    /// The last word it saw of each bucket (the table starts empty): the
    /// compare value of its next CAS there.
    seen: HashMap<u64, u64>,
    /// The CAS in flight: its compare and swap values.
    expected: u64,
    proposed: u64,
    /// When the current lock request started (its first CAS's request).
    request_start: Option<Tick>,
    /// CASes issued, and those that failed (compared with a stale word).
    cases: usize,
    retries: usize,
    latencies: Vec<f64>,
    waits: Vec<f64>,
}

impl Locker {
    fn seen(&self, bucket: u64) -> u64 {
        self.seen.get(&bucket).copied().unwrap_or(0)
    }
}

/// One CAS that took effect on a bucket's word: when (and its place in
/// the home's log, see [`HomeSeq`]), by which locker, whether it acquires
/// or releases, the word it found and the word after it (equal when it
/// failed).
#[derive(Debug, Clone, Copy)]
struct CasEvent {
    at: Tick,
    seq: HomeSeq,
    bucket: u64,
    locker: usize,
    acquire: bool,
    id: usize,
    old: u64,
    new: u64,
    success: bool,
}

/// Where a far atomic falls among the home's executions: its index in the
/// home's log (`home_writes`), 0 for an access that took effect at its
/// request agent. Two far atomics on one line can execute at the same
/// instant (a home row in I serves each at once, no snoop between them):
/// their order is then the log's, which the lockers' indices do not give
/// (the device's CAS sorted before a core's it followed reads a word that
/// core's CAS wrote). A near access never shares an instant with a far
/// atomic on its line (the home snoops the near copy before it executes).
type HomeSeq = usize;

/// The line's coherence order over events: their instant, then the
/// home's log, then the locker (events on other lines).
fn coherence_key(at: Tick, seq: HomeSeq, locker: usize) -> (Tick, HomeSeq, usize) {
    (at, seq, locker)
}

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    if point.x_name != "buckets" {
        return Err(werr(format!(
            "workload ccix_locktable sweeps buckets, not {:?}",
            point.x_name
        )));
    }
    let setup = setup(point)?;
    if point.params.str("layout") == "slots" {
        return slots::run(point, setup);
    }
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
        ..
    } = setup;
    let mut lockers: Vec<Locker> = Vec::new();
    let mut start = 0;
    // The U280 (the first `ra`) when it locks, then the host cores.
    for &a in ras.iter().take(device_lockers) {
        lockers.push(new_locker(a, true, lockers.len(), start));
        start += STEP / 2;
    }
    for &a in &ras[1..=host_lockers] {
        lockers.push(new_locker(a, false, lockers.len(), start));
        start += STEP / 2;
    }
    for l in &lockers {
        s.agent_mut(l.agent).set_program(&[], 1).map_err(werr)?;
    }

    let mut rng = SimRng::for_path(point.seed, "ccix_locktable.records");
    let mut think_times = ThinkTimes::new(point, think);
    let mut events: Vec<CasEvent> = Vec::new();
    let mut grants: Vec<(u64, usize, Tick)> = Vec::new(); // (bucket, acquire id, at)
    let mut issued = 0usize;
    let mut queued = 0usize;
    // Per locker, its CASes that went far (a core's, counted).
    let mut lockers_far = vec![0usize; lockers.len()];
    let mut t: Tick = 0;
    loop {
        // Issue what is due: acquires of idle lockers.
        for l in lockers.iter_mut() {
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
                issued += 1;
                l.request_start = None;
                let first = issue_cas(&mut s, l, true, at, t, lookup)?;
                l.phase = Phase::Acquiring(first);
            }
        }
        s.sim.run_until(t);
        no_violation(&s)?;
        // CASes that completed by t, in the order they took effect. A
        // device atomic the home executed whose old value is still on its
        // way back holds up every later CAS (its place in the line's order
        // is known, its outcome to the device not yet).
        let mut done: Vec<(CasEvent, usize, bool)> = Vec::new();
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
                // (a core's CAS may be far as well)
                if issued_at > 0 {
                    if let Some(at) =
                        executed_since(&s, ha, TABLE_LINE + l.bucket, l.agent, issued_at)
                    {
                        horizon = horizon.min(at);
                    }
                }
                continue;
            }
            // The word the CAS found: the old line the home's CompData_I
            // returned (the device's, or a core's far atomic), or the line
            // a core's near atomic read in its cache.
            let (at, seq, found, far) =
                cas_found(&s, ha, TABLE_LINE + l.bucket, l.agent, first, end)?;
            let found = found.ok_or_else(|| RunError::Violation {
                message: format!(
                    "lock table: locker {i}'s CAS on bucket {} completed without the line it found",
                    l.bucket
                ),
            })?;
            let old = word0(&found);
            let success = old == l.expected;
            done.push((
                CasEvent {
                    at,
                    seq,
                    bucket: l.bucket,
                    locker: i,
                    acquire,
                    id: l.acquire,
                    old,
                    new: if success { l.proposed } else { old },
                    success,
                },
                first,
                far,
            ));
        }
        done.retain(|(e, _, _)| e.at < horizon);
        done.sort_by_key(|(e, _, _)| coherence_key(e.at, e.seq, e.locker));
        for (e, first, far) in done {
            events.push(e);
            if far && !lockers[e.locker].device {
                lockers_far[e.locker] += 1;
            }
            let l = &mut lockers[e.locker];
            let (cas_start, end) = s.agent(l.agent).program_times()[first];
            let known = if l.device { end } else { end + host_atomic };
            if e.acquire {
                // The request started with its first CAS (the device's
                // before its ATC lookup and operands' write).
                l.request_start
                    .get_or_insert(cas_start - if l.device { lookup } else { 0 });
            }
            // What the CAS returned is now the locker's view of the word.
            l.seen.insert(e.bucket, e.new);
            if !e.success {
                // The CAS loop: compare with the word just returned.
                l.retries += 1;
                let again = issue_cas(&mut s, l, e.acquire, known, t, lookup)?;
                l.phase = if e.acquire {
                    Phase::Acquiring(again)
                } else {
                    Phase::Releasing(again)
                };
                continue;
            }
            if e.acquire {
                let started = l.request_start.expect("set above");
                l.latencies.push((known - started) as f64 / 1000.0);
                l.acquired_at = known;
                let (_, slot) = queue::append(e.old, l.tag).map_err(|m| violation(&e, &m))?;
                if slot == 0 {
                    grants.push((e.bucket, e.id, e.at));
                    l.waits.push(0.0);
                    l.phase =
                        Phase::Releasing(issue_cas(&mut s, l, false, known + hold, t, lookup)?);
                } else {
                    queued += 1;
                    l.phase = Phase::Waiting;
                }
            } else {
                let next = think_times.next();
                l.phase = Phase::Idle(known + next);
                // The shift's word names the next holder.
                if let Some(next) = queue::head(e.new).map_err(|m| violation(&e, &m))? {
                    let w = &mut lockers[next as usize - 1];
                    if w.phase != Phase::Waiting || w.bucket != e.bucket {
                        return Err(violation(
                            &e,
                            "the new head's locker is not waiting in this bucket",
                        ));
                    }
                    grants.push((e.bucket, w.acquire, e.at));
                    // The waiter learns the word with its grant (what its
                    // read of the bucket would return), and the grant
                    // reaches it no earlier than its own acquire's end.
                    w.seen.insert(e.bucket, e.new);
                    let granted = e.at.max(w.acquired_at);
                    w.waits
                        .push((e.at.saturating_sub(w.acquired_at)) as f64 / 1000.0);
                    w.phase =
                        Phase::Releasing(issue_cas(&mut s, w, false, granted + hold, t, lookup)?);
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
    let final_words: Vec<u64> = (0..buckets)
        .map(|b| word0(&coherent_value(&s, &ras, ha, TABLE_LINE + b)))
        .collect();
    check_bytes(&events, &final_words)?;
    let successes: Vec<CasEvent> = events.iter().copied().filter(|e| e.success).collect();
    let holding: Vec<bool> = final_words.iter().map(|&w| w != 0).collect();
    check_against_reference(&successes, &grants, &holding, issued)?;

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
        let (cases, retries) = lockers
            .iter()
            .filter(|l| l.device == device)
            .fold((0, 0), |(c, r), l| (c + l.cases, r + l.retries));
        metrics.insert(format!("{name}_cas"), cases as f64);
        metrics.insert(format!("{name}_cas_retries"), retries as f64);
        if !device {
            let far: usize = lockers
                .iter()
                .zip(&lockers_far)
                .filter(|(l, _)| !l.device)
                .map(|(_, &f)| f)
                .sum();
            metrics.insert(
                "host_far_fraction".into(),
                if cases == 0 {
                    0.0
                } else {
                    far as f64 / cases as f64
                },
            );
        }
        metrics.insert(
            format!("{name}_retry_fraction"),
            if cases == 0 {
                0.0
            } else {
                retries as f64 / cases as f64
            },
        );
    }
    let run = RunTotals {
        issued: issued as f64,
        queued: queued as f64,
        grants: grants.len() as f64,
    };
    Ok(finish(&s, ha, metrics, run, point))
}

/// A locker's think time after each release: `think` exactly, or drawn
/// from an exponential of that mean (`think = exponential`), from the
/// run's own seeded stream.
struct ThinkTimes {
    rng: SimRng,
    exponential: bool,
    mean: Tick,
}

impl ThinkTimes {
    fn new(point: &Point<'_>, mean: Tick) -> Self {
        ThinkTimes {
            rng: SimRng::for_path(point.seed, "ccix_locktable.think"),
            exponential: point.params.str("think") == "exponential",
            mean,
        }
    }

    fn next(&mut self) -> Tick {
        if self.exponential {
            self.rng.exponential(self.mean as f64).round() as Tick
        } else {
            self.mean
        }
    }
}

/// A run's totals that both layouts report.
struct RunTotals {
    issued: f64,
    queued: f64,
    grants: f64,
}

/// Adds the totals both layouts report (lock operations, grants, the
/// fraction queued, the device atomics the home ran) and wraps the run.
fn finish(
    s: &BuiltSystem,
    ha: usize,
    mut metrics: BTreeMap<String, f64>,
    run: RunTotals,
    point: &Point<'_>,
) -> PointResult {
    metrics.insert("queued_fraction".into(), run.queued / run.issued);
    metrics.insert("lock_ops".into(), run.issued);
    metrics.insert("grants".into(), run.grants);
    metrics.insert(
        "home_atomics".into(),
        s.agent(ha).home_writes().len() as f64,
    );
    sim_result(&s.sim, metrics, trace_mode(point.trace))
}

/// What both layouts' drivers start from: the built system with the table
/// initialised (every bucket line zero in the home's memory and its L3),
/// its request agents (the device first) and home, and the run's
/// parameters in picoseconds.
struct Setup {
    s: BuiltSystem,
    ras: Vec<usize>,
    ha: usize,
    buckets: u64,
    host_lockers: usize,
    device_lockers: usize,
    total: usize,
    hold: Tick,
    think: Tick,
    host_atomic: Tick,
    /// A device CAS's wait before its line issues: the ATC lookup and the
    /// operands' AXI write into the System Cache.
    lookup: Tick,
    /// A device read's: the ATC lookup alone.
    atc: Tick,
}

fn setup(point: &Point<'_>) -> Result<Setup, RunError> {
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
    // Each device CAS issues after the ATC lookup and the operands' write.
    let atc = crate::ccix_shared::atc_lookup(point.platform)?;
    let lookup = atc + crate::ccix_shared::device_operand_write(point.platform, system)?;

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
    // neoDBMS allocated and initialised the table (every queue empty): its
    // lines are zero, in the home's memory and its L3.
    for line in TABLE_LINE..TABLE_LINE + buckets {
        s.agent_mut(ha)
            .preload_memory(line, [0u8; LINE_BYTES])
            .map_err(werr)?;
        s.checker.borrow_mut().preload(line, &[0u8; LINE_BYTES]);
    }
    s.agent_mut(ha).warm(TABLE_LINE..TABLE_LINE + buckets);
    // The instants the home executes the device's atomics, with the line
    // each found.
    s.agent_mut(ha).record_home_writes();
    Ok(Setup {
        s,
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
    })
}

fn new_locker(agent: usize, device: bool, index: usize, start: Tick) -> Locker {
    Locker {
        agent,
        device,
        tag: index as u8 + 1,
        phase: Phase::Idle(start),
        bucket: 0,
        acquire: 0,
        acquired_at: 0,
        seen: HashMap::new(),
        expected: 0,
        proposed: 0,
        request_start: None,
        cases: 0,
        retries: 0,
        latencies: Vec::new(),
        waits: Vec::new(),
    }
}

/// The latest value of `line` after the run: the copy of a request agent
/// that may write it (a core's dirty line), else the home's memory.
fn coherent_value(s: &BuiltSystem, ras: &[usize], ha: usize, line: u64) -> Line {
    ras.iter()
        .find(|&&a| s.agent(a).writes(line))
        .and_then(|&a| s.agent(a).copy_of(line).copied())
        .unwrap_or_else(|| s.agent(ha).memory_of(line))
}

/// When the home executed `device`'s far atomic on `line` that completed
/// at `end`, its place in the home's log, and the line it found: the
/// home's last write for it on that line by then (the device has one CAS
/// in flight at a time).
fn executed_at_home(
    s: &BuiltSystem,
    ha: usize,
    line: u64,
    device: usize,
    end: Tick,
) -> Result<(Tick, HomeSeq, Option<Line>), RunError> {
    s.agent(ha)
        .home_writes()
        .iter()
        .enumerate()
        .rev()
        .find(|&(_, &(l, req, at, _))| l == line && req as usize == device && at <= end)
        .map(|(seq, &(_, _, at, old))| (at, seq, old))
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

/// Appends one CAS on `line` as program operation `index` of `agent`,
/// issuing at `at`. The U280's lock module sends a far AtomicCompare
/// (`far_atomic`) carrying its encoded operands. A core's CAS is an N1
/// LSE atomic (`atomic`): near, a read-modify-write in its cache, when
/// the core holds the line unique; far, the same encoded AtomicCompare
/// the home executes, when the line is missing or shared (Arm Cortex-A76
/// TRM 100798 §A6.4.1), so it carries both.
fn append_cas(
    agent: &mut ccsim_coherence::agents::TableAgent,
    device: bool,
    line: u64,
    index: usize,
    cas: LineRmw,
    at: Tick,
) -> Result<(), RunError> {
    let event = if device { "far_atomic" } else { "atomic" };
    agent.append_program(&[(line, event)], at).map_err(werr)?;
    agent
        .set_program_value(index, &cas.to_operands()[..ATOMIC_OPERANDS_BYTES])
        .map_err(werr)?;
    if !device {
        agent.set_program_rmw(index, cas).map_err(werr)?;
    }
    Ok(())
}

/// Where and when a completed CAS (program operation `index` of `agent`,
/// completed at `end`) took effect (with its place in the home's log) and
/// the line it found: a near atomic's own read-modify-write in its cache,
/// else the far atomic the home executed (its log); and whether it went
/// far.
fn cas_found(
    s: &BuiltSystem,
    ha: usize,
    line: u64,
    agent: usize,
    index: usize,
    end: Tick,
) -> Result<(Tick, HomeSeq, Option<Line>, bool), RunError> {
    let a = s.agent(agent);
    if let Some(found) = a.program_found().get(index).copied().flatten() {
        return Ok((a.program_effects()[index], 0, Some(found), false));
    }
    let (at, seq, found) = executed_at_home(s, ha, line, agent, end)?;
    Ok((at, seq, found, true))
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

fn violation(e: &CasEvent, message: &str) -> RunError {
    RunError::Violation {
        message: format!(
            "lock table, bucket {} at {} ps (lock {}): {message}",
            e.bucket, e.at, e.id
        ),
    }
}

/// Appends the locker's next CAS on its bucket to its agent's program,
/// issuing no earlier than `at`, and wakes the agent; the CAS's op index.
/// The compare value is the word the locker last saw, the swap value that
/// word with its entry appended (`acquire`) or the queue shifted. On the
/// U280 a far AtomicCompare carrying both (after the ATC lookup and the
/// operands' AXI write, `lookup`), executed at the home; on a core a store
/// whose read-modify-write runs when the core holds the line unique.
fn issue_cas(
    s: &mut BuiltSystem,
    l: &mut Locker,
    acquire: bool,
    at: Tick,
    now: Tick,
    lookup: Tick,
) -> Result<usize, RunError> {
    let line = TABLE_LINE + l.bucket;
    let expected = l.seen(l.bucket);
    let proposed = if acquire {
        queue::append(expected, l.tag).map(|(word, _)| word)
    } else {
        queue::shift(expected, l.tag)
    }
    .map_err(|m| RunError::Violation {
        message: format!("lock table, bucket {} (lock {}): {m}", l.bucket, l.acquire),
    })?;
    let cas = LineRmw::Cas {
        offset: 0,
        expected,
        new: proposed,
    };
    (l.expected, l.proposed) = (expected, proposed);
    l.cases += 1;
    let first = s.agent(l.agent).program_times().len();
    let agent = s.agent_mut(l.agent);
    let at = if l.device { at + lookup } else { at };
    append_cas(agent, l.device, line, first, cas, at)?;
    let id = s.agents[l.agent];
    s.sim.wake(id, at.max(now), PROGRAM_WAKE);
    Ok(first)
}

/// The bytes' own history, per bucket in the order the CASes took effect:
/// each CAS found the word the previous successful one left (a failed one
/// found a word other than its compare value and left it), each success
/// appended or shifted that word, and the table's final words (read from
/// simulated memory) are the last ones left, every queue empty.
fn check_bytes(events: &[CasEvent], final_words: &[u64]) -> Result<(), RunError> {
    let fail = |m: String| RunError::Violation {
        message: format!("lock table's bytes: {m}"),
    };
    let mut order: Vec<&CasEvent> = events.iter().collect();
    order.sort_by_key(|e| coherence_key(e.at, e.seq, e.locker));
    let mut word: BTreeMap<u64, u64> = BTreeMap::new();
    for e in order {
        let w = word.entry(e.bucket).or_insert(0);
        if e.old != *w {
            return Err(fail(format!(
                "bucket {} at {} ps: a CAS found {:#018x}, the last one left {:#018x} (a lost update)",
                e.bucket, e.at, e.old, *w
            )));
        }
        queue::entries(e.new).map_err(fail)?;
        *w = e.new;
    }
    for (b, &f) in final_words.iter().enumerate() {
        let left = word.get(&(b as u64)).copied().unwrap_or(0);
        if f != left || f != 0 {
            return Err(fail(format!(
                "bucket {b} holds {f:#018x} at the end (its last CAS left {left:#018x}; an empty queue is 0)"
            )));
        }
    }
    Ok(())
}

/// The simulated lock table against a sequential reference: a FIFO per
/// bucket fed the same CASes in the order they took effect must grant
/// the same locks in the same order; every acquire is granted exactly
/// once, the holders of a bucket never overlap, and every queue is empty
/// at the end (`holding[b]`: bucket `b`'s final bytes still hold an entry).
fn check_against_reference(
    events: &[CasEvent],
    grants: &[(u64, usize, Tick)],
    holding: &[bool],
    acquires: usize,
) -> Result<(), RunError> {
    let fail = |m: String| RunError::Violation {
        message: format!("lock table against its sequential reference: {m}"),
    };
    let mut order: Vec<CasEvent> = events.to_vec();
    order.sort_by_key(|e| coherence_key(e.at, e.seq, e.locker));
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
    if let Some(b) = holding.iter().position(|&h| h) {
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
            seq: 0,
            bucket,
            locker,
            acquire,
            id,
            old: 0,
            new: 0,
            success: true,
        }
    }

    #[test]
    fn the_queue_word_appends_at_the_first_free_slot_and_shifts_on_release() {
        let (w, slot) = queue::append(0, 3).unwrap();
        assert_eq!((w, slot), (0x0100_0000_0000_0003, 0), "{w:#x}");
        let (w, slot) = queue::append(w, 5).unwrap();
        assert_eq!(slot, 1);
        assert_eq!(queue::entries(w).unwrap(), vec![3, 5]);
        assert!(queue::shift(w, 5).is_err(), "only the head releases");
        assert!(queue::append(w, 5).is_err(), "a locker queues once");
        let w = queue::shift(w, 3).unwrap();
        assert_eq!(queue::head(w), Ok(Some(5)));
        assert_eq!(queue::shift(w, 5), Ok(0), "an empty queue is the zero word");
        let mut w = 0;
        for tag in 1..=SLOTS as u8 {
            w = queue::append(w, tag).unwrap().0;
        }
        assert!(queue::append(w, 99).unwrap_err().contains("full"));
        // A count that disagrees with the slots is not a queue.
        assert!(queue::entries(0x0200_0000_0000_0001).is_err());
        assert!(queue::entries(0x0100_0000_0000_0100).is_err());
    }

    #[test]
    fn the_bytes_check_catches_a_lost_update_and_a_table_left_nonempty() {
        let a = queue::append(0, 1).unwrap().0;
        let ab = queue::append(a, 2).unwrap().0;
        let b = queue::shift(ab, 1).unwrap();
        let cas = |at, locker, old, new, success| CasEvent {
            old,
            new,
            success,
            ..ev(at, 0, locker, true, 0)
        };
        let good = [
            cas(10, 0, 0, a, true),
            cas(15, 1, a, a, false),
            cas(20, 1, a, ab, true),
            cas(30, 0, ab, b, true),
            cas(40, 1, b, 0, true),
        ];
        assert!(check_bytes(&good, &[0]).is_ok());
        // Locker 1's append computed from the empty word and swapped in
        // over locker 0's entry: locker 0's update is lost.
        let lost = [cas(10, 0, 0, a, true), cas(20, 1, 0, a, true)];
        let e = check_bytes(&lost, &[a]).unwrap_err();
        assert!(e.to_string().contains("lost update"), "{e}");
        let e = check_bytes(&good[..4], &[b]).unwrap_err();
        assert!(e.to_string().contains("at the end"), "{e}");
        // Memory that disagrees with the last CAS.
        assert!(check_bytes(&good, &[b]).is_err());
    }

    #[test]
    fn far_atomics_of_one_instant_follow_the_homes_log_not_the_lockers_indices() {
        // Locker 1's append, then locker 0's (compared with the word
        // locker 1 left), both executed by the home at 10 ps: its log has
        // locker 1's first (seq 7, then 8); then the two releases.
        let a = queue::append(0, 2).unwrap().0;
        let ab = queue::append(a, 1).unwrap().0;
        let b = queue::shift(ab, 2).unwrap();
        let cas = |at, locker, seq, old, new| CasEvent {
            seq,
            old,
            new,
            ..ev(at, 0, locker, true, locker)
        };
        let logged = [
            cas(10, 0, 8, a, ab),
            cas(10, 1, 7, 0, a),
            cas(20, 1, 9, ab, b),
            cas(30, 0, 10, b, 0),
        ];
        assert!(check_bytes(&logged, &[0]).is_ok());
        // Ordered by the lockers' indices instead, locker 0's CAS comes
        // first and seems to find a word no CAS left.
        let by_locker = logged.map(|e| CasEvent { seq: 0, ..e });
        let e = check_bytes(&by_locker, &[0]).unwrap_err();
        assert!(e.to_string().contains("lost update"), "{e}");
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
        let empty = [false];
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
        let left = [true];
        assert!(check_against_reference(&events, &good, &left, 2).is_err());
    }
}
