"""Parameter sweeps: a grid or a seeded random sample over declared platform
and workload parameters, across one or more experiments.

A sweep spec (TOML, see ``examples/README.md``)::

    [sweep]
    name = "dc_units"                        # results/sweeps/<name>/
    experiments = ["cckit-dc-throughput"]    # shipped names or paths
    series = ["dc_bram_seq_read"]            # optional: only these series
    x = [32]                                 # optional: these x (default: each experiment's sweep;
                                             #   "quick": its quick list)
    seeds = [1]                              # optional (default [0])

    [[run]]                                  # optional, repeatable: one experiment with its own
    experiment = "cohet-cxl-latency"         #   series and x (besides or instead of `experiments`)
    series = ["hmc"]
    x = [400, 800, 1500]

    [grid]                                   # every combination of these values
    "dc.dcus_per_slice" = [1, 2, 4, 8, 16, 32]

    [sample]                                 # optional: seeded random points besides the grid
    n = 4
    seed = 7
    "dc.ingress_cycles" = { min = 10, max = 40 }     # integer params: uniform integers
    "eci.latency_ns" = { min = 50.0, max = 200.0, log = true }
    "dc_ddr.page_policy" = ["open", "closed"]        # a list: uniform choice

Keys: ``instance.param`` (every platform of the point's series that has the
instance), ``platform:instance.param`` or ``platform.instance.param`` (one
platform only), ``workload.param`` (the series' workload parameter). Every
key and value is checked against the declarations (``ccsim info``: kind,
unit, range) before anything runs; a rule between parameters (e.g. a DC
needs two ECI links) is checked when a point builds its platform, and a
point breaking one records the error like any other failing point.

Points are (experiment, series, x, seed, parameter assignment); each has a
content hash (the experiment's :func:`~ccsim.experiment.fingerprint` -- its
validated config, resolved platforms, seed and ccsim version -- plus the
series, x and the assignment). Finished points are appended to
``points.jsonl`` (one fsynced line each; a line torn by a kill is dropped on
the next start), so a rerun runs only the missing points. ``points.parquet``
is rewritten atomically (temporary file, then rename) at the end of every
run, rows in plan order, so the dataset does not depend on the backend, the
worker count or the order points finished in.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import random
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from .errors import UsageError
from .experiment import canonical, x_key, fingerprint, run_one

LOG_FILE = "points.jsonl"
DATASET_FILE = "points.parquet"
BACKENDS = ("local", "ray")


# ---------------------------------------------------------------------------
# The spec


@dataclass(frozen=True)
class Key:
    """One swept parameter: ``column`` is the key as written in the spec."""

    column: str
    kind: str  # "platform" | "workload"
    platform: Optional[str]  # platform keys: only this platform (None: every)
    instance: Optional[str]
    param: str

    def override_key(self) -> str:
        base = f"{self.instance}.{self.param}"
        return f"{self.platform}:{base}" if self.platform else base


@dataclass
class Point:
    """One point of the plan (every field pickles)."""

    index: int
    experiment: str  # name
    origin: str  # what Experiment.load takes
    series: str
    platform: str
    workload: str
    metric: str
    x: float
    seed: int
    values: Dict[str, Any]  # spec column -> value (only the keys that apply)
    overrides: Dict[str, Any]  # typed platform overrides, "platform:instance.param"
    workload_params: Dict[str, Any]  # swept workload parameters
    hash: str = ""


@dataclass
class Run:
    """One experiment of a sweep with the series (None: every series) and x
    values (None: its sweep list; "quick": its quick list) it runs."""

    experiment: _native.Experiment
    series: Optional[List[str]]
    x: Union[None, str, List[float]]

    def selected_series(self) -> List[Dict[str, Any]]:
        return [s for s in _series_of(self.experiment) if self.series is None or s["name"] in self.series]

    def xs(self) -> List[float]:
        cfg = self.experiment.to_dict()
        if isinstance(self.x, list):
            return self.x
        return cfg["quick"] if self.x == "quick" else cfg["sweep"]


@dataclass
class Spec:
    path: str
    name: str
    runs: List[Run]
    seeds: List[int]
    grid: Dict[str, List[Any]]
    sample: Dict[str, Any]
    keys: Dict[str, Key] = field(default_factory=dict)

    @property
    def experiments(self) -> List[_native.Experiment]:
        """The sweep's experiments, each once, in spec order."""
        seen: Dict[str, _native.Experiment] = {}
        for r in self.runs:
            seen.setdefault(r.experiment.origin, r.experiment)
        return list(seen.values())


def _fail(path: str, where: str, message: str) -> UsageError:
    return UsageError(f"{path}: {where}: {message}")


def _parse_key(path: str, section: str, column: str) -> Key:
    parts = column.split(".")
    where = f"{section}.{json.dumps(column)}"
    if ":" in column:
        plat, rest = column.split(":", 1)
        parts = rest.split(".")
        if len(parts) != 2 or not all(parts) or not plat:
            raise _fail(path, where, "expected platform:instance.param, instance.param or workload.param")
        return Key(column, "platform", plat, parts[0], parts[1])
    if len(parts) == 2 and all(parts):
        if parts[0] == "workload":
            return Key(column, "workload", None, None, parts[1])
        return Key(column, "platform", None, parts[0], parts[1])
    if len(parts) == 3 and all(parts):
        return Key(column, "platform", parts[0], parts[1], parts[2])
    raise _fail(path, where, "expected instance.param, platform.instance.param, platform:instance.param "
                "or workload.param")


def _declared_kinds() -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Dict[str, Any]]]:
    comps = {t["type"]: {p["name"]: p for p in t["params"]} for t in _native.component_types()}
    wls = {w["name"]: {p["name"]: p for p in w["params"]} for w in _native.workloads()}
    return comps, wls


def _fmt_num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def check_value(decl: Mapping[str, Any], value: Any) -> Optional[str]:
    """Why ``value`` does not fit the declaration ``decl`` (an entry of
    ``ccsim info --json``'s params: kind, choices, unit, range), or None."""
    kind = decl["kind"]
    unit = f" {decl['unit']}" if decl.get("unit") else ""
    if kind == "boolean":
        return None if isinstance(value, bool) else f"expected boolean, got {json.dumps(value)}"
    if kind == "string":
        return None if isinstance(value, str) else f"expected string, got {json.dumps(value)}"
    if decl.get("choices"):
        if value in decl["choices"]:
            return None
        return f"expected one of {', '.join(decl['choices'])}, got {json.dumps(value)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected {kind}, got {json.dumps(value)}"
    if kind == "integer" and not isinstance(value, int):
        return f"expected integer, got {value!r}"
    if not math.isfinite(float(value)):
        return f"expected a finite {kind}, got {value!r}"
    r = decl["range"]
    text = r.get("text") or ""
    bad = False
    if r.get("min") is not None:
        bad |= value < r["min"] if r.get("min_inclusive", True) else value <= r["min"]
    if r.get("max") is not None:
        bad |= value > r["max"] if r.get("max_inclusive", True) else value >= r["max"]
    if r.get("one_of"):
        bad |= value not in r["one_of"]
    if r.get("power_of_two"):
        bad |= not (isinstance(value, int) and value > 0 and value & (value - 1) == 0)
    if bad:
        return f"must be {text}{unit}, got {_fmt_num(value)}"
    return None


def _series_of(experiment: _native.Experiment) -> List[Dict[str, Any]]:
    return [s for s in experiment.to_dict()["series"] if not s.get("derived")]


def load_spec(path: Union[str, os.PathLike]) -> Spec:
    """Parses and validates a sweep spec; raises :class:`ccsim.UsageError`
    (exit 2) with a one-line message naming the file and the key."""
    p = str(path)
    try:
        text = Path(p).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{p}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{p}: cannot read: not UTF-8 text") from None
    return parse_spec(text, p)


def parse_spec(text: str, path: str = "<sweep spec>") -> Spec:
    """:func:`load_spec` for a spec given as text; ``path`` names it in errors
    (and relative experiment paths are relative to its directory)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[import-not-found,no-redef]

    p = path
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{p}: invalid TOML: {' '.join(str(e).split())}") from None
    unknown = sorted(set(doc) - {"sweep", "run", "grid", "sample"})
    if unknown:
        raise _fail(p, unknown[0], "unknown section (known: sweep, run, grid, sample)")
    head = doc.get("sweep")
    if not isinstance(head, dict):
        raise _fail(p, "sweep", "missing [sweep] section")
    extra = sorted(set(head) - {"name", "experiments", "series", "x", "seeds"})
    if extra:
        raise _fail(p, f"sweep.{extra[0]}", "unknown key (known: name, experiments, series, x, seeds)")
    name = head.get("name")
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise _fail(p, "sweep.name", "expected a non-empty name without '/'")
    entries = doc.get("run", [])
    if not isinstance(entries, list) or not all(isinstance(r, dict) for r in entries):
        raise _fail(p, "run", "expected [[run]] tables (experiment, series, x)")
    names = head.get("experiments")
    if names is None and not entries:
        raise _fail(p, "sweep.experiments", "expected a non-empty list of experiment names or paths "
                    "(or [[run]] entries)")
    runs: List[Run] = []
    if names is not None:
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise _fail(p, "sweep.experiments", "expected a non-empty list of experiment names or paths")
        experiments = [_load_experiment(p, f"sweep.experiments[{i}]", n) for i, n in enumerate(names)]
        series = _parse_series(p, "sweep.series", head.get("series"), experiments)
        x = _parse_x(p, "sweep.x", head.get("x"))
        runs += [Run(e, series, x) for e in experiments]
    elif "series" in head or "x" in head:
        key = "series" if "series" in head else "x"
        raise _fail(p, f"sweep.{key}", "applies to sweep.experiments; give it in each [[run]] instead")
    for i, entry in enumerate(entries):
        where = f"run[{i}]"
        extra = sorted(set(entry) - {"experiment", "series", "x"})
        if extra:
            raise _fail(p, f"{where}.{extra[0]}", "unknown key (known: experiment, series, x)")
        target = entry.get("experiment")
        if not isinstance(target, str) or not target:
            raise _fail(p, f"{where}.experiment", "expected an experiment name or path")
        e = _load_experiment(p, f"{where}.experiment", target)
        runs.append(Run(e, _parse_series(p, f"{where}.series", entry.get("series"), [e]),
                        _parse_x(p, f"{where}.x", entry.get("x"))))
    seeds = head.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise _fail(p, "sweep.seeds", "expected a non-empty list of non-negative integers")
    grid = doc.get("grid", {})
    for k, vs in grid.items():
        if not isinstance(vs, list) or not vs:
            raise _fail(p, f"grid.{json.dumps(k)}", "expected a non-empty list of values")
    sample = doc.get("sample", {})
    spec = Spec(p, name, runs, list(seeds), dict(grid), dict(sample))
    _validate_keys(spec)
    return spec


def _load_experiment(path: str, where: str, name: str) -> _native.Experiment:
    # A relative path is relative to the spec file, like an experiment's platforms.
    rel = Path(path).parent / name
    target = str(rel) if name.endswith(".toml") and rel.exists() else name
    try:
        return _native.Experiment.load(target)
    except _native.CcsimError as e:
        raise _fail(path, where, " ".join(str(e).split("\n"))) from None


def _parse_series(path: str, where: str, series: Any,
                  experiments: List[_native.Experiment]) -> Optional[List[str]]:
    if series is None:
        return None
    if not isinstance(series, list) or not all(isinstance(s, str) for s in series):
        raise _fail(path, where, "expected a list of series names")
    known = {s["name"] for e in experiments for s in _series_of(e)}
    for s in series:
        if s not in known:
            what = "the sweep's experiments" if len(experiments) > 1 else experiments[0].name
            raise _fail(path, where, f"no series {s!r} in {what} (known: {', '.join(sorted(known))})")
    return series


def _parse_x(path: str, where: str, x: Any) -> Union[None, str, List[float]]:
    if x is None or x == "quick":
        return x
    if not isinstance(x, list) or not x or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in x):
        raise _fail(path, where, 'expected a list of numbers or "quick"')
    return [float(v) for v in x]


def _validate_keys(spec: Spec) -> None:
    p = spec.path
    comps, wls = _declared_kinds()
    sample_keys = {k: v for k, v in spec.sample.items() if k not in ("n", "seed")}
    if spec.sample:
        n = spec.sample.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise _fail(p, "sample.n", "expected a positive integer (the number of sampled points)")
        s = spec.sample.get("seed", 0)
        if not isinstance(s, int) or isinstance(s, bool) or s < 0:
            raise _fail(p, "sample.seed", "expected a non-negative integer")
        if not sample_keys:
            raise _fail(p, "sample", "no parameters to sample")
    both = sorted(set(spec.grid) & set(sample_keys))
    if both:
        raise _fail(p, f"sample.{json.dumps(both[0])}", "also in [grid]; sweep a key in one of them")
    for section, table in (("grid", spec.grid), ("sample", sample_keys)):
        for column, values in table.items():
            key = _parse_key(p, section, column)
            where = f"{section}.{json.dumps(column)}"
            decls = _declarations(spec, key, comps, wls, where)
            if section == "grid":
                candidates = list(values)
            elif isinstance(values, list):
                if not values:
                    raise _fail(p, where, "expected a non-empty list of choices")
                candidates = list(values)
            elif isinstance(values, dict):
                extra = sorted(set(values) - {"min", "max", "log"})
                if extra or "min" not in values or "max" not in values:
                    raise _fail(p, where, "expected { min = ..., max = ..., log = false } or a list of choices")
                lo, hi = values["min"], values["max"]
                for decl in decls:
                    if decl["kind"] not in ("integer", "number") or decl.get("choices"):
                        raise _fail(p, where, f"a {decl['kind']} parameter is sampled from a list of choices")
                    if decl["range"].get("one_of") or decl["range"].get("power_of_two"):
                        raise _fail(p, where, f"a parameter of range {decl['range']['text']} is sampled "
                                    "from a list of choices")
                if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi)) or lo > hi:
                    raise _fail(p, where, "min and max must be numbers with min <= max")
                if any(d["kind"] == "integer" for d in decls) and math.ceil(lo) > math.floor(hi):
                    raise _fail(p, where, f"no integer between min {lo} and max {hi}")
                if values.get("log") and lo <= 0:
                    raise _fail(p, where, "log sampling needs min > 0")
                candidates = [lo, hi]
            else:
                raise _fail(p, where, "expected a list of choices or { min, max }")
            for v in candidates:
                for decl in decls:
                    why = check_value(decl, v)
                    if why is not None:
                        raise _fail(p, where, why)
            spec.keys[column] = key


def _declarations(spec: Spec, key: Key, comps, wls, where: str) -> List[Dict[str, Any]]:
    """The declarations a key refers to, across the sweep's series; an error
    when it refers to nothing."""
    p = spec.path
    out = []
    platforms_seen = set()
    for run in spec.runs:
        e = run.experiment
        for s in run.selected_series():
            if key.kind == "workload":
                decl = wls.get(s["workload"], {}).get(key.param)
                if decl is not None:
                    out.append(decl)
                continue
            if key.platform is not None and key.platform != s["platform"]:
                continue
            platforms_seen.add(s["platform"])
            components = e.platform(s["platform"]).components()
            inst = components.get(key.instance)
            if inst is None:
                if key.platform is None:
                    continue
                raise _fail(p, where, f"platform {s['platform']} has no instance {key.instance!r} "
                            f"(instances: {', '.join(sorted(components))})")
            decl = comps[inst["type"]].get(key.param)
            if decl is None:
                known = ", ".join(sorted(comps[inst["type"]]))
                raise _fail(p, where, f"{key.instance} ({inst['type']}) has no parameter {key.param!r} "
                            f"(parameters: {known})")
            out.append(decl)
    if not out:
        if key.kind == "workload":
            raise _fail(p, where, f"no workload of the sweep's series declares a parameter {key.param!r}")
        if key.platform is not None and key.platform not in platforms_seen:
            raise _fail(p, where, f"no series of the sweep runs on platform {key.platform!r}")
        raise _fail(p, where, f"no platform of the sweep's series has an instance {key.instance!r}")
    return out


# ---------------------------------------------------------------------------
# The plan


def _assignments(spec: Spec) -> List[Dict[str, Any]]:
    """Grid combinations (in spec order, last key fastest), then the sampled
    points (drawn from ``random.Random(sample.seed)``)."""
    out: List[Dict[str, Any]] = []
    cols = list(spec.grid)
    if cols or not spec.sample:
        for combo in itertools.product(*(spec.grid[c] for c in cols)):
            out.append(dict(zip(cols, combo)))
    if spec.sample:
        rng = random.Random(spec.sample.get("seed", 0))
        comps, wls = _declared_kinds()
        cols = [k for k in spec.sample if k not in ("n", "seed")]
        kinds = {c: _kind(spec, spec.keys[c], comps, wls) for c in cols}
        for _ in range(spec.sample["n"]):
            point = {}
            for c in cols:
                how = spec.sample[c]
                if isinstance(how, list):
                    point[c] = how[rng.randrange(len(how))]
                    continue
                lo, hi = how["min"], how["max"]
                if how.get("log"):
                    v = math.exp(rng.uniform(math.log(lo), math.log(hi)))
                    point[c] = min(max(int(round(v)), int(math.ceil(lo))), int(hi)) if kinds[c] == "integer" else v
                elif kinds[c] == "integer":
                    point[c] = rng.randint(int(math.ceil(lo)), int(math.floor(hi)))
                else:
                    point[c] = rng.uniform(lo, hi)
            out.append(point)
    return out


def _kind(spec: Spec, key: Key, comps, wls) -> str:
    return _declarations(spec, key, comps, wls, key.column)[0]["kind"]


def plan(spec: Spec) -> List[Point]:
    """Every point of the sweep, in order: assignment, experiment, series, x,
    seed. Computes each point's hash."""
    assignments = _assignments(spec)
    points: List[Point] = []
    fps: Dict[Tuple[str, int], str] = {}
    wls = _declared_kinds()[1]
    # Per experiment, once: its x values and its series with their platform's instances.
    layout = []
    for run in spec.runs:
        e = run.experiment
        series = [(s, set(e.platform(s["platform"]).components())) for s in run.selected_series()]
        layout.append((e, run.xs(), series))
    for assignment in assignments:
        for e, xs, series in layout:
            for s, components in series:
                values, overrides, wparams = {}, {}, {}
                for column, value in assignment.items():
                    key = spec.keys[column]
                    if key.kind == "workload":
                        if key.param in wls.get(s["workload"], {}):
                            values[column] = value
                            wparams[key.param] = value
                    elif (key.platform in (None, s["platform"])) and key.instance in components:
                        values[column] = value
                        overrides[f"{s['platform']}:{key.instance}.{key.param}"] = value
                for x in xs:
                    for seed in spec.seeds:
                        if (e.name, seed) not in fps:
                            fps[(e.name, seed)] = fingerprint(e, seed)
                        pt = Point(len(points), e.name, e.origin, s["name"], s["platform"], s["workload"],
                                   s["metric"], float(x), seed, values, overrides, wparams)
                        blob = json.dumps(canonical({
                            "experiment": fps[(e.name, seed)], "series": s["name"], "x": x_key(x),
                            "overrides": overrides, "workload_params": wparams}), sort_keys=True)
                        pt.hash = hashlib.sha256(blob.encode()).hexdigest()[:32]
                        points.append(pt)
    seen: Dict[str, Point] = {}
    unique = []
    for pt in points:  # a sample may repeat a grid point: run it once
        if pt.hash not in seen:
            seen[pt.hash] = pt
            unique.append(pt)
    return unique


# ---------------------------------------------------------------------------
# Running points


_WORKER_EXPERIMENTS: Dict[str, _native.Experiment] = {}


def _experiment(origin: str) -> _native.Experiment:
    e = _WORKER_EXPERIMENTS.get(origin)
    if e is None:
        e = _WORKER_EXPERIMENTS[origin] = _native.Experiment.load(origin)
    return e


def run_sweep_point(origin: str, series: str, platform: str, x: float, seed: int,
                    overrides: Dict[str, Any], workload_params: Dict[str, Any]) -> Dict[str, Any]:
    """Runs one sweep point through the experiment path
    (:func:`ccsim.experiment.run_one`) and returns ``{"metrics", "trace_hash",
    "error"}``; an exception becomes the point's error (one line) instead of
    ending the sweep. Every argument pickles (the process pool and Ray call
    this)."""
    try:
        e = _experiment(origin)
        if workload_params:
            r = _run_with_workload_params(e, series, platform, x, seed, overrides, workload_params)
        else:
            r = run_one(e, series, platform, x, seed, overrides or None, None, False)
        return {"metrics": dict(r["metrics"]), "trace_hash": r.get("trace_hash"), "error": None}
    except Exception as err:  # noqa: BLE001 -- a failing point is data
        return {"metrics": {}, "trace_hash": None, "error": f"{type(err).__name__}: " + " ".join(str(err).split())}


def _run_with_workload_params(e, series, platform, x, seed, overrides, workload_params):
    """A series with some workload parameters replaced: the series' platform
    (with the overrides) and params, through ``run_platform_workload``."""
    from .overrides import experiment_platform

    cfg = e.to_dict()
    s = next(s for s in cfg["series"] if s["name"] == series)
    p = experiment_platform(e, platform, overrides or None, None)
    params = {k: (v[0] if isinstance(v, (tuple, list)) else v) for k, v in s["params"].items()}
    params.update(workload_params)
    return _native.run_platform_workload(p, s["workload"], cfg["x"]["name"], float(x), params, int(seed))


def _task_args(pt: Point) -> Tuple[Any, ...]:
    return (pt.origin, pt.series, pt.platform, pt.x, pt.seed, pt.overrides, pt.workload_params)


def _row(spec: Spec, pt: Point, result: Mapping[str, Any]) -> Dict[str, Any]:
    row: Dict[str, Any] = {
        "sweep": spec.name, "experiment": pt.experiment, "series": pt.series, "platform": pt.platform,
        "workload": pt.workload, "x": pt.x,
    }
    for column in spec.keys:
        row[column] = pt.values.get(column)
    metrics = result.get("metrics") or {}
    row.update({
        "seed": pt.seed, "ccsim_version": _native.__version__, "metric": pt.metric,
        "value": metrics.get(pt.metric), "metrics": metrics, "trace_hash": result.get("trace_hash"),
        "error": result.get("error"), "point_hash": pt.hash,
    })
    return row


class _Log:
    """``points.jsonl``: one finished point per line, with its hash. Torn
    lines (a kill mid-write) and duplicates are dropped when it is opened."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / LOG_FILE
        self.done: Dict[str, Dict[str, Any]] = {}
        clean = True
        lines: List[str] = []
        if self.path.exists():
            raw = self.path.read_text()
            clean = raw == "" or raw.endswith("\n")
            for line in raw.splitlines():
                try:
                    rec = json.loads(line)
                    h = rec["point_hash"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    clean = False
                    continue
                if h in self.done:
                    clean = False
                    continue
                self.done[h] = rec
                lines.append(line)
        if not clean:
            _atomic_write_text(self.path, "".join(line + "\n" for line in lines))
        self._f = self.path.open("a")

    def append(self, row: Dict[str, Any]) -> None:
        self._f.write(json.dumps(row, sort_keys=True) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.done[row["point_hash"]] = row

    def close(self) -> None:
        self._f.close()


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    with tmp.open("rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def dataframe(spec: Spec, rows: Sequence[Mapping[str, Any]]):
    """The dataset: one row per point in plan order; the metrics dict is
    spread into ``metric.<name>`` columns (sorted)."""
    import pandas as pd

    names = sorted({m for r in rows for m in (r.get("metrics") or {})})
    columns = (["sweep", "experiment", "series", "platform", "workload", "x"] + list(spec.keys)
               + ["seed", "ccsim_version", "metric", "value", "trace_hash", "error", "point_hash"])
    flat = []
    for r in rows:
        d = {k: r.get(k) for k in columns}
        for m in names:
            d[f"metric.{m}"] = (r.get("metrics") or {}).get(m)
        flat.append(d)
    df = pd.DataFrame(flat, columns=columns + [f"metric.{m}" for m in names])
    for col in ["x", "value"] + [f"metric.{m}" for m in names]:
        if col in df:
            df[col] = df[col].astype("float64")
    return df


def _write_dataset(directory: Path, df) -> Path:
    path = directory / DATASET_FILE
    tmp = directory / f".{DATASET_FILE}.tmp{os.getpid()}"
    df.to_parquet(tmp, index=False)
    with tmp.open("rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def _local_results(pending: List[Point], jobs: int):
    """Yields (point, result) as points finish, in a pool of ``jobs``
    processes (``jobs == 1``: in this process)."""
    if jobs == 1 or len(pending) <= 1:
        for pt in pending:
            yield pt, run_sweep_point(*_task_args(pt))
        return
    pool = ProcessPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(run_sweep_point, *_task_args(pt)): pt for pt in pending}
        remaining = set(futures)
        while remaining:
            done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: futures[f].index):
                yield futures[fut], fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ray_results(pending: List[Point], jobs: int, address: Optional[str]):
    """Yields (point, result) as Ray tasks finish: one task per point on the
    cluster at ``address`` (None: a local Ray instance of ``jobs`` CPUs)."""
    try:
        import ray  # type: ignore[import-not-found]
    except ImportError:
        raise UsageError("sweep --backend ray: ray is not installed (pip install 'ccsim[ray]')") from None
    started = False
    if not ray.is_initialized():
        kwargs: Dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=jobs, **kwargs)
        started = True
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(run_sweep_point)
        refs = {task.remote(*_task_args(pt)): pt for pt in pending}
        remaining = list(refs)
        while remaining:
            done, remaining = ray.wait(remaining, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def status(spec: Spec, out: Optional[os.PathLike] = "results") -> Dict[str, Any]:
    """What a run of ``spec`` would do, writing nothing: the points of the
    plan, how many are already in ``points.jsonl`` (and how many of those
    failed) and how many would run."""
    points = plan(spec)
    done: Dict[str, bool] = {}
    log = Path(out) / "sweeps" / spec.name / LOG_FILE if out is not None else None
    if log is not None and log.exists():
        for line in log.read_text().splitlines():
            try:
                rec = json.loads(line)
                done[rec["point_hash"]] = bool(rec.get("error"))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    have = [pt for pt in points if pt.hash in done]
    return {"sweep": spec.name, "points": len(points), "done": len(have),
            "failed": sum(done[pt.hash] for pt in have), "to_run": len(points) - len(have),
            "columns": list(spec.keys)}


@dataclass
class SweepResult:
    """The outcome of :func:`sweep`: ``df`` (one row per point), the dataset
    path, and how many points ran now, were reused and failed."""

    df: Any
    path: Optional[Path]
    ran: int
    reused: int
    failed: int

    def __repr__(self) -> str:
        return f"SweepResult({len(self.df)} points, ran {self.ran}, reused {self.reused}, failed {self.failed})"


def sweep(spec: Union[str, os.PathLike, Spec], *, out: Optional[os.PathLike] = "results", jobs: int = 1,
          backend: str = "local", address: Optional[str] = None, progress: Optional[bool] = False,
          on_point: Optional[Callable[[Dict[str, Any]], None]] = None) -> SweepResult:
    """Runs a sweep spec (a path or a loaded :class:`Spec`).

    With ``out``, finished points go to ``<out>/sweeps/<name>/points.jsonl``
    as they finish and the dataset to ``points.parquet`` next to it; a rerun
    runs only the missing points. ``backend`` is ``"local"`` (a process pool
    of ``jobs`` workers) or ``"ray"`` (one Ray task per point on the cluster
    at ``address``, or on a local Ray instance of ``jobs`` CPUs).
    """
    if jobs < 1:
        raise UsageError(f"sweep: jobs must be at least 1, got {jobs}")
    if backend not in BACKENDS:
        raise UsageError(f"sweep: unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if address and backend != "ray":
        raise UsageError("sweep: an address is for --backend ray")
    s = spec if isinstance(spec, Spec) else load_spec(spec)
    points = plan(s)
    directory = Path(out) / "sweeps" / s.name if out is not None else None
    log = _Log(directory) if directory is not None else None
    rows: Dict[str, Dict[str, Any]] = {}
    if log is not None:
        wanted = {pt.hash for pt in points}
        rows = {h: r for h, r in log.done.items() if h in wanted}
    pending = [pt for pt in points if pt.hash not in rows]
    reused = len(points) - len(pending)
    failed = sum(1 for r in rows.values() if r.get("error"))
    from tqdm import tqdm

    bar = tqdm(total=len(points), initial=reused, desc=s.name, unit="pt", leave=False, file=sys.stderr,
               disable=(None if progress is None else not progress))
    bar.set_postfix(failed=failed)
    results = (_ray_results(pending, jobs, address) if backend == "ray" else _local_results(pending, jobs))
    try:
        for pt, result in results:
            row = _row(s, pt, result)
            rows[pt.hash] = row
            if log is not None:
                log.append(row)
            if row["error"]:
                failed += 1
                bar.set_postfix(failed=failed)
            bar.update(1)
            if on_point is not None:
                on_point(row)
    finally:
        bar.close()
        if log is not None:
            log.close()
    # Rows are rebuilt from the plan (the point and the spec's columns) and
    # the logged result, so a renamed key or sweep reuses its points.
    df = dataframe(s, [_row(s, pt, rows[pt.hash]) for pt in points])
    path = _write_dataset(directory, df) if directory is not None else None
    return SweepResult(df, path, len(pending), reused, failed)


#: The sweep ``ccsim bench sweep`` times: the DC's DCUs against throughput
#: (as examples/dc_units.toml, 4 MiB streamed), 24 points of about 0.3 s
#: each, so the last point's tail is small against the whole.
BENCH_SPEC = """
[sweep]
name = "bench"
experiments = ["cckit-dc-throughput"]
series = ["dc_bram_seq_read", "dc_bram_rand_read", "dc_ddr_seq_read", "dc_ddr_rand_read"]
x = [4]
[grid]
"enzian:dc.dcus_per_slice" = [1, 2, 4, 8, 16, 32]
"""


def bench_scaling(spec: Optional[Spec] = None, jobs: int = 2, repeat: int = 1) -> Dict[str, Any]:
    """Points per second of one sweep with 1 worker and with ``jobs``
    workers (local process pool, nothing written), alternating ``repeat``
    times in one process, and whether every dataset is equal. ``ratio`` is
    the best ``jobs``-worker rate over the best 1-worker rate (the fastest
    run of each is the least disturbed by other load); ``ratios`` are the
    ratios of each pair."""
    import statistics
    import time

    def cpu() -> float:
        import resource

        a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime

    s = spec if spec is not None else parse_spec(BENCH_SPEC, "ccsim bench sweep")
    n = len(plan(s))
    runs: Dict[int, List[Tuple[float, float]]] = {1: [], jobs: []}
    frames = []
    for _ in range(repeat):
        for j in (1, jobs):
            c0, t0 = cpu(), time.perf_counter()
            frames.append(sweep(s, out=None, jobs=j).df)  # the pool's workers are joined: their CPU time counts
            runs[j].append((time.perf_counter() - t0, cpu() - c0))
    best1 = min(t for t, _ in runs[1])
    bestn = min(t for t, _ in runs[jobs])
    ratios = [a[0] / b[0] for a, b in zip(runs[1], runs[jobs])]
    return {
        "sweep": s.name, "points": n, "jobs": jobs, "repeat": repeat,
        "seconds_1": [t for t, _ in runs[1]], "seconds_n": [t for t, _ in runs[jobs]],
        # CPU time (this process and the pool's workers): what the pool costs
        # beyond the points, whatever else the machine runs.
        "cpu_seconds_1": [c for _, c in runs[1]], "cpu_seconds_n": [c for _, c in runs[jobs]],
        "points_per_sec_1": n / best1, "points_per_sec_n": n / bestn,
        "ratio": best1 / bestn, "ratios": ratios, "median_ratio": statistics.median(ratios),
        "goal": 0.8 * jobs, "goal_met": best1 / bestn >= 0.8 * jobs,
        "datasets_equal": all(f.equals(frames[0]) for f in frames),
        "cpus": os.cpu_count(), "load_average": list(os.getloadavg()),
    }
