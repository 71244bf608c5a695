"""The rest of the CCIX platform as a user drives it: data-local vs
data-remote on the AU280 and the VCK5000 (Fig. 5), host and device on one
shared buffer (Fig. 6), and CCIX atomics (Exp. 5): ``ccsim reproduce
NAME --quick`` from the CLI, the API's DataFrames, calibration points
within 5%, every claim's verdict as the experiment declares it."""

from __future__ import annotations

import json

import pytest

import ccsim
from conftest import run_cli


@pytest.mark.parametrize("name", ["ccix-locality", "ccix-contention", "ccix-atomics"])
def test_quick_reproduce_from_the_cli(tmp_path, name):
    r = run_cli("reproduce", name, "--quick", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) is not None
    report = (tmp_path / name / "report.md").read_text()
    assert "## Claims of the text" in report


def test_locality_calibrations_within_5_percent_and_the_vck5000_read_predicted():
    res = ccsim.reproduce("ccix-locality", quick=True)
    df = res.df
    cal = df[df.role == "calibration"]
    assert sorted(cal.series) == ["au280_local_read", "au280_local_write", "vck5000_local_write"]
    assert (cal.error_pct.abs() <= 5.0).all(), cal
    pred = df[df.role == "prediction"]
    assert list(pred.series) == ["vck5000_local_read"]
    assert (pred.error_pct.abs() <= 5.0).all(), pred
    claims = res.claims_df
    assert (claims.verdict == claims.expect).all(), claims[["quote", "verdict", "expect", "detail"]]
    at = {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}
    # The two-level hierarchy is slower for small requests, faster for large.
    assert at[("vck5000_local_read", 64)] > at[("au280_local_read", 64)]
    assert at[("vck5000_local_read", 16384)] < at[("au280_local_read", 16384)]
    # A miss costs the CCIX round trip on both boards.
    assert at[("au280_remote_read", 64)] > 6 * at[("au280_local_read", 64)]


def test_contention_directions_of_the_text():
    res = ccsim.reproduce("ccix-contention", quick=True)
    claims = res.claims_df
    assert (claims.verdict == claims.expect).all(), claims[["quote", "verdict", "expect", "detail"]]
    at = {(s, x): v for s, x, v in zip(res.df.series, res.df.x, res.df.sim)}
    assert at[("host_1core", 32)] > 3 * at[("host_1core", 2048)]
    assert at[("host_3cores", 32)] < at[("host_1core", 32)]
    assert at[("device_3cores", 32)] > at[("device_1core", 32)]


def test_fig_6b_histograms_from_the_api_the_report_the_plot_and_the_cli(tmp_path):
    res = ccsim.reproduce("ccix-contention", quick=True)
    h = res.histograms_df
    # Fig. 6B: 32 KiB and 2 MiB, host and device, 20,000 accesses each.
    assert sorted(set(zip(h.series, h.x))) == [("device_hist_1core", 32.0), ("device_hist_1core", 2048.0),
                                               ("host_hist_1core", 32.0), ("host_hist_1core", 2048.0)]
    for (series, x), g in h.groupby(["series", "x"]):
        assert g["count"].sum() == 20000, (series, x)
        assert list(g.lower) == [50.0 * i for i in range(41)]
        assert g.upper.iloc[-1] is None or g.upper.isna().iloc[-1]  # the open last bin
        # The bin holding the median holds the point's p50.
        side = series.split("_")[0]
        p50 = next(p for p in res.points if p["series"] == series and p["x"] == x)["metrics"][f"{side}_p50_ns"]
        cum = g["count"].cumsum()
        lower = g.lower[cum >= 10000].iloc[0]
        assert lower <= p50 < lower + 50.0, (series, x, p50, lower)
    # The device's SC hits (80 ns) are its short outliers; its misses sit at 600-700 ns.
    dev = h[(h.series == "device_hist_1core") & (h.x == 32.0)].set_index("lower")["count"]
    assert dev[50.0] > 0 and dev[600.0] > 0 and dev.loc[100.0:550.0].sum() == 0
    report = res.report()
    assert "## Histograms" in report and "**host, 1 core, 20,000 accesses** at buffer_kib = 32" in report
    fig = res.plot(tmp_path / "plot.png")
    jitter = [ax for ax in fig.axes if ax.get_xlabel() == "latency bin (ns)"]
    assert len(jitter) == 1 and len(jitter[0].patches) == 4  # one step line per (series, x)
    assert (tmp_path / "plot.png").stat().st_size > 0
    r = run_cli("reproduce", "ccix-contention", "--quick", "--out", str(tmp_path / "cli"))
    assert r.returncode == 0, r.stderr
    assert "## Histograms" in (tmp_path / "cli" / "ccix-contention" / "report.md").read_text()


def test_atomics_from_the_api():
    res = ccsim.reproduce("ccix-atomics", quick=True)
    cal = res.df[res.df.role == "calibration"]
    assert (cal.error_pct.abs() <= 5.0).all(), cal
    claims = res.claims_df
    assert (claims.verdict == "held").all(), claims[["quote", "verdict", "detail"]]
    m = ccsim.run_point("ccix-atomics", "device_compare", 8)["metrics"]
    assert 740.0 <= m["latency_ns"] <= 800.0
    assert m["steps"] == 2.0


def test_locktable_quick_from_the_cli_and_the_api(tmp_path):
    r = run_cli("reproduce", "ccix-locktable", "--quick", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    res = ccsim.reproduce("ccix-locktable", quick=True)
    claims = res.claims_df
    assert (claims.verdict == claims.expect).all(), claims[["quote", "verdict", "expect", "detail"]]
    pred = res.df[res.df.role == "prediction"]
    # host_lock's 80 ns is missed by 5.2% (84.2 ns: its CASes go far, an
    # N1 LSE atomic on a line the core does not hold; see the notes).
    assert (pred[pred.series != "host_lock"].error_pct.abs() <= 5.0).all(), pred
    # ... which is still inside the 10% a prediction is held to.
    assert (pred[pred.series == "host_lock"].error_pct.abs() <= 10.0).all(), pred
    assert len(pred[pred.series == "host_lock"]) >= 1
    m = ccsim.run_point("ccix-locktable", "host_lock", 4)["metrics"]
    # The run checked its grants against the sequential reference.
    assert m["grants"] == m["lock_ops"] == 2000
    # Every accelerator CAS is a far atomic the home executed, and so is
    # every host CAS (one word per bucket: the host never loads the line).
    assert m["host_far_fraction"] == 1.0
    assert m["device_cas"] > 100 and m["home_atomics"] == m["device_cas"] + m["host_cas"]
    # CAS loops on the bucket's bytes: at 4 buckets both sides' CASes
    # sometimes compare with a stale word and retry (the device's more often).
    assert m["device_cas_retries"] > 0 and m["host_cas_retries"] > 0
    assert m["device_retry_fraction"] > m["host_retry_fraction"]
    calm = ccsim.run_point("ccix-locktable", "device_retries", 4096)["metrics"]
    assert calm["device_cas_retries"] == 0


def test_the_slot_layout_grants_every_lock_once_and_names_its_accesses():
    from ccsim.sweep import run_sweep_point

    # A small run of the slot layout (the checked protocol of
    # ccix_lock_slots on the line's eight words): the run replays every read
    # and CAS in coherence order and checks the grants against the reference.
    r = run_sweep_point("ccix-locktable", "host_lock_slots", "n1sdp", 4.0, 0, {}, {"lock_ops": 500})
    assert r["error"] is None, r["error"]
    m = r["metrics"]
    assert m["grants"] == m["lock_ops"] == 500
    # The home runs every device CAS and the host's far ones (an LSE atomic
    # on a line its core does not hold unique).
    host_far = round(m["host_far_fraction"] * m["host_cas"])
    assert m["home_atomics"] == m["device_cas"] + host_far
    assert m["device_cas"] > 0
    # An append reads at least the header and one slot, and CASes once.
    assert m["device_acquire_reads"] >= 2 and m["device_acquire_cases"] >= 1
    assert m["host_release_cases"] >= 4


@pytest.mark.slow
@pytest.mark.parametrize("series", ["host_lock", "host_lock_slots"])
def test_a_million_lock_operations_lose_and_duplicate_no_grant(series):
    from ccsim.sweep import run_sweep_point

    r = run_sweep_point("ccix-locktable", series, "n1sdp", 16.0, 0, {}, {"lock_ops": 1_000_000})
    assert r["error"] is None, r["error"]
    m = r["metrics"]
    assert m["grants"] == m["lock_ops"] == 1_000_000
