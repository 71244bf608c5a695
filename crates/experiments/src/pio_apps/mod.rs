//! The PIO paper's applications (§6.4–§6.5), each built on the invocation
//! mechanisms the earlier experiments calibrated:
//!
//! * [`bloom`] — `pio_bloom`, Fig. 12: Bloom-filter hashing on the CPU or
//!   offloaded by ECI PIO, PCIe PIO or XDMA; the hash functions and the
//!   FPGA pipeline in [`hash`].
//! * [`timely`] — `pio_timely`, Fig. 11 and Table 2: a Timely-Dataflow-shaped
//!   graph of 31 filters with per-operator progress tracking, on the CPU or
//!   offloaded by PCIe DMA, PCIe PIO or ECI PIO; the graph in [`dataflow`].

pub mod bloom;
pub mod dataflow;
pub mod hash;
pub mod timely;
