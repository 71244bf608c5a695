//! PIO paper Fig. 5c and 5d: the two-cache-line invocation with both lines
//! **homed on the CPU** and the FPGA as a caching agent, run on the
//! CPU-homed slice ([`ccsim_eci::cc_system`]) with the checked `eci-cc` tables.
//!
//! The paper describes 5c/5d only as "similar" to 5a/5b and "more complex,
//! since the CPU cache may evict a line without warning" (§4); it does not
//! implement or measure them. This module is our reading, built only from
//! what the `eci-cc` tables allow:
//!
//! * **The device's signal is a forward.** The FPGA keeps the CPU's
//!   request line `B` Shared. A core store to `B` makes the CPU home
//!   invalidate that copy (`SINV`) before the store commits; the CC answers
//!   by its table and tells the device logic, which reads `B` back
//!   (`RLDD`, one round trip) and so receives the request (PIO §4: the
//!   device "is free to react internally to these events").
//! * **The CPU waits by polling its own memory.** In 5a/5b the device
//!   holds the CPU's read of a device-homed line until the result is ready;
//!   with CPU-homed lines the CPU's reads of `A` are decided by its own
//!   home, and the checked CC answers every forward at once, so the core
//!   re-reads `A` (an LLC hit while the FPGA holds nothing writable) until
//!   the result's sequence number appears.
//! * **The result goes back one of two ways** ([`ReturnPath`]): the device
//!   obtains `A` Exclusive (`RC2D_S`/`RLDX`), stores the result and either
//!   keeps it Modified, so the core's next read of `A` recalls it with a
//!   forward (`FLDRS`/`HAKD`), or writes it back at once (`VICD`), so the
//!   core reads its own memory.
//!
//! ```text
//!  5c  core: store req -> B ──(home: SINV B)──► CC: HAKI, notify ─► device: ld B
//!                         ◄── RLDD B / PSHA B (request) ─────────  compute; ldx A; st A
//!      core: read A ... ──(home: FLDRS A)────► CC: HAKD (forward)  [or VICD A (writeback)]
//!      core: result in A
//!  5d  device: ldx A; st A (work) [VICD A]       core: polls A, computes, store resp -> B
//!      ──(home: SINV B)──► CC: notify ─► device: ld B (response): verified, next item
//! ```
//!
//! The same programs are checked exhaustively on the generated tables by
//! `ccsim_protocol::cc_invocation` (SWMR, data-value, and every round can
//! always complete, refused stores included).
//!
//! Latency is measured like 5a/5b: 5c by the core (request store issued to
//! the verified result loaded), 5d by the device (work item handed out to
//! the response fetched).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use ccsim_kernel::prelude::*;

use ccsim_coherence::util::ns_to_ps;
use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_eci::cc::{CcNotice, CcOp, CcOpKind, CPU_HOMED_BASE};
use ccsim_eci::cc_system::CcSystem;
use ccsim_eci::cpu::{Completed, CpuOp};

/// How the device's result (5c) or work item (5d) in line `A` reaches the
/// core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnPath {
    /// The device keeps `A` Modified; the core's read recalls it
    /// (`FLDRS` → `HAKD`).
    Forward,
    /// The device writes `A` back at once (`VICD`); the core reads its
    /// own memory.
    Writeback,
}

/// One run of the CPU-homed invocation.
#[derive(Clone, Debug)]
pub struct CcInvocationConfig {
    /// Fig. 5d (the device hands out work) instead of 5c (the CPU calls).
    pub device_initiated: bool,
    /// How line `A` comes back.
    pub return_path: ReturnPath,
    /// Calls, warm-up included.
    pub calls: usize,
    /// First calls not measured.
    pub warmup: usize,
    /// Device time from request to result (5c) or core time from work item
    /// to response (5d), ns.
    pub compute_ns: f64,
    /// Core time between two polls of `A` (the spin loop's pause). A
    /// tight loop would livelock: every poll while the device holds `A`
    /// Exclusive recalls it before the device's store (the CC takes
    /// forwards before app requests), so the store is refused forever.
    pub poll_ns: f64,
    /// Line `A` (result in 5c, work item in 5d); CPU-homed.
    pub line_a: u64,
    /// Line `B` (request in 5c, response in 5d); CPU-homed.
    pub line_b: u64,
}

impl Default for CcInvocationConfig {
    fn default() -> Self {
        CcInvocationConfig {
            device_initiated: false,
            return_path: ReturnPath::Forward,
            calls: 20,
            warmup: 2,
            compute_ns: 0.0,
            poll_ns: 100.0,
            line_a: CPU_HOMED_BASE,
            line_b: CPU_HOMED_BASE + 1,
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct CcInvocationRun {
    /// (start, end) of every call, warm-up included.
    pub spans: Vec<(Tick, Tick)>,
    /// Latencies of the measured calls (ps).
    pub latencies_ps: Vec<Tick>,
    /// Calls whose result (5c) or response (5d) was verified.
    pub verified: usize,
    /// Core reads of `A` per call (the polling).
    pub polls_per_call: f64,
    /// Device stores the table refused (the core's poll took `A` back
    /// between the device's `ldx` and `st`), retried.
    pub refused_stores: u64,
    /// Component stats.
    pub stats: BTreeMap<String, f64>,
    /// Kernel events.
    pub events: u64,
    /// Trace hash.
    pub trace_hash: Option<String>,
}

/// The request (5c) or work item (5d) of call `seq`: one word, the
/// sequence number in the high half and an argument in the low half.
pub fn request_word(seq: u64) -> u64 {
    (seq << 32) | (seq.wrapping_mul(0x9E37_79B9).rotate_left(7) & 0xFFFF_FFFF)
}

/// The function the callee computes on a request word.
pub fn result_of(req: u64) -> u64 {
    (req.rotate_left(13) ^ 0x5A5A_A5A5_0F0F_F0F0).wrapping_mul(0x100_0000_01B3)
}

/// A small deterministic generator for the core's poll jitter (seeded by
/// the run seed, so runs repeat).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn word(l: &Line, w: usize) -> u64 {
    u64::from_le_bytes(l[w * 8..w * 8 + 8].try_into().expect("8 bytes"))
}

fn result_line(seq: u64, value: u64) -> Line {
    let mut l = [0u8; LINE_BYTES];
    l[..8].copy_from_slice(&seq.to_le_bytes());
    l[8..16].copy_from_slice(&value.to_le_bytes());
    l
}

/// Polls of `A` per call after which a run is declared stuck (a call
/// polls a few hundred times at most: its latency over a 10 ns LLC hit).
const MAX_POLLS_PER_CALL: u64 = 200;

#[derive(Default)]
struct Log {
    spans: Vec<(Tick, Tick)>,
    verified: usize,
    polls: u64,
    refused: u64,
    errors: Vec<String>,
}

/// The device writes `value` into `A` for call `seq`: obtain `A`
/// writable, store, and with [`ReturnPath::Writeback`] write it back.
fn write_a(cfg: &CcInvocationConfig, seq: u64, value: u64, at: Tick) -> Vec<CcOp> {
    let mut ops = vec![
        CcOp::new(CcOpKind::LoadExclusive, cfg.line_a).at(at),
        CcOp::new(
            CcOpKind::Store(Box::new(result_line(seq, value))),
            cfg.line_a,
        ),
    ];
    if cfg.return_path == ReturnPath::Writeback {
        ops.push(CcOp::new(CcOpKind::Evict, cfg.line_a));
    }
    ops
}

/// Runs Fig. 5c or 5d on the CPU-homed slice: `sys` as built (system
/// `cpu_homed` of platforms/enzian.toml), with no program yet; `seed`
/// seeds the software's own jitter (the system's streams were seeded when
/// it was built).
pub fn run_cc_invocation(
    mut sys: CcSystem,
    cfg: &CcInvocationConfig,
    seed: u64,
) -> Result<CcInvocationRun, String> {
    if cfg.calls == 0 || cfg.warmup >= cfg.calls {
        return Err(format!(
            "cc invocation: calls ({}) must exceed warmup ({})",
            cfg.calls, cfg.warmup
        ));
    }
    if !(cfg.compute_ns.is_finite() && cfg.compute_ns >= 0.0) {
        return Err(format!(
            "cc invocation.compute_ns: must be a non-negative number, got {}",
            cfg.compute_ns
        ));
    }
    if !(cfg.poll_ns.is_finite() && cfg.poll_ns > 0.0) {
        return Err(format!(
            "cc invocation.poll_ns: must be a positive number, got {}",
            cfg.poll_ns
        ));
    }
    if cfg.line_a == cfg.line_b {
        return Err("cc invocation: lines A and B must differ".into());
    }
    let compute = ns_to_ps(cfg.compute_ns);
    let pause = ns_to_ps(cfg.poll_ns);
    let calls = cfg.calls as u64;
    let log = Rc::new(RefCell::new(Log::default()));
    let (a, b) = (cfg.line_a, cfg.line_b);

    // The core. 5c: store the request into B, poll A for the result.
    // 5d: poll A for a work item, store the response into B. The core
    // runs one op at a time; `left` counts the ops of the batch it issued
    // last, which it reacts to once they all completed (the last op of a
    // poll batch is the read of A).
    #[derive(Clone, Copy, PartialEq)]
    enum Phase {
        Start,
        Request,
        Poll,
        Respond,
    }
    let mut phase = Phase::Start;
    let mut jitter = Lcg(seed ^ 0x5C5C_0000_C0DE);
    let mut seq = 1u64;
    let mut started: Tick = 0;
    let mut left = 1usize;
    let dev_init = cfg.device_initiated;
    let clog = log.clone();
    let driver = move |c: &Completed| -> Vec<CpuOp> {
        left -= 1;
        if left > 0 || seq > calls {
            return Vec::new();
        }
        let end = c.issued + c.latency_ps;
        let mut l = clog.borrow_mut();
        let poll = CpuOp::Load { line: a };
        let request = |seq| CpuOp::Store {
            line: b,
            word: 0,
            value: request_word(seq),
        };
        let (next_phase, ops) = match (phase, dev_init) {
            (Phase::Start, false) => {
                started = end;
                (Phase::Request, vec![request(seq)])
            }
            (Phase::Request, _) | (Phase::Start, true) | (Phase::Respond, true) => {
                (Phase::Poll, vec![poll])
            }
            (Phase::Poll, false) if word(&c.data, 0) == seq => {
                // The result of call `seq` is in A.
                if word(&c.data, 1) == result_of(request_word(seq)) {
                    l.verified += 1;
                } else {
                    l.errors.push(format!("call {seq}: wrong result in A"));
                }
                l.spans.push((started, end));
                seq += 1;
                if seq > calls {
                    return Vec::new();
                }
                started = end;
                (Phase::Request, vec![request(seq)])
            }
            (Phase::Poll, true)
                if word(&c.data, 0) == seq && word(&c.data, 1) == request_word(seq) =>
            {
                // Item `seq` is in A: compute, respond into B.
                let resp = (seq << 32) | (result_of(request_word(seq)) & 0xFFFF_FFFF);
                seq += 1;
                let mut v = Vec::new();
                if compute > 0 {
                    v.push(CpuOp::Wait { ps: compute });
                }
                v.push(CpuOp::Store {
                    line: b,
                    word: 0,
                    value: resp,
                });
                (Phase::Respond, v)
            }
            (Phase::Poll, _) => {
                l.polls += 1;
                if l.polls > MAX_POLLS_PER_CALL * calls {
                    // Progress check: stop so the run reports instead of
                    // spinning to the time limit.
                    let e = format!("call {seq}: no answer in A after {} polls", l.polls);
                    l.errors.push(e);
                    return Vec::new();
                }
                // A jittered pause: a fixed one can phase-lock with the
                // device's ldx/st and refuse its store every time.
                let ps = pause / 2 + jitter.below(pause.max(1));
                (Phase::Poll, vec![CpuOp::Wait { ps }, poll])
            }
            (Phase::Respond, false) => unreachable!("5c has no respond phase"),
        };
        phase = next_phase;
        left = ops.len();
        ops
    };

    // The device.
    let dcfg = cfg.clone();
    let dlog = log.clone();
    let mut dseq = 1u64;
    let mut refused_in_row: u64 = 0;
    let mut dstart: Tick = 0;
    // The value the device last wrote into A, to retry a refused store.
    let mut last_write = cfg.device_initiated.then(|| (1, request_word(1)));
    let device = move |now: Tick, n: &CcNotice<'_>| -> Vec<CcOp> {
        let mut l = dlog.borrow_mut();
        match n {
            CcNotice::Forward { name, line } if *line == b && matches!(*name, "SINV" | "FEVX") => {
                // The core wrote B: fetch it.
                vec![CcOp::new(CcOpKind::Load, b)]
            }
            CcNotice::Forward { .. } => Vec::new(),
            CcNotice::Done(d) if d.refused => {
                // The core's poll took A back between ldx and st: again,
                // after a pause that grows with each refusal in a row.
                l.refused += 1;
                refused_in_row += 1;
                let (s, v) = last_write.expect("a store was issued");
                write_a(&dcfg, s, v, now + pause * refused_in_row.min(8))
            }
            CcNotice::Done(d) if d.op.line == b && d.op.kind == CcOpKind::Load => {
                let Some(data) = d.data else {
                    l.errors.push("device: load of B returned no data".into());
                    return Vec::new();
                };
                let w = word(&data, 0);
                if dseq > calls || w >> 32 != dseq {
                    return Vec::new();
                }
                if !dcfg.device_initiated {
                    // 5c: a request; compute and answer in A.
                    let v = result_of(w);
                    last_write = Some((dseq, v));
                    dseq += 1;
                    return write_a(&dcfg, dseq - 1, v, now + compute);
                }
                // 5d: the response to item dseq.
                if w & 0xFFFF_FFFF == result_of(request_word(dseq)) & 0xFFFF_FFFF {
                    l.verified += 1;
                } else {
                    l.errors.push(format!("item {dseq}: wrong response in B"));
                }
                l.spans.push((dstart, now));
                dseq += 1;
                if dseq > calls {
                    return Vec::new();
                }
                dstart = now;
                last_write = Some((dseq, request_word(dseq)));
                write_a(&dcfg, dseq, request_word(dseq), now)
            }
            CcNotice::Done(d) => {
                if matches!(d.op.kind, CcOpKind::Store(_)) {
                    refused_in_row = 0;
                }
                Vec::new()
            }
        }
    };

    // Start-up: the device takes B Shared (so the core's stores to B reach
    // it as invalidations); in 5d it also hands out item 1.
    let mut ops = vec![CcOp::new(CcOpKind::Load, b)];
    if cfg.device_initiated {
        ops.extend(write_a(cfg, 1, request_word(1), 0));
    }
    let program = vec![CpuOp::Wait {
        ps: if cfg.device_initiated { 1 } else { 2_000_000 },
    }];
    sys.home_mut().set_program(program)?;
    sys.cc_mut().push_ops(ops);
    sys.cc_mut().set_device(Box::new(device));
    sys.home_mut().set_driver(Box::new(driver));
    let outcome = sys.run();
    let l = log.borrow();
    if let Some(e) = l.errors.first() {
        return Err(format!("cc invocation: {e}"));
    }
    outcome?;
    if l.spans.len() != cfg.calls {
        return Err(format!(
            "cc invocation: {} of {} calls completed",
            l.spans.len(),
            cfg.calls
        ));
    }
    let latencies_ps = l.spans[cfg.warmup..].iter().map(|(s, e)| e - s).collect();
    let mut stats = BTreeMap::new();
    stats.extend(sys.sim.stats().flatten());
    Ok(CcInvocationRun {
        spans: l.spans.clone(),
        latencies_ps,
        verified: l.verified,
        polls_per_call: l.polls as f64 / cfg.calls as f64,
        refused_stores: l.refused,
        stats,
        events: sys.sim.events_processed(),
        trace_hash: sys.sim.trace_hash(),
    })
}
