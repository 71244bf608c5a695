//! What the kernel's integration tests share: the message they send.

use ccsim_kernel::prelude::*;

/// A message carrying an id and a declared wire size on a virtual channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Packet {
    pub id: u32,
    pub bytes: u32,
    pub vc: u8,
}

impl Message for Packet {
    fn label(&self) -> String {
        format!("pkt{} {}B vc{}", self.id, self.bytes, self.vc)
    }
}
