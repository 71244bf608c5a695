"""The Python protocol builder emits the same data as the shipped TOML specs.

`protocol_builder` is plain Python (no native code), so it is loaded by path
and this test runs even without the compiled extension."""

from __future__ import annotations

import importlib.util
import pathlib
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _builder():
    spec = importlib.util.spec_from_file_location("ccsim_protocol_builder", ROOT / "python" / "ccsim" / "protocol_builder.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "name,fn,kwargs",
    [
        ("eci-dc", "build_eci_dc", {}),
        ("eci-cc", "build_eci_cc", {}),
        ("invocation", "build_invocation", {}),
        ("invocation-shared-dcu", "build_invocation", {"shared_unit": True}),
    ],
)
def test_builder_equals_shipped_toml(name: str, fn: str, kwargs: dict) -> None:
    pb = _builder()
    built = getattr(pb, fn)(**kwargs)
    shipped = tomllib.loads((ROOT / "protocols" / f"{name}.toml").read_text())
    # The dictionary and the rendered TOML both equal the shipped file.
    assert built.to_dict() == shipped
    assert tomllib.loads(built.to_toml()) == shipped


def test_builder_round_trips_a_small_spec() -> None:
    pb = _builder()
    b = pb.ProtocolBuilder("toy", 'a "quoted" toy', memory_at="generated", cache_at="peer")
    b.channel("REQ", "request", False, "peer", "generated", "requests")
    b.message("GET", "REQ", "read")
    b.generated_agent("home", "home", "I").stable("I", "u", "I", "idle")
    b.equation("get", ("u", "I"), ["GET"], ("u", "I"))
    b.peer_table("cpu", "cpu", "I").state("I", "invalid").event("go", "go").on("I", "go", "I", "send GET")
    b.local_table("app", "app", "Idle").state("Idle", "idle").event("noop", "nothing").on("Idle", "noop", "Idle")
    d = tomllib.loads(b.to_toml())
    assert d == b.to_dict()
    assert d["protocol"]["description"] == 'a "quoted" toy'
    assert d["equation"][0]["receive"] == ["GET"]
    assert d["peer"]["transition"][0]["actions"] == ["send GET"]


def test_missing_tables_are_an_error() -> None:
    pb = _builder()
    b = pb.ProtocolBuilder("toy", "toy", memory_at="generated", cache_at="peer")
    with pytest.raises(ValueError, match="peer and local"):
        b.to_dict()
