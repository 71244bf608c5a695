//! ProtoAcc's serializer as a fetch unit (`serializer_fetch = protoacc`):
//! which line reads it issues when, given the lines that have arrived.
//!
//! The structure is ProtoAcc's (Karandikar et al., MICRO 2021, Cohet's
//! [52]; RTL at ucb-bar/protoacc@1b5b569, `src/main/scala`):
//!
//! * **A depth-first frontend** (`descriptortablehandler_serializer.scala`,
//!   `SerDescriptorTableHandler`): for each object it loads the hasbits
//!   (a word of the object: here its first line, so it needs the object's
//!   address), then hands each present field to a field handler; for a
//!   sub-message it loads the sub-object's pointer from the parent's slot,
//!   pushes the sub-message on its stack and walks it completely before
//!   the parent's next field, then hands an end-of-message op to a
//!   handler. It waits for each of its own loads (one at a time).
//! * **Six field handlers** (`protoacc_serializer.scala`: six
//!   `SerFieldHandler` behind `FieldDispatchRouter(6)`), fed round robin
//!   (the router's index advances on every op it hands over), each behind
//!   a 4-entry queue (`FieldDispatchRouter`: `Queue(..., 4)` per handler;
//!   the handler dequeues its op only when done, so the frontend stalls
//!   when the next handler in turn has four ops). A handler works on one
//!   field at a time (`fieldhandler_serializer.scala`): a scalar is one
//!   load of its slot; a string loads its slot (the pointer), then the
//!   `std::string` header (`_M_p`, then the length), then its characters
//!   in 16 B loads issued back to front, as many in flight as its memory
//!   interface's tags allow (`l1shim_interface.scala`:
//!   `numOutstandingReqs = 32`, 128-bit data: 32 x 16 B = 512 B, 8 lines).
//!
//! Here a load is a line read: a line read before is not read again (a
//! later load of it waits for the first one's line, then takes it: the
//! HMC holds it), and the lines are the ones [`Layout::read_plan`] reads
//! for the same fields (an object's hasbits line and its fields' slot
//! lines, a string's `std::string` and buffer), in this walker's order.
//! The ADT (the schema's descriptor table) is the NIC's own (Cohet §V-B1:
//! RpcNIC's schema table; the CXL-NIC the same, assumed), so its loads
//! cost no host read.

use std::collections::{BTreeMap, VecDeque};

use ccsim_devices::rpc::bench::FieldKind;
use ccsim_devices::rpc::layout::{Layout, LINE};
use ccsim_devices::rpc::wire::WorkItem;
use ccsim_kernel::prelude::Tick;

/// libstdc++'s `std::string` (GCC 14 `basic_string.h`: `_M_p`,
/// `_M_string_length`, 16 B of local buffer or capacity).
const STD_STRING: u64 = 32;

/// ProtoAcc's serializer structure (the defaults are its RTL's).
#[derive(Debug, Clone, Copy)]
pub struct WalkerParams {
    /// Field handlers (`FieldDispatchRouter(6)`).
    pub handlers: usize,
    /// Ops a handler's queue holds, the one it works on included
    /// (`Queue(new DescrToHandlerBundle, 4)`).
    pub queue: usize,
    /// Lines of one string a handler keeps in flight (32 tags x 16 B).
    pub string_lines: usize,
}

impl Default for WalkerParams {
    fn default() -> Self {
        WalkerParams {
            handlers: 6,
            queue: 4,
            string_lines: 8,
        }
    }
}

/// One field handler's op: its loads in stages, a stage's lines issued
/// once the stage before has all arrived (a pointer, then what it points
/// to), at most `window` of a stage in flight.
#[derive(Debug, Clone)]
struct HandlerOp {
    item: Option<usize>,
    stages: Vec<(Vec<u64>, usize)>,
    stage: usize,
    next: usize,
}

#[derive(Debug, Clone)]
enum Step {
    /// The frontend loads a line (an object's hasbits, a sub-message's
    /// pointer) and waits for it.
    Load(u64, usize),
    /// The frontend hands an op to handler `h`.
    Dispatch(usize, HandlerOp),
}

/// The walker: the frontend's script, the handlers' queues and the lines'
/// states.
#[derive(Debug)]
pub struct ProtoAccWalker {
    script: Vec<Step>,
    pc: usize,
    handlers: Vec<VecDeque<HandlerOp>>,
    queue: usize,
    /// Per line read: `None` while in flight, else when it arrived.
    lines: BTreeMap<u64, Option<Tick>>,
    /// Lines the DCOH prefetched that no load has used yet.
    prefetched: BTreeMap<u64, ()>,
    /// Loads that found a prefetched line first (the prefetcher's hits).
    prefetch_hits: Vec<u64>,
    /// Of those, the ones whose line had already arrived.
    hidden: u64,
    /// Per work item, when its last line arrived (what the encoder waits
    /// for).
    ready: Vec<Tick>,
    /// New demand reads since the last [`ProtoAccWalker::advance`].
    out: Vec<u64>,
}

fn lines_of(addr: u64, bytes: u64) -> Vec<u64> {
    (addr / LINE..=(addr + bytes.max(1) - 1) / LINE)
        .map(|l| l * LINE)
        .collect()
}

impl ProtoAccWalker {
    /// The walker for one response laid out as `layout`, whose fields are
    /// `items` (wire order).
    pub fn new(layout: &Layout, items: &[WorkItem], p: WalkerParams) -> ProtoAccWalker {
        let mut fields: Vec<Vec<usize>> = vec![Vec::new(); layout.objects.len()];
        for (i, it) in items.iter().enumerate() {
            fields[it.object as usize].push(i);
        }
        let mut script = Vec::new();
        let mut turn = 0usize;
        if !layout.objects.is_empty() {
            Self::object(layout, 0, &fields, p, &mut turn, &mut script);
        }
        ProtoAccWalker {
            script,
            pc: 0,
            handlers: vec![VecDeque::new(); p.handlers.max(1)],
            queue: p.queue.max(1),
            lines: BTreeMap::new(),
            prefetched: BTreeMap::new(),
            prefetch_hits: Vec::new(),
            hidden: 0,
            ready: vec![0; items.len()],
            out: Vec::new(),
        }
    }

    /// The frontend's steps for object `o` (its address known).
    fn object(
        layout: &Layout,
        o: usize,
        fields: &[Vec<usize>],
        p: WalkerParams,
        turn: &mut usize,
        script: &mut Vec<Step>,
    ) {
        let obj = &layout.objects[o];
        let first_item = fields[o].first().copied().unwrap_or(0);
        let dispatch = |op: HandlerOp, script: &mut Vec<Step>, turn: &mut usize| {
            script.push(Step::Dispatch(*turn % p.handlers.max(1), op));
            *turn += 1;
        };
        script.push(Step::Load(obj.addr / LINE * LINE, first_item));
        for (k, &(offset, kind, child, string)) in obj.slots.iter().enumerate() {
            let item = fields[o][k];
            let slot = (obj.addr + offset) / LINE * LINE;
            if let Some(c) = child {
                script.push(Step::Load(slot, item));
                Self::object(layout, c, fields, p, turn, script);
                // The sub-message's key and length: no load.
                dispatch(
                    HandlerOp {
                        item: None,
                        stages: Vec::new(),
                        stage: 0,
                        next: 0,
                    },
                    script,
                    turn,
                );
                continue;
            }
            debug_assert!(kind != FieldKind::Message);
            let mut stages = vec![(vec![slot], 1)];
            if let Some(at) = obj.std_string_at(offset) {
                stages.push((lines_of(at, STD_STRING), 2));
            }
            if let Some(s) = string {
                let (_, addr, n) = obj.strings[s];
                // Back to front, as the handler issues its 16 B loads.
                let mut data = lines_of(addr, n);
                data.reverse();
                stages.push((data, p.string_lines.max(1)));
            }
            dispatch(
                HandlerOp {
                    item: Some(item),
                    stages,
                    stage: 0,
                    next: 0,
                },
                script,
                turn,
            );
        }
    }

    /// Asks for `line` on behalf of `item`: a new read, or the one already
    /// asked for. Returns when its line arrived, if it has.
    fn load(&mut self, line: u64, item: Option<usize>) -> Option<Tick> {
        let state = match self.lines.get(&line) {
            Some(&s) => s,
            None => {
                self.lines.insert(line, None);
                self.out.push(line);
                None
            }
        };
        if self.prefetched.remove(&line).is_some() {
            self.prefetch_hits.push(line);
            self.hidden += u64::from(state.is_some());
        }
        if let (Some(t), Some(i)) = (state, item) {
            self.ready[i] = self.ready[i].max(t);
        }
        state
    }

    /// Whether `line` has arrived (it was asked for).
    fn arrived(&self, line: u64) -> bool {
        matches!(self.lines.get(&line), Some(Some(_)))
    }

    /// Moves the frontend and the handlers as far as the arrived lines
    /// let them; returns the new demand reads, in the order asked.
    pub fn advance(&mut self) -> Vec<u64> {
        loop {
            let mut moved = false;
            for h in 0..self.handlers.len() {
                moved |= self.step_handler(h);
            }
            moved |= self.step_frontend();
            if !moved {
                break;
            }
        }
        std::mem::take(&mut self.out)
    }

    fn step_frontend(&mut self) -> bool {
        let Some(step) = self.script.get(self.pc).cloned() else {
            return false;
        };
        match step {
            Step::Load(line, item) => {
                if self.load(line, Some(item)).is_some() {
                    self.pc += 1;
                    return true;
                }
                false
            }
            Step::Dispatch(h, op) => {
                if self.handlers[h].len() < self.queue {
                    self.handlers[h].push_back(op);
                    self.pc += 1;
                    return true;
                }
                false
            }
        }
    }

    fn step_handler(&mut self, h: usize) -> bool {
        let mut moved = false;
        loop {
            let Some(mut op) = self.handlers[h].front().cloned() else {
                return moved;
            };
            let Some((lines, window)) = op.stages.get(op.stage).cloned() else {
                // Done: the handler takes its next op.
                self.handlers[h].pop_front();
                moved = true;
                continue;
            };
            let mut issued = false;
            while op.next < lines.len() {
                let open = lines[..op.next]
                    .iter()
                    .filter(|l| !self.arrived(**l))
                    .count();
                if open >= window {
                    break;
                }
                self.load(lines[op.next], op.item);
                op.next += 1;
                issued = true;
            }
            let done = op.next == lines.len() && lines.iter().all(|l| self.arrived(*l));
            if done {
                for &l in &lines {
                    self.load(l, op.item);
                }
                op.stage += 1;
                op.next = 0;
            }
            let progressed = issued || done;
            *self.handlers[h].front_mut().expect("the op") = op;
            if !progressed {
                return moved;
            }
            moved = true;
        }
    }

    /// `line` arrived at `at`.
    pub fn arrive(&mut self, line: u64, at: Tick) {
        self.lines.insert(line, Some(at));
    }

    /// The DCOH prefetches `line` (not asked for before): a later load of
    /// it waits for it. Returns whether it is new.
    pub fn prefetch(&mut self, line: u64) -> bool {
        if self.lines.contains_key(&line) {
            return false;
        }
        self.lines.insert(line, None);
        self.prefetched.insert(line, ());
        true
    }

    /// The prefetched lines a load used first since the last call.
    pub fn take_prefetch_hits(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.prefetch_hits)
    }

    /// Prefetched lines that had arrived when a load first asked for them.
    pub fn prefetches_hidden(&self) -> u64 {
        self.hidden
    }

    /// Whether every field was handed over and handled.
    pub fn done(&self) -> bool {
        self.pc == self.script.len() && self.handlers.iter().all(|q| q.is_empty())
    }

    /// Per work item, when the last line it needs arrived.
    pub fn ready(&self) -> &[Tick] {
        &self.ready
    }

    /// The demand lines read so far.
    pub fn demand_lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines
            .keys()
            .copied()
            .filter(|l| !self.prefetched.contains_key(l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccsim_devices::rpc::layout::Object;

    fn object(addr: u64, slots: Vec<(u64, FieldKind, Option<usize>, Option<usize>)>) -> Object {
        Object {
            addr,
            bytes: 64,
            parent: None,
            strings: Vec::new(),
            slots,
            std_strings: Vec::new(),
        }
    }

    fn item(object: u32, kind: FieldKind) -> WorkItem {
        WorkItem {
            field: 1,
            kind,
            depth: 0,
            header_bytes: 1,
            payload_bytes: 8,
            offset: 0,
            object,
        }
    }

    /// Completes every read in flight at `t`, as a fixed round trip would.
    fn round(w: &mut ProtoAccWalker, open: &mut Vec<u64>, t: Tick) {
        for l in open.drain(..) {
            w.arrive(l, t);
        }
        open.extend(w.advance());
    }

    /// The frontend walks a sub-message before the parent's next field,
    /// one dependent load at a time: a chain of nested objects costs a
    /// round trip each, whatever the handlers.
    #[test]
    fn the_frontend_walks_nested_objects_one_load_at_a_time() {
        // root (0x1000) -> child (0x2000) -> grandchild (0x3000), each
        // with one scalar after its sub-message.
        let layout = Layout {
            objects: vec![
                object(
                    0x1000,
                    vec![
                        (8, FieldKind::Message, Some(1), None),
                        (16, FieldKind::Varint, None, None),
                    ],
                ),
                object(
                    0x2000,
                    vec![
                        (8, FieldKind::Message, Some(2), None),
                        (16, FieldKind::Varint, None, None),
                    ],
                ),
                object(0x3000, vec![(8, FieldKind::Varint, None, None)]),
            ],
            ..Layout::default()
        };
        let items = vec![
            item(0, FieldKind::Message),
            item(1, FieldKind::Message),
            item(2, FieldKind::Varint),
            item(1, FieldKind::Varint),
            item(0, FieldKind::Varint),
        ];
        let mut w = ProtoAccWalker::new(&layout, &items, WalkerParams::default());
        let mut open = w.advance();
        assert_eq!(open, vec![0x1000], "the root's hasbits first");
        let mut rounds = 0;
        while !w.done() {
            rounds += 1;
            round(&mut w, &mut open, rounds * 100);
            assert!(rounds < 10, "the walk ends");
        }
        // root, child, grandchild: three dependent loads (the slots share
        // the objects' lines).
        assert_eq!(rounds, 3);
        assert_eq!(
            w.ready()[2],
            300,
            "the grandchild's field after three trips"
        );
        assert_eq!(w.ready()[4], 100, "the root's scalar from the root's line");
    }

    /// A long string: pointer, std::string, then its characters, at most
    /// eight lines in flight, back to front.
    #[test]
    fn a_string_takes_three_dependent_stages_and_eight_lines_at_a_time() {
        let mut root = object(0x1000, vec![(8, FieldKind::Bytes, None, Some(0))]);
        root.std_strings = vec![(8, 0x2000)];
        root.strings = vec![(8, 0x10_000, 20 * LINE)];
        let layout = Layout {
            objects: vec![root],
            ..Layout::default()
        };
        let items = vec![item(0, FieldKind::Bytes)];
        let mut w = ProtoAccWalker::new(&layout, &items, WalkerParams::default());
        let mut open = w.advance();
        assert_eq!(open, vec![0x1000]);
        round(&mut w, &mut open, 100);
        assert_eq!(open, vec![0x2000], "the std::string after the slot");
        round(&mut w, &mut open, 200);
        assert_eq!(open.len(), 8, "eight lines of the buffer in flight");
        assert_eq!(open[0], 0x10_000 + 19 * LINE, "back to front");
        let mut t = 200;
        while !w.done() {
            t += 100;
            round(&mut w, &mut open, t);
        }
        assert_eq!(t, 500, "20 lines, 8 at a time: three more trips");
        assert_eq!(w.ready()[0], 500);
    }

    /// Round robin: the seventh field goes to the first handler again,
    /// which takes it only once its queue has room.
    #[test]
    fn fields_go_round_robin_to_six_handlers_behind_four_entry_queues() {
        let slots: Vec<_> = (0..30)
            .map(|k| (k * 8, FieldKind::Bytes, None, Some(k as usize)))
            .collect();
        let mut root = object(0x1000, slots);
        root.bytes = 30 * 8;
        root.std_strings = (0..30).map(|k| (k * 8, 0x2_0000 + k * LINE)).collect();
        root.strings = (0..30)
            .map(|k| (k * 8, 0x10_0000 + k * 4 * LINE, 2 * LINE))
            .collect();
        let layout = Layout {
            objects: vec![root],
            ..Layout::default()
        };
        let items: Vec<_> = (0..30).map(|_| item(0, FieldKind::Bytes)).collect();
        let mut w = ProtoAccWalker::new(&layout, &items, WalkerParams::default());
        let mut open = w.advance();
        round(&mut w, &mut open, 100);
        // The root's lines arrived: each of the six handlers asks for its
        // first string's std::string (and the slots' other lines).
        let strings = open
            .iter()
            .filter(|l| (0x2_0000..0x3_0000).contains(*l))
            .count();
        assert_eq!(strings, 6, "one string per handler at a time");
        assert!(!w.done());
    }
}
