"""Shared helpers: run the ``ccsim`` command the way a user does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"


def ccsim_command() -> list:
    """The installed ``ccsim`` console script next to this interpreter, or
    ``python -m ccsim`` when the scripts directory is not there."""
    exe = shutil.which("ccsim", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "ccsim"]


def run_cli(*args: str, cwd=None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    return subprocess.run(ccsim_command() + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


ROOT = Path(__file__).resolve().parents[2]


def mutant_platform(tmp_path: Path, spec: str, platform: str, old: str, new: str) -> Path:
    """A copy of ``platforms/<platform>.toml`` whose systems run a copy of
    ``protocols/<spec>.toml`` with ``old`` replaced by ``new`` (once)."""
    text = (ROOT / "protocols" / f"{spec}.toml").read_text()
    assert old in text, old
    (tmp_path / "mutant.toml").write_text(text.replace(old, new, 1))
    plat = (ROOT / "platforms" / f"{platform}.toml").read_text()
    plat = plat.replace(f'protocol = "{spec}"', f'protocol = "{tmp_path / "mutant.toml"}"')
    path = tmp_path / "platform.toml"
    path.write_text(plat)
    return path


def first_failing_seed(args, seeds: int = 20):
    """The first of ``seeds`` runs of ``ccsim <args> --seed S`` that does not
    exit 0, or None."""
    for seed in range(seeds):
        r = run_cli(*args, "--seed", str(seed))
        if r.returncode != 0:
            return r, seed
    return None, None
