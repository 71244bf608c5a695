//! # ccsim-py: the `ccsim._native` extension module
//!
//! The one bindings crate of ccsim. It is deliberately thin: every function
//! converts Python values to the Rust types of `ccsim-platform`,
//! `ccsim-platform`, `ccsim-experiments` and `ccsim-kernel`, makes one call,
//! and converts the answer back to plain Python data (dicts, lists, floats).
//! Policy (sweeps, resuming, plots, reports, the CLI) lives in the Python
//! package `ccsim`, which is the supported interface; the stubs in
//! `python/ccsim/_native.pyi` describe this module.
//!
//! ```text
//!  ccsim (Python) ──► _native.Platform.load / Experiment.load ──► ccsim_platform (validated once)
//!                 ──► _native.run_point ──────────────────────► ccsim_experiments::run_point
//!                       (on the experiment's loaded platforms: no file is parsed per point)
//!                 ──► _native.component_types / workloads ────► the static declarations
//!                 ──► _native.kernel_bench_json ──────────────► ccsim_kernel::bench
//!                 ──► _native.protocol_* ─────────────────────► ccsim_protocol (generate, check, export)
//! ```
//!
//! Errors are raised as the exception classes of `ccsim.errors` (one file
//! maps every Rust error): a [`ccsim_platform::ConfigError`] becomes
//! `ccsim.errors.ConfigError(file, path, message)`.
//!
//! Handles pickle by rebuilding from their config: `__reduce__` returns
//! `Platform.load` (or `Experiment.load`) with the original name or path and
//! the overrides, so a handle sent to another process is re-validated there.

use ccsim_experiments::Point;
use ccsim_kernel::component::{ParamDefault, ParamKind, ParamRange, ParamSpec, ParamValue, Params};
use ccsim_platform::{ConfigError, Experiment, Platform};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

mod errors;
mod protocol;

/// Maps a config error to `ccsim.errors.ConfigError` (see [`errors`]).
fn config_err(py: Python<'_>, e: ConfigError) -> PyErr {
    errors::config_error(py, e)
}

fn value_to_py(py: Python<'_>, v: &ParamValue) -> PyResult<PyObject> {
    match v {
        ParamValue::Int(i) => i.into_py_any(py),
        ParamValue::Float(x) => x.into_py_any(py),
        ParamValue::Bool(b) => b.into_py_any(py),
        ParamValue::Str(s) => s.into_py_any(py),
    }
}

/// Converts a Python scalar to a [`ParamValue`]; other types are a config
/// error at `platform.<key>` of `overrides`.
fn py_to_value(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<ParamValue> {
    // bool first: Python's bool is a subclass of int.
    if v.is_instance_of::<PyBool>() {
        return Ok(ParamValue::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<i64>().map(ParamValue::Int).map_err(|_| {
            config_err(
                py,
                ConfigError::new(
                    "overrides",
                    format!("platform.{key}"),
                    "integer out of range",
                ),
            )
        });
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(ParamValue::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(ParamValue::Str(v.extract()?));
    }
    let type_name = v.get_type().name()?.to_string();
    Err(config_err(
        py,
        ConfigError::new(
            "overrides",
            format!("platform.{key}"),
            format!("expected a number, boolean or string, got a {type_name}"),
        ),
    ))
}

fn typed_overrides(
    py: Python<'_>,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, ParamValue)>> {
    let mut out = Vec::new();
    if let Some(d) = overrides {
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let value = py_to_value(py, &key, &v)?;
            out.push((key, value));
        }
    }
    Ok(out)
}

fn params_to_py<'py>(py: Python<'py>, params: &Params) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, (value, provenance)) in params.iter() {
        d.set_item(name, (value_to_py(py, value)?, provenance))?;
    }
    Ok(d)
}

fn param_spec_to_py<'py>(py: Python<'py>, p: &ParamSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", p.name)?;
    d.set_item("kind", p.kind.to_string())?;
    let choices: Vec<&str> = match p.kind {
        ParamKind::Enum(options) => options.to_vec(),
        _ => Vec::new(),
    };
    d.set_item("choices", choices)?;
    let default = match p.default.value() {
        Some(v) => value_to_py(py, &v)?,
        None => py.None(),
    };
    d.set_item("default", default)?;
    d.set_item("required", matches!(p.default, ParamDefault::Required))?;
    d.set_item("unit", p.unit)?;
    d.set_item("range", range_to_py(py, &p.range, p.kind)?)?;
    d.set_item("from", p.from)?;
    d.set_item("description", p.description)?;
    Ok(d)
}

/// `{"text", "min", "min_inclusive", "max", "max_inclusive", "one_of",
/// "power_of_two"}`; `text` is `""` for booleans, strings and enums.
fn range_to_py<'py>(
    py: Python<'py>,
    r: &ParamRange,
    kind: ParamKind,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let numeric = matches!(kind, ParamKind::Int | ParamKind::Float);
    d.set_item(
        "text",
        if numeric {
            r.to_string()
        } else {
            String::new()
        },
    )?;
    d.set_item("min", r.min.map(|(v, _)| v))?;
    d.set_item("min_inclusive", r.min.map(|(_, inclusive)| inclusive))?;
    d.set_item("max", r.max.map(|(v, _)| v))?;
    d.set_item("max_inclusive", r.max.map(|(_, inclusive)| inclusive))?;
    d.set_item("one_of", r.one_of.to_vec())?;
    d.set_item("power_of_two", r.power_of_two)?;
    Ok(d)
}

/// A validated platform: component instances with typed parameters, each
/// with its provenance.
#[pyclass(module = "ccsim._native", name = "Platform", frozen)]
struct PyPlatform {
    inner: Platform,
}

#[pymethods]
impl PyPlatform {
    /// Loads a shipped platform by name or a platform file by path, then
    /// applies `overrides` (`{"pcie.lanes": 8}`, typed) and `text_overrides`
    /// (`[("pcie.lanes", "8")]`, parsed in the declared kind).
    #[staticmethod]
    #[pyo3(signature = (name_or_path, overrides = None, text_overrides = None))]
    fn load(
        py: Python<'_>,
        name_or_path: &str,
        overrides: Option<&Bound<'_, PyDict>>,
        text_overrides: Option<Vec<(String, String)>>,
    ) -> PyResult<Self> {
        let typed = typed_overrides(py, overrides)?;
        let p = Platform::load(name_or_path)
            .and_then(|p| p.with_all_overrides(&typed, &text_overrides.unwrap_or_default()))
            .map_err(|e| config_err(py, e))?;
        Ok(Self { inner: p })
    }

    /// Short name (`cohet`).
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    /// One line saying what hardware this is.
    #[getter]
    fn description(&self) -> &str {
        &self.inner.description
    }
    /// Paper files the parameters come from.
    #[getter]
    fn paper(&self) -> Vec<String> {
        self.inner.paper.clone()
    }
    /// The file it was read from.
    #[getter]
    fn source(&self) -> &str {
        &self.inner.source
    }
    /// The name or path it was loaded with.
    #[getter]
    fn origin(&self) -> &str {
        &self.inner.origin
    }
    /// The applied overrides as `{key: value}`, in order.
    #[getter]
    fn overrides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.inner.overrides {
            d.set_item(k, value_to_py(py, v)?)?;
        }
        Ok(d)
    }
    /// `{instance: {"type": type_name, "params": {name: (value, provenance)}}}`.
    fn components<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, c) in &self.inner.components {
            let entry = PyDict::new(py);
            entry.set_item("type", &c.type_name)?;
            entry.set_item("params", params_to_py(py, &c.params)?)?;
            d.set_item(name, entry)?;
        }
        Ok(d)
    }
    /// `{name: {"description", "protocol", "line_bytes": (value, provenance),
    /// "header_bytes": (value, provenance), "agents": [{"name", "instance",
    /// "role", "memory" (directory controllers, table-agent homes), "protocol" (if not the
    /// system's)}], "components": [{"name",
    /// "instance"}], "links": [{"a", "b", "instance"}]}}`: the systems
    /// declared as data.
    fn systems<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, sys) in &self.inner.systems {
            let e = PyDict::new(py);
            e.set_item("description", &sys.description)?;
            e.set_item("protocol", &sys.protocol)?;
            e.set_item("line_bytes", (sys.line_bytes, &sys.line_bytes_from))?;
            e.set_item("header_bytes", (sys.header_bytes, &sys.header_bytes_from))?;
            let node = |n: &ccsim_platform::SystemNode, d: &Bound<'py, PyDict>| {
                d.set_item("name", &n.name)?;
                d.set_item("instance", &n.instance)?;
                if let Some(r) = &n.role {
                    d.set_item("role", r)?;
                }
                if let Some(m) = &n.memory {
                    d.set_item("memory", m)?;
                }
                if let Some(p) = &n.protocol {
                    d.set_item("protocol", p)?;
                }
                Ok(())
            };
            e.set_item("agents", list_of(py, &sys.agents, node)?)?;
            e.set_item("components", list_of(py, &sys.components, node)?)?;
            let links = list_of(py, &sys.links, |l, ld| {
                ld.set_item("a", format!("{}.{}", l.a.0, l.a.1))?;
                ld.set_item("b", format!("{}.{}", l.b.0, l.b.1))?;
                ld.set_item("instance", &l.instance)
            })?;
            e.set_item("links", links)?;
            d.set_item(name, e)?;
        }
        Ok(d)
    }
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let load = slf.get_type().getattr("load")?;
        let me = slf.get();
        let args = PyTuple::new(
            py,
            [
                me.inner.origin.clone().into_py_any(py)?,
                me.overrides(py)?.into_py_any(py)?,
            ],
        )?;
        Ok((load, args))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<Self>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }
    fn __repr__(&self) -> String {
        format!(
            "Platform({:?}, {} components, {} overrides)",
            self.inner.origin,
            self.inner.components.len(),
            self.inner.overrides.len()
        )
    }
}

/// A validated experiment: sweep, series, panels and reference points.
#[pyclass(module = "ccsim._native", name = "Experiment", frozen)]
struct PyExperiment {
    inner: Experiment,
}

#[pymethods]
impl PyExperiment {
    /// Loads a shipped experiment by name or an experiment file by path, and
    /// validates it with every platform it uses (each parsed once and kept).
    #[staticmethod]
    fn load(py: Python<'_>, name_or_path: &str) -> PyResult<Self> {
        let e = Experiment::load(name_or_path, &ccsim_experiments::workload_decls())
            .map_err(|e| config_err(py, e))?;
        Ok(Self { inner: e })
    }
    /// The experiment's platform `name` (as its series name it), loaded with
    /// the experiment, with `overrides` and `text_overrides` applied to a
    /// copy (see `Platform.load`). Parses no file.
    #[pyo3(signature = (name, overrides = None, text_overrides = None))]
    fn platform(
        &self,
        py: Python<'_>,
        name: &str,
        overrides: Option<&Bound<'_, PyDict>>,
        text_overrides: Option<Vec<(String, String)>>,
    ) -> PyResult<PyPlatform> {
        let typed = typed_overrides(py, overrides)?;
        let p = self
            .inner
            .platform(name)
            .and_then(|p| p.with_all_overrides(&typed, &text_overrides.unwrap_or_default()))
            .map_err(|e| config_err(py, e))?;
        Ok(PyPlatform { inner: p })
    }
    /// Short name (`cohet-dma`).
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    /// The file it was read from.
    #[getter]
    fn source(&self) -> &str {
        &self.inner.source
    }
    /// The name or path it was loaded with.
    #[getter]
    fn origin(&self) -> &str {
        &self.inner.origin
    }
    /// The whole experiment as plain data (see the stubs for the keys).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let e = &self.inner;
        let d = PyDict::new(py);
        d.set_item("name", &e.name)?;
        d.set_item("title", &e.title)?;
        d.set_item("paper", e.paper.clone())?;
        d.set_item("figures", &e.figures)?;
        d.set_item("calibrated_on", e.calibrated_on.clone())?;
        d.set_item("notes", e.notes.clone())?;
        d.set_item("source", &e.source)?;
        let x = PyDict::new(py);
        x.set_item("name", &e.x.name)?;
        x.set_item("label", &e.x.label)?;
        x.set_item("log", e.x.log)?;
        d.set_item("x", x)?;
        d.set_item("sweep", e.sweep.clone())?;
        d.set_item("quick", e.quick.clone())?;
        let series = PyList::empty(py);
        for s in &e.series {
            let sd = PyDict::new(py);
            sd.set_item("name", &s.name)?;
            sd.set_item("label", &s.label)?;
            sd.set_item("platform", &s.platform)?;
            sd.set_item("workload", &s.workload)?;
            sd.set_item("params", params_to_py(py, &s.params)?)?;
            sd.set_item("metric", &s.metric)?;
            sd.set_item("panel", &s.panel)?;
            series.append(sd)?;
        }
        d.set_item("series", series)?;
        let panels = PyList::empty(py);
        for p in &e.panels {
            let pd = PyDict::new(py);
            pd.set_item("name", &p.name)?;
            pd.set_item("ylabel", &p.ylabel)?;
            pd.set_item("ylog", p.ylog)?;
            pd.set_item("histogram_at", p.histogram_at.clone())?;
            panels.append(pd)?;
        }
        d.set_item("panels", panels)?;
        let derived = PyList::empty(py);
        for v in &e.derived {
            let vd = PyDict::new(py);
            vd.set_item("name", &v.name)?;
            vd.set_item("label", &v.label)?;
            vd.set_item("op", &v.op)?;
            vd.set_item("numerator", &v.numerator)?;
            vd.set_item("denominator", &v.denominator)?;
            vd.set_item("panel", &v.panel)?;
            derived.append(vd)?;
        }
        d.set_item("derived", derived)?;
        let refs = PyList::empty(py);
        for r in &e.references {
            let rd = PyDict::new(py);
            rd.set_item("series", &r.series)?;
            rd.set_item("x", r.x)?;
            rd.set_item("value", r.value)?;
            rd.set_item("role", r.role.as_str())?;
            rd.set_item("citation", &r.citation)?;
            refs.append(rd)?;
        }
        d.set_item("references", refs)?;
        let claims = PyList::empty(py);
        for c in &e.claims {
            let cd = PyDict::new(py);
            cd.set_item("quote", &c.quote)?;
            cd.set_item("section", &c.section)?;
            cd.set_item("kind", c.kind.as_str())?;
            cd.set_item("series", c.series.clone())?;
            cd.set_item("x", c.x.clone())?;
            cd.set_item("lo", c.lo)?;
            cd.set_item("hi", c.hi)?;
            cd.set_item("tol", c.tol)?;
            cd.set_item("r2", c.r2)?;
            cd.set_item("lower", c.lower)?;
            cd.set_item("upper", c.upper)?;
            cd.set_item("value", c.value)?;
            cd.set_item("smallest", c.smallest)?;
            cd.set_item("largest", c.largest)?;
            cd.set_item("why", &c.why)?;
            cd.set_item("expect", if c.expect_held { "held" } else { "not_held" })?;
            cd.set_item("why_not_held", &c.why_not_held)?;
            claims.append(cd)?;
        }
        d.set_item("claims", claims)?;
        Ok(d)
    }
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let load = slf.get_type().getattr("load")?;
        let args = PyTuple::new(py, [slf.get().inner.origin.clone()])?;
        Ok((load, args))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<Self>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }
    fn __repr__(&self) -> String {
        format!(
            "Experiment({:?}, {} series)",
            self.inner.origin,
            self.inner.series.len()
        )
    }
}

/// Runs one point of `series` of `experiment` at `x` and returns
/// `{"metrics": {..}, "stats": {..}, "trace_json": str | None,
/// "trace_events": str | None, "trace_hash": str}` (with `trace`, the Chrome
/// trace JSON and, where the workload keeps them, the messages and the
/// components' notes as data for the Perfetto writer).
/// The point runs on the platform the experiment loaded, with the overrides
/// applied to a copy: no file is parsed, and the call is a pure function of
/// its arguments.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // mirrors the Python keyword arguments
#[pyo3(signature = (experiment, series, x, seed = 0, overrides = None, text_overrides = None, trace = false))]
fn run_point<'py>(
    py: Python<'py>,
    experiment: &Bound<'py, PyExperiment>,
    series: &str,
    x: f64,
    seed: u64,
    overrides: Option<&Bound<'py, PyDict>>,
    text_overrides: Option<Vec<(String, String)>>,
    trace: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let e = &experiment.get().inner;
    let Some(s) = e.series(series) else {
        let msg = format!("no series {series:?} in experiment {}", e.name);
        return Err(config_err(py, ConfigError::new(&e.source, "series", msg)));
    };
    let typed = typed_overrides(py, overrides)?;
    let text = text_overrides.unwrap_or_default();
    let base = e.platform(&s.platform).map_err(|err| config_err(py, err))?;
    let overridden;
    let platform = if typed.is_empty() && text.is_empty() {
        base
    } else {
        overridden = base
            .with_all_overrides(&typed, &text)
            .map_err(|err| config_err(py, err))?;
        &overridden
    };
    let point = Point {
        platform,
        x_name: &e.x.name,
        x,
        params: &s.params,
        seed,
        trace,
    };
    run_workload(py, &s.workload, &point)
}

/// Runs workload `workload` at `x_name = x` directly on a platform (no
/// experiment file): `params` are the workload's parameters by name.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // mirrors the Python keyword arguments
#[pyo3(signature = (platform, workload, x_name, x, params = None, seed = 0, trace = false))]
fn run_platform_workload<'py>(
    py: Python<'py>,
    platform: &Bound<'py, PyPlatform>,
    workload: &str,
    x_name: &str,
    x: f64,
    params: Option<&Bound<'py, PyDict>>,
    seed: u64,
    trace: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let mut p = Params::new();
    for (k, v) in typed_overrides(py, params)? {
        p.set(&k, v, "argument");
    }
    let point = Point {
        platform: &platform.get().inner,
        x_name,
        x,
        params: &p,
        seed,
        trace,
    };
    run_workload(py, workload, &point)
}

#[allow(clippy::too_many_arguments)]
fn run_workload<'py>(
    py: Python<'py>,
    workload: &str,
    point: &Point<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    use ccsim_experiments::RunError;
    use pyo3::types::IntoPyDict;
    let (x_name, x) = (point.x_name, point.x);
    // The simulation holds no Python objects: let other threads run.
    let result = py.allow_threads(|| ccsim_experiments::run(workload, point));
    let r = match result {
        Ok(r) => r,
        Err(RunError::Config(e)) => return Err(config_err(py, e)),
        Err(RunError::Workload { message }) => {
            return Err(errors::simulation_error(
                py,
                &format!("{workload} at {x_name}={x}: {message}"),
            ))
        }
        Err(RunError::Violation { message }) => {
            return Err(errors::violation_found(
                py,
                &format!("{workload} at {x_name}={x}: {message}"),
            ))
        }
    };
    let d = PyDict::new(py);
    d.set_item(
        "metrics",
        r.metrics.into_iter().collect::<Vec<_>>().into_py_dict(py)?,
    )?;
    d.set_item(
        "stats",
        r.stats.into_iter().collect::<Vec<_>>().into_py_dict(py)?,
    )?;
    d.set_item("trace_json", r.trace_json)?;
    d.set_item("trace_events", r.trace_events)?;
    d.set_item("trace_hash", r.trace_hash)?;
    Ok(d)
}

/// A list with one dict per item.
fn list_of<'py, T>(
    py: Python<'py>,
    items: &[T],
    dict: impl Fn(&T, &Bound<'py, PyDict>) -> PyResult<()>,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for item in items {
        let d = PyDict::new(py);
        dict(item, &d)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Every component type: `{"type", "description", "params": [..], "ports": [..], "stats": [..]}`.
#[pyfunction]
fn component_types(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    list_of(py, &ccsim_platform::registry(), |spec, d| {
        d.set_item("type", spec.type_name)?;
        d.set_item("description", spec.description)?;
        let params = PyList::empty(py);
        for p in spec.params {
            params.append(param_spec_to_py(py, p)?)?;
        }
        d.set_item("params", params)?;
        let ports = list_of(py, spec.ports, |p, pd| {
            pd.set_item("name", p.name)?;
            pd.set_item("required", p.required)?;
            pd.set_item("description", p.description)
        })?;
        d.set_item("ports", ports)?;
        let stats = list_of(py, spec.stats, |s, sd| {
            sd.set_item("name", s.name)?;
            sd.set_item("kind", format!("{:?}", s.kind).to_lowercase())?;
            sd.set_item("unit", s.unit)?;
            sd.set_item("description", s.description)
        })?;
        d.set_item("stats", stats)
    })
}

/// Every workload: `{"name", "description", "params": [..], "metrics": [..]}`.
#[pyfunction]
fn workloads(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    list_of(py, &ccsim_experiments::workloads(), |w, d| {
        d.set_item("name", w.name)?;
        d.set_item("description", w.description)?;
        let params = PyList::empty(py);
        for p in w.params {
            params.append(param_spec_to_py(py, p)?)?;
        }
        d.set_item("params", params)?;
        let metrics = list_of(py, w.metrics, |m, md| {
            md.set_item("name", m.name)?;
            md.set_item("unit", m.unit)?;
            md.set_item("description", m.description)
        })?;
        d.set_item("metrics", metrics)
    })
}

/// Names of the shipped platforms.
#[pyfunction]
fn list_platforms() -> Vec<&'static str> {
    ccsim_platform::list_platforms()
}

/// Names of the shipped experiments.
#[pyfunction]
fn list_experiments() -> Vec<&'static str> {
    ccsim_platform::list_experiments()
}

/// `{"platforms": n, "experiments": m}`: the platform and experiment texts
/// parsed so far in this process (tests check that a run parses each once).
#[pyfunction]
fn parse_counts(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let c = ccsim_platform::parse_counts();
    let d = PyDict::new(py);
    d.set_item("platforms", c.platforms)?;
    d.set_item("experiments", c.experiments)?;
    Ok(d)
}

/// The text of a shipped file: `kind` is `"platform"` or `"experiment"`.
#[pyfunction]
fn shipped_text(kind: &str, name: &str) -> Option<&'static str> {
    ccsim_platform::shipped_text(kind, name)
}

/// The coherent benchmark's speed run alone (`platform` enzian or cohet,
/// `transactions` reads, checks off); returns the kernel events. What
/// `ccsim bench coherent --instructions` counts under callgrind.
#[pyfunction]
fn coherent_speed_run(py: Python<'_>, platform: &str, transactions: u64) -> PyResult<u64> {
    py.allow_threads(|| ccsim_experiments::bench::speed_run(platform, transactions))
        .map_err(PyValueError::new_err)
}

/// Runs the kernel benchmark for about `events` events and returns its
/// report as JSON (see `ccsim_kernel::bench::KernelBenchReport`).
#[pyfunction]
fn kernel_bench_json(py: Python<'_>, events: u64) -> PyResult<String> {
    let report = py.allow_threads(|| ccsim_kernel::bench::kernel_bench(events));
    serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Runs the coherent-simulator benchmark (`reads` sequential reads through
/// the DC with checks off and on; `memory_lines` reads over 64 MiB and over
/// 1 GiB) and returns its report as JSON (see
/// `ccsim_eci::bench::CoherentBenchReport`).
#[pyfunction]
fn coherent_bench_json(py: Python<'_>, reads: u64, memory_lines: u64) -> PyResult<String> {
    let report = py
        .allow_threads(|| ccsim_eci::bench::coherent_bench(reads, memory_lines))
        .map_err(PyValueError::new_err)?;
    serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Runs the CXL.cache coherent benchmark (`loads` LLC-hit loads of Cohet's
/// device, checks off and on, and the bare event loop) and returns its
/// report as JSON (see `ccsim_experiments::bench::CxlBenchReport`).
#[pyfunction]
fn cxl_coherent_bench_json(py: Python<'_>, loads: u64) -> PyResult<String> {
    let report = py
        .allow_threads(|| ccsim_experiments::bench::cxl_coherent_bench(loads))
        .map_err(PyValueError::new_err)?;
    serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Mutation coverage of `platform`'s system `system` (table agents): every
/// single-row mutant of its protocol judged by the checker (on the spec's
/// `[check]`, or with `instances` agents per role) and, when the checker
/// lets it pass, by the random tester (`seeds` seeds from `first_seed` on, of
/// `ops` operations per agent on `lines` lines); JSON, one record per mutant
/// (see `ccsim_experiments::mutation`).
#[pyfunction]
#[pyo3(signature = (platform, system, seeds, ops, lines, instances = None, first_seed = 0))]
#[allow(clippy::too_many_arguments)] // mirrors the Python keyword arguments
fn mutation_coverage_json(
    py: Python<'_>,
    platform: &Bound<'_, PyPlatform>,
    system: &str,
    seeds: u64,
    ops: u64,
    lines: u64,
    instances: Option<std::collections::BTreeMap<String, u8>>,
    first_seed: u64,
) -> PyResult<String> {
    let p = &platform.get().inner;
    let decl = p.system(system).map_err(|e| config_err(py, e))?;
    let spec = ccsim_protocol::load_spec(&decl.protocol).map_err(|e| errors::spec_error(py, e))?;
    let cfg = match instances {
        Some(i) => Some(protocol::config_with(py, &spec, Some(i))?),
        None => None,
    };
    let budget = ccsim_experiments::mutation::TimingBudget {
        first_seed,
        seeds,
        ops,
        lines,
    };
    let report = py
        .allow_threads(|| ccsim_experiments::mutation::coverage(p, system, cfg, &budget))
        .map_err(|e| errors::usage_error(py, &e))?;
    serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The `ccsim._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<PyPlatform>()?;
    m.add_class::<PyExperiment>()?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(run_platform_workload, m)?)?;
    m.add_function(wrap_pyfunction!(component_types, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(list_platforms, m)?)?;
    m.add_function(wrap_pyfunction!(list_experiments, m)?)?;
    m.add_function(wrap_pyfunction!(parse_counts, m)?)?;
    m.add_function(wrap_pyfunction!(shipped_text, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_bench_json, m)?)?;
    m.add_function(wrap_pyfunction!(coherent_bench_json, m)?)?;
    m.add_function(wrap_pyfunction!(cxl_coherent_bench_json, m)?)?;
    m.add_function(wrap_pyfunction!(coherent_speed_run, m)?)?;
    m.add_function(wrap_pyfunction!(mutation_coverage_json, m)?)?;
    m.add_function(wrap_pyfunction!(protocol::protocol_list, m)?)?;
    m.add_function(wrap_pyfunction!(protocol::protocol_generate, m)?)?;
    m.add_function(wrap_pyfunction!(protocol::protocol_check, m)?)?;
    m.add_function(wrap_pyfunction!(protocol::protocol_export, m)?)?;
    Ok(())
}
