"""Perfetto timelines of simulated points (``ccsim reproduce NAME --trace``).

A point run with ``trace=True`` returns, besides the Chrome JSON, its
``trace_events``: every message the links carried and the components'
notes (``crates/kernel/src/trace.rs``): the protocol machines' state
transitions (the CPU's LLC, each DCU of the directory controller) and the
cores' operations. :class:`Timeline` turns the points into one Perfetto
trace (protobuf ``TrackEvent`` packets built with the ``perfetto``
package's own generated messages and its ``TraceProtoBuilder``):

* one process per point (``cckit-rpc null_rpc percentile=50``);
* under it one track per agent unit: ``system.cpu.core0`` (each operation
  from issue to completion), ``system.cpu.llc0`` (the LLC's transitions),
  ``system.dc.dcu3`` (each DC event: from its arrival at the DCU to the end
  of its processing), ``system.dc.app0`` (the transitions of the FPGA-side
  machine that the device drives) and ``system.dc.device0`` (each device
  operation, issue to completion), and per link direction
  (``system.cpu.eci0--system.dc.eci0.a_to_b``: each message from sent to
  arrival), named as the simulation's statistics are;
* per agent unit a ``.transactions`` track: each coherent transaction, a
  line's stay in transient states at that agent (from the transition that
  leaves a stable state to the one that returns to one), as a slice, and
  as a *flow* from the request through every message and remote transition
  of that line in between to the completing transition;
* every slice and instant carries its numbers as arguments: ``line``,
  ``address``, ``from`` and ``to`` states, ``sent`` messages, ``states``
  (a transaction's path, ``I → IS_D → S``), ``messages``, ``dur_ps``.

Perfetto counts time in nanoseconds; the simulator in picoseconds. Slices
begin at ``floor(start_ps / 1000)`` and end at ``floor(end_ps / 1000)`` ns,
and keep their exact duration in the ``dur_ps`` argument. Slices of one
track that overlap in time (pipelined messages, overlapping transactions)
go on numbered sibling tracks (``... #2``), as Perfetto nests the slices of
a track.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .errors import NotAvailableError

_LINE = re.compile(r"\bline=(0x[0-9a-fA-F]+)")

#: The packet sequence every packet of the trace is written on.
SEQUENCE_ID = 0x5EC


def require() -> Any:
    """The ``perfetto`` package's trace protos, or :class:`NotAvailableError`."""
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except ImportError:
        raise NotAvailableError("--trace writes Perfetto traces with the `perfetto` package, which is not "
                                "installed: pip install 'ccsim[trace]'") from None
    return perfetto_trace_pb2


def _ns(ps: int) -> int:
    return ps // 1000


class _Event:
    """A slice or an instant before it becomes packets."""

    __slots__ = ("track", "start", "end", "name", "args", "flows", "terminating", "instant", "rank")

    def __init__(self, track: int, start: int, end: int, name: str, args: Dict[str, Any], instant: bool) -> None:
        self.track, self.start, self.end, self.name, self.args = track, start, end, name, args
        self.flows: List[int] = []
        self.terminating: List[int] = []
        self.instant = instant
        #: Among events at one nanosecond: transactions (0) before the rest
        #: (1), so that a flow leaves the transaction for its request.
        self.rank = 1


class Timeline:
    """Points to one Perfetto trace. :meth:`add_point` each point (with its
    ``trace_events``), then :meth:`write` or :meth:`serialize`."""

    def __init__(self) -> None:
        self.pb = require()
        self._uuid = 0
        self._flow = 0
        self._tracks: List[Tuple[int, Optional[int], str, Optional[int]]] = []  # uuid, parent, name, pid
        self._events: List[_Event] = []
        self.points: List[Dict[str, Any]] = []

    # -- tracks --------------------------------------------------------------

    def _new_track(self, name: str, parent: Optional[int], pid: Optional[int] = None) -> int:
        self._uuid += 1
        self._tracks.append((self._uuid, parent, name, pid))
        return self._uuid

    # -- points --------------------------------------------------------------

    def add_point(self, title: str, trace_events: str) -> Dict[str, Any]:
        """Adds one point (``title`` names its process) from its
        ``trace_events`` JSON; returns what it added (counts by kind)."""
        doc = json.loads(trace_events)
        pid = len(self.points) + 1
        root = self._new_track(title, None, pid)
        comps: List[str] = doc["components"]
        links: List[Dict[str, Any]] = doc["links"]
        groups: Dict[Any, int] = {}
        lanes: Dict[str, List[Tuple[int, int, bool]]] = {}

        def group(name: str) -> int:
            if name not in groups:
                groups[name] = self._new_track(name, root)
            return groups[name]

        def lane(base: str, parent: int, start: int, end: int) -> int:
            """A track of ``base``'s lanes free at ``start`` (a new one if none)."""
            ls = lanes.setdefault(base, [])
            zero = end == start
            for i, (uuid, last_end, last_zero) in enumerate(ls):
                if last_end < start or (last_end == start and not zero and not last_zero):
                    ls[i] = (uuid, end, zero)
                    return uuid
            uuid = self._new_track(base if not ls else f"{base} #{len(ls) + 1}", parent)
            ls.append((uuid, end, zero))
            return uuid

        counts = {"messages": 0, "operations": 0, "transitions": 0, "transactions": 0, "open_transactions": 0}
        # Messages, one slice each on their link direction.
        by_line: Dict[str, List[Tuple[int, int, int, int, _Event]]] = {}
        for sent, arrives, src, dst, link, vc, nbytes, label in sorted(doc["messages"], key=lambda m: (m[0], m[1])):
            ln = links[link]
            direction = "a_to_b" if src == ln["a"] else "b_to_a"
            base = f"{ln['name']}.{direction}"
            m = _LINE.search(label)
            args: Dict[str, Any] = {"from": comps[src], "to": comps[dst], "vc": ln["vcs"][vc] if vc < len(ln["vcs"])
                                    else str(vc), "bytes": nbytes, "label": label, "dur_ps": arrives - sent}
            if m:
                args["line"] = m.group(1)
            e = _Event(lane(base, group(ln["name"]), sent, arrives), sent, arrives, label.split(" ", 1)[0], args,
                       instant=False)
            self._events.append(e)
            counts["messages"] += 1
            if m:
                by_line.setdefault(m.group(1), []).append((sent, arrives, src, dst, e))
        # Notes: operations and transitions on their unit's track.
        notes = sorted(doc["notes"], key=lambda n: (n["start"], n["end"]))
        transitions: Dict[str, List[Tuple[int, int, _Event, Dict[str, Any]]]] = {}
        open_at: Dict[Tuple[int, str, str, int], Tuple[Dict[str, Any], _Event, List[Dict[str, Any]]]] = {}
        for n in notes:
            args = dict(n["args"])
            kind = args.pop("track", "unit")
            comp = comps[n["component"]]
            base = f"{comp}.{kind}{n['unit']}"
            line = None if n["line"] is None else f"{n['line']:#x}"
            if line is not None:
                args = {"line": line, **args}
            dur = n["end"] - n["start"]
            args["dur_ps"] = dur
            if n["kind"] == "op":
                args["kind"] = n["name"]
                e = _Event(lane(base, group(comp), n["start"], n["end"]), n["start"], n["end"], n["name"], args,
                           instant=False)
                self._events.append(e)
                counts["operations"] += 1
                continue
            label = f"{n['name']}: {args.get('from', '?')} → {args.get('to', '?')}"
            e = _Event(lane(base, group(comp), n["start"], n["end"]), n["start"], n["end"], label, args,
                       instant=dur == 0)
            self._events.append(e)
            counts["transitions"] += 1
            if line is None:
                continue
            transitions.setdefault(line, []).append((n["start"], n["component"], e, n))
            key = (n["component"], kind, line, n["unit"])
            if n["opens"]:
                open_at[key] = (n, e, [n])
            elif key in open_at:
                open_at[key][2].append(n)
                if n["closes"]:
                    first, first_e, path = open_at.pop(key)
                    self._transaction(comp, base, group(comp), lane, first, first_e, n, e, path,
                                      by_line.get(line, []), transitions.get(line, []))
                    counts["transactions"] += 1
        counts["open_transactions"] = len(open_at)
        self.points.append({"title": title, **counts})
        return counts

    def add_counterexample(self, title: str, violation: Dict[str, Any]) -> Dict[str, Any]:
        """Adds a protocol check's counterexample (a violation of
        ``ccsim.protocol.check``) as a message sequence: one track per agent,
        step ``k`` of the trace at ``k`` µs (the checker's steps are untimed),
        a local step as a slice on its agent, a message as a slice on its
        sender with a flow to its receipt on the receiver, and the violation
        (property, message, final state) as an instant at the end."""
        steps: List[str] = violation["trace"]
        flows_before = self._flow
        pid = len(self.points) + 1
        root = self._new_track(title, None, pid)
        agents: Dict[str, int] = {}

        def agent(name: str) -> int:
            if name not in agents:
                agents[name] = self._new_track(name, root)
            return agents[name]

        step_ps, busy_ps = 1_000_000, 900_000
        for k, text in enumerate(steps):
            head, _, label = text.partition(": ")
            src, _, dst = (x.strip() for x in head.partition("->"))
            t0 = k * step_ps
            args = {"step": k + 1, "from": src, "to": dst, "dur_ps": busy_ps}
            e = _Event(agent(src), t0, t0 + busy_ps, label, args, instant=False)
            self._events.append(e)
            if dst and dst != src:
                self._flow += 1
                e.flows.append(self._flow)
                r = _Event(agent(dst), t0 + busy_ps, t0 + busy_ps, f"receive {label}", dict(args), instant=True)
                r.terminating.append(self._flow)
                self._events.append(r)
        end = len(steps) * step_ps
        final = {"property": violation.get("property", ""), "message": violation.get("message", ""),
                 "final_state": violation.get("final_state", ""), "steps": len(steps)}
        self._events.append(_Event(agent("violation"), end, end, str(final["property"]), final, instant=True))
        counts = {"steps": len(steps), "messages": self._flow - flows_before}
        self.points.append({"title": title, "transactions": 0, **counts})
        return counts

    def _transaction(self, comp: str, base: str, parent: int, lane, first: Dict[str, Any], first_e: _Event,
                     last: Dict[str, Any], last_e: _Event, path: List[Dict[str, Any]],
                     messages: List[Tuple[int, int, int, int, _Event]],
                     transitions: List[Tuple[int, int, _Event, Dict[str, Any]]]) -> None:
        """One transaction of ``comp`` on a line: a slice from its opening
        to its closing transition, and a flow through the messages and the
        other agents' transitions of that line in between."""
        t0, t1 = first["start"], last["start"]
        fa, la = dict(first["args"]), dict(last["args"])
        states = [fa.get("from", "?")] + [dict(n["args"]).get("to", "?") for n in path]
        members = [e for (s, a, src, dst, e) in messages
                   if s >= t0 and a <= t1 and first["component"] in (src, dst)]
        members += [e for (s, c, e, n) in transitions if t0 < s < t1 and e is not first_e and e is not last_e]
        members.sort(key=lambda e: e.start)
        names = [e.name for e in members if "vc" in e.args]
        name = first["name"] + (f" ({fa['sent']})" if fa.get("sent") else "")
        args = {"line": f"{first['line']:#x}", "address": fa.get("address", ""), "states": " → ".join(states),
                "events": ", ".join(n["name"] for n in path), "messages": ", ".join(names),
                "opened_by": first["name"], "closed_by": last["name"], "dur_ps": t1 - t0}
        e = _Event(lane(f"{base}.transactions", parent, t0, t1), t0, t1, name, args, instant=False)
        e.rank = 0
        self._events.append(e)
        self._flow += 1
        fid = self._flow
        e.flows.append(fid)
        for m in members:
            m.flows.append(fid)
        last_e.terminating.append(fid)

    # -- output --------------------------------------------------------------

    def _annotations(self, ev: Any, args: Dict[str, Any]) -> None:
        for k, v in args.items():
            a = ev.debug_annotations.add()
            a.name = k
            if isinstance(v, bool):
                a.bool_value = v
            elif isinstance(v, int):
                a.int_value = v
            else:
                a.string_value = str(v)

    def serialize(self) -> bytes:
        """The trace as bytes (a serialized ``perfetto.protos.Trace``)."""
        from perfetto.trace_builder.proto_builder import TraceProtoBuilder

        pb = self.pb
        b = TraceProtoBuilder()
        for uuid, parent, name, pid in self._tracks:
            p = b.add_packet()
            p.trusted_packet_sequence_id = SEQUENCE_ID
            d = p.track_descriptor
            d.uuid = uuid
            if pid is not None:
                d.process.pid = pid
                d.process.process_name = name
            else:
                d.name = name
                d.parent_uuid = parent
        # (ns, order, n): ends before instants before begins at one
        # nanosecond, so that slices of a lane that touch stay apart.
        out: List[Tuple[int, int, int, int, _Event, int]] = []
        for i, e in enumerate(self._events):
            s, t = _ns(e.start), _ns(e.end)
            if e.instant:
                out.append((s, 1, e.rank, i, e, pb.TrackEvent.TYPE_INSTANT))
            elif s == t:
                out.append((s, -1, e.rank, i, e, pb.TrackEvent.TYPE_SLICE_BEGIN))
                out.append((t, -1, e.rank, i, e, pb.TrackEvent.TYPE_SLICE_END))
            else:
                out.append((s, 2, e.rank, i, e, pb.TrackEvent.TYPE_SLICE_BEGIN))
                out.append((t, 0, e.rank, i, e, pb.TrackEvent.TYPE_SLICE_END))
        out.sort(key=lambda r: (r[0], r[1], r[2], r[3], r[5]))
        for ts, _, _, _, e, typ in out:
            p = b.add_packet()
            p.trusted_packet_sequence_id = SEQUENCE_ID
            p.timestamp = ts
            te = p.track_event
            te.type = typ
            te.track_uuid = e.track
            if typ != pb.TrackEvent.TYPE_SLICE_END:
                te.name = e.name
                self._annotations(te, e.args)
                te.flow_ids.extend(e.flows)
            if typ == pb.TrackEvent.TYPE_INSTANT or (typ == pb.TrackEvent.TYPE_SLICE_BEGIN and not e.instant):
                te.terminating_flow_ids.extend(e.terminating)
        if b.trace.packet:
            # The sequence starts clean (no interned state is used).
            b.trace.packet[0].sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        return b.serialize()

    def write(self, path: "str | Path") -> Path:
        """Writes the trace to ``path``."""
        path = Path(path)
        path.write_bytes(self.serialize())
        return path


def check_output(path: "str | Path") -> Path:
    """``path`` as a place to write a trace, or :class:`ccsim.UsageError`
    naming it (checked before anything runs)."""
    from .errors import UsageError

    path = Path(path)
    if path.is_dir():
        raise UsageError(f"--trace {path}: is a directory (give a file name, like trace.perfetto-trace)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--trace {path}: no such directory {parent}")
    return path


def titles(experiment: str, x_name: str, points: Iterable[Dict[str, Any]]) -> List[str]:
    """The process name of each point: ``experiment series x_name=x``."""
    out = []
    for p in points:
        x = p["x"]
        xs = str(int(x)) if float(x).is_integer() else repr(float(x))
        out.append(f"{experiment} {p['series']} {x_name}={xs}")
    return out
