"""The comparison arithmetic of ExperimentResult (error %, roles, summary
shape), on hand-written points so every number is checkable by hand."""

from __future__ import annotations

import pytest

from ccsim.experiment import ExperimentResult, error_pct


class _Config:
    """A stand-in for a native Experiment: just the validated data."""

    origin = "hand-written"

    def to_dict(self):
        return {
            "name": "toy", "title": "Toy", "paper": [], "figures": "", "calibrated_on": ["fact"], "notes": [],
            "x": {"name": "bytes", "label": "bytes", "log": True}, "sweep": [64.0, 128.0], "quick": [64.0],
            "series": [{"name": "lat", "label": "latency", "platform": "p", "workload": "w", "params": {},
                        "metric": "latency_ns", "panel": "latency_ns"}],
            "panels": [{"name": "latency_ns", "ylabel": "ns", "ylog": False}],
            "references": [
                {"series": "lat", "x": 64.0, "value": 2500.0, "role": "calibration", "citation": "§1"},
                {"series": "lat", "x": 128.0, "value": 2000.0, "role": "prediction", "citation": "Fig. 2"},
            ],
        }


POINTS = [
    {"series": "lat", "x": 64.0, "metrics": {"latency_ns": 2450.0, "bandwidth": 1.0}, "stats": {}, "trace_hash": "a"},
    {"series": "lat", "x": 128.0, "metrics": {"latency_ns": 2200.0, "bandwidth": 2.0}, "stats": {}, "trace_hash": "b"},
]


def test_error_pct_is_signed_and_relative_to_the_paper():
    assert error_pct(2450.0, 2500.0) == pytest.approx(-2.0)
    assert error_pct(2200.0, 2000.0) == pytest.approx(10.0)
    assert error_pct(1.0, None) is None
    assert error_pct(1.0, 0.0) is None


def test_comparisons_and_summary():
    r = ExperimentResult(_Config(), POINTS, seed=3)
    s = r.summary()
    assert s["experiment"] == "toy" and s["seed"] == 3
    assert s["points"] == [
        {"experiment": "toy", "series": "lat", "x": 64.0, "sim": 2450.0, "paper": 2500.0, "role": "calibration",
         "error_pct": pytest.approx(-2.0)},
        {"experiment": "toy", "series": "lat", "x": 128.0, "sim": 2200.0, "paper": 2000.0, "role": "prediction",
         "error_pct": pytest.approx(10.0)},
    ]
    assert s["errors"]["calibration"] == {"n": 1, "mean_abs_error_pct": pytest.approx(2.0),
                                          "max_abs_error_pct": pytest.approx(2.0)}
    assert s["errors"]["prediction"]["max_abs_error_pct"] == pytest.approx(10.0)


def test_dataframe_columns_and_values():
    df = ExperimentResult(_Config(), POINTS).df
    assert list(df.columns[:12]) == ["experiment", "series", "label", "platform", "workload", "metric", "x", "sim",
                                     "paper", "role", "error_pct", "citation"]
    assert df["sim"].tolist() == [2450.0, 2200.0]
    assert df["metric.bandwidth"].tolist() == [1.0, 2.0]
    assert df["error_pct"].round(6).tolist() == [-2.0, 10.0]


def test_points_without_a_reference_have_null_paper_fields():
    pts = POINTS + [{"series": "lat", "x": 256.0, "metrics": {"latency_ns": 1.0}, "stats": {}, "trace_hash": "c"}]
    last = ExperimentResult(_Config(), pts).summary()["points"][-1]
    assert last == {"experiment": "toy", "series": "lat", "x": 256.0, "sim": 1.0, "paper": None, "role": None,
                    "error_pct": None}
