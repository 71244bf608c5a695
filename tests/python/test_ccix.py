"""CCIX as a user of the toolkit meets it: the spec listed and checked from
the CLI and the API, exported to Murphi, and run on the N1-SDP platform
under the random tester and mutation coverage."""

from __future__ import annotations

import json

import ccsim
from ccsim import protocol
from conftest import run_cli


def test_checked_from_the_cli_and_the_api():
    r = run_cli("protocol", "list")
    assert r.returncode == 0 and "ccix" in r.stdout
    r = run_cli("protocol", "check", "ccix", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["verified"] is True
    assert (rep["reachable_states"], rep["system_transitions"]) == (128_754, 633_462)
    assert rep["config"]["instances"] == {"ra": 3}
    two = protocol.check("ccix", instances={"ra": 2})
    assert two.verified and two.reachable_states == 3_324


def test_murphi_export_names_the_ccix_messages(tmp_path):
    out = tmp_path / "ccix.m"
    r = run_cli("protocol", "export", "ccix", "--murphi", "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    for m in ("ReadShared", "CleanUnique", "SnpToI", "SnpRespData_I", "CompAck", "WriteUniqueFull", "AtomicCompare", "CompData_I"):
        assert m in text


def test_the_random_tester_on_the_n1sdp():
    r = ccsim.simulate("n1sdp", system="ccix", ops=40_000, lines=4, seed=3)
    m = r["metrics"]
    assert m["violations"] == 0 and m["reference_mismatches"] == 0
    assert m["ops"] == 3 * 40_000  # the U280's System Cache and two host clusters
    assert m["reads"] > 0


def test_mutation_coverage_on_the_n1sdp():
    df = ccsim.mutation_coverage("n1sdp", system="ccix", seeds=3, ops=1000)
    assert len(df) == 279
    assert (df["checker"] == "caught").sum() == 259
    # What escapes is what tests/ccix.rs pins as equivalent, for the same
    # reasons: snoops this home never sends, UC/UD, stale owner fields.
    escaped = set(df.loc[~df["caught"], "mutant"])
    assert len(escaped) == 20
    assert "delete ra: (SC, SnpToS)" in escaped
    assert "drop-action ha: (U, ReadUnique): clear_owner" in escaped
    assert "drop-action ha: (U, AtomicCompare [from_owner]): clear_owner" in escaped
    # The far atomic's rows are caught: dropping the dirty line's
    # write-back before the home executes it makes the atomic read a
    # stale value.
    assert "drop-action ha: (A_S, SnpRespData_I [last_ack]): write_mem" not in escaped
