//! The `cxl_flexbus` link on its own: slot packing arithmetic, exact flit
//! timing, credits that block one class and not the others, and the
//! weighted round-robin arbiter's share of a saturated wire.

use std::sync::Arc;

use ccsim_coherence::agents::{ProtocolSystem, SystemRef};
use ccsim_coherence::envelope::{CohMsg, Msg, Tlp, TlpKind};
use ccsim_kernel::prelude::*;
use ccsim_pcie::flexbus::{cachemem_wire, slots_of_coherent, slots_of_tlp, FlexBus, CACHE, IO};
use ccsim_pcie::tlp::{Generation, LinkConfig};

static SOURCE: ComponentSpec = ComponentSpec {
    type_name: "test_source",
    description: "Sends its messages at tick 0: TLPs on `io`, coherent ones on `cm`.",
    params: &[],
    ports: &[
        PortSpec {
            name: "io",
            description: "TLPs out.",
            required: true,
        },
        PortSpec {
            name: "cm",
            description: "Coherent messages out.",
            required: true,
        },
    ],
    stats: &[],
    check: None,
};

static SINK: ComponentSpec = ComponentSpec {
    type_name: "test_sink",
    description: "Records when each message arrives.",
    params: &[],
    ports: &[
        PortSpec {
            name: "io",
            description: "TLPs in.",
            required: true,
        },
        PortSpec {
            name: "cm",
            description: "Coherent messages in.",
            required: true,
        },
    ],
    stats: &[],
    check: None,
};

struct Source(Vec<Msg>);

impl Component<Msg> for Source {
    fn spec(&self) -> &'static ComponentSpec {
        &SOURCE
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        for m in std::mem::take(&mut self.0) {
            let port = if matches!(m, Msg::Tlp(_)) { 0 } else { 1 };
            ctx.send(port, m, 0, 0);
        }
    }
    fn on_message(&mut self, _: PortId, _: Msg, _: &mut Ctx<'_, Msg>) {}
}

/// Arrivals: (tick, label).
struct Sink(Vec<(Tick, String)>);

impl Component<Msg> for Sink {
    fn spec(&self) -> &'static ComponentSpec {
        &SINK
    }
    fn on_message(&mut self, _: PortId, m: Msg, ctx: &mut Ctx<'_, Msg>) {
        let label = match &m {
            Msg::Tlp(t) => format!("{:?}", t.kind),
            Msg::Coh(c) => c.name().to_string(),
            other => format!("{other:?}"),
        };
        self.0.push((ctx.now(), label));
    }
}

fn io_config() -> LinkConfig {
    let mut c = LinkConfig::new(Generation::Gen5, 16);
    c.mps = 512;
    c
}

fn cxl_cache() -> SystemRef {
    let agents = [("core0", "core"), ("llc", "home"), ("dcoh", "device")]
        .iter()
        .map(|(a, r)| (a.to_string(), r.to_string()))
        .collect();
    Arc::new(ProtocolSystem::new("cxl-cache", agents, 64, 16).unwrap())
}

/// A coherent message `name` of `sys` about `line`, with a line of data
/// if the message carries one.
fn coh(sys: &SystemRef, name: &str, line: u64) -> Msg {
    let i = sys
        .protocol
        .msgs
        .iter()
        .position(|m| m.name == name)
        .unwrap() as u16;
    let data = sys.protocol.msgs[i as usize]
        .data
        .then(|| ccsim_coherence::boxed_line(sys.initial_value(line)));
    Msg::Coh(CohMsg::new(sys.catalogue, i, line, data))
}

/// Host-side source, link, device-side sink; `params` overrides the
/// link's defaults.
fn run(
    params: &[(&str, i64)],
    msgs: Vec<Msg>,
    until: Option<Tick>,
) -> (Vec<(Tick, String)>, FlexBus) {
    let sys = cxl_cache();
    let mut p = Params::new();
    for (k, v) in params {
        p.set(k, ParamValue::Int(*v), "test");
    }
    p.set("io_latency_ns", ParamValue::Float(100.0), "test");
    p.set("cachemem_latency_ns", ParamValue::Float(20.0), "test");
    let mut link = FlexBus::from_params(&p, io_config()).unwrap();
    link.set_cachemem(sys.clone(), false);
    let mut b = SystemBuilder::<Msg>::new("t", 1);
    let s = b.add("source", Source(msgs));
    let l = b.add("link", link);
    let k = b.add("sink", Sink(Vec::new()));
    let wire = || LinkParams::symmetric(0, 0.0);
    b.connect(s, "io", l, "io_host", wire());
    b.connect(s, "cm", l, "cachemem_host", cachemem_wire());
    b.connect(l, "io_device", k, "io", wire());
    b.connect(l, "cachemem_device", k, "cm", cachemem_wire());
    let mut sim = b.build().unwrap();
    match until {
        Some(t) => {
            sim.run_until(t);
        }
        None => {
            sim.run();
        }
    }
    let arrivals = sim.component::<Sink>(k).unwrap().0.clone();
    let link = sim.component_mut::<FlexBus>(l).unwrap();
    let link = std::mem::replace(
        link,
        FlexBus::from_params(&Params::new(), io_config()).unwrap(),
    );
    (arrivals, link)
}

#[test]
fn a_line_is_a_header_slot_and_four_data_slots() {
    assert_eq!(slots_of_coherent(true, 64, 16), 5);
    assert_eq!(slots_of_coherent(false, 64, 16), 1);
    let cfg = io_config();
    // MWr of 64 B to a 64-bit address: 8 B framing/seq/LCRC + 16 B header
    // + 64 B = 88 B = 6 slots.
    assert_eq!(slots_of_tlp(&cfg, TlpKind::MemWrite, 64, true, 16), 6);
    // MRd, 64-bit: 8 + 16 = 24 B = 2 slots.
    assert_eq!(slots_of_tlp(&cfg, TlpKind::MemRead, 512, true, 16), 2);
    // A 512 B completion: 8 + 12 + 512 = 532 B = 34 slots (8.5 flits).
    assert_eq!(slots_of_tlp(&cfg, TlpKind::CplD, 512, false, 16), 34);
}

#[test]
fn a_flit_takes_68_bytes_at_32_gts_x16() {
    let link = FlexBus::from_params(&Params::new(), io_config()).unwrap();
    // 68 B x 8 bits / (32 Gb/s x 16 lanes x 128/130) = 1.0791 ns.
    assert_eq!(link.flit_ps(), 1079);
    let mut p = Params::new();
    p.set("lanes", ParamValue::Int(8), "test");
    assert_eq!(
        FlexBus::from_params(&p, io_config()).unwrap().flit_ps(),
        2158
    );
}

#[test]
fn a_message_arrives_after_its_last_flit_and_its_channel_latency() {
    let sys = cxl_cache();
    // A 64 B MWr is 6 slots: two flits, then 100 ns of CXL.io latency.
    let (a, _) = run(&[], vec![Msg::tlp(Tlp::write(1 << 32, vec![7; 64]))], None);
    assert_eq!(a, vec![(2 * 1079 + 100_000, "MemWrite".to_string())]);
    // GO_S (no data) is one slot: one flit, then 20 ns of CXL.cachemem.
    let (a, _) = run(&[], vec![coh(&sys, "GO_S", 3)], None);
    assert_eq!(a, vec![(1079 + 20_000, "GO_S".to_string())]);
    // Two data messages: 10 slots in three flits; the first ends in flit 2.
    let (a, link) = run(
        &[],
        vec![coh(&sys, "H2DData", 3), coh(&sys, "H2DData", 4)],
        None,
    );
    assert_eq!(a[0].0, 2 * 1079 + 20_000);
    assert_eq!(a[1].0, 3 * 1079 + 20_000);
    assert_eq!(link.flits[0][CACHE], 3);
}

#[test]
fn credits_block_their_class_and_nothing_else() {
    let sys = cxl_cache();
    // One non-posted credit, back 1 us after use: the second read waits
    // for it; the posted writes and the CXL.cache messages do not.
    let params = [("io_nonposted_credits", 1), ("credit_return_ns", 1000)];
    let msgs = vec![
        Msg::tlp(Tlp::read(1 << 32, 64, 1)),
        Msg::tlp(Tlp::read(1 << 32, 64, 2)),
        Msg::tlp(Tlp::write(1 << 32, vec![1; 64])),
        coh(&sys, "GO_S", 1),
        Msg::tlp(Tlp::write(1 << 32, vec![2; 64])),
    ];
    let (a, _) = run(&params, msgs, None);
    let at = |label: &str| -> Vec<Tick> {
        a.iter()
            .filter(|(_, l)| l == label)
            .map(|(t, _)| *t)
            .collect()
    };
    let reads = at("MemRead");
    let writes = at("MemWrite");
    assert_eq!(reads.len(), 2);
    assert!(reads[0] < 110_000, "{reads:?}");
    // The second read goes when the credit is back: 1 us after the first
    // read's flit.
    assert!(reads[1] > 1_000_000 + 100_000, "{reads:?}");
    assert!(writes.iter().all(|&t| t < 110_000), "{writes:?}");
    assert!(at("GO_S")[0] < 30_000);
    // Without the limit every read is through in the first few flits.
    let (a, _) = run(
        &[],
        vec![
            Msg::tlp(Tlp::read(1 << 32, 64, 1)),
            Msg::tlp(Tlp::read(1 << 32, 64, 2)),
        ],
        None,
    );
    assert!(a.iter().all(|(t, _)| *t < 110_000));
}

#[test]
fn cache_data_credits_do_not_hold_cache_responses() {
    let sys = cxl_cache();
    let params = [("cache_data_credits", 1), ("credit_return_ns", 1000)];
    let msgs = vec![
        coh(&sys, "H2DData", 1),
        coh(&sys, "H2DData", 2),
        coh(&sys, "GO_S", 3),
    ];
    let (a, _) = run(&params, msgs, None);
    let go = a.iter().find(|(_, l)| l == "GO_S").unwrap().0;
    let data: Vec<Tick> = a
        .iter()
        .filter(|(_, l)| l == "H2DData")
        .map(|(t, _)| *t)
        .collect();
    assert!(go < 30_000, "GO_S at {go}");
    assert!(data[0] < 30_000 && data[1] > 1_000_000, "{data:?}");
}

#[test]
fn a_completion_never_passes_an_earlier_posted_write() {
    // A posted write held for credit holds the completion queued behind
    // it (PCIe ordering); the write queued after the completion may not
    // pass the held write either (it is the same FIFO).
    let params = [("io_posted_credits", 1), ("credit_return_ns", 1000)];
    let msgs = vec![
        Msg::tlp(Tlp::write(1 << 32, vec![1; 64])),
        Msg::tlp(Tlp::write(1 << 32, vec![2; 64])),
        Msg::tlp(Tlp::completion(1, 0, 64, vec![3; 64])),
    ];
    let (a, _) = run(&params, msgs, None);
    let labels: Vec<&str> = a.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(labels, ["MemWrite", "MemWrite", "CplD"]);
    assert!(a[2].0 > a[1].0);
}

#[test]
fn the_arbiter_shares_a_saturated_wire_by_its_weights() {
    let sys = cxl_cache();
    // Both channels backlogged far beyond the window measured: 400 MWr of
    // 512 B (34 slots each) and 2,000 lines of data (5 slots each).
    let mut msgs: Vec<Msg> = (0..400)
        .map(|i| Msg::tlp(Tlp::write((1 << 32) + i * 512, vec![0; 512])))
        .collect();
    msgs.extend((0..2000).map(|l| coh(&sys, "H2DData", l)));
    for (io_w, cache_w) in [(1, 1), (1, 3), (4, 1)] {
        let params = [("io_weight", io_w), ("cache_weight", cache_w)];
        // 2,000 flits' time: both channels still have work.
        let (_, link) = run(&params, msgs.clone(), Some(2000 * 1079));
        let f = link.flits[0];
        let total = (f[IO] + f[CACHE]) as f64;
        let share = f[CACHE] as f64 / total;
        let want = cache_w as f64 / (io_w + cache_w) as f64;
        assert!(
            (share - want).abs() < 0.005,
            "weights {io_w}:{cache_w}: cache share {share}, flits {f:?}"
        );
        assert!(
            total >= 1999.0,
            "the wire never idles while both have work: {f:?}"
        );
    }
}

#[test]
fn an_idle_channel_gives_its_turns_away() {
    // Weights 1:8 but only CXL.io has work: it gets every flit.
    let msgs: Vec<Msg> = (0..50)
        .map(|i| Msg::tlp(Tlp::write((1 << 32) + i * 512, vec![0; 512])))
        .collect();
    let (a, link) = run(&[("io_weight", 1), ("cache_weight", 8)], msgs, None);
    assert_eq!(a.len(), 50);
    // 50 x 34 slots = 1,700 slots = 425 flits back to back (a TLP starts in the flit the previous one ended in).
    assert_eq!(link.flits[0][IO], 425);
    assert_eq!(a[49].0, 425 * 1079 + 100_000);
}

#[test]
fn cxl_mem_messages_take_their_own_channel_and_flits() {
    let mem = Arc::new(
        ProtocolSystem::new(
            "cxl-mem",
            vec![("host".into(), "host".into()), ("mc".into(), "mc".into())],
            64,
            16,
        )
        .unwrap(),
    );
    let mut link = FlexBus::from_params(&Params::new(), io_config()).unwrap();
    link.set_cachemem(mem.clone(), true);
    let mut b = SystemBuilder::<Msg>::new("t", 1);
    let s = b.add(
        "source",
        Source(vec![coh(&mem, "MemRd", 1), coh(&mem, "MemWr", 2)]),
    );
    let l = b.add("link", link);
    let k = b.add("sink", Sink(Vec::new()));
    b.connect(s, "io", l, "io_host", LinkParams::symmetric(0, 0.0));
    b.connect(s, "cm", l, "cachemem_host", cachemem_wire());
    b.connect(l, "io_device", k, "io", LinkParams::symmetric(0, 0.0));
    b.connect(l, "cachemem_device", k, "cm", cachemem_wire());
    let mut sim = b.build().unwrap();
    sim.run();
    let link = sim.component::<FlexBus>(l).unwrap();
    // MemRd (1 slot) and MemWr (header + 4 data slots): 6 slots, 2 flits,
    // all of them CXL.mem's.
    assert_eq!(link.flits[0], [0, 0, 2]);
    assert_eq!(sim.component::<Sink>(k).unwrap().0.len(), 2);
}

#[test]
fn a_snoop_never_passes_a_go_for_its_line_held_for_credit() {
    // CXL.cache's H2D requests are ordered after H2D responses for the same
    // line (`ordered_after` in protocols/cxl-cache.toml): with one response
    // credit, the GO for line 2 waits for the credit, the snoop of line 2
    // waits behind it, and the snoop of line 3 (ahead of it in the request
    // queue, which is FIFO) goes at once.
    let sys = cxl_cache();
    let params = [("cache_rsp_credits", 1), ("credit_return_ns", 1000)];
    let msgs = vec![
        coh(&sys, "GO_S", 1),
        coh(&sys, "GO_S", 2),
        coh(&sys, "SnpInv", 3),
        coh(&sys, "SnpInv", 2),
    ];
    let (a, _) = run(&params, msgs, None);
    let order: Vec<&str> = a.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(order, ["GO_S", "SnpInv", "GO_S", "SnpInv"], "{a:?}");
    // The early snoop is line 3's, within the first flits.
    assert!(a[1].0 < 30_000, "{a:?}");
    // Line 2's GO after the credit's return, its snoop behind it.
    assert!(a[2].0 > 1_000_000 && a[3].0 >= a[2].0, "{a:?}");
}
