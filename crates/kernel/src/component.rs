//! Components declare their parameters, ports and statistics once.
//!
//! A [`ComponentSpec`] is a `'static` description that every consumer reads:
//! the config validator checks platform files against [`ParamSpec`]s (kind,
//! [`ParamRange`], and the spec's cross-field [`CheckFn`]), the builder
//! checks wiring against [`PortSpec`]s, the stats registry creates one slot
//! per [`StatSpec`], and `ccsim info` and `docs/parameters.md` print all
//! three. This mirrors gem5's `Param`/`ADD_STAT` and SST's `sst-info`: the
//! declaration is the documentation.
//!
//! Every parameter says which values are meaningful (`range`) and where its
//! default comes from (`from`: a paper section, a datasheet, or
//! `"assumed"`). Rules a range cannot say (a multiple of another
//! parameter, a bound set by another component of the platform) go in the
//! spec's `check` hook, which names the parameter at fault.
//!
//! ```
//! use ccsim_kernel::component::*;
//!
//! fn whole_lines(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
//!     let bytes = p.int("bytes");
//!     if bytes % p.int("line_bytes") != 0 {
//!         return Err(ParamProblem::new("bytes", format!("must be a multiple of line_bytes, got {bytes}")));
//!     }
//!     Ok(())
//! }
//!
//! static MEMORY: ComponentSpec = ComponentSpec {
//!     type_name: "fixed_memory",
//!     description: "A memory that answers every read after a fixed latency.",
//!     params: &[
//!         ParamSpec {
//!             name: "latency_ns",
//!             kind: ParamKind::Float,
//!             default: ParamDefault::Float(70.0),
//!             unit: "ns",
//!             range: ParamRange::at_least(0.0),
//!             from: "assumed: a DDR4 load-to-use latency",
//!             description: "Access latency.",
//!         },
//!         ParamSpec { name: "bytes", kind: ParamKind::Int, default: ParamDefault::Int(4096), unit: "bytes",
//!                     range: ParamRange::at_least(1.0), from: "assumed", description: "Capacity." },
//!         ParamSpec { name: "line_bytes", kind: ParamKind::Int, default: ParamDefault::Int(64), unit: "bytes",
//!                     range: ParamRange::between(16.0, 256.0).power_of_two(), from: "assumed",
//!                     description: "Line size." },
//!     ],
//!     ports: &[PortSpec { name: "req", description: "Requests in, responses out.", required: true }],
//!     stats: &[StatSpec { name: "reads", kind: StatKind::Counter, unit: "reads", description: "Reads served." }],
//!     check: Some(whole_lines),
//! };
//! assert_eq!(MEMORY.param("latency_ns").unwrap().unit, "ns");
//! assert_eq!(MEMORY.port_index("req"), Some(0));
//! assert!(MEMORY.stat_index("writes").is_none());
//!
//! let mut p = Params::new().with("line_bytes", ParamValue::Int(48), "test");
//! p.fill_defaults(&MEMORY);
//! assert_eq!(MEMORY.validate(&p, Peers::NONE).unwrap_err().to_string(),
//!            "line_bytes: must be a power of two from 16 to 256, got 48");
//! p.set("line_bytes", ParamValue::Int(128), "test");
//! p.set("bytes", ParamValue::Int(1000), "test");
//! assert_eq!(MEMORY.validate(&p, Peers::NONE).unwrap_err().to_string(),
//!            "bytes: must be a multiple of line_bytes, got 1000");
//! assert_eq!(MEMORY.param("line_bytes").unwrap().range.to_string(), "power of two in [16, 256]");
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
    /// Rules on the parameters that their ranges cannot say: between
    /// parameters (a multiple of another, an order), non-interval rules, or
    /// bounds set by other components of the platform. Run on complete
    /// parameters (every range already holds) when a platform is loaded or
    /// overridden.
    pub check: Option<CheckFn>,
}

/// A component type's cross-field check: the instance's complete parameters
/// and the platform's instances; the error names the parameter at fault.
pub type CheckFn = fn(&Params, Peers<'_>) -> Result<(), ParamProblem>;

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
    /// Checks complete parameters (defaults filled in) against every
    /// declared range, then the [`ComponentSpec::check`] hook with `peers`.
    /// The config crate runs the same rules when it loads a platform, where
    /// the error also names the file and the instance.
    pub fn validate(&self, params: &Params, peers: Peers<'_>) -> Result<(), ParamProblem> {
        check_ranges(self.params, params)?;
        match self.check {
            Some(check) => check(params, peers),
            None => Ok(()),
        }
    }
}

/// Checks every parameter of `params` that `specs` declares against its
/// declared range (kinds are assumed to match; other parameters are left
/// alone).
pub fn check_ranges(specs: &[ParamSpec], params: &Params) -> Result<(), ParamProblem> {
    for spec in specs {
        let Some((value, _)) = params.get(spec.name) else {
            continue;
        };
        let x = match value {
            ParamValue::Int(v) => *v as f64,
            ParamValue::Float(v) => *v,
            ParamValue::Bool(_) | ParamValue::Str(_) => continue,
        };
        // An infinity passes an open-ended range but is no time, size or
        // rate a model can use (an infinite pause once wrapped to none).
        if x.is_infinite() {
            return Err(ParamProblem::new(
                spec.name,
                format!("must be a finite number, got {value}"),
            ));
        }
        if let Some(rule) = spec.range.violation(x) {
            return Err(ParamProblem::new(spec.name, format!("{rule}, got {value}")));
        }
    }
    Ok(())
}

/// What is wrong with a parameter: which one, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamProblem {
    /// The instance the parameter belongs to when it is another component
    /// of the platform (a [`Peer`]); `None` for the checked instance.
    pub instance: Option<String>,
    /// The parameter at fault.
    pub param: &'static str,
    /// One line, like `must be at least 1, got 0`.
    pub message: String,
}

impl ParamProblem {
    /// A problem with `param` of the checked instance.
    pub fn new(param: &'static str, message: impl Into<String>) -> Self {
        Self {
            instance: None,
            param,
            message: message.into(),
        }
    }
    /// A problem with `param` of the platform's instance `peer` (a rule
    /// the checked component imposes on another one).
    pub fn of_peer(peer: &Peer<'_>, param: &'static str, message: impl Into<String>) -> Self {
        Self {
            instance: Some(peer.instance.to_string()),
            ..Self::new(param, message)
        }
    }
}

/// `param: message`, or `instance.param: message` for a peer's parameter.
impl fmt::Display for ParamProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance {
            Some(i) => write!(f, "{i}.{}: {}", self.param, self.message),
            None => write!(f, "{}: {}", self.param, self.message),
        }
    }
}

impl std::error::Error for ParamProblem {}

/// One component instance of a platform, as a [`CheckFn`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Peer<'a> {
    /// Instance name (`pcie`).
    pub instance: &'a str,
    /// Component type (`pcie_link`).
    pub type_name: &'a str,
    /// Its complete parameters.
    pub params: &'a Params,
}

/// Every component instance of the platform being checked (the checked one
/// included), so a check can bound a parameter by another component's:
/// a root complex's completions by the link's read completion boundary.
/// Platforms do not say which instances a workload wires together, so a
/// rule holds against *every* instance of the other type.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peers<'a> {
    all: &'a [Peer<'a>],
}

impl<'a> Peers<'a> {
    /// No other components (a component checked on its own).
    pub const NONE: Peers<'static> = Peers { all: &[] };
    /// The instances `all`.
    pub fn new(all: &'a [Peer<'a>]) -> Self {
        Self { all }
    }
    /// The instances of component type `type_name`, in platform order.
    pub fn of_type<'s>(&'s self, type_name: &'s str) -> impl Iterator<Item = &'s Peer<'a>> + 's {
        self.all.iter().filter(move |p| p.type_name == type_name)
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
    /// The values that are meaningful ([`ParamRange::ANY`] for booleans,
    /// strings and enums).
    pub range: ParamRange,
    /// Where the default comes from: a paper section or figure
    /// (`"CCKit §4.3"`), a datasheet or specification, or `"assumed"`
    /// (with a reason where there is one). Empty for required parameters.
    pub from: &'static str,
    /// What the parameter means.
    pub description: &'static str,
}

/// The values a numeric parameter may take: an interval (either end open,
/// closed or absent), optionally only its powers of two or only a list of
/// integers. Built in const context:
///
/// | constructor | values | shown as |
/// | --- | --- | --- |
/// | [`ParamRange::ANY`] | anything of the kind | `any` |
/// | [`ParamRange::at_least`]`(0.0)` | x ≥ 0 | `≥ 0` |
/// | [`ParamRange::positive`]`()` | x > 0 | `> 0` |
/// | [`ParamRange::between`]`(1.0, 5.0)` | 1 ≤ x ≤ 5 | `[1, 5]` |
/// | [`ParamRange::fraction`]`()` | 0 < x ≤ 1 | `(0, 1]` |
/// | [`ParamRange::one_of`]`(&[64, 128])` | 64 or 128 | `one of 64, 128` |
/// | `between(128.0, 4096.0)`[`.power_of_two()`](ParamRange::power_of_two) | 128, 256, …, 4096 | `power of two in [128, 4096]` |
///
/// ```
/// use ccsim_kernel::component::ParamRange;
/// const MPS: ParamRange = ParamRange::between(128.0, 4096.0).power_of_two();
/// assert!(MPS.violation(512.0).is_none());
/// assert_eq!(MPS.violation(96.0).unwrap(), "must be a power of two from 128 to 4096");
/// assert_eq!(ParamRange::fraction().violation(0.0).unwrap(), "must be in (0, 1]");
/// assert_eq!(ParamRange::at_least(1.0).violation(0.0).unwrap(), "must be at least 1");
/// assert_eq!(ParamRange::positive().to_string(), "> 0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamRange {
    /// Lower bound and whether the bound itself is allowed.
    pub min: Option<(f64, bool)>,
    /// Upper bound and whether the bound itself is allowed.
    pub max: Option<(f64, bool)>,
    /// When not empty, the only allowed values (integers).
    pub one_of: &'static [i64],
    /// Whether only powers of two (1, 2, 4, …) are allowed.
    pub power_of_two: bool,
}

impl ParamRange {
    /// Any value of the parameter's kind.
    pub const ANY: ParamRange = ParamRange {
        min: None,
        max: None,
        one_of: &[],
        power_of_two: false,
    };
    /// `min` or more.
    pub const fn at_least(min: f64) -> Self {
        ParamRange {
            min: Some((min, true)),
            ..Self::ANY
        }
    }
    /// Strictly above 0 (a clock, a bandwidth, a rate).
    pub const fn positive() -> Self {
        ParamRange {
            min: Some((0.0, false)),
            ..Self::ANY
        }
    }
    /// From `min` to `max`, both included.
    pub const fn between(min: f64, max: f64) -> Self {
        ParamRange {
            min: Some((min, true)),
            max: Some((max, true)),
            ..Self::ANY
        }
    }
    /// In (0, 1]: an efficiency or a share.
    pub const fn fraction() -> Self {
        ParamRange {
            min: Some((0.0, false)),
            max: Some((1.0, true)),
            ..Self::ANY
        }
    }
    /// Only the integers `values`.
    pub const fn one_of(values: &'static [i64]) -> Self {
        ParamRange {
            one_of: values,
            ..Self::ANY
        }
    }
    /// This range's powers of two only.
    pub const fn power_of_two(self) -> Self {
        ParamRange {
            power_of_two: true,
            ..self
        }
    }
    /// Whether every value is allowed.
    pub fn is_any(&self) -> bool {
        *self == Self::ANY
    }
    /// Whether `x` is allowed.
    pub fn contains(&self, x: f64) -> bool {
        let above = match self.min {
            Some((m, true)) => x >= m,
            Some((m, false)) => x > m,
            None => true,
        };
        let below = match self.max {
            Some((m, true)) => x <= m,
            Some((m, false)) => x < m,
            None => true,
        };
        let listed = self.one_of.is_empty() || self.one_of.iter().any(|&v| v as f64 == x);
        let pow2 =
            !self.power_of_two || (x >= 1.0 && x.fract() == 0.0 && (x as u64).is_power_of_two());
        above && below && listed && pow2
    }
    /// `None` when `x` is allowed, else the rule it breaks, worded for an
    /// error message (`must be at least 1`); the caller adds the value.
    pub fn violation(&self, x: f64) -> Option<String> {
        if self.contains(x) {
            return None;
        }
        Some(format!("must be {}", self.requirement()))
    }
    /// The rule in words: `at least 1`, `greater than 0`, `from 1 to 5`,
    /// `in (0, 1]`, `one of 64, 128`, `a power of two from 128 to 4096`.
    pub fn requirement(&self) -> String {
        if !self.one_of.is_empty() {
            let list: Vec<String> = self.one_of.iter().map(|v| v.to_string()).collect();
            return format!("one of {}", list.join(", "));
        }
        let interval = match (self.min, self.max) {
            (None, None) => String::new(),
            (Some((lo, true)), Some((hi, true))) => format!("from {lo} to {hi}"),
            (Some(_), Some(_)) => format!("in {}", self.interval()),
            (Some((lo, true)), None) => format!("at least {lo}"),
            (Some((lo, false)), None) => format!("greater than {lo}"),
            (None, Some((hi, true))) => format!("at most {hi}"),
            (None, Some((hi, false))) => format!("less than {hi}"),
        };
        match (self.power_of_two, interval.is_empty()) {
            (true, true) => "a power of two".to_string(),
            (true, false) => format!("a power of two {interval}"),
            (false, true) => "any value".to_string(),
            (false, false) => interval,
        }
    }
    /// The interval in bracket notation (`[1, 5]`, `(0, 1]`).
    fn interval(&self) -> String {
        let lo = match self.min {
            Some((v, true)) => format!("[{v}"),
            Some((v, false)) => format!("({v}"),
            None => "(-inf".to_string(),
        };
        let hi = match self.max {
            Some((v, true)) => format!("{v}]"),
            Some((v, false)) => format!("{v})"),
            None => "inf)".to_string(),
        };
        format!("{lo}, {hi}")
    }
}

/// Compact form for tables: `any`, `≥ 0`, `> 0`, `[1, 5]`, `(0, 1]`,
/// `one of 64, 128`, `power of two in [128, 4096]`.
impl fmt::Display for ParamRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.one_of.is_empty() {
            let list: Vec<String> = self.one_of.iter().map(|v| v.to_string()).collect();
            return write!(f, "one of {}", list.join(", "));
        }
        let interval = match (self.min, self.max) {
            (None, None) => String::new(),
            (Some((lo, true)), None) => format!("≥ {lo}"),
            (Some((lo, false)), None) => format!("> {lo}"),
            (None, Some((hi, true))) => format!("≤ {hi}"),
            (None, Some((hi, false))) => format!("< {hi}"),
            _ => format!("in {}", self.interval()),
        };
        match (self.power_of_two, interval.strip_prefix("in ")) {
            (true, _) if interval.is_empty() => write!(f, "power of two"),
            (true, _) => write!(f, "power of two {interval}"),
            (false, _) if interval.is_empty() => write!(f, "any"),
            (false, Some(brackets)) => write!(f, "{brackets}"),
            (false, None) => write!(f, "{interval}"),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_range_says_what_it_allows() {
        let cases: &[(ParamRange, &str, f64, f64, &str)] = &[
            // (range, shown as, allowed, refused, refusal)
            (ParamRange::ANY, "any", -1e9, f64::NAN, "must be any value"),
            (
                ParamRange::at_least(0.0),
                "≥ 0",
                0.0,
                -0.5,
                "must be at least 0",
            ),
            (
                ParamRange::at_least(1.0),
                "≥ 1",
                1.0,
                0.0,
                "must be at least 1",
            ),
            (
                ParamRange::positive(),
                "> 0",
                1e-9,
                0.0,
                "must be greater than 0",
            ),
            (
                ParamRange::between(1.0, 5.0),
                "[1, 5]",
                5.0,
                6.0,
                "must be from 1 to 5",
            ),
            (
                ParamRange::fraction(),
                "(0, 1]",
                1.0,
                0.0,
                "must be in (0, 1]",
            ),
            (
                ParamRange::fraction(),
                "(0, 1]",
                0.5,
                1.01,
                "must be in (0, 1]",
            ),
            (
                ParamRange::one_of(&[64, 128]),
                "one of 64, 128",
                128.0,
                96.0,
                "must be one of 64, 128",
            ),
            (
                ParamRange::between(128.0, 4096.0).power_of_two(),
                "power of two in [128, 4096]",
                512.0,
                384.0,
                "must be a power of two from 128 to 4096",
            ),
            (
                ParamRange::at_least(1.0).power_of_two(),
                "power of two ≥ 1",
                1.0,
                3.0,
                "must be a power of two at least 1",
            ),
        ];
        for (range, shown, ok, bad, why) in cases {
            assert_eq!(range.to_string(), *shown);
            assert!(range.contains(*ok), "{shown} allows {ok}");
            if range.is_any() {
                continue;
            }
            assert_eq!(
                range.violation(*bad).as_deref(),
                Some(*why),
                "{shown} {bad}"
            );
        }
    }

    static SPEC: ComponentSpec = ComponentSpec {
        type_name: "cache",
        description: "A cache.",
        params: &[
            ParamSpec {
                name: "bytes",
                kind: ParamKind::Int,
                default: ParamDefault::Int(4096),
                unit: "bytes",
                range: ParamRange::at_least(0.0),
                from: "assumed",
                description: "Capacity.",
            },
            ParamSpec {
                name: "clock_mhz",
                kind: ParamKind::Float,
                default: ParamDefault::Float(100.0),
                unit: "MHz",
                range: ParamRange::positive(),
                from: "assumed",
                description: "Clock.",
            },
        ],
        ports: &[],
        stats: &[],
        check: Some(needs_a_memory),
    };

    /// A rule on another instance of the platform.
    fn needs_a_memory(_: &Params, peers: Peers<'_>) -> Result<(), ParamProblem> {
        for m in peers.of_type("memory") {
            if m.params.int("bytes") == 0 {
                return Err(ParamProblem::of_peer(
                    m,
                    "bytes",
                    "must not be 0 behind a cache",
                ));
            }
        }
        Ok(())
    }

    #[test]
    fn validate_checks_ranges_then_the_hook_with_its_peers() {
        let mut p = Params::new().with("clock_mhz", ParamValue::Float(0.0), "test");
        p.fill_defaults(&SPEC);
        let e = SPEC.validate(&p, Peers::NONE).unwrap_err();
        assert_eq!(e.to_string(), "clock_mhz: must be greater than 0, got 0");
        assert_eq!(e.instance, None);
        p.set("clock_mhz", ParamValue::Float(200.0), "test");
        assert_eq!(SPEC.validate(&p, Peers::NONE), Ok(()));
        let empty = Params::new().with("bytes", ParamValue::Int(0), "test");
        let all = [
            Peer {
                instance: "l2",
                type_name: "cache",
                params: &p,
            },
            Peer {
                instance: "dram",
                type_name: "memory",
                params: &empty,
            },
        ];
        let e = SPEC.validate(&p, Peers::new(&all)).unwrap_err();
        assert_eq!(e.to_string(), "dram.bytes: must not be 0 behind a cache");
        assert_eq!(Peers::new(&all).of_type("cache").count(), 1);
    }
}
