//! Multi-line invocations whose lines overlap: the pipelining the PIO paper
//! leaves unexplored (§6.2: "the transfer of multiple cache lines over ECI
//! might be improved by clever pipelining and locating the lines in
//! physical memory so as to exploit parallelism in the directory
//! controllers, but we do not explore that"). A **prediction**, not a
//! measurement of the paper: its Fig. 7 measures the serial exchange of
//! [`super::run::run_invocation`], one line at a time.
//!
//! An `n`-line call moves `n` request lines to the device and `n` response
//! lines back, on two sets of device-homed lines that swap roles each call
//! (as lines A and B do in the one-line protocol):
//!
//! ```text
//!  core (mshrs misses in flight)            DC (slices x DCUs, app window)    device
//!  16 stores into each request line R0..Rn-1 (held E: last call's responses)
//!  DMB
//!  load S0 ──RLDD──────────────────────────► held, LCL_RDREQ(S0) ────────────► clinv R0..Rn-1
//!                        ◄═FEVX(Rj)═ / ═HAKD(Rj)═► one DCU each, in parallel    (one per DC clock)
//!                                                  LCL_ACK(Rj) ──────────────► read Rj; all n in:
//!  response 0 in S0 ◄──PEMD(S0)────────────◄──────── write S0, grant_e ◄──────  compute S0..Sn-1
//!  load S1..Sn-1 ═══RLDD (up to mshrs)═════► LCL_RDREQ(Sj) ──────────────────► write Sj, grant_e
//!  every response byte checked; next call: R and S swap
//! ```
//!
//! * **Placement** ([`payload_lines`]): the two signal lines are lines 0
//!   (even slice) and 1 (odd slice); every other line of both sets sits on a
//!   DCU that neither signal line uses, because a DCU is serial and blocking
//!   and the held read of the signal line keeps its DCU until the device
//!   answers (PIO §5: "careful placement of A and B in the physical address
//!   space"). Consecutive lines alternate slices and walk the DCUs, as the
//!   ThunderX-1's TAD mapping spreads consecutive lines (PIO §5).
//! * **The core** keeps up to `mshrs` misses outstanding and orders its
//!   request stores before the signal load with a barrier (DMB, PIO §5: the
//!   write buffer must drain before the load that signals).
//! * **The device** fetches all request lines at once through the DC's
//!   application port (one op per DC clock, as many in flight as the DC
//!   has DCUs) and answers each response line's read as soon as the results
//!   exist: response line `j` is request line `j` XOR a checksum of the whole
//!   request, so every response byte depends on every request byte.
//! * **Records**: the latency of each call (first request store issued to
//!   the last response line loaded), the bytes checked, and the most lines
//!   in flight at once on each side (the core's misses, the DC's fetches),
//!   counted from the intervals the run saw.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use ccsim_coherence::memory::LineStore;
use ccsim_coherence::util::ns_to_ps;
use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_eci::cpu::{Completed, CpuOp};
use ccsim_eci::dc::{AppOp, DcEvent, DirectoryController};
use ccsim_eci::invocation::checksum;
use ccsim_eci::system::CoherentSystem;
use ccsim_kernel::prelude::*;

/// One pipelined payload run.
#[derive(Clone, Debug, PartialEq)]
pub struct PayloadConfig {
    /// Lines per request (and per response).
    pub lines: usize,
    /// Calls made, including the warm-up calls.
    pub calls: usize,
    /// Leading calls left out of the latencies (the first registers the
    /// request lines).
    pub warmup: usize,
    /// Device time from having the whole request to having the results (ns).
    pub compute_ns: f64,
}

impl Default for PayloadConfig {
    fn default() -> Self {
        PayloadConfig {
            lines: 4,
            calls: 6,
            warmup: 2,
            compute_ns: 0.0,
        }
    }
}

/// Result of [`run_pipelined_invocation`].
#[derive(Debug)]
pub struct PayloadRun {
    /// Latency of each measured call (ps).
    pub latencies_ps: Vec<Tick>,
    /// Calls whose every response byte the client checked and found right.
    pub verified: usize,
    /// Response bytes checked, over all calls.
    pub bytes_checked: u64,
    /// The most response-line loads the core had in flight at once.
    pub max_loads_in_flight: usize,
    /// The most request-line fetches (clean-invalidates) the DC had in
    /// flight at once.
    pub max_fetches_in_flight: usize,
    /// The run's statistics, flattened.
    pub stats: std::collections::BTreeMap<String, f64>,
    /// Simulated events.
    pub events: u64,
    /// Trace hash.
    pub trace_hash: String,
    /// The Chrome trace JSON, with a full trace.
    pub trace_json: Option<String>,
    /// Messages and notes as data, with a full trace.
    pub trace_events: Option<String>,
}

/// The two line sets of an `n`-line payload on `dc`: set 0 starts with line
/// 0, set 1 with line 1 (the signal lines, one per slice); their other
/// lines are the next lines in address order on DCUs neither signal line
/// uses, dealt to the two sets a pair at a time (an even and an odd line),
/// so that each set spreads over both slices.
pub fn payload_lines(dc: &DirectoryController, n: usize) -> Result<[Vec<u64>; 2], String> {
    if n == 0 {
        return Err("payload: a call moves at least one line".into());
    }
    let signal_dcus = [dc.dcu_of_line(0), dc.dcu_of_line(1)];
    if dc.dcus() <= 2 {
        return Err(format!(
            "payload: the DC has {} DCUs; the payload lines need DCUs the two signal lines do not hold",
            dc.dcus()
        ));
    }
    let mut free = Vec::with_capacity(2 * (n - 1));
    let mut line = 2u64;
    while free.len() < 2 * (n - 1) {
        if !signal_dcus.contains(&dc.dcu_of_line(line)) {
            free.push(line);
        }
        line += 1;
    }
    let mut sets = [vec![0u64], vec![1u64]];
    // Each pair of free lines (an even and an odd one) goes one to each
    // set, the first one to set 0 and set 1 in turn.
    for (i, pair) in free.chunks(2).enumerate() {
        sets[i % 2].push(pair[0]);
        sets[1 - i % 2].push(pair[1]);
    }
    Ok(sets)
}

/// Word `w` of request line `j` of call `call`: distinct in every byte
/// position of every call.
fn request_word(call: usize, j: usize, w: usize) -> u64 {
    (call as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ ((j * 16 + w) as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

fn word(l: &Line, w: usize) -> u64 {
    u64::from_le_bytes(l[w * 8..w * 8 + 8].try_into().expect("8 bytes"))
}

/// The device's function: response line `j` is request line `j` with each
/// word XORed with a rotation of the checksum of the whole request.
pub fn respond(request: &[Line]) -> Vec<Line> {
    let total = request.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, l| {
        h.rotate_left(7) ^ checksum(l)
    });
    request
        .iter()
        .map(|l| {
            let mut r = [0u8; LINE_BYTES];
            for w in 0..LINE_BYTES / 8 {
                let v = word(l, w) ^ total.rotate_left(w as u32);
                r[w * 8..w * 8 + 8].copy_from_slice(&v.to_le_bytes());
            }
            r
        })
        .collect()
}

/// The most intervals of `spans` that overlap at one instant.
pub fn max_overlap(spans: &[(Tick, Tick)]) -> usize {
    // Ends sort before starts at the same tick: touching is not overlapping.
    let mut edges: Vec<(Tick, i32)> = spans.iter().flat_map(|&(s, e)| [(s, 1), (e, -1)]).collect();
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

#[derive(Default, Debug)]
struct Log {
    latencies_ps: Vec<Tick>,
    verified: usize,
    bytes_checked: u64,
    loads: Vec<(Tick, Tick)>,
    errors: Vec<String>,
}

/// The client program on the core.
struct Client {
    sets: [Vec<u64>; 2],
    calls: usize,
    warmup: usize,
    call: usize,
    len: usize,
    first_store: usize,
    signal_load: usize,
    /// Op index of the load of response line 1 (`usize::MAX`: not issued).
    load_base: usize,
    got: Vec<Option<Line>>,
    started: Tick,
    log: Rc<RefCell<Log>>,
}

impl Client {
    fn n(&self) -> usize {
        self.sets[0].len()
    }

    /// (request set, response set) of `call`: call 0 writes set 1 and
    /// reads set 0, then they swap.
    fn roles(&self, call: usize) -> (&[u64], &[u64]) {
        (&self.sets[1 - call % 2], &self.sets[call % 2])
    }

    fn call_ops(&mut self) -> Vec<CpuOp> {
        let (req, resp) = self.roles(self.call);
        let mut ops = Vec::with_capacity(req.len() * 16 + 2);
        for (j, &line) in req.iter().enumerate() {
            for w in 0..LINE_BYTES / 8 {
                ops.push(CpuOp::Store {
                    line,
                    word: w as u8,
                    value: request_word(self.call, j, w),
                });
            }
        }
        // DMB: the request stores drain before the signal load (PIO §5).
        ops.push(CpuOp::Fence);
        ops.push(CpuOp::Load { line: resp[0] });
        self.first_store = self.len;
        self.signal_load = self.len + ops.len() - 1;
        self.load_base = usize::MAX;
        self.len += ops.len();
        self.got = vec![None; self.n()];
        ops
    }

    fn on_done(&mut self, c: &Completed) -> Vec<CpuOp> {
        if c.op == self.first_store {
            self.started = c.issued;
        }
        let n = self.n();
        let j = if c.op == self.signal_load {
            0
        } else if self.load_base != usize::MAX
            && (self.load_base..self.load_base + n - 1).contains(&c.op)
        {
            c.op - self.load_base + 1
        } else {
            return Vec::new();
        };
        let done = c.issued + c.latency_ps;
        self.log.borrow_mut().loads.push((c.issued, done));
        self.got[j] = Some(c.data);
        let mut ops = Vec::new();
        if j == 0 && n > 1 {
            // The signal came back: the results exist; load the rest,
            // mshrs at a time.
            let (_, resp) = self.roles(self.call);
            ops = resp[1..].iter().map(|&line| CpuOp::Load { line }).collect();
            self.load_base = self.len;
            self.len += ops.len();
        }
        if self.got.iter().any(Option::is_none) {
            return ops;
        }
        self.finish(done)
    }

    /// Checks every response byte against the request, records the call
    /// and starts the next.
    fn finish(&mut self, done: Tick) -> Vec<CpuOp> {
        let n = self.n();
        let request: Vec<Line> = (0..n)
            .map(|j| {
                let mut l = [0u8; LINE_BYTES];
                for w in 0..LINE_BYTES / 8 {
                    l[w * 8..w * 8 + 8]
                        .copy_from_slice(&request_word(self.call, j, w).to_le_bytes());
                }
                l
            })
            .collect();
        let want = respond(&request);
        let mut log = self.log.borrow_mut();
        let bad = (0..n).find(|&j| self.got[j].as_ref() != Some(&want[j]));
        match bad {
            None => {
                log.verified += 1;
                log.bytes_checked += (n * LINE_BYTES) as u64;
            }
            Some(j) => log.errors.push(format!(
                "call {}: response line {j} differs from the device's function of the request",
                self.call
            )),
        }
        if self.call >= self.warmup {
            log.latencies_ps.push(done - self.started);
        }
        drop(log);
        self.call += 1;
        if self.call < self.calls {
            self.call_ops()
        } else {
            Vec::new()
        }
    }
}

/// The device logic behind the DC's application port.
struct Device {
    sets: [Vec<u64>; 2],
    /// (set, index) of every line of both sets.
    index: HashMap<u64, (usize, usize)>,
    compute: Tick,
    call: usize,
    fetched: Vec<Option<Line>>,
    results: Option<Vec<Line>>,
    /// Response lines whose reads came before the results.
    waiting: Vec<usize>,
    /// Response lines answered this call.
    answered: usize,
}

impl Device {
    fn n(&self) -> usize {
        self.sets[0].len()
    }

    fn answer(&mut self, j: usize, at: Tick) -> Vec<AppOp> {
        let line = self.sets[self.call % 2][j];
        let data = self.results.as_ref().expect("results")[j];
        self.answered += 1;
        let ops = vec![
            AppOp::new("write", line).with_data(data).at(at),
            AppOp::new("grant_e", line),
        ];
        if self.answered == self.n() {
            // Every response line is out: the next call's request set is
            // this call's response set.
            self.call += 1;
            self.results = None;
            self.answered = 0;
            self.fetched = vec![None; self.n()];
        }
        ops
    }

    fn on_message(&mut self, now: Tick, msg: &str, line: u64, mem: &LineStore) -> Vec<AppOp> {
        let (req_set, resp_set) = (1 - self.call % 2, self.call % 2);
        let at = self.index.get(&line).copied();
        match (msg, at) {
            // The signal: fetch the whole request at once.
            ("LCL_RDREQ", Some((s, 0))) if s == resp_set && self.results.is_none() => self.sets
                [req_set]
                .iter()
                .map(|&l| AppOp::new("clinv", l))
                .collect(),
            ("LCL_RDREQ", Some((s, j))) if s == resp_set && j > 0 => {
                if self.results.is_some() {
                    self.answer(j, now)
                } else {
                    self.waiting.push(j);
                    Vec::new()
                }
            }
            // Any other read is the core's first exclusive fetch of a
            // request line: granted at once.
            ("LCL_RDREQ", _) => vec![AppOp::new("grant_e", line)],
            ("LCL_ACK", Some((s, j))) if s == req_set => {
                self.fetched[j] = Some(mem.read(line));
                let mut ops = vec![AppOp::new("read", line), AppOp::new("release", line)];
                if self.fetched.iter().all(Option::is_some) {
                    let request: Vec<Line> = self.fetched.iter().map(|l| l.expect("in")).collect();
                    self.results = Some(respond(&request));
                    let ready = now + self.compute;
                    ops.extend(self.answer(0, ready));
                    for j in std::mem::take(&mut self.waiting) {
                        ops.extend(self.answer(j, ready));
                    }
                }
                ops
            }
            _ => Vec::new(),
        }
    }
}

/// Runs `cfg.calls` pipelined `cfg.lines`-line invocations on `sys` (as
/// built, no program yet; its agents run the `invocation` protocol and its
/// core should allow more than one miss in flight); fails on any protocol,
/// data or result error.
pub fn run_pipelined_invocation(
    mut sys: CoherentSystem,
    cfg: &PayloadConfig,
) -> Result<PayloadRun, String> {
    super::run::check_run("payload", &sys, cfg.calls, cfg.warmup)?;
    if !(cfg.compute_ns.is_finite() && cfg.compute_ns >= 0.0) {
        return Err(format!(
            "payload.compute_ns: must be a non-negative number, got {}",
            cfg.compute_ns
        ));
    }
    let sets = payload_lines(sys.dc(), cfg.lines)?;
    let log = Rc::new(RefCell::new(Log::default()));
    let mut client = Client {
        sets: sets.clone(),
        calls: cfg.calls,
        warmup: cfg.warmup,
        call: 0,
        len: 0,
        first_store: 0,
        signal_load: 0,
        load_base: usize::MAX,
        got: Vec::new(),
        started: 0,
        log: log.clone(),
    };
    let program = client.call_ops();
    sys.set_programs(vec![program])?;
    sys.cpu_mut()
        .set_driver(Box::new(move |c: &Completed| client.on_done(c)));
    let index = sets
        .iter()
        .enumerate()
        .flat_map(|(s, v)| v.iter().enumerate().map(move |(j, &l)| (l, (s, j))))
        .collect();
    let mut device = Device {
        sets,
        index,
        compute: ns_to_ps(cfg.compute_ns),
        call: 0,
        fetched: vec![None; cfg.lines],
        results: None,
        waiting: Vec::new(),
        answered: 0,
    };
    let fetches = Rc::new(RefCell::new(Vec::new()));
    let seen = fetches.clone();
    let dc = sys.dc_mut();
    // The application keeps as many ops in flight as the DC has DCUs.
    let window = dc.dcus();
    dc.set_app_window(window);
    dc.set_device(Box::new(move |now, msg, line, mem| {
        device.on_message(now, msg, line, mem)
    }));
    dc.set_observer(Box::new(move |now, e| {
        if let DcEvent::AppDone {
            event, latency_ps, ..
        } = e
        {
            if event == "clinv" {
                seen.borrow_mut().push((now - latency_ps, now));
            }
        }
    }));
    sys.run()?;
    let log = std::mem::take(&mut *log.borrow_mut());
    if let Some(e) = log.errors.first() {
        return Err(format!("payload: wrong result: {e}"));
    }
    if log.verified != cfg.calls {
        return Err(format!(
            "payload: {} of {} calls completed with every response byte right",
            log.verified, cfg.calls
        ));
    }
    let max_fetches_in_flight = max_overlap(&fetches.borrow());
    Ok(PayloadRun {
        latencies_ps: log.latencies_ps,
        verified: log.verified,
        bytes_checked: log.bytes_checked,
        max_loads_in_flight: max_overlap(&log.loads),
        max_fetches_in_flight,
        stats: sys.sim.stats().flatten(),
        events: sys.sim.events_processed(),
        trace_hash: sys.sim.trace_hash().unwrap_or_default(),
        trace_json: sys.sim.trace_json(),
        trace_events: sys.sim.trace_events_json(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invocation::run::{run_invocation, InvocationConfig};
    use ccsim_platform::{EciOptions, Platform};

    /// The Enzian `invocation` system; with `overlap`, the core of
    /// `thunderx_cpu` (misses in flight, write buffer).
    fn system(overlap: bool) -> CoherentSystem {
        let enzian = Platform::load("enzian").unwrap();
        let mut opts = EciOptions::new(1, TraceMode::Hash);
        if overlap {
            let core = enzian.component("thunderx_cpu").unwrap();
            for key in ["mshrs", "write_buffer_bytes"] {
                let v = ParamValue::Int(core.params.int(key));
                opts = opts.set("cpu", key, v, "test: the ThunderX-1 core");
            }
        }
        enzian.coherent_system("invocation", &opts).unwrap()
    }

    #[test]
    fn lines_avoid_the_signal_lines_dcus_and_alternate_slices() {
        let sys = system(false);
        let dc = sys.dc();
        let sets = payload_lines(dc, 64).unwrap();
        assert_eq!((sets[0][0], sets[1][0]), (0, 1));
        let signal = [dc.dcu_of_line(0), dc.dcu_of_line(1)];
        let rest: Vec<u64> = sets.iter().flat_map(|s| s[1..].to_vec()).collect();
        assert_eq!(rest.len(), 126);
        assert!(rest.iter().all(|&l| !signal.contains(&dc.dcu_of_line(l))));
        // Both slices, and many DCUs, serve a set.
        let dcus: std::collections::BTreeSet<usize> =
            sets[0].iter().map(|&l| dc.dcu_of_line(l)).collect();
        assert!(dcus.len() >= 30, "{}", dcus.len());
        assert!(sets[0].iter().any(|l| l % 2 == 1) && sets[0].iter().any(|l| l % 2 == 0));
        assert!(payload_lines(dc, 0).is_err());
    }

    #[test]
    fn every_response_byte_arrives_checked_and_the_lines_overlap() {
        let cfg = PayloadConfig {
            lines: 32,
            calls: 5,
            ..Default::default()
        };
        let r = run_pipelined_invocation(system(true), &cfg).unwrap();
        assert_eq!(r.verified, 5);
        assert_eq!(r.bytes_checked, 5 * 32 * 128);
        // The DC fetches many request lines at once, the core loads up to
        // its mshrs (8) response lines at once.
        assert!(r.max_fetches_in_flight >= 16, "{}", r.max_fetches_in_flight);
        assert_eq!(r.max_loads_in_flight, 8);
        // Far below 32 serial exchanges (~890 ns each).
        let lat = r.latencies_ps[0] as f64 / 1000.0;
        assert!(lat < 32.0 * 890.0 / 4.0, "{lat}");
    }

    #[test]
    fn one_core_miss_at_a_time_loads_one_line_at_a_time() {
        let cfg = PayloadConfig {
            lines: 8,
            calls: 4,
            ..Default::default()
        };
        let r = run_pipelined_invocation(system(false), &cfg).unwrap();
        assert_eq!(r.verified, 4);
        assert_eq!(r.max_loads_in_flight, 1);
        // The DC still fetches the request lines together.
        assert!(r.max_fetches_in_flight > 1);
    }

    #[test]
    fn the_serial_exchange_keeps_one_line_in_flight() {
        // The paper's measured exchange: one line each way per exchange.
        let sys = system(false);
        let fetches = Rc::new(RefCell::new(Vec::new()));
        let seen = fetches.clone();
        let mut sys = sys;
        sys.dc_mut().set_observer(Box::new(move |now, e| {
            if let DcEvent::AppDone {
                event, latency_ps, ..
            } = e
            {
                if event == "clinv" {
                    seen.borrow_mut().push((now - latency_ps, now));
                }
            }
        }));
        let cfg = InvocationConfig {
            calls: 8,
            ..Default::default()
        };
        let r = run_invocation(sys, &cfg).unwrap();
        assert_eq!(r.verified, 8);
        assert_eq!(max_overlap(&fetches.borrow()), 1);
    }

    #[test]
    fn a_wrong_byte_changes_every_response_line() {
        let req: Vec<Line> = (0..3).map(|j| [j as u8; LINE_BYTES]).collect();
        let a = respond(&req);
        let mut req2 = req.clone();
        req2[2][127] ^= 1;
        let b = respond(&req2);
        assert!((0..3).all(|j| a[j] != b[j]));
        assert_eq!(max_overlap(&[(0, 10), (10, 20), (5, 15)]), 2);
    }
}
