"""The protocol toolkit from Python: list, generate, check and export specs.

A spec is a shipped name (``ccsim.protocol.specs()``) or a path to a TOML
file written by hand or by :mod:`ccsim.protocol_builder`. Every function is a
thin wrapper over the Rust crate ``ccsim-protocol``; a malformed spec raises
:class:`ccsim.errors.SpecError` with the place in the spec and the problem.

>>> import ccsim.protocol as p
>>> r = p.check("eci-dc")
>>> r.verified, r.reachable_states
(True, 12381)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from . import _native
from .errors import UsageError

EXPORT_FORMATS = ("json", "dot", "sv", "murphi")


def specs() -> List[Dict[str, str]]:
    """The shipped specs: ``[{"name": ..., "description": ...}]``."""
    return list(_native.protocol_list())


@dataclass(frozen=True)
class Generated:
    """The generated machine of a spec: a readable listing and the
    generator's counts (states, transitions, stalls, messages, ...)."""

    spec: str
    text: str
    stats: Dict[str, Any]


def generate(spec: str) -> Generated:
    """Expands the spec's state-equations into the transient-state machine."""
    text, stats = _native.protocol_generate(spec)
    return Generated(spec=spec, text=text, stats=json.loads(stats))


@dataclass(frozen=True)
class CheckResult:
    """The outcome of an exhaustive check.

    ``report`` is the full machine-readable report (the same JSON that
    ``ccsim protocol check --json`` prints); the properties below are the
    fields most users want. ``verified`` is true when every property holds
    and the exploration completed.
    """

    spec: str
    verified: bool
    text: str
    report: Dict[str, Any] = field(repr=False)

    @property
    def reachable_states(self) -> int:
        """Distinct reachable states of the composed system."""
        return int(self.report["reachable_states"])

    @property
    def violations(self) -> List[Dict[str, Any]]:
        """Each violation with its property, explanation and trace."""
        return list(self.report.get("violations", []))

    def to_json(self) -> str:
        """The report as JSON text."""
        return json.dumps(self.report, indent=2)


def _instances(instances: Optional[Mapping[str, int]]) -> Optional[Dict[str, int]]:
    """``instances`` checked for type and range (the roles are checked
    against the spec in Rust)."""
    if instances is None:
        return None
    if not isinstance(instances, Mapping):
        raise UsageError(f"instances: expected a mapping of role to count, got {instances!r}")
    out = {}
    for role, n in instances.items():
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 8:
            raise UsageError(f"instances.{role}: must be a whole number between 1 and 8, got {n!r}")
        out[str(role)] = n
    return out


def parse_instances(text: str) -> Dict[str, int]:
    """``core=2,device=1`` (the CLI's ``--instances``) as a mapping."""
    out: Dict[str, int] = {}
    for part in text.split(","):
        role, eq, n = part.partition("=")
        if not eq or not role.strip() or not n.strip().isdigit():
            raise UsageError(f"--instances: expected ROLE=COUNT[,ROLE=COUNT...], got {text!r}")
        out[role.strip()] = int(n)
    return out


def check(spec: str, max_states: int = 0, instances: Optional[Mapping[str, int]] = None) -> CheckResult:
    """Checks the composed system of ``spec`` breadth-first for SWMR,
    data-value, deadlock freedom and no unspecified reception.
    ``max_states = 0`` keeps the default limit; ``instances`` (role to
    count, e.g. ``{"device": 2}``) replaces the spec's ``[check]
    instances`` for those roles."""
    if isinstance(max_states, bool) or not isinstance(max_states, int) or not 0 <= max_states < 2**63:
        raise UsageError(f"max_states: must be a whole number, 0 (the default limit) or more, got {max_states!r}")
    report_json, text, verified = _native.protocol_check(spec, max_states, _instances(instances))
    return CheckResult(spec=spec, verified=bool(verified), text=text, report=json.loads(report_json))


def export(spec: str, format: str, instances: Optional[Mapping[str, int]] = None) -> str:
    """The spec's generated table as ``json`` (what the simulator loads),
    ``dot`` (Graphviz), ``sv`` (SystemVerilog ROM) or ``murphi`` (the composed
    system, for rumur, with ``instances`` as in :func:`check`)."""
    return _native.protocol_export(spec, format, _instances(instances))
