"""The bad-input corpus: every case states what must happen, as Rumur's
test models do, and this one test holds the CLI and the API to it.

A case is one ``*.case`` file here. Its header (the leading ``#`` lines)
says:

* ``# args:`` the ``ccsim`` command line; ``{input}`` is the case's input
  file, written as ``input.toml`` into an empty directory the command runs
  in;
* ``# expect-exit:`` and ``# expect-stderr:`` the exit code and the one
  line the CLI must print (exactly; never a traceback);
* ``# api:`` optionally, the Python call that must raise a ``ccsim``
  exception: ``platform``, ``experiment`` or ``spec`` load the input, else
  an expression; its ``str()`` is the CLI's line without ``error: ``
  unless ``# api-error:`` gives the text (argument errors word the flag);
* ``# input-hex:`` optionally, the input's bytes (for files that are not
  UTF-8); otherwise the input is the text after the header.

Nothing may be written half-way: after a failing command the directory
holds only the input. A new case is one new file.
"""

from __future__ import annotations

import binascii
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ccsim

HERE = Path(__file__).resolve().parent
CASES = sorted(HERE.glob("*.case"))
INPUT = "input.toml"


def parse(path: Path):
    """(header, body): the ``# key: value`` lines at the top, and the rest."""
    header, body, lines = {}, [], path.read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if not line.startswith("#"):
            body = lines[i:]
            break
        key, sep, value = line[1:].strip().partition(":")
        if sep and key in {"args", "expect-exit", "expect-stderr", "api", "api-error", "input-hex"}:
            header[key] = value.strip()
    return header, "".join(body)


def test_the_corpus_is_large_and_every_case_says_what_it_expects():
    assert len(CASES) >= 60, f"{len(CASES)} cases"
    for path in CASES:
        h, _ = parse(path)
        missing = {"args", "expect-exit", "expect-stderr"} - set(h)
        assert not missing, f"{path.name}: header lacks {missing}"
        assert h["expect-exit"] == "2", f"{path.name}: bad input exits 2"
        assert h["expect-stderr"].startswith("error: "), path.name


API_LOADERS = {
    "platform": lambda: ccsim.Platform.load(INPUT),
    "experiment": lambda: ccsim.Experiment.load(INPUT),
    "spec": lambda: ccsim.protocol.check(INPUT),
}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path, tmp_path, monkeypatch):
    h, body = parse(path)
    args = h["args"].split()
    if "{input}" in h["args"]:
        data = binascii.unhexlify(h["input-hex"]) if "input-hex" in h else body.encode("utf-8")
        (tmp_path / INPUT).write_bytes(data)
        args = [a.replace("{input}", INPUT) for a in args]
    before = sorted(os.listdir(tmp_path))

    r = subprocess.run([sys.executable, "-m", "ccsim", *args], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == int(h["expect-exit"]), r.stderr
    assert r.stderr == h["expect-stderr"] + "\n"
    assert sorted(os.listdir(tmp_path)) == before, "a failing command wrote files"

    if "api" in h:
        monkeypatch.chdir(tmp_path)
        call = API_LOADERS.get(h["api"]) or (lambda: eval(h["api"], {"ccsim": ccsim}))
        with pytest.raises(ccsim.CcsimError) as info:
            call()
        want = h.get("api-error", h["expect-stderr"][len("error: "):])
        assert str(info.value) == want
        assert sorted(os.listdir(tmp_path)) == before, "a failing call wrote files"
