//! A `protocol_link` with CXL 2.0's 68 B flits: every 64 B of message
//! slots costs a whole flit on the wire, so a message of `n` bytes
//! serializes in `n * 68 / 64` bytes' time at the wire rate.

use ccsim_coherence::agents::{link_params, payload_bandwidth_gbps};
use ccsim_kernel::link::Direction;
use ccsim_kernel::prelude::*;

fn link(flit: i64) -> Params {
    let mut p = Params::new();
    p.set("latency_ns", ParamValue::Float(25.0), "test");
    p.set("bandwidth_gbps", ParamValue::Float(31.51), "test");
    p.set("credits", ParamValue::Int(0), "test");
    p.set("flit_bytes", ParamValue::Int(flit), "test");
    p.set("flit_payload_bytes", ParamValue::Int(64), "test");
    p
}

#[test]
fn a_flit_link_carries_64_of_every_68_bytes() {
    assert_eq!(payload_bandwidth_gbps(&link(68)), 31.51 * 64.0 / 68.0);
    // No flits: the wire rate is the message rate.
    assert_eq!(payload_bandwidth_gbps(&link(0)), 31.51);
    // A MemData (a 16 B header slot and four 64 B of data slots): 80 B of
    // slots, 85 B of wire at 31.51 GB/s.
    let lp = link_params(&link(68));
    let t = lp.serialization(Direction::AtoB, 80);
    let expected = (85.0 / 31.51 * 1000.0_f64).ceil() as u64; // ps
    assert!(t.abs_diff(expected) <= 1, "{t} vs {expected}");
}
