"""Running experiments: sweeps, resuming, and the result object.

An experiment (``experiments/<name>.toml``) is a set of series -- a workload
on a platform reporting one metric -- swept over one x variable, plus
reference points from a paper. :func:`reproduce` runs every (series, x)
point through the Rust simulator and returns an :class:`ExperimentResult`.

Points are independent and deterministic: a point is a pure function of the
experiment, the platform (with overrides), the seed and x. That is what
makes two things safe:

* **resuming** -- with an output directory, each finished point is appended
  to ``points.jsonl`` together with a fingerprint of everything it depends
  on; a rerun skips points whose fingerprint matches, and a changed config,
  override or seed invalidates them;
* **fanning out** -- ``jobs > 1`` runs points in a process pool. The native
  handles pickle by rebuilding from their config, so the same code can later
  hand points to Ray.

Each file is parsed once per run: the loaded experiment keeps its validated
platforms, and the fingerprint, the report and every point use them, with
the overrides applied to a copy (a pool parses them once per worker).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from .claims import evaluate_claims
from .errors import NotAvailableError, UsageError, check_seed
from .overrides import experiment_platform, scoped
from .plot import plot_result
from .report import histogram_records, render_report

POINTS_FILE = "points.jsonl"

Overrides = Mapping[str, Any]
TextOverrides = Sequence[Tuple[str, str]]


def canonical(value: Any) -> Any:
    """JSON-safe, order-stable form of configs for fingerprints."""
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def fingerprint(experiment: _native.Experiment, seed: int, overrides=None, text_overrides=None) -> str:
    """SHA-256 over everything a point depends on: the validated experiment,
    every platform's resolved parameters (with overrides), the seed and the
    ccsim version."""
    config = experiment.to_dict()
    config.pop("source", None)
    config.pop("claims", None)  # claims are evaluated on points, they change none
    platforms = {}
    for name in sorted({s["platform"] for s in config["series"]}):
        p = experiment_platform(experiment, name, overrides, text_overrides)
        platforms[name] = {"components": p.components(), "overrides": p.overrides}
    blob = json.dumps(
        canonical({"experiment": config, "platforms": platforms, "seed": seed, "version": _native.__version__}),
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def run_one(experiment: _native.Experiment, series: str, platform: str, x: float, seed: int,
             overrides, text_overrides, trace: bool) -> Dict[str, Any]:
    """Runs one point on the experiment's loaded platform (every argument
    pickles)."""
    typed = scoped(overrides, platform)
    text = scoped(text_overrides, platform)
    r = _native.run_point(experiment, series, x, seed, dict(typed) if typed else None, text or None, trace)
    return {"series": series, "x": x, **r}


_WORKER_EXPERIMENT: Optional[_native.Experiment] = None


def _init_worker(experiment: _native.Experiment) -> None:
    """Process-pool initializer: the experiment arrives (and is parsed) once
    per worker, not once per point."""
    global _WORKER_EXPERIMENT
    _WORKER_EXPERIMENT = experiment


def _run_in_worker(series: str, platform: str, x: float, seed: int, overrides, text_overrides,
                   trace: bool) -> Dict[str, Any]:
    """The process-pool task: one point of the worker's experiment."""
    assert _WORKER_EXPERIMENT is not None, "the pool's initializer sets the experiment"
    return run_one(_WORKER_EXPERIMENT, series, platform, x, seed, overrides, text_overrides, trace)


def x_key(x: float) -> str:
    return repr(float(x))


class _PointLog:
    """``points.jsonl``: one finished point per line, each with the config
    fingerprint. Lines of another fingerprint, or torn by an interrupt, are
    dropped when the file is opened."""

    def __init__(self, directory: Path, fp: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / POINTS_FILE
        self.fp = fp
        self.done: Dict[Tuple[str, str], Dict[str, Any]] = {}
        kept: List[str] = []
        stale = False
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    stale = True  # a line torn by an interrupt
                    continue
                if rec.get("fingerprint") != fp:
                    stale = True
                    continue
                self.done[(rec["series"], x_key(rec["x"]))] = rec
                kept.append(line)
        if stale:
            self.path.write_text("".join(k + "\n" for k in kept))

    def append(self, point: Dict[str, Any]) -> None:
        rec = {"fingerprint": self.fp, **{k: v for k, v in point.items() if k != "trace_json"}}
        with self.path.open("a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())


def run_points(experiment: _native.Experiment, *, quick: bool = False, seed: int = 0,
               overrides: Optional[Overrides] = None, text_overrides: Optional[TextOverrides] = None,
               out_dir: Optional[Path] = None, progress: Optional[bool] = None, jobs: int = 1,
               trace_dir: Optional[Path] = None, timeline: Optional[Any] = None,
               bar: Optional[Any] = None) -> List[Dict[str, Any]]:
    """Runs every (series, x) point of ``experiment`` and returns them in
    series-then-x order. See the module docs for resuming and ``jobs``.
    With ``trace_dir`` each point's Chrome trace JSON is written there; with
    ``timeline`` (a :class:`ccsim.timeline.Timeline`) each point that keeps
    its messages and notes is added to it (both rerun finished points).
    ``bar``: a progress bar shared with other experiments (see
    :func:`progress_bar`), advanced instead of a bar of this experiment's own."""
    from tqdm import tqdm

    if jobs < 1:
        raise UsageError(f"jobs must be at least 1, got {jobs}")
    cfg = experiment.to_dict()
    xs = cfg["quick"] if quick else cfg["sweep"]
    todo = [(s["name"], s["platform"], float(x)) for s in cfg["series"] for x in xs]
    # Validate every platform and override before running anything.
    for name in sorted({p for _, p, _ in todo}):
        experiment_platform(experiment, name, overrides, text_overrides)
    fp = fingerprint(experiment, seed, overrides, text_overrides)
    log = _PointLog(out_dir, fp) if out_dir is not None else None
    results: Dict[Tuple[str, str], Dict[str, Any]] = {}
    pending = []
    for series, platform, x in todo:
        key = (series, x_key(x))
        if log is not None and key in log.done and trace_dir is None and timeline is None:
            results[key] = log.done[key]
        else:
            pending.append((series, platform, x))
    trace = trace_dir is not None or timeline is not None
    own_bar = bar is None
    if own_bar:
        bar = tqdm(total=len(todo), initial=len(todo) - len(pending), desc=cfg["name"], unit="pt",
                   disable=(None if progress is None else not progress), leave=False)
    else:
        bar.set_postfix_str(cfg["name"], refresh=False)
        bar.update(len(todo) - len(pending))

    def finish(point: Dict[str, Any]) -> None:
        results[(point["series"], x_key(point["x"]))] = point
        if trace_dir is not None and point.get("trace_json") is not None:
            trace_dir.mkdir(parents=True, exist_ok=True)
            name = f"{point['series']}_{_fmt_x(point['x'])}.json"
            (trace_dir / name).write_text(point["trace_json"])
        point.pop("trace_json", None)
        events = point.pop("trace_events", None)
        if timeline is not None and events is not None:
            from .timeline import titles

            timeline.add_point(titles(cfg["name"], cfg["x"]["name"], [point])[0], events)
        if log is not None:
            log.append(point)
        bar.update(1)

    # Series that differ only in the metric they plot (P50 and P99 of one
    # run, say) share one simulation: the first runs, the others copy it.
    same_run = {s["name"]: json.dumps([s["platform"], s["workload"], canonical(s["params"])], sort_keys=True)
                for s in cfg["series"]}
    first_of: Dict[Tuple[str, str], str] = {}
    copies: List[Tuple[str, str, float]] = []
    unique = []
    for series, platform, x in pending:
        key = (same_run[series], x_key(x))
        if key in first_of and not trace:
            copies.append((series, first_of[key], x))
        else:
            first_of.setdefault(key, series)
            unique.append((series, platform, x))
    pending = unique

    def finish_copies() -> None:
        for series, source, x in copies:
            finish({**results[(source, x_key(x))], "series": series})

    try:
        if jobs == 1 or len(pending) <= 1:
            for series, platform, x in pending:
                finish(run_one(experiment, series, platform, x, seed, overrides, text_overrides, trace))
        else:
            with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(experiment,)) as pool:
                futures = [pool.submit(_run_in_worker, s, p, x, seed, _plain(overrides),
                                       _plain(text_overrides), trace) for s, p, x in pending]
                for fut in futures:  # submission order keeps the log deterministic
                    finish(fut.result())
        finish_copies()
    finally:
        if own_bar:
            bar.close()
    return [results[(s, x_key(x))] for s, _, x in todo]


def point_count(experiment: _native.Experiment, quick: bool = False) -> int:
    """How many (series, x) points a run of ``experiment`` has."""
    cfg = experiment.to_dict()
    return len(cfg["series"]) * len(cfg["quick"] if quick else cfg["sweep"])


def progress_bar(experiments: Sequence[_native.Experiment], quick: bool = False,
                 progress: Optional[bool] = None):
    """One progress bar over every point of ``experiments`` (points done,
    the ETA, the experiment running), for ``reproduce --all``; pass it to
    :func:`reproduce` as ``bar``. ``progress``: None shows it on a terminal."""
    from tqdm import tqdm

    return tqdm(total=sum(point_count(e, quick) for e in experiments), desc=f"{len(experiments)} experiments",
                unit="pt", disable=(None if progress is None else not progress), leave=False)


def _plain(overrides):
    if overrides is None:
        return None
    return list(overrides.items()) if isinstance(overrides, Mapping) else list(overrides)


def _fmt_x(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def error_pct(sim: Optional[float], paper: Optional[float]) -> Optional[float]:
    """Signed error of the simulation against the paper, in percent."""
    if sim is None or paper is None or paper == 0 or not math.isfinite(sim):
        return None
    return (sim - paper) / abs(paper) * 100.0


class ExperimentResult:
    """The outcome of :func:`reproduce`: every simulated point, compared with
    the paper's reference points.

    * ``df`` -- one row per simulated point (and per reference at that point);
    * ``plot(path=None)`` -- the figure with paper points overlaid;
    * ``report()`` -- the sim-vs-paper table as Markdown;
    * ``to_json()`` -- the machine-readable summary;
    * ``save(dir)`` -- Parquet, CSV, PNG and Markdown files.

    A result pickles as its config plus its points; unpickling re-validates
    the experiment.
    """

    def __init__(self, experiment: _native.Experiment, points: List[Dict[str, Any]], *, seed: int = 0,
                 quick: bool = False, overrides: Optional[Overrides] = None,
                 text_overrides: Optional[TextOverrides] = None) -> None:
        self.experiment = experiment
        self.config = experiment.to_dict()
        self.points = points
        self.derived_points = _derive(self.config, points)
        self.seed = seed
        self.quick = quick
        self.overrides = dict(overrides) if isinstance(overrides, Mapping) else list(overrides or [])
        self.text_overrides = list(text_overrides or [])

    def __reduce__(self):
        return (_rebuild_result, (self.experiment.origin, self.points, self.seed, self.quick,
                                  self.overrides, self.text_overrides))

    def __repr__(self) -> str:
        return f"ExperimentResult({self.name!r}, {len(self.points)} points, seed={self.seed})"

    @property
    def all_points(self) -> List[Dict[str, Any]]:
        """Simulated points followed by the points of derived series."""
        return self.points + self.derived_points

    @property
    def name(self) -> str:
        """The experiment's name."""
        return self.config["name"]

    def comparisons(self) -> List[Dict[str, Any]]:
        """One record per simulated point and reference: experiment, series,
        x, sim, paper, role, error_pct, citation (None where no reference)."""
        metric = {s["name"]: s["metric"] for s in self.config["series"]}
        refs: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
        for r in self.config["references"]:
            refs.setdefault((r["series"], x_key(r["x"])), []).append(r)
        out = []
        for p in self.all_points:
            sim = p["metrics"].get(metric[p["series"]])
            for r in refs.get((p["series"], x_key(p["x"])), [None]):
                paper = None if r is None else r["value"]
                out.append({
                    "experiment": self.name,
                    "series": p["series"],
                    "x": p["x"],
                    "sim": sim,
                    "paper": paper,
                    "role": None if r is None else r["role"],
                    "error_pct": error_pct(sim, paper),
                    "citation": None if r is None else r["citation"],
                })
        return out

    @property
    def df(self):
        """A pandas DataFrame: experiment, series, label, platform, workload,
        metric, x, sim, paper, role, error_pct, citation, trace_hash, and one
        ``metric.<name>`` column per reported metric."""
        import pandas as pd

        series = {s["name"]: s for s in self.config["series"]}
        by_point = {(p["series"], x_key(p["x"])): p for p in self.all_points}
        rows = []
        for c in self.comparisons():
            s = series[c["series"]]
            p = by_point[(c["series"], x_key(c["x"]))]
            row = {
                "experiment": c["experiment"], "series": c["series"], "label": s["label"],
                "platform": s["platform"], "workload": s["workload"], "metric": s["metric"],
                "x": float(c["x"]), "sim": c["sim"], "paper": c["paper"], "role": c["role"],
                "error_pct": c["error_pct"], "citation": c["citation"],
                "seed": self.seed, "trace_hash": p.get("trace_hash"),
            }
            for k, v in sorted(p["metrics"].items()):
                row[f"metric.{k}"] = v
            rows.append(row)
        df = pd.DataFrame(rows)
        for col in ("sim", "paper", "error_pct"):
            if col in df:
                df[col] = df[col].astype("float64")
        return df

    def values(self) -> Dict[str, Dict[float, float]]:
        """The plotted value of every series (and derived series) by x."""
        metric = {s["name"]: s["metric"] for s in self.config["series"]}
        out: Dict[str, Dict[float, float]] = {}
        for p in self.all_points:
            v = p["metrics"].get(metric[p["series"]])
            if v is not None:
                out.setdefault(p["series"], {})[float(p["x"])] = v
        return out

    def claims(self) -> List[Dict[str, Any]]:
        """Every ``[[claims]]`` entry evaluated on the points of this run: claim
        (its index), kind, series, section, quote, verdict (``held``,
        ``not_held`` or ``not_evaluated`` when its x were not run), held
        (True/False/None), detail (the numbers behind it), expect, why."""
        return evaluate_claims(self.config.get("claims", []), self.values())

    def histograms(self) -> List[Dict[str, Any]]:
        """The distributions of the experiment's histogram panels
        (``[[panels]]`` with ``histogram_at``), one record per bin: panel,
        series, label, x, lower, upper (None for the last, open bin), count."""
        return histogram_records(self.config, self.all_points)

    @property
    def histograms_df(self):
        """:meth:`histograms` as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.histograms(), columns=["panel", "series", "label", "x", "lower", "upper", "count"])

    @property
    def claims_df(self):
        """:meth:`claims` as a pandas DataFrame."""
        import pandas as pd

        cols = ["claim", "kind", "series", "section", "quote", "verdict", "held", "detail", "expect", "why",
                "why_not_held"]
        return pd.DataFrame(self.claims(), columns=cols)

    def error_summary(self) -> Dict[str, Dict[str, Any]]:
        """Per role: the number of compared points and the mean and max
        absolute error in percent."""
        out: Dict[str, Dict[str, Any]] = {}
        for role in ("calibration", "prediction"):
            errs = [abs(c["error_pct"]) for c in self.comparisons()
                    if c["role"] == role and c["error_pct"] is not None]
            out[role] = {
                "n": len(errs),
                "mean_abs_error_pct": (sum(errs) / len(errs)) if errs else None,
                "max_abs_error_pct": max(errs) if errs else None,
            }
        return out

    def summary(self) -> Dict[str, Any]:
        """The machine-readable summary printed by ``ccsim reproduce --json``."""
        return {
            "experiment": self.name,
            "title": self.config["title"],
            "source": _source(self.experiment.origin),
            "seed": self.seed,
            "quick": self.quick,
            "overrides": [[k, v] for k, v in (self.overrides.items() if isinstance(self.overrides, dict)
                                              else self.overrides)],
            "text_overrides": [[k, v] for k, v in self.text_overrides],
            "calibrated_on": self.config["calibrated_on"],
            "errors": self.error_summary(),
            "claims": [{k: c[k] for k in ("claim", "kind", "series", "section", "quote", "verdict", "detail",
                                          "expect")}
                       for c in self.claims()],
            "points": [{k: c[k] for k in ("experiment", "series", "x", "sim", "paper", "role", "error_pct")}
                       for c in self.comparisons()],
        }

    def to_json(self) -> str:
        """:meth:`summary` as a JSON string."""
        return json.dumps(self.summary(), indent=2)

    def report(self) -> str:
        """The sim-vs-paper report as Markdown."""
        return render_report(self)

    def plot(self, path: Optional[os.PathLike] = None):
        """Draws the experiment (one panel per metric group) with the paper's
        points overlaid; saves a PNG when ``path`` is given. Returns the
        matplotlib Figure."""
        return plot_result(self, path)

    def save(self, directory: os.PathLike) -> Dict[str, Path]:
        """Writes results.parquet, results.csv, plot.png, report.md and
        summary.json (:meth:`summary`, which ``ccsim report`` reads) into
        ``directory`` and returns their paths."""
        import matplotlib.pyplot as plt

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        df = self.df
        paths = {
            "parquet": d / "results.parquet",
            "csv": d / "results.csv",
            "plot": d / "plot.png",
            "report": d / "report.md",
            "summary": d / "summary.json",
        }
        df.to_parquet(paths["parquet"], index=False)
        df.to_csv(paths["csv"], index=False)
        fig = self.plot(paths["plot"])
        plt.close(fig)
        paths["report"].write_text(self.report())
        paths["summary"].write_text(json.dumps(self.summary(), indent=2) + "\n")
        return paths


def _source(origin: str) -> str:
    """An experiment's origin as a later process can load it again: a file's
    absolute path, or the shipped name."""
    path = Path(origin)
    return str(path.resolve()) if path.suffix == ".toml" and path.is_file() else origin


def _derive(config: Dict[str, Any], points: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Computes the points of the experiment's ``[[derived]]`` series (e.g. the
    ratio of two platforms' latencies at each x) and registers each derived
    series in ``config["series"]`` so tables and plots treat it like any other.
    A derived point exists where both operands were simulated."""
    metric = {s["name"]: s["metric"] for s in config["series"]}
    by_key = {(p["series"], x_key(p["x"])): p for p in points}
    out = []
    for d in config.get("derived", []):
        config["series"].append({
            "name": d["name"], "label": d["label"], "platform": "", "workload": f"derived:{d['op']}",
            "params": {}, "metric": d["op"], "panel": d["panel"], "derived": True,
        })
        for p in points:
            if p["series"] != d["numerator"]:
                continue
            q = by_key.get((d["denominator"], x_key(p["x"])))
            num = p["metrics"].get(metric[d["numerator"]])
            den = None if q is None else q["metrics"].get(metric[d["denominator"]])
            if num is None or den is None:
                continue
            value = num / den if den else float("nan")
            out.append({"series": d["name"], "x": p["x"], "metrics": {d["op"]: value}, "trace_hash": None})
    return out


def _rebuild_result(origin, points, seed, quick, overrides, text_overrides) -> ExperimentResult:
    return ExperimentResult(_native.Experiment.load(origin), points, seed=seed, quick=quick,
                            overrides=overrides, text_overrides=text_overrides)


def reproduce(name: Union[str, _native.Experiment], quick: bool = False, seed: int = 0,
              overrides: Optional[Overrides] = None, *, text_overrides: Optional[TextOverrides] = None,
              out: Optional[os.PathLike] = None, progress: Optional[bool] = False, jobs: int = 1,
              trace: Union[bool, str, os.PathLike] = False, timeline: Optional[Any] = None,
              bar: Optional[Any] = None) -> ExperimentResult:
    """Runs experiment ``name`` (a shipped name, a path to a TOML file, or an
    already loaded ``Experiment``).

    ``overrides`` are dotted platform keys (``{"pcie.lanes": 8}``, or
    ``{"cohet:pcie.lanes": 8}`` for one platform only). With ``out``, the
    outputs are written to ``out/<name>/`` and an interrupted sweep resumes
    from ``points.jsonl``; ``trace=True`` also writes a Chrome trace per
    point under ``traces/`` and the Perfetto timeline of every point that
    keeps one (:mod:`ccsim.timeline`) to ``trace.perfetto-trace`` (none
    when no workload of the experiment keeps one);
    ``trace=PATH`` writes only the Perfetto timeline, to PATH (no ``out``
    needed). ``timeline``: a :class:`ccsim.timeline.Timeline` to add the
    points to instead (the caller writes it).
    """
    from . import timeline as tl

    seed = check_seed(seed)
    experiment = name if isinstance(name, _native.Experiment) else _native.Experiment.load(str(name))
    exp_dir = Path(out) / experiment.name if out is not None else None
    trace_dir = None
    trace_path: Optional[Path] = None
    if trace is True:
        if exp_dir is None:
            raise UsageError("trace=True needs an output directory (out=...)")
        trace_dir = exp_dir / "traces"
        trace_path = exp_dir / "trace.perfetto-trace"
    elif trace:
        trace_path = tl.check_output(Path(trace))  # type: ignore[arg-type]
    if trace_path is not None and timeline is None:
        timeline = tl.Timeline()
    else:
        trace_path = None
    points = run_points(experiment, quick=quick, seed=seed, overrides=overrides, text_overrides=text_overrides,
                        out_dir=exp_dir, progress=progress, jobs=jobs, trace_dir=trace_dir, timeline=timeline,
                        bar=bar)
    result = ExperimentResult(experiment, points, seed=seed, quick=quick, overrides=overrides,
                              text_overrides=text_overrides)
    if exp_dir is not None:
        result.save(exp_dir)
    if trace_path is not None and timeline is not None:
        if timeline.points:
            timeline.write(trace_path)
        elif trace is not True:
            raise NotAvailableError(f"trace: no point of {experiment.name} keeps a timeline (its workloads "
                                    "record no messages and notes)")
    return result


def experiments() -> List[str]:
    """Names of the shipped experiments."""
    return list(_native.list_experiments())


def describe_experiments(names: Optional[Iterable[str]] = None) -> List[Dict[str, Any]]:
    """Name, title, figures and series count of each experiment."""
    out = []
    for n in names if names is not None else experiments():
        d = _native.Experiment.load(n).to_dict()
        out.append({"name": d["name"], "title": d["title"], "figures": d["figures"],
                    "series": [s["name"] for s in d["series"]],
                    "platforms": sorted({s["platform"] for s in d["series"] if not s.get("derived")})})
    return out
