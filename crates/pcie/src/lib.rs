//! # ccsim-pcie: the PCIe baseline
//!
//! Cores, memories and the PCIe fabric, all speaking one message type
//! ([`msg::Msg`]) and moving **real bytes**: a DMA copies the host buffer
//! into device memory byte for byte, an MMIO read returns what the device
//! memory holds.
//!
//! ```text
//!   core (program of Ops, WC buffer) ──mem── host_memory (sparse pages)
//!     └─io── root_complex ──mem──┘
//!               └─pcie── pcie_link (TLP/DLLP bytes, gen, lanes) ── xdma_engine ──mem── device_memory
//!                                                                  (BAR0 regs, descriptors, H2C/C2H)
//! ```
//!
//! * [`tlp`] — pure PCIe accounting: encodings, TLP/DLLP overheads,
//!   MPS/MRRS/RCB splitting, exact serialization times.
//! * [`link`], [`rc`] — the `pcie_link` and `root_complex`
//!   components; [`ping`] — link test agents.
//! * [`memory`] — `host_memory` and `device_memory`.
//! * [`core`] — the `core`: loads, stores, fences, MMIO with write
//!   combining and uncached reads, polling, interrupts, software costs.
//! * [`dma`] — the `xdma_engine`: descriptors in host memory, doorbell,
//!   H2C/C2H, status write-back or MSI-X. [`driver`] — the `dma_driver`
//!   software model that writes descriptors and rings the doorbell.
//! * [`flexbus`] — the `cxl_flexbus`: one CXL link in 68 B flit mode that
//!   carries CXL.io (these TLPs), CXL.cache and CXL.mem, with a
//!   weighted round-robin arbiter at flit granularity and credits per
//!   channel.
//! * [`smmu`] — AArch64 translation tables as bytes, the walker, the
//!   host IOMMU's TLB with pre-translation; [`ats`] — the device's ATS
//!   switch and ATC, the ATS round trip over VC0, CCIX Eq. 1.
//! * [`vc_link`] — one PCIe link carrying VC0 and VC1 (the CCIX
//!   attachment): header credits per VC and type, a VC arbiter, both VCs
//!   serialized on the same lanes.
//! * [`system`] — wiring all of the above from parameters.
//!
//! Every component declares a [`ComponentSpec`]; [`component_types`] lists them,
//! and the config validator and `ccsim info` read that list.
//!
//! ## Example: PIO write then read over PCIe Gen3 x8
//!
//! ```
//! use ccsim_pcie::core::Op;
//! use ccsim_pcie::system::{PcieSystem, PcieSystemParams};
//! use ccsim_kernel::prelude::*;
//!
//! let mut p = PcieSystemParams::default();
//! p.core = Params::new().with("wc_bytes", ParamValue::Int(64), "PIO §4: 512-bit combining");
//! let bar1 = 0xE000_0000u64; // the engine's default BAR1
//! let payload: Vec<u8> = (0..256u32).map(|i| i as u8).collect();
//! let program = vec![
//!     Op::MmioWrite { addr: bar1, data: payload.clone(), wc: true },
//!     Op::Fence,
//!     Op::MmioRead { addr: bar1, len: 256 },
//! ];
//! let mut sys = PcieSystem::build(&p, program, 1, TraceMode::Off, |_, _| {}).unwrap();
//! sys.sim.run();
//! // The device memory holds what the core wrote; the read returned it.
//! assert_eq!(sys.device_memory().data.read(0, 256), payload);
//! assert_eq!(sys.core().mmio_loads[0].1, payload);
//! // 256 B of stores left the core as 4 write-combined 64-byte writes...
//! let stats = sys.sim.stats();
//! assert_eq!(stats.counter("system.core.mmio_write_msgs"), Some(4));
//! // ...and were read back 16 bytes at a time: 16 MRd TLPs.
//! assert_eq!(stats.counter("system.core.mmio_read_msgs"), Some(16));
//! ```

pub mod ats;
pub mod ats_port;
pub mod ccix_link;
pub mod core;
pub mod dma;
pub mod driver;
pub mod flexbus;
pub mod link;
pub mod memory;
pub mod ping;
pub mod rc;
pub mod smmu;
pub mod system;
pub mod tlp;
pub mod vc_link;

/// The PCIe system's messages (the envelope's PCIe side).
pub use ccsim_coherence::envelope as msg;
use ccsim_coherence::util;

use ccsim_kernel::component::ComponentSpec;

/// The component types of this crate.
pub fn component_types() -> Vec<&'static ComponentSpec> {
    vec![
        &core::CORE,
        &memory::HOST_MEMORY,
        &memory::DEVICE_MEMORY,
        &link::PCIE_LINK,
        &rc::ROOT_COMPLEX,
        &ping::TLP_PINGER,
        &ping::TLP_ECHO,
        &dma::XDMA_ENGINE,
        &driver::DMA_DRIVER,
        &flexbus::CXL_FLEXBUS,
        &ccix_link::CCIX_VC_LINK,
        &ats::ATS_SWITCH,
        &smmu::SMMU,
    ]
}
