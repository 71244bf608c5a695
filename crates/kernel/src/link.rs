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
        let bw = self.bandwidth[dir.index()];
        if bw <= 0.0 || bytes == 0 {
            return 0;
        }
        (bytes as f64 * SEC as f64 / bw).ceil() as Tick
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

/// Run-time state of one direction of a link.
pub(crate) struct DirectionState<M> {
    /// When the wire becomes free.
    pub busy_until: Tick,
    /// Credits available per VC (ignored for unlimited VCs).
    pub credits: Vec<u32>,
    /// Messages waiting for a credit, per VC.
    pub waiting: Vec<VecDeque<Pending<M>>>,
    /// Credits on their way back while no message waited, per VC:
    /// (tick of return, reserved sequence number), in return order. They
    /// are taken lazily by the next send (no event each); only when a
    /// message has to wait do they become events (see `transmit`).
    pub returning: Vec<VecDeque<(Tick, u64)>>,
    /// The size of the last message and its serialization time: messages
    /// on a direction come in a few sizes, and this saves the division.
    pub serialized: (u32, Tick),
}

/// Run-time state of a link.
pub(crate) struct LinkState<M> {
    pub name: String,
    pub params: LinkParams,
    /// Endpoints: (component index, port index) for A and B.
    pub ends: [(u32, u16); 2],
    pub dirs: [DirectionState<M>; 2],
    /// Global stat slots: per direction, [messages, bytes, credit_stalls].
    pub stat_base: usize,
}

impl<M> LinkState<M> {
    pub fn new(name: String, params: LinkParams, ends: [(u32, u16); 2], stat_base: usize) -> Self {
        let mk = || DirectionState {
            busy_until: 0,
            credits: params.vcs.iter().map(|v| v.credits).collect(),
            waiting: params.vcs.iter().map(|_| VecDeque::new()).collect(),
            returning: params.vcs.iter().map(|_| VecDeque::new()).collect(),
            // Zero bytes take no time (`LinkParams::serialization`).
            serialized: (0, 0),
        };
        LinkState {
            dirs: [mk(), mk()],
            name,
            params,
            ends,
            stat_base,
        }
    }
    /// Reserves the wire for `bytes` starting no earlier than `now`; returns
    /// (start of serialization, arrival at the far end).
    pub fn occupy(&mut self, dir: Direction, now: Tick, bytes: u32) -> (Tick, Tick) {
        let d = &mut self.dirs[dir.index()];
        if d.serialized.0 != bytes {
            d.serialized = (bytes, self.params.serialization(dir, bytes));
        }
        let ser = d.serialized.1;
        let start = now.max(d.busy_until);
        d.busy_until = start + ser;
        (start, d.busy_until + self.params.latency[dir.index()])
    }
    /// Whether `vc` in `dir` is flow-controlled.
    pub fn limited(&self, vc: usize) -> bool {
        self.params.vcs[vc].credits > 0
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
        assert_eq!(l.occupy(Direction::AtoB, 0, 64), (0, 164 * NS));
        // The second message waits for the first to leave the wire.
        assert_eq!(l.occupy(Direction::AtoB, 10 * NS, 64), (64 * NS, 228 * NS));
        // The other direction is independent.
        assert_eq!(l.occupy(Direction::BtoA, 10 * NS, 64), (10 * NS, 174 * NS));
    }

    #[test]
    fn problems_are_reported() {
        let mut p = LinkParams::symmetric(0, -1.0);
        p.vcs.clear();
        let problems = p.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
    }
}
