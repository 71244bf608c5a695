//! The exception classes of ccsim, defined here and re-exported by
//! `ccsim.errors`.
//!
//! The classes are created by the extension module itself, so raising one
//! never imports the Python package: there is no lookup by name and no
//! fallback class. Python code catches the same classes whatever layer found
//! the problem.
//!
//! ```text
//! Exception
//!  └─ CcsimError            exit_code 2
//!      ├─ ConfigError       (also a ValueError) .file .path .message
//!      ├─ SpecError         (also a ValueError) .path .message
//!      ├─ UsageError
//!      ├─ SimulationError
//!      ├─ NotAvailableError
//!      └─ ViolationFound    exit_code 1
//! ```
//!
//! Errors raised from Rust carry a one-line message (`file: path: message`)
//! and their fields as instance attributes; they pickle with the attributes
//! (`BaseException.__reduce__` keeps `__dict__`).

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

create_exception!(
    _native,
    CcsimError,
    PyException,
    "Base class of every ccsim error; `exit_code` is the CLI's exit code (2: bad input)."
);
create_exception!(
    _native,
    ConfigError,
    CcsimError,
    "A platform or experiment file, or an override, is invalid. `file` is the file \
     (`platforms/cohet.toml`, a path, or `overrides`), `path` the dotted location inside \
     it (`platform.pcie.lanes`, empty for the file as a whole) and `message` what is wrong. \
     Also a ValueError."
);
create_exception!(
    _native,
    SpecError,
    CcsimError,
    "A protocol spec is invalid; `path` names the file and place \
     (`protocols/eci-dc.toml: equation[3].receive[1]`) and `message` what is wrong. \
     Also a ValueError."
);
create_exception!(
    _native,
    UsageError,
    CcsimError,
    "The command line or a Python call was used wrongly."
);
create_exception!(
    _native,
    SimulationError,
    CcsimError,
    "A workload rejected its inputs or could not complete a point."
);
create_exception!(
    _native,
    NotAvailableError,
    CcsimError,
    "The requested feature is not part of this build yet."
);
create_exception!(
    _native,
    ViolationFound,
    CcsimError,
    "A check ran and found a violation (exit code 1)."
);

/// One line: the CLI prints `str(error)` as is.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// An error of class `T` with a one-line message and `fields` set as
/// instance attributes.
fn with_fields<T: pyo3::PyTypeInfo>(
    py: Python<'_>,
    message: &str,
    fields: &[(&str, &str)],
) -> PyErr {
    let err = PyErr::from_type(py.get_type::<T>(), (one_line(message),));
    let value = err.value(py);
    for (name, v) in fields {
        if let Err(e) = value.setattr(*name, *v) {
            return e;
        }
    }
    err
}

/// `ConfigError` with `.file`, `.path` and `.message`.
pub(crate) fn config_error(py: Python<'_>, e: ccsim_platform::ConfigError) -> PyErr {
    let place = if e.path.is_empty() {
        e.file.clone()
    } else {
        format!("{}: {}", e.file, e.path)
    };
    with_fields::<ConfigError>(
        py,
        &format!("{place}: {}", e.message),
        &[
            ("file", &e.file),
            ("path", &e.path),
            ("message", &e.message),
        ],
    )
}

/// `SpecError` with `.path` and `.message`.
pub(crate) fn spec_error(py: Python<'_>, e: ccsim_protocol::SpecError) -> PyErr {
    with_fields::<SpecError>(
        py,
        &format!("{}: {}", e.path, e.message),
        &[("path", &e.path), ("message", &e.message)],
    )
}

/// `UsageError(message)`.
pub(crate) fn usage_error(py: Python<'_>, message: &str) -> PyErr {
    with_fields::<UsageError>(py, message, &[])
}

/// `SimulationError(message)`.
pub(crate) fn simulation_error(py: Python<'_>, message: &str) -> PyErr {
    with_fields::<SimulationError>(py, message, &[])
}

/// `ViolationFound(message)`.
pub(crate) fn violation_found(py: Python<'_>, message: &str) -> PyErr {
    with_fields::<ViolationFound>(py, message, &[])
}

/// Adds the classes to the module, sets the exit codes, and makes
/// `ConfigError` and `SpecError` also `ValueError`s (`create_exception!`
/// takes one base; both bases share `BaseException`'s layout, so the second
/// one is added to the class it made).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let base = py.get_type::<CcsimError>();
    base.setattr("exit_code", 2)?;
    py.get_type::<ViolationFound>().setattr("exit_code", 1)?;
    for class in [py.get_type::<ConfigError>(), py.get_type::<SpecError>()] {
        let bases = PyTuple::new(py, [base.clone(), py.get_type::<PyValueError>()])?;
        class.setattr("__bases__", bases)?;
    }
    for class in [
        base.clone(),
        py.get_type::<ConfigError>(),
        py.get_type::<SpecError>(),
        py.get_type::<UsageError>(),
        py.get_type::<SimulationError>(),
        py.get_type::<NotAvailableError>(),
        py.get_type::<ViolationFound>(),
    ] {
        // Where users (and pickle) find them.
        class.setattr("__module__", "ccsim.errors")?;
    }
    m.add("CcsimError", base)?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("SpecError", py.get_type::<SpecError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    m.add("NotAvailableError", py.get_type::<NotAvailableError>())?;
    m.add("ViolationFound", py.get_type::<ViolationFound>())?;
    Ok(())
}
