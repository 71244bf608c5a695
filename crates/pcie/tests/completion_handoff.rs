//! The XDMA driver's completion hand-off (issue 13, the per-transfer cost
//! the Enzian XDMA path missed): the submitting thread sleeps in
//! `xdma_xfer_submit` and another kernel context completes the transfer and
//! wakes it. Each part is checked by count and by the time it adds, so a
//! part dropped or counted twice fails a test.

use ccsim_kernel::prelude::*;
use ccsim_pcie::core::Op;
use ccsim_pcie::dma::H2C;
use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
use ccsim_pcie::system::{PcieSystem, PcieSystemParams};

const RING: u64 = 0x1_0000_0000;
const WRITEBACK: u64 = 0x1_0010_0000;
const BUF: u64 = 0x2_0000_0000;
const WAKEUP: i64 = 2_000;
const SWITCH: i64 = 5_000;
const IRQ: i64 = 1_200;

/// The hand-off's parameters (the platforms' values), with `extra`
/// overriding.
fn driver(extra: &[(&str, ParamValue)]) -> DmaDriver {
    let mut p = Params::new()
        .with("handoff", ParamValue::Bool(true), "test")
        .with("wakeup_instructions", ParamValue::Int(WAKEUP), "test")
        .with(
            "context_switch_instructions",
            ParamValue::Int(SWITCH),
            "test",
        )
        .with("irq_instructions", ParamValue::Int(IRQ), "test")
        .with("irq_register_reads", ParamValue::Int(3), "test")
        .with("read_status", ParamValue::Bool(false), "test")
        .with("idle_exit_ns", ParamValue::Float(2000.0), "test");
    for (k, v) in extra {
        p.set(k, v.clone(), "test");
    }
    DmaDriver::from_params(&p).unwrap()
}

#[test]
fn the_completion_path_is_its_named_parts_in_each_mode() {
    let d = driver(&[]);
    let poll = d.completion_path(Completion::Poll);
    // Poll: the submitter wakes the poll thread, whose core leaves idle and
    // switches to it; the thread wakes the submitter, whose core leaves
    // idle and switches back. The write-back carries the count: no read.
    assert_eq!(
        (poll.wakeups, poll.context_switches, poll.idle_exits),
        (2, 2, 2)
    );
    assert_eq!(poll.register_reads, 0);
    assert_eq!(poll.instructions, (2 * WAKEUP + 2 * SWITCH) as u64);
    assert_eq!(poll.idle_exit_ns, 4000.0);
    // Interrupt: the submitter's switch to idle, the handler on the idle
    // core, the kworker hop and the submitter's wake-up; the handler's
    // flush read and engine_service's status_rc and descriptor count.
    let irq = d.completion_path(Completion::Interrupt);
    assert_eq!(
        (irq.wakeups, irq.context_switches, irq.idle_exits),
        (2, 3, 1)
    );
    assert_eq!(irq.register_reads, 3);
    assert_eq!(irq.instructions, (2 * WAKEUP + 3 * SWITCH + IRQ) as u64);
    // Off (the default), nothing but the handler and the status read.
    let off = DmaDriver::from_params(&Params::new()).unwrap();
    let p = off.completion_path(Completion::Poll);
    assert_eq!((p.wakeups, p.context_switches, p.idle_exits), (0, 0, 0));
    assert_eq!(p.register_reads, 1, "read_status defaults on");
}

fn placed(poll_thread: &str, irq: &str, extra: &[(&str, ParamValue)]) -> DmaDriver {
    let mut all = vec![
        ("poll_thread_core", ParamValue::Str(poll_thread.into())),
        ("irq_core", ParamValue::Str(irq.into())),
    ];
    all.extend(extra.iter().cloned());
    driver(&all)
}

/// (mode, poll thread's core, MSI-X's core, wake-ups, switches, idle
/// exits, register reads) on the path, as DmaDriver::completion_steps
/// derives them from libxdma.c and xdma_thread.c.
const PLACEMENTS: [(Completion, &str, &str, u64, u64, u64, u64); 4] = [
    (Completion::Poll, "other", "submitter", 2, 2, 2, 0),
    (Completion::Poll, "submitter", "submitter", 2, 2, 0, 0),
    (Completion::Interrupt, "other", "submitter", 2, 3, 1, 3),
    (Completion::Interrupt, "other", "other", 2, 2, 2, 3),
];

#[test]
fn each_placement_of_the_completing_context_has_its_named_parts() {
    for (mode, poll_thread, irq, wakeups, switches, exits, reads) in PLACEMENTS {
        let d = placed(poll_thread, irq, &[]);
        let path = d.completion_path(mode);
        let what = format!("{mode:?}, poll thread on {poll_thread}, MSI-X on {irq}");
        assert_eq!(
            (path.wakeups, path.context_switches, path.idle_exits),
            (wakeups, switches, exits),
            "{what}"
        );
        assert_eq!(path.register_reads, reads, "{what}");
        let handler = if mode == Completion::Interrupt {
            IRQ
        } else {
            0
        };
        assert_eq!(
            path.instructions,
            wakeups * WAKEUP as u64 + switches * SWITCH as u64 + handler as u64,
            "{what}"
        );
    }
    // The poll thread's core does not change the interrupt path, nor the
    // MSI-X's core the poll path.
    for mode in [Completion::Poll, Completion::Interrupt] {
        let a = placed("other", "submitter", &[]).completion_path(mode);
        let b = match mode {
            Completion::Poll => placed("other", "other", &[]),
            Completion::Interrupt => placed("submitter", "submitter", &[]),
        }
        .completion_path(mode);
        assert_eq!(a, b, "{mode:?}");
    }
}

#[test]
fn a_placement_nobody_offers_is_refused_with_its_name() {
    let mut p = Params::new();
    p.set("irq_core", ParamValue::Str("elsewhere".into()), "test");
    let err = DmaDriver::from_params(&p).unwrap_err();
    assert!(err.contains("irq_core"), "{err}");
}

/// The span of one 64-byte H2C transfer by `d` in `completion` mode.
fn transfer_ns(d: &DmaDriver, completion: Completion) -> (Tick, Tick) {
    let p = PcieSystemParams::default();
    let mut probe = PcieSystem::build(&p, vec![], 1, TraceMode::Off, |_, _| {}).unwrap();
    probe.sim.run();
    let layout = DriverLayout {
        bar0: probe.bar0,
        ring: RING,
        writeback: WRITEBACK,
    };
    let mut program = vec![Op::Mark(0)];
    program.extend(d.transfer(
        &[Transfer {
            channel: H2C,
            host: BUF,
            card: 0,
            len: 64,
        }],
        &layout,
        completion,
        0,
    ));
    program.push(Op::Mark(1));
    let mut sys = PcieSystem::build(&p, program, 1, TraceMode::Off, |h, _| {
        h.data.write(BUF, &[3u8; 64])
    })
    .unwrap();
    sys.sim.run();
    assert!(sys.core().finished());
    assert_eq!(sys.device_memory().data.read(0, 64), vec![3u8; 64]);
    let c = sys.core();
    (
        c.mark(1).unwrap() - c.mark(0).unwrap(),
        c.instructions_time(1),
    )
}

#[test]
fn each_idle_exit_and_each_context_switch_is_on_the_transfers_path() {
    // Switches long enough that the one beside the engine's work outlasts
    // it, so every part lands on the path: the differences are exact.
    let long = ("context_switch_instructions", ParamValue::Int(50_000));
    let longer = ("context_switch_instructions", ParamValue::Int(60_000));
    // Where the submitter's switch to idle is off the path (the MSI-X on
    // another core), the engine's work is beside nothing, so the test
    // holds there too.
    for (mode, poll_thread, irq, _, switches, exits, _) in PLACEMENTS {
        let what = format!("{mode:?}, poll thread on {poll_thread}, MSI-X on {irq}");
        let d = |extra: &[(&str, ParamValue)]| placed(poll_thread, irq, extra);
        let (base, per_instruction) = transfer_ns(&d(std::slice::from_ref(&long)), mode);
        let no_exit = ("idle_exit_ns", ParamValue::Float(0.0));
        let (without, _) = transfer_ns(&d(&[long.clone(), no_exit]), mode);
        assert_eq!(
            base - without,
            exits as Tick * 2_000_000,
            "{what}: 2 us per idle exit"
        );
        let (slower, _) = transfer_ns(&d(std::slice::from_ref(&longer)), mode);
        assert_eq!(
            slower - base,
            switches as Tick * 10_000 * per_instruction,
            "{what}: every switch on the path pays the extra 10,000 instructions"
        );
    }
}

#[test]
fn the_handoff_makes_a_transfer_slower_by_at_least_its_part_after_the_completion() {
    let on = driver(&[]);
    let off = driver(&[("handoff", ParamValue::Bool(false))]);
    for mode in [Completion::Poll, Completion::Interrupt] {
        let (with, per_instruction) = transfer_ns(&on, mode);
        let (without, _) = transfer_ns(&off, mode);
        // After the engine is done: one wake-up and one switch (the
        // submitter's), plus the kworker's in interrupt mode, plus the
        // submitter core's idle exit in poll mode.
        let after = match mode {
            Completion::Poll => (WAKEUP + SWITCH) as u64 * per_instruction + 2_000_000,
            Completion::Interrupt => 2 * (WAKEUP + SWITCH) as u64 * per_instruction + 2_000_000,
        };
        let all = on.completion_path(mode);
        let bound = all.instructions * per_instruction + (all.idle_exit_ns * 1000.0) as u64;
        assert!(
            with - without >= after && with - without <= bound,
            "{mode:?}: {} ps added, expected between {after} and {bound}",
            with - without
        );
    }
}
