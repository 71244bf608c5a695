//! One PCIe link carrying two virtual channels: the CCIX attachment, where
//! regular PCIe (VC0: ATS translation requests and completions, the
//! TaPaSCo PCIe-DMA engine's TLPs) and CCIX (VC1: the coherence protocol's
//! messages) share the physical and data-link layers of one slot.
//!
//! CCIX §II: "the transaction layer uses VC0 for PCIe-packets and VC1 for
//! CCIX-packets, sharing the same physical and link layers".
//!
//! ```text
//!   device (RA, ATS switch, DMA engine)                      host (HA, SMMU, memory)
//!     VC0 queues P/NP/Cpl ─┐                            ┌─ VC0 receive buffers (credits)
//!                          ├─ VC arbiter ═══ lanes ═══► ┤
//!     VC1 queues P/NP/Cpl ─┘   (one per direction)      └─ VC1 receive buffers (credits)
//! ```
//!
//! **Flow control per VC.** PCIe keeps separate flow-control credits per
//! virtual channel and per type — posted, non-posted and completion
//! headers (PCIe Base Spec 3.0 §2.6.1 "Flow Control Rules": "Flow Control
//! is handled by the Transaction Layer ... independently for each enabled
//! VC"). A TLP takes one header credit of its VC and type when it starts on
//! the wire; the receiver frees it when it has passed the TLP on and
//! reports it in an UpdateFC, so it is back `credit_return_ps` after the
//! TLP arrived. A VC whose head TLP has no credit is skipped by the
//! arbiter: **exhausting one VC's credits never blocks the other VC**
//! (that is why CCIX has a VC of its own). Within a VC PCIe's ordering
//! holds: a non-posted request or a completion does not pass a posted TLP
//! queued before it on the same VC (§2.4.1); there is no ordering between
//! VCs (§2.4.2: "no ordering relationship ... between different VCs").
//!
//! **VC arbitration.** Per direction, weighted round robin over the VCs
//! that can send, counted in TLPs (PCIe §6.3.3.2 lists strict priority,
//! round robin and weighted round robin as the VC arbitration schemes; the
//! weights here are the model's assumption, default 1:1). A VC keeps the
//! wire for up to its weight of TLPs in a row while it has a sendable TLP;
//! an idle VC's turn passes at once.
//!
//! **One wire.** Both VCs' TLPs serialize on the same lanes one after the
//! other: a TLP of `b` wire bytes ([`LinkConfig::tlp_wire_bytes`]: framing,
//! sequence number, header, payload, LCRC) takes `b × 8 × 130 / 128 /
//! (rate × lanes)` (128b/130b; the rate is a free number so that CCIX's
//! 25 GT/s Extended Speed Mode fits) and arrives `latency_ps` after its last
//! byte. The receiver's ACK and UpdateFC DLLPs (8 B each) go on the reverse
//! wire every `ack_every`/`update_fc_every` TLPs, ahead of queued TLPs
//! (a DLLP is a link-layer packet, not arbitrated among VCs).
//!
//! **CCIX messages as TLPs.** CCIX 1.0 carries its protocol messages in the
//! "PCIe compatible" TLP format as Vendor Defined Messages (CCIX Base
//! Specification 1.0, transport layer chapter: a 4 DW VDM header, the CCIX
//! message in the payload); a message is posted (PCIe §2.2.8.6: vendor
//! defined messages are Msg/MsgD requests, posted). [`ccix_message`] builds
//! one: a VDM with a 4 DW header has the wire size of a 64-bit-address
//! memory write of the same payload.
//!
//! Not modelled: data credits (one header credit per TLP stands for both,
//! as in [`crate::link`]), CCIX's optimized TLP format and the packing of
//! several CCIX messages into one TLP, replays.
//!
//! The link is a self-contained timing engine ([`SharedVcLink::run`]): the
//! caller gives the TLPs that are ready at time zero or later, and a
//! responder that turns each delivered TLP into the TLPs it causes (a
//! completion after the SMMU's walk, a CCIX data response after the home
//! agent), so request/response chains contend with everything else on the
//! link while the run goes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use ccsim_kernel::time::Tick;

use crate::msg::TlpKind;
use crate::tlp::{LinkConfig, DLLP_WIRE_BYTES};

/// VC0: regular PCIe (ATS, DMA).
pub const VC0: usize = 0;
/// VC1: CCIX.
pub const VC1: usize = 1;
/// Host to device.
pub const DOWN: usize = 0;
/// Device to host.
pub const UP: usize = 1;

/// PCIe flow-control types (header credits kept per VC and type).
pub const POSTED: usize = 0;
/// Non-posted requests (MRd, ATS Translation Requests).
pub const NON_POSTED: usize = 1;
/// Completions.
pub const COMPLETION: usize = 2;

/// The flow-control type of a TLP kind.
pub fn fc_type(kind: TlpKind) -> usize {
    match kind {
        TlpKind::MemWrite => POSTED,
        TlpKind::MemRead => NON_POSTED,
        TlpKind::CplD => COMPLETION,
    }
}

/// One TLP offered to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlp {
    /// When it is ready at its transmitter (ps).
    pub ready: Tick,
    /// DOWN or UP.
    pub dir: usize,
    /// VC0 or VC1.
    pub vc: usize,
    /// Its transaction-layer format (a VDM travels as a posted 4 DW TLP).
    pub kind: TlpKind,
    /// Payload bytes.
    pub payload: u32,
    /// 4 DW header (64-bit address or a message) rather than 3 DW.
    pub header_4dw: bool,
    /// The caller's tag, handed back on delivery.
    pub tag: u64,
}

/// A CCIX protocol message of `payload` bytes as a PCIe VDM on VC1
/// (posted, 4 DW header; see the module docs).
pub fn ccix_message(ready: Tick, dir: usize, payload: u32, tag: u64) -> Tlp {
    Tlp {
        ready,
        dir,
        vc: VC1,
        kind: TlpKind::MemWrite,
        payload,
        header_4dw: true,
        tag,
    }
}

/// A TLP the link delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// The TLP as offered.
    pub tlp: Tlp,
    /// When its first byte went on the wire.
    pub start: Tick,
    /// When it arrived at the receiver.
    pub arrive: Tick,
}

/// The link's parameters.
#[derive(Debug, Clone)]
pub struct VcLinkParams {
    /// TLP formats (framing by generation, ACK/UpdateFC rates).
    pub config: LinkConfig,
    /// Transfer rate per lane (GT/s), 128b/130b; 8 for the AU280's Gen3,
    /// 16 for the VCK5000's Gen4, 25 in CCIX ESM (CCIX §II, Table I).
    pub rate_gts: f64,
    /// One way after a TLP's last byte (ps).
    pub latency_ps: Tick,
    /// Header credits per VC and flow-control type of each receiver
    /// (`None`: infinite).
    pub credits: [[Option<u32>; 3]; 2],
    /// A credit's return after its TLP arrived (ps).
    pub credit_return_ps: Tick,
    /// VC arbiter weights in TLPs.
    pub weights: [u32; 2],
}

impl VcLinkParams {
    /// Parameters of a link of `lanes` lanes at `rate_gts`, infinite
    /// credits, 1:1 arbitration.
    pub fn new(config: LinkConfig, rate_gts: f64, latency_ps: Tick) -> VcLinkParams {
        VcLinkParams {
            config,
            rate_gts,
            latency_ps,
            credits: [[None; 3]; 2],
            credit_return_ps: 0,
            weights: [1, 1],
        }
    }
    /// Serialization of `bytes` on the lanes (ps).
    pub fn serialization_ps(&self, bytes: u32) -> Tick {
        let bits_per_ps = self.rate_gts * 1e-3 * self.config.lanes as f64 * 128.0 / 130.0;
        ((bytes as f64 * 8.0) / bits_per_ps).round().max(1.0) as Tick
    }
    /// Wire bytes of `tlp`.
    pub fn wire_bytes(&self, tlp: &Tlp) -> u32 {
        self.config
            .tlp_wire_bytes(tlp.kind, tlp.payload, tlp.header_4dw)
    }
}

/// What a run moved, per direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireCounts {
    /// TLP bytes per VC on this direction's wire.
    pub tlp_bytes: [u64; 2],
    /// TLPs per VC.
    pub tlps: [u64; 2],
    /// DLLP bytes (ACK/UpdateFC for the other direction's TLPs).
    pub dllp_bytes: u64,
    /// Time the wire was busy (ps).
    pub busy_ps: Tick,
    /// TLPs that found their VC's credit of their type exhausted when they
    /// reached the head of their queue.
    pub credit_waits: [u64; 2],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A TLP becomes ready (index into `offered`).
    Offer(usize),
    /// The wire of a direction is free: arbitrate.
    Wire(usize),
    /// A TLP arrives at its receiver.
    Arrive(usize),
    /// A credit (dir, vc, type) comes back.
    Credit(usize, usize, usize),
}

struct Dir {
    queues: [[VecDeque<(u64, usize)>; 3]; 2],
    credits: [[Option<u32>; 3]; 2],
    current: usize,
    quota: u32,
    busy_until: Tick,
    wake_pending: bool,
    pending_dllps: u32,
    received: u64,
    seq: u64,
    counted_wait: Vec<bool>,
}

/// The shared link (see the module docs).
#[derive(Debug, Clone)]
pub struct SharedVcLink {
    /// Its parameters.
    pub params: VcLinkParams,
    /// Counts of the last run, per direction.
    pub counts: [WireCounts; 2],
}

impl SharedVcLink {
    /// A link with `params`.
    pub fn new(params: VcLinkParams) -> Result<SharedVcLink, String> {
        if let Some(p) = params.config.problems().first() {
            return Err(format!("vc link: {p}"));
        }
        if params.rate_gts.is_nan() || params.rate_gts <= 0.0 {
            return Err(format!(
                "vc link: rate_gts must be positive, got {}",
                params.rate_gts
            ));
        }
        if params.weights.contains(&0) {
            return Err(format!(
                "vc link: arbiter weights must be at least 1 TLP, got {:?}",
                params.weights
            ));
        }
        if params.credits.iter().flatten().any(|c| *c == Some(0)) {
            return Err(
                "vc link: a credit count of 0 never lets a TLP go; use None for infinite".into(),
            );
        }
        Ok(SharedVcLink {
            params,
            counts: Default::default(),
        })
    }

    /// Runs the link from time zero with the TLPs `initial`; `respond` is
    /// told of every delivery and returns the TLPs it causes (their `ready`
    /// must not be before the delivery's arrival). Returns every delivery
    /// in arrival order.
    pub fn run(
        &mut self,
        initial: Vec<Tlp>,
        mut respond: impl FnMut(&Delivered) -> Vec<Tlp>,
    ) -> Result<Vec<Delivered>, String> {
        let p = self.params.clone();
        let dir = || Dir {
            queues: Default::default(),
            credits: p.credits,
            // The first round of the arbiter starts at VC0.
            current: VC1,
            quota: 0,
            busy_until: 0,
            wake_pending: false,
            pending_dllps: 0,
            received: 0,
            seq: 0,
            counted_wait: Vec::new(),
        };
        let mut dirs = [dir(), dir()];
        self.counts = Default::default();
        let mut offered: Vec<Tlp> = Vec::new();
        let mut started: Vec<Tick> = Vec::new();
        let mut events = Agenda::default();
        for t in initial {
            offer(&mut offered, &mut started, &mut events, t)?;
        }
        let mut out = Vec::new();
        while let Some(Reverse((now, _, ev))) = events.heap.pop() {
            match ev {
                Event::Offer(i) => {
                    let t = offered[i];
                    let d = &mut dirs[t.dir];
                    d.seq += 1;
                    d.queues[t.vc][fc_type(t.kind)].push_back((d.seq, i));
                    d.counted_wait.resize(offered.len(), false);
                    if !d.wake_pending {
                        d.wake_pending = true;
                        let at = d.busy_until.max(now);
                        events.push(at, Event::Wire(t.dir));
                    }
                }
                Event::Credit(di, vc, ty) => {
                    let d = &mut dirs[di];
                    if let Some(c) = &mut d.credits[vc][ty] {
                        *c += 1;
                    }
                    if !d.wake_pending {
                        d.wake_pending = true;
                        let at = d.busy_until.max(now);
                        events.push(at, Event::Wire(di));
                    }
                }
                Event::Wire(di) => {
                    dirs[di].wake_pending = false;
                    let d = &mut dirs[di];
                    // Link-layer DLLPs first.
                    if d.pending_dllps > 0 {
                        let bytes = d.pending_dllps * DLLP_WIRE_BYTES;
                        d.pending_dllps = 0;
                        let ser = p.serialization_ps(bytes);
                        d.busy_until = now + ser;
                        self.counts[di].dllp_bytes += bytes as u64;
                        self.counts[di].busy_ps += ser;
                        d.wake_pending = true;
                        events.push(d.busy_until, Event::Wire(di));
                        continue;
                    }
                    let Some((vc, ty)) = arbitrate(d, &p, &mut self.counts[di]) else {
                        continue;
                    };
                    let (_, i) = d.queues[vc][ty].pop_front().expect("a sendable head");
                    if let Some(c) = &mut d.credits[vc][ty] {
                        *c -= 1;
                    }
                    d.quota = d.quota.saturating_sub(1);
                    let t = offered[i];
                    let bytes = p.wire_bytes(&t);
                    let ser = p.serialization_ps(bytes);
                    started[i] = now;
                    d.busy_until = now + ser;
                    let c = &mut self.counts[di];
                    c.tlp_bytes[vc] += bytes as u64;
                    c.tlps[vc] += 1;
                    c.busy_ps += ser;
                    events.push(d.busy_until + p.latency_ps, Event::Arrive(i));
                    if d.queues.iter().flatten().any(|q| !q.is_empty()) {
                        d.wake_pending = true;
                        events.push(d.busy_until, Event::Wire(di));
                    }
                }
                Event::Arrive(i) => {
                    let t = offered[i];
                    let ty = fc_type(t.kind);
                    if p.credits[t.vc][ty].is_some() {
                        events.push(now + p.credit_return_ps, Event::Credit(t.dir, t.vc, ty));
                    }
                    // The receiver's ACK/UpdateFC go back on the reverse wire.
                    let rd = &mut dirs[t.dir];
                    rd.received += 1;
                    let n = rd.received;
                    let dllps = [p.config.ack_every, p.config.update_fc_every]
                        .iter()
                        .filter(|&&every| every > 0 && n % every as u64 == 0)
                        .count() as u32;
                    if dllps > 0 {
                        let rev = &mut dirs[1 - t.dir];
                        rev.pending_dllps += dllps;
                        if !rev.wake_pending {
                            rev.wake_pending = true;
                            let at = rev.busy_until.max(now);
                            events.push(at, Event::Wire(1 - t.dir));
                        }
                    }
                    let done = Delivered {
                        tlp: t,
                        start: started[i],
                        arrive: now,
                    };
                    for next in respond(&done) {
                        if next.ready < now {
                            return Err(format!(
                                "vc link: a response is ready at {} ps, before the delivery that caused it ({now} ps)",
                                next.ready
                            ));
                        }
                        offer(&mut offered, &mut started, &mut events, next)?;
                    }
                    out.push(done);
                }
            }
        }
        Ok(out)
    }
}

/// The run's future events in time order (ties in the order scheduled).
#[derive(Default)]
struct Agenda {
    heap: BinaryHeap<Reverse<(Tick, u64, Event)>>,
    order: u64,
}

impl Agenda {
    fn push(&mut self, at: Tick, e: Event) {
        self.order += 1;
        self.heap.push(Reverse((at, self.order, e)));
    }
}

/// Adds `t` to the run: it becomes ready at `t.ready`.
fn offer(
    offered: &mut Vec<Tlp>,
    started: &mut Vec<Tick>,
    events: &mut Agenda,
    t: Tlp,
) -> Result<(), String> {
    if t.dir > 1 || t.vc > 1 {
        return Err(format!(
            "vc link: a TLP needs dir 0 or 1 and vc 0 or 1, got dir {} vc {}",
            t.dir, t.vc
        ));
    }
    offered.push(t);
    started.push(0);
    events.push(t.ready, Event::Offer(offered.len() - 1));
    Ok(())
}

/// The head of `(vc, ty)` if it may go: credit, and PCIe's ordering within
/// the VC (no NP or Cpl passes an older posted TLP).
fn sendable(d: &Dir, vc: usize, ty: usize) -> bool {
    let Some(&(seq, _)) = d.queues[vc][ty].front() else {
        return false;
    };
    if d.credits[vc][ty] == Some(0) {
        return false;
    }
    ty == POSTED || d.queues[vc][POSTED].front().is_none_or(|&(s, _)| s > seq)
}

/// The oldest sendable head of `vc`.
fn next_of(d: &Dir, vc: usize) -> Option<usize> {
    (0..3)
        .filter(|&ty| sendable(d, vc, ty))
        .min_by_key(|&ty| d.queues[vc][ty].front().map(|q| q.0))
}

/// Weighted round robin between the VCs with a sendable TLP; counts heads
/// held for want of credit.
fn arbitrate(d: &mut Dir, p: &VcLinkParams, counts: &mut WireCounts) -> Option<(usize, usize)> {
    for vc in 0..2 {
        for ty in 0..3 {
            if let Some(&(_, i)) = d.queues[vc][ty].front() {
                if d.credits[vc][ty] == Some(0) && !d.counted_wait[i] {
                    d.counted_wait[i] = true;
                    counts.credit_waits[vc] += 1;
                }
            }
        }
    }
    let cur = d.current;
    if d.quota > 0 {
        if let Some(ty) = next_of(d, cur) {
            return Some((cur, ty));
        }
    }
    for step in 1..=2 {
        let vc = (cur + step) % 2;
        if let Some(ty) = next_of(d, vc) {
            d.current = vc;
            d.quota = p.weights[vc];
            return Some((vc, ty));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlp::Generation;

    /// The AU280's attachment: Gen3 x16 (CCIX Table I), 100 ns one way
    /// (a test value).
    fn au280() -> VcLinkParams {
        VcLinkParams::new(LinkConfig::new(Generation::Gen3, 16), 8.0, 100_000)
    }

    fn dma_write(ready: Tick, tag: u64) -> Tlp {
        Tlp {
            ready,
            dir: UP,
            vc: VC0,
            kind: TlpKind::MemWrite,
            payload: 256,
            header_4dw: true,
            tag,
        }
    }

    #[test]
    fn one_tlp_takes_its_serialization_and_the_latency() {
        let mut link = SharedVcLink::new(au280()).unwrap();
        let d = link
            .run(vec![ccix_message(0, UP, 16, 1)], |_| vec![])
            .unwrap();
        // A 16 B VDM: 16 B header + 16 B + 8 B framing/LCRC = 40 B; at
        // 8 GT/s x 16 with 128b/130b: 40*8*130/128/128 ns = 2.539 ns.
        assert_eq!(link.params.wire_bytes(&d[0].tlp), 40);
        assert_eq!(d[0].arrive, 2_539 + 100_000);
    }

    #[test]
    fn both_vcs_bytes_add_up_on_the_wire() {
        let mut link = SharedVcLink::new(au280()).unwrap();
        let mut tlps: Vec<Tlp> = (0..10).map(|i| dma_write(0, i)).collect();
        tlps.extend((0..10).map(|i| ccix_message(0, UP, 80, 100 + i)));
        let d = link.run(tlps, |_| vec![]).unwrap();
        assert_eq!(d.len(), 20);
        let up = link.counts[UP];
        // 10 x (256 + 24) on VC0, 10 x (80 + 24) on VC1.
        assert_eq!(up.tlp_bytes, [2_800, 1_040]);
        assert_eq!(up.tlps, [10, 10]);
        // One wire: the last TLP ends after every byte of both VCs.
        let last_start = d.iter().map(|x| x.start).max().unwrap();
        let all = link.params.serialization_ps(2_800 + 1_040);
        let last_end = d.iter().map(|x| x.arrive).max().unwrap() - 100_000;
        assert!(last_start < last_end);
        let sum: Tick = d
            .iter()
            .map(|x| link.params.serialization_ps(link.params.wire_bytes(&x.tlp)))
            .sum();
        assert_eq!(last_end, sum);
        assert!(sum.abs_diff(all) <= 20, "{sum} vs {all}");
        assert_eq!(up.busy_ps, sum);
        // The host's ACK and UpdateFC every 4 TLPs: 20 TLPs -> 10 DLLPs down.
        assert_eq!(link.counts[DOWN].dllp_bytes, 10 * 8);
        // 1:1 arbitration: the VCs alternate.
        let vcs: Vec<usize> = d.iter().map(|x| x.tlp.vc).take(6).collect();
        assert_eq!(vcs, vec![VC0, VC1, VC0, VC1, VC0, VC1]);
    }

    #[test]
    fn exhausted_credits_on_one_vc_do_not_block_the_other() {
        let mut p = au280();
        // VC1 posted: one credit, back 10 us after its TLP arrives.
        p.credits[VC1][POSTED] = Some(1);
        p.credit_return_ps = 10_000_000;
        let mut link = SharedVcLink::new(p).unwrap();
        let mut tlps: Vec<Tlp> = (0..3).map(|i| ccix_message(0, UP, 80, i)).collect();
        tlps.extend((0..8).map(|i| dma_write(0, 10 + i)));
        let d = link.run(tlps, |_| vec![]).unwrap();
        let vc0_last = d
            .iter()
            .filter(|x| x.tlp.vc == VC0)
            .map(|x| x.arrive)
            .max()
            .unwrap();
        let vc1: Vec<Tick> = d
            .iter()
            .filter(|x| x.tlp.vc == VC1)
            .map(|x| x.arrive)
            .collect();
        // All of VC0 arrives within a microsecond although VC1 waits 10 us per message.
        assert!(vc0_last < 1_000_000, "{vc0_last}");
        assert_eq!(vc1.len(), 3);
        assert!(vc1[1] > 10_000_000 && vc1[2] > 20_000_000, "{vc1:?}");
        assert_eq!(link.counts[UP].credit_waits, [0, 2]);
        // And the other way round: VC0's non-posted credits run dry, VC1 goes on.
        let mut p = au280();
        p.credits[VC0][NON_POSTED] = Some(1);
        p.credit_return_ps = 10_000_000;
        let mut link = SharedVcLink::new(p).unwrap();
        let mut tlps: Vec<Tlp> = (0..3)
            .map(|i| Tlp {
                ready: 0,
                dir: UP,
                vc: VC0,
                kind: TlpKind::MemRead,
                payload: 0,
                header_4dw: true,
                tag: i,
            })
            .collect();
        tlps.extend((0..8).map(|i| ccix_message(0, UP, 80, 10 + i)));
        let d = link.run(tlps, |_| vec![]).unwrap();
        let vc1_last = d
            .iter()
            .filter(|x| x.tlp.vc == VC1)
            .map(|x| x.arrive)
            .max()
            .unwrap();
        assert!(vc1_last < 1_000_000, "{vc1_last}");
        assert_eq!(link.counts[UP].credit_waits, [2, 0]);
    }

    /// An ATS round trip (Translation Request up on VC0, the SMMU's 200 ns,
    /// its completion down on VC0) while the host streams CCIX data
    /// responses down VC1.
    fn ats_round_trip(ccix_responses: u64, vc1_posted_credits: Option<u32>) -> Tick {
        let mut p = au280();
        p.credits[VC1][POSTED] = vc1_posted_credits;
        p.credit_return_ps = 50_000;
        let mut link = SharedVcLink::new(p).unwrap();
        let request = Tlp {
            ready: 0,
            dir: UP,
            vc: VC0,
            kind: TlpKind::MemRead,
            payload: 0,
            header_4dw: true,
            tag: u64::MAX,
        };
        let mut tlps = vec![request];
        tlps.extend((0..ccix_responses).map(|i| ccix_message(0, DOWN, 80, i)));
        let d = link
            .run(tlps, |d| {
                if d.tlp.tag == u64::MAX {
                    vec![Tlp {
                        ready: d.arrive + 200_000,
                        dir: DOWN,
                        vc: VC0,
                        kind: TlpKind::CplD,
                        payload: 8,
                        header_4dw: false,
                        tag: u64::MAX - 1,
                    }]
                } else {
                    vec![]
                }
            })
            .unwrap();
        d.iter().find(|x| x.tlp.tag == u64::MAX - 1).unwrap().arrive
    }

    #[test]
    fn the_ats_round_trip_grows_under_vc1_load() {
        let idle = ats_round_trip(0, None);
        // Request 24 B + completion 28 B of serialization, two latencies, the walk.
        let p = au280();
        assert_eq!(
            idle,
            p.serialization_ps(24) + p.serialization_ps(28) + 2 * 100_000 + 200_000
        );
        // 400 CCIX data messages (104 B each, 6.6 ns) keep the down wire
        // busy for 2.6 us; with 1:1 arbitration the completion waits for
        // at most one of them.
        let loaded = ats_round_trip(400, None);
        assert!(loaded > idle, "{loaded} vs {idle}");
        assert!(
            loaded - idle <= p.serialization_ps(104) + 1,
            "{}",
            loaded - idle
        );
        // Fewer VC1 credits make VC1's burst sparser, never VC0 slower.
        let limited = ats_round_trip(400, Some(2));
        assert!(limited <= loaded, "{limited} vs {loaded}");
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut p = au280();
        p.weights = [0, 1];
        let e = SharedVcLink::new(p).unwrap_err();
        assert!(e.contains("weights"), "{e}");
        let mut p = au280();
        p.credits[VC1][POSTED] = Some(0);
        let e = SharedVcLink::new(p).unwrap_err();
        assert!(e.contains("credit count of 0"), "{e}");
    }
}
