//! The `cxl_flexbus` component: one CXL link (the Flex Bus in CXL mode,
//! 68 B flits) carrying CXL.io, CXL.cache and CXL.mem, with an arbiter
//! between them at flit granularity and credits per channel.
//!
//! ```text
//!            host side                                  device side
//!  root complex ── io_host ─┐    ┌──── flits, 68 B ───┐ ┌─ io_device ── DMA engine (BARs)
//!                           ├─ ARB/MUX ═══ wire ═══ ARB/MUX ─┤
//!  mesh (LLC) ─ cachemem_host ┘  (one per direction)    └─ cachemem_device ── DCOH
//! ```
//!
//! **What travels.** CXL.io is PCIe's transaction layer unchanged (CXL 2.0
//! §3.1: packet formats, credit-based flow control and ordering follow
//! PCIe; §4.1: PCIe's data link layer is CXL.io's link layer): the TLPs
//! of [`crate::tlp`] with their real payload. CXL.cache and
//! CXL.mem are the coherent messages of the table agents
//! ([`Msg::Coh`](crate::msg::Msg::Coh)); a system's protocol decides which
//! of the two it is ([`FlexBus::set_cachemem`]).
//!
//! **Flits and slots** (68 B flit mode): CXL.cache and CXL.mem share one
//! link layer whose flit is 528 bits, four 16 B slots (a header slot and
//! generic slots) and a 16-bit CRC (CXL 2.0 §4.2.1-4.2.2), and the
//! physical layer adds a 16-bit protocol ID to every flit naming CXL.io or
//! CXL.cachemem (§6.2.2), so `flit_bytes` = 68 carry `slots_per_flit` x
//! `slot_bytes` = 64 B. A
//! message occupies whole slots ([`slots_of_coherent`], [`slots_of_tlp`]):
//!
//! * a .cache/.mem message without data: one header slot (assumed: one
//!   header per slot; the spec packs up to several small headers in one);
//! * with a 64 B line: the header slot and four data slots (16 B each);
//! * a TLP: its wire bytes (framing, sequence number, header, payload,
//!   LCRC; [`LinkConfig::tlp_wire_bytes`]) rounded up to whole slots;
//! * an ACK or UpdateFC DLLP of CXL.io: one slot.
//!
//! A message may span flits. A flit belongs to one channel (the ARB/MUX,
//! CXL 2.0 §5, hands the wire to one link layer per flit, which the
//! protocol ID names); the channel fills
//! it with the slots of its queued messages in order, and the slots no
//! message fills go as padding. (In the spec .cache and .mem share the
//! CXL.cachemem link layer and can share a flit; here each has its own
//! flits, so that the arbiter can weigh them separately, as the issue asks.)
//! A flit takes `flit_bytes` at the line rate (`rate_gts` x `lanes`, less
//! 128b/130b encoding) on its direction's wire; every message finished in
//! it arrives its channel's latency after the flit's end (`io_latency_ns`:
//! PCIe's data-link and transaction pipelines; `cachemem_latency_ns`:
//! CXL.cachemem's).
//!
//! **Arbiter** (per direction): weighted round-robin over the channels that
//! have something to send, in flits: channel `c` keeps the wire for up to
//! `<c>_weight` flits in a row while it has work, then the next channel with
//! work gets it; an idle channel's turn passes at once (work-conserving).
//! The policy and its weights are assumptions: the spec's ARB/MUX (CXL 2.0
//! §5) multiplexes the link layers' flits, and this model does not rely on
//! it prescribing how it shares the bandwidth between them.
//!
//! **Credits** (per direction, per channel and class; 0 = infinite):
//!
//! * CXL.io keeps PCIe flow control: posted (MWr), non-posted (MRd) and
//!   completion (CplD) header credits, one per TLP (data credits not
//!   modelled), with PCIe's ordering: a non-posted request or a completion
//!   never passes a posted write queued before it; a posted write may pass
//!   both (so a stall of reads never blocks writes).
//! * CXL.cache and CXL.mem each have request, response and data credits
//!   (CXL 2.0 §4.2.2: the flit header carries the credit returns, for
//!   requests, responses and data);
//!   a message waits for a credit of its own class only, and never passes a
//!   message of a channel it is ordered after (the protocol's
//!   `ordered_after`, e.g. a snoop behind a GO for the same line).
//!
//! A credit is taken when a message's first slot goes on the wire and
//! comes back `credit_return_ns` after its last slot left (the receiver's
//! link layer drains it and returns the credit in a flit header or an
//! UpdateFC). A class without credit blocks only itself: the arbiter
//! skips a channel none of whose messages can go, and within a channel a
//! message of another class goes ahead.
//!
//! The spec facts above were checked against public summaries of the CXL
//! 2.0 specification's chapters 3, 4 and 6 (blog.csdn.net/qq_41305217
//! /article/details/136410127, blog.csdn.net/weixin_41238626/article
//! /details/136701836 and .../136823025).
//!
//! Not modelled: the Flex Bus's CXL.io-in-68 B-flit framing tokens (the
//! PCIe framing bytes stand for them), packing of several .cache headers
//! into one slot, the all-data flit, link-layer retry (LLR) and CRC
//! errors, PCIe data credits, and backpressure from the components the link
//! delivers to (they take every message).

use std::collections::VecDeque;

use ccsim_coherence::agents::SystemRef;
use ccsim_kernel::prelude::*;
use ccsim_protocol::ir::MsgClass;

use crate::msg::{CohMsg, Msg, TlpKind};
use crate::tlp::LinkConfig;
use crate::util::{complete, ns_to_ps};

/// The three protocols of the link, in arbiter order.
pub const CHANNELS: [&str; 3] = ["io", "cache", "mem"];
/// CXL.io.
pub const IO: usize = 0;
/// CXL.cache.
pub const CACHE: usize = 1;
/// CXL.mem.
pub const MEM: usize = 2;

/// The credit classes, each a queue per direction: CXL.io's posted,
/// non-posted, completion and its DLLPs (no credit), then request,
/// response and data of .cache and of .mem.
pub const CLASSES: [&str; 10] = [
    "io_posted",
    "io_nonposted",
    "io_completion",
    "io_dllp",
    "cache_req",
    "cache_rsp",
    "cache_data",
    "mem_req",
    "mem_rsp",
    "mem_data",
];
const IO_P: usize = 0;
const IO_NP: usize = 1;
const IO_CPL: usize = 2;
const IO_DLLP: usize = 3;

/// The channel of credit class `class`.
pub fn channel_of(class: usize) -> usize {
    match class {
        0..=3 => IO,
        4..=6 => CACHE,
        _ => MEM,
    }
}

/// The credit class of a coherent message of `channel` (CACHE or MEM):
/// data if it carries a line, else request (requests and snoops) or
/// response.
pub fn coherent_class(channel: usize, class: MsgClass, data: bool) -> usize {
    let base = if channel == MEM { 7 } else { 4 };
    base + match (class, data) {
        (_, true) => 2,
        (MsgClass::Response, false) => 1,
        _ => 0,
    }
}

/// The credit class of a TLP.
pub fn tlp_class(kind: TlpKind) -> usize {
    match kind {
        TlpKind::MemWrite => IO_P,
        TlpKind::MemRead => IO_NP,
        TlpKind::CplD => IO_CPL,
    }
}

/// Slots a coherent message takes: a header slot, and `line_bytes` of data
/// in slots after it when it carries data (CXL 2.0 §4.2: a 64 B line is
/// four 16 B data slots behind its header).
pub fn slots_of_coherent(data: bool, line_bytes: u32, slot_bytes: u32) -> u32 {
    1 + if data {
        line_bytes.div_ceil(slot_bytes)
    } else {
        0
    }
}

/// Slots a TLP takes: its wire bytes (framing, sequence number, header,
/// payload, LCRC) rounded up to whole slots.
pub fn slots_of_tlp(
    cfg: &LinkConfig,
    kind: TlpKind,
    payload: u32,
    addr64: bool,
    slot_bytes: u32,
) -> u32 {
    cfg.tlp_wire_bytes(kind, payload, addr64)
        .div_ceil(slot_bytes)
}

/// The kernel link between a `cachemem_*` port and the agent or switch on
/// it: no delay of its own (the flexbus has them all) and the protocol
/// link's three virtual channels, which table agents send on.
pub fn cachemem_wire() -> LinkParams {
    LinkParams::symmetric(0, 0.0).with_vcs(
        ccsim_coherence::agents::CLASS_VCS
            .iter()
            .map(|n| VcParams::new(n, 0))
            .collect(),
    )
}

/// Declaration of `cxl_flexbus`.
pub static CXL_FLEXBUS: ComponentSpec = ComponentSpec {
    type_name: "cxl_flexbus",
    description: "A CXL link in 68 B flit mode carrying CXL.io (PCIe TLPs), CXL.cache and CXL.mem: messages packed into 16 B slots of flits, a weighted round-robin arbiter between the three at flit granularity, and credits per channel and class (PCIe's posted/non-posted/completion for CXL.io; request/response/data for .cache and .mem).",
    params: &[
        ParamSpec { name: "rate_gts", kind: ParamKind::Float, default: ParamDefault::Float(32.0), unit: "GT/s", range: ParamRange::positive(), from: "CXL 2.0 §6.1: in CXL mode the Flex Bus runs at 32 GT/s (8 and 16 GT/s degraded)", description: "Transfer rate per lane (128b/130b encoding)." },
        ParamSpec { name: "lanes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "lanes", range: ParamRange::one_of(&[1, 2, 4, 8, 16]), from: "CXL 2.0 §6.1: native width x16, x8, x4; degraded x2 and x1", description: "Link width." },
        ParamSpec { name: "flit_bytes", kind: ParamKind::Int, default: ParamDefault::Int(68), unit: "bytes", range: ParamRange::between(1.0, 1024.0), from: "CXL 2.0 §4.2.2 and §6.2.2: a 528-bit flit (four 16 B slots, 16-bit CRC) and its 16-bit protocol ID", description: "Bytes of a flit on the wire, framing included." },
        ParamSpec { name: "slot_bytes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "bytes", range: ParamRange::between(1.0, 256.0), from: "CXL 2.0 §4.2.2: 16 B slots", description: "Bytes of a slot." },
        ParamSpec { name: "slots_per_flit", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "slots", range: ParamRange::between(1.0, 64.0), from: "CXL 2.0 §4.2.2: four slots per flit (a header slot and generic slots)", description: "Slots a flit carries." },
        ParamSpec { name: "io_latency_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: PHY and data-link pipelines of two ports plus a short channel", description: "CXL.io: one-way latency after a message's last flit (PHY, ARB/MUX, PCIe data link, flight)." },
        ParamSpec { name: "cachemem_latency_ns", kind: ParamKind::Float, default: ParamDefault::Float(25.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: PHY, ARB/MUX and CXL.cachemem link layer of two ports", description: "CXL.cache and CXL.mem: one-way latency after a message's last flit." },
        ParamSpec { name: "io_weight", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "flits", range: ParamRange::between(1.0, 1024.0), from: "assumed: equal weights (the ARB/MUX of CXL 2.0 §5 multiplexes the link layers; its sharing policy is this model's assumption)", description: "Arbiter: flits CXL.io may send in a row while others wait." },
        ParamSpec { name: "cache_weight", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "flits", range: ParamRange::between(1.0, 1024.0), from: "assumed: equal weights (the ARB/MUX of CXL 2.0 §5 multiplexes the link layers; its sharing policy is this model's assumption)", description: "Arbiter: flits CXL.cache may send in a row while others wait." },
        ParamSpec { name: "mem_weight", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "flits", range: ParamRange::between(1.0, 1024.0), from: "assumed: equal weights (the ARB/MUX of CXL 2.0 §5 multiplexes the link layers; its sharing policy is this model's assumption)", description: "Arbiter: flits CXL.mem may send in a row while others wait." },
        ParamSpec { name: "credit_return_ns", kind: ParamKind::Float, default: ParamDefault::Float(50.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: the receiver's link layer frees the buffer and the credit rides back in a flit header (CXL.cachemem) or an UpdateFC (CXL.io)", description: "From a message's last slot leaving the wire to its credit being back at the transmitter." },
        ParamSpec { name: "io_posted_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.io posted-request (MWr) header credits of each receiver (0 = infinite)." },
        ParamSpec { name: "io_nonposted_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.io non-posted (MRd) header credits (0 = infinite)." },
        ParamSpec { name: "io_completion_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.io completion (CplD) header credits (0 = infinite)." },
        ParamSpec { name: "cache_req_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "messages", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.cache request (and snoop) credits (0 = infinite)." },
        ParamSpec { name: "cache_rsp_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "messages", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.cache response credits (0 = infinite)." },
        ParamSpec { name: "cache_data_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "messages", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.cache data credits, one per line (0 = infinite)." },
        ParamSpec { name: "mem_req_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "messages", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.mem request credits (0 = infinite)." },
        ParamSpec { name: "mem_rsp_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "messages", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.mem response (NDR) credits (0 = infinite)." },
        ParamSpec { name: "mem_data_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "messages", range: ParamRange::between(0.0, 4096.0), from: "assumed: 0 = infinite", description: "CXL.mem data (RwD, DRS) credits, one per line (0 = infinite)." },
    ],
    ports: &[
        PortSpec { name: "io_host", description: "CXL.io, host side (root complex): TLPs in and out.", required: false },
        PortSpec { name: "io_device", description: "CXL.io, device side (the DMA engine and its BARs): TLPs in and out.", required: false },
        PortSpec { name: "cachemem_host", description: "CXL.cache/.mem, host side (the mesh or switch to the home): coherent messages in and out.", required: false },
        PortSpec { name: "cachemem_device", description: "CXL.cache/.mem, device side (the DCOH): coherent messages in and out.", required: false },
    ],
    stats: &[
        StatSpec { name: "down.flits", kind: StatKind::Counter, unit: "flits", description: "Flits sent host -> device." },
        StatSpec { name: "down.io_flits", kind: StatKind::Counter, unit: "flits", description: "Flits of CXL.io sent host -> device." },
        StatSpec { name: "down.cache_flits", kind: StatKind::Counter, unit: "flits", description: "Flits of CXL.cache sent host -> device." },
        StatSpec { name: "down.mem_flits", kind: StatKind::Counter, unit: "flits", description: "Flits of CXL.mem sent host -> device." },
        StatSpec { name: "down.padding_slots", kind: StatKind::Counter, unit: "slots", description: "Slots of host -> device flits no message filled." },
        StatSpec { name: "down.messages", kind: StatKind::Counter, unit: "messages", description: "TLPs, DLLPs and coherent messages sent host -> device." },
        StatSpec { name: "down.credit_waits", kind: StatKind::Counter, unit: "messages", description: "Messages that arrived host-side to find their class out of credit." },
        StatSpec { name: "up.flits", kind: StatKind::Counter, unit: "flits", description: "Flits sent device -> host." },
        StatSpec { name: "up.io_flits", kind: StatKind::Counter, unit: "flits", description: "Flits of CXL.io sent device -> host." },
        StatSpec { name: "up.cache_flits", kind: StatKind::Counter, unit: "flits", description: "Flits of CXL.cache sent device -> host." },
        StatSpec { name: "up.mem_flits", kind: StatKind::Counter, unit: "flits", description: "Flits of CXL.mem sent device -> host." },
        StatSpec { name: "up.padding_slots", kind: StatKind::Counter, unit: "slots", description: "Slots of device -> host flits no message filled." },
        StatSpec { name: "up.messages", kind: StatKind::Counter, unit: "messages", description: "TLPs, DLLPs and coherent messages sent device -> host." },
        StatSpec { name: "up.credit_waits", kind: StatKind::Counter, unit: "messages", description: "Messages that arrived device-side to find their class out of credit." },
    ],
    check: None,
};

/// Statistics per direction, in the order of the spec's `stats`.
const STATS_PER_DIR: usize = 7;
const ST_FLITS: usize = 0;
const ST_PADDING: usize = 4;
const ST_MESSAGES: usize = 5;
const ST_CREDIT_WAITS: usize = 6;

/// Ports.
const IO_HOST: usize = 0;
const IO_DEVICE: usize = 1;
const CM_HOST: usize = 2;
const CM_DEVICE: usize = 3;

/// Directions: 0 host -> device (down), 1 device -> host (up).
const DOWN: usize = 0;

/// Wake tokens: a flit boundary of direction `d` is `d`; a credit of class
/// `c` back at direction `d`'s transmitter is `CREDIT | d << 4 | c`; a
/// message's arrival (a local message) is `d << 4 | c`.
const CREDIT: u64 = 1 << 8;

/// What orders a coherent message against others on the link: (line,
/// source agent, destination agent, message index).
type OrderKey = (u64, u16, u16, u16);

/// One message waiting for (or on) the wire.
#[derive(Debug)]
struct Queued {
    /// The message (`None`: a DLLP, which only takes a slot).
    msg: Option<Msg>,
    slots: u32,
    /// Order of arrival at this direction's transmitter.
    seq: u64,
    /// For ordering rules of coherent messages: (line, src, dst, msg).
    key: Option<OrderKey>,
}

/// A message whose first slots are on the wire and whose last are not.
#[derive(Debug)]
struct InProgress {
    item: Queued,
    class: usize,
    left: u32,
}

/// One direction of the link: the transmitter's queues, credits and
/// arbiter, the wire's state.
#[derive(Debug)]
struct Direction {
    queues: [VecDeque<Queued>; 10],
    /// Credits available per class (`None`: infinite).
    credits: [Option<u32>; 10],
    in_progress: [Option<InProgress>; 3],
    /// The arbiter: the channel holding the wire and its flits left.
    current: usize,
    quota: u32,
    /// The end of the last flit sent, and whether a flit boundary is
    /// scheduled.
    busy_until: Tick,
    scheduled: bool,
    seq: u64,
    /// TLPs delivered (the receiver's ACK/UpdateFC count).
    tlps_received: u64,
}

/// What a protocol's messages are on this link.
#[derive(Debug, Clone)]
struct CachememProtocol {
    sys: SystemRef,
    channel: usize,
}

/// The `cxl_flexbus` component.
#[derive(Debug)]
pub struct FlexBus {
    flit_ps: Tick,
    slot_bytes: u32,
    slots_per_flit: u32,
    latency: [Tick; 3],
    weights: [u32; 3],
    credit_return: Tick,
    io: LinkConfig,
    protocols: Vec<CachememProtocol>,
    dirs: [Direction; 2],
    /// Flits each channel sent, per direction (also in the statistics).
    pub flits: [[u64; 3]; 2],
}

impl FlexBus {
    /// A link from `cxl_flexbus` parameters; `io` is the PCIe transaction
    /// layer's configuration (MPS, MRRS, RCB, ECRC, ACK and UpdateFC
    /// rates) its CXL.io TLPs follow.
    pub fn from_params(params: &Params, io: LinkConfig) -> Result<FlexBus, String> {
        let p = complete(&CXL_FLEXBUS, params)?;
        let slot_bytes = p.uint("slot_bytes") as u32;
        let slots_per_flit = p.uint("slots_per_flit") as u32;
        let flit_bytes = p.uint("flit_bytes") as u32;
        if flit_bytes < slot_bytes * slots_per_flit {
            return Err(format!(
                "cxl_flexbus.flit_bytes = {flit_bytes} is less than its slots ({slots_per_flit} x {slot_bytes} B)"
            ));
        }
        // 128b/130b: a byte on the wire is 8 * 130 / 128 bits, sent over
        // `lanes` lanes at `rate_gts` each.
        let bits_per_ps = p.float("rate_gts") * 1e-3 * p.uint("lanes") as f64 * 128.0 / 130.0;
        let flit_ps = ((flit_bytes as f64 * 8.0) / bits_per_ps).round().max(1.0) as Tick;
        let credit = |name: &str| match p.uint(name) {
            0 => None,
            n => Some(n as u32),
        };
        let credits = [
            credit("io_posted_credits"),
            credit("io_nonposted_credits"),
            credit("io_completion_credits"),
            None,
            credit("cache_req_credits"),
            credit("cache_rsp_credits"),
            credit("cache_data_credits"),
            credit("mem_req_credits"),
            credit("mem_rsp_credits"),
            credit("mem_data_credits"),
        ];
        let cachemem = ns_to_ps(p.float("cachemem_latency_ns"));
        let dir = || Direction {
            queues: Default::default(),
            credits,
            in_progress: [None, None, None],
            current: IO,
            quota: 0,
            busy_until: 0,
            scheduled: false,
            seq: 0,
            tlps_received: 0,
        };
        Ok(FlexBus {
            flit_ps,
            slot_bytes,
            slots_per_flit,
            latency: [ns_to_ps(p.float("io_latency_ns")), cachemem, cachemem],
            weights: [
                p.uint("io_weight") as u32,
                p.uint("cache_weight") as u32,
                p.uint("mem_weight") as u32,
            ],
            credit_return: ns_to_ps(p.float("credit_return_ns")),
            io,
            protocols: Vec::new(),
            dirs: [dir(), dir()],
            flits: [[0; 3]; 2],
        })
    }

    /// Messages of `sys`'s protocol travel as CXL.cache (`mem` false) or
    /// CXL.mem: their class, data flag and ordering come from its tables.
    pub fn set_cachemem(&mut self, sys: SystemRef, mem: bool) {
        let channel = if mem { MEM } else { CACHE };
        self.protocols.push(CachememProtocol { sys, channel });
    }

    /// The time one flit takes on the wire (ps).
    pub fn flit_ps(&self) -> Tick {
        self.flit_ps
    }

    /// Credits of `class` available now at direction `dir`'s transmitter
    /// (`None`: infinite).
    pub fn credits(&self, dir: usize, class: usize) -> Option<u32> {
        self.dirs[dir].credits[class]
    }

    /// Messages waiting at direction `dir`'s transmitter, per class.
    pub fn queued(&self, dir: usize) -> [usize; 10] {
        std::array::from_fn(|c| self.dirs[dir].queues[c].len())
    }

    /// One line per direction for a stuck run's report.
    pub fn report(&self) -> Vec<String> {
        ["down (host -> device)", "up (device -> host)"]
            .iter()
            .zip(&self.dirs)
            .map(|(name, d)| {
                let waiting: Vec<String> = CLASSES
                    .iter()
                    .enumerate()
                    .filter(|(c, _)| !d.queues[*c].is_empty())
                    .map(|(c, n)| {
                        let credit = d.credits[c].map_or("inf".to_string(), |k| k.to_string());
                        format!("{n} {} (credits {credit})", d.queues[c].len())
                    })
                    .collect();
                format!(
                    "cxl flexbus {name}: queued [{}]",
                    if waiting.is_empty() {
                        "none".to_string()
                    } else {
                        waiting.join(", ")
                    }
                )
            })
            .collect()
    }

    /// The class, slots and ordering key of `msg`.
    fn classify(&self, msg: &Msg) -> Result<(usize, u32, Option<OrderKey>), String> {
        match msg {
            Msg::Tlp(t) => Ok((
                tlp_class(t.kind),
                slots_of_tlp(&self.io, t.kind, t.len, t.addr64(), self.slot_bytes),
                None,
            )),
            Msg::Coh(m) => {
                let Some(p) = self.protocol_of(m) else {
                    return Err(format!(
                        "cxl_flexbus: {} is a message of protocol {}, which this link was not told about",
                        m.name(),
                        m.catalogue.protocol
                    ));
                };
                let facts = &p.sys.protocol.msgs[m.msg as usize];
                let line_bytes = p.sys.line_bytes as u32;
                Ok((
                    coherent_class(p.channel, facts.class, facts.data),
                    slots_of_coherent(facts.data, line_bytes, self.slot_bytes),
                    Some((m.line, m.src, m.dst, m.msg)),
                ))
            }
            other => Err(format!(
                "cxl_flexbus: {other:?} is neither a TLP nor a coherent message"
            )),
        }
    }

    fn protocol_of(&self, m: &CohMsg) -> Option<&CachememProtocol> {
        self.protocols
            .iter()
            .find(|p| p.sys.catalogue == m.catalogue)
    }

    /// Queues `item` of `class` at direction `dir` and makes sure a flit
    /// boundary is coming.
    fn enqueue(&mut self, dir: usize, class: usize, mut item: Queued, ctx: &mut Ctx<'_, Msg>) {
        let d = &mut self.dirs[dir];
        item.seq = d.seq;
        d.seq += 1;
        if d.credits[class] == Some(0) {
            ctx.count(dir * STATS_PER_DIR + ST_CREDIT_WAITS, 1);
        }
        d.queues[class].push_back(item);
        self.kick(dir, ctx);
    }

    /// Schedules the next flit boundary of `dir` if none is and there may
    /// be work.
    fn kick(&mut self, dir: usize, ctx: &mut Ctx<'_, Msg>) {
        let d = &mut self.dirs[dir];
        if !d.scheduled {
            d.scheduled = true;
            ctx.wake_at(d.busy_until.max(ctx.now()), dir as u64);
        }
    }

    /// The queued message of `class` that may go next, if its class has
    /// credit and no ordering rule holds it back.
    fn head_ready(&self, dir: usize, class: usize) -> bool {
        let d = &self.dirs[dir];
        let Some(head) = d.queues[class].front() else {
            return false;
        };
        if d.credits[class] == Some(0) {
            return false;
        }
        match class {
            // PCIe ordering: a read request or a completion never passes a
            // posted write queued before it.
            IO_NP | IO_CPL => d.queues[IO_P].front().is_none_or(|p| p.seq > head.seq),
            IO_P | IO_DLLP => true,
            _ => {
                let Some((line, src, dst, msg)) = head.key else {
                    return true;
                };
                let Some(Msg::Coh(m)) = &head.msg else {
                    return true;
                };
                let Some(p) = self.protocol_of(m) else {
                    return true;
                };
                let behind = &p.sys.protocol.msgs[msg as usize].ordered_after;
                if behind.is_empty() {
                    return true;
                }
                let ch = channel_of(class);
                !(0..CLASSES.len())
                    .filter(|&c| channel_of(c) == ch)
                    .any(|c| {
                        d.queues[c]
                            .iter()
                            .take_while(|q| q.seq < head.seq)
                            .any(|q| {
                                q.key.is_some_and(|(l, s, t, k)| {
                                    l == line && s == src && t == dst && behind.contains(&k)
                                })
                            })
                    })
            }
        }
    }

    /// The class of channel `ch` whose message goes next: the oldest ready
    /// head.
    fn next_class(&self, dir: usize, ch: usize) -> Option<usize> {
        (0..CLASSES.len())
            .filter(|&c| channel_of(c) == ch && self.head_ready(dir, c))
            .min_by_key(|&c| self.dirs[dir].queues[c].front().map(|q| q.seq))
    }

    /// Whether channel `ch` could fill a slot now.
    fn has_work(&self, dir: usize, ch: usize) -> bool {
        self.dirs[dir].in_progress[ch].is_some() || self.next_class(dir, ch).is_some()
    }

    /// The weighted round-robin choice of the channel that sends the next
    /// flit, or `None` if no channel can.
    fn arbitrate(&mut self, dir: usize) -> Option<usize> {
        let cur = self.dirs[dir].current;
        if self.dirs[dir].quota > 0 && self.has_work(dir, cur) {
            return Some(cur);
        }
        for step in 1..=CHANNELS.len() {
            let ch = (cur + step) % CHANNELS.len();
            if self.has_work(dir, ch) {
                let d = &mut self.dirs[dir];
                d.current = ch;
                d.quota = self.weights[ch];
                return Some(ch);
            }
        }
        None
    }

    /// A flit boundary of `dir`: the arbiter picks a channel, which fills
    /// the flit's slots; messages finished in it leave for the receiver.
    fn send_flit(&mut self, dir: usize, ctx: &mut Ctx<'_, Msg>) {
        self.dirs[dir].scheduled = false;
        let Some(ch) = self.arbitrate(dir) else {
            return;
        };
        let now = ctx.now();
        let end = now + self.flit_ps;
        let mut free = self.slots_per_flit;
        while free > 0 {
            if self.dirs[dir].in_progress[ch].is_none() {
                let Some(class) = self.next_class(dir, ch) else {
                    break;
                };
                let d = &mut self.dirs[dir];
                let item = d.queues[class].pop_front().expect("a ready head");
                if let Some(k) = &mut d.credits[class] {
                    *k -= 1;
                }
                let left = item.slots;
                d.in_progress[ch] = Some(InProgress { item, class, left });
            }
            let d = &mut self.dirs[dir];
            let p = d.in_progress[ch].as_mut().expect("in progress");
            let take = p.left.min(free);
            p.left -= take;
            free -= take;
            if p.left == 0 {
                let done = d.in_progress[ch].take().expect("in progress");
                self.finished(dir, done, end, ctx);
            }
        }
        let base = dir * STATS_PER_DIR;
        ctx.count(base + ST_FLITS, 1);
        ctx.count(base + ST_FLITS + 1 + ch, 1);
        ctx.count(base + ST_PADDING, free as u64);
        self.flits[dir][ch] += 1;
        let d = &mut self.dirs[dir];
        d.quota = d.quota.saturating_sub(1);
        d.busy_until = end;
        // The next boundary; it finds nothing to do if nothing is ready by
        // then (a credit's return schedules one again).
        if d.queues.iter().any(|q| !q.is_empty()) || d.in_progress.iter().any(Option::is_some) {
            d.scheduled = true;
            ctx.wake_at(end, dir as u64);
        }
    }

    /// A message whose last slot is in the flit ending at `end`: it arrives
    /// a latency later; its credit comes back `credit_return` after `end`.
    fn finished(&mut self, dir: usize, done: InProgress, end: Tick, ctx: &mut Ctx<'_, Msg>) {
        ctx.count(dir * STATS_PER_DIR + ST_MESSAGES, 1);
        let ch = channel_of(done.class);
        if self.dirs[dir].credits[done.class].is_some() {
            ctx.wake_at(
                end + self.credit_return,
                CREDIT | (dir as u64) << 4 | done.class as u64,
            );
        }
        if let Some(msg) = done.item.msg {
            ctx.schedule_local(
                end + self.latency[ch],
                (dir as u64) << 4 | done.class as u64,
                msg,
            );
        }
    }

    /// Delivers `msg` out of the receiver's port; a TLP counts towards the
    /// receiver's ACK and UpdateFC DLLPs, which go back on the reverse wire.
    fn deliver(&mut self, dir: usize, class: usize, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let ch = channel_of(class);
        let port = match (ch, dir == DOWN) {
            (IO, true) => IO_DEVICE,
            (IO, false) => IO_HOST,
            (_, true) => CM_DEVICE,
            (_, false) => CM_HOST,
        };
        if ch == IO {
            ctx.send(port, msg, 0, 0);
            let d = &mut self.dirs[dir];
            d.tlps_received += 1;
            let n = d.tlps_received;
            let dllps = [self.io.ack_every, self.io.update_fc_every]
                .iter()
                .filter(|&&every| every > 0 && n % every as u64 == 0)
                .count();
            for _ in 0..dllps {
                let dllp = Queued {
                    msg: None,
                    slots: 1,
                    seq: 0,
                    key: None,
                };
                self.enqueue(1 - dir, IO_DLLP, dllp, ctx);
            }
        } else {
            let vc = match &msg {
                Msg::Coh(m) => self.protocol_of(m).map_or(0, |p| p.sys.vc(m.msg)),
                _ => 0,
            };
            ctx.send(port, msg, 0, vc);
        }
    }
}

impl Component<Msg> for FlexBus {
    fn spec(&self) -> &'static ComponentSpec {
        &CXL_FLEXBUS
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let dir = match port {
            IO_HOST | CM_HOST => 0,
            _ => 1,
        };
        match self.classify(&msg) {
            Ok((class, slots, key)) => {
                let item = Queued {
                    msg: Some(msg),
                    slots,
                    seq: 0,
                    key,
                };
                self.enqueue(dir, class, item, ctx);
            }
            Err(e) => panic!("{e} (a wiring mistake)"),
        }
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        if token & CREDIT != 0 {
            let dir = ((token >> 4) & 1) as usize;
            let class = (token & 0xf) as usize;
            if let Some(k) = &mut self.dirs[dir].credits[class] {
                *k += 1;
            }
            self.kick(dir, ctx);
        } else {
            self.send_flit(token as usize, ctx);
        }
    }
    fn on_local(&mut self, token: u64, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let dir = ((token >> 4) & 1) as usize;
        let class = (token & 0xf) as usize;
        self.deliver(dir, class, msg, ctx);
    }
}
