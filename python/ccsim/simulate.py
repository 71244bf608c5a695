"""Run a protocol's random tester on a system declared as data.

A platform file's ``[systems.<name>]`` section names the agents (each a
``table_agent`` running one role of a protocol spec), the switch and the
links; :func:`simulate` builds it, lets every agent with local events issue
``ops`` random operations with online invariant checks, and compares the
reads and the final memory with a sequential reference::

    import ccsim
    r = ccsim.simulate("msi-dma", ops=1000)
    r["metrics"]["violations"]            # 0.0
    r["metrics"]["reference_mismatches"]  # 0.0
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from . import _native
from .errors import check_seed


def simulate(
    platform: str,
    system: str = "random",
    ops: int = 1000,
    lines: int = 4,
    seed: int = 0,
    checks: bool = True,
    think_ns: float = 0.0,
    overrides: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """Runs the random tester (workload ``random_test``) on ``system`` of
    ``platform`` (a shipped name or a path). Returns ``{"metrics", "stats",
    "trace_hash", "trace_json"}``; a violation (an invariant, a deadlock,
    a disagreement with the sequential reference) raises
    :class:`ccsim.ViolationFound` naming the line, the agents and their
    states; a bad platform, system or value raises :class:`ccsim.ConfigError`."""
    seed = check_seed(seed)
    p = _native.Platform.load(str(platform), overrides=dict(overrides or {}))
    params = {"system": system, "lines": int(lines), "checks": bool(checks), "think_ns": float(think_ns)}
    return _native.run_platform_workload(p, "random_test", "ops", float(ops), params, seed)
