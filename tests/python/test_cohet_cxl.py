"""The CXL.cache experiments of Cohet (Figs. 12, 13 and 15), driven as a user
drives them: the CLI's reproduce with its summary, the API's DataFrame, the
calibration points within 5%, the predictions where they fall, and the
device-clock what-if of the same cycle counts at 1.5 GHz."""

from __future__ import annotations

import json

import pytest

import ccsim
from conftest import run_cli


def test_latency_calibration_points_within_5_percent_via_the_cli(tmp_path):
    r = run_cli("reproduce", "cohet-cxl-latency", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    assert (tmp_path / "cohet-cxl-latency" / "report.md").exists()
    df = ccsim.reproduce("cohet-cxl-latency").df
    cal = df[df.role == "calibration"]
    assert sorted(cal.series) == ["hmc", "llc", "memory"]
    assert (cal.error_pct.abs() <= 5.0).all(), cal


def test_latency_tiers_and_the_1_5_ghz_what_if():
    df = ccsim.reproduce("cohet-cxl-latency").df
    at = {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}
    # The tiers, as the verified table walks them: the HMC pipeline, then
    # one CXL round trip to the LLC, then DRAM behind it.
    assert at[("hmc", 400)] < at[("llc", 400)] < at[("memory", 400)]
    # Same cycle counts at 1.5 GHz: the device's share shrinks by 400/1500,
    # its DCOH's and its CXL link's (two traversals of the platform's
    # cxl_link.latency_ns; SimCXL keeps the link in the device controller's
    # cycles); the host's does not.
    assert at[("hmc", 1500)] == pytest.approx(at[("hmc", 400)] * 400 / 1500, rel=0.01)
    link_ns = ccsim.Platform.load("cohet").components()["cxl_link"]["params"]["latency_ns"][0]
    device_saving = (at[("hmc", 400)] + 2 * link_ns) * (1 - 400 / 1500)
    for tier in ["llc", "memory"]:
        assert at[(tier, 400)] - at[(tier, 1500)] == pytest.approx(device_saving, rel=0.02)


def test_bandwidth_predictions_and_claims():
    res = ccsim.reproduce("cohet-cxl-bandwidth", quick=True)
    df = res.df
    pred = df[df.role == "prediction"].set_index("series")
    # HMC: one load per 400 MHz cycle behind the 115 ns pipeline.
    assert pred.loc["hmc", "sim"] == pytest.approx(25.07, rel=0.01)
    # Memory: the LLC's bubbles plus the DRAM latency; within 5% of the text.
    assert abs(pred.loc["memory", "error_pct"]) <= 5.0
    claims = res.claims_df
    assert (claims.verdict == claims.expect).all(), claims[["quote", "verdict", "expect", "detail"]]


def test_a_bad_device_parameter_is_a_config_error():
    with pytest.raises(ccsim.ConfigError, match="dcoh.access_ns"):
        ccsim.reproduce("cohet-cxl-latency", overrides={"dcoh.access_ns": -1.0})


def test_numa_latency_comes_from_crossings():
    df = ccsim.reproduce("cohet-numa", quick=True).df
    lat = {x: v for s, x, v in zip(df.series, df.x, df.sim) if s == "latency"}
    # The nearest node is the root port's; the other socket is further
    # than any node of this one; a node two crossings away (3) costs the
    # sum of one horizontal and one vertical crossing.
    assert lat[7] < lat[5] < lat[0] < lat[3]
    hop_x = ccsim.Platform.load("cohet").components()["snc"]["params"]["hop_x_ns"][0]
    assert lat[3] - lat[0] == pytest.approx(lat[5] - lat[7] + 2 * hop_x, abs=1.0)
    pred = df[df.role == "prediction"]
    assert (pred.error_pct.abs() <= 5.0).all(), pred
