"""Every exception ccsim raises, in one place.

The classes are defined by the Rust extension (``crates/py/src/errors.rs``)
and re-exported here, so Python code catches one hierarchy whatever layer
found the problem. Each class carries the process exit code the CLI uses:

* 2 -- bad input: a config or spec error, an unknown experiment or platform;
* 1 -- reserved for "checked and found a violation" (protocol checks).

::

    CcsimError            exit_code 2
     ├─ ConfigError       also a ValueError; .file, .path, .message
     ├─ SpecError         also a ValueError; .path, .message
     ├─ UsageError
     ├─ SimulationError
     ├─ NotAvailableError
     └─ ViolationFound    exit_code 1

Errors raised by the simulator have a one-line ``str()``, which the CLI
prints as is.
"""

from __future__ import annotations

from ._native import (
    CcsimError,
    ConfigError,
    NotAvailableError,
    SimulationError,
    SpecError,
    UsageError,
    ViolationFound,
)

SEED_MAX = 2**64 - 1


def check_seed(seed: object) -> int:
    """``seed`` as the simulator takes it (a whole number from 0 to
    2**64 - 1), or :class:`UsageError` saying what is wrong with it."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise UsageError(f"seed: must be a whole number from 0 to 2**64 - 1, got {seed!r}")
    return seed


__all__ = [
    "CcsimError",
    "ConfigError",
    "SpecError",
    "UsageError",
    "SimulationError",
    "NotAvailableError",
    "ViolationFound",
]
