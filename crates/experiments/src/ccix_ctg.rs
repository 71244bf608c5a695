//! `ccix_ctg` — the CCIX Traffic Generator of CCIX §IV-A on the N1-SDP with
//! an Alveo U280: requests of a type (read or write), a virtual address and
//! a length go through the U280's System Cache (SC), the CCIX request
//! agent, and each is timed "only after *all* of its data has arrived".
//!
//! * **The system** is the platform's `[systems.ccix]`: table agents running
//!   the verified `protocols/ccix.toml` (the SC as the first `ra`, the
//!   N1-SDP's home agent with its memory, the CMN, the CCIX link). Every
//!   64 B line of a request is one program operation of the SC (`load` for
//!   a read, `write` for a write), real bytes checked online. A read miss
//!   is a ReadShared and the data back; a write miss does not allocate: a
//!   WriteUniqueFull carrying its line (CCIX's write requests hold their
//!   data, no DBIDResp handshake: CCIX Base Spec 1.0 §3.11.2), the home's
//!   Comp once every other copy is invalidated and the line written — one
//!   trip over the link, as a read, but without the read's memory access.
//! * **Translation during the run, on the shared link.** The CTG's
//!   addresses are virtual. A request is split into AXI bursts at 4 KiB
//!   boundaries (AXI4 bursts may not cross one); each burst is a job of
//!   the platform's `ats_switch`, attached to the VC0 port of the
//!   system's `ccix_vc_link` ([`ccsim_pcie::ats_port::AtsPort`]: the ATC,
//!   then on a miss a Translation Request TLP over VC0 to the `smmu`
//!   on the host side, [`ccsim_pcie::ats_port::SmmuPort`], walking
//!   AArch64 tables stored as bytes, and its Translation Completion back),
//!   in order, one miss at a time. The TLPs share the lanes with the CCIX
//!   messages of the same run (VC1), so a translation waits behind CCIX
//!   traffic and the other way round (CCIX §II). A burst's lines join the
//!   SC's program when its translation arrives and issue no earlier; they
//!   are the *physical* lines the walk returns.
//! * **Addresses.** The buffer is `BUFFER_BYTES` of virtual memory mapped
//!   with `page_size` pages onto scattered physical frames (a bijection of
//!   page numbers), pages mapped as requests first touch them (pinned, as
//!   the API's `allocateBuffer`). `pattern = random`: each request at a
//!   distinct random multiple of its own size rounded up to a power of
//!   two, so SC lines never repeat ("we randomize addresses to force SC
//!   misses", CCIX §IV-A) and a request within a page needs one
//!   translation. `pattern = sequential`: request k at k × length (CCIX
//!   Fig. 4).
//! * **ATC.** `atc = warm`: the request's pages are in the ATC before it
//!   starts (CCIX §IV Exp. 1, *noATS*). `atc = cold`: the ATC starts empty,
//!   and with `pattern = random` is invalidated before each request
//!   (Exp. 2, *withATS*: "we force misses in *both* the SC and ATC").
//! * **Timing.** Requests start `REQUEST_SPACING` apart (the API configures
//!   the CTG, waits, reads the latency register: one at a time); a
//!   request's latency runs from its start to the completion of its last
//!   line. Eq. 1 is computed beside it from the platform's parameters and
//!   the run's hit rates ([`ccsim_pcie::ats::eq1_latency_ns`]): a cross-check,
//!   never the metric.
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("n1sdp").unwrap();
//! let r = ccsim_experiments::run_point("ccix_ctg", &p, "request_bytes", 64.0, &Params::new(), 0, false).unwrap();
//! // Warm ATC (the default): a 64 B read with an SC miss, no ATS.
//! assert_eq!(r.metrics["atc_miss_fraction"], 0.0);
//! assert!(r.metrics["latency_ns"] > 600.0 && r.metrics["latency_ns"] < 800.0);
//! ```

use std::collections::{BTreeMap, HashSet};

use ccsim_coherence::Msg;
use ccsim_kernel::prelude::*;
use ccsim_pcie::ats::eq1_latency_ns;
use ccsim_pcie::ats_port::{AtsJob, AtsPort, SmmuPort};
use ccsim_pcie::ccix_link::port_wire;
use ccsim_pcie::smmu::{walk, PageSize, Smmu, Translation, TranslationTables};
use ccsim_platform::{BuildOptions, Platform};

use crate::invocation::percentile;
use crate::program_run::{append_and_wake, no_violation, role_agent};
use crate::{sim_result, trace_mode, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// The cache line (CCIX Table I: 64 B lines).
const LINE: u64 = 64;
/// AXI4 bursts do not cross 4 KiB.
const AXI_BOUNDARY: u64 = 4096;
/// The buffer's virtual base (1 GiB-aligned, so every page size fits).
const BUFFER_VA: u64 = 0x0000_7F40_0000_0000;
/// The buffer's size: 1 GiB of the N1-SDP's 16 GB (CCIX Table I).
const BUFFER_BYTES: u64 = 1 << 30;
/// The physical frames the buffer maps onto (1 GiB-aligned).
const BUFFER_PA: u64 = 0x0000_0008_8000_0000;
/// Where the translation tables live (outside the buffer's frames).
const TABLES_PA: u64 = 0x0000_0008_0000_0000;
/// An odd multiplier: page k maps to frame (k × it) mod pages, a
/// bijection that scatters neighbours.
const FRAME_SCRAMBLE: u64 = 0x9E37_79B9;
/// Requests start this far apart (each finishes long before).
const REQUEST_SPACING: Tick = 1_000_000_000; // 1 ms
/// Largest request (bytes).
const MAX_REQUEST: f64 = (1u64 << 20) as f64;

/// The declaration of `ccix_ctg`.
pub static CCIX_CTG: WorkloadInfo = WorkloadInfo {
    name: "ccix_ctg",
    description: "CCIX §IV-A: the CCIX Traffic Generator sends requests (read or write, a virtual address, x bytes) through the U280's System Cache (the verified ccix table, each 64 B line a ReadShared, or a non-allocating WriteUniqueFull carrying its line and answered with Comp, to the N1-SDP's home agent); each AXI burst is first translated by the ATS switch (ATC, ATS TLPs over VC0 of the same link as the CCIX messages on VC1, during the run, the SMMU walking AArch64 tables in memory, with pre-translation). Latency from request to the arrival of all data; Eq. 1 beside it. x is the request length (request_bytes, or message_bytes beside the PCIe workloads).",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("ccix"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.ccix]", description: "The platform's system section (ccix agents; the first `ra` is the accelerator's System Cache, linked by a ccix_vc_link whose VC0 carries the ATS traffic)." },
        ParamSpec { name: "op", kind: ParamKind::Enum(&["read", "write"]), default: ParamDefault::Str("read"), unit: "", range: ParamRange::ANY, from: "CCIX §IV-A: requests of a type", description: "read: a load of every line (ReadShared on a miss); write: a whole-line write of every line, not allocating on a miss (WriteUniqueFull with the line in the request: the home invalidates every copy, writes the line and completes with Comp), a store into a line the cache holds." },
        ParamSpec { name: "atc", kind: ParamKind::Enum(&["warm", "cold"]), default: ParamDefault::Str("warm"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 1: the translation already in the ATC", description: "warm: each request's pages are in the ATC before it starts (noATS); cold: the ATC starts empty and, with random requests, is invalidated before each (withATS)." },
        ParamSpec { name: "pattern", kind: ParamKind::Enum(&["random", "sequential"]), default: ParamDefault::Str("random"), unit: "", range: ParamRange::ANY, from: "CCIX §IV-A: randomized addresses to force SC misses", description: "random: each request at a distinct random multiple of its size; sequential: request k at k x length (CCIX Fig. 4)." },
        ParamSpec { name: "page_size", kind: ParamKind::Enum(&["4k", "64k", "2m", "32m", "1g"]), default: ParamDefault::Str("4k"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 2: the Linux PageSize is 4KiB", description: "The buffer's page size (64k and 32m as runs of contiguous descriptors)." },
        ParamSpec { name: "locality", kind: ParamKind::Enum(&["remote", "local"]), default: ParamDefault::Str("remote"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 3: data-local and data-remote", description: "remote: every line misses in the device's cache(s) (data-remote); local: each request is issued once untimed, then again, so every line of the timed one hits (data-local)." },
        ParamSpec { name: "requests", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "requests", range: ParamRange::between(1.0, 100_000.0), from: "assumed: enough for a stable median", description: "Requests per point, one at a time." },
        ParamSpec { name: "outstanding", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "lines", range: ParamRange::between(1.0, 4096.0), from: "assumed: the System Cache's outstanding CCIX misses", description: "Lines the SC keeps in flight at once." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Median request latency, start to the last line's data." },
        MetricSpec { name: "p25_ns", unit: "ns", description: "25th percentile of the request latency." },
        MetricSpec { name: "p75_ns", unit: "ns", description: "75th percentile of the request latency." },
        MetricSpec { name: "throughput_gbps", unit: "GB/s", description: "A request's bytes over its median latency (GB = 10^9 B): the throughput of one transfer, what the CTG's latency register gives." },
        MetricSpec { name: "first_ns", unit: "ns", description: "The first request's latency (the initial access to the buffer)." },
        MetricSpec { name: "cross_ns", unit: "ns", description: "Median latency of the later requests that needed an ATS request (0 if none)." },
        MetricSpec { name: "ats_ns", unit: "ns", description: "Median ATS round trip at the switch, request TLP out to completion in (0 without ATS)." },
        MetricSpec { name: "atc_miss_fraction", unit: "", description: "Translations (one per AXI burst) that missed the ATC." },
        MetricSpec { name: "translations", unit: "bursts", description: "Translations per request (AXI bursts)." },
        MetricSpec { name: "eq1_ns", unit: "ns", description: "CCIX Eq. 1 for one 64 B transaction from the platform's parameters and this run's ATC and SC hit rates (an analytic cross-check)." },
    ],
    run,
};

/// One AXI burst of a request: its virtual range, the event of its lines,
/// and the timed request it belongs to (`None`: a data-local warm-up).
struct Burst {
    va: u64,
    end: u64,
    event: &'static str,
    request: Option<usize>,
}

/// One CTG request: its start, and its lines' program operations.
struct Request {
    start: Tick,
    ops: std::ops::Range<usize>,
    ats: bool,
}

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    // message_bytes too, so that one experiment can put the CTG beside
    // the PCIe workloads on one x axis.
    if !matches!(point.x_name, "request_bytes" | "message_bytes") {
        return Err(werr(format!(
            "workload ccix_ctg sweeps request_bytes (or message_bytes), not {:?}",
            point.x_name
        )));
    }
    let x = point.x;
    if !((1.0..=MAX_REQUEST).contains(&x) && x.fract() == 0.0) {
        return Err(werr(format!(
            "{} = {x}: must be a whole number of bytes from 1 to {MAX_REQUEST}",
            point.x_name
        )));
    }
    let len = x as u64;
    let params = point.params;
    let platform = point.platform;
    let system = params.str("system");
    // A write is the role's non-allocating `write`: WriteUniqueFull with
    // its line on a miss (invalidate, write, Comp), a store on a held line.
    let event = if params.str("op") == "write" {
        "write"
    } else {
        "load"
    };
    // The data-local warm-up allocates the line in the state the timed
    // access hits: a store makes it unique for a write.
    let warm_event = if event == "write" { "store" } else { "load" };
    let warm = params.str("atc") == "warm";
    let local = params.str("locality") == "local";
    let random = params.str("pattern") == "random";
    let page = PageSize::parse(params.str("page_size")).expect("an enum value");
    let n = params.uint("requests");
    let (switch_params, smmu_params) = translation_params(platform)?;

    // The request's virtual addresses.
    let slot = len.next_power_of_two().max(LINE);
    let slots = BUFFER_BYTES / slot;
    if random && n > slots / 2 {
        return Err(werr(format!(
            "ccix_ctg: {n} random requests of {len} B do not fit distinct slots of the {BUFFER_BYTES} B buffer (at most {})",
            slots / 2
        )));
    }
    if !random && n * len > BUFFER_BYTES {
        return Err(werr(format!(
            "ccix_ctg: {n} sequential requests of {len} B overrun the {BUFFER_BYTES} B buffer"
        )));
    }
    let mut rng = SimRng::for_path(point.seed, "ccix_ctg.addresses");
    let mut used = HashSet::new();
    let vas: Vec<u64> = (0..n)
        .map(|k| {
            if random {
                loop {
                    let s = rng.below(slots);
                    if used.insert(s) {
                        return BUFFER_VA + s * slot;
                    }
                }
            } else {
                BUFFER_VA + k * len
            }
        })
        .collect();

    // The tables: every page a request touches, and the one after it (what
    // pre-translation walks), pinned before the run.
    let mut tables = TranslationTables::new(TABLES_PA);
    let pages = BUFFER_BYTES / page.bytes();
    let mut mapped = HashSet::new();
    for &va in &vas {
        let first = (va - BUFFER_VA) / page.bytes();
        let last = ((va + len - 1 - BUFFER_VA) / page.bytes() + 1).min(pages - 1);
        for k in first..=last {
            if mapped.insert(k) {
                let frame = (k.wrapping_mul(FRAME_SCRAMBLE)) % pages;
                tables
                    .map(
                        BUFFER_VA + k * page.bytes(),
                        BUFFER_PA + frame * page.bytes(),
                        page,
                    )
                    .map_err(werr)?;
            }
        }
    }
    // A warm ATC holds each burst's translation before it starts: the
    // walks the prefill stands for, done here on the tables.
    let prefill_of = |va: u64| -> Result<Option<Translation>, RunError> {
        if !warm {
            return Ok(None);
        }
        let w = walk(tables.memory(), tables.root(), va).map_err(werr)?;
        Ok(Some(Translation::of(va, &w)))
    };

    // Every AXI burst is one translation job of the ATS switch, in request
    // order (a data-local request's untimed warm-up first); its lines
    // issue once the switch has the burst's physical address.
    let mut jobs: Vec<AtsJob> = Vec::new();
    let mut bursts_of: Vec<Burst> = Vec::new();
    let mut requests = Vec::with_capacity(n as usize);
    for (k, &va) in vas.iter().enumerate() {
        // Data-local requests start half a spacing after their warm-up.
        let start = k as Tick * REQUEST_SPACING + if local { REQUEST_SPACING / 2 } else { 0 };
        let mut passes = Vec::new();
        if local {
            // Data-local: the same request once before, untimed, so that
            // every line of the timed one is in the cache(s) in the state
            // it needs (a store's line unique).
            passes.push((start - REQUEST_SPACING / 2, warm_event, None));
        }
        passes.push((start, event, Some(k)));
        for (at, ev, timed) in passes {
            let mut burst = va;
            let mut first = true;
            while burst < va + len {
                let burst_end = ((burst / AXI_BOUNDARY + 1) * AXI_BOUNDARY).min(va + len);
                jobs.push(AtsJob {
                    id: jobs.len() as u64,
                    va: burst,
                    at,
                    // withATS: "we force misses in both the SC and ATC".
                    invalidate_first: first && !warm && random,
                    prefill: prefill_of(burst)?,
                });
                bursts_of.push(Burst {
                    va: burst,
                    end: burst_end,
                    event: ev,
                    request: timed,
                });
                first = false;
                burst = burst_end;
            }
        }
        requests.push(Request {
            start,
            ops: 0..0,
            ats: false,
        });
    }

    // The system with the ATS switch and the SMMU on the VC0 ports of the
    // accelerator's CCIX link: translations share the lanes with the run's
    // coherence traffic.
    let link = ccix_link_of(platform, system)?;
    let smmu = Smmu::new(&smmu_params, tables);
    let mut ats_switch = Some(AtsPort::new(&switch_params));
    let mut smmu_port = Some(SmmuPort::new(smmu));
    for j in &jobs {
        ats_switch.as_mut().expect("not yet added").submit(*j);
    }
    let (mut ats_id, mut smmu_id) = (None, None);
    let mut attach = |b: &mut SystemBuilder<Msg>, named: &BTreeMap<String, ComponentId>| {
        let link_id = *named
            .get(&link)
            .ok_or_else(|| format!("the system has no component `{link}`"))?;
        let a = b.add("ats_switch", ats_switch.take().expect("added once"));
        let m = b.add("smmu", smmu_port.take().expect("added once"));
        b.connect(a, "io", link_id, "io_device", port_wire());
        b.connect(link_id, "io_host", m, "io", port_wire());
        ats_id = Some(a);
        smmu_id = Some(m);
        Ok(())
    };
    let mut s = platform
        .build_attached(
            system,
            BuildOptions {
                seed: point.seed,
                trace: trace_mode(point.trace),
                checks: true,
                tester: None,
            },
            &mut attach,
        )
        .map_err(RunError::Config)?;
    let (ats_id, smmu_id) = (ats_id.expect("attached"), smmu_id.expect("attached"));
    let sc = role_agent(&s, "ra", system)?;
    let window = params.uint("outstanding") as usize;
    s.agent_mut(sc).set_program(&[], window).map_err(werr)?;

    // Run; each finished translation stops the run, and its burst's lines
    // join the System Cache's program, issuing no earlier than its arrival.
    let mut round_trips: Vec<f64> = Vec::new();
    let (mut bursts, mut misses) = (0u64, 0u64);
    let mut next_job = 0usize;
    loop {
        let outcome = s.sim.run();
        no_violation(&s)?;
        let smmu_port = s.sim.component::<SmmuPort>(smmu_id).expect("the smmu");
        if let Some(f) = &smmu_port.fault {
            return Err(werr(f.clone()));
        }
        let done = s
            .sim
            .component_mut::<AtsPort>(ats_id)
            .expect("the ats switch")
            .take_done();
        for d in done {
            if d.id as usize != next_job {
                return Err(werr(format!(
                    "ccix_ctg: the ATS switch finished burst {} before burst {next_job} (it serves in order)",
                    d.id
                )));
            }
            next_job += 1;
            let b = &bursts_of[d.id as usize];
            let first_op = s.agent(sc).program_times().len();
            let mut lines = Vec::new();
            let mut line_va = b.va & !(LINE - 1);
            while line_va < b.end {
                lines.push((d.translation.apply(line_va) / LINE, b.event));
                line_va += LINE;
            }
            append_and_wake(&mut s, sc, &lines, d.ready)?;
            if let Some(k) = b.request {
                let r = &mut requests[k];
                if r.ops.is_empty() {
                    r.ops = first_op..first_op;
                }
                r.ops.end = first_op + lines.len();
                bursts += 1;
                if !d.atc_hit {
                    misses += 1;
                    r.ats = true;
                    round_trips.push(d.ats_round_trip as f64 / 1000.0);
                }
            }
        }
        if outcome == RunOutcome::Drained {
            break;
        }
    }
    if next_job != jobs.len() {
        return Err(werr(format!(
            "ccix_ctg: {} of {} translations never finished (the run stopped with work open)",
            jobs.len() - next_job,
            jobs.len()
        )));
    }
    let times = s.agent(sc).program_times();
    let mut latencies = Vec::with_capacity(requests.len());
    let mut local_hits = 0u64;
    let mut timed_ops = 0u64;
    let access = s.agent(sc).local_time_bound();
    for (k, r) in requests.iter().enumerate() {
        let mut done = 0;
        for i in r.ops.clone() {
            let (issue, end) = times[i];
            if end == 0 {
                return Err(RunError::Violation {
                    message: format!(
                        "request {k}: line {i} never completed (the run stopped with work open)"
                    ),
                });
            }
            timed_ops += 1;
            if end - issue <= access {
                local_hits += 1;
            }
            done = done.max(end);
        }
        if done - r.start >= REQUEST_SPACING {
            return Err(werr(format!(
                "request {k} took longer than the spacing between requests ({} ns)",
                REQUEST_SPACING / 1000
            )));
        }
        latencies.push(((done - r.start) as f64 / 1000.0, r.ats));
    }

    let mut metrics = BTreeMap::new();
    let mut all: Vec<f64> = latencies.iter().map(|l| l.0).collect();
    all.sort_by(f64::total_cmp);
    metrics.insert("latency_ns".to_string(), percentile(&all, 50.0));
    metrics.insert("p25_ns".to_string(), percentile(&all, 25.0));
    metrics.insert("p75_ns".to_string(), percentile(&all, 75.0));
    // Bytes per ns are GB/s.
    metrics.insert(
        "throughput_gbps".to_string(),
        len as f64 / percentile(&all, 50.0),
    );
    metrics.insert("first_ns".to_string(), latencies[0].0);
    let mut cross: Vec<f64> = latencies[1..].iter().filter(|l| l.1).map(|l| l.0).collect();
    cross.sort_by(f64::total_cmp);
    metrics.insert("cross_ns".to_string(), median_or_zero(&cross));
    round_trips.sort_by(f64::total_cmp);
    metrics.insert("ats_ns".to_string(), median_or_zero(&round_trips));
    let p_atc_miss = misses as f64 / bursts as f64;
    metrics.insert("atc_miss_fraction".to_string(), p_atc_miss);
    metrics.insert("translations".to_string(), bursts as f64 / n as f64);
    let p_cache_hit = local_hits as f64 / timed_ops as f64;
    metrics.insert(
        "eq1_ns".to_string(),
        eq1(
            platform,
            system,
            &switch_params,
            &smmu_params,
            1.0 - p_atc_miss,
            p_cache_hit,
            event == "load",
        )?,
    );
    let mut r = sim_result(&s.sim, metrics, trace_mode(point.trace));
    let atc = &s
        .sim
        .component::<AtsPort>(ats_id)
        .expect("the ats switch")
        .atc;
    r.stats.insert("ats.atc_hits".into(), atc.hits as f64);
    r.stats.insert("ats.atc_misses".into(), atc.misses as f64);
    let smmu = &s.sim.component::<SmmuPort>(smmu_id).expect("the smmu").smmu;
    r.stats.insert("smmu.tlb_hits".into(), smmu.tlb.hits as f64);
    r.stats
        .insert("smmu.tlb_misses".into(), smmu.tlb.misses as f64);
    r.stats.insert("smmu.walks".into(), smmu.walks as f64);
    r.stats
        .insert("smmu.descriptor_reads".into(), smmu.descriptor_reads as f64);
    Ok(r)
}

fn median_or_zero(sorted: &[f64]) -> f64 {
    if sorted.is_empty() {
        0.0
    } else {
        percentile(sorted, 50.0)
    }
}

/// The `ccix_vc_link` of `system` whose device end is its first `ra`
/// (the accelerator's attachment, VC0 beside VC1).
fn ccix_link_of(platform: &Platform, system: &str) -> Result<String, RunError> {
    let (decl, ra) = crate::ccix_shared::device_ra(platform, system)?;
    let link = decl
        .links
        .iter()
        .find(|l| l.a.0 == ra.name)
        .ok_or_else(|| werr(format!("system {system}: agent {} has no link", ra.name)))?;
    let kind = &platform
        .component(&link.instance)
        .map_err(RunError::Config)?
        .type_name;
    if kind != "ccix_vc_link" {
        return Err(werr(format!(
            "workload ccix_ctg times ATS on the accelerator's CCIX link, but system {system} links `{}` by `{}`, a {kind}; declare it as a ccix_vc_link (VC1 for CCIX, VC0 for ATS)",
            ra.name, link.instance
        )));
    }
    Ok(link.instance.clone())
}

/// The platform's only `ats_switch` and `smmu` instances' parameters.
fn translation_params(platform: &Platform) -> Result<(Params, Params), RunError> {
    let one = |type_name: &str| {
        let found = platform.instances_of(type_name);
        match found.as_slice() {
            [(_, c)] => Ok(c.params.clone()),
            [] => Err(werr(format!(
                "platform {} has no component of type `{type_name}`, which workload ccix_ctg needs",
                platform.name
            ))),
            _ => Err(werr(format!(
                "platform {} has several `{type_name}` components; workload ccix_ctg needs exactly one",
                platform.name
            ))),
        }
    };
    Ok((one("ats_switch")?, one("smmu")?))
}

/// CCIX Eq. 1 for one 64 B transaction, every term from the platform's
/// parameters: Latency_ATC the ATC lookup; Latency_ATS the lookup, the
/// ATC's miss handling, two VC0 trips and a TLB miss with a four-level
/// walk (TLP serialization left out: a few ns); Latency_local the SC's
/// pipeline; Latency_CCIX the request and the data over every link and
/// switch between the SC and the home, with the SC's occupancy at both
/// ends (serialization left out); Latency_HA the home's occupancy and its
/// memory access.
fn eq1(
    platform: &Platform,
    system: &str,
    ats: &Params,
    smmu: &Params,
    p_atc_hit: f64,
    p_cache_hit: f64,
    load: bool,
) -> Result<f64, RunError> {
    let decl = platform.system(system).map_err(RunError::Config)?;
    let params_of = |instance: &str| -> Result<Params, RunError> {
        Ok(platform
            .component(instance)
            .map_err(RunError::Config)?
            .params
            .clone())
    };
    let agent = |role: &str| {
        decl.agents
            .iter()
            .find(|a| a.role.as_deref() == Some(role))
            .ok_or_else(|| werr(format!("system {system}: no agent plays `{role}`")))
    };
    let (ra, ha) = (agent("ra")?, agent("ha")?);
    let ra_p = params_of(&ra.instance)?;
    let ha_p = params_of(&ha.instance)?;
    // One way: the links at the RA and at the HA, and one switch hop
    // between them (the systems put both on one switch). A CCIX message on
    // a ccix_vc_link spends its CCIX port logic beside the shared layers.
    let number = |p: &Params, name: &str| match p.get(name).map(|v| &v.0) {
        Some(ParamValue::Float(x)) => *x,
        Some(ParamValue::Int(x)) => *x as f64,
        _ => 0.0,
    };
    let link_of = |name: &str| -> Result<(f64, f64), RunError> {
        let l = decl
            .links
            .iter()
            .find(|l| l.a.0 == name || l.b.0 == name)
            .ok_or_else(|| werr(format!("system {system}: agent {name} has no link")))?;
        let p = params_of(&l.instance)?;
        let shared = number(&p, "latency_ns");
        Ok((shared + number(&p, "ccix_port_ns"), shared))
    };
    // VC0's one way: the shared layers of the RA's ccix_vc_link.
    let (ra_one_way, vc0_one_way) = link_of(&ra.name)?;
    let hop = decl
        .components
        .first()
        .map(|c| params_of(&c.instance).map(|p| p.float("hop_ns")))
        .transpose()?
        .unwrap_or(0.0);
    let one_way = ra_one_way + link_of(&ha.name)?.0 + hop;
    let latency_ccix = 2.0 * one_way + 2.0 * ra_p.float("occupancy_ns");
    let latency_ha = ha_p.float("occupancy_ns") + ha_p.float("memory_ns");
    let lookup = ats.float("lookup_ns");
    let latency_ats = lookup
        + ats.float("miss_ns")
        + 2.0 * vc0_one_way
        + smmu.float("tlb_ns")
        + 4.0 * smmu.float("walk_read_ns");
    Ok(eq1_latency_ns(
        p_atc_hit,
        lookup,
        latency_ats,
        p_cache_hit,
        local_ns(&ra_p, load) + ra_p.float("occupancy_ns"),
        latency_ccix,
        latency_ha,
    ))
}

/// Eq. 1's Latency_r/w-local: the RA's hit (its near level's when it has
/// one), and a load's data return.
fn local_ns(ra: &Params, load: bool) -> f64 {
    let hit = match ra.float("hit_ns") {
        h if h > 0.0 => h,
        _ => ra.float("access_ns"),
    };
    hit + if load { ra.float("load_data_ns") } else { 0.0 }
}
