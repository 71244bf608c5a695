//! Platform files: named component instances with parameters and provenance.
//!
//! ```toml
//! [platform]
//! name = "cohet"
//! description = "Xeon 8468V host + Agilex FPGA over PCIe 5.0 x16"
//! paper = "002_fbcb97f81b624276.txt"
//!
//! [components.pcie]                 # instance name
//! type = "pcie_link"                # a registered component type
//! lanes = { value = 16, from = "Cohet §VI-A1" }
//! ```
//!
//! Errors show a component parameter as `platform.<instance>.<param>`.
//!
//! Every value is checked against its declaration when it is read: kind,
//! then range (`platform.dc.dcus_per_slice: must be at least 1, got 0`).
//! Once every component is complete, each component type's check hook
//! ([`ComponentSpec::check`]) runs with the platform's instances as peers,
//! for the rules that involve several parameters or components. Overrides
//! go through the same checks, with file `overrides`.

use crate::error::{ConfigError, Result};
use crate::fields::{join, Fields};
use crate::systems::{
    eci, parse_systems, table, BuildOptions, BuiltSystem, EciOptions, Loaded, SystemDecl,
};
use crate::value::{check_param, check_typed, describe, parse_text, suggest};
use ccsim_eci::assemble::Assembled;
use ccsim_eci::cc_system::CcSystem;
use ccsim_eci::shared::SharedSystem;
use ccsim_eci::system::CoherentSystem;
use ccsim_kernel::component::{ComponentSpec, ParamValue, Params, Peer, Peers};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use toml::{Table, Value};

/// Provenance given to values set by [`Platform::with_overrides`].
pub const OVERRIDE: &str = "override";

/// One component instance of a platform.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentConfig {
    /// The registered component type (`pcie_link`).
    pub type_name: String,
    /// Every declared parameter, set or defaulted, with its provenance.
    pub params: Params,
}

/// A validated platform: every component's type exists, every parameter is
/// declared, typed, and carries its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Platform {
    /// Short name (`cohet`).
    pub name: String,
    /// One line saying what hardware this is.
    pub description: String,
    /// The paper files the parameters come from.
    pub paper: Vec<String>,
    /// The file the platform was read from (`platforms/cohet.toml` or a path).
    pub source: String,
    /// What [`Platform::load`] was called with: a shipped name or a path.
    pub origin: String,
    /// Component instances by instance name.
    pub components: BTreeMap<String, ComponentConfig>,
    /// The overrides applied, in order, as `(dotted key, value)`.
    pub overrides: Vec<(String, ParamValue)>,
    /// Systems declared as data (`[systems.<name>]`), by name.
    pub systems: BTreeMap<String, SystemDecl>,
}

/// The names of the shipped platforms, sorted.
pub fn list_platforms() -> Vec<&'static str> {
    crate::embedded::PLATFORM_FILES
        .iter()
        .map(|(name, _, _)| *name)
        .collect()
}

/// Finds `(label, text)` for a shipped name, or reads a file path.
pub(crate) fn locate(
    kind: &str,
    shipped: &'static [(&'static str, &'static str, &'static str)],
    name_or_path: &str,
) -> Result<(String, String)> {
    if let Some((_, label, text)) = shipped.iter().find(|(name, _, _)| *name == name_or_path) {
        return Ok((label.to_string(), text.to_string()));
    }
    let path = Path::new(name_or_path);
    let looks_like_path = name_or_path.ends_with(".toml") || name_or_path.contains(['/', '\\']);
    // A directory is a path too: reading it says why it is not a file.
    if looks_like_path || path.is_file() || path.is_dir() {
        return std::fs::read_to_string(path)
            .map(|text| (name_or_path.to_string(), text))
            .map_err(|e| {
                ConfigError::new(name_or_path, "", format!("cannot read {kind} file: {e}"))
            });
    }
    let hint = suggest(name_or_path, shipped.iter().map(|(n, _, _)| *n));
    Err(ConfigError::new(
        name_or_path,
        "",
        format!("no shipped {kind} of this name and no such file{hint}"),
    ))
}

/// Parses TOML text into a table, with the parser's message on one line.
pub(crate) fn parse_toml(file: &str, text: &str) -> Result<Table> {
    text.parse::<Table>().map_err(|e| {
        // The TOML parser's message may span lines; errors are one line.
        let msg = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!(" (line {line})")
            })
            .unwrap_or_default();
        ConfigError::new(file, "", format!("invalid TOML: {msg}{at}"))
    })
}

impl Platform {
    /// Loads a shipped platform by name, or a platform file by path, and
    /// validates it against the component types of [`crate::registry`].
    pub fn load(name_or_path: &str) -> Result<Platform> {
        Self::load_with(name_or_path, &crate::registry())
    }

    /// Like [`Platform::load`] with an explicit component registry.
    pub fn load_with(name_or_path: &str, registry: &[&'static ComponentSpec]) -> Result<Platform> {
        let (label, text) = locate("platform", crate::embedded::PLATFORM_FILES, name_or_path)?;
        let mut p = Self::from_toml_str(&label, &text, registry)?;
        p.origin = name_or_path.to_string();
        Ok(p)
    }

    /// Parses and validates platform TOML `text`; `file` labels errors.
    pub fn from_toml_str(
        file: &str,
        text: &str,
        registry: &[&'static ComponentSpec],
    ) -> Result<Platform> {
        crate::parsed::PLATFORMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let table = parse_toml(file, text)?;
        let mut top = Fields::with_keys(file, "", &table, &["platform", "components", "systems"])?;
        let header = top.req_table("platform")?;
        let components = top.req_table("components")?;
        let systems = top.opt_table("systems")?;
        top.finish()?;

        let mut h = Fields::with_keys(file, "platform", header, &["name", "description", "paper"])?;
        let name = h.req_str("name")?;
        let description = h.req_str("description")?;
        let paper = h.strings("paper")?;
        h.finish()?;

        let mut out = BTreeMap::new();
        for (instance, value) in components {
            // Errors show `components.pcie.lanes` as `platform.pcie.lanes`.
            let path = join("platform", instance);
            if !valid_instance_name(instance) {
                return Err(ConfigError::new(
                    file,
                    &path,
                    "instance names use lowercase letters, digits and '_', starting with a letter",
                ));
            }
            let Value::Table(t) = value else {
                return Err(ConfigError::new(
                    file,
                    &path,
                    format!("expected table, got {}", describe(value)),
                ));
            };
            out.insert(instance.clone(), component(file, &path, t, registry)?);
        }
        if out.is_empty() {
            return Err(ConfigError::new(
                file,
                "components",
                "a platform needs at least one component",
            ));
        }
        check_components(file, &out, |t| {
            registry.iter().copied().find(|s| s.type_name == t)
        })?;
        Ok(Platform {
            name,
            description,
            paper,
            source: file.to_string(),
            origin: file.to_string(),
            systems: match systems {
                Some(t) => parse_systems(file, t, &out)?,
                None => BTreeMap::new(),
            },
            components: out,
            overrides: Vec::new(),
        })
    }

    /// The system `name` declared in `[systems.<name>]`.
    pub fn system(&self, name: &str) -> Result<&SystemDecl> {
        self.systems.get(name).ok_or_else(|| {
            let hint = suggest(name, self.systems.keys().map(String::as_str));
            ConfigError::new(
                &self.source,
                format!("systems.{name}"),
                format!("the platform declares no such system{hint}"),
            )
        })
    }

    /// Builds system `name` (of table agents) with the platform's (possibly
    /// overridden) component parameters, for the random tester.
    pub fn build(&self, name: &str, opts: BuildOptions) -> Result<BuiltSystem> {
        let decl = self.system(name)?;
        table::build(decl, &self.components, opts)
            .map_err(|e| eci::at_system(&self.source, name, e))
    }

    /// Builds system `name` (of table agents) with its agents running
    /// `ir` instead of the declared protocol: a variant with the same roles
    /// and messages, such as a mutant (see `ccsim_experiments::mutation`).
    pub fn build_with_ir(
        &self,
        name: &str,
        ir: ccsim_protocol::ir::ProtocolIr,
        opts: BuildOptions,
    ) -> Result<BuiltSystem> {
        let decl = self.system(name)?;
        let at = |e: String| eci::at_system(&self.source, name, e);
        let Loaded::Table(sys) = decl.loaded() else {
            return Err(at(
                "a system of Enzian agents runs its own tables, not another IR".into(),
            ));
        };
        let sys = Arc::new(sys.with_ir(ir).map_err(at)?);
        table::build_with(decl, sys, &self.components, opts, None).map_err(at)
    }

    /// Builds system `name` (of table agents) with more components added
    /// by `attach` before the simulation is built: it gets the builder and
    /// the system's named components (agents, switches, and each
    /// `cxl_flexbus` link under its instance name), so that a workload can
    /// wire a host's root complex and a device's DMA engine to the
    /// flexbus's CXL.io ports.
    pub fn build_attached(
        &self,
        name: &str,
        opts: BuildOptions,
        attach: table::Attach<'_>,
    ) -> Result<BuiltSystem> {
        let decl = self.system(name)?;
        let Loaded::Table(sys) = decl.loaded() else {
            return Err(eci::at_system(
                &self.source,
                name,
                "a system of Enzian agents takes no attached components".into(),
            ));
        };
        table::build_with(decl, sys.clone(), &self.components, opts, Some(attach))
            .map_err(|e| eci::at_system(&self.source, name, e))
    }

    /// Assembles system `name` (of Enzian agents) with the platform's
    /// (possibly overridden) component parameters and `opts`.
    pub fn assemble(&self, name: &str, opts: &EciOptions) -> Result<Assembled> {
        let decl = self.system(name)?;
        eci::build(decl, &self.components, opts).map_err(|e| eci::at_system(&self.source, name, e))
    }

    /// System `name` as a CPU and a DC (FPGA-homed lines: `coherent_cpu` and
    /// `directory_controller`).
    pub fn coherent_system(&self, name: &str, opts: &EciOptions) -> Result<CoherentSystem> {
        CoherentSystem::new(self.assemble(name, opts)?)
            .map_err(|e| eci::at_system(&self.source, name, e))
    }

    /// System `name` as both homes on shared links: the CPU and the DC
    /// (FPGA-homed lines) and the CPU home and the CC (CPU-homed lines),
    /// joined by `eci_mux`es.
    pub fn shared_system(&self, name: &str, opts: &EciOptions) -> Result<SharedSystem> {
        SharedSystem::new(self.assemble(name, opts)?)
            .map_err(|e| eci::at_system(&self.source, name, e))
    }

    /// System `name` as a CPU home and the FPGA's CC (CPU-homed lines:
    /// `cpu_home` and `cache_controller`).
    pub fn cc_system(&self, name: &str, opts: &EciOptions) -> Result<CcSystem> {
        CcSystem::new(self.assemble(name, opts)?).map_err(|e| eci::at_system(&self.source, name, e))
    }

    /// The component instance `instance`.
    pub fn component(&self, instance: &str) -> Result<&ComponentConfig> {
        self.components.get(instance).ok_or_else(|| {
            let hint = suggest(instance, self.components.keys().map(String::as_str));
            ConfigError::new(
                &self.source,
                join("platform", instance),
                format!("no such component instance{hint}"),
            )
        })
    }

    /// The instances of component type `type_name`, in name order.
    pub fn instances_of(&self, type_name: &str) -> Vec<(&str, &ComponentConfig)> {
        self.components
            .iter()
            .filter(|(_, c)| c.type_name == type_name)
            .map(|(n, c)| (n.as_str(), c))
            .collect()
    }

    /// A copy with dotted-key overrides applied (`("pcie.lanes", Int(8))`),
    /// each with provenance `"override"`. Integers widen to numbers; any
    /// other type mismatch, a value out of its range, a broken cross-field
    /// rule, or an unknown instance or parameter, is an error in file
    /// `overrides`.
    pub fn with_overrides(&self, overrides: &[(String, ParamValue)]) -> Result<Platform> {
        self.with_overrides_from(overrides, crate::lookup)
    }

    /// [`Platform::with_overrides`] with `typed` and then `text` overrides
    /// ([`Platform::with_text_overrides`]) applied together: the
    /// cross-field rules are checked once, on the final values.
    pub fn with_all_overrides(
        &self,
        typed: &[(String, ParamValue)],
        text: &[(String, String)],
    ) -> Result<Platform> {
        if typed.is_empty() && text.is_empty() {
            return Ok(self.clone());
        }
        let mut all = typed.to_vec();
        all.extend(self.parse_text_overrides(text)?);
        self.with_overrides(&all)
    }

    /// Like [`Platform::with_overrides`] with an explicit type lookup.
    pub fn with_overrides_from(
        &self,
        overrides: &[(String, ParamValue)],
        lookup: impl Fn(&str) -> Option<&'static ComponentSpec>,
    ) -> Result<Platform> {
        let mut out = self.clone();
        for (key, value) in overrides {
            let (instance, spec) = out.override_target(key, &lookup)?;
            let checked = check_typed(spec, value).map_err(|m| override_err(key, m))?;
            let c = out.components.get_mut(&instance).expect("target exists");
            c.params.set(spec.name, checked.clone(), OVERRIDE);
            out.overrides.push((key.clone(), checked));
        }
        if !overrides.is_empty() {
            check_components("overrides", &out.components, lookup)?;
        }
        Ok(out)
    }

    /// Like [`Platform::with_overrides`], parsing each value as text in the
    /// parameter's declared kind (`--set pcie.lanes=8`).
    pub fn with_text_overrides(&self, overrides: &[(String, String)]) -> Result<Platform> {
        self.with_overrides(&self.parse_text_overrides(overrides)?)
    }

    /// Text overrides parsed in their parameters' declared kinds.
    fn parse_text_overrides(
        &self,
        overrides: &[(String, String)],
    ) -> Result<Vec<(String, ParamValue)>> {
        let mut typed = Vec::with_capacity(overrides.len());
        for (key, text) in overrides {
            let (_, spec) = self.override_target(key, &crate::lookup)?;
            typed.push((
                key.clone(),
                parse_text(spec, text).map_err(|m| override_err(key, m))?,
            ));
        }
        Ok(typed)
    }

    fn override_target(
        &self,
        key: &str,
        lookup: &impl Fn(&str) -> Option<&'static ComponentSpec>,
    ) -> Result<(String, &'static ccsim_kernel::component::ParamSpec)> {
        let Some((instance, param)) = key.split_once('.') else {
            return Err(override_err(
                key,
                "override keys are <instance>.<parameter>, like \"pcie.lanes\"",
            ));
        };
        let Some(c) = self.components.get(instance) else {
            let hint = suggest(instance, self.components.keys().map(String::as_str));
            return Err(override_err(
                key,
                format!(
                    "no component instance {instance:?} in platform {}{hint}",
                    self.name
                ),
            ));
        };
        let spec = lookup(&c.type_name).ok_or_else(|| {
            override_err(key, format!("unknown component type {:?}", c.type_name))
        })?;
        let p = spec.param(param).ok_or_else(|| {
            let hint = suggest(param, spec.params.iter().map(|p| p.name));
            override_err(
                key,
                format!("unknown parameter of {}{hint}", spec.type_name),
            )
        })?;
        Ok((instance.to_string(), p))
    }
}

/// Runs the check hook of every component's type on its complete
/// parameters, with every instance of the platform as peers. An error names
/// the parameter at fault, which may be a peer's (`platform.eci.links`).
fn check_components(
    file: &str,
    components: &BTreeMap<String, ComponentConfig>,
    lookup: impl Fn(&str) -> Option<&'static ComponentSpec>,
) -> Result<()> {
    let all: Vec<Peer<'_>> = components
        .iter()
        .map(|(instance, c)| Peer {
            instance,
            type_name: &c.type_name,
            params: &c.params,
        })
        .collect();
    for (instance, c) in components {
        let Some(check) = lookup(&c.type_name).and_then(|spec| spec.check) else {
            continue;
        };
        check(&c.params, Peers::new(&all)).map_err(|problem| {
            let at = problem.instance.as_deref().unwrap_or(instance);
            ConfigError::new(
                file,
                join(&join("platform", at), problem.param),
                problem.message,
            )
        })?;
    }
    Ok(())
}

fn override_err(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new("overrides", join("platform", key), message)
}

fn valid_instance_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Validates one `[components.<instance>]` table.
fn component(
    file: &str,
    path: &str,
    table: &Table,
    registry: &[&'static ComponentSpec],
) -> Result<ComponentConfig> {
    let type_name = match table.get("type") {
        None => {
            return Err(ConfigError::new(
                file,
                join(path, "type"),
                "required key missing",
            ))
        }
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            return Err(ConfigError::new(
                file,
                join(path, "type"),
                format!("expected string, got {}", describe(v)),
            ))
        }
    };
    let Some(spec) = registry.iter().copied().find(|s| s.type_name == type_name) else {
        let hint = suggest(&type_name, registry.iter().map(|s| s.type_name));
        return Err(ConfigError::new(
            file,
            join(path, "type"),
            format!("unknown component type {type_name:?}{hint}"),
        ));
    };
    let mut params = Params::new();
    for (key, value) in table {
        if key == "type" {
            continue;
        }
        let at = join(path, key);
        let Some(pspec) = spec.param(key) else {
            let hint = suggest(key, spec.params.iter().map(|p| p.name));
            return Err(ConfigError::new(
                file,
                at,
                format!("unknown parameter of {type_name}{hint}"),
            ));
        };
        let Value::Table(entry) = value else {
            return Err(ConfigError::new(
                file,
                at,
                format!(
                    "expected {{ value = ..., from = \"<provenance>\" }}, got {}",
                    describe(value)
                ),
            ));
        };
        let mut f = Fields::with_keys(file, at.clone(), entry, &["value", "from"])?;
        let raw = f
            .get("value")
            .ok_or_else(|| f.err("value", "required key missing"))?;
        let provenance = f.opt_str("from")?.ok_or_else(|| {
            ConfigError::new(
                file,
                &at,
                "missing provenance: add from = \"<paper §, figure or table>\" or \"assumed\"",
            )
        })?;
        f.finish()?;
        if provenance.trim().is_empty() {
            return Err(ConfigError::new(
                file,
                join(&at, "from"),
                "provenance must not be empty",
            ));
        }
        let v = check_param(pspec, raw).map_err(|m| ConfigError::new(file, &at, m))?;
        params.set(pspec.name, v, &provenance);
    }
    let missing = params.fill_defaults(spec);
    if let Some(first) = missing.first() {
        return Err(ConfigError::new(
            file,
            join(path, first),
            format!("required parameter of {type_name} missing"),
        ));
    }
    Ok(ComponentConfig { type_name, params })
}
