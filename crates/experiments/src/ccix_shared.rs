//! Host and device on one buffer of the N1-SDP's memory (CCIX §IV Exps. 4
//! and 5): the U280's System Cache and the N1 cores as request agents of
//! the platform's `[systems.ccix_host]`, all running the verified
//! `protocols/ccix.toml`, on lines of a huge page (no ATS: the ATC holds
//! the page, so a device access pays only the ATC lookup).
//!
//! * `ccix_coherency` (Exp. 4, Algorithm 2): each iteration the CTG
//!   modifies a random line of the shared buffer and every host core
//!   writes one, `period_ns` apart; the latency of each access is kept per
//!   side. The conflicts are real: a host write to a line the System
//!   Cache holds unique waits for the home's SnpToI across the CCIX link
//!   and back, a device write to a line a core holds waits for an on-chip
//!   snoop; hits complete in the cache.
//! * `ccix_atomic` (Exp. 5): CCIX atomics "constructed on the RA-side as
//!   multi-step sequences of AXI4-MM requests" and sent to the home (§V-A:
//!   the RA "then sends [the CAS] to the host"): on the device the
//!   operands' AXI write into the System Cache (as a write hit takes), then
//!   the far atomic of the verified table, an AtomicCompare carrying the
//!   operands, which the home executes after invalidating every copy and
//!   answers with the old value (CompData_I); the System Cache keeps no
//!   copy, so every atomic of the device reaches the home. The home runs
//!   the operation on the line's bytes: a compare writes its swap value
//!   only where the addressed word holds its compare value, an ADD the
//!   sum, and the run checks each result against the home's log of the
//!   lines it found. On the host a local atomic (an LSE CAS in the core's
//!   L1, with its ordering).
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("n1sdp").unwrap();
//! let r = ccsim_experiments::run_point("ccix_coherency", &p, "buffer_kib", 32.0, &Params::new(), 0, false).unwrap();
//! assert!(r.metrics["device_latency_ns"] > r.metrics["host_latency_ns"]);
//! ```

use std::collections::BTreeMap;

use ccsim_coherence::agents::line_engine::LineRmw;
use ccsim_coherence::Line;
use ccsim_kernel::prelude::*;
use ccsim_platform::{BuiltSystem, Platform, SystemDecl, SystemNode};

use crate::invocation::percentile;
use crate::program_run::{build_for_program, no_violation, role_agents};
use crate::{sim_result, trace_mode, werr, MetricSpec, Point, PointResult, RunError, WorkloadInfo};

/// The shared buffer's first line (a 1 GiB-aligned huge page's frames:
/// the lines of one buffer are contiguous).
const BUFFER_LINE: u64 = 0x8_8000_0000 / 64;

/// The declaration of `ccix_coherency`.
pub static CCIX_COHERENCY: WorkloadInfo = WorkloadInfo {
    name: "ccix_coherency",
    description: "CCIX §IV Exp. 4 (Algorithm 2): the CTG on the U280 and 1-3 N1 cores modify random 64 B lines of one shared buffer of x KiB on a huge page, together, one access per side per iteration; each access's latency, per side (the System Cache, the cores' L1D/L2 and the home's L3 all in the verified ccix table).",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("ccix_host"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.ccix_host]", description: "The system: the first `ra` is the device's cache, the next ones the host cores." },
        ParamSpec { name: "host_cores", kind: ParamKind::Int, default: ParamDefault::Int(1), unit: "cores", range: ParamRange::between(0.0, 16.0), from: "CCIX §IV Exp. 4: a single CPU core, then 1 to 3", description: "Host cores that write the buffer (the system's request agents after the device's)." },
        ParamSpec { name: "accesses", kind: ParamKind::Int, default: ParamDefault::Int(1024), unit: "accesses", range: ParamRange::between(1.0, 1_000_000.0), from: "CCIX §IV Exp. 4: 1024 accesses to random addresses", description: "Accesses per side (the device, and each host core)." },
        ParamSpec { name: "period_ns", kind: ParamKind::Float, default: ParamDefault::Float(2000.0), unit: "ns", range: ParamRange::at_least(1.0), from: "assumed: one iteration of Algorithm 2's loop (the API configures the CTG over MMIO, waits for it, reads its latency register, writes the host's line)", description: "The time between iterations: each side's access k starts at k x period." },
        ParamSpec { name: "hist_bin_ns", kind: ParamKind::Float, default: ParamDefault::Float(50.0), unit: "ns", range: ParamRange::between(1.0, 100_000.0), from: "assumed: Fig. 6B's bin width is not given", description: "Width of the latency histograms' bins (stats <side>_latency_ns.hist.<lower edge>)." },
        ParamSpec { name: "hist_max_ns", kind: ParamKind::Float, default: ParamDefault::Float(2000.0), unit: "ns", range: ParamRange::between(1.0, 1_000_000.0), from: "assumed: above the slowest access of Fig. 6's runs (a snoop across the link and back)", description: "Lower edge of the histograms' last bin, which holds every latency from it up." },
        ParamSpec { name: "device_op", kind: ParamKind::Enum(&["write", "read"]), default: ParamDefault::Str("write"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 4: 'simultaneously modify cache lines'", description: "The CTG's access: a whole-line write (ReadUnique on a miss) or a read (ReadShared)." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "host_latency_ns", unit: "ns", description: "Mean latency of the host cores' writes (the text's 'average access latency')." },
        MetricSpec { name: "device_latency_ns", unit: "ns", description: "Mean latency of the CTG's accesses, with the ATC lookup." },
        MetricSpec { name: "host_p10_ns", unit: "ns", description: "10th percentile of the host's latencies." },
        MetricSpec { name: "host_p50_ns", unit: "ns", description: "Median of the host's latencies." },
        MetricSpec { name: "host_p90_ns", unit: "ns", description: "90th percentile of the host's latencies." },
        MetricSpec { name: "device_p10_ns", unit: "ns", description: "10th percentile of the device's latencies." },
        MetricSpec { name: "device_p50_ns", unit: "ns", description: "Median of the device's latencies." },
        MetricSpec { name: "device_p90_ns", unit: "ns", description: "90th percentile of the device's latencies." },
        MetricSpec { name: "host_std_ns", unit: "ns", description: "Standard deviation of the host's latencies (its jitter, Fig. 6B)." },
        MetricSpec { name: "device_miss_std_ns", unit: "ns", description: "Standard deviation of the device's latencies that missed the System Cache (Fig. 6B's jitter without the SC hits the text calls outliers)." },
        MetricSpec { name: "host_hit_fraction", unit: "", description: "Host writes that hit in the core's caches." },
        MetricSpec { name: "device_hit_fraction", unit: "", description: "CTG accesses that hit in the System Cache (the text's 'very short outliers')." },
    ],
    run: run_coherency,
};

/// The declaration of `ccix_atomic`.
pub static CCIX_ATOMIC: WorkloadInfo = WorkloadInfo {
    name: "ccix_atomic",
    description: "CCIX §IV Exp. 5: AtomicStore, AtomicLoad, AtomicSwap or AtomicCompare on a line of host memory (huge page, ATC warm), from the U280 as a multi-step AXI4-MM sequence through its System Cache (the operands' write, then the far AtomicCompare the home executes) or from an N1 core as a local atomic in its L1; x is the operand size.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("ccix_host"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.ccix_host]", description: "The system: the first `ra` is the device's cache, the second a host core." },
        ParamSpec { name: "side", kind: ParamKind::Enum(&["device", "host"]), default: ParamDefault::Str("device"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 5: initiated from the host or from the accelerator", description: "Who performs the atomic." },
        ParamSpec { name: "kind", kind: ParamKind::Enum(&["store", "load", "swap", "compare"]), default: ParamDefault::Str("compare"), unit: "", range: ParamRange::ANY, from: "CCIX §IV Exp. 5: AtomicStore, AtomicLoad, AtomicSwap, AtomicCompare", description: "The atomic: store (no value back), load (fetch-and-op), swap, compare (compare-and-swap)." },
        ParamSpec { name: "requests", kind: ParamKind::Int, default: ParamDefault::Int(32), unit: "atomics", range: ParamRange::between(1.0, 100_000.0), from: "assumed: enough for a stable median", description: "Atomics per point, one at a time, each on its own line." },
        ParamSpec { name: "host_atomic_ns", kind: ParamKind::Float, default: ParamDefault::Float(48.46), unit: "ns", range: ParamRange::at_least(0.0), from: "calibrated: CCIX §IV Exp. 5, an AtomicCompare from the host takes 50 ns; less the L1 hit (n1_core_cache.hit_ns, 1.54 ns), the acquire-release CAS's ordering (an N1 CASAL waits for the core's earlier stores to drain)", description: "A host atomic's cost beyond its L1 hit." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Median latency of one atomic, its first request to its last response." },
        MetricSpec { name: "p25_ns", unit: "ns", description: "25th percentile." },
        MetricSpec { name: "p75_ns", unit: "ns", description: "75th percentile." },
        MetricSpec { name: "steps", unit: "requests", description: "AXI4-MM requests (device) or instructions (host) per atomic." },
    ],
    run: run_atomic,
};

/// The platform's only `ats_switch`'s ATC lookup: what a device access
/// on a warm huge page pays before its line issues.
pub(crate) fn atc_lookup(platform: &Platform) -> Result<Tick, RunError> {
    match platform.instances_of("ats_switch").as_slice() {
        [(_, c)] => Ok((c.params.float("lookup_ns") * 1000.0).round() as Tick),
        _ => Err(werr(format!(
            "platform {}: the CCIX shared-buffer workloads need exactly one `ats_switch` (its ATC lookup)",
            platform.name
        ))),
    }
}

/// The declaration of `system` and its device, the first agent that plays
/// `ra` (the accelerator's cache).
pub(crate) fn device_ra<'p>(
    platform: &'p Platform,
    system: &str,
) -> Result<(&'p SystemDecl, &'p SystemNode), RunError> {
    let decl = platform.system(system).map_err(RunError::Config)?;
    let ra = decl
        .agents
        .iter()
        .find(|a| a.role.as_deref() == Some("ra"))
        .ok_or_else(|| werr(format!("system {system}: no agent plays `ra`")))?;
    Ok((decl, ra))
}

/// The first AXI4-MM step of a device atomic: the lock module's or CTG's
/// write of the operands into the System Cache, a write request through
/// the cache to its response, as a write hit takes (the system's first
/// `ra`'s `hit_ns`, calibrated on CCIX §IV Exp. 3's data-local write).
pub(crate) fn device_operand_write(platform: &Platform, system: &str) -> Result<Tick, RunError> {
    let (_, ra) = device_ra(platform, system)?;
    let params = &platform
        .component(&ra.instance)
        .map_err(RunError::Config)?
        .params;
    Ok((params.float("hit_ns") * 1000.0).round() as Tick)
}

/// The bytes of a far atomic's encoded request (tag, operation, offset,
/// compare and swap words; see
/// [`ATOMIC_OPERANDS_TAG`](ccsim_coherence::agents::line_engine::ATOMIC_OPERANDS_TAG)).
pub(crate) const ATOMIC_OPERANDS_BYTES: usize = 32;

pub(crate) fn word0(line: &Line) -> u64 {
    u64::from_le_bytes(line[..8].try_into().expect("8 bytes"))
}

/// Each of the device's encoded atomics ran once at the home, on the
/// line as it was (the original value its CompData_I returned), and left
/// its result: a compare (which matched) its swap value, an ADD the sum.
fn check_operations_ran(
    s: &BuiltSystem,
    ha: usize,
    device: usize,
    lines: &[u64],
    operations: &[Option<LineRmw>],
) -> Result<(), RunError> {
    let log = s.agent(ha).home_writes();
    for (&line, op) in lines.iter().zip(operations) {
        let Some(op) = op else { continue };
        let found: Vec<_> = log
            .iter()
            .filter(|&&(l, req, _, _)| l == line && req as usize == device)
            .collect();
        let [&(_, _, _, Some(old))] = found.as_slice() else {
            return Err(RunError::Violation {
                message: format!(
                    "the home executed {} encoded atomics on line {line:#x}, not one",
                    found.len()
                ),
            });
        };
        let (now, want) = (s.agent(ha).memory_of(line), op.apply(&old));
        let matched = !matches!(*op, LineRmw::Cas { expected, .. } if word0(&old) != expected);
        if !matched || now != want {
            return Err(RunError::Violation {
                message: format!(
                    "{op:?} on line {line:#x}: the home found {:#x} and left {:#x}",
                    word0(&old),
                    word0(&now)
                ),
            });
        }
    }
    Ok(())
}

/// The device (the system's first `ra`) and `cores` host cores after it.
fn device_and_cores(
    s: &BuiltSystem,
    system: &str,
    cores: usize,
) -> Result<(usize, Vec<usize>), RunError> {
    let ras = role_agents(s, "ra", system)?;
    if ras.len() < 1 + cores {
        return Err(werr(format!(
            "system {system} has {} request agents: a device and {cores} host core(s) need {}",
            ras.len(),
            1 + cores
        )));
    }
    Ok((ras[0], ras[1..=cores].to_vec()))
}

/// Latencies (ns) of a program's operations; an operation that never
/// completed is an error.
fn latencies(times: &[(Tick, Tick)], who: &str) -> Result<Vec<f64>, RunError> {
    times
        .iter()
        .enumerate()
        .map(|(i, &(issue, end))| {
            if end == 0 {
                Err(RunError::Violation {
                    message: format!("{who}: access {i} never completed"),
                })
            } else {
                Ok((end - issue) as f64 / 1000.0)
            }
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The population standard deviation of `v` (0 when empty).
fn std_dev(v: &[f64]) -> f64 {
    let m = mean(v);
    if v.is_empty() {
        0.0
    } else {
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
    }
}

/// The histogram of `v` (ns) as stats `{prefix}_latency_ns.hist.{lower
/// edge, ns, 5 digits}`: bins of `bin` ns from 0, the last from `max` up
/// (so every sample is counted once), and `{prefix}_latency_ns.hist_bin`,
/// the width, for whoever draws it (Fig. 6B's histograms).
fn histogram(prefix: &str, v: &[f64], bin: f64, max: f64, stats: &mut BTreeMap<String, f64>) {
    let last = (max / bin).ceil() as usize;
    let mut counts = vec![0u64; last + 1];
    for &x in v {
        counts[((x / bin).floor() as usize).min(last)] += 1;
    }
    for (i, c) in counts.iter().enumerate() {
        let lower = (i as f64 * bin).round() as u64;
        stats.insert(format!("{prefix}_latency_ns.hist.{lower:05}"), *c as f64);
    }
    stats.insert(format!("{prefix}_latency_ns.hist_bin"), bin);
}

/// p10, p50, p90 of `v` under `prefix`.
fn spread(prefix: &str, v: &mut [f64], metrics: &mut BTreeMap<String, f64>) {
    v.sort_by(f64::total_cmp);
    for p in [10.0, 50.0, 90.0] {
        let value = if v.is_empty() { 0.0 } else { percentile(v, p) };
        metrics.insert(format!("{prefix}_p{}_ns", p as u32), value);
    }
}

fn run_coherency(point: &Point<'_>) -> Result<PointResult, RunError> {
    if point.x_name != "buffer_kib" {
        return Err(werr(format!(
            "workload ccix_coherency sweeps buffer_kib, not {:?}",
            point.x_name
        )));
    }
    let kib = point.x;
    if !((1.0..=1024.0 * 1024.0).contains(&kib) && kib.fract() == 0.0) {
        return Err(werr(format!(
            "buffer_kib = {kib}: must be a whole number of KiB from 1 to 1 GiB"
        )));
    }
    let lines = kib as u64 * 1024 / 64;
    let params = point.params;
    let system = params.str("system");
    let cores = params.uint("host_cores") as usize;
    let n = params.uint("accesses") as usize;
    let period = (params.float("period_ns") * 1000.0).round() as Tick;
    let (hist_bin, hist_max) = (params.float("hist_bin_ns"), params.float("hist_max_ns"));
    if hist_max < hist_bin {
        return Err(werr(format!(
            "hist_max_ns = {hist_max} is below hist_bin_ns = {hist_bin}: the histogram needs at least one bin below its last"
        )));
    }
    let device_event = if params.str("device_op") == "read" {
        "load"
    } else {
        "store"
    };
    let lookup = atc_lookup(point.platform)?;

    let mut s = build_for_program(point.platform, system, point)?;
    let (device, core_agents) = device_and_cores(&s, system, cores)?;
    let ha = role_agents(&s, "ha", system)?[0];
    // The host allocated and touched the buffer: its lines start in the
    // home's L3 (as many as it holds).
    s.agent_mut(ha).warm(BUFFER_LINE..BUFFER_LINE + lines);

    // Algorithm 2: the CTG's and the host's pointers are drawn
    // independently each iteration.
    let mut rng = SimRng::for_path(point.seed, "ccix_coherency.addresses");
    let release: Vec<Tick> = (0..n).map(|k| k as Tick * period).collect();
    let mut draw = |count: usize, event: &'static str| -> Vec<(u64, &'static str)> {
        (0..count)
            .map(|_| (BUFFER_LINE + rng.below(lines), event))
            .collect()
    };
    let device_ops = draw(n, device_event);
    let core_ops: Vec<Vec<(u64, &str)>> = (0..cores).map(|_| draw(n, "store")).collect();
    s.agent_mut(device)
        .set_program(&device_ops, 1)
        .map_err(werr)?;
    s.agent_mut(device)
        .set_program_release(release.clone())
        .map_err(werr)?;
    for (c, ops) in core_agents.iter().zip(&core_ops) {
        s.agent_mut(*c).set_program(ops, 1).map_err(werr)?;
        s.agent_mut(*c)
            .set_program_release(release.clone())
            .map_err(werr)?;
    }
    s.sim.run();
    no_violation(&s)?;

    let device_hit = s.agent(device).local_time_bound();
    let mut dev: Vec<f64> = Vec::with_capacity(n);
    let mut dev_hits = 0usize;
    let mut dev_misses: Vec<f64> = Vec::with_capacity(n);
    for (i, &(issue, end)) in s.agent(device).program_times().iter().enumerate() {
        if end == 0 {
            return Err(RunError::Violation {
                message: format!("the device's access {i} never completed"),
            });
        }
        let ns = (end - issue + lookup) as f64 / 1000.0;
        if end - issue <= device_hit {
            dev_hits += 1;
        } else {
            dev_misses.push(ns);
        }
        dev.push(ns);
    }
    let mut host: Vec<f64> = Vec::new();
    let mut host_hits = 0usize;
    for &c in &core_agents {
        let bound = s.agent(c).local_time_bound() as f64 / 1000.0;
        let l = latencies(s.agent(c).program_times(), "a host core")?;
        host_hits += l.iter().filter(|&&x| x <= bound).count();
        host.extend(l);
    }
    let mut metrics = BTreeMap::new();
    metrics.insert("host_latency_ns".to_string(), mean(&host));
    metrics.insert("device_latency_ns".to_string(), mean(&dev));
    metrics.insert("host_std_ns".to_string(), std_dev(&host));
    metrics.insert("device_miss_std_ns".to_string(), std_dev(&dev_misses));
    metrics.insert(
        "host_hit_fraction".to_string(),
        if host.is_empty() {
            0.0
        } else {
            host_hits as f64 / host.len() as f64
        },
    );
    metrics.insert(
        "device_hit_fraction".to_string(),
        dev_hits as f64 / dev.len() as f64,
    );
    spread("host", &mut host, &mut metrics);
    spread("device", &mut dev, &mut metrics);
    let mut result = sim_result(&s.sim, metrics, trace_mode(point.trace));
    histogram("host", &host, hist_bin, hist_max, &mut result.stats);
    histogram("device", &dev, hist_bin, hist_max, &mut result.stats);
    Ok(result)
}

fn run_atomic(point: &Point<'_>) -> Result<PointResult, RunError> {
    if point.x_name != "operand_bytes" {
        return Err(werr(format!(
            "workload ccix_atomic sweeps operand_bytes, not {:?}",
            point.x_name
        )));
    }
    let x = point.x;
    // CCIX atomics carry 1 to 32 bytes (a compare: the compare and swap
    // values, 16 B each at most), naturally aligned within a line.
    if !((1.0..=32.0).contains(&x) && (x as u64).is_power_of_two() && x.fract() == 0.0) {
        return Err(werr(format!(
            "operand_bytes = {x}: must be a power of two from 1 to 32"
        )));
    }
    let params = point.params;
    let system = params.str("system");
    let device_side = params.str("side") == "device";
    let n = params.uint("requests") as usize;
    let lookup = atc_lookup(point.platform)?;
    let host_extra = (params.float("host_atomic_ns") * 1000.0).round() as Tick;

    let mut s = build_for_program(point.platform, system, point)?;
    let (device, cores) = device_and_cores(&s, system, 1)?;
    // Each atomic on its own line, far apart, in DDR (the CTG's random
    // addresses, CCIX §IV-A; the host's atomic touches its line first).
    let lines: Vec<u64> = (0..n as u64).map(|k| BUFFER_LINE + 64 * k).collect();
    const SPACING: Tick = 100 * US;
    let operand_write = device_operand_write(point.platform, system)?;
    let (agent, ops, release, steps): (usize, Vec<(u64, &str)>, Vec<Tick>, usize) = if device_side {
        // Two AXI4-MM steps: the operands' write into the System Cache
        // (after the ATC lookup), then the request that makes the cache
        // send the far atomic (AtomicCompare with the operands) to the
        // home, answered with the old value (CompData_I).
        let mut ops = Vec::new();
        let mut release = Vec::new();
        for (k, &l) in lines.iter().enumerate() {
            ops.push((l, "far_atomic"));
            release.push(k as Tick * SPACING + lookup + operand_write);
        }
        (device, ops, release, 2)
    } else {
        // The host's atomic is local: the line is in the core's L1,
        // unique (it touched it first, untimed), so the N1 runs it near
        // (Cortex-A76 TRM §A6.4.1), one instruction.
        let mut ops = Vec::new();
        let mut release = Vec::new();
        for (k, &l) in lines.iter().enumerate() {
            let at = k as Tick * SPACING;
            ops.push((l, "store"));
            ops.push((l, "store"));
            release.extend([at, at + SPACING / 2]);
        }
        (cores[0], ops, release, 1)
    };
    s.agent_mut(agent).set_program(&ops, 1).map_err(werr)?;
    s.agent_mut(agent)
        .set_program_release(release)
        .map_err(werr)?;
    // The device's atomic carries its operands, which the home runs on the
    // line's bytes (CHI IHI0050 §2.10): an AtomicCompare its compare and
    // swap values (the CTG compares with the value the line holds, so
    // each swaps), an AtomicStore or AtomicLoad ADD its addend; an
    // AtomicSwap carries the whole line it swaps in.
    let ha = role_agents(&s, "ha", system)?[0];
    let operations: Vec<Option<LineRmw>> = lines
        .iter()
        .enumerate()
        .map(|(k, &l)| match params.str("kind") {
            "compare" => Some(LineRmw::Cas {
                offset: 0,
                expected: word0(&s.agent(ha).memory_of(l)),
                new: k as u64 + 1,
            }),
            "store" | "load" => Some(LineRmw::Add {
                offset: 0,
                add: k as u64 + 1,
            }),
            _ => None,
        })
        .collect();
    if device_side {
        let data = operations
            .iter()
            .map(|op| op.map(|op| op.to_operands()[..ATOMIC_OPERANDS_BYTES].to_vec()))
            .collect();
        s.agent_mut(agent).set_program_data(data).map_err(werr)?;
        s.agent_mut(ha).record_home_writes();
    }
    s.sim.run();
    no_violation(&s)?;
    if device_side {
        check_operations_ran(&s, ha, device, &lines, &operations)?;
    }
    let times = s.agent(agent).program_times().to_vec();
    let per = if device_side { 1 } else { 2 };
    let mut lat = Vec::with_capacity(n);
    for k in 0..n {
        let (first, second) = (times[per * k], times[per * k + per - 1]);
        if first.1 == 0 || second.1 == 0 {
            return Err(RunError::Violation {
                message: format!("atomic {k} never completed"),
            });
        }
        let ps = if device_side {
            // From the request (before the ATC lookup and the operands'
            // write) to the old value's arrival.
            first.1 - (first.0 - lookup - operand_write)
        } else {
            second.1 - second.0 + host_extra
        };
        lat.push(ps as f64 / 1000.0);
    }
    lat.sort_by(f64::total_cmp);
    let mut metrics = BTreeMap::new();
    metrics.insert("latency_ns".to_string(), percentile(&lat, 50.0));
    metrics.insert("p25_ns".to_string(), percentile(&lat, 25.0));
    metrics.insert("p75_ns".to_string(), percentile(&lat, 75.0));
    metrics.insert("steps".to_string(), steps as f64);
    Ok(sim_result(&s.sim, metrics, trace_mode(point.trace)))
}
