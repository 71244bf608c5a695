//! Systems of table agents: `table_agent` instances running any role-form
//! protocol's tables, on one `protocol_switch` over `protocol_link`s, on two
//! switches joined by one link (a host mesh and a device crossbar), or two
//! agents linked directly; driven by the random tester or a workload's
//! programs.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use ccsim_coherence::agents::{
    link_params, InvariantChecker, ProtocolSwitch, ProtocolSystem, SlicePlacement, SystemRef,
    TableAgent, TesterParams, PROTOCOL_SWITCH,
};
use ccsim_coherence::Msg;
use ccsim_kernel::prelude::*;
use ccsim_pcie::ccix_link::{self, CcixVcLink};
use ccsim_pcie::flexbus::{cachemem_wire, FlexBus};
use ccsim_pcie::tlp::{Generation, LinkConfig};

use super::{instance, Declared, Loaded, SystemDecl, SystemLink};
use crate::error::{ConfigError, Result};
use crate::platform::ComponentConfig;

/// The table family's rules at load: one switch or two joined ones, direct links only between
/// the two agents of a switchless system, and the protocol knows every
/// agent's role (loaded once, here). `sizes` = (line, header) bytes.
pub(super) fn check(d: &Declared<'_>, sizes: (usize, u32)) -> Result<SystemRef> {
    let (file, path, agents) = (d.file, d.path, d.agents);
    if let Some(i) = agents.iter().position(|a| a.protocol.is_some()) {
        return Err(ConfigError::new(
            file,
            format!("{path}.agents[{i}].protocol"),
            "table agents all run the system's protocol",
        ));
    }
    // The network: one switch every agent hangs on, two switches joined by
    // one link (a host mesh and a device crossbar, each routing the other's
    // agents over that link), or two agents linked directly.
    let is_switch = |c: &str| d.others.iter().any(|n| n.name == c);
    let joins = d
        .links
        .iter()
        .filter(|l| is_switch(&l.a.0) && is_switch(&l.b.0))
        .count();
    if d.others.len() > 2 || (d.others.len() == 2 && joins != 1) {
        return Err(ConfigError::new(
            file,
            format!("{path}.components[{}]", d.others.len() - 1),
            "at most two switches per system, joined by exactly one link (every agent hangs on one of them)",
        ));
    }
    let is_agent = |c: &str| agents.iter().any(|a| a.name == c);
    // A CXL flexbus or a CCIX VC link is a component of its own (named
    // after its instance): one link per instance, its `a` end an agent
    // (the device).
    let is_component_link = |l: &SystemLink| {
        d.components
            .get(&l.instance)
            .is_some_and(|c| COMPONENT_LINKS.contains(&c.type_name.as_str()))
    };
    for (i, l) in d.links.iter().enumerate() {
        if !is_component_link(l) {
            continue;
        }
        let kind = &d.components[&l.instance].type_name;
        if let Some(j) = d.links[..i].iter().position(|o| o.instance == l.instance) {
            return Err(ConfigError::new(
                file,
                format!("{path}.links[{i}].instance"),
                format!(
                    "`{}` is a {kind}, one link, already used by links[{j}]",
                    l.instance
                ),
            ));
        }
        if !is_agent(&l.a.0) {
            return Err(ConfigError::new(
                file,
                format!("{path}.links[{i}].a"),
                format!(
                    "a {kind} link's `a` end is the device's agent, but `{}` is not an agent",
                    l.a.0
                ),
            ));
        }
        if agents.iter().any(|a| a.name == l.instance)
            || d.others.iter().any(|o| o.name == l.instance)
        {
            return Err(ConfigError::new(
                file,
                format!("{path}.links[{i}].instance"),
                format!("the {kind} is named after its instance, `{}`, which names another component of the system", l.instance),
            ));
        }
    }
    for (i, l) in d.links.iter().enumerate() {
        if is_agent(&l.a.0) && is_agent(&l.b.0) && (agents.len() != 2 || !d.others.is_empty()) {
            return Err(ConfigError::new(
                file,
                format!("{path}.links[{i}]"),
                format!(
                    "links agents `{}` and `{}` directly: only a system of two agents and no switch may (the others reach each other through the switch)",
                    l.a.0, l.b.0
                ),
            ));
        }
    }
    let roles = agents
        .iter()
        .map(|a| (a.name.clone(), a.role.clone().unwrap_or_default()))
        .collect();
    match ProtocolSystem::new(d.protocol, roles, sizes.0, sizes.1) {
        Ok(sys) => {
            // A memory model times the accesses of the agent where the
            // line's memory lives: the home, or a memory-side role (one
            // instance that holds the line in every state, as a type-2
            // device's DCOH in front of its own DRAM, cxl-type2.toml).
            let ir = &sys.protocol.ir;
            let home = &ir.roles[sys.protocol.home].role;
            let memory_side = |role: &str| {
                role == home.as_str()
                    || ir.roles.iter().any(|m| {
                        m.role == role
                            && !m.multiple
                            && m.data == ccsim_protocol::ir::DataHome::Copy
                            && m.states.iter().all(|s| s.holds_data)
                    })
            };
            let misplaced = agents.iter().position(|a| {
                a.memory.is_some() && !memory_side(a.role.as_deref().unwrap_or_default())
            });
            if let Some(i) = misplaced {
                return Err(ConfigError::new(
                    file,
                    format!("{path}.agents[{i}].memory"),
                    format!("only the protocol's home (role `{home}`) or a memory-side role (one instance, holding the line in every state) has a memory behind it"),
                ));
            }
            // LLC slices are where a home's lines live on the host's mesh.
            if let Some(i) = agents
                .iter()
                .position(|a| a.slices.is_some() && a.role.as_deref() != Some(home.as_str()))
            {
                return Err(ConfigError::new(
                    file,
                    format!("{path}.agents[{i}].slices"),
                    format!("only the protocol's home (role `{home}`) spreads its lines over LLC slices"),
                ));
            }
            Ok(Arc::new(sys))
        }
        Err(e) => {
            let at = match agents
                .iter()
                .position(|a| e.starts_with(&format!("agent `{}`", a.name)))
            {
                Some(i) => format!("{path}.agents[{i}].role"),
                None => format!("{path}.protocol"),
            };
            Err(ConfigError::new(file, at, e))
        }
    }
}

/// The type of a CXL link that is a component (see [`build_with`]).
const FLEXBUS: &str = "cxl_flexbus";
/// The type of a CCIX attachment that is a component: VC1 carries the
/// system's messages, VC0 regular PCIe (ATS, DMA).
const CCIX_VC_LINK: &str = "ccix_vc_link";
/// Link types that are components of the system.
const COMPONENT_LINKS: [&str; 2] = [FLEXBUS, CCIX_VC_LINK];

/// What a workload adds to a system before it is built: more components,
/// wired to the system's named components (the flexbus's `io_*` ports).
pub type Attach<'a> = &'a mut dyn FnMut(
    &mut SystemBuilder<Msg>,
    &BTreeMap<String, ComponentId>,
) -> std::result::Result<(), String>;

/// How to build a system.
#[derive(Debug, Clone, Copy)]
pub struct BuildOptions {
    /// Seed of every random stream.
    pub seed: u64,
    /// Message trace.
    pub trace: TraceMode,
    /// Check the invariants on every row.
    pub checks: bool,
    /// A random tester on every agent whose role has local events.
    pub tester: Option<TesterParams>,
}

/// A built system, ready to run.
pub struct BuiltSystem {
    /// The simulation.
    pub sim: Simulation<Msg>,
    /// The protocol and agents.
    pub protocol: SystemRef,
    /// Each agent's component, by agent id.
    pub agents: Vec<ComponentId>,
    /// The online checker and the read/write log.
    pub checker: Rc<RefCell<InvariantChecker>>,
    /// Every named component (agents, switches, CXL flexbus and CCIX VC
    /// links).
    pub components: BTreeMap<String, ComponentId>,
}

impl BuiltSystem {
    /// Agent `id`'s component.
    pub fn agent(&self, id: usize) -> &TableAgent {
        self.sim
            .component::<TableAgent>(self.agents[id])
            .expect("agents are table agents")
    }

    /// Agent `id`'s component, to give it a program or warm its lines
    /// before the run.
    pub fn agent_mut(&mut self, id: usize) -> &mut TableAgent {
        self.sim
            .component_mut::<TableAgent>(self.agents[id])
            .expect("agents are table agents")
    }

    /// The agent named `name`.
    pub fn agent_id(&self, name: &str) -> Option<usize> {
        self.protocol.agents.iter().position(|a| a.name == name)
    }
}

/// Builds system `decl` (of table agents) from the platform's `components`.
pub(crate) fn build(
    decl: &SystemDecl,
    components: &BTreeMap<String, ComponentConfig>,
    opts: BuildOptions,
) -> std::result::Result<BuiltSystem, String> {
    let Loaded::Table(sys) = decl.loaded() else {
        return Err(format!(
            "a system of Enzian agents, built by Platform::coherent_system, cc_system or shared_system (the Enzian workloads and the random tester on eci-dc systems: {}); this builder takes table agents",
            super::eci::WORKLOADS
        ));
    };
    build_with(decl, sys.clone(), components, opts, None)
}

/// [`build`] with the agents running `sys` (the declared protocol, or a
/// variant of it with the same roles and messages).
pub(crate) fn build_with(
    decl: &SystemDecl,
    sys: SystemRef,
    components: &BTreeMap<String, ComponentConfig>,
    opts: BuildOptions,
    attach: Option<Attach<'_>>,
) -> std::result::Result<BuiltSystem, String> {
    let mut checker = InvariantChecker::new(sys.clone(), opts.checks);
    // The read/write log is what the random tester replays against its
    // sequential reference; a run without a tester has no use for it.
    checker.keep_log = opts.tester.is_some();
    let checker = Rc::new(RefCell::new(checker));
    let mut b = SystemBuilder::<Msg>::new("system", opts.seed);
    b.trace(opts.trace);
    let mut ids: BTreeMap<&str, ComponentId> = BTreeMap::new();
    let mut agents = Vec::new();
    for (i, a) in decl.agents.iter().enumerate() {
        let params = &instance(components, &a.instance)?.params;
        let mut agent =
            TableAgent::new(sys.clone(), i as u16, params, checker.clone(), opts.tester);
        if let Some(m) = &a.memory {
            agent.set_memory_timing(super::eci::memory_timing(instance(components, m)?)?);
        }
        if let Some(s) = &a.slices {
            if let Some(p) = SlicePlacement::from_params(&instance(components, s)?.params) {
                agent.set_slice_placement(p);
            }
        }
        let id = b.add(&a.name, agent);
        ids.insert(&a.name, id);
        agents.push(id);
    }
    for n in &decl.components {
        let params = &instance(components, &n.instance)?.params;
        // A switch reaches an agent by the port of the link that ends at
        // the agent's `net` (direct links only).
        let mut route = vec![None; decl.agents.len()];
        for l in &decl.links {
            for (me, other) in [(&l.a, &l.b), (&l.b, &l.a)] {
                if me.0 == n.name {
                    if let Some(ai) = decl.agents.iter().position(|a| a.name == other.0) {
                        route[ai] = PROTOCOL_SWITCH.port_index(&me.1);
                    }
                }
            }
        }
        // Agents on the other switch are reached over the link between the
        // two switches.
        let to_other = decl.links.iter().find_map(|l| {
            let other_switch = |c: &str| c != n.name && decl.components.iter().any(|o| o.name == c);
            if l.a.0 == n.name && other_switch(&l.b.0) {
                PROTOCOL_SWITCH.port_index(&l.a.1)
            } else if l.b.0 == n.name && other_switch(&l.a.0) {
                PROTOCOL_SWITCH.port_index(&l.b.1)
            } else {
                None
            }
        });
        for r in route.iter_mut().filter(|r| r.is_none()) {
            *r = to_other;
        }
        let switch = ProtocolSwitch::new(&n.name, params, sys.clone(), route);
        ids.insert(&n.name, b.add(&n.name, switch));
    }
    for l in &decl.links {
        let link_instance = instance(components, &l.instance)?;
        let (a, b_end) = (ids[l.a.0.as_str()], ids[l.b.0.as_str()]);
        if link_instance.type_name == FLEXBUS {
            // The CXL link is a component between the device's agent and
            // the host side; its CXL.io ports are the workload's to wire.
            let mut bus = FlexBus::from_params(&link_instance.params, io_config(components)?)
                .map_err(|e| format!("{}: {e}", l.instance))?;
            bus.set_cachemem(sys.clone(), sys.protocol.ir.name.starts_with("cxl-mem"));
            let id = b.add(&l.instance, bus);
            b.connect(a, &l.a.1, id, "cachemem_device", cachemem_wire());
            b.connect(id, "cachemem_host", b_end, &l.b.1, cachemem_wire());
            ids.insert(&l.instance, id);
            continue;
        }
        if link_instance.type_name == CCIX_VC_LINK {
            // The CCIX attachment: the coherent messages on VC1 between the
            // device's agent and the host side; its VC0 (`io_*`) ports are
            // the workload's to wire (ATS, DMA).
            let mut link = CcixVcLink::from_params(&link_instance.params)
                .map_err(|e| format!("{}: {e}", l.instance))?;
            link.set_protocol(sys.clone());
            let id = b.add(&l.instance, link);
            b.connect(a, &l.a.1, id, "ccix_device", ccix_link::port_wire());
            b.connect(id, "ccix_host", b_end, &l.b.1, ccix_link::port_wire());
            ids.insert(&l.instance, id);
            continue;
        }
        let p = link_params(&link_instance.params);
        let link = b.connect(a, &l.a.1, b_end, &l.b.1, p);
        b.name_link(link, &format!("{}--{}", l.a.0, l.b.0));
    }
    let named: BTreeMap<String, ComponentId> =
        ids.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    if let Some(attach) = attach {
        attach(&mut b, &named)?;
    }
    let sim = b.build().map_err(|e| e.to_string())?;
    Ok(BuiltSystem {
        sim,
        protocol: sys,
        agents,
        checker,
        components: named,
    })
}

/// The PCIe transaction layer's configuration CXL.io TLPs follow on a
/// flexbus (MPS, MRRS, RCB, ECRC, ACK and UpdateFC rates): the platform's
/// only `pcie_link`'s, or PCIe 5.0 x16 defaults without one.
fn io_config(
    components: &BTreeMap<String, ComponentConfig>,
) -> std::result::Result<LinkConfig, String> {
    let mut links = components.values().filter(|c| c.type_name == "pcie_link");
    match (links.next(), links.next()) {
        (Some(c), None) => ccsim_pcie::link::link_config(&c.params),
        (None, _) => Ok(LinkConfig::new(Generation::Gen5, 16)),
        (Some(_), Some(_)) => Err(
            "a cxl_flexbus takes its CXL.io sizes (MPS, MRRS, RCB) from the platform's pcie_link, but it has several".to_string(),
        ),
    }
}
