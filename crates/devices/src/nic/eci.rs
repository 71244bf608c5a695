//! The ECI NIC's device logic (PIO paper §6.3, Fig. 8c): [`NicDevice`], the
//! NIC logic that sits on the directory controller's application interface
//! and bridges the MAC ([`MacTiming`]) to the CPU with a slight variant of
//! the device-initiated two-line protocol (PIO Fig. 5b), on the checked
//! `invocation` tables. The CPU-side software that drives it and the run
//! that measures it are workloads, in `ccsim_experiments` (`nic::eci`).
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
//!
//! **Attachment.** The DC calls its [`Device`] hook after each message that
//! reaches the application port (here `LCL_RDREQ`: the CPU's held read of
//! G, and `LCL_ACK`: the clean-invalidate of Q done) and queues the
//! [`AppOp`]s it returns. [`NicDevice::attach`] installs the device there
//! and hands back a shared handle, through which a runner reads what the
//! device recorded once the simulation has run: the frames it put on the
//! wire ([`NicDevice::sent`]), each frame's last egress and ingress beat
//! ([`NicDevice::tx_last_beat`], [`NicDevice::rx_last_beat`]) and any
//! wrong ack from the CPU ([`NicDevice::errors`]).

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_kernel::prelude::*;

use super::MacTiming;
use ccsim_coherence::memory::LineStore;
use ccsim_coherence::{Line, LINE_BYTES};
use ccsim_eci::dc::{AppOp, Device, DirectoryController};
use ccsim_eci::invocation::checksum;

fn word(l: &Line, w: usize) -> u64 {
    u64::from_le_bytes(l[w * 8..w * 8 + 8].try_into().expect("8 bytes"))
}

/// Line `k` of `frame`, zero-padded: how a frame crosses the exchanges,
/// one line per exchange (the CPU side cuts its TX frames the same way).
pub fn frame_line(frame: &[u8], k: usize) -> Line {
    let mut l = [0u8; LINE_BYTES];
    let s = k * LINE_BYTES;
    let e = (s + LINE_BYTES).min(frame.len());
    l[..e - s].copy_from_slice(&frame[s..e]);
    l
}

/// The NIC logic on the DC's application interface (a [`Device`]): the
/// device side of the exchanges, the NIC's frame SRAM and the MAC in
/// loopback.
#[derive(Debug)]
pub struct NicDevice {
    mac: MacTiming,
    frame_bytes: u64,
    /// Exchanges per frame and direction.
    lines: usize,
    /// The line the CPU's next exchange loads (G).
    signal: u64,
    /// The other line (Q), which the CPU stores into.
    request: u64,
    /// Exchange number.
    x: u64,
    /// Line of the current frame.
    k: usize,
    /// Receiving (RX exchanges) rather than transmitting.
    rx: bool,
    /// The frame being assembled from TX lines.
    tx_buf: Vec<u8>,
    rx_last: Tick,
    port_free: Tick,
    /// Extra return delay per frame (an echo peer).
    echo: Vec<Tick>,
    /// Pipelined TX ([`NicDevice::set_tx_lines`]): the lines that carry a
    /// frame's lines 1.. (line 0 goes in Q); empty: one line per exchange.
    tx_lines: Vec<u64>,
    /// Pipelined TX: the frame's lines fetched so far, by index.
    tx_fetched: Vec<Option<Line>>,
    /// What G last carried, whose checksum the CPU's next ack holds.
    last_sent: Line,
    /// Frames completed (sent and received).
    frame: usize,
    /// Frames put on the wire, in order; the last one is also what the
    /// loopback returns into RX.
    sent: Vec<Vec<u8>>,
    tx_last_beat: Vec<Tick>,
    rx_last_beat: Vec<Tick>,
    errors: Vec<(Tick, String)>,
}

impl NicDevice {
    /// The device for frames of `frame_bytes` bytes (its MTU register) on
    /// the two device-homed lines `signal` (G of exchange 0, line A) and
    /// `request` (its Q, line B), with the MAC timing `mac`.
    pub fn new(mac: &MacTiming, frame_bytes: usize, signal: u64, request: u64) -> NicDevice {
        NicDevice {
            mac: mac.clone(),
            frame_bytes: frame_bytes as u64,
            lines: frame_bytes.div_ceil(LINE_BYTES),
            signal,
            request,
            x: 0,
            k: 0,
            rx: false,
            tx_buf: Vec::new(),
            rx_last: 0,
            port_free: 0,
            echo: Vec::new(),
            tx_lines: Vec::new(),
            tx_fetched: Vec::new(),
            last_sent: [0; LINE_BYTES],
            frame: 0,
            sent: Vec::new(),
            tx_last_beat: Vec::new(),
            rx_last_beat: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Frame `i` comes back `delays[i]` later than the loopback alone would
    /// bring it (a remote echo peer); 0 or missing: the near-end loopback
    /// of the paper (as [`super::PacketBuffer::set_echo_delays`]).
    pub fn set_echo_delays(&mut self, delays: Vec<Tick>) {
        self.echo = delays;
    }

    /// Pipelined TX: the CPU writes a frame's line 0 into Q and its lines
    /// 1.. into `lines` (one per further line of the frame, on DCUs that
    /// neither A nor B uses), then signals once by loading G; the device
    /// then fetches Q, the control line, and once Q is in (its contents
    /// give the frame's length, so the number of further lines) all of
    /// `lines` at once (the DC's application port keeps them in flight,
    /// one issued per DC clock), and sends the frame when the last one is
    /// in. The order is the public Enzian NIC's (enzian-pio-nic,
    /// `EciDecoupledRxTxProtocol.scala`: its TX machine clean-invalidates
    /// the control line "first to know how many overflows do we need to
    /// invalidate", then issues the overflow lines' clean-invalidates back
    /// to back), so a frame of more than one line costs one clean-invalidate
    /// round trip more than a one-line frame. Each further line costs the
    /// two round trips PIO §6.3 names (the core's write-allocate fetch of
    /// the line, answered Exclusive at once; the device's clean-invalidate),
    /// but the lines overlap on both sides. Empty (the default): every TX
    /// line is an exchange of its own.
    pub fn set_tx_lines(&mut self, lines: Vec<u64>) -> Result<(), String> {
        if !lines.is_empty() && lines.len() + 1 != self.lines {
            return Err(format!(
                "eci nic: a {}-byte frame has {} lines, so pipelined TX needs {} lines besides Q, got {}",
                self.frame_bytes,
                self.lines,
                self.lines - 1,
                lines.len()
            ));
        }
        if let Some(l) = lines
            .iter()
            .find(|l| [self.signal, self.request].contains(l))
        {
            return Err(format!(
                "eci nic: TX line {l} is one of the exchange lines A and B"
            ));
        }
        self.tx_lines = lines;
        Ok(())
    }

    /// Installs the device as `dc`'s application-interface [`Device`];
    /// returns the handle to read its records after the run.
    pub fn attach(self, dc: &mut DirectoryController) -> Rc<RefCell<NicDevice>> {
        let nic = Rc::new(RefCell::new(self));
        let hook = nic.clone();
        let device: Device =
            Box::new(move |now, msg, line, mem| hook.borrow_mut().on_message(now, msg, line, mem));
        dc.set_device(device);
        nic
    }

    /// Frames put on the wire, in order.
    pub fn sent(&self) -> &[Vec<u8>] {
        &self.sent
    }

    /// Per frame: its last beat on the MAC's egress interface (where TX
    /// latency ends).
    pub fn tx_last_beat(&self) -> &[Tick] {
        &self.tx_last_beat
    }

    /// Per frame: its last beat on the MAC's ingress interface (where RX
    /// latency starts).
    pub fn rx_last_beat(&self) -> &[Tick] {
        &self.rx_last_beat
    }

    /// Wrong acks from the CPU, each with when the device saw it; empty in
    /// a correct run.
    pub fn errors(&self) -> &[(Tick, String)] {
        &self.errors
    }

    /// Writes `line` into G and grants it Exclusive (not before `ready`);
    /// G and Q swap for the next exchange.
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

    /// The whole frame is in the NIC's SRAM (`tx_buf`): puts it on the
    /// wire, turns to receiving, and acks the CPU's held read of G.
    fn send_frame(&mut self, now: Tick) -> Vec<AppOp> {
        let n = self.frame_bytes as usize;
        let frame = self.tx_buf[..n].to_vec();
        self.tx_buf.clear();
        let last = self
            .mac
            .egress(now + self.mac.sram, self.port_free, self.frame_bytes);
        self.port_free = last;
        let echo = self.echo.get(self.frame).copied().unwrap_or(0);
        self.rx_last = last + self.mac.loopback + echo;
        self.tx_last_beat.push(last);
        self.rx_last_beat.push(self.rx_last);
        // The loopback brings the same bytes back into RX.
        self.sent.push(frame);
        self.rx = true;
        self.k = 0;
        let mut ack = [0u8; LINE_BYTES];
        ack[..8].copy_from_slice(&self.x.to_le_bytes());
        self.answer(now, ack)
    }

    /// The [`Device`] hook: reacts to a message of the DC's device-local
    /// machine at `now` on `line`, reading the DC's memory `mem`.
    pub fn on_message(&mut self, now: Tick, msg: &str, line: u64, mem: &LineStore) -> Vec<AppOp> {
        match msg {
            // Exchange 0 carries nothing: answer with a hello line.
            "LCL_RDREQ" if line == self.signal && self.x == 0 => {
                self.answer(now, [0u8; LINE_BYTES])
            }
            // Pipelined TX: the held read of G signals a whole frame. The
            // control line Q comes first: it says how long the frame is,
            // so how many further lines to fetch (see `set_tx_lines`).
            "LCL_RDREQ" if line == self.signal && !self.rx && !self.tx_lines.is_empty() => {
                self.tx_fetched = vec![None; self.lines];
                vec![AppOp::new("clinv", self.request)]
            }
            // The CPU's held read of G: first fetch what it stored into Q.
            "LCL_RDREQ" if line == self.signal => vec![AppOp::new("clinv", self.request)],
            // Any other read is the CPU's first exclusive fetch of Q.
            "LCL_RDREQ" => vec![AppOp::new("grant_e", line)],
            "LCL_ACK" if !self.rx && !self.tx_lines.is_empty() => {
                let k = if line == self.request {
                    0
                } else if let Some(j) = self.tx_lines.iter().position(|&l| l == line) {
                    j + 1
                } else {
                    return Vec::new();
                };
                self.tx_fetched[k] = Some(mem.read(line));
                let mut ops = vec![AppOp::new("read", line), AppOp::new("release", line)];
                if k == 0 {
                    // The control line is in: now the frame's length is
                    // known, fetch every further line at once.
                    ops.extend(self.tx_lines.iter().map(|&l| AppOp::new("clinv", l)));
                }
                if self.tx_fetched.iter().all(Option::is_some) {
                    self.tx_buf = self
                        .tx_fetched
                        .iter()
                        .flat_map(|l| l.expect("fetched"))
                        .collect();
                    ops.extend(self.send_frame(now));
                }
                ops
            }
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
                        ops.extend(self.send_frame(now));
                    } else {
                        ops.extend(self.answer(now, ack));
                    }
                } else {
                    if word(&q, 0) != self.x || word(&q, 1) != checksum(&self.last_sent) {
                        self.errors.push((
                            now,
                            format!(
                                "exchange {}: the CPU's ack holds {} {:#x}",
                                self.x,
                                word(&q, 0),
                                word(&q, 1)
                            ),
                        ));
                    }
                    // The line goes out once its bytes have landed in SRAM.
                    let upto = ((self.k + 1) * LINE_BYTES).min(n) as u64;
                    let landed = self.mac.rx_landed(self.rx_last, self.frame_bytes, upto);
                    let data = frame_line(&self.sent[self.frame], self.k);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn events(ops: &[AppOp]) -> Vec<(&str, u64)> {
        ops.iter().map(|o| (o.event.as_str(), o.line)).collect()
    }

    #[test]
    fn one_line_frame_goes_out_and_comes_back() {
        let mac = MacTiming::from_params(&Params::new()).unwrap();
        let mut nic = NicDevice::new(&mac, 100, 0, 1);
        let mut mem = LineStore::default();
        // Exchange 0: the hello line into A.
        let ops = nic.on_message(0, "LCL_RDREQ", 0, &mem);
        assert_eq!(events(&ops), [("write", 0), ("grant_e", 0)]);
        // The CPU's first fetch of A (now its Q) is granted at once.
        assert_eq!(
            events(&nic.on_message(10, "LCL_RDREQ", 0, &mem)),
            [("grant_e", 0)]
        );
        // Exchange 1 (TX): the held read of B fetches Q = A ...
        assert_eq!(
            events(&nic.on_message(20, "LCL_RDREQ", 1, &mem)),
            [("clinv", 0)]
        );
        let frame: Vec<u8> = (0..100).collect();
        mem.write(0, &frame_line(&frame, 0));
        // ... whose line completes the frame: it goes on the wire, B is acked.
        let ops = nic.on_message(30, "LCL_ACK", 0, &mem);
        assert_eq!(
            events(&ops),
            [("read", 0), ("release", 0), ("write", 1), ("grant_e", 1)]
        );
        assert_eq!(nic.sent(), std::slice::from_ref(&frame));
        assert_eq!(nic.tx_last_beat().len(), 1);
        assert!(nic.rx_last_beat()[0] > nic.tx_last_beat()[0]);
        // Exchange 2 (RX): the CPU's ack (exchange number, checksum of B's
        // ack line) in Q = B; A is answered once the bytes have landed.
        let mut ack = [0u8; LINE_BYTES];
        ack[..8].copy_from_slice(&1u64.to_le_bytes());
        let mut got = [0u8; LINE_BYTES];
        got[..8].copy_from_slice(&2u64.to_le_bytes());
        got[8..16].copy_from_slice(&checksum(&ack).to_le_bytes());
        assert_eq!(
            events(&nic.on_message(40, "LCL_RDREQ", 0, &mem)),
            [("clinv", 1)]
        );
        mem.write(1, &got);
        let ops = nic.on_message(50, "LCL_ACK", 1, &mem);
        assert_eq!(ops[2].data.as_deref(), Some(&frame_line(&frame, 0)));
        assert!(ops[2].not_before >= nic.rx_last_beat()[0]);
        assert!(nic.errors().is_empty());
    }

    #[test]
    fn pipelined_tx_fetches_every_line_at_once_and_sends_the_frame() {
        let mac = MacTiming::from_params(&Params::new()).unwrap();
        let mut nic = NicDevice::new(&mac, 300, 0, 1);
        // Three lines: Q and two TX lines, none of them A or B.
        assert!(nic.set_tx_lines(vec![4]).is_err());
        assert!(nic.set_tx_lines(vec![4, 1]).is_err());
        nic.set_tx_lines(vec![4, 5]).unwrap();
        let mut mem = LineStore::default();
        nic.on_message(0, "LCL_RDREQ", 0, &mem);
        // The core's write-allocate fetches of the TX lines: granted at once.
        assert_eq!(
            events(&nic.on_message(5, "LCL_RDREQ", 4, &mem)),
            [("grant_e", 4)]
        );
        // The signal (held read of B) fetches the control line Q = A first.
        assert_eq!(
            events(&nic.on_message(20, "LCL_RDREQ", 1, &mem)),
            [("clinv", 0)]
        );
        let frame: Vec<u8> = (0..300u32).map(|b| (b * 3) as u8).collect();
        for (k, l) in [0u64, 4, 5].into_iter().enumerate() {
            mem.write(l, &frame_line(&frame, k));
        }
        // Q in: the frame's length is known, both TX lines are fetched.
        assert_eq!(
            events(&nic.on_message(31, "LCL_ACK", 0, &mem)),
            [("read", 0), ("release", 0), ("clinv", 4), ("clinv", 5)]
        );
        // Out of order: the frame goes out with the last line in.
        assert_eq!(events(&nic.on_message(32, "LCL_ACK", 5, &mem)).len(), 2);
        assert!(nic.sent().is_empty());
        let ops = nic.on_message(33, "LCL_ACK", 4, &mem);
        assert_eq!(
            events(&ops),
            [("read", 4), ("release", 4), ("write", 1), ("grant_e", 1)]
        );
        assert_eq!(nic.sent(), std::slice::from_ref(&frame));
        assert!(nic.errors().is_empty());
    }
}
