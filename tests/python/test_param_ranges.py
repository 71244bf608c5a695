"""Out-of-range and inconsistent parameter values are refused when a file,
an override or an experiment is loaded -- never at run time -- with the same
one-line message through ``ccsim validate``, ``ccsim reproduce --set`` and
the Python API (``ccsim.ConfigError``).

Each row: the instance and parameter, the bad value as TOML / ``--set``
text and as a Python value, and the message after ``<file>: <path>: ``.
"""

from __future__ import annotations

import re

import pytest

import ccsim
from ccsim import _native
from conftest import run_cli

# (instance, param, text, python value, message): one row per kind of range,
# then rules of a component's check hook, within it and against another
# component of the platform (reported at that component's parameter).
PLATFORM_CASES = [
    ("dc", "dcus_per_slice", "0", 0, "platform.dc.dcus_per_slice: must be at least 1, got 0"),
    ("dc_ddr", "t_cl_ns", "-1.5", -1.5, "platform.dc_ddr.t_cl_ns: must be at least 0, got -1.5"),
    ("eci", "raw_gibps", "0", 0, "platform.eci.raw_gibps: must be greater than 0, got 0"),
    ("pcie", "generation", "6", 6, "platform.pcie.generation: must be from 1 to 5, got 6"),
    ("eci", "efficiency", "1.5", 1.5, "platform.eci.efficiency: must be in (0, 1], got 1.5"),
    ("pcie", "read_completion_boundary", "96", 96,
     "platform.pcie.read_completion_boundary: must be one of 64, 128, got 96"),
    ("pcie", "max_payload_bytes", "384", 384,
     "platform.pcie.max_payload_bytes: must be a power of two from 128 to 4096, got 384"),
    ("cpu", "wc_bytes", "48", 48, "platform.cpu.wc_bytes: must be 0 (no combining) or a power of two, got 48"),
    ("llc", "llc_lines", "131000", 131000, "platform.llc.llc_lines: must be a multiple of llc_ways (16), got 131000"),
    ("thunderx_cpu", "l1_bytes", "1000", 1000,
     "platform.thunderx_cpu.l1_bytes: must be a multiple of the 128 B line, got 1000"),
    ("dc_ddr", "row_bytes", "8000", 8000, "platform.dc_ddr.row_bytes: must be a multiple of the 128 B line, got 8000"),
    ("dma", "desc_prefetch", "8", 8, "platform.dma.desc_prefetch: must be at least desc_batch (16), got 8"),
    ("dma", "desc_batch", "32", 32,
     "platform.dma.desc_batch: must be at most 16 (32 B descriptors in one 512 B read request of pcie), got 32"),
    ("eci", "links", "1", 1,
     "platform.eci.links: must be 2 in a platform with a directory_controller (its even and odd slices), got 1"),
]

CASE_IDS = [f"{i}.{p}={t}" for i, p, t, _, _ in PLATFORM_CASES]


def one_line_error(r):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: ")
    return r.stderr[len("error: "):].rstrip("\n")


def with_value(text: str, instance: str, param: str, value: str) -> str:
    """``text`` (a platform file) with ``instance.param`` set to ``value``."""
    head = f"[components.{instance}]\n"
    start = text.index(head) + len(head)
    end = text.find("\n[", start)
    end = len(text) if end < 0 else end
    section = text[start:end]
    line = re.compile(rf"^{param} = \{{ value = [^,]+,", re.M)
    if line.search(section):
        section = line.sub(f"{param} = {{ value = {value},", section, count=1)
    else:
        section = f'{param} = {{ value = {value}, from = "test" }}\n' + section
    return text[:start] + section + text[end:]


@pytest.fixture(scope="module")
def enzian_text():
    return _native.shipped_text("platform", "enzian")


@pytest.mark.parametrize("instance,param,text,value,message", PLATFORM_CASES, ids=CASE_IDS)
def test_a_bad_value_in_a_platform_file(tmp_path, enzian_text, instance, param, text, value, message):
    (tmp_path / "bad.toml").write_text(with_value(enzian_text, instance, param, text))
    assert one_line_error(run_cli("validate", "bad.toml", cwd=tmp_path)) == f"bad.toml: {message}"
    with pytest.raises(ccsim.ConfigError) as e:
        ccsim.Platform.load(str(tmp_path / "bad.toml"))
    assert str(e.value) == f"{tmp_path / 'bad.toml'}: {message}"


@pytest.mark.parametrize("instance,param,text,value,message", PLATFORM_CASES, ids=CASE_IDS)
def test_a_bad_override(tmp_path, instance, param, text, value, message):
    # cckit-dc-latency runs on enzian only; the run is refused before any point.
    r = run_cli("reproduce", "cckit-dc-latency", "--quick", "--no-progress", "--out", tmp_path,
                "--set", f"{instance}.{param}={text}")
    assert one_line_error(r) == f"overrides: {message}"
    assert not (tmp_path / "cckit-dc-latency" / "points.jsonl").exists()
    with pytest.raises(ccsim.ConfigError) as e:
        ccsim.Platform.load("enzian", overrides={f"{instance}.{param}": value})
    assert str(e.value) == f"overrides: {message}"
    assert (e.value.file, e.value.path) == ("overrides", message.split(": ")[0])
    with pytest.raises(ccsim.ConfigError) as e:
        ccsim.reproduce("cckit-dc-latency", quick=True, overrides={f"{instance}.{param}": value})
    assert str(e.value) == f"overrides: {message}"


def test_rules_hold_on_the_final_values_of_all_overrides():
    # desc_batch = 32 needs a 1024 B read request: fine when both change.
    p = ccsim.Platform.load("enzian", overrides={"dma.desc_batch": 32, "dma.desc_prefetch": 32,
                                                 "pcie.max_read_request_bytes": 1024})
    assert p.components()["dma"]["params"]["desc_batch"] == (32, "override")


# (workload, params as TOML, message after "series[0].params."): ranges and
# a workload's check hook.
SERIES_CASES = [
    ("coherent_read", "region_mib = 0", "region_mib: must be at least 1, got 0"),
    ("dma_read", "messages = -1", "messages: must be at least 0, got -1"),
    ("nic_loopback", "think_ns = -5.5", "think_ns: must be at least 0, got -5.5"),
    ("cc_invoke", "poll_ns = 0", "poll_ns: must be greater than 0, got 0"),
    ("coherent_invoke", "calls = 0", "calls: must be from 1 to 1000000, got 0"),
    ("coherent_invoke", 'mechanism = "fastforward", return_state = "shared"',
     'return_state: must be exclusive with mechanism = fastforward, got "shared"'),
    ("coherent_invoke", 'signal = "store", timeout_ns = 500.0',
     "timeout_ns: must be 0 with signal = store (the device always answers), got 500"),
]


@pytest.mark.parametrize("workload,params,message", SERIES_CASES, ids=[f"{w}:{p}" for w, p, _ in SERIES_CASES])
def test_a_bad_value_in_an_experiments_series_params(tmp_path, workload, params, message):
    metric = next(w for w in ccsim.workloads() if w["name"] == workload)["metrics"][0]["name"]
    (tmp_path / "exp.toml").write_text(f"""
[experiment]
name = "bad"
title = "a series with a bad parameter"
x = {{ name = "percentile" }}
sweep = [50]

[[series]]
name = "s"
platform = "enzian"
workload = "{workload}"
params = {{ {params} }}
metric = "{metric}"
""")
    expected = f"exp.toml: series[0].params.{message}"
    assert one_line_error(run_cli("validate", "exp.toml", cwd=tmp_path)) == expected
    r = run_cli("reproduce", "exp.toml", "--quick", "--no-progress", "--out", tmp_path / "out", cwd=tmp_path)
    assert one_line_error(r) == expected
    with pytest.raises(ccsim.ConfigError) as e:
        ccsim.Experiment.load(str(tmp_path / "exp.toml"))
    assert str(e.value) == f"{tmp_path / 'exp.toml'}: series[0].params.{message}"
