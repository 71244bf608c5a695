//! Memories that hold real bytes: host DRAM and device memory (BRAM, or
//! DDR behind a controller that answers writes early).
//!
//! [`SparseMemory`] stores 4 KiB pages in a `BTreeMap`, so a 64-bit address
//! space costs only the pages touched; unwritten bytes read as zero.
//! [`Memory`] puts it behind a port: a request is served in arrival order,
//! occupies the memory for `bytes / bandwidth`, and is answered `latency`
//! later. Reads observe every earlier write (reads and writes take effect in
//! arrival order), which is the ordering PCIe relies on when a status
//! write-back follows the data it reports.
//!
//! Two mechanisms of a host's memory system can be switched on per
//! platform (both are off by default, which keeps every access a plain
//! DRAM access as above):
//!
//! * **CPU cache state** (`cpu_line_bytes` > 0). The memory remembers which
//!   lines the CPU's caches hold. A CPU access to a held line is a cache hit
//!   (`cpu_hit_ns`, no DRAM occupancy); any other line is a miss that costs a
//!   DRAM access and is then held. A DMA write from the `io` port
//!   **invalidates** the lines it touches (the coherent root complex's snoop
//!   removes them from the CPU's caches), so the driver's next access to a
//!   buffer, a status write-back or a descriptor the device wrote misses:
//!   the "cache misses manipulating DMA data structures in main memory" of
//!   PIO paper §6.3. The caches are not capacity-limited here: lines only
//!   leave by invalidation, so every miss counted is a cold miss or a
//!   coherence miss caused by the device ([`Memory::cache_stats`]).
//! * **DRAM refresh** (`refresh_interval_ns` > 0). Every tREFI the DRAM is
//!   unavailable for tRFC (JEDEC JESD79-4 DDR4, refresh command timing: tREFI
//!   = 7.8 us at normal temperature; tRFC = 260/350/550 ns for 4/8/16 Gb
//!   devices). An access that would start inside a refresh window starts at
//!   its end. The windows' phase is drawn from the run's seed, so which
//!   accesses stall is seeded and repeatable; all ranks refresh together
//!   (a simplification: per-rank staggering would spread the same stall).
//! * **Posted writes** (`write_response = "accepted"`). A memory controller
//!   may answer a write once it has taken the command and data, before the
//!   DRAM write: the UltraScale DDR4 MIG's AXI shim pushes the write
//!   response when the controller accepts the burst's last command (the
//!   same rule as `ddr_controller`'s `write_response`). The write is then
//!   answered `write_accept_ns` after its data is in (it occupies the
//!   memory's bandwidth as before), where a read is answered `latency_ns`
//!   after. A
//!   DMA engine that waits for its card-memory writes (an H2C transfer's
//!   completion) waits the shorter time.

use std::collections::{BTreeMap, BTreeSet};

use ccsim_kernel::prelude::*;

use crate::msg::{MemReq, MemResp, Msg};
use crate::util::{complete, ns_to_ps, transfer_ps, DelayLine};

const PAGE: u64 = 4096;

/// A sparse byte-addressable memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseMemory {
    pages: BTreeMap<u64, Box<[u8]>>,
}

impl SparseMemory {
    /// An all-zero memory.
    pub fn new() -> Self {
        Self::default()
    }
    /// Reads `len` bytes at `addr`.
    pub fn read(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        let mut done = 0usize;
        while done < len {
            let a = addr + done as u64;
            let (page, off) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - off).min(len - done);
            if let Some(p) = self.pages.get(&page) {
                out[done..done + n].copy_from_slice(&p[off..off + n]);
            }
            done += n;
        }
        out
    }
    /// Writes `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut done = 0usize;
        while done < data.len() {
            let a = addr + done as u64;
            let (page, off) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - off).min(data.len() - done);
            let p = self
                .pages
                .entry(page)
                .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
            p[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }
    /// Reads a little-endian `u32` at `addr`.
    pub fn read_u32(&self, addr: u64) -> u32 {
        u32::from_le_bytes(self.read(addr, 4).try_into().expect("4 bytes"))
    }
    /// Pages touched so far.
    pub fn pages(&self) -> usize {
        self.pages.len()
    }
}

const MEMORY_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "latency_ns",
        kind: ParamKind::Float,
        default: ParamDefault::Float(80.0),
        unit: "ns",
        range: ParamRange::at_least(0.0),
        from: "assumed: DRAM load-to-use latency",
        description: "Access latency from the request's arrival (after any queueing) to the response leaving.",
    },
    ParamSpec {
        name: "bandwidth_gbps",
        kind: ParamKind::Float,
        default: ParamDefault::Float(20.0),
        unit: "GB/s",
        range: ParamRange::at_least(0.0),
        from: "assumed",
        description: "Bytes per second the memory serves, shared by reads and writes (0 = unlimited).",
    },
    ParamSpec {
        name: "cpu_line_bytes",
        kind: ParamKind::Int,
        default: ParamDefault::Int(0),
        unit: "bytes",
        range: ParamRange::at_least(0.0),
        from: "assumed: off (the CPU's cache state is not modelled)",
        description: "Cache-line size of the CPU's caches in front of this memory: CPU accesses to held lines hit, DMA writes invalidate the lines they touch (0 = off: every CPU access is a DRAM access).",
    },
    ParamSpec {
        name: "cpu_hit_ns",
        kind: ParamKind::Float,
        default: ParamDefault::Float(0.0),
        unit: "ns",
        range: ParamRange::at_least(0.0),
        from: "assumed",
        description: "Latency of a CPU access whose lines the CPU's caches hold (with cpu_line_bytes > 0).",
    },
    ParamSpec {
        name: "refresh_interval_ns",
        kind: ParamKind::Float,
        default: ParamDefault::Float(0.0),
        unit: "ns",
        range: ParamRange::at_least(0.0),
        from: "assumed: off (no refresh modelled)",
        description: "DRAM refresh interval tREFI: every this long the DRAM stops serving for refresh_ns (0 = no refresh).",
    },
    ParamSpec {
        name: "refresh_ns",
        kind: ParamKind::Float,
        default: ParamDefault::Float(0.0),
        unit: "ns",
        range: ParamRange::at_least(0.0),
        from: "assumed: off",
        description: "DRAM refresh cycle time tRFC: how long each refresh blocks every access.",
    },
    ParamSpec {
        name: "write_response",
        kind: ParamKind::Enum(&["written", "accepted"]),
        default: ParamDefault::Str("written"),
        unit: "",
        range: ParamRange::ANY,
        from: "assumed: a write is answered after the same latency as a read",
        description: "When a write is answered. written: latency_ns after its data is in, as a read; accepted: write_accept_ns after its data is in, as a memory controller that answers once it holds command and data (the DDR4 MIG's AXI shim).",
    },
    ParamSpec {
        name: "write_accept_ns",
        kind: ParamKind::Float,
        default: ParamDefault::Float(0.0),
        unit: "ns",
        range: ParamRange::at_least(0.0),
        from: "assumed",
        description: "write_response = accepted: a write's data in to its response.",
    },
];
const MEMORY_STATS: &[StatSpec] = &[
    StatSpec {
        name: "reads",
        kind: StatKind::Counter,
        unit: "requests",
        description: "Read requests served.",
    },
    StatSpec {
        name: "writes",
        kind: StatKind::Counter,
        unit: "requests",
        description: "Write requests served.",
    },
    StatSpec {
        name: "bytes_read",
        kind: StatKind::Counter,
        unit: "bytes",
        description: "Bytes read.",
    },
    StatSpec {
        name: "bytes_written",
        kind: StatKind::Counter,
        unit: "bytes",
        description: "Bytes written.",
    },
];

/// Declaration of `host_memory`.
pub static HOST_MEMORY: ComponentSpec = ComponentSpec {
    type_name: "host_memory",
    description: "Host DRAM holding real bytes (sparse pages), with a fixed access latency and a bandwidth shared by all ports.",
    params: MEMORY_PARAMS,
    ports: &[
        PortSpec {
            name: "cpu",
            description: "Loads and stores from a core (or, later, its cache).",
            required: false,
        },
        PortSpec {
            name: "io",
            description: "DMA reads and writes from the root complex.",
            required: false,
        },
    ],
    stats: MEMORY_STATS,
    check: Some(check_memory),
};

/// A refresh must fit in its interval, and a line size is a power of two.
fn check_memory(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let line = p.int("cpu_line_bytes");
    if line != 0 && !(line as u64).is_power_of_two() {
        return Err(ParamProblem::new(
            "cpu_line_bytes",
            format!("must be 0 (off) or a power of two, got {line}"),
        ));
    }
    let (interval, trfc) = (p.float("refresh_interval_ns"), p.float("refresh_ns"));
    if interval > 0.0 && trfc >= interval {
        return Err(ParamProblem::new(
            "refresh_ns",
            format!("{trfc} ns must be shorter than refresh_interval_ns ({interval} ns)"),
        ));
    }
    Ok(())
}

/// Declaration of `device_memory`.
pub static DEVICE_MEMORY: ComponentSpec = ComponentSpec {
    type_name: "device_memory",
    description:
        "On-device memory (FPGA BRAM, or DDR behind a memory controller) holding real bytes, behind the device's PCIe endpoint.",
    params: MEMORY_PARAMS,
    ports: &[PortSpec {
        name: "dev",
        description: "Reads and writes from the device (DMA engine / BAR window).",
        required: true,
    }],
    stats: MEMORY_STATS,
    check: Some(check_memory),
};

/// A memory component serving [`MemReq`]s on any of its ports.
pub struct Memory {
    spec: &'static ComponentSpec,
    latency: Tick,
    bandwidth_gbps: f64,
    busy_until: Tick,
    out: DelayLine,
    /// CPU cache-line size (0: the cache state is not modelled).
    line: u64,
    hit: Tick,
    /// Lines the CPU's caches hold (line addresses).
    cached: BTreeSet<u64>,
    refresh_interval: Tick,
    refresh: Tick,
    /// Start of the first refresh window (seeded at init).
    refresh_phase: Tick,
    /// A write's start to its response when writes are posted
    /// (`write_response = "accepted"`); `None`: `latency`, as a read.
    write_accept: Option<Tick>,
    /// The stored bytes (inspect after a run; preload before one).
    pub data: SparseMemory,
    /// CPU line accesses that hit (with the cache state modelled).
    pub cpu_hits: u64,
    /// CPU line accesses that missed and went to DRAM.
    pub cpu_misses: u64,
    /// CPU-held lines invalidated by DMA writes.
    pub dma_invalidations: u64,
    /// DRAM accesses delayed by a refresh, and the total delay (ps).
    pub refresh_stalls: u64,
    /// Total time accesses waited for refreshes (ps).
    pub refresh_stall_ps: Tick,
    /// Requests served on any port.
    served: u64,
}

impl Memory {
    /// A host memory from validated parameters.
    pub fn host(params: &Params) -> Result<Memory, String> {
        Self::with_spec(&HOST_MEMORY, params)
    }
    /// A device memory from validated parameters.
    pub fn device(params: &Params) -> Result<Memory, String> {
        Self::with_spec(&DEVICE_MEMORY, params)
    }
    fn with_spec(spec: &'static ComponentSpec, params: &Params) -> Result<Memory, String> {
        let p = complete(spec, params)?;
        Ok(Memory {
            spec,
            latency: ns_to_ps(p.float("latency_ns")),
            bandwidth_gbps: p.float("bandwidth_gbps"),
            busy_until: 0,
            out: DelayLine::new(0),
            line: p.uint("cpu_line_bytes"),
            hit: ns_to_ps(p.float("cpu_hit_ns")),
            cached: BTreeSet::new(),
            refresh_interval: ns_to_ps(p.float("refresh_interval_ns")),
            refresh: ns_to_ps(p.float("refresh_ns")),
            refresh_phase: 0,
            write_accept: (p.str("write_response") == "accepted")
                .then(|| ns_to_ps(p.float("write_accept_ns"))),
            data: SparseMemory::new(),
            cpu_hits: 0,
            cpu_misses: 0,
            dma_invalidations: 0,
            refresh_stalls: 0,
            refresh_stall_ps: 0,
            served: 0,
        })
    }

    /// Marks the lines of `[addr, addr + len)` as held by the CPU's caches
    /// (a preloaded, warm structure), when the cache state is modelled.
    pub fn warm(&mut self, addr: u64, len: u64) {
        if self.line > 0 {
            for l in self.lines(addr, len) {
                self.cached.insert(l);
            }
        }
    }

    /// Whether the CPU's caches hold the line of `addr`.
    pub fn cpu_holds(&self, addr: u64) -> bool {
        self.line > 0 && self.cached.contains(&(addr / self.line * self.line))
    }

    /// The line addresses `[addr, addr + len)` touches.
    fn lines(&self, addr: u64, len: u64) -> impl Iterator<Item = u64> {
        let line = self.line;
        let first = addr / line * line;
        let end = addr + len.max(1);
        (0..)
            .map(move |i| first + i * line)
            .take_while(move |a| *a < end)
    }

    /// Start of the first refresh window (drawn from the run's seed at init).
    pub fn refresh_phase(&self) -> Tick {
        self.refresh_phase
    }

    /// The earliest start at or after `at` outside every refresh window.
    pub fn after_refresh(&self, at: Tick) -> Tick {
        if self.refresh_interval == 0 || at < self.refresh_phase {
            return at;
        }
        let since = (at - self.refresh_phase) % self.refresh_interval;
        if since < self.refresh {
            at + (self.refresh - since)
        } else {
            at
        }
    }

    /// The cache and refresh counters as statistics named under `name`
    /// (`{name}.cpu_misses`, ...), empty when neither mechanism is on or
    /// the memory served no request (so the statistics of a platform
    /// without them, or of a run that never touched host memory, stay as
    /// they were).
    pub fn cache_stats(&self, name: &str) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if self.served == 0 {
            return out;
        }
        if self.line > 0 {
            out.push((format!("{name}.cpu_hits"), self.cpu_hits as f64));
            out.push((format!("{name}.cpu_misses"), self.cpu_misses as f64));
            out.push((
                format!("{name}.dma_invalidations"),
                self.dma_invalidations as f64,
            ));
        }
        if self.refresh_interval > 0 {
            out.push((format!("{name}.refresh_stalls"), self.refresh_stalls as f64));
            out.push((
                format!("{name}.refresh_stall_ns"),
                self.refresh_stall_ps as f64 / 1000.0,
            ));
        }
        out
    }

    /// Starts a DRAM access of `bytes` arriving at `now`: queues behind the
    /// previous one and any refresh window; returns when it is answered
    /// (a posted write once accepted, anything else after `latency`).
    fn dram_access(&mut self, now: Tick, bytes: u64, is_write: bool) -> Tick {
        let queued = now.max(self.busy_until);
        let start = self.after_refresh(queued);
        if start > queued {
            self.refresh_stalls += 1;
            self.refresh_stall_ps += start - queued;
        }
        self.busy_until = start + transfer_ps(bytes, self.bandwidth_gbps);
        match self.write_accept {
            Some(accept) if is_write => self.busy_until + accept,
            _ => self.busy_until + self.latency,
        }
    }
}

impl Component<Msg> for Memory {
    fn spec(&self) -> &'static ComponentSpec {
        self.spec
    }
    fn init(&mut self, ctx: &mut Ctx<'_, Msg>) {
        // Only a refreshing memory draws from its stream, so a platform
        // without refresh keeps its random numbers as they were.
        if self.refresh_interval > 0 {
            self.refresh_phase = ctx.rng().below(self.refresh_interval);
        }
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let Msg::MemReq(req) = msg else {
            debug_assert!(false, "memory got a non-memory message");
            return;
        };
        let from_cpu = port == 0 && self.spec.type_name == "host_memory";
        let (addr, len, is_write) = match &*req {
            MemReq::Read { addr, len, .. } => (*addr, *len as u64, false),
            MemReq::Write { addr, data, .. } => (*addr, data.len() as u64, true),
        };
        let (bytes, resp) = match *req {
            MemReq::Read { id, addr, len } => {
                ctx.count(0, 1);
                ctx.count(2, len as u64);
                let data = self.data.read(addr, len as usize);
                (len as u64, MemResp::Data { id, data })
            }
            MemReq::Write { id, addr, data } => {
                ctx.count(1, 1);
                ctx.count(3, data.len() as u64);
                self.data.write(addr, &data);
                (data.len() as u64, MemResp::Ack { id })
            }
        };
        self.served += 1;
        let now = ctx.now();
        let at = if self.line == 0 {
            self.dram_access(now, bytes, is_write)
        } else if from_cpu {
            // Hits are served by the caches; the missed lines are fetched
            // from DRAM (a store's too: write-allocate) and then held.
            let lines: Vec<u64> = self.lines(addr, len).collect();
            let missed: Vec<u64> = lines
                .iter()
                .copied()
                .filter(|l| !self.cached.contains(l))
                .collect();
            self.cpu_hits += (lines.len() - missed.len()) as u64;
            self.cpu_misses += missed.len() as u64;
            self.cached.extend(missed.iter().copied());
            if missed.is_empty() {
                now + self.hit
            } else {
                // A store's miss is a line fill (write-allocate): a read.
                self.dram_access(now, missed.len() as u64 * self.line, false)
            }
        } else {
            if is_write {
                // The device's write snoops the line out of the CPU's caches.
                for l in self.lines(addr, len).collect::<Vec<_>>() {
                    if self.cached.remove(&l) {
                        self.dma_invalidations += 1;
                    }
                }
            }
            self.dram_access(now, bytes, is_write)
        };
        self.out.push(ctx, at, port, Msg::MemResp(resp));
    }
    fn on_wake(&mut self, _token: u64, ctx: &mut Ctx<'_, Msg>) {
        self.out.fire(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_memory_round_trips_across_pages() {
        let mut m = SparseMemory::new();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        m.write(0xFFF0, &data);
        assert_eq!(m.read(0xFFF0, data.len()), data);
        // 0xFFF0..0x12700 touches pages 0xF, 0x10, 0x11, 0x12.
        assert_eq!(m.pages(), 4);
        assert_eq!(m.read(0, 4), vec![0; 4]);
        m.write(8, &7u32.to_le_bytes());
        assert_eq!(m.read_u32(8), 7);
    }
}
