//! Faults in the PCIe fabric (issue 19, item 5): LCRC errors replayed after
//! a NAK, lost UpdateFC DLLPs healed by the UpdateFC timer, and a hung DMA
//! engine that ends in the driver's timeout with a readable report.

use ccsim_coherence::envelope::Msg;
use ccsim_kernel::prelude::*;
use ccsim_pcie::driver::{Completion, DmaDriver, DriverLayout, Transfer};
use ccsim_pcie::link::{replays_of, PcieLink};
use ccsim_pcie::ping::{TlpEcho, TlpPinger};
use ccsim_pcie::system::{PcieSystem, PcieSystemParams};

/// Gen3 x8, 100 ns, no ACK/UpdateFC accounting unless asked: the numbers
/// below are computed by hand for it.
fn link_params(extra: &[(&str, ParamValue)]) -> Params {
    let mut p = Params::new()
        .with("generation", ParamValue::Int(3), "test")
        .with("lanes", ParamValue::Int(8), "test")
        .with("latency_ns", ParamValue::Float(100.0), "test")
        .with("ack_every_tlps", ParamValue::Int(0), "test")
        .with("update_fc_every_tlps", ParamValue::Int(0), "test");
    for (k, v) in extra {
        p.set(k, v.clone(), "test");
    }
    p
}

/// Pings `len` bytes at a 64-bit address through a link built from
/// `params`; returns the echo times and the link's fault counts.
fn ping(params: &Params, len: usize, seed: u64) -> (Vec<Tick>, ccsim_pcie::link::LinkFaults) {
    let link = PcieLink::from_params(params).unwrap();
    let cfg = link.config.clone();
    let data: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
    let mut b = SystemBuilder::<Msg>::new("system", seed);
    let p = b.add("pinger", TlpPinger::new(&cfg, 0x1_0000_0000, &data));
    let l = b.add("pcie", link);
    let e = b.add("echo", TlpEcho);
    b.connect(p, "io", l, "up", LinkParams::symmetric(0, 0.0));
    b.connect(l, "down", e, "io", LinkParams::symmetric(0, 0.0));
    let mut sim = b.build().unwrap();
    sim.run();
    let pinger = sim.component::<TlpPinger>(p).unwrap();
    let got: Vec<u8> = pinger
        .echoes
        .iter()
        .flat_map(|(_, t)| t.data.clone())
        .collect();
    assert_eq!(got, data, "every byte comes back, faults or not");
    let times = pinger.echoes.iter().map(|(t, _)| *t).collect();
    (times, sim.component::<PcieLink>(l).unwrap().faults)
}

// One 256 B write to a 64-bit address: 280 wire bytes, ceil(280 * 8 * 130
// / 128 / 64 Gb/s) = 35,547 ps; a DLLP (8 B) 1,016 ps; latency 100 ns.
const SER_TLP: Tick = 35_547;
const SER_DLLP: Tick = 1_016;
const LATENCY: Tick = 100_000;

#[test]
fn the_replay_count_is_geometric_in_one_uniform_and_monotone_in_the_rate() {
    // p = 1 - (1 - ber)^bits = 1/2 exactly enough for floor(ln u / ln p):
    // u = 0.8 leaves 0.2 = 2^-2.32, so two failed transmissions.
    let bits = 1000;
    let ber = 1.0 - 0.5f64.powf(1.0 / bits as f64);
    assert_eq!(replays_of(ber, bits, 0.8), 2);
    assert_eq!(replays_of(ber, bits, 0.4), 0, "1 - 0.4 > p: first try");
    assert_eq!(replays_of(0.0, bits, 0.999), 0, "an error-free link");
    // A fixed uniform never gives fewer replays at a higher rate.
    for u in [0.1, 0.5, 0.9, 0.99, 0.999_9] {
        let counts: Vec<u64> = [0.0, 1e-7, 1e-6, 1e-5, 3e-5, 1e-4]
            .iter()
            .map(|&b| replays_of(b, 2_275, u))
            .collect();
        assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{u}: {counts:?}");
    }
}

#[test]
fn each_replay_costs_the_nak_flight_and_the_retransmission() {
    let base = 2 * SER_TLP + 2 * LATENCY;
    let (clean, f) = ping(&link_params(&[]), 256, 1);
    assert_eq!((clean[0], f.replays), (base, 0));
    // At 1e-5 a 280 B TLP (2,275 wire bits) fails 2.25 % of the time.
    let rate = link_params(&[("bit_error_rate", ParamValue::Float(1e-5))]);
    let per_replay = SER_TLP + 2 * LATENCY + SER_DLLP;
    let (mut replays, mut seeds_with_replays) = (0, 0);
    let seeds = 2_000;
    for seed in 0..seeds {
        let (t, f) = ping(&rate, 256, seed);
        // Down and up TLPs are the same size: every replay, in either
        // direction, adds the same time to the round trip.
        assert_eq!(t[0], base + f.replays * per_replay, "seed {seed}");
        assert_eq!(f.replay_ps, f.replays * per_replay, "seed {seed}");
        replays += f.replays;
        seeds_with_replays += (f.replays > 0) as u64;
    }
    // Expected replays per TLP p / (1 - p) = 0.0230; 4,000 TLPs: 92, with a
    // standard deviation of about 9.7.
    let p = 1.0 - (1.0f64 - 1e-5).powi(2_275);
    let expected = 2.0 * seeds as f64 * p / (1.0 - p);
    assert!(
        (replays as f64 - expected).abs() < 5.0 * expected.sqrt(),
        "{replays} replays, expected {expected:.1}"
    );
    assert!(seeds_with_replays > 0);
}

#[test]
fn replays_cost_time_monotonically_in_the_error_rate() {
    // A 64 KiB burst (256 TLPs each way) at one seed: the link draws one
    // uniform per TLP in the same order at every rate.
    let mut last = (0, 0);
    for ber in [0.0, 1e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4] {
        let (t, f) = ping(
            &link_params(&[("bit_error_rate", ParamValue::Float(ber))]),
            65_536,
            7,
        );
        let done = *t.last().unwrap();
        assert!(
            done >= last.0 && f.replays >= last.1,
            "{ber}: {done} ps, {} replays after {last:?}",
            f.replays
        );
        last = (done, f.replays);
    }
    let (clean, _) = ping(&link_params(&[]), 65_536, 7);
    assert!(last.1 > 100, "1e-4 replays many of 512 TLPs: {}", last.1);
    assert!(last.0 > *clean.last().unwrap() + last.1 * SER_TLP);
}

/// Receives TLPs and records when (no traffic back, so only one direction's
/// UpdateFCs exist).
struct Sink(Vec<Tick>);

static SINK: ComponentSpec = ComponentSpec {
    type_name: "tlp_sink",
    description: "Records TLP arrivals.",
    params: &[],
    ports: &[PortSpec {
        name: "io",
        description: "TLPs in.",
        required: true,
    }],
    stats: &[],
    check: None,
};

impl Component<Msg> for Sink {
    fn spec(&self) -> &'static ComponentSpec {
        &SINK
    }
    fn on_message(&mut self, _: PortId, _: Msg, ctx: &mut Ctx<'_, Msg>) {
        self.0.push(ctx.now());
    }
}

fn send_to_sink(
    params: &Params,
    tlps: usize,
    seed: u64,
) -> (Vec<Tick>, ccsim_pcie::link::LinkFaults) {
    let link = PcieLink::from_params(params).unwrap();
    let cfg = link.config.clone();
    let data = vec![0x5A; 256 * tlps];
    let mut b = SystemBuilder::<Msg>::new("system", seed);
    let p = b.add("pinger", TlpPinger::new(&cfg, 0x1_0000_0000, &data));
    let l = b.add("pcie", link);
    let s = b.add("sink", Sink(Vec::new()));
    b.connect(p, "io", l, "up", LinkParams::symmetric(0, 0.0));
    b.connect(l, "down", s, "io", LinkParams::symmetric(0, 0.0));
    let mut sim = b.build().unwrap();
    assert_eq!(sim.run_until(SEC), RunOutcome::Drained, "no hang");
    let times = sim.component::<Sink>(s).unwrap().0.clone();
    (times, sim.component::<PcieLink>(l).unwrap().faults)
}

#[test]
fn a_lost_update_fc_is_healed_by_the_timer() {
    // One credit, an UpdateFC per TLP: the second TLP waits for the first
    // one's UpdateFC: ser + latency there, ser(DLLP) + latency back.
    let one_credit = |loss: f64| {
        link_params(&[
            ("header_credits", ParamValue::Int(1)),
            ("update_fc_every_tlps", ParamValue::Int(1)),
            ("update_fc_loss_probability", ParamValue::Float(loss)),
        ])
    };
    let (t, f) = send_to_sink(&one_credit(0.0), 2, 0);
    let credit_round = SER_DLLP + LATENCY + SER_TLP + LATENCY;
    assert_eq!(t, vec![SER_TLP + LATENCY, SER_TLP + LATENCY + credit_round]);
    assert_eq!((f.credit_stalls, f.update_fc_lost), (1, 0));
    // With losses, each lost UpdateFC before the second TLP costs one timer
    // period (30 us) more: the gap is the credit round plus k periods.
    let timer = 30 * US;
    let mut healed = 0;
    for seed in 0..40 {
        let (t, f) = send_to_sink(&one_credit(0.6), 2, seed);
        assert_eq!(t.len(), 2, "seed {seed}: the second TLP got through");
        let extra = t[1] - t[0] - credit_round;
        assert_eq!(extra % timer, 0, "seed {seed}: {extra} ps");
        let k = extra / timer;
        assert!(
            k <= f.update_fc_lost && k <= f.update_fc_timer,
            "seed {seed}"
        );
        healed += (k > 0) as u32;
    }
    assert!(healed > 5, "losses at 0.6 must delay some seeds: {healed}");
}

#[test]
fn lost_credits_recover_under_a_burst() {
    let params = |loss: f64| {
        link_params(&[
            ("header_credits", ParamValue::Int(4)),
            ("update_fc_every_tlps", ParamValue::Int(2)),
            ("update_fc_loss_probability", ParamValue::Float(loss)),
        ])
    };
    let (clean, f0) = ping(&params(0.0), 16_384, 3);
    assert_eq!(f0.update_fc_lost, 0);
    assert!(f0.credit_stalls > 0, "4 credits throttle a 64-TLP burst");
    let (lossy, f) = ping(&params(0.3), 16_384, 3);
    assert!(f.update_fc_lost > 0 && f.update_fc_timer > 0, "{f:?}");
    assert!(lossy.last() > clean.last(), "lost credits cost time");
}

#[test]
fn contradictory_fault_parameters_are_refused() {
    let err = PcieLink::from_params(&link_params(&[(
        "update_fc_loss_probability",
        ParamValue::Float(0.1),
    )]))
    .err()
    .unwrap();
    assert!(err.contains("set header_credits"), "{err}");
    let err = PcieLink::from_params(&link_params(&[("header_credits", ParamValue::Int(4))]))
        .err()
        .unwrap();
    assert!(
        err.contains("update_fc_every_tlps: must be from 1 to"),
        "{err}"
    );
}

/// Two H2C transfers (two doorbells) on an engine that hangs after the
/// first, the driver waiting with a 50 us timeout.
fn stuck_system(completion: Completion, timeout_us: f64) -> PcieSystem {
    let driver = DmaDriver::from_params(&Params::new().with(
        "timeout_us",
        ParamValue::Float(timeout_us),
        "test",
    ))
    .unwrap();
    let layout = DriverLayout {
        bar0: 0xF000_0000,
        ring: 0x1_0000_0000,
        writeback: 0x1_0000_F000,
    };
    let t = |card| Transfer {
        channel: ccsim_pcie::dma::H2C,
        host: 0x2_0000_0000,
        card,
        len: 4096,
    };
    let mut program = driver.transfer(&[t(0)], &layout, completion, 0);
    program.extend(driver.transfer(&[t(0x1000)], &layout, completion, 0));
    let p = PcieSystemParams {
        xdma_engine: Params::new().with("stuck_after_doorbells", ParamValue::Int(1), "test"),
        ..Default::default()
    };
    PcieSystem::build(&p, program, 1, TraceMode::Off, |_, _| {}).unwrap()
}

#[test]
fn a_stuck_engine_ends_in_the_driver_timeout_with_a_report() {
    let mut sys = stuck_system(Completion::Poll, 50.0);
    // Stopped by the core's watchdog, long before the time limit.
    assert_eq!(sys.sim.run_until(SEC), RunOutcome::Stopped);
    assert!(sys.sim.now() < 100 * US, "{}", sys.sim.now());
    let core = sys.core();
    assert!(!core.finished());
    let why = core.timed_out.clone().expect("the driver timed out");
    assert!(
        why.starts_with(
            "dma_driver: H2C transfer of 1 descriptors (4096 bytes): timed out after 50.0 us"
        ),
        "{why}"
    );
    let (ch, _) = sys.engine().hung().expect("the engine hung");
    assert_eq!(ch, ccsim_pcie::dma::H2C);
    let report = sys.stuck_report().join("\n");
    println!("{why}\n{report}");
    for want in [
        "core: at op",
        "PollU32",
        "root complex: 0 MMIO reads outstanding",
        "dma engine: 2 doorbells received",
        "HUNG: ignored the doorbell of channel H2C",
        "stuck_after_doorbells = 1",
        "dma channel H2C: busy, registers ask for 1 descriptors at 0x100000000",
        "pcie link down (root complex -> device): 0 TLPs on the wire",
        "messages between components:",
    ] {
        assert!(report.contains(want), "missing {want:?} in:\n{report}");
    }
    // The first transfer went through, the second never started.
    assert_eq!(sys.engine().done_times(ccsim_pcie::dma::H2C).len(), 1);
    assert_eq!(sys.sim.stats().counter("system.dma.descriptors"), Some(1));
}

#[test]
fn a_stuck_engine_without_a_timeout_drains_when_waiting_for_an_interrupt() {
    let mut sys = stuck_system(Completion::Interrupt, 0.0);
    // Nothing left to happen: the run ends by itself, not by a time limit.
    assert_eq!(sys.sim.run_until(SEC), RunOutcome::Drained);
    assert!(sys.core().timed_out.is_none() && !sys.core().finished());
    let report = sys.stuck_report().join("\n");
    assert!(report.contains("Sleeping(0)"), "{report}");
}
