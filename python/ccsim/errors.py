"""Every exception ccsim raises, in one place.

The Rust extension raises these classes too (``ccsim._native`` imports this
module to build them), so Python code catches one hierarchy whatever layer
found the problem. Each class carries the process exit code the CLI uses:

* 2 -- bad input: a config or spec error, an unknown experiment or platform;
* 1 -- reserved for "checked and found a violation" (protocol checks).

``str(error)`` is always a single line, which the CLI prints as is.
"""

from __future__ import annotations


class CcsimError(Exception):
    """Base class of every ccsim error."""

    exit_code = 2

    def __str__(self) -> str:
        return " ".join(super().__str__().splitlines())


class ConfigError(CcsimError, ValueError):
    """A platform or experiment file, or an override, is invalid.

    ``file`` is the file (``platforms/cohet.toml``, a path, or ``overrides``),
    ``path`` the dotted location inside it (``platform.pcie.lanes``, empty for
    the file as a whole) and ``message`` what is wrong.
    """

    def __init__(self, file: str, path: str, message: str) -> None:
        self.file = file
        self.path = path
        self.message = message
        where = f"{file}: {path}" if path else file
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        return (type(self), (self.file, self.path, self.message))


class SpecError(CcsimError, ValueError):
    """A protocol spec is invalid; ``path`` names the file and place
    (``protocols/eci-dc.toml: equation[3].receive[1]``)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")

    def __reduce__(self):
        return (type(self), (self.path, self.message))


class UsageError(CcsimError):
    """The command line or a Python call was used wrongly."""


class SimulationError(CcsimError):
    """A workload rejected its inputs or could not complete a point."""


class NotAvailableError(CcsimError):
    """The requested feature is not part of this build yet."""


class ViolationFound(CcsimError):
    """A check ran and found a violation (exit code 1)."""

    exit_code = 1


__all__ = [
    "CcsimError",
    "ConfigError",
    "SpecError",
    "UsageError",
    "SimulationError",
    "NotAvailableError",
    "ViolationFound",
]
