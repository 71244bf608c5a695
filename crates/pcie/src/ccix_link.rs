//! The `ccix_vc_link` component: the CCIX attachment as a component of a
//! system — one PCIe link whose VC1 carries the coherent messages of the
//! system's table agents (CCIX) and whose VC0 carries regular PCIe TLPs
//! (ATS translation requests and completions, the TaPaSCo DMA engine's
//! traffic), sharing the lanes, the data-link layer and the arbiter.
//!
//! CCIX §II: "the transaction layer uses VC0 for PCIe-packets and VC1 for
//! CCIX-packets, sharing the same physical and link layers".
//!
//! ```text
//!   device side                                               host side
//!   RA (System Cache) ─ ccix_device ─┐                    ┌─ ccix_host ─ CMN (home agent)
//!                                    ├─ VC arbiter ═ lanes ═┤
//!   ATS switch, DMA ─── io_device ───┘  (per direction)   └─ io_host ─── SMMU, root complex
//! ```
//!
//! The timing rules are those of [`crate::vc_link`] (the self-contained
//! engine the what-if `ccix-vc-sharing` runs), here inside the
//! simulation, so that an ATS translation waits for the lanes behind CCIX
//! messages of the same run and the other way round:
//!
//! * **Per-VC, per-type header credits** (PCIe 3.0 §2.6.1: flow control is
//!   kept "independently for each enabled VC"): posted, non-posted and
//!   completion, taken when a TLP starts on the wire, back
//!   `credit_return_ns` after it arrived. A VC whose head has no credit is
//!   skipped, so **exhausting one VC never blocks the other**.
//! * **Ordering** within a VC: a non-posted request or a completion never
//!   passes a posted TLP queued before it (§2.4.1); none between VCs
//!   (§2.4.2).
//! * **Weighted round robin** between the VCs, in TLPs (§6.3.3.2; the
//!   weights are assumptions, 1:1 by default).
//! * **One wire per direction.** A TLP of `b` wire bytes
//!   ([`LinkConfig::tlp_wire_bytes`]) takes `b × 8 × 130/128 / (rate ×
//!   lanes)`; ACK and UpdateFC DLLPs (8 B) of the receiver go on the
//!   reverse wire ahead of queued TLPs.
//! * **CCIX messages as VDMs.** A coherent message travels as a posted
//!   Vendor Defined Message with a 4 DW header (CCIX Base Specification
//!   1.0, transport chapter, "PCIe compatible" TLPs) whose payload is the
//!   CCIX message header (`ccix_header_bytes`) and, for a data message, the
//!   line.
//! * **Latency.** Every TLP arrives `latency_ns` after its last byte (both
//!   ports' PHY, data-link and transaction layers); a CCIX message spends
//!   `ccix_port_ns` more in the CCIX port logic of the two ends (the CCIX
//!   transaction and protocol layers above the shared PCIe transaction
//!   layer), which does not hold the wire.
//!
//! Not modelled (as in [`crate::vc_link`]): data credits, CCIX's optimized
//! TLP format and message packing, replays; the components on its ports
//! take every message at once.

use std::collections::VecDeque;

use ccsim_coherence::agents::SystemRef;
use ccsim_kernel::prelude::*;

use crate::msg::{CohMsg, Msg};
use crate::tlp::{Generation, LinkConfig, TlpKind, DLLP_WIRE_BYTES};
use crate::util::{complete, ns_to_ps};
use crate::vc_link::{fc_type, DOWN, POSTED, UP, VC0, VC1};

/// Declaration of `ccix_vc_link`.
pub static CCIX_VC_LINK: ComponentSpec = ComponentSpec {
    type_name: "ccix_vc_link",
    description: "The CCIX attachment as a system component: one PCIe link with VC1 carrying the system's coherent messages as posted VDMs and VC0 carrying regular PCIe TLPs (ATS, DMA); per-VC posted/non-posted/completion header credits, a weighted round-robin VC arbiter, both VCs serialized on the same lanes with exact TLP bytes and ACK/UpdateFC DLLPs.",
    params: &[
        ParamSpec { name: "generation", kind: ParamKind::Int, default: ParamDefault::Int(3), unit: "", range: ParamRange::one_of(&[3, 4, 5]), from: "assumed", description: "PCIe generation, 3 or later (128b/130b encoding, which the serialization assumes): TLP framing and, unless rate_gts is given, the transfer rate." },
        ParamSpec { name: "lanes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "lanes", range: ParamRange::one_of(&[1, 2, 4, 8, 12, 16, 32]), from: "assumed", description: "Link width." },
        ParamSpec { name: "rate_gts", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "GT/s", range: ParamRange::at_least(0.0), from: "assumed: 0 = the generation's rate", description: "Transfer rate per lane with 128b/130b encoding (25 for CCIX's Extended Speed Mode); 0 takes the generation's." },
        ParamSpec { name: "latency_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "One way after a TLP's last byte, either VC: PHY, data-link and PCIe transaction layers of both ports and the flight." },
        ParamSpec { name: "ccix_port_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: none", description: "What a CCIX message (VC1) spends beyond latency_ns in the CCIX port logic of the two ends (off the wire)." },
        ParamSpec { name: "ccix_header_bytes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "bytes", range: ParamRange::between(4.0, 256.0), from: "assumed: a CCIX message header (address, opcode, attributes) in the VDM's payload", description: "Payload bytes of a CCIX message's header inside its VDM (a data message adds its line)." },
        ParamSpec { name: "vc0_weight", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "TLPs", range: ParamRange::between(1.0, 255.0), from: "assumed: 1:1 (PCIe 3.0 §6.3.3.2 leaves the VC arbitration weights to the implementation)", description: "TLPs VC0 may send in a row while VC1 waits." },
        ParamSpec { name: "vc1_weight", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "TLPs", range: ParamRange::between(1.0, 255.0), from: "assumed: 1:1 (PCIe 3.0 §6.3.3.2 leaves the VC arbitration weights to the implementation)", description: "TLPs VC1 may send in a row while VC0 waits." },
        ParamSpec { name: "vc0_posted_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 127.0), from: "assumed: 0 = infinite", description: "VC0 posted header credits of each receiver (0 = infinite)." },
        ParamSpec { name: "vc0_nonposted_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 127.0), from: "assumed: 0 = infinite", description: "VC0 non-posted header credits (0 = infinite)." },
        ParamSpec { name: "vc0_completion_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 127.0), from: "assumed: 0 = infinite", description: "VC0 completion header credits (0 = infinite)." },
        ParamSpec { name: "vc1_posted_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 127.0), from: "assumed: 0 = infinite", description: "VC1 posted header credits (0 = infinite): every CCIX message is a posted VDM." },
        ParamSpec { name: "credit_return_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: none", description: "From a TLP's arrival to its credit being back at the transmitter (the receiver frees the buffer, the UpdateFC crosses back)." },
    ],
    ports: &[
        PortSpec { name: "ccix_host", description: "VC1, host side (the mesh or switch to the home agent): coherent messages in and out.", required: false },
        PortSpec { name: "ccix_device", description: "VC1, device side (the request agent): coherent messages in and out.", required: false },
        PortSpec { name: "io_host", description: "VC0, host side (SMMU, root complex): TLPs in and out.", required: false },
        PortSpec { name: "io_device", description: "VC0, device side (ATS switch, DMA engine): TLPs in and out.", required: false },
    ],
    stats: &[
        StatSpec { name: "down.vc0_tlp_bytes", kind: StatKind::Counter, unit: "bytes", description: "VC0 TLP bytes host -> device." },
        StatSpec { name: "down.vc1_tlp_bytes", kind: StatKind::Counter, unit: "bytes", description: "VC1 TLP bytes host -> device." },
        StatSpec { name: "down.dllp_bytes", kind: StatKind::Counter, unit: "bytes", description: "ACK/UpdateFC DLLP bytes host -> device." },
        StatSpec { name: "down.credit_waits", kind: StatKind::Counter, unit: "TLPs", description: "Host -> device TLPs that found their VC's credit of their type exhausted." },
        StatSpec { name: "up.vc0_tlp_bytes", kind: StatKind::Counter, unit: "bytes", description: "VC0 TLP bytes device -> host." },
        StatSpec { name: "up.vc1_tlp_bytes", kind: StatKind::Counter, unit: "bytes", description: "VC1 TLP bytes device -> host." },
        StatSpec { name: "up.dllp_bytes", kind: StatKind::Counter, unit: "bytes", description: "ACK/UpdateFC DLLP bytes device -> host." },
        StatSpec { name: "up.credit_waits", kind: StatKind::Counter, unit: "TLPs", description: "Device -> host TLPs that found their VC's credit of their type exhausted." },
    ],
    check: None,
};

/// Statistics per direction, in the spec's order.
const STATS_PER_DIR: usize = 4;
const ST_VC0_BYTES: usize = 0;
const ST_DLLP_BYTES: usize = 2;
const ST_CREDIT_WAITS: usize = 3;

/// Ports.
const CCIX_HOST: usize = 0;
const CCIX_DEVICE: usize = 1;
const IO_HOST: usize = 2;
const IO_DEVICE: usize = 3;

/// Wake tokens: the wire of direction `d` is `d`; a credit (d, vc, type)
/// back at its transmitter is `CREDIT | d << 4 | vc << 2 | type`.
const CREDIT: u64 = 1 << 8;

/// Counts of a run per direction (also in the statistics).
pub use crate::vc_link::WireCounts;

/// One TLP waiting at its transmitter.
#[derive(Debug)]
struct Queued {
    msg: Msg,
    wire_bytes: u32,
    seq: u64,
    counted_wait: bool,
}

/// One direction: the transmitter's queues per VC and type, its credits,
/// the arbiter, the wire.
#[derive(Debug)]
struct Direction {
    queues: [[VecDeque<Queued>; 3]; 2],
    credits: [[Option<u32>; 3]; 2],
    current: usize,
    quota: u32,
    busy_until: Tick,
    scheduled: bool,
    seq: u64,
    pending_dllps: u32,
    /// TLPs this direction delivered (the receiver's ACK/UpdateFC count).
    received: u64,
}

/// The `ccix_vc_link` component.
#[derive(Debug)]
pub struct CcixVcLink {
    config: LinkConfig,
    bits_per_ps: f64,
    latency: Tick,
    ccix_port: Tick,
    ccix_header: u32,
    weights: [u32; 2],
    credit_return: Tick,
    protocol: Option<SystemRef>,
    dirs: [Direction; 2],
    /// What each direction moved.
    pub counts: [WireCounts; 2],
}

impl CcixVcLink {
    /// A link from `ccix_vc_link` parameters.
    pub fn from_params(params: &Params) -> Result<CcixVcLink, String> {
        let p = complete(&CCIX_VC_LINK, params)?;
        let n = p.int("generation");
        let generation = Generation::from_number(n)
            .ok_or_else(|| format!("ccix_vc_link.generation = {n}: not a PCIe generation"))?;
        let config = LinkConfig::new(generation, p.uint("lanes") as u32);
        if let Some(problem) = config.problems().first() {
            return Err(format!("ccix_vc_link: {problem}"));
        }
        let rate = match p.float("rate_gts") {
            r if r > 0.0 => r,
            _ => generation.mega_transfers() as f64 / 1000.0,
        };
        let credit = |name: &str| match p.uint(name) {
            0 => None,
            k => Some(k as u32),
        };
        let credits = [
            [
                credit("vc0_posted_credits"),
                credit("vc0_nonposted_credits"),
                credit("vc0_completion_credits"),
            ],
            // VC1 carries posted VDMs only.
            [credit("vc1_posted_credits"), None, None],
        ];
        let dir = || Direction {
            queues: Default::default(),
            credits,
            // The arbiter's first round starts at VC0.
            current: VC1,
            quota: 0,
            busy_until: 0,
            scheduled: false,
            seq: 0,
            pending_dllps: 0,
            received: 0,
        };
        Ok(CcixVcLink {
            // 128b/130b at `rate` GT/s per lane (Gen3 and later: the
            // spec's range excludes 8b/10b generations).
            bits_per_ps: rate * 1e-3 * config.lanes as f64 * 128.0 / 130.0,
            config,
            latency: ns_to_ps(p.float("latency_ns")),
            ccix_port: ns_to_ps(p.float("ccix_port_ns")),
            ccix_header: p.uint("ccix_header_bytes") as u32,
            weights: [p.uint("vc0_weight") as u32, p.uint("vc1_weight") as u32],
            credit_return: ns_to_ps(p.float("credit_return_ns")),
            protocol: None,
            dirs: [dir(), dir()],
            counts: Default::default(),
        })
    }

    /// The coherent messages on VC1 are `sys`'s: whether one carries a
    /// line, and the kernel VC it is delivered on, come from its tables.
    pub fn set_protocol(&mut self, sys: SystemRef) {
        self.protocol = Some(sys);
    }

    /// Serialization of `bytes` on the lanes (ps), as
    /// [`crate::vc_link::VcLinkParams::serialization_ps`].
    pub fn serialization_ps(&self, bytes: u32) -> Tick {
        serialization(self.bits_per_ps, bytes)
    }

    /// Wire bytes of a CCIX message (a posted VDM with a 4 DW header) that
    /// carries a line (`data`) or not.
    pub fn ccix_wire_bytes(&self, data: bool) -> u32 {
        let line = match (&self.protocol, data) {
            (Some(sys), true) => sys.line_bytes as u32,
            _ => 0,
        };
        self.config
            .tlp_wire_bytes(TlpKind::MemWrite, self.ccix_header + line, true)
    }

    /// One line per direction for a stuck run's report.
    pub fn report(&self) -> Vec<String> {
        ["down (host -> device)", "up (device -> host)"]
            .iter()
            .zip(&self.dirs)
            .map(|(name, d)| {
                let q: Vec<String> = (0..2)
                    .flat_map(|vc| (0..3).map(move |ty| (vc, ty)))
                    .filter(|&(vc, ty)| !d.queues[vc][ty].is_empty())
                    .map(|(vc, ty)| {
                        let c = d.credits[vc][ty].map_or("inf".to_string(), |k| k.to_string());
                        format!(
                            "VC{vc} {} {} (credits {c})",
                            ["posted", "non-posted", "completion"][ty],
                            d.queues[vc][ty].len()
                        )
                    })
                    .collect();
                format!(
                    "ccix vc link {name}: queued [{}]",
                    if q.is_empty() {
                        "none".to_string()
                    } else {
                        q.join(", ")
                    }
                )
            })
            .collect()
    }

    /// VC, flow-control type and wire bytes of `msg`.
    fn classify(&self, msg: &Msg, port: usize) -> Result<(usize, usize, u32), String> {
        match (msg, port) {
            (Msg::Tlp(t), IO_HOST | IO_DEVICE) => Ok((
                VC0,
                fc_type(t.kind),
                self.config.tlp_wire_bytes(t.kind, t.len, t.addr64()),
            )),
            (Msg::Coh(m), CCIX_HOST | CCIX_DEVICE) => {
                let data = self.carries_data(m)?;
                Ok((VC1, POSTED, self.ccix_wire_bytes(data)))
            }
            (other, _) => Err(format!(
                "ccix_vc_link: {other:?} on port {}: the io ports take TLPs, the ccix ports coherent messages",
                CCIX_VC_LINK.ports[port].name
            )),
        }
    }

    fn carries_data(&self, m: &CohMsg) -> Result<bool, String> {
        match &self.protocol {
            Some(sys) if sys.catalogue == m.catalogue => Ok(sys.protocol.msgs[m.msg as usize].data),
            _ => Err(format!(
                "ccix_vc_link: {} is a message of protocol {}, which this link was not told about",
                m.name(),
                m.catalogue.protocol
            )),
        }
    }

    fn kick(&mut self, dir: usize, ctx: &mut Ctx<'_, Msg>) {
        let d = &mut self.dirs[dir];
        if !d.scheduled {
            d.scheduled = true;
            ctx.wake_at(d.busy_until.max(ctx.now()), dir as u64);
        }
    }

    /// Whether the head of (vc, ty) may go: a credit, and no older posted
    /// TLP of its VC ahead of a non-posted request or a completion.
    fn sendable(d: &Direction, vc: usize, ty: usize) -> bool {
        let Some(head) = d.queues[vc][ty].front() else {
            return false;
        };
        if d.credits[vc][ty] == Some(0) {
            return false;
        }
        ty == POSTED
            || d.queues[vc][POSTED]
                .front()
                .is_none_or(|p| p.seq > head.seq)
    }

    /// The oldest sendable head of `vc`.
    fn next_of(d: &Direction, vc: usize) -> Option<usize> {
        (0..3)
            .filter(|&ty| Self::sendable(d, vc, ty))
            .min_by_key(|&ty| d.queues[vc][ty].front().map(|q| q.seq))
    }

    /// Weighted round robin between the VCs that can send.
    fn arbitrate(&mut self, dir: usize) -> Option<(usize, usize)> {
        let d = &mut self.dirs[dir];
        let cur = d.current;
        if d.quota > 0 {
            if let Some(ty) = Self::next_of(d, cur) {
                return Some((cur, ty));
            }
        }
        for step in 1..=2 {
            let vc = (cur + step) % 2;
            if let Some(ty) = Self::next_of(d, vc) {
                d.current = vc;
                d.quota = self.weights[vc];
                return Some((vc, ty));
            }
        }
        None
    }

    /// The wire of `dir` is free: DLLPs first, then the arbiter's TLP.
    fn send(&mut self, dir: usize, ctx: &mut Ctx<'_, Msg>) {
        self.dirs[dir].scheduled = false;
        let now = ctx.now();
        let base = dir_stat(dir);
        if self.dirs[dir].pending_dllps > 0 {
            let bytes = self.dirs[dir].pending_dllps * DLLP_WIRE_BYTES;
            let ser = self.serialization_ps(bytes);
            let d = &mut self.dirs[dir];
            d.pending_dllps = 0;
            d.busy_until = now + ser;
            self.counts[dir].dllp_bytes += bytes as u64;
            self.counts[dir].busy_ps += ser;
            ctx.count(base + ST_DLLP_BYTES, bytes as u64);
            self.kick(dir, ctx);
            return;
        }
        // Heads held for want of credit, each counted once.
        for vc in 0..2 {
            for ty in 0..3 {
                let d = &mut self.dirs[dir];
                let no_credit = d.credits[vc][ty] == Some(0);
                if let Some(head) = d.queues[vc][ty].front_mut() {
                    if no_credit && !head.counted_wait {
                        head.counted_wait = true;
                        self.counts[dir].credit_waits[vc] += 1;
                        ctx.count(base + ST_CREDIT_WAITS, 1);
                    }
                }
            }
        }
        let Some((vc, ty)) = self.arbitrate(dir) else {
            return;
        };
        let bits_per_ps = self.bits_per_ps;
        let d = &mut self.dirs[dir];
        let item = d.queues[vc][ty].pop_front().expect("a sendable head");
        if let Some(c) = &mut d.credits[vc][ty] {
            *c -= 1;
        }
        d.quota = d.quota.saturating_sub(1);
        let ser = serialization(bits_per_ps, item.wire_bytes);
        let end = now + ser;
        d.busy_until = end;
        let more = d.queues.iter().flatten().any(|q| !q.is_empty());
        let c = &mut self.counts[dir];
        c.tlp_bytes[vc] += item.wire_bytes as u64;
        c.tlps[vc] += 1;
        c.busy_ps += ser;
        ctx.count(base + ST_VC0_BYTES + vc, item.wire_bytes as u64);
        let arrive = end + self.latency + if vc == VC1 { self.ccix_port } else { 0 };
        ctx.schedule_local(
            arrive,
            (dir as u64) << 4 | (vc as u64) << 2 | ty as u64,
            item.msg,
        );
        if more {
            self.dirs[dir].scheduled = true;
            ctx.wake_at(end, dir as u64);
        }
    }

    /// A TLP of (dir, vc, ty) arrives: out of the receiver's port; its
    /// credit starts back; the receiver's ACK/UpdateFC go on the reverse
    /// wire.
    fn deliver(&mut self, dir: usize, vc: usize, ty: usize, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        if self.dirs[dir].credits[vc][ty].is_some() {
            ctx.wake_at(
                ctx.now() + self.credit_return,
                CREDIT | (dir as u64) << 4 | (vc as u64) << 2 | ty as u64,
            );
        }
        let d = &mut self.dirs[dir];
        d.received += 1;
        let n = d.received;
        let dllps = [self.config.ack_every, self.config.update_fc_every]
            .iter()
            .filter(|&&every| every > 0 && n % every as u64 == 0)
            .count() as u32;
        if dllps > 0 {
            self.dirs[1 - dir].pending_dllps += dllps;
            self.kick(1 - dir, ctx);
        }
        let port = match (vc, dir) {
            (VC0, DOWN) => IO_DEVICE,
            (VC0, _) => IO_HOST,
            (_, DOWN) => CCIX_DEVICE,
            _ => CCIX_HOST,
        };
        let kernel_vc = match (&msg, &self.protocol) {
            (Msg::Coh(m), Some(sys)) => sys.vc(m.msg),
            _ => 0,
        };
        ctx.send(port, msg, 0, kernel_vc);
    }
}

fn serialization(bits_per_ps: f64, bytes: u32) -> Tick {
    ((bytes as f64 * 8.0) / bits_per_ps).round().max(1.0) as Tick
}

fn dir_stat(dir: usize) -> usize {
    dir * STATS_PER_DIR
}

impl Component<Msg> for CcixVcLink {
    fn spec(&self) -> &'static ComponentSpec {
        &CCIX_VC_LINK
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let dir = match port {
            CCIX_HOST | IO_HOST => DOWN,
            _ => UP,
        };
        let (vc, ty, wire_bytes) = match self.classify(&msg, port) {
            Ok(c) => c,
            Err(e) => panic!("{e} (a wiring mistake)"),
        };
        let d = &mut self.dirs[dir];
        d.seq += 1;
        let item = Queued {
            msg,
            wire_bytes,
            seq: d.seq,
            counted_wait: false,
        };
        d.queues[vc][ty].push_back(item);
        self.kick(dir, ctx);
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        if token & CREDIT != 0 {
            let dir = ((token >> 4) & 1) as usize;
            let vc = ((token >> 2) & 1) as usize;
            let ty = (token & 3) as usize;
            if let Some(k) = &mut self.dirs[dir].credits[vc][ty] {
                *k += 1;
            }
            self.kick(dir, ctx);
        } else {
            self.send(token as usize, ctx);
        }
    }
    fn on_local(&mut self, token: u64, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let dir = ((token >> 4) & 1) as usize;
        let vc = ((token >> 2) & 1) as usize;
        let ty = (token & 3) as usize;
        self.deliver(dir, vc, ty, msg, ctx);
    }
}

/// The kernel link between a port of the `ccix_vc_link` and the component
/// on it: no delay of its own (the link has them all) and the protocol
/// link's virtual channels, which table agents send on.
pub fn port_wire() -> LinkParams {
    crate::flexbus::cachemem_wire()
}
