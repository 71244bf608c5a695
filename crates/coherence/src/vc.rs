//! The virtual channel a coherent message travels on: one per message class
//! and data flag (CCKit §4.1), the five channels of the ECI link.

use ccsim_protocol::ir::MsgClass;

/// Virtual channels of the ECI link, by index.
pub const VC_NAMES: [&str; 5] = ["req", "req_data", "fwd", "rsp", "rsp_data"];

/// The VC of a message: requests with/without data, forwards, responses
/// with/without data (CCKit §4.1).
pub fn vc_of(class: MsgClass, data: bool, _from: &str) -> u8 {
    match (class, data) {
        (MsgClass::Request, false) => 0,
        (MsgClass::Request, true) => 1,
        (MsgClass::Forward, _) => 2,
        (MsgClass::Response, false) => 3,
        (MsgClass::Response, true) => 4,
    }
}
