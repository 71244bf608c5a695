//! A 100 Gb/s NIC on the FPGA in three designs (PIO paper §6.3, Fig. 8),
//! measured as the paper does: the Ethernet MAC in near-end loopback, so
//! every frame the software transmits comes back and is received.
//!
//! ```text
//!  (a) PCIe DMA      core ─driver─► XDMA engine ─H2C─► TX slot ─► MAC ┐
//!                    core ◄─poll wb─ XDMA engine ◄C2H─ RX slot ◄─ MAC ┘ loopback
//!  (b) PCIe PIO      core ─WC MMIO stores, fence, doorbell─► TX slot ─► MAC ┐
//!                    core ─MMIO status polls, MMIO loads ──► RX slot ◄─ MAC ┘
//!  (c) ECI PIO       core ◄─two lines over the DC (PIO Fig. 5b variant)─► NIC logic ◄─► MAC
//! ```
//!
//! The two PCIe designs share one device, [`PacketBuffer`]: the FPGA SRAM
//! holding real frame bytes behind the XDMA endpoint (it sits where the
//! `device_memory` BRAM sits in a [`PcieSystem`](ccsim_pcie::system::PcieSystem)), plus the
//! NIC logic and MAC that drain its TX slots and fill its RX slots. The ECI
//! design ([`eci::NicDevice`]) drives the same [`MacTiming`] from device
//! logic on the directory controller's application interface. Only the
//! devices are here: the software that drives them and the runs that
//! measure them are the `nic_loopback` workload of `ccsim_experiments`.
//!
//! **SRAM layout** (offsets in BAR1). Frame `i` uses TX slot `i` and RX slot
//! `i` (a ring that does not wrap within a run):
//!
//! * [`RX_STATUS`]: `u32`, frames received so far (the PIO design polls it);
//! * TX slot `i` at [`TX_BASE`] `+ i * SLOT_BYTES`: an 8-byte header
//!   (`u32` frame length, `u32` frame number) in a 64-byte line of its own,
//!   then the frame at [`TX_FRAME`]. The NIC sends
//!   a frame once its header and every byte of its frame have been written,
//!   in whatever order they came (DMA writes the header first, as part of the
//!   buffer; PIO writes it last, after a fence, as the doorbell);
//! * RX slot `i` at [`RX_BASE`] `+ i * SLOT_BYTES`: the received frame.
//!
//! **MAC timing** ([`MacTiming`]). The NIC logic runs at `clock_mhz` (250
//! MHz, PIO §6.3); the MAC moves frames at `line_rate_gbps` (100 Gb/s), so
//! the frame's bytes cross the MAC's streaming interface at 8 / 100 ns per
//! byte (preamble and inter-frame gap are not on the streaming interface and
//! are not counted, as the paper measures there). A frame is sent
//! store-and-forward: the MAC must not underflow inside a frame, so it starts
//! once the whole frame is in SRAM, `pipeline_cycles` after the next clock
//! edge. The PCS/PMA loopback returns it `loopback_ns` after its last beat
//! left; received bytes land in SRAM cut-through, at line rate, each
//! `pipeline_cycles` after its beat. Reads of RX bytes that have not landed
//! are held (the XDMA C2H stream waits for data), and the status register
//! counts a frame `pipeline_cycles` after its last beat.
//!
//! **Latencies** (PIO §6.3): TX = software has the frame in registers (the
//! workload's start mark) to the last beat on the MAC's egress interface
//! ([`PacketBuffer::tx_last_beat`]); RX = the last beat on the ingress
//! interface ([`PacketBuffer::rx_last_beat`]) to the software holding the
//! whole frame (its last load done).

pub mod eci;

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;

use ccsim_coherence::envelope::{MemReq, MemResp, Msg};
use ccsim_coherence::util::{complete, ns_to_ps, DelayLine};
use ccsim_pcie::core::{Core, Op};
use ccsim_pcie::dma::XdmaEngine;
use ccsim_pcie::link::link_config;
use ccsim_pcie::memory::{Memory, SparseMemory};
use ccsim_pcie::system::{build_host_and_pcie, PcieSystemParams};

/// Offset of the RX status register (frames received, `u32`).
pub const RX_STATUS: u64 = 0x0;
/// Offset of TX slot 0.
pub const TX_BASE: u64 = 0x10_0000;
/// Offset of RX slot 0.
pub const RX_BASE: u64 = 0x100_0000;
/// Bytes per slot (header + largest frame).
pub const SLOT_BYTES: u64 = 0x4000;
/// Meaningful TX header bytes (`u32` length, `u32` frame number).
pub const TX_HEADER: u64 = 8;
/// Offset of the frame in a TX slot: the header has a 64-byte line of its
/// own, so the frame's write-combined stores stay 64-byte aligned.
pub const TX_FRAME: u64 = 64;
/// Largest frame (bytes).
pub const MAX_FRAME: u64 = SLOT_BYTES - TX_FRAME;
/// Most frames per run (slots before the TX ring would reach the RX ring).
pub const MAX_FRAMES: u64 = (RX_BASE - TX_BASE) / SLOT_BYTES;

/// The TX header of frame `seq` of `len` bytes.
pub fn tx_header(len: u64, seq: u64) -> Vec<u8> {
    let mut h = (len as u32).to_le_bytes().to_vec();
    h.extend_from_slice(&(seq as u32).to_le_bytes());
    h
}

/// Declaration of `nic_mac`.
pub static NIC_MAC: ComponentSpec = ComponentSpec {
    type_name: "nic_mac",
    description: "The NIC on the FPGA (PIO §6.3): packet SRAM holding real frames, NIC logic at clock_mhz, and a 100 Gb/s Ethernet MAC in near-end loopback. Behind the XDMA endpoint (PCIe designs) or the DC's application interface (ECI design).",
    params: &[
        ParamSpec { name: "clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(250.0), unit: "MHz", range: ParamRange::positive(), from: "PIO §6.3: 'In all cases we clock the core NIC logic at 250 MHz'", description: "NIC logic clock." },
        ParamSpec { name: "line_rate_gbps", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "Gb/s", range: ParamRange::positive(), from: "PIO §6.3: a 100 Gb/s NIC on Enzian's 100 Gb/s Ethernet MACs", description: "MAC line rate: frame bytes cross the streaming interface at 8 / rate ns each." },
        ParamSpec { name: "pipeline_cycles", kind: ParamKind::Int, default: ParamDefault::Int(2), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed: one register stage each side of the SRAM port", description: "NIC logic cycles between SRAM and the MAC's streaming interface, each way." },
        ParamSpec { name: "loopback_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: PCS/PMA near-end loopback", description: "Egress last beat to ingress last beat through the PCS/PMA loopback (not part of either latency)." },
        ParamSpec { name: "sram_latency_ns", kind: ParamKind::Float, default: ParamDefault::Float(12.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: 3 cycles of on-chip SRAM at 250 MHz", description: "Packet SRAM access latency (PCIe designs)." },
    ],
    ports: &[PortSpec { name: "dev", description: "SRAM reads and writes from the XDMA endpoint (DMA and BAR1 MMIO).", required: false }],
    stats: &[
        StatSpec { name: "frames_tx", kind: StatKind::Counter, unit: "frames", description: "Frames sent by the MAC." },
        StatSpec { name: "frames_rx", kind: StatKind::Counter, unit: "frames", description: "Frames received by the MAC." },
        StatSpec { name: "held_reads", kind: StatKind::Counter, unit: "reads", description: "SRAM reads of RX bytes held until the bytes landed." },
        StatSpec { name: "status_reads", kind: StatKind::Counter, unit: "reads", description: "Reads of the RX status register." },
    ],
    check: None,
};

/// The timing of the NIC logic and MAC, shared by all three designs.
#[derive(Debug, Clone)]
pub struct MacTiming {
    /// NIC logic clock.
    pub clock: Clock,
    /// Picoseconds per byte on the MAC's streaming interface.
    pub byte_ps: f64,
    /// NIC pipeline (ps), SRAM to MAC and MAC to SRAM.
    pub pipeline: Tick,
    /// Egress to ingress through the loopback (ps).
    pub loopback: Tick,
    /// Packet SRAM latency (ps).
    pub sram: Tick,
}

impl MacTiming {
    /// From `nic_mac` parameters.
    pub fn from_params(params: &Params) -> Result<MacTiming, String> {
        let p = complete(&NIC_MAC, params)?;
        let clock = Clock::from_mhz(p.float("clock_mhz"));
        Ok(MacTiming {
            byte_ps: 8.0 * 1000.0 / p.float("line_rate_gbps"),
            pipeline: clock.cycles(p.uint("pipeline_cycles")),
            clock,
            loopback: ns_to_ps(p.float("loopback_ns")),
            sram: ns_to_ps(p.float("sram_latency_ns")),
        })
    }

    /// Time `bytes` take on the streaming interface.
    pub fn wire(&self, bytes: u64) -> Tick {
        (bytes as f64 * self.byte_ps).ceil() as Tick
    }

    /// Last egress beat of a `len`-byte frame whose last byte reached SRAM
    /// at `complete`, with the egress port free from `port_free`.
    pub fn egress(&self, complete: Tick, port_free: Tick, len: u64) -> Tick {
        let start = (self.clock.next_edge(complete) + self.pipeline).max(port_free);
        start + self.wire(len)
    }

    /// When the first `bytes` of a `len`-byte frame whose last ingress beat
    /// is at `last_beat` are in SRAM (cut-through, at line rate).
    pub fn rx_landed(&self, last_beat: Tick, len: u64, bytes: u64) -> Tick {
        let beat = last_beat - self.wire(len - bytes.min(len));
        self.clock.next_edge(beat) + self.pipeline
    }
}

/// A frame's TX slot while it fills.
#[derive(Debug, Default)]
struct TxSlot {
    written: Vec<bool>,
    sent: bool,
}

/// The packet SRAM, NIC logic and MAC of the PCIe designs (a component on
/// the XDMA endpoint's `mem` port).
pub struct PacketBuffer {
    mac: MacTiming,
    /// SRAM contents.
    pub data: SparseMemory,
    tx: BTreeMap<u64, TxSlot>,
    port_free: Tick,
    /// Last egress beat of frame `i` (TX latency end).
    pub tx_last_beat: BTreeMap<u64, Tick>,
    /// Last ingress beat of frame `i` (RX latency start) and its length.
    pub rx_last_beat: BTreeMap<u64, (Tick, u64)>,
    /// Reads of RX slots whose frame is not back yet: (slot, port, request).
    held: Vec<(u64, PortId, u64, u64, u32)>,
    /// Extra return delay of frame `i` beyond the loopback (an echo peer).
    echo: Vec<Tick>,
    out: DelayLine,
}

impl PacketBuffer {
    /// From `nic_mac` parameters.
    pub fn from_params(params: &Params) -> Result<PacketBuffer, String> {
        Ok(PacketBuffer {
            mac: MacTiming::from_params(params)?,
            data: SparseMemory::new(),
            tx: BTreeMap::new(),
            port_free: 0,
            tx_last_beat: BTreeMap::new(),
            rx_last_beat: BTreeMap::new(),
            held: Vec::new(),
            echo: Vec::new(),
            out: DelayLine::new(0),
        })
    }

    /// Frame `i` comes back `delays[i]` later than the loopback alone would
    /// bring it (a remote echo peer: network and peer time); 0 or missing:
    /// the near-end loopback of the paper.
    pub fn set_echo_delays(&mut self, delays: Vec<Tick>) {
        self.echo = delays;
    }

    /// Frames whose status-register update has happened by `now`.
    fn frames_received(&self, now: Tick) -> u32 {
        self.rx_last_beat
            .values()
            .filter(|(t, _)| self.mac.clock.next_edge(*t) + self.mac.pipeline <= now)
            .count() as u32
    }

    /// Marks `[off, off + n)` of TX slot `slot` written; sends the frame
    /// once complete.
    fn tx_written(&mut self, ctx: &mut Ctx<'_, Msg>, slot: u64, off: u64, n: u64) {
        let s = self.tx.entry(slot).or_default();
        let end = ((off + n) as usize).min(SLOT_BYTES as usize);
        if s.written.len() < end {
            s.written.resize(end, false);
        }
        s.written[off as usize..end]
            .iter_mut()
            .for_each(|w| *w = true);
        if s.sent || s.written.len() < TX_HEADER as usize {
            return;
        }
        if !s.written[..TX_HEADER as usize].iter().all(|w| *w) {
            return;
        }
        let base = TX_BASE + slot * SLOT_BYTES;
        let len = self.data.read_u32(base) as u64;
        let need = (TX_FRAME + len) as usize;
        if len == 0 || len > MAX_FRAME || s.written.len() < need {
            return;
        }
        if !s.written[TX_FRAME as usize..need].iter().all(|w| *w) {
            return;
        }
        s.sent = true;
        // The frame is in SRAM once this write lands.
        let complete = ctx.now() + self.mac.sram;
        let last = self.mac.egress(complete, self.port_free, len);
        self.port_free = last;
        self.tx_last_beat.insert(slot, last);
        ctx.count(0, 1);
        // Near-end loopback: the same bytes come back into RX slot `slot`.
        let frame = self.data.read(base + TX_FRAME, len as usize);
        let echo = self.echo.get(slot as usize).copied().unwrap_or(0);
        let rx_last = last + self.mac.loopback + echo;
        self.data.write(RX_BASE + slot * SLOT_BYTES, &frame);
        self.rx_last_beat.insert(slot, (rx_last, len));
        ctx.count(1, 1);
        for (s, port, id, addr, l) in std::mem::take(&mut self.held) {
            if s == slot {
                self.read(ctx, port, id, addr, l);
            } else {
                self.held.push((s, port, id, addr, l));
            }
        }
    }

    fn read(&mut self, ctx: &mut Ctx<'_, Msg>, port: PortId, id: u64, addr: u64, len: u32) {
        let now = ctx.now();
        let mut ready = now;
        let mut data = None;
        if addr < RX_STATUS + 4 {
            ctx.count(3, 1);
            let n = self.frames_received(now).to_le_bytes();
            data = Some(
                (addr..addr + len as u64)
                    .map(|a| if a < 4 { n[a as usize] } else { 0 })
                    .collect(),
            );
        } else if addr >= RX_BASE {
            let slot = (addr - RX_BASE) / SLOT_BYTES;
            let Some(&(last, flen)) = self.rx_last_beat.get(&slot) else {
                ctx.count(2, 1);
                self.held.push((slot, port, id, addr, len));
                return;
            };
            let upto = addr + len as u64 - (RX_BASE + slot * SLOT_BYTES);
            let landed = self.mac.rx_landed(last, flen, upto);
            if landed > now {
                ctx.count(2, 1);
                ready = landed;
            }
        }
        let data = data.unwrap_or_else(|| self.data.read(addr, len as usize));
        let at = ready + self.mac.sram;
        self.out
            .push(ctx, at, port, Msg::MemResp(MemResp::Data { id, data }));
    }
}

impl Component<Msg> for PacketBuffer {
    fn spec(&self) -> &'static ComponentSpec {
        &NIC_MAC
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::MemReq(r) => match *r {
                MemReq::Read { id, addr, len } => self.read(ctx, port, id, addr, len),
                MemReq::Write { id, addr, data } => {
                    self.data.write(addr, &data);
                    if (TX_BASE..RX_BASE).contains(&addr) {
                        let slot = (addr - TX_BASE) / SLOT_BYTES;
                        let off = addr - TX_BASE - slot * SLOT_BYTES;
                        self.tx_written(ctx, slot, off, data.len() as u64);
                    }
                    let at = ctx.now() + self.mac.sram;
                    self.out
                        .push(ctx, at, port, Msg::MemResp(MemResp::Ack { id }));
                }
            },
            other => debug_assert!(false, "nic_mac: unexpected {other:?}"),
        }
    }
    fn on_wake(&mut self, _token: u64, ctx: &mut Ctx<'_, Msg>) {
        self.out.fire(ctx);
    }
}

/// A host + PCIe system whose FPGA holds the NIC: the components of a
/// [`PcieSystem`](ccsim_pcie::system::PcieSystem) with a [`PacketBuffer`] in place of the
/// device BRAM.
pub struct NicPcieSystem {
    /// The runnable simulation.
    pub sim: Simulation<Msg>,
    /// The core.
    pub core: ComponentId,
    /// Host memory.
    pub host_memory: ComponentId,
    /// The root complex.
    pub root_complex: ComponentId,
    /// The PCIe link.
    pub link: ComponentId,
    /// The XDMA engine / endpoint.
    pub engine: ComponentId,
    /// The NIC's packet buffer and MAC.
    pub nic: ComponentId,
    /// BAR0 (engine registers) bus address.
    pub bar0: u64,
    /// BAR1 (packet SRAM window) bus address.
    pub bar1: u64,
}

impl NicPcieSystem {
    /// BAR0 and BAR1 of the engine these parameters describe (to write the
    /// program before building).
    pub fn bars(p: &PcieSystemParams) -> Result<(u64, u64), String> {
        let cfg = link_config(&p.pcie_link)?;
        let e = XdmaEngine::from_params(&p.xdma_engine, &cfg)?;
        Ok((e.bar0(), e.bar1()))
    }

    /// Builds the system with the core running `program`; `nic` are the
    /// `nic_mac` parameters (`p.device_memory` is not used), `echo` the
    /// per-frame extra return delays ([`PacketBuffer::set_echo_delays`]);
    /// `setup` preloads host memory.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        p: &PcieSystemParams,
        nic: &Params,
        echo: Vec<Tick>,
        program: Vec<Op>,
        seed: u64,
        trace: TraceMode,
        setup: impl FnOnce(&mut Memory),
    ) -> Result<NicPcieSystem, String> {
        let mut host = Memory::host(&p.host_memory)?;
        setup(&mut host);
        let mut buffer = PacketBuffer::from_params(nic)?;
        buffer.set_echo_delays(echo);
        let built = build_host_and_pcie(p, program, seed, trace, host, "nic", buffer)?;
        Ok(NicPcieSystem {
            sim: built.sim,
            core: built.core,
            host_memory: built.host_memory,
            root_complex: built.root_complex,
            link: built.link,
            engine: built.engine,
            nic: built.device,
            bar0: built.bar0,
            bar1: built.bar1,
        })
    }

    /// The core.
    pub fn core(&self) -> &Core {
        self.sim.component::<Core>(self.core).expect("core")
    }
    /// Host memory.
    pub fn host_memory(&self) -> &Memory {
        self.sim
            .component::<Memory>(self.host_memory)
            .expect("host memory")
    }
    /// The NIC.
    pub fn nic(&self) -> &PacketBuffer {
        self.sim.component::<PacketBuffer>(self.nic).expect("nic")
    }
    /// The report of a run that did not finish
    /// ([`ccsim_pcie::system::stuck_report`]).
    pub fn stuck_report(&self) -> Vec<String> {
        ccsim_pcie::system::stuck_report(
            &self.sim,
            [self.core, self.root_complex, self.link, self.engine],
        )
    }
    /// The link's fault counts ([`ccsim_pcie::system::link_fault_stats`]).
    pub fn fault_stats(&self) -> Vec<(String, f64)> {
        ccsim_pcie::system::link_fault_stats(&self.sim, self.link)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_rate_and_cut_through() {
        let m = MacTiming::from_params(&Params::new()).unwrap();
        // 100 Gb/s: 80 ps per byte; 9600 B take 768 ns.
        assert_eq!(m.wire(9600), 768_000);
        // The first line of a jumbo frame lands long before its last beat.
        let last = 1_000_000;
        assert!(m.rx_landed(last, 9600, 128) < last - 700_000);
        assert!(m.rx_landed(last, 9600, 9600) >= last);
        // Store-and-forward egress waits for a busy port.
        assert_eq!(m.egress(0, 50_000, 64), 50_000 + 5_120);
    }
}
