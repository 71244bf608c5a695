"""The CXL type-3 expander experiment (`cxl-expander`), driven as a user
drives it (the CLI's reproduce with its report, the API's DataFrame), and
the mechanism-level facts its numbers must show: latency rises with load,
a write costs more of the request direction than a read, and no mix beats
the bound the link's flits set, which all-reads reaches. Every number the
bounds use is read from the platform, not written here."""

from __future__ import annotations

import json

import pytest

import ccsim
from conftest import run_cli

EXP = "cxl-expander"
MIXES = ["bw_reads", "bw_r3w1", "bw_r2w1", "bw_r1w1", "bw_writes"]


@pytest.fixture(scope="module")
def quick():
    return ccsim.reproduce(EXP, quick=True)


def at(df):
    return {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}


def link():
    """The expander link's payload rate (GB/s) and the system's slot sizes."""
    p = ccsim.Platform.load("cohet")
    params = {k: v[0] for k, v in p.components()["expander_link"]["params"].items()}
    rate = params["bandwidth_gbps"] * params["flit_payload_bytes"] / params["flit_bytes"]
    sys = p.systems()["cxl_expander"]
    return rate, sys["header_bytes"][0], sys["line_bytes"][0]


def test_reproduce_quick_via_the_cli_writes_a_report_and_only_predictions(tmp_path):
    r = run_cli("reproduce", EXP, "--quick", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    report = (tmp_path / EXP / "report.md").read_text()
    assert (tmp_path / EXP / "plot.png").exists()
    # The series name their system: the report lists no fitted parameter
    # of the platform's other systems (the CXL.cache device's, the DMA's).
    assert "No calibration facts are declared" in report
    assert "dcoh.access_ns" not in report and "Parameters fitted" not in report


def test_no_point_is_calibrated(quick):
    # No citable measurement of the device: nothing to calibrate on.
    assert not (quick.df.role == "calibration").any()


def test_latency_rises_with_load(quick):
    v = at(quick.df)
    # One thread, one request: the idle latency, the lowest of all.
    idle = v[("latency_idle", 1)]
    assert idle < v[("latency_loaded", 12)]
    # With 16 requests per thread, more threads queue at the link.
    assert v[("latency_loaded", 1)] < v[("latency_loaded", 4)] < v[("latency_loaded", 12)]


def test_writes_cost_more_request_bytes_than_reads():
    _, header, line = link()
    reads = ccsim.run_point(EXP, "bw_reads", 1)["metrics"]
    writes = ccsim.run_point(EXP, "bw_writes", 1)["metrics"]
    # A MemRd is a header slot; a MemWr carries its line (M2S RwD).
    assert reads["m2s_bytes_per_op"] == header
    assert writes["m2s_bytes_per_op"] == header + line
    # And the other way round for the responses (MemData vs Cmp).
    assert reads["s2m_bytes_per_op"] == header + line
    assert writes["s2m_bytes_per_op"] == header


def test_bandwidth_is_bounded_by_the_flit_rate_and_reads_reach_it(quick):
    rate, header, line = link()
    v = at(quick.df)
    for series in MIXES:
        m = ccsim.run_point(EXP, series, 12)["metrics"]
        busiest = max(m["m2s_bytes_per_op"], m["s2m_bytes_per_op"])
        bound = rate * line / busiest
        for x in (1, 4, 12):
            assert v[(series, x)] <= bound * (1 + 1e-9), (series, x, v[(series, x)], bound)
    # All reads: the S2M direction carries a header and a line per load,
    # and 12 threads of 16 requests fill it.
    read_bound = rate * line / (header + line)
    assert v[("bw_reads", 12)] >= 0.95 * read_bound
    # A mix uses both directions, so 1:1 passes what one direction allows.
    assert v[("bw_r1w1", 12)] > read_bound


def test_same_seed_same_numbers():
    a = ccsim.run_point(EXP, "bw_r3w1", 4, seed=3)
    b = ccsim.run_point(EXP, "bw_r3w1", 4, seed=3)
    assert a["metrics"] == b["metrics"]
    assert a["trace_hash"] == b["trace_hash"]


def test_idle_latency_is_the_sum_of_its_path():
    """One load at a time: the thread's pipeline, the mesh and the root
    port each way, the link's latency and its serialization of the MemRd
    (one slot) and the MemData (five) in flits, the controller's pipeline,
    and an activate, a CAS and a burst of DDR5 (the previous visit to the
    bank was a refresh ago, so the row is closed)."""
    comps = ccsim.Platform.load("cohet").components()
    p = {k: {n: v[0] for n, v in comps[k]["params"].items()} for k in
         ["expander_thread", "expander_mesh_link", "expander_root_port", "expander_link",
          "expander_controller", "expander_dram"]}
    rate, header, line = link()
    mesh = p["expander_mesh_link"]
    dram = p["expander_dram"]
    t_ck = 2000.0 / dram["data_rate_mts"]  # ns
    request, response = header, header + line
    expected = (
        p["expander_thread"]["access_ns"]
        + 2 * (mesh["latency_ns"] + p["expander_root_port"]["hop_ns"] + p["expander_link"]["latency_ns"])
        + (request + response) / mesh["bandwidth_gbps"]
        + (request + response) / rate
        + p["expander_controller"]["occupancy_ns"]
        + dram["controller_ns"] + (dram["t_rcd"] + dram["cl"] + dram["burst_length"] / 2) * t_ck
        + p["expander_thread"]["occupancy_ns"]
    )
    m = ccsim.run_point(EXP, "latency_idle", 1)["metrics"]
    assert m["latency_ns"] == pytest.approx(expected, abs=0.05)


def test_random_tester_on_the_expander_matches_the_sequential_reference():
    # Twelve threads load and store two shared lines at random: the
    # controller (with its DRAM and posted-write queue behind it) orders
    # them, and every read and the final memory match a sequential replay.
    r = ccsim.simulate("cohet", system="cxl_expander", ops=500, lines=2, seed=2)
    m = r["metrics"]
    assert m["ops"] == 12 * 500
    assert m["violations"] == 0
    assert m["reference_mismatches"] == 0
    assert m["reads"] > 0
