//! The `core` component: a minimal in-order CPU core that runs a program of
//! memory, MMIO and software-cost operations.
//!
//! ```text
//!   program: [Op] ──► core ──mem──► host_memory (later: L1/L2 caches)
//!                       └──io───► root_complex ──► PCIe device
//! ```
//!
//! The core issues one operation per `issue_cycles` at `clock_ghz`. Memory
//! loads and stores may overlap up to `max_outstanding`; a [`Op::Fence`]
//! waits for all of them. MMIO follows the rules of device memory:
//!
//! * **Write combining.** Stores to a write-combining region gather in a
//!   buffer of `wc_bytes` (ThunderX-1: 512 bits, PIO paper §4). The buffer is
//!   flushed as one MMIO write when it fills, when a store falls outside it,
//!   at a fence, or before an uncached access. Uncached stores go out one by
//!   one.
//! * **Uncached reads** are split into `uncached_read_bytes` pieces (128 bits
//!   on ThunderX-1) and at most `max_mmio_reads` are outstanding (one on
//!   ThunderX-1: a non-posted read blocks the next).
//!
//! Software costs (system calls, driver code, interrupt handlers) are
//! [`Op::Compute`] delays; [`Op::Instructions`] converts an instruction count
//! with the core's `ipc`, so one driver description serves fast and slow
//! cores. [`Op::Mark`] records a timestamp for the workload to measure.
//!
//! **The periodic timer interrupt** (`timer_hz` > 0; off by default, the
//! tickless kernel). A stock Linux kernel interrupts every core `timer_hz`
//! times a second (CONFIG_HZ=250 on Ubuntu's generic arm64 kernel; PIO
//! paper §6.3: "the only disturbance from Linux would be the 250 Hz timer
//! interrupt present on all cores"), and each tick runs its handler for
//! `tick_ns`. The ticks' phase is drawn from the run's seed. A tick that
//! falls inside a software operation delays it by the handler's time; a
//! tick that falls while the core waits (a non-posted read, a poll, an
//! interrupt) delays the next operation only if the handler is still
//! running when the wait ends. [`Core::ticks`] counts the ticks that cost
//! time.

use std::collections::{BTreeMap, VecDeque};

use ccsim_kernel::prelude::*;

use crate::msg::{onchip_bytes, MemReq, MemResp, Msg};
use crate::util::complete;

/// One operation of a core's program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Busy for a fixed time (ps).
    Compute(Tick),
    /// Busy for this many instructions at the core's clock and `ipc`.
    Instructions(u64),
    /// Cacheable load from memory; the data is kept in [`Core::loads`].
    Load {
        /// Address.
        addr: u64,
        /// Bytes.
        len: u32,
    },
    /// Cacheable store to memory.
    Store {
        /// Address.
        addr: u64,
        /// Bytes stored.
        data: Vec<u8>,
    },
    /// A copy of `data` into device space with stores of `store_bytes` each,
    /// write-combined if `wc`.
    MmioWrite {
        /// Device address.
        addr: u64,
        /// Bytes stored.
        data: Vec<u8>,
        /// Whether the mapping is write-combining.
        wc: bool,
    },
    /// An uncached copy of `len` bytes out of device space; the data is kept
    /// in [`Core::mmio_loads`].
    MmioRead {
        /// Device address.
        addr: u64,
        /// Bytes.
        len: u32,
    },
    /// Barrier: flush the write-combining buffer and wait for every
    /// outstanding memory operation.
    Fence,
    /// Spin on a little-endian `u32` in memory until it equals `value`; each
    /// iteration is one load plus `loop_instructions`.
    PollU32 {
        /// Address polled.
        addr: u64,
        /// Value that ends the loop.
        value: u32,
        /// Instructions per loop iteration besides the load.
        loop_instructions: u64,
    },
    /// Spin on a little-endian `u32` in **device** space (a status register
    /// behind the root complex) until it equals `value`; each iteration is
    /// one uncached MMIO read (a non-posted round trip) plus
    /// `loop_instructions`.
    PollMmioU32 {
        /// Device address polled.
        addr: u64,
        /// Value that ends the loop.
        value: u32,
        /// Instructions per loop iteration besides the read.
        loop_instructions: u64,
    },
    /// Sleep until an interrupt with this vector arrives (or has arrived).
    WaitInterrupt(u32),
    /// Record the current tick under this id in [`Core::marks`].
    Mark(u32),
    /// Arm the software watchdog: if the program has not reached the next
    /// [`Op::Disarm`] within `after` (ps), the core stops the run and
    /// records [`Core::timed_out`] (a driver's wait with a timeout).
    Arm {
        /// Time allowed.
        after: Tick,
        /// What is waited for, for the report.
        what: String,
    },
    /// Disarm the watchdog armed by [`Op::Arm`].
    Disarm,
}

/// Declaration of `core`.
pub static CORE: ComponentSpec = ComponentSpec {
    type_name: "core",
    description: "A minimal in-order core running a program of loads, stores, fences, MMIO and software-cost operations, with a write-combining buffer and uncached-read rules for device memory.",
    params: &[
        ParamSpec { name: "clock_ghz", kind: ParamKind::Float, default: ParamDefault::Float(2.0), unit: "GHz", range: ParamRange::positive(), from: "PIO paper §3: ThunderX-1 cores at 2.0 GHz", description: "Core clock." },
        ParamSpec { name: "ipc", kind: ParamKind::Float, default: ParamDefault::Float(1.0), unit: "instructions/cycle", range: ParamRange::positive(), from: "assumed", description: "Sustained instructions per cycle for software-cost operations (driver and kernel code)." },
        ParamSpec { name: "issue_cycles", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cycles", range: ParamRange::at_least(0.0), from: "assumed", description: "Cycles to issue one memory or MMIO operation." },
        ParamSpec { name: "max_outstanding", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "operations", range: ParamRange::at_least(1.0), from: "assumed", description: "Memory loads/stores in flight at once." },
        ParamSpec { name: "wc_bytes", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "bytes", range: ParamRange::at_least(0.0), from: "PIO paper §4: ThunderX-1 combines PCIe stores into 512-bit transactions", description: "Write-combining buffer width (0 = no combining; else a power of two)." },
        ParamSpec { name: "store_bytes", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "bytes", range: ParamRange::at_least(1.0), from: "assumed: 64-bit stores (PIO paper §4: vector stores bring no benefit)", description: "Width of one store instruction in an MMIO copy." },
        ParamSpec { name: "uncached_read_bytes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "bytes", range: ParamRange::at_least(1.0), from: "PIO paper §4: the ThunderX-1 peripheral read bus is 128 bits wide", description: "Largest uncached (device) load; wider reads are split." },
        ParamSpec { name: "max_mmio_reads", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "reads", range: ParamRange::at_least(1.0), from: "PIO paper §4: non-posted reads must finish before the next can start", description: "Non-posted MMIO reads in flight at once." },
        ParamSpec { name: "timer_hz", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "Hz", range: ParamRange::at_least(0.0), from: "assumed: a tickless kernel (no periodic timer interrupt)", description: "Rate of the kernel's periodic timer interrupt on this core (0 = tickless)." },
        ParamSpec { name: "tick_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "Time the timer interrupt's handler takes the core away from its program." },
    ],
    ports: &[
        PortSpec { name: "mem", description: "Loads and stores to memory (or a cache).", required: true },
        PortSpec { name: "io", description: "MMIO to the root complex; MMIO data and interrupts back.", required: true },
    ],
    stats: &[
        StatSpec { name: "ops", kind: StatKind::Counter, unit: "operations", description: "Program operations retired." },
        StatSpec { name: "mmio_write_msgs", kind: StatKind::Counter, unit: "writes", description: "MMIO writes leaving the core (after write combining)." },
        StatSpec { name: "mmio_read_msgs", kind: StatKind::Counter, unit: "reads", description: "Uncached MMIO reads issued." },
        StatSpec { name: "polls", kind: StatKind::Counter, unit: "loads", description: "Polling loads issued." },
        StatSpec { name: "interrupts", kind: StatKind::Counter, unit: "interrupts", description: "Interrupts received." },
        StatSpec { name: "mmio_read_ns", kind: StatKind::Histogram, unit: "ns", description: "Latency of one uncached MMIO read piece." },
    ],
    check: Some(check),
};

/// The write-combining buffer is a power of two wide, or off.
fn check(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let wc = p.int("wc_bytes");
    if wc != 0 && !(wc as u64).is_power_of_two() {
        return Err(ParamProblem::new(
            "wc_bytes",
            format!("must be 0 (no combining) or a power of two, got {wc}"),
        ));
    }
    Ok(())
}

const WAKE_NEXT: u64 = 0;
const WAKE_POLL: u64 = 1;
const WAKE_DEADLINE: u64 = 2;
const POLL_ID: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Will run the next op at a scheduled wake-up.
    Busy,
    /// Waiting for a free outstanding slot.
    NeedSlot,
    /// Fence waiting for outstanding operations.
    Fencing,
    /// Waiting for MMIO read pieces.
    MmioReading,
    /// Waiting for a poll load.
    Polling,
    /// Waiting for a poll MMIO read.
    PollingMmio,
    /// Sleeping until an interrupt.
    Sleeping(u32),
    /// Program finished.
    Done,
}

struct WcBuffer {
    base: u64,
    bytes: Vec<u8>,
    valid: Vec<bool>,
    open: bool,
}

/// A core running its program.
pub struct Core {
    clock: Clock,
    ipc: f64,
    issue: Tick,
    max_outstanding: u32,
    wc_bytes: u32,
    store_bytes: u32,
    read_bytes: u32,
    max_mmio_reads: u32,
    program: Vec<Op>,
    pc: usize,
    state: State,
    outstanding: u32,
    next_id: u64,
    wc: WcBuffer,
    /// MMIO read pieces to issue: (addr, len).
    mmio_pending: VecDeque<(u64, u32)>,
    /// In-flight MMIO read pieces: id -> (offset in the read, issued at).
    mmio_inflight: BTreeMap<u64, (usize, Tick)>,
    mmio_buf: Vec<u8>,
    mmio_base: u64,
    loads_inflight: BTreeMap<u64, (u64, u32)>,
    pending_irqs: Vec<u32>,
    /// The armed watchdog: (deadline, what is waited for, armed at).
    deadline: Option<(Tick, String, Tick)>,
    /// Set when an armed watchdog expired: what timed out.
    pub timed_out: Option<String>,
    /// Recorded `(mark id, tick)` pairs, in program order.
    pub marks: Vec<(u32, Tick)>,
    /// Data of finished MMIO reads: `(addr, bytes)`, in program order.
    pub mmio_loads: Vec<(u64, Vec<u8>)>,
    /// Data of finished loads: `(addr, bytes)`, in completion order.
    pub loads: Vec<(u64, Vec<u8>)>,
    /// Timer period and handler time (0: tickless).
    tick_period: Tick,
    tick_cost: Tick,
    /// When the next timer tick fires.
    next_tick: Tick,
    /// Timer ticks that took the core away from its program, and the time
    /// they cost it in total (ps).
    pub ticks: u64,
    /// Time the ticks delayed the program by (ps).
    pub tick_delay_ps: Tick,
}

impl Core {
    /// A core from validated parameters running `program`.
    pub fn from_params(params: &Params, program: Vec<Op>) -> Result<Core, String> {
        let p = complete(&CORE, params)?;
        let clock = Clock::from_mhz(p.float("clock_ghz") * 1000.0);
        let wc_bytes = p.uint("wc_bytes") as u32;
        let hz = p.float("timer_hz");
        let tick_period = if hz > 0.0 {
            (1e12 / hz).round() as Tick
        } else {
            0
        };
        Ok(Core {
            clock,
            ipc: p.float("ipc"),
            issue: clock.cycles(p.uint("issue_cycles")),
            max_outstanding: p.uint("max_outstanding") as u32,
            wc_bytes,
            store_bytes: p.uint("store_bytes") as u32,
            read_bytes: p.uint("uncached_read_bytes") as u32,
            max_mmio_reads: p.uint("max_mmio_reads") as u32,
            program,
            pc: 0,
            state: State::Busy,
            outstanding: 0,
            next_id: 0,
            wc: WcBuffer {
                base: 0,
                bytes: vec![0; wc_bytes as usize],
                valid: vec![false; wc_bytes as usize],
                open: false,
            },
            mmio_pending: VecDeque::new(),
            mmio_inflight: BTreeMap::new(),
            mmio_buf: Vec::new(),
            mmio_base: 0,
            loads_inflight: BTreeMap::new(),
            pending_irqs: Vec::new(),
            deadline: None,
            timed_out: None,
            marks: Vec::new(),
            mmio_loads: Vec::new(),
            loads: Vec::new(),
            tick_period,
            tick_cost: (p.float("tick_ns") * 1000.0).round() as Tick,
            next_tick: 0,
            ticks: 0,
            tick_delay_ps: 0,
        })
    }

    /// The time an operation started at `now` and taking `cost` ends, with
    /// the timer ticks up to then: a tick inside the operation delays it by
    /// the handler; a tick during the wait before `now` delays it only by
    /// what is left of its handler.
    fn with_ticks(&mut self, now: Tick, cost: Tick) -> Tick {
        let mut end = now + cost;
        if self.tick_period == 0 {
            return end;
        }
        while self.next_tick <= end {
            let t = self.next_tick;
            let before = end;
            end = if t >= now {
                end + self.tick_cost
            } else {
                end.max(t + self.tick_cost)
            };
            if end > before {
                self.ticks += 1;
                self.tick_delay_ps += end - before;
            }
            self.next_tick += self.tick_period;
        }
        end
    }

    /// The timer ticks as statistics named under `name`, empty for a
    /// tickless core (so its statistics stay as they were).
    pub fn tick_stats(&self, name: &str) -> Vec<(String, f64)> {
        if self.tick_period == 0 {
            return Vec::new();
        }
        vec![
            (format!("{name}.timer_ticks"), self.ticks as f64),
            (
                format!("{name}.timer_delay_ns"),
                self.tick_delay_ps as f64 / 1000.0,
            ),
        ]
    }

    /// Whether the program ran to its end.
    pub fn finished(&self) -> bool {
        self.state == State::Done
    }

    /// The tick recorded by the first `Mark(id)`.
    pub fn mark(&self, id: u32) -> Option<Tick> {
        self.marks.iter().find(|(m, _)| *m == id).map(|(_, t)| *t)
    }

    /// The core's state for a stuck run's report: the op it is at and what
    /// it waits for.
    pub fn report(&self) -> String {
        let op = match self.program.get(self.pc) {
            Some(op) => format!("{op:?}"),
            None => "end of program".to_string(),
        };
        format!(
            "core: at op {} of {} ({op}), {:?}, {} memory operations and {} MMIO reads in flight, interrupts pending {:?}",
            self.pc,
            self.program.len(),
            self.state,
            self.outstanding,
            self.mmio_inflight.len() + self.mmio_pending.len(),
            self.pending_irqs
        )
    }

    /// Time of `n` instructions at this core's clock and IPC.
    pub fn instructions_time(&self, n: u64) -> Tick {
        (n as f64 / self.ipc * self.clock.period() as f64).round() as Tick
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends the buffered bytes as one MMIO write per contiguous run.
    fn flush_wc(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if !self.wc.open {
            return;
        }
        let n = self.wc.bytes.len();
        let mut i = 0;
        while i < n {
            if !self.wc.valid[i] {
                i += 1;
                continue;
            }
            let start = i;
            while i < n && self.wc.valid[i] {
                i += 1;
            }
            let msg = Msg::MmioWrite {
                addr: self.wc.base + start as u64,
                data: self.wc.bytes[start..i].to_vec(),
            };
            self.send_io(ctx, msg);
            ctx.count(1, 1);
        }
        self.wc.valid.iter_mut().for_each(|v| *v = false);
        self.wc.open = false;
    }

    fn send_io(&mut self, ctx: &mut Ctx<'_, Msg>, msg: Msg) {
        let b = onchip_bytes(&msg);
        ctx.send(1, msg, b, 0);
    }

    /// One store of an MMIO copy.
    fn mmio_store(&mut self, ctx: &mut Ctx<'_, Msg>, addr: u64, data: &[u8], wc: bool) {
        if !wc || self.wc_bytes == 0 {
            self.flush_wc(ctx);
            self.send_io(
                ctx,
                Msg::MmioWrite {
                    addr,
                    data: data.to_vec(),
                },
            );
            ctx.count(1, 1);
            return;
        }
        let w = self.wc_bytes as u64;
        let mut off = 0usize;
        while off < data.len() {
            let a = addr + off as u64;
            let base = a / w * w;
            if self.wc.open && self.wc.base != base {
                self.flush_wc(ctx);
            }
            if !self.wc.open {
                self.wc.base = base;
                self.wc.open = true;
            }
            let i = (a - base) as usize;
            let n = (w as usize - i).min(data.len() - off);
            self.wc.bytes[i..i + n].copy_from_slice(&data[off..off + n]);
            self.wc.valid[i..i + n].iter_mut().for_each(|v| *v = true);
            off += n;
            if self.wc.valid.iter().all(|v| *v) {
                self.flush_wc(ctx);
            }
        }
    }

    fn issue_mmio_reads(&mut self, ctx: &mut Ctx<'_, Msg>) {
        while (self.mmio_inflight.len() as u32) < self.max_mmio_reads {
            let Some((addr, len)) = self.mmio_pending.pop_front() else {
                break;
            };
            let id = self.id();
            let off = (addr - self.mmio_base) as usize;
            self.mmio_inflight.insert(id, (off, ctx.now()));
            ctx.count(2, 1);
            self.send_io(ctx, Msg::MmioRead { id, addr, len });
        }
    }

    fn poll_load(&mut self, ctx: &mut Ctx<'_, Msg>) {
        if let Some(Op::PollMmioU32 { addr, .. }) = self.program.get(self.pc).cloned() {
            ctx.count(3, 1);
            ctx.count(2, 1);
            self.send_io(
                ctx,
                Msg::MmioRead {
                    id: POLL_ID,
                    addr,
                    len: 4,
                },
            );
            return;
        }
        let Some(Op::PollU32 { addr, .. }) = self.program.get(self.pc).cloned() else {
            return;
        };
        ctx.count(3, 1);
        ctx.send(
            0,
            Msg::mem_req(MemReq::Read {
                id: POLL_ID,
                addr,
                len: 4,
            }),
            16,
            0,
        );
    }

    /// Retires the current op and schedules the next one after `cost`.
    fn retire(&mut self, ctx: &mut Ctx<'_, Msg>, cost: Tick) {
        ctx.count(0, 1);
        self.pc += 1;
        self.state = State::Busy;
        let now = ctx.now();
        let end = self.with_ticks(now, cost);
        ctx.wake_after(end - now, WAKE_NEXT);
    }

    /// Executes the op at `pc`.
    fn step(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let Some(op) = self.program.get(self.pc).cloned() else {
            self.flush_wc(ctx);
            self.state = State::Done;
            return;
        };
        match op {
            Op::Compute(t) => self.retire(ctx, t),
            Op::Instructions(n) => {
                let t = self.instructions_time(n);
                self.retire(ctx, t)
            }
            Op::Mark(id) => {
                self.marks.push((id, ctx.now()));
                self.retire(ctx, 0)
            }
            Op::Arm { after, what } => {
                let at = ctx.now() + after;
                self.deadline = Some((at, what, ctx.now()));
                ctx.wake_at(at, WAKE_DEADLINE);
                self.retire(ctx, 0)
            }
            Op::Disarm => {
                self.deadline = None;
                self.retire(ctx, 0)
            }
            Op::Load { .. } | Op::Store { .. } if self.outstanding >= self.max_outstanding => {
                self.state = State::NeedSlot;
            }
            Op::Load { addr, len } => {
                let id = self.id();
                self.outstanding += 1;
                self.loads_inflight.insert(id, (addr, len));
                ctx.send(0, Msg::mem_req(MemReq::Read { id, addr, len }), 16, 0);
                self.retire(ctx, self.issue)
            }
            Op::Store { addr, data } => {
                let id = self.id();
                self.outstanding += 1;
                let msg = Msg::mem_req(MemReq::Write { id, addr, data });
                let b = onchip_bytes(&msg);
                ctx.send(0, msg, b, 0);
                self.retire(ctx, self.issue)
            }
            Op::MmioWrite { addr, data, wc } => {
                let step = self.store_bytes as usize;
                let mut stores = 0u64;
                for (i, chunk) in data.chunks(step).enumerate() {
                    self.mmio_store(ctx, addr + (i * step) as u64, chunk, wc);
                    stores += 1;
                }
                self.retire(ctx, self.issue * stores)
            }
            Op::MmioRead { addr, len } => {
                // Device reads must observe earlier device writes.
                self.flush_wc(ctx);
                self.mmio_base = addr;
                self.mmio_buf = vec![0; len as usize];
                let step = self.read_bytes as u64;
                let mut a = addr;
                while a < addr + len as u64 {
                    let n = step.min(addr + len as u64 - a);
                    self.mmio_pending.push_back((a, n as u32));
                    a += n;
                }
                self.state = State::MmioReading;
                self.issue_mmio_reads(ctx);
                if self.mmio_pending.is_empty() && self.mmio_inflight.is_empty() {
                    self.finish_mmio_read(ctx);
                }
            }
            Op::Fence => {
                self.flush_wc(ctx);
                if self.outstanding == 0 {
                    self.retire(ctx, self.issue)
                } else {
                    self.state = State::Fencing;
                }
            }
            Op::PollU32 { .. } => {
                self.state = State::Polling;
                self.poll_load(ctx);
            }
            Op::PollMmioU32 { .. } => {
                // Device reads must observe earlier device writes.
                self.flush_wc(ctx);
                self.state = State::PollingMmio;
                self.poll_load(ctx);
            }
            Op::WaitInterrupt(v) => {
                if let Some(i) = self.pending_irqs.iter().position(|x| *x == v) {
                    self.pending_irqs.remove(i);
                    self.retire(ctx, self.issue)
                } else {
                    self.state = State::Sleeping(v);
                }
            }
        }
    }

    fn finish_mmio_read(&mut self, ctx: &mut Ctx<'_, Msg>) {
        let data = std::mem::take(&mut self.mmio_buf);
        self.mmio_loads.push((self.mmio_base, data));
        self.retire(ctx, self.issue)
    }
}

impl Component<Msg> for Core {
    fn spec(&self) -> &'static ComponentSpec {
        &CORE
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        // Only a ticking core draws from its stream.
        if self.tick_period > 0 {
            self.next_tick = ctx.rng().below(self.tick_period);
        }
        ctx.wake_after(0, WAKE_NEXT);
    }
    fn on_message(&mut self, _port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::MemResp(MemResp::Data { id: POLL_ID, data }) => {
                let Some(Op::PollU32 {
                    value,
                    loop_instructions,
                    ..
                }) = self.program.get(self.pc).cloned()
                else {
                    return;
                };
                let got = u32::from_le_bytes(data[..4].try_into().expect("4 bytes"));
                if got == value {
                    self.retire(ctx, self.issue);
                } else {
                    let t = self.instructions_time(loop_instructions);
                    let now = ctx.now();
                    let end = self.with_ticks(now, t);
                    ctx.wake_after(end - now, WAKE_POLL);
                }
            }
            Msg::MemResp(resp) => {
                if let MemResp::Data { id, data } = resp {
                    if let Some((addr, _)) = self.loads_inflight.remove(&id) {
                        self.loads.push((addr, data));
                    }
                }
                self.outstanding -= 1;
                match self.state {
                    State::NeedSlot => self.step(ctx),
                    State::Fencing if self.outstanding == 0 => self.retire(ctx, self.issue),
                    _ => {}
                }
            }
            Msg::MmioData { id: POLL_ID, data } => {
                let Some(Op::PollMmioU32 {
                    value,
                    loop_instructions,
                    ..
                }) = self.program.get(self.pc).cloned()
                else {
                    return;
                };
                let got = u32::from_le_bytes(data[..4].try_into().expect("4 bytes"));
                if got == value {
                    self.retire(ctx, self.issue);
                } else {
                    let t = self.instructions_time(loop_instructions);
                    let now = ctx.now();
                    let end = self.with_ticks(now, t);
                    ctx.wake_after(end - now, WAKE_POLL);
                }
            }
            Msg::MmioData { id, data } => {
                let Some((off, issued)) = self.mmio_inflight.remove(&id) else {
                    return;
                };
                ctx.record(5, (ctx.now() - issued) / 1000);
                self.mmio_buf[off..off + data.len()].copy_from_slice(&data);
                self.issue_mmio_reads(ctx);
                if self.state == State::MmioReading
                    && self.mmio_inflight.is_empty()
                    && self.mmio_pending.is_empty()
                {
                    self.finish_mmio_read(ctx);
                }
            }
            Msg::Interrupt { vector } => {
                ctx.count(4, 1);
                if self.state == State::Sleeping(vector) {
                    self.retire(ctx, self.issue);
                } else {
                    self.pending_irqs.push(vector);
                }
            }
            other => debug_assert!(false, "core: unexpected {other:?}"),
        }
    }
    fn on_wake(&mut self, token: u64, ctx: &mut Ctx<'_, Msg>) {
        match token {
            WAKE_POLL => self.poll_load(ctx),
            WAKE_DEADLINE => {
                // Only the armed deadline counts (a disarmed one's wake is
                // stale).
                let now = ctx.now();
                if let Some((at, what, armed)) = &self.deadline {
                    if *at == now {
                        self.timed_out = Some(format!(
                            "{what}: timed out after {:.1} us (armed at {:.3} us)",
                            (now - armed) as f64 / 1e6,
                            *armed as f64 / 1e6
                        ));
                        ctx.stop();
                    }
                }
            }
            _ => self.step(ctx),
        }
    }
}
