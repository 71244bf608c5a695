//! Device-side invocation over the coherent DC: the two-cache-line protocol
//! of the PIO paper (§5, Fig. 5a; CCKit §5.7), run by the simulator with
//! the checked `invocation` protocol tables (`protocols/invocation.toml`).
//!
//! ```text
//!  core (client driver)                 DC (invocation table)        device logic
//!  store req -> Q (held E/M)
//!  DMB; load G ──RLDD/RLDX──────────────► held, LCL_RDREQ(G) ───────► clinv Q
//!                          ◄──FEVX(Q)──── ◄───────── LCL_CLINV(Q) ───
//!                          ──HAKD(Q)────► write_mem, LCL_ACK(Q) ────► read Q, compute,
//!                                                                    write G, grant_e|grant_s G
//!  result in G ◄──PEMD|PSHA(G)───────────◄───────── LCL_GRANT_* ─────
//!  next call: Q and G swap roles
//! ```
//!
//! * **Client** ([`Client`], a [`ccsim_eci::cpu::Driver`]): round `r` writes the
//!   request into `Q` (word 1: its argument, then word 0: the call's
//!   sequence number), then loads `G` (one MSHR: the load issues after the
//!   stores, which is the barrier). When `G`'s word 0 is not the call's sequence
//!   number the device said "not ready yet": the client drops `G` (Shared,
//!   silently) and loads it again. Otherwise it asserts word 1 is the
//!   checksum of the full request line it wrote, and starts the next call
//!   with the lines swapped.
//! * **Device** ([`InvocationDevice`], a [`ccsim_eci::dc::Device`]): on the DC's
//!   notification of a held read of the expected signal line it fetches the
//!   request line with a clean-invalidate, reads it from memory, computes
//!   the result (`compute_ns` later), writes it into `G` and answers the
//!   held read Exclusive (E-return) or Shared (S-return). A held read of any
//!   other line is the client's registration (its first exclusive fetch of
//!   the request line) and is granted Exclusive at once. With a timeout,
//!   a result that is not ready `timeout_ns` after the read arrived is
//!   answered "not ready yet" (`nrdy`, a Shared grant of the unchanged
//!   line); the result goes out with the client's next read.
//! * With **S-return** the client holds `G` Shared and the roles do not
//!   swap (PIO §5: only the Exclusive return "leaves the cache in the state
//!   it started in, with the roles of A and B reversed"). The protocol's
//!   start state (the request line Exclusive, the signal line Invalid) must
//!   be restored each call: the client's request store misses on `Q`
//!   (taken by the device's clean-invalidate: a write-allocate `RLDX`), and
//!   before granting it the device invalidates the Shared `G` (`SINV`,
//!   answered `HAKI`), so that the next load of `G` misses and signals.
//!   Two more ECI round trips than E-return, the second inside the first
//!   (PIO §6.1: "further round trips over ECI to (unnecessarily) invalidate
//!   the line ... before sending the next message").
//! * **Fig. 5b** (`device_initiated`): the CPU's first read of `G` carries
//!   nothing; the device answers it with work item 1, and each later
//!   request is the CPU's response to the previous item (its checksum),
//!   which the device verifies and times.
//! * **CCKit's RPC** (`signal_store`): the CPU signals with a store to a
//!   reserved word of `G` (a load-exclusive, `RLDX`) instead of a load.
//! * **FastForward** ([`run_fastforward`], the CCPI baseline of PIO §5 and
//!   Fig. 4) runs on the plain `eci-dc` tables instead: the client stores a
//!   one-word request into R and spins on P; a server on the home socket
//!   spins on R with `clean`, frees R's slot (FastForward's dequeue stores
//!   NULL into it) and then answers into P, each under `lock`/`unlock`;
//!   the client frees P's slot the same way before its next request.
//!
//! **Application-interface hooks used** (both small and generic): the DC
//! calls a [`ccsim_eci::dc::Device`] after each message reaching the
//! application port and queues the app ops it returns; the CPU calls a
//! [`ccsim_eci::cpu::Driver`] after each completed op and appends the ops it
//! returns. The DC *holds* the CPU's read because the invocation table
//! keeps the line transient until the device's `grant_*`/`nrdy` op.
//!
//! ```
//! use ccsim_experiments::invocation::run::{run_invocation, InvocationConfig};
//! use ccsim_kernel::prelude::*;
//! use ccsim_platform::{EciOptions, Platform};
//! let enzian = Platform::load("enzian").unwrap();
//! let sys = enzian.coherent_system("invocation", &EciOptions::new(1, TraceMode::Hash)).unwrap();
//! let cfg = InvocationConfig { calls: 6, ..Default::default() };
//! let r = run_invocation(sys, &cfg).unwrap();
//! assert_eq!(r.latencies_ps.len(), 6 - cfg.warmup);
//! assert_eq!(r.not_ready, 0);
//! ```

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_kernel::prelude::*;

use ccsim_coherence::memory::LineStore;
use ccsim_coherence::util::ns_to_ps;
use ccsim_coherence::Line;
use ccsim_eci::cpu::{Completed, CpuOp};
use ccsim_eci::dc::AppOp;
use ccsim_eci::invocation::checksum;
use ccsim_eci::system::CoherentSystem;

/// One invocation run.
#[derive(Clone, Debug, PartialEq)]
pub struct InvocationConfig {
    /// Answer with Exclusive (E-return) instead of Shared (S-return).
    pub exclusive_return: bool,
    /// Calls made, including the warm-up calls.
    pub calls: usize,
    /// Leading calls left out of the latencies (the first registers the
    /// request line).
    pub warmup: usize,
    /// Device time from having the request to having the result (ns).
    pub compute_ns: f64,
    /// Answer "not ready yet" when the result is not ready this long after
    /// the client's read arrived (ns); `None`: never.
    pub timeout_ns: Option<f64>,
    /// Line A (the first call's signal line).
    pub line_a: u64,
    /// Signal with a store to a reserved word (15) of G, i.e. a
    /// load-exclusive (`RLDX`, CCKit §5.7), instead of a load (`RLDD`, PIO
    /// Fig. 5a); the result is then read by a load that hits.
    pub signal_store: bool,
    /// Fig. 5b (device-initiated) instead of Fig. 5a: the first read of G
    /// has nothing to send and the device answers it with work item 1;
    /// every later request line carries the CPU's response to the previous
    /// work item (the checksum of its line), which the device verifies. The
    /// latencies are then the device's: work item handed out (written into
    /// G and granted) to the CPU's response to it fetched.
    pub device_initiated: bool,
    /// Line B (the first call's request line). A and B must map to
    /// different DCUs (the held read of one keeps its DCU busy).
    pub line_b: u64,
    /// Application bytes carried by the calls (the request line filled with
    /// an argument, a computed result returned); `None`: the two-word
    /// request and the checksum result.
    pub payload: Option<Payload>,
    /// The client program's own core work around each call (none by
    /// default: the call is the bare exchange).
    pub client_work: ClientWork,
}

/// The client's own core work around each call's exchange: producing the
/// request before and while it is stored, consuming the result after it
/// arrives (a wrapper marshalling application data through the two lines,
/// as Timely's ECI wrapper does per batch line; PIO §6.4). Each part runs
/// on the core as [`CpuOp::Wait`]s, in program order with the call's
/// stores and load, so what overlaps the exchange is decided by the core
/// model, not here:
///
/// ```text
///  [before_request] store(first) [under_request] stores... [DMB] load(G) ─► [after_result] [DMB]
///                   └─ its line's fetch ─────────────────────────┘
/// ```
///
/// Without a write buffer a request store that misses holds the core's
/// MSHR until its line arrives, so `under_request_ns` runs after the fetch;
/// with one (`write_buffer_bytes > 0`) the store commits into the buffer
/// ("a write instruction commits once it hits the write buffer", CCKit
/// §5.2) and the work runs while the line is fetched. The call's span then
/// runs from its first op to the end of `after_result_ns` (and its DMB).
/// With client work the request fills the whole line, as a wrapper's
/// sixteen stores do (words 2 to 15 a pattern of the call's argument).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClientWork {
    /// Core time before the first request store (ns): producing its word.
    pub before_request_ns: f64,
    /// Core time after the first request store, before the others (ns):
    /// producing the rest of the request's words.
    pub under_request_ns: f64,
    /// Core time after the result load completed (ns): consuming the
    /// result, before the next call.
    pub after_result_ns: f64,
    /// A barrier (DMB, [`CpuOp::Fence`]) after the request stores, before
    /// the signal load, and one after `after_result_ns`: needed with a
    /// write buffer, whose stores a later load could otherwise pass.
    pub barriers: bool,
}

impl ClientWork {
    /// Whether the call has work after its result load.
    fn has_tail(&self) -> bool {
        self.after_result_ns > 0.0 || self.barriers
    }
}

/// A device-side computation on a whole request line: the result bytes the
/// device returns after the sequence number and the checksum (at most
/// [`RESULT_CAPACITY`] bytes).
#[derive(Clone, Copy)]
pub struct DeviceFunction(pub fn(&Line) -> Vec<u8>);

impl std::fmt::Debug for DeviceFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceFunction")
    }
}

impl PartialEq for DeviceFunction {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

/// Result bytes a [`DeviceFunction`] may return: the line less the
/// sequence number and the checksum.
pub const RESULT_CAPACITY: usize = ccsim_coherence::LINE_BYTES - 16;

/// The application bytes of the two-line invocation: call `i` stores all
/// sixteen words of `requests[i % requests.len()]` into its request line
/// (word 0 last, so the line is complete when the device reads it), and
/// the device answers with `function(request)` in bytes 16.. of the result
/// line, after the sequence number (word 0, the device's own count of the
/// requests it served: the argument fills the request line) and the
/// checksum (word 1). The client records every result line.
#[derive(Clone, Debug, PartialEq)]
pub struct Payload {
    /// The request lines, in call order (warm-up calls included).
    pub requests: Vec<Line>,
    /// What the device computes from a request line.
    pub function: DeviceFunction,
}

impl Default for InvocationConfig {
    fn default() -> Self {
        InvocationConfig {
            exclusive_return: true,
            calls: 100,
            warmup: 2,
            compute_ns: 0.0,
            timeout_ns: None,
            signal_store: false,
            device_initiated: false,
            line_a: 0,
            line_b: 1,
            payload: None,
            client_work: ClientWork::default(),
        }
    }
}

fn word(l: &Line, w: usize) -> u64 {
    u64::from_le_bytes(l[w * 8..w * 8 + 8].try_into().expect("8 bytes"))
}

/// What the client saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientLog {
    /// Latency of each measured call (ps): first request store issued to
    /// the result load completed.
    pub latencies_ps: Vec<Tick>,
    /// "Not ready yet" answers received.
    pub not_ready: usize,
    /// Calls whose result bytes were checked and right.
    pub verified: usize,
    /// Spin-loop loads that saw no new value (FastForward).
    pub polls: usize,
    /// (first request store issued, result load completed) of every call,
    /// warm-up calls included.
    pub spans: Vec<(Tick, Tick)>,
    /// Wrong results (each a description); empty in a correct run.
    pub errors: Vec<String>,
    /// The result line of every call, warm-up calls included (with a
    /// [`Payload`] only).
    pub results: Vec<Line>,
}

/// The client program on the core, as a [`ccsim_eci::cpu::Driver`].
pub struct Client {
    a: u64,
    b: u64,
    signal_store: bool,
    /// FastForward: fixed lines (no role swap) and a spin loop on G.
    spin: bool,
    /// S-return: fixed lines too (a Shared result leaves the roles as
    /// they were, PIO §5).
    fixed: bool,
    /// Fig. 5b: the requests are responses to the device's work items.
    device_initiated: bool,
    /// The last work item received (Fig. 5b).
    work: Line,
    calls: usize,
    warmup: usize,
    call: usize,
    /// Program length so far (index of the next op appended).
    len: usize,
    first_store: usize,
    last_store: usize,
    load: usize,
    started: Tick,
    request: Line,
    /// The application's request lines, if any.
    payload: Option<Vec<Line>>,
    /// The program's own work around each exchange.
    client_work: ClientWork,
    /// The last op of the running call's work after its result (its
    /// completion ends the call); `usize::MAX` when there is none.
    tail: usize,
    log: Rc<RefCell<ClientLog>>,
}

impl Client {
    /// A client on lines `a` and `b` with the call counts of `cfg`, before
    /// its first call; its records go to `log`.
    fn new(
        (a, b): (u64, u64),
        (signal_store, spin, device_initiated): (bool, bool, bool),
        cfg: &InvocationConfig,
        log: Rc<RefCell<ClientLog>>,
    ) -> Client {
        Client {
            a,
            b,
            signal_store,
            spin,
            fixed: spin || !cfg.exclusive_return,
            device_initiated,
            work: [0; ccsim_coherence::LINE_BYTES],
            calls: cfg.calls,
            warmup: cfg.warmup,
            call: 0,
            len: 0,
            first_store: 0,
            last_store: 0,
            load: 0,
            started: 0,
            request: [0; ccsim_coherence::LINE_BYTES],
            payload: cfg.payload.as_ref().map(|p| p.requests.clone()),
            client_work: cfg.client_work,
            tail: usize::MAX,
            log,
        }
    }

    fn lines(&self, call: usize) -> (u64, u64) {
        // (request Q, signal G): call 0 writes B and reads A; they swap
        // (FastForward and S-return keep them).
        if self.fixed || call % 2 == 0 {
            (self.b, self.a)
        } else {
            (self.a, self.b)
        }
    }

    fn call_ops(&mut self) -> Vec<CpuOp> {
        let (q, g) = self.lines(self.call);
        let seq = self.call as u64 + 1;
        // The argument first, the sequence number (the flag a FastForward
        // receiver polls for) last. FastForward sends a one-word message:
        // its request is the sequence number alone (a second store could
        // be split from the first by the receiver's poll, costing another
        // upgrade, which a real write buffer's merged stores avoid).
        let mut ops = Vec::new();
        // Fig. 5b: the first read waits for work with nothing to send.
        let stores = !(self.device_initiated && self.call == 0);
        if let Some(requests) = &self.payload {
            // The whole argument line, word 0 last.
            let line = &requests[self.call % requests.len()];
            ops.extend((1..16).chain([0]).map(|w| CpuOp::Store {
                line: q,
                word: w,
                value: word(line, usize::from(w)),
            }));
        } else if stores && !self.spin {
            let value = if self.device_initiated {
                checksum(&self.work)
            } else {
                seq.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            };
            ops.push(CpuOp::Store {
                line: q,
                word: 1,
                value,
            });
            if self.client_work != ClientWork::default() {
                // A program marshalling a line writes all of it: the
                // request it checks is then its own bytes, whether or not
                // the line was there when the stores entered the buffer.
                ops.extend((2..16).map(|w| CpuOp::Store {
                    line: q,
                    word: w,
                    value: value.rotate_left(u32::from(w)),
                }));
            }
        }
        if stores && self.payload.is_none() {
            ops.push(CpuOp::Store {
                line: q,
                word: 0,
                value: seq,
            });
        }
        if self.signal_store {
            ops.push(CpuOp::Store {
                line: g,
                word: 15,
                value: seq,
            });
        }
        self.add_request_work(&mut ops, q);
        ops.push(CpuOp::Load { line: g });
        // The call starts with its first op (its first store without
        // client work); the request is what its last store into Q saw.
        self.first_store = self.len;
        self.last_store = ops
            .iter()
            .rposition(|o| matches!(o, CpuOp::Store { line, .. } if *line == q))
            .map_or(usize::MAX, |k| self.len + k);
        self.load = self.len + ops.len() - 1;
        self.len += ops.len();
        ops
    }

    /// Places the client's request-side work ([`ClientWork`]) among the
    /// call's stores into `q`: before the first, right after it, and a
    /// barrier after the last (before the signal load).
    fn add_request_work(&self, ops: &mut Vec<CpuOp>, q: u64) {
        let w = self.client_work;
        let wait = |ns: f64| (ns > 0.0).then(|| CpuOp::Wait { ps: ns_to_ps(ns) });
        if let Some(first) = ops
            .iter()
            .position(|o| matches!(o, CpuOp::Store { line, .. } if *line == q))
        {
            if let Some(op) = wait(w.under_request_ns) {
                ops.insert(first + 1, op);
            }
            if let Some(op) = wait(w.before_request_ns) {
                ops.insert(first, op);
            }
        }
        if w.barriers {
            ops.push(CpuOp::Fence);
        }
    }

    /// The client's work after a call's result: `after_result_ns`, then a
    /// barrier; the call ends when the last of them completes.
    fn result_work(&mut self) -> Vec<CpuOp> {
        let w = self.client_work;
        let mut ops = Vec::new();
        if w.after_result_ns > 0.0 {
            ops.push(CpuOp::Wait {
                ps: ns_to_ps(w.after_result_ns),
            });
        }
        if w.barriers {
            ops.push(CpuOp::Fence);
        }
        self.tail = self.len + ops.len() - 1;
        self.len += ops.len();
        ops
    }

    fn on_done(&mut self, c: &Completed) -> Vec<CpuOp> {
        if c.op == self.first_store {
            self.started = c.issued;
        }
        if c.op == self.last_store {
            self.request = c.data;
        }
        if c.op == self.tail {
            self.tail = usize::MAX;
            return self.end_call(c.issued + c.latency_ps);
        }
        if c.op != self.load {
            return Vec::new();
        }
        let (_, g) = self.lines(self.call);
        let seq = self.call as u64 + 1;
        let mut log = self.log.borrow_mut();
        if word(&c.data, 0) != seq && self.spin {
            // FastForward: spin on the line (hits until the sender's write
            // invalidates it, then one miss fetches the new value).
            log.polls += 1;
            drop(log);
            self.load = self.len;
            self.len += 1;
            return vec![CpuOp::Load { line: g }];
        }
        if word(&c.data, 0) != seq {
            // Not ready yet: drop the Shared copy and read again.
            log.not_ready += 1;
            drop(log);
            self.load = self.len + 1;
            self.len += 2;
            return vec![CpuOp::Evict { line: g }, CpuOp::Load { line: g }];
        }
        let want = checksum(&self.request);
        if self.device_initiated {
            // A work item (its sequence number checked above); the device
            // verifies the response.
            self.work = c.data;
            log.verified += 1;
        } else if word(&c.data, 1) == want {
            log.verified += 1;
            if self.payload.is_some() {
                log.results.push(c.data);
            }
        } else {
            log.errors.push(format!(
                "call {}: result word 1 is {:#x}, the checksum of the request is {want:#x}",
                self.call,
                word(&c.data, 1)
            ));
        }
        drop(log);
        if self.client_work.has_tail() {
            return self.result_work();
        }
        self.end_call(c.issued + c.latency_ps)
    }

    /// Records the call that ended at `end` (ps) and starts the next.
    fn end_call(&mut self, end: Tick) -> Vec<CpuOp> {
        let mut log = self.log.borrow_mut();
        log.spans.push((self.started, end));
        if self.call >= self.warmup {
            log.latencies_ps.push(end - self.started);
        }
        drop(log);
        let (_, g) = self.lines(self.call);
        self.call += 1;
        let mut ops = Vec::new();
        if self.spin {
            // FastForward's dequeue (Giacomoni et al., PPoPP 2008): the
            // consumer stores NULL into the slot it took, the producer's
            // sign that the slot is free. It precedes the next call, whose
            // time starts at its request store.
            ops.push(CpuOp::Store {
                line: g,
                word: 0,
                value: 0,
            });
            self.len += 1;
        }
        if self.call < self.calls {
            ops.extend(self.call_ops());
        }
        ops
    }
}

/// The device logic, as a [`ccsim_eci::dc::Device`].
pub struct InvocationDevice {
    exclusive: bool,
    compute: Tick,
    timeout: Option<Tick>,
    /// The line the next call reads (G).
    signal: u64,
    /// The other line (Q).
    request: u64,
    /// When the held read of G arrived.
    read_at: Tick,
    /// A result answered "not ready yet": (ready at, bytes).
    pending: Option<(Tick, Line)>,
    /// Fig. 5b: the device hands out work items and checks the responses.
    device_initiated: bool,
    /// Work items handed out so far (Fig. 5b).
    work_seq: u64,
    /// The last work item and when it was handed out (Fig. 5b).
    work: (Tick, Line),
    warmup: usize,
    /// The application's function, if any, and the requests served so far
    /// (the sequence number of its results).
    function: Option<DeviceFunction>,
    served: u64,
    /// S-return: the CPU holds the last result line (G) Shared, so G must
    /// be invalidated before the next request line is granted.
    shared_out: bool,
    /// S-return: the CPU's fetch of the request line waits for that
    /// invalidation.
    grant_after_invalidate: Option<u64>,
    log: Rc<RefCell<ClientLog>>,
}

/// Work item `seq` of the device-initiated protocol: its number, a value,
/// and a pattern, so that the CPU's checksum depends on every byte.
fn work_item(seq: u64) -> Line {
    let mut l = ccsim_coherence::initial_line(seq ^ 0x5eed);
    l[..8].copy_from_slice(&seq.to_le_bytes());
    l
}

impl InvocationDevice {
    fn grant(&self, line: u64) -> AppOp {
        AppOp::new(if self.exclusive { "grant_e" } else { "grant_s" }, line)
    }

    /// Writes the result into G and answers; with E-return G and Q swap
    /// for the next call, with S-return they stay (the CPU keeps G Shared).
    fn answer(&mut self, ready: Tick, result: Line) -> Vec<AppOp> {
        let g = self.signal;
        if self.exclusive {
            std::mem::swap(&mut self.signal, &mut self.request);
        } else {
            self.shared_out = true;
        }
        vec![
            AppOp::new("write", g).with_data(result).at(ready),
            self.grant(g),
        ]
    }

    fn on_message(&mut self, now: Tick, msg: &str, line: u64, mem: &LineStore) -> Vec<AppOp> {
        match msg {
            "LCL_RDREQ" if line == self.signal => {
                self.read_at = now;
                if self.device_initiated && self.work_seq == 0 {
                    // Fig. 5b: the CPU waits for the first work item.
                    self.work_seq = 1;
                    let w = work_item(1);
                    self.work = (now, w);
                    return self.answer(now, w);
                }
                match self.pending.take() {
                    Some((ready, result)) => match self.timeout {
                        // Still not ready before this read would time out.
                        Some(t) if ready > now + t => {
                            self.pending = Some((ready, result));
                            vec![AppOp::new("nrdy", line).at(now + t)]
                        }
                        _ => self.answer(ready.max(now), result),
                    },
                    None => vec![AppOp::new("clinv", self.request)],
                }
            }
            // S-return: the CPU fetches its request line to write the next
            // request while it still holds the last result Shared. Its next
            // load of G must miss to signal, so G is invalidated first
            // (SINV, answered HAKI: the extra round trip of PIO §6.1, "to
            // (unnecessarily) invalidate the line ... before sending the
            // next message"), and only then is the request line granted.
            "LCL_RDREQ" if self.shared_out => {
                self.shared_out = false;
                self.grant_after_invalidate = Some(line);
                vec![AppOp::new("clinv", self.signal)]
            }
            "LCL_ACK" if line == self.signal => match self.grant_after_invalidate.take() {
                Some(q) => vec![AppOp::new("release", line), AppOp::new("grant_e", q)],
                None => Vec::new(),
            },
            // The client's exclusive fetch of its request line: its first
            // (registration), or with S-return every call's.
            "LCL_RDREQ" => vec![AppOp::new("grant_e", line)],
            "LCL_ACK" if line == self.request && self.device_initiated => {
                let rsp = mem.read(line);
                let (at, w) = self.work;
                let mut log = self.log.borrow_mut();
                if word(&rsp, 0) == self.work_seq + 1 && word(&rsp, 1) == checksum(&w) {
                    log.verified += 1;
                    let end = now;
                    log.spans.push((at, end));
                    if self.work_seq as usize > self.warmup {
                        log.latencies_ps.push(end - at);
                    }
                } else {
                    log.errors.push(format!(
                        "work item {}: the CPU's response line holds {:#x} {:#x}, expected {:#x} {:#x}",
                        self.work_seq,
                        word(&rsp, 0),
                        word(&rsp, 1),
                        self.work_seq + 1,
                        checksum(&w)
                    ));
                }
                drop(log);
                self.work_seq += 1;
                let w = work_item(self.work_seq);
                let ready = now + self.compute;
                self.work = (ready, w);
                let mut ops = vec![AppOp::new("read", line), AppOp::new("release", line)];
                ops.extend(self.answer(ready, w));
                ops
            }
            "LCL_ACK" if line == self.request => {
                let req = mem.read(line);
                let mut result = [0u8; ccsim_coherence::LINE_BYTES];
                self.served += 1;
                match self.function {
                    Some(DeviceFunction(f)) => {
                        result[..8].copy_from_slice(&self.served.to_le_bytes());
                        let out = f(&req);
                        result[16..16 + out.len()].copy_from_slice(&out);
                    }
                    None => result[..8].copy_from_slice(&req[..8]),
                }
                result[8..16].copy_from_slice(&checksum(&req).to_le_bytes());
                let ready = now + self.compute;
                let mut ops = vec![AppOp::new("read", line), AppOp::new("release", line)];
                match self.timeout {
                    Some(t) if ready > self.read_at + t => {
                        self.pending = Some((ready, result));
                        let at = (self.read_at + t).max(now);
                        ops.push(AppOp::new("nrdy", self.signal).at(at));
                    }
                    _ => ops.extend(self.answer(ready, result)),
                }
                ops
            }
            _ => Vec::new(),
        }
    }
}

/// Result of [`run_invocation`].
#[derive(Debug)]
pub struct InvocationRun {
    /// Latency of each measured call (ps).
    pub latencies_ps: Vec<Tick>,
    /// "Not ready yet" answers (two-line protocol) or spin loads that saw
    /// no new value (FastForward).
    pub not_ready: usize,
    /// Calls whose result bytes the client verified.
    pub verified: usize,
    /// (start, end) of every call, warm-up calls included.
    pub spans: Vec<(Tick, Tick)>,
    /// The run's statistics, flattened (`system.cpu.misses`, ...).
    pub stats: std::collections::BTreeMap<String, f64>,
    /// Simulated events.
    pub events: u64,
    /// Trace hash.
    pub trace_hash: String,
    /// The Chrome trace JSON, with a full trace.
    pub trace_json: Option<String>,
    /// Messages and notes as data, with a full trace.
    pub trace_events: Option<String>,
    /// The result line of every call, warm-up calls included (with a
    /// [`Payload`] only; empty otherwise).
    pub results: Vec<Line>,
}

/// Fails unless `sys` runs the invocation protocol and `calls` exceed
/// `warmup` (`what` names the run in the message).
pub(super) fn check_run(
    what: &str,
    sys: &CoherentSystem,
    calls: usize,
    warmup: usize,
) -> Result<(), String> {
    let protocol = sys.protocol();
    if protocol != "invocation" {
        return Err(format!(
            "{what}: the system runs {protocol}; the invocation runs on the invocation protocol"
        ));
    }
    if calls == 0 || warmup >= calls {
        return Err(format!(
            "{what}: calls ({calls}) must exceed warmup ({warmup})"
        ));
    }
    Ok(())
}

/// Runs `cfg.calls` invocations of the device's checksum function on `sys`
/// (as built, no program yet), whose agents run the `invocation` protocol
/// (system `invocation` of platforms/enzian.toml); fails with a report on
/// any protocol, data or result error.
pub fn run_invocation(
    mut sys: CoherentSystem,
    cfg: &InvocationConfig,
) -> Result<InvocationRun, String> {
    check_run("invocation", &sys, cfg.calls, cfg.warmup)?;
    if cfg.device_initiated && (cfg.signal_store || cfg.timeout_ns.is_some()) {
        return Err("invocation: the device-initiated protocol runs with a load signal and without 'not ready yet'".into());
    }
    if let Some(p) = &cfg.payload {
        if cfg.device_initiated || p.requests.is_empty() {
            return Err("invocation: a payload needs at least one request line and the CPU-initiated protocol".into());
        }
        if (p.function.0)(&p.requests[0]).len() > RESULT_CAPACITY {
            return Err(format!(
                "invocation: the device function returns more than the {RESULT_CAPACITY} result bytes a line holds"
            ));
        }
    }
    if cfg.signal_store && (!cfg.exclusive_return || cfg.timeout_ns.is_some()) {
        return Err("invocation: a store signal (load-exclusive) is answered Exclusive only, without 'not ready yet'".into());
    }
    if cfg.line_a % 2 == cfg.line_b % 2 {
        return Err(format!(
            "invocation: lines {} and {} are on the same DC slice; the held read of one would block the fetch of the other (use an even and an odd line)",
            cfg.line_a, cfg.line_b
        ));
    }
    if cfg.device_initiated && cfg.client_work != ClientWork::default() {
        return Err(
            "invocation: client work runs around the CPU-initiated protocol's calls".into(),
        );
    }
    let w = cfg.client_work;
    for (n, v) in [
        ("compute_ns", cfg.compute_ns),
        ("timeout_ns", cfg.timeout_ns.unwrap_or(0.0)),
        ("client_work.before_request_ns", w.before_request_ns),
        ("client_work.under_request_ns", w.under_request_ns),
        ("client_work.after_result_ns", w.after_result_ns),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!(
                "invocation.{n}: must be a non-negative number, got {v}"
            ));
        }
    }
    let log = Rc::new(RefCell::new(ClientLog::default()));
    let mut client = Client::new(
        (cfg.line_a, cfg.line_b),
        (cfg.signal_store, false, cfg.device_initiated),
        cfg,
        log.clone(),
    );
    let program = client.call_ops();
    let dlog = Rc::new(RefCell::new(ClientLog::default()));
    sys.set_programs(vec![program])?;
    sys.cpu_mut()
        .set_driver(Box::new(move |c: &Completed| client.on_done(c)));
    let mut device = InvocationDevice {
        exclusive: cfg.exclusive_return,
        compute: ns_to_ps(cfg.compute_ns),
        timeout: cfg.timeout_ns.map(ns_to_ps),
        signal: cfg.line_a,
        request: cfg.line_b,
        read_at: 0,
        pending: None,
        device_initiated: cfg.device_initiated,
        work_seq: 0,
        work: (0, [0; ccsim_coherence::LINE_BYTES]),
        warmup: cfg.warmup,
        function: cfg.payload.as_ref().map(|p| p.function),
        served: 0,
        shared_out: false,
        grant_after_invalidate: None,
        log: dlog.clone(),
    };
    sys.dc_mut()
        .set_device(Box::new(move |now, msg, line, mem| {
            device.on_message(now, msg, line, mem)
        }));
    sys.run()?;
    let log = log.borrow().clone();
    if let Some(e) = log.errors.first() {
        return Err(format!("invocation: wrong result: {e}"));
    }
    if cfg.device_initiated {
        let d = dlog.borrow().clone();
        if let Some(e) = d.errors.first() {
            return Err(format!(
                "invocation (device-initiated): wrong response: {e}"
            ));
        }
        // Every work item but the last is answered by the next call.
        if d.verified + 1 != cfg.calls || log.verified != cfg.calls {
            return Err(format!(
                "invocation (device-initiated): {} of {} work items answered, {} received",
                d.verified,
                cfg.calls - 1,
                log.verified
            ));
        }
        return Ok(InvocationRun::of(
            &sys,
            d.latencies_ps,
            log.not_ready,
            d.verified,
            d.spans,
        ));
    }
    verified_all("invocation", log.verified, cfg.calls)?;
    let mut run = InvocationRun::of(
        &sys,
        log.latencies_ps,
        log.not_ready,
        log.verified,
        log.spans,
    );
    run.results = log.results;
    Ok(run)
}

impl InvocationRun {
    /// The result of a finished run: the client's measurements and the
    /// simulation's statistics, event count and trace hash.
    fn of(
        sys: &CoherentSystem,
        latencies_ps: Vec<Tick>,
        not_ready: usize,
        verified: usize,
        spans: Vec<(Tick, Tick)>,
    ) -> InvocationRun {
        InvocationRun {
            latencies_ps,
            not_ready,
            verified,
            spans,
            stats: sys.sim.stats().flatten(),
            events: sys.sim.events_processed(),
            trace_hash: sys.sim.trace_hash().unwrap_or_default(),
            trace_json: sys.sim.trace_json(),
            trace_events: sys.sim.trace_events_json(),
            results: Vec::new(),
        }
    }
}

/// Fails unless every one of `calls` calls completed with a verified result.
fn verified_all(what: &str, verified: usize, calls: usize) -> Result<(), String> {
    if verified == calls {
        Ok(())
    } else {
        Err(format!(
            "{what}: {verified} of {calls} calls completed with a verified result"
        ))
    }
}

/// The FastForward server (PIO §5 "Baseline", Fig. 4) on the home socket,
/// as a [`ccsim_eci::dc::Device`] on the `eci-dc` tables: it spins on the
/// request line R with `clean` (a read by the home socket: the client's
/// Exclusive/Modified copy is downgraded to Shared and its data written
/// back, as a remote read of a dirty line does). When R holds the next
/// sequence number it dequeues it as FastForward does (Giacomoni et al.,
/// PPoPP 2008: the consumer stores NULL into the slot it took, which is
/// what tells the producer the slot is free): word 0 of R is cleared under
/// `lock` (invalidating the client's Shared copy) and `unlock`. Then it
/// enqueues the result: the checksum goes into the response line P under
/// `lock` (recalling or invalidating the client's copy) and `unlock`. The
/// enqueue is a release store (ARMv8-A orders stores only through a
/// barrier, PIO §5), so it waits for the dequeue's store: the port runs
/// the two one after the other.
struct FastForwardServer {
    r: u64,
    p: u64,
    seq: u64,
    calls: u64,
    /// What each awaited `LCL_ACK` completes, oldest first.
    awaiting: std::collections::VecDeque<FfStep>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum FfStep {
    Poll,
    /// The dequeue's store of NULL into R (lock, write, unlock).
    Dequeue,
    Lock,
    Unlock,
}

impl FastForwardServer {
    fn poll(&mut self) -> Vec<AppOp> {
        self.awaiting.push_back(FfStep::Poll);
        vec![AppOp::new("clean", self.r)]
    }

    fn on_message(&mut self, msg: &str, mem: &LineStore) -> Vec<AppOp> {
        if msg != "LCL_ACK" {
            return Vec::new();
        }
        match self.awaiting.pop_front() {
            Some(FfStep::Poll) => {
                let req = mem.read(self.r);
                if word(&req, 0) != self.seq + 1 {
                    return self.poll();
                }
                self.seq += 1;
                let mut result = [0u8; ccsim_coherence::LINE_BYTES];
                result[..8].copy_from_slice(&req[..8]);
                result[8..16].copy_from_slice(&checksum(&req).to_le_bytes());
                // The dequeue: R's slot (word 0) back to NULL.
                let mut freed = req;
                freed[..8].fill(0);
                self.awaiting.extend([
                    FfStep::Dequeue,
                    FfStep::Dequeue,
                    FfStep::Lock,
                    FfStep::Unlock,
                ]);
                vec![
                    AppOp::new("lock", self.r),
                    AppOp::new("write", self.r).with_data(freed),
                    AppOp::new("unlock", self.r),
                    AppOp::new("lock", self.p),
                    AppOp::new("write", self.p).with_data(result),
                    AppOp::new("unlock", self.p),
                ]
            }
            Some(FfStep::Unlock) if self.seq < self.calls => self.poll(),
            _ => Vec::new(),
        }
    }
}

/// Runs `cfg.calls` FastForward calls between the client (the CPU: store
/// the request into R, spin on P) and a server on the home socket, on
/// `sys` (as built, no program yet; the CCPI baseline is system `llc_ddr`:
/// the `ccpi` link and the ThunderX-1 home with its DDR, running
/// `eci-dc`). Uses `line_a` as R and `line_b` as P; `exclusive_return`,
/// `timeout_ns`, `compute_ns` and `signal_store` do not apply.
pub fn run_fastforward(
    mut sys: CoherentSystem,
    cfg: &InvocationConfig,
) -> Result<InvocationRun, String> {
    if cfg.calls == 0 || cfg.warmup >= cfg.calls {
        return Err(format!(
            "fastforward: calls ({}) must exceed warmup ({})",
            cfg.calls, cfg.warmup
        ));
    }
    if cfg.line_a == cfg.line_b {
        return Err("fastforward: the request and response lines must differ".into());
    }
    if cfg.client_work != ClientWork::default() {
        return Err("fastforward: client work runs around the two-line invocation's calls".into());
    }
    let log = Rc::new(RefCell::new(ClientLog::default()));
    // lines(call) = (b, a) with spin: request R = line_a, signal P = line_b.
    let mut client = Client::new(
        (cfg.line_b, cfg.line_a),
        (false, true, false),
        cfg,
        log.clone(),
    );
    let program = client.call_ops();
    let mut server = FastForwardServer {
        r: cfg.line_a,
        p: cfg.line_b,
        seq: 0,
        calls: cfg.calls as u64,
        awaiting: Default::default(),
    };
    let first = server.poll();
    sys.set_programs(vec![program])?;
    sys.dc_mut().push_app_ops(first);
    sys.cpu_mut()
        .set_driver(Box::new(move |c: &Completed| client.on_done(c)));
    sys.dc_mut()
        .set_device(Box::new(move |_, msg, _, mem| server.on_message(msg, mem)));
    sys.run()?;
    let log = log.borrow().clone();
    if let Some(e) = log.errors.first() {
        return Err(format!("fastforward: wrong result: {e}"));
    }
    verified_all("fastforward", log.verified, cfg.calls)?;
    Ok(InvocationRun::of(
        &sys,
        log.latencies_ps,
        log.polls,
        log.verified,
        log.spans,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccsim_coherence::Tables;
    use ccsim_eci::invocation::invocation_tables;
    use ccsim_eci::system::{CoherentParams, HomeMemory};
    use std::sync::Arc;

    /// The default LLC and DC with BRAM, running `protocol`, nothing to do yet.
    fn system(protocol: Arc<Tables>) -> CoherentSystem {
        let p = CoherentParams {
            tables: Some(protocol),
            ..Default::default()
        };
        CoherentSystem::build_with(&p, HomeMemory::Bram, vec![], vec![], 3, TraceMode::Hash)
            .unwrap()
    }

    fn invocation() -> CoherentSystem {
        system(invocation_tables().unwrap())
    }

    fn eci_dc() -> CoherentSystem {
        system(Tables::eci_dc().unwrap())
    }

    /// A device function for the payload tests: the request's bytes
    /// reversed, then their sum.
    fn reverse_and_sum(line: &Line) -> Vec<u8> {
        let mut out: Vec<u8> = line.iter().rev().take(64).copied().collect();
        let sum: u64 = line.iter().map(|&b| u64::from(b)).sum();
        out.extend(sum.to_le_bytes());
        out
    }

    #[test]
    fn a_payload_carries_whole_request_lines_and_the_devices_results() {
        let requests: Vec<Line> = (0..4)
            .map(|i| ccsim_coherence::initial_line(100 + i))
            .collect();
        let cfg = InvocationConfig {
            calls: 6,
            payload: Some(Payload {
                requests: requests.clone(),
                function: DeviceFunction(reverse_and_sum),
            }),
            ..Default::default()
        };
        let r = run_invocation(invocation(), &cfg).unwrap();
        assert_eq!(r.verified, 6);
        assert_eq!(r.results.len(), 6);
        for (i, res) in r.results.iter().enumerate() {
            let req = &requests[i % 4];
            assert_eq!(word(res, 0), i as u64 + 1, "the device's sequence number");
            assert_eq!(
                word(res, 1),
                checksum(req),
                "the checksum of the whole line"
            );
            assert_eq!(res[16..16 + 72].to_vec(), reverse_and_sum(req));
        }
        // Sixteen stores a call, against two without a payload.
        let plain = run_invocation(
            invocation(),
            &InvocationConfig {
                calls: 6,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(r.latencies_ps.iter().sum::<Tick>() > plain.latencies_ps.iter().sum::<Tick>());
    }

    #[test]
    fn a_device_result_larger_than_a_line_is_refused() {
        fn too_big(_: &Line) -> Vec<u8> {
            vec![0; RESULT_CAPACITY + 1]
        }
        let cfg = InvocationConfig {
            calls: 3,
            payload: Some(Payload {
                requests: vec![[0; ccsim_coherence::LINE_BYTES]],
                function: DeviceFunction(too_big),
            }),
            ..Default::default()
        };
        let e = run_invocation(invocation(), &cfg).unwrap_err();
        assert!(e.contains("112 result bytes"), "{e}");
    }

    #[test]
    fn results_are_the_devices_checksums_and_roles_swap() {
        let cfg = InvocationConfig {
            calls: 5,
            ..Default::default()
        };
        let r = run_invocation(invocation(), &cfg).unwrap();
        assert_eq!(r.verified, 5);
        // One signal read per call plus the first call's registration.
        assert_eq!(r.stats["system.cpu.misses"], 6.0);
        // Four calls' clean-invalidates each read the request the CPU wrote.
        assert!(r.stats["system.dc.events"] > 5.0 * 4.0);
    }

    #[test]
    fn s_return_upgrades_and_not_ready_rereads() {
        let cfg = InvocationConfig {
            calls: 4,
            exclusive_return: false,
            compute_ns: 1000.0,
            timeout_ns: Some(300.0),
            ..Default::default()
        };
        let r = run_invocation(invocation(), &cfg).unwrap();
        assert_eq!(r.verified, 4);
        assert!(r.not_ready >= 4, "{}", r.not_ready);
    }

    #[test]
    fn fastforward_round_trips_verified_results() {
        let cfg = InvocationConfig {
            calls: 5,
            ..Default::default()
        };
        let r = run_fastforward(eci_dc(), &cfg).unwrap();
        assert_eq!(r.verified, 5);
        assert_eq!(r.latencies_ps.len(), 3);
        // The client spins on P until the server's write reaches it.
        assert!(r.not_ready > 0);
        let e = run_fastforward(eci_dc(), &InvocationConfig { line_b: 0, ..cfg }).unwrap_err();
        assert!(e.contains("must differ"), "{e}");
    }

    #[test]
    fn device_initiated_hands_out_work_and_checks_responses() {
        for exclusive_return in [true, false] {
            let cfg = InvocationConfig {
                calls: 6,
                device_initiated: true,
                exclusive_return,
                ..Default::default()
            };
            let r = run_invocation(invocation(), &cfg).unwrap();
            // Five responses verified by the device; two are warm-up.
            assert_eq!(r.verified, 5);
            assert_eq!(r.latencies_ps.len(), 3);
        }
    }

    /// Mean call latency (ns) of S-return calls (fixed lines: every
    /// request store misses) on Enzian's invocation system with the core's
    /// write buffer at `wb_bytes`, and the run.
    fn s_return_calls(wb_bytes: i64, client_work: ClientWork) -> (f64, InvocationRun) {
        let enzian = ccsim_platform::Platform::load("enzian").unwrap();
        let opts = ccsim_platform::EciOptions::new(1, TraceMode::Hash).set(
            "cpu",
            "write_buffer_bytes",
            ParamValue::Int(wb_bytes),
            "test",
        );
        let sys = enzian.coherent_system("invocation", &opts).unwrap();
        let cfg = InvocationConfig {
            calls: 12,
            exclusive_return: false,
            client_work,
            ..Default::default()
        };
        let r = run_invocation(sys, &cfg).unwrap();
        let n = r.latencies_ps.len() as f64;
        (r.latencies_ps.iter().sum::<Tick>() as f64 / n / 1000.0, r)
    }

    #[test]
    fn client_work_overlaps_the_request_lines_fetch_only_under_a_write_buffer() {
        let barriers = ClientWork {
            barriers: true,
            ..Default::default()
        };
        let work = ClientWork {
            before_request_ns: 10.0,
            under_request_ns: 200.0,
            after_result_ns: 100.0,
            barriers: true,
        };
        // With the buffer the first request store commits at once and the
        // 200 ns after it run while its line is fetched (the no-swap
        // exchange's RLDX with a SINV inside, ~850 ns): a call grows by
        // the 10 ns before the store and the 100 ns after the result.
        let (bare, r) = s_return_calls(3072, barriers);
        assert_eq!(r.verified, 12);
        let (worked, _) = s_return_calls(3072, work);
        assert!(
            (worked - bare - 110.0).abs() < 5.0,
            "{worked} - {bare} ns with a write buffer"
        );
        // Without it the store holds the core until the line arrives: all
        // 310 ns add up.
        let (bare, _) = s_return_calls(0, barriers);
        let (worked, _) = s_return_calls(0, work);
        assert!(
            (worked - bare - 310.0).abs() < 5.0,
            "{worked} - {bare} ns without a write buffer"
        );
    }

    #[test]
    fn without_the_barrier_the_signal_load_passes_the_request_stores() {
        // With the DMB the signal load waits for the request line and
        // misses once. Without it the load passes the buffered request
        // stores: its read is in flight when the device invalidates the
        // line it reads (the LLC in IS_D_I), and the result, granted after
        // that, answers the load once and is not kept (1,239 ns a call
        // against 1,637 ns with the DMB; one "not ready" read in the run).
        // Before the CPU used overtaken data once it dropped the result and
        // read again, keeping the line Shared, so the next call's signal
        // load hit the last result and read "not ready": 11 of them, 1,671
        // ns a call.
        let work = |barriers| ClientWork {
            under_request_ns: 50.0,
            barriers,
            ..Default::default()
        };
        let (fenced_ns, fenced) = s_return_calls(3072, work(true));
        assert_eq!((fenced.verified, fenced.not_ready), (12, 0));
        let (unfenced_ns, unfenced) = s_return_calls(3072, work(false));
        assert_eq!((unfenced.verified, unfenced.not_ready), (12, 1));
        assert!(
            (fenced_ns - 1637.2).abs() < 0.1 && (unfenced_ns - 1238.8).abs() < 0.1,
            "{fenced_ns} and {unfenced_ns} ns a call"
        );
        // Client work is the CPU-initiated protocol's.
        let e = run_invocation(
            invocation(),
            &InvocationConfig {
                device_initiated: true,
                client_work: work(true),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.contains("client work"), "{e}");
    }

    #[test]
    fn same_slice_lines_are_refused() {
        let cfg = InvocationConfig {
            line_b: 2,
            ..Default::default()
        };
        let e = run_invocation(invocation(), &cfg).unwrap_err();
        assert!(e.contains("same DC slice"), "{e}");
    }

    #[test]
    fn checksum_sees_every_byte() {
        let mut l = [0u8; ccsim_coherence::LINE_BYTES];
        let c0 = checksum(&l);
        l[127] = 1;
        assert_ne!(c0, checksum(&l));
    }
}
