"""CCIX on VC1 and PCIe on VC0 sharing one link (CCIX §II; a what-if):
``ccsim reproduce ccix-vc-sharing --quick`` from the CLI and the API, the
sharing visible in the numbers (VC1 credits throttle CCIX, never the DMA on
VC0; an ATS round trip waits behind the shared lanes), and the workload's
knobs from Python."""

from __future__ import annotations

import json

import ccsim
from conftest import run_cli


def test_quick_reproduce_from_the_cli(tmp_path):
    r = run_cli("reproduce", "ccix-vc-sharing", "--quick", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) is not None
    report = (tmp_path / "ccix-vc-sharing" / "report.md").read_text()
    assert "ccix-vc-sharing" in report


def test_vc1_credits_throttle_ccix_but_not_the_dma():
    df = ccsim.reproduce("ccix-vc-sharing", quick=True).df
    at = {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}
    # One credit: a data response per credit round trip (~0.2 GB/s);
    # 32 credits: the reads' own window limits (~1 GB/s).
    assert at[("read_throughput_dma", 1)] < at[("read_throughput_dma", 32)] / 3
    assert at[("read_latency_dma", 1)] > 5 * at[("read_latency_dma", 32)]
    # VC0's DMA keeps its ~12 GB/s whatever VC1's credits are.
    assert at[("dma_throughput", 1)] >= at[("dma_throughput", 32)] > 10.0
    # The DMA on VC0 slows CCIX reads a little (a completion ahead at most).
    for x in (1, 4, 32):
        assert at[("read_latency_quiet", x)] < at[("read_latency_dma", x)] < 1.1 * at[("read_latency_quiet", x)]
    # ATS waits behind the shared lanes: above its idle 617 ns.
    assert all(617.0 < at[("ats_dma", x)] < 700.0 for x in (1, 4, 32))


def test_dma_writes_on_vc0_share_the_up_wire_with_ccix_requests():
    df = ccsim.reproduce("ccix-vc-sharing", quick=True).df
    at = {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}
    # TaPaSCo's posted writes fill the device-to-host wire (~12.7 GB/s)
    # whatever VC1's credits are.
    assert all(at[("dma_write_throughput", x)] > 10.0 for x in (1, 4, 32))
    # The CCIX read requests wait behind at most a write or so (1:1
    # arbitration): slower than on a quiet VC0, by less than 10%.
    x = 32
    assert at[("read_latency_quiet", x)] < at[("read_latency_dma_write", x)] < 1.1 * at[("read_latency_quiet", x)]
    m = ccsim.run_point("ccix-vc-sharing", "dma_write_throughput", 32)["metrics"]
    assert m["up_utilization"] > 0.5 > m["down_utilization"]
