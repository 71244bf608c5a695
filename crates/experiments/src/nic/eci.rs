//! The ECI PIO design of `nic_loopback` (PIO paper §6.3, Fig. 8c): the
//! CPU-side software and the run around the NIC's device logic.
//!
//! ```text
//!  core (Client, a cpu Driver)       DC (invocation table)       NicDevice (ccsim_devices)   MAC
//!  TX line k: 16 stores -> Q
//!  load G ───RLDD─────────────────► held, LCL_RDREQ(G) ────────► clinv Q
//!                                   ◄─FEVX/HAKD(Q)─► LCL_ACK(Q) ► read Q into the frame ──► egress
//!  ack in G ◄─PEMD(G)──────────────◄──────── write G, grant_e G ◄  (last line: send it)      │ loopback
//!  RX line k: ack -> Q, load G ────► held, LCL_RDREQ(G) ────────► clinv Q, check the ack     │
//!  line k in G ◄─PEMD(G)───────────◄──────── write G, grant_e G ◄  once line k landed ◄─ ingress
//! ```
//!
//! * **Device** ([`NicDevice`], in `ccsim_devices::nic::eci`, which also
//!   explains the exchanges): the NIC logic on the DC's application
//!   interface. It records the frames it sent and each frame's last egress
//!   and ingress beat.
//! * **Client** (here, a [`ccsim_eci::cpu::Driver`]): the software on the
//!   core. Per frame it waits its think time, stores the frame line by line
//!   into Q and loads G (the load is the signal; one MSHR orders it after
//!   the stores), then acks and loads each received line, and compares the
//!   received frame with the one it sent. With **pipelined TX**
//!   ([`EciNicConfig::pipelined_tx`]) the core is the ThunderX-1's (misses
//!   in flight, write buffer): before the frame it makes its TX lines
//!   writable (prefetch-exclusive: the write-allocate round trip, off the
//!   frame's path; without [`EciNicConfig::prefetch_tx_lines`], as the
//!   public driver, the stores miss on the lines the NIC clean-invalidated
//!   for the previous frame and the write-allocates are in the frame's TX
//!   latency), then stores line 0 into Q and the others into the TX
//!   lines, a DMB, and one load of G; the device fetches Q (the control
//!   line, which gives the frame's length) and then all the others at once.
//!   A DMB orders every exchange's stores before its load. It records when each frame's
//!   first store issued and when its last RX line arrived.
//! * **Run** ([`run_eci_nic`]): builds the coherent system on the
//!   `invocation` tables, attaches both, runs it, verifies the frames the
//!   device sent and combines the two records into the latencies: TX = the
//!   first store issued to the last egress beat, RX = the last ingress beat
//!   to the last line loaded.
//!
//! Each side records its own part (no log shared between them), as the
//! hardware and software would: the run is where both are known.

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_kernel::prelude::*;

use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_devices::nic::eci::{announced_length, frame_line, frame_lines, line_data, NicDevice};
use ccsim_devices::nic::MacTiming;
use ccsim_eci::cpu::{Completed, CpuOp};
use ccsim_eci::dc::DcEvent;
use ccsim_eci::invocation::checksum;
use ccsim_eci::system::CoherentSystem;

use crate::invocation::pipelined::{max_overlap, payload_lines};

fn word(l: &Line, w: usize) -> u64 {
    u64::from_le_bytes(l[w * 8..w * 8 + 8].try_into().expect("8 bytes"))
}

/// What the client recorded.
#[derive(Debug, Default, Clone)]
struct ClientLog {
    /// Per frame: the first TX store issued.
    tx_start: Vec<Tick>,
    /// Per frame: the last RX line loaded.
    rx_done: Vec<Tick>,
    /// Frames received byte-identical to what was sent.
    rx_verified: usize,
    /// Wrong acks and frames, each with when the client saw it.
    errors: Vec<(Tick, String)>,
}

/// The CPU side, as a [`ccsim_eci::cpu::Driver`].
struct Client {
    a: u64,
    b: u64,
    /// Pipelined TX: where a frame's lines 1.. go (empty: one line per
    /// exchange).
    tx_lines: Vec<u64>,
    /// Make the TX lines writable before each frame ([`EciNicConfig`]).
    prefetch_tx_lines: bool,
    /// A barrier (DMB) before each signal load: needed once the core keeps
    /// more than one access in flight (PIO §5).
    fence: bool,
    frames: Vec<Vec<u8>>,
    think: Vec<Tick>,
    lines: usize,
    /// Exchange number of the pending load.
    x: u64,
    frame: usize,
    k: usize,
    rx: bool,
    rx_buf: Vec<u8>,
    /// The line the last load returned (its checksum is the next RX ack).
    last: Line,
    /// Program length so far (index of the next op appended).
    len: usize,
    first_store: usize,
    load: usize,
    log: Rc<RefCell<ClientLog>>,
}

impl Client {
    fn roles(&self) -> (u64, u64) {
        // (Q, G): exchange 0 loads A; then the lines alternate.
        if self.x % 2 == 0 {
            (self.b, self.a)
        } else {
            (self.a, self.b)
        }
    }

    /// The ops of the next exchange: its stores into Q, then the load of G.
    fn ops(&mut self) -> Vec<CpuOp> {
        let (q, g) = self.roles();
        let mut ops = Vec::new();
        self.first_store = usize::MAX;
        if self.x > 0 && !self.rx {
            if self.k == 0 && self.prefetch_tx_lines {
                // Pipelined TX: the driver holds its TX lines writable
                // before the frame is in its registers (PRFM PSTL1KEEP,
                // each the core's write-allocate round trip), as it holds
                // Q between exchanges; the frame's stores then hit.
                ops.extend(
                    self.tx_lines
                        .iter()
                        .map(|&line| CpuOp::PrefetchExclusive { line }),
                );
            }
            if self.k == 0 && (self.think[self.frame] > 0 || !self.tx_lines.is_empty()) {
                ops.push(CpuOp::Wait {
                    ps: self.think[self.frame],
                });
                if self.fence {
                    // With more than one access in flight the stores would
                    // issue during the think time: the frame is in the
                    // registers (and the TX lines writable) only after it.
                    ops.push(CpuOp::Fence);
                }
            }
            if self.k == 0 {
                // TX latency starts at the frame's first store.
                self.first_store = self.len + ops.len();
            }
            // Pipelined: the whole frame, line 0 into Q and the others
            // into the TX lines; else line k into Q.
            let targets: Vec<(usize, u64)> = if self.tx_lines.is_empty() {
                vec![(self.k, q)]
            } else {
                std::iter::once((0, q))
                    .chain(self.tx_lines.iter().enumerate().map(|(j, &t)| (j + 1, t)))
                    .collect()
            };
            for (k, line) in targets {
                let l = frame_line(&self.frames[self.frame], k);
                for w in 0..LINE_BYTES / 8 {
                    ops.push(CpuOp::Store {
                        line,
                        word: w as u8,
                        value: word(&l, w),
                    });
                }
            }
        } else if self.x > 0 {
            ops.push(CpuOp::Store {
                line: q,
                word: 1,
                value: checksum(&self.last),
            });
            ops.push(CpuOp::Store {
                line: q,
                word: 0,
                value: self.x,
            });
        }
        if self.fence && ops.iter().any(|o| matches!(o, CpuOp::Store { .. })) {
            ops.push(CpuOp::Fence);
        }
        ops.push(CpuOp::Load { line: g });
        self.load = self.len + ops.len() - 1;
        self.len += ops.len();
        ops
    }

    fn on_done(&mut self, c: &Completed) -> Vec<CpuOp> {
        if c.op == self.first_store {
            self.log.borrow_mut().tx_start.push(c.issued);
        }
        if c.op != self.load {
            return Vec::new();
        }
        let done = c.issued + c.latency_ps;
        if self.x > 0 && !self.rx {
            if word(&c.data, 0) != self.x {
                self.log.borrow_mut().errors.push((
                    done,
                    format!("exchange {}: TX ack holds {}", self.x, word(&c.data, 0)),
                ));
            }
            // One exchange per line, or one for the whole frame.
            self.k += if self.tx_lines.is_empty() {
                1
            } else {
                self.lines
            };
            if self.k == self.lines {
                self.rx = true;
                self.k = 0;
            }
        } else if self.x > 0 {
            if self.k == 0 && announced_length(&c.data) != self.frames[self.frame].len() as u64 {
                self.log.borrow_mut().errors.push((
                    done,
                    format!(
                        "frame {}: the control line announces {} bytes",
                        self.frame,
                        announced_length(&c.data)
                    ),
                ));
            }
            self.rx_buf.extend_from_slice(line_data(self.k, &c.data));
            self.k += 1;
            if self.k == self.lines {
                let want = &self.frames[self.frame];
                let mut log = self.log.borrow_mut();
                log.rx_done.push(done);
                if &self.rx_buf[..want.len()] == want.as_slice() {
                    log.rx_verified += 1;
                } else {
                    log.errors
                        .push((done, format!("frame {}: received bytes differ", self.frame)));
                }
                drop(log);
                self.rx_buf.clear();
                self.frame += 1;
                self.rx = false;
                self.k = 0;
            }
        }
        self.last = c.data;
        self.x += 1;
        if self.frame == self.frames.len() {
            return Vec::new();
        }
        self.ops()
    }
}

/// How the CPU side moves a frame ([`run_eci_nic`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EciNicConfig {
    /// Pipelined TX: the whole frame is stored (line 0 into Q, the others
    /// into TX lines on DCUs apart from A's and B's) and signalled with one
    /// load, and the device fetches Q and then the other lines at once
    /// ([`NicDevice::set_tx_lines`]); false: one exchange per line.
    pub pipelined_tx: bool,
    /// A barrier (DMB) orders each exchange's stores before its load: set
    /// it when the core keeps more than one access in flight.
    pub fence: bool,
    /// Pipelined TX only: the driver makes its TX lines writable before the
    /// frame is in its registers (a prefetch-exclusive per line, off the
    /// frame's path). False is the public driver (enzian-pio-nic
    /// sw/eci/core.c `pionic_tx`: it stores the length, the first 64 B and
    /// the overflow lines with no prefetch), whose stores land on lines the
    /// NIC clean-invalidated when it sent the previous frame, so each
    /// overflow line's write-allocate round trip is inside the frame's TX
    /// latency (overlapping in the ThunderX-1's store misses).
    pub prefetch_tx_lines: bool,
}

/// Result of [`run_eci_nic`].
#[derive(Debug)]
pub struct EciNicRun {
    /// TX latency of each frame (ps).
    pub tx_ps: Vec<Tick>,
    /// RX latency of each frame (ps).
    pub rx_ps: Vec<Tick>,
    /// Frames received byte-identical.
    pub rx_verified: usize,
    /// Frames transmitted byte-identical.
    pub tx_verified: usize,
    /// Statistics, flattened.
    pub stats: std::collections::BTreeMap<String, f64>,
    /// Simulated events.
    pub events: u64,
    /// Trace hash.
    pub trace_hash: String,
    /// The most clean-invalidates (the device's fetches of lines the CPU
    /// wrote) in flight at once.
    pub max_fetches_in_flight: usize,
}

/// Sends and receives every frame of `frames` (all the same length) through
/// the ECI NIC in loopback on `sys` (as built, no program yet; its agents
/// run the `invocation` protocol: system `invocation` of
/// platforms/enzian.toml), waiting `think[i]` before frame `i`; frame `i`
/// comes back `echo[i]` after the loopback alone would return it (empty:
/// none). Fails on any protocol error, wrong ack or wrong frame (reporting
/// the earliest in simulated time) or on frames not sent and received.
pub fn run_eci_nic(
    mut sys: CoherentSystem,
    mac: &MacTiming,
    frames: &[Vec<u8>],
    (think, echo): (&[Tick], &[Tick]),
    cfg: EciNicConfig,
) -> Result<EciNicRun, String> {
    let protocol = sys.protocol();
    if protocol != "invocation" {
        return Err(format!(
            "eci nic: the system runs {protocol}; the NIC's exchanges run on the invocation protocol"
        ));
    }
    let n = frames.first().map(|f| f.len()).unwrap_or(0);
    if n == 0 || frames.iter().any(|f| f.len() != n) || think.len() != frames.len() {
        return Err("eci nic: frames must be non-empty, of one length, one think time each".into());
    }
    // The control line (64 B of data) and the overflow lines.
    let lines = frame_lines(n);
    // Lines A = 0 and B = 1: one even and one odd line, on different DC
    // slices (the held read of one must not block the fetch of the other).
    let (a, b) = (0, 1);
    let tx_lines = if cfg.pipelined_tx && lines > 1 {
        // The DC's set 0 of a payload: lines on DCUs neither A nor B uses
        // (the held read of G keeps its DCU while Q and these are fetched).
        payload_lines(sys.dc(), lines)?[0][1..].to_vec()
    } else {
        Vec::new()
    };
    let log = Rc::new(RefCell::new(ClientLog::default()));
    let mut client = Client {
        a,
        b,
        tx_lines: tx_lines.clone(),
        prefetch_tx_lines: cfg.prefetch_tx_lines,
        fence: cfg.fence,
        frames: frames.to_vec(),
        think: think.to_vec(),
        lines,
        x: 0,
        frame: 0,
        k: 0,
        rx: false,
        rx_buf: Vec::new(),
        last: [0; LINE_BYTES],
        len: 0,
        first_store: usize::MAX,
        load: 0,
        log: log.clone(),
    };
    let program = client.ops();
    sys.set_programs(vec![program])?;
    sys.cpu_mut()
        .set_driver(Box::new(move |c: &Completed| client.on_done(c)));
    let mut device = NicDevice::new(mac, n, a, b);
    device.set_echo_delays(echo.to_vec());
    device.set_tx_lines(tx_lines)?;
    let fetches = Rc::new(RefCell::new(Vec::new()));
    let seen = fetches.clone();
    let dc = sys.dc_mut();
    if cfg.pipelined_tx {
        // The NIC keeps as many fetches in flight as the DC has DCUs.
        let window = dc.dcus();
        dc.set_app_window(window);
    }
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
    let nic = device.attach(sys.dc_mut());
    sys.run()?;
    let log = log.borrow().clone();
    let nic = nic.borrow();
    let (sent, tx_last_beat, rx_last_beat) = (nic.sent(), nic.tx_last_beat(), nic.rx_last_beat());
    // The device's frames against the client's: a wrong one is an error
    // when it left the MAC.
    let mut tx_verified = 0;
    let mut errors: Vec<(Tick, String)> = Vec::new();
    for (i, f) in sent.iter().enumerate() {
        if frames.get(i) == Some(f) {
            tx_verified += 1;
        } else {
            errors.push((
                tx_last_beat[i],
                format!("frame {i}: transmitted bytes differ"),
            ));
        }
    }
    errors.extend(log.errors.iter().cloned());
    errors.extend(nic.errors().iter().cloned());
    if let Some((_, e)) = errors.iter().min_by_key(|(t, _)| *t) {
        return Err(format!("eci nic: {e}"));
    }
    let k = frames.len();
    if log.tx_start.len() != k || log.rx_done.len() != k || tx_last_beat.len() != k {
        return Err(format!(
            "eci nic: {} of {k} frames sent, {} received",
            tx_last_beat.len(),
            log.rx_done.len()
        ));
    }
    let max_fetches_in_flight = max_overlap(&fetches.borrow());
    Ok(EciNicRun {
        tx_ps: (0..k).map(|i| tx_last_beat[i] - log.tx_start[i]).collect(),
        rx_ps: (0..k).map(|i| log.rx_done[i] - rx_last_beat[i]).collect(),
        rx_verified: log.rx_verified,
        tx_verified,
        stats: sys.sim.stats().flatten(),
        events: sys.sim.events_processed(),
        trace_hash: sys.sim.trace_hash().unwrap_or_default(),
        max_fetches_in_flight,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccsim_eci::system::{CoherentParams, HomeMemory};

    #[test]
    fn frames_go_out_and_come_back_verified() {
        let mac = MacTiming::from_params(&Params::new()).unwrap();
        let frames: Vec<Vec<u8>> = (0..3)
            .map(|i| (0..200u32).map(|b| (b * 7 + i) as u8).collect())
            .collect();
        let p = CoherentParams {
            tables: Some(ccsim_eci::invocation::invocation_tables().unwrap()),
            ..Default::default()
        };
        let sys =
            CoherentSystem::build_with(&p, HomeMemory::Bram, vec![], vec![], 1, TraceMode::Hash)
                .unwrap();
        let r = run_eci_nic(
            sys,
            &mac,
            &frames,
            (&[0, 1000, 0], &[]),
            EciNicConfig::default(),
        )
        .unwrap();
        assert_eq!((r.rx_verified, r.tx_verified), (3, 3));
        // Three lines each way (the control line with 64 B, two overflow
        // lines): at least one exchange after the last beat.
        assert!(r.rx_ps.iter().all(|t| *t > 0));
        assert!(r.tx_ps.iter().all(|t| *t > mac.wire(200)));
    }
}
