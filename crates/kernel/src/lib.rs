//! # ccsim-kernel: the deterministic discrete-event core
//!
//! Everything in ccsim that moves in time runs on this kernel: PCIe links,
//! DMA engines, cores, caches, directory controllers.
//!
//! ```text
//!   SystemBuilder ──add/connect──▶ build() validates ──▶ Simulation::run()
//!                                                          │
//!        ┌───────────── EventQueue (tick, priority, seq) ◀─┘
//!        ▼
//!   Deliver / Wake / Local / Credit ──▶ Component::on_message / on_wake / on_local(ctx)
//!                                   │ ctx.send(port, msg, bytes, vc)
//!                                   ▼
//!                       Link: serialize at bandwidth, + latency,
//!                             credits per virtual channel
//! ```
//!
//! * **Time** is `u64` picoseconds ([`time`]); clock domains convert cycles.
//! * **Events** pop in `(tick, priority, insertion sequence)` order
//!   ([`queue`]); each [`queue::Priority`] documents why it exists.
//! * **Self-scheduling**: a component wakes itself up later
//!   ([`sim::Ctx::wake_at`]) or sends itself a message that the kernel
//!   carries until its tick ([`sim::Ctx::schedule_local`], handled by
//!   [`sim::Component::on_local`]): an item in a fixed-latency pipeline is
//!   then stored once, in the event queue, not also in a queue of the
//!   component's own.
//! * **Components** declare parameters, ports and statistics once
//!   ([`component`]); the builder, the config validator and `ccsim info` read
//!   that declaration.
//! * **Links** ([`link`]) have per-direction latency, serialization by bytes
//!   at a bandwidth, and credit-based flow control per virtual channel.
//! * **Stats** ([`stats`]) are counters and HdrHistogram percentiles named by
//!   dotted instance path; **RNG** streams ([`rng`]) derive from the run seed
//!   and the instance path; **traces** ([`trace`]) are Chrome/Perfetto JSON
//!   with a SHA-256 that proves two runs identical.
//!
//! ## Example: a request/response over a link
//!
//! ```
//! use ccsim_kernel::prelude::*;
//!
//! struct Ping(u32);
//! impl Message for Ping {
//!     fn label(&self) -> String { format!("ping {}", self.0) }
//! }
//!
//! static ECHO: ComponentSpec = ComponentSpec {
//!     type_name: "echo", description: "Sends every message back.",
//!     params: &[], stats: &[],
//!     ports: &[PortSpec { name: "io", description: "Both ways.", required: true }],
//!     check: None,
//! };
//! static PINGER: ComponentSpec = ComponentSpec {
//!     type_name: "pinger", description: "Sends one message and times the reply.",
//!     params: &[],
//!     ports: &[PortSpec { name: "io", description: "Both ways.", required: true }],
//!     stats: &[StatSpec { name: "rtt_ps", kind: StatKind::Histogram, unit: "ps",
//!                         description: "Round-trip time." }],
//!     check: None,
//! };
//! struct Echo;
//! impl Component<Ping> for Echo {
//!     fn spec(&self) -> &'static ComponentSpec { &ECHO }
//!     fn on_message(&mut self, port: PortId, m: Ping, ctx: &mut Ctx<'_, Ping>) {
//!         ctx.send(port, m, 64, 0);
//!     }
//! }
//! struct Pinger;
//! impl Component<Ping> for Pinger {
//!     fn spec(&self) -> &'static ComponentSpec { &PINGER }
//!     fn init(&mut self, ctx: &mut Ctx<'_, Ping>) { ctx.send(0, Ping(1), 64, 0); }
//!     fn on_message(&mut self, _: PortId, _: Ping, ctx: &mut Ctx<'_, Ping>) {
//!         let rtt = ctx.now();
//!         ctx.record(0, rtt);
//!     }
//! }
//!
//! let mut b = SystemBuilder::new("system", 7);
//! let p = b.add("pinger", Pinger);
//! let e = b.add("echo", Echo);
//! // 100 ns each way, 64 B at 64 GB/s = 1 ns of serialization each way.
//! b.connect(p, "io", e, "io", LinkParams::symmetric(100 * NS, 64e9));
//! let mut sim = b.build().unwrap();
//! sim.run();
//! let rtt = sim.stats().histogram("system.pinger.rtt_ps").unwrap().max;
//! assert_eq!(rtt, 202 * NS);
//! ```

pub mod bench;
pub mod component;
pub mod link;
pub mod queue;
pub mod rng;
pub mod sim;
pub mod stats;
pub mod time;
pub mod trace;

/// The names most models need.
pub mod prelude {
    pub use crate::component::{
        ComponentSpec, ParamDefault, ParamKind, ParamProblem, ParamRange, ParamSpec, ParamValue,
        Params, Peers, PortSpec, StatKind, StatSpec,
    };
    pub use crate::link::{Direction, LinkParams, VcParams};
    pub use crate::queue::Priority;
    pub use crate::rng::SimRng;
    pub use crate::sim::{
        BuildError, Component, ComponentId, Ctx, DeferredWake, LinkId, Message, PortId, RunOutcome,
        Simulation, SystemBuilder,
    };
    pub use crate::stats::{StatValue, StatsReport};
    pub use crate::time::{Clock, Tick, MS, NS, PS, SEC, US};
    pub use crate::trace::{Note, NoteKind, TraceMode};
}
