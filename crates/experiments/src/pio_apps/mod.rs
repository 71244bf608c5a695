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

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::system::{PcieSystem, PcieSystemParams};
use ccsim_platform::Platform;

use crate::{
    completion_of, driver_for, driver_layout, finish, model_err, ns, result, werr, Point,
    PointResult, RunError, REQ_BUF,
};

/// `x` as a byte count that is a whole number of `unit`-byte units from
/// one unit to `max` bytes; otherwise an error naming the workload's x
/// (`x_name`) and `what` a unit is.
pub(crate) fn whole_units(
    x_name: &str,
    x: f64,
    (unit, what): (usize, &str),
    max: u64,
) -> Result<u64, RunError> {
    if x >= unit as f64 && x <= max as f64 && x.fract() == 0.0 && (x as u64) % unit as u64 == 0 {
        Ok(x as u64)
    } else {
        Err(werr(format!(
            "{x_name} = {x}: must be a whole number of {unit}-byte {what} from {unit} to {max}"
        )))
    }
}

/// The XDMA driver calls of an offload: `n_in` bytes from the request
/// buffer to card address 0 (H2C), the card's `compute_ps` over them, then
/// `n_out` result bytes from card address `card_results` to host address
/// `host_results` (C2H).
pub(crate) fn xdma_offload_ops(
    workload: &str,
    point: &Point<'_>,
    (n_in, n_out): (u64, u64),
    (card_results, host_results): (u64, u64),
    compute_ps: Tick,
) -> Result<Vec<Op>, RunError> {
    use ccsim_pcie::dma::{C2H, H2C};
    use ccsim_pcie::driver::Transfer;
    let driver = driver_for(point.platform, workload)?;
    let layout = driver_layout(point.platform, workload)?;
    let completion = completion_of(point.params);
    let h2c = Transfer {
        channel: H2C,
        host: REQ_BUF,
        card: 0,
        len: n_in,
    };
    let c2h = Transfer {
        channel: C2H,
        host: host_results,
        card: card_results,
        len: n_out,
    };
    let mut ops = driver.transfer(&[h2c], &layout, completion, 0);
    ops.push(Op::Compute(compute_ps));
    ops.extend(driver.transfer(&[c2h], &layout, completion, 1));
    Ok(ops)
}

/// One offload over PCIe (PIO or DMA) whose bytes are checked both ways:
/// what the CPU sends must be on the card afterwards, and what it reads
/// back must equal the CPU's own computation.
pub(crate) struct PcieOffload<'a> {
    /// The workload, for errors.
    pub workload: &'static str,
    /// The bytes the CPU sends (from `REQ_BUF`), and what they are.
    pub sent: &'a [u8],
    pub sent_what: &'static str,
    /// The bytes the CPU must read back, and what they are.
    pub back: &'a [u8],
    pub back_what: &'static str,
    /// Where the card's result buffer is, and where a DMA leaves the
    /// results in host memory.
    pub card_results: u64,
    pub host_results: u64,
    /// Whether the results come back by DMA (else by the core's loads).
    pub by_dma: bool,
}

/// Runs `program` (the offload between marks 0 and 1) on the PCIe system,
/// checks the bytes both ways and returns the span between the marks (ns)
/// with the point's result.
pub(crate) fn run_pcie_offload(
    platform: &Platform,
    sp: &PcieSystemParams,
    program: Vec<Op>,
    seed: u64,
    trace: TraceMode,
    o: PcieOffload<'_>,
) -> Result<(f64, PointResult), RunError> {
    let (sent, back) = (o.sent.to_vec(), o.back.to_vec());
    // The card's result buffer holds the FPGA's output (checked against
    // the CPU's before the run and again when read back).
    let card_results = o.card_results;
    let mut sys = PcieSystem::build(sp, program, seed, trace, move |host, card| {
        host.data.write(REQ_BUF, &sent);
        card.data.write(card_results, &back);
    })
    .map_err(model_err(platform))?;
    finish(&mut sys, o.workload)?;
    if sys.device_memory().data.read(0, o.sent.len()) != o.sent {
        return Err(werr(format!(
            "{}: the card does not hold {}",
            o.workload, o.sent_what
        )));
    }
    let got = if o.by_dma {
        sys.host_memory().data.read(o.host_results, o.back.len())
    } else {
        sys.core()
            .mmio_loads
            .first()
            .map(|(_, d)| d.clone())
            .unwrap_or_default()
    };
    if got != o.back {
        return Err(werr(format!("{}: {}", o.workload, o.back_what)));
    }
    let c = sys.core();
    let span = c.mark(1).expect("mark") - c.mark(0).expect("mark");
    Ok((ns(span), result(&sys, BTreeMap::new(), trace)))
}
