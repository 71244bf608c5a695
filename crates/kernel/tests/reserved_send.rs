//! Reserved sends (`Ctx::send_at`): a send whose place in the run is fixed
//! when it is decided and which the kernel makes when the run gets there,
//! without an event of its own. Each test compares it with what it
//! replaces, a local message scheduled for the same tick whose handler
//! sends (`Ctx::schedule_local` + `Ctx::send`), or states the exact ticks
//! that replacement gives.

use std::cell::RefCell;
use std::rc::Rc;

use ccsim_kernel::prelude::*;

mod common;
use common::Packet;

/// What the components of a run handled, in the order they handled it:
/// (tick, component, what, packet id or token).
type Log = Rc<RefCell<Vec<(Tick, u32, &'static str, u64)>>>;

/// How a component makes a send that leaves after a fixed delay.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Delayed {
    /// `Ctx::send_at`: a reserved place, no event.
    Reserved,
    /// A local message at the tick whose handler sends: the event the
    /// reserved send replaces.
    Event,
}

static NODE: ComponentSpec = ComponentSpec {
    type_name: "test_node",
    description: "Sends now, after a delay, wakes and defers wake-ups, scripted or at random.",
    params: &[],
    ports: &[
        PortSpec {
            name: "a",
            description: "A link.",
            required: false,
        },
        PortSpec {
            name: "b",
            description: "Another link.",
            required: false,
        },
    ],
    stats: &[],
    check: None,
};

/// One step of a node's script at tick 0.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Send packet `id` of `bytes` on port 0 now.
    Now { id: u32, bytes: u32 },
    /// Send packet `id` of `bytes` on port 0 at `at`.
    At { at: Tick, id: u32, bytes: u32 },
    /// A wake-up at `at` with `token`.
    Wake { at: Tick, token: u64 },
}

struct Node {
    me: u32,
    delayed: Delayed,
    script: Vec<Step>,
    /// Random reactions left (0: the node only logs).
    budget: u32,
    next_id: u32,
    log: Log,
}

impl Node {
    fn new(me: u32, delayed: Delayed, script: Vec<Step>, budget: u32, log: &Log) -> Self {
        Node {
            me,
            delayed,
            script,
            budget,
            next_id: 1000 * (me + 1),
            log: log.clone(),
        }
    }
    fn note(&self, now: Tick, what: &'static str, n: u64) {
        self.log.borrow_mut().push((now, self.me, what, n));
    }
    /// Sends `p` on `port` at `at` the way this node is set to.
    fn send_at(&self, ctx: &mut Ctx<'_, Packet>, at: Tick, port: PortId, p: Packet) {
        match self.delayed {
            Delayed::Reserved => {
                let (bytes, vc) = (p.bytes, p.vc);
                ctx.send_at(at, port, p, bytes, vc)
            }
            Delayed::Event => ctx.schedule_local(at, port as u64, p),
        }
    }
    /// A random reaction: sends now or after a delay, wake-ups, deferred
    /// wake-ups used or dropped. The delays and sizes are few, so that
    /// many things fall on one tick.
    fn react(&mut self, ctx: &mut Ctx<'_, Packet>) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        let now = ctx.now();
        for _ in 0..1 + ctx.rng().below(2) {
            let delay = [0, 4 * NS, 8 * NS, 20 * NS][ctx.rng().below(4) as usize];
            let port = ctx.rng().below(2) as PortId;
            let p = Packet {
                id: self.next_id,
                bytes: [0, 64, 128][ctx.rng().below(3) as usize],
                vc: ctx.rng().below(2) as u8,
            };
            self.next_id += 1;
            match ctx.rng().below(6) {
                0 => {
                    let (bytes, vc) = (p.bytes, p.vc);
                    ctx.send(port, p, bytes, vc)
                }
                1..=3 => self.send_at(ctx, now + delay, port, p),
                4 => ctx.wake_after(delay, u64::from(p.id)),
                _ => {
                    // A reservation used at once or dropped: a gap in the
                    // sequence, or an event in the reserved place.
                    let w = ctx.defer_wake(now + delay);
                    if p.vc == 0 {
                        ctx.wake_deferred(w, u64::from(p.id));
                    }
                }
            }
        }
    }
}

impl Component<Packet> for Node {
    fn spec(&self) -> &'static ComponentSpec {
        &NODE
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Packet>) {
        for step in std::mem::take(&mut self.script) {
            let pkt = |id, bytes| Packet { id, bytes, vc: 0 };
            match step {
                Step::Now { id, bytes } => ctx.send(0, pkt(id, bytes), bytes, 0),
                Step::At { at, id, bytes } => self.send_at(ctx, at, 0, pkt(id, bytes)),
                Step::Wake { at, token } => ctx.wake_at(at, token),
            }
        }
        self.react(ctx);
    }
    fn on_message(&mut self, _: PortId, p: Packet, ctx: &mut Ctx<'_, Packet>) {
        self.note(ctx.now(), "deliver", u64::from(p.id));
        self.react(ctx);
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Packet>) {
        self.note(ctx.now(), "wake", token);
        self.react(ctx);
    }
    fn on_local(&mut self, port: u64, p: Packet, ctx: &mut Ctx<'_, Packet>) {
        let (bytes, vc) = (p.bytes, p.vc);
        ctx.send(port as PortId, p, bytes, vc);
    }
}

/// Everything a run shows: the log, the trace hash (every message's
/// send and arrival ticks), the link counters, the events and the end.
#[derive(Debug, PartialEq)]
struct Outcome {
    log: Vec<(Tick, u32, &'static str, u64)>,
    trace: Option<String>,
    stats: Vec<(String, u64)>,
    events: u64,
    end: Tick,
}

fn finish(mut sim: Simulation<Packet>, log: &Log) -> Outcome {
    assert_eq!(sim.run(), RunOutcome::Drained);
    let stats = sim
        .stats()
        .0
        .iter()
        .filter_map(|(k, v)| match v {
            StatValue::Counter(c) => Some((k.clone(), *c)),
            _ => None,
        })
        .collect();
    Outcome {
        log: log.borrow().clone(),
        trace: sim.trace_hash(),
        stats,
        events: sim.events_processed(),
        end: sim.now(),
    }
}

/// Three nodes in a ring of links with two channels of `credits` each,
/// reacting at random (`seed`) for `budget` events each.
fn random_ring(seed: u64, delayed: Delayed, credits: u32, budget: u32) -> Outcome {
    let log = Log::default();
    let mut b = SystemBuilder::new("system", seed);
    b.trace(TraceMode::Hash);
    let nodes: Vec<ComponentId> = (0..3)
        .map(|i| {
            b.add(
                &format!("n{i}"),
                Node::new(i, delayed, vec![], budget, &log),
            )
        })
        .collect();
    let vcs = vec![VcParams::new("req", credits), VcParams::new("rsp", credits)];
    for i in 0..3 {
        // 16 GB/s: 64 bytes take 4 ns, as long as the shortest delay.
        let p = LinkParams::symmetric(10 * NS, 16e9).with_vcs(vcs.clone());
        b.connect(nodes[i], "a", nodes[(i + 1) % 3], "b", p);
    }
    finish(b.build().unwrap(), &log)
}

#[test]
fn reserved_sends_give_the_run_of_the_events_they_replace() {
    let mut stalled = 0;
    for seed in 0..40 {
        for credits in [1, 2, 0] {
            let reserved = random_ring(seed, Delayed::Reserved, credits, 60);
            let events = random_ring(seed, Delayed::Event, credits, 60);
            assert_eq!(reserved, events, "seed {seed}, {credits} credits");
            stalled += reserved
                .stats
                .iter()
                .filter(|(k, _)| k.ends_with("credit_stalls"))
                .map(|(_, v)| v)
                .sum::<u64>();
            assert!(reserved.log.len() > 100, "seed {seed}: a busy run");
        }
    }
    // Reserved sends that found no credit at their place, and credits
    // returned between a reservation and its place, were exercised.
    assert!(stalled > 100, "only {stalled} credit stalls");
}

/// Node 0 sends to node 1 over a link of 10 ns each way, one credit.
fn one_credit_pair(script: Vec<Step>, delayed: Delayed) -> (Outcome, Log) {
    let log = Log::default();
    let mut b = SystemBuilder::new("system", 0);
    b.trace(TraceMode::Hash);
    let s = b.add("n0", Node::new(0, delayed, script, 0, &log));
    let r = b.add("n1", Node::new(1, delayed, vec![], 0, &log));
    let p = LinkParams::symmetric(10 * NS, 0.0).with_vcs(vec![VcParams::new("req", 1)]);
    b.connect(s, "a", r, "b", p);
    (finish(b.build().unwrap(), &log), log)
}

fn stat(o: &Outcome, suffix: &str) -> u64 {
    o.stats
        .iter()
        .find(|(k, _)| k.ends_with(suffix))
        .map_or_else(|| panic!("no stat {suffix}"), |(_, v)| *v)
}

#[test]
fn a_reserved_send_takes_the_credit_returned_before_its_place() {
    // Packet 1 takes the only credit at 0 and arrives at 10 ns; its
    // credit is back at 20 ns. Packet 2's send, reserved at tick 0 (when
    // that credit had not even set off), is at 20 ns: Credit events run
    // first at a tick, so it finds the credit and leaves at once.
    let script = vec![
        Step::Now { id: 1, bytes: 0 },
        Step::At {
            at: 20 * NS,
            id: 2,
            bytes: 0,
        },
    ];
    for delayed in [Delayed::Reserved, Delayed::Event] {
        let (o, _) = one_credit_pair(script.clone(), delayed);
        let expect = vec![(10 * NS, 1, "deliver", 1), (30 * NS, 1, "deliver", 2)];
        assert_eq!(o.log, expect, "{delayed:?}");
        assert_eq!(stat(&o, "a_to_b.credit_stalls"), 0);
    }
}

#[test]
fn a_reserved_send_before_the_credit_returns_waits_for_it() {
    // The same with packet 2's send at 15 ns: the credit is still on its
    // way back, so the packet waits at the sender until 20 ns.
    let script = vec![
        Step::Now { id: 1, bytes: 0 },
        Step::At {
            at: 15 * NS,
            id: 2,
            bytes: 0,
        },
    ];
    let mut outcomes = Vec::new();
    for delayed in [Delayed::Reserved, Delayed::Event] {
        let (o, _) = one_credit_pair(script.clone(), delayed);
        let expect = vec![(10 * NS, 1, "deliver", 1), (30 * NS, 1, "deliver", 2)];
        assert_eq!(o.log, expect, "{delayed:?}");
        assert_eq!(stat(&o, "a_to_b.credit_stalls"), 1);
        outcomes.push(o);
    }
    assert_eq!(outcomes[0], outcomes[1]);
}

#[test]
fn a_reserved_send_runs_in_its_place_among_the_events_of_its_tick() {
    // Zero latency, infinite bandwidth: a send at 100 ns is delivered at
    // 100 ns, and deliveries run before wake-ups at a tick. Node 1's
    // wake-up at 100 ns is queued before node 0 reserves its send, node
    // 0's own wake-up after: the delivery comes between the two. (Sent at
    // once, at tick 0, it would be delivered at 0; reserved in a place of
    // its own priority it would run before node 1's wake-up.)
    let log = Log::default();
    let mut b = SystemBuilder::new("system", 0);
    let wake = |token| Step::Wake {
        at: 100 * NS,
        token,
    };
    // Components initialise in the order they were added.
    let first = b.add(
        "n1",
        Node::new(1, Delayed::Reserved, vec![wake(11)], 0, &log),
    );
    let script = vec![
        Step::At {
            at: 100 * NS,
            id: 7,
            bytes: 64,
        },
        wake(10),
    ];
    let second = b.add("n0", Node::new(0, Delayed::Reserved, script, 0, &log));
    b.connect(second, "a", first, "b", LinkParams::symmetric(0, 0.0));
    let mut sim = b.build().unwrap();
    // Before its place the send is pending and its packet in flight.
    assert_eq!(sim.run_until(99 * NS), RunOutcome::TimeLimit);
    assert_eq!(sim.events_pending(), 3);
    let ids: Vec<u32> = sim.in_flight().map(|p| p.id).collect();
    assert_eq!(ids, vec![7]);
    let o = finish(sim, &log);
    let expect = vec![
        (100 * NS, 1, "wake", 11),
        (100 * NS, 1, "deliver", 7),
        (100 * NS, 0, "wake", 10),
    ];
    assert_eq!(o.log, expect);
    // The reserved send counts as the event it replaces.
    assert_eq!(o.events, 4);
    assert_eq!(o.end, 100 * NS);
}
