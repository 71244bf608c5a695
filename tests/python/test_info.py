"""``ccsim info`` and ``ccsim platform`` show every parameter's declaration
(kind, unit, range, default and its provenance) and every platform value
with its range and provenance; ``docs/parameters.md`` is generated from the
same declarations and must be current."""

from __future__ import annotations

import json
from pathlib import Path

import ccsim
from conftest import run_cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "parameters.md"


def test_docs_parameters_md_is_current():
    r = run_cli("info", "--markdown")
    assert r.returncode == 0, r.stderr
    assert DOC.is_file(), "docs/parameters.md is committed"
    assert r.stdout == DOC.read_text(), (
        "docs/parameters.md is out of date: regenerate it with `ccsim info --markdown > docs/parameters.md`")


def test_the_api_returns_ranges_and_provenance():
    types = {t["type"]: t for t in ccsim.component_types()}
    lanes = next(p for p in types["pcie_link"]["params"] if p["name"] == "lanes")
    assert lanes["range"] == {"text": "one of 1, 2, 4, 8, 12, 16, 32", "min": None, "min_inclusive": None,
                              "max": None, "max_inclusive": None, "one_of": [1, 2, 4, 8, 12, 16, 32],
                              "power_of_two": False}
    assert lanes["from"].startswith("PIO paper §3")
    eff = next(p for p in types["eci_link"]["params"] if p["name"] == "efficiency")
    assert eff["range"]["text"] == "(0, 1]"
    assert (eff["range"]["min"], eff["range"]["min_inclusive"], eff["range"]["max"]) == (0.0, False, 1.0)
    mps = next(p for p in types["pcie_link"]["params"] if p["name"] == "max_payload_bytes")
    assert mps["range"]["power_of_two"] and mps["range"]["text"] == "power of two in [128, 4096]"
    policy = next(p for p in types["ddr_controller"]["params"] if p["name"] == "page_policy")
    assert policy["range"]["text"] == "" and policy["choices"] == ["open", "closed"]
    calls = next(p for p in next(w for w in ccsim.workloads() if w["name"] == "coherent_invoke")["params"]
                 if p["name"] == "calls")
    assert calls["range"]["text"] == "[1, 1000000]" and calls["from"]


def test_info_text_shows_range_default_and_provenance():
    r = run_cli("info", "eci_link")
    assert r.returncode == 0, r.stderr
    assert "    efficiency (number, (0, 1]) = 0.7083\n" in r.stdout
    assert "        default from: calibrated: CCKit §4 'about 20 GiB/s is achievable in practice'" in r.stdout
    r = run_cli("info", "nic_loopback")
    assert r.returncode == 0, r.stderr
    assert "    packets (integer [frames], [1, " in r.stdout


def test_platform_lists_value_unit_range_and_provenance():
    r = run_cli("platform", "enzian", "--set", "dc.dcus_per_slice=16")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    dc = lines.index("[dc] type = directory_controller")
    row = next(line for line in lines[dc:] if line.strip().startswith("dcus_per_slice"))
    assert row.split() == ["dcus_per_slice", "=", "16", "DCUs", "≥", "1", "#", "override"]
    row = next(line for line in lines[dc:] if line.strip().startswith("clock_mhz"))
    assert row.split()[:6] == ["clock_mhz", "=", "322", "MHz", ">", "0"]
    assert row.endswith("# CCKit §4.3: typical FPGA clock of 322 MHz")
    r = run_cli("platform", "enzian", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = {p["name"]: p for p in doc["components"]["eci"]["parameters"]}
    assert rows["efficiency"] == {"name": "efficiency", "value": 0.7083, "unit": "", "range": "(0, 1]",
                                  "provenance": rows["efficiency"]["provenance"]}
    assert rows["efficiency"]["provenance"].startswith("calibrated: CCKit §4")
    assert rows["links"]["range"] == "[1, 2]" and rows["links"]["unit"] == "links"
    # The existing shape is kept: params are name -> [value, provenance].
    assert doc["components"]["eci"]["params"]["links"] == [2, rows["links"]["provenance"]]
