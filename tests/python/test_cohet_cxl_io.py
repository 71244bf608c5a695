"""CXL.io on the CXL link of the Cohet CXL-FPGA, driven as a user drives
it: `cohet-dma`'s CXL.io series (the DMA engine on the link its DCOH
shares) keep the paper's three calibration values within 5%, and the
prediction `cohet-cxl-io-mix` (CXL.cache loads beside a CXL.io DMA stream
against the ARB/MUX weight) runs from the CLI with its report and from the
API, with the mechanism-level facts its numbers must show. Every bound is
read from the platform, not written here."""

from __future__ import annotations

import json

import pytest

import ccsim
from conftest import run_cli

MIX = "cohet-cxl-io-mix"


@pytest.fixture(scope="module")
def mix():
    return ccsim.reproduce(MIX, quick=True)


def at(df):
    return {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}


def flexbus(lanes=None):
    """Slots per second of one direction of the cohet flexbus."""
    p = {k: v[0] for k, v in ccsim.Platform.load("cohet").components()["flexbus"]["params"].items()}
    lanes = lanes or p["lanes"]
    bytes_per_s = p["rate_gts"] * 1e9 * lanes * 128 / 130 / 8
    return bytes_per_s / p["flit_bytes"] * p["slots_per_flit"]


@pytest.mark.parametrize(
    "series,x,paper",
    [("latency_cxl_io", 64, 2500.0), ("bandwidth_cxl_io", 64, 0.92), ("bandwidth_cxl_io", 262144, 22.9)],
)
def test_dma_over_cxl_io_stays_within_5_percent_of_the_paper(series, x, paper):
    m = ccsim.run_point("cohet-dma", series, x)["metrics"]
    metric = "latency_ns" if series.startswith("latency") else "bandwidth_gbps"
    assert m[metric] == pytest.approx(paper, rel=0.05)
    # And the flexbus carried it: CXL.io flits both ways, no CXL.cache.
    st = ccsim.run_point("cohet-dma", series, x)["stats"]
    assert st["system.flexbus.down.io_flits"] > 0 and st["system.flexbus.up.io_flits"] > 0
    assert st["system.flexbus.down.cache_flits"] == 0


def test_reproduce_quick_via_the_cli_writes_a_report_of_predictions_only(tmp_path):
    r = run_cli("reproduce", MIX, "--quick", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    assert (tmp_path / MIX / "report.md").exists()
    assert (tmp_path / MIX / "plot.png").exists()


def test_no_point_is_calibrated(mix):
    assert not (mix.df.role == "calibration").any()


def test_cxl_io_weight_moves_link_share_from_cxl_cache_to_the_dma(mix):
    v = at(mix.df)
    # x8: the two saturate the host -> device direction. More CXL.io weight:
    # the DMA gains, the loads lose, and wait longer.
    assert v[("dma_x8", 8)] > v[("dma_x8", 1)]
    assert v[("lsu_x8", 8)] < v[("lsu_x8", 1)] < 0.8 * v[("lsu_alone_x8", 1)]
    assert v[("latency_x8", 8)] > v[("latency_x8", 1)]
    # The loads alone do not care about the weight (nothing to share).
    assert v[("lsu_alone_x8", 8)] == pytest.approx(v[("lsu_alone_x8", 1)], rel=1e-6)


def test_the_shared_link_never_carries_more_than_its_slots(mix):
    v = at(mix.df)
    # A 512 B completion is 34 slots; a load's GO and line 6, and the GO-I
    # of the HMC eviction it causes (once the HMC is full) a 7th.
    for x in (1, 8):
        loads = v[("lsu_x8", x)] * 1e9 / 64
        completions = v[("dma_x8", x)] * 1e9 / 512 * 34
        assert loads * 6 + completions <= flexbus(lanes=8)
        assert loads * 7 + completions >= 0.9 * flexbus(lanes=8)


def test_at_x16_equal_weights_leave_the_loads_alone_but_a_heavy_cxl_io_weight_does_not(mix):
    v = at(mix.df)
    assert v[("lsu_x16", 1)] == pytest.approx(v[("lsu_alone_x8", 1)], rel=0.03)
    # The DMA's bursts of completions hold the wire w flits per CXL.cache
    # flit: the loads lose although the link has room on average.
    assert v[("lsu_x16", 8)] < 0.7 * v[("lsu_x16", 1)]
    assert v[("dma_x16", 8)] == pytest.approx(v[("dma_x16", 1)], rel=0.03)


def test_random_tester_on_the_shared_link_matches_the_sequential_reference():
    r = ccsim.simulate("cohet", system="cxl_io", ops=300, lines=2, seed=2)
    m = r["metrics"]
    assert m["violations"] == 0
    assert m["reference_mismatches"] == 0
