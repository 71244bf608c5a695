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
