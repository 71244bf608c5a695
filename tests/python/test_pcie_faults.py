"""Faults in the PCIe fabric as a user meets them: LCRC replays show in the
latency and in the point's statistics, and a hung DMA engine is a
``ccsim.SimulationError`` (CLI: exit 2, one line) carrying the watchdog's
report, never a number and never a hang."""

from __future__ import annotations

import os

import pytest

import ccsim
from conftest import run_cli as cli


def test_replays_cost_time_and_are_reported():
    # Without the driver's completion hand-off, whose poll-thread wake-up
    # (~8 us on Enzian) runs beside the DMA and would hide the replays.
    off = {"driver.handoff": False}
    clean = ccsim.run_point("pio-pcie", "xdma_enzian_poll", 16384, overrides=off)
    noisy = ccsim.run_point("pio-pcie", "xdma_enzian_poll", 16384, overrides={**off, "pcie.bit_error_rate": 2e-5})
    assert not any("faults" in k for k in clean["stats"])
    assert noisy["stats"]["system.pcie.faults.replays"] > 0
    assert noisy["metrics"]["latency_ns"] > clean["metrics"]["latency_ns"]


def test_a_hung_engine_is_an_error_with_the_report():
    stuck = {"dma.stuck_after_doorbells": 1, "driver.timeout_us": 200.0}
    with pytest.raises(ccsim.SimulationError) as info:
        ccsim.run_point("pio-pcie", "xdma_enzian_poll", 64, overrides=stuck)
    msg = str(info.value)
    assert msg.startswith("xdma_invoke at message_bytes=64: xdma_invoke: dma_driver: C2H transfer of 1 descriptors "
                          "(64 bytes): timed out after 200.0 us"), msg
    for part in ("core: at op", "PollU32", "HUNG: ignored the doorbell of channel C2H",
                 "dma channel C2H: busy", "pcie link down", "messages between components"):
        assert part in msg, part
    assert info.value.exit_code == 2


def test_the_cli_exits_2_with_one_line_and_writes_no_points(tmp_path):
    r = cli("reproduce", "pio-pcie", "--quick", "--no-progress", "--out", tmp_path / "out",
            "--set", "dma.stuck_after_doorbells=1", "--set", "driver.timeout_us=200")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: xdma_invoke at message_bytes=16: "), r.stderr
    assert "HUNG" in lines[0]
    written = [f for _, _, fs in os.walk(tmp_path) for f in fs if f.endswith((".parquet", ".png", "summary.json"))]
    assert written == []
