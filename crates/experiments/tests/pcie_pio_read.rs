//! The PCIe PIO read on Enzian: one mechanism in the three experiments that
//! use it, and the paper's disagreement about what it costs (issue 13,
//! task pionic6).
//!
//! pio-pcie's invocation (PIO Figs. 2 and 7), pio-nic's PCIe PIO receive
//! (§6.3) and pio-timely's PCIe-PIO offload (Table 2) all read the FPGA
//! through the core's uncached 16-byte loads, one non-posted round trip at
//! a time. The public sources give the three reads nothing that would make
//! them cost differently: each maps the BAR from sysfs `resource0` (PIO
//! Fig. 3; skotti/timely-mirror timely_together testing_with_shim/
//! pci_shim.c:65-73; KireinaHoro/enzian-pio-nic 56e7a9a sw/pcie/core.c:70-78),
//! which Linux maps Device-nGnRE on arm64 (drivers/pci/mmap.c
//! pci_mmap_resource_range -> pgprot_device -> MT_DEVICE_nGnRE); each loads
//! 128 bits at a time, the ThunderX-1's peripheral bus width (§4); the
//! invocation and the Timely wrapper put a DMB after every read
//! (`__sync_synchronize`, Fig. 3; `fence(SeqCst)`, pcie_64.rs:56-57 and
//! 311-318), the NIC's memcpy none (sw/pcie/pionic-test.c:83), and §6.3's
//! own bound leaves no room for more than one read in flight. So the model
//! gives them one cost, calibrated on §4's "about 1 us" (`rc.latency_ns`),
//! and the first test pins that. The second pins the contradiction the
//! three experiments' notes document: read through the Enzian wrapper's
//! loads, Table 2's PCIe-PIO slope asks for a read well outside §4's band,
//! and the same read would still meet §6.3's "over 350 us for 8 KiB". When
//! a sourced mechanism or a new calibration removes the contradiction, that
//! test fails and the notes and claims must be revisited with it.

use ccsim_experiments::{run_point, PointResult};
use ccsim_kernel::component::{ParamValue, Params};
use ccsim_platform::Platform;

fn enzian() -> Platform {
    Platform::load("enzian").unwrap()
}

/// pio-pcie's series `pio_read_enzian` at `bytes`.
fn invocation(bytes: f64) -> PointResult {
    let p = Params::new().with("write_combining", ParamValue::Bool(true), "test");
    run_point(
        "pio_invoke",
        &enzian(),
        "message_bytes",
        bytes,
        &p,
        0,
        false,
    )
    .unwrap()
}

/// pio-nic's PCIe PIO design, `packets` frames of `bytes`.
fn nic_receive(bytes: f64, packets: i64) -> PointResult {
    let p = Params::new()
        .with("design", ParamValue::Str("pcie_pio".into()), "test")
        .with("packets", ParamValue::Int(packets), "test");
    run_point(
        "nic_loopback",
        &enzian(),
        "message_bytes",
        bytes,
        &p,
        1,
        false,
    )
    .unwrap()
}

/// pio-timely's series `pcie_pio`: the Enzian wrapper, a data run and a
/// data-less progress run a batch.
fn timely_pio(bytes: f64) -> PointResult {
    let p = Params::new()
        .with("path", ParamValue::Str("pcie_pio".into()), "test")
        .with("wrapper_layout", ParamValue::Str("enzian".into()), "test")
        .with("progress_runs", ParamValue::Int(1), "test");
    run_point("pio_timely", &enzian(), "batch_bytes", bytes, &p, 2, false).unwrap()
}

/// The median round trip of one uncached read piece, as the core saw it.
fn read_p50(r: &PointResult) -> f64 {
    r.stats["system.core.mmio_read_ns.p50"]
}

#[test]
fn one_16_byte_read_costs_the_same_in_the_three_experiments() {
    let inv = invocation(1024.0);
    let nic = nic_receive(1024.0, 2);
    let timely = timely_pio(1024.0);
    let reads = [read_p50(&inv), read_p50(&nic), read_p50(&timely)];
    // §4's calibration: about 1 us a 16-byte read (pio-pcie, within 5%).
    let single = invocation(16.0).metrics["read_ns"];
    assert!((single - 1000.0).abs() < 50.0, "16-byte read {single} ns");
    // Same mapping, width and one read in flight: the same round trip,
    // up to the clock phases of the three systems.
    for r in reads {
        assert!(
            (r - reads[0]).abs() / reads[0] < 0.01,
            "invocation / NIC / Timely reads: {reads:?} ns"
        );
    }
}

#[test]
fn table_2s_pcie_pio_slope_asks_for_a_shorter_read_than_section_4s() {
    // The read the model pays, and how many of them each batch byte costs
    // (the core's count at two batch sizes; every batch is two runs, the
    // wrapper's data run and its data-less progress run, and the count is
    // one run's).
    let (small, big) = (timely_pio(4096.0), timely_pio(32768.0));
    let read = read_p50(&big);
    let dx = 32768.0 - 4096.0;
    let reads_per_byte = 2.0
        * (big.stats["system.core.mmio_read_msgs"] - small.stats["system.core.mmio_read_msgs"])
        / dx;
    let slope = (big.metrics["latency_ns"] - small.metrics["latency_ns"]) / dx;
    // Everything but the reads kept as modelled, the read Table 2's
    // PCIe-PIO slope (88 ns/B) asks for.
    let others = slope - reads_per_byte * read;
    let table_2_read = (88.0 - others) / reads_per_byte;
    // No read within 5% of §4's "about 1 us" gives Table 2's slope, and the
    // model's read (calibrated there) misses it by more than the 5% goal.
    assert!(
        table_2_read < 0.95 * 1000.0,
        "Table 2 asks for {table_2_read:.0} ns a read ({slope:.1} ns/B at {read:.0} ns)"
    );
    assert!(
        (read - table_2_read) / table_2_read > 0.05,
        "the model's {read:.0} ns read now gives Table 2's slope ({table_2_read:.0} ns): \
         revisit the notes of pio-pcie, pio-nic and pio-timely"
    );
    // §6.3: "over 350 us for 8 KiB packets". The shortest read the bound
    // allows: the frame's 512 reads of 16 bytes, the rest of the receive
    // (the status poll, the NIC's own latency) kept as modelled.
    let nic = nic_receive(8192.0, 2);
    let frame_reads = 8192.0 / 16.0;
    let rest = nic.metrics["rx_p50_ns"] - frame_reads * read_p50(&nic);
    let shortest = (350_000.0 - rest) / frame_reads;
    assert!(
        table_2_read > 0.95 * shortest,
        "Table 2's read {table_2_read:.0} ns against §6.3's shortest {shortest:.0} ns"
    );
}
