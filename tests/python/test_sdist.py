"""The source distribution is complete: build it with ``maturin sdist``,
``pip install`` it into a fresh virtual environment, and run the installed
``ccsim`` away from the source tree. The Rust build embeds ``platforms/``,
``experiments/`` and ``protocols/``, so a file missing from the sdist fails
the build, and a spec missing from the wheel fails the check below.

The new venv sees this interpreter's installed packages through a ``.pth``
file (after its own), so the runtime dependencies and the maturin build
backend need no network; ccsim itself is imported from the venv, which the
test asserts. Slow (a release build from scratch): ``python -m pytest -m slow``.
A missing tool is a failure, not a skip.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tarfile
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} exited {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def _maturin() -> list:
    exe = shutil.which("maturin", path=str(Path(sys.executable).parent)) or shutil.which("maturin")
    if exe is None:
        pytest.fail("maturin is not installed: pip install '.[test]' installs it")
    return [exe]


@pytest.mark.slow
def test_the_sdist_installs_into_a_fresh_venv_and_checks_a_shipped_protocol(tmp_path):
    dist = tmp_path / "dist"
    _run(_maturin() + ["sdist", "--out", dist], cwd=ROOT)
    (sdist,) = dist.glob("ccsim-*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
    for d in ("platforms", "experiments", "protocols"):
        shipped = {f"{d}/{p.name}" for p in (ROOT / d).glob("*.toml")}
        assert shipped and shipped <= members, f"missing from the sdist: {sorted(shipped - members)}"

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bin_dir / "python"
    purelib = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    parent = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]] + site.getsitepackages()
    (purelib / "zz_parent_env.pth").write_text("".join(f"{p}\n" for p in dict.fromkeys(parent)))

    _run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", sdist], cwd=tmp_path,
         timeout=3600)
    where = _run([py, "-c", "import ccsim, ccsim._native as n; print(ccsim.__file__); print(n.__file__)"],
                 cwd=tmp_path).stdout.split()
    assert all(Path(w).resolve().is_relative_to(env_dir.resolve()) for w in where), where

    r = subprocess.run([bin_dir / "ccsim", "protocol", "check", "eci-dc"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "eci-dc" in r.stdout and "verified" in r.stdout.lower(), r.stdout
    assert not r.stderr
