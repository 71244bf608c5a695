//! Deserialization in a stream of requests, simulated (`stream_us`,
//! `rpcnic_stream_us`, `stream_speedup`).
//!
//! RpcNIC's artifact times its deserializer over a stream (RC4ML/RPCNIC
//! @0db09f6 doc/EXP.md §1: 100,000 requests, 8 outstanding;
//! src/chisel/rpcnic/FpgaCloudDeser.scala's timer from the first command to
//! the last request's data read), and Cohet §V-B1 step 3 gives RpcNIC a
//! ring whose head the NIC increments and whose tail the CPU increments
//! "to indicate completion": a queue. Here `stream_requests` requests
//! (the point's messages in turn: a bench's stream of its ten message
//! types) arrive back to back at each design, and one simulation run per
//! design carries them all, with the components and costs of the
//! one-request runs:
//!
//! ```text
//!  CXL-NIC   decoder k ─┬─ NC-P pushes of k (window 128) ─ every GO ─ head push k ─┐
//!            decoder k+1 ┘   (the DCOH issues in release order, all requests)       │
//!  host core                                 ring head load (LLC) ─ tail store k ◄──┘
//!
//!  RpcNIC    decoder k ─ temp buffers' DMAs ─┬─ head DMA k ──────────────┐
//!            decoder k+1 (once k's buffers are sent)                      │
//!  host core        copy of k (lines: DMA area → application objects),  ◄┘
//!                   CopyFrom's instructions and mallocs, tail store k
//! ```
//!
//! * The NIC takes request k once its decoder is free and the ring has a
//!   slot: request k − `stream_outstanding` has its tail (the CPU's store
//!   of it completed; assumed: the NIC learns it then, the read of the
//!   tail not timed).
//! * **CXL-NIC**: one run of `[systems.cxl]`; the DCOH's program grows as
//!   the decoder releases lines (each line pushed, an ItoMWr with its
//!   bytes, once its last field is decoded), so request k's head push
//!   (after every GO of k's pushes and k − 1's head: the writes are
//!   unordered, the ring's head is not) does not hold up k + 1's pushes.
//!   The head is one line with one push in flight at a time; with
//!   `stream_head_coalesced` a push publishes, besides the request it was
//!   released for, every later one whose pushes have their GO by its
//!   issue (the head is a count: its value covers them), otherwise each
//!   request waits for a head push of its own.
//!   The host core polls the head (its line in the LLC) and stores the
//!   tail. Request k completes when its head push does (the one-request
//!   time's end). Objects stay allocated while their request is
//!   outstanding (its block freed before request k + outstanding is
//!   placed), and a push carries the line as memory holds it, this
//!   request's bytes over the others' (two live requests may share a
//!   line, never a byte: checked).
//! * **RpcNIC**: its NIC side (the decoder, held while each temp buffer
//!   is sent; the buffers' and the head's DMAs to the polling core
//!   seeing the head) is each message's one-request PCIe run, composed
//!   on the NIC's timeline (the PCIe model is a system of its own: the
//!   head's DMA of k and the buffers of k + 1 do not contend on the link
//!   here). The host core's side runs in `[systems.cxl]` as in the
//!   one-request copy: the DMA area's lines (a slot of its own per
//!   request: a DMA write would invalidate the core's copies of a reused
//!   slot), the stores into the application's objects (allocated anew by
//!   `CopyFrom`, freed after the request: the next request's blocks are
//!   the ones just freed, still in the core's caches), then CopyFrom's
//!   instructions and mallocs, then the tail store. Request k completes
//!   when its CopyFrom is done (the one-request time's end).
//! * Time per request: (completion of the last − completion of request
//!   f) / (N − 1 − f), f the first request at or after
//!   `stream_outstanding` that leaves whole rounds of the point's messages
//!   (N = 64, 8 outstanding, 10 messages: f = 13, five rounds): after the
//!   ring has filled and the caches have seen a ring's worth of requests
//!   (the steady state the artifact's 100,000 requests measure), and over
//!   each message type equally often, as the one-request means.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use ccsim_devices::rpc::engine::Pipeline;
use ccsim_devices::rpc::layout::{Layout, LINE, STD_STRING};
use ccsim_kernel::prelude::*;
use ccsim_platform::BuiltSystem;

use super::{
    heap_allocator, host_alloc_time, line_of, lines_in, messages, object_image, string_layout,
    Message, Point, RunError, CORE_CYCLE, CORE_WINDOW, DMA_BUF, FIELD_INSTRUCTIONS, HEAP,
    RING_HEAD, WARMUP_SEED,
};
use crate::program_run::{append_and_wake, build_for_program, no_violation, role_agent};
use crate::werr;

/// The ring's tail line, which the host core stores (next to the head's).
const RING_TAIL: u64 = RING_HEAD + 0x1000;
/// RpcNIC's DMA area in the stream: a slot of this many bytes per request.
const AREA_SLOT: u64 = 64 * 1024;

/// RpcNIC's NIC side of one message, from its one-request PCIe run.
pub(super) struct RpcNicRequest {
    /// The decoder's cycles (its allocations included).
    pub decode: Tick,
    /// The decoder held while the temp buffers are sent.
    pub buffers: Tick,
    /// The buffers' DMAs and the head's, to the polling core seeing it.
    pub dma: Tick,
    /// The temp buffer's contents: the decoded objects (the DMA area).
    pub objects: Vec<u8>,
}

/// A design's simulated stream.
pub(super) struct Stream {
    /// When each request completed (ps).
    pub completions: Vec<Tick>,
    /// Requests whose start waited for a slot of the ring.
    pub slot_waits: u64,
}

impl Stream {
    /// The steady state's time per request (ps), the stream of
    /// `messages` message types: see the module doc.
    pub fn per_request(&self, outstanding: usize, messages: usize) -> f64 {
        let c = &self.completions;
        let last = c.len() - 1;
        // Whole rounds of the messages after the warm-up, so that the
        // mean is over the same requests as the one-request runs'.
        let rounds = ((last - outstanding) / messages).max(1);
        let first = last
            .saturating_sub(rounds * messages)
            .max(outstanding.min(last - 1));
        (c[last] - c[first]) as f64 / (last - first) as f64
    }
}

/// The point's `stream_requests` and `stream_outstanding`.
pub(super) fn stream_shape(params: &Params) -> Result<(usize, usize), RunError> {
    let n = params.uint("stream_requests") as usize;
    let depth = params.uint("stream_outstanding") as usize;
    if n < depth + 2 {
        return Err(werr(format!(
            "rpc_offload: stream_requests = {n} leaves no steady state after stream_outstanding = {depth}: give at least {}",
            depth + 2
        )));
    }
    Ok((n, depth))
}

/// The stream's `n` requests (message `k % msgs.len()`) placed by the
/// point's heap from [`HEAP`], after the same earlier requests as the
/// one-request placement: request k's blocks are freed (in its
/// destructor's order) before request k + `live` is placed.
fn stream_layouts(
    msgs: &[Message],
    point: &Point<'_>,
    n: usize,
    live: usize,
) -> Result<Vec<Layout>, RunError> {
    let params = point.params;
    let mut alloc = heap_allocator(params, HEAP);
    let recycled = params.str("heap") == "recycled";
    let strings = string_layout(params)?;
    if recycled {
        let warm_seed = point.seed ^ WARMUP_SEED;
        for m in messages(point.x, params, warm_seed)?.iter() {
            Layout::place_with(&m.tree, &mut alloc, strings).free(&mut alloc);
        }
    }
    let mut out: Vec<Layout> = Vec::with_capacity(n);
    for k in 0..n {
        if recycled && k >= live {
            out[k - live].free(&mut alloc);
        }
        out.push(Layout::place_with(
            &msgs[k % msgs.len()].tree,
            &mut alloc,
            strings,
        ));
    }
    Ok(out)
}

/// The blocks of `layout` (objects, `std::string`s, string buffers).
fn blocks(layout: &Layout) -> Vec<(u64, u64)> {
    let mut b = Vec::new();
    for o in &layout.objects {
        b.push((o.addr, o.bytes));
        b.extend(o.strings.iter().map(|s| (s.1, s.2)));
        b.extend(o.std_strings.iter().map(|s| (s.1, STD_STRING)));
    }
    b
}

/// The host memory the CXL-NIC's pushes write, byte by byte: its value
/// and the request that wrote it.
#[derive(Default)]
struct Image {
    lines: BTreeMap<u64, ([u8; LINE as usize], [Option<usize>; LINE as usize])>,
}

impl Image {
    /// Writes request `k`'s bytes of `line` (`bytes`, under the mask of
    /// its `blocks`) over the line's value; returns the line to push.
    /// A byte a request still outstanding wrote is a violation.
    fn write(
        &mut self,
        k: usize,
        live: usize,
        line: u64,
        bytes: &[u8],
        blocks: &[(u64, u64)],
    ) -> Result<Vec<u8>, RunError> {
        let e = self
            .lines
            .entry(line)
            .or_insert(([0; LINE as usize], [None; LINE as usize]));
        for &(addr, len) in blocks {
            let (from, to) = (addr.max(line), (addr + len).min(line + LINE));
            for a in from..to {
                let b = (a - line) as usize;
                if let Some(j) = e.1[b] {
                    if j != k && j + live > k {
                        return Err(RunError::Violation {
                            message: format!(
                                "rpc_offload: requests {j} and {k}, both outstanding, share byte {a:#x}"
                            ),
                        });
                    }
                }
                e.0[b] = bytes[b];
                e.1[b] = Some(k);
            }
        }
        Ok(e.0.to_vec())
    }
}

/// Runs the system until the next stop (a completion) or `until`.
fn step(s: &mut BuiltSystem, until: Option<Tick>) -> Result<RunOutcome, RunError> {
    let outcome = match until {
        Some(t) => s.sim.run_until(t),
        None => s.sim.run(),
    };
    no_violation(s)?;
    Ok(outcome)
}

/// When the NIC can start request `k` of a ring `depth` deep: once its
/// decoder is free (`free`), not before `now`, and once request
/// `k - depth` has its tail; `None` while that tail is still to come.
/// A start held back by the ring counts in `slot_waits`.
fn ring_start(
    k: usize,
    depth: usize,
    tail_done: &[Option<Tick>],
    free: Tick,
    now: Tick,
    slot_waits: &mut u64,
) -> Option<Tick> {
    let slot = if k >= depth { tail_done[k - depth]? } else { 0 };
    if slot > free {
        *slot_waits += 1;
    }
    Some(free.max(slot).max(now))
}

/// When request `k`'s head may be published: once its last field is
/// decoded and every one of its pushes has its GO (`None` while it has not
/// started or a push is outstanding).
fn head_ready(
    k: usize,
    start: &[Tick],
    decode: &[Tick],
    left: &[usize],
    last_go: &[Tick],
) -> Option<Tick> {
    (k < start.len() && left[k] == 0).then(|| last_go[k].max(start[k] + decode[k]))
}

/// Hands each program operation of `open` that has completed (a non-zero
/// completion time in its agent's program) to `handle` with that time,
/// removing it from `open`; `handle` may open new operations. Returns
/// whether any had completed.
fn handle_completed(
    s: &mut BuiltSystem,
    open: &mut Vec<(usize, usize, Op)>,
    mut handle: impl FnMut(
        &mut BuiltSystem,
        &mut Vec<(usize, usize, Op)>,
        Op,
        Tick,
    ) -> Result<(), RunError>,
) -> Result<bool, RunError> {
    let mut progress = false;
    let mut i = 0;
    while i < open.len() {
        let (a, idx, op) = open[i];
        let t = s.agent(a).program_times()[idx].1;
        if t == 0 {
            i += 1;
            continue;
        }
        open.swap_remove(i);
        progress = true;
        handle(s, open, op, t)?;
    }
    Ok(progress)
}

/// A DCOH operation waiting for its release: (release, order, request,
/// its push's index, or `None` for the request's head).
type Release = (Tick, u64, usize, Option<usize>);

/// What a program operation the driver waits for is.
#[derive(Clone, Copy)]
enum Op {
    Push(usize),
    /// The ring's head push publishing requests `first..=last`.
    Head(usize, usize),
    Area(usize),
    Copy(usize),
    /// The tail store of requests `first..=last`.
    Tail(usize, usize),
    Poll,
}

/// The CXL-NIC's stream: see the module doc.
pub(super) fn cxl_stream(
    point: &Point<'_>,
    msgs: &[Message],
    pipe: &Pipeline,
) -> Result<Stream, RunError> {
    let (n, depth) = stream_shape(point.params)?;
    let layouts = stream_layouts(msgs, point, n, depth)?;
    // Per request: its decoder time and its pushes (release offset from
    // the decoder's start, line), in release order.
    let mut decode = Vec::with_capacity(n);
    let mut pushes: Vec<Vec<(Tick, u64)>> = Vec::with_capacity(n);
    let mut images = Vec::with_capacity(n);
    for (k, l) in layouts.iter().enumerate() {
        let m = &msgs[k % msgs.len()];
        let done = pipe.decode_finish_times(&m.items, &l.item_allocations(&m.items));
        decode.push(*done.last().unwrap_or(&0));
        let mut p: Vec<(Tick, u64)> = l
            .write_plan(&m.items)
            .iter()
            .map(|o| (o.after.map_or(0, |i| done[i]), o.line))
            .collect();
        p.sort_by_key(|&(t, _)| t);
        pushes.push(p);
        images.push((object_image(m, l), blocks(l)));
    }
    let system = "cxl";
    let mut s = build_for_program(point.platform, system, point)?;
    let dcoh = role_agent(&s, "device", system)?;
    let core = role_agent(&s, "core", system)?;
    let window = point.params.uint("window") as usize;
    for (a, w) in [(dcoh, window), (core, CORE_WINDOW)] {
        let agent = s.agent_mut(a);
        agent.set_program(&[], w).map_err(werr)?;
        agent.set_program_stop_on_completion(true).map_err(werr)?;
    }
    let mut image = Image::default();
    // The DCOH's operations not yet released: (release, order, request,
    // push index or None for the head).
    let mut pending: BinaryHeap<Reverse<Release>> = BinaryHeap::new();
    let mut order = 0u64;
    let mut open: Vec<(usize, usize, Op)> = Vec::new();
    let mut start: Vec<Tick> = Vec::with_capacity(n);
    let mut left: Vec<usize> = pushes.iter().map(Vec::len).collect();
    let mut last_go = vec![0; n];
    let mut head_done: Vec<Option<Tick>> = vec![None; n];
    let mut tail_done: Vec<Option<Tick>> = vec![None; n];
    let mut polls: Vec<(usize, usize)> = Vec::new();
    let (mut dec_free, mut next_head, mut slot_waits) = (0, 0, 0);
    // A head push is released or in flight: the ring's head is one line,
    // written in order, one push at a time.
    let mut head_busy = false;
    let coalesced = point.params.bool("stream_head_coalesced");
    let mut idle = false;
    loop {
        let mut now = s.sim.now();
        if idle {
            // Nothing is left to happen before the next release: the
            // DCOH's next operations are due then.
            if let Some(&Reverse((t, ..))) = pending.peek() {
                now = now.max(t);
            }
        }
        // The decoder takes the next requests the ring has room for.
        while start.len() < n {
            let k = start.len();
            let Some(st) = ring_start(k, depth, &tail_done, dec_free, now, &mut slot_waits) else {
                break;
            };
            start.push(st);
            dec_free = st + decode[k];
            for (i, &(off, _)) in pushes[k].iter().enumerate() {
                pending.push(Reverse((st + off, order, k, Some(i))));
                order += 1;
            }
        }
        // Heads in ring order, each once its request's pushes have their
        // GO and the previous head push is done.
        let ready = if head_busy {
            None
        } else {
            head_ready(next_head, &start, &decode, &left, &last_go)
        };
        if let Some(at) = ready {
            let k = next_head;
            // Heads are published in ring order: no push in flight means
            // every earlier request's head is done.
            let prev = if k == 0 {
                0
            } else {
                head_done[k - 1].expect("the previous head is done")
            };
            let at = at.max(prev);
            pending.push(Reverse((at, order, k, None)));
            order += 1;
            head_busy = true;
        }
        // The DCOH issues what is released by now, in release order.
        while let Some(&Reverse((t, _, k, what))) = pending.peek() {
            if t > now {
                break;
            }
            pending.pop();
            let (line, data, op) = match what {
                Some(i) => {
                    let line = pushes[k][i].1;
                    let ((base, img), bl) = &images[k];
                    let data = image.write(k, depth, line, &line_of(img, *base, line), bl)?;
                    (line, data, Op::Push(k))
                }
                None => {
                    // A coalesced head publishes every later request
                    // whose pushes have their GO by now as well.
                    let mut last = k;
                    while coalesced
                        && head_ready(last + 1, &start, &decode, &left, &last_go)
                            .is_some_and(|r| r <= t)
                    {
                        last += 1;
                    }
                    next_head = last + 1;
                    (
                        RING_HEAD,
                        (last as u64 + 1).to_le_bytes().to_vec(),
                        Op::Head(k, last),
                    )
                }
            };
            let idx = append_and_wake(&mut s, dcoh, &[(line / LINE, "write_line")], t)?;
            s.agent_mut(dcoh)
                .set_program_value(idx, &data)
                .map_err(werr)?;
            open.push((dcoh, idx, op));
        }
        if tail_done.iter().all(Option::is_some) {
            break;
        }
        let until = pending.peek().map(|r| r.0 .0);
        let outcome = step(&mut s, until)?;
        idle = outcome == RunOutcome::Drained;
        let progress = handle_completed(&mut s, &mut open, |s, open, op, t| {
            match op {
                Op::Push(k) => {
                    left[k] -= 1;
                    last_go[k] = last_go[k].max(t);
                }
                Op::Head(k, last) => {
                    head_busy = false;
                    head_done[k..=last].fill(Some(t));
                    // The host core sees the head in its LLC, then stores
                    // the tail.
                    let first = append_and_wake(
                        s,
                        core,
                        &[(RING_HEAD / LINE, "load"), (RING_TAIL / LINE, "store")],
                        t,
                    )?;
                    let c = s.agent_mut(core);
                    c.set_program_snapshot(first).map_err(werr)?;
                    c.set_program_value(first + 1, &(last as u64 + 1).to_le_bytes())
                        .map_err(werr)?;
                    polls.push((last, first));
                    open.push((core, first, Op::Poll));
                    open.push((core, first + 1, Op::Tail(k, last)));
                }
                Op::Tail(k, last) => tail_done[k..=last].fill(Some(t)),
                _ => {}
            }
            Ok(())
        })?;
        if !progress && outcome == RunOutcome::Drained && pending.is_empty() {
            return Err(werr("rpc_offload: the CXL-NIC's stream stopped short"));
        }
    }
    // Every line the pushes wrote holds, for the host, what the last
    // push of it carried (the decoded objects' bytes).
    let lines: Vec<u64> = image.lines.keys().copied().collect();
    let ops: Vec<(u64, &str)> = lines.iter().map(|&l| (l / LINE, "load")).collect();
    let now = s.sim.now();
    let first = append_and_wake(&mut s, core, &ops, now)?;
    for i in 0..ops.len() {
        s.agent_mut(core)
            .set_program_snapshot(first + i)
            .map_err(werr)?;
    }
    s.agent_mut(core)
        .set_program_stop_on_completion(false)
        .map_err(werr)?;
    step(&mut s, None)?;
    let found = s.agent(core).program_found();
    // The core saw each request's head (or a later one) in the ring.
    for &(k, idx) in &polls {
        let got = found[idx].map(|l| u64::from_le_bytes(l[..8].try_into().expect("8 bytes")));
        if !got.is_some_and(|h| h > k as u64 && h <= n as u64) {
            return Err(RunError::Violation {
                message: format!(
                    "rpc_offload: the CPU read the ring's head as {got:?} after request {k}'s push"
                ),
            });
        }
    }
    for (i, l) in lines.iter().enumerate() {
        let want = &image.lines[l].0;
        if found[first + i].as_ref().map(|x| &x[..LINE as usize]) != Some(&want[..]) {
            return Err(RunError::Violation {
                message: format!(
                    "rpc_offload: in the CXL-NIC's stream the CPU read line {l:#x} as {:?}, not the pushed bytes",
                    found[first + i]
                ),
            });
        }
    }
    Ok(Stream {
        completions: head_done.into_iter().map(|t| t.expect("done")).collect(),
        slot_waits,
    })
}

/// RpcNIC's stream: see the module doc. `nic[j]` is message j's NIC side.
pub(super) fn rpcnic_stream(
    point: &Point<'_>,
    msgs: &[Message],
    nic: &[RpcNicRequest],
) -> Result<Stream, RunError> {
    let (n, depth) = stream_shape(point.params)?;
    let params = point.params;
    let copy = params.bool("rpcnic_copy");
    let ddio = params.bool("rpcnic_ddio");
    // The application's objects: CopyFrom allocates them, the request
    // done frees them before the next.
    let apps = stream_layouts(msgs, point, n, 1)?;
    let system = "cxl";
    let mut s = build_for_program(point.platform, system, point)?;
    let core = role_agent(&s, "core", system)?;
    let device = role_agent(&s, "device", system)?;
    for (a, w) in [
        (core, CORE_WINDOW),
        (device, params.uint("window") as usize),
    ] {
        let agent = s.agent_mut(a);
        agent.set_program(&[], w).map_err(werr)?;
        agent.set_program_stop_on_completion(true).map_err(werr)?;
    }
    let area = |k: usize| DMA_BUF + k as u64 * AREA_SLOT;
    if let Some(r) = nic.iter().find(|r| r.objects.len() as u64 > AREA_SLOT) {
        return Err(werr(format!(
            "rpc_offload: a request's {} B of decoded objects exceed the stream's DMA slot of {AREA_SLOT} B",
            r.objects.len()
        )));
    }
    let mut after: Vec<Option<usize>> = Vec::new();
    let mut open: Vec<(usize, usize, Op)> = Vec::new();
    let mut start: Vec<Tick> = Vec::with_capacity(n);
    let mut visible: Vec<Tick> = Vec::with_capacity(n);
    // DDIO: when each request's DMA area is in the LLC.
    let mut placed: Vec<Option<Tick>> = vec![if ddio { None } else { Some(0) }; n];
    let mut area_left = vec![0usize; n];
    let mut copy_left = vec![0usize; n];
    let mut copy_done = vec![0; n];
    let mut completion: Vec<Option<Tick>> = vec![None; n];
    let mut tail_done: Vec<Option<Tick>> = vec![None; n];
    let mut area_loads: Vec<(usize, usize, u64)> = Vec::new();
    let (mut dec_free, mut next_cpu, mut slot_waits) = (0, 0, 0);
    loop {
        let now = s.sim.now();
        // The NIC takes the next requests the ring has room for.
        while start.len() < n {
            let k = start.len();
            let r = &nic[k % nic.len()];
            let Some(st) = ring_start(k, depth, &tail_done, dec_free, now, &mut slot_waits) else {
                break;
            };
            start.push(st);
            dec_free = st + r.decode + r.buffers;
            // PCIe orders the heads' posted writes.
            let seen = (st + r.decode + r.dma).max(visible.last().copied().unwrap_or(0));
            visible.push(seen);
            if ddio {
                // The DMA's writes allocate in the LLC (untimed there: the
                // DMA's time is the PCIe run's), from the DMA's start.
                let lines: Vec<u64> = lines_in(area(k), r.objects.len() as u64).collect();
                let ops: Vec<(u64, &str)> =
                    lines.iter().map(|&l| (l / LINE, "write_line")).collect();
                let first = append_and_wake(&mut s, device, &ops, st + r.decode)?;
                for (i, &l) in lines.iter().enumerate() {
                    s.agent_mut(device)
                        .set_program_value(first + i, &line_of(&r.objects, area(k), l))
                        .map_err(werr)?;
                    open.push((device, first + i, Op::Area(k)));
                }
                area_left[k] = lines.len();
            }
        }
        // The core takes the next request once it is done with the one
        // before and sees its head.
        if next_cpu < start.len() {
            let k = next_cpu;
            let ready = if k == 0 { Some(0) } else { completion[k - 1] };
            if let (Some(prev), Some(placed)) = (ready, placed[k]) {
                let release = visible[k].max(prev).max(placed);
                let m = &msgs[k % msgs.len()];
                let r = &nic[k % nic.len()];
                if copy {
                    let loads: Vec<u64> = lines_in(area(k), r.objects.len() as u64).collect();
                    let mut dst: Vec<u64> = apps[k]
                        .write_plan(&m.items)
                        .iter()
                        .map(|o| o.line)
                        .collect();
                    dst.dedup();
                    let mut ops: Vec<(u64, &str)> =
                        loads.iter().map(|&l| (l / LINE, "load")).collect();
                    ops.extend(dst.iter().map(|&l| (l / LINE, "store")));
                    let first = append_and_wake(&mut s, core, &ops, release)?;
                    // As the one-request copy: each store waits for the
                    // load of its source line.
                    after.resize(first, None);
                    after.extend(std::iter::repeat_n(None, loads.len()));
                    let (nl, ns) = (loads.len(), dst.len());
                    after.extend((0..ns).map(|i| Some(first + (i * nl / ns).min(nl - 1))));
                    s.agent_mut(core)
                        .set_program_after(after.clone())
                        .map_err(werr)?;
                    for i in 0..ops.len() {
                        open.push((core, first + i, Op::Copy(k)));
                    }
                    if ddio {
                        for (i, &l) in loads.iter().enumerate() {
                            s.agent_mut(core)
                                .set_program_snapshot(first + i)
                                .map_err(werr)?;
                            area_loads.push((k, first + i, l));
                        }
                    }
                    copy_left[k] = ops.len();
                    copy_done[k] = release;
                } else {
                    // The application uses the DMA area in place: done once
                    // the head is seen.
                    finish_request(&mut s, core, k, release, &mut completion, &mut open)?;
                }
                next_cpu += 1;
            }
        }
        if tail_done.iter().all(Option::is_some) {
            break;
        }
        let outcome = step(&mut s, None)?;
        let progress = handle_completed(&mut s, &mut open, |s, open, op, t| {
            match op {
                Op::Area(k) => {
                    area_left[k] -= 1;
                    if area_left[k] == 0 {
                        placed[k] = Some(t.max(placed[k].unwrap_or(0)));
                    }
                }
                Op::Copy(k) => {
                    copy_left[k] -= 1;
                    copy_done[k] = copy_done[k].max(t);
                    if copy_left[k] == 0 {
                        // Then CopyFrom's instructions per field and its
                        // mallocs.
                        let m = &msgs[k % msgs.len()];
                        let software = m.items.len() as Tick * FIELD_INSTRUCTIONS * CORE_CYCLE
                            + host_alloc_time(params, &apps[k]);
                        let at = copy_done[k] + software;
                        finish_request(s, core, k, at, &mut completion, open)?;
                    }
                }
                Op::Tail(k, last) => tail_done[k..=last].fill(Some(t)),
                _ => {}
            }
            Ok(())
        })?;
        if !progress && outcome == RunOutcome::Drained {
            return Err(werr("rpc_offload: RpcNIC's stream stopped short"));
        }
    }
    // With DDIO the copy read the bytes the DMA wrote.
    let found = s.agent(core).program_found();
    for &(k, idx, l) in &area_loads {
        let want = line_of(&nic[k % nic.len()].objects, area(k), l);
        if found[idx].as_ref().map(|x| &x[..LINE as usize]) != Some(&want[..]) {
            return Err(RunError::Violation {
                message: format!(
                    "rpc_offload: in RpcNIC's stream the CPU read line {l:#x} of request {k}'s DMA area as {:?}, not the bytes the DMA wrote",
                    found[idx]
                ),
            });
        }
    }
    Ok(Stream {
        completions: completion.into_iter().map(|t| t.expect("done")).collect(),
        slot_waits,
    })
}

/// RpcNIC's request `k` is done at `at`: the core stores the ring's tail.
fn finish_request(
    s: &mut BuiltSystem,
    core: usize,
    k: usize,
    at: Tick,
    completion: &mut [Option<Tick>],
    open: &mut Vec<(usize, usize, Op)>,
) -> Result<(), RunError> {
    completion[k] = Some(at);
    let idx = append_and_wake(s, core, &[(RING_TAIL / LINE, "store")], at)?;
    s.agent_mut(core)
        .set_program_value(idx, &(k as u64 + 1).to_le_bytes())
        .map_err(werr)?;
    open.push((core, idx, Op::Tail(k, k)));
    Ok(())
}
