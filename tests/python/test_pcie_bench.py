"""`pcie-bench` (issue 13 item 9): pcie-bench's device-issued DMA
benchmarks on the NFP-6000 / Xeon E5-2620 v3 platform, through the CLI and
the API. Every point is a prediction; these tests check the run, the
series and the PCIe limits the byte accounting implies."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import ccsim
from conftest import run_cli

NAME = "pcie-bench"
# Gen3 x8 after 128b/130b encoding, in Gb/s.
LINK_GBITS = 8 * 8 * 128 / 130


def test_reproduce_pcie_bench_quick_through_the_cli(tmp_path):
    assert NAME in ccsim.experiments()
    r = run_cli("reproduce", NAME, "--quick", "--json", "--out", tmp_path, "--no-progress", timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    cfg = ccsim.Experiment.load(NAME).to_dict()
    assert cfg["references"] == []  # a prediction: nothing calibrated, nothing given
    points = [p for p in doc["points"] if p["experiment"] == NAME]
    assert len(points) == len(cfg["series"]) * len(cfg["quick"]) == 15
    df = pd.read_parquet(tmp_path / NAME / "results.parquet")
    sim = {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}
    # Latency grows with size; a write before the read costs more.
    assert sim[("lat_rd", 8)] < sim[("lat_rd", 64)] < sim[("lat_rd", 2048)]
    for x in (8, 64, 2048):
        assert sim[("lat_wrrd", x)] > sim[("lat_rd", x)]
    # Bandwidth grows with size and stays under the link after its overheads.
    for s in ("bw_rd", "bw_wr", "bw_rdwr"):
        assert sim[(s, 8)] < sim[(s, 64)] < sim[(s, 2048)] < LINK_GBITS
    # 2 KiB writes: 8 MWrs of 256 B with 24 B of TLP overhead each.
    assert sim[("bw_wr", 2048)] == pytest.approx(LINK_GBITS * 2048 / (2048 + 8 * 24), rel=0.01)


def test_pcie_bench_reads_split_at_mrrs_and_complete_in_mps_chunks():
    r = ccsim.run_point(NAME, "lat_rd", 2048)
    # 2 KiB: four 512 B MRds, each answered by two 256 B CplDs.
    assert r["stats"]["system.dma.read_requests"] == 4
    assert r["stats"]["system.root_complex.completions"] == 8
    assert r["stats"]["system.dma.h2c_bytes"] == 2048
