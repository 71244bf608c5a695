"""The command line, driven as a user drives it (subprocess, real exit codes)."""

from __future__ import annotations

import argparse
import json

import pytest

from conftest import run_cli


def one_line_error(r, code=2):
    assert r.returncode == code, (r.stdout, r.stderr)
    assert r.stderr.startswith("error: "), r.stderr
    assert r.stderr.count("\n") == 1, f"expected one line, got {r.stderr!r}"
    assert "Traceback" not in r.stderr
    return r.stderr.strip()


def test_unknown_experiment_is_one_line_exit_2():
    msg = one_line_error(run_cli("reproduce", "no-such-experiment"))
    assert msg.startswith("error: no-such-experiment: no shipped experiment of this name and no such file")


def test_unknown_platform_is_one_line_exit_2():
    msg = one_line_error(run_cli("platform", "no-such-platform"))
    assert msg.startswith("error: no-such-platform: no shipped platform of this name and no such file")


def test_usage_errors_are_one_line_exit_2():
    assert one_line_error(run_cli("reproduce")) == "error: reproduce: name an experiment, or use --all or --list"
    msg = one_line_error(run_cli("frobnicate"))
    assert msg.startswith("error: ccsim: argument COMMAND: invalid choice: 'frobnicate'")
    msg = one_line_error(run_cli("reproduce", "--seed", "abc", "x"))
    assert "argument --seed: must be a whole number from 0 to 2**64 - 1, got 'abc'" in msg
    assert one_line_error(run_cli("reproduce", "x", "--set", "nokey")) == \
        "error: --set nokey: expected KEY=VALUE, like pcie.lanes=8"


def test_missing_file_is_one_line_exit_2(tmp_path):
    msg = one_line_error(run_cli("validate", str(tmp_path / "nope.toml")))
    assert msg.startswith(f"error: {tmp_path / 'nope.toml'}: cannot read platform file: ")


def test_protocol_list_check_and_export(tmp_path):
    from ccsim import _native

    r = run_cli("protocol", "list", "--json")
    assert r.returncode == 0, r.stderr
    assert [s["name"] for s in json.loads(r.stdout)] == [s["name"] for s in _native.protocol_list()]
    r = run_cli("protocol", "check", "eci-dc", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["verified"] is True and report["violations"] == []
    assert report["reachable_states"] > 0
    r = run_cli("protocol", "export", "eci-dc", "--sv", "-o", tmp_path / "dc.sv")
    assert r.returncode == 0, r.stderr
    assert "module dc_rom" in (tmp_path / "dc.sv").read_text()


def test_a_protocol_violation_exits_1_with_the_counterexample():
    r = run_cli("protocol", "check", "invocation-shared-dcu", "--json")
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert report["verified"] is False
    assert report["violations"] and report["violations"][0]["trace"]


def test_a_spec_file_with_a_windowed_read_checks_from_the_command_line(tmp_path):
    """A user's copy of eci-dc, whose CPU uses the data a forward overtook
    once: read as a `check` it is a stale read (exit 1), as the shipped
    `check_window` it verifies (exit 0), with the window's states counted."""
    from pathlib import Path

    shipped = (Path(__file__).resolve().parents[2] / "protocols" / "eci-dc.toml").read_text()
    row = 'state = "IS_D_I"\nevent = "PSHA"\nnext = "I"\nactions = ["check_window"]'
    assert shipped.count(row) == 1
    counts = {}
    for action, code in (("check", 1), ("check_window", 0)):
        spec = tmp_path / f"eci-dc-{action}.toml"
        spec.write_text(shipped.replace(row, row.replace("check_window", action)))
        r = run_cli("protocol", "check", spec, "--json")
        assert r.returncode == code, (action, r.stdout, r.stderr)
        report = json.loads(r.stdout)
        counts[action] = report["reachable_states"]
        if code:
            assert report["violations"][0]["property"] == "data-value"
    assert counts["check_window"] == 12_381


def test_protocol_bad_input_is_one_line_exit_2():
    msg = one_line_error(run_cli("protocol", "check", "no-such-spec"))
    assert msg.startswith("error: no-such-spec: cannot read spec")
    msg = one_line_error(run_cli("protocol", "export", "eci-dc"))
    assert msg == "error: protocol export: choose exactly one of --json, --dot, --sv, --murphi"


def test_reproduce_list_names_every_shipped_experiment():
    from ccsim import _native

    r = run_cli("reproduce", "--list", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["name"] for row in rows] == list(_native.list_experiments())


def test_info_lists_components_and_workloads_as_json():
    from ccsim import _native

    r = run_cli("info", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [c["type"] for c in doc["components"]] == [c["type"] for c in _native.component_types()]
    assert [w["name"] for w in doc["workloads"]] == [w["name"] for w in _native.workloads()]
    for c in doc["components"]:
        assert c["description"]
        for p in c["params"]:
            assert set(p) == {"name", "kind", "choices", "default", "required", "unit", "range", "from",
                              "description"}
            assert p["description"], f"{c['type']}.{p['name']} has no description"
            assert p["from"] or p["required"], f"{c['type']}.{p['name']} has no provenance"
        for s in c["ports"] + c["stats"]:
            assert s["description"]


def test_info_of_an_unknown_component_is_one_line_exit_2():
    msg = one_line_error(run_cli("info", "flux_capacitor"))
    assert msg.startswith("error: info: no component type or workload 'flux_capacitor'")


def test_info_of_one_component_shows_params_ports_and_stats():
    from ccsim import _native

    types = _native.component_types()
    assert types, "the model crates register component types"
    t = next(t for t in types if t["type"] == "pcie_link")
    r = run_cli("info", t["type"])
    assert r.returncode == 0, r.stderr
    assert f"{t['type']}: {t['description']}" in r.stdout
    for p in t["params"]:
        assert f"    {p['name']} ({p['kind']}" in r.stdout
        assert f"        default from: {p['from']}" in r.stdout
    for s in t["stats"]:
        assert f"    {s['name']} ({s['kind']}" in r.stdout
    assert "Component types (1):" in r.stdout


def test_bench_kernel_json_shape():
    r = run_cli("bench", "kernel", "--events", "20000", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for key in ("events", "seconds", "events_per_sec", "bare_events_per_sec", "ratio"):
        assert key in doc
    assert doc["events"] >= 20000
    assert doc["events_per_sec"] > 0 and doc["bare_events_per_sec"] > 0
    assert doc["ratio"] == pytest.approx(doc["bare_events_per_sec"] / doc["events_per_sec"])


def test_bench_coherent_json_shape():
    r = run_cli("bench", "coherent", "--reads", "500", "--memory-lines", "200", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["reads"] == 500
    # Each timed measurement is the fastest of three interleaved runs.
    assert doc["runs"] == 3
    assert doc["transactions_per_sec"] > 0 and doc["checked_transactions_per_sec"] > 0
    assert doc["transactions_per_sec"] == pytest.approx(doc["reads"] / doc["seconds"])
    assert doc["events_per_transaction"] > 1
    assert [m["region_bytes"] for m in doc["memory"]] == [64 << 20, 1 << 30]
    assert all(m["lines"] == 200 for m in doc["memory"])
    assert "memory_ratio" in doc
    assert doc["speed_target_per_sec"] == 2_000_000
    assert doc["speed_target_met"] == (doc["transactions_per_sec"] >= 2_000_000)
    # The empty event loop's ceiling at this run's events per transaction.
    assert doc["bare_loop_events_per_sec"] > 0
    assert doc["bare_loop_ceiling_per_sec"] == pytest.approx(
        doc["bare_loop_events_per_sec"] / doc["events_per_transaction"])
    assert doc["ceiling_ratio"] == pytest.approx(doc["transactions_per_sec"] / doc["bare_loop_ceiling_per_sec"])
    assert (doc["ceiling_ratio_goal"], doc["instructions_per_transaction_goal"]) == (0.6, 3000)
    # Instructions are counted only on request (callgrind).
    assert "instructions_per_transaction" not in doc


@pytest.mark.parametrize("platform", ["enzian", "cohet"])
def test_bench_coherent_counts_instructions_per_transaction_with_callgrind(platform):
    # Needs valgrind, which .ci/run installs: fails, not skips, without it.
    r = run_cli("bench", "coherent", "--platform", platform, "--reads", "300", "--memory-lines", "100",
                "--instructions", "1000", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["instructions_transactions"] == [1000, 2000]
    small, big = doc["instructions_counted"]
    assert doc["instructions_per_transaction"] == pytest.approx((big - small) / 1000)
    # A transaction is at least its events' handling (several hundred
    # instructions each), and far from the interpreter's start-up, which the
    # difference leaves out.
    assert doc["events_per_transaction"] * 100 < doc["instructions_per_transaction"] < 100_000
    assert doc["ceiling_ratio"] > 0
    text = run_cli("bench", "coherent", "--platform", platform, "--reads", "300", "--memory-lines", "100",
                   "--instructions", "500")
    assert text.returncode == 0, text.stderr
    assert "instructions per transaction (callgrind, 1000 less 500 transactions):" in text.stdout
    assert "(goal at most 3,000)" in text.stdout and "ratio to that ceiling:" in text.stdout


def test_bench_coherent_instructions_without_valgrind_is_a_clear_error(tmp_path):
    import os
    import subprocess
    import sys

    # A PATH without valgrind (the interpreter is called by its full path).
    env = dict(os.environ, PATH=str(tmp_path), MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, "-m", "ccsim", "bench", "coherent", "--reads", "100",
                        "--memory-lines", "50", "--instructions", "100"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2
    assert "valgrind is not installed" in r.stderr and "Traceback" not in r.stderr


def test_bench_coherent_text_states_the_target():
    r = run_cli("bench", "coherent", "--reads", "300", "--memory-lines", "100")
    assert r.returncode == 0, r.stderr
    assert "speed target 2 M transactions/s:" in r.stdout
    assert "300 reads, fastest of 3 runs)" in r.stdout
    assert "an empty event loop at" in r.stdout and "events/transaction (bare binary heap" in r.stdout
    assert "ratio (1 GiB / 64 MiB):" in r.stdout


def test_bench_coherent_cohet_reports_the_ceiling_ratio():
    r = run_cli("bench", "coherent", "--platform", "cohet", "--reads", "400", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["platform"], doc["system"], doc["loads"], doc["runs"]) == ("cohet", "cxl", 400, 3)
    assert doc["transactions_per_sec"] == pytest.approx(doc["loads"] / doc["seconds"])
    assert doc["checked_transactions_per_sec"] > 0
    # A load is at least its request and its data crossing the CXL link
    # and the home's and the DCOH's handling of them.
    assert doc["events_per_transaction"] >= 4
    assert doc["bare_loop_ceiling_per_sec"] == pytest.approx(
        doc["bare_loop_events_per_sec"] / doc["events_per_transaction"])
    assert doc["ceiling_ratio"] == pytest.approx(doc["transactions_per_sec"] / doc["bare_loop_ceiling_per_sec"])
    assert doc["ceiling_ratio_goal"] == 0.6
    text = run_cli("bench", "coherent", "--platform", "cohet", "--reads", "300")
    assert text.returncode == 0 and "ratio to that ceiling:" in text.stdout and "(goal 0.6)" in text.stdout


def test_bench_coherent_rejects_zero_reads():
    r = run_cli("bench", "coherent", "--reads", "0")
    assert r.returncode == 2
    assert "--reads" in r.stderr


def test_version():
    import ccsim

    r = run_cli("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"ccsim {ccsim.__version__}"


def test_a_panic_in_the_core_is_one_line_exit_70(monkeypatch, capsys):
    """A Rust panic reaches Python as pyo3's PanicException (a BaseException):
    the CLI says it is a bug, in one line, and exits 70; CCSIM_DEBUG=1
    re-raises it for the traceback."""
    from ccsim import cli

    class PanicException(BaseException):  # the name is what the CLI recognises
        pass

    def explode(args):
        raise PanicException("guards come in pairs")

    parser = cli.build_parser()
    monkeypatch.setattr(parser, "parse_args", lambda argv: argparse.Namespace(command="x", func=explode))
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    monkeypatch.delenv("CCSIM_DEBUG", raising=False)
    assert cli.main(["x"]) == 70
    err = capsys.readouterr().err
    assert err == "internal error (a bug in ccsim, please report it with the command): guards come in pairs\n"
    monkeypatch.setenv("CCSIM_DEBUG", "1")
    with pytest.raises(PanicException):
        cli.main(["x"])
