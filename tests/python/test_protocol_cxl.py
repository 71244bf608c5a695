"""CXL.cache as a user of the protocol toolkit meets it: listed, checked
from the CLI and the API with the spec's configuration and with more
devices, exported to Murphi for the chosen agents."""

from __future__ import annotations

import json

from ccsim import protocol
from conftest import run_cli


def test_listed_and_checked_from_the_cli():
    r = run_cli("protocol", "list")
    assert r.returncode == 0 and "cxl-cache" in r.stdout
    r = run_cli("protocol", "check", "cxl-cache", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["verified"] is True
    assert (rep["reachable_states"], rep["system_transitions"]) == (48_680, 182_078)
    assert rep["config"]["instances"] == {"core": 2, "device": 1}


def test_two_devices_from_the_api():
    r = protocol.check("cxl-cache", instances={"core": 1, "device": 2})
    assert r.verified
    assert r.reachable_states == 108_336
    # With a second device, the device-to-device snoops run.
    assert not any(u.startswith("SD_A/") for u in r.report["unexercised"])


def test_murphi_export_follows_the_instances():
    text = protocol.export("cxl-cache", "murphi", instances={"core": 1, "device": 2})
    assert "-- Agents: core0, device0, device1, home." in text
    # A snoop waits behind every GO to the same device (CXL 3.0 §3.2.5.2).
    rule = text[text.index('rule "device0 I receives SnpData #0"'):]
    guard = rule[:rule.index("==>")]
    for go in ("GO_S", "GO_E", "GO_I", "GO_WritePull", "GO_WritePull_Drop"):
        assert f"net_{go}[l][0] = 0" in guard, go
