"""The validation dashboard: one self-contained HTML page over every
experiment result in a results directory (``ccsim report --html results/``).

``results/<experiment>/summary.json`` (written by ``ccsim reproduce`` and by
:func:`ccsim.reproduce` with ``out=``) holds each run's points, errors and
claims; the experiment file and its platforms (with the run's overrides)
give the series, the panels and every parameter with its provenance.

:func:`summarize` returns the JSON summary (``ccsim report --json``): per
experiment, the calibration and prediction error (MAPE: the mean absolute
percentage error over the points with a paper value of that role; the worst
point), and the claims held, not held and not evaluated. Experiments are
ranked by prediction MAPE, highest first (the least trustworthy predictions
at the top); experiments without predicted points come last, by name.

:func:`render_html` draws the page from the same summary, so the numbers of
its summary table are the JSON's (each cell carries the exact value in
``data-value``). The page needs no network: CSS, the script and the plots
(inline SVG with hover tooltips; click a legend entry to hide a series) are
all in the file.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _native
from .errors import UsageError
from .overrides import experiment_platform
from .report import fmt_num, fmt_value

SUMMARY_FILE = "summary.json"
ROLES = ("prediction", "calibration")
VERDICTS = ("held", "not_held", "not_evaluated")
RANKING = ("prediction MAPE, highest first; experiments without predicted points last, by name")


# --------------------------------------------------------------------------
# Loading and summarizing


def _results_dirs(results: Path) -> List[Path]:
    """The experiment directories of ``results`` (those with a summary.json).
    A directory with run outputs but no summary is an error (an interrupted
    run, or one from before summaries were saved)."""
    if not results.exists():
        raise UsageError(f"{results}: no such directory")
    if not results.is_dir():
        raise UsageError(f"{results}: not a directory")
    out = []
    for d in sorted(p for p in results.iterdir() if p.is_dir()):
        if (d / SUMMARY_FILE).is_file():
            out.append(d)
        elif (d / "points.jsonl").exists() or (d / "results.parquet").exists():
            raise UsageError(f"{d / SUMMARY_FILE}: missing (an interrupted run? rerun `ccsim reproduce {d.name} "
                             f"--out {results}`)")
    if not out:
        raise UsageError(f"{results}: no experiment results (expected {results}/<experiment>/{SUMMARY_FILE}, "
                         f"written by `ccsim reproduce --out {results}`)")
    return out


def _read_summary(path: Path) -> Dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    missing = [k for k in ("experiment", "errors", "claims", "points") if not isinstance(doc, dict) or k not in doc]
    if missing:
        raise UsageError(f"{path}: not a ccsim reproduce summary (missing {', '.join(missing)})")
    return doc


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _role_stats(points: Sequence[Dict[str, Any]], role: str) -> Dict[str, Any]:
    """n, MAPE and the worst point over the points of ``role`` with an error."""
    pts = [p for p in points if p.get("role") == role and _finite(p.get("error_pct"))]
    if not pts:
        return {"n": 0, "mape_pct": None, "max_abs_error_pct": None, "worst": None}
    worst = max(pts, key=lambda p: abs(p["error_pct"]))
    return {
        "n": len(pts),
        "mape_pct": sum(abs(p["error_pct"]) for p in pts) / len(pts),
        "max_abs_error_pct": abs(worst["error_pct"]),
        "worst": {k: worst[k] for k in ("series", "x", "sim", "paper", "error_pct")},
    }


class _Entry:
    """One experiment's result directory, loaded."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.summary = _read_summary(directory / SUMMARY_FILE)
        source = self.summary.get("source") or self.summary["experiment"]
        try:
            self.experiment = _native.Experiment.load(str(source))
        except Exception as e:  # a ccsim error with its own one line
            raise UsageError(f"{directory / SUMMARY_FILE}: experiment {source!r}: {e}") from None
        from .experiment import ExperimentResult

        # The config with the derived series registered (their points are in the summary).
        self.config = ExperimentResult(self.experiment, []).config
        self.name = self.summary["experiment"]
        self.overrides = [tuple(kv) for kv in self.summary.get("overrides", [])]
        self.text_overrides = [tuple(kv) for kv in self.summary.get("text_overrides", [])]

    def row(self) -> Dict[str, Any]:
        pts = self.summary["points"]
        claims = self.summary["claims"]
        return {
            "experiment": self.name,
            "title": self.config["title"],
            "figures": self.config["figures"],
            "directory": str(self.dir),
            "seed": self.summary.get("seed"),
            "quick": self.summary.get("quick"),
            "points": len(pts),
            "prediction": _role_stats(pts, "prediction"),
            "calibration": _role_stats(pts, "calibration"),
            "claims": {**{v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}, "total": len(claims)},
        }


def _rank_key(row: Dict[str, Any]) -> Tuple[int, float, str]:
    mape = row["prediction"]["mape_pct"]
    return (1, 0.0, row["experiment"]) if mape is None else (0, -mape, row["experiment"])


def _load(results: Path) -> List[_Entry]:
    return [_Entry(d) for d in _results_dirs(results)]


def _summarize(results: Path, entries: Sequence[_Entry]) -> Dict[str, Any]:
    rows = sorted((e.row() for e in entries), key=_rank_key)
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    return {
        "ccsim_version": _native.__version__,
        "results": str(results),
        "ranking": RANKING,
        "experiments": rows,
    }


def summarize(results: "str | Path" = "results") -> Dict[str, Any]:
    """The dashboard's JSON summary of every experiment under ``results``
    (see the module docs); the numbers of :func:`render_html`'s summary
    table are these."""
    results = Path(results)
    return _summarize(results, _load(results))


def dashboard(results: "str | Path" = "results", html_path: "Optional[str | Path]" = None,
              json_path: "Optional[str | Path]" = None) -> Dict[str, Any]:
    """Loads every experiment result under ``results``, writes the HTML page
    to ``html_path`` and the JSON summary to ``json_path`` (each when given),
    and returns the summary. Bad input (no such directory, no results, a
    broken summary.json) raises :class:`ccsim.UsageError` before anything
    is written."""
    results = Path(results)
    entries = _load(results)
    summary = _summarize(results, entries)
    page = _render(summary, entries) if html_path is not None else None
    if json_path is not None:
        Path(json_path).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if page is not None:
        Path(html_path).write_text(page, encoding="utf-8")  # type: ignore[arg-type]
    return summary


def render_html(results: "str | Path" = "results") -> str:
    """The dashboard page of ``results`` as one self-contained HTML string."""
    results = Path(results)
    entries = _load(results)
    return _render(_summarize(results, entries), entries)


# --------------------------------------------------------------------------
# Formatting


def fmt_mape(v: Optional[float]) -> str:
    """A MAPE or an absolute error in the summary table: one decimal."""
    return "—" if v is None else f"{v:.1f}%"


def fmt_signed(v: Optional[float]) -> str:
    return "—" if v is None else f"{v:+.1f}%"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num_attr(v: Any) -> str:
    """The exact value of a cell: Python's repr of the float (JSON's text)."""
    return "" if v is None else json.dumps(v)


def _x_text(cfg: Dict[str, Any], x: float) -> str:
    if cfg["x"]["name"].endswith("bytes"):
        return _bytes(x)
    return fmt_num(x)


def _bytes(v: float) -> str:
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if v >= size and float(v / size).is_integer():
            return f"{int(v // size)}{unit}"
    return f"{v:g}"


# --------------------------------------------------------------------------
# Plots: inline SVG


PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]
W, H = 600, 340
ML, MR, MT, MB = 70, 16, 14, 46


class _Scale:
    def __init__(self, lo: float, hi: float, log: bool, a: float, b: float, base: float) -> None:
        self.log, self.base, self.a, self.b = log, base, a, b
        if log:
            lo, hi = math.log(lo, base), math.log(hi, base)
        if hi == lo:
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
        else:
            pad = (hi - lo) * 0.05
            lo, hi = lo - pad, hi + pad
        self.lo, self.hi = lo, hi

    def __call__(self, v: float) -> float:
        t = math.log(v, self.base) if self.log else v
        return self.a + (t - self.lo) / (self.hi - self.lo) * (self.b - self.a)

    def ticks(self) -> List[float]:
        if self.log:
            k0, k1 = math.ceil(self.lo - 1e-9), math.floor(self.hi + 1e-9)
            ks = list(range(k0, k1 + 1))
            step = max(1, math.ceil(len(ks) / 8))
            out = [self.base ** k for k in ks[::step]]
            if len(out) >= 2:
                return out
            lo, hi = self.base ** self.lo, self.base ** self.hi
            return _nice_ticks(lo, hi)
        return _nice_ticks(self.lo, self.hi)


def _nice_ticks(lo: float, hi: float, n: int = 6) -> List[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out, v = [], first
    while v <= hi + step * 1e-9:
        out.append(round(v, 12))
        v += step
    return out


def _tick_label(v: float, bytes_axis: bool) -> str:
    if bytes_axis:
        return _bytes(v)
    if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
        return f"{v:.0e}"
    return f"{v:g}"


def _plot_panel(entry: _Entry, panel: Dict[str, Any], color: Dict[str, str], pid: str) -> str:
    """One panel as an SVG: each series' simulated points joined by a line,
    the paper's points (calibration: filled diamonds; prediction: hollow
    circles), axes with ticks, and a ``data-tip`` on every point."""
    cfg = entry.config
    names = [s["name"] for s in cfg["series"] if s["panel"] == panel["name"]]
    labels = {s["name"]: s["label"] for s in cfg["series"]}
    xlog, ylog = bool(cfg["x"]["log"]), bool(panel["ylog"])
    sim: Dict[str, Dict[float, float]] = {}
    paper: List[Tuple[str, float, float, str, Optional[float], Optional[float]]] = []
    for p in entry.summary["points"]:
        if p["series"] not in names:
            continue
        x, v = p["x"], p["sim"]
        if _finite(x) and _finite(v) and (not xlog or x > 0) and (not ylog or v > 0):
            sim.setdefault(p["series"], {})[float(x)] = float(v)
        if p.get("paper") is not None and _finite(p["paper"]) and (not ylog or p["paper"] > 0) \
                and (not xlog or x > 0):
            paper.append((p["series"], float(x), float(p["paper"]), p["role"] or "", p["sim"], p["error_pct"]))
    xs = [x for d in sim.values() for x in d] + [q[1] for q in paper]
    ys = [y for d in sim.values() for y in d.values()] + [q[2] for q in paper]
    out = [f'<svg class="plot" id="{pid}" data-panel="{_e(panel["name"])}" viewBox="0 0 {W} {H}" '
           f'width="{W}" height="{H}" role="img" xmlns="http://www.w3.org/2000/svg">']
    if not xs:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" class="empty">no points</text></svg>')
        return "".join(out)
    sx = _Scale(min(xs), max(xs), xlog, ML, W - MR, 2)
    sy = _Scale(min(ys), max(ys), ylog, H - MB, MT, 10)
    bytes_axis = cfg["x"]["name"].endswith("bytes")
    out.append(f'<rect class="frame" x="{ML}" y="{MT}" width="{W - ML - MR}" height="{H - MT - MB}"/>')
    for t in sx.ticks():
        px = sx(t)
        if ML - 0.5 <= px <= W - MR + 0.5:
            out.append(f'<line class="grid" x1="{px:.1f}" y1="{MT}" x2="{px:.1f}" y2="{H - MB}"/>'
                       f'<text class="tick" x="{px:.1f}" y="{H - MB + 16}" text-anchor="middle">'
                       f'{_e(_tick_label(t, bytes_axis))}</text>')
    for t in sy.ticks():
        py = sy(t)
        if MT - 0.5 <= py <= H - MB + 0.5:
            out.append(f'<line class="grid" x1="{ML}" y1="{py:.1f}" x2="{W - MR}" y2="{py:.1f}"/>'
                       f'<text class="tick" x="{ML - 6}" y="{py + 4:.1f}" text-anchor="end">'
                       f'{_e(_tick_label(t, False))}</text>')
    out.append(f'<text class="axis" x="{(ML + W - MR) / 2}" y="{H - 8}" text-anchor="middle">'
               f'{_e(cfg["x"]["label"])}{" (log)" if xlog else ""}</text>')
    out.append(f'<text class="axis" transform="translate(16 {(MT + H - MB) / 2}) rotate(-90)" '
               f'text-anchor="middle">{_e(panel["ylabel"])}{" (log)" if ylog else ""}</text>')
    for name in names:
        c, pts = color[name], sorted(sim.get(name, {}).items())
        g = [f'<g class="series" data-series="{_e(name)}">']
        if len(pts) > 1:
            d = " ".join(f"{sx(x):.2f},{sy(y):.2f}" for x, y in pts)
            g.append(f'<polyline class="line" points="{d}" stroke="{c}"/>')
        for x, y in pts:
            tip = f"{labels[name]} (sim)\n{cfg['x']['name']} = {_x_text(cfg, x)}\n{fmt_num(y)}"
            g.append(f'<circle class="pt sim" cx="{sx(x):.2f}" cy="{sy(y):.2f}" r="3.5" fill="{c}" '
                     f'data-x="{x!r}" data-y="{y!r}" data-tip="{_e(tip)}"/>')
        for s, x, y, role, sv, err in (q for q in paper if q[0] == name):
            tip = (f"{labels[name]}: paper ({role})\n{cfg['x']['name']} = {_x_text(cfg, x)}\n"
                   f"paper {fmt_num(y)}, sim {fmt_num(sv)}, error {fmt_signed(err)}")
            px, py = sx(x), sy(y)
            attrs = f'data-x="{x!r}" data-y="{y!r}" data-role="{_e(role)}" data-tip="{_e(tip)}"'
            if role == "calibration":
                pts_d = f"{px:.2f},{py - 7:.2f} {px + 7:.2f},{py:.2f} {px:.2f},{py + 7:.2f} {px - 7:.2f},{py:.2f}"
                g.append(f'<polygon class="pt paper calibration" points="{pts_d}" fill="{c}" {attrs}/>')
            else:
                g.append(f'<circle class="pt paper prediction" cx="{px:.2f}" cy="{py:.2f}" r="6" '
                         f'stroke="{c}" {attrs}/>')
        g.append("</g>")
        out += g
    out.append("</svg>")
    return "".join(out)


# --------------------------------------------------------------------------
# The page


CSS = """
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1280px;
 padding:0 20px 60px;color:#222}
h1{font-size:22px;margin:20px 0 4px}h2{font-size:18px;margin:0 0 4px}h3{font-size:15px;margin:16px 0 6px}
.meta{color:#666;font-size:12px}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;
 vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.bad td.mape{background:#fde2e1}tr.ok td.mape{background:#e3f4e1}
section.experiment{border-top:2px solid #888;margin-top:28px;padding-top:12px}
.verdict-held{color:#1a7f37;font-weight:600}.verdict-not_held{color:#c62828;font-weight:700}
.verdict-not_evaluated{color:#777}
.plots{display:flex;flex-wrap:wrap;gap:14px}.panel{border:1px solid #eee;padding:4px}
svg.plot{font-size:11px;background:#fff}svg .frame{fill:none;stroke:#999}svg .grid{stroke:#eee}
svg .line{fill:none;stroke-width:1.6}svg .paper.prediction{fill:#fff;stroke-width:2}
svg .paper.calibration{stroke:#000;stroke-width:1}svg .pt{cursor:pointer}svg .pt:hover{stroke:#000;stroke-width:2}
svg .tick{fill:#555}svg .axis{fill:#333;font-size:12px}
.legend span{display:inline-block;margin:2px 10px 2px 0;cursor:pointer;user-select:none}
.legend span.off{opacity:.35;text-decoration:line-through}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-1px}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:5px 8px;border-radius:4px;
 font-size:12px;white-space:pre;display:none;z-index:10}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}.prov-calibrated{background:#fff6d5}
"""

SCRIPT = """
(function () {
  'use strict';
  var tip = document.getElementById('tip');
  function show(ev) {
    var t = ev.target.getAttribute('data-tip');
    if (!t) { return; }
    tip.textContent = t;
    tip.style.display = 'block';
    tip.style.left = (ev.clientX + 12) + 'px';
    tip.style.top = (ev.clientY + 12) + 'px';
  }
  function hide() { tip.style.display = 'none'; }
  var pts = document.querySelectorAll('svg.plot .pt');
  for (var i = 0; i < pts.length; i++) {
    pts[i].addEventListener('mouseenter', show);
    pts[i].addEventListener('mousemove', show);
    pts[i].addEventListener('mouseleave', hide);
  }
  var entries = document.querySelectorAll('.legend span[data-series]');
  for (var j = 0; j < entries.length; j++) {
    entries[j].addEventListener('click', function (ev) {
      var el = ev.currentTarget, sec = el.closest('section');
      var off = el.classList.toggle('off');
      var gs = sec.querySelectorAll('g.series[data-series="' + el.getAttribute('data-series') + '"]');
      for (var k = 0; k < gs.length; k++) { gs[k].style.display = off ? 'none' : ''; }
    });
  }
  document.body.setAttribute('data-ready', '1');
})();
"""


def _summary_table(summary: Dict[str, Any]) -> str:
    head = ("<tr><th>rank</th><th>experiment</th><th>prediction MAPE</th><th>pred. points</th>"
            "<th>worst prediction</th><th>calibration MAPE</th><th>cal. points</th><th>worst calibration</th>"
            "<th>claims held</th><th>not held</th><th>not evaluated</th></tr>")
    rows = []
    for r in summary["experiments"]:
        cells = [f'<td class="num" data-key="rank" data-value="{r["rank"]}">{r["rank"]}</td>',
                 f'<td><a href="#exp-{_e(r["experiment"])}">{_e(r["experiment"])}</a></td>']
        for role in ROLES:
            st = r[role]
            cls = "mape" if role == "prediction" else ""
            cells.append(f'<td class="num {cls}" data-key="{role}.mape_pct" data-value="{_num_attr(st["mape_pct"])}">'
                         f'{fmt_mape(st["mape_pct"])}</td>')
            cells.append(f'<td class="num" data-key="{role}.n" data-value="{st["n"]}">{st["n"]}</td>')
            w = st["worst"]
            text = "—" if w is None else (f'{fmt_signed(w["error_pct"])} at {_e(w["series"])} '
                                          f'x={_e(fmt_num(w["x"]))}')
            cells.append(f'<td class="num" data-key="{role}.worst.error_pct" '
                         f'data-value="{_num_attr(None if w is None else w["error_pct"])}">{text}</td>')
        for v in VERDICTS:
            cells.append(f'<td class="num" data-key="claims.{v}" data-value="{r["claims"][v]}">{r["claims"][v]}</td>')
        mape = r["prediction"]["mape_pct"]
        cls = "" if mape is None else ("bad" if mape > 10 else "ok")
        rows.append(f'<tr class="{cls}" data-experiment="{_e(r["experiment"])}">{"".join(cells)}</tr>')
    return f'<table id="summary">{head}{"".join(rows)}</table>'


def _role_block(cfg: Dict[str, Any], role: str, st: Dict[str, Any]) -> str:
    if not st["n"]:
        return f"<tr><td>{role}</td><td class='num'>0</td><td class='num'>—</td><td>—</td></tr>"
    w = st["worst"]
    worst = (f"{_e(w['series'])} at {_e(cfg['x']['name'])} = {_e(_x_text(cfg, w['x']))}: sim "
             f"{_e(fmt_num(w['sim']))}, paper {_e(fmt_num(w['paper']))} ({fmt_signed(w['error_pct'])})")
    return (f"<tr><td>{role}</td><td class='num'>{st['n']}</td>"
            f"<td class='num' data-key='{role}.mape_pct' data-value='{_num_attr(st['mape_pct'])}'>"
            f"{fmt_mape(st['mape_pct'])}</td><td>{worst}</td></tr>")


def _parameters(entry: _Entry) -> str:
    declared = {t["type"]: {d["name"]: d for d in t["params"]} for t in _native.component_types()}
    out = []
    for name in sorted({s["platform"] for s in entry.config["series"] if not s.get("derived")}):
        p = experiment_platform(entry.experiment, name, entry.overrides or None, entry.text_overrides or None)
        rows = []
        for inst, c in p.components().items():
            for param, (value, prov) in c["params"].items():
                d = declared.get(c["type"], {}).get(param, {})
                unit = d.get("unit", "")
                shown = f"{value:#x}" if unit == "address" and isinstance(value, int) and not isinstance(value, bool) \
                    else fmt_value(value)
                cls = ' class="prov-calibrated"' if str(prov).startswith("calibrated") else ""
                rows.append(f"<tr{cls}><td>{_e(inst)}</td><td>{_e(c['type'])}</td><td>{_e(param)}</td>"
                            f"<td class='num'>{_e(shown)}</td><td>{_e(unit)}</td>"
                            f"<td>{_e((d.get('range') or {}).get('text', ''))}</td><td>{_e(prov)}</td></tr>")
        out.append(f"<details class='params' data-platform='{_e(p.name)}'><summary>platform {_e(p.name)}: "
                   f"{len(rows)} parameters ({_e(p.source)})</summary><p>{_e(p.description)}</p>"
                   "<table><tr><th>instance</th><th>type</th><th>parameter</th><th>value</th><th>unit</th>"
                   f"<th>range</th><th>provenance</th></tr>{''.join(rows)}</table></details>")
    return "".join(out)


def _section(entry: _Entry, row: Dict[str, Any], index: int) -> str:
    cfg = entry.config
    color = {s["name"]: PALETTE[i % len(PALETTE)] for i, s in enumerate(cfg["series"])}
    parts = [f'<section class="experiment" id="exp-{_e(entry.name)}" data-experiment="{_e(entry.name)}">',
             f"<h2>{row['rank']}. {_e(entry.name)}: {_e(cfg['title'])}</h2>",
             f"<div class='meta'>{_e(cfg['figures'])} · seed {_e(row['seed'])} · "
             f"{'quick' if row['quick'] else 'full'} sweep · {row['points']} compared rows · "
             f"<code>{_e(entry.dir)}</code></div>"]
    ov = list(entry.overrides) + list(entry.text_overrides)
    if ov:
        parts.append("<div class='meta'>overrides: " + ", ".join(f"<code>{_e(k)}={_e(v)}</code>" for k, v in ov)
                     + "</div>")
    parts.append("<h3>Error against the paper</h3><table class='errors'><tr><th>role</th><th>points</th>"
                 "<th>MAPE</th><th>worst point</th></tr>")
    parts += [_role_block(cfg, role, row[role]) for role in ROLES]
    parts.append("</table>")
    if cfg["calibrated_on"]:
        parts.append("<details><summary>calibrated on</summary><ul>"
                     + "".join(f"<li>{_e(f)}</li>" for f in cfg["calibrated_on"]) + "</ul></details>")
    parts.append("<h3>Plot</h3><div class='legend'>")
    for s in cfg["series"]:
        parts.append(f'<span data-series="{_e(s["name"])}"><i style="background:{color[s["name"]]}"></i>'
                     f'{_e(s["label"])}</span>')
    parts.append("<span>◆ paper (calibration)</span><span>○ paper (prediction)</span></div><div class='plots'>")
    for j, panel in enumerate(cfg["panels"]):
        parts.append(f"<div class='panel'>{_plot_panel(entry, panel, color, f'plot-{index}-{j}')}</div>")
    parts.append("</div>")
    claims = entry.summary["claims"]
    if claims:
        c = row["claims"]
        parts.append(f"<h3>Claims of the text: {c['held']} held, {c['not_held']} not held, "
                     f"{c['not_evaluated']} not evaluated</h3><table class='claims'><tr><th>#</th><th>quote</th>"
                     "<th>section</th><th>kind</th><th>series</th><th>verdict</th><th>expected</th>"
                     "<th>numbers</th></tr>")
        quotes = cfg.get("claims", [])
        for cl in claims:
            i = cl["claim"]
            quote = cl.get("quote") or (quotes[i]["quote"] if isinstance(i, int) and i < len(quotes) else "")
            parts.append(f"<tr class='claim' data-verdict='{_e(cl['verdict'])}'><td>{_e(i)}</td>"
                         f"<td>“{_e(quote)}”</td><td>{_e(cl['section'])}</td><td>{_e(cl['kind'])}</td>"
                         f"<td>{_e(cl['series'])}</td><td class='verdict-{_e(cl['verdict'])}'>"
                         f"{_e(cl['verdict'].replace('_', ' '))}</td><td>{_e(str(cl['expect']).replace('_', ' '))}"
                         f"</td><td>{_e(cl['detail'])}{_why_not_held(cl)}</td></tr>")
        parts.append("</table>")
    parts.append("<h3>Parameters and their provenance</h3>")
    parts.append(_parameters(entry))
    if cfg["notes"]:
        parts.append("<details><summary>notes</summary><ul>" + "".join(f"<li>{_e(n)}</li>" for n in cfg["notes"])
                     + "</ul></details>")
    parts.append("</section>")
    return "".join(parts)


def _why_not_held(claim: Dict[str, Any]) -> str:
    """A not-held claim's known reason, under its numbers."""
    why = claim.get("why_not_held") or ""
    if claim["verdict"] != "not_held" or not why:
        return ""
    return f"<br><em>why not held:</em> {_e(why)}"


def _render(summary: Dict[str, Any], entries: Sequence[_Entry]) -> str:
    by_name = {e.name: e for e in entries}
    sections = [_section(by_name[r["experiment"]], r, i) for i, r in enumerate(summary["experiments"])]
    data = json.dumps(summary).replace("</", "<\\/")
    return "".join([
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<link rel='icon' href='data:,'>",
        f"<title>ccsim validation: {len(entries)} experiments</title><style>{CSS}</style></head><body>",
        "<div id='tip'></div>",
        f"<h1>ccsim validation dashboard</h1><div class='meta'>ccsim {_e(summary['ccsim_version'])} · "
        f"{len(entries)} experiments from <code>{_e(summary['results'])}</code> · ranked by {_e(RANKING)}</div>",
        "<p>MAPE: the mean absolute percentage error of the simulation against the paper's points of that role. "
        "<em>Calibration</em> points were used to fit parameters (their error measures the fit); "
        "<em>prediction</em> points were not (their error tests the model).</p>",
        _summary_table(summary),
        *sections,
        f"<script type='application/json' id='summary-data'>{data}</script>",
        f"<script>{SCRIPT}</script></body></html>\n",
    ])
