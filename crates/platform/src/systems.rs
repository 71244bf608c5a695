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
//! built component takes; a link's instance is of type `protocol_link`.
//! Everything is checked when the platform loads: instances and their
//! types, roles against the protocol, endpoints against the types' ports,
//! each port wired once; errors name the path
//! (`systems.random.agents[1].role`) and the CLI exits 2.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use ccsim_coherence::agents::{
    link_params, InvariantChecker, ProtocolSwitch, ProtocolSystem, SystemRef, TableAgent,
    TesterParams, PROTOCOL_SWITCH,
};
use ccsim_coherence::Msg;
use ccsim_kernel::component::ComponentSpec;
use ccsim_kernel::prelude::*;
use toml::{Table, Value};

use crate::error::{ConfigError, Result};
use crate::fields::{join, Fields};
use crate::platform::ComponentConfig;
use crate::value::describe;

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
    loaded: SystemRef,
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
    let (header_bytes, header_bytes_from) = provenanced(&mut f, "header_bytes")?
        .unwrap_or((16.0, "default: a 16-byte header".to_string()));
    if !(0.0..=256.0).contains(&header_bytes) || header_bytes.fract() != 0.0 {
        return Err(f.err(
            "header_bytes",
            format!("must be an integer in [0, 256], got {header_bytes}"),
        ));
    }
    let agents = nodes(&mut f, "agents", true, components)?;
    let others = nodes(&mut f, "components", false, components)?;
    let links = links(&mut f, components)?;
    f.finish()?;

    // Names are unique; endpoints name a component and a port of its type,
    // each port wired once; every agent's `net` is wired.
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
        if !wired.contains_key(&(a.name.clone(), "net".to_string())) {
            return Err(ConfigError::new(
                file,
                format!("{path}.agents[{i}]"),
                format!("agent `{}` has no link on its port `net`", a.name),
            ));
        }
    }
    // The network: one switch every agent hangs on, or two agents linked
    // directly (a switch routes by destination; switches do not route to
    // each other).
    if others.len() > 1 {
        return Err(ConfigError::new(
            file,
            format!("{path}.components[1]"),
            "one switch per system: every agent hangs on it (switch-to-switch routing is not modelled)",
        ));
    }
    let is_agent = |c: &str| agents.iter().any(|a| a.name == c);
    for (i, l) in links.iter().enumerate() {
        if is_agent(&l.a.0) && is_agent(&l.b.0) && (agents.len() != 2 || !others.is_empty()) {
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
    // The protocol loads and knows every role: loaded once, here.
    let roles = agents
        .iter()
        .map(|a| (a.name.clone(), a.role.clone().unwrap_or_default()))
        .collect();
    let loaded =
        match ProtocolSystem::new(&protocol, roles, line_bytes as usize, header_bytes as u32) {
            Ok(sys) => Arc::new(sys),
            Err(e) => {
                let at = match agents
                    .iter()
                    .position(|a| e.starts_with(&format!("agent `{}`", a.name)))
                {
                    Some(i) => format!("{path}.agents[{i}].role"),
                    None => format!("{path}.protocol"),
                };
                return Err(ConfigError::new(file, at, e));
            }
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
            &["name", "instance", "role"]
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
        let want = if agents {
            "table_agent"
        } else {
            "protocol_switch"
        };
        match components.get(&instance) {
            None => {
                return Err(n.err(
                    "instance",
                    format!("the platform has no component `{instance}`"),
                ))
            }
            Some(c) if c.type_name != want => {
                return Err(n.err(
                    "instance",
                    format!(
                        "`{instance}` is a {}; {key} here must be of type {want}",
                        c.type_name
                    ),
                ))
            }
            Some(_) => {}
        }
        n.finish()?;
        out.push(SystemNode {
            name,
            instance,
            role,
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
        match components.get(&instance) {
            Some(c) if c.type_name == "protocol_link" => {}
            Some(c) => {
                return Err(n.err(
                    "instance",
                    format!(
                        "`{instance}` is a {}; a link must be a protocol_link",
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
    /// The protocol and agents this system declares (loaded and checked
    /// when the platform loaded).
    pub fn protocol_system(&self) -> &SystemRef {
        &self.loaded
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
}

impl BuiltSystem {
    /// Agent `id`'s component.
    pub fn agent(&self, id: usize) -> &TableAgent {
        self.sim
            .component::<TableAgent>(self.agents[id])
            .expect("agents are table agents")
    }
}

/// Builds system `decl` from the platform's `components`.
pub(crate) fn build(
    decl: &SystemDecl,
    components: &BTreeMap<String, ComponentConfig>,
    opts: BuildOptions,
) -> std::result::Result<BuiltSystem, String> {
    let sys = decl.protocol_system().clone();
    let checker = Rc::new(RefCell::new(InvariantChecker::new(
        sys.clone(),
        opts.checks,
    )));
    let mut b = SystemBuilder::<Msg>::new("system", opts.seed);
    b.trace(opts.trace);
    let mut ids: BTreeMap<&str, ComponentId> = BTreeMap::new();
    let mut agents = Vec::new();
    for (i, a) in decl.agents.iter().enumerate() {
        let params = &components[&a.instance].params;
        let agent = TableAgent::new(sys.clone(), i as u16, params, checker.clone(), opts.tester);
        let id = b.add(&a.name, agent);
        ids.insert(&a.name, id);
        agents.push(id);
    }
    for n in &decl.components {
        let params = &components[&n.instance].params;
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
        let switch = ProtocolSwitch::new(&n.name, params, sys.clone(), route);
        ids.insert(&n.name, b.add(&n.name, switch));
    }
    for l in &decl.links {
        let p = link_params(&components[&l.instance].params);
        let link = b.connect(ids[l.a.0.as_str()], &l.a.1, ids[l.b.0.as_str()], &l.b.1, p);
        b.name_link(link, &format!("{}--{}", l.a.0, l.b.0));
    }
    let sim = b.build().map_err(|e| e.to_string())?;
    Ok(BuiltSystem {
        sim,
        protocol: sys,
        agents,
        checker,
    })
}
