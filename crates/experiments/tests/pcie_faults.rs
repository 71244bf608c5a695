//! PCIe faults through the runners the CLI and the API use: replays show in
//! the latency and in the point's statistics, a stuck engine is an error
//! with the watchdog's report, never a number.

use ccsim_experiments::{run_point, RunError};
use ccsim_kernel::prelude::*;
use ccsim_platform::Platform;

fn enzian(overrides: &[(&str, ParamValue)]) -> Platform {
    let list: Vec<(String, ParamValue)> = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    Platform::load("enzian")
        .unwrap()
        .with_overrides(&list)
        .unwrap()
}

fn xdma(platform: &Platform, bytes: f64) -> Result<ccsim_experiments::PointResult, RunError> {
    let p = Params::new().with("completion", ParamValue::Str("poll".into()), "test");
    run_point(
        "xdma_invoke",
        platform,
        "message_bytes",
        bytes,
        &p,
        0,
        false,
    )
}

#[test]
fn fault_free_points_report_no_fault_statistics() {
    let r = xdma(&enzian(&[]), 4096.0).unwrap();
    assert!(!r.stats.keys().any(|k| k.contains("faults")));
}

#[test]
fn lcrc_replays_lengthen_the_invocation_and_are_counted() {
    // Without the driver's completion hand-off: with it, the poll thread's
    // wake-up (~8 us on Enzian) runs beside the DMA and hides the replays.
    let no_handoff = ("driver.handoff", ParamValue::Bool(false));
    let clean = xdma(&enzian(std::slice::from_ref(&no_handoff)), 16384.0).unwrap();
    let noisy = xdma(
        &enzian(&[no_handoff, ("pcie.bit_error_rate", ParamValue::Float(2e-5))]),
        16384.0,
    )
    .unwrap();
    let replays = noisy.stats["system.pcie.faults.replays"];
    let replay_ps = noisy.stats["system.pcie.faults.replay_ps"];
    assert!(replays > 0.0, "{:?}", noisy.stats);
    let added = noisy.metrics["latency_ns"] - clean.metrics["latency_ns"];
    // Replays of TLPs that overlap other work (a data TLP behind a busy
    // datapath) cost less than their own time; the driver sees the end at
    // its next polling load, which moves the end by up to one iteration
    // (well under 1 us).
    assert!(
        added > 0.0 && added <= replay_ps / 1000.0 + 1000.0,
        "added {added} ns, replays {replays} costing {replay_ps} ps"
    );
}

#[test]
fn a_stuck_engine_is_an_error_with_the_watchdogs_report() {
    let stuck = enzian(&[
        ("dma.stuck_after_doorbells", ParamValue::Int(1)),
        ("driver.timeout_us", ParamValue::Float(200.0)),
    ]);
    // xdma_invoke rings twice (H2C, then C2H): the second hangs.
    let Err(RunError::Workload { message }) = xdma(&stuck, 64.0) else {
        panic!("a stuck engine must fail the point");
    };
    let first = message.lines().next().unwrap();
    assert!(
        first.starts_with(
            "xdma_invoke: dma_driver: C2H transfer of 1 descriptors (64 bytes): timed out after 200.0 us"
        ),
        "{message}"
    );
    assert!(message.contains("HUNG: ignored the doorbell of channel C2H"));
    assert!(message.contains("dma channel C2H: busy"));
    assert!(message.contains("core: at op"));
    // Without a timeout, an interrupt wait drains the event queue: a
    // deadlock, reported as quickly.
    let no_timeout = enzian(&[("dma.stuck_after_doorbells", ParamValue::Int(1))]);
    let p = Params::new().with("completion", ParamValue::Str("interrupt".into()), "test");
    let Err(RunError::Workload { message }) = run_point(
        "xdma_invoke",
        &no_timeout,
        "message_bytes",
        64.0,
        &p,
        0,
        false,
    ) else {
        panic!("a stuck engine must fail the point");
    };
    assert!(
        message.starts_with(
            "xdma_invoke: no event left but the core's program did not finish (a deadlock)"
        ),
        "{message}"
    );
}

#[test]
fn a_stuck_engine_under_the_nic_is_an_error_with_the_report_too() {
    // The NIC's PCIe DMA design drives the engine through the driver; the
    // second doorbell (the first frame's C2H) hangs it, and the driver's
    // timeout ends the run with the report.
    let stuck = enzian(&[
        ("dma.stuck_after_doorbells", ParamValue::Int(1)),
        ("driver.timeout_us", ParamValue::Float(100.0)),
    ]);
    let p = Params::new()
        .with("design", ParamValue::Str("pcie_dma".into()), "test")
        .with("packets", ParamValue::Int(4), "test");
    let Err(RunError::Workload { message }) =
        run_point("nic_loopback", &stuck, "message_bytes", 64.0, &p, 0, false)
    else {
        panic!("a stuck engine must fail the point");
    };
    assert!(
        message.starts_with("nic_loopback: dma_driver: C2H transfer of 1 descriptors (64 bytes): timed out after 100.0 us"),
        "{message}"
    );
    assert!(message.contains("HUNG: ignored the doorbell"), "{message}");
    assert!(message.contains("root complex:"), "{message}");
}

#[test]
fn a_register_programmed_transfer_is_watched_by_the_drivers_timeout() {
    // The TaPaSCo-style path (CCIX's PCIe-DMA baseline) rings once, so
    // stuck_after_doorbells cannot hang it; the driver's program shows the
    // timeout armed at the doorbell (CONTROL) and disarmed after the wait,
    // as on the descriptor path.
    use ccsim_pcie::core::Op;
    use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
    let params = Params::new().with("timeout_us", ParamValue::Float(50.0), "test");
    let driver = DmaDriver::from_params(&params).unwrap();
    let layout = DriverLayout {
        bar0: 0x1000_0000,
        ring: 0x1000,
        writeback: 0x2000,
    };
    let t = Transfer {
        channel: 0,
        host: 0x4000,
        card: 0,
        len: 64,
    };
    let ops = driver.transfer_registers(&t, &layout, Completion::Poll, 0);
    let at = |f: &dyn Fn(&Op) -> bool| ops.iter().position(f).expect("present");
    let arm = at(
        &|o| matches!(o, Op::Arm { after, what } if *after == 50_000_000 && what.contains("register-programmed H2C transfer (64 bytes)")),
    );
    let poll = at(&|o| matches!(o, Op::PollU32 { .. }));
    let disarm = at(&|o| matches!(o, Op::Disarm));
    assert!(arm < poll && poll < disarm, "{ops:?}");
    assert!(
        matches!(ops[arm + 1], Op::MmioWrite { .. }),
        "the doorbell follows the arm: {ops:?}"
    );
    let quiet = DmaDriver::from_params(&Params::new()).unwrap();
    let ops = quiet.transfer_registers(&t, &layout, Completion::Poll, 0);
    assert!(!ops.iter().any(|o| matches!(o, Op::Arm { .. } | Op::Disarm)));
}
