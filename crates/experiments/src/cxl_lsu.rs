//! `cxl_lsu` — Cohet §VI-B2 and §VI-C1 (Figs. 13 and 15): the CXL-FPGA's
//! load-store unit reads host memory through CXL.cache, and the line hits
//! in the device's host-memory cache (HMC), in the host LLC, or in host
//! memory.
//!
//! * **The system** is a platform's `[systems.<system>]` of table agents
//!   running `protocols/cxl-cache.toml`: host cores, the LLC with its
//!   embedded directory (the home), and the device's DCOH, the agent that
//!   plays the `device` role. The LSU is the DCOH's program: loads of
//!   sequential 64 B lines, issued in order, as many in flight as the
//!   window allows; every load runs the verified table (RdShared on a miss,
//!   GO-S and the data back) and moves the line's real bytes, which the
//!   online checks compare with the latest write.
//! * **Tiers.** `hmc`: the lines are loaded once, then the measured pass
//!   hits ("HMC hits are tested by repeating address sequences", §VI-A4):
//!   each latency test repeats its 32 lines right after loading them, the
//!   bandwidth run its whole sequence (which hits only while it fits in the
//!   DCOH's `capacity_lines`: beyond, LRU replacement evicts every line
//!   before its second load).
//!   `llc`: the home's cache holds the lines (CLDEMOTE), the HMC does not.
//!   `memory`: neither does (CLFLUSH); the home reads the line from its
//!   memory first (the system's DDR5 controller, or `memory_ns`).
//! * **Latency** (`mode = latency`): `trials` tests of 32 sequential loads,
//!   one at a time, each test on lines not touched before; the median and
//!   the 25th/75th percentiles of the load latency (from issue to use,
//!   including the DCOH's `access_ns` pipeline).
//! * **Bandwidth** (`mode = bandwidth`): `requests` loads of 64 B with
//!   every one allowed in flight, paced by the DCOH's `issue_ns` (a hit)
//!   or `miss_issue_ns` (a miss); bandwidth = bytes / (last load's use -
//!   first load's issue).
//! * **NUMA node.** With an `snc_mesh` instance in the platform, the
//!   line's home (its LLC slice and memory controller) sits on NUMA node
//!   `numa_node`: the link between the home and the mesh gains the node's
//!   one-way distance from the root port (quadrant crossings, and the UPI
//!   link for the other socket) over that of `snc_mesh.root_port_node`, the
//!   node the latencies were calibrated on (Cohet §VI-B1: node 7, the
//!   nearest). Inside the node each line's home is the LLC slice its
//!   address hashes to (the home agent's `slices = "<snc_mesh>"` in the
//!   system), a few mesh stops from where requests enter the node: lines
//!   differ by those stops, the source of the spread between a latency
//!   test's quartiles.
//! * **Device clock.** `device_clock_mhz` rescales every time of the DCOH
//!   (its occupancy, pipeline and issue intervals) from the 400 MHz of the
//!   calibration, and the time of the CXL link it reaches the host over:
//!   the same cycle counts at another clock, as the paper's 1.5 GHz
//!   CXL-ASIC series ("by frequency scaling based on the clock cycles
//!   measured from CXL-FPGA tests", §VI-A2). The link is device time
//!   because SimCXL, where the paper scales it, puts the link's traversals
//!   in the device's cache controller: its Ruby L1 for the device has
//!   `l1_request_latency = l1_response_latency = 544` cycles and
//!   `mandatory_queue_latency = 276` at the 2.4 GHz board clock, 226.7 +
//!   226.7 + 115 ns of the 575.6 ns LLC hit (TianheMICALab/SimCXL
//!   src/python/gem5/components/cachehierarchies/ruby/
//!   cxl_mesi_two_level_cache_hierarchy.py). The host's times (LLC, mesh,
//!   DRAM) do not change.
//!
//! ```
//! use ccsim_kernel::component::Params;
//! let p = ccsim_platform::Platform::load("cohet").unwrap();
//! let r = ccsim_experiments::run_point("cxl_lsu", &p, "device_clock_mhz", 400.0, &Params::new(), 0, false).unwrap();
//! // An HMC hit is the DCOH's pipeline alone.
//! assert!((r.metrics["latency_ns"] - 115.0).abs() < 1.0);
//! ```

use std::collections::BTreeMap;

use ccsim_coherence::agents::snc_one_way_ns;
use ccsim_kernel::prelude::*;
use ccsim_platform::{Platform, SystemNode};

use crate::program_run::{build_for_program, latency_quartiles, no_violation, role_agent};
use crate::{
    sim_result, trace_mode, werr, whole_number, MetricSpec, Point, PointResult, RunError,
    WorkloadInfo,
};

/// The device clock the DCOH's times are given at (Cohet §VI-A1: the
/// CXL-FPGA runs at 400 MHz).
const CALIBRATED_CLOCK_MHZ: f64 = 400.0;

/// The DCOH's parameters that are device time, rescaled by the clock.
const DEVICE_TIMES: [&str; 4] = ["occupancy_ns", "access_ns", "issue_ns", "miss_issue_ns"];

/// Loads per latency test (Cohet §VI-B2: "32 64 B load requests to
/// sequential addresses").
const LOADS_PER_TEST: u64 = 32;

/// Bytes a load moves (Cohet §VI-B: 64 B granularity).
const LOAD_BYTES: f64 = 64.0;

/// The declaration of `cxl_lsu`.
pub static CXL_LSU: WorkloadInfo = WorkloadInfo {
    name: "cxl_lsu",
    description: "Cohet Figs. 13 and 15: the CXL device's load-store unit reads 64 B lines of host memory through CXL.cache (the verified cxl-cache table in the DCOH, the LLC home and the host cores), hitting in the HMC, the LLC or memory; latency (median and quartiles of 32 sequential loads per test) or bandwidth (many loads in flight). x is the device clock (the same cycle counts rescaled) or the number of requests.",
    params: &[
        ParamSpec { name: "system", kind: ParamKind::Str, default: ParamDefault::Str("cxl"), unit: "", range: ParamRange::ANY, from: "the platform's [systems.cxl]", description: "The platform's system section (cxl-cache agents, one playing `device`)." },
        ParamSpec { name: "tier", kind: ParamKind::Enum(&["hmc", "llc", "memory"]), default: ParamDefault::Str("hmc"), unit: "", range: ParamRange::ANY, from: "Cohet Fig. 13: HMC hit", description: "Where the loads hit: the device's HMC, the host LLC, or host memory." },
        ParamSpec { name: "mode", kind: ParamKind::Enum(&["latency", "bandwidth"]), default: ParamDefault::Str("latency"), unit: "", range: ParamRange::ANY, from: "Cohet Fig. 13: latency", description: "latency: tests of 32 sequential loads one at a time; bandwidth: `requests` loads, all allowed in flight." },
        ParamSpec { name: "trials", kind: ParamKind::Int, default: ParamDefault::Int(1000), unit: "tests", range: ParamRange::between(1.0, 100_000.0), from: "Cohet §VI-B2: each test repeated 1000 times", description: "Latency tests, each on fresh lines." },
        ParamSpec { name: "requests", kind: ParamKind::Int, default: ParamDefault::Int(2048), unit: "requests", range: ParamRange::between(1.0, 1_048_576.0), from: "Cohet §VI-C1: bandwidth reported at 2,048 requests", description: "Bandwidth: loads per test (x when it sweeps requests)." },
        ParamSpec { name: "numa_node", kind: ParamKind::Int, default: ParamDefault::Int(7), unit: "node", range: ParamRange::between(0.0, 7.0), from: "Cohet §VI-B1: node 7, the nearest to the device", description: "The NUMA node holding the lines (with the platform's snc_mesh; x when it sweeps the node)." },
        ParamSpec { name: "device_clock_mhz", kind: ParamKind::Float, default: ParamDefault::Float(400.0), unit: "MHz", range: ParamRange::between(1.0, 10_000.0), from: "Cohet §VI-A1: the FPGA at 400 MHz", description: "The device clock; the DCOH's times scale by 400 / clock (x when it sweeps the clock)." },
    ],
    check: None,
    metrics: &[
        MetricSpec { name: "latency_ns", unit: "ns", description: "Latency: median load latency." },
        MetricSpec { name: "p25_ns", unit: "ns", description: "Latency: 25th percentile." },
        MetricSpec { name: "p75_ns", unit: "ns", description: "Latency: 75th percentile." },
        MetricSpec { name: "bandwidth_gbps", unit: "GB/s", description: "Bandwidth: 64 B per load over the test's time (GB = 10^9 B)." },
        MetricSpec { name: "loads", unit: "loads", description: "Loads measured." },
    ],
    run,
};

fn run(point: &Point<'_>) -> Result<PointResult, RunError> {
    let params = point.params;
    let mut clock = params.float("device_clock_mhz");
    let mut requests = params.uint("requests");
    let mut node = params.uint("numa_node");
    match point.x_name {
        "device_clock_mhz" => clock = point.x,
        "numa_node" => {
            if !(0.0..=7.0).contains(&point.x) || point.x.fract() != 0.0 {
                return Err(werr(format!(
                    "numa_node = {}: must be a node, 0 to 7",
                    point.x
                )));
            }
            node = point.x as u64;
        }
        "requests" => requests = whole_number("requests", point.x, 1.0)?,
        other => {
            return Err(werr(format!(
                "workload cxl_lsu sweeps device_clock_mhz, requests or numa_node, not {other:?}"
            )))
        }
    }
    if clock.is_nan() || clock <= 0.0 {
        return Err(werr(format!(
            "device_clock_mhz = {clock}: must be positive"
        )));
    }
    let system = params.str("system");
    let tier = params.str("tier");
    let bandwidth = params.str("mode") == "bandwidth";
    let platform = on_node(&at_clock(point.platform, &[system], clock)?, system, node)?;
    let (n, window, warm_pass) = if bandwidth {
        (requests, requests as usize, tier == "hmc")
    } else {
        (LOADS_PER_TEST * params.uint("trials"), 1, tier == "hmc")
    };
    let mut s = build_for_program(&platform, system, point)?;
    let device = role_agent(&s, "device", system)?;
    let home = role_agent(&s, "home", system)?;
    let lines: Vec<u64> = (0..n).collect();
    // The measured loads, each after its warm-up load when the tier is the
    // HMC: "HMC hits are tested by repeating address sequences" (Cohet
    // §VI-A4), a latency test's 32 lines right after their first pass (so
    // they are still in the HMC however many tests run), the bandwidth
    // run's whole sequence after one pass over it.
    let chunk = if bandwidth { n.max(1) } else { LOADS_PER_TEST };
    let mut ops: Vec<(u64, &str)> = Vec::new();
    let mut measured_ops: Vec<usize> = Vec::with_capacity(n as usize);
    for test in lines.chunks(chunk as usize) {
        if warm_pass {
            ops.extend(test.iter().map(|&l| (l, "load")));
        }
        measured_ops.extend(ops.len()..ops.len() + test.len());
        ops.extend(test.iter().map(|&l| (l, "load")));
    }
    if tier != "memory" {
        s.agent_mut(home).warm(lines.iter().copied());
    }
    s.agent_mut(device)
        .set_program(&ops, window)
        .map_err(werr)?;
    s.sim.run();
    no_violation(&s)?;
    let times = s.agent(device).program_times();
    let measured: Vec<(Tick, Tick)> = measured_ops.iter().map(|&i| times[i]).collect();
    if let Some(i) = measured.iter().position(|&(_, end)| end == 0) {
        return Err(RunError::Violation {
            message: format!("load {i} never completed (the run stopped with work open)"),
        });
    }
    let mut metrics = BTreeMap::new();
    metrics.insert("loads".to_string(), n as f64);
    if bandwidth {
        let first = measured.iter().map(|t| t.0).min().unwrap_or(0);
        let last = measured.iter().map(|t| t.1).max().unwrap_or(0);
        let seconds = (last - first) as f64 * 1e-12;
        metrics.insert(
            "bandwidth_gbps".to_string(),
            n as f64 * LOAD_BYTES / seconds / 1e9,
        );
    } else {
        latency_quartiles(&measured, &mut metrics);
    }
    Ok(sim_result(&s.sim, metrics, trace_mode(point.trace)))
}

/// The roles of a system's agents that sit on the device: a type-1 or
/// type-2 device's agent (`device`), a type-2 or type-3 device's DCOH
/// (`dcoh`) and its cache or engine (`accel`).
const DEVICE_ROLES: [&str; 3] = ["device", "dcoh", "accel"];

/// `platform` with the devices of `systems` at `clock_mhz` (their times
/// given at 400 MHz, [`clock_overrides`]). Every override is computed from
/// `platform` as given, so an instance two systems share (a `cxl_link`) is
/// rescaled once.
pub(crate) fn at_clock(
    platform: &Platform,
    systems: &[&str],
    clock_mhz: f64,
) -> Result<Platform, RunError> {
    if clock_mhz == CALIBRATED_CLOCK_MHZ {
        return Ok(platform.clone());
    }
    let mut overrides: BTreeMap<String, ParamValue> = BTreeMap::new();
    for system in systems {
        overrides.extend(clock_overrides(platform, system, clock_mhz)?);
    }
    let overrides: Vec<(String, ParamValue)> = overrides.into_iter().collect();
    platform
        .with_overrides(&overrides)
        .map_err(RunError::Config)
}

/// The overrides that put `system`'s device at `clock_mhz` (its times
/// given at 400 MHz): [`DEVICE_TIMES`] of every device agent's instance
/// ([`DEVICE_ROLES`]), the hop of every switch that serves only device
/// agents (a type-2 device's crossbar; not a host mesh the device plugs
/// into), and the latency of every link that reaches a device agent or
/// such a switch: the CXL link among them, since SimCXL keeps the link's
/// traversals in the device controller's cycles (module docs).
fn clock_overrides(
    platform: &Platform,
    system: &str,
    clock_mhz: f64,
) -> Result<Vec<(String, ParamValue)>, RunError> {
    let decl = platform.system(system).map_err(RunError::Config)?;
    let device_agents: Vec<&str> = decl
        .agents
        .iter()
        .filter(|a| DEVICE_ROLES.contains(&a.role.as_deref().unwrap_or("")))
        .map(|a| a.name.as_str())
        .collect();
    if device_agents.is_empty() {
        return Err(werr(format!(
            "system {system}: no agent plays a device role ({})",
            DEVICE_ROLES.join(", ")
        )));
    }
    let agent_names: Vec<&str> = decl.agents.iter().map(|a| a.name.as_str()).collect();
    // A switch is the device's when each of its links that reaches an
    // agent reaches a device agent.
    let device_switches: Vec<&str> = decl
        .components
        .iter()
        .map(|c| c.name.as_str())
        .filter(|&switch| {
            let agents: Vec<&str> = decl
                .links
                .iter()
                .filter_map(|l| match (l.a.0.as_str(), l.b.0.as_str()) {
                    (a, b) if a == switch => Some(b),
                    (a, b) if b == switch => Some(a),
                    _ => None,
                })
                .filter(|end| agent_names.contains(end))
                .collect();
            !agents.is_empty() && agents.iter().all(|a| device_agents.contains(a))
        })
        .collect();
    let scale = CALIBRATED_CLOCK_MHZ / clock_mhz;
    let on_device = |end: &str| device_agents.contains(&end) || device_switches.contains(&end);
    let link_instances = distinct(
        decl.links
            .iter()
            .filter(|l| on_device(&l.a.0) || on_device(&l.b.0))
            .map(|l| l.instance.as_str()),
    );
    let mut overrides = Vec::new();
    for instance in instances_named(&decl.agents, &device_agents) {
        for p in DEVICE_TIMES {
            overrides.push(param_scaled(platform, instance, p, scale)?);
        }
    }
    for switch in instances_named(&decl.components, &device_switches) {
        overrides.push(param_scaled(platform, switch, "hop_ns", scale)?);
    }
    for link in link_instances {
        overrides.push(param_scaled(platform, link, "latency_ns", scale)?);
    }
    Ok(overrides)
}

/// The distinct platform instances of the system's `nodes` named in
/// `names`, sorted.
fn instances_named<'a>(nodes: &'a [SystemNode], names: &[&str]) -> Vec<&'a str> {
    distinct(
        nodes
            .iter()
            .filter(|n| names.contains(&n.name.as_str()))
            .map(|n| n.instance.as_str()),
    )
}

/// `items` sorted, each once.
fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = items.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The override of `instance`'s parameter `param` multiplied by `scale`.
fn param_scaled(
    platform: &Platform,
    instance: &str,
    param: &str,
    scale: f64,
) -> Result<(String, ParamValue), RunError> {
    let params = &platform
        .component(instance)
        .map_err(RunError::Config)?
        .params;
    Ok((
        format!("{instance}.{param}"),
        ParamValue::Float(params.float(param) * scale),
    ))
}

/// `platform` with its PCIe path's latencies (every `root_complex` and
/// `pcie_link`) rescaled from 400 MHz to `clock_mhz`, as [`at_clock`] does
/// the CXL link: the Cohet platform derives that path from the same
/// CXL-FPGA memory hit as the CXL link (§VI-B2), so it is the same device
/// cycles, and the paper scales its PCIe device models like its CXL ones
/// (PCIe-ASIC_sim, §VI-A2).
pub(crate) fn pcie_at_clock(platform: &Platform, clock_mhz: f64) -> Result<Platform, RunError> {
    if clock_mhz == CALIBRATED_CLOCK_MHZ {
        return Ok(platform.clone());
    }
    let scale = CALIBRATED_CLOCK_MHZ / clock_mhz;
    let overrides = ["root_complex", "pcie_link"]
        .iter()
        .flat_map(|type_name| platform.instances_of(type_name))
        .map(|(name, _)| param_scaled(platform, name, "latency_ns", scale))
        .collect::<Result<Vec<_>, _>>()?;
    platform
        .with_overrides(&overrides)
        .map_err(RunError::Config)
}

/// `platform` with the home's link lengthened by NUMA node `node`'s
/// distance from the root port beyond the root port's own node (unchanged
/// without an `snc_mesh` instance).
fn on_node(platform: &Platform, system: &str, node: u64) -> Result<Platform, RunError> {
    let meshes = platform.instances_of("snc_mesh");
    let Some((_, mesh)) = meshes.first() else {
        return Ok(platform.clone());
    };
    let extra = snc_one_way_ns(&mesh.params, node)
        - snc_one_way_ns(&mesh.params, mesh.params.uint("root_port_node"));
    if extra == 0.0 {
        return Ok(platform.clone());
    }
    let decl = platform.system(system).map_err(RunError::Config)?;
    let home = decl
        .agents
        .iter()
        .find(|a| a.role.as_deref() == Some("home"))
        .ok_or_else(|| werr(format!("system {system}: no agent plays the `home` role")))?;
    let link = decl
        .links
        .iter()
        .find(|l| l.a.0 == home.name || l.b.0 == home.name)
        .ok_or_else(|| werr(format!("system {system}: agent {} has no link", home.name)))?;
    let base = platform
        .component(&link.instance)
        .map_err(RunError::Config)?
        .params
        .float("latency_ns");
    platform
        .with_overrides(&[(
            format!("{}.latency_ns", link.instance),
            ParamValue::Float(base + extra),
        )])
        .map_err(RunError::Config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(p: &Platform, name: &str) -> f64 {
        p.component(name).unwrap().params.float("latency_ns")
    }

    /// At another clock the device's side scales, its DCOH and the CXL link
    /// it reaches the host over (and, for a PCIe device, the PCIe path);
    /// the host's own links keep their times.
    #[test]
    fn a_faster_device_clock_shortens_the_device_and_its_links_not_the_host() {
        let p = Platform::load("cohet").unwrap();
        let scale = CALIBRATED_CLOCK_MHZ / 1500.0;
        let fast = at_clock(&p, &["cxl"], 1500.0).unwrap();
        assert_eq!(latency(&fast, "cxl_link"), latency(&p, "cxl_link") * scale);
        assert_eq!(latency(&fast, "mesh_link"), latency(&p, "mesh_link"));
        let dcoh = |q: &Platform| q.component("dcoh").unwrap().params.float("access_ns");
        assert_eq!(dcoh(&fast), dcoh(&p) * scale);
        assert_eq!(latency(&fast, "pcie"), latency(&p, "pcie"));
        let pcie = pcie_at_clock(&p, 1500.0).unwrap();
        for name in ["pcie", "rc"] {
            assert_eq!(latency(&pcie, name), latency(&p, name) * scale, "{name}");
        }
        assert_eq!(latency(&pcie, "cxl_link"), latency(&p, "cxl_link"));
        // At the calibrated clock nothing changes.
        let same = at_clock(&p, &["cxl"], CALIBRATED_CLOCK_MHZ).unwrap();
        assert_eq!(latency(&same, "cxl_link"), latency(&p, "cxl_link"));
    }
}
