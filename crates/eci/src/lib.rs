//! # ccsim-eci: the coherent Enzian platform
//!
//! ECI links, the directory controller that executes the generated protocol
//! table, and a CPU LLC that executes the peer table.
//!
//! Two homes share the links: FPGA-homed lines (below
//! [`cc::CPU_HOMED_BASE`]) run `eci-dc` between the CPU's LLC and the DC,
//! as drawn here; CPU-homed lines run `eci-cc` between the CPU home
//! ([`cpu_home`]) and the FPGA's cache controller ([`cc`]); [`shared`]
//! puts both on one pair of ECI links, routing by each message's
//! [`Catalogue`](ccsim_coherence::Catalogue).
//!
//! ```text
//!   CoherentCpu (cores with L1s and write buffers + shared LLC = ECI
//!                remote agent, table ir.roles[1]; TADs, XOR scrambler)
//!     ├─eci0── kernel link, 5 VCs (even lines) ──┐
//!     └─eci1── kernel link, 5 VCs (odd lines)  ──┤
//!                          DirectoryController: even / odd slice,
//!                          N serial DCUs each, table ir.roles[0],
//!                          app machine ir.roles[2], AXI → BRAM | DDR (MIG-like)
//! ```
//!
//! * **The table that was proved is the table that runs.** [`Tables`](ccsim_coherence::Tables) wraps
//!   the `ProtocolIr` from `ccsim-protocol` (generated from `eci-dc` or
//!   imported from its JSON export) and every agent decides every event by
//!   a cell of its `MachineIndex` table, compiled once (`compiled.rs`: the
//!   same cells with their messages resolved), interpreting actions exactly
//!   like the checker's `system.rs`: `send` takes data from the cache copy (cache agent with
//!   access), else from memory (home); `write_mem` and `fill` take the
//!   received data; `store` updates the ghost; `check` compares with it.
//! * **Real data.** Lines are 128 bytes; memory, the LLC and every data
//!   message carry real bytes ([`Line`](ccsim_coherence::Line)).
//! * **Online checks** ([`Checker`](ccsim_coherence::check::Checker), shared by both agents): SWMR and
//!   data-value are asserted on every transition of every line against a
//!   per-line "latest write" ghost. A watchdog, a deadlock or a violation
//!   is reported with the stuck transactions (line, states, pending
//!   messages) instead of hanging: from the checker's mirror with checks
//!   on, from the components and the kernel's in-flight messages once the
//!   run has stopped with checks off (nothing is tracked per transaction).
//!
//! ## Example: one coherent read through the DC from BRAM
//!
//! ```
//! use ccsim_eci::system::{CoherentSystem, CoherentParams, HomeMemory};
//! use ccsim_eci::cpu::CpuOp;
//! let p = CoherentParams::default();
//! let mut sys = CoherentSystem::build(&p, HomeMemory::Bram, vec![CpuOp::Load { line: 7 }], 1).unwrap();
//! sys.run().unwrap();
//! let cpu = sys.cpu();
//! // The load saw the bytes the DC's memory holds for line 7.
//! assert_eq!(cpu.completed[0].data, ccsim_coherence::initial_line(7));
//! // Its latency is a full round trip over ECI plus the DC pipeline.
//! assert!(cpu.completed[0].latency_ps > 230_000);
//! ```

pub mod assemble;
pub mod bench;
pub mod cc;
pub mod cc_system;
pub mod cpu;
pub mod cpu_home;
pub mod dc;
pub mod invocation;
pub mod link;
pub mod shared;
pub mod system;

use ccsim_kernel::component::ComponentSpec;

/// The component types of this crate.
pub fn component_types() -> Vec<&'static ComponentSpec> {
    vec![
        &cpu::COHERENT_CPU,
        &cpu_home::CPU_HOME,
        &cc::CACHE_CONTROLLER,
        &dc::DIRECTORY_CONTROLLER,
        &link::ECI_LINK,
        &link::ECI_WIRE,
        &shared::ECI_MUX,
    ]
}
