//! Bindings of the protocol toolkit (`ccsim protocol ...`): list, generate,
//! check and export specs. Reports cross as JSON text (the crate's serde
//! output) and plain strings; `ccsim.protocol` turns them into commands.

use crate::errors::{spec_error, usage_error};
use std::collections::BTreeMap;

use ccsim_protocol::{
    check, export, generate, load_spec, CheckOptions, Spec, SpecError, SystemConfig,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Maps a spec error to `ccsim.errors.SpecError`.
fn spec_err(py: Python<'_>, e: SpecError) -> PyErr {
    spec_error(py, e)
}

fn load(py: Python<'_>, name_or_path: &str) -> PyResult<Spec> {
    load_spec(name_or_path).map_err(|e| spec_err(py, e))
}

/// The spec's checking configuration with `instances` (role -> count)
/// replacing its own counts; an unknown role, a role that is not
/// `multiple` given more than one instance, or a count of 0 is a usage
/// error naming the role.
pub(crate) fn config_with(
    py: Python<'_>,
    spec: &Spec,
    instances: Option<BTreeMap<String, u8>>,
) -> PyResult<SystemConfig> {
    let mut cfg: SystemConfig = (&spec.check).into();
    let Some(instances) = instances else {
        return Ok(cfg);
    };
    if spec.is_two_node() {
        return Err(usage_error(
            py,
            &format!(
                "instances: {} is a two-node spec (one agent per role); instances apply to role-form specs",
                spec.protocol.name
            ),
        ));
    }
    for (role, n) in instances {
        let Some(table) = spec.table(&role) else {
            let known = spec.role_names().join(", ");
            return Err(usage_error(
                py,
                &format!(
                    "instances.{role}: {} has no role {role:?} (its roles: {known})",
                    spec.protocol.name
                ),
            ));
        };
        if n > 1 && !table.multiple {
            return Err(usage_error(
                py,
                &format!("instances.{role}: role {role} is not `multiple`: exactly 1, got {n}"),
            ));
        }
        if n == 0 || n > 8 {
            return Err(usage_error(
                py,
                &format!("instances.{role}: must be between 1 and 8, got {n}"),
            ));
        }
        cfg.instances.insert(role, n);
    }
    Ok(cfg)
}

fn to_json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// The shipped protocol specs: `[{"name", "description"}]`.
#[pyfunction]
pub fn protocol_list(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for s in ccsim_protocol::list_specs() {
        let d = PyDict::new(py);
        d.set_item("name", s.name)?;
        d.set_item("description", s.description)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Generates the transient-state machine of a spec (shipped name or path):
/// returns `(summary_text, generator_stats_json)`.
#[pyfunction]
pub fn protocol_generate(py: Python<'_>, spec: &str) -> PyResult<(String, String)> {
    let spec = load(py, spec)?;
    let (ir, stats) = generate(&spec).map_err(|e| spec_err(py, e))?;
    Ok((export::export_text(&ir, &stats), to_json(&stats)?))
}

/// Checks a spec exhaustively: returns `(report_json, report_text,
/// verified)`. `max_states = 0` uses the default limit.
#[pyfunction]
#[pyo3(signature = (spec, max_states = 0, instances = None))]
pub fn protocol_check(
    py: Python<'_>,
    spec: &str,
    max_states: usize,
    instances: Option<BTreeMap<String, u8>>,
) -> PyResult<(String, String, bool)> {
    let spec = load(py, spec)?;
    let opts = CheckOptions {
        max_states,
        config: Some(config_with(py, &spec, instances)?),
    };
    let report = py
        .allow_threads(|| check(&spec, &opts))
        .map_err(|e| spec_err(py, e))?;
    Ok((to_json(&report)?, report.to_text(), report.verified))
}

/// Exports the generated table of a spec as `json`, `dot`, `sv`
/// (SystemVerilog ROM) or `murphi`.
#[pyfunction]
#[pyo3(signature = (spec, format, instances = None))]
pub fn protocol_export(
    py: Python<'_>,
    spec: &str,
    format: &str,
    instances: Option<BTreeMap<String, u8>>,
) -> PyResult<String> {
    let spec = load(py, spec)?;
    let cfg = config_with(py, &spec, instances)?;
    let (ir, _) = generate(&spec).map_err(|e| spec_err(py, e))?;
    Ok(match format {
        "json" => export::export_json(&ir),
        "dot" => export::export_dot(&ir),
        "sv" => export::export_sv(&ir),
        "murphi" => export::export_murphi(&ir, &cfg),
        other => {
            let msg =
                format!("protocol export: unknown format {other:?} (known: json, dot, sv, murphi)");
            return Err(usage_error(py, &msg));
        }
    })
}
