"""Plots of experiment results with the paper's points overlaid.

One panel per ``[[panels]]`` entry of the experiment; a histogram panel
(``histogram_at``) draws its series' binned samples at those x as step
lines. Otherwise each series is a line
with markers (and error bars where the workload reports the metric's
standard deviation over seeded iterations as ``<metric>_std``). Paper points are drawn in the series' colour: *calibration*
points as large filled diamonds with a black edge, *prediction* points as
hollow circles, so a reader sees at once which agreement was fitted and
which was predicted.

A panel whose legend would not fit beside its curves (more than
``_LEGEND_INSIDE`` entries) gets it in an area of its own below the
panel, in two columns, and its series cycle line styles as well as
colours, so that no two of them look alike.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .report import ResultView

#: Legend entries that still fit inside a panel.
_LEGEND_INSIDE = 10
#: Height of one legend row below a panel (inches) and its columns.
_LEGEND_ROW_IN = 0.19
_LEGEND_COLUMNS = 2
_LINE_STYLES = ("-", "--", ":", "-.")


def plot_result(result: "ResultView", path: Optional[os.PathLike] = None):
    """Draws ``result``; saves a PNG when ``path`` is given. Returns the Figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    cfg = result.config
    panels = cfg["panels"]
    # Legend entries per panel: its series and the two paper markers.
    entries = [sum(s["panel"] == p["name"] for s in cfg["series"]) + 2 for p in panels]
    rows = max((-(-n // _LEGEND_COLUMNS) for n in entries if n > _LEGEND_INSIDE), default=0)
    if rows:
        # A row of panels over a row of legend areas.
        fig, grid = plt.subplots(2, len(panels), squeeze=False,
                                 figsize=(7.5 * len(panels), 4.2 + rows * _LEGEND_ROW_IN),
                                 gridspec_kw={"height_ratios": [4.2, rows * _LEGEND_ROW_IN]})
        axes, legend_areas = grid[:1], grid[1]
        for area in legend_areas:
            area.axis("off")
    else:
        fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
        legend_areas = [None] * len(panels)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {s["name"]: colors[i % len(colors)] for i, s in enumerate(cfg["series"])}
    line_style = {s["name"]: _LINE_STYLES[i // len(colors) % len(_LINE_STYLES)] for i, s in enumerate(cfg["series"])}
    comps = result.comparisons()
    hists = result.histograms() if hasattr(result, "histograms") else []
    for ax, panel, area, n in zip(axes[0], panels, legend_areas, entries):
        if panel.get("histogram_at"):
            _draw_histograms(ax, panel, [h for h in hists if h["panel"] == panel["name"]], color, cfg["x"]["name"])
            continue
        for s in (s for s in cfg["series"] if s["panel"] == panel["name"]):
            pts = sorted((c["x"], c["sim"]) for c in comps if c["series"] == s["name"] and c["sim"] is not None)
            pts = list(dict(pts).items())
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], line_style[s["name"]], marker=".", color=color[s["name"]],
                        label=s["label"] if "sim" in s["label"] else f"{s['label']} (sim)")
                # A workload that averages seeded iterations reports the
                # spread as metric "<metric>_std": drawn as error bars.
                std = {p["x"]: p["metrics"].get(s["metric"] + "_std")
                       for p in getattr(result, "all_points", []) if p["series"] == s["name"]}
                if any(v is not None for v in std.values()):
                    ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[std.get(p[0]) or 0.0 for p in pts],
                                fmt="none", ecolor=color[s["name"]], capsize=3)
            for role, style in (("calibration", dict(marker="D", s=64, edgecolors="black", linewidths=1.0)),
                                ("prediction", dict(marker="o", s=56, facecolors="none", linewidths=1.5))):
                refs = [r for r in cfg["references"] if r["series"] == s["name"] and r["role"] == role]
                if refs:
                    kw = dict(style)
                    if role == "calibration":
                        kw["color"] = color[s["name"]]
                    else:
                        kw["edgecolors"] = color[s["name"]]
                    ax.scatter([r["x"] for r in refs], [r["value"] for r in refs], zorder=3, **kw)
        if cfg["x"]["log"]:
            ax.set_xscale("log", base=2)
        if cfg["x"]["name"].endswith("bytes"):
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _bytes(v)))
        if panel["ylog"]:
            ax.set_yscale("log")
        ax.set_xlabel(cfg["x"]["label"])
        ax.set_ylabel(panel["ylabel"])
        ax.grid(True, which="major", alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        handles += [
            Line2D([], [], marker="D", color="gray", markeredgecolor="black", linestyle="none",
                   label="paper (calibration)"),
            Line2D([], [], marker="o", color="gray", markerfacecolor="none", linestyle="none",
                   label="paper (prediction)"),
        ]
        if n > _LEGEND_INSIDE:
            area.legend(handles=handles, fontsize=7, loc="upper center", ncol=_LEGEND_COLUMNS, frameon=False)
        else:
            ax.legend(handles=handles, fontsize=8)
    fig.suptitle(f"{cfg['name']}: {cfg['title']}" + (f"\n{cfg['figures']}" if cfg["figures"] else ""), fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _draw_histograms(ax, panel, records, color, x_name: str) -> None:
    """A histogram panel: each (series, x) distribution as a step line, the
    panel's x told apart by line style; the last (open) bin is drawn one
    bin wide."""
    styles = ["-", "--", ":", "-."]
    groups = {}
    for r in records:
        groups.setdefault((r["series"], r["x"]), []).append(r)
    xs = list(panel["histogram_at"])
    for (series, x), rs in groups.items():
        width = rs[1]["lower"] - rs[0]["lower"] if len(rs) > 1 else 1.0
        edges = [r["lower"] for r in rs] + [rs[-1]["lower"] + width]
        ax.stairs([r["count"] for r in rs], edges, color=color[series],
                  linestyle=styles[xs.index(x) % len(styles)] if x in xs else "-",
                  label=f"{rs[0]['label']}, {x_name} = {x:g} (sim)")
    if panel["ylog"]:
        ax.set_yscale("log")
    ax.set_xlabel("latency bin (ns)")
    ax.set_ylabel(panel["ylabel"])
    ax.grid(True, which="major", alpha=0.3)
    if groups:
        ax.legend(fontsize=8)


def _bytes(v: float) -> str:
    """Tick labels for sizes: 64, 4K, 256K, 1M."""
    for unit, size in (("M", 1 << 20), ("K", 1 << 10)):
        if v >= size and float(v / size).is_integer():
            return f"{int(v // size)}{unit}"
    return f"{v:g}"
