//! Memories that hold real bytes: host DRAM and device BRAM.
//!
//! [`SparseMemory`] stores 4 KiB pages in a `BTreeMap`, so a 64-bit address
//! space costs only the pages touched; unwritten bytes read as zero.
//! [`Memory`] puts it behind a port: a request is served in arrival order,
//! occupies the memory for `bytes / bandwidth`, and is answered `latency`
//! later. Reads observe every earlier write (reads and writes take effect in
//! arrival order), which is the ordering PCIe relies on when a status
//! write-back follows the data it reports.

use std::collections::BTreeMap;

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
    check: None,
};

/// Declaration of `device_memory`.
pub static DEVICE_MEMORY: ComponentSpec = ComponentSpec {
    type_name: "device_memory",
    description:
        "On-device memory (FPGA BRAM) holding real bytes, behind the device's PCIe endpoint.",
    params: MEMORY_PARAMS,
    ports: &[PortSpec {
        name: "dev",
        description: "Reads and writes from the device (DMA engine / BAR window).",
        required: true,
    }],
    stats: MEMORY_STATS,
    check: None,
};

/// A memory component serving [`MemReq`]s on any of its ports.
pub struct Memory {
    spec: &'static ComponentSpec,
    latency: Tick,
    bandwidth_gbps: f64,
    busy_until: Tick,
    out: DelayLine,
    /// The stored bytes (inspect after a run; preload before one).
    pub data: SparseMemory,
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
            data: SparseMemory::new(),
        })
    }
}

impl Component<Msg> for Memory {
    fn spec(&self) -> &'static ComponentSpec {
        self.spec
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        let Msg::MemReq(req) = msg else {
            debug_assert!(false, "memory got a non-memory message");
            return;
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
        let start = ctx.now().max(self.busy_until);
        self.busy_until = start + transfer_ps(bytes, self.bandwidth_gbps);
        let at = self.busy_until + self.latency;
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
