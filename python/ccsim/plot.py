"""Plots of experiment results with the paper's points overlaid.

One panel per ``[[panels]]`` entry of the experiment; a histogram panel
(``histogram_at``) draws its series' binned samples at those x as step
lines. Otherwise each series is a line
with markers (and error bars where the workload reports the metric's
standard deviation over seeded iterations as ``<metric>_std``). Paper points are drawn in the series' colour: *calibration*
points as large filled diamonds with a black edge, *prediction* points as
hollow circles, so a reader sees at once which agreement was fitted and
which was predicted.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .report import ResultView


def plot_result(result: "ResultView", path: Optional[os.PathLike] = None):
    """Draws ``result``; saves a PNG when ``path`` is given. Returns the Figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    cfg = result.config
    panels = cfg["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color = {s["name"]: colors[i % len(colors)] for i, s in enumerate(cfg["series"])}
    comps = result.comparisons()
    hists = result.histograms() if hasattr(result, "histograms") else []
    for ax, panel in zip(axes[0], panels):
        if panel.get("histogram_at"):
            _draw_histograms(ax, panel, [h for h in hists if h["panel"] == panel["name"]], color, cfg["x"]["name"])
            continue
        for s in (s for s in cfg["series"] if s["panel"] == panel["name"]):
            pts = sorted((c["x"], c["sim"]) for c in comps if c["series"] == s["name"] and c["sim"] is not None)
            pts = list(dict(pts).items())
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "-", marker=".", color=color[s["name"]],
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
