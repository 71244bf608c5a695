"""`ccsim sweep` and `ccsim.sweep`: validation, determinism across worker
counts and backends, resuming after a kill, failing points."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import ccsim
from ccsim.sweep import load_spec, plan

from conftest import ccsim_command, run_cli

ROOT = Path(__file__).resolve().parents[2]

# Cheap points: a few ms each (CCKit DC latency, 64 lines read one at a time).
TINY = """
[sweep]
name = "tiny"
experiments = ["cckit-dc-latency"]
series = ["dc_bram_seq", "dc_ddr_rand"]
x = [64]
seeds = [0, 1]

[grid]
"dc.dcus_per_slice" = [1, 4]
"eci.links" = [1, 2]           # 1 breaks the DC's rule (two slices, two links): those points fail

[sample]
n = 2
seed = 3
"dc_ddr.controller_ns" = { min = 50.0, max = 200.0 }
"""


def _spec(tmp_path: Path, text: str = TINY, name: str = "spec.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _dataset(out: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(out / "sweeps" / name / "points.parquet")


def test_sweep_plan_and_dataset(tmp_path):
    spec = _spec(tmp_path)
    r = ccsim.sweep(spec, out=tmp_path / "out", jobs=1)
    df = _dataset(tmp_path / "out", "tiny")
    # Grid 2 x 2 and 2 sampled assignments, 2 series, 1 x, 2 seeds.
    assert len(df) == (4 + 2) * 2 * 2 == r.ran
    assert df["point_hash"].is_unique
    for col in ("experiment", "series", "x", "dc.dcus_per_slice", "eci.links", "dc_ddr.controller_ns", "seed",
                "ccsim_version", "value", "metric.latency_ns", "error", "point_hash"):
        assert col in df.columns, col
    assert set(df["ccsim_version"]) == {ccsim.__version__}
    # A failing point records its error, and the sweep goes on.
    failed = df[df["eci.links"] == 1]
    assert len(failed) == 8 == r.failed
    assert failed["error"].str.contains("must be 2 in a platform with a directory_controller").all()
    assert failed["value"].isna().all()
    ok = df[df["error"].isna()]
    assert len(ok) == 16 and (ok["value"] > 0).all()
    # Sampled values are in their range; grid rows leave sampled keys null.
    sampled = df[df["dc_ddr.controller_ns"].notna()]
    assert len(sampled) == 8
    assert sampled["dc_ddr.controller_ns"].between(50.0, 200.0).all()
    # The same point in ccsim.reproduce gives the same number.
    base = ok[(ok["dc.dcus_per_slice"] == 4) & (ok["series"] == "dc_bram_seq") & (ok["seed"] == 0)]
    direct = ccsim.run_point("cckit-dc-latency", "dc_bram_seq", 64, seed=0,
                             overrides={"dc.dcus_per_slice": 4, "eci.links": 2})
    assert base["value"].iloc[0] == direct["metrics"]["latency_ns"]


def test_sweep_deterministic_across_worker_counts(tmp_path):
    spec = _spec(tmp_path)
    ccsim.sweep(spec, out=tmp_path / "one", jobs=1)
    ccsim.sweep(spec, out=tmp_path / "two", jobs=2)
    a, b = _dataset(tmp_path / "one", "tiny"), _dataset(tmp_path / "two", "tiny")
    pd.testing.assert_frame_equal(a, b)
    # A rerun reuses every point and writes the same dataset.
    r = ccsim.sweep(spec, out=tmp_path / "two", jobs=2)
    assert (r.ran, r.reused) == (0, len(a))
    pd.testing.assert_frame_equal(a, _dataset(tmp_path / "two", "tiny"))


def test_sweep_workload_parameter(tmp_path):
    spec = _spec(tmp_path, """
[sweep]
name = "wl"
experiments = ["cckit-dc-latency"]
series = ["dc_ddr_seq"]
x = [64]
[grid]
"workload.pattern" = ["seq", "rand"]
""")
    df = ccsim.sweep(spec, out=tmp_path / "out").df
    assert list(df["workload.pattern"]) == ["seq", "rand"]
    assert df["error"].isna().all()
    rand = ccsim.run_point("cckit-dc-latency", "dc_ddr_rand", 64)["metrics"]["latency_ns"]
    seq = ccsim.run_point("cckit-dc-latency", "dc_ddr_seq", 64)["metrics"]["latency_ns"]
    assert list(df["value"]) == [seq, rand]


@pytest.mark.parametrize("grid, message", [
    ('"dc.dcus_per_slice" = [0, 4]', 'grid."dc.dcus_per_slice": must be ≥ 1 DCUs, got 0'),
    ('"dc.dcus_per_slic" = [4]', 'grid."dc.dcus_per_slic": dc (directory_controller) has no parameter'),
    ('"nope.lanes" = [4]', 'grid."nope.lanes": no platform of the sweep\'s series has an instance \'nope\''),
    ('"cohet:pcie.lanes" = [4]', 'grid."cohet:pcie.lanes": no series of the sweep runs on platform \'cohet\''),
    ('"dc.dcus_per_slice" = ["x"]', 'grid."dc.dcus_per_slice": expected integer, got "x"'),
    ('"workload.pattern" = ["zigzag"]', 'grid."workload.pattern": expected one of'),
    ('"workload.nope" = [1]', "grid.\"workload.nope\": no workload of the sweep's series declares"),
    ('"eci.links" = [3]', 'grid."eci.links": must be [1, 2] links, got 3'),
])
def test_sweep_validation_errors_exit_2(tmp_path, grid, message):
    spec = _spec(tmp_path, f"""
[sweep]
name = "bad"
experiments = ["cckit-dc-latency"]
x = [64]
[grid]
{grid}
""")
    r = run_cli("sweep", spec, "--out", tmp_path / "out", "--no-progress")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: {spec}: "), r.stderr
    assert message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, message", [
    ('[sweep]\nname = "a"\nexperiments = ["no-such-experiment"]\n', "sweep.experiments[0]"),
    ('[sweep]\nexperiments = ["cckit-dc-latency"]\n', "sweep.name"),
    ('[sweep]\nname = "a"\nexperiments = ["cckit-dc-latency"]\nseries = ["zz"]\n', "sweep.series: no series 'zz'"),
    ('[sweep]\nname = "a"\nexperiments = ["cckit-dc-latency"]\n[sample]\nn = 2\n'
     '"dc.dcus_per_slice" = { min = 0, max = 8 }\n', 'sample."dc.dcus_per_slice": must be ≥ 1 DCUs, got 0'),
    ('[sweep]\nname = "a"\nexperiments = ["cckit-dc-latency"]\n[grid]\n"dc.clock_mhz" = [100]\n'
     '[sample]\nn = 2\n"dc.clock_mhz" = [200]\n', 'also in [grid]'),
    ('[sweep]\nname = "a"\nexperiments = ["cckit-dc-latency"]\n[sample]\nn = 2\n'
     '"dc.dcus_per_slice" = { min = 2.2, max = 2.8 }\n', 'no integer between min 2.2 and max 2.8'),
    ('[sweep]\nname = "a"\nexperiments = ["cckit-dc-latency"]\n[sample]\nn = 2\n'
     '"workload.pattern" = { min = 1, max = 2 }\n', 'is sampled from a list of choices'),
    ('[swep]\n', "swep: unknown section"),
    ('[sweep]\nname = "a"\n', "sweep.experiments: expected a non-empty list of experiment names or paths "
     "(or [[run]] entries)"),
    ('[sweep]\nname = "a"\n[[run]]\nseries = ["dc_bram_seq"]\n', "run[0].experiment: expected an experiment"),
    ('[sweep]\nname = "a"\n[[run]]\nexperiment = "cckit-dc-latency"\nxs = [1]\n', "run[0].xs: unknown key"),
    ('[sweep]\nname = "a"\n[[run]]\nexperiment = "cckit-dc-latency"\n[[run]]\nexperiment = "cohet-dma"\n'
     'series = ["dc_bram_seq"]\n', "run[1].series: no series 'dc_bram_seq' in cohet-dma"),
    ('[sweep]\nname = "a"\n[[run]]\nexperiment = "cckit-dc-latency"\nx = [64, "a"]\n',
     'run[0].x: expected a list of numbers or "quick"'),
    ('[sweep]\nname = "a"\nx = [64]\n[[run]]\nexperiment = "cckit-dc-latency"\n',
     "sweep.x: applies to sweep.experiments; give it in each [[run]] instead"),
    ('[sweep\n', "invalid TOML"),
])
def test_sweep_spec_errors_exit_2(tmp_path, text, message):
    spec = _spec(tmp_path, text)
    r = run_cli("sweep", spec, "--out", tmp_path / "out", "--no-progress")
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_sweep_point_hashes_track_inputs(tmp_path):
    a = {p.hash for p in plan(load_spec(_spec(tmp_path)))}
    b = {p.hash for p in plan(load_spec(_spec(tmp_path, TINY.replace("seeds = [0, 1]", "seeds = [0, 2]"))))}
    assert len(a & b) == len(a) // 2  # seed 0 points are shared, seed 1 and 2 are not


# Points of ~0.1-0.3 s each (CCKit DC latency over 40,000 lines), so a kill
# lands mid-sweep.
SLOW = """
[sweep]
name = "resume"
experiments = ["cckit-dc-latency"]
series = ["dc_bram_seq"]
x = [40000]
[grid]
"dc.dcus_per_slice" = [1, 2, 3, 4, 5, 6, 7, 8]
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_sweep_kill_and_resume(tmp_path, jobs):
    spec = _spec(tmp_path, SLOW)
    out = tmp_path / "killed"
    log = out / "sweeps" / "resume" / "points.jsonl"
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.Popen(ccsim_command() + ["sweep", str(spec), "--out", str(out), "--jobs", str(jobs),
                                               "--no-progress"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if log.exists() and len(log.read_text().splitlines()) >= 2:
                break
            if proc.poll() is not None:
                pytest.fail(f"the sweep ended before it could be killed: {proc.stderr.read().decode()}")
            time.sleep(0.02)
        else:
            pytest.fail("no points landed within 120 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    landed = 0
    for line in log.read_text().splitlines():
        try:
            json.loads(line)
            landed += 1
        except json.JSONDecodeError:
            pass  # torn by the kill
    assert 2 <= landed < 8, landed
    assert not (out / "sweeps" / "resume" / "points.parquet").exists()
    r = run_cli("sweep", spec, "--out", out, "--jobs", str(jobs), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert f"8 points ({8 - landed} run, {landed} reused, 0 failed)" in r.stdout, r.stdout
    hashes = [json.loads(line)["point_hash"] for line in log.read_text().splitlines()]
    assert len(hashes) == len(set(hashes)) == 8  # none lost, none duplicated
    r = run_cli("sweep", spec, "--out", tmp_path / "clean", "--jobs", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    pd.testing.assert_frame_equal(_dataset(out, "resume"), _dataset(tmp_path / "clean", "resume"))


def test_sweep_torn_log_line_is_dropped(tmp_path):
    spec = _spec(tmp_path)
    out = tmp_path / "out"
    ccsim.sweep(spec, out=out)
    log = out / "sweeps" / "tiny" / "points.jsonl"
    lines = log.read_text().splitlines()
    # A kill in the middle of a write leaves a torn last line; and a stray duplicate.
    log.write_text("\n".join(lines[:5] + [lines[0]]) + "\n" + lines[5][: len(lines[5]) // 2])
    r = ccsim.sweep(spec, out=out)
    assert r.reused == 5 and r.ran == len(lines) - 5
    hashes = [json.loads(line)["point_hash"] for line in log.read_text().splitlines()]
    assert len(hashes) == len(set(hashes)) == len(lines)
    ccsim.sweep(spec, out=tmp_path / "clean")
    pd.testing.assert_frame_equal(_dataset(out, "tiny"), _dataset(tmp_path / "clean", "tiny"))


def test_example_sweep_spec_is_valid():
    spec = load_spec(ROOT / "examples" / "dc_units.toml")
    points = plan(spec)
    assert spec.name == "dc_units" and len(points) >= 6
    assert {p.experiment for p in points} == {"cckit-dc-throughput"}


def test_sweep_ray_backend_matches_local(tmp_path):
    """FAILS if ray is missing (the test extra installs it): the same spec
    on a local Ray instance gives the local pool's dataset."""
    import ray  # noqa: F401 -- an ImportError here is a failure, not a skip

    spec = _spec(tmp_path)
    ccsim.sweep(spec, out=tmp_path / "local", jobs=2)
    r = run_cli("sweep", spec, "--out", tmp_path / "ray", "--backend", "ray", "--jobs", "2", "--no-progress",
                timeout=600)
    assert r.returncode == 0, r.stderr
    pd.testing.assert_frame_equal(_dataset(tmp_path / "local", "tiny"), _dataset(tmp_path / "ray", "tiny"))


@pytest.mark.parametrize("doc", ["README.md", "examples/README.md"])
def test_documented_sweep_specs_are_valid(doc):
    import re

    from ccsim.sweep import parse_spec

    text = (ROOT / doc).read_text()
    block = re.search(r"```toml\n(\[sweep\].*?)```", text, re.S).group(1)
    spec = parse_spec(block, doc)
    assert spec.name == "dc_units" and plan(spec)


def test_bench_sweep_compares_worker_counts(tmp_path):
    from ccsim.sweep import bench_scaling

    r = bench_scaling(load_spec(_spec(tmp_path)), jobs=2, repeat=2)
    assert r["points"] == 24 and r["jobs"] == 2 and r["datasets_equal"] and len(r["ratios"]) == 2
    assert r["points_per_sec_1"] > 0 and r["points_per_sec_n"] > 0


def test_sweep_across_experiments_and_platforms(tmp_path):
    spec = _spec(tmp_path, """
[sweep]
name = "multi"
experiments = ["cckit-dc-latency", "cohet-dma"]
series = ["dc_bram_seq", "latency"]
x = "quick"

[grid]
"enzian:dc.dcus_per_slice" = [2, 8]
"cohet.pcie.lanes" = [8, 16]
""")
    df = ccsim.sweep(spec, out=tmp_path / "out", jobs=2).df
    assert df["error"].isna().all()
    dc = df[df["experiment"] == "cckit-dc-latency"]
    dma = df[df["experiment"] == "cohet-dma"]
    assert list(dc["x"].unique()) == [2048.0] and sorted(dma["x"].unique()) == [64.0, 4096.0, 262144.0]
    # Each key applies to its platform only; elsewhere it is null.
    assert dc["cohet.pcie.lanes"].isna().all() and dma["enzian:dc.dcus_per_slice"].isna().all()
    # A grid point that differs only in another platform's parameter is the
    # same point: it runs once and has one row.
    assert len(dc) == 2 and len(dma) == 2 * 3
    assert df["point_hash"].is_unique
    assert sorted(dc["enzian:dc.dcus_per_slice"]) == [2, 8] and sorted(dma["cohet.pcie.lanes"].unique()) == [8, 16]


def test_sweep_run_entries_give_each_experiment_its_own_series_and_x(tmp_path):
    spec = _spec(tmp_path, """
[sweep]
name = "runs"
experiments = ["cckit-dc-latency"]      # every series, its quick x
x = "quick"

[[run]]
experiment = "cohet-dma"
series = ["latency"]
x = [64, 128]

[[run]]                                 # the same experiment again, other series and x
experiment = "cohet-dma"
series = ["bandwidth"]
x = [4096]

[grid]
"cohet.pcie.lanes" = [8, 16]
""")
    s = load_spec(spec)
    assert [r.experiment.name for r in s.runs] == ["cckit-dc-latency", "cohet-dma", "cohet-dma"]
    assert [e.name for e in s.experiments] == ["cckit-dc-latency", "cohet-dma"]
    df = ccsim.sweep(spec, out=tmp_path / "out", jobs=2).df
    assert df["error"].isna().all()
    dma = df[df["experiment"] == "cohet-dma"]
    got = sorted(zip(dma["series"], dma["x"], dma["cohet.pcie.lanes"]))
    assert got == sorted((s, x, lanes) for s, x in [("latency", 64.0), ("latency", 128.0), ("bandwidth", 4096.0)]
                         for lanes in (8, 16))
    dc = df[df["experiment"] == "cckit-dc-latency"]
    n_series = len(ccsim.Experiment.load("cckit-dc-latency").to_dict()["series"])
    assert list(dc["x"].unique()) == [2048.0] and len(dc) == n_series  # the lanes key does not apply to it
    assert df["point_hash"].is_unique


def test_example_cxl_clock_sweep_plan():
    spec = load_spec(ROOT / "examples" / "cxl_clock.toml")
    points = plan(spec)
    by_experiment = {}
    for p in points:
        by_experiment.setdefault(p.experiment, set()).add(p.x)
    assert by_experiment == {"cohet-cxl-latency": {200.0, 400.0, 800.0, 1000.0, 1500.0, 2000.0},
                             "cohet-cxl-bandwidth": {2048.0}}
    assert {p.values["cohet:cxl_link.latency_ns"] for p in points} == {105.2, 210.4}


def test_sweep_renamed_key_reuses_points(tmp_path):
    out = tmp_path / "out"
    first = ccsim.sweep(_spec(tmp_path), out=out)
    renamed = TINY.replace('"dc.dcus_per_slice"', '"enzian:dc.dcus_per_slice"')
    r = ccsim.sweep(_spec(tmp_path, renamed, "renamed.toml"), out=out)
    assert (r.ran, r.reused) == (0, len(first.df))
    assert list(r.df["enzian:dc.dcus_per_slice"].fillna(-1)) == list(first.df["dc.dcus_per_slice"].fillna(-1))


def test_sweep_dry_run_writes_nothing(tmp_path):
    spec = _spec(tmp_path)
    r = run_cli("sweep", spec, "--out", tmp_path / "out", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "tiny: 24 points (0 done, 0 of them failed; 24 to run)" in r.stdout, r.stdout
    assert not (tmp_path / "out").exists()
    ccsim.sweep(spec, out=tmp_path / "out")
    r = run_cli("sweep", spec, "--out", tmp_path / "out", "--dry-run")
    assert "tiny: 24 points (24 done, 8 of them failed; 0 to run)" in r.stdout, r.stdout
