//! `ccix_vc_share` — CCIX on VC1 and regular PCIe on VC0 sharing the
//! AU280's one PCIe link and its credits (CCIX §II: "the transaction layer
//! uses VC0 for PCIe-packets and VC1 for CCIX-packets, sharing the same
//! physical and link layers"), on [`ccsim_pcie::vc_link::SharedVcLink`].
//!
//! Three kinds of traffic run at once on the one link, each request chain
//! timed while the others use the lanes:
//!
//! * **CCIX reads (VC1).** The System Cache keeps `outstanding` 64 B reads
//!   in flight, each a CCIX request message up (a VDM of
//!   `request_message_bytes`) and the home's data response down (a VDM of
//!   `data_message_bytes`), reading lines sequentially; the home agent
//!   answers after its occupancy and its memory access. A read's latency
//!   runs from its issue to its data's arrival plus the CCIX port logic
//!   beyond the shared link.
//! * **ATS (VC0), during the run.** The first read of every 4 KiB page
//!   waits for its translation: the ATC's lookup and miss handling, a
//!   Translation Request up (a 4 DW MRd-format TLP), the SMMU's TLB miss and
//!   four-level walk, the Translation Completion down (CplD with 8 B), as
//!   [`ccsim_pcie::ats::AtsSwitch`] times it — but here the two TLPs wait
//!   for the lanes behind CCIX messages and DMA completions.
//! * **PCIe-DMA (VC0), `dma = read`.** The TaPaSCo engine streams host
//!   memory to the card: `dma_outstanding` MRRS-sized read requests in
//!   flight, their completions split at MPS/RCB, a new request as each one
//!   completes.
//! * **PCIe-DMA (VC0), `dma = write`.** The engine streams card memory to
//!   the host with physical addresses (CCIX §IV Exp. 1's TaPaSCo DMA):
//!   MPS-sized posted Memory Writes up the link, `dma_outstanding` of them
//!   issued and not yet delivered at the root (the engine's write buffer),
//!   a new one as each arrives. They share the device-to-host wire with
//!   the CCIX read requests and ATS Translation Requests; VC0's posted
//!   credits are the link's (infinite unless given).
//!
//! x is `vc1_credits`: the posted header credits of VC1 at each receiver
//! (CCIX messages are posted VDMs). A credit comes back an UpdateFC's
//! flight after its TLP arrived. VC0's credits are infinite (assumed).
//!
//! **What comes from where.** The link is the `ccix_vc_link` component
//! the attachment's CCIX system declares (`u280_ccix_pcie`, Gen3 x16;
//! `attachment = vck5000` takes `vck5000_ccix_pcie`, Table I's Gen4 x8,
//! and `vck5000_esm` `vck5000_ccix_pcie_esm` at ESM's 25 GT/s): its
//! width, rate, VC arbiter weights, its shared one way (141.85 ns,
//! calibrated on the 617 ns ATS round trip) and the CCIX port logic a
//! VC1 message adds (149.3 ns, calibrated on the 700 ns SC-miss read),
//! the same parameters `ccix_ctg` runs the systems with. This what-if
//! keeps its own request chains on [`SharedVcLink`] (the CCIX reads are
//! not table agents here). The ATC's lookup and miss handling and the
//! SMMU's TLB and walk times are the platform's `ats_switch` and `smmu`;
//! the home's occupancy and memory time its `home_agent`. Nothing is fitted: **every point is a
//! prediction** (the text measures no mixed VC0/VC1 load).

use std::collections::{BTreeMap, VecDeque};

use ccsim_kernel::prelude::*;
use ccsim_pcie::msg::TlpKind;
use ccsim_pcie::tlp::{Generation, LinkConfig};
use ccsim_pcie::vc_link::{
    ccix_message, Delivered, SharedVcLink, Tlp, VcLinkParams, DOWN, POSTED, UP, VC0, VC1,
};
use ccsim_platform::Platform;

use crate::invocation::percentile;
use crate::{werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// 64 B lines (CCIX Table I).
const LINE: u64 = 64;
/// Lines of a 4 KiB page (CCIX §IV Exp. 2: 4 KiB pages).
const LINES_PER_PAGE: u64 = 4096 / LINE;
/// Levels of an AArch64 4 KiB-granule walk (ARMv8-A, 48-bit VA).
const WALK_LEVELS: f64 = 4.0;

/// The declaration of `ccix_vc_share`.
pub static CCIX_VC_SHARE: WorkloadInfo = WorkloadInfo {
    name: "ccix_vc_share",
    description: "CCIX §II: CCIX on PCIe VC1 and regular PCIe on VC0 share one link: the U280's System Cache streams 64 B CCIX reads (VDMs on VC1), translating each new 4 KiB page by ATS over VC0 during the run, while the TaPaSCo DMA engine reads (or writes) host memory on VC0 with physical addresses; per-VC, per-type header credits, a 1:1 VC arbiter, both VCs serialized on the same lanes. x is vc1_credits, VC1's posted header credits at each receiver. A prediction.",
    params: &[
        ParamSpec { name: "dma", kind: ParamKind::Enum(&["off", "read", "write"]), default: ParamDefault::Str("read"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 1: the TaPaSCo PCIe-DMA engine on VC0 of the same slot, reads and writes with physical addresses", description: "off: no DMA; read: the DMA engine streams host memory to the card on VC0 (read requests up, completions down) while the CCIX reads run; write: it streams card memory to the host (posted MPS-sized writes up)." },
        ParamSpec { name: "attachment", kind: ParamKind::Enum(&["au280", "vck5000", "vck5000_esm"]), default: ParamDefault::Str("au280"), unit: "", range: ParamRange::ANY, from: "CCIX Table I: AU280 on Gen3 x16, VCK5000 on Gen4 x8; CCIX §II-A: ESM raises the Gen4 attachment from 16 to 25 GT/s", description: "au280: the ats_switch's link (Gen3 x16) and ccix_link; vck5000: Gen4 x8 and ccix_link_gen4x8; vck5000_esm: Gen4 x8 at 25 GT/s and ccix_link_gen4x8_esm." },
        ParamSpec { name: "reads", kind: ParamKind::Int, default: ParamDefault::Int(512), unit: "reads", range: ParamRange::between(1.0, 1_000_000.0), from: "assumed: eight 4 KiB pages of sequential lines, enough for a stable median", description: "CCIX 64 B reads per point." },
        ParamSpec { name: "outstanding", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "lines", range: ParamRange::between(1.0, 4096.0), from: "as ccix_ctg (assumed: the System Cache's outstanding CCIX misses)", description: "CCIX reads in flight at once." },
        ParamSpec { name: "request_message_bytes", kind: ParamKind::Int, default: ParamDefault::Int(16), unit: "bytes", range: ParamRange::between(4.0, 4096.0), from: "assumed: a CCIX request message (header with address and attributes) in a VDM's payload", description: "Payload of a CCIX read request's VDM." },
        ParamSpec { name: "data_message_bytes", kind: ParamKind::Int, default: ParamDefault::Int(80), unit: "bytes", range: ParamRange::between(4.0, 4096.0), from: "assumed: a CCIX data response's 16 B header and its 64 B line (CCIX Table I) in a VDM's payload", description: "Payload of a CCIX data response's VDM." },
        ParamSpec { name: "dma_outstanding", kind: ParamKind::Int, default: ParamDefault::Int(8), unit: "requests", range: ParamRange::between(1.0, 256.0), from: "assumed: the DMA engine's read requests (or undelivered writes) in flight", description: "DMA read requests (MRRS bytes each) in flight, or with dma = write MPS-sized writes issued and not yet at the root." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "read_latency_ns", unit: "ns", description: "Median CCIX read latency (issue to data, translation waits included)." },
        MetricSpec { name: "read_p90_ns", unit: "ns", description: "90th percentile of the CCIX read latency." },
        MetricSpec { name: "read_throughput_gbps", unit: "GB/s", description: "CCIX read bytes over the span of the reads (GB = 10^9 B)." },
        MetricSpec { name: "dma_throughput_gbps", unit: "GB/s", description: "DMA payload delivered over the span of the CCIX reads (0 without DMA)." },
        MetricSpec { name: "ats_ns", unit: "ns", description: "Median ATS round trip at the switch during the run (Translation Request out to completion in)." },
        MetricSpec { name: "ats_idle_ns", unit: "ns", description: "The ATS round trip on an idle link (the calibrated ~617 ns)." },
        MetricSpec { name: "vc1_credit_waits", unit: "TLPs", description: "VC1 TLPs that found no VC1 credit (both directions)." },
        MetricSpec { name: "down_utilization", unit: "", description: "Share of the span the host-to-device wire was busy." },
        MetricSpec { name: "up_utilization", unit: "", description: "Share of the span the device-to-host wire was busy." },
    ],
    run,
};

/// The platform values the workload reads (see the module docs).
struct Setup {
    link: VcLinkParams,
    ccix_port_ps: Tick,
    home_ps: Tick,
    atc_miss_ps: Tick,
    walk_ps: Tick,
}

fn one<'a>(platform: &'a Platform, type_name: &str) -> Result<&'a Params, RunError> {
    let found = platform.instances_of(type_name);
    match found.as_slice() {
        [(_, c)] => Ok(&c.params),
        _ => Err(werr(format!(
            "platform {} needs exactly one component of type `{type_name}` for workload ccix_vc_share, has {}",
            platform.name,
            found.len()
        ))),
    }
}

fn number(p: &Params, owner: &str, name: &str) -> Result<f64, RunError> {
    match p.get(name).map(|v| &v.0) {
        Some(ParamValue::Float(x)) => Ok(*x),
        Some(ParamValue::Int(x)) => Ok(*x as f64),
        _ => Err(werr(format!(
            "workload ccix_vc_share needs {owner}.{name} (a number) in the platform"
        ))),
    }
}

fn setup(point: &Point<'_>, credits: u32) -> Result<Setup, RunError> {
    let platform = point.platform;
    let ats = one(platform, "ats_switch")?;
    let smmu = one(platform, "smmu")?;
    // The attachment's shared link: the ccix_vc_link component its CCIX
    // system declares (the same parameters as the systems' runs).
    let attachment = point.params.str("attachment");
    let link_name = match attachment {
        "au280" => "u280_ccix_pcie",
        "vck5000" => "vck5000_ccix_pcie",
        _ => "vck5000_ccix_pcie_esm",
    };
    let link_config = platform.component(link_name).map_err(RunError::Config)?;
    if link_config.type_name != "ccix_vc_link" {
        return Err(werr(format!(
            "workload ccix_vc_share needs {link_name} to be a ccix_vc_link, not a {}",
            link_config.type_name
        )));
    }
    let lp = &link_config.params;
    let home = &platform
        .component("home_agent")
        .map_err(RunError::Config)?
        .params;
    let n = number(lp, link_name, "generation")? as i64;
    let generation = Generation::from_number(n).ok_or_else(|| {
        werr(format!(
            "{link_name}.generation = {n}: not a PCIe generation"
        ))
    })?;
    let config = LinkConfig::new(generation, number(lp, link_name, "lanes")? as u32);
    // CCIX §II-A: ESM's 25 GT/s (128b/130b) where the link gives a rate.
    let rate = match number(lp, link_name, "rate_gts").unwrap_or(0.0) {
        r if r > 0.0 => r,
        _ => generation.mega_transfers() as f64 / 1000.0,
    };
    let ns = |x: f64| (x * 1000.0).round() as Tick;
    let mut link = VcLinkParams::new(config, rate, ns(number(lp, link_name, "latency_ns")?));
    link.credits[VC1][POSTED] = Some(credits);
    link.weights = [
        number(lp, link_name, "vc0_weight").unwrap_or(1.0) as u32,
        number(lp, link_name, "vc1_weight").unwrap_or(1.0) as u32,
    ];
    // The receiver frees the credit as it passes the TLP on; the UpdateFC
    // (8 B) then crosses the link back.
    link.credit_return_ps = link.latency_ps + link.serialization_ps(8);
    Ok(Setup {
        link,
        ccix_port_ps: ns(number(lp, link_name, "ccix_port_ns").unwrap_or(0.0)),
        home_ps: ns(
            number(home, "home_agent", "occupancy_ns")? + number(home, "home_agent", "memory_ns")?
        ),
        atc_miss_ps: ns(
            number(ats, "ats_switch", "lookup_ns")? + number(ats, "ats_switch", "miss_ns")?
        ),
        walk_ps: ns(
            number(smmu, "smmu", "tlb_ns")? + WALK_LEVELS * number(smmu, "smmu", "walk_read_ns")?
        ),
    })
}

/// Tags: the kind in the top byte, the index below.
const T_CCIX_REQ: u64 = 1 << 56;
const T_CCIX_DATA: u64 = 2 << 56;
const T_ATS_REQ: u64 = 3 << 56;
const T_ATS_CPL: u64 = 4 << 56;
const T_DMA_REQ: u64 = 5 << 56;
const T_DMA_CPL: u64 = 6 << 56;
const T_DMA_WR: u64 = 7 << 56;
const KIND: u64 = 0xff << 56;

fn ats_request(ready: Tick, page: u64) -> Tlp {
    Tlp {
        ready,
        dir: UP,
        vc: VC0,
        kind: TlpKind::MemRead,
        payload: 0,
        header_4dw: true,
        tag: T_ATS_REQ | page,
    }
}

/// The state of one run's request chains.
struct Chains {
    s: Setup,
    reads: u64,
    msg_req: u32,
    msg_data: u32,
    next_read: u64,
    issued: Vec<Tick>,
    done: Vec<Tick>,
    /// Per page: None = not asked, Some(None) = asked, Some(Some(t)) = known at t.
    pages: Vec<Option<Option<Tick>>>,
    parked: VecDeque<u64>,
    ats_sent: Vec<Tick>,
    ats_round_trips: Vec<f64>,
    /// "off", "read" or "write".
    dma: &'static str,
    dma_left: BTreeMap<u64, u32>,
    dma_next: u64,
    dma_bytes: u64,
}

impl Chains {
    /// Issues read `k` at `now`, or parks it behind its page's translation.
    fn issue(&mut self, k: u64, now: Tick, out: &mut Vec<Tlp>) {
        let page = (k / LINES_PER_PAGE) as usize;
        match self.pages[page] {
            Some(Some(known)) => {
                let at = now.max(known);
                self.issued[k as usize] = at;
                out.push(ccix_message(
                    at + self.s.ccix_port_ps,
                    UP,
                    self.msg_req,
                    T_CCIX_REQ | k,
                ));
            }
            Some(None) => self.parked.push_back(k),
            None => {
                self.pages[page] = Some(None);
                self.parked.push_back(k);
                let sent = now + self.s.atc_miss_ps;
                self.ats_sent[page] = sent;
                out.push(ats_request(sent, page as u64));
            }
        }
    }

    fn issue_next(&mut self, now: Tick, out: &mut Vec<Tlp>) {
        if self.next_read < self.reads {
            let k = self.next_read;
            self.next_read += 1;
            self.issue(k, now, out);
        }
    }

    fn dma_request(&mut self, now: Tick, out: &mut Vec<Tlp>) {
        let mrrs = self.s.link.config.mrrs;
        let id = self.dma_next;
        self.dma_next += 1;
        let addr = id * mrrs as u64;
        let parts = self
            .s
            .link
            .config
            .split_completion(addr, mrrs, self.s.link.config.mps);
        self.dma_left.insert(id, parts.len() as u32);
        out.push(Tlp {
            ready: now,
            dir: UP,
            vc: VC0,
            kind: TlpKind::MemRead,
            payload: 0,
            header_4dw: true,
            tag: T_DMA_REQ | id,
        });
    }

    /// The DMA engine's next posted write: MPS bytes of card memory to the
    /// next host address (physical, no translation).
    fn dma_write(&mut self, now: Tick, out: &mut Vec<Tlp>) {
        let id = self.dma_next;
        self.dma_next += 1;
        out.push(Tlp {
            ready: now,
            dir: UP,
            vc: VC0,
            kind: TlpKind::MemWrite,
            payload: self.s.link.config.mps,
            header_4dw: true,
            tag: T_DMA_WR | id,
        });
    }

    fn respond(&mut self, d: &Delivered) -> Vec<Tlp> {
        let mut out = Vec::new();
        let now = d.arrive;
        let index = d.tlp.tag & !KIND;
        match d.tlp.tag & KIND {
            T_CCIX_REQ => {
                // Through the host's CCIX port logic, the home, back.
                let at = now + self.s.ccix_port_ps + self.s.home_ps + self.s.ccix_port_ps;
                out.push(ccix_message(at, DOWN, self.msg_data, T_CCIX_DATA | index));
            }
            T_CCIX_DATA => {
                self.done[index as usize] = now + self.s.ccix_port_ps;
                self.issue_next(now + self.s.ccix_port_ps, &mut out);
            }
            T_ATS_REQ => out.push(Tlp {
                ready: now + self.s.walk_ps,
                dir: DOWN,
                vc: VC0,
                kind: TlpKind::CplD,
                payload: ccsim_pcie::ats::TRANSLATION_BYTES,
                header_4dw: false,
                tag: T_ATS_CPL | index,
            }),
            T_ATS_CPL => {
                let page = index as usize;
                self.ats_round_trips
                    .push((now - self.ats_sent[page]) as f64 / 1000.0);
                self.pages[page] = Some(Some(now));
                let waiting: Vec<u64> = self.parked.drain(..).collect();
                for k in waiting {
                    self.issue(k, now, &mut out);
                }
            }
            T_DMA_REQ => {
                let cfg = &self.s.link.config;
                let parts = cfg.split_completion(index * cfg.mrrs as u64, cfg.mrrs, cfg.mps);
                for (_, len) in parts {
                    out.push(Tlp {
                        ready: now,
                        dir: DOWN,
                        vc: VC0,
                        kind: TlpKind::CplD,
                        payload: len,
                        header_4dw: false,
                        tag: T_DMA_CPL | index,
                    });
                }
            }
            T_DMA_WR => {
                // Written at the root: the buffer slot takes the next one
                // while CCIX reads are still open.
                self.dma_bytes += d.tlp.payload as u64;
                if self.done.contains(&0) {
                    self.dma_write(now, &mut out);
                }
            }
            T_DMA_CPL => {
                self.dma_bytes += d.tlp.payload as u64;
                let left = self
                    .dma_left
                    .get_mut(&index)
                    .expect("a DMA request in flight");
                *left -= 1;
                if *left == 0 {
                    self.dma_left.remove(&index);
                    // Keep streaming while CCIX reads are still open.
                    if self.done.contains(&0) {
                        self.dma_request(now, &mut out);
                    }
                }
            }
            _ => {}
        }
        out
    }
}

/// The ATS round trip alone on the link (ps).
fn idle_ats(s: &Setup) -> Result<Tick, RunError> {
    let mut link = SharedVcLink::new(s.link.clone()).map_err(werr)?;
    let walk = s.walk_ps;
    let d = link
        .run(vec![ats_request(0, 0)], |d| {
            if d.tlp.tag & KIND == T_ATS_REQ {
                vec![Tlp {
                    ready: d.arrive + walk,
                    dir: DOWN,
                    vc: VC0,
                    kind: TlpKind::CplD,
                    payload: ccsim_pcie::ats::TRANSLATION_BYTES,
                    header_4dw: false,
                    tag: T_ATS_CPL,
                }]
            } else {
                vec![]
            }
        })
        .map_err(werr)?;
    Ok(d.last().expect("the completion").arrive)
}

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    crate::sweeps("ccix_vc_share", "vc1_credits", point.x_name)?;
    let credits = crate::whole_number("vc1_credits", point.x, 1.0)?;
    if credits > 127 {
        return Err(werr(format!(
            "vc1_credits = {credits}: at most 127 header credits without scaled flow control (PCIe 3.0 §3.4)"
        )));
    }
    let p = point.params;
    let s = setup(point, credits as u32)?;
    let ats_idle = idle_ats(&s)?;
    let reads = p.uint("reads");
    let pages = reads.div_ceil(LINES_PER_PAGE) as usize;
    let mut chains = Chains {
        s,
        reads,
        msg_req: p.uint("request_message_bytes") as u32,
        msg_data: p.uint("data_message_bytes") as u32,
        next_read: 0,
        issued: vec![0; reads as usize],
        done: vec![0; reads as usize],
        pages: vec![None; pages],
        parked: VecDeque::new(),
        ats_sent: vec![0; pages],
        ats_round_trips: Vec::new(),
        dma: match p.str("dma") {
            "read" => "read",
            "write" => "write",
            _ => "off",
        },
        dma_left: BTreeMap::new(),
        dma_next: 0,
        dma_bytes: 0,
    };
    let mut initial = Vec::new();
    for _ in 0..p.uint("dma_outstanding") {
        match chains.dma {
            "read" => chains.dma_request(0, &mut initial),
            "write" => chains.dma_write(0, &mut initial),
            _ => {}
        }
    }
    for _ in 0..p.uint("outstanding").min(reads) {
        chains.issue_next(0, &mut initial);
    }
    let mut link = SharedVcLink::new(chains.s.link.clone()).map_err(werr)?;
    link.run(initial, |d| chains.respond(d)).map_err(werr)?;
    if let Some(k) = chains.done.iter().position(|&t| t == 0) {
        return Err(werr(format!(
            "ccix_vc_share: read {k} never completed (the run stopped with work open)"
        )));
    }
    let mut lat: Vec<f64> = chains
        .issued
        .iter()
        .zip(&chains.done)
        .map(|(&i, &d)| (d - i) as f64 / 1000.0)
        .collect();
    lat.sort_by(f64::total_cmp);
    let span = *chains.done.iter().max().expect("reads") as f64 / 1000.0;
    let mut metrics = BTreeMap::new();
    metrics.insert("read_latency_ns".into(), percentile(&lat, 50.0));
    metrics.insert("read_p90_ns".into(), percentile(&lat, 90.0));
    metrics.insert("read_throughput_gbps".into(), (reads * LINE) as f64 / span);
    metrics.insert("dma_throughput_gbps".into(), chains.dma_bytes as f64 / span);
    chains.ats_round_trips.sort_by(f64::total_cmp);
    metrics.insert("ats_ns".into(), percentile(&chains.ats_round_trips, 50.0));
    metrics.insert("ats_idle_ns".into(), ats_idle as f64 / 1000.0);
    let waits = link.counts[UP].credit_waits[VC1] + link.counts[DOWN].credit_waits[VC1];
    metrics.insert("vc1_credit_waits".into(), waits as f64);
    metrics.insert(
        "down_utilization".into(),
        (link.counts[DOWN].busy_ps as f64 / 1000.0 / span).min(1.0),
    );
    metrics.insert(
        "up_utilization".into(),
        (link.counts[UP].busy_ps as f64 / 1000.0 / span).min(1.0),
    );
    let mut stats = BTreeMap::new();
    for (dir, name) in [(DOWN, "down"), (UP, "up")] {
        let c = &link.counts[dir];
        stats.insert(
            format!("link.{name}.vc0_tlp_bytes"),
            c.tlp_bytes[VC0] as f64,
        );
        stats.insert(
            format!("link.{name}.vc1_tlp_bytes"),
            c.tlp_bytes[VC1] as f64,
        );
        stats.insert(format!("link.{name}.dllp_bytes"), c.dllp_bytes as f64);
        stats.insert(format!("link.{name}.vc0_tlps"), c.tlps[VC0] as f64);
        stats.insert(format!("link.{name}.vc1_tlps"), c.tlps[VC1] as f64);
    }
    Ok(PointResult {
        metrics,
        stats,
        trace_json: None,
        trace_events: None,
        trace_hash: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(credits: f64, dma: &str) -> BTreeMap<String, f64> {
        let p = Platform::load("n1sdp").unwrap();
        let params = Params::new().with("dma", ParamValue::Str(dma.into()), "test");
        crate::run_point(
            "ccix_vc_share",
            &p,
            "vc1_credits",
            credits,
            &params,
            0,
            false,
        )
        .unwrap()
        .metrics
    }

    #[test]
    fn the_idle_ats_round_trip_is_the_calibrated_617_ns() {
        let m = point(32.0, "off");
        let ats = m["ats_idle_ns"];
        assert!((ats - 617.0).abs() / 617.0 < 0.05, "{ats}");
    }

    #[test]
    fn dma_on_vc0_slows_ccix_reads_and_ats_waits_behind_the_link() {
        let quiet = point(32.0, "off");
        let busy = point(32.0, "read");
        assert!(busy["dma_throughput_gbps"] > 5.0, "{busy:?}");
        assert!(
            busy["read_latency_ns"] > quiet["read_latency_ns"],
            "{busy:?} vs {quiet:?}"
        );
        assert!(busy["ats_ns"] > busy["ats_idle_ns"], "{busy:?}");
    }

    #[test]
    fn dma_writes_on_vc0_share_the_up_wire_with_ccix_requests_and_ats() {
        let quiet = point(32.0, "off");
        let writes = point(32.0, "write");
        let reads = point(32.0, "read");
        // Posted MPS writes fill the device-to-host wire the CCIX requests
        // and Translation Requests use; the DMA reads fill the other one.
        assert!(writes["dma_throughput_gbps"] > 5.0, "{writes:?}");
        assert!(writes["up_utilization"] > 0.5, "{writes:?}");
        assert!(
            writes["down_utilization"] < reads["down_utilization"],
            "{writes:?} vs {reads:?}"
        );
        assert!(quiet["up_utilization"] < 0.2, "{quiet:?}");
        // A CCIX read's request and an ATS request each wait behind at
        // most a write or so (1:1 arbitration): slower, not starved.
        assert!(
            writes["read_latency_ns"] > quiet["read_latency_ns"],
            "{writes:?} vs {quiet:?}"
        );
        assert!(writes["ats_ns"] > writes["ats_idle_ns"], "{writes:?}");
        assert!(
            writes["read_latency_ns"] < 1.5 * quiet["read_latency_ns"],
            "{writes:?} vs {quiet:?}"
        );
    }

    #[test]
    fn esm_moves_the_dma_faster_than_gen4() {
        let p = Platform::load("n1sdp").unwrap();
        let at = |a: &str| {
            // Enough DMA reads in flight to fill the wire (8 are
            // latency-bound at about 13 GB/s).
            let params = Params::new()
                .with("attachment", ParamValue::Str(a.into()), "test")
                .with("dma_outstanding", ParamValue::Int(64), "test");
            crate::run_point("ccix_vc_share", &p, "vc1_credits", 32.0, &params, 0, false)
                .unwrap()
                .metrics["dma_throughput_gbps"]
        };
        let (gen4, esm) = (at("vck5000"), at("vck5000_esm"));
        // The DMA is wire-bound: ESM's 25 GT/s against 16 GT/s on the same
        // eight lanes.
        let ratio = esm / gen4;
        assert!((ratio - 25.0 / 16.0).abs() < 0.1, "{gen4} {esm}");
    }

    #[test]
    fn few_vc1_credits_throttle_ccix_but_not_the_dma() {
        let one = point(1.0, "read");
        let many = point(32.0, "read");
        assert!(
            one["read_throughput_gbps"] < many["read_throughput_gbps"] / 2.0,
            "{one:?} vs {many:?}"
        );
        assert!(one["vc1_credit_waits"] > 0.0);
        assert!(
            one["dma_throughput_gbps"] >= many["dma_throughput_gbps"],
            "{one:?} vs {many:?}"
        );
    }
}
