//! Components, the builder that wires and validates them, and the
//! simulation loop.
//!
//! The flow is *assemble, validate, then run*: a [`SystemBuilder`] collects
//! components and links, [`SystemBuilder::build`] checks the whole system once
//! (names, ports, link parameters) and only then returns a runnable
//! [`Simulation`]. During the run a component sees the world through a
//! [`Ctx`]: it sends messages on its ports, schedules wake-ups and messages
//! to itself, counts stats and draws random numbers.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;

use crate::component::{ComponentSpec, StatKind};
use crate::link::{Direction, LinkParams, LinkState, Pending, LINK_STATS};
use crate::queue::{order_word, rank, seq_of, Entry, EventQueue, Priority};
use crate::rng::SimRng;
use crate::stats::{Stats, StatsReport};
use crate::time::Tick;
use crate::trace::{Note, Record, TraceMode, Tracer};

/// Index of a component in its simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentId(pub u32);

/// Index of a link in its simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LinkId(pub u32);

/// Index of a port in its component's [`ComponentSpec::ports`].
pub type PortId = usize;

/// A message that travels on links. The label names it in traces.
pub trait Message: 'static {
    /// A short label for traces, e.g. `MRd 128B tag=3`. Called only when
    /// tracing is on.
    fn label(&self) -> String;
}

/// A simulated hardware or software block.
///
/// Handlers must be deterministic functions of the component's state, the
/// event, and the [`Ctx`] (including its RNG).
pub trait Component<M: Message>: Any {
    /// The static declaration of this component's type.
    fn spec(&self) -> &'static ComponentSpec;
    /// Called once at tick 0, before any event, in component order.
    fn init(&mut self, _ctx: &mut Ctx<'_, M>) {}
    /// A message arrived on `port`.
    fn on_message(&mut self, port: PortId, msg: M, ctx: &mut Ctx<'_, M>);
    /// A wake-up scheduled by this component with `token` fired.
    fn on_wake(&mut self, _token: u64, _ctx: &mut Ctx<'_, M>) {}
    /// A message this component scheduled to itself with
    /// [`Ctx::schedule_local`] is due: `msg` with the `token` it was
    /// scheduled with.
    ///
    /// The default panics: a component that schedules local messages must
    /// handle them.
    fn on_local(&mut self, token: u64, _msg: M, _ctx: &mut Ctx<'_, M>) {
        panic!(
            "component type `{}` scheduled a local message (token {token}) but does not implement Component::on_local",
            self.spec().type_name
        )
    }
}

enum Event<M> {
    Deliver {
        dst: u32,
        port: u16,
        link: u32,
        dir: Direction,
        vc: u8,
        msg: M,
    },
    Wake {
        dst: u32,
        token: u64,
    },
    /// A message a component scheduled to itself: a wake-up that carries
    /// its payload, so the component need not store it until then.
    Local {
        dst: u32,
        token: u64,
        msg: M,
    },
    Credit {
        link: u32,
        dir: Direction,
        vc: u8,
    },
}

impl<M> Event<M> {
    /// The message an event carries on its way to a component, if any.
    /// (Every event kind that holds a message has its arm here, so
    /// [`Simulation::in_flight`] sees it.)
    fn message(&self) -> Option<&M> {
        match self {
            Event::Deliver { msg, .. } | Event::Local { msg, .. } => Some(msg),
            Event::Wake { .. } | Event::Credit { .. } => None,
        }
    }
}

/// Everything except the components: borrowed mutably by a [`Ctx`] while a
/// component (borrowed separately) handles an event.
struct World<M> {
    queue: EventQueue<Event<M>>,
    links: Vec<LinkState<M>>,
    /// `wires[component][port]`: the link attached to that port and the
    /// direction in which a message sent from it travels.
    wires: Vec<Vec<Option<(u32, Direction)>>>,
    stats: Stats,
    stat_base: Vec<usize>,
    rngs: Vec<SimRng>,
    tracer: Tracer,
    stop: bool,
    /// The latest tick of any event whose place in the run was reserved but
    /// which may never be queued (lazy credit returns, deferred wake-ups).
    /// Such an event would have done nothing, but a run that drains still
    /// ends at its tick, as if it had run.
    horizon: Tick,
    /// Sends whose place in the run was reserved ([`Ctx::send_at`]): the
    /// loop transmits each when the run reaches its place, as the wake-up
    /// that would have sent it did.
    reserved: ReservedSends<M>,
}

/// The reserved sends waiting for their places, in a few FIFOs each
/// sorted by place. Each sender's sends have one fixed delay, so they
/// are reserved in the order of their places; the sends of two senders
/// with different delays interleave, and one sorted list would insert
/// most of them in the middle. So a send joins the first FIFO whose last
/// place is before its own (appending keeps it sorted), and the run takes
/// the smallest front.
struct ReservedSends<M> {
    fifos: [VecDeque<ReservedSend<M>>; RESERVED_FIFOS],
    /// The place of the earliest reserved send (`u128::MAX`: none), so the
    /// loop compares one number a pop, and the FIFO it heads.
    next: u128,
    next_fifo: usize,
    len: usize,
}

/// FIFOs of [`ReservedSends`]: the senders with distinct delays that a
/// system interleaves (the Enzian bench has two, the DC's egress and the
/// CPU's LLC-to-link path). A send that fits none is inserted in place.
const RESERVED_FIFOS: usize = 4;

impl<M> ReservedSends<M> {
    fn new() -> Self {
        ReservedSends {
            fifos: std::array::from_fn(|_| VecDeque::new()),
            next: u128::MAX,
            next_fifo: 0,
            len: 0,
        }
    }
    #[inline]
    fn push(&mut self, send: ReservedSend<M>) {
        let place = send.place();
        self.len += 1;
        if place < self.next {
            self.next = place;
            self.next_fifo = usize::MAX; // found below
        }
        let fits = self
            .fifos
            .iter()
            .position(|f| f.back().is_none_or(|b| b.place() < place));
        let k = match fits {
            Some(k) => {
                self.fifos[k].push_back(send);
                k
            }
            None => {
                let f = &mut self.fifos[0];
                let at = f.partition_point(|s| s.place() < place);
                f.insert(at, send);
                0
            }
        };
        if self.next_fifo == usize::MAX {
            self.next_fifo = k;
        }
    }
    /// Removes the earliest reserved send.
    #[inline]
    fn pop(&mut self) -> ReservedSend<M> {
        let s = self.fifos[self.next_fifo]
            .pop_front()
            .expect("the earliest reserved send");
        self.len -= 1;
        let (mut next, mut next_fifo) = (u128::MAX, 0);
        for (k, f) in self.fifos.iter().enumerate() {
            if let Some(front) = f.front() {
                let p = front.place();
                if p < next {
                    (next, next_fifo) = (p, k);
                }
            }
        }
        (self.next, self.next_fifo) = (next, next_fifo);
        s
    }
    fn iter(&self) -> impl Iterator<Item = &ReservedSend<M>> + '_ {
        self.fifos.iter().flatten()
    }
}

/// A send of [`Ctx::send_at`] waiting for its place in the run.
struct ReservedSend<M> {
    tick: Tick,
    order: u64,
    link: u32,
    dir: Direction,
    vc: u8,
    bytes: u32,
    msg: M,
}

impl<M> ReservedSend<M> {
    #[inline]
    fn place(&self) -> u128 {
        rank(self.tick, self.order)
    }
}

/// A component's view of the simulation while it handles one event.
pub struct Ctx<'a, M> {
    now: Tick,
    /// The order word of the event being handled: `(now, order)` is its
    /// place in the run.
    order: u64,
    me: u32,
    world: &'a mut World<M>,
}

impl<M: Message> Ctx<'_, M> {
    /// The current tick.
    #[inline]
    pub fn now(&self) -> Tick {
        self.now
    }
    /// The handling component's id.
    pub fn id(&self) -> ComponentId {
        ComponentId(self.me)
    }
    /// Sends `msg` of `bytes` bytes on virtual channel `vc` of the link wired
    /// to `port`. The message waits at the sender if the channel has no
    /// credit. Panics if the port is unwired: the builder rejects required
    /// ports left open, so this is a model bug.
    pub fn send(&mut self, port: PortId, msg: M, bytes: u32, vc: u8) {
        let (link, dir) = self.world.wires[self.me as usize][port]
            .unwrap_or_else(|| panic!("component {} sent on unwired port {port}", self.me));
        transmit(self.world, self.now, link, dir, vc, msg, bytes);
    }
    /// Sends `msg` on `port` at tick `at` (not in the past), exactly as
    /// [`Ctx::send`] called at `at` by a wake-up scheduled now for `at`
    /// would, without that wake-up's event: the send's place among the
    /// events of tick `at` is reserved now (as [`Ctx::wake_at`] would
    /// take it), and the event loop transmits the message when the run
    /// reaches that place, before any later event. So the send sees the
    /// link as that wake-up would have: the credits returned by then
    /// (and only those), the wire's state after every earlier send, and
    /// its delivery's sequence number is the one that send would have
    /// drawn. A component uses it for a fixed delay between deciding a
    /// send and the message leaving (an egress pipeline) when nothing
    /// else happens at the end of that delay.
    ///
    /// The reserved send counts as a processed event
    /// ([`Simulation::events_processed`]), as the wake-up it replaces
    /// would have, and its message is in [`Simulation::in_flight`] until
    /// it leaves. Panics if the port is unwired, like `send`.
    #[inline]
    pub fn send_at(&mut self, at: Tick, port: PortId, msg: M, bytes: u32, vc: u8) {
        debug_assert!(at >= self.now, "send in the past");
        let (link, dir) = self.world.wires[self.me as usize][port]
            .unwrap_or_else(|| panic!("component {} sent on unwired port {port}", self.me));
        let r = ReservedSend {
            tick: at.max(self.now),
            order: order_word(Priority::Wake, self.world.queue.reserve()),
            link,
            dir,
            vc,
            bytes,
            msg,
        };
        self.world.reserved.push(r);
    }
    /// Whether a message on `vc` of `port`'s link would leave without waiting
    /// for a credit.
    pub fn has_credit(&self, port: PortId, vc: u8) -> bool {
        let Some((link, dir)) = self.world.wires[self.me as usize][port] else {
            return false;
        };
        let ch = &self.world.links[link as usize].dirs[dir.index()].channels[vc as usize];
        !ch.limited || ch.credits > 0 || ch.returning.front().is_some_and(|&(t, _)| t <= self.now)
    }
    /// The tick at which the wire of `port`'s link becomes free for this
    /// sender.
    pub fn wire_free_at(&self, port: PortId) -> Tick {
        let (link, dir) = self.world.wires[self.me as usize][port].expect("wired port");
        let d = &self.world.links[link as usize].dirs[dir.index()];
        d.busy_until.max(self.now)
    }
    /// Schedules [`Component::on_wake`] with `token` after `delay` ticks.
    #[inline]
    pub fn wake_after(&mut self, delay: Tick, token: u64) {
        self.wake_at(self.now + delay, token);
    }
    /// Schedules [`Component::on_wake`] with `token` at tick `at` (not in the
    /// past).
    #[inline]
    pub fn wake_at(&mut self, at: Tick, token: u64) {
        debug_assert!(at >= self.now, "wake-up in the past");
        self.world.queue.push(
            at.max(self.now),
            Priority::Wake,
            Event::Wake {
                dst: self.me,
                token,
            },
        );
    }
    /// Schedules [`Component::on_local`] with `token` and `msg` at tick `at`
    /// (not in the past): a message from this component to itself, such as
    /// an item entering a fixed-latency pipeline.
    ///
    /// It is a wake-up that carries a payload: it has the wake-up priority
    /// and takes its place among the events of tick `at` exactly as
    /// [`Ctx::wake_at`] called now would, so a component that kept `msg` in
    /// a queue of its own and scheduled a wake-up for it can hand it to the
    /// kernel instead, stored once. It is not traced (no link carries it),
    /// like a wake-up.
    #[inline]
    pub fn schedule_local(&mut self, at: Tick, token: u64, msg: M) {
        debug_assert!(at >= self.now, "local message in the past");
        self.world.queue.push(
            at.max(self.now),
            Priority::Wake,
            Event::Local {
                dst: self.me,
                token,
                msg,
            },
        );
    }
    /// Reserves a wake-up at `at` without queueing it: its place among the
    /// events of tick `at` is fixed now, as if [`Ctx::wake_at`] were called
    /// now. Queue it later with [`Ctx::wake_deferred`] if it turns out to
    /// be needed (before [`Ctx::is_past`] says it would have run), or drop
    /// it if it would have found nothing to do. A component uses this to
    /// avoid kernel events for wake-ups that are usually idle, without
    /// changing the order of any event that does run.
    #[inline]
    pub fn defer_wake(&mut self, at: Tick) -> DeferredWake {
        let at = at.max(self.now);
        self.world.horizon = self.world.horizon.max(at);
        DeferredWake {
            at,
            order: order_word(Priority::Wake, self.world.queue.reserve()),
        }
    }
    /// Whether the deferred wake-up `w` would already have run before the
    /// event being handled now.
    #[inline]
    pub fn is_past(&self, w: &DeferredWake) -> bool {
        (w.at, w.order) < (self.now, self.order)
    }
    /// Queues the deferred wake-up `w` (not past) with `token`, in the place
    /// reserved for it.
    #[inline]
    pub fn wake_deferred(&mut self, w: DeferredWake, token: u64) {
        debug_assert!(!self.is_past(&w), "deferred wake-up already past");
        let seq = seq_of(w.order);
        self.world.queue.push_reserved(
            w.at,
            Priority::Wake,
            seq,
            Event::Wake {
                dst: self.me,
                token,
            },
        );
    }
    /// Adds `n` to this component's counter number `stat` (its index in the
    /// spec's `stats`).
    #[inline]
    pub fn count(&mut self, stat: usize, n: u64) {
        let slot = self.world.stat_base[self.me as usize] + stat;
        self.world.stats.add(slot, n);
    }
    /// Records `value` in this component's histogram number `stat`.
    #[inline]
    pub fn record(&mut self, stat: usize, value: u64) {
        let slot = self.world.stat_base[self.me as usize] + stat;
        self.world.stats.record(slot, value);
    }
    /// This component's random stream.
    #[inline]
    pub fn rng(&mut self) -> &mut SimRng {
        &mut self.world.rngs[self.me as usize]
    }
    /// Ends the run after the current event.
    pub fn stop(&mut self) {
        self.world.stop = true;
    }
    /// Whether the run keeps a full trace, so that [`Ctx::trace_note`] is
    /// worth building a note for.
    #[inline]
    pub fn tracing(&self) -> bool {
        self.world.tracer.full()
    }
    /// Adds `note` of this component to the full trace (dropped otherwise).
    /// Notes change nothing in the run and are not part of the trace hash.
    #[cold]
    pub fn trace_note(&mut self, note: Note) {
        self.world.tracer.note(self.me, note);
    }
}

#[inline(always)]
fn transmit<M: Message>(
    world: &mut World<M>,
    now: Tick,
    link: u32,
    dir: Direction,
    vc: u8,
    msg: M,
    bytes: u32,
) {
    let d = &mut world.links[link as usize].dirs[dir.index()];
    let Some(ch) = d.channels.get_mut(vc as usize) else {
        no_such_vc(&world.links[link as usize].name, vc)
    };
    if ch.limited {
        // Credits that came back by now (their events, of the first
        // priority, would have run before any sender at this tick).
        while ch.returning.front().is_some_and(|&(t, _)| t <= now) {
            ch.returning.pop_front();
            ch.credits += 1;
        }
        if ch.credits == 0 {
            wait_for_credit(world, now, link, dir, vc, msg, bytes);
            return;
        }
        ch.credits -= 1;
    }
    launch(world, now, now, link, dir, vc, msg, bytes);
}

#[cold]
#[inline(never)]
fn no_such_vc(link: &str, vc: u8) -> ! {
    panic!("link {link} has no virtual channel {vc}")
}

/// `msg` found no credit on its channel: it waits at the sender.
#[cold]
#[inline(never)]
fn wait_for_credit<M: Message>(
    world: &mut World<M>,
    now: Tick,
    link: u32,
    dir: Direction,
    vc: u8,
    msg: M,
    bytes: u32,
) {
    let d = &mut world.links[link as usize].dirs[dir.index()];
    let ch = &mut d.channels[vc as usize];
    // This message must wait for the next credit, so the credits still
    // travelling become real events, in the places reserved for them when
    // they set off: the message launches exactly when and in the order it
    // would have with eager credit events.
    for (t, seq) in ch.returning.drain(..) {
        world
            .queue
            .push_reserved(t, Priority::Credit, seq, Event::Credit { link, dir, vc });
    }
    ch.waiting.push_back(Pending {
        msg,
        bytes,
        sent_at: now,
    });
    d.counters[2] += 1;
}

/// Puts a message that holds a credit on the wire.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn launch<M: Message>(
    world: &mut World<M>,
    now: Tick,
    sent_at: Tick,
    link: u32,
    dir: Direction,
    vc: u8,
    msg: M,
    bytes: u32,
) {
    let d = &mut world.links[link as usize].dirs[dir.index()];
    let (_, arrives) = d.occupy(now, bytes);
    d.counters[0] += 1;
    d.counters[1] += bytes as u64;
    let (dst, port) = (d.dst, d.dst_port);
    if world.tracer.enabled() {
        let src = d.src;
        trace_message(world, sent_at, arrives, src, dst, link, vc, bytes, &msg);
    }
    world.queue.push(
        arrives,
        Priority::Deliver,
        Event::Deliver {
            dst,
            port,
            link,
            dir,
            vc,
            msg,
        },
    );
}

#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
fn trace_message<M: Message>(
    world: &mut World<M>,
    sent: Tick,
    arrives: Tick,
    src: u32,
    dst: u32,
    link: u32,
    vc: u8,
    bytes: u32,
    msg: &M,
) {
    world.tracer.record(Record {
        sent,
        arrives,
        src,
        dst,
        link,
        vc,
        bytes,
        label: msg.label(),
    });
}

/// A wake-up reserved by [`Ctx::defer_wake`]: its tick and its place among
/// the events of that tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeferredWake {
    /// The tick it is for.
    pub at: Tick,
    order: u64,
}

/// Why [`Simulation::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// No event is left.
    Drained,
    /// A component called [`Ctx::stop`].
    Stopped,
    /// The time limit of [`Simulation::run_until`] was reached.
    TimeLimit,
}

/// A validated, runnable system.
pub struct Simulation<M: Message> {
    names: Vec<String>,
    components: Vec<Box<dyn Component<M>>>,
    world: World<M>,
    now: Tick,
    /// The order word of the event being handled (see [`Ctx::is_past`]).
    order: u64,
    events: u64,
    initialized: bool,
}

impl<M: Message> Simulation<M> {
    /// Runs until no event is left or a component stops the run.
    pub fn run(&mut self) -> RunOutcome {
        self.run_until(Tick::MAX)
    }

    /// Runs events with tick `<= limit`.
    pub fn run_until(&mut self, limit: Tick) -> RunOutcome {
        if !self.initialized {
            self.initialized = true;
            for i in 0..self.components.len() {
                let mut ctx = Ctx {
                    now: self.now,
                    order: self.order,
                    me: i as u32,
                    world: &mut self.world,
                };
                self.components[i].init(&mut ctx);
            }
        }
        self.world.stop = false;
        loop {
            // The queue's next event if it comes before the first reserved
            // send; else that send is due first (a send never stops the
            // run), unless it is past the limit too.
            let next = self
                .world
                .queue
                .pop_entry_before(limit, self.world.reserved.next);
            let Some(Entry { tick, order, event }) = next else {
                if self.send_reserved(limit) {
                    continue;
                }
                break;
            };
            self.now = tick;
            self.order = order;
            self.events += 1;
            self.dispatch(event);
            if self.world.stop {
                return RunOutcome::Stopped;
            }
        }
        if self.world.queue.is_empty() && self.world.reserved.len == 0 {
            // Events that were reserved but never needed (they would have
            // found nothing to do) still mark the run's end.
            let end = self.world.horizon;
            if end <= limit {
                self.now = self.now.max(end);
                return RunOutcome::Drained;
            }
        }
        self.now = limit;
        RunOutcome::TimeLimit
    }

    /// Transmits the first reserved send if there is one due by `limit`
    /// (the queue had no event before it: none at all, none by the
    /// limit, or none before its place); returns whether it did.
    #[inline(never)]
    fn send_reserved(&mut self, limit: Tick) -> bool {
        let w = &mut self.world;
        if w.reserved.len == 0 || (w.reserved.next >> 64) as Tick > limit {
            return false;
        }
        let s = w.reserved.pop();
        self.now = s.tick;
        self.order = s.order;
        self.events += 1;
        w.queue.advance_to(s.tick);
        transmit(w, s.tick, s.link, s.dir, s.vc, s.msg, s.bytes);
        true
    }

    #[inline]
    fn dispatch(&mut self, event: Event<M>) {
        match event {
            Event::Deliver {
                dst,
                port,
                link,
                dir,
                vc,
                msg,
            } => {
                let mut ctx = Ctx {
                    now: self.now,
                    order: self.order,
                    me: dst,
                    world: &mut self.world,
                };
                self.components[dst as usize].on_message(port as usize, msg, &mut ctx);
                // The receive buffer is free once the message was handled;
                // the credit travels back over the reverse direction.
                let d = &mut self.world.links[link as usize].dirs[dir.index()];
                let ch = &mut d.channels[vc as usize];
                if ch.limited {
                    let back = self.now + d.credit_latency;
                    if ch.waiting.is_empty() {
                        // Nobody waits for it: the credit returns lazily (the
                        // next send on the channel takes it once its tick has
                        // come), saving an event; its place in the run is
                        // reserved in case a message has to wait for it.
                        let seq = self.world.queue.reserve();
                        ch.returning.push_back((back, seq));
                        self.world.horizon = self.world.horizon.max(back);
                    } else {
                        self.world.queue.push(
                            back,
                            Priority::Credit,
                            Event::Credit { link, dir, vc },
                        );
                    }
                }
            }
            Event::Wake { dst, token } => {
                let mut ctx = Ctx {
                    now: self.now,
                    order: self.order,
                    me: dst,
                    world: &mut self.world,
                };
                self.components[dst as usize].on_wake(token, &mut ctx);
            }
            Event::Local { dst, token, msg } => {
                let mut ctx = Ctx {
                    now: self.now,
                    order: self.order,
                    me: dst,
                    world: &mut self.world,
                };
                self.components[dst as usize].on_local(token, msg, &mut ctx);
            }
            Event::Credit { link, dir, vc } => self.credit_returned(link, dir, vc),
        }
    }

    /// A credit came back while a message may be waiting for it (see
    /// `wait_for_credit`).
    #[cold]
    #[inline(never)]
    fn credit_returned(&mut self, link: u32, dir: Direction, vc: u8) {
        let ch = &mut self.world.links[link as usize].dirs[dir.index()].channels[vc as usize];
        match ch.waiting.pop_front() {
            // Hand the credit straight to the oldest waiting message.
            Some(p) => launch(
                &mut self.world,
                self.now,
                p.sent_at,
                link,
                dir,
                vc,
                p.msg,
                p.bytes,
            ),
            None => ch.credits += 1,
        }
    }

    /// Schedules a wake-up of component `id` from outside (test stimulus).
    pub fn wake(&mut self, id: ComponentId, at: Tick, token: u64) {
        self.world
            .queue
            .push(at, Priority::Wake, Event::Wake { dst: id.0, token });
    }
    /// The current tick.
    pub fn now(&self) -> Tick {
        self.now
    }
    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events
    }
    /// Events still queued (reserved sends included).
    pub fn events_pending(&self) -> usize {
        self.world.queue.len() + self.world.reserved.len
    }
    /// Every message the kernel holds: queued for delivery, or waiting at
    /// its sender for a link credit. In no particular order. For reports
    /// on a stopped or drained run (a model's list of stuck work), so a
    /// model need not track its messages while it runs.
    pub fn in_flight(&self) -> impl Iterator<Item = &M> + '_ {
        let queued = self.world.queue.iter().filter_map(Event::message);
        let reserved = self.world.reserved.iter().map(|s| &s.msg);
        let waiting = self
            .world
            .links
            .iter()
            .flat_map(|l| &l.dirs)
            .flat_map(|d| &d.channels)
            .flat_map(|ch| ch.waiting.iter().map(|p| &p.msg));
        queued.chain(reserved).chain(waiting)
    }
    /// The component `id` as its concrete type, if it is a `T`.
    pub fn component<T: 'static>(&self, id: ComponentId) -> Option<&T> {
        let c: &dyn Any = self.components[id.0 as usize].as_ref();
        c.downcast_ref::<T>()
    }
    /// The component `id` as its concrete type, mutably.
    pub fn component_mut<T: 'static>(&mut self, id: ComponentId) -> Option<&mut T> {
        let c: &mut dyn Any = self.components[id.0 as usize].as_mut();
        c.downcast_mut::<T>()
    }
    /// The instance path of component `id`.
    pub fn name(&self, id: ComponentId) -> &str {
        &self.names[id.0 as usize]
    }
    /// A snapshot of every statistic.
    pub fn stats(&self) -> StatsReport {
        // The links count in their own state while they run.
        let mut link_counters = Vec::new();
        for l in &self.world.links {
            for (i, d) in l.dirs.iter().enumerate() {
                let base = l.stat_base + i * LINK_STATS.len();
                for (k, &value) in d.counters.iter().enumerate() {
                    link_counters.push((base + k, value));
                }
            }
        }
        self.world.stats.report_with(&link_counters)
    }
    /// SHA-256 (hex) of the message log, when tracing is on.
    pub fn trace_hash(&self) -> Option<String> {
        self.world.tracer.hash_hex()
    }
    /// The Chrome/Perfetto trace JSON, when tracing is [`TraceMode::Full`].
    pub fn trace_json(&self) -> Option<String> {
        let links: Vec<String> = self.world.links.iter().map(|l| l.name.clone()).collect();
        let vcs: Vec<Vec<String>> = self
            .world
            .links
            .iter()
            .map(|l| l.params.vcs.iter().map(|v| v.name.clone()).collect())
            .collect();
        self.world.tracer.chrome_json(&self.names, &links, &vcs)
    }
    /// Messages and components' notes as data (see
    /// [`crate::trace::Tracer::events_json`]), when tracing is
    /// [`TraceMode::Full`].
    pub fn trace_events_json(&self) -> Option<String> {
        let links: Vec<(String, u32, u32, Vec<String>)> = self
            .world
            .links
            .iter()
            .map(|l| {
                let vcs = l.params.vcs.iter().map(|v| v.name.clone()).collect();
                (l.name.clone(), l.dirs[0].src, l.dirs[0].dst, vcs)
            })
            .collect();
        self.world.tracer.events_json(&self.names, &links)
    }
}

/// A problem found while validating an assembled system.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildError {
    /// Every problem found, one sentence each.
    pub problems: Vec<String>,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the system is not valid: {}", self.problems.join("; "))
    }
}

impl std::error::Error for BuildError {}

struct LinkDecl {
    a: (ComponentId, String),
    b: (ComponentId, String),
    params: LinkParams,
    name: Option<String>,
}

/// Collects components and links, then validates them once in
/// [`build`](SystemBuilder::build).
pub struct SystemBuilder<M: Message> {
    root: String,
    seed: u64,
    trace: TraceMode,
    names: Vec<String>,
    components: Vec<Box<dyn Component<M>>>,
    links: Vec<LinkDecl>,
}

impl<M: Message> SystemBuilder<M> {
    /// A builder whose instances are named `<root>.<name>` and whose random
    /// streams derive from `seed`.
    pub fn new(root: &str, seed: u64) -> Self {
        SystemBuilder {
            root: root.to_string(),
            seed,
            trace: TraceMode::Off,
            names: Vec::new(),
            components: Vec::new(),
            links: Vec::new(),
        }
    }
    /// Sets how much message traffic to record.
    pub fn trace(&mut self, mode: TraceMode) -> &mut Self {
        self.trace = mode;
        self
    }
    /// Adds a component named `name`; returns its id.
    pub fn add<C: Component<M>>(&mut self, name: &str, component: C) -> ComponentId {
        self.names.push(format!("{}.{}", self.root, name));
        self.components.push(Box::new(component));
        ComponentId(self.components.len() as u32 - 1)
    }
    /// Connects port `a_port` of `a` to port `b_port` of `b` with a link.
    /// Problems (unknown ports, double wiring) are reported by `build`.
    pub fn connect(
        &mut self,
        a: ComponentId,
        a_port: &str,
        b: ComponentId,
        b_port: &str,
        params: LinkParams,
    ) -> LinkId {
        self.links.push(LinkDecl {
            a: (a, a_port.to_string()),
            b: (b, b_port.to_string()),
            params,
            name: None,
        });
        LinkId(self.links.len() as u32 - 1)
    }
    /// Names a link for stats and traces (default `<a>.<port>--<b>.<port>`).
    pub fn name_link(&mut self, link: LinkId, name: &str) -> &mut Self {
        self.links[link.0 as usize].name = Some(format!("{}.{}", self.root, name));
        self
    }

    /// Validates the system and returns it ready to run.
    pub fn build(self) -> Result<Simulation<M>, BuildError> {
        let mut problems = Vec::new();
        let n = self.components.len();
        let specs: Vec<&'static ComponentSpec> = self.components.iter().map(|c| c.spec()).collect();
        for i in 0..n {
            if self.names[..i].contains(&self.names[i]) {
                problems.push(format!("two components are named `{}`", self.names[i]));
            }
        }
        let mut wires: Vec<Vec<Option<(u32, Direction)>>> =
            specs.iter().map(|s| vec![None; s.ports.len()]).collect();
        let mut ends = Vec::with_capacity(self.links.len());
        let mut link_names = Vec::with_capacity(self.links.len());
        for (li, l) in self.links.iter().enumerate() {
            let mut resolved = [(0u32, 0u16); 2];
            for (k, (cid, port)) in [&l.a, &l.b].into_iter().enumerate() {
                let ci = cid.0 as usize;
                if ci >= n {
                    problems.push(format!(
                        "link {li} names component id {ci}, which does not exist"
                    ));
                    continue;
                }
                match specs[ci].port_index(port) {
                    None => {
                        let known: Vec<&str> = specs[ci].ports.iter().map(|p| p.name).collect();
                        problems.push(format!(
                            "component `{}` ({}) has no port `{port}`; its ports are: {}",
                            self.names[ci],
                            specs[ci].type_name,
                            known.join(", ")
                        ));
                    }
                    Some(pi) => {
                        if wires[ci][pi].is_some() {
                            problems.push(format!(
                                "port `{}.{port}` is connected twice",
                                self.names[ci]
                            ));
                        }
                        // A message sent from the first endpoint goes A to B.
                        let dir = if k == 0 {
                            Direction::AtoB
                        } else {
                            Direction::BtoA
                        };
                        wires[ci][pi] = Some((li as u32, dir));
                        resolved[k] = (ci as u32, pi as u16);
                    }
                }
            }
            let name = l.name.clone().unwrap_or_else(|| {
                let nm = |c: &(ComponentId, String)| {
                    let ci = c.0 .0 as usize;
                    format!(
                        "{}.{}",
                        self.names.get(ci).map(String::as_str).unwrap_or("?"),
                        c.1
                    )
                };
                format!("{}--{}", nm(&l.a), nm(&l.b))
            });
            for p in l.params.problems() {
                problems.push(format!("link `{name}` {p}"));
            }
            ends.push(resolved);
            link_names.push(name);
        }
        for (ci, spec) in specs.iter().enumerate() {
            for (pi, port) in spec.ports.iter().enumerate() {
                if port.required && wires[ci][pi].is_none() {
                    problems.push(format!(
                        "port `{}.{}` ({}) is required but not connected: {}",
                        self.names[ci], port.name, spec.type_name, port.description
                    ));
                }
            }
        }
        if !problems.is_empty() {
            return Err(BuildError { problems });
        }

        let mut stats = Stats::new();
        let mut stat_base = Vec::with_capacity(n);
        for (ci, spec) in specs.iter().enumerate() {
            stat_base.push(stats.len_hint());
            for s in spec.stats {
                stats.register(format!("{}.{}", self.names[ci], s.name), s.kind);
            }
        }
        let mut links = Vec::with_capacity(self.links.len());
        for ((decl, ends), name) in self.links.into_iter().zip(ends).zip(link_names) {
            let base = stats.len_hint();
            for dir in ["a_to_b", "b_to_a"] {
                for s in LINK_STATS {
                    stats.register(format!("{name}.{dir}.{s}"), StatKind::Counter);
                }
            }
            links.push(LinkState::new(name, decl.params, ends, base));
        }
        let rngs = self
            .names
            .iter()
            .map(|nm| SimRng::for_path(self.seed, nm))
            .collect();
        Ok(Simulation {
            names: self.names,
            components: self.components,
            world: World {
                queue: EventQueue::new(),
                links,
                wires,
                stats,
                stat_base,
                rngs,
                tracer: Tracer::new(self.trace),
                stop: false,
                horizon: 0,
                reserved: ReservedSends::new(),
            },
            now: 0,
            events: 0,
            order: 0,
            initialized: false,
        })
    }
}
