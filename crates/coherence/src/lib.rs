//! # ccsim-coherence: what every interconnect shares
//!
//! The PCIe baseline, Enzian's ECI and the coherent interconnects to come
//! (CXL, CCIX, P-Mesh) build on the pieces here:
//!
//! ```text
//!   envelope   the messages that travel: coherent messages (CohMsg) and
//!              PCIe/memory/MMIO messages (Msg)
//!   line       one cache line of real bytes, its initial pattern, a
//!              pool of payload buffers
//!   tables     a two-node protocol as the Enzian agents run it (the
//!              engine's Protocol with message facts and VCs resolved)
//!   check      online SWMR / data-value checks and the stuck report
//!   memory     the coherent memories behind a home: BRAM, DDR (MIG-like)
//!   vc         the virtual channel of a coherent message
//!   parked     a slab of completions waiting for their tick
//!   util       parameter reading with clear errors, small time helpers
//!   agents     generic table agents, switch and online invariant checker:
//!              any protocol given as data, in a timing simulation
//! ```
//!
//! ```
//! use ccsim_coherence::{initial_line, Tables};
//! let t = Tables::eci_dc().unwrap();
//! assert_eq!(t.agent(ccsim_coherence::GENERATED), "dc");
//! assert_ne!(initial_line(1), initial_line(2));
//! ```

pub mod agents;
pub mod check;
pub mod envelope;
pub mod line;
pub mod line_map;
pub mod memory;
pub mod parked;
pub mod prefetch;
pub mod tables;
pub mod util;
pub mod vc;

pub use envelope::{intern, Catalogue, CohMsg, Msg};
pub use line::{
    boxed_line, boxed_line_with, initial_line, initial_line_into, recycle_line, Line, LineText,
    LINE_BYTES,
};
pub use tables::{table_summary, MsgMeta, Tables, GENERATED, LOCAL, PEER};

use ccsim_kernel::component::ComponentSpec;

/// The component types of this crate (the coherent memories).
pub fn component_types() -> Vec<&'static ComponentSpec> {
    vec![
        &memory::COHERENT_BRAM,
        &memory::DDR_CONTROLLER,
        &memory::DDR5_CONTROLLER,
        &agents::TABLE_AGENT,
        &agents::PROTOCOL_SWITCH,
        &agents::PROTOCOL_LINK,
        &agents::SNC_MESH,
    ]
}
