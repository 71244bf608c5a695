"""The Cohort experiments (`cohort-sha`, `cohort-aes`, `cohort-speedup`,
`cohort-ipc`, `cohort-chain`) driven as a user drives them: the API's
sweeps and the CLI's `reproduce`, the calibration points within 5%, the
orderings §6 states, and the predictions reported with their error."""

from __future__ import annotations

import json

import pytest

import ccsim

from conftest import run_cli

COHORT = ["cohort-sha", "cohort-aes", "cohort-speedup", "cohort-ipc", "cohort-chain"]


def at(df):
    return {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}


@pytest.fixture(scope="module")
def speedup():
    return ccsim.reproduce("cohort-speedup", quick=True)


def test_the_calibration_points_are_within_five_percent(speedup):
    df = speedup.df
    cal = df[df.role == "calibration"]
    assert sorted(zip(cal.series, cal.x)) == [("sha_vs_dma", 1024), ("sha_vs_mmio", 1024)]
    for _, row in cal.iterrows():
        assert abs(row.sim / row.paper - 1) < 0.05, (row.series, row.sim, row.paper)


def test_aes_is_a_prediction_reported_with_its_error(speedup):
    df = speedup.df
    aes = df[df.series.str.startswith("aes_vs") & df.paper.notna()]
    assert len(aes) > 0 and (aes.role == "prediction").all()
    # The known gap: the model's AES speedups are about 3.5 times Table 3's.
    assert (aes.sim / aes.paper > 2.5).all()


def test_batching_gains_fall_in_table_3s_ranges(speedup):
    # cohort5: with the RTL's WCM (a backoff before each publication, 240
    # cycles as the authors' benchmark sets) the batching gains land in
    # Table 3's ranges (2.32-3.33 SHA, 5.30-8.10 AES; model 2.93-2.96 and
    # 6.75-6.83); AES's gain stays the larger, as §6.1 says.
    v = at(speedup.df)
    for x in (128, 1024, 8192):
        assert 2.32 <= v[("sha_batching", x)] <= 3.33, x
        assert 5.30 <= v[("aes_batching", x)] <= 8.10, x
        assert v[("aes_batching", x)] > 2 * v[("sha_batching", x)], x


def test_every_call_index_checks_add_little_to_the_authors_library(speedup):
    # cohort5: the default library is the authors' (each pop loads the
    # write index); loading the read index on every push too changes AES's
    # speedup by a few percent, not the ~4x Table 3's AES column needs.
    v = at(speedup.df)
    for x in (128, 1024, 8192):
        assert 0.95 < v[("aes_vs_mmio_every_call", x)] / v[("aes_vs_mmio", x)] < 1.0, x


def test_sha_beats_both_baselines_at_every_size_and_batching_helps():
    v = at(ccsim.reproduce("cohort-sha", quick=True).df)
    for x in (64, 1024, 8192):
        for b in ("cohort_b8", "cohort_b16", "cohort_b32", "cohort_b64"):
            assert v[(b, x)] < v[("mmio", x)] and v[(b, x)] < v[("dma", x)], (b, x)
        assert v[("cohort_b64", x)] < v[("cohort_b32", x)] < v[("cohort_b16", x)] < v[("cohort_b8", x)]


def test_aes_batches_above_16_beat_both_baselines():
    v = at(ccsim.reproduce("cohort-aes", quick=True).df)
    for x in (64, 1024, 8192):
        for b in ("cohort_b32", "cohort_b64"):
            assert v[(b, x)] <= min(v[("mmio", x)], v[("dma", x)]), (b, x)


def test_ipc_speedups_are_positive_predictions():
    r = ccsim.reproduce("cohort-ipc", quick=True)
    df = r.df
    assert not (df.role == "calibration").any()
    v = at(df)
    for d in ("sha_ipc_vs_mmio", "sha_ipc_vs_dma", "aes_ipc_vs_mmio", "aes_ipc_vs_dma"):
        assert v[(d, 1024)] > 1.0, d


def test_chaining_with_a_longer_backoff_beats_software():
    v = at(ccsim.reproduce("cohort-chain", quick=True).df)
    for x in (64, 1024):
        assert v[("chained_backoff200", x)] < v[("software", x)]


@pytest.mark.parametrize("name", COHORT)
def test_reproduce_from_the_cli(name, tmp_path):
    r = run_cli("reproduce", name, "--quick", "--out", tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary
    assert (tmp_path / name / "report.md").exists() or any(tmp_path.rglob("report.md"))


def test_the_points_count_the_pointer_ping_pong_and_what_waiting_cores_retire():
    # Issue 17: each Cohort point counts its queues' line migrations
    # (transactions that took a line from the other agent). At batch 2,
    # with the write index on a line of its own (the authors' library),
    # every 2-word AES block moves the input index line twice (the core's
    # store, the RCM's re-read); the output index line moves more, the
    # WCM rewriting it while the core polls it (cohort5).
    aes = ccsim.run_point("cohort-aes", "cohort_b2", 1024)["stats"]
    assert aes["lines.in_queue.index_migrations"] == 2 * 512
    assert aes["lines.out_queue.index_migrations"] > 3 * 512
    # The symmetric output: at batch 64 AES's output lines migrate more
    # per word than SHA's (SHA's 4-word digest per 8 words in).
    aes64 = ccsim.run_point("cohort-aes", "cohort_b64", 1024)["stats"]
    sha64 = ccsim.run_point("cohort-sha", "cohort_b64", 1024)["stats"]
    out = lambda s: s["lines.out_queue.index_migrations"] + s["lines.out_queue.data_migrations"]
    assert out(aes64) > out(sha64)
    # What a waiting core retires per waiting cycle: a spin on a cached
    # index (Cohort) far more than the DMA driver's uncached status poll,
    # and the MMIO core's stalled result loads least.
    rate = lambda s: s["core0.wait_retired"] / s["core0.wait_cycles"]
    dma = ccsim.run_point("cohort-ipc", "sha_dma", 1024)["stats"]
    mmio = ccsim.run_point("cohort-ipc", "sha_mmio", 1024)["stats"]
    # 3 instructions per poll, a poll being an uncached round trip: two NoC
    # crossings (3 cycles each) and the unit's mmio_cycles, plus the loop.
    poll = 2 * 3 + ccsim.Platform.load("openpiton").components()["maple"]["params"]["mmio_cycles"][0]
    assert 3 / (poll + 10) < rate(dma) < 3 / poll
    assert rate(mmio) < rate(dma) < rate(sha64) < 0.6


def test_the_points_carry_the_wcm_rewrites():
    # cohort5: the RTL's WCM (wo_coherency_manager.sv) republishes the
    # write index every backoff + store until the core's read index, as
    # the engine's second RCM re-reads it, catches up. AES at batch 2,
    # 1024 words (512 blocks): the input RCM re-reads once per block, and
    # once more when the engine's 8 KiB L1.5 evicts the watched line
    # (pmeshcap: the L1.5 invalidates the evicted line above it).
    s = ccsim.run_point("cohort-aes", "cohort_b2", 1024)["stats"]
    assert s["engine0.rereads"] == 513
    assert s["coherence.l15_evictions"] > 0
    assert s["engine0.republishes"] > 0 and s["engine0.head_rereads"] > 0
    backoffs = s["engine0.rereads"] + s["engine0.publishes"] + s["engine0.head_rereads"]
    assert backoffs * 240 <= s["engine0.backoff_cycles"] <= (backoffs + 2) * 240
    # At batch 64 the input RCM re-reads 32 times less often.
    s64 = ccsim.run_point("cohort-aes", "cohort_b64", 1024)["stats"]
    # (18: two more after the L1.5 evicted the watched line, pmeshcap.)
    assert s64["engine0.rereads"] == 18


def test_the_l15_holds_16_byte_lines_and_the_l2_answers_their_fills():
    # OpenPiton's L1.5 lines are 16 B (pyhplib.py L15_LINE_SIZE) within the
    # L2's 64 B lines: the first access to each 16 B of a line a tile
    # already holds is a fill the L2 answers (coherence.subline_fills),
    # not a migration. The platform says so, with its provenance.
    r = run_cli("platform", "openpiton")
    assert r.returncode == 0, r.stderr
    assert "L15_LINE_SIZE = 16" in r.stdout
    sha = ccsim.run_point("cohort-sha", "cohort_b64", 1024)["stats"]
    aes = ccsim.run_point("cohort-aes", "cohort_b64", 1024)["stats"]
    # (pmeshcap: 1169 and 1554 with unbounded L1.5s; a silently evicted
    # clean line comes back as a fill the L2 answers.)
    assert sha["coherence.subline_fills"] == 1179
    assert aes["coherence.subline_fills"] == 1582
    assert aes["lines.out_queue.index_migrations"] + aes["lines.out_queue.data_migrations"] == 542


def test_the_interfaces_example_sweep_runs_every_accelerator_in_every_mode(tmp_path):
    # examples/cohort_interfaces.toml as a user runs it: SHA and AES on
    # valid-ready, the null AXI-Stream FIFO on AXI-Stream (its TLAST framing
    # checked by the unit, its words checked against the input).
    from pathlib import Path

    import pandas as pd

    spec = Path(__file__).resolve().parents[2] / "examples" / "cohort_interfaces.toml"
    r = run_cli("sweep", spec, "--out", tmp_path, "--jobs", "1", "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr
    df = pd.read_parquet(tmp_path / "sweeps" / "cohort_interfaces" / "points.parquet")
    assert len(df) == 3 * 3 * 2 and df["error"].isna().all()
    lat = {(a, s, x): v for a, s, x, v in zip(df["workload.accel"], df.series, df.x, df.value)}
    for a in ("sha256", "aes128", "axis_fifo"):
        for x in (256, 1024):
            # Cohort beats both baselines whatever the accelerator behind it.
            assert lat[(a, "cohort_b64", x)] < min(lat[(a, "mmio", x)], lat[(a, "dma", x)]), (a, x)
    # The interface changes nothing for the two accelerators that keep
    # valid-ready: SHA's points are the experiment's own.
    sha = ccsim.reproduce("cohort-sha", quick=True).df
    own = {(s, x): v for s, x, v in zip(sha.series, sha.x, sha.sim)}
    for x in (256, 1024):
        if ("cohort_b64", x) in own:
            assert lat[("sha256", "cohort_b64", x)] == own[("cohort_b64", x)]
