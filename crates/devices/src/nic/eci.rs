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
//! **Frame layout** (the public Enzian NIC's, enzian-pio-nic
//! `EciDecoupledRxTxProtocol.scala` and `EciHostCtrlInfo.scala`): a
//! frame's first line is its **control line**, whose first 64 bytes are
//! control information (word 0: the frame's length) and whose other 64
//! bytes are the frame's first 64 bytes; the rest of the frame follows in
//! 128-byte **overflow lines**. So a frame of N bytes is
//! `1 + ceil((N - 64) / 128)` lines ([`frame_lines`]): one line up to
//! 64 B, two from 65 to 192 B.
//!
//! ```text
//!  exchange 0            CPU loads A                      device: hello line
//!  TX line k of a frame  CPU stores line k of the frame   device: appends Q's bytes to the frame,
//!                        into Q, loads G                  answers G with an ack (exchange number)
//!  RX line k             CPU stores an ack (exchange      device: checks the ack, answers G
//!                        number, checksum of the last     with line k of the received frame
//!                        line it got) into Q, loads G     once its bytes have landed
//! ```
//!
//! A frame of N bytes takes [`frame_lines`]`(N)` TX exchanges, then (once
//! the MAC has looped it back) as many RX exchanges. The CPU waits for
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

/// Bytes of control information at the start of the control line (a
/// frame's line 0): the public Enzian NIC's `PacketCtrlInfo` /
/// `EciHostCtrlInfo` must fit in "half a cacheline" (enzian-pio-nic,
/// `EciDecoupledRxTxProtocol.scala`, `maxHostDescSize` = 64 B). Word 0
/// holds the frame's length, which tells the other side how many overflow
/// lines follow.
pub const CONTROL_INFO_BYTES: usize = 64;
/// Bytes of frame data the control line carries inline, after its control
/// information: the other half of the 128-byte line (the public NIC remaps
/// offset 0x40 of each control line onto its packet buffer, so the inline
/// data and the overflow lines at 0x100.. are one contiguous frame).
pub const CONTROL_DATA_BYTES: usize = LINE_BYTES - CONTROL_INFO_BYTES;

/// Lines a frame of `frame_bytes` bytes occupies: the control line plus
/// the overflow lines, `1 + ceil((n - 64) / 128)` (the public NIC's
/// `packetSizeToNumOverflowCls`: no overflow line up to 64 B).
pub fn frame_lines(frame_bytes: usize) -> usize {
    1 + frame_bytes
        .saturating_sub(CONTROL_DATA_BYTES)
        .div_ceil(LINE_BYTES)
}

/// The byte range of a frame that its line `k` carries (before
/// truncation to the frame's end).
fn frame_span(k: usize) -> (usize, usize) {
    if k == 0 {
        (0, CONTROL_DATA_BYTES)
    } else {
        let s = CONTROL_DATA_BYTES + (k - 1) * LINE_BYTES;
        (s, s + LINE_BYTES)
    }
}

/// Bytes of a frame of `frame_bytes` bytes that have crossed once its
/// lines `0..=k` have (what the device waits to have landed before it
/// answers with line `k`).
pub fn bytes_through_line(frame_bytes: usize, k: usize) -> usize {
    frame_span(k).1.min(frame_bytes)
}

/// Line `k` of `frame`, zero-padded: how a frame crosses the exchanges
/// (the CPU side cuts its TX frames the same way). Line 0 is the control
/// line: the frame's length in word 0 of its control information, then
/// the frame's first [`CONTROL_DATA_BYTES`] bytes; line `k` >= 1 is
/// overflow line `k - 1`, the next 128 bytes.
pub fn frame_line(frame: &[u8], k: usize) -> Line {
    let mut l = [0u8; LINE_BYTES];
    let (s, e) = frame_span(k);
    let e = e.min(frame.len());
    let at = if k == 0 {
        l[..8].copy_from_slice(&(frame.len() as u64).to_le_bytes());
        CONTROL_INFO_BYTES
    } else {
        0
    };
    if e > s {
        l[at..at + e - s].copy_from_slice(&frame[s..e]);
    }
    l
}

/// The frame bytes line `k` carries (zero-padded past the frame's end):
/// the inline half of the control line, or a whole overflow line.
pub fn line_data(k: usize, line: &Line) -> &[u8] {
    if k == 0 {
        &line[CONTROL_INFO_BYTES..]
    } else {
        &line[..]
    }
}

/// The frame length a control line announces (word 0 of its control
/// information).
pub fn announced_length(control: &Line) -> u64 {
    word(control, 0)
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
            lines: frame_lines(frame_bytes),
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

    /// TX: the control line's length must be the frame's (the NIC derives
    /// the number of overflow lines to fetch from it).
    fn check_announced(&mut self, now: Tick, control: &Line) {
        let len = announced_length(control);
        if len != self.frame_bytes {
            self.errors.push((
                now,
                format!(
                    "exchange {}: the control line announces {len} bytes, the frame has {}",
                    self.x, self.frame_bytes
                ),
            ));
        }
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
                let fetched = mem.read(line);
                if k == 0 {
                    self.check_announced(now, &fetched);
                }
                self.tx_fetched[k] = Some(fetched);
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
                        .enumerate()
                        .flat_map(|(k, l)| line_data(k, l.as_ref().expect("fetched")).to_vec())
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
                    if self.k == 0 {
                        self.check_announced(now, &q);
                    }
                    self.tx_buf.extend_from_slice(line_data(self.k, &q));
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
                    let upto = bytes_through_line(n, self.k) as u64;
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
        // 64 B: the most the control line carries alone.
        let mut nic = NicDevice::new(&mac, 64, 0, 1);
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
        let frame: Vec<u8> = (0..64).collect();
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
    fn the_control_line_carries_64_bytes_and_overflow_lines_128() {
        // enzian-pio-nic's packetSizeToNumOverflowCls: none up to 64 B,
        // then ceil((n - 64) / 128).
        for (n, lines) in [
            (1, 1),
            (64, 1),
            (65, 2),
            (128, 2),
            (192, 2),
            (193, 3),
            (1536, 13),
            (8192, 65),
            (9600, 76),
        ] {
            assert_eq!(frame_lines(n), lines, "{n} B");
        }
        let frame: Vec<u8> = (0..300u32).map(|b| (b * 5 + 1) as u8).collect();
        let control = frame_line(&frame, 0);
        assert_eq!(announced_length(&control), 300);
        assert_eq!(&control[8..CONTROL_INFO_BYTES], &[0u8; 56][..]);
        assert_eq!(line_data(0, &control), &frame[..64]);
        assert_eq!(line_data(1, &frame_line(&frame, 1)), &frame[64..192]);
        // The last overflow line is zero-padded past the frame's end.
        let last = frame_line(&frame, 2);
        assert_eq!(&last[..108], &frame[192..]);
        assert!(last[108..].iter().all(|b| *b == 0));
        let joined: Vec<u8> = (0..frame_lines(300))
            .flat_map(|k| line_data(k, &frame_line(&frame, k)).to_vec())
            .collect();
        assert_eq!(&joined[..300], frame.as_slice());
        assert_eq!(bytes_through_line(300, 0), 64);
        assert_eq!(bytes_through_line(300, 1), 192);
        assert_eq!(bytes_through_line(300, 2), 300);
    }

    #[test]
    fn a_control_line_with_the_wrong_length_is_an_error() {
        let mac = MacTiming::from_params(&Params::new()).unwrap();
        let mut nic = NicDevice::new(&mac, 64, 0, 1);
        let mut mem = LineStore::default();
        nic.on_message(0, "LCL_RDREQ", 0, &mem);
        nic.on_message(20, "LCL_RDREQ", 1, &mem);
        let mut control = frame_line(&[7u8; 64], 0);
        control[..8].copy_from_slice(&60u64.to_le_bytes());
        mem.write(0, &control);
        nic.on_message(30, "LCL_ACK", 0, &mem);
        assert_eq!(nic.errors().len(), 1);
        assert!(
            nic.errors()[0].1.contains("announces 60 bytes"),
            "{:?}",
            nic.errors()
        );
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
