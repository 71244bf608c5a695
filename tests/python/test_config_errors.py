"""Golden outcomes of ``ccsim validate`` on the files in ``data/``.

Each data file states its expected outcome in its header comment
(``# expect-exit:``, ``# expect-stderr:`` / ``# expect-stdout:``, and
``# needs-component:`` for files that use a model type), so a new case is
one new file.
"""

from __future__ import annotations

import pytest

from conftest import DATA, run_cli

CASES = sorted(p.name for p in DATA.glob("*.toml"))


def header(path):
    out = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line[1:].strip().partition(":")
        if sep and key.startswith(("expect-", "needs-")):
            out[key] = value.strip()
    return out


@pytest.mark.parametrize("name", CASES)
def test_validate_matches_the_golden_outcome(name):
    from ccsim import _native

    h = header(DATA / name)
    assert "expect-exit" in h, f"{name} must state its expected exit code"
    needs = h.get("needs-component")
    if needs and needs not in {t["type"] for t in _native.component_types()}:
        pytest.skip(f"component type {needs} is not registered in this build")
    r = run_cli("validate", name, cwd=DATA)
    assert r.returncode == int(h["expect-exit"]), r.stderr
    if "expect-stderr" in h:
        assert r.stderr == h["expect-stderr"] + "\n"
        assert "Traceback" not in r.stderr
    if "expect-stdout" in h:
        assert r.stdout == h["expect-stdout"] + "\n"


def test_error_lines_name_the_path_through_the_api():
    import ccsim

    with pytest.raises(ccsim.ConfigError) as info:
        ccsim.Platform.load(str(DATA / "misspelt_key.toml"))
    e = info.value
    assert e.file == str(DATA / "misspelt_key.toml")
    assert e.path == "platform.nmae"
    assert e.message == 'unknown key; did you mean "name"?'
    assert isinstance(e, ValueError), "config errors are also ValueErrors"
