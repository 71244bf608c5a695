"""The sim-vs-paper report (Markdown) of an experiment result.

The report says what was reproduced, on which platforms, which facts the
platform parameters were calibrated on (and which parameters were fitted),
and then compares every simulated point with the paper where the paper gives
a value, marking each comparison as *calibration* (used for fitting) or
*prediction* (not used), with the error of each and per-role summaries.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

from . import _native
from .overrides import experiment_platform


class ResultView(Protocol):
    """What the report and the plot read from a result
    (:class:`ccsim.experiment.ExperimentResult` has it). A protocol, so that
    ``report`` and ``plot`` need not import ``experiment``, which imports them."""

    experiment: _native.Experiment
    config: Dict[str, Any]
    seed: int
    quick: bool
    overrides: Union[Mapping[str, Any], Sequence[Tuple[str, Any]]]
    text_overrides: Sequence[Tuple[str, str]]

    def comparisons(self) -> List[Dict[str, Any]]: ...

    def error_summary(self) -> Dict[str, Dict[str, Any]]: ...

    def claims(self) -> List[Dict[str, Any]]: ...

    def histograms(self) -> List[Dict[str, Any]]: ...


def histogram_records(cfg: Mapping[str, Any], points: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The distributions a histogram panel (``histogram_at``) draws: for each
    of the panel's x and each of its series, one record per bin with panel,
    series, label, x, lower and upper edge (``None`` for the last bin, which
    holds every sample from its lower edge up) and count. The bins are the
    point's stats ``<metric>.hist.<lower edge>``; a point that has none (not
    run, e.g. by ``--quick``, or a workload that reports no histogram) gives
    no record."""
    out: List[Dict[str, Any]] = []
    by_point = {(p["series"], float(p["x"])): p for p in points}
    for panel in cfg["panels"]:
        for x in panel.get("histogram_at") or []:
            for s in (s for s in cfg["series"] if s["panel"] == panel["name"]):
                p = by_point.get((s["name"], float(x)))
                if p is None:
                    continue
                prefix = s["metric"] + ".hist."
                bins = sorted((float(k[len(prefix):]), v) for k, v in p["stats"].items() if k.startswith(prefix))
                for i, (lower, count) in enumerate(bins):
                    upper = bins[i + 1][0] if i + 1 < len(bins) else None
                    out.append({"panel": panel["name"], "series": s["name"], "label": s["label"], "x": float(x),
                                "lower": lower, "upper": upper, "count": count})
    return out


def fmt_num(v: Optional[float]) -> str:
    """Numbers for tables: 4 significant digits, integers without a fraction."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if float(v).is_integer():
        return f"{int(v)}"
    return f"{v:.4g}"


def fmt_pct(v: Optional[float]) -> str:
    """Signed percentages with one decimal; a dash for none."""
    return "—" if v is None else f"{v:+.1f}%"


def _table(header: List[str], rows: List[List[Any]]) -> List[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def _instances_used(platform: Any, series: List[Dict[str, Any]]) -> Optional[set]:
    """The component instances the series run on, when every one of them
    names a system of ``platform`` (its agents, their memories, its
    switches and links); ``None`` (every instance) otherwise, as a
    workload without a system may use any."""
    systems = platform.systems()
    # A series' parameters are (value, provenance).
    names = [(s.get("params", {}).get("system") or (None,))[0] for s in series]
    if not names or any(n not in systems for n in names):
        return None
    used = set()
    for n in names:
        sys = systems[n]
        for a in sys["agents"]:
            used.add(a["instance"])
            if "memory" in a:
                used.add(a["memory"])
        used.update(c["instance"] for c in sys["components"])
        used.update(link["instance"] for link in sys["links"])
    return used


def render_report(result: ResultView) -> str:
    """The report of ``result`` as Markdown."""
    cfg = result.config
    lines: List[str] = [f"# {cfg['name']}: {cfg['title']}", ""]
    if cfg["figures"]:
        lines.append(f"Reproduces: {cfg['figures']}" + (f" ({', '.join(cfg['paper'])})" if cfg["paper"] else ""))
    lines.append(f"Run: seed {result.seed}, {'quick' if result.quick else 'full'} sweep over "
                 f"{cfg['x']['label']}, ccsim {_native.__version__}.")
    overrides: List[Any] = (list(result.overrides.items()) if isinstance(result.overrides, dict)
                            else list(result.overrides))
    overrides += list(result.text_overrides)
    if overrides:
        lines.append("Overrides: " + ", ".join(f"`{k}={v}`" for k, v in overrides) + ".")
    lines.append("")

    lines += ["## Platforms", ""]
    fitted: List[List[str]] = []
    for name in sorted({s["platform"] for s in cfg["series"] if not s.get("derived")}):
        p = experiment_platform(result.experiment, name, result.overrides, result.text_overrides)
        lines.append(f"- **{p.name}**: {p.description} (`{p.source}`)")
        used = _instances_used(p, [s for s in cfg["series"] if not s.get("derived") and s["platform"] == name])
        for inst, c in p.components().items():
            if used is not None and inst not in used:
                continue
            for param, (value, prov) in c["params"].items():
                if prov.startswith("calibrated"):
                    fitted.append([p.name, f"`{inst}.{param}`", fmt_value(value), prov])
    lines.append("")

    lines += ["## Calibration", ""]
    if cfg["calibrated_on"]:
        lines.append("The platform parameters were calibrated on these facts from the paper:")
        lines.append("")
        lines += [f"- {fact}" for fact in cfg["calibrated_on"]]
    else:
        lines.append("No calibration facts are declared for this experiment.")
    lines.append("")
    if fitted:
        lines.append("Parameters fitted to them:")
        lines.append("")
        lines += _table(["platform", "parameter", "value", "provenance"], fitted)
        lines.append("")
    lines.append("Points marked *calibration* were used to fit the parameters, so their error shows the "
                 "quality of the fit; points marked *prediction* were not used, so their error is a test "
                 "of the model.")
    lines.append("")

    lines += ["## Simulation vs paper", ""]
    series = {s["name"]: s for s in cfg["series"]}
    rows = []
    for comp in result.comparisons():
        s = series[comp["series"]]
        rows.append([comp["series"], fmt_num(comp["x"]), s["metric"], fmt_num(comp["sim"]), fmt_num(comp["paper"]),
                     fmt_pct(comp["error_pct"]), comp["role"] or "—", comp["citation"] or ""])
    lines += _table(["series", cfg["x"]["name"], "metric", "sim", "paper", "error", "role", "source"], rows)
    lines.append("")

    lines += ["## Error by role", ""]
    rows = []
    for role, e in result.error_summary().items():
        rows.append([role, e["n"], fmt_pct(e["mean_abs_error_pct"]).lstrip("+"),
                     fmt_pct(e["max_abs_error_pct"]).lstrip("+")])
    lines += _table(["role", "points", "mean abs error", "max abs error"], rows)
    lines.append("")
    claims = result.claims()
    if claims:
        lines += ["## Claims of the text", ""]
        lines.append("Each checkable statement of the paper's text, evaluated on the points of this run; a claim "
                     "about an x that was not run is *not evaluated*. Bounds are scored as bounds (held or not, "
                     "with the margin), never as point errors. *Expected* is the verdict the experiment file "
                     "declares for the full sweep today; a claim expected *not held* is a known modelling gap.")
        lines.append("")
        verdict = {"held": "held", "not_held": "**not held**", "not_evaluated": "not evaluated"}
        rows = []
        for c in claims:
            detail = c["detail"] + (f" — tolerance: {c['why']}" if c["why"] else "")
            rows.append([c["claim"], f"“{_cell(c['quote'])}”", _cell(c["section"]), c["kind"], c["series"],
                         verdict[c["verdict"]], c["expect"].replace("_", " "), _cell(detail)])
        lines += _table(["#", "quote", "section", "kind", "series", "verdict", "expected", "numbers"], rows)
        lines.append("")
        n = {v: sum(c["verdict"] == v for c in claims) for v in verdict}
        lines.append(f"{n['held']} held, {n['not_held']} not held, {n['not_evaluated']} not evaluated.")
        lines.append("")
        lines += _why_not_held(claims)
    lines += _histograms(result)
    if cfg["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in cfg["notes"]] + [""]
    return "\n".join(lines)


def _why_not_held(claims: List[Dict[str, Any]]) -> List[str]:
    """The report's account of each claim this run does not hold: the
    experiment file's reason for a known gap, or a flag where the verdict
    departs from the declared one."""
    lines = []
    for c in claims:
        if c["verdict"] != "not_held":
            continue
        reason = c.get("why_not_held") or ("not expected: the experiment file declares this claim held"
                                           if c["expect"] == "held" else "")
        lines.append(f"- **{c['claim']}** ({c['series']}): {_cell(reason)}")
    if not lines:
        return []
    return ["### Why the claims not held are not held", ""] + lines + [""]


def _histograms(result: ResultView) -> List[str]:
    """The histogram panels as tables: per series and x, the bins that hold
    samples (the plot draws every bin)."""
    records = result.histograms()
    if not records:
        return []
    lines = ["## Histograms", "",
             "Each histogram panel's distributions: per series and x, the samples in each bin "
             "(empty bins left out; the last bin holds every sample from its lower edge up).", ""]
    groups: Dict[Tuple[str, str, float], List[Dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["panel"], r["series"], r["x"]), []).append(r)
    for (panel, series, x), rs in groups.items():
        total = sum(r["count"] for r in rs)
        lines.append(f"**{rs[0]['label']}** at {result.config['x']['name']} = {fmt_num(x)} "
                     f"(panel {panel}, {fmt_num(total)} samples):")
        lines.append("")
        rows = [[fmt_num(r["lower"]) + ("+" if r["upper"] is None else f"–{fmt_num(r['upper'])}"), fmt_num(r["count"])]
                for r in rs if r["count"]]
        lines += _table(["bin", "samples"], rows)
        lines.append("")
    return lines


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def fmt_value(v: Any) -> str:
    """Parameter values: booleans in TOML spelling, numbers as :func:`fmt_num`."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return fmt_num(v)
    return str(v)
