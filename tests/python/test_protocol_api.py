"""The protocol toolkit driven from Python, as a user would: the same
verdicts and counts as the CLI, and SpecError for a malformed spec."""

from __future__ import annotations

import json

import pytest

import ccsim
from ccsim import protocol
from conftest import run_cli


def test_shipped_specs_are_listed():
    names = [s["name"] for s in protocol.specs()]
    for expected in ("eci-dc", "eci-cc", "invocation"):
        assert expected in names


def test_eci_dc_verifies_with_the_pinned_state_count():
    r = protocol.check("eci-dc")
    assert r.verified
    assert r.reachable_states == 12381  # rumur reports the same (crates/protocol tests)
    assert r.violations == []
    assert "verified" in r.text


def test_shared_dcu_invocation_deadlocks_with_a_trace():
    r = protocol.check("invocation-shared-dcu")
    assert not r.verified
    assert r.violations, r.text
    v = r.violations[0]
    assert "deadlock" in json.dumps(v).lower()


def test_generate_reports_counts():
    g = protocol.generate("eci-dc")
    assert g.stats["states"] == 26
    assert g.stats["stable_states"] == 5
    assert "CCKit" in g.text


@pytest.mark.parametrize("fmt,marker", [("sv", "module dc_rom"), ("dot", "digraph"), ("murphi", "startstate"),
                                        ("json", '"generated"')])
def test_exports(fmt, marker):
    assert marker in protocol.export("eci-dc", fmt)


def test_api_and_cli_agree(tmp_path):
    r = run_cli("protocol", "check", "eci-cc", "--json")
    assert r.returncode == 0, r.stderr
    from_cli = json.loads(r.stdout)
    from_api = protocol.check("eci-cc").report
    # Everything but the wall-clock time is identical.
    from_cli.pop("seconds")
    from_api.pop("seconds")
    assert from_cli == from_api


def test_a_malformed_spec_raises_spec_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[protocol]\nname = 1\n")
    with pytest.raises(ccsim.errors.SpecError) as e:
        protocol.check(str(bad))
    assert str(bad) in str(e.value)
