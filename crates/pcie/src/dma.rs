//! The `xdma_engine` component: an XDMA-like descriptor DMA engine and the
//! device's PCIe endpoint.
//!
//! ```text
//!  host: driver writes 32-B descriptors to host memory, then rings the
//!        doorbell (uncached MMIO writes to BAR0 channel registers)
//!                     │ MWr                           ▲ MWr status / MSI
//!  ─────────── PCIe ──┼───────────────────────────────┼──────────────────
//!  xdma_engine:   registers ─► descriptor fetch (MRd ─► CplD, batched)
//!                 ─► descriptor stage (desc_cycles each, in order)
//!                 ─► H2C: MRd host src (MRRS, tags) ─► CplD ─► datapath ─► BRAM
//!                    C2H: BRAM ─► datapath ─► MWr host dst (MPS, 4 KiB)
//!                 ─► all done: status write-back and/or MSI-X write
//! ```
//!
//! BAR0 holds the channel registers ([`regs`]); BAR1 is a window onto the
//! device memory (BRAM) for programmed I/O. Descriptors use the XDMA layout
//! (Xilinx PG195, "Descriptor format"): a control word with magic `0xAD4B`,
//! the length, source, destination and next addresses ([`Descriptor`]).
//! A descriptor without the magic stops the channel with an error, as the
//! hardware does.
//!
//! Timing comes from the engine clock: a doorbell takes `doorbell_cycles` to
//! start the channel; each descriptor spends `desc_cycles` in the descriptor
//! stage; every TLP crossing the datapath takes
//! `ceil(bytes / datapath_bytes) + tlp_overhead_cycles` cycles. Reads are
//! limited by `max_tags` outstanding requests.
//!
//! Fault injection: with `stuck_after_doorbells = N` > 0 the engine takes
//! the first N doorbells and then hangs: a later doorbell sets the channel
//! busy and nothing more happens, so the driver waits for a completion that
//! never comes (its `timeout_us`, or the run's time limit, ends the wait
//! with a report: [`XdmaEngine::report`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ccsim_kernel::prelude::*;

use crate::msg::{MemReq, MemResp, Msg, Tlp};
use crate::tlp::{LinkConfig, TlpKind};
use crate::util::complete;

/// Channel register layout in BAR0. Channel `c` (0 = H2C, 1 = C2H) starts at
/// `c * CHANNEL_STRIDE`.
pub mod regs {
    /// Distance between channel register blocks.
    pub const CHANNEL_STRIDE: u64 = 0x100;
    /// Host address of the first descriptor (u64).
    pub const DESC_ADDR: u64 = 0x00;
    /// Number of descriptors (u32).
    pub const DESC_COUNT: u64 = 0x08;
    /// Control (u32): [`CTRL_RUN`], [`CTRL_IRQ`], [`CTRL_WRITEBACK`].
    pub const CONTROL: u64 = 0x0C;
    /// Host address of the status write-back (u64).
    pub const WB_ADDR: u64 = 0x10;
    /// Status (u32, read-only): completed descriptors; bit 31 busy, bit 30 error.
    pub const STATUS: u64 = 0x18;
    /// MSI-X message data sent when the channel completes (u32).
    pub const MSI_DATA: u64 = 0x1C;
    /// Inline descriptor (TaPaSCo-style register-programmed DMA): source
    /// address (u64).
    pub const INLINE_SRC: u64 = 0x20;
    /// Inline descriptor: destination address (u64).
    pub const INLINE_DST: u64 = 0x28;
    /// Inline descriptor: length in bytes (u32).
    pub const INLINE_LEN: u64 = 0x30;
    /// Bytes of the inline descriptor registers.
    pub const INLINE_BYTES: usize = 0x18;
    /// Host address of the C2H stream result records (u64), used with
    /// [`CTRL_RESULTS`]. XDMA carries it in each AXI-ST C2H descriptor's
    /// source field (Xilinx PG195, "C2H Stream Writeback"); the model's
    /// C2H descriptors keep the card address of the NIC's receive slot
    /// there, so the address is a register written with the others.
    pub const RESULT_ADDR: u64 = 0x40;
    /// Writing CONTROL with this bit starts the channel (the doorbell).
    pub const CTRL_RUN: u32 = 1;
    /// The one descriptor is in the INLINE registers, not in host memory
    /// (no descriptor fetch): a register-programmed engine such as
    /// TaPaSCo's.
    pub const CTRL_INLINE: u32 = 8;
    /// With [`CTRL_INLINE`]: repeat the inline descriptor DESC_COUNT times
    /// at consecutive source and destination addresses (device-issued DMA
    /// streams, no descriptor fetch).
    pub const CTRL_REPEAT: u32 = 16;
    /// Send an MSI-X write on completion.
    pub const CTRL_IRQ: u32 = 2;
    /// Write the completed count to `WB_ADDR` on completion.
    pub const CTRL_WRITEBACK: u32 = 4;
    /// C2H stream results: as each C2H descriptor completes, write its
    /// 32-byte result record ([`crate::dma::StreamResult`]) to
    /// `RESULT_ADDR + 32 * index`, behind its data.
    pub const CTRL_RESULTS: u32 = 32;
    /// STATUS: channel busy.
    pub const STATUS_BUSY: u32 = 1 << 31;
    /// STATUS: channel stopped on an error.
    pub const STATUS_ERROR: u32 = 1 << 30;
}

/// Host-to-card channel index.
pub const H2C: usize = 0;
/// Card-to-host channel index.
pub const C2H: usize = 1;

/// Size of one descriptor in host memory.
pub const DESC_BYTES: u32 = 32;
/// Size of BAR0, the channel registers.
pub const BAR0_BYTES: u64 = 0x1_0000;
/// Magic in the upper half of a descriptor's control word.
pub const DESC_MAGIC: u32 = 0xAD4B_0000;

/// Bytes of one C2H stream result record in host memory (`struct
/// xdma_result` of the Xilinx XDMA Linux driver: status, length and six
/// reserved words).
pub const RESULT_BYTES: u64 = 32;
/// Magic in the upper half of a result record's status word (PG195, C2H
/// Stream Writeback: 0x52B4).
pub const RESULT_MAGIC: u32 = 0x52B4_0000;

/// The record the engine writes per completed AXI-ST C2H descriptor
/// ([`regs::CTRL_RESULTS`]): what the driver reads back for the length it
/// received (libxdma.c `xdma_xfer_submit`: `done += result[i].length`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamResult {
    /// End of packet (status bit 0).
    pub eop: bool,
    /// Bytes the descriptor received.
    pub len: u32,
}

impl StreamResult {
    /// The 32 bytes the engine writes.
    pub fn encode(&self) -> [u8; RESULT_BYTES as usize] {
        let mut b = [0u8; RESULT_BYTES as usize];
        b[0..4].copy_from_slice(&(RESULT_MAGIC | u32::from(self.eop)).to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b
    }
}

/// An XDMA-style descriptor (32 bytes, little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// Control flags (lower 16 bits; the magic is added on encode): bit 0
    /// stop, bit 1 completed, bit 4 end of packet.
    pub flags: u16,
    /// Bytes to move.
    pub len: u32,
    /// Source address (host for H2C, card for C2H).
    pub src: u64,
    /// Destination address (card for H2C, host for C2H).
    pub dst: u64,
    /// Host address of the next descriptor (0 = none).
    pub next: u64,
}

impl Descriptor {
    /// The 32 bytes the driver stores in host memory.
    pub fn encode(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&(DESC_MAGIC | self.flags as u32).to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.src.to_le_bytes());
        b[16..24].copy_from_slice(&self.dst.to_le_bytes());
        b[24..32].copy_from_slice(&self.next.to_le_bytes());
        b
    }
    /// Parses 32 bytes; fails if the magic is missing.
    pub fn decode(b: &[u8]) -> Result<Descriptor, String> {
        if b.len() < 32 {
            return Err(format!("descriptor is {} bytes, expected 32", b.len()));
        }
        let u32at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
        let u64at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        let control = u32at(0);
        if control & 0xFFFF_0000 != DESC_MAGIC {
            return Err(format!(
                "descriptor control word {control:#010x} lacks the magic 0xAD4B"
            ));
        }
        Ok(Descriptor {
            flags: (control & 0xFFFF) as u16,
            len: u32at(4),
            src: u64at(8),
            dst: u64at(16),
            next: u64at(24),
        })
    }
}

/// Declaration of `xdma_engine`.
pub static XDMA_ENGINE: ComponentSpec = ComponentSpec {
    type_name: "xdma_engine",
    description: "XDMA-like DMA engine and PCIe endpoint: BAR0 channel registers with a doorbell, 32-byte descriptors fetched from host memory, H2C/C2H channels with tag-limited reads, status write-back or MSI-X completion, and a BAR1 window onto device memory.",
    params: &[
        ParamSpec { name: "clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(250.0), unit: "MHz", range: ParamRange::positive(), from: "assumed: XDMA AXI clock for Gen3 (Xilinx PG195)", description: "Engine clock." },
        ParamSpec { name: "datapath_bytes", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "bytes", range: ParamRange::at_least(1.0), from: "assumed: 512-bit AXI-Stream datapath of XDMA at Gen3 x16 (Xilinx PG195)", description: "Datapath width: bytes per cycle through the engine." },
        ParamSpec { name: "tlp_overhead_cycles", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed: one header beat per TLP", description: "Extra datapath cycles per TLP (header beat)." },
        ParamSpec { name: "desc_cycles", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed", description: "Cycles one descriptor spends in the descriptor stage before its data moves." },
        ParamSpec { name: "doorbell_cycles", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed", description: "Cycles from the doorbell write to the first descriptor fetch." },
        ParamSpec { name: "reg_read_cycles", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed", description: "Cycles to answer a BAR0 register read." },
        ParamSpec { name: "desc_batch", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "descriptors", range: ParamRange::at_least(1.0), from: "assumed: up to 16 adjacent descriptors per fetch (Xilinx PG195 'Nxt_adj')", description: "Adjacent descriptors fetched by one read request: at most max_read_request_bytes / 32 of every pcie_link of the platform." },
        ParamSpec { name: "desc_prefetch", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "descriptors", range: ParamRange::at_least(1.0), from: "assumed", description: "Descriptors fetched ahead of the descriptor stage (at least desc_batch)." },
        ParamSpec { name: "max_tags", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "tags", range: ParamRange::between(1.0, 1024.0), from: "assumed", description: "Outstanding read requests (PCIe tags) the engine can track." },
        ParamSpec { name: "bar0_base", kind: ParamKind::Int, default: ParamDefault::Int(0xF000_0000), unit: "address", range: ParamRange::at_least(0.0), from: "assumed: a free 32-bit bus address", description: "Bus address of BAR0 (64 KiB of channel registers)." },
        ParamSpec { name: "bar1_base", kind: ParamKind::Int, default: ParamDefault::Int(0xE000_0000), unit: "address", range: ParamRange::at_least(0.0), from: "assumed: a free 32-bit bus address below BAR0", description: "Bus address of BAR1, the window onto device memory (not overlapping BAR0)." },
        ParamSpec { name: "bar1_bytes", kind: ParamKind::Int, default: ParamDefault::Int(0x1000_0000), unit: "bytes", range: ParamRange::at_least(1.0), from: "assumed: a 256 MiB window", description: "Size of BAR1." },
        ParamSpec { name: "stuck_after_doorbells", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "doorbells", range: ParamRange::between(0.0, 1e9), from: "assumed: a healthy engine (fault injection)", description: "The engine hangs after this many doorbells: later ones set the channel busy and start nothing (0 = never)." },
    ],
    ports: &[
        PortSpec { name: "pcie", description: "TLPs to and from the PCIe link (downstream port of the link).", required: true },
        PortSpec { name: "mem", description: "Device memory (BRAM).", required: true },
    ],
    stats: &[
        StatSpec { name: "descriptors", kind: StatKind::Counter, unit: "descriptors", description: "Descriptors completed." },
        StatSpec { name: "h2c_bytes", kind: StatKind::Counter, unit: "bytes", description: "Bytes moved host to card." },
        StatSpec { name: "c2h_bytes", kind: StatKind::Counter, unit: "bytes", description: "Bytes moved card to host." },
        StatSpec { name: "read_requests", kind: StatKind::Counter, unit: "MRd", description: "Read requests issued (descriptors and data)." },
        StatSpec { name: "tag_stalls", kind: StatKind::Counter, unit: "events", description: "Times a read waited for a free tag." },
        StatSpec { name: "errors", kind: StatKind::Counter, unit: "descriptors", description: "Descriptors rejected (bad magic)." },
        StatSpec { name: "doorbells", kind: StatKind::Counter, unit: "writes", description: "Channel starts." },
        StatSpec { name: "read_ns", kind: StatKind::Histogram, unit: "ns", description: "Read round trip: MRd issued to last CplD received." },
    ],
    check: Some(check),
};

/// The prefetch holds whole batches, the BARs do not overlap, and one
/// batch of descriptors fits one read request of every link of the
/// platform.
fn check(p: &Params, peers: Peers<'_>) -> Result<(), ParamProblem> {
    let (batch, prefetch) = (p.int("desc_batch"), p.int("desc_prefetch"));
    if prefetch < batch {
        return Err(ParamProblem::new(
            "desc_prefetch",
            format!("must be at least desc_batch ({batch}), got {prefetch}"),
        ));
    }
    let (bar0, bar1, bar1_bytes) = (
        p.uint("bar0_base"),
        p.uint("bar1_base"),
        p.uint("bar1_bytes"),
    );
    if bar1 < bar0 + BAR0_BYTES && bar0 < bar1.saturating_add(bar1_bytes) {
        return Err(ParamProblem::new(
            "bar1_base",
            format!(
                "the BAR1 window [{bar1:#x}, {:#x}) overlaps BAR0's 64 KiB at {bar0:#x}",
                bar1.saturating_add(bar1_bytes)
            ),
        ));
    }
    for link in peers.of_type("pcie_link") {
        let mrrs = link.params.uint("max_read_request_bytes") as u32;
        if let Some(problem) = batch_problem(batch as u32, mrrs, link.instance) {
            return Err(problem);
        }
    }
    Ok(())
}

/// A batch of descriptors is fetched by one read request: at most MRRS
/// bytes.
fn batch_problem(batch: u32, mrrs: u32, link: &str) -> Option<ParamProblem> {
    (batch * DESC_BYTES > mrrs).then(|| {
        ParamProblem::new(
            "desc_batch",
            format!(
                "must be at most {} ({DESC_BYTES} B descriptors in one {mrrs} B read request of {link}), got {batch}",
                mrrs / DESC_BYTES
            ),
        )
    })
}

#[derive(Debug, Clone, Copy)]
enum ReadPurpose {
    Desc { ch: usize, first: u32, count: u32 },
    H2c { ch: usize, idx: u32, card: u64 },
}

struct ReadCtx {
    purpose: ReadPurpose,
    issued: Tick,
    received: u32,
    buf: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
enum BramPurpose {
    H2cWrite { ch: usize, idx: u32, len: u32 },
    C2hRead { ch: usize, idx: u32, host: u64 },
    HostRead { tag: u16, addr: u64 },
    HostWrite,
}

enum Action {
    Start(usize),
    DescReady(usize),
    Bram(Msg),
    Tlp(Tlp),
    C2hSent { ch: usize, idx: u32, tlp: Tlp },
}

#[derive(Default)]
struct Channel {
    regs: [u8; 32],
    /// The inline descriptor registers (at 0x20).
    inline: [u8; regs::INLINE_BYTES],
    /// The stream result address register ([`regs::RESULT_ADDR`]).
    result_addr: [u8; 8],
    /// Lengths of the descriptors in flight, for their result records.
    lens: BTreeMap<u32, u32>,
    busy: bool,
    error: bool,
    base: u64,
    count: u32,
    next_fetch: u32,
    fetched: BTreeMap<u32, Descriptor>,
    next_stage: u32,
    stage_active: bool,
    bytes_left: BTreeMap<u32, u64>,
    finished: BTreeSet<u32>,
    completed: u32,
    done_times: Vec<Tick>,
    doorbell_times: Vec<Tick>,
    /// Every descriptor completion since the start, across runs.
    done_log: Vec<Tick>,
}

impl Channel {
    fn reg_u32(&self, off: u64) -> u32 {
        let o = off as usize;
        u32::from_le_bytes(self.regs[o..o + 4].try_into().expect("4"))
    }
    fn reg_u64(&self, off: u64) -> u64 {
        let o = off as usize;
        u64::from_le_bytes(self.regs[o..o + 8].try_into().expect("8"))
    }
    /// The descriptor the INLINE registers hold.
    fn inline_descriptor(&self) -> Descriptor {
        let at = |r: u64| (r - regs::INLINE_SRC) as usize;
        let u64at =
            |r: u64| u64::from_le_bytes(self.inline[at(r)..at(r) + 8].try_into().expect("8"));
        let len = u32::from_le_bytes(
            self.inline[at(regs::INLINE_LEN)..at(regs::INLINE_LEN) + 4]
                .try_into()
                .expect("4"),
        );
        Descriptor {
            flags: 0,
            len,
            src: u64at(regs::INLINE_SRC),
            dst: u64at(regs::INLINE_DST),
            next: 0,
        }
    }
    fn status(&self) -> u32 {
        self.completed
            | if self.busy { regs::STATUS_BUSY } else { 0 }
            | if self.error { regs::STATUS_ERROR } else { 0 }
    }
}

/// The DMA engine / endpoint.
pub struct XdmaEngine {
    link: LinkConfig,
    clock: Clock,
    datapath_bytes: u64,
    tlp_overhead: u64,
    desc_cycles: u64,
    doorbell_cycles: u64,
    reg_read_cycles: u64,
    desc_batch: u32,
    desc_prefetch: u32,
    bar0: u64,
    bar1: u64,
    bar1_bytes: u64,
    msi_address: u64,
    channels: [Channel; 2],
    free_tags: Vec<u16>,
    reads: BTreeMap<u16, ReadCtx>,
    read_queue: VecDeque<(u64, u32, ReadPurpose)>,
    bram: BTreeMap<u64, BramPurpose>,
    next_id: u64,
    datapath_busy: [Tick; 2],
    actions: BTreeMap<(Tick, u64), Action>,
    seq: u64,
    stuck_after: u64,
    doorbells_seen: u64,
    /// When the engine hung: (channel, tick of the doorbell it ignored).
    hung: Option<(usize, Tick)>,
}

impl XdmaEngine {
    /// An engine from validated parameters behind `link`.
    pub fn from_params(params: &Params, link: &LinkConfig) -> Result<XdmaEngine, String> {
        let p = complete(&XDMA_ENGINE, params)?;
        let desc_batch = p.uint("desc_batch") as u32;
        // A guard: the platform's check bounds the batch by every link's MRRS.
        if let Some(problem) = batch_problem(desc_batch, link.mrrs, "the link") {
            return Err(format!("{}.{problem}", XDMA_ENGINE.type_name));
        }
        Ok(XdmaEngine {
            link: link.clone(),
            clock: Clock::from_mhz(p.float("clock_mhz")),
            datapath_bytes: p.uint("datapath_bytes"),
            tlp_overhead: p.uint("tlp_overhead_cycles"),
            desc_cycles: p.uint("desc_cycles"),
            doorbell_cycles: p.uint("doorbell_cycles"),
            reg_read_cycles: p.uint("reg_read_cycles"),
            desc_batch,
            desc_prefetch: p.uint("desc_prefetch") as u32,
            bar0: p.uint("bar0_base"),
            bar1: p.uint("bar1_base"),
            bar1_bytes: p.uint("bar1_bytes"),
            msi_address: 0xFEE0_0000,
            channels: Default::default(),
            free_tags: (0..p.uint("max_tags") as u16).rev().collect(),
            reads: BTreeMap::new(),
            read_queue: VecDeque::new(),
            bram: BTreeMap::new(),
            next_id: 0,
            datapath_busy: [0; 2],
            actions: BTreeMap::new(),
            seq: 0,
            stuck_after: p.uint("stuck_after_doorbells"),
            doorbells_seen: 0,
            hung: None,
        })
    }

    /// Whether the engine has hung (`stuck_after_doorbells`): the channel
    /// and the tick of the first doorbell it ignored.
    pub fn hung(&self) -> Option<(usize, Tick)> {
        self.hung
    }

    /// The engine's state for a stuck run's report: one line for the
    /// engine, one per channel.
    pub fn report(&self) -> Vec<String> {
        let mut head = format!(
            "dma engine: {} doorbells received, {} reads in flight (tags {:?}), {} reads queued for a tag, {} device-memory requests outstanding",
            self.doorbells_seen,
            self.reads.len(),
            self.reads.keys().take(8).collect::<Vec<_>>(),
            self.read_queue.len(),
            self.bram.len()
        );
        if let Some((ch, t)) = self.hung {
            head.push_str(&format!(
                "; HUNG: ignored the doorbell of channel {} at {:.3} us (xdma_engine.stuck_after_doorbells = {})",
                ["H2C", "C2H"][ch],
                t as f64 / 1e6,
                self.stuck_after
            ));
        }
        let mut out = vec![head];
        for (ch, c) in self.channels.iter().enumerate() {
            out.push(format!(
                "dma channel {}: {}{}, registers ask for {} descriptors at {:#x}; its run: {} of {} descriptors completed, fetched up to {}, staged up to {}, {} in the data stage",
                ["H2C", "C2H"][ch],
                if c.busy { "busy" } else { "idle" },
                if c.error { ", stopped on an error" } else { "" },
                c.reg_u32(regs::DESC_COUNT),
                c.reg_u64(regs::DESC_ADDR),
                c.completed,
                c.count,
                c.next_fetch,
                c.next_stage,
                c.bytes_left.len()
            ));
        }
        out
    }

    /// Bus address of BAR0 (channel registers).
    pub fn bar0(&self) -> u64 {
        self.bar0
    }
    /// Bus address of BAR1 (device memory window).
    pub fn bar1(&self) -> u64 {
        self.bar1
    }
    /// Programs the MSI-X address (the OS writes the root complex's MSI
    /// address into the engine's MSI-X table at probe time).
    pub fn set_msi_address(&mut self, addr: u64) {
        self.msi_address = addr;
    }
    /// Ticks at which each descriptor of channel `ch` completed, in order.
    pub fn done_times(&self, ch: usize) -> &[Tick] {
        &self.channels[ch].done_times
    }
    /// Ticks at which each descriptor of channel `ch` completed, over all
    /// its runs (where [`XdmaEngine::done_times`] holds the last run's).
    pub fn done_log(&self, ch: usize) -> &[Tick] {
        &self.channels[ch].done_log
    }
    /// Ticks at which each doorbell of channel `ch` arrived, in order.
    pub fn doorbell_times(&self, ch: usize) -> &[Tick] {
        &self.channels[ch].doorbell_times
    }
    /// The STATUS register of channel `ch`.
    pub fn status(&self, ch: usize) -> u32 {
        self.channels[ch].status()
    }

    fn at(&mut self, ctx: &mut Ctx<'_, Msg>, t: Tick, a: Action) {
        self.actions.insert((t, self.seq), a);
        self.seq += 1;
        ctx.wake_at(t, 0);
    }

    fn bram_send(
        &mut self,
        ctx: &mut Ctx<'_, Msg>,
        purpose: BramPurpose,
        req: impl FnOnce(u64) -> MemReq,
    ) {
        let id = self.next_id;
        self.next_id += 1;
        self.bram.insert(id, purpose);
        let msg = Msg::mem_req(req(id));
        let b = crate::msg::onchip_bytes(&msg);
        ctx.send(1, msg, b, 0);
    }

    /// Reserves the datapath of direction `dir` for a TLP of `bytes`;
    /// returns when it has passed.
    fn datapath(&mut self, now: Tick, dir: usize, bytes: u64) -> Tick {
        let cycles = bytes.div_ceil(self.datapath_bytes) + self.tlp_overhead;
        let start = self.clock.next_edge(now.max(self.datapath_busy[dir]));
        self.datapath_busy[dir] = start + self.clock.cycles(cycles);
        self.datapath_busy[dir]
    }

    fn issue_reads(&mut self, ctx: &mut Ctx<'_, Msg>) {
        while !self.read_queue.is_empty() {
            let Some(tag) = self.free_tags.pop() else {
                ctx.count(4, 1);
                return;
            };
            let (addr, len, purpose) = self.read_queue.pop_front().expect("non-empty");
            self.reads.insert(
                tag,
                ReadCtx {
                    purpose,
                    issued: ctx.now(),
                    received: 0,
                    buf: Vec::new(),
                },
            );
            ctx.count(3, 1);
            ctx.send(0, Msg::tlp(Tlp::read(addr, len, tag)), 0, 0);
        }
    }

    fn try_fetch(&mut self, ctx: &mut Ctx<'_, Msg>, ch: usize) {
        loop {
            let c = &self.channels[ch];
            if !c.busy || c.error || c.next_fetch >= c.count {
                return;
            }
            let ahead = c.next_fetch - c.next_stage;
            let n = self.desc_batch.min(c.count - c.next_fetch);
            if ahead + n > self.desc_prefetch {
                return;
            }
            let addr = c.base + c.next_fetch as u64 * DESC_BYTES as u64;
            let first = c.next_fetch;
            self.channels[ch].next_fetch += n;
            // A batch never crosses 4 KiB in a ring of 32-byte descriptors
            // aligned to its size, but split anyway to stay legal.
            let mut done = 0;
            for (a, len) in self.link.split_read(addr, (n * DESC_BYTES) as u64) {
                let cnt = len / DESC_BYTES;
                self.read_queue.push_back((
                    a,
                    len,
                    ReadPurpose::Desc {
                        ch,
                        first: first + done,
                        count: cnt,
                    },
                ));
                done += cnt;
            }
            self.issue_reads(ctx);
        }
    }

    fn try_stage(&mut self, ctx: &mut Ctx<'_, Msg>, ch: usize) {
        let c = &mut self.channels[ch];
        if c.stage_active || c.error || !c.fetched.contains_key(&c.next_stage) {
            return;
        }
        c.stage_active = true;
        let t = self.clock.next_edge(ctx.now()) + self.clock.cycles(self.desc_cycles);
        self.at(ctx, t, Action::DescReady(ch));
    }

    fn desc_ready(&mut self, ctx: &mut Ctx<'_, Msg>, ch: usize) {
        let c = &mut self.channels[ch];
        c.stage_active = false;
        let idx = c.next_stage;
        let d = c.fetched.remove(&idx).expect("staged descriptor");
        c.next_stage += 1;
        c.bytes_left.insert(idx, d.len as u64);
        c.lens.insert(idx, d.len);
        if d.len == 0 {
            self.bytes_done(ctx, ch, idx, 0);
        } else if ch == H2C {
            for (a, n) in self.link.split_read(d.src, d.len as u64) {
                let card = d.dst + (a - d.src);
                self.read_queue
                    .push_back((a, n, ReadPurpose::H2c { ch, idx, card }));
            }
            self.issue_reads(ctx);
        } else {
            for (a, n) in self.link.split_write(d.dst, d.len as u64) {
                let card = d.src + (a - d.dst);
                self.bram_send(ctx, BramPurpose::C2hRead { ch, idx, host: a }, |id| {
                    MemReq::Read {
                        id,
                        addr: card,
                        len: n,
                    }
                });
            }
        }
        self.try_stage(ctx, ch);
        self.try_fetch(ctx, ch);
    }

    fn bytes_done(&mut self, ctx: &mut Ctx<'_, Msg>, ch: usize, idx: u32, n: u64) {
        let c = &mut self.channels[ch];
        let left = c.bytes_left.get_mut(&idx).expect("descriptor in flight");
        *left -= n;
        if *left > 0 {
            return;
        }
        c.bytes_left.remove(&idx);
        c.finished.insert(idx);
        let results = ch == C2H && c.reg_u32(regs::CONTROL) & regs::CTRL_RESULTS != 0;
        let result_base = u64::from_le_bytes(c.result_addr);
        let mut records = Vec::new();
        // Descriptors complete in order.
        while c.finished.remove(&c.completed) {
            let len = c.lens.remove(&c.completed).unwrap_or(0);
            if results {
                let last = c.completed + 1 == c.count;
                let addr = result_base + c.completed as u64 * RESULT_BYTES;
                records.push((addr, StreamResult { eop: last, len }));
            }
            c.completed += 1;
            c.done_times.push(ctx.now());
            c.done_log.push(ctx.now());
            ctx.count(0, 1);
        }
        // Each record follows its descriptor's data on the posted queue
        // (and precedes the channel's write-back).
        let after = self.datapath_busy[C2H].max(ctx.now());
        for (addr, r) in records {
            self.at(
                ctx,
                after,
                Action::Tlp(Tlp::write(addr, r.encode().to_vec())),
            );
        }
        let c = &mut self.channels[ch];
        if c.completed == c.count {
            self.channel_done(ctx, ch);
        }
    }

    fn channel_done(&mut self, ctx: &mut Ctx<'_, Msg>, ch: usize) {
        let c = &mut self.channels[ch];
        c.busy = false;
        let control = c.reg_u32(regs::CONTROL);
        let status = c.status();
        // Ordering: the write-back and the MSI follow the data on the same
        // posted queue, so the host sees them only after the data.
        let after = self.datapath_busy[C2H].max(ctx.now());
        if control & regs::CTRL_WRITEBACK != 0 {
            let wb = c.reg_u64(regs::WB_ADDR);
            self.at(
                ctx,
                after,
                Action::Tlp(Tlp::write(wb, status.to_le_bytes().to_vec())),
            );
        }
        if control & regs::CTRL_IRQ != 0 {
            let data = self.channels[ch].reg_u32(regs::MSI_DATA);
            self.at(
                ctx,
                after,
                Action::Tlp(Tlp::write(self.msi_address, data.to_le_bytes().to_vec())),
            );
        }
    }

    fn start(&mut self, ctx: &mut Ctx<'_, Msg>, ch: usize) {
        let c = &mut self.channels[ch];
        c.base = c.reg_u64(regs::DESC_ADDR);
        c.count = c.reg_u32(regs::DESC_COUNT);
        c.next_fetch = 0;
        c.next_stage = 0;
        c.completed = 0;
        c.error = false;
        c.fetched.clear();
        c.lens.clear();
        c.finished.clear();
        c.done_times.clear();
        if c.reg_u32(regs::CONTROL) & regs::CTRL_INLINE != 0 {
            // The descriptor is already in the registers: straight to the
            // descriptor stage. With CTRL_REPEAT, DESC_COUNT = n repeats it
            // n times at consecutive addresses (each `len` further on both
            // sides): a device that issues its own DMA commands back to
            // back, as pcie-bench's NFP firmware does, with no descriptor in
            // host memory. Without it, the one transfer of a
            // register-programmed (TaPaSCo-style) engine.
            let d = c.inline_descriptor();
            let repeat = c.reg_u32(regs::CONTROL) & regs::CTRL_REPEAT != 0;
            let n = if repeat { c.count.max(1) } else { 1 };
            c.count = n;
            c.next_fetch = n;
            let step = d.len as u64;
            for i in 0..n {
                let off = i as u64 * step;
                c.fetched.insert(
                    i,
                    Descriptor {
                        src: d.src + off,
                        dst: d.dst + off,
                        ..d
                    },
                );
            }
            self.try_stage(ctx, ch);
            return;
        }
        if c.count == 0 {
            self.channel_done(ctx, ch);
            return;
        }
        self.try_fetch(ctx, ch);
    }

    fn register_write(&mut self, ctx: &mut Ctx<'_, Msg>, off: u64, data: &[u8]) {
        for (i, b) in data.iter().enumerate() {
            let a = off + i as u64;
            let ch = (a / regs::CHANNEL_STRIDE) as usize;
            let r = (a % regs::CHANNEL_STRIDE) as usize;
            if ch < 2 && r < 32 && r != regs::STATUS as usize {
                self.channels[ch].regs[r] = *b;
            } else if ch < 2 && (32..32 + regs::INLINE_BYTES).contains(&r) {
                self.channels[ch].inline[r - 32] = *b;
            } else if ch < 2
                && (regs::RESULT_ADDR as usize..regs::RESULT_ADDR as usize + 8).contains(&r)
            {
                self.channels[ch].result_addr[r - regs::RESULT_ADDR as usize] = *b;
            }
        }
        // A write that covers a CONTROL register with RUN set is a doorbell.
        for ch in 0..2 {
            let ctrl = ch as u64 * regs::CHANNEL_STRIDE + regs::CONTROL;
            let covers = off <= ctrl && ctrl < off + data.len() as u64;
            let c = &mut self.channels[ch];
            if covers && c.reg_u32(regs::CONTROL) & regs::CTRL_RUN != 0 && !c.busy {
                c.busy = true;
                c.doorbell_times.push(ctx.now());
                self.doorbells_seen += 1;
                if self.stuck_after > 0 && self.doorbells_seen > self.stuck_after {
                    // Hung: the channel shows busy and never starts.
                    self.hung.get_or_insert((ch, ctx.now()));
                    continue;
                }
                ctx.count(6, 1);
                let t = self.clock.next_edge(ctx.now()) + self.clock.cycles(self.doorbell_cycles);
                self.at(ctx, t, Action::Start(ch));
            }
        }
    }

    fn register_read(&self, off: u64, len: u32) -> Vec<u8> {
        (0..len as u64)
            .map(|i| {
                let a = off + i;
                let ch = (a / regs::CHANNEL_STRIDE) as usize;
                let r = a % regs::CHANNEL_STRIDE;
                if ch >= 2 || r >= 32 {
                    0
                } else if (regs::STATUS..regs::STATUS + 4).contains(&r) {
                    self.channels[ch].status().to_le_bytes()[(r - regs::STATUS) as usize]
                } else {
                    self.channels[ch].regs[r as usize]
                }
            })
            .collect()
    }

    fn on_tlp(&mut self, ctx: &mut Ctx<'_, Msg>, tlp: Tlp) {
        let in_bar0 = |a: u64| (self.bar0..self.bar0 + BAR0_BYTES).contains(&a);
        let in_bar1 = |a: u64| (self.bar1..self.bar1 + self.bar1_bytes).contains(&a);
        match tlp.kind {
            TlpKind::MemWrite if in_bar0(tlp.addr) => {
                self.register_write(ctx, tlp.addr - self.bar0, &tlp.data)
            }
            TlpKind::MemWrite if in_bar1(tlp.addr) => {
                let addr = tlp.addr - self.bar1;
                self.bram_send(ctx, BramPurpose::HostWrite, |id| MemReq::Write {
                    id,
                    addr,
                    data: tlp.data,
                });
            }
            TlpKind::MemRead if in_bar0(tlp.addr) => {
                let data = self.register_read(tlp.addr - self.bar0, tlp.len);
                let t = self.clock.next_edge(ctx.now()) + self.clock.cycles(self.reg_read_cycles);
                self.at(
                    ctx,
                    t,
                    Action::Tlp(Tlp::completion(tlp.tag, tlp.addr, tlp.len, data)),
                );
            }
            TlpKind::MemRead if in_bar1(tlp.addr) => {
                let (tag, addr, card) = (tlp.tag, tlp.addr, tlp.addr - self.bar1);
                self.bram_send(ctx, BramPurpose::HostRead { tag, addr }, |id| {
                    MemReq::Read {
                        id,
                        addr: card,
                        len: tlp.len,
                    }
                });
            }
            TlpKind::MemRead | TlpKind::MemWrite => {
                // Unsupported request: a real endpoint answers UR; here the
                // request is dropped and counted as an error.
                ctx.count(5, 1);
            }
            TlpKind::CplD => self.completion(ctx, tlp),
        }
    }

    fn completion(&mut self, ctx: &mut Ctx<'_, Msg>, tlp: Tlp) {
        let tag = tlp.tag;
        let last = tlp.is_last_completion();
        let now = ctx.now();
        let passed = self.datapath(now, H2C, tlp.data.len() as u64);
        let Some(r) = self.reads.get_mut(&tag) else {
            debug_assert!(false, "xdma: completion for unknown tag {tag}");
            return;
        };
        let offset = r.received as u64;
        r.received += tlp.len;
        let purpose = r.purpose;
        match purpose {
            ReadPurpose::Desc { .. } => r.buf.extend_from_slice(&tlp.data),
            ReadPurpose::H2c { ch, idx, card } => {
                let len = tlp.len;
                let msg = Msg::mem_req(MemReq::Write {
                    id: self.next_id,
                    addr: card + offset,
                    data: tlp.data,
                });
                self.bram
                    .insert(self.next_id, BramPurpose::H2cWrite { ch, idx, len });
                self.next_id += 1;
                self.at(ctx, passed, Action::Bram(msg));
            }
        }
        if !last {
            return;
        }
        let r = self.reads.remove(&tag).expect("present");
        ctx.record(7, (now - r.issued) / 1000);
        self.free_tags.push(tag);
        if let ReadPurpose::Desc { ch, first, count } = purpose {
            for i in 0..count {
                let o = (i * DESC_BYTES) as usize;
                match Descriptor::decode(&r.buf[o..o + DESC_BYTES as usize]) {
                    Ok(d) => {
                        self.channels[ch].fetched.insert(first + i, d);
                    }
                    Err(_) => {
                        ctx.count(5, 1);
                        let c = &mut self.channels[ch];
                        c.error = true;
                        c.busy = false;
                    }
                }
            }
            self.try_stage(ctx, ch);
        }
        self.issue_reads(ctx);
    }

    fn on_bram(&mut self, ctx: &mut Ctx<'_, Msg>, resp: MemResp) {
        let id = match &resp {
            MemResp::Ack { id } | MemResp::Data { id, .. } => *id,
        };
        let Some(purpose) = self.bram.remove(&id) else {
            debug_assert!(false, "xdma: unknown memory id {id}");
            return;
        };
        match (purpose, resp) {
            (BramPurpose::H2cWrite { ch, idx, len }, _) => {
                ctx.count(1, len as u64);
                self.bytes_done(ctx, ch, idx, len as u64);
            }
            (BramPurpose::C2hRead { ch, idx, host }, MemResp::Data { data, .. }) => {
                let passed = self.datapath(ctx.now(), C2H, data.len() as u64);
                self.at(
                    ctx,
                    passed,
                    Action::C2hSent {
                        ch,
                        idx,
                        tlp: Tlp::write(host, data),
                    },
                );
            }
            (BramPurpose::HostRead { tag, addr }, MemResp::Data { data, .. }) => {
                let mut remaining = data.len() as u32;
                for (a, n) in self
                    .link
                    .split_completion(addr, data.len() as u32, self.link.mps)
                {
                    let off = (a - addr) as usize;
                    let tlp =
                        Tlp::completion(tag, a, remaining, data[off..off + n as usize].to_vec());
                    remaining -= n;
                    ctx.send(0, Msg::tlp(tlp), 0, 0);
                }
            }
            (BramPurpose::HostWrite, _) => {}
            (p, r) => debug_assert!(false, "xdma: {r:?} does not answer {p:?}"),
        }
    }
}

impl Component<Msg> for XdmaEngine {
    fn spec(&self) -> &'static ComponentSpec {
        &XDMA_ENGINE
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match (port, msg) {
            (0, Msg::Tlp(t)) => self.on_tlp(ctx, *t),
            (1, Msg::MemResp(r)) => self.on_bram(ctx, r),
            (p, m) => debug_assert!(false, "xdma: unexpected {m:?} on port {p}"),
        }
    }
    fn on_wake(&mut self, _token: u64, ctx: &mut Ctx<'_, Msg>) {
        let Some((_, action)) = self.actions.pop_first() else {
            return;
        };
        match action {
            Action::Start(ch) => self.start(ctx, ch),
            Action::DescReady(ch) => self.desc_ready(ctx, ch),
            Action::Bram(msg) => {
                let b = crate::msg::onchip_bytes(&msg);
                ctx.send(1, msg, b, 0);
            }
            Action::Tlp(t) => ctx.send(0, Msg::tlp(t), 0, 0),
            Action::C2hSent { ch, idx, tlp } => {
                let n = tlp.len as u64;
                ctx.send(0, Msg::tlp(tlp), 0, 0);
                ctx.count(2, n);
                self.bytes_done(ctx, ch, idx, n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_round_trip_and_magic() {
        let d = Descriptor {
            flags: 0x13,
            len: 4096,
            src: 0x1_0000_0000,
            dst: 0x40,
            next: 0x1_0000_1020,
        };
        let b = d.encode();
        assert_eq!(&b[0..4], &[0x13, 0x00, 0x4B, 0xAD]);
        assert_eq!(Descriptor::decode(&b), Ok(d));
        let mut bad = b;
        bad[3] = 0;
        assert!(Descriptor::decode(&bad).unwrap_err().contains("magic"));
    }
}
