"""Overrides scoped to one platform of an experiment.

Shared by :mod:`ccsim.experiment` (fingerprints and points) and
:mod:`ccsim.report` (the platforms section), so neither imports the other.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native

#: Typed overrides (``{"pcie.lanes": 8}``) or text ones (``[("pcie.lanes", "8")]``).
AnyOverrides = Union[Mapping[str, Any], Sequence[Tuple[str, Any]]]


def scoped(overrides: Optional[AnyOverrides], platform: str) -> Optional[List[Tuple[str, Any]]]:
    """The overrides that apply to ``platform``.

    A key ``pcie.lanes`` applies to every platform of the experiment; a key
    ``cohet:pcie.lanes`` only to platform ``cohet``.
    """
    if overrides is None:
        return None
    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    out = []
    for key, value in items:
        if ":" in key:
            only, key = key.split(":", 1)
            if only != platform:
                continue
        out.append((key, value))
    return out


def experiment_platform(experiment: _native.Experiment, name: str, overrides: Optional[AnyOverrides],
                        text_overrides: Optional[AnyOverrides]) -> _native.Platform:
    """The experiment's platform ``name`` with the overrides that apply to it
    (validated; no file is parsed)."""
    typed = scoped(overrides, name)
    text = scoped(text_overrides, name)
    return experiment.platform(name, dict(typed) if typed else None, text or None)
