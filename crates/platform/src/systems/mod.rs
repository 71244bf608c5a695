//! Systems as data: the `[systems.<name>]` sections of a platform file, and
//! the builder that turns one into a runnable simulation.
//!
//! ```toml
//! [systems.random]
//! description = "Two caches, a directory and a DMA engine on a crossbar"
//! protocol = "msi-dma"                 # a shipped protocol spec or a path
//! line_bytes = { value = 64, from = "assumed: CXL's 64 B lines" }
//! agents = [                           # agent ids in this order
//!   { name = "cache0", instance = "cache", role = "cache" },
//!   { name = "dir", instance = "directory", role = "directory" },
//! ]
//! components = [{ name = "xbar", instance = "xbar" }]   # not agents: switches
//! links = [
//!   { a = "cache0.net", b = "xbar.p0", instance = "net" },
//!   { a = "dir.net", b = "xbar.p1", instance = "net" },
//! ]
//! ```
//!
//! Every `instance` names a component of the platform (`[components.cache]`,
//! type `table_agent`), whose parameters (with their provenance) the
//! built component takes; a link's instance is of type `protocol_link`, or
//! `cxl_flexbus` for the CXL link of a device that also speaks CXL.io, or
//! `ccix_vc_link` for a CCIX attachment whose VC0 carries regular PCIe
//! (then `a` is the device's end and `b` the host's; the link is a
//! component of the system, named after its instance, whose `io_host` and
//! `io_device` ports a workload wires to a root complex and a DMA engine,
//! or an ATS switch and an SMMU,
//! with [`Platform::build_attached`](crate::Platform::build_attached)).
//! Everything is checked when the platform loads: instances and their
//! types, roles against the protocol, endpoints against the types' ports,
//! each required port wired, each port wired once; errors name the path
//! (`systems.random.agents[1].role`) and the CLI exits 2.
//!
//! Two families of agents share this form:
//!
//! * **Table agents** ([`table`]): `table_agent` instances run any
//!   role-form protocol's tables, hang on one `protocol_switch` (or two of
//!   them link directly) over `protocol_link`s; the random tester drives
//!   them ([`Platform::build`](crate::Platform::build)).
//! * **Enzian agents** ([`eci`]): `coherent_cpu`, `directory_controller`
//!   (with `memory = "<coherent_bram or ddr_controller instance>"`),
//!   `cache_controller` and `cpu_home` run a two-node protocol (`eci-dc`,
//!   `eci-cc`, `invocation`) over `eci_link`s; the Enzian workloads drive
//!   them ([`Platform::coherent_system`](crate::Platform::coherent_system),
//!   [`Platform::cc_system`](crate::Platform::cc_system)). The role of an
//!   agent is the protocol's machine its type runs (`dc`, `cpu`, ...).

use std::collections::BTreeMap;
use std::sync::Arc;

use ccsim_coherence::agents::SystemRef;
use ccsim_coherence::Tables;
use ccsim_eci::assemble::AgentKind;
use ccsim_kernel::component::ComponentSpec;
use toml::{Table, Value};

use crate::error::{ConfigError, Result};
use crate::fields::{join, Fields};
use crate::platform::ComponentConfig;
use crate::value::describe;

pub mod eci;
pub mod table;

pub use eci::EciOptions;
pub use table::{Attach, BuildOptions, BuiltSystem};

/// A component of a system: a name in the system and the platform instance
/// whose type and parameters it takes; agents also name their role.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemNode {
    /// Name in the system (component path `system.<name>`).
    pub name: String,
    /// The platform's component instance.
    pub instance: String,
    /// The protocol role (agents only).
    pub role: Option<String>,
    /// The memory instance behind it (directory controllers only).
    pub memory: Option<String>,
    /// The `snc_mesh` instance whose LLC slices a table-agent home spreads
    /// its lines over (each request goes to its line's slice and back).
    pub slices: Option<String>,
    /// The protocol it runs, if not the system's (Enzian agents sharing
    /// links between two protocols).
    pub protocol: Option<String>,
}

/// A link between two `component.port` endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemLink {
    /// First endpoint: (system component name, port).
    pub a: (String, String),
    /// Second endpoint.
    pub b: (String, String),
    /// The `protocol_link` instance giving latency, bandwidth and credits.
    pub instance: String,
}

/// One `[systems.<name>]` section.
#[derive(Debug, Clone)]
pub struct SystemDecl {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// The protocol spec its agents run.
    pub protocol: String,
    /// Bytes per line.
    pub line_bytes: usize,
    /// Where `line_bytes` comes from.
    pub line_bytes_from: String,
    /// Bytes of a message header on the wire.
    pub header_bytes: u32,
    /// Where `header_bytes` comes from.
    pub header_bytes_from: String,
    /// Agents, in agent-id order.
    pub agents: Vec<SystemNode>,
    /// Other components (switches).
    pub components: Vec<SystemNode>,
    /// Links.
    pub links: Vec<SystemLink>,
    /// The protocol loaded for these agents (shared by every build).
    loaded: Loaded,
}

/// Which agents a system holds, with its protocol as they run it.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// Table agents: the protocol with the agents' roles.
    Table(SystemRef),
    /// Enzian agents: the two-node protocols' tables, the system's first,
    /// and the index of the one each agent runs (in agent order).
    Eci(EciProtocols),
}

/// The protocols of a system of Enzian agents.
#[derive(Debug, Clone)]
pub struct EciProtocols {
    /// Each protocol once, the system's first.
    pub tables: Vec<Arc<Tables>>,
    /// The protocol of each agent: an index into `tables`.
    pub of_agent: Vec<usize>,
}

/// A family of systems: its agents, and the types its links and its other
/// components (not agents) have.
struct Family {
    agents: &'static str,
    links: &'static [&'static str],
    components: &'static [&'static str],
}

/// Every type a link may have (which of them fits is the family's).
const LINK_TYPES: [&str; 5] = [
    "protocol_link",
    "cxl_flexbus",
    "ccix_vc_link",
    "eci_link",
    "eci_wire",
];

/// The family of table agents (`eci` false) or of Enzian agents.
fn family(eci: bool) -> Family {
    if eci {
        Family {
            agents:
                "Enzian agents (coherent_cpu, directory_controller, cache_controller, cpu_home)",
            links: &["eci_link", "eci_wire"],
            components: &["eci_mux"],
        }
    } else {
        Family {
            agents: "table agents",
            links: &["protocol_link", "cxl_flexbus", "ccix_vc_link"],
            components: &["protocol_switch"],
        }
    }
}

/// Instance `name` of `components` at build time (a platform's component
/// map is public, so a caller may have removed one since it loaded).
pub(crate) fn instance<'a>(
    components: &'a BTreeMap<String, ComponentConfig>,
    name: &str,
) -> std::result::Result<&'a ComponentConfig, String> {
    components
        .get(name)
        .ok_or_else(|| format!("the platform has no component `{name}`"))
}

/// A system's parts as parsed, for its family's own checks.
pub(crate) struct Declared<'a> {
    /// The platform file.
    pub file: &'a str,
    /// The section's path (`systems.random`).
    pub path: &'a str,
    /// The protocol it names.
    pub protocol: &'a str,
    /// Its agents.
    pub agents: &'a [SystemNode],
    /// Its other components.
    pub others: &'a [SystemNode],
    /// Its links.
    pub links: &'a [SystemLink],
    /// The platform's component instances.
    pub components: &'a BTreeMap<String, ComponentConfig>,
}

/// Parses and checks the `systems` table of a platform file.
pub(crate) fn parse_systems(
    file: &str,
    systems: &Table,
    components: &BTreeMap<String, ComponentConfig>,
) -> Result<BTreeMap<String, SystemDecl>> {
    let mut out = BTreeMap::new();
    for (name, value) in systems {
        let path = join("systems", name);
        let Value::Table(t) = value else {
            return Err(ConfigError::new(
                file,
                &path,
                format!("expected table, got {}", describe(value)),
            ));
        };
        let decl = parse_system(file, &path, name, t, components)?;
        out.insert(name.clone(), decl);
    }
    Ok(out)
}

fn parse_system(
    file: &str,
    path: &str,
    name: &str,
    t: &Table,
    components: &BTreeMap<String, ComponentConfig>,
) -> Result<SystemDecl> {
    let keys = [
        "description",
        "protocol",
        "line_bytes",
        "header_bytes",
        "agents",
        "components",
        "links",
    ];
    let mut f = Fields::with_keys(file, path, t, &keys)?;
    let description = f.req_str("description")?;
    let protocol = f.req_str("protocol")?;
    let (line_bytes, line_bytes_from) = provenanced(&mut f, "line_bytes")?
        .ok_or_else(|| f.err("line_bytes", "required key missing"))?;
    if ![32.0, 64.0, 128.0].contains(&line_bytes) {
        return Err(f.err(
            "line_bytes",
            format!("must be one of 32, 64, 128, got {line_bytes}"),
        ));
    }
    let header = provenanced(&mut f, "header_bytes")?;
    if let Some((h, _)) = &header {
        if !(0.0..=256.0).contains(h) || h.fract() != 0.0 {
            return Err(f.err(
                "header_bytes",
                format!("must be an integer in [0, 256], got {h}"),
            ));
        }
    }
    let agents = nodes(&mut f, "agents", true, components)?;
    let others = nodes(&mut f, "components", false, components)?;
    let links = links(&mut f, components)?;
    f.finish()?;

    // Names are unique; endpoints name a component and a port of its type,
    // each port wired once; every required port of an agent is wired.
    let mut types: BTreeMap<&str, &'static ComponentSpec> = BTreeMap::new();
    for (i, n) in agents.iter().chain(&others).enumerate() {
        if types.contains_key(n.name.as_str()) {
            let (list, k) = if i < agents.len() {
                ("agents", i)
            } else {
                ("components", i - agents.len())
            };
            return Err(ConfigError::new(
                file,
                format!("{path}.{list}[{k}].name"),
                format!("`{}` names two components of the system", n.name),
            ));
        }
        let type_name = &components[&n.instance].type_name;
        types.insert(
            &n.name,
            crate::lookup(type_name).expect("a loaded instance's type is registered"),
        );
    }
    // One family: every agent a table agent, or every agent an Enzian one;
    // links and other components of the family's types.
    let type_of = |instance: &str| components[instance].type_name.as_str();
    let eci = AgentKind::of_type(type_of(&agents[0].instance)).is_some();
    let fam = family(eci);
    let one_family = |list: &str, i: usize, instance: &str, want: &str| {
        ConfigError::new(
            file,
            format!("{path}.{list}[{i}].instance"),
            format!(
                "`{instance}` is a {}, but agents[0] makes this a system of {}, whose {list} are {want}; one system holds one family",
                type_of(instance),
                fam.agents
            ),
        )
    };
    for (i, a) in agents.iter().enumerate() {
        if AgentKind::of_type(type_of(&a.instance)).is_some() != eci {
            return Err(one_family("agents", i, &a.instance, fam.agents));
        }
    }
    for (i, l) in links.iter().enumerate() {
        if !fam.links.contains(&type_of(&l.instance)) {
            return Err(one_family("links", i, &l.instance, &fam.links.join(" or ")));
        }
    }
    for (i, n) in others.iter().enumerate() {
        if !fam.components.contains(&type_of(&n.instance)) {
            return Err(one_family(
                "components",
                i,
                &n.instance,
                &fam.components.join(" or "),
            ));
        }
    }
    let mut wired: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, l) in links.iter().enumerate() {
        for (key, (comp, port)) in [("a", &l.a), ("b", &l.b)] {
            let at = format!("{path}.links[{i}].{key}");
            let Some(spec) = types.get(comp.as_str()) else {
                return Err(ConfigError::new(
                    file,
                    at,
                    format!("no agent or component `{comp}` in this system"),
                ));
            };
            if spec.port_index(port).is_none() {
                let known: Vec<&str> = spec.ports.iter().map(|p| p.name).collect();
                return Err(ConfigError::new(
                    file,
                    at,
                    format!(
                        "{} `{comp}` has no port `{port}`; its ports are: {}",
                        spec.type_name,
                        known.join(", ")
                    ),
                ));
            }
            if let Some(first) = wired.insert((comp.clone(), port.clone()), i) {
                return Err(ConfigError::new(
                    file,
                    at,
                    format!("port `{comp}.{port}` is already wired by links[{first}]"),
                ));
            }
        }
    }
    for (i, a) in agents.iter().enumerate() {
        for port in types[a.name.as_str()].ports.iter().filter(|p| p.required) {
            if !wired.contains_key(&(a.name.clone(), port.name.to_string())) {
                return Err(ConfigError::new(
                    file,
                    format!("{path}.agents[{i}]"),
                    format!("agent `{}` has no link on its port `{}`", a.name, port.name),
                ));
            }
        }
    }
    // Enzian agents hold 128-byte lines and send ECI's 64-bit header.
    let (header_bytes, header_bytes_from) = if eci {
        eci::sizes((file, path), line_bytes, header)?
    } else {
        header.unwrap_or((16.0, "default: a 16-byte header".to_string()))
    };
    let declared = Declared {
        file,
        path,
        protocol: &protocol,
        agents: &agents,
        others: &others,
        links: &links,
        components,
    };
    let loaded = if eci {
        Loaded::Eci(eci::check(&declared)?)
    } else {
        let sizes = (line_bytes as usize, header_bytes as u32);
        Loaded::Table(table::check(&declared, sizes)?)
    };
    Ok(SystemDecl {
        name: name.to_string(),
        description,
        protocol,
        line_bytes: line_bytes as usize,
        line_bytes_from,
        header_bytes: header_bytes as u32,
        header_bytes_from,
        agents,
        components: others,
        links,
        loaded,
    })
}

/// The memory types, as "a, b or c".
fn memory_types() -> String {
    let (last, rest) = eci::MEMORY_TYPES.split_last().expect("memory types");
    format!("{} or {last}", rest.join(", "))
}

/// A number with its provenance, `{ value = 64, from = "..." }`, like every
/// parameter of a platform; `None` if `key` is absent.
fn provenanced(f: &mut Fields<'_>, key: &str) -> Result<Option<(f64, String)>> {
    let Some(v) = f.get(key) else {
        return Ok(None);
    };
    let Value::Table(t) = v else {
        return Err(f.err(
            key,
            format!(
                "expected {{ value = ..., from = \"<provenance>\" }}, got {}",
                describe(v)
            ),
        ));
    };
    let mut p = Fields::with_keys(f.file, join(&f.path, key), t, &["value", "from"])?;
    let value = p.req_f64("value")?;
    let from = p.req_str("from")?;
    if from.trim().is_empty() {
        return Err(p.err(
            "from",
            "a provenance names a paper section, figure or table, or says \"assumed\"",
        ));
    }
    p.finish()?;
    Ok(Some((value, from)))
}

/// The entries of array `key` (`list`), each a table, with its path
/// (`systems.random.links[3]`).
fn tables<'a>(f: &Fields<'_>, key: &str, list: &'a [Value]) -> Result<Vec<(String, &'a Table)>> {
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("{}.{key}[{i}]", f.path);
            match v {
                Value::Table(t) => Ok((at, t)),
                _ => Err(ConfigError::new(
                    f.file,
                    at,
                    format!("expected table, got {}", describe(v)),
                )),
            }
        })
        .collect()
}

fn nodes(
    f: &mut Fields<'_>,
    key: &str,
    agents: bool,
    components: &BTreeMap<String, ComponentConfig>,
) -> Result<Vec<SystemNode>> {
    // Agents are required; other components (switches) are optional.
    let list = match f.opt_array(key)? {
        Some(list) => list,
        None if agents => return Err(f.err(key, "required key missing")),
        None => return Ok(Vec::new()),
    };
    let mut out = Vec::new();
    for (at, t) in tables(f, key, list)? {
        let known: &[&str] = if agents {
            &["name", "instance", "role", "memory", "slices", "protocol"]
        } else {
            &["name", "instance"]
        };
        let mut n = Fields::with_keys(f.file, &at, t, known)?;
        let name = n.req_str("name")?;
        let instance = n.req_str("instance")?;
        let role = if agents {
            Some(n.req_str("role")?)
        } else {
            None
        };
        let memory = if agents { n.opt_str("memory")? } else { None };
        let slices = if agents { n.opt_str("slices")? } else { None };
        let protocol = if agents { n.opt_str("protocol")? } else { None };
        let (want, fits): (&str, fn(&str) -> bool) = if agents {
            (
                "table_agent or an Enzian agent (coherent_cpu, directory_controller, cache_controller, cpu_home)",
                |t| t == "table_agent" || AgentKind::of_type(t).is_some(),
            )
        } else {
            ("protocol_switch or eci_mux", |t| {
                t == "protocol_switch" || t == "eci_mux"
            })
        };
        let Some(c) = components.get(&instance) else {
            return Err(n.err(
                "instance",
                format!("the platform has no component `{instance}`"),
            ));
        };
        if !fits(&c.type_name) {
            return Err(n.err(
                "instance",
                format!(
                    "`{instance}` is a {}; {key} here must be of type {want}",
                    c.type_name
                ),
            ));
        }
        // Memory: behind a directory controller, of a memory type.
        let takes_memory = AgentKind::of_type(&c.type_name).is_some_and(AgentKind::takes_memory);
        // A table agent may name one (a home with a DRAM model behind it).
        let may_take_memory = takes_memory || c.type_name == "table_agent";
        match (&memory, may_take_memory) {
            (None, true) if takes_memory => {
                return Err(n.err(
                    "memory",
                    "required key missing: a directory_controller names its memory (a coherent_bram or ddr_controller instance)",
                ))
            }
            (Some(_), false) => {
                return Err(n.err(
                    "memory",
                    format!("a {} has no memory of its own; only a directory_controller or a table_agent takes one", c.type_name),
                ))
            }
            (Some(m), true) => match components.get(m) {
                Some(mc) if eci::MEMORY_TYPES.contains(&mc.type_name.as_str()) => {}
                Some(mc) => {
                    return Err(n.err(
                        "memory",
                        format!(
                            "`{m}` is a {}; a memory is a {}",
                            mc.type_name,
                            memory_types()
                        ),
                    ))
                }
                None => {
                    return Err(n.err("memory", format!("the platform has no component `{m}`")))
                }
            },
            (None, _) => {}
        }
        // Slices: a table agent's, naming an snc_mesh.
        if let Some(s) = &slices {
            if c.type_name != "table_agent" {
                return Err(n.err(
                    "slices",
                    format!(
                        "a {} has no LLC slices; only a table_agent home takes them",
                        c.type_name
                    ),
                ));
            }
            match components.get(s) {
                Some(sc) if sc.type_name == "snc_mesh" => {}
                Some(sc) => {
                    return Err(n.err(
                        "slices",
                        format!("`{s}` is a {}; slices come from an snc_mesh", sc.type_name),
                    ))
                }
                None => return Err(n.err("slices", format!("the platform has no component `{s}`"))),
            }
        }
        n.finish()?;
        out.push(SystemNode {
            name,
            instance,
            role,
            memory,
            slices,
            protocol,
        });
    }
    if out.is_empty() && agents {
        return Err(f.err(key, "a system needs at least one agent"));
    }
    Ok(out)
}

fn links(
    f: &mut Fields<'_>,
    components: &BTreeMap<String, ComponentConfig>,
) -> Result<Vec<SystemLink>> {
    let Some(list) = f.opt_array("links")? else {
        return Err(f.err("links", "required key missing"));
    };
    let mut out = Vec::new();
    for (at, t) in tables(f, "links", list)? {
        let mut n = Fields::with_keys(f.file, &at, t, &["a", "b", "instance"])?;
        let mut end = |key: &str| -> Result<(String, String)> {
            let s = n.req_str(key)?;
            match s.split_once('.') {
                Some((c, p)) if !c.is_empty() && !p.is_empty() => Ok((c.into(), p.into())),
                _ => Err(n.err(key, format!("expected `component.port`, got {s:?}"))),
            }
        };
        let a = end("a")?;
        let b = end("b")?;
        let instance = n.req_str("instance")?;
        // Which link type fits is the family's; checked once agents are known.
        match components.get(&instance) {
            Some(c) if LINK_TYPES.contains(&c.type_name.as_str()) => {}
            Some(c) => {
                return Err(n.err(
                    "instance",
                    format!(
                        "`{instance}` is a {}; a link must be a protocol_link, a cxl_flexbus, a ccix_vc_link, an eci_link or an eci_wire",
                        c.type_name
                    ),
                ))
            }
            None => {
                return Err(n.err(
                    "instance",
                    format!("the platform has no component `{instance}`"),
                ))
            }
        }
        n.finish()?;
        out.push(SystemLink { a, b, instance });
    }
    Ok(out)
}

impl SystemDecl {
    /// The protocol as its agents run it (loaded and checked when the
    /// platform loaded).
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    /// Whether its agents are Enzian agents (else table agents).
    pub fn is_eci(&self) -> bool {
        matches!(self.loaded, Loaded::Eci(_))
    }
}

/// Equal declarations: the loaded protocol follows from the fields.
impl PartialEq for SystemDecl {
    fn eq(&self, o: &Self) -> bool {
        fn texts(d: &SystemDecl) -> [&String; 5] {
            let from = [&d.line_bytes_from, &d.header_bytes_from];
            [&d.name, &d.description, &d.protocol, from[0], from[1]]
        }
        (self.line_bytes, self.header_bytes) == (o.line_bytes, o.header_bytes)
            && texts(self) == texts(o)
            && (&self.agents, &self.components, &self.links) == (&o.agents, &o.components, &o.links)
    }
}
