//! Systems of Enzian agents: `coherent_cpu`, `directory_controller`,
//! `cache_controller` and `cpu_home` running a two-node protocol over
//! `eci_link`s, assembled by [`ccsim_eci::assemble`].
//!
//! ```toml
//! [systems.dc_bram]
//! description = "The ThunderX-1 LLC and the FPGA's DC with BRAM, over ECI"
//! protocol = "eci-dc"
//! line_bytes = { value = 128, from = "CCKit §4: 128 B lines" }
//! agents = [
//!   { name = "cpu", instance = "llc", role = "cpu" },
//!   { name = "dc", instance = "dc", role = "dc", memory = "dc_bram" },
//! ]
//! links = [
//!   { a = "cpu.eci0", b = "dc.eci0", instance = "eci" },
//!   { a = "cpu.eci1", b = "dc.eci1", instance = "eci" },
//! ]
//! ```
//!
//! A workload builds a system by name with [`EciOptions`]: the seed and
//! trace, and what the workload itself changes for its run (another
//! instance of the same type for an agent, as the whole-chip CPU for the
//! streaming workload; a parameter it sweeps or pins, each with its reason).

use std::collections::BTreeMap;

use ccsim_coherence::memory::{Bram, Ddr, MemTiming};
use ccsim_coherence::Tables;
use ccsim_coherence::LINE_BYTES;
use ccsim_eci::assemble::{
    assemble, AgentKind, AgentPlan, Assembled, LinkPlan, MuxPlan, SystemPlan,
};
use ccsim_eci::link::{EciLink, HEADER_BYTES};
use ccsim_kernel::prelude::*;

use super::{instance, Declared, EciProtocols, Loaded, SystemDecl, SystemLink};
use crate::error::{ConfigError, Result};
use crate::platform::ComponentConfig;

/// Component types that can stand behind a directory controller.
pub const MEMORY_TYPES: [&str; 3] = ["coherent_bram", "ddr_controller", "ddr5_controller"];

/// The workloads that run systems of Enzian agents (for messages).
pub const WORKLOADS: &str =
    "coherent_read, coherent_stream, clean_invalidate, shared_table, prefetch_read, coherent_invoke, cc_invoke, nic_loopback, random_test";

/// The Enzian family's rules at load: every ECI link the same `eci_link`
/// instance (the agents map lines to links by it); each protocol loads as
/// a two-node protocol (the system's, and any an agent names); each
/// agent's role is the machine its type runs in its protocol; muxes join
/// an FPGA-homed and a CPU-homed protocol. The system's protocol comes
/// first in the result.
pub(super) fn check(d: &Declared<'_>) -> Result<EciProtocols> {
    let (file, path) = (d.file, d.path);
    let is_eci_link = |l: &&SystemLink| d.components[&l.instance].type_name == "eci_link";
    let Some(first) = d.links.iter().find(is_eci_link) else {
        return Err(ConfigError::new(
            file,
            format!("{path}.links"),
            "Enzian agents talk over ECI: at least one link is an eci_link",
        ));
    };
    for (i, l) in d.links.iter().enumerate() {
        if is_eci_link(&l) && l.instance != first.instance {
            return Err(ConfigError::new(
                file,
                format!("{path}.links[{i}].instance"),
                format!(
                    "`{}` differs from the first eci_link's `{}`: the agents map lines to links by one eci_link",
                    l.instance, first.instance
                ),
            ));
        }
    }
    // Each protocol loaded once, by the name or path the file gives.
    let mut names = vec![d.protocol.to_string()];
    let mut tables = vec![Tables::load(d.protocol)
        .map_err(|e| ConfigError::new(file, format!("{path}.protocol"), e))?];
    let mut of_agent = Vec::with_capacity(d.agents.len());
    for (i, a) in d.agents.iter().enumerate() {
        let name = a.protocol.as_deref().unwrap_or(d.protocol);
        let k = match names.iter().position(|n| n == name) {
            Some(k) => k,
            None => {
                let at = format!("{path}.agents[{i}].protocol");
                tables.push(Tables::load(name).map_err(|e| ConfigError::new(file, at, e))?);
                names.push(name.to_string());
                tables.len() - 1
            }
        };
        of_agent.push(k);
        let t = &tables[k];
        let type_name = &d.components[&a.instance].type_name;
        let kind = AgentKind::of_type(type_name).expect("the family check found Enzian agents");
        let role = kind
            .role_in(t)
            .map_err(|e| ConfigError::new(file, format!("{path}.agents[{i}].instance"), e))?;
        let machine = t.agent(role);
        if a.role.as_deref() != Some(machine) {
            return Err(ConfigError::new(
                file,
                format!("{path}.agents[{i}].role"),
                format!(
                    "a {type_name} runs the `{machine}` machine of {}, not `{}`",
                    t.ir.name,
                    a.role.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    let homes = |fpga: bool| tables.iter().filter(|t| t.fpga_homed() == fpga).count();
    if !d.others.is_empty() && (homes(true), homes(false)) != (1, 1) {
        return Err(ConfigError::new(
            file,
            format!("{path}.components[0]"),
            "an eci_mux joins one FPGA-homed and one CPU-homed protocol on the same links; the agents run other protocols",
        ));
    }
    Ok(EciProtocols { tables, of_agent })
}

/// The header size of a system of Enzian agents, given its `line_bytes`
/// and the `header_bytes` it declares, if any: the agents are built for
/// 128-byte lines and ECI's 64-bit header, so a system says so or is
/// refused.
pub(super) fn sizes(
    (file, path): (&str, &str),
    line_bytes: f64,
    header: Option<(f64, String)>,
) -> Result<(f64, String)> {
    if line_bytes != LINE_BYTES as f64 {
        return Err(ConfigError::new(
            file,
            format!("{path}.line_bytes"),
            format!("Enzian agents hold {LINE_BYTES}-byte lines, got {line_bytes}"),
        ));
    }
    match header {
        Some((h, _)) if h != HEADER_BYTES as f64 => Err(ConfigError::new(
            file,
            format!("{path}.header_bytes"),
            format!("Enzian agents send ECI's {HEADER_BYTES}-byte header, got {h}"),
        )),
        Some(h) => Ok(h),
        None => Ok((
            HEADER_BYTES as f64,
            "CCKit §4: ECI's 64-bit message header (eci_link)".to_string(),
        )),
    }
}

/// A parameter a workload sets for its run, with its reason.
#[derive(Debug, Clone)]
pub struct Setting {
    /// An agent's name, or `links` for the system's ECI link.
    pub node: String,
    /// The parameter.
    pub key: String,
    /// Its value.
    pub value: ParamValue,
    /// Why (the provenance the run records).
    pub why: String,
}

/// How to build a system of Enzian agents.
#[derive(Debug, Clone)]
pub struct EciOptions {
    /// Seed of every random stream.
    pub seed: u64,
    /// Message trace.
    pub trace: TraceMode,
    /// (agent, instance): the agent takes this instance of its type instead.
    pub instances: Vec<(String, String)>,
    /// Parameters set on top of the instances'.
    pub settings: Vec<Setting>,
}

impl EciOptions {
    /// The system as declared, with `seed` and `trace`.
    pub fn new(seed: u64, trace: TraceMode) -> EciOptions {
        EciOptions {
            seed,
            trace,
            instances: Vec::new(),
            settings: Vec::new(),
        }
    }

    /// Runs agent `agent` on instance `instance` (of the same type).
    pub fn instance(mut self, agent: &str, instance: &str) -> EciOptions {
        self.instances.push((agent.into(), instance.into()));
        self
    }

    /// Sets `key` of `node` (an agent, or `links`) to `value` because `why`.
    pub fn set(mut self, node: &str, key: &str, value: ParamValue, why: &str) -> EciOptions {
        self.settings.push(Setting {
            node: node.into(),
            key: key.into(),
            value,
            why: why.into(),
        });
        self
    }
}

/// Assembles system `decl` (of Enzian agents) from the platform's
/// `components` with `opts`.
pub(crate) fn build(
    decl: &SystemDecl,
    components: &BTreeMap<String, ComponentConfig>,
    opts: &EciOptions,
) -> std::result::Result<Assembled, String> {
    let Loaded::Eci(protocols) = decl.loaded() else {
        return Err(
            "a system of table agents; the Enzian workloads run systems of Enzian agents (coherent_cpu, directory_controller, cache_controller, cpu_home)"
                .into(),
        );
    };
    let get = |name: &str| instance(components, name);
    // An agent's instance: as declared, or the workload's swap of one type.
    let instance_of = |agent: &str, declared: &str| -> std::result::Result<String, String> {
        let declared_type = &get(declared)?.type_name;
        let Some((_, swap)) = opts.instances.iter().rev().find(|(a, _)| a == agent) else {
            return Ok(declared.to_string());
        };
        let swap_type = &get(swap)?.type_name;
        if swap_type != declared_type {
            return Err(format!(
                "agent `{agent}` is a {declared_type}; instance `{swap}` is a {swap_type}"
            ));
        }
        Ok(swap.clone())
    };
    for (agent, _) in &opts.instances {
        if !decl.agents.iter().any(|a| &a.name == agent) {
            return Err(format!("no agent `{agent}` in system {}", decl.name));
        }
    }
    // Each node's parameters: its instance's, then the workload's settings.
    let mut params: BTreeMap<&str, Params> = BTreeMap::new();
    for a in &decl.agents {
        let instance = instance_of(&a.name, &a.instance)?;
        params.insert(&a.name, get(&instance)?.params.clone());
    }
    let is_wire = |l: &SystemLink| -> std::result::Result<bool, String> {
        Ok(get(&l.instance)?.type_name == "eci_wire")
    };
    let mut eci_link = None;
    for l in &decl.links {
        if !is_wire(l)? {
            eci_link.get_or_insert(&l.instance);
        }
    }
    let eci_link = eci_link.ok_or("no eci_link among the links")?;
    params.insert("links", get(eci_link)?.params.clone());
    for s in &opts.settings {
        let p = params.get_mut(s.node.as_str()).ok_or_else(|| {
            format!(
                "no agent `{}` in system {} (nor `links`) to set {} on",
                s.node, decl.name, s.key
            )
        })?;
        p.set(&s.key, s.value.clone(), &s.why);
    }
    let link = EciLink::from_params(&params["links"])?;
    let checks = decl.agents.iter().all(|a| {
        params[a.name.as_str()].get("checks").map(|(v, _)| v) != Some(&ParamValue::Bool(false))
    });
    let mut agents = Vec::with_capacity(decl.agents.len());
    for (a, &protocol) in decl.agents.iter().zip(&protocols.of_agent) {
        let type_name = &get(&a.instance)?.type_name;
        let kind = AgentKind::of_type(type_name)
            .ok_or_else(|| format!("agent `{}` is a {type_name}, not an Enzian agent", a.name))?;
        let memory = match &a.memory {
            Some(m) => Some(memory_timing(get(m)?)?),
            None => None,
        };
        agents.push(AgentPlan {
            name: &a.name,
            kind,
            params: &params[a.name.as_str()],
            memory,
            protocol,
        });
    }
    // Nodes: the agents, then the muxes.
    let nodes: Vec<&str> = decl
        .agents
        .iter()
        .chain(&decl.components)
        .map(|n| n.name.as_str())
        .collect();
    let index = |name: &str| nodes.iter().position(|n| *n == name);
    let links = decl
        .links
        .iter()
        .map(|l| {
            Ok(LinkPlan {
                a: node_end(&l.a, index)?,
                b: node_end(&l.b, index)?,
                wire: is_wire(l)?,
            })
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    let muxes = decl
        .components
        .iter()
        .map(|n| MuxPlan { name: &n.name })
        .collect();
    assemble(SystemPlan {
        agents,
        muxes,
        links,
        link,
        protocols: protocols.tables.clone(),
        checks,
        seed: opts.seed,
        trace: opts.trace,
    })
}

/// A link end `(component, port)` as (node index, port).
fn node_end(
    (c, port): &(String, String),
    index: impl Fn(&str) -> Option<usize>,
) -> std::result::Result<(usize, &str), String> {
    index(c)
        .map(|i| (i, port.as_str()))
        .ok_or_else(|| format!("link end `{c}.{port}` is not in the system"))
}

/// The timing of a memory instance (`coherent_bram`, `ddr_controller` or
/// `ddr5_controller`).
pub(crate) fn memory_timing(c: &ComponentConfig) -> std::result::Result<MemTiming, String> {
    match c.type_name.as_str() {
        "coherent_bram" => Ok(MemTiming::Bram(Bram::from_params(&c.params)?)),
        "ddr_controller" => Ok(MemTiming::Ddr(Ddr::from_params(&c.params)?)),
        "ddr5_controller" => Ok(MemTiming::Ddr(Ddr::from_ddr5_params(&c.params)?)),
        other => Err(format!(
            "a {other} is not a memory ({})",
            MEMORY_TYPES.join(", ")
        )),
    }
}

/// A wrapper for errors of a build, at the system's path.
pub(crate) fn at_system(source: &str, name: &str, e: String) -> ConfigError {
    ConfigError::new(source, format!("systems.{name}"), e)
}
