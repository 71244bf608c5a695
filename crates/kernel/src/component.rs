//! Components declare their parameters, ports and statistics once.
//!
//! A [`ComponentSpec`] is a `'static` description that every consumer reads:
//! the config validator checks platform files against [`ParamSpec`]s, the
//! builder checks wiring against [`PortSpec`]s, the stats registry creates one
//! slot per [`StatSpec`], and `ccsim info` prints all three. This mirrors
//! gem5's `Param`/`ADD_STAT` and SST's `sst-info`: the declaration is the
//! documentation.
//!
//! ```
//! use ccsim_kernel::component::*;
//!
//! static MEMORY: ComponentSpec = ComponentSpec {
//!     type_name: "fixed_memory",
//!     description: "A memory that answers every read after a fixed latency.",
//!     params: &[ParamSpec {
//!         name: "latency_ns",
//!         kind: ParamKind::Float,
//!         default: ParamDefault::Float(70.0),
//!         unit: "ns",
//!         description: "Access latency.",
//!     }],
//!     ports: &[PortSpec { name: "req", description: "Requests in, responses out.", required: true }],
//!     stats: &[StatSpec { name: "reads", kind: StatKind::Counter, unit: "reads", description: "Reads served." }],
//! };
//! assert_eq!(MEMORY.param("latency_ns").unwrap().unit, "ns");
//! assert_eq!(MEMORY.port_index("req"), Some(0));
//! assert!(MEMORY.stat_index("writes").is_none());
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// The static declaration of a component type.
#[derive(Debug)]
pub struct ComponentSpec {
    /// Type name used in platform files (`type = "pcie_link"`) and `ccsim info`.
    pub type_name: &'static str,
    /// One or two sentences saying what the component models.
    pub description: &'static str,
    /// Configurable parameters.
    pub params: &'static [ParamSpec],
    /// Named ports; a port's index in this slice is its [`crate::sim::PortId`].
    pub ports: &'static [PortSpec],
    /// Statistics; a stat's index in this slice is its local stat index.
    pub stats: &'static [StatSpec],
}

impl ComponentSpec {
    /// The parameter declared with `name`.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }
    /// The index of the port declared with `name`.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }
    /// The index of the statistic declared with `name`.
    pub fn stat_index(&self, name: &str) -> Option<usize> {
        self.stats.iter().position(|s| s.name == name)
    }
}

/// A declared parameter.
#[derive(Debug)]
pub struct ParamSpec {
    /// Key in the platform file.
    pub name: &'static str,
    /// Value type.
    pub kind: ParamKind,
    /// Default value, or [`ParamDefault::Required`].
    pub default: ParamDefault,
    /// Unit of the value (`ns`, `bytes`, `GT/s`, `lanes`, or `""`).
    pub unit: &'static str,
    /// What the parameter means.
    pub description: &'static str,
}

/// The type of a parameter value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamKind {
    /// Signed integer.
    Int,
    /// Floating point (integers are accepted and widened).
    Float,
    /// Boolean.
    Bool,
    /// Free text.
    Str,
    /// One of a fixed set of strings.
    Enum(&'static [&'static str]),
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamKind::Int => write!(f, "integer"),
            ParamKind::Float => write!(f, "number"),
            ParamKind::Bool => write!(f, "boolean"),
            ParamKind::Str => write!(f, "string"),
            ParamKind::Enum(options) => write!(f, "one of {}", options.join("|")),
        }
    }
}

/// A parameter's default.
#[derive(Debug, Clone, Copy)]
pub enum ParamDefault {
    /// No default: the platform must set it.
    Required,
    /// Integer default.
    Int(i64),
    /// Number default.
    Float(f64),
    /// Boolean default.
    Bool(bool),
    /// String default (also used for enums).
    Str(&'static str),
}

impl ParamDefault {
    /// The default as a value, or `None` when required.
    pub fn value(&self) -> Option<ParamValue> {
        match *self {
            ParamDefault::Required => None,
            ParamDefault::Int(v) => Some(ParamValue::Int(v)),
            ParamDefault::Float(v) => Some(ParamValue::Float(v)),
            ParamDefault::Bool(v) => Some(ParamValue::Bool(v)),
            ParamDefault::Str(v) => Some(ParamValue::Str(v.to_string())),
        }
    }
}

/// A declared port.
#[derive(Debug)]
pub struct PortSpec {
    /// Port name, used when wiring (`"pcie"`, `"mem"`).
    pub name: &'static str,
    /// What flows through the port.
    pub description: &'static str,
    /// Whether the builder rejects a system that leaves this port unconnected.
    pub required: bool,
}

/// A declared statistic.
#[derive(Debug)]
pub struct StatSpec {
    /// Name; the full path is `<instance path>.<name>`.
    pub name: &'static str,
    /// Counter or histogram.
    pub kind: StatKind,
    /// Unit of the counted or recorded value.
    pub unit: &'static str,
    /// What is counted.
    pub description: &'static str,
}

/// The kind of a statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatKind {
    /// A monotonically increasing `u64`.
    Counter,
    /// An HdrHistogram of `u64` samples, reported as percentiles.
    Histogram,
}

/// A validated parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// Integer.
    Int(i64),
    /// Number.
    Float(f64),
    /// Boolean.
    Bool(bool),
    /// String or enum choice.
    Str(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Str(v) => write!(f, "{v:?}"),
        }
    }
}

/// Where a parameter value comes from: a paper (file, section, figure or
/// table), `"assumed"`, `"calibrated: <points>"`, `"default"` or `"override"`.
pub type Provenance = String;

/// The validated parameters of one component instance, each with its
/// provenance. Built by the config crate; read by component constructors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    values: BTreeMap<String, (ParamValue, Provenance)>,
}

impl Params {
    /// An empty parameter set (every parameter takes its default).
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets `name` to `value` with its provenance (builder style).
    pub fn with(mut self, name: &str, value: ParamValue, provenance: &str) -> Self {
        self.set(name, value, provenance);
        self
    }
    /// Sets `name` to `value` with its provenance.
    pub fn set(&mut self, name: &str, value: ParamValue, provenance: &str) {
        self.values
            .insert(name.to_string(), (value, provenance.to_string()));
    }
    /// The value and provenance of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&(ParamValue, Provenance)> {
        self.values.get(name)
    }
    /// Every set parameter in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &(ParamValue, Provenance))> {
        self.values.iter()
    }
    /// Fills every unset parameter of `spec` with its default. Returns the
    /// names of required parameters that are missing.
    pub fn fill_defaults(&mut self, spec: &ComponentSpec) -> Vec<&'static str> {
        let mut missing = Vec::new();
        for p in spec.params {
            if self.values.contains_key(p.name) {
                continue;
            }
            match p.default.value() {
                Some(v) => self.set(p.name, v, "default"),
                None => missing.push(p.name),
            }
        }
        missing
    }
    /// Integer parameter `name`. Panics if absent or of another type: the
    /// config validator guarantees both, so a panic here is a wiring bug.
    pub fn int(&self, name: &str) -> i64 {
        match self.values.get(name) {
            Some((ParamValue::Int(v), _)) => *v,
            other => panic!("parameter {name}: expected integer, found {other:?}"),
        }
    }
    /// Integer parameter `name` as `u64` (validated non-negative).
    pub fn uint(&self, name: &str) -> u64 {
        let v = self.int(name);
        assert!(v >= 0, "parameter {name} must be non-negative, got {v}");
        v as u64
    }
    /// Numeric parameter `name` (integers are widened).
    pub fn float(&self, name: &str) -> f64 {
        match self.values.get(name) {
            Some((ParamValue::Float(v), _)) => *v,
            Some((ParamValue::Int(v), _)) => *v as f64,
            other => panic!("parameter {name}: expected number, found {other:?}"),
        }
    }
    /// Boolean parameter `name`.
    pub fn bool(&self, name: &str) -> bool {
        match self.values.get(name) {
            Some((ParamValue::Bool(v), _)) => *v,
            other => panic!("parameter {name}: expected boolean, found {other:?}"),
        }
    }
    /// String or enum parameter `name`.
    pub fn str(&self, name: &str) -> &str {
        match self.values.get(name) {
            Some((ParamValue::Str(v), _)) => v,
            other => panic!("parameter {name}: expected string, found {other:?}"),
        }
    }
}
