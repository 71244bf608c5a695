//! Kernel behaviour seen from outside: exact link timing, credit flow
//! control, determinism of traces, the builder's error messages, deferred
//! wake-ups and local messages.

use ccsim_kernel::prelude::*;

mod common;
use common::Packet;

static SOURCE: ComponentSpec = ComponentSpec {
    type_name: "test_source",
    description: "Sends a scripted list of packets at tick 0 (or after random gaps).",
    params: &[],
    ports: &[PortSpec {
        name: "out",
        description: "Packets out.",
        required: true,
    }],
    stats: &[],
    check: None,
};

static SINK: ComponentSpec = ComponentSpec {
    type_name: "test_sink",
    description: "Records the arrival tick of every packet.",
    params: &[],
    ports: &[PortSpec {
        name: "in",
        description: "Packets in.",
        required: true,
    }],
    stats: &[StatSpec {
        name: "received",
        kind: StatKind::Counter,
        unit: "packets",
        description: "Packets received.",
    }],
    check: None,
};

struct Source {
    script: Vec<Packet>,
    random_gaps: bool,
}

impl Component<Packet> for Source {
    fn spec(&self) -> &'static ComponentSpec {
        &SOURCE
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Packet>) {
        if self.random_gaps {
            let mut t = 0;
            for i in 0..self.script.len() {
                t += ctx.rng().below(1000);
                ctx.wake_at(t, i as u64);
            }
        } else {
            for p in self.script.drain(..) {
                let (bytes, vc) = (p.bytes, p.vc);
                ctx.send(0, p, bytes, vc);
            }
        }
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Packet>) {
        let p = self.script[token as usize].clone();
        ctx.send(0, p.clone(), p.bytes, p.vc);
    }
    fn on_message(&mut self, _: PortId, _: Packet, _: &mut Ctx<'_, Packet>) {}
}

#[derive(Default)]
struct Sink {
    arrivals: Vec<(u32, Tick)>,
}

impl Component<Packet> for Sink {
    fn spec(&self) -> &'static ComponentSpec {
        &SINK
    }
    fn on_message(&mut self, _: PortId, p: Packet, ctx: &mut Ctx<'_, Packet>) {
        self.arrivals.push((p.id, ctx.now()));
        ctx.count(0, 1);
    }
}

fn packets(n: u32, bytes: u32, vc: u8) -> Vec<Packet> {
    (0..n).map(|id| Packet { id, bytes, vc }).collect()
}

/// A source sending `script` (at random gaps, or all at once) to a sink
/// over a link of `params`: the builder (to name the link or trace before
/// building), the sink and the link.
fn source_to_sink(
    seed: u64,
    script: Vec<Packet>,
    random_gaps: bool,
    params: LinkParams,
) -> (SystemBuilder<Packet>, ComponentId, LinkId) {
    let mut b = SystemBuilder::new("system", seed);
    let s = b.add(
        "src",
        Source {
            script,
            random_gaps,
        },
    );
    let k = b.add("sink", Sink::default());
    let l = b.connect(s, "out", k, "in", params);
    (b, k, l)
}

fn run(script: Vec<Packet>, params: LinkParams) -> Vec<(u32, Tick)> {
    let (b, k, _) = source_to_sink(0, script, false, params);
    let mut sim = b.build().expect("valid");
    assert_eq!(sim.run(), RunOutcome::Drained);
    sim.component::<Sink>(k).unwrap().arrivals.clone()
}

#[test]
fn latency_and_serialization_are_exact() {
    // 8 GB/s: 128 bytes take 16 ns on the wire; 150 ns of flight.
    let arrivals = run(packets(3, 128, 0), LinkParams::symmetric(150 * NS, 8e9));
    // Back-to-back: the k-th packet's last byte leaves at 16(k+1) ns.
    assert_eq!(arrivals, vec![(0, 166 * NS), (1, 182 * NS), (2, 198 * NS)]);
}

#[test]
fn bandwidth_of_a_long_stream_equals_the_link_rate() {
    // 1000 packets of 256 B at 20 GB/s: 12.8 ns each, 12.8 us in total.
    let arrivals = run(packets(1000, 256, 0), LinkParams::symmetric(100 * NS, 20e9));
    let last = arrivals.last().unwrap().1;
    let bytes = 1000.0 * 256.0;
    let seconds = (last - 100 * NS) as f64 * 1e-12;
    assert_eq!(last, 100 * NS + 12_800 * NS);
    assert!((bytes / seconds - 20e9).abs() < 1.0);
}

#[test]
fn per_direction_latency_is_independent() {
    let mut p = LinkParams::symmetric(0, 0.0);
    p.latency = [10 * NS, 30 * NS];
    let arrivals = run(packets(1, 64, 0), p);
    assert_eq!(arrivals, vec![(0, 10 * NS)]);
}

/// Two credits on vc0, unlimited vc1, infinite bandwidth, 100 ns each way;
/// packets 0-4 on vc0 and 99 on vc1, all sent at 0.
fn credit_scenario() -> (Vec<Packet>, LinkParams) {
    let params = LinkParams::symmetric(100 * NS, 0.0)
        .with_vcs(vec![VcParams::new("req", 2), VcParams::new("rsp", 0)]);
    let mut script = packets(5, 64, 0);
    script.push(Packet {
        id: 99,
        bytes: 64,
        vc: 1,
    });
    (script, params)
}

#[test]
fn credits_throttle_a_channel_without_blocking_the_others() {
    // vc0 packets 0,1 arrive at 100 ns; their credits are back at 200 ns, so
    // packets 2,3 arrive at 300 ns, and 4 at 500 ns. vc1 is not held back.
    let (script, params) = credit_scenario();
    let arrivals = run(script, params);
    assert_eq!(
        arrivals,
        vec![
            (0, 100 * NS),
            (1, 100 * NS),
            (99, 100 * NS),
            (2, 300 * NS),
            (3, 300 * NS),
            (4, 500 * NS),
        ]
    );
}

#[test]
fn in_flight_lists_messages_on_the_wire_and_waiting_for_credits() {
    // As above: two credits on vc0, 100 ns each way. Packets 0, 1 and 99
    // are on the wire until 100 ns; 2, 3 and 4 wait for credits (back at
    // 200 ns); 2 and 3 are then on the wire until 300 ns while 4 waits.
    let (script, params) = credit_scenario();
    let (b, k, _) = source_to_sink(0, script, false, params);
    let mut sim = b.build().unwrap();
    let ids = |sim: &Simulation<Packet>| {
        let mut v: Vec<u32> = sim.in_flight().map(|p| p.id).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(sim.run_until(50 * NS), RunOutcome::TimeLimit);
    assert_eq!(ids(&sim), vec![0, 1, 2, 3, 4, 99]);
    sim.run_until(150 * NS);
    assert_eq!(ids(&sim), vec![2, 3, 4]);
    sim.run_until(250 * NS);
    assert_eq!(ids(&sim), vec![2, 3, 4]);
    assert_eq!(sim.component::<Sink>(k).unwrap().arrivals.len(), 3);
    assert_eq!(sim.run(), RunOutcome::Drained);
    assert_eq!(ids(&sim), Vec::<u32>::new());
}

#[test]
fn credit_stalls_are_counted() {
    let params = LinkParams::symmetric(10 * NS, 0.0).with_vcs(vec![VcParams::new("req", 1)]);
    let (mut b, _, l) = source_to_sink(0, packets(4, 64, 0), false, params);
    b.name_link(l, "wire");
    let mut sim = b.build().unwrap();
    sim.run();
    let stats = sim.stats();
    assert_eq!(stats.counter("system.wire.a_to_b.credit_stalls"), Some(3));
    assert_eq!(stats.counter("system.wire.a_to_b.messages"), Some(4));
    assert_eq!(stats.counter("system.wire.a_to_b.bytes"), Some(256));
    assert_eq!(stats.counter("system.sink.received"), Some(4));
}

#[test]
fn lazy_credit_returns_launch_waiting_messages_exactly() {
    // One credit, 100 ns each way, packets at random gaps: some find the
    // credit back (taken lazily, no event), some must wait for it. Each
    // launches at max(sent, credit back) and the run ends when the last
    // credit is home, as with an event per credit return.
    let params = LinkParams::symmetric(100 * NS, 0.0).with_vcs(vec![VcParams::new("req", 1)]);
    let (b, k, _) = source_to_sink(7, packets(200, 64, 0), true, params);
    let mut sim = b.build().unwrap();
    assert_eq!(sim.run(), RunOutcome::Drained);
    let arrivals = sim.component::<Sink>(k).unwrap().arrivals.clone();
    // The same random gaps the source drew (its own stream, seed 7).
    let (b2, k2, _) = source_to_sink(7, packets(200, 64, 0), true, LinkParams::symmetric(0, 0.0));
    let mut free = b2.build().unwrap();
    free.run();
    let mut sent = free.component::<Sink>(k2).unwrap().arrivals.clone();
    sent.sort_by_key(|&(id, t)| (t, id));
    let (mut credit_back, mut expect) = (0, Vec::new());
    for &(id, t) in &sent {
        let arrive = t.max(credit_back) + 100 * NS;
        credit_back = arrive + 100 * NS;
        expect.push((id, arrive));
    }
    assert_eq!(arrivals, expect);
    assert_eq!(sim.now(), credit_back);
    assert!(
        expect.iter().zip(&sent).any(|(a, s)| a.1 > s.1 + 100 * NS),
        "some packet waited for its credit"
    );
}

fn traced_run(seed: u64) -> (String, String) {
    let params = LinkParams::symmetric(40 * NS, 4e9);
    let (mut b, _, _) = source_to_sink(seed, packets(50, 64, 0), true, params);
    b.trace(TraceMode::Full);
    let mut sim = b.build().unwrap();
    sim.run();
    (sim.trace_hash().unwrap(), sim.trace_json().unwrap())
}

#[test]
fn same_seed_gives_identical_trace_and_another_seed_does_not() {
    let (h1, j1) = traced_run(11);
    let (h2, j2) = traced_run(11);
    assert_eq!(h1, h2);
    assert_eq!(j1, j2);
    let (h3, _) = traced_run(12);
    assert_ne!(h1, h3, "the random gaps depend on the seed");
}

#[test]
fn chrome_trace_is_valid_json_with_one_slice_per_message() {
    let (_, json) = traced_run(3);
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let events = v["traceEvents"].as_array().unwrap();
    let slices: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), 50);
    assert_eq!(slices[0]["args"]["to"], "system.sink");
    assert_eq!(slices[0]["args"]["bytes"], 64);
    // 64 B at 4 GB/s = 16 ns on the wire + 40 ns flight = 0.056 us.
    assert!(slices
        .iter()
        .all(|s| s["dur"].as_f64().unwrap() >= 0.056 - 1e-9));
}

#[test]
fn builder_errors_name_every_problem() {
    let mut b = SystemBuilder::<Packet>::new("system", 0);
    let s = b.add(
        "src",
        Source {
            script: vec![],
            random_gaps: false,
        },
    );
    let k = b.add("sink", Sink::default());
    let _dup = b.add("sink", Sink::default());
    b.connect(s, "outt", k, "in", LinkParams::symmetric(0, -5.0));
    let err = match b.build() {
        Err(e) => e,
        Ok(_) => panic!("the system is invalid"),
    };
    let golden = [
        "two components are named `system.sink`",
        "component `system.src` (test_source) has no port `outt`; its ports are: out",
        "link `system.src.outt--system.sink.in` bandwidth[0] is -5 bytes/s; use a positive number or 0 for infinite",
        "link `system.src.outt--system.sink.in` bandwidth[1] is -5 bytes/s; use a positive number or 0 for infinite",
        "port `system.src.out` (test_source) is required but not connected: Packets out.",
        "port `system.sink.in` (test_sink) is required but not connected: Packets in.",
    ];
    assert_eq!(err.problems, golden);
}

#[test]
fn run_until_stops_at_the_limit_and_resumes() {
    let mut b = SystemBuilder::new("system", 0);
    let s = b.add(
        "src",
        Source {
            script: packets(2, 100, 0),
            random_gaps: false,
        },
    );
    let k = b.add("sink", Sink::default());
    b.connect(s, "out", k, "in", LinkParams::symmetric(0, 1e9));
    let mut sim = b.build().unwrap();
    assert_eq!(sim.run_until(150 * NS), RunOutcome::TimeLimit);
    assert_eq!(sim.component::<Sink>(k).unwrap().arrivals.len(), 1);
    assert_eq!(sim.run(), RunOutcome::Drained);
    assert_eq!(
        sim.component::<Sink>(k).unwrap().arrivals,
        vec![(0, 100 * NS), (1, 200 * NS)]
    );
}

static DEFERRER: ComponentSpec = ComponentSpec {
    type_name: "test_deferrer",
    description: "Reserves a wake-up and queues it later, or drops it.",
    params: &[],
    ports: &[],
    stats: &[],
    check: None,
};

/// Reserves a wake-up at 100 ns at tick 0; at 50 ns it schedules ordinary
/// wake-ups at 80 and 100 ns and, if `use_it`, queues the reserved one.
struct Deferrer {
    use_it: bool,
    /// Only reserve at init, schedule nothing.
    only_reserve: bool,
    reserved: Option<DeferredWake>,
    fired: Vec<(Tick, u64)>,
    past_at_end: Option<bool>,
}

impl Component<Packet> for Deferrer {
    fn spec(&self) -> &'static ComponentSpec {
        &DEFERRER
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Packet>) {
        self.reserved = Some(ctx.defer_wake(100 * NS));
        if !self.only_reserve {
            ctx.wake_at(50 * NS, 1);
        }
    }
    fn on_message(&mut self, _: PortId, _: Packet, _: &mut Ctx<'_, Packet>) {}
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Packet>) {
        self.fired.push((ctx.now(), token));
        let w = self.reserved.expect("reserved at init");
        match token {
            1 => {
                assert!(!ctx.is_past(&w));
                ctx.wake_at(80 * NS, 3);
                // Asked for later than the reservation, so it runs after it.
                ctx.wake_at(100 * NS, 4);
                if self.use_it {
                    ctx.wake_deferred(w, 2);
                }
            }
            3 => self.past_at_end = Some(ctx.is_past(&w)),
            _ => {}
        }
    }
}

#[test]
fn a_deferred_wake_keeps_its_reserved_place_or_costs_nothing() {
    for use_it in [true, false] {
        let mut b = SystemBuilder::new("system", 0);
        let d = b.add(
            "d",
            Deferrer {
                use_it,
                only_reserve: false,
                reserved: None,
                fired: Vec::new(),
                past_at_end: None,
            },
        );
        let mut sim = b.build().unwrap();
        assert_eq!(sim.run(), RunOutcome::Drained);
        let c = sim.component::<Deferrer>(d).unwrap();
        let mut expect = vec![(50 * NS, 1), (80 * NS, 3), (100 * NS, 2), (100 * NS, 4)];
        if !use_it {
            expect.remove(2);
        }
        assert_eq!(c.fired, expect);
        assert_eq!(sim.events_processed(), expect.len() as u64);
        assert_eq!(c.past_at_end, Some(false));
        assert_eq!(sim.now(), 100 * NS);
    }
}

#[test]
fn a_run_drains_at_its_last_reserved_tick() {
    // Nothing queued but a reservation at 100 ns: the run ends there, as
    // it would have had the wake-up run; a limit before it stops short.
    let mut b = SystemBuilder::new("system", 0);
    b.add(
        "d",
        Deferrer {
            use_it: false,
            only_reserve: true,
            reserved: None,
            fired: Vec::new(),
            past_at_end: None,
        },
    );
    let mut sim = b.build().unwrap();
    assert_eq!(sim.run_until(70 * NS), RunOutcome::TimeLimit);
    assert_eq!(sim.now(), 70 * NS);
    assert_eq!(sim.run(), RunOutcome::Drained);
    assert_eq!(sim.now(), 100 * NS);
    assert_eq!(sim.events_processed(), 0);
}

static SELF_SENDER: ComponentSpec = ComponentSpec {
    type_name: "test_self_sender",
    description: "Schedules messages to itself and records every event it handles.",
    params: &[],
    ports: &[PortSpec {
        name: "in",
        description: "Packets in.",
        required: false,
    }],
    stats: &[],
    check: None,
};

/// What a [`SelfSender`] handled: (tick, kind, token or packet id, bytes).
type Log = Vec<(Tick, &'static str, u64, u32)>;

/// At tick 0 schedules local messages and wake-ups at 100 ns (interleaved)
/// and local messages at 300 and 200 ns (in that order); when the first
/// local message of 100 ns runs it schedules one more for 100 ns.
#[derive(Default)]
struct SelfSender {
    log: Log,
}

impl Component<Packet> for SelfSender {
    fn spec(&self) -> &'static ComponentSpec {
        &SELF_SENDER
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Packet>) {
        let pkt = |id, bytes| Packet { id, bytes, vc: 1 };
        ctx.schedule_local(100 * NS, 1, pkt(10, 64));
        ctx.wake_at(100 * NS, 2);
        ctx.schedule_local(100 * NS, 3, pkt(11, 128));
        ctx.schedule_local(300 * NS, 4, pkt(12, 8));
        ctx.schedule_local(200 * NS, 5, pkt(13, 16));
    }
    fn on_message(&mut self, _: PortId, p: Packet, ctx: &mut Ctx<'_, Packet>) {
        self.log.push((ctx.now(), "deliver", p.id as u64, p.bytes));
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Packet>) {
        self.log.push((ctx.now(), "wake", token, 0));
    }
    fn on_local(&mut self, token: u64, p: Packet, ctx: &mut Ctx<'_, Packet>) {
        assert_eq!(p.vc, 1, "the payload arrives intact");
        self.log.push((ctx.now(), "local", token, p.bytes));
        if token == 1 {
            // Scheduled now for now: after everything already queued for
            // this tick.
            let now = ctx.now();
            ctx.schedule_local(
                now,
                6,
                Packet {
                    id: 14,
                    bytes: 32,
                    vc: 1,
                },
            );
        }
    }
}

#[test]
fn local_messages_run_in_tick_priority_sequence_order_with_their_payload() {
    let mut b = SystemBuilder::new("system", 0);
    let s = b.add(
        "src",
        Source {
            script: packets(1, 0, 0),
            random_gaps: false,
        },
    );
    let r = b.add("self", SelfSender::default());
    // A zero-byte packet arrives after exactly the latency: 100 ns.
    b.connect(s, "out", r, "in", LinkParams::symmetric(100 * NS, 64e9));
    let mut sim = b.build().unwrap();
    assert_eq!(sim.run(), RunOutcome::Drained);
    let log = &sim.component::<SelfSender>(r).unwrap().log;
    let expect: Log = vec![
        // Deliveries first at a tick, then wake-ups and local messages in
        // the order they were scheduled, then what those scheduled.
        (100 * NS, "deliver", 0, 0),
        (100 * NS, "local", 1, 64),
        (100 * NS, "wake", 2, 0),
        (100 * NS, "local", 3, 128),
        (100 * NS, "local", 6, 32),
        (200 * NS, "local", 5, 16),
        (300 * NS, "local", 4, 8),
    ];
    assert_eq!(log, &expect);
    assert_eq!(sim.events_processed(), expect.len() as u64);
    assert_eq!(sim.now(), 300 * NS);
}

static FORGETFUL: ComponentSpec = ComponentSpec {
    type_name: "test_forgetful",
    description: "Schedules a local message without handling local messages.",
    params: &[],
    ports: &[],
    stats: &[],
    check: None,
};

struct Forgetful;

impl Component<Packet> for Forgetful {
    fn spec(&self) -> &'static ComponentSpec {
        &FORGETFUL
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Packet>) {
        ctx.schedule_local(
            NS,
            7,
            Packet {
                id: 0,
                bytes: 0,
                vc: 0,
            },
        );
    }
    fn on_message(&mut self, _: PortId, _: Packet, _: &mut Ctx<'_, Packet>) {}
}

#[test]
#[should_panic(expected = "`test_forgetful` scheduled a local message (token 7)")]
fn a_local_message_without_a_handler_panics() {
    let mut b = SystemBuilder::new("system", 0);
    b.add("f", Forgetful);
    b.build().unwrap().run();
}
