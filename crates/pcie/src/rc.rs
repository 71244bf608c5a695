//! The `root_complex` component: the host end of a PCIe link.
//!
//! ```text
//!   core ──cpu── root_complex ──pcie── pcie_link ── device
//!                     │mem
//!                host_memory
//! ```
//!
//! * Outbound (core → device): an MMIO store becomes a posted MWr TLP (split
//!   at MPS and 4 KiB); an MMIO load becomes a non-posted MRd with a tag, and
//!   its completions are reassembled and returned to the core.
//! * Inbound (device → host): an MWr to the MSI address becomes an interrupt
//!   to the core; other MWrs and MRds go to host memory. A read's data goes
//!   back as CplD TLPs split at the RCB, at most `completion_bytes` each.
//!
//! Every crossing costs `latency_ns` (the RC's pipeline and its path to the
//! memory controller). Crossings are FIFO, so a device's status write-back
//! reaches memory after the data it follows, as PCIe ordering requires.

use std::collections::BTreeMap;

use ccsim_kernel::prelude::*;

use crate::msg::{MemReq, MemResp, Msg, Tlp};
use crate::tlp::{LinkConfig, TlpKind};
use crate::util::{complete, ns_to_ps, DelayLine};

/// Port indices of the root complex.
pub mod ports {
    /// Core side.
    pub const CPU: usize = 0;
    /// Host memory.
    pub const MEM: usize = 1;
    /// PCIe link (upstream port of the link).
    pub const PCIE: usize = 2;
}

/// Declaration of `root_complex`.
pub static ROOT_COMPLEX: ComponentSpec = ComponentSpec {
    type_name: "root_complex",
    description: "PCIe root complex: turns core MMIO into MWr/MRd TLPs, serves device DMA from host memory with RCB-split completions, and turns MSI writes into interrupts.",
    params: &[
        ParamSpec { name: "latency_ns", kind: ParamKind::Float, default: ParamDefault::Float(100.0), unit: "ns", range: ParamRange::at_least(0.0), from: "assumed", description: "Latency of one crossing of the root complex (either direction), including the on-chip path to the core or the memory controller." },
        ParamSpec { name: "completion_bytes", kind: ParamKind::Int, default: ParamDefault::Int(256), unit: "bytes", range: ParamRange::at_least(64.0), from: "assumed: completions of MPS size", description: "Largest completion the RC returns for a DMA read (capped at MPS, split on the RCB); at least the RCB of every pcie_link of the platform." },
        ParamSpec { name: "msi_address", kind: ParamKind::Int, default: ParamDefault::Int(0xFEE0_0000), unit: "address", range: ParamRange::at_least(0.0), from: "Intel SDM Vol. 3 §11.11: x86 MSI writes go to 0xFEE00000", description: "Address whose 4 KiB page receives MSI/MSI-X writes (0xFEE00000 on x86)." },
        ParamSpec { name: "max_tags", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "tags", range: ParamRange::between(1.0, 1024.0), from: "assumed", description: "Outstanding non-posted MMIO reads the RC can track." },
    ],
    ports: &[
        PortSpec { name: "cpu", description: "MMIO requests from cores; MMIO data and interrupts to them.", required: true },
        PortSpec { name: "mem", description: "DMA reads and writes to host memory.", required: true },
        PortSpec { name: "pcie", description: "TLPs to and from the PCIe link.", required: true },
    ],
    stats: &[
        StatSpec { name: "mmio_writes", kind: StatKind::Counter, unit: "TLPs", description: "MWr TLPs sent for core stores." },
        StatSpec { name: "mmio_reads", kind: StatKind::Counter, unit: "TLPs", description: "MRd TLPs sent for core loads." },
        StatSpec { name: "dma_reads", kind: StatKind::Counter, unit: "requests", description: "Device MRds served from host memory." },
        StatSpec { name: "dma_writes", kind: StatKind::Counter, unit: "TLPs", description: "Device MWrs written to host memory." },
        StatSpec { name: "completions", kind: StatKind::Counter, unit: "TLPs", description: "CplD TLPs sent to the device." },
        StatSpec { name: "interrupts", kind: StatKind::Counter, unit: "MSIs", description: "MSI writes turned into interrupts." },
        StatSpec { name: "mmio_read_ns", kind: StatKind::Histogram, unit: "ns", description: "MMIO read round trip seen at the RC (MRd out to last CplD in)." },
    ],
    check: Some(check),
};

/// Completions end on RCB boundaries, so they are never shorter than the
/// RCB of any link of the platform.
fn check(p: &Params, peers: Peers<'_>) -> Result<(), ParamProblem> {
    let bytes = p.int("completion_bytes");
    for link in peers.of_type("pcie_link") {
        let rcb = link.params.int("read_completion_boundary");
        if bytes < rcb {
            return Err(ParamProblem::new(
                "completion_bytes",
                format!(
                    "must be at least the read completion boundary of {} ({rcb}), got {bytes}",
                    link.instance
                ),
            ));
        }
    }
    Ok(())
}

struct MmioRead {
    core_id: u64,
    addr: u64,
    data: Vec<u8>,
    len: u32,
    issued: Tick,
}

/// The root complex.
pub struct RootComplex {
    link: LinkConfig,
    latency: Tick,
    completion_bytes: u32,
    msi_page: u64,
    free_tags: Vec<u16>,
    /// Outstanding MMIO reads by tag.
    reads: BTreeMap<u16, MmioRead>,
    /// MMIO reads waiting for a tag.
    waiting: std::collections::VecDeque<(u64, u64, u32)>,
    /// Outstanding DMA reads at host memory by memory id: (tag, addr).
    dma_reads: BTreeMap<u64, (u16, u64)>,
    next_id: u64,
    out: DelayLine,
}

impl RootComplex {
    /// The root complex's state for a stuck run's report: MMIO reads
    /// outstanding (by tag and address) and waiting for a tag, device DMA
    /// reads at host memory, and messages in its crossing pipeline.
    pub fn report(&self) -> String {
        let reads: Vec<String> = self
            .reads
            .iter()
            .take(6)
            .map(|(tag, r)| {
                format!(
                    "tag {tag} at {:#x} ({} of {} bytes)",
                    r.addr,
                    r.data.len(),
                    r.len
                )
            })
            .collect();
        format!(
            "root complex: {} MMIO reads outstanding [{}], {} waiting for a tag, {} device reads at host memory, {} messages crossing",
            self.reads.len(),
            reads.join(", "),
            self.waiting.len(),
            self.dma_reads.len(),
            self.out.len()
        )
    }

    /// A root complex from validated parameters and the link it drives.
    pub fn from_params(params: &Params, link: &LinkConfig) -> Result<RootComplex, String> {
        let p = complete(&ROOT_COMPLEX, params)?;
        let tags = p.uint("max_tags") as u16;
        let completion_bytes = p.uint("completion_bytes") as u32;
        // A guard: the platform's check bounds it by every link's RCB.
        if completion_bytes < link.rcb {
            return Err(format!(
                "root_complex.completion_bytes: {completion_bytes} is below the RCB ({})",
                link.rcb
            ));
        }
        Ok(RootComplex {
            link: link.clone(),
            latency: ns_to_ps(p.float("latency_ns")),
            completion_bytes,
            msi_page: p.uint("msi_address") / 4096,
            free_tags: (0..tags).rev().collect(),
            reads: BTreeMap::new(),
            waiting: Default::default(),
            dma_reads: BTreeMap::new(),
            next_id: 0,
            out: DelayLine::new(0),
        })
    }

    /// The base of the MSI address page.
    pub fn msi_address(&self) -> u64 {
        self.msi_page * 4096
    }

    fn later(&mut self, ctx: &mut Ctx<'_, Msg>, port: usize, msg: Msg) {
        let at = ctx.now() + self.latency;
        self.out.push(ctx, at, port, msg);
    }

    fn issue_read(&mut self, ctx: &mut Ctx<'_, Msg>, core_id: u64, addr: u64, len: u32) {
        let Some(tag) = self.free_tags.pop() else {
            self.waiting.push_back((core_id, addr, len));
            return;
        };
        ctx.count(1, 1);
        self.reads.insert(
            tag,
            MmioRead {
                core_id,
                addr,
                data: Vec::with_capacity(len as usize),
                len,
                issued: ctx.now(),
            },
        );
        self.later(ctx, ports::PCIE, Msg::tlp(Tlp::read(addr, len, tag)));
    }

    fn on_cpu(&mut self, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match msg {
            Msg::MmioWrite { addr, data } => {
                for (a, n) in self.link.split_write(addr, data.len() as u64) {
                    let off = (a - addr) as usize;
                    ctx.count(0, 1);
                    let tlp = Tlp::write(a, data[off..off + n as usize].to_vec());
                    self.later(ctx, ports::PCIE, Msg::tlp(tlp));
                }
            }
            Msg::MmioRead { id, addr, len } => self.issue_read(ctx, id, addr, len),
            other => debug_assert!(false, "root complex: unexpected {other:?} from the core"),
        }
    }

    fn on_tlp(&mut self, tlp: Tlp, ctx: &mut Ctx<'_, Msg>) {
        match tlp.kind {
            TlpKind::MemWrite if tlp.addr / 4096 == self.msi_page => {
                ctx.count(5, 1);
                let mut v = [0u8; 4];
                let n = tlp.data.len().min(4);
                v[..n].copy_from_slice(&tlp.data[..n]);
                let vector = u32::from_le_bytes(v);
                self.later(ctx, ports::CPU, Msg::Interrupt { vector });
            }
            TlpKind::MemWrite => {
                ctx.count(3, 1);
                let id = self.next_id;
                self.next_id += 1;
                let req = MemReq::Write {
                    id,
                    addr: tlp.addr,
                    data: tlp.data,
                };
                self.later(ctx, ports::MEM, Msg::mem_req(req));
            }
            TlpKind::MemRead => {
                ctx.count(2, 1);
                let id = self.next_id;
                self.next_id += 1;
                self.dma_reads.insert(id, (tlp.tag, tlp.addr));
                let req = MemReq::Read {
                    id,
                    addr: tlp.addr,
                    len: tlp.len,
                };
                self.later(ctx, ports::MEM, Msg::mem_req(req));
            }
            TlpKind::CplD => {
                let tag = tlp.tag;
                let last = tlp.is_last_completion();
                let Some(r) = self.reads.get_mut(&tag) else {
                    debug_assert!(false, "root complex: completion for unknown tag {tag}");
                    return;
                };
                r.data.extend_from_slice(&tlp.data);
                if last {
                    let r = self.reads.remove(&tag).expect("present");
                    debug_assert_eq!(
                        r.data.len() as u32,
                        r.len,
                        "completion bytes for {:#x}",
                        r.addr
                    );
                    ctx.record(6, (ctx.now() - r.issued) / 1000);
                    self.free_tags.push(tag);
                    self.later(
                        ctx,
                        ports::CPU,
                        Msg::MmioData {
                            id: r.core_id,
                            data: r.data,
                        },
                    );
                    if let Some((id, addr, len)) = self.waiting.pop_front() {
                        self.issue_read(ctx, id, addr, len);
                    }
                }
            }
        }
    }

    fn on_mem(&mut self, resp: MemResp, ctx: &mut Ctx<'_, Msg>) {
        match resp {
            MemResp::Ack { .. } => {}
            MemResp::Data { id, data } => {
                let Some((tag, addr)) = self.dma_reads.remove(&id) else {
                    debug_assert!(false, "root complex: memory data for unknown id {id}");
                    return;
                };
                let mut remaining = data.len() as u32;
                for (a, n) in
                    self.link
                        .split_completion(addr, data.len() as u32, self.completion_bytes)
                {
                    let off = (a - addr) as usize;
                    let tlp =
                        Tlp::completion(tag, a, remaining, data[off..off + n as usize].to_vec());
                    remaining -= n;
                    ctx.count(4, 1);
                    self.later(ctx, ports::PCIE, Msg::tlp(tlp));
                }
            }
        }
    }
}

impl Component<Msg> for RootComplex {
    fn spec(&self) -> &'static ComponentSpec {
        &ROOT_COMPLEX
    }
    fn on_message(&mut self, port: PortId, msg: Msg, ctx: &mut Ctx<'_, Msg>) {
        match (port, msg) {
            (ports::CPU, m) => self.on_cpu(m, ctx),
            (ports::PCIE, Msg::Tlp(t)) => self.on_tlp(*t, ctx),
            (ports::MEM, Msg::MemResp(r)) => self.on_mem(r, ctx),
            (p, m) => debug_assert!(false, "root complex: unexpected {m:?} on port {p}"),
        }
    }
    fn on_wake(&mut self, _token: u64, ctx: &mut Ctx<'_, Msg>) {
        self.out.fire(ctx);
    }
}
