"""Remote atomics on a PCIe-NIC and a CXL-NIC (`cohet-rao`, Cohet §V-A,
§VI-D, Fig. 17), driven as a user drives it: the CLI's quick run with its
claims, the API's data frame, and the workload from ``ccsim info``. Fig. 17's
numbers are withheld: every point is a prediction, no paper value anywhere.
Each run checks its fetched values and the host's arrays against
CircusTent's sequential reference (a mismatch fails the point)."""

from __future__ import annotations

import json

import pytest

import ccsim

from conftest import ROOT, run_cli

EXP = "cohet-rao"
PATTERNS = ["rand", "stride1", "striden", "ptrchase", "central", "sg"]


@pytest.fixture(scope="module")
def quick():
    return ccsim.reproduce(EXP, quick=True)


def at(df):
    return {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}


def test_the_cli_quick_run_holds_every_claim(tmp_path):
    r = run_cli("reproduce", EXP, "--quick", "--json", "--out", tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)["experiments"][0]
    verdicts = [c["verdict"] for c in summary["claims"]]
    assert len(verdicts) == 15 and set(verdicts) == {"held"}, summary["claims"]
    for name in ("report.md", "plot.png", "points.jsonl"):
        assert (tmp_path / EXP / name).exists(), name


def test_the_cxl_nic_is_faster_on_every_pattern_and_pe_count(quick):
    v = at(quick.df)
    for p in PATTERNS:
        for x in (1.0, 4.0, 16.0):
            assert v[(f"cxl_{p}", x)] > v[(f"pcie_{p}", x)], (p, x)
            assert v[(f"speedup_{p}", x)] == pytest.approx(v[(f"cxl_{p}", x)] / v[(f"pcie_{p}", x)])


def test_the_mechanisms_show_in_the_numbers(quick):
    v = at(quick.df)
    # PCIe-NIC: one RAO is two round trips of the PCIe path and two
    # descriptor setups, about 1.3 us; CENTRAL stays there whatever the PEs
    # (the RAW hazard), RAND overlaps until the descriptor stage (two 70 ns
    # setups a RAO) is the limit.
    assert 1e3 / v[("pcie_central", 1.0)] == pytest.approx(1297, rel=0.02)
    assert v[("pcie_central", 16.0)] == pytest.approx(v[("pcie_central", 1.0)], rel=1e-9)
    assert v[("pcie_rand", 4.0)] == pytest.approx(4 * v[("pcie_rand", 1.0)], rel=0.02)
    assert v[("pcie_rand", 16.0)] == pytest.approx(1e3 / 140, rel=0.02)
    # CXL-NIC: CENTRAL's word stays in the HMC, one RAO per pipeline pass
    # and locked modify/write (115 + 5 ns); RAND misses to host memory and
    # scales with the PEs.
    assert 1e3 / v[("cxl_central", 1.0)] == pytest.approx(120, rel=0.01)
    assert v[("cxl_rand", 16.0)] == pytest.approx(16 * v[("cxl_rand", 1.0)], rel=0.05)


def test_at_the_asic_clock_device_time_shrinks_and_host_time_does_not(quick):
    # Cohet §VI-A2's 1.5 GHz models: the PEs', the DCOH's and the links'
    # times take 400/1500 of theirs, host DRAM and the LLC keep theirs. So
    # no NIC slows down and none gains more than the clock's ratio;
    # CENTRAL's CXL-NIC, all device time (its word stays in the HMC), gains
    # exactly that; the CXL-NIC still wins on every pattern and PE count.
    v = at(quick.df)
    ratio = 1500 / 400
    for p in PATTERNS:
        for x in (1.0, 4.0, 16.0):
            for nic in ("pcie", "cxl"):
                fpga, asic = v[(f"{nic}_{p}", x)], v[(f"{nic}_{p}_asic", x)]
                assert fpga <= asic <= ratio * fpga * 1.0001, (nic, p, x, fpga, asic)
            assert v[(f"speedup_{p}_asic", x)] > 1.0, (p, x)
    assert v[("cxl_central_asic", 1.0)] == pytest.approx(ratio * v[("cxl_central", 1.0)], rel=0.01)
    # A PCIe-NIC RAO on one word waits for its acknowledged write, a round
    # trip through host DRAM, whose time the clock does not change: it gains
    # less than the clock's ratio.
    assert v[("pcie_central_asic", 1.0)] < 0.99 * ratio * v[("pcie_central", 1.0)]


def test_every_point_is_a_prediction_without_a_paper_value(quick):
    assert quick.df.paper.isna().all()
    assert not (quick.df.role == "calibration").any()
    assert set(quick.df.series) == {f"{n}_{p}{clock}" for n in ("pcie", "cxl", "speedup") for p in PATTERNS
                                    for clock in ("", "_asic")}


def test_the_workload_declares_its_parameters_with_provenance():
    r = run_cli("info", "rao")
    assert r.returncode == 0, r.stderr
    for name in ("nic", "pattern", "pes", "rx_depth", "network_ns", "nic_clock_mhz", "alu_cycles", "raw_hazard"):
        assert f"    {name} (" in r.stdout, name
    assert "Cohet §VI-A2" in r.stdout and "assumed:" in r.stdout


def test_a_bad_pattern_is_a_one_line_error_naming_its_path(tmp_path):
    text = (ROOT / "experiments" / f"{EXP}.toml").read_text()
    (tmp_path / "bad.toml").write_text(text.replace('pattern = "RAND"', 'pattern = "HOTSPOT"', 1))
    r = run_cli("validate", "bad.toml", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == ("error: bad.toml: series[0].params.pattern: expected one of "
                        "RAND|STRIDE1|STRIDEN|PTRCHASE|CENTRAL|SCATTER|GATHER|SG, got \"HOTSPOT\"\n")
