//! Where a line's home sits on a host's mesh: the NUMA node (sub-NUMA
//! clustering, SNC-4) and, inside the node, the LLC slice its address
//! hashes to.
//!
//! An Intel Xeon spreads the lines of memory over the LLC slices (one per
//! core's caching/home agent, CHA) with an address hash; in SNC-4 mode a
//! node's lines stay on the slices of its own quadrant. So a request from
//! the device's root port reaches a node's quadrant (the quadrant
//! crossings and, for the other socket, UPI: [`snc_one_way_ns`]) and then
//! the line's own slice, a few mesh stops further or nearer: every line of
//! the same node does not take the same time ([`SlicePlacement`]). That is
//! a source of per-request spread in a latency test over many lines.
//!
//! ```
//! use ccsim_coherence::agents::SlicePlacement;
//! // 13 slices four to a row, half a nanosecond a mesh stop.
//! let p = SlicePlacement::new(13, 4, 0.5);
//! let far = (0..1000).map(|l| p.round_trip_ps(l)).max().unwrap();
//! // The farthest slice of a 4-wide block of 13 (stops 0-3 / 1-4 / 2-5 /
//! // 3) is 5 stops away, and the request goes there and back.
//! assert_eq!(far, 2 * 5 * 500);
//! assert!((0..1000).any(|l| p.round_trip_ps(l) == 0));
//! ```

use ccsim_kernel::component::{ComponentSpec, ParamDefault, ParamKind, ParamRange, ParamSpec};
use ccsim_kernel::prelude::*;

use crate::util::ns_to_ps;

/// The declaration of `snc_mesh`: where a host's memory sits on its
/// sockets' meshes, seen from the device's root port. Not a component of
/// its own: workloads read it to place a line's home (its LLC slice and
/// memory controller) on a NUMA node.
///
/// Each socket's mesh is split into four sub-NUMA clusters (SNC-4), node
/// `n` on socket `n / 4` in quadrant `q = n % 4` at column `q % 2`, row
/// `q / 2`. A path crosses quadrant boundaries horizontally and vertically
/// at `hop_x_ns` and `hop_y_ns` each; a node on the other socket adds
/// `upi_ns` to reach the quadrant the UPI link lands in. Inside the node,
/// a line's LLC slice is one of `slices_per_node`, laid out
/// `slice_columns` to a row from the stop where requests enter the
/// quadrant, `slice_hop_ns` a stop ([`SlicePlacement`]).
pub static SNC_MESH: ComponentSpec = ComponentSpec {
    type_name: "snc_mesh",
    description: "A two-socket host's meshes in sub-NUMA-cluster mode (SNC-4): where each NUMA node's memory sits relative to the device's root port, as quadrant crossings and a UPI crossing, and which LLC slice of its node a line hashes to. Read by workloads to place a line's home; not a component of its own.",
    params: &[
        ParamSpec { name: "root_port_node", kind: ParamKind::Int, default: ParamDefault::Int(7), unit: "node", range: ParamRange::between(0.0, 7.0), from: "assumed", description: "The NUMA node whose quadrant holds the device's root port." },
        ParamSpec { name: "upi_node", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "node", range: ParamRange::between(0.0, 7.0), from: "assumed", description: "The node of the other socket whose quadrant the UPI link lands in." },
        ParamSpec { name: "hop_x_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "One way across a vertical quadrant boundary (to the horizontally adjacent cluster)." },
        ParamSpec { name: "hop_y_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "One way across a horizontal quadrant boundary (to the vertically adjacent cluster)." },
        ParamSpec { name: "upi_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "One way from the root port's socket to the UPI landing quadrant of the other socket." },
        ParamSpec { name: "slices_per_node", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "slices", range: ParamRange::between(0.0, 1024.0), from: "assumed: no slice placement", description: "LLC slices (CHAs) of one node that its lines are hashed over (0: every line at the quadrant's entry, no per-line distance)." },
        ParamSpec { name: "slice_columns", kind: ParamKind::Int, default: ParamDefault::Int(4), unit: "stops", range: ParamRange::between(1.0, 1024.0), from: "assumed", description: "Mesh stops in a row of a node's slices; slice k sits at column k % slice_columns, row k / slice_columns from the entry stop." },
        ParamSpec { name: "slice_hop_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "One way from a mesh stop to the next inside a node." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// One-way time from the root port to NUMA node `node` on an
/// [`SNC_MESH`] with parameters `p`.
pub fn snc_one_way_ns(p: &Params, node: u64) -> f64 {
    let quadrant = |n: u64| ((n % 4) % 2, (n % 4) / 2);
    let cross = |a: u64, b: u64| {
        let ((ax, ay), (bx, by)) = (quadrant(a), quadrant(b));
        ax.abs_diff(bx) as f64 * p.float("hop_x_ns") + ay.abs_diff(by) as f64 * p.float("hop_y_ns")
    };
    let root = p.uint("root_port_node");
    if node / 4 == root / 4 {
        cross(root, node)
    } else {
        p.float("upi_ns") + cross(p.uint("upi_node"), node)
    }
}

/// The LLC slice each line hashes to inside its node, and the mesh time
/// from the node's entry stop to it and back.
///
/// Intel does not publish the hash that spreads addresses over the slices;
/// what matters here is that it is fixed per address and spreads lines
/// evenly, which a 64-bit mix of the line number does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlicePlacement {
    slices: u64,
    columns: u64,
    hop: Tick,
}

impl SlicePlacement {
    /// `slices` slices laid out `columns` to a row, `hop_ns` a mesh stop.
    pub fn new(slices: u64, columns: u64, hop_ns: f64) -> SlicePlacement {
        SlicePlacement {
            slices: slices.max(1),
            columns: columns.max(1),
            hop: ns_to_ps(hop_ns),
        }
    }

    /// From an [`SNC_MESH`] instance's parameters; `None` when it places no
    /// slices (`slices_per_node = 0`).
    pub fn from_params(p: &Params) -> Option<SlicePlacement> {
        match p.uint("slices_per_node") {
            0 => None,
            slices => Some(SlicePlacement::new(
                slices,
                p.uint("slice_columns"),
                p.float("slice_hop_ns"),
            )),
        }
    }

    /// The slice `line` hashes to.
    pub fn slice_of(&self, line: u64) -> u64 {
        mix64(line) % self.slices
    }

    /// Mesh stops from the entry stop to `line`'s slice.
    pub fn stops_to(&self, line: u64) -> u64 {
        let slice = self.slice_of(line);
        slice % self.columns + slice / self.columns
    }

    /// From the node's entry stop to `line`'s slice and back, in ps.
    pub fn round_trip_ps(&self, line: u64) -> Tick {
        2 * self.stops_to(line) * self.hop
    }

    /// The median of [`round_trip_ps`](Self::round_trip_ps) over the
    /// slices (each slice holding an equal share of the lines): the part
    /// of a median latency that the placement adds.
    pub fn median_round_trip_ps(&self) -> Tick {
        let mut trips: Vec<Tick> = (0..self.slices)
            .map(|s| 2 * (s % self.columns + s / self.columns) * self.hop)
            .collect();
        trips.sort_unstable();
        trips[(trips.len() - 1) / 2]
    }
}

/// A fixed 64-bit mix (the splitmix64 finalizer): consecutive line numbers
/// land on unrelated slices, as an address hash spreads them.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_spread_evenly_over_the_slices() {
        let p = SlicePlacement::new(13, 4, 0.5);
        let mut count = [0u64; 13];
        for line in 0..130_000 {
            count[p.slice_of(line) as usize] += 1;
        }
        // Each slice gets its share, 10,000, within 3%.
        for c in count {
            assert!((9_700..=10_300).contains(&c), "{count:?}");
        }
    }

    #[test]
    fn median_of_a_4_wide_block_of_13() {
        // Stops 0 1 2 3 / 1 2 3 4 / 2 3 4 5 / 3: sorted, the 7th of 13 is 3.
        let p = SlicePlacement::new(13, 4, 0.5);
        assert_eq!(p.median_round_trip_ps(), 2 * 3 * 500);
    }
}
