//! RPC (de)serialization offload (Cohet §V-B, Figs. 10 and 11): real
//! Protocol Buffers messages and the pieces of the two NICs that do not
//! depend on the interconnect.
//!
//! ```text
//!  bench (prost Record, seeded)  ->  wire bytes  ->  wire::walk  ->  WorkItems + Decoded
//!                                                                        |
//!                        layout::Layout (objects, strings, size classes) <-+
//!                          write_plan (deserialization's lines)
//!                          read_plan  (serialization's lines, with their dependencies)
//!  engine::Pipeline: cycles per field of the (de)serializer      prefetch: the DCOH's RPC prefetcher
//!  image: the bytes both NICs move (decoded objects; the DMA-safe buffer)
//! ```
//!
//! The interconnect side (RpcNIC's DMA over the PCIe model, the CXL-NIC's
//! NC-P pushes and CXL.cache / CXL.mem reads through the verified tables)
//! is the workload `rpc_offload` in `ccsim_experiments`.
//!
//! ```
//! use ccsim_devices::rpc::{bench, wire};
//! let r = &bench::generate(&bench::PROFILES[1], 0, 1)[0];
//! let bytes = bench::encode(r);
//! let (items, tree) = wire::walk(&bytes).unwrap();
//! assert!(!items.is_empty());
//! assert_eq!(wire::encode(&tree), bytes);
//! ```

pub mod bench;
pub mod engine;
pub mod image;
pub mod layout;
pub mod prefetch;
pub mod wire;
