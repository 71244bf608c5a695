//! The card memory behind a DMA engine with posted writes
//! (`write_response = "accepted"`, as a DDR4 MIG's AXI shim): an H2C
//! transfer, whose completion waits for the engine's writes into card
//! memory, is shorter by exactly the read latency less the acceptance
//! time; a C2H transfer, which reads card memory, is unchanged; and the
//! bytes land either way. (An unknown `write_response` is a bad input:
//! tests/bad_inputs.)

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::dma::{C2H, H2C};
use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
use ccsim_pcie::system::{PcieSystem, PcieSystemParams};

const CARD_NS: f64 = 150.0;
const ACCEPT_NS: f64 = 25.0;
const HOST: u64 = 0x2_0000_0000;
const LEN: u64 = 64;

/// The engine's time (ps) from the doorbell to the completion of one
/// register-programmed transfer of `LEN` bytes on `channel`, with the card
/// memory's writes answered as `write_response` (the engine's own log, so
/// no poll loop's period rounds it).
fn one_transfer(channel: usize, write_response: &str) -> Tick {
    let driver = DmaDriver::from_params(&Params::new()).unwrap();
    let layout = DriverLayout {
        bar0: 0xF000_0000,
        ring: 0x1_0000_0000,
        writeback: 0x1_0000_F000,
    };
    let t = Transfer {
        channel,
        host: HOST,
        card: 0,
        len: LEN,
    };
    let program: Vec<Op> = driver.transfer_registers(&t, &layout, Completion::Poll, 0);
    let mut p = PcieSystemParams::default();
    p.device_memory
        .set("latency_ns", ParamValue::Float(CARD_NS), "test");
    p.device_memory.set(
        "write_response",
        ParamValue::Str(write_response.into()),
        "test",
    );
    p.device_memory
        .set("write_accept_ns", ParamValue::Float(ACCEPT_NS), "test");
    let data = vec![0x5A; LEN as usize];
    let d = data.clone();
    let mut sys = PcieSystem::build(&p, program, 3, TraceMode::Off, move |host, card| {
        host.data.write(HOST, &d);
        card.data.write(0, &d);
    })
    .unwrap();
    sys.sim.run();
    let moved = if channel == H2C {
        sys.device_memory().data.read(0, LEN as usize)
    } else {
        sys.host_memory().data.read(HOST, LEN as usize)
    };
    assert_eq!(moved, data, "the transfer moved the bytes");
    let engine = sys.engine();
    engine.done_log(channel)[0] - engine.doorbell_times(channel)[0]
}

#[test]
fn posted_card_writes_shorten_only_the_transfer_that_writes_the_card() {
    let saved = ((CARD_NS - ACCEPT_NS) * 1000.0) as Tick;
    assert_eq!(
        one_transfer(H2C, "written") - one_transfer(H2C, "accepted"),
        saved,
        "an H2C transfer waits for its card write: the acceptance instead of the latency"
    );
    assert_eq!(
        one_transfer(C2H, "written"),
        one_transfer(C2H, "accepted"),
        "a C2H transfer only reads the card memory"
    );
}
