"""Perfetto timelines (``ccsim reproduce cckit-rpc --quick --trace PATH``).

The trace is decoded with the protobuf messages of the ``perfetto`` package
and checked against the simulation's own statistics, point by point: one
slice per core operation with the durations of ``system.cpu.latency_ps``,
one CPU transaction per miss (``system.cpu.misses``), one DC slice per DC
event (``system.dc.events``), one slice per message of each link direction
with its bytes (``...a_to_b.messages``, ``.bytes``), and every transaction a
flow through its messages. The same checks run as SQL in Perfetto's own
trace processor when its ``trace_processor_shell`` binary can be had (see
:func:`_trace_processor_binary`).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
from pathlib import Path

import pytest

import ccsim

from conftest import run_cli

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb  # the test extra has perfetto

TYPE = pb.TrackEvent


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(trace path, {process name: the point's stats}) of the acceptance
    command."""
    d = tmp_path_factory.mktemp("timeline")
    path = d / "rpc.perfetto-trace"
    r = run_cli("reproduce", "cckit-rpc", "--quick", "--no-progress", "--trace", path, "--out", d / "results")
    assert r.returncode == 0, r.stderr
    assert f"-> {path}" in r.stdout
    stats = {}
    for line in (d / "results" / "cckit-rpc" / "points.jsonl").read_text().splitlines():
        p = json.loads(line)
        stats[f"cckit-rpc {p['series']} percentile={int(p['x'])}"] = p["stats"]
    assert len(stats) == 2
    return path, stats


def _decode(path: Path):
    """Every slice and instant of the trace: (process, track, start ns, end
    ns, name, args, flow ids, terminating flow ids), and the track names."""
    trace = pb.Trace.FromString(path.read_bytes())
    names, parent, process = {}, {}, {}
    for p in trace.packet:
        if p.HasField("track_descriptor"):
            t = p.track_descriptor
            if t.HasField("process"):
                process[t.uuid] = t.process.process_name
            else:
                names[t.uuid], parent[t.uuid] = t.name, t.parent_uuid

    def proc(u):
        while u in parent:
            u = parent[u]
        return process[u]

    open_, out, last_ts = collections.defaultdict(list), [], 0
    for p in trace.packet:
        if not p.HasField("track_event"):
            continue
        assert p.timestamp >= last_ts, "packets are in time order"
        last_ts = p.timestamp
        e = p.track_event
        args = {a.name: a.int_value if a.HasField("int_value") else a.string_value for a in e.debug_annotations}
        track = names[e.track_uuid].split(" #")[0]
        if e.type == TYPE.TYPE_SLICE_BEGIN:
            open_[e.track_uuid].append((p.timestamp, e.name, args, list(e.flow_ids), list(e.terminating_flow_ids)))
        elif e.type == TYPE.TYPE_SLICE_END:
            ts, name, args, flows, term = open_[e.track_uuid].pop()
            out.append((proc(e.track_uuid), track, ts, p.timestamp, name, args, flows, term))
        else:
            assert e.type == TYPE.TYPE_INSTANT
            out.append((proc(e.track_uuid), track, p.timestamp, p.timestamp, e.name, args, list(e.flow_ids),
                        list(e.terminating_flow_ids)))
    assert not any(open_.values()), "every slice ends"
    return out, set(names.values())


def test_the_trace_matches_the_simulations_statistics(run):
    path, stats = run
    events, tracks = _decode(path)
    assert {"system.cpu.core0", "system.cpu.llc0", "system.cpu.llc0.transactions",
            "system.cpu.eci0--system.dc.eci0.a_to_b", "system.cpu.eci1--system.dc.eci1.b_to_a"} <= tracks
    assert any(t.startswith("system.dc.dcu") for t in tracks)
    assert {"system.dc.app0", "system.dc.app0.transactions", "system.dc.device0"} <= tracks  # the RPC server
    for proc, st in stats.items():
        mine = [e for e in events if e[0] == proc]
        by_track = collections.defaultdict(list)
        for e in mine:
            by_track[e[1]].append(e)
        # Core operations: the latency histogram, slice for operation.
        ops = by_track["system.cpu.core0"]
        durs = [e[5]["dur_ps"] for e in ops]
        assert len(ops) == st["system.cpu.latency_ps.count"] == 4008
        assert min(durs) == st["system.cpu.latency_ps.min"] and max(durs) == st["system.cpu.latency_ps.max"]
        assert sum(durs) / len(durs) == pytest.approx(st["system.cpu.latency_ps.mean"], rel=1e-12)
        assert all(abs((e[3] - e[2]) - e[5]["dur_ps"] / 1000) < 1 for e in ops)  # ns floors of exact ps
        # CPU transactions: one per miss, from the request to the response.
        tx = by_track["system.cpu.llc0.transactions"]
        assert len(tx) == st["system.cpu.misses"] == 1003
        for e in tx:
            a = e[5]
            assert int(a["address"], 16) == int(a["line"], 16) * 128
            states = a["states"].split(" → ")
            assert states[0] in ("I", "S", "E", "M") and states[-1] in ("I", "S", "E", "M") and len(states) >= 3
            msgs = a["messages"].split(", ")
            assert msgs[0].startswith("R") and len(msgs) >= 2, a  # a request first, then its response
            assert len(e[6]) == 1, "a transaction starts one flow"
        assert max(e[5]["dur_ps"] for e in tx) <= st["system.cpu.latency_ps.max"]
        # The flow: the transaction's messages carry its id, and its last
        # transition ends it.
        on_links = collections.Counter(f for e in mine if ".eci" in e[1] for f in e[6])
        ends = collections.Counter(f for e in mine for f in e[7])
        for e in tx:
            fid = e[6][0]
            assert on_links[fid] == len(e[5]["messages"].split(", "))
            assert ends[fid] == 1
        # The DC: one slice or instant per event its DCUs processed.
        dc = [e for t, es in by_track.items() if t.startswith("system.dc.dcu") and "transactions" not in t for e in es]
        assert len(dc) == st["system.dc.events"] == 4010
        assert all(" → " in e[4] and e[5]["from"] and e[5]["to"] for e in dc)
        # The device: every RPC fetches the request line (a clean-invalidate)
        # and grants the signal line; each device operation is a slice.
        dev = collections.Counter(e[4] for e in by_track["system.dc.device0"])
        calls = st["invoke.verified"]
        assert dev and min(dev.values()) >= calls, dev
        # Links: one slice per message, with its bytes.
        for name in ("system.cpu.eci0--system.dc.eci0", "system.cpu.eci1--system.dc.eci1"):
            for d in ("a_to_b", "b_to_a"):
                msgs = by_track[f"{name}.{d}"]
                assert len(msgs) == st[f"{name}.{d}.messages"] > 1000
                assert sum(e[5]["bytes"] for e in msgs) == st[f"{name}.{d}.bytes"]
                assert all(e[5]["dur_ps"] > 0 and e[5]["label"].startswith(e[4]) for e in msgs)


def test_trace_bad_inputs_and_the_api(tmp_path):
    r = run_cli("reproduce", "cckit-rpc", "--quick", "--trace", tmp_path / "no" / "t.pftrace", "--out", tmp_path)
    assert r.returncode == 2
    assert r.stderr == f"error: --trace {tmp_path / 'no' / 't.pftrace'}: no such directory {tmp_path / 'no'}\n"
    assert not list(tmp_path.iterdir()), "a failing command wrote files"
    # The API: one point, straight to a file.
    tl = ccsim.timeline.Timeline()
    p = ccsim.run_point("pio-invocation-eci", "e_return", 50, trace=True)
    added = tl.add_point("one", p["trace_events"])
    assert added["transactions"] >= p["stats"]["system.cpu.misses"] > 0
    tl.write(tmp_path / "one.pftrace")
    events, _ = _decode(tmp_path / "one.pftrace")
    assert sum(e[1] == "system.cpu.core0" for e in events) == p["stats"]["system.cpu.latency_ps.count"]
    assert sum(e[1].endswith(".transactions") for e in events) == added["transactions"]
    assert sum("vc" in e[5] for e in events) == added["messages"]


def _trace_processor_binary():
    """A trace_processor_shell this machine has: $CCSIM_TRACE_PROCESSOR, one
    on PATH, or the one the perfetto package cached on an earlier download."""
    env = os.environ.get("CCSIM_TRACE_PROCESSOR")
    if env:
        return env
    for name in ("trace_processor_shell", "trace_processor"):
        found = shutil.which(name)
        if found:
            return found
    cache = Path.home() / ".local" / "share" / "perfetto" / "prebuilts"
    cached = sorted(p for p in cache.glob("trace_processor_shell*") if not p.name.endswith(".tmp"))
    return str(cached[-1]) if cached else None


def test_sql_in_perfettos_trace_processor(run):
    binary = _trace_processor_binary()
    if binary is None:
        pytest.skip("no trace_processor_shell: the perfetto package downloads it from Perfetto's artifact host "
                    "at first use, which this machine cannot reach, and no package registry it reaches ships "
                    "it; set CCSIM_TRACE_PROCESSOR to a binary to run the SQL checks")
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    path, stats = run
    tp = TraceProcessor(trace=str(path), config=TraceProcessorConfig(bin_path=binary))
    try:
        def q(sql):
            return list(tp.query(sql))

        total = lambda key: sum(s[key] for s in stats.values())  # noqa: E731
        rows = q("""
            select count(*) as n, sum(extract_arg(s.arg_set_id, 'debug.dur_ps')) as ps,
                   min(extract_arg(s.arg_set_id, 'debug.dur_ps')) as lo,
                   max(extract_arg(s.arg_set_id, 'debug.dur_ps')) as hi,
                   max(abs(s.dur - extract_arg(s.arg_set_id, 'debug.dur_ps') / 1000.0)) as skew
            from slice s join track t on s.track_id = t.id
            where t.name like 'system.cpu.core0%'""")
        r = rows[0]
        assert r.n == total("system.cpu.latency_ps.count")
        assert r.lo == min(s["system.cpu.latency_ps.min"] for s in stats.values())
        assert r.hi == max(s["system.cpu.latency_ps.max"] for s in stats.values())
        assert r.ps == pytest.approx(sum(s["system.cpu.latency_ps.mean"] * s["system.cpu.latency_ps.count"]
                                         for s in stats.values()), rel=1e-12)
        assert r.skew < 1
        n = q("""select count(*) as n from slice s join track t on s.track_id = t.id
                 where t.name like 'system.cpu.llc0.transactions%'""")[0].n
        assert n == total("system.cpu.misses")
        n = q("""select count(*) as n from slice s join track t on s.track_id = t.id
                 where t.name like 'system.dc.dcu%' and t.name not like '%transactions%'""")[0].n
        assert n == total("system.dc.events")
        for link in ("system.cpu.eci0--system.dc.eci0", "system.cpu.eci1--system.dc.eci1"):
            for d in ("a_to_b", "b_to_a"):
                r = q(f"""select count(*) as n, sum(extract_arg(s.arg_set_id, 'debug.bytes')) as b
                          from slice s join track t on s.track_id = t.id
                          where t.name like '{link}.{d}%'""")[0]
                assert (r.n, r.b) == (total(f"{link}.{d}.messages"), total(f"{link}.{d}.bytes"))
        # Every CPU transaction starts a flow into its request message.
        n = q("""select count(distinct f.slice_out) as n from flow f join slice s on f.slice_out = s.id
                 join track t on s.track_id = t.id where t.name like 'system.cpu.llc0.transactions%'""")[0].n
        assert n == total("system.cpu.misses")
    finally:
        tp.close()


def test_a_protocol_counterexample_as_a_message_sequence(tmp_path):
    path = tmp_path / "cx.perfetto-trace"
    r = run_cli("protocol", "check", "invocation-shared-dcu", "--trace", path)
    assert r.returncode == 1, r.stderr
    assert f"counterexample timeline -> {path}" in r.stdout
    v = ccsim.protocol.check("invocation-shared-dcu").violations[0]
    events, tracks = _decode(path)
    agents = {s.split(" -> ")[0] for s in v["trace"]} | {s.split(" -> ")[1].split(":")[0] for s in v["trace"]}
    assert agents | {"violation"} == tracks
    steps = sorted((e for e in events if not e[4].startswith("receive ") and e[1] != "violation"),
                   key=lambda e: e[5]["step"])
    assert [f"{e[5]['from']} -> {e[5]['to']}: {e[4]}" for e in steps] == v["trace"]
    assert [e[2] for e in steps] == [1000 * k for k in range(len(v["trace"]))]  # step k at k µs
    sends = [e for e in steps if e[5]["from"] != e[5]["to"]]
    receipts = {e[7][0]: e for e in events if e[4].startswith("receive ")}
    assert len(sends) == len(receipts) >= 5
    for e in sends:  # each message flows from its sender to its receipt on the receiver
        got = receipts[e[6][0]]
        assert (got[1], got[4]) == (e[5]["to"], f"receive {e[4]}")
    (end,) = [e for e in events if e[1] == "violation"]
    assert end[4] == v["property"] == "deadlock"
    assert end[5]["final_state"] == v["final_state"] and end[5]["steps"] == len(v["trace"])
    # A verified protocol has no counterexample: nothing is written.
    r = run_cli("protocol", "check", "msi-dma", "--trace", tmp_path / "none.perfetto-trace")
    assert r.returncode == 0, r.stderr
    assert "no violation" in r.stderr and not (tmp_path / "none.perfetto-trace").exists()
