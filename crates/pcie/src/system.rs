//! Assembling a host + PCIe device system from component parameters.
//!
//! ```text
//!   core ──mem── host_memory
//!     └──io── root_complex ──mem──┘
//!                  └──pcie── pcie_link ── xdma_engine ──mem── device_memory
//! ```
//!
//! All kernel links here are zero-latency and unlimited: every delay lives in
//! a component (memory latency, RC crossing, PCIe serialization and flight,
//! engine cycles), so each appears once and carries its own provenance.

use ccsim_kernel::prelude::*;

use crate::core::{Core, Op};
use crate::dma::XdmaEngine;
use crate::link::{link_config, PcieLink};
use crate::memory::Memory;
use crate::msg::Msg;
use crate::rc::RootComplex;
use crate::tlp::LinkConfig;

/// Parameters of every component of a [`PcieSystem`].
#[derive(Debug, Clone, Default)]
pub struct PcieSystemParams {
    /// `core` parameters.
    pub core: Params,
    /// `host_memory` parameters.
    pub host_memory: Params,
    /// `root_complex` parameters.
    pub root_complex: Params,
    /// `pcie_link` parameters.
    pub pcie_link: Params,
    /// `xdma_engine` parameters.
    pub xdma_engine: Params,
    /// `device_memory` parameters.
    pub device_memory: Params,
}

/// A built system and the ids of its components.
pub struct PcieSystem {
    /// The runnable simulation.
    pub sim: Simulation<Msg>,
    /// The core.
    pub core: ComponentId,
    /// Host memory.
    pub host_memory: ComponentId,
    /// Root complex.
    pub root_complex: ComponentId,
    /// PCIe link.
    pub link: ComponentId,
    /// DMA engine / endpoint.
    pub engine: ComponentId,
    /// Device memory.
    pub device_memory: ComponentId,
    /// The link configuration.
    pub link_config: LinkConfig,
    /// BAR0 (engine registers) bus address.
    pub bar0: u64,
    /// BAR1 (device memory window) bus address.
    pub bar1: u64,
}

/// A host, a PCIe link and an XDMA engine with `device` on the engine's
/// AXI port, built and wired as the diagram in the module docs shows: what
/// [`PcieSystem`] and the NIC's DMA system (`ccsim_devices::nic`) share.
pub struct HostAndPcie {
    /// The runnable simulation.
    pub sim: Simulation<Msg>,
    /// The core.
    pub core: ComponentId,
    /// Host memory.
    pub host_memory: ComponentId,
    /// Root complex.
    pub root_complex: ComponentId,
    /// PCIe link.
    pub link: ComponentId,
    /// DMA engine / endpoint.
    pub engine: ComponentId,
    /// The device behind the engine.
    pub device: ComponentId,
    /// The link configuration.
    pub link_config: LinkConfig,
    /// BAR0 (engine registers) bus address.
    pub bar0: u64,
    /// BAR1 (device window) bus address.
    pub bar1: u64,
}

/// Builds [`HostAndPcie`] from `p` (its `device_memory` is not read) with
/// the core running `program`, `host` as host memory (already preloaded)
/// and `device`, named `device_name`, behind the engine.
pub fn build_host_and_pcie<D: Component<Msg>>(
    p: &PcieSystemParams,
    program: Vec<Op>,
    seed: u64,
    trace: TraceMode,
    host: Memory,
    device_name: &str,
    device: D,
) -> Result<HostAndPcie, String> {
    let link_config = link_config(&p.pcie_link)?;
    let core = Core::from_params(&p.core, program)?;
    let rc = RootComplex::from_params(&p.root_complex, &link_config)?;
    let link = PcieLink::from_params(&p.pcie_link)?;
    let mut engine = XdmaEngine::from_params(&p.xdma_engine, &link_config)?;
    // What the OS does at probe time: program the RC's MSI address.
    engine.set_msi_address(rc.msi_address());
    let (bar0, bar1) = (engine.bar0(), engine.bar1());

    let mut b = SystemBuilder::new("system", seed);
    b.trace(trace);
    let c = b.add("core", core);
    let hm = b.add("host_memory", host);
    let r = b.add("root_complex", rc);
    let l = b.add("pcie", link);
    let e = b.add("dma", engine);
    let d = b.add(device_name, device);
    let wire = || LinkParams::symmetric(0, 0.0);
    b.connect(c, "mem", hm, "cpu", wire());
    b.connect(c, "io", r, "cpu", wire());
    b.connect(r, "mem", hm, "io", wire());
    b.connect(r, "pcie", l, "up", wire());
    b.connect(l, "down", e, "pcie", wire());
    b.connect(e, "mem", d, "dev", wire());
    let sim = b.build().map_err(|e| e.to_string())?;
    Ok(HostAndPcie {
        sim,
        core: c,
        host_memory: hm,
        root_complex: r,
        link: l,
        engine: e,
        device: d,
        link_config,
        bar0,
        bar1,
    })
}

/// The components [`attach_host_and_dma`] added, by id.
#[derive(Debug, Clone, Copy)]
pub struct AttachedHost {
    /// The core.
    pub core: ComponentId,
    /// Host memory.
    pub host_memory: ComponentId,
    /// Root complex.
    pub root_complex: ComponentId,
    /// DMA engine / endpoint.
    pub engine: ComponentId,
    /// The device memory behind the engine.
    pub device_memory: ComponentId,
    /// BAR0 (engine registers) bus address.
    pub bar0: u64,
    /// BAR1 (device memory window) bus address.
    pub bar1: u64,
}

/// Adds the PCIe side of [`build_host_and_pcie`] to builder `b` with the
/// link left out: the root complex's `pcie` port goes to `io_host`'s port
/// `io_host.1` and the engine's to `io_device`'s (a CXL flexbus's CXL.io
/// ports, say). `p.pcie_link` gives the transaction layer's sizes (MPS,
/// MRRS, RCB) the root complex and the engine negotiate.
pub fn attach_host_and_dma(
    b: &mut SystemBuilder<Msg>,
    p: &PcieSystemParams,
    program: Vec<Op>,
    host: Memory,
    device: Memory,
    io_host: (ComponentId, &str),
    io_device: (ComponentId, &str),
) -> Result<AttachedHost, String> {
    let link_config = link_config(&p.pcie_link)?;
    let core = Core::from_params(&p.core, program)?;
    let rc = RootComplex::from_params(&p.root_complex, &link_config)?;
    let mut engine = XdmaEngine::from_params(&p.xdma_engine, &link_config)?;
    engine.set_msi_address(rc.msi_address());
    let (bar0, bar1) = (engine.bar0(), engine.bar1());
    let c = b.add("core", core);
    let hm = b.add("host_memory", host);
    let r = b.add("root_complex", rc);
    let e = b.add("dma", engine);
    let d = b.add("device_memory", device);
    let wire = || LinkParams::symmetric(0, 0.0);
    b.connect(c, "mem", hm, "cpu", wire());
    b.connect(c, "io", r, "cpu", wire());
    b.connect(r, "mem", hm, "io", wire());
    b.connect(r, "pcie", io_host.0, io_host.1, wire());
    b.connect(io_device.0, io_device.1, e, "pcie", wire());
    b.connect(e, "mem", d, "dev", wire());
    Ok(AttachedHost {
        core: c,
        host_memory: hm,
        root_complex: r,
        engine: e,
        device_memory: d,
        bar0,
        bar1,
    })
}

/// The report of a run that did not finish (a driver's timeout, a hung
/// engine, a hang): what is stuck, then the state of the core, the root
/// complex, the DMA
/// engine and its channels, the link's wires (and credits), and the
/// messages the kernel still holds. One line each.
pub fn stuck_report(
    sim: &Simulation<Msg>,
    [core, rc, link, engine]: [ComponentId; 4],
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = sim.component::<Core>(core) {
        out.push(c.report());
    }
    if let Some(r) = sim.component::<RootComplex>(rc) {
        out.push(r.report());
    }
    if let Some(e) = sim.component::<XdmaEngine>(engine) {
        out.extend(e.report());
    }
    if let Some(l) = sim.component::<PcieLink>(link) {
        out.extend(l.report());
    }
    let held: Vec<String> = sim.in_flight().map(msg_summary).collect();
    out.push(format!(
        "messages between components: {} [{}{}]",
        held.len(),
        held.iter().take(8).cloned().collect::<Vec<_>>().join(", "),
        if held.len() > 8 { ", ..." } else { "" }
    ));
    out
}

/// The fault counts of link `link` as statistics named after its instance
/// (`system.pcie.faults.replays`, ...), empty when the link has no fault
/// configured (so a fault-free point's statistics stay as they were).
pub fn link_fault_stats(sim: &Simulation<Msg>, link: ComponentId) -> Vec<(String, f64)> {
    let name = sim.name(link);
    sim.component::<PcieLink>(link)
        .map(|l| {
            l.fault_stats()
                .into_iter()
                .map(|(k, v)| (format!("{name}.{k}"), v))
                .collect()
        })
        .unwrap_or_default()
}

/// A short name for a message in a report.
fn msg_summary(m: &Msg) -> String {
    match m {
        Msg::Tlp(t) => format!("TLP {:?} {:#x} len {}", t.kind, t.addr, t.len),
        Msg::MmioRead { addr, len, .. } => format!("MMIO read {addr:#x} len {len}"),
        Msg::MmioWrite { addr, data } => format!("MMIO write {addr:#x} len {}", data.len()),
        Msg::MmioData { data, .. } => format!("MMIO data len {}", data.len()),
        Msg::Interrupt { vector } => format!("interrupt {vector}"),
        other => {
            let d = format!("{other:?}");
            d.chars().take(60).collect()
        }
    }
}

impl PcieSystem {
    /// The report of a run that did not finish ([`stuck_report`]).
    pub fn stuck_report(&self) -> Vec<String> {
        stuck_report(
            &self.sim,
            [self.core, self.root_complex, self.link, self.engine],
        )
    }

    /// The link's fault counts as statistics ([`link_fault_stats`]).
    pub fn fault_stats(&self) -> Vec<(String, f64)> {
        link_fault_stats(&self.sim, self.link)
    }

    /// Builds the system with the core running `program`. `setup` may
    /// preload host and device memory before the run.
    pub fn build(
        p: &PcieSystemParams,
        program: Vec<Op>,
        seed: u64,
        trace: TraceMode,
        setup: impl FnOnce(&mut Memory, &mut Memory),
    ) -> Result<PcieSystem, String> {
        let mut host = Memory::host(&p.host_memory)?;
        let mut dev = Memory::device(&p.device_memory)?;
        setup(&mut host, &mut dev);
        let built = build_host_and_pcie(p, program, seed, trace, host, "device_memory", dev)?;
        Ok(PcieSystem {
            sim: built.sim,
            core: built.core,
            host_memory: built.host_memory,
            root_complex: built.root_complex,
            link: built.link,
            engine: built.engine,
            device_memory: built.device,
            link_config: built.link_config,
            bar0: built.bar0,
            bar1: built.bar1,
        })
    }

    /// The core after (or during) the run.
    pub fn core(&self) -> &Core {
        self.sim.component::<Core>(self.core).expect("core")
    }
    /// Host memory.
    pub fn host_memory(&self) -> &Memory {
        self.sim
            .component::<Memory>(self.host_memory)
            .expect("host memory")
    }
    /// Device memory.
    pub fn device_memory(&self) -> &Memory {
        self.sim
            .component::<Memory>(self.device_memory)
            .expect("device memory")
    }
    /// The DMA engine.
    pub fn engine(&self) -> &XdmaEngine {
        self.sim
            .component::<XdmaEngine>(self.engine)
            .expect("engine")
    }
}
