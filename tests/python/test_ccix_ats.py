"""CCIX address translation (CCIX §IV Exp. 2, Figs. 3 and 4) driven as a
user drives it: ``ccsim reproduce ccix-ats --quick`` from the CLI, the API's
DataFrame with the three calibration points within 5%, the text's claims
held, Eq. 1 beside the simulation, and the ccix_ctg workload's knobs."""

from __future__ import annotations

import json

import pytest

import ccsim
from conftest import run_cli


def test_quick_reproduce_from_the_cli(tmp_path):
    r = run_cli("reproduce", "ccix-ats", "--quick", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary is not None
    report = (tmp_path / "ccix-ats" / "report.md").read_text()
    assert "## Claims of the text" in report and "CCIX §IV Exp. 2" in report


def test_calibration_points_within_5_percent_and_claims_held():
    res = ccsim.reproduce("ccix-ats", quick=True)
    df = res.df
    cal = df[df.role == "calibration"]
    assert sorted(cal.series) == ["ats_round_trip", "read_ats", "read_noats"]
    assert (cal.error_pct.abs() <= 5.0).all(), cal
    claims = res.claims_df
    assert (claims.verdict == claims.expect).all(), claims[["quote", "verdict", "expect", "detail"]]


def test_ats_overhead_triples_small_reads_and_fades_for_large_ones():
    df = ccsim.reproduce("ccix-ats", quick=True).df
    at = {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}
    assert 2.5 <= at[("read_ats", 64)] / at[("read_noats", 64)] <= 3.6
    assert at[("read_ats", 32768)] / at[("read_noats", 32768)] < 2.0
    # The VCK5000 pays the same ATS overhead on a slower read miss (its
    # CPM's L2 lookup): still about three times at 64 B.
    overhead = at[("read_ats", 64)] - at[("read_noats", 64)]
    assert at[("read_ats_vck5000", 64)] - at[("read_noats_vck5000", 64)] == pytest.approx(overhead, abs=1.0)
    assert at[("read_noats_vck5000", 64)] > at[("read_noats", 64)]
    assert 2.5 <= at[("read_ats_vck5000", 64)] / at[("read_noats_vck5000", 64)] <= 3.6
    # The walk is hidden for the sequential access onto the next page.
    assert at[("seq_cross", 4096)] < at[("seq_first", 4096)]
    # Eq. 1 for one line agrees with the simulated 64 B read.
    assert at[("eq1_ats", 64)] == pytest.approx(at[("read_ats", 64)], rel=0.02)
    assert at[("eq1_noats", 64)] == pytest.approx(at[("read_noats", 64)], rel=0.02)


def test_without_pre_translation_the_next_page_walks_again():
    on = ccsim.run_point("ccix-ats", "seq_cross", 4096)["metrics"]
    off = ccsim.run_point("ccix-ats", "seq_cross", 4096, overrides={"n1_smmu.prefetch_pages": 0})["metrics"]
    # With pre-translation the SMMU's walk (four 80 ns descriptor reads)
    # is gone from a later access onto a new page; without it, it is back.
    assert off["cross_ns"] - on["cross_ns"] == pytest.approx(320.0, abs=1.0)
    assert off["cross_ns"] == pytest.approx(off["first_ns"], abs=1.0)


def test_ccix_vs_pcie_dma_latency_quick():
    res = ccsim.reproduce("ccix-latency", quick=True)
    df = res.df
    cal = df[df.role == "calibration"]
    assert list(cal.series) == ["pcie_read"]
    assert (cal.error_pct.abs() <= 5.0).all(), cal
    at = {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}
    # CCIX reads win below 4 KiB and lose from 4 KiB on, on both boards.
    for board in ("", "_vck5000"):
        assert at[("ccix_read" + board, 2048)] < at[("pcie_read" + board, 2048)]
        assert at[("ccix_read" + board, 4096)] > at[("pcie_read" + board, 4096)]
    # The VCK5000's read miss also passes its CPM's L2, so it is slower than
    # the AU280's one-level System Cache; its Gen4 x8 PCIe moves what the
    # AU280's Gen3 x16 moves, so the two DMA baselines are equal.
    assert at[("ccix_read_vck5000", 64)] > at[("ccix_read", 64)] + 100
    # ESM's 25 GT/s shortens only the serialization: faster at every size,
    # but by under 5% at 16 KiB, where the round trips bound a request.
    for x in (64, 2048, 16384):
        assert at[("ccix_read_vck5000_esm", x)] < at[("ccix_read_vck5000", x)]
    assert at[("ccix_read_vck5000_esm", 16384)] > 0.95 * at[("ccix_read_vck5000", 16384)]
    for x in (32, 64, 128, 2048, 4096, 16384):
        assert at[("pcie_read_vck5000", x)] == at[("pcie_read", x)]
        assert at[("pcie_write_vck5000", x)] == at[("pcie_write", x)]
    claims = res.claims_df
    assert (claims.verdict == claims.expect).all(), claims[["quote", "verdict", "expect", "detail"]]
    # A CCIX write miss is one trip (WriteUniqueFull carries its line, the
    # home answers Comp, no memory read): faster than the PCIe-DMA write
    # at small sizes on both boards, where the text says ~32% slower (see
    # the notes): the two "writes slower" orderings and the ratio fail.
    assert list(claims.verdict).count("not_held") == 3
    for board in ("", "_vck5000"):
        assert at[("ccix_write" + board, 64)] < at[("ccix_read" + board, 64)]


def test_ccix_latency_from_the_cli(tmp_path):
    r = run_cli("reproduce", "ccix-latency", "--quick", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ccix-latency" / "report.md").exists()


def test_ccix_vs_pcie_dma_throughput_of_one_transfer_quick():
    """Table III is withheld: every point is a prediction, the throughput
    of one transfer (its bytes over its latency, ccix-latency's runs)."""
    res = ccsim.reproduce("ccix-throughput", quick=True)
    df = res.df
    assert set(df.role.dropna()) <= {"prediction"} and df.paper.isna().all()
    lat = ccsim.reproduce("ccix-latency", quick=True).df
    latency = {(s, x): v for s, x, v in zip(lat.series, lat.x, lat.sim)}
    for s, x, v in zip(df.series, df.x, df.sim):
        # GB/s = bytes per ns.
        assert v == pytest.approx(x / latency[(s, x)], rel=1e-9), (s, x)
    claims = res.claims_df
    assert list(claims.verdict) == ["held"] == list(claims.expect)


def test_ats_travels_on_vc0_of_the_systems_ccix_link():
    """The U280's Gen3 x16 link is one component of [systems.ccix]: the
    translations' TLPs go on its VC0 beside the CCIX messages on VC1, and
    starving VC1 of credits slows the CCIX transfer, not the translations."""
    r = ccsim.run_point("ccix-ats", "read_ats", 8192)
    stats, m = r["stats"], r["metrics"]
    link = "system.u280_ccix_pcie"
    # Two translations per request (one per 4 KiB burst), 32 requests:
    # 24 B Translation Requests up, 28 B completions down.
    assert stats[f"{link}.up.vc0_tlp_bytes"] == 64 * 24
    assert stats[f"{link}.down.vc0_tlp_bytes"] == 64 * 28
    assert stats[f"{link}.down.vc1_tlp_bytes"] >= 32 * 128 * 104
    starved = ccsim.run_point(
        "ccix-ats",
        "read_ats",
        8192,
        overrides={"u280_ccix_pcie.vc1_posted_credits": 1, "u280_ccix_pcie.credit_return_ns": 500.0},
    )
    assert starved["metrics"]["latency_ns"] > 10 * m["latency_ns"]
    assert starved["metrics"]["ats_ns"] <= m["ats_ns"] + 1.0


def test_the_huge_page_example_sweep_shortens_the_walk(tmp_path):
    # examples/ccix_pages.toml as a user runs it: the ATS cost per page size
    # (predictions; the paper measured 4 KiB pages only).
    from pathlib import Path

    import pandas as pd

    spec = Path(__file__).resolve().parents[2] / "examples" / "ccix_pages.toml"
    r = run_cli("sweep", str(spec), "--out", str(tmp_path), "--jobs", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(tmp_path / "sweeps" / "ccix_pages" / "points.parquet")
    assert len(df) == 5 * 3 and df["error"].isna().all()
    lat = {(p, x): v for p, x, v in zip(df["workload.page_size"], df.x, df.value)}
    # 4 KiB pages give the experiment's own calibrated 64 B read with an ATC miss.
    assert lat[("4k", 64)] == pytest.approx(2453, rel=0.05)
    # One line: fewer walk levels with 2 MiB and 1 GiB pages; 64 KiB and
    # 32 MiB are contiguous runs at the 4 KiB and 2 MiB levels.
    assert lat[("1g", 64)] < lat[("2m", 64)] < lat[("4k", 64)]
    assert lat[("64k", 64)] == lat[("4k", 64)] and lat[("32m", 64)] <= lat[("2m", 64)]
    # 64 KiB over many pages: every larger page needs fewer translations.
    for p in ("64k", "2m", "32m", "1g"):
        assert lat[(p, 65536)] < lat[("4k", 65536)], p
