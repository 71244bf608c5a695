"""Property-based fuzzing of the Python-facing loaders and the CLI's
argument handling (hypothesis): whatever a user types or a file holds,
ccsim answers with a result or a one-line ``ccsim`` error, never another
exception.

The default budget is small; the slow tier raises it
(``HYPOTHESIS_PROFILE=slow python -m pytest tests/python/test_fuzz.py``,
BENCHMARKS.md "Fuzzing").
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ccsim
from ccsim import cli

settings.register_profile("default", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture])
# The slow tier: 20,000 examples per property, or HYPOTHESIS_MAX_EXAMPLES
# (the one-CPU-hour run of BENCHMARKS.md).
settings.register_profile("slow", max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "20000")),
                          deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ODD = st.one_of(
    st.text(max_size=24),
    st.sampled_from(["-1", "0", "1e400", "nan", "inf", "99999999999999999999999", "", "true", "[]", "\xff"]),
)
KEYS = st.one_of(
    st.from_regex(r"[a-z_]{1,12}\.[a-z_]{1,16}", fullmatch=True),
    st.sampled_from(["xbar.hop_ns", "net.credits", "cache.occupancy_ns", "directory.occupancy_ns"]),
    st.text(max_size=16),
)


def one_line(e: Exception) -> None:
    assert isinstance(e, ccsim.CcsimError), repr(e)
    assert "\n" not in str(e), str(e)


@given(data=st.binary(max_size=2000))
def test_any_platform_file_loads_or_fails_in_one_line(tmp_path, data):
    f = tmp_path / "fuzz.toml"
    f.write_bytes(data)
    try:
        ccsim.Platform.load(str(f))
    except Exception as e:  # noqa: BLE001 - the property is about the type
        one_line(e)


@given(key=KEYS, value=ODD)
def test_any_override_applies_or_fails_in_one_line(key, value):
    try:
        ccsim.Platform.load("msi-dma", overrides={key: value})
    except Exception as e:  # noqa: BLE001
        one_line(e)


@given(args=st.lists(st.one_of(ODD, st.sampled_from(
    ["--seed", "--ops", "--lines", "--set", "--system", "--think-ns", "--json", "--no-checks"])), max_size=6))
def test_any_simulate_arguments_answer_0_or_2(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(["simulate", "msi-dma", "--ops", "20", *args])
        except SystemExit as e:  # --help exits through argparse
            code = e.code
    assert code in (0, 2), (args, code, err.getvalue())
    if code == 2:
        lines = err.getvalue().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err.getvalue()


@pytest.mark.parametrize("name", ccsim.platforms())
def test_shipped_platforms_load(name):
    ccsim.Platform.load(name)
