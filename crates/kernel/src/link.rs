//! Point-to-point links: per-direction latency, serialization by bytes at a
//! bandwidth, and credit-based flow control per virtual channel.
//!
//! A message sent at tick `t` on a direction with bandwidth `B` starts
//! serializing when the wire is free (`max(t, busy_until)`), occupies it for
//! `ceil(bytes / B)`, and arrives one `latency` after its last byte left. The
//! receiver holds `credits` buffers per virtual channel: a send consumes one,
//! and it travels back (one reverse-direction latency) once the receiving
//! component has handled the message. A message with no credit waits in a
//! per-channel queue at the sender and goes out when a credit returns, so a
//! stalled channel never blocks the others (the property coherence protocols
//! rely on to stay deadlock-free). A credit return is an event only when a
//! message waits for it; otherwise the next send picks it up once its tick
//! has come (`DirectionState::returning`), with the same outcome.
//!
//! ```
//! use ccsim_kernel::link::{Direction, LinkParams, VcParams};
//! use ccsim_kernel::time::NS;
//! let p = LinkParams::symmetric(150 * NS, 16e9).with_vcs(vec![VcParams::new("req", 4)]);
//! // 128 bytes at 16 GB/s take 8 ns to serialize.
//! assert_eq!(p.serialization(Direction::AtoB, 128), 8 * NS);
//! ```

use std::collections::VecDeque;

use crate::time::{Tick, SEC};

/// A direction of a link: from the first connected endpoint to the second,
/// or back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// From endpoint A (first in `connect`) to endpoint B.
    AtoB = 0,
    /// From endpoint B to endpoint A.
    BtoA = 1,
}

impl Direction {
    /// The opposite direction.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::AtoB => Direction::BtoA,
            Direction::BtoA => Direction::AtoB,
        }
    }
    /// 0 for A→B, 1 for B→A.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}

/// A virtual channel's name and receive-buffer depth.
#[derive(Debug, Clone, PartialEq)]
pub struct VcParams {
    /// Name for stats and traces (`"req"`, `"rsp-data"`).
    pub name: String,
    /// Receive buffers per direction; 0 means unlimited (no flow control).
    pub credits: u32,
}

impl VcParams {
    /// A channel named `name` with `credits` buffers per direction.
    pub fn new(name: &str, credits: u32) -> Self {
        VcParams {
            name: name.to_string(),
            credits,
        }
    }
}

/// The timing and flow-control parameters of a link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkParams {
    /// One-way latency per direction (A→B, B→A), after serialization.
    pub latency: [Tick; 2],
    /// Bandwidth per direction in bytes per second; 0 means infinite.
    pub bandwidth: [f64; 2],
    /// Virtual channels; a link has at least one.
    pub vcs: Vec<VcParams>,
}

impl LinkParams {
    /// A link with the same latency and bandwidth (bytes/s) both ways and one
    /// unlimited channel.
    pub fn symmetric(latency: Tick, bandwidth_bytes_per_sec: f64) -> Self {
        LinkParams {
            latency: [latency; 2],
            bandwidth: [bandwidth_bytes_per_sec; 2],
            vcs: vec![VcParams::new("default", 0)],
        }
    }
    /// Replaces the virtual channels.
    pub fn with_vcs(mut self, vcs: Vec<VcParams>) -> Self {
        self.vcs = vcs;
        self
    }
    /// Time to serialize `bytes` in direction `dir`, rounded up to whole
    /// picoseconds.
    pub fn serialization(&self, dir: Direction, bytes: u32) -> Tick {
        serialization(self.bandwidth[dir.index()], bytes)
    }
    /// Problems with these parameters, as human-readable sentences.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.vcs.is_empty() {
            p.push("has no virtual channel (declare at least one)".to_string());
        }
        if self.vcs.len() > 255 {
            p.push(format!(
                "has {} virtual channels; at most 255",
                self.vcs.len()
            ));
        }
        for (i, bw) in self.bandwidth.iter().enumerate() {
            if !bw.is_finite() || *bw < 0.0 {
                p.push(format!(
                    "bandwidth[{i}] is {bw} bytes/s; use a positive number or 0 for infinite"
                ));
            }
        }
        p
    }
}

/// A message waiting for a credit at the sender side.
pub(crate) struct Pending<M> {
    pub msg: M,
    pub bytes: u32,
    pub sent_at: Tick,
}

/// Run-time state of one virtual channel in one direction.
pub(crate) struct Channel<M> {
    /// Whether the channel is flow-controlled (it declares credits).
    pub limited: bool,
    /// Credits available (ignored when not limited).
    pub credits: u32,
    /// Messages waiting for a credit.
    pub waiting: VecDeque<Pending<M>>,
    /// Credits on their way back while no message waited: (tick of
    /// return, reserved sequence number), in return order. They are taken
    /// lazily by the next send (no event each); only when a message has to
    /// wait do they become events (see `transmit` in `sim`).
    pub returning: VecDeque<(Tick, u64)>,
}

/// Run-time state of one direction of a link: everything a send and a
/// delivery read, in one place (the parameters are copied in at build
/// time, so the hot path does not go through [`LinkParams`]).
pub(crate) struct DirectionState<M> {
    /// When the wire becomes free.
    pub busy_until: Tick,
    /// The sizes of the last two messages of different size and their
    /// serialization times, the latest first: messages on a direction come
    /// in a few sizes (a protocol's headers and its data messages
    /// alternate), and this saves the division and the rounding.
    pub serialized: [(u32, Tick); 2],
    /// Bandwidth in bytes per second (0: infinite).
    pub bandwidth: f64,
    /// One-way latency after serialization.
    pub latency: Tick,
    /// Latency of the reverse direction, which credits travel back on.
    pub credit_latency: Tick,
    /// The sending endpoint's component, and the receiving endpoint's
    /// component and port.
    pub src: u32,
    pub dst: u32,
    pub dst_port: u16,
    /// Per virtual channel.
    pub channels: Vec<Channel<M>>,
    /// The [`LINK_STATS`] counters (messages, bytes, credit stalls), kept
    /// here and merged into the report by `Simulation::stats`.
    pub counters: [u64; 3],
}

impl<M> DirectionState<M> {
    /// Reserves the wire for `bytes` starting no earlier than `now`;
    /// returns (start of serialization, arrival at the far end).
    #[inline]
    pub fn occupy(&mut self, now: Tick, bytes: u32) -> (Tick, Tick) {
        let time = if self.serialized[0].0 == bytes {
            self.serialized[0].1
        } else {
            let time = if self.serialized[1].0 == bytes {
                self.serialized[1].1
            } else {
                serialization(self.bandwidth, bytes)
            };
            self.serialized = [(bytes, time), self.serialized[0]];
            time
        };
        let start = now.max(self.busy_until);
        self.busy_until = start + time;
        (start, self.busy_until + self.latency)
    }
}

/// Time to serialize `bytes` at `bandwidth` bytes per second (0:
/// infinite), rounded up to whole picoseconds.
fn serialization(bandwidth: f64, bytes: u32) -> Tick {
    if bandwidth <= 0.0 || bytes == 0 {
        return 0;
    }
    (bytes as f64 * SEC as f64 / bandwidth).ceil() as Tick
}

/// Run-time state of a link.
pub(crate) struct LinkState<M> {
    pub name: String,
    pub params: LinkParams,
    /// Indexed by [`Direction::index`].
    pub dirs: [DirectionState<M>; 2],
    /// Global stat slots: per direction, [messages, bytes, credit_stalls].
    pub stat_base: usize,
}

impl<M> LinkState<M> {
    /// `ends`: (component index, port index) of endpoints A and B.
    pub fn new(name: String, params: LinkParams, ends: [(u32, u16); 2], stat_base: usize) -> Self {
        let mk = |dir: usize| DirectionState {
            busy_until: 0,
            // Zero bytes take no time (`serialization`).
            serialized: [(0, 0); 2],
            bandwidth: params.bandwidth[dir],
            latency: params.latency[dir],
            credit_latency: params.latency[1 - dir],
            src: ends[dir].0,
            dst: ends[1 - dir].0,
            dst_port: ends[1 - dir].1,
            channels: params
                .vcs
                .iter()
                .map(|v| Channel {
                    limited: v.credits > 0,
                    credits: v.credits,
                    waiting: VecDeque::new(),
                    returning: VecDeque::new(),
                })
                .collect(),
            counters: [0; 3],
        };
        LinkState {
            dirs: [mk(0), mk(1)],
            name,
            params,
            stat_base,
        }
    }
}

/// Names of the per-direction link statistics, in slot order.
pub const LINK_STATS: [&str; 3] = ["messages", "bytes", "credit_stalls"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS;

    #[test]
    fn serialization_rounds_up_to_whole_picoseconds() {
        let p = LinkParams::symmetric(0, 3e9);
        // 1 byte at 3 GB/s = 333.33 ps -> 334 ps.
        assert_eq!(p.serialization(Direction::AtoB, 1), 334);
        assert_eq!(p.serialization(Direction::AtoB, 0), 0);
        let inf = LinkParams::symmetric(0, 0.0);
        assert_eq!(inf.serialization(Direction::BtoA, 4096), 0);
    }

    #[test]
    fn back_to_back_messages_queue_on_the_wire() {
        let p = LinkParams::symmetric(100 * NS, 1e9); // 1 byte per ns
        let mut l: LinkState<()> = LinkState::new("l".into(), p, [(0, 0), (1, 0)], 0);
        let [a_to_b, b_to_a] = &mut l.dirs;
        assert_eq!(a_to_b.occupy(0, 64), (0, 164 * NS));
        // The second message waits for the first to leave the wire.
        assert_eq!(a_to_b.occupy(10 * NS, 64), (64 * NS, 228 * NS));
        // The other direction is independent.
        assert_eq!(b_to_a.occupy(10 * NS, 64), (10 * NS, 174 * NS));
    }

    #[test]
    fn the_serialization_cache_gives_every_size_its_own_time() {
        // Sizes that alternate (headers and data), repeat and come back
        // after two others: each message occupies the wire for exactly
        // its own size's serialization, whatever the cache holds.
        let p = LinkParams::symmetric(0, 3e9);
        let mut l: LinkState<()> = LinkState::new("l".into(), p.clone(), [(0, 0), (1, 0)], 0);
        let d = &mut l.dirs[0];
        let mut now = 0;
        for bytes in [16, 80, 16, 80, 80, 16, 0, 144, 16, 80, 144, 1, 16] {
            let (start, end) = d.occupy(now, bytes);
            assert_eq!(start, now);
            assert_eq!(
                end - start,
                p.serialization(Direction::AtoB, bytes),
                "{bytes} B"
            );
            now = end;
        }
    }

    #[test]
    fn problems_are_reported() {
        let mut p = LinkParams::symmetric(0, -1.0);
        p.vcs.clear();
        let problems = p.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
    }
}
