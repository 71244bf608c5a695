//! The `dma_driver` software model: the host driver of an [`crate::dma`]
//! engine, expressed as a core program.
//!
//! The driver is not a hardware block; it becomes [`Op`]s that a [`Core`]
//! runs, so its cost scales with the core it runs on (instruction counts are
//! converted with the core's clock and `ipc`). One transfer
//! ([`DmaDriver::transfer`]) follows the Linux XDMA character-device path:
//!
//! 1. system call entry and exit (`syscall_instructions`);
//! 2. pin and map the user buffer, per 4 KiB page (`pin_page_instructions`);
//! 3. set up the per-transfer software structures (the request, the
//!    transfer and its scatter list: `meta_lines` cache lines stored in the
//!    driver's page after the write-back word, the sk_buff-like allocation
//!    of a network driver), then build one 32-byte descriptor per chunk of
//!    at most `max_desc_bytes` (`desc_instructions` each) and **store it to
//!    host memory** (the ring refill);
//! 4. a write barrier, then program the channel over uncached MMIO
//!    (descriptor address, write-back address, MSI data, count + control
//!    with RUN: the doorbell), then `register_reads` non-posted reads of
//!    the channel's STATUS (the Xilinx driver's `engine_start` reads STATUS
//!    once "to flush all previous writes" and once more to record it);
//! 5. wait: spin on the status write-back in host memory (`poll`) or sleep
//!    until the MSI-X interrupt and run the handler (`irq_instructions`);
//! 6. optionally read the channel STATUS register (a non-posted MMIO read),
//!    then tear down (`completion_instructions`).
//!
//! **The completion hand-off** (`handoff`, off by default). The Xilinx
//! driver's submitting thread never waits for its own transfer: in
//! `xdma_xfer_submit` (libxdma.c) it sleeps on the transfer's wait queue
//! in *both* completion modes and another kernel context wakes it.
//!
//! ```text
//!  poll:      submitter ─wake─► cmpl_status_th ─switch─► [kthread polls the
//!             write-back] ─wake─► submitter ─switch─► submitter runs again
//!  interrupt: submitter ─switch─► idle … MSI-X ─► xdma_channel_irq
//!             (channel_int_pending) ─schedule_work─► kworker ─switch─►
//!             [engine_service: status_rc, completed_desc_count] ─wake─►
//!             submitter ─switch─► runs again
//! ```
//!
//! Where the completing context runs decides which of these parts lie on
//! the transfer's path (`poll_thread_core`, `irq_core`; the counts per
//! placement, with the driver's line numbers, are on
//! `DmaDriver::completion_steps`): a context on the submitter's core needs
//! no idle exit, one on another core runs beside the submitter's own
//! switch to idle. The diagram is the platforms' placement (the poll
//! thread on a core of its own, the MSI-X on the submitter's core).
//!
//! Poll mode wakes the driver's completion-status kernel thread
//! (`xdma_kthread_wakeup`, xdma_thread.c), which polls the write-back and
//! then wakes the submitter; interrupt mode takes the MSI-X in
//! `xdma_channel_irq`, which reads the channel interrupt pending register
//! (to flush its mask write) and defers to a kworker (`engine_service_work`) that reads the status (`status_rc`) and
//! the completed descriptor count over MMIO before waking the submitter.
//! Each wake-up is `wakeup_instructions` (try_to_wake_up and enqueue) and
//! each context switch `context_switch_instructions` (schedule, the switch
//! of register state and address space, finish_task_switch), so the
//! hand-off costs two wake-ups and two switches in poll mode (the first
//! pair overlaps the engine's work) and, in interrupt mode, the
//! submitter's switch to idle (overlapping the engine's work) and, after
//! the handler, two wake-ups (kworker, submitter) and two switches, all at
//! the core's speed; the interrupt path's `irq_register_reads` non-posted
//! reads go through the root complex. A core that idled while its thread
//! slept takes `idle_exit_ns` to resume when woken (the exit latency of
//! its idle state: C1's 2 us on a Kaby Lake, next to nothing for the WFI
//! of a ThunderX-1): in the diagram's placement, the poll thread's core and
//! then the submitter's in poll mode, the core that takes the interrupt in
//! interrupt mode (and the submitter's too when that is another core). In
//! poll mode the write-back carries
//! the completed count and the driver reads no register on completion
//! (engine_service skips it "to reduce latency"), so `read_status` should
//! be off where `handoff` is on.
//!
//! Every structure the driver touches is real bytes in host memory, so
//! when the host memory models the CPU's cache state
//! ([`crate::memory`]'s `cpu_line_bytes`) the driver's accesses hit or
//! miss for a reason: the structures it alone writes stay cached, while
//! the write-back word and the buffers the engine wrote were invalidated by
//! the engine's DMA writes and miss, each miss a DRAM access.
//!
//! [`Core`]: crate::core::Core

use ccsim_kernel::prelude::*;

use crate::core::Op;
use crate::dma::{regs, Descriptor, C2H, DESC_BYTES, RESULT_BYTES};
use crate::util::complete;

/// Declaration of `dma_driver`.
pub static DMA_DRIVER: ComponentSpec = ComponentSpec {
    type_name: "dma_driver",
    description: "Software model of a descriptor-DMA driver (Linux XDMA-like): its costs become instruction counts in the core's program, and it writes real descriptors to host memory and rings the doorbell over MMIO. Has no ports.",
    params: &[
        ParamSpec { name: "syscall_instructions", kind: ParamKind::Int, default: ParamDefault::Int(1500), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed: read()/write() system call entry and exit of the XDMA character device", description: "System call entry and exit (read()/write() on the DMA character device)." },
        ParamSpec { name: "pin_page_instructions", kind: ParamKind::Int, default: ParamDefault::Int(1500), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed: get_user_pages and DMA mapping of one page", description: "Pinning and DMA-mapping one 4 KiB page of the user buffer." },
        ParamSpec { name: "desc_instructions", kind: ParamKind::Int, default: ParamDefault::Int(200), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed", description: "Building one descriptor (besides its 32-byte store)." },
        ParamSpec { name: "submit_instructions", kind: ParamKind::Int, default: ParamDefault::Int(500), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed", description: "Engine submission path besides the MMIO writes (locking, queue bookkeeping)." },
        ParamSpec { name: "irq_instructions", kind: ParamKind::Int, default: ParamDefault::Int(3000), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed", description: "Interrupt entry, handler and waking the waiting thread." },
        ParamSpec { name: "completion_instructions", kind: ParamKind::Int, default: ParamDefault::Int(1500), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed", description: "Completion path: checking status, unmapping and unpinning, returning." },
        ParamSpec { name: "poll_loop_instructions", kind: ParamKind::Int, default: ParamDefault::Int(20), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed", description: "Instructions per iteration of the status polling loop besides its load." },
        ParamSpec { name: "max_desc_bytes", kind: ParamKind::Int, default: ParamDefault::Int(4096), unit: "bytes", range: ParamRange::at_least(1.0), from: "PIO paper §3: latency is flat up to the 4 KiB transfer size limit (one descriptor per page)", description: "Largest chunk one descriptor covers (4 KiB: one per pinned user page)." },
        ParamSpec { name: "read_status", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "assumed: the XDMA driver reads the channel status register on completion", description: "Whether the completion path reads the channel STATUS register over MMIO." },
        ParamSpec { name: "timeout_us", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "us", range: ParamRange::between(0.0, 1e9), from: "assumed: no timeout (the run's time limit bounds a hung wait)", description: "The driver gives up waiting for a transfer after this long and the run stops with a report of the stuck transfer (0 = wait without a timeout)." },
        ParamSpec { name: "register_reads", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "reads", range: ParamRange::at_least(0.0), from: "assumed: none", description: "Non-posted reads of the channel STATUS register right after the doorbell (the Xilinx XDMA driver's engine_start reads it to flush its posted writes and to record the status)." },
        ParamSpec { name: "meta_lines", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "lines", range: ParamRange::at_least(0.0), from: "assumed: none", description: "Cache lines of per-transfer software structures (request, transfer, scatter list) the driver initializes in host memory before building descriptors." },
        ParamSpec { name: "pin_pages", kind: ParamKind::Bool, default: ParamDefault::Bool(true), unit: "", range: ParamRange::ANY, from: "assumed: the XDMA driver pins user pages per transfer", description: "Whether each transfer pins/maps user pages (false: buffers are pre-pinned)." },
        ParamSpec { name: "handoff", kind: ParamKind::Bool, default: ParamDefault::Bool(false), unit: "", range: ParamRange::ANY, from: "assumed: off (the submitting thread waits for its own completion)", description: "Whether the submitting thread sleeps and another kernel context (the poll thread, or the interrupt handler's kworker) completes the transfer and wakes it: wake-ups and context switches per transfer (see the module docs)." },
        ParamSpec { name: "wakeup_instructions", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed: none", description: "One wake-up of a sleeping thread (try_to_wake_up, enqueue on a run queue) in the completion hand-off." },
        ParamSpec { name: "context_switch_instructions", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "instructions", range: ParamRange::at_least(0.0), from: "assumed: none", description: "One context switch (schedule, switching register state and address space, finish_task_switch) in the completion hand-off." },
        ParamSpec { name: "idle_exit_ns", kind: ParamKind::Float, default: ParamDefault::Float(0.0), unit: "ns", range: ParamRange::between(0.0, 1e6), from: "assumed: none", description: "Time for a core that went idle while the hand-off's thread slept to resume when woken (the exit latency of the idle state it sleeps in): twice per transfer in poll mode (the poll thread's core, then the submitter's), once in interrupt mode (the core that takes the interrupt)." },
        ParamSpec { name: "irq_register_reads", kind: ParamKind::Int, default: ParamDefault::Int(0), unit: "reads", range: ParamRange::at_least(0.0), from: "assumed: none", description: "Non-posted reads of the engine's registers on the interrupt completion path, besides `read_status`: the first in the interrupt handler (the Xilinx driver's xdma_channel_irq reads channel_int_pending), the others in the kworker after its hop (engine_service reads status_rc and completed_desc_count)." },
        ParamSpec { name: "poll_thread_core", kind: ParamKind::Enum(&["other", "submitter"]), default: ParamDefault::Str("other"), unit: "", range: ParamRange::ANY, from: "assumed: other (the Xilinx driver binds each engine's completion-status thread to a fixed CPU, xdma_thread.c xdma_kthread_start: kthread_bind)", description: "Poll mode with `handoff`: where the completion-status thread runs. other: a core of its own, idle between transfers (woken by IPI: it leaves idle and switches to the thread beside the engine's work; the submitter's core idles and leaves idle when woken back). submitter: the submitting thread's core (its sleep is the switch to the poll thread, and the poll thread's schedule() the switch back; no core idles)." },
        ParamSpec { name: "irq_core", kind: ParamKind::Enum(&["submitter", "other"]), default: ParamDefault::Str("submitter"), unit: "", range: ParamRange::ANY, from: "assumed: submitter (the channel's MSI-X is delivered to the submitting thread's core)", description: "Interrupt mode with `handoff`: the core that takes the MSI-X, where schedule_work queues the kworker (system_wq is per-CPU). submitter: the submitter's core, whose switch to idle precedes the interrupt and whose kworker wakes the submitter locally. other: another idle core; the submitter's switch to idle runs on its own core beside the engine's work, and the kworker's wake-up of the submitter is cross-core (that core leaves idle)." },
    ],
    ports: &[],
    stats: &[],
    check: None,
};

/// How the driver learns that a transfer finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Spin on the status write-back in host memory.
    Poll,
    /// Sleep until the MSI-X interrupt.
    Interrupt,
}

/// Where the context that completes a transfer (the poll thread, or the
/// core that takes the MSI-X and runs its kworker) runs, relative to the
/// submitting thread ([`DmaDriver::completion_steps`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionCore {
    /// The submitting thread's own core.
    Submitter,
    /// Another core, idle until woken.
    Other,
}

impl CompletionCore {
    /// The value of parameter `param` (`submitter` or `other`).
    fn parse(param: &str, value: &str) -> Result<CompletionCore, String> {
        match value {
            "submitter" => Ok(CompletionCore::Submitter),
            "other" => Ok(CompletionCore::Other),
            _ => Err(format!(
                "dma_driver.{param}: '{value}' is not a core; expected 'submitter' or 'other'"
            )),
        }
    }
}

/// Where the driver keeps its structures in host memory and how it reaches
/// the engine.
#[derive(Debug, Clone, Copy)]
pub struct DriverLayout {
    /// Bus address of the engine's BAR0.
    pub bar0: u64,
    /// Host address of the descriptor ring (32-byte aligned).
    pub ring: u64,
    /// Host address of the status write-back word.
    pub writeback: u64,
}

/// The driver's costs.
#[derive(Debug, Clone)]
pub struct DmaDriver {
    syscall: u64,
    pin_page: u64,
    desc: u64,
    submit: u64,
    irq: u64,
    completion: u64,
    poll_loop: u64,
    max_desc_bytes: u64,
    read_status: bool,
    pin_pages: bool,
    register_reads: u64,
    meta_lines: u64,
    timeout: Tick,
    handoff: bool,
    wakeup: u64,
    context_switch: u64,
    irq_register_reads: u64,
    idle_exit: Tick,
    poll_thread_core: CompletionCore,
    irq_core: CompletionCore,
}

/// The host's side of completing one transfer ([`DmaDriver::completion_path`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompletionPath {
    /// Threads woken (the poll thread or kworker, then the submitter).
    pub wakeups: u64,
    /// Context switches (the submitter out, the completing context in and
    /// out, or the idle task's in interrupt mode).
    pub context_switches: u64,
    /// Cores leaving their idle state on the way (see `idle_exit_ns`).
    pub idle_exits: u64,
    /// Their time (ns).
    pub idle_exit_ns: f64,
    /// Non-posted reads of the engine's registers.
    pub register_reads: u64,
    /// Instructions of the wake-ups, switches and interrupt handler.
    pub instructions: u64,
}

/// One step of the host's part in completing a transfer
/// ([`DmaDriver::completion_steps`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CompletionStep {
    /// A thread woken (the poll thread, or the submitter).
    Wakeup,
    /// A context switch (out of the submitter, into the woken thread).
    ContextSwitch,
    /// The interrupt path's hop to its kworker: a wake-up and the switch
    /// to it, one op as the driver's `schedule_work` runs them.
    WakeAndSwitch,
    /// A core leaving its idle state.
    IdleExit,
    /// Polling the status write-back in memory.
    PollWriteback,
    /// Sleeping until the MSI.
    WaitInterrupt,
    /// The interrupt handler's instructions.
    Handler,
    /// A non-posted read of the channel's STATUS register.
    StatusRead,
}

/// Where the driver's per-transfer structures live: the page after the
/// status write-back word (both are the driver's own coherent allocation).
pub const META_OFFSET: u64 = 0x1000;
/// Bytes of one line of the driver's per-transfer structures.
pub const META_LINE: u64 = 64;

/// One transfer: channel, host buffer, card address, length.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    /// [`crate::dma::H2C`] or [`crate::dma::C2H`].
    pub channel: usize,
    /// Host buffer address.
    pub host: u64,
    /// Card (device memory) address.
    pub card: u64,
    /// Bytes.
    pub len: u64,
}

impl DmaDriver {
    /// A driver from validated parameters.
    pub fn from_params(params: &Params) -> Result<DmaDriver, String> {
        let p = complete(&DMA_DRIVER, params)?;
        Ok(DmaDriver {
            syscall: p.uint("syscall_instructions"),
            pin_page: p.uint("pin_page_instructions"),
            desc: p.uint("desc_instructions"),
            submit: p.uint("submit_instructions"),
            irq: p.uint("irq_instructions"),
            completion: p.uint("completion_instructions"),
            poll_loop: p.uint("poll_loop_instructions"),
            max_desc_bytes: p.uint("max_desc_bytes"),
            read_status: p.bool("read_status"),
            pin_pages: p.bool("pin_pages"),
            register_reads: p.uint("register_reads"),
            meta_lines: p.uint("meta_lines"),
            timeout: (p.float("timeout_us") * 1e6).round() as Tick,
            handoff: p.bool("handoff"),
            wakeup: p.uint("wakeup_instructions"),
            context_switch: p.uint("context_switch_instructions"),
            irq_register_reads: p.uint("irq_register_reads"),
            idle_exit: (p.float("idle_exit_ns") * 1000.0).round() as Tick,
            poll_thread_core: CompletionCore::parse("poll_thread_core", p.str("poll_thread_core"))?,
            irq_core: CompletionCore::parse("irq_core", p.str("irq_core"))?,
        })
    }

    /// The descriptors for `transfers`, in ring order: each transfer split at
    /// `max_desc_bytes` and 4 KiB page boundaries of the host buffer (when
    /// descriptors cover at most a page).
    pub fn descriptors(&self, transfers: &[Transfer], layout: &DriverLayout) -> Vec<Descriptor> {
        let mut out = Vec::new();
        for t in transfers {
            let mut off = 0u64;
            while off < t.len {
                let host = t.host + off;
                let mut n = self.max_desc_bytes.min(t.len - off);
                if self.max_desc_bytes <= 4096 {
                    n = n.min(4096 - host % 4096);
                }
                let (src, dst) = if t.channel == crate::dma::H2C {
                    (host, t.card + off)
                } else {
                    (t.card + off, host)
                };
                out.push(Descriptor {
                    flags: 0,
                    len: n as u32,
                    src,
                    dst,
                    next: 0,
                });
                off += n;
            }
        }
        let n = out.len();
        for (i, d) in out.iter_mut().enumerate() {
            if i + 1 < n {
                d.next = layout.ring + (i as u64 + 1) * DESC_BYTES as u64;
            } else {
                d.flags |= 0x1 | 0x2 | 0x10; // stop, completed, end of packet
            }
        }
        out
    }

    /// The program of one driver call that submits `transfers` (all on one
    /// channel) with a single doorbell and waits for them.
    pub fn transfer(
        &self,
        transfers: &[Transfer],
        layout: &DriverLayout,
        completion: Completion,
        msi_vector: u32,
    ) -> Vec<Op> {
        self.transfer_stream(transfers, layout, completion, msi_vector, None)
    }

    /// [`DmaDriver::transfer`] on an AXI-Stream C2H channel whose engine
    /// writes a result record per descriptor into host memory at
    /// `results` (XDMA's C2H stream write-back; `None`: a memory-mapped
    /// channel, which has none). The Xilinx driver (libxdma.c) zeroes each
    /// descriptor's record while it builds the descriptors
    /// (`transfer_build`: `memset(xfer->res_virt + j, 0, ...)`) and, once
    /// woken, reads each record's length (`xdma_xfer_submit`: `done +=
    /// result[i].length`). With the CPU's cache state modelled the read
    /// misses (the engine just wrote the line); the zeroing finds the line
    /// the previous read fetched.
    pub fn transfer_stream(
        &self,
        transfers: &[Transfer],
        layout: &DriverLayout,
        completion: Completion,
        msi_vector: u32,
        results: Option<u64>,
    ) -> Vec<Op> {
        let ch = transfers.first().map(|t| t.channel).unwrap_or(0);
        let results = results.filter(|_| ch == C2H);
        let descs = self.descriptors(transfers, layout);
        let mut ops = vec![Op::Instructions(self.syscall)];
        if self.pin_pages {
            let pages: u64 = transfers
                .iter()
                .map(|t| (t.host % 4096 + t.len).div_ceil(4096))
                .sum();
            ops.push(Op::Instructions(self.pin_page * pages));
        }
        for i in 0..self.meta_lines {
            ops.push(Op::Store {
                addr: layout.writeback + META_OFFSET + i * META_LINE,
                data: (i as u32 + 1).to_le_bytes().to_vec(),
            });
        }
        for (i, d) in descs.iter().enumerate() {
            ops.push(Op::Instructions(self.desc));
            if let Some(r) = results {
                // transfer_build zeroes the descriptor's result record.
                ops.push(Op::Store {
                    addr: r + i as u64 * RESULT_BYTES,
                    data: vec![0; RESULT_BYTES as usize],
                });
            }
            ops.push(Op::Store {
                addr: layout.ring + i as u64 * DESC_BYTES as u64,
                data: d.encode().to_vec(),
            });
        }
        if completion == Completion::Poll {
            ops.push(Op::Store {
                addr: layout.writeback,
                data: vec![0; 4],
            });
        }
        // wmb(): descriptors must be visible before the doorbell.
        ops.push(Op::Fence);
        ops.push(Op::Instructions(self.submit));
        let base = layout.bar0 + ch as u64 * regs::CHANNEL_STRIDE;
        let mmio = |off: u64, data: Vec<u8>| Op::MmioWrite {
            addr: base + off,
            data,
            wc: false,
        };
        ops.push(mmio(regs::DESC_ADDR, layout.ring.to_le_bytes().to_vec()));
        let mut control =
            regs::CTRL_RUN | completion_registers(completion, layout, msi_vector, &mmio, &mut ops);
        if let Some(r) = results {
            ops.push(mmio(regs::RESULT_ADDR, r.to_le_bytes().to_vec()));
            control |= regs::CTRL_RESULTS;
        }
        let mut count_ctrl = (descs.len() as u32).to_le_bytes().to_vec();
        count_ctrl.extend_from_slice(&control.to_le_bytes());
        // With a timeout, the wait (and the status read) is watched from the
        // doorbell on.
        if self.timeout > 0 {
            let name = ["H2C", "C2H"].get(ch).unwrap_or(&"?");
            ops.push(Op::Arm {
                after: self.timeout,
                what: format!(
                    "dma_driver: {name} transfer of {} descriptors ({} bytes)",
                    descs.len(),
                    descs.iter().map(|d| d.len as u64).sum::<u64>()
                ),
            });
        }
        ops.push(mmio(regs::DESC_COUNT, count_ctrl));
        for _ in 0..self.register_reads {
            ops.push(Op::MmioRead {
                addr: base + regs::STATUS,
                len: 4,
            });
        }
        self.wait_done(
            completion,
            layout,
            msi_vector,
            descs.len() as u32,
            base,
            &mut ops,
        );
        if self.timeout > 0 {
            ops.push(Op::Disarm);
        }
        if let Some(r) = results {
            // The woken submitter adds up the received lengths: it uses
            // each value, so an in-order core waits for the loads.
            for i in 0..descs.len() as u64 {
                ops.push(Op::Load {
                    addr: r + i * RESULT_BYTES,
                    len: 8,
                });
            }
            ops.push(Op::Fence);
        }
        ops.push(Op::Instructions(self.completion));
        ops
    }

    /// The host's steps of completing one transfer in `completion` mode, in
    /// the order they run on the transfer's critical path:
    /// [`DmaDriver::wait_done`] emits one op for each, and
    /// [`DmaDriver::completion_path`] counts them, so the two cannot
    /// disagree. Line numbers are those of the driver Enzian ran
    /// (libxdma.c and xdma_thread.c of Xilinx XDMA 2020.2.2, bundled with
    /// the Enzian Timely sources, github.com/skotti/timely-mirror branch
    /// `timely_together`, `xdma_driver/xdma/`):
    ///
    /// * poll, thread on another core: the submitter wakes the bound
    ///   thread (`xdma_kthread_wakeup`, libxdma.c:3590; a
    ///   `wake_up_interruptible`, xdma_thread.h:65-69), whose core leaves
    ///   idle and switches to it while the submitter's core switches to
    ///   idle (off the path); the thread spins on the write-back
    ///   (`engine_service_wb_monitor`, libxdma.c:1246), services the
    ///   engine without a register read (the count came in the write-back,
    ///   libxdma.c:1121-1124 and 1147-1151) and wakes the submitter
    ///   (`engine_transfer_completion`, libxdma.c:818), whose core leaves
    ///   idle and switches to it: 2 wake-ups, 2 switches, 2 idle exits.
    /// * poll, thread on the submitter's core: the local wake-up, the
    ///   submitter's sleep *is* the switch to the thread, then the thread's
    ///   wake-up of the submitter and its `schedule()` at the end of
    ///   `xthread_main`'s loop (xdma_thread.c:126): 2 wake-ups, 2
    ///   switches, no idle exit. Which it is depends on where the
    ///   submitter runs: the driver makes one thread per channel
    ///   (libxdma.c:113), bound to the first online CPUs
    ///   (xdma_thread.c:296-298, kthread_bind at 173), and gives each
    ///   engine the least-loaded one (`xdma_thread_add_work`).
    /// * interrupt on the submitter's core: the submitter's sleep
    ///   (libxdma.c:3597, a switch to idle, beside the engine's work); the
    ///   MSI-X finds the core idle; `xdma_channel_irq` (libxdma.c:1488)
    ///   reads `channel_int_pending` (1519) and `schedule_work` (1521)
    ///   queues `engine_service_work` on this CPU: the kworker's wake-up
    ///   and the switch to it; `engine_service(engine, 0)` reads
    ///   `status_rc` (1126-1127, 526) and `completed_desc_count` (1154) and
    ///   wakes the submitter locally, which the kworker switches to:
    ///   2 wake-ups, 3 switches, 1 idle exit, 3 reads.
    /// * interrupt on another core: as above, but the submitter's switch to
    ///   idle runs on its own core, off the path, and its wake-up is
    ///   cross-core, so its core leaves idle: 2 wake-ups, 2 switches on
    ///   the path, 2 idle exits, 3 reads.
    ///
    /// Without `handoff`, the submitter waits for its own transfer.
    fn completion_steps(&self, completion: Completion) -> Vec<CompletionStep> {
        use CompletionCore::*;
        use CompletionStep::*;
        let mut steps = Vec::new();
        if !self.handoff {
            steps.push(match completion {
                Completion::Poll => PollWriteback,
                Completion::Interrupt => WaitInterrupt,
            });
            if completion == Completion::Interrupt {
                steps.push(Handler);
                steps.extend((0..self.irq_register_reads).map(|_| StatusRead));
            }
        } else {
            match (completion, self.poll_thread_core, self.irq_core) {
                (Completion::Poll, Other, _) => steps.extend([
                    Wakeup,
                    IdleExit,
                    ContextSwitch,
                    PollWriteback,
                    Wakeup,
                    IdleExit,
                    ContextSwitch,
                ]),
                (Completion::Poll, Submitter, _) => {
                    steps.extend([Wakeup, ContextSwitch, PollWriteback, Wakeup, ContextSwitch])
                }
                (Completion::Interrupt, _, core) => {
                    if core == Submitter {
                        steps.push(ContextSwitch);
                    }
                    steps.extend([WaitInterrupt, IdleExit, Handler]);
                    // The handler's flush read, the kworker hop, then
                    // engine_service's reads.
                    let reads = self.irq_register_reads;
                    steps.extend((0..reads.min(1)).map(|_| StatusRead));
                    steps.push(WakeAndSwitch);
                    steps.extend((1..reads.max(1)).map(|_| StatusRead));
                    steps.push(Wakeup);
                    if core == Other {
                        steps.push(IdleExit);
                    }
                    steps.push(ContextSwitch);
                }
            }
        }
        if self.read_status {
            steps.push(StatusRead);
        }
        steps
    }

    /// Waits until the engine reports `done` descriptors complete (polling
    /// the write-back, or taking the MSI and its handler), then reads the
    /// channel's STATUS when the driver does: the ops of
    /// [`DmaDriver::completion_steps`].
    fn wait_done(
        &self,
        completion: Completion,
        layout: &DriverLayout,
        msi_vector: u32,
        done: u32,
        base: u64,
        ops: &mut Vec<Op>,
    ) {
        for step in self.completion_steps(completion) {
            ops.push(match step {
                CompletionStep::Wakeup => Op::Instructions(self.wakeup),
                CompletionStep::ContextSwitch => Op::Instructions(self.context_switch),
                CompletionStep::WakeAndSwitch => {
                    Op::Instructions(self.wakeup + self.context_switch)
                }
                CompletionStep::IdleExit => Op::Compute(self.idle_exit),
                CompletionStep::PollWriteback => Op::PollU32 {
                    addr: layout.writeback,
                    value: done,
                    loop_instructions: self.poll_loop,
                },
                CompletionStep::WaitInterrupt => Op::WaitInterrupt(msi_vector),
                CompletionStep::Handler => Op::Instructions(self.irq),
                CompletionStep::StatusRead => Op::MmioRead {
                    addr: base + regs::STATUS,
                    len: 4,
                },
            });
        }
    }

    /// What completing one transfer costs the host in `completion` mode,
    /// by named parts: the hand-off's wake-ups and context switches, the
    /// interrupt handler, and the non-posted register reads (the interrupt
    /// path's and `read_status`'s), counted over the steps
    /// [`DmaDriver::transfer`] emits.
    pub fn completion_path(&self, completion: Completion) -> CompletionPath {
        let (mut wakeups, mut context_switches, mut idle_exits) = (0, 0, 0);
        let (mut register_reads, mut handler_instructions) = (0, 0);
        for step in self.completion_steps(completion) {
            match step {
                CompletionStep::Wakeup => wakeups += 1,
                CompletionStep::ContextSwitch => context_switches += 1,
                CompletionStep::WakeAndSwitch => {
                    wakeups += 1;
                    context_switches += 1;
                }
                CompletionStep::IdleExit => idle_exits += 1,
                CompletionStep::Handler => handler_instructions += self.irq,
                CompletionStep::StatusRead => register_reads += 1,
                CompletionStep::PollWriteback | CompletionStep::WaitInterrupt => {}
            }
        }
        CompletionPath {
            wakeups,
            context_switches,
            idle_exits,
            idle_exit_ns: idle_exits as f64 * self.idle_exit as f64 / 1000.0,
            register_reads,
            instructions: wakeups * self.wakeup
                + context_switches * self.context_switch
                + handler_instructions,
        }
    }

    /// One transfer on a register-programmed engine (TaPaSCo-style, the
    /// engine's [`regs::CTRL_INLINE`]): no descriptor in host memory and
    /// no page pinning (the buffer's physical address is given, CCIX §IV
    /// Exp. 1: "directly used the physical address of the data"); the
    /// source, destination and length go to the channel's INLINE registers
    /// over uncached MMIO, then CONTROL with RUN (the doorbell), then the
    /// wait and completion as in [`DmaDriver::transfer`].
    pub fn transfer_registers(
        &self,
        t: &Transfer,
        layout: &DriverLayout,
        completion: Completion,
        msi_vector: u32,
    ) -> Vec<Op> {
        let ch = t.channel;
        let (src, dst) = if ch == crate::dma::H2C {
            (t.host, t.card)
        } else {
            (t.card, t.host)
        };
        let mut ops = vec![Op::Instructions(self.syscall)];
        if completion == Completion::Poll {
            ops.push(Op::Store {
                addr: layout.writeback,
                data: vec![0; 4],
            });
            ops.push(Op::Fence);
        }
        ops.push(Op::Instructions(self.submit));
        let base = layout.bar0 + ch as u64 * regs::CHANNEL_STRIDE;
        let mmio = |off: u64, data: Vec<u8>| Op::MmioWrite {
            addr: base + off,
            data,
            wc: false,
        };
        let mut inline = src.to_le_bytes().to_vec();
        inline.extend_from_slice(&dst.to_le_bytes());
        inline.extend_from_slice(&(t.len as u32).to_le_bytes());
        ops.push(mmio(regs::INLINE_SRC, inline));
        let control = regs::CTRL_RUN
            | regs::CTRL_INLINE
            | completion_registers(completion, layout, msi_vector, &mmio, &mut ops);
        // With a timeout, the wait is watched from the doorbell on, as in
        // `transfer`.
        if self.timeout > 0 {
            let name = ["H2C", "C2H"].get(ch).unwrap_or(&"?");
            ops.push(Op::Arm {
                after: self.timeout,
                what: format!(
                    "dma_driver: register-programmed {name} transfer ({} bytes)",
                    t.len
                ),
            });
        }
        ops.push(mmio(regs::CONTROL, control.to_le_bytes().to_vec()));
        self.wait_done(completion, layout, msi_vector, 1, base, &mut ops);
        if self.timeout > 0 {
            ops.push(Op::Disarm);
        }
        ops.push(Op::Instructions(self.completion));
        ops
    }
}

/// Programs how a channel reports completion: the write-back address
/// (polling) or the MSI vector (interrupt), through `mmio`; returns the
/// CONTROL bits that select it.
fn completion_registers(
    completion: Completion,
    layout: &DriverLayout,
    msi_vector: u32,
    mmio: &impl Fn(u64, Vec<u8>) -> Op,
    ops: &mut Vec<Op>,
) -> u32 {
    match completion {
        Completion::Poll => {
            ops.push(mmio(regs::WB_ADDR, layout.writeback.to_le_bytes().to_vec()));
            regs::CTRL_WRITEBACK
        }
        Completion::Interrupt => {
            ops.push(mmio(regs::MSI_DATA, msi_vector.to_le_bytes().to_vec()));
            regs::CTRL_IRQ
        }
    }
}
