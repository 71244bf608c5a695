//! The ECI NIC (PIO paper §6.3, Fig. 8c): device logic on the directory
//! controller's application interface bridges the MAC to the CPU with a
//! slight variant of the device-initiated two-line protocol (PIO Fig. 5b),
//! run by the simulator with the checked `invocation` tables.
//!
//! Every step is one **exchange** on two device-homed lines that swap roles
//! each time (as in [`ccsim_eci::invocation`]): the CPU stores into
//! the line it holds (Q), then loads the other (G); the DC holds that read
//! and tells the device, which clean-invalidates Q (fetching the CPU's
//! stores), then writes its answer into G and grants it Exclusive. So each
//! exchange is two ECI round trips and moves one 128-byte line each way.
//!
//! ```text
//!  exchange 0            CPU loads A                      device: hello line
//!  TX line k of a frame  CPU stores 128 B of the frame    device: appends Q to the frame,
//!                        into Q, loads G                  answers G with an ack (exchange number)
//!  RX line k             CPU stores an ack (exchange      device: checks the ack, answers G
//!                        number, checksum of the last     with line k of the received frame
//!                        line it got) into Q, loads G     once its bytes have landed
//! ```
//!
//! A frame of N bytes takes `ceil(N / 128)` TX exchanges, then (once the
//! MAC has looped it back) `ceil(N / 128)` RX exchanges. The CPU waits for
//! received lines with its load held at the DC, not by spinning, so the
//! arrival's phase relative to any polling loop plays no role. The frame
//! length is fixed per run (the device is configured with it, as an MTU
//! register; the simulated traffic has one size per point).

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_kernel::prelude::*;

use super::MacTiming;
use ccsim_coherence::memory::LineStore;
use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_eci::cpu::{Completed, CpuOp};
use ccsim_eci::dc::AppOp;
use ccsim_eci::invocation::{checksum, invocation_tables};
use ccsim_eci::system::{CoherentParams, CoherentSystem, HomeMemory};

fn word(l: &Line, w: usize) -> u64 {
    u64::from_le_bytes(l[w * 8..w * 8 + 8].try_into().expect("8 bytes"))
}

/// Line `k` of `frame`, zero-padded.
fn frame_line(frame: &[u8], k: usize) -> Line {
    let mut l = [0u8; LINE_BYTES];
    let s = k * LINE_BYTES;
    let e = (s + LINE_BYTES).min(frame.len());
    l[..e - s].copy_from_slice(&frame[s..e]);
    l
}

/// What both sides recorded.
#[derive(Debug, Default, Clone)]
struct Log {
    /// Per frame: the first TX store issued (CPU).
    tx_start: Vec<Tick>,
    /// Per frame: the last RX line loaded (CPU).
    rx_done: Vec<Tick>,
    /// Per frame: last egress beat (device).
    tx_last_beat: Vec<Tick>,
    /// Per frame: last ingress beat (device).
    rx_last_beat: Vec<Tick>,
    /// Frames the CPU received byte-identical to what it sent.
    rx_verified: usize,
    /// Frames the device assembled byte-identical to what the CPU sent.
    tx_verified: usize,
    errors: Vec<String>,
}

/// The CPU side, as a [`ccsim_eci::cpu::Driver`].
struct Client {
    a: u64,
    b: u64,
    frames: Vec<Vec<u8>>,
    think: Vec<Tick>,
    lines: usize,
    /// Exchange number of the pending load.
    x: u64,
    frame: usize,
    k: usize,
    rx: bool,
    rx_buf: Vec<u8>,
    last: Line,
    len: usize,
    first_store: usize,
    load: usize,
    log: Rc<RefCell<Log>>,
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

    fn ops(&mut self) -> Vec<CpuOp> {
        let (q, g) = self.roles();
        let mut ops = Vec::new();
        self.first_store = usize::MAX;
        if self.x > 0 && !self.rx {
            if self.k == 0 && self.think[self.frame] > 0 {
                ops.push(CpuOp::Wait {
                    ps: self.think[self.frame],
                });
            }
            if self.k == 0 {
                self.first_store = self.len + ops.len();
            }
            let l = frame_line(&self.frames[self.frame], self.k);
            for w in 0..LINE_BYTES / 8 {
                ops.push(CpuOp::Store {
                    line: q,
                    word: w as u8,
                    value: word(&l, w),
                });
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
        if self.x > 0 && !self.rx {
            if word(&c.data, 0) != self.x {
                self.log.borrow_mut().errors.push(format!(
                    "exchange {}: TX ack holds {}",
                    self.x,
                    word(&c.data, 0)
                ));
            }
            self.k += 1;
            if self.k == self.lines {
                self.rx = true;
                self.k = 0;
            }
        } else if self.x > 0 {
            self.rx_buf.extend_from_slice(&c.data);
            self.k += 1;
            if self.k == self.lines {
                let want = &self.frames[self.frame];
                let mut log = self.log.borrow_mut();
                log.rx_done.push(c.issued + c.latency_ps);
                if &self.rx_buf[..want.len()] == want.as_slice() {
                    log.rx_verified += 1;
                } else {
                    log.errors
                        .push(format!("frame {}: received bytes differ", self.frame));
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

/// The NIC logic, as a [`ccsim_eci::dc::Device`].
struct NicDevice {
    mac: MacTiming,
    frame_bytes: u64,
    lines: usize,
    signal: u64,
    request: u64,
    x: u64,
    k: usize,
    rx: bool,
    tx_buf: Vec<u8>,
    /// The frame on the wire (looped back into RX).
    looped: Vec<u8>,
    rx_last: Tick,
    port_free: Tick,
    /// Extra return delay per frame (an echo peer).
    echo: Vec<Tick>,
    last_sent: Line,
    /// The frames the CPU sends, to verify what arrived.
    expect: Vec<Vec<u8>>,
    frame: usize,
    log: Rc<RefCell<Log>>,
}

impl NicDevice {
    fn answer(&mut self, ready: Tick, line: Line) -> Vec<AppOp> {
        let g = self.signal;
        std::mem::swap(&mut self.signal, &mut self.request);
        self.last_sent = line;
        self.x += 1;
        vec![
            AppOp::new("write", g).with_data(line).at(ready),
            AppOp::new("grant_e", g),
        ]
    }

    fn on_message(&mut self, now: Tick, msg: &str, line: u64, mem: &LineStore) -> Vec<AppOp> {
        match msg {
            "LCL_RDREQ" if line == self.signal && self.x == 0 => {
                self.answer(now, [0u8; LINE_BYTES])
            }
            "LCL_RDREQ" if line == self.signal => vec![AppOp::new("clinv", self.request)],
            "LCL_RDREQ" => vec![AppOp::new("grant_e", line)],
            "LCL_ACK" if line == self.request => {
                let q = mem.read(line);
                let mut ops = vec![AppOp::new("read", line), AppOp::new("release", line)];
                let n = self.frame_bytes as usize;
                if !self.rx {
                    self.tx_buf.extend_from_slice(&q);
                    self.k += 1;
                    let mut ack = [0u8; LINE_BYTES];
                    ack[..8].copy_from_slice(&self.x.to_le_bytes());
                    if self.k == self.lines {
                        // The whole frame is in the NIC's SRAM: send it.
                        let frame = self.tx_buf[..n].to_vec();
                        self.tx_buf.clear();
                        let mut log = self.log.borrow_mut();
                        if self.expect.get(self.frame) == Some(&frame) {
                            log.tx_verified += 1;
                        } else {
                            log.errors
                                .push(format!("frame {}: transmitted bytes differ", self.frame));
                        }
                        let last =
                            self.mac
                                .egress(now + self.mac.sram, self.port_free, self.frame_bytes);
                        self.port_free = last;
                        let echo = self.echo.get(self.frame).copied().unwrap_or(0);
                        self.rx_last = last + self.mac.loopback + echo;
                        log.tx_last_beat.push(last);
                        log.rx_last_beat.push(self.rx_last);
                        drop(log);
                        self.looped = frame;
                        self.rx = true;
                        self.k = 0;
                    }
                    ops.extend(self.answer(now, ack));
                } else {
                    if word(&q, 0) != self.x || word(&q, 1) != checksum(&self.last_sent) {
                        self.log.borrow_mut().errors.push(format!(
                            "exchange {}: the CPU's ack holds {} {:#x}",
                            self.x,
                            word(&q, 0),
                            word(&q, 1)
                        ));
                    }
                    let upto = ((self.k + 1) * LINE_BYTES).min(n) as u64;
                    let landed = self.mac.rx_landed(self.rx_last, self.frame_bytes, upto);
                    let data = frame_line(&self.looped, self.k);
                    self.k += 1;
                    if self.k == self.lines {
                        self.rx = false;
                        self.k = 0;
                        self.frame += 1;
                    }
                    ops.extend(self.answer(landed.max(now), data));
                }
                ops
            }
            _ => Vec::new(),
        }
    }
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
}

/// Sends and receives every frame of `frames` (all the same length) through
/// the ECI NIC in loopback, waiting `think[i]` before frame `i`; frame `i`
/// comes back `echo[i]` after the loopback alone would return it (empty:
/// none).
pub fn run_eci_nic(
    p: &CoherentParams,
    mac: &MacTiming,
    frames: &[Vec<u8>],
    think: &[Tick],
    echo: &[Tick],
    seed: u64,
    trace: TraceMode,
) -> Result<EciNicRun, String> {
    let n = frames.first().map(|f| f.len()).unwrap_or(0);
    if n == 0 || frames.iter().any(|f| f.len() != n) || think.len() != frames.len() {
        return Err("eci nic: frames must be non-empty, of one length, one think time each".into());
    }
    let lines = n.div_ceil(LINE_BYTES);
    let mut p = p.clone();
    p.tables = Some(invocation_tables()?);
    let log = Rc::new(RefCell::new(Log::default()));
    let mut client = Client {
        a: 0,
        b: 1,
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
    let mut sys =
        CoherentSystem::build_with(&p, HomeMemory::Bram, program, Vec::new(), seed, trace)?;
    sys.cpu_mut()
        .set_driver(Box::new(move |c: &Completed| client.on_done(c)));
    let mut device = NicDevice {
        mac: mac.clone(),
        frame_bytes: n as u64,
        lines,
        signal: 0,
        request: 1,
        x: 0,
        k: 0,
        rx: false,
        tx_buf: Vec::new(),
        looped: Vec::new(),
        rx_last: 0,
        port_free: 0,
        echo: echo.to_vec(),
        last_sent: [0; LINE_BYTES],
        expect: frames.to_vec(),
        frame: 0,
        log: log.clone(),
    };
    sys.dc_mut()
        .set_device(Box::new(move |now, msg, line, mem| {
            device.on_message(now, msg, line, mem)
        }));
    sys.run()?;
    let log = log.borrow().clone();
    if let Some(e) = log.errors.first() {
        return Err(format!("eci nic: {e}"));
    }
    let k = frames.len();
    if log.tx_start.len() != k || log.rx_done.len() != k || log.tx_last_beat.len() != k {
        return Err(format!(
            "eci nic: {} of {k} frames sent, {} received",
            log.tx_last_beat.len(),
            log.rx_done.len()
        ));
    }
    Ok(EciNicRun {
        tx_ps: (0..k)
            .map(|i| log.tx_last_beat[i] - log.tx_start[i])
            .collect(),
        rx_ps: (0..k)
            .map(|i| log.rx_done[i] - log.rx_last_beat[i])
            .collect(),
        rx_verified: log.rx_verified,
        tx_verified: log.tx_verified,
        stats: sys.sim.stats().flatten(),
        events: sys.sim.events_processed(),
        trace_hash: sys.sim.trace_hash().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_go_out_and_come_back_verified() {
        let mac = MacTiming::from_params(&Params::new()).unwrap();
        let frames: Vec<Vec<u8>> = (0..3)
            .map(|i| (0..200u32).map(|b| (b * 7 + i) as u8).collect())
            .collect();
        let r = run_eci_nic(
            &CoherentParams::default(),
            &mac,
            &frames,
            &[0, 1000, 0],
            &[],
            1,
            TraceMode::Hash,
        )
        .unwrap();
        assert_eq!((r.rx_verified, r.tx_verified), (3, 3));
        // Two lines each way: at least one exchange after the last beat.
        assert!(r.rx_ps.iter().all(|t| *t > 0));
        assert!(r.tx_ps.iter().all(|t| *t > mac.wire(200)));
    }
}
