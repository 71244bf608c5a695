//! A crossbar switch that forwards each coherent message to the port its
//! destination agent hangs on: the network of a generic system.

use ccsim_kernel::prelude::*;
use ccsim_protocol::engine::AgentId;

use super::SystemRef;
use crate::util::ns_to_ps;
use crate::Msg;

/// Ports of a switch (`p0` .. `p15`), each optional.
pub const SWITCH_PORTS: usize = 16;

const fn port(name: &'static str) -> PortSpec {
    PortSpec {
        name,
        description: "To one agent; wired by the system's links.",
        required: false,
    }
}

/// The declaration of `protocol_switch`.
pub static PROTOCOL_SWITCH: ComponentSpec = ComponentSpec {
    type_name: "protocol_switch",
    description: "A crossbar between the agents of a generic protocol system: forwards each message, after a fixed hop latency, on the port its destination agent is wired to, on the message's virtual channel. Ports p0..p15.",
    params: &[ParamSpec {
        name: "hop_ns",
        kind: ParamKind::Float,
        default: ParamDefault::Float(2.0),
        unit: "ns",
        range: ParamRange::at_least(0.0),
        from: "assumed: one switch traversal",
        description: "Time from a message's arrival to its departure on the output port.",
    }],
    ports: &[
        port("p0"),
        port("p1"),
        port("p2"),
        port("p3"),
        port("p4"),
        port("p5"),
        port("p6"),
        port("p7"),
        port("p8"),
        port("p9"),
        port("p10"),
        port("p11"),
        port("p12"),
        port("p13"),
        port("p14"),
        port("p15"),
    ],
    stats: &[StatSpec {
        name: "forwarded",
        kind: StatKind::Counter,
        unit: "messages",
        description: "Messages forwarded.",
    }],
    check: None,
};

/// The switch: a route (agent id → port) and a hop latency.
pub struct ProtocolSwitch {
    sys: SystemRef,
    route: Vec<Option<PortId>>,
    hop: Tick,
    name: String,
}

impl ProtocolSwitch {
    /// A switch named `name` (for errors) whose `route[agent]` is the port
    /// agent `agent` is reached by.
    pub fn new(
        name: &str,
        params: &Params,
        sys: SystemRef,
        route: Vec<Option<PortId>>,
    ) -> ProtocolSwitch {
        ProtocolSwitch {
            sys,
            route,
            hop: ns_to_ps(params.float("hop_ns")),
            name: name.to_string(),
        }
    }

    fn port_of(&self, dst: AgentId) -> PortId {
        self.route
            .get(dst as usize)
            .copied()
            .flatten()
            .unwrap_or_else(|| panic!("{}: no port reaches agent {dst}", self.name))
    }
}

impl Component<Msg> for ProtocolSwitch {
    fn spec(&self) -> &'static ComponentSpec {
        &PROTOCOL_SWITCH
    }

    fn on_message(&mut self, _port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        ctx.count(0, 1);
        if self.hop == 0 {
            self.forward(msg, ctx);
        } else {
            let at = ctx.now() + self.hop;
            ctx.schedule_local(at, 0, msg);
        }
    }

    fn on_local(&mut self, _token: u64, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        self.forward(msg, ctx);
    }
}

impl ProtocolSwitch {
    fn forward(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let (port, bytes, vc) = match &msg {
            Msg::Coh(m) => (
                self.port_of(m.dst),
                self.sys.wire_bytes(m.msg),
                self.sys.vc(m.msg),
            ),
            other => panic!(
                "{}: {} is not a coherent message (a wiring mistake)",
                self.name,
                ccsim_kernel::sim::Message::label(other)
            ),
        };
        ctx.send(port, msg, bytes, vc);
    }
}
