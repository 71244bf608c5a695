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

use std::collections::VecDeque;

use ccsim_kernel::prelude::*;

use crate::msg::Msg;
use crate::tlp::{Generation, LinkConfig, DLLP_WIRE_BYTES};
use crate::util::{complete, ns_to_ps};

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
    check: None,
};

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
}

/// A PCIe link component. Port 0 (`up`) sends downstream, port 1 (`down`)
/// upstream.
pub struct PcieLink {
    /// The link's configuration.
    pub config: LinkConfig,
    latency: Tick,
    wires: [Wire; 2],
}

impl PcieLink {
    /// A link from validated `pcie_link` parameters.
    pub fn from_params(params: &Params) -> Result<PcieLink, String> {
        let config = link_config(params)?;
        let p = complete(&PCIE_LINK, params)?;
        let latency = ns_to_ps(p.float("latency_ns"));
        Ok(Self::new(config, latency))
    }
    /// A link with `config` and one-way `latency` (ps).
    pub fn new(config: LinkConfig, latency: Tick) -> PcieLink {
        let w = || Wire {
            busy_until: 0,
            received: 0,
            in_flight: VecDeque::new(),
        };
        PcieLink {
            config,
            latency,
            wires: [w(), w()],
        }
    }
}

impl Component<Msg> for PcieLink {
    fn spec(&self) -> &'static ComponentSpec {
        &PCIE_LINK
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        // Wire 0 carries up -> down, wire 1 down -> up.
        let dir = port;
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
        let w = &mut self.wires[dir];
        let start = now.max(w.busy_until);
        w.busy_until = start + self.config.serialization_ps(wire_bytes);
        let arrive = w.busy_until + self.latency;
        w.in_flight.push_back((arrive, msg));
        w.received += 1;
        let received = w.received;
        let base = dir * 4;
        ctx.count(base, 1);
        ctx.count(base + 1, payload as u64);
        ctx.count(base + 2, wire_bytes as u64);
        // The receiver's ACK/UpdateFC DLLPs use the reverse wire. They are
        // charged when the TLP starts (not when it lands) so that a DLLP never
        // reserves the reverse wire in the future ahead of a TLP that is ready
        // now; this moves a DLLP by at most one latency, never its cost.
        let mut dllps = 0;
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
        ctx.wake_at(arrive, dir as u64);
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        let dir = token as usize;
        if let Some((_, msg)) = self.wires[dir].in_flight.pop_front() {
            // Deliver out of the opposite port.
            ctx.send(1 - dir, msg, 0, 0);
        }
    }
}
