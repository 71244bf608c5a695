//! `tlp_pinger` and `tlp_echo`: a traffic source and a mirror for measuring a
//! PCIe link on its own (the `link_pingpong` workload and link tests).
//!
//! The pinger sends a burst of MWr TLPs (a write of `bytes`, split at MPS and
//! 4 KiB) through its port; the echo returns every TLP unchanged. The pinger
//! records when each echo arrives, so a test can check the link's exact
//! latency and bandwidth and that the bytes came back intact.

use ccsim_kernel::prelude::*;

use crate::msg::{Msg, Tlp};
use crate::tlp::LinkConfig;

/// Declaration of `tlp_pinger`.
pub static TLP_PINGER: ComponentSpec = ComponentSpec {
    type_name: "tlp_pinger",
    description:
        "Test traffic source: sends a burst of MWr TLPs at tick 0 and records when each comes back.",
    params: &[],
    ports: &[PortSpec {
        name: "io",
        description: "TLPs out and echoes back.",
        required: true,
    }],
    stats: &[StatSpec {
        name: "echoes",
        kind: StatKind::Counter,
        unit: "TLPs",
        description: "Echoed TLPs received.",
    }],
    check: None,
};

/// Declaration of `tlp_echo`.
pub static TLP_ECHO: ComponentSpec = ComponentSpec {
    type_name: "tlp_echo",
    description: "Test mirror: returns every TLP it receives unchanged.",
    params: &[],
    ports: &[PortSpec {
        name: "io",
        description: "TLPs in and back out.",
        required: true,
    }],
    stats: &[],
    check: None,
};

/// The traffic source.
pub struct TlpPinger {
    burst: Vec<Tlp>,
    /// `(arrival tick, echoed TLP)` in arrival order.
    pub echoes: Vec<(Tick, Tlp)>,
}

impl TlpPinger {
    /// A pinger that writes `data` at `addr` as TLPs split per `link`.
    pub fn new(link: &LinkConfig, addr: u64, data: &[u8]) -> TlpPinger {
        let burst = link
            .split_write(addr, data.len() as u64)
            .into_iter()
            .map(|(a, n)| {
                let off = (a - addr) as usize;
                Tlp::write(a, data[off..off + n as usize].to_vec())
            })
            .collect();
        TlpPinger {
            burst,
            echoes: Vec::new(),
        }
    }
    /// The TLPs of the burst.
    pub fn burst(&self) -> &[Tlp] {
        &self.burst
    }
}

impl Component<Msg> for TlpPinger {
    fn spec(&self) -> &'static ComponentSpec {
        &TLP_PINGER
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        for t in self.burst.clone() {
            ctx.send(0, Msg::tlp(t), 0, 0);
        }
    }
    fn on_message(&mut self, _port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        if let Msg::Tlp(t) = msg {
            ctx.count(0, 1);
            self.echoes.push((ctx.now(), *t));
        }
    }
}

/// The mirror.
pub struct TlpEcho;

impl Component<Msg> for TlpEcho {
    fn spec(&self) -> &'static ComponentSpec {
        &TLP_ECHO
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        ctx.send(port, msg, 0, 0);
    }
}
