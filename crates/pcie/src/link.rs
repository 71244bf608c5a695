//! The `pcie_link` component: a full-duplex PCIe link with exact TLP and DLLP
//! byte accounting.
//!
//! The link sits between two agents (`up`: root complex side, `down`: device
//! side), each wired to it with a zero-latency kernel link. A TLP entering one
//! side occupies that direction's wire for the serialization time of its wire
//! bytes ([`LinkConfig::tlp_wire_bytes`] at the encoded lane rate), then
//! arrives `latency_ns` later (PHY, data-link pipeline and flight). The
//! receiver returns an ACK DLLP every `ack_every_tlps` TLPs and an UpdateFC
//! DLLP every `update_fc_every_tlps` TLPs; each DLLP occupies the *reverse*
//! wire for 8 bytes, so a link busy in both directions loses the DLLP share of
//! its bandwidth, as real links do.
//!
//! ## Faults (all off by default)
//!
//! * **LCRC errors and replay.** With `bit_error_rate` > 0 every
//!   transmission of a TLP of `b` wire bits fails its LCRC with probability
//!   `p = 1 - (1 - BER)^b`. The receiver answers a failed TLP with a NAK
//!   DLLP on the reverse wire and the transmitter replays it from its replay
//!   buffer, so each replay adds `ser(TLP) + 2 * latency + ser(DLLP)` to
//!   the TLP's delivery (go-back-N: the TLPs behind it wait for the replay,
//!   as the copies the receiver discards would have). The number of replays
//!   of a TLP is drawn from the link's own seeded stream with one uniform per
//!   TLP (`floor(ln u / ln p)`, geometric), so at a fixed seed a higher rate
//!   never gives fewer replays.
//! * **Flow-control credits and lost UpdateFCs.** With `header_credits` > 0
//!   each direction's receiver has that many TLP credits; a transmitter
//!   without credit holds its TLPs. The receiver frees a credit when it
//!   delivers a TLP and reports its cumulative CREDITS_ALLOCATED in an
//!   UpdateFC DLLP every `update_fc_every_tlps` TLPs. An UpdateFC is lost
//!   with `update_fc_loss_probability` (DLLPs are not replayed); the next
//!   UpdateFC carries the cumulative count and heals it, at the latest the
//!   one the receiver's UpdateFC timer sends `update_fc_timer_us` after the
//!   last one it sent.
//!
//! Not modelled: a lost or corrupted NAK/ACK (the REPLAY_TIMER path), the
//! link retraining after four replays of one TLP (REPLAY_NUM rollover),
//! data credits (one header credit per TLP stands for both), and the
//! UpdateFCs the timer sends when nothing was lost (they carry no news).
//!
//! Fault counts are kept in [`LinkFaults`] (not declared statistics, so a
//! fault-free run's statistics are what they were); runners add them to
//! their results when faults are on.

use std::collections::VecDeque;

use ccsim_kernel::prelude::*;

use crate::msg::Msg;
use crate::tlp::{Generation, LinkConfig, DLLP_WIRE_BYTES};
use crate::util::{complete, ns_to_ps};

/// The largest `bit_error_rate`: a maximum-size TLP (4 KiB payload) still
/// gets through one time in 28 at Gen3+ (128b/130b), one in 60 at Gen1-2
/// (8b/10b), so its replays stay bounded.
pub const MAX_BIT_ERROR_RATE: f64 = 1e-4;

/// Declaration of `pcie_link`.
pub static PCIE_LINK: ComponentSpec = ComponentSpec {
    type_name: "pcie_link",
    description: "A PCIe link (generation, lanes, encoding) that serializes TLPs by their exact wire bytes and charges ACK/UpdateFC DLLPs to the reverse direction; also holds the MPS/MRRS/RCB its agents negotiated.",
    params: &[
        ParamSpec { name: "generation", kind: ParamKind::Int, default: ParamDefault::Int(3), unit: "", range: ParamRange::between(1.0, 5.0), from: "PIO paper §3: PCIe Gen3 on Enzian and the PC", description: "PCIe generation 1-5 (2.5/5/8/16/32 GT/s; 8b/10b for 1-2, 128b/130b for 3+)." },
        ParamSpec { name: "lanes", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "lanes", range: ParamRange::one_of(&[1, 2, 4, 8, 12, 16, 32]), from: "PIO paper §3: Enzian's ThunderX-1 side is x8", description: "Negotiated link width." },
        ParamSpec { name: "latency_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: PHY and data-link pipelines of two ports plus a short channel", description: "One-way latency after serialization: PHY and data-link pipelines of both ports plus flight time." },
        ParamSpec { name: "max_payload_bytes", kind: ParamKind::Int, default: ParamDefault::Int(256), unit: "bytes", range: ParamRange::between(128.0, 4096.0).power_of_two(), from: "assumed: a common root-port MPS", description: "Max Payload Size (MPS): largest MWr/CplD payload." },
        ParamSpec { name: "max_read_request_bytes", kind: ParamKind::Int, default: ParamDefault::Int(512), unit: "bytes", range: ParamRange::between(128.0, 4096.0).power_of_two(), from: "assumed: the Linux default MRRS", description: "Max Read Request Size (MRRS): largest MRd a requester issues." },
        ParamSpec { name: "read_completion_boundary", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "bytes", range: ParamRange::one_of(&[64, 128]), from: "assumed: the 64 B RCB of root ports (PCIe allows 64 or 128)", description: "Read Completion Boundary (RCB): completions are split on multiples of it." },
        ParamSpec { name: "ecrc", kind: ParamKind::Bool, default: ParamDefault::Bool(false), unit: "", range: ParamRange::ANY, from: "assumed: ECRC is optional and usually off", description: "Whether TLPs carry a 4-byte end-to-end CRC." },
        ParamSpec { name: "ack_every_tlps", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "TLPs", range: ParamRange::at_least(0.0), from: "assumed", description: "The receiver sends one ACK DLLP per this many TLPs (0 = no ACK accounting)." },
        ParamSpec { name: "update_fc_every_tlps", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "TLPs", range: ParamRange::at_least(0.0), from: "assumed", description: "The receiver sends one UpdateFC DLLP per this many TLPs (0 = none)." },
        ParamSpec { name: "bit_error_rate", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "errors/bit", range: ParamRange::between(0.0, MAX_BIT_ERROR_RATE), from: "assumed: an error-free link (fault injection; PCIe links are specified for a bit error ratio of at most 1e-12)", description: "Probability that a wire bit is corrupted. A TLP with a corrupted bit fails its LCRC, is NAKed and replayed from the replay buffer: each replay costs the NAK's flight and the retransmission." },
        ParamSpec { name: "header_credits", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "TLPs", range: ParamRange::between(0.0, 127.0), from: "assumed: 0 = infinite, the encoding of an unlimited receive buffer in PCIe flow control (at most 127 header credits without scaled flow control)", description: "Receive-buffer credits of each direction's receiver, one per TLP (0 = infinite). A transmitter without credit holds its TLPs until an UpdateFC returns some." },
        ParamSpec { name: "update_fc_loss_probability", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "", range: ParamRange::between(0.0, 0.9), from: "assumed: no DLLP is lost (fault injection)", description: "Probability that an UpdateFC DLLP is lost (a corrupted DLLP is dropped, not replayed); its credits return with the next UpdateFC. Needs finite header_credits." },
        ParamSpec { name: "update_fc_timer_us", kind: ParamKind::Float, default: ParamDefault::Float(30.0), unit: "us", range: ParamRange::positive(), from: "PCIe Base Spec: a receiver sends an UpdateFC at least every 30 us (the 30 us timer of Altera's IP Compiler for PCI Express User Guide, 2014, ch. 11, step 6b)", description: "The receiver's UpdateFC timer: the longest time between two UpdateFCs, which heals a lost one when no later UpdateFC comes." },
    ],
    ports: &[
        PortSpec { name: "up", description: "Upstream agent (root complex); TLPs in and out.", required: true },
        PortSpec { name: "down", description: "Downstream agent (device endpoint); TLPs in and out.", required: true },
    ],
    stats: &[
        StatSpec { name: "down.tlps", kind: StatKind::Counter, unit: "TLPs", description: "TLPs sent downstream (up -> down)." },
        StatSpec { name: "down.payload_bytes", kind: StatKind::Counter, unit: "bytes", description: "Payload bytes sent downstream." },
        StatSpec { name: "down.wire_bytes", kind: StatKind::Counter, unit: "bytes", description: "TLP bytes on the downstream wire (framing, header, payload, CRCs)." },
        StatSpec { name: "down.dllp_bytes", kind: StatKind::Counter, unit: "bytes", description: "DLLP bytes on the downstream wire (ACK/UpdateFC for upstream TLPs)." },
        StatSpec { name: "up.tlps", kind: StatKind::Counter, unit: "TLPs", description: "TLPs sent upstream (down -> up)." },
        StatSpec { name: "up.payload_bytes", kind: StatKind::Counter, unit: "bytes", description: "Payload bytes sent upstream." },
        StatSpec { name: "up.wire_bytes", kind: StatKind::Counter, unit: "bytes", description: "TLP bytes on the upstream wire." },
        StatSpec { name: "up.dllp_bytes", kind: StatKind::Counter, unit: "bytes", description: "DLLP bytes on the upstream wire (ACK/UpdateFC for downstream TLPs)." },
    ],
    check: Some(check),
};

/// Faults need a configuration they can act on: a lost UpdateFC only delays
/// finite credits, and finite credits must come back before they run out.
fn check(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let credits = p.int("header_credits");
    let loss = p.float("update_fc_loss_probability");
    if loss > 0.0 && credits == 0 {
        return Err(ParamProblem::new(
            "update_fc_loss_probability",
            format!("a lost UpdateFC only delays finite credits: set header_credits (now 0 = infinite), got {loss}"),
        ));
    }
    let every = p.int("update_fc_every_tlps");
    if credits > 0 && !(1..=credits).contains(&every) {
        return Err(ParamProblem::new(
            "update_fc_every_tlps",
            format!("must be from 1 to header_credits ({credits}) with finite credits, else the transmitter runs dry, got {every}"),
        ));
    }
    Ok(())
}

/// Reads a [`LinkConfig`] from `pcie_link` parameters (the declared ranges
/// are [`LinkConfig::problems`]'s rules).
pub fn link_config(params: &Params) -> Result<LinkConfig, String> {
    let p = complete(&PCIE_LINK, params)?;
    let cfg = LinkConfig {
        generation: Generation::from_number(p.int("generation")).expect("range [1, 5]"),
        lanes: p.uint("lanes") as u32,
        mps: p.uint("max_payload_bytes") as u32,
        mrrs: p.uint("max_read_request_bytes") as u32,
        rcb: p.uint("read_completion_boundary") as u32,
        ecrc: p.bool("ecrc"),
        ack_every: p.uint("ack_every_tlps") as u32,
        update_fc_every: p.uint("update_fc_every_tlps") as u32,
    };
    debug_assert_eq!(cfg.problems(), Vec::<String>::new());
    Ok(cfg)
}

struct Wire {
    busy_until: Tick,
    received: u64,
    in_flight: VecDeque<(Tick, Msg)>,
    /// Flow control of this direction, when credits are finite: the
    /// transmitter's CREDIT_LIMIT and CREDITS_CONSUMED, the TLPs it holds
    /// for want of credit, the receiver's CREDITS_ALLOCATED, the last value
    /// an UpdateFC delivered, UpdateFCs in flight (arrival, value), and the
    /// receiver's UpdateFC timer (armed after a loss).
    limit: u64,
    consumed: u64,
    held: VecDeque<Msg>,
    allocated: u64,
    reported: u64,
    grants: VecDeque<(Tick, u64)>,
    timer_at: Option<Tick>,
}

/// Faults a link injected and recovered from (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkFaults {
    /// TLP retransmissions after a NAK (one NAK DLLP each).
    pub replays: u64,
    /// Time the replays added to TLP deliveries (ps).
    pub replay_ps: Tick,
    /// TLPs a transmitter held for want of a credit.
    pub credit_stalls: u64,
    /// UpdateFC DLLPs lost.
    pub update_fc_lost: u64,
    /// UpdateFC DLLPs the receiver's timer sent.
    pub update_fc_timer: u64,
}

/// Wake tokens: deliveries use the direction (0, 1).
const TOK_GRANT: u64 = 2;
const TOK_TIMER: u64 = 4;

/// A PCIe link component. Port 0 (`up`) sends downstream, port 1 (`down`)
/// upstream.
pub struct PcieLink {
    /// The link's configuration.
    pub config: LinkConfig,
    latency: Tick,
    wires: [Wire; 2],
    bit_error_rate: f64,
    credits: u64,
    update_fc_loss: f64,
    update_fc_timer: Tick,
    /// Faults injected so far.
    pub faults: LinkFaults,
}

impl PcieLink {
    /// A link from validated `pcie_link` parameters.
    pub fn from_params(params: &Params) -> Result<PcieLink, String> {
        let config = link_config(params)?;
        let p = complete(&PCIE_LINK, params)?;
        // A guard for hand-built parameters: a platform checks this rule
        // when it loads.
        check(&p, Peers::new(&[])).map_err(|e| format!("{}.{e}", PCIE_LINK.type_name))?;
        let latency = ns_to_ps(p.float("latency_ns"));
        let mut link = Self::new(config, latency);
        link.bit_error_rate = p.float("bit_error_rate");
        link.set_credits(p.uint("header_credits"));
        link.update_fc_loss = p.float("update_fc_loss_probability");
        link.update_fc_timer = ns_to_ps(p.float("update_fc_timer_us") * 1000.0).max(1);
        Ok(link)
    }
    /// A link with `config` and one-way `latency` (ps).
    pub fn new(config: LinkConfig, latency: Tick) -> PcieLink {
        let w = || Wire {
            busy_until: 0,
            received: 0,
            in_flight: VecDeque::new(),
            limit: 0,
            consumed: 0,
            held: VecDeque::new(),
            allocated: 0,
            reported: 0,
            grants: VecDeque::new(),
            timer_at: None,
        };
        PcieLink {
            config,
            latency,
            wires: [w(), w()],
            bit_error_rate: 0.0,
            credits: 0,
            update_fc_loss: 0.0,
            update_fc_timer: 30 * 1_000_000,
            faults: LinkFaults::default(),
        }
    }
    fn set_credits(&mut self, credits: u64) {
        self.credits = credits;
        for w in &mut self.wires {
            (w.limit, w.allocated, w.reported) = (credits, credits, credits);
        }
    }
    /// Whether any fault is configured (then runners report [`LinkFaults`]).
    pub fn faults_enabled(&self) -> bool {
        self.bit_error_rate > 0.0 || self.credits > 0 || self.update_fc_loss > 0.0
    }
    /// The fault counts as named statistics, empty when no fault is
    /// configured.
    pub fn fault_stats(&self) -> Vec<(&'static str, f64)> {
        if !self.faults_enabled() {
            return Vec::new();
        }
        let f = &self.faults;
        vec![
            ("faults.replays", f.replays as f64),
            ("faults.replay_ps", f.replay_ps as f64),
            ("faults.credit_stalls", f.credit_stalls as f64),
            ("faults.update_fc_lost", f.update_fc_lost as f64),
            ("faults.update_fc_timer", f.update_fc_timer as f64),
        ]
    }
    /// One line per direction: TLPs on the wire, TLPs held for credit and
    /// the credit counters (for a stuck run's report).
    pub fn report(&self) -> Vec<String> {
        ["down (root complex -> device)", "up (device -> root complex)"]
            .iter()
            .zip(&self.wires)
            .map(|(name, w)| {
                let tlps: Vec<String> = w.in_flight.iter().take(6).map(|(t, m)| format!("{} at {:.3} us", tlp_summary(m), *t as f64 / 1e6)).collect();
                let more = w.in_flight.len().saturating_sub(6);
                let mut line = format!(
                    "pcie link {name}: {} TLPs on the wire [{}{}]",
                    w.in_flight.len(),
                    tlps.join(", "),
                    if more > 0 { format!(", {more} more") } else { String::new() }
                );
                if self.credits > 0 {
                    line.push_str(&format!(
                        ", {} held for credit (credits consumed {} of limit {}, receiver allocated {}, UpdateFCs in flight {})",
                        w.held.len(),
                        w.consumed,
                        w.limit,
                        w.allocated,
                        w.grants.len()
                    ));
                }
                line
            })
            .collect()
    }

    /// Puts `msg` on wire `dir` now: serialization, the LCRC replays its
    /// draw gives, flight; charges the receiver's DLLPs to the reverse wire.
    fn transmit(&mut self, dir: usize, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let (payload, wire_bytes) = match &msg {
            Msg::Tlp(t) => (
                t.data.len() as u32,
                self.config.tlp_wire_bytes(t.kind, t.len, t.addr64()),
            ),
            other => {
                debug_assert!(false, "pcie_link carries TLPs only, got {other:?}");
                return;
            }
        };
        let now = ctx.now();
        let ser = self.config.serialization_ps(wire_bytes);
        let replays = if self.bit_error_rate > 0.0 {
            let bits = self.config.wire_bits(wire_bytes);
            let u = ctx.rng().unit();
            replays_of(self.bit_error_rate, bits, u)
        } else {
            0
        };
        let nak = self.config.serialization_ps(DLLP_WIRE_BYTES);
        // A failed transmission lands after `ser + latency`; its NAK takes
        // `nak + latency` back; the replay starts then.
        let per_replay = ser + 2 * self.latency + nak;
        let w = &mut self.wires[dir];
        let start = now.max(w.busy_until) + replays * per_replay;
        w.busy_until = start + ser;
        let arrive = w.busy_until + self.latency;
        w.in_flight.push_back((arrive, msg));
        w.received += 1;
        let received = w.received;
        let base = dir * 4;
        ctx.count(base, 1);
        ctx.count(base + 1, payload as u64);
        ctx.count(base + 2, wire_bytes as u64 * (1 + replays));
        // The receiver's ACK/UpdateFC DLLPs use the reverse wire. They are
        // charged when the TLP starts (not when it lands) so that a DLLP never
        // reserves the reverse wire in the future ahead of a TLP that is ready
        // now; this moves a DLLP by at most one latency, never its cost.
        let mut dllps = replays as u32;
        for every in [self.config.ack_every, self.config.update_fc_every] {
            if every > 0 && received % every as u64 == 0 {
                dllps += 1;
            }
        }
        if dllps > 0 {
            let rev = &mut self.wires[1 - dir];
            let bytes = dllps * DLLP_WIRE_BYTES;
            rev.busy_until = rev.busy_until.max(now) + self.config.serialization_ps(bytes);
            ctx.count((1 - dir) * 4 + 3, bytes as u64);
        }
        if replays > 0 {
            self.faults.replays += replays;
            self.faults.replay_ps += replays * per_replay;
        }
        ctx.wake_at(arrive, dir as u64);
    }

    /// The receiver of wire `dir` sends an UpdateFC with its cumulative
    /// credits; it may be lost, then the timer is (re)armed.
    fn send_update_fc(&mut self, dir: usize, ctx: &mut Ctx<'_, Msg>) {
        let now = ctx.now();
        let lost = self.update_fc_loss > 0.0 && ctx.rng().unit() < self.update_fc_loss;
        let w = &mut self.wires[dir];
        if lost {
            self.faults.update_fc_lost += 1;
            let at = now + self.update_fc_timer;
            w.timer_at = Some(at);
            ctx.wake_at(at, TOK_TIMER + dir as u64);
            return;
        }
        w.reported = w.allocated;
        w.timer_at = None;
        let at = now + self.config.serialization_ps(DLLP_WIRE_BYTES) + self.latency;
        w.grants.push_back((at, w.allocated));
        ctx.wake_at(at, TOK_GRANT + dir as u64);
    }

    /// Sends the TLPs wire `dir`'s transmitter holds, as far as credit goes.
    fn release_held(&mut self, dir: usize, ctx: &mut Ctx<'_, Msg>) {
        loop {
            let w = &mut self.wires[dir];
            if w.consumed >= w.limit {
                return;
            }
            let Some(msg) = w.held.pop_front() else {
                return;
            };
            w.consumed += 1;
            self.transmit(dir, msg, ctx);
        }
    }
}

/// One line naming a TLP (kind, address, length, tag).
fn tlp_summary(m: &Msg) -> String {
    match m {
        Msg::Tlp(t) => format!("{:?} {:#x} len {} tag {}", t.kind, t.addr, t.len, t.tag),
        other => format!("{other:?}"),
    }
}

/// Replays of one TLP of `bits` wire bits at bit error rate `ber`, from
/// one uniform `u` in [0, 1): the number of failed transmissions before the
/// first good one, geometric with failure probability
/// `p = 1 - (1 - ber)^bits` (P(replays >= n) = p^n). Non-decreasing in
/// `ber` for a fixed `u`.
pub fn replays_of(ber: f64, bits: u64, u: f64) -> u64 {
    if ber <= 0.0 {
        return 0;
    }
    // ln(1 - p) = bits * ln(1 - ber); ln p from it without cancellation.
    let ln_ok = bits as f64 * (-ber).ln_1p();
    let p = -ln_ok.exp_m1();
    if p <= 0.0 {
        return 0;
    }
    let k = ((1.0 - u).ln() / p.ln()).floor();
    // p <= 1 - e^{-bits * MAX_BIT_ERROR_RATE}; the cap only guards rounding.
    k.clamp(0.0, 1e6) as u64
}

impl Component<Msg> for PcieLink {
    fn spec(&self) -> &'static ComponentSpec {
        &PCIE_LINK
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        // Wire 0 carries up -> down, wire 1 down -> up.
        let dir = port;
        if self.credits > 0 {
            let w = &mut self.wires[dir];
            if !w.held.is_empty() || w.consumed >= w.limit {
                self.faults.credit_stalls += 1;
                w.held.push_back(msg);
                return;
            }
            w.consumed += 1;
        }
        self.transmit(dir, msg, ctx);
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        let dir = (token % 2) as usize;
        match token - dir as u64 {
            0 => {
                if let Some((_, msg)) = self.wires[dir].in_flight.pop_front() {
                    // Deliver out of the opposite port.
                    ctx.send(1 - dir, msg, 0, 0);
                    if self.credits > 0 {
                        // The receiver passes the TLP on at once and frees its
                        // credit; every `update_fc_every` credits it reports.
                        let w = &mut self.wires[dir];
                        w.allocated += 1;
                        let freed = w.allocated - self.credits;
                        if freed % self.config.update_fc_every as u64 == 0 {
                            self.send_update_fc(dir, ctx);
                        }
                    }
                }
            }
            TOK_GRANT => {
                let w = &mut self.wires[dir];
                if let Some((_, value)) = w.grants.pop_front() {
                    w.limit = w.limit.max(value);
                    self.release_held(dir, ctx);
                }
            }
            TOK_TIMER => {
                let w = &self.wires[dir];
                // Only the latest arming counts; nothing to do if a later
                // UpdateFC got through.
                if w.timer_at == Some(ctx.now()) && w.reported < w.allocated {
                    self.faults.update_fc_timer += 1;
                    self.send_update_fc(dir, ctx);
                }
            }
            _ => debug_assert!(false, "pcie_link: unknown wake {token}"),
        }
    }
}
