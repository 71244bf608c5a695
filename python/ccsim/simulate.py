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

Without a ``system`` the platform's ``[systems.random]`` runs, or its only
system; a platform that declares several (``enzian``, ``cohet``, ``n1sdp``)
needs one named, and the error lists them.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

from . import _native
from .errors import UsageError, ViolationFound, check_seed


def choose_system(p: "_native.Platform", system: Optional[str]) -> str:
    """The system of platform ``p`` to run: ``system`` when given (an
    unknown name is the loader's ConfigError, with its path); else the
    platform's ``random`` system, or its only system; else a
    :class:`UsageError` that lists the systems to choose from."""
    if system is not None:
        return system
    names = sorted(p.systems())
    if "random" in names:
        return "random"
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(f"simulate: {p.source} declares no system ([systems.NAME] sections) to run")
    raise UsageError(f"simulate: {p.source} declares {len(names)} systems and none named `random`; "
                     f"choose one with --system NAME (API: system=\"NAME\"): {', '.join(names)}")


def simulate(
    platform: str,
    system: Optional[str] = None,
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
    states; a bad platform, system or value raises :class:`ccsim.ConfigError`.
    Without ``system``: see :func:`choose_system`."""
    seed = check_seed(seed)
    p = _native.Platform.load(str(platform), overrides=dict(overrides or {}))
    params = {"system": choose_system(p, system), "lines": int(lines), "checks": bool(checks),
              "think_ns": float(think_ns)}
    return _native.run_platform_workload(p, "random_test", "ops", float(ops), params, seed)


def _one_seed(platform: str, text_overrides, params: Dict[str, Any], ops: int, seed: int) -> Dict[str, Any]:
    """One shard of :func:`simulate_seeds` (in a worker process)."""
    p = _native.Platform.load(platform, None, text_overrides or None)
    try:
        r = _native.run_platform_workload(p, "random_test", "ops", float(ops), params, seed)
    except ViolationFound as e:
        return {"seed": seed, "error": str(e)}
    return {"seed": seed, "metrics": r["metrics"]}


def simulate_seeds(
    platform: str,
    seeds: int,
    first_seed: int = 0,
    jobs: int = 1,
    system: Optional[str] = None,
    ops: int = 1000,
    lines: int = 4,
    checks: bool = True,
    think_ns: float = 0.0,
    text_overrides=None,
) -> Dict[str, Any]:
    """The random tester sharded over ``seeds`` seeds (``first_seed`` on),
    ``jobs`` processes at a time: the slow tier's 10**8 operations are
    ``ops=10**6, seeds=100``. Returns the operations summed over the shards,
    the wall time, and every failing seed with its report (each replays
    alone with :func:`simulate` and that seed); a bad platform, system or
    value raises :class:`ccsim.ConfigError` before any shard runs."""
    import time
    from concurrent.futures import ProcessPoolExecutor

    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise UsageError(f"seeds: must be a whole number, at least 1, got {seeds!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"jobs: must be a whole number, at least 1, got {jobs!r}")
    check_seed(first_seed)
    check_seed(first_seed + seeds - 1)
    # Bad input fails here, once, not in every shard.
    p = _native.Platform.load(str(platform), None, text_overrides or None)
    system = choose_system(p, system)
    params = {"system": system, "lines": int(lines), "checks": bool(checks), "think_ns": float(think_ns)}
    _native.run_platform_workload(p, "random_test", "ops", 1.0, params, first_seed)
    start = time.perf_counter()
    args = [(str(platform), text_overrides, params, int(ops), s) for s in range(first_seed, first_seed + seeds)]
    if jobs == 1:
        shards = [_one_seed(*a) for a in args]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            shards = list(pool.map(_one_seed, *zip(*args)))
    seconds = time.perf_counter() - start
    done = [s["metrics"] for s in shards if "metrics" in s]
    total = sum(m["ops"] for m in done)
    return {
        "platform": p.name, "system": system, "seeds": seeds, "first_seed": first_seed, "jobs": jobs,
        "ops": total, "rows_checked": sum(m["rows_checked"] for m in done),
        "seconds": seconds, "ops_per_sec": total / seconds if seconds > 0 else 0.0,
        "failures": [{"seed": s["seed"], "error": s["error"]} for s in shards if "error" in s],
    }


def mutation_coverage(
    platform: str,
    system: Optional[str] = None,
    seeds: int = 20,
    ops: int = 2000,
    lines: int = 2,
    instances: Optional[Mapping[str, int]] = None,
    overrides: Optional[Mapping[str, Any]] = None,
    seed: int = 0,
):
    """Every single-row mutant of the protocol that ``system`` of
    ``platform`` runs (a deleted row, a retargeted next state, a dropped
    action), judged by the exhaustive checker on the spec's ``[check]`` (or
    ``instances`` agents per role) and, when the checker lets it pass, by
    the random tester in the timing simulation (``seeds`` seeds from ``seed``
    on, of ``ops`` operations per agent on ``lines`` lines). Returns a DataFrame, one row
    per mutant: ``mutant``, ``checker`` (``caught``, ``survived`` or
    ``unexercised``), ``property``, ``tester`` (``caught``, ``not_caught``
    or None), ``seed``, ``problem``, ``caught`` (by either)."""
    import pandas as pd

    for name, v in (("seeds", seeds), ("ops", ops), ("lines", lines)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise UsageError(f"mutation_coverage: {name} must be a whole number, at least 1, got {v!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise UsageError(f"mutation_coverage: seed must be a whole number from 0 to 2**64 - 1, got {seed!r}")
    for role, n in (instances or {}).items():
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 8:
            raise UsageError(f"mutation_coverage: instances.{role}: must be between 1 and 8, got {n!r}")
    p = _native.Platform.load(str(platform), overrides=dict(overrides or {}))
    rows = []
    for r in json.loads(_native.mutation_coverage_json(p, choose_system(p, system), seeds, ops, lines,
                                                         dict(instances) if instances else None, seed)):
        checker, tester = r["by_checker"], r["by_timing"] or {}
        rows.append({
            "mutant": r["mutant"],
            "checker": checker["verdict"],
            "property": checker.get("property"),
            "tester": tester.get("verdict"),
            "seed": tester.get("seed"),
            "problem": tester.get("problem"),
            "caught": checker["verdict"] == "caught" or tester.get("verdict") == "caught",
        })
    return pd.DataFrame(rows, columns=["mutant", "checker", "property", "tester", "seed", "problem", "caught"])
