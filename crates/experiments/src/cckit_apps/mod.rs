//! The Enzian applications of CCKit (issue 20): device logic on the
//! directory controller's application port, moving and checking real data.
//!
//! * [`shared_table`] — `shared_table`, CCKit §5.4, Fig. 7: a CPU thread
//!   scans a table homed on the other socket incrementing a counter per
//!   row while a contending thread on the home socket increments a fraction
//!   of the rows with the DC's locking clean-invalidate (lock → RMW →
//!   unlock); CPU–FPGA (DC+BRAM over ECI) against CPU–CPU (the native home
//!   over CCPI), the same `eci-dc` table in both homes.

//! * [`materialized_view`] — `materialized_view`, CCKit §5.6, Fig. 9:
//!   TPC-H ORDERS in FPGA DRAM; CPU transactions append tuples and commit
//!   with a read of a synchronization line; the FPGA's view-maintenance
//!   operator clean-invalidates the updated lines and recomputes the
//!   per-customer totals.
//!
//! * [`prefetcher`] — `prefetch_read`, CCKit §5.5, Fig. 8: 1–N client
//!   threads read rows sequentially from FPGA DRAM through the DC, with and
//!   without the application-specific prefetcher between the DC and DRAM
//!   ([`ccsim_coherence::prefetch`]).

pub mod materialized_view;
pub mod prefetcher;
pub mod shared_table;
