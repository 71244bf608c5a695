"""Build ccsim protocol specs in Python; emits the same TOML data the Rust
toolkit (`ccsim-protocol`) reads.

A spec describes a two-node coherence protocol plus a device-local agent:
channels, messages, the stable states and state-equations of the *generated*
agent (CCKit §4.2), and the hand-written tables of the *peer* and *local*
agents. Example::

    b = ProtocolBuilder("toy", "a toy", memory_at="generated", cache_at="peer")
    b.channel("REQ", "request", False, "peer", "generated", "requests")
    b.message("GET", "REQ", "read request")
    text = b.to_toml()

`build_eci_dc()` and `build_eci_cc()` rebuild the shipped specs; the test
suite asserts they equal `protocols/eci-dc.toml` and `protocols/eci-cc.toml`
after parsing both with `tomllib`.
"""

from __future__ import annotations

from typing import Any


def _q(s: str) -> str:
    """TOML basic string."""
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{out}"'


def _v(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        return _q(x)
    if isinstance(x, list):
        return "[" + ", ".join(_v(i) for i in x) + "]"
    raise TypeError(f"cannot encode {x!r} as TOML")


class _Table:
    """A hand-written agent table (peer or local)."""

    def __init__(self, name: str, description: str, initial: str) -> None:
        self.data: dict[str, Any] = {
            "name": name,
            "description": description,
            "initial": initial,
            "state": [],
            "event": [],
            "transition": [],
        }

    def state(self, name: str, description: str, access: str = "none", stable: bool = True) -> "_Table":
        """Declare a state; `access` is none, read or write."""
        self.data["state"].append(
            {"name": name, "access": access, "stable": stable, "description": description}
        )
        return self

    def event(self, name: str, description: str) -> "_Table":
        """Declare a local (non-message) event."""
        self.data["event"].append({"name": name, "description": description})
        return self

    def on(self, state: str, event: str, next: str, *actions: str) -> "_Table":
        """Add a row `(state, event) -> (next, actions)`."""
        self.data["transition"].append(
            {"state": state, "event": event, "next": next, "actions": list(actions)}
        )
        return self

    def stall(self, state: str, event: str) -> "_Table":
        """Add a stall row (requests only)."""
        self.data["transition"].append({"state": state, "event": event, "stall": True})
        return self


class ProtocolBuilder:
    """Collects a protocol spec and renders it as TOML (`to_toml`) or as the
    dictionary `tomllib` would return (`to_dict`)."""

    def __init__(self, name: str, description: str, memory_at: str, cache_at: str) -> None:
        self.protocol = {
            "name": name,
            "description": description,
            "memory_at": memory_at,
            "cache_at": cache_at,
        }
        self.channels: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.generated: dict[str, Any] = {}
        self.equations: list[dict[str, Any]] = []
        self.peer: _Table | None = None
        self.local: _Table | None = None
        self.check: dict[str, Any] = {}

    def channel(self, name: str, klass: str, data: bool, frm: str, to: str, description: str) -> "ProtocolBuilder":
        """Declare a virtual channel (`klass`: request, forward or response)."""
        self.channels.append(
            {"name": name, "class": klass, "data": data, "from": frm, "to": to, "description": description}
        )
        return self

    def message(self, name: str, channel: str, description: str) -> "ProtocolBuilder":
        """Declare a message on a channel."""
        self.messages.append({"name": name, "channel": channel, "description": description})
        return self

    def generated_agent(self, name: str, description: str, initial: str) -> "ProtocolBuilder":
        """Declare the agent whose machine is generated from equations."""
        self.generated = {"name": name, "description": description, "initial": initial, "state": []}
        return self

    def stable(self, name: str, home: str, remote: str, description: str, access: str = "none") -> "ProtocolBuilder":
        """Declare a stable state of the generated agent as a (home, remote) pair."""
        self.generated["state"].append(
            {"name": name, "home": home, "remote": remote, "access": access, "description": description}
        )
        return self

    def equation(
        self,
        name: str,
        start: tuple[str, str],
        receive: list[str],
        final: tuple[str, str],
        actions: list[list[str]] | None = None,
        on_complete: list[str] | None = None,
        kind: str = "conflict-free",
        description: str = "",
        reorder: bool = True,
    ) -> "ProtocolBuilder":
        """Add a state-equation: from (home, remote), receive messages, end in
        (home, remote), with per-message actions and completion actions."""
        eq: dict[str, Any] = {
            "name": name,
            "kind": kind,
            "home": start[0],
            "remote": start[1],
            "receive": list(receive),
            "actions": [list(a) for a in (actions or [[] for _ in receive])],
            "on_complete": list(on_complete or []),
            "final_home": final[0],
            "final_remote": final[1],
        }
        if not reorder:
            eq["reorder"] = False
        if description:
            eq["description"] = description
        self.equations.append(eq)
        return self

    def peer_table(self, name: str, description: str, initial: str) -> _Table:
        """Start the peer agent's table."""
        self.peer = _Table(name, description, initial)
        return self.peer

    def local_table(self, name: str, description: str, initial: str) -> _Table:
        """Start the device-local agent's table."""
        self.local = _Table(name, description, initial)
        return self.local

    def check_config(self, dcus: list[int], values: int = 2, max_in_flight: int = 2, application: str | None = None) -> "ProtocolBuilder":
        """Default checking configuration; `application="invocation"` checks
        the two-line invocation protocol on top."""
        self.check = {"dcus": list(dcus), "values": values, "max_in_flight": max_in_flight}
        if application:
            self.check["application"] = application
        return self

    def to_dict(self) -> dict[str, Any]:
        """The spec as the dictionary `tomllib.loads(self.to_toml())` returns."""
        if self.peer is None or self.local is None:
            raise ValueError("peer and local tables are required")
        d: dict[str, Any] = {
            "protocol": dict(self.protocol),
            "channel": self.channels,
            "message": self.messages,
            "generated": self.generated,
            "equation": self.equations,
            "peer": self.peer.data,
            "local": self.local.data,
        }
        if self.check:
            d["check"] = self.check
        return d

    def to_toml(self) -> str:
        """Render as TOML text."""
        d = self.to_dict()
        out: list[str] = []

        def table(header: str, fields: dict[str, Any]) -> None:
            out.append(header)
            for k, v in fields.items():
                if isinstance(v, list) and v and isinstance(v[0], dict):
                    continue
                out.append(f"{k} = {_v(v)}")
            out.append("")

        table("[protocol]", d["protocol"])
        for c in d["channel"]:
            table("[[channel]]", c)
        for m in d["message"]:
            table("[[message]]", m)
        table("[generated]", {k: v for k, v in d["generated"].items() if k != "state"})
        for s in d["generated"]["state"]:
            table("[[generated.state]]", s)
        for e in d["equation"]:
            table("[[equation]]", e)
        for role in ("peer", "local"):
            t = d[role]
            table(f"[{role}]", {k: v for k, v in t.items() if not isinstance(v, list)})
            for s in t["state"]:
                table(f"[[{role}.state]]", s)
            for e in t["event"]:
                table(f"[[{role}.event]]", e)
            for r in t["transition"]:
                table(f"[[{role}.transition]]", r)
        if "check" in d:
            table("[check]", d["check"])
        return "\n".join(out)


# ---------------------------------------------------------------------------
# The shipped ECI specs, rebuilt in Python.
# ---------------------------------------------------------------------------

U = "unlocked"
LK = "locked"


def _eci_channels(b: ProtocolBuilder, home: str, remote: str) -> None:
    """ECI's five virtual circuits per direction, as used here, plus the
    device-local channel (CCKit §4.1)."""
    b.channel("REQ_NODATA", "request", False, remote, home, "requests and clean voluntary downgrades, remote to home")
    b.channel("REQ_DATA", "request", True, remote, home, "voluntary downgrades carrying data, remote to home")
    b.channel("FWD", "forward", False, home, remote, "forwards (home asks the remote to downgrade), home to remote")
    b.channel("RSP_NODATA", "response", False, remote, home, "acknowledgments of forwards without data, remote to home")
    b.channel("RSP_DATA_R", "response", True, remote, home, "acknowledgments of forwards with data, remote to home")
    b.channel("RSP_DATA_H", "response", True, home, remote, "grants with data, home to remote")


def _eci_messages(b: ProtocolBuilder) -> None:
    b.message("RLDD", "REQ_NODATA", "read shared: the remote, holding nothing, asks for a Shared copy (I to S)")
    b.message("RLDX", "REQ_NODATA", "read exclusive: the remote, holding nothing, asks for an Exclusive copy (I to E)")
    b.message("RC2D_S", "REQ_NODATA", "upgrade: the remote holds Shared and asks for Exclusive (S to E); answered with data")
    b.message("VICC", "REQ_NODATA", "voluntary clean downgrade: the remote drops a clean Exclusive copy (E to I), posted")
    b.message("VICD", "REQ_DATA", "voluntary dirty downgrade: the remote writes back a Modified copy and drops it (M to I), posted")
    b.message("VICS", "REQ_DATA", "voluntary downgrade to shared: the remote writes back its copy and keeps Shared (E/M to S), posted")
    b.message("FLDRS", "FWD", "forward read-shared: the home asks the remote to downgrade to Shared and return dirty data")
    b.message("FLDX", "FWD", "forward read-exclusive: the home takes the line for itself (used by lock); the remote invalidates")
    b.message("FEVX", "FWD", "forward evict: the home asks the remote to invalidate and return data (clean-invalidate)")
    b.message("SINV", "FWD", "shared invalidate: the home asks a Shared remote to invalidate")
    b.message("HAKI", "RSP_NODATA", "ack, remote now Invalid and held no Exclusive copy (a conflict response when the home believed Exclusive)")
    b.message("HAKS", "RSP_NODATA", "ack, remote downgraded a clean Exclusive copy to Shared")
    b.message("HAKD", "RSP_DATA_R", "ack with the remote's data: it held Exclusive or Modified and downgraded as the forward asked")
    b.message("PSHA", "RSP_DATA_H", "grant Shared with data (answer to RLDD)")
    b.message("PEMD", "RSP_DATA_H", "grant Exclusive with data (answer to RLDX, RC2D_S, or RLDD when the home returns Exclusive)")


def build_eci_dc() -> ProtocolBuilder:
    """The ECI directory controller (DC) for device-homed lines: the DC is
    generated, the CPU's LLC is the peer, the FPGA application the local agent."""
    b = ProtocolBuilder(
        "eci-dc",
        "ECI directory controller (DC) for FPGA-homed lines, with the CPU LLC as remote caching agent (CCKit 4.1-4.2)",
        memory_at="generated",
        cache_at="peer",
    )
    _eci_channels(b, "generated", "peer")
    b.channel("LCL_REQ", "request", False, "local", "generated", "device-local operations from the FPGA application")
    b.channel("LCL_RSP", "response", False, "generated", "local", "completions of device-local operations")
    b.channel("AXI_REQ", "request", False, "generated", "local", "AXI read and write descriptors from the DCU to the memory side")
    b.channel("AXI_RSP", "response", False, "local", "generated", "AXI completions")
    _eci_messages(b)
    b.message("AXI_RD", "AXI_REQ", "AXI read of the line (before a grant)")
    b.message("AXI_WR", "AXI_REQ", "AXI write of the line (a write-back; memory holds the data from now on)")
    b.message("AXI_RD_DONE", "AXI_RSP", "AXI read completed: the grant can carry the data")
    b.message("AXI_WR_DONE", "AXI_RSP", "AXI write completed")
    b.message("LCL_CLEAN", "LCL_REQ", "clean: make memory hold the latest data; the CPU may keep a Shared copy")
    b.message("LCL_CLINV", "LCL_REQ", "clean-invalidate: make memory hold the latest data and the CPU hold nothing")
    b.message("LCL_LOCK", "LCL_REQ", "lock: clean-invalidate, then keep CPU requests waiting until unlock")
    b.message("LCL_UNLOCK", "LCL_REQ", "unlock: let waiting CPU requests proceed")
    b.message("LCL_ACK", "LCL_RSP", "completion of a device-local operation")
    _eci_dc_messages(b)

    b.generated_agent("dc", "ECI directory controller (home agent) for one line; keeps the home's view of the CPU", "I")
    b.stable("I", U, "I", "CPU holds nothing; memory is up to date")
    b.stable("S", U, "S", "CPU may hold a Shared copy; memory is up to date")
    b.stable("E", U, "E", "CPU holds the line Exclusive or Modified; memory may be stale")
    b.stable("L", LK, "I", "locked by the FPGA application: CPU holds nothing and its requests wait")
    b.stable("LS", LK, "S", "locked after a clean: CPU may hold a Shared copy and its requests wait")

    # Every grant reads memory and every write-back writes it through AXI;
    # the DCU waits for the AXI completion before it moves on (CCKit 4.3:
    # "sends a single descriptor per operation and waits on the result").
    rd = ["send AXI_RD"]
    wr = ["write_mem", "send AXI_WR"]
    # CPU requests.
    for name, start, req, grant, fin in [
        ("read-shared", "I", "RLDD", "PSHA", "S"),
        ("read-exclusive", "I", "RLDX", "PEMD", "E"),
        ("read-shared-after-silent-drop", "S", "RLDD", "PSHA", "S"),
        ("read-exclusive-from-shared", "S", "RLDX", "PEMD", "E"),
        ("upgrade", "S", "RC2D_S", "PEMD", "E"),
    ]:
        b.equation(name, (U, start), [req, "AXI_RD_DONE"], (U, fin), [rd, [f"send {grant}"]])
    b.equation(
        "upgrade-after-invalidation", (U, "I"), ["RC2D_S", "AXI_RD_DONE"], (U, "E"), [rd, ["send PEMD"]], kind="conflict",
        description="the CPU's S was invalidated while its upgrade was in flight; grant E with data",
    )
    # Voluntary downgrades.
    b.equation("victim-dirty", (U, "E"), ["VICD", "AXI_WR_DONE"], (U, "I"), [wr, []])
    b.equation("victim-clean", (U, "E"), ["VICC"], (U, "I"))
    b.equation("victim-to-shared", (U, "E"), ["VICS", "AXI_WR_DONE"], (U, "S"), [wr, []])
    # Device-local operations without forwards.
    # (The application issues no clean while it holds the lock, so L has none.)
    b.equation("clean-I", (U, "I"), ["LCL_CLEAN"], (U, "I"), [["send LCL_ACK"]])
    b.equation("clean-S", (U, "S"), ["LCL_CLEAN"], (U, "S"), [["send LCL_ACK"]])
    b.equation("clean-invalidate-I", (U, "I"), ["LCL_CLINV"], (U, "I"), [["send LCL_ACK"]])
    b.equation("lock-I", (U, "I"), ["LCL_LOCK"], (LK, "I"), [["send LCL_ACK"]])
    b.equation("unlock", (LK, "I"), ["LCL_UNLOCK"], (U, "I"), [["send LCL_ACK"]])
    # Device-local operations with a forward to the CPU.
    b.equation("clean-invalidate-S", (U, "S"), ["LCL_CLINV", "HAKI"], (U, "I"), [["send SINV"], []], ["send LCL_ACK"])
    b.equation("lock-S", (U, "S"), ["LCL_LOCK", "HAKI"], (LK, "I"), [["send SINV"], []], ["send LCL_ACK"])
    b.equation("clean-E-clean", (U, "E"), ["LCL_CLEAN", "HAKS"], (U, "S"), [["send FLDRS"], []], ["send LCL_ACK"])
    b.equation("clean-E-dirty", (U, "E"), ["LCL_CLEAN", "HAKD", "AXI_WR_DONE"], (U, "S"), [["send FLDRS"], wr, []], ["send LCL_ACK"])
    b.equation("clean-invalidate-E", (U, "E"), ["LCL_CLINV", "HAKD", "AXI_WR_DONE"], (U, "I"), [["send FEVX"], wr, []], ["send LCL_ACK"])
    b.equation("lock-E", (U, "E"), ["LCL_LOCK", "HAKD", "AXI_WR_DONE"], (LK, "I"), [["send FLDX"], wr, []], ["send LCL_ACK"])
    # Latency conflicts: a voluntary downgrade crosses the forward; the CPU answers HAKI.
    for op, fwd, fin in [("LCL_CLINV", "FEVX", (U, "I")), ("LCL_LOCK", "FLDX", (LK, "I")), ("LCL_CLEAN", "FLDRS", (U, "I"))]:
        for vic in ["VICC", "VICD", "VICS"]:
            msgs = [op, "HAKI", vic] + ([] if vic == "VICC" else ["AXI_WR_DONE"])
            acts = [[f"send {fwd}"], [], [] if vic == "VICC" else wr] + ([] if vic == "VICC" else [[]])
            b.equation(
                f"{op.lower()}-crosses-{vic.lower()}", (U, "E"), msgs, fin, acts, ["send LCL_ACK"], kind="conflict",
                description=f"the CPU's {vic} crossed {fwd}; the CPU answers HAKI and the home waits for the {vic}",
            )
    _eci_dc_completion(b, rd, wr)
    _cpu_table(b, eci_e_return=True)
    _cpu_completion_rows(b.peer)
    _app_table(b)
    _app_lock_rows(b.local)
    b.check_config([0], values=2, max_in_flight=2)
    return b


# The DC's messages beyond the core set (issue 13 item 8). Opcodes and their
# grouping come from the Enzian eci-toolkit's `eci_cmd_defs.sv` (package
# eci_cmd_defs: "ECI MREQ Commands", "ECI_VC_CAT_MRSP", the command types
# MREQ_LOAD / MREQ_STORE / MREQ_PARTIAL_STORE / MREQ_ATOMIC / MREQ_CSWP /
# MRSP_WORD, the I/O types IREQ_IOBLD / IREQ_IOBST / IRSP_IOBRSP /
# IRSP_IOBACK and the VCs VC_IO_REQ / VC_IO_RESP); the file is published in
# project-openenzian/fpga-stack/eci-toolkit, a submodule of
# github.com/KireinaHoro/enzian-pio-nic (vivado/eci/eci-toolkit).
# Far atomics as the home performs them (read-modify-write of its memory).
ECI_ATOMICS = ["RINC", "RDEC", "RSWP", "RSET", "RCLR"]
# Compare-and-swap carries its operands (MREQ_CSWP: sz data words).
ECI_CSWP = ["RCAS"]
# Non-caching line stores: full line (MREQ_STORE) and with byte strobes
# (MREQ_PARTIAL_STORE).
ECI_STORES = ["RSTT", "RSTP"]


def _eci_dc_messages(b: ProtocolBuilder) -> None:
    """Channels and messages the complete DC adds to the core set."""
    b.channel("RSP_NODATA_H", "response", False, "generated", "peer", "completions without line data, home to remote")
    b.channel("IO_REQ", "request", False, "peer", "generated", "I/O requests, remote to home (ECI VC_IO_REQ)")
    b.channel("IO_RSP", "response", False, "generated", "peer", "I/O responses, home to remote (ECI VC_IO_RESP)")
    b.message("RLDI", "REQ_NODATA", "read shared for an instruction fetch (MREQ_LOAD, opcode 1): answered like RLDD")
    b.message("RLDT", "REQ_NODATA", "read without allocating (MREQ_LOAD, opcode 2): the remote uses the data once and keeps nothing")
    b.message("RSTT", "REQ_DATA", "non-caching full-line store (MREQ_STORE, opcode 8): the home writes memory and acknowledges")
    b.message("RSTP", "REQ_DATA", "non-caching partial store with byte strobes (MREQ_PARTIAL_STORE, opcode 10)")
    for op, code, what in [
        ("RINC", 14, "increment"), ("RDEC", 15, "decrement"), ("RSWP", 16, "swap"),
        ("RSET", 17, "set bits"), ("RCLR", 18, "clear bits"),
    ]:
        b.message(op, "REQ_NODATA", f"far atomic {what} (MREQ_ATOMIC, opcode {code}): the home reads, modifies and writes its memory")
    b.message("RCAS", "REQ_DATA", "far compare-and-swap with its operands (MREQ_CSWP, opcode 19)")
    b.message("PACK", "RSP_NODATA_H", "completion of a non-caching store (a response name of eci_cmd_defs.sv; opcode not published)")
    b.message("MRSP_WORD", "RSP_NODATA_H", "result of a far atomic: one data word, outside the line's value model (command type MRSP_WORD; opcode not published)")
    b.message("IOBLD", "IO_REQ", "I/O load of a device register (IREQ_IOBLD)")
    b.message("IOBST", "IO_REQ", "I/O store of one word to a device register (IREQ_IOBST)")
    b.message("IOBRSP", "IO_RSP", "I/O load response with the register's word (IRSP_IOBRSP)")
    b.message("IOBACK", "IO_RSP", "I/O store acknowledgment (IRSP_IOBACK)")
    b.message("LCL_LOCK_CLEAN", "LCL_REQ", "lock after a clean: the CPU may keep a Shared copy, so the application may read but not write")


def _eci_dc_completion(b: ProtocolBuilder, rd: list[str], wr: list[str]) -> None:
    """State-equations of the complete DC: request variants, non-caching
    stores, far atomics, I/O, and clean / clean-invalidate / lock in every
    home state CCKit 3.3 allows."""
    # A CPU that issues a non-caching store or a far atomic holds no copy of
    # the line (it would act in its cache otherwise); a home S view is then a
    # silently dropped copy, so the DC ends in I. From an E view the request
    # stalls until the voluntary downgrade that must be in flight arrives.
    for view in ["I", "S"]:
        b.equation(f"read-instruction-{view}", (U, view), ["RLDI", "AXI_RD_DONE"], (U, "S"), [rd, ["send PSHA"]])
        b.equation(f"read-through-{view}", (U, view), ["RLDT", "AXI_RD_DONE"], (U, "S"), [rd, ["send PSHA"]])
        for st in ECI_STORES:
            b.equation(
                f"store-{st.lower()}-{view}", (U, view), [st, "AXI_WR_DONE"], (U, "I"),
                [["store", "send AXI_WR"], ["send PACK"]],
            )
        # A far atomic is a read-modify-write of the home's memory: an AXI
        # read, then an AXI write, then the result (one order only: the
        # write follows the read). Its word-sized arithmetic is outside the
        # value model (a value is a write's identity), so the header-only
        # atomics write back what they read; a compare-and-swap carries its
        # swap value, which it stores (the successful case), linearized at
        # the request: the DCU holds the line until the write completes.
        for at in ECI_ATOMICS:
            b.equation(
                f"atomic-{at.lower()}-{view}", (U, view), [at, "AXI_RD_DONE", "AXI_WR_DONE"], (U, "I"),
                [rd, ["send AXI_WR"], ["send MRSP_WORD"]], reorder=False,
            )
        for at in ECI_CSWP:
            b.equation(
                f"atomic-{at.lower()}-{view}", (U, view), [at, "AXI_RD_DONE", "AXI_WR_DONE"], (U, "I"),
                [["store", "send AXI_RD"], ["send AXI_WR"], ["send MRSP_WORD"]], reorder=False,
            )
    # Lock after a clean (CCKit 3.3: lock "upon completion of the clean or
    # clean-invalidate operation"): the CPU keeps at most a Shared copy.
    LS = (LK, "S")
    b.equation("lock-clean-I", (U, "I"), ["LCL_LOCK_CLEAN"], (LK, "I"), [["send LCL_ACK"]])
    b.equation("lock-clean-S", (U, "S"), ["LCL_LOCK_CLEAN"], LS, [["send LCL_ACK"]])
    b.equation("lock-clean-E-clean", (U, "E"), ["LCL_LOCK_CLEAN", "HAKS"], LS, [["send FLDRS"], []], ["send LCL_ACK"])
    b.equation(
        "lock-clean-E-dirty", (U, "E"), ["LCL_LOCK_CLEAN", "HAKD", "AXI_WR_DONE"], LS, [["send FLDRS"], wr, []], ["send LCL_ACK"],
    )
    for vic in ["VICC", "VICD", "VICS"]:
        msgs = ["LCL_LOCK_CLEAN", "HAKI", vic] + ([] if vic == "VICC" else ["AXI_WR_DONE"])
        acts = [["send FLDRS"], [], [] if vic == "VICC" else wr] + ([] if vic == "VICC" else [[]])
        b.equation(
            f"lcl_lock_clean-crosses-{vic.lower()}", (U, "E"), msgs, (LK, "I"), acts, ["send LCL_ACK"], kind="conflict",
            description=f"the CPU's {vic} crossed FLDRS; the CPU answers HAKI and the home waits for the {vic}",
        )
    # Clean and clean-invalidate of a locked line: memory already holds the
    # latest data; only a Shared copy left by a locking clean is invalidated.
    b.equation("clean-L", (LK, "I"), ["LCL_CLEAN"], (LK, "I"), [["send LCL_ACK"]])
    b.equation("clean-invalidate-L", (LK, "I"), ["LCL_CLINV"], (LK, "I"), [["send LCL_ACK"]])
    b.equation("clean-LS", LS, ["LCL_CLEAN"], LS, [["send LCL_ACK"]])
    b.equation("clean-invalidate-LS", LS, ["LCL_CLINV", "HAKI"], (LK, "I"), [["send SINV"], []], ["send LCL_ACK"])
    b.equation("unlock-LS", LS, ["LCL_UNLOCK"], (U, "S"), [["send LCL_ACK"]])
    # I/O is not coherent: the DC answers it in every stable state and keeps
    # the line's state (the lock holds back coherent CPU requests only).
    for name, (home, remote) in [("I", (U, "I")), ("S", (U, "S")), ("E", (U, "E")), ("L", (LK, "I")), ("LS", LS)]:
        b.equation(f"io-load-{name}", (home, remote), ["IOBLD"], (home, remote), [["send IOBRSP"]])
        b.equation(f"io-store-{name}", (home, remote), ["IOBST"], (home, remote), [["send IOBACK"]])


def _cpu_completion_rows(t: _Table) -> None:
    """The LLC's side of the complete DC's messages: it issues them only for
    a line it does not hold (I) and waits for the answer holding nothing."""
    t.state("IT_D", "I, RLDT sent: waiting for data it reads once and does not keep", stable=False)
    t.state("I_ST_A", "I, non-caching store sent: waiting for PACK", stable=False)
    t.state("I_AT_A", "I, far atomic sent: waiting for its result", stable=False)
    t.state("I_IO_D", "I, I/O load sent: waiting for IOBRSP", stable=False)
    t.state("I_IO_A", "I, I/O store sent: waiting for IOBACK", stable=False)
    t.event("ifetch", "an instruction fetch from the line")
    t.event("load_through", "a load that does not allocate in the LLC")
    t.event("store_full", "a non-caching full-line store")
    t.event("store_partial", "a non-caching partial store")
    for at in ECI_ATOMICS + ECI_CSWP:
        t.event(f"atomic_{at.lower()}", f"a far atomic ({at})")
    t.event("io_load", "an I/O load of a device register")
    t.event("io_store", "an I/O store to a device register")
    t.on("I", "ifetch", "IS_D", "send RLDI")
    t.on("I", "load_through", "IT_D", "send RLDT")
    t.on("IT_D", "PSHA", "I", "fill", "check")
    t.on("I", "store_full", "I_ST_A", "send RSTT")
    t.on("I", "store_partial", "I_ST_A", "send RSTP")
    t.on("I_ST_A", "PACK", "I")
    for at in ECI_ATOMICS + ECI_CSWP:
        t.on("I", f"atomic_{at.lower()}", "I_AT_A", f"send {at}")
    t.on("I_AT_A", "MRSP_WORD", "I")
    t.on("I", "io_load", "I_IO_D", "send IOBLD")
    t.on("I_IO_D", "IOBRSP", "I")
    t.on("I", "io_store", "I_IO_A", "send IOBST")
    t.on("I_IO_A", "IOBACK", "I")
    # Holding nothing, the LLC answers every forward with HAKI; a load-through
    # invalidated before its data came uses it once, as a load does (IS_D_I).
    for f in ["FLDRS", "FLDX", "FEVX", "SINV"]:
        t.on("IT_D", f, "IS_D_I", "send HAKI")
        for st in ["I_ST_A", "I_AT_A", "I_IO_D", "I_IO_A"]:
            t.on(st, f, st, "send HAKI")


def _app_lock_rows(t: _Table) -> None:
    """The application's locking clean, and clean / clean-invalidate while it
    holds a lock."""
    t.state("WLockClean", "locking clean sent, waiting for completion", stable=False)
    t.state("LockedShared", "holds the line locked after a clean: the CPU may keep a Shared copy, so it may only read", access="read", stable=False)
    t.state("WCleanL", "clean of the locked line sent", access="write", stable=False)
    t.state("WClinvL", "clean-invalidate of the locked line sent", access="write", stable=False)
    t.state("WCleanLS", "clean of the line locked after a clean sent", access="read", stable=False)
    t.state("WClinvLS", "clean-invalidate of the line locked after a clean sent", access="read", stable=False)
    t.event("lock_clean", "issue a locking clean")
    t.on("Idle", "lock_clean", "WLockClean", "send LCL_LOCK_CLEAN")
    t.on("WLockClean", "LCL_ACK", "LockedShared")
    t.on("LockedShared", "read", "LockedShared", "check")
    t.on("LockedShared", "unlock", "WUnlock", "send LCL_UNLOCK")
    for locked, suffix, after_clinv in [("Locked", "L", "Locked"), ("LockedShared", "LS", "Locked")]:
        t.on(locked, "clean", f"WClean{suffix}", "send LCL_CLEAN")
        t.on(locked, "clinv", f"WClinv{suffix}", "send LCL_CLINV")
        t.on(f"WClean{suffix}", "LCL_ACK", locked)
        t.on(f"WClinv{suffix}", "LCL_ACK", after_clinv)
    for st in ["WLockClean", "LockedShared", "WCleanL", "WClinvL", "WCleanLS", "WClinvLS"]:
        t.on(st, "AXI_RD", st, "send AXI_RD_DONE")
        t.on(st, "AXI_WR", st, "send AXI_WR_DONE")


def _cpu_table(b: ProtocolBuilder, eci_e_return: bool) -> None:
    """The CPU LLC's own behaviour for one line (remote caching agent)."""
    t = b.peer_table("cpu", "ThunderX-1 LLC for one line: MESI with transient states", "I")
    t.state("I", "invalid")
    t.state("S", "shared, clean, readable", access="read")
    t.state("E", "exclusive, clean, writable", access="write")
    t.state("M", "modified, dirty, writable", access="write")
    t.state("IS_D", "I to S: RLDD sent, waiting for data", stable=False)
    t.state("IE_D", "I to E: RLDX sent, waiting for data", stable=False)
    t.state("SE_D", "S to E: RC2D_S sent, waiting for data; the S copy is kept until then", access="read", stable=False)
    t.state("IS_D_I", "I to S, invalidated before the data came: the data answers the loads begun before the invalidation once (it was the latest write at some moment since they began) and is not kept; loads begun later miss again", stable=False)
    t.state("IE_D_I", "I to E, invalidated before the data came: give the line back with VICC", stable=False)
    t.event("load", "a core loads from the line")
    t.event("getx", "a core wants to write: ask for Exclusive")
    t.event("store", "a core stores a new value")
    t.event("evict_clean", "voluntary clean downgrade E to I")
    t.event("evict_dirty", "voluntary dirty downgrade M to I")
    t.event("downgrade", "voluntary downgrade E/M to S, writing back")
    t.event("drop", "silent downgrade S to I")
    t.on("I", "load", "IS_D", "send RLDD")
    t.on("I", "getx", "IE_D", "send RLDX")
    t.on("S", "load", "S", "check")
    t.on("S", "getx", "SE_D", "send RC2D_S")
    t.on("S", "drop", "I")
    t.on("E", "load", "E", "check")
    t.on("E", "store", "M", "store")
    t.on("E", "evict_clean", "I", "send VICC")
    t.on("E", "downgrade", "S", "send VICS")
    t.on("M", "load", "M", "check")
    t.on("M", "store", "M", "store")
    t.on("M", "evict_dirty", "I", "send VICD")
    t.on("M", "downgrade", "S", "send VICS")
    t.on("SE_D", "load", "SE_D", "check")
    t.on("IS_D", "PSHA", "S", "fill", "check")
    t.on("IE_D", "PEMD", "E", "fill")
    t.on("SE_D", "PEMD", "E", "fill")
    # gem5's IS_I: the data a forward overtook answers the load that missed,
    # read by `check_window`, and is not kept.
    t.on("IS_D_I", "PSHA", "I", "check_window")
    t.on("IE_D_I", "PEMD", "I", "send VICC")
    if eci_e_return:
        t.on("IS_D", "PEMD", "E", "fill", "check")
        t.on("IS_D_I", "PEMD", "I", "check_window", "send VICC")
    fwds = ["FLDRS", "FLDX", "FEVX", "SINV"]
    for f in fwds:
        t.on("I", f, "I", "send HAKI")
    t.on("S", "FLDRS", "I", "send HAKI")
    for f in ["FLDX", "FEVX", "SINV"]:
        t.on("S", f, "I", "send HAKI")
    t.on("E", "FLDRS", "S", "send HAKS")
    t.on("E", "FLDX", "I", "send HAKD")
    t.on("E", "FEVX", "I", "send HAKD")
    t.on("M", "FLDRS", "S", "send HAKD")
    t.on("M", "FLDX", "I", "send HAKD")
    t.on("M", "FEVX", "I", "send HAKD")
    # While a request is outstanding the CPU holds nothing it could give, so it
    # answers every forward with HAKI. A forward the home sends from its E view
    # (FLDRS, FLDX, FEVX) may have overtaken the grant, so the CPU must give a
    # later PEMD back (IE_D_I); SINV is sent only from the S view, never while a
    # PEMD is in flight, so it does not poison an outstanding RLDX or upgrade.
    for f in fwds:
        t.on("IS_D", f, "IS_D_I", "send HAKI")
        t.on("IE_D", f, "IE_D" if f == "SINV" else "IE_D_I", "send HAKI")
        t.on("IS_D_I", f, "IS_D_I", "send HAKI")
        t.on("IE_D_I", f, "IE_D_I", "send HAKI")
        t.on("SE_D", f, "IE_D" if f == "SINV" else "IE_D_I", "send HAKI")


def _app_table(b: ProtocolBuilder) -> None:
    """The FPGA application issuing device-local operations on one line."""
    t = b.local_table("app", "FPGA application using the DC's clean / clean-invalidate / lock / unlock interface", "Idle")
    t.state("Idle", "no operation outstanding")
    t.state("WClean", "clean sent, waiting for completion", stable=False)
    t.state("WClinv", "clean-invalidate sent, waiting for completion", stable=False)
    t.state("WLock", "lock sent, waiting for completion", stable=False)
    t.state("Locked", "holds the line locked: may read and write memory; must unlock", access="write", stable=False)
    t.state("WUnlock", "unlock sent, waiting for completion", stable=False)
    t.event("clean", "issue clean")
    t.event("clinv", "issue clean-invalidate")
    t.event("lock", "issue lock")
    t.event("unlock", "issue unlock")
    t.event("write", "write a new value to memory through AXI")
    t.event("read", "read memory through AXI")
    t.on("Idle", "clean", "WClean", "send LCL_CLEAN")
    t.on("Idle", "clinv", "WClinv", "send LCL_CLINV")
    t.on("Idle", "lock", "WLock", "send LCL_LOCK")
    t.on("WClean", "LCL_ACK", "Idle")
    t.on("WClinv", "LCL_ACK", "Idle")
    t.on("WLock", "LCL_ACK", "Locked")
    t.on("Locked", "write", "Locked", "store")
    t.on("Locked", "read", "Locked", "check")
    t.on("Locked", "unlock", "WUnlock", "send LCL_UNLOCK")
    t.on("WUnlock", "LCL_ACK", "Idle")
    # The application sits between the DC and DRAM: it completes every AXI
    # descriptor, whatever else it is doing.
    for st in ["Idle", "WClean", "WClinv", "WLock", "Locked", "WUnlock"]:
        t.on(st, "AXI_RD", st, "send AXI_RD_DONE")
        t.on(st, "AXI_WR", st, "send AXI_WR_DONE")


def build_invocation(shared_unit: bool = False) -> ProtocolBuilder:
    """The DC, CPU and per-line application port tables of the two-line
    invocation protocol (PIO paper §5, Fig. 5a/5b; CCKit §5.7).

    The DC hands every CPU read (RLDD, RLDX) of a line to the application
    (LCL_RDREQ) and answers only when the application says so: Shared
    (LCL_GRANT_S), Exclusive (LCL_GRANT_E), or "not ready yet" (LCL_NRDY, a
    Shared grant of the unchanged line). The application fetches the other
    line with a clean-invalidate. The CPU program and the application logic
    that drive these tables are in `ccsim_protocol::invocation`."""
    b = ProtocolBuilder(
        "invocation-shared-dcu" if shared_unit else "invocation",
        "two-line invocation protocol over the ECI DC: CPU reads of device-homed lines are held until the application answers (PIO paper 5, Fig. 5a/5b)"
        + ("; lines A and B map to the same DCU, which deadlocks without 'not ready yet'" if shared_unit else ""),
        memory_at="generated",
        cache_at="peer",
    )
    _eci_channels(b, "generated", "peer")
    b.channel("LCL_REQ", "request", False, "local", "generated", "device-local operations from the application port")
    b.channel("LCL_REPLY", "response", False, "local", "generated", "the application's answer to a held CPU read")
    b.channel("LCL_RSP", "response", False, "generated", "local", "completions and notifications to the application port")
    _eci_messages(b)
    b.message("LCL_CLINV", "LCL_REQ", "clean-invalidate: fetch the line's latest data from the CPU into memory")
    b.message("LCL_GRANT_S", "LCL_REPLY", "answer the held read with the line's memory, Shared")
    b.message("LCL_GRANT_E", "LCL_REPLY", "answer the held read with the line's memory, Exclusive")
    b.message("LCL_NRDY", "LCL_REPLY", "answer the held read 'not ready yet' before the CPU times out (a Shared grant of the unchanged line)")
    b.message("LCL_ACK", "LCL_RSP", "completion of a clean-invalidate")
    b.message("LCL_RDREQ", "LCL_RSP", "notification: the CPU reads this line; the DC holds the read until the application answers")

    b.generated_agent("dc", "ECI directory controller whose CPU reads are answered by the application", "I")
    b.stable("I", U, "I", "CPU holds nothing; memory is up to date")
    b.stable("S", U, "S", "CPU may hold a Shared copy; memory is up to date")
    b.stable("E", U, "E", "CPU holds the line Exclusive or Modified; memory may be stale")
    for view in ["I", "S"]:
        b.equation(f"held-read-shared-{view}-grant-s", (U, view), ["RLDD", "LCL_GRANT_S"], (U, "S"), [["send LCL_RDREQ"], ["send PSHA"]])
        b.equation(f"held-read-shared-{view}-grant-e", (U, view), ["RLDD", "LCL_GRANT_E"], (U, "E"), [["send LCL_RDREQ"], ["send PEMD"]])
        b.equation(f"held-read-shared-{view}-not-ready", (U, view), ["RLDD", "LCL_NRDY"], (U, "S"), [["send LCL_RDREQ"], ["send PSHA"]])
        b.equation(f"held-read-exclusive-{view}", (U, view), ["RLDX", "LCL_GRANT_E"], (U, "E"), [["send LCL_RDREQ"], ["send PEMD"]])
    b.equation("upgrade", (U, "S"), ["RC2D_S"], (U, "E"), [["send PEMD"]])
    b.equation("upgrade-after-invalidation", (U, "I"), ["RC2D_S"], (U, "E"), [["send PEMD"]], kind="conflict")
    b.equation("victim-dirty", (U, "E"), ["VICD"], (U, "I"), [["write_mem"]])
    b.equation("victim-clean", (U, "E"), ["VICC"], (U, "I"))
    b.equation("victim-to-shared", (U, "E"), ["VICS"], (U, "S"), [["write_mem"]])
    b.equation("clean-invalidate-I", (U, "I"), ["LCL_CLINV"], (U, "I"), [["send LCL_ACK"]])
    b.equation("clean-invalidate-S", (U, "S"), ["LCL_CLINV", "HAKI"], (U, "I"), [["send SINV"], []], ["send LCL_ACK"])
    b.equation("clean-invalidate-E", (U, "E"), ["LCL_CLINV", "HAKD"], (U, "I"), [["send FEVX"], ["write_mem"]], ["send LCL_ACK"])
    for vic in ["VICC", "VICD", "VICS"]:
        b.equation(
            f"lcl_clinv-crosses-{vic.lower()}", (U, "E"), ["LCL_CLINV", "HAKI", vic], (U, "I"),
            [["send FEVX"], [], [] if vic == "VICC" else ["write_mem"]], ["send LCL_ACK"], kind="conflict",
        )
    _cpu_table(b, eci_e_return=True)
    t = b.local_table("port", "the application's port for one line, driven by the invocation logic", "Idle")
    t.state("Idle", "nothing outstanding on this line")
    t.state("Pending", "a CPU read is held; the application may write the line's memory and must answer", access="write", stable=False)
    t.state("WClinv", "clean-invalidate sent, waiting for completion", stable=False)
    t.state("Owned", "fetched: the CPU holds nothing and the application may read and write memory", access="write")
    t.event("grant_s", "answer the held read, Shared")
    t.event("grant_e", "answer the held read, Exclusive")
    t.event("nrdy", "answer the held read 'not ready yet'")
    t.event("write", "write the line's memory (the invocation's result)")
    t.event("clinv", "fetch the line from the CPU")
    t.event("read", "read the line's memory (the invocation's arguments)")
    t.event("release", "stop owning the line")
    t.on("Idle", "LCL_RDREQ", "Pending")
    t.on("Owned", "LCL_RDREQ", "Pending")
    t.on("Pending", "grant_s", "Idle", "send LCL_GRANT_S")
    t.on("Pending", "grant_e", "Idle", "send LCL_GRANT_E")
    t.on("Pending", "nrdy", "Idle", "send LCL_NRDY")
    t.on("Pending", "write", "Pending", "store")
    t.on("Idle", "clinv", "WClinv", "send LCL_CLINV")
    t.on("WClinv", "LCL_ACK", "Owned")
    t.on("Owned", "read", "Owned", "check")
    t.on("Owned", "write", "Owned", "store")
    t.on("Owned", "release", "Idle")
    b.check_config([0, 0] if shared_unit else [0, 1], values=2, max_in_flight=2, application="invocation")
    return b


def build_eci_cc() -> ProtocolBuilder:
    """The ECI cache controller (CC) for CPU-homed lines: the CC is the
    device's remote caching agent and is generated; the CPU's home directory
    is the peer; the FPGA application (loads, stores, evictions) is local.

    For the CC a stable state's `home` field is its role (`cc`) and `remote`
    its own MESI state, which is what the CPU's directory tracks."""
    b = ProtocolBuilder(
        "eci-cc",
        "ECI cache controller (CC) for CPU-homed lines, with the FPGA as remote caching agent",
        memory_at="peer",
        cache_at="generated",
    )
    _eci_channels(b, "peer", "generated")
    b.channel("LCL_REQ", "request", False, "local", "generated", "loads and evictions from the FPGA application")
    b.channel("LCL_REQ_DATA", "request", True, "local", "generated", "stores from the FPGA application, with the value")
    b.channel("LCL_RSP", "response", False, "generated", "local", "completions")
    _eci_messages(b)
    b.message("LCL_LD", "LCL_REQ", "load: obtain a readable copy and read it")
    b.message("LCL_LDX", "LCL_REQ", "load exclusive: obtain a writable copy")
    b.message("LCL_EVICT", "LCL_REQ", "evict the line (voluntary downgrade to I)")
    b.message("LCL_ST", "LCL_REQ_DATA", "store a value if the CC holds the line writable, else refuse")
    b.message("LCL_ACK", "LCL_RSP", "completion")
    b.message("LCL_NACK", "LCL_RSP", "store refused: the CC does not hold the line writable")

    b.generated_agent("cc", "ECI cache controller on the FPGA for one CPU-homed line", "I")
    C = "cc"
    b.stable("I", C, "I", "invalid")
    b.stable("S", C, "S", "shared, readable", access="read")
    b.stable("E", C, "E", "exclusive, clean, writable", access="write")
    b.stable("M", C, "M", "modified, writable", access="write")
    ack = ["send LCL_ACK"]
    b.equation("load-I-shared", (C, "I"), ["LCL_LD", "PSHA"], (C, "S"), [["send RLDD"], ["fill", "check"]], ack)
    b.equation("load-I-exclusive", (C, "I"), ["LCL_LD", "PEMD"], (C, "E"), [["send RLDD"], ["fill", "check"]], ack)
    b.equation("loadx-I", (C, "I"), ["LCL_LDX", "PEMD"], (C, "E"), [["send RLDX"], ["fill"]], ack)
    b.equation("loadx-S", (C, "S"), ["LCL_LDX", "PEMD"], (C, "E"), [["send RC2D_S"], ["fill"]], ack)
    for st in ["S", "E", "M"]:
        b.equation(f"load-hit-{st}", (C, st), ["LCL_LD"], (C, st), [["check", "send LCL_ACK"]])
    for st in ["E", "M"]:
        b.equation(f"loadx-hit-{st}", (C, st), ["LCL_LDX"], (C, st), [ack])
        b.equation(f"store-{st}", (C, st), ["LCL_ST"], (C, "M"), [["store", "send LCL_ACK"]])
    for st in ["I", "S"]:
        b.equation(f"store-refused-{st}", (C, st), ["LCL_ST"], (C, st), [["send LCL_NACK"]])
    b.equation("evict-I", (C, "I"), ["LCL_EVICT"], (C, "I"), [ack])
    b.equation("evict-S", (C, "S"), ["LCL_EVICT"], (C, "I"), [ack], description="silent S to I")
    b.equation("evict-E", (C, "E"), ["LCL_EVICT"], (C, "I"), [["send VICC", "send LCL_ACK"]])
    b.equation("evict-M", (C, "M"), ["LCL_EVICT"], (C, "I"), [["send VICD", "send LCL_ACK"]])
    # Forwards in stable states.
    fwds = ["FLDRS", "FLDX", "FEVX", "SINV"]
    for f in fwds:
        b.equation(f"fwd-{f.lower()}-I", (C, "I"), [f], (C, "I"), [["send HAKI"]])
        b.equation(f"fwd-{f.lower()}-S", (C, "S"), [f], (C, "I"), [["send HAKI"]])
    b.equation("fwd-fldrs-E", (C, "E"), ["FLDRS"], (C, "S"), [["send HAKS"]])
    b.equation("fwd-fldrs-M", (C, "M"), ["FLDRS"], (C, "S"), [["send HAKD"]])
    for f in ["FLDX", "FEVX"]:
        b.equation(f"fwd-{f.lower()}-E", (C, "E"), [f], (C, "I"), [["send HAKD"]])
        b.equation(f"fwd-{f.lower()}-M", (C, "M"), [f], (C, "I"), [["send HAKD"]])
    # Forwards while a request is outstanding (latency conflicts): the CC holds
    # nothing it could give, answers HAKI, and a forward from the home's E view
    # (which may have overtaken the grant) makes it give an Exclusive grant back.
    evx = ["FLDRS", "FLDX", "FEVX"]
    for f in fwds:
        poison = f in evx
        b.equation(
            f"load-crossed-by-{f.lower()}", (C, "I"), ["LCL_LD", f, "PSHA"], (C, "I"),
            [["send RLDD"], ["send HAKI"], []], ack, kind="conflict", description="use the data once, keep nothing",
            reorder=False,
        )
        b.equation(
            f"load-e-crossed-by-{f.lower()}", (C, "I"), ["LCL_LD", f, "PEMD"], (C, "I"),
            [["send RLDD"], ["send HAKI"], ["send VICC"]], ack, kind="conflict", reorder=False,
        )
        for start, req in [("I", "RLDX"), ("S", "RC2D_S")]:
            if poison:
                b.equation(
                    f"loadx-{start}-crossed-by-{f.lower()}", (C, start), ["LCL_LDX", f, "PEMD"], (C, "I"),
                    [[f"send {req}"], ["send HAKI"], ["send VICC"]], ack, kind="conflict",
                    description="the forward may have overtaken the grant: give it back", reorder=False,
                )
            else:
                b.equation(
                    f"loadx-{start}-crossed-by-sinv", (C, start), ["LCL_LDX", f, "PEMD"], (C, "E"),
                    [[f"send {req}"], ["send HAKI"], ["fill"]], ack, kind="conflict",
                    description="SINV is never sent while an Exclusive grant is in flight", reorder=False,
                )
    # A second forward can arrive before the grant: the home answered the
    # first HAKI, granted, and forwarded again before the grant arrived.
    for f1 in fwds:
        for f2 in fwds:
            for grant, last in [("PSHA", []), ("PEMD", ["send VICC"])]:
                b.equation(
                    f"load-crossed-by-{f1.lower()}-{f2.lower()}-{grant.lower()}", (C, "I"), ["LCL_LD", f1, f2, grant], (C, "I"),
                    [["send RLDD"], ["send HAKI"], ["send HAKI"], last], ack, kind="conflict", reorder=False,
                )
            for start, req in [("I", "RLDX"), ("S", "RC2D_S")]:
                keep = f1 == "SINV" and f2 == "SINV"
                b.equation(
                    f"loadx-{start}-crossed-by-{f1.lower()}-{f2.lower()}", (C, start), ["LCL_LDX", f1, f2, "PEMD"], (C, "E" if keep else "I"),
                    [[f"send {req}"], ["send HAKI"], ["send HAKI"], ["fill"] if keep else ["send VICC"]], ack, kind="conflict", reorder=False,
                )
    # CPU home directory (hand-written), device-local agent.
    _cpu_home_table(b)
    t = b.local_table("app", "FPGA application using the CC for a CPU-homed line", "Idle")
    t.state("Idle", "no operation outstanding")
    t.state("Wait", "an operation is outstanding", stable=False)
    for ev, msg, d in [("ld", "LCL_LD", "load"), ("ldx", "LCL_LDX", "load exclusive"), ("st", "LCL_ST", "store a new value"), ("evict", "LCL_EVICT", "evict")]:
        t.event(ev, d)
        t.on("Idle", ev, "Wait", f"send {msg}")
    t.on("Wait", "LCL_ACK", "Idle")
    t.on("Wait", "LCL_NACK", "Idle")
    b.check_config([0], values=2, max_in_flight=2)
    return b


def _cpu_home_table(b: ProtocolBuilder) -> None:
    """The CPU's home directory for a CPU-homed line, with the CPU cores'
    reads and writes of memory as local events (written by hand)."""
    t = b.peer_table("home", "ThunderX-1 home directory for one CPU-homed line; CPU cores read and write memory", "I")
    t.state("I", "device holds nothing")
    t.state("S", "device may hold a Shared copy")
    t.state("E", "device holds the line Exclusive or Modified")
    t.state("E_RD", "core read at E: FLDRS sent, waiting for the answer", stable=False)
    t.state("E_RD_V", "core read: device answered HAKI, its voluntary downgrade is in flight", stable=False)
    t.state("E_RD_H", "core read: the voluntary downgrade came first, waiting for HAKI", stable=False)
    t.state("E_WR", "core write at E: FEVX sent, waiting for the answer", stable=False)
    t.state("E_WR_V", "core write: device answered HAKI, its voluntary downgrade is in flight", stable=False)
    t.state("E_WR_H", "core write: the voluntary downgrade came first, waiting for HAKI", stable=False)
    t.state("S_WR", "core write at S: SINV sent, waiting for HAKI", stable=False)
    t.state("I_W", "device invalidated; the core's write is being committed", access="write", stable=False)
    t.event("rd", "a CPU core reads the line from memory")
    t.event("wr", "a CPU core writes the line")
    t.event("commit", "the core's write completes")
    t.on("I", "rd", "I", "check")
    t.on("S", "rd", "S", "check")
    t.on("E", "rd", "E_RD", "send FLDRS")
    t.on("I", "wr", "I_W")
    t.on("S", "wr", "S_WR", "send SINV")
    t.on("E", "wr", "E_WR", "send FEVX")
    t.on("I_W", "commit", "I", "store")
    # Device requests.
    t.on("I", "RLDD", "S", "send PSHA")
    t.on("I", "RLDX", "E", "send PEMD")
    t.on("I", "RC2D_S", "E", "send PEMD")
    t.on("S", "RLDD", "S", "send PSHA")
    t.on("S", "RLDX", "E", "send PEMD")
    t.on("S", "RC2D_S", "E", "send PEMD")
    t.on("E", "VICC", "I")
    t.on("E", "VICD", "I", "write_mem")
    t.on("E", "VICS", "S", "write_mem")
    for r in ["RLDD", "RLDX", "RC2D_S"]:
        t.stall("E", r)
    # Core read at E.
    t.on("E_RD", "HAKS", "S", "check")
    t.on("E_RD", "HAKD", "S", "write_mem", "check")
    t.on("E_RD", "HAKI", "E_RD_V")
    t.on("E_RD", "VICC", "E_RD_H")
    t.on("E_RD", "VICD", "E_RD_H", "write_mem")
    t.on("E_RD", "VICS", "E_RD_H", "write_mem")
    t.on("E_RD_V", "VICC", "I", "check")
    t.on("E_RD_V", "VICD", "I", "write_mem", "check")
    t.on("E_RD_V", "VICS", "I", "write_mem", "check")
    t.on("E_RD_H", "HAKI", "I", "check")
    # Core write at E or S.
    t.on("E_WR", "HAKD", "I_W", "write_mem")
    t.on("E_WR", "HAKI", "E_WR_V")
    t.on("E_WR", "VICC", "E_WR_H")
    t.on("E_WR", "VICD", "E_WR_H", "write_mem")
    t.on("E_WR", "VICS", "E_WR_H", "write_mem")
    t.on("E_WR_V", "VICC", "I_W")
    t.on("E_WR_V", "VICD", "I_W", "write_mem")
    t.on("E_WR_V", "VICS", "I_W", "write_mem")
    t.on("E_WR_H", "HAKI", "I_W")
    t.on("S_WR", "HAKI", "I_W")
    for st in ["E_RD", "E_RD_V", "E_RD_H", "E_WR", "E_WR_V", "E_WR_H", "S_WR", "I_W"]:
        for r in ["RLDD", "RLDX", "RC2D_S"]:
            t.stall(st, r)
