//! The PIO paper's two-cache-line invocation protocol (§5, Fig. 5a; CCKit
//! §5.7) as the DC runs it: the checked `invocation` tables
//! (`protocols/invocation.toml`) and the checksum its device computes. The
//! client, the device logic and the runner are in `ccsim_experiments`
//! (`invocation::run`); the ECI NIC (device logic in `ccsim_devices`, its
//! client and run in `ccsim_experiments::nic::eci`) uses the same tables.

use std::sync::Arc;

use ccsim_coherence::{Line, Tables};

/// The checked `invocation` protocol (generated from its shipped spec).
pub fn invocation_tables() -> Result<Arc<Tables>, String> {
    Tables::load("invocation")
}

/// The checksum the device computes: a 64-bit FNV-1a of the request line.
pub fn checksum(l: &Line) -> u64 {
    l.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}
