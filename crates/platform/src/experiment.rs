//! Experiment files: a sweep of one x variable over one or more series
//! (platform + workload + metric), with reference points from a paper.
//!
//! ```toml
//! [experiment]
//! name = "cohet-dma"
//! title = "H2D DMA read latency and bandwidth vs message size"
//! paper = "002_fbcb97f81b624276.txt"
//! figures = "Cohet Figs. 14 and 16"
//! calibrated_on = "Cohet §VI-B3: ~2.5 us below 8 KB"
//! x = { name = "message_bytes", label = "message size (bytes)", log = true }
//! sweep = [64, 4096, 262144]
//! quick = [64, 262144]
//!
//! [[series]]
//! name = "latency"
//! platform = "cohet"
//! workload = "dma_read"
//! params = { mode = "latency" }
//! metric = "latency_ns"
//! panel = "latency"
//!
//! [[panels]]
//! name = "latency"
//! ylabel = "latency (ns)"
//!
//! [[reference]]
//! series = "latency"
//! x = 64
//! value = 2500.0
//! role = "calibration"
//! citation = "Cohet §VI-B3"
//! ```

use crate::error::{ConfigError, Result};
use crate::fields::Fields;
use crate::platform::{locate, parse_toml, Platform};
use crate::value::{check_param, describe, format_float, suggest};
use ccsim_kernel::component::{ParamProblem, ParamSpec, Params};
use std::collections::BTreeMap;
use std::path::Path;
use toml::{Table, Value};

/// What the config crate needs to know about a workload to validate an
/// experiment: its parameters (with their ranges and cross-field check) and
/// metric names. The experiments crate provides these (the config crate
/// cannot depend on it).
#[derive(Debug, Clone)]
pub struct WorkloadDecl {
    /// Workload name (`dma_read`).
    pub name: &'static str,
    /// Declared workload parameters.
    pub params: &'static [ParamSpec],
    /// Rules on the parameters their ranges cannot say (combinations a
    /// workload refuses), run on complete parameters.
    pub check: Option<WorkloadCheck>,
    /// Names of the metrics one point reports.
    pub metrics: Vec<&'static str>,
}

/// A workload's cross-field check: complete parameters (every range
/// already holds); the error names the parameter at fault.
pub type WorkloadCheck = fn(&Params) -> Result<(), ParamProblem>;

/// The x axis of an experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct XAxis {
    /// Variable name passed to the workload (`message_bytes`).
    pub name: String,
    /// Axis label for plots.
    pub label: String,
    /// Whether plots use a log scale.
    pub log: bool,
}

/// One curve: a workload on a platform, reporting one metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Unique name within the experiment.
    pub name: String,
    /// Legend label (defaults to the name).
    pub label: String,
    /// Platform name or path, as written.
    pub platform: String,
    /// Workload name.
    pub workload: String,
    /// Validated workload parameters (set ones have provenance
    /// `experiment <name>`, the rest `default`).
    pub params: Params,
    /// The metric plotted and compared.
    pub metric: String,
    /// The panel it is drawn in.
    pub panel: String,
}

/// One plot panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Name referenced by series.
    pub name: String,
    /// Y axis label.
    pub ylabel: String,
    /// Whether the y axis is logarithmic.
    pub ylog: bool,
    /// Empty for a line panel (each series against x). Otherwise a
    /// histogram panel: for each of these x (each in the sweep) every series
    /// of the panel draws the binned distribution of its metric's samples,
    /// the point's stats `<metric>.hist.<lower edge>` (and
    /// `<metric>.hist_bin` for the width) its workload reports, as gem5
    /// prints a distribution's buckets.
    pub histogram_at: Vec<f64>,
}

/// Whether a reference point was used to fit parameters or is predicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The point was used to calibrate the platform's parameters.
    Calibration,
    /// The point was not used for fitting; the simulation predicts it.
    Prediction,
}

impl Role {
    /// `"calibration"` or `"prediction"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Calibration => "calibration",
            Role::Prediction => "prediction",
        }
    }
}

/// A series computed from two simulated series at each x, e.g. the
/// speed-up of one platform over another. Papers often state such ratios
/// ("the PC is about 3x faster") rather than absolute values.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// Unique name among series and derived series.
    pub name: String,
    /// Legend label (defaults to the name).
    pub label: String,
    /// The operation; only `ratio` (numerator / denominator) exists.
    pub op: String,
    /// The series whose metric is divided.
    pub numerator: String,
    /// The series whose metric divides.
    pub denominator: String,
    /// The panel it is drawn in.
    pub panel: String,
}

/// A published value to compare against.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The series it belongs to.
    pub series: String,
    /// The x value (one of the sweep).
    pub x: f64,
    /// The paper's value, in the metric's unit.
    pub value: f64,
    /// Calibration or prediction.
    pub role: Role,
    /// Where in the paper the value is stated.
    pub citation: String,
}

/// What a claim of the paper's text states about the series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// `series[0]` is below `series[1]` at the claim's x (every x run
    /// when none is given).
    Order,
    /// `series[0]` first exceeds `series[1]` at an x inside `(lo, hi]`.
    Crossing,
    /// The series stays within `tol` (relative) of its value at the first
    /// x for every x up to `x`.
    ConstantUpTo,
    /// For x at or above `x[0]` (and up to `x[1]` when given), the series
    /// stays within `tol` (relative) of its value at the last of those x
    /// run ("converges above x").
    ConvergesAfter,
    /// For x at or above `x`, a least-squares line fits the series with
    /// R² at least `r2`.
    LinearAfter,
    /// The series is at least `lower` and/or at most `upper` at the claim's
    /// x: scored as a bound (held or not, with a margin), never as a point.
    Bound,
    /// `series[0] / series[1]` lies in `[lo, hi]` at the claim's x.
    Ratio,
    /// The largest value of the series over the claim's x (every x run
    /// when none is given) lies within `tol` (relative) of `value`: the
    /// text's "a peak of 4.42x", a point the curve reaches, not a bound.
    Peak,
    /// Over the claim's x (every x run when none is given), the series is
    /// smallest at `smallest` and/or largest at `largest`: the text's
    /// "speedups of 1.33x (Bench5) to 2.05x (Bench1)" as an ordering,
    /// whatever the values.
    Extremes,
}

impl ClaimKind {
    /// Every kind, in its TOML spelling.
    pub const ALL: [(&'static str, ClaimKind); 9] = [
        ("order", ClaimKind::Order),
        ("crossing", ClaimKind::Crossing),
        ("constant_up_to", ClaimKind::ConstantUpTo),
        ("converges_after", ClaimKind::ConvergesAfter),
        ("linear_after", ClaimKind::LinearAfter),
        ("bound", ClaimKind::Bound),
        ("ratio", ClaimKind::Ratio),
        ("peak", ClaimKind::Peak),
        ("extremes", ClaimKind::Extremes),
    ];

    /// The TOML spelling (`constant_up_to`).
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(s, _)| *s)
            .unwrap_or("order")
    }

    /// How many series the kind compares.
    pub fn arity(self) -> usize {
        match self {
            ClaimKind::Order | ClaimKind::Crossing | ClaimKind::Ratio => 2,
            _ => 1,
        }
    }
}

/// A checkable statement of the paper's text (an ordering, a crossing,
/// "constant up to", "linear", a bound, a ratio, a peak), evaluated on every run
/// and shown held or not in the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The paper's words, verbatim.
    pub quote: String,
    /// Where they are (`PIO §6.2, Fig. 7`).
    pub section: String,
    /// What is checked.
    pub kind: ClaimKind,
    /// The series (or derived series) compared: two for `order`,
    /// `crossing` and `ratio`, one otherwise.
    pub series: Vec<String>,
    /// The x values the claim is about (each in the sweep); empty: every x
    /// run. `constant_up_to` and `linear_after` have exactly one.
    pub x: Vec<f64>,
    /// `crossing`: the interval `(lo, hi]`; `ratio`: `[lo, hi]`.
    pub lo: Option<f64>,
    /// See [`Claim::lo`].
    pub hi: Option<f64>,
    /// `constant_up_to`, `converges_after`, `peak`: the relative tolerance.
    pub tol: Option<f64>,
    /// `linear_after`: the least R² of the fit.
    pub r2: Option<f64>,
    /// `bound`: the lower bound.
    pub lower: Option<f64>,
    /// `bound`: the upper bound.
    pub upper: Option<f64>,
    /// `peak`: the largest value the text states.
    pub value: Option<f64>,
    /// `extremes`: the x at which the series is smallest.
    pub smallest: Option<f64>,
    /// `extremes`: the x at which the series is largest.
    pub largest: Option<f64>,
    /// Why the tolerance is what it is, when the text does not give it.
    pub why: String,
    /// The verdict the simulator is known to give on the full sweep today
    /// (`true`: held); a known modelling gap is `expect = "not_held"`.
    pub expect_held: bool,
    /// For a claim expected not held: why the simulation does not hold it
    /// (the mechanism it lacks, or where the text contradicts itself), so
    /// a known gap is explained in the report, never just flagged. Required
    /// with `expect = "not_held"`, refused otherwise; empty when held.
    pub why_not_held: String,
}

/// A validated experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// Short name (`cohet-dma`).
    pub name: String,
    /// Title for plots and reports.
    pub title: String,
    /// Paper files.
    pub paper: Vec<String>,
    /// Which figures or tables of the paper this reproduces.
    pub figures: String,
    /// The facts the platform parameters were calibrated on.
    pub calibrated_on: Vec<String>,
    /// Free notes for the report.
    pub notes: Vec<String>,
    /// The x axis.
    pub x: XAxis,
    /// Full sweep.
    pub sweep: Vec<f64>,
    /// Reduced sweep for `--quick` (a subset of `sweep`).
    pub quick: Vec<f64>,
    /// The curves.
    pub series: Vec<Series>,
    /// The plot panels.
    pub panels: Vec<Panel>,
    /// Series computed from other series.
    pub derived: Vec<Derived>,
    /// Paper values.
    pub references: Vec<Reference>,
    /// Checkable statements of the paper's text.
    pub claims: Vec<Claim>,
    /// The file it was read from.
    pub source: String,
    /// What [`Experiment::load`] was called with.
    pub origin: String,
    /// The validated platforms of the series, by [`Series::platform`]
    /// (each file parsed once); empty from [`Experiment::from_toml_str`].
    /// Points run on these, overrides applied to a copy.
    pub platforms: BTreeMap<String, Platform>,
}

/// The names of the shipped experiments, sorted.
pub fn list_experiments() -> Vec<&'static str> {
    crate::embedded::EXPERIMENT_FILES
        .iter()
        .map(|(name, _, _)| *name)
        .collect()
}

impl Experiment {
    /// Loads a shipped experiment by name, or an experiment file by path,
    /// and validates it: workloads, parameters and metrics against
    /// `workloads`, and every referenced platform by loading it once (kept
    /// in [`Experiment::platforms`]).
    pub fn load(name_or_path: &str, workloads: &[WorkloadDecl]) -> Result<Experiment> {
        let (label, text) = locate(
            "experiment",
            crate::embedded::EXPERIMENT_FILES,
            name_or_path,
        )?;
        let mut e = Self::from_toml_str(&label, &text, workloads)?;
        e.origin = name_or_path.to_string();
        // Platforms named by path are relative to the experiment file.
        let base = if label == name_or_path {
            Path::new(name_or_path).parent()
        } else {
            None
        };
        for (i, s) in e.series.iter_mut().enumerate() {
            s.platform = resolve_platform(&s.platform, base);
            if e.platforms.contains_key(&s.platform) {
                continue;
            }
            match Platform::load(&s.platform) {
                Ok(p) => {
                    e.platforms.insert(s.platform.clone(), p);
                }
                // A missing platform is the experiment's error; a broken
                // one is the platform file's own error.
                Err(err) => {
                    return Err(if err.path.is_empty() && err.file == s.platform {
                        ConfigError::new(&label, format!("series[{i}].platform"), err.message)
                    } else {
                        err
                    })
                }
            }
        }
        Ok(e)
    }

    /// The validated platform `name` (as a series names it), loaded with
    /// the experiment.
    pub fn platform(&self, name: &str) -> Result<&Platform> {
        self.platforms.get(name).ok_or_else(|| {
            ConfigError::new(
                &self.source,
                "series",
                format!("platform {name:?} is not one of the experiment's loaded platforms"),
            )
        })
    }

    /// Parses and validates experiment TOML `text` (platforms are not
    /// loaded); `file` labels errors.
    pub fn from_toml_str(file: &str, text: &str, workloads: &[WorkloadDecl]) -> Result<Experiment> {
        crate::parsed::EXPERIMENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let table = parse_toml(file, text)?;
        let mut top = Fields::with_keys(
            file,
            "",
            &table,
            &[
                "experiment",
                "series",
                "panels",
                "derived",
                "reference",
                "claims",
            ],
        )?;
        let header = top.req_table("experiment")?;
        let series_raw = top.opt_array("series")?;
        let panels_raw = top.opt_array("panels")?;
        let derived_raw = top.opt_array("derived")?;
        let refs_raw = top.opt_array("reference")?;
        let claims_raw = top.opt_array("claims")?;
        top.finish()?;

        let mut h = Fields::with_keys(
            file,
            "experiment",
            header,
            &[
                "name",
                "title",
                "paper",
                "figures",
                "calibrated_on",
                "notes",
                "x",
                "sweep",
                "quick",
            ],
        )?;
        let name = h.req_str("name")?;
        let title = h.req_str("title")?;
        let paper = h.strings("paper")?;
        let figures = h.opt_str("figures")?.unwrap_or_default();
        let calibrated_on = h.strings("calibrated_on")?;
        let notes = h.strings("notes")?;
        let x_table = h.req_table("x")?;
        let sweep = h
            .numbers("sweep")?
            .ok_or_else(|| h.err("sweep", "required key missing"))?;
        let quick = h.numbers("quick")?.unwrap_or_else(|| sweep.clone());
        for (i, q) in quick.iter().enumerate() {
            if !sweep.contains(q) {
                return Err(h.err(
                    &format!("quick[{i}]"),
                    format!("{} is not in experiment.sweep", format_float(*q)),
                ));
            }
        }
        h.finish()?;
        let mut xf = Fields::with_keys(file, "experiment.x", x_table, &["name", "label", "log"])?;
        let x = XAxis {
            name: xf.req_str("name")?,
            label: xf.opt_str("label")?.unwrap_or_default(),
            log: xf.opt_bool("log")?.unwrap_or(false),
        };
        xf.finish()?;
        let x = XAxis {
            label: if x.label.is_empty() {
                x.name.clone()
            } else {
                x.label
            },
            ..x
        };

        let panels = tables(file, "panels", panels_raw)?
            .into_iter()
            .map(|(path, t)| {
                let mut f =
                    Fields::with_keys(file, path, t, &["name", "ylabel", "ylog", "histogram_at"])?;
                let p = Panel {
                    name: f.req_str("name")?,
                    ylabel: f.req_str("ylabel")?,
                    ylog: f.opt_bool("ylog")?.unwrap_or(false),
                    histogram_at: f.numbers("histogram_at")?.unwrap_or_default(),
                };
                for (i, v) in p.histogram_at.iter().enumerate() {
                    if !sweep.contains(v) {
                        return Err(f.err(
                            &format!("histogram_at[{i}]"),
                            format!("{} is not in experiment.sweep", format_float(*v)),
                        ));
                    }
                }
                f.finish()?;
                Ok(p)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut panels = panels;
        for (i, p) in panels.iter().enumerate() {
            if panels[..i].iter().any(|q| q.name == p.name) {
                return Err(ConfigError::new(
                    file,
                    format!("panels[{i}].name"),
                    format!("duplicate panel {:?}", p.name),
                ));
            }
        }

        let mut series: Vec<Series> = Vec::new();
        let series_tables = tables(file, "series", series_raw)?;
        if series_tables.is_empty() {
            return Err(ConfigError::new(
                file,
                "series",
                "an experiment needs at least one [[series]]",
            ));
        }
        for (path, t) in series_tables {
            let s = one_series(file, &path, t, &name, workloads, &panels)?;
            if series.iter().any(|o| o.name == s.name) {
                return Err(ConfigError::new(
                    file,
                    format!("{path}.name"),
                    format!("duplicate series {:?}", s.name),
                ));
            }
            series.push(s);
        }
        // Without [[panels]], each metric gets a panel of its own.
        if panels.is_empty() {
            for s in &mut series {
                s.panel = s.metric.clone();
                if !panels.iter().any(|p| p.name == s.metric) {
                    panels.push(Panel {
                        name: s.metric.clone(),
                        ylabel: s.metric.clone(),
                        ylog: false,
                        histogram_at: Vec::new(),
                    });
                }
            }
        }

        let mut derived: Vec<Derived> = Vec::new();
        for (path, t) in tables(file, "derived", derived_raw)? {
            let mut f = Fields::with_keys(
                file,
                path.clone(),
                t,
                &["name", "label", "op", "numerator", "denominator", "panel"],
            )?;
            let dname = f.req_str("name")?;
            if series.iter().any(|o| o.name == dname) || derived.iter().any(|o| o.name == dname) {
                return Err(f.err("name", format!("duplicate series {dname:?}")));
            }
            let label = f.opt_str("label")?.unwrap_or_else(|| dname.clone());
            let op = f.req_str("op")?;
            if op != "ratio" {
                return Err(f.err("op", format!("expected one of ratio, got {op:?}")));
            }
            let mut operand = |key: &str| -> Result<String> {
                let n = f.req_str(key)?;
                if !series.iter().any(|o| o.name == n) {
                    let hint = suggest(&n, series.iter().map(|o| o.name.as_str()));
                    return Err(f.err(key, format!("unknown series {n:?}{hint}")));
                }
                Ok(n)
            };
            let numerator = operand("numerator")?;
            let denominator = operand("denominator")?;
            let panel = match f.opt_str("panel")? {
                Some(p)
                    if panels
                        .iter()
                        .any(|q| q.name == p && !q.histogram_at.is_empty()) =>
                {
                    return Err(f.err(
                        "panel",
                        format!(
                            "panel {p:?} draws histograms: a derived series has no samples to bin"
                        ),
                    ))
                }
                Some(p) if panels.iter().any(|q| q.name == p) => p,
                Some(p) => {
                    let hint = suggest(&p, panels.iter().map(|q| q.name.as_str()));
                    return Err(f.err("panel", format!("unknown panel {p:?}{hint}")));
                }
                // Without a panel, a derived series gets one of its own.
                None => {
                    panels.push(Panel {
                        name: dname.clone(),
                        ylabel: format!("{numerator} / {denominator}"),
                        ylog: false,
                        histogram_at: Vec::new(),
                    });
                    dname.clone()
                }
            };
            f.finish()?;
            derived.push(Derived {
                name: dname,
                label,
                op,
                numerator,
                denominator,
                panel,
            });
        }

        let mut references = Vec::new();
        for (path, t) in tables(file, "reference", refs_raw)? {
            let mut f =
                Fields::with_keys(file, path, t, &["series", "x", "value", "role", "citation"])?;
            let s = f.req_str("series")?;
            if !series.iter().any(|o| o.name == s) && !derived.iter().any(|o| o.name == s) {
                let names = series
                    .iter()
                    .map(|o| o.name.as_str())
                    .chain(derived.iter().map(|o| o.name.as_str()));
                let hint = suggest(&s, names);
                return Err(f.err("series", format!("unknown series {s:?}{hint}")));
            }
            let x = f.req_f64("x")?;
            if !sweep.contains(&x) {
                return Err(f.err(
                    "x",
                    format!("{} is not in experiment.sweep", format_float(x)),
                ));
            }
            let value = f.req_f64("value")?;
            let role = match f.req_str("role")?.as_str() {
                "calibration" => Role::Calibration,
                "prediction" => Role::Prediction,
                other => {
                    return Err(f.err(
                        "role",
                        format!("expected one of calibration|prediction, got {other:?}"),
                    ))
                }
            };
            let citation = f.req_str("citation")?;
            if citation.trim().is_empty() {
                return Err(f.err("citation", "must not be empty"));
            }
            f.finish()?;
            references.push(Reference {
                series: s,
                x,
                value,
                role,
                citation,
            });
        }

        let names: Vec<&str> = series
            .iter()
            .map(|o| o.name.as_str())
            .chain(derived.iter().map(|o| o.name.as_str()))
            .collect();
        let mut claims = Vec::new();
        for (path, t) in tables(file, "claims", claims_raw)? {
            claims.push(one_claim(file, &path, t, &names, &sweep)?);
        }

        Ok(Experiment {
            name,
            title,
            paper,
            figures,
            calibrated_on,
            notes,
            x,
            sweep,
            quick,
            series,
            panels,
            derived,
            references,
            claims,
            source: file.to_string(),
            origin: file.to_string(),
            platforms: BTreeMap::new(),
        })
    }

    /// The series named `name`.
    pub fn series(&self, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == name)
    }

    /// The x values of the full or quick sweep.
    pub fn x_values(&self, quick: bool) -> &[f64] {
        if quick {
            &self.quick
        } else {
            &self.sweep
        }
    }
}

fn one_claim(file: &str, path: &str, t: &Table, names: &[&str], sweep: &[f64]) -> Result<Claim> {
    // Only the keys of the claim's kind are read; finish() rejects others.
    let mut f = Fields::new(file, path, t);
    let quote = f.req_str("quote")?;
    if quote.trim().is_empty() {
        return Err(f.err("quote", "must not be empty"));
    }
    let section = f.req_str("section")?;
    if section.trim().is_empty() {
        return Err(f.err("section", "must not be empty"));
    }
    let kind_s = f.req_str("kind")?;
    let Some(kind) = ClaimKind::ALL
        .iter()
        .find(|(s, _)| *s == kind_s)
        .map(|(_, k)| *k)
    else {
        let all: Vec<&str> = ClaimKind::ALL.iter().map(|(s, _)| *s).collect();
        let hint = suggest(&kind_s, all.iter().copied());
        return Err(f.err(
            "kind",
            format!("expected one of {}, got {kind_s:?}{hint}", all.join("|")),
        ));
    };
    let series = match f.get("series") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(_)) => f.strings("series")?,
        None => return Err(f.err("series", "required key missing")),
        Some(v) => {
            return Err(f.err(
                "series",
                format!("expected string or array of strings, got {}", describe(v)),
            ))
        }
    };
    if series.len() != kind.arity() {
        return Err(f.err(
            "series",
            format!(
                "a {} claim names {} series, got {}",
                kind.as_str(),
                kind.arity(),
                series.len()
            ),
        ));
    }
    for (i, s) in series.iter().enumerate() {
        if !names.contains(&s.as_str()) {
            let hint = suggest(s, names.iter().copied());
            return Err(f.err(&format!("series[{i}]"), format!("no series {s:?}{hint}")));
        }
    }
    let x = match kind {
        ClaimKind::Crossing => Vec::new(),
        _ => match f.get("x") {
            None => Vec::new(),
            Some(Value::Integer(n)) => vec![*n as f64],
            Some(Value::Float(v)) if v.is_finite() => vec![*v],
            Some(Value::Array(_)) => f.numbers("x")?.unwrap_or_default(),
            Some(v) => {
                return Err(f.err(
                    "x",
                    format!("expected number or array of numbers, got {}", describe(v)),
                ))
            }
        },
    };
    for (i, v) in x.iter().enumerate() {
        if !sweep.contains(v) {
            return Err(f.err(
                &format!("x[{i}]"),
                format!("{} is not in experiment.sweep", format_float(*v)),
            ));
        }
    }
    if matches!(kind, ClaimKind::ConstantUpTo | ClaimKind::LinearAfter) && x.len() != 1 {
        return Err(f.err(
            "x",
            format!("a {} claim needs exactly one x", kind.as_str()),
        ));
    }
    if kind == ClaimKind::ConvergesAfter && !(x.len() == 1 || x.len() == 2 && x[0] < x[1]) {
        return Err(f.err(
            "x",
            "a converges_after claim needs one x (from) or two increasing ones (from, to)",
        ));
    }
    let (mut lo, mut hi, mut tol, mut r2, mut lower, mut upper, mut value) =
        (None, None, None, None, None, None, None);
    let (mut smallest, mut largest) = (None, None);
    match kind {
        ClaimKind::Order => {}
        ClaimKind::Extremes => {
            (smallest, largest) = (f.opt_f64("smallest")?, f.opt_f64("largest")?);
            if smallest.is_none() && largest.is_none() {
                return Err(f.err(
                    "smallest",
                    "an extremes claim needs smallest and/or largest (an x)",
                ));
            }
            if smallest.is_some() && smallest == largest {
                return Err(f.err("largest", "must differ from smallest"));
            }
            if x.len() == 1 {
                return Err(f.err("x", "an extremes claim compares at least two x"));
            }
            for (key, at) in [("smallest", smallest), ("largest", largest)] {
                let Some(v) = at else { continue };
                let within = if x.is_empty() { sweep } else { &x[..] };
                if !within.contains(&v) {
                    let of = if x.is_empty() {
                        "experiment.sweep"
                    } else {
                        "the claim's x"
                    };
                    return Err(f.err(key, format!("{} is not in {of}", format_float(v))));
                }
            }
        }
        ClaimKind::Crossing | ClaimKind::Ratio => {
            let (l, h) = (f.req_f64("lo")?, f.req_f64("hi")?);
            if l >= h {
                return Err(f.err("hi", format!("must be above lo ({})", format_float(l))));
            }
            (lo, hi) = (Some(l), Some(h));
        }
        ClaimKind::ConstantUpTo | ClaimKind::ConvergesAfter | ClaimKind::Peak => {
            if kind == ClaimKind::Peak {
                let v = f.req_f64("value")?;
                if v == 0.0 {
                    return Err(f.err("value", "a peak's value is not 0 (its error is relative)"));
                }
                value = Some(v);
            }
            let v = f.req_f64("tol")?;
            if !(v > 0.0 && v < 1.0) {
                return Err(f.err("tol", "a relative tolerance, in (0, 1)"));
            }
            tol = Some(v);
        }
        ClaimKind::LinearAfter => {
            let v = f.req_f64("r2")?;
            if !(v > 0.0 && v <= 1.0) {
                return Err(f.err("r2", "an R², in (0, 1]"));
            }
            r2 = Some(v);
        }
        ClaimKind::Bound => {
            (lower, upper) = (f.opt_f64("lower")?, f.opt_f64("upper")?);
            match (lower, upper) {
                (None, None) => return Err(f.err("lower", "a bound needs lower and/or upper")),
                (Some(l), Some(u)) if l >= u => {
                    return Err(f.err(
                        "upper",
                        format!("must be above lower ({})", format_float(l)),
                    ))
                }
                _ => {}
            }
        }
    }
    let why = f.opt_str("why")?.unwrap_or_default();
    if matches!(
        kind,
        ClaimKind::ConstantUpTo
            | ClaimKind::ConvergesAfter
            | ClaimKind::LinearAfter
            | ClaimKind::Peak
    ) && why.trim().is_empty()
    {
        return Err(f.err(
            "why",
            format!(
                "a {} claim states why its tolerance is what it is",
                kind.as_str()
            ),
        ));
    }
    let expect_held = match f.opt_str("expect")?.as_deref() {
        None | Some("held") => true,
        Some("not_held") => false,
        Some(other) => {
            return Err(f.err(
                "expect",
                format!("expected one of held|not_held, got {other:?}"),
            ))
        }
    };
    let why_not_held = f.opt_str("why_not_held")?.unwrap_or_default();
    match (expect_held, why_not_held.trim().is_empty()) {
        (false, true) => {
            return Err(f.err(
                "why_not_held",
                "a claim expected not_held says why (the mechanism the simulation lacks, or the contradiction)",
            ))
        }
        (true, false) => {
            return Err(f.err(
                "why_not_held",
                "only a claim with expect = \"not_held\" says why it is not held",
            ))
        }
        _ => {}
    }
    let own: &[&str] = match kind {
        ClaimKind::Order => &["x"],
        ClaimKind::Crossing => &["lo", "hi"],
        ClaimKind::ConstantUpTo | ClaimKind::ConvergesAfter => &["x", "tol"],
        ClaimKind::LinearAfter => &["x", "r2"],
        ClaimKind::Bound => &["x", "lower", "upper"],
        ClaimKind::Ratio => &["x", "lo", "hi"],
        ClaimKind::Peak => &["x", "value", "tol"],
        ClaimKind::Extremes => &["x", "smallest", "largest"],
    };
    for key in [
        "x", "lo", "hi", "tol", "r2", "lower", "upper", "value", "smallest", "largest",
    ] {
        if t.contains_key(key) && !own.contains(&key) {
            return Err(f.err(
                key,
                format!(
                    "not a key of a {} claim (its own: {})",
                    kind.as_str(),
                    own.join(", ")
                ),
            ));
        }
    }
    f.finish()?;
    Ok(Claim {
        quote,
        section,
        kind,
        series,
        x,
        lo,
        hi,
        tol,
        r2,
        lower,
        upper,
        value,
        smallest,
        largest,
        why,
        expect_held,
        why_not_held,
    })
}

fn resolve_platform(platform: &str, base: Option<&Path>) -> String {
    let is_path = platform.ends_with(".toml") || platform.contains('/');
    match base {
        Some(dir) if is_path && Path::new(platform).is_relative() => {
            dir.join(platform).to_string_lossy().into_owned()
        }
        _ => platform.to_string(),
    }
}

/// The tables of an array of tables, each with its path (`series[0]`).
fn tables<'a>(
    file: &str,
    key: &str,
    items: Option<&'a Vec<Value>>,
) -> Result<Vec<(String, &'a Table)>> {
    let mut out = Vec::new();
    for (i, v) in items.into_iter().flatten().enumerate() {
        let path = format!("{key}[{i}]");
        match v {
            Value::Table(t) => out.push((path, t)),
            other => {
                return Err(ConfigError::new(
                    file,
                    path,
                    format!("expected table, got {}", describe(other)),
                ))
            }
        }
    }
    Ok(out)
}

fn one_series(
    file: &str,
    path: &str,
    t: &Table,
    experiment: &str,
    workloads: &[WorkloadDecl],
    panels: &[Panel],
) -> Result<Series> {
    let mut f = Fields::with_keys(
        file,
        path,
        t,
        &[
            "name", "label", "platform", "workload", "params", "metric", "panel",
        ],
    )?;
    let name = f.req_str("name")?;
    let label = f.opt_str("label")?.unwrap_or_else(|| name.clone());
    let platform = f.req_str("platform")?;
    let workload = f.req_str("workload")?;
    let Some(decl) = workloads.iter().find(|w| w.name == workload) else {
        let hint = suggest(&workload, workloads.iter().map(|w| w.name));
        return Err(f.err("workload", format!("unknown workload {workload:?}{hint}")));
    };
    let raw_params = f.opt_table("params")?;
    let metric = f.req_str("metric")?;
    if !decl.metrics.contains(&metric.as_str()) {
        let hint = suggest(&metric, decl.metrics.iter().copied());
        return Err(f.err(
            "metric",
            format!("unknown metric {metric:?} of workload {workload}{hint}"),
        ));
    }
    let panel = f.opt_str("panel")?.unwrap_or_default();
    if !panels.is_empty() && !panels.iter().any(|p| p.name == panel) {
        let hint = suggest(&panel, panels.iter().map(|p| p.name.as_str()));
        return Err(f.err("panel", format!("unknown panel {panel:?}{hint}")));
    }
    f.finish()?;

    let provenance = format!("experiment {experiment}");
    let mut params = Params::new();
    for (key, value) in raw_params.into_iter().flatten() {
        let at = format!("{path}.params.{key}");
        let Some(spec) = decl.params.iter().find(|p| p.name == key) else {
            let hint = suggest(key, decl.params.iter().map(|p| p.name));
            return Err(ConfigError::new(
                file,
                at,
                format!("unknown parameter of workload {workload}{hint}"),
            ));
        };
        let v = check_param(spec, value).map_err(|m| ConfigError::new(file, &at, m))?;
        params.set(spec.name, v, &provenance);
    }
    for p in decl.params {
        if params.get(p.name).is_some() {
            continue;
        }
        match p.default.value() {
            Some(v) => params.set(p.name, v, "default"),
            None => {
                return Err(ConfigError::new(
                    file,
                    format!("{path}.params.{}", p.name),
                    format!("required parameter of workload {workload} missing"),
                ))
            }
        }
    }
    if let Some(check) = decl.check {
        check(&params).map_err(|problem| {
            ConfigError::new(
                file,
                format!("{path}.params.{}", problem.param),
                problem.message,
            )
        })?;
    }
    Ok(Series {
        name,
        label,
        platform,
        workload,
        params,
        metric,
        panel,
    })
}
