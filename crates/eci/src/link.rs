//! The ECI (and CCPI) link: two kernel links, one per line parity, each with
//! a virtual channel per message class.
//!
//! CCKit §4 (Fig. 5): ECI has a theoretical 30 GiB/s, about 20 GiB/s is
//! achieved, and a round trip takes 230 ns. Lines are split between the two
//! links by even/odd line address (CCKit §4.3: odd and even slices). A
//! message is a 64-bit header plus up to 16 payload words (a 128-byte line).
//!
//! Delivery is unordered *across* channels (each VC has its own credits and
//! queue, so a stalled class never blocks another) and in order within a
//! channel, which the protocol does not rely on.
//!
//! ```
//! use ccsim_eci::link::{EciLink, HEADER_BYTES};
//! let l = EciLink::default();
//! // Header-only request out, header + line back: the calibrated 230 ns.
//! let rtt = l.one_way_ps(HEADER_BYTES) + l.one_way_ps(HEADER_BYTES + 128);
//! assert!((rtt as f64 - 230_000.0).abs() < 1_000.0);
//! ```

use ccsim_kernel::prelude::*;

use ccsim_coherence::tables::MsgMeta;
use ccsim_coherence::util::{complete, ns_to_ps};

/// The 64-bit message header.
pub const HEADER_BYTES: u32 = 8;

pub use ccsim_coherence::vc::{vc_of, VC_NAMES};

/// Declaration of `eci_link` (a pair of kernel links, not a component of
/// its own: the spec carries the parameters for configs and `ccsim info`).
pub static ECI_LINK: ComponentSpec = ComponentSpec {
    type_name: "eci_link",
    description: "A coherent inter-socket link (ECI or CCPI): two links split by even/odd line, a VC per message class, 64-bit header + 128 B payload messages.",
    params: &[
        ParamSpec { name: "links", kind: ParamKind::Int, default: ParamDefault::Int(2), unit: "links", range: ParamRange::between(1.0, 2.0), from: "CCKit §4.3: two links, lines split by even/odd address", description: "Links; line l uses link l % links (the coherent systems have two ports, eci0 and eci1; a platform with a directory_controller needs 2)." },
        ParamSpec { name: "raw_gibps", kind: ParamKind::Float, default: ParamDefault::Float(30.0), unit: "GiB/s", range: ParamRange::positive(), from: "CCKit §4: theoretical bandwidth 30 GiB/s", description: "Theoretical bandwidth of all links together, one direction." },
        ParamSpec { name: "efficiency", kind: ParamKind::Float, default: ParamDefault::Float(0.7083), unit: "", range: ParamRange::fraction(), from: "calibrated: CCKit §4 'about 20 GiB/s is achievable in practice' (20 / 30 x 136/128 for the 64-bit header)", description: "Fraction of the raw bandwidth messages (header + payload) can use (transport framing, CRC, credits)." },
        ParamSpec { name: "latency_ns", kind: ParamKind::Float, default: ParamDefault::Float(108.7), unit: "ns", range: ParamRange::at_least(0.0), from: "calibrated: CCKit §4 round-trip latency 230 ns", description: "One-way latency after serialization." },
        ParamSpec { name: "credits", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "messages", range: ParamRange::at_least(1.0), from: "assumed", description: "Receive buffers per virtual channel per direction." },
        ParamSpec { name: "jitter_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed: no reordering jitter in timing runs", description: "Extra delay drawn uniformly from [0, jitter) per message at the receiver (seeded): reorders messages across and within channels, as the unordered ECI network may (stress tests)." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// Declaration of `eci_wire`: a wiring point inside a chip, such as an
/// [`EciMux`](crate::shared::EciMux) to its agents (no parameters: no time,
/// no credits; the ECI link's five VCs, so messages keep their class).
pub static ECI_WIRE: ComponentSpec = ComponentSpec {
    type_name: "eci_wire",
    description: "A wiring point inside a chip (an ECI mux to its agents): no latency, no bandwidth limit, no credits; the ECI link's virtual channels, so messages keep their class.",
    params: &[],
    ports: &[],
    stats: &[],
    check: None,
};

/// Validated link parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct EciLink {
    /// Links.
    pub links: u64,
    /// Bytes per second per link after efficiency.
    pub bytes_per_sec: f64,
    /// One-way latency (ps).
    pub latency: Tick,
    /// Credits per VC.
    pub credits: u32,
    /// Reordering jitter bound (ps); 0 keeps arrival order.
    pub jitter: Tick,
}

impl Default for EciLink {
    fn default() -> Self {
        Self::from_params(&Params::new()).expect("defaults are valid")
    }
}

impl EciLink {
    /// From `eci_link` parameters.
    pub fn from_params(p: &Params) -> Result<EciLink, String> {
        let p = complete(&ECI_LINK, p)?;
        let links = p.uint("links");
        let (raw, eff) = (p.float("raw_gibps"), p.float("efficiency"));
        Ok(EciLink {
            links,
            bytes_per_sec: raw * eff * (1u64 << 30) as f64 / links as f64,
            latency: ns_to_ps(p.float("latency_ns")),
            credits: p.uint("credits") as u32,
            jitter: ns_to_ps(p.float("jitter_ns")),
        })
    }

    /// Kernel parameters of one link.
    pub fn params(&self) -> LinkParams {
        LinkParams::symmetric(self.latency, self.bytes_per_sec).with_vcs(
            VC_NAMES
                .iter()
                .map(|n| VcParams::new(n, self.credits))
                .collect(),
        )
    }

    /// Unloaded one-way time of a message of `bytes`.
    pub fn one_way_ps(&self, bytes: u32) -> Tick {
        self.params().serialization(Direction::AtoB, bytes) + self.latency
    }

    /// The jitter one message gets at its receiver.
    pub fn jitter_of<M: Message>(&self, ctx: &mut Ctx<'_, M>) -> Tick {
        if self.jitter == 0 {
            0
        } else {
            ctx.rng().below(self.jitter)
        }
    }

    /// Wire bytes of a message (header + payload).
    pub fn bytes(data: bool) -> u32 {
        HEADER_BYTES + if data { 128 } else { 0 }
    }

    /// The wire bytes and virtual channel of a message of the table
    /// `meta` describes: what every ECI agent passes to its send.
    pub fn wire_of(meta: &MsgMeta) -> (u32, u8) {
        (Self::bytes(meta.data), meta.vc)
    }
}
