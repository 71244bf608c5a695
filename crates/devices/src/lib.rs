//! # ccsim-devices: device logic attached to an agent's interface
//!
//! A device is logic that sits behind an interconnect's endpoint: behind
//! the XDMA engine's AXI port, at the DC's application interface, or (to
//! come) at a CXL device coherency engine or a Cohort tile. A device
//! offers what a runner needs to attach it (a component, or a hook the
//! agent's interface calls) and to read what it recorded; the software that
//! drives it and the runs are workloads, in `ccsim_experiments`.
//!
//! * [`accel`] — stream accelerators computing real SHA-256 digests and
//!   AES-128 ciphertext behind 64-bit-word ratchets (the Cohort
//!   prototype's, §5.2), for a queue engine to feed.
//! * [`cohort`] — the Cohort SoC on P-Mesh: Ariane-like cores, SPSC
//!   queues in memory, the Cohort engine with its Sv39 MMU, and the
//!   MAPLE-like MMIO and coherent-DMA baselines.
//! * [`circustent`] — the CircusTent benchmark's atomic access patterns
//!   (RAND, STRIDE1, STRIDEN, PTRCHASE, CENTRAL, SCATTER, GATHER, SG) as
//!   processing elements' programs on a real array, with the sequential
//!   reference a remote-atomics NIC model must reproduce.
//! * [`rao`] — remote atomic operations (Cohet §V-A) on a PCIe-NIC (DMA
//!   read, ALU, posted write, zero-length read for the acknowledgement)
//!   and a CXL-NIC (RAO PEs locking lines in the DCOH's HMC), fed by
//!   CircusTent's PEs on remote servers through a bounded RX buffer.
//! * [`nic`] — the 100 Gb/s NIC of the PIO paper §6.3 (MAC in loopback,
//!   packet SRAM, NIC logic) in three designs: PCIe DMA, PCIe PIO and ECI
//!   PIO.
//! * [`rpc`] — RPC (de)serialization offload (Cohet §V-B): HyperProtoBench-
//!   shaped real protobufs, the wire-format walker, the decoded objects'
//!   layout, the (de)serializer's cycles and the DCOH's RPC prefetcher.

pub mod accel;
pub mod circustent;
pub mod cohort;
pub mod nic;
pub mod rao;
pub mod rpc;

use ccsim_kernel::component::ComponentSpec;

/// The component types of this crate.
pub fn component_types() -> Vec<&'static ComponentSpec> {
    vec![
        &accel::STREAM_ACCELERATOR,
        &cohort::ARIANE_CORE,
        &cohort::COHORT_ENGINE,
        &cohort::MAPLE_UNIT,
        &cohort::PMESH_L15,
        &cohort::PMESH_L2,
        &nic::NIC_MAC,
        &rao::RAO_PCIE_NIC,
    ]
}
