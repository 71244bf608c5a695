"""CXL.cache (``protocols/cxl-cache.toml``) in a timing simulation: the
random tester on the Cohet platform's ``[systems.cxl]`` (two host cores,
the LLC as home, the device's DCOH over the CXL link), driven as a user
drives it, and a broken device table caught by the online checks."""

from __future__ import annotations

import json

import ccsim
from conftest import first_failing_seed, mutant_platform, run_cli as cli


def test_cores_and_device_share_lines_with_zero_violations():
    r = ccsim.simulate("cohet", system="cxl", ops=3000, lines=3, seed=1)
    m = r["metrics"]
    assert m["ops"] == 3 * 3000  # core0, core1 and the DCOH
    assert m["violations"] == 0
    assert m["reference_mismatches"] == 0
    assert m["reads"] > 0
    # A miss of the device crosses the CXL link twice (2 x 236.6 ns); the
    # mean over hits and misses of all three agents lies below that and
    # above a mesh round trip.
    assert 20 < m["op_latency_ns"] < 2000


def test_cli_seeds_in_parallel():
    r = cli("simulate", "cohet", "--system", "cxl", "--ops", "2000", "--seeds", "4", "--jobs", "2", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ops"] == 4 * 3 * 2000
    assert out["failures"] == []


def test_a_device_that_ignores_an_invalidation_is_caught(tmp_path):
    # The DCOH answers SnpInv in S as if it dropped the line, and keeps it.
    path = mutant_platform(tmp_path, "cxl-cache", "cohet",
                           '{ state = "S", event = "SnpInv", next = "I", actions = ["send RspIHitSE"] }',
                           '{ state = "S", event = "SnpInv", next = "S", actions = ["send RspIHitSE"] }')
    found, _ = first_failing_seed(("simulate", str(path), "--system", "cxl", "--ops", "1000", "--lines", "2"))
    assert found is not None, "no seed found the kept copy"
    assert found.returncode == 1, found.stderr
    assert "invariant violated" in found.stderr
    assert "Traceback" not in found.stderr


def test_back_invalidation_system_with_zero_violations():
    # CXL.mem with back-invalidation: two host caches of the device's
    # memory, the device's DCOH and its own engine contend for 2 lines.
    r = ccsim.simulate("cohet", system="cxl_mem", ops=3000, lines=2, seed=3)
    m = r["metrics"]
    assert m["ops"] == 3 * 3000  # host0, host1 and the engine
    assert m["violations"] == 0 and m["reference_mismatches"] == 0
    assert m["reads"] > 0


def test_a_host_that_keeps_a_back_invalidated_line_is_caught(tmp_path):
    old = '{ state = "S", event = "BISnpInv", next = "I", actions = ["send BIRspI"] }'
    path = mutant_platform(tmp_path, "cxl-mem-bi", "cohet", old, old.replace('next = "I"', 'next = "S"'))
    found, _ = first_failing_seed(("simulate", str(path), "--system", "cxl_mem", "--ops", "1000", "--lines", "2"))
    assert found is not None, "no seed found the kept copy"
    assert found.returncode == 1 and "invariant violated" in found.stderr, found.stderr


def test_type2_bias_system_with_zero_violations():
    # CXL 2.0 type-2 device memory (HDM-D): two host cores and the device's
    # cache contend for 2 lines of the device's DDR5 memory, flipping
    # their bias both ways.
    r = ccsim.simulate("cohet", system="cxl_type2", ops=3000, lines=2, seed=3)
    m = r["metrics"]
    assert m["ops"] == 3 * 3000  # core0, core1 and the device's cache
    assert m["violations"] == 0 and m["reference_mismatches"] == 0
    assert m["reads"] > 0


def test_a_dcoh_that_flips_without_snooping_its_cache_is_caught(tmp_path):
    # The DCOH answers a host read of a line its cache holds without taking
    # the line back first: the host reads stale memory.
    path = mutant_platform(tmp_path, "cxl-type2", "cohet",
                           '{ state = "DBC", event = "MemRd", next = "DB_X", actions = ["send DSnpInv"] }',
                           '{ state = "DBC", event = "MemRd", next = "HB", actions = ["send MemData"] }')
    found, _ = first_failing_seed(("simulate", str(path), "--system", "cxl_type2", "--ops", "1000", "--lines", "2"))
    assert found is not None, "no seed found the stale read"
    assert found.returncode == 1, found.stderr
    assert "Traceback" not in found.stderr
