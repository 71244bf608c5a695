"""Behaviour is preserved: every point of every shipped experiment equals the
committed golden file, metric for metric, statistic for statistic, and trace
hash for trace hash.

``tests/golden/points.jsonl`` was written by
``cargo run --release -p ccsim-experiments --example dump_points -- --json``
(full sweeps, seed 0). A deliberate change of a number regenerates it in a
commit of its own that says which points changed and why.

The default suite runs the quick sweep of every experiment (about 40 s); the
slow tier runs every point (``python -m pytest -m slow``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ccsim

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "points.jsonl"


def _golden():
    points = {}
    for line in GOLDEN.read_text().splitlines():
        p = json.loads(line)
        points[(p["experiment"], p["series"], float(p["x"]))] = p
    return points


def _compare(quick: bool) -> None:
    golden = _golden()
    checked = 0
    for name in ccsim.experiments():
        cfg = ccsim.Experiment.load(name).to_dict()
        xs = cfg["quick"] if quick else cfg["sweep"]
        for s in cfg["series"]:
            for x in xs:
                want = golden.get((name, s["name"], float(x)))
                assert want is not None, f"{name} {s['name']} x={x}: no golden point (a new experiment or series needs the golden file regenerated)"
                got = ccsim.run_point(name, s["name"], x, seed=0)
                where = f"{name} {s['name']} x={x}"
                assert "error" not in want, f"{where}: the golden point is an error: {want['error']}"
                assert got["metrics"] == want["metrics"], where
                assert got["stats"] == want["stats"], where
                assert got["trace_hash"] == want["trace_hash"], where
                checked += 1
    assert checked > 0


def test_quick_points_equal_the_golden_file():
    _compare(quick=True)


@pytest.mark.slow
def test_every_point_equals_the_golden_file():
    _compare(quick=False)
