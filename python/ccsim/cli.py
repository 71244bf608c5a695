"""The ``ccsim`` command line.

::

    ccsim reproduce cohet-dma [--quick] [--json] [--out results] [--seed 0] [--set pcie.lanes=8]
                          [--trace [PATH]]  # Perfetto timelines of the points (ccsim.timeline)
    ccsim reproduce --all | --list
    ccsim info [COMPONENT] [--json | --markdown]  # component types and workloads: every
                                      # parameter's kind, unit, range, default and its provenance
    ccsim platform cohet [--set ...]  # every instance's parameters: value, unit, range, provenance
    ccsim validate FILE.toml ...      # check platform or experiment files
    ccsim bench kernel [--json]
    ccsim bench coherent [--json] [--reads N] [--memory-lines N] [--instructions [N]]
    ccsim bench coherent --platform cohet [--json] [--reads N]   # CXL.cache loads, ratio to the loop's ceiling
    ccsim bench sweep [--jobs 2] [--repeat K] [--spec SPEC] [--json]   # sweep points/s, 1 vs N workers
    ccsim protocol list | generate SPEC | check SPEC [--json] [--trace PATH] | export SPEC --sv|--murphi|--dot|--json
    ccsim simulate msi-dma [--system NAME] [--ops N] [--lines N] [--seed S] [--set ...] [--json]
                                      # the random tester on a system declared as data
    ccsim report [RESULTS] [--html [-o PAGE.html]] [--json]
                                      # validation dashboard over results/<experiment>/summary.json
    ccsim sweep SPEC.toml [--jobs N] [--backend local|ray] [--address ADDR] [--out results] [--dry-run]
                                      # a grid or seeded sample over declared parameters -> one
                                      # parquet dataset; resumable

Exit codes: 0 ok; 2 bad input (one line on stderr naming the file and
path, never a traceback); 1 a check ran and found a violation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _native, protocol
from .errors import CcsimError, NotAvailableError, UsageError, ViolationFound, check_seed
from .simulate import choose_system


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see --help)")


def _seed(text: str) -> int:
    """An argparse type: a seed the simulator takes."""
    try:
        return check_seed(int(text))
    except (ValueError, UsageError) as e:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 2**64 - 1, got {text!r}") from e


def _at_least(command: str, flag: str, value: int, least: int) -> None:
    """A usage error unless ``value`` of ``flag`` is at least ``least``."""
    if value < least:
        raise UsageError(f"{command}: {flag} must be at least {least}")


def _set_pairs(items: Optional[List[str]]) -> List[Tuple[str, str]]:
    out = []
    for item in items or []:
        if "=" not in item:
            raise UsageError(f"--set {item}: expected KEY=VALUE, like pcie.lanes=8")
        k, v = item.split("=", 1)
        out.append((k.strip(), v.strip()))
    return out


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def cmd_reproduce(args) -> int:
    from .experiment import describe_experiments, progress_bar

    names = list(args.names)
    if args.list:
        rows = describe_experiments()
        if args.json:
            _out(json.dumps(rows, indent=2))
        else:
            width = max((len(r["name"]) for r in rows), default=4)
            for r in rows:
                _out(f"{r['name']:<{width}}  {r['title']}  [{', '.join(r['platforms'])}; {r['figures']}]")
        return 0
    if args.all:
        if names:
            raise UsageError("reproduce: give experiment names or --all, not both")
        names = list(_native.list_experiments())
    if not names:
        raise UsageError("reproduce: name an experiment, or use --all or --list")
    text_overrides = _set_pairs(args.set)
    # Load and validate every experiment (and its platforms) before running
    # any, so bad input fails fast; the runs use these loaded handles.
    experiments = [_native.Experiment.load(n) for n in names]
    # --trace: Chrome JSON per point and a Perfetto timeline per experiment
    # in its output directory; --trace PATH: one Perfetto timeline of every
    # point, at PATH. Checked before anything runs.
    timeline = trace_path = None
    if args.trace is not None:
        from . import timeline as tl

        tl.require()
        if args.trace is not True:
            trace_path = tl.check_output(args.trace)
            timeline = tl.Timeline()
    summaries = []
    progress = None if not args.no_progress else False
    # Several experiments share one bar: points done and the ETA of the whole run.
    bar = progress_bar(experiments, args.quick, progress) if len(experiments) > 1 else None
    try:
        for experiment in experiments:
            summaries.append(_reproduce_one(args, experiment, text_overrides, progress, timeline, bar))
    finally:
        if bar is not None:
            bar.close()
    if timeline is not None and trace_path is not None:
        if not timeline.points:
            raise NotAvailableError(f"--trace {trace_path}: no point of {', '.join(names)} keeps a timeline "
                                    "(their workloads record no messages and notes)")
        timeline.write(trace_path)
        if not args.json:
            n = sum(p["transactions"] for p in timeline.points)
            _out(f"timeline: {len(timeline.points)} points, {n} transactions -> {trace_path}")
    if args.json:
        doc = {
            "ccsim_version": _native.__version__,
            "seed": args.seed,
            "quick": args.quick,
            "experiments": [{k: v for k, v in s.items() if k != "points"} for s in summaries],
            "points": [p for s in summaries for p in s["points"]],
        }
        _out(json.dumps(doc, indent=2))
    return 0


def _reproduce_one(args, experiment, text_overrides, progress, timeline, bar) -> Dict[str, Any]:
    """One experiment of ``reproduce``: runs it, writes its summary.json and
    prints its line (unless --json); returns the summary."""
    from .experiment import reproduce

    result = reproduce(experiment, quick=args.quick, seed=args.seed, text_overrides=text_overrides, out=args.out,
                       progress=progress, jobs=args.jobs, trace=args.trace is True, timeline=timeline, bar=bar)
    summary = result.summary()
    summary["output_dir"] = str(Path(args.out) / result.name)
    (Path(args.out) / result.name / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if not args.json:
        e = summary["errors"]
        parts = [f"{role}: {v['n']} pts, max |err| {v['max_abs_error_pct']:.1f}%"
                 for role, v in e.items() if v["n"]]
        if summary["claims"]:
            counts = {v: sum(c["verdict"] == v for c in summary["claims"])
                      for v in ("held", "not_held", "not_evaluated")}
            parts.append("claims: " + ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in counts.items() if n))
        line = (f"{result.name}: {len(result.points)} points -> {summary['output_dir']}/"
                + (f"  ({'; '.join(parts)})" if parts else ""))
        if bar is not None:
            bar.clear()  # the line goes above the shared bar, not through it
        _out(line)
        if bar is not None:
            bar.refresh()
    return summary


def _fmt_scalar(v: Any, unit: str = "") -> str:
    if isinstance(v, (str, bool)):
        return json.dumps(v)
    if unit == "address" and isinstance(v, int):
        return f"{v:#x}"
    return str(v)


def _fmt_default(p: Any) -> str:
    if p["required"]:
        return "(required)"
    return _fmt_scalar(p["default"], p["unit"])


def _param_head(p: Any) -> str:
    """``name (kind [unit], range)``: the parameter's declaration in short."""
    unit = f" [{p['unit']}]" if p["unit"] else ""
    rng = f", {p['range']['text']}" if p["range"]["text"] else ""
    return f"{p['name']} ({p['kind']}{unit}{rng})"


def _info_params(params: Sequence[Any]) -> None:
    """Each parameter: declaration and default, description, the default's
    provenance."""
    for p in params:
        _out(f"    {_param_head(p)} = {_fmt_default(p)}")
        _out(f"        {p['description']}")
        if p["from"]:
            _out(f"        default from: {p['from']}")
    if not params:
        _out("    (none)")


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_params(params: Sequence[Any]) -> List[str]:
    if not params:
        return ["No parameters.", ""]
    out = ["| parameter | kind | unit | range | default | default from | description |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for p in params:
        out.append("| " + " | ".join(_md_cell(c) for c in (
            f"`{p['name']}`", p["kind"], p["unit"], p["range"]["text"] or "—",
            f"`{_fmt_default(p)}`", p["from"] or "—", p["description"])) + " |")
    return out + [""]


def info_markdown() -> str:
    """``docs/parameters.md``: every component type's and workload's
    parameters, generated from their declarations (``ccsim info --markdown``)."""
    lines = [
        "# Parameters",
        "",
        "<!-- Generated by `ccsim info --markdown` from the declarations in the Rust crates; do not edit.",
        "     tests/python/test_info.py fails when this file is out of date. -->",
        "",
        "Every parameter of every component type and workload, as declared once in",
        "its `ComponentSpec` or `WorkloadInfo`: kind, unit, the range of meaningful",
        "values (checked when a platform, an override or an experiment is loaded),",
        "the default, and where the default comes from. Rules that involve several",
        "parameters or components are the type's check hook; see the descriptions",
        "and `crates/kernel/src/component.rs`. A platform's values and their",
        "provenance: `ccsim platform NAME`.",
        "",
        "Ranges: `≥ 0` at least, `> 0` above, `[a, b]` from a to b, `(0, 1]` above 0",
        "up to 1, `one of ...` only these, `power of two in [a, b]` only powers of two.",
        "",
        "## Component types",
        "",
    ]
    for t in _native.component_types():
        lines += [f"### `{t['type']}`", "", t["description"], ""]
        lines += _md_params(t["params"])
    lines += ["## Workloads", ""]
    for w in _native.workloads():
        lines += [f"### `{w['name']}`", "", w["description"], ""]
        lines += _md_params(w["params"])
    return "\n".join(lines).rstrip("\n") + "\n"


def cmd_info(args) -> int:
    if args.markdown:
        if args.component or args.json:
            raise UsageError("info: --markdown documents everything; give no type and no --json")
        sys.stdout.write(info_markdown())
        return 0
    types = list(_native.component_types())
    workloads = list(_native.workloads())
    if args.component:
        match = [t for t in types if t["type"] == args.component]
        wl = [w for w in workloads if w["name"] == args.component]
        if not match and not wl:
            known = ", ".join(sorted([t["type"] for t in types] + [w["name"] for w in workloads])) or "none"
            raise UsageError(f"info: no component type or workload {args.component!r} (known: {known})")
        types, workloads = match, wl
    if args.json:
        _out(json.dumps({"components": types, "workloads": workloads}, indent=2, ensure_ascii=False))
        return 0
    if types:
        _out(f"Component types ({len(types)}):")
    for t in types:
        _out(f"\n{t['type']}: {t['description']}")
        _out("  params:")
        _info_params(t["params"])
        _out("  ports:")
        for port in t["ports"]:
            _out(f"    {port['name']}{'' if port['required'] else ' (optional)'}: {port['description']}")
        if not t["ports"]:
            _out("    (none)")
        _out("  stats:")
        for s in t["stats"]:
            _out(f"    {s['name']} ({s['kind']}, {s['unit']}): {s['description']}")
        if not t["stats"]:
            _out("    (none)")
    if workloads:
        _out(f"\nWorkloads ({len(workloads)}):")
    for w in workloads:
        _out(f"\n{w['name']}: {w['description']}")
        _out("  params:")
        _info_params(w["params"])
        _out("  metrics:")
        for m in w["metrics"]:
            _out(f"    {m['name']} [{m['unit']}]: {m['description']}")
    return 0


def cmd_platform(args) -> int:
    if args.list or not args.name:
        for n in _native.list_platforms():
            p = _native.Platform.load(n)
            _out(f"{n}: {p.description}")
        return 0
    p = _native.Platform.load(args.name, None, _set_pairs(args.set) or None)
    comps = p.components()
    declared = {t["type"]: {d["name"]: d for d in t["params"]} for t in _native.component_types()}
    rows = {inst: [{"name": name, "value": value, "unit": declared[c["type"]][name]["unit"],
                    "range": declared[c["type"]][name]["range"]["text"], "provenance": prov}
                   for name, (value, prov) in c["params"].items()]
            for inst, c in comps.items()}
    if args.json:
        for inst, c in comps.items():
            c["parameters"] = rows[inst]
        _out(json.dumps({"name": p.name, "description": p.description, "paper": p.paper, "source": p.source,
                         "components": comps, "systems": p.systems()}, indent=2, ensure_ascii=False))
        return 0
    _out(f"{p.name}: {p.description}")
    _out(f"source: {p.source}" + (f"; paper: {', '.join(p.paper)}" if p.paper else ""))
    for inst, c in comps.items():
        _out(f"\n[{inst}] type = {c['type']}")
        cells = [(r["name"], " ".join(x for x in (_fmt_platform_value(r), r["unit"]) if x),
                  r["range"], r["provenance"]) for r in rows[inst]]
        w = [max((len(cell[i]) for cell in cells), default=0) for i in range(3)]
        for name, value, rng, prov in cells:
            _out(f"  {name:<{w[0]}} = {value:<{w[1]}}  {rng:<{w[2]}}  # {prov}")
    for name, sysd in p.systems().items():
        _out(f"\n[systems.{name}] protocol = {sysd['protocol']}: {sysd['description']}")
        for key in ("line_bytes", "header_bytes"):
            value, prov = sysd[key]
            _out(f"  {key} = {value}  # {prov}")
        for a in sysd["agents"]:
            extra = "".join(f", {k} {a[k]}" for k in ("memory", "protocol") if k in a)
            _out(f"  agent {a['name']}: role {a['role']}, instance {a['instance']}{extra}")
        for c in sysd["components"]:
            _out(f"  component {c['name']}: instance {c['instance']}")
        for link in sysd["links"]:
            _out(f"  link {link['a']} -- {link['b']}: instance {link['instance']}")
    return 0


def _fmt_platform_value(row: Any) -> str:
    from .report import fmt_value

    v = row["value"]
    if row["unit"] == "address" and isinstance(v, int) and not isinstance(v, bool):
        return f"{v:#x}"
    return fmt_value(v)


def _looks_like_experiment(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        # The platform loader reports what is wrong with the file.
        return False
    return any(line.strip().startswith("[experiment]") for line in text.splitlines())


def cmd_validate(args) -> int:
    for f in args.files:
        path = Path(f)
        if _looks_like_experiment(path):
            e = _native.Experiment.load(f)
            _out(f"{f}: ok (experiment {e.name}, {len(e.to_dict()['series'])} series)")
        else:
            p = _native.Platform.load(f)
            _out(f"{f}: ok (platform {p.name}, {len(p.components())} components)")
    return 0


def cmd_bench(args) -> int:
    if args.what == "coherent":
        return _bench_coherent(args)
    if args.what == "sweep":
        return _bench_sweep(args)
    if args.what != "kernel":
        raise UsageError(f"bench: unknown benchmark {args.what!r} (known: kernel, coherent, sweep)")
    _at_least("bench", "--events", args.events, 1)
    report = json.loads(_native.kernel_bench_json(args.events))
    if args.json:
        _out(json.dumps(report, indent=2))
    else:
        _out(f"kernel: {report['events_per_sec'] / 1e6:.1f} M events/s ({report['events']} events in "
             f"{report['seconds']:.3f} s)")
        _out(f"bare binary-heap loop: {report['bare_events_per_sec'] / 1e6:.1f} M events/s")
        _out(f"ratio (bare / kernel): {report['ratio']:.2f}x")
    return 0


def instructions_per_transaction(platform: str, transactions: int) -> Dict[str, Any]:
    """Executed instructions per simulated transaction of the coherent
    benchmark's speed run on ``platform`` (enzian or cohet), counted by
    callgrind: the speed run alone (checks off) at ``transactions`` and at
    twice as many, each in a fresh interpreter under ``valgrind
    --tool=callgrind``; the difference of the two counts over
    ``transactions`` leaves out the interpreter, the set-up and the tables'
    generation. Needs valgrind (the CI installs it)."""
    import re
    import shutil
    import subprocess
    import tempfile

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise NotAvailableError("bench coherent --instructions: valgrind is not installed "
                                "(apt-get install valgrind)")
    counts = []
    for n in (transactions, 2 * transactions):
        with tempfile.TemporaryDirectory() as d:
            code = f"from ccsim import _native; _native.coherent_speed_run({platform!r}, {n})"
            run = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={d}/callgrind.out",
                                  sys.executable, "-c", code], capture_output=True, text=True)
        found = re.search(r"Collected\s*:\s*(\d+)", run.stderr)
        if run.returncode != 0 or found is None:
            raise CcsimError(f"bench coherent --instructions: callgrind of {n} transactions failed "
                             f"(exit {run.returncode}): {run.stderr.strip()[-500:]}")
        counts.append(int(found.group(1)))
    return {
        "instructions_transactions": [transactions, 2 * transactions],
        "instructions_counted": counts,
        "instructions_per_transaction": (counts[1] - counts[0]) / transactions,
    }


def _with_instructions(args, report: Dict[str, Any]) -> Dict[str, Any]:
    if args.instructions is not None:
        _at_least("bench coherent", "--instructions", args.instructions, 1)
        report.update(instructions_per_transaction(args.platform, args.instructions))
    return report


def _out_instructions(report: Dict[str, Any]) -> None:
    if "instructions_per_transaction" in report:
        n = report["instructions_transactions"]
        _out(f"  instructions per transaction (callgrind, {n[1]} less {n[0]} transactions): "
             f"{report['instructions_per_transaction']:,.0f} "
             f"(goal at most {report['instructions_per_transaction_goal']:,.0f})")


def _bench_coherent(args) -> int:
    _at_least("bench coherent", "--reads", args.reads, 1)
    if args.platform == "cohet":
        return _bench_coherent_cxl(args)
    _at_least("bench coherent", "--memory-lines", args.memory_lines, 1)
    report = _with_instructions(args, json.loads(_native.coherent_bench_json(args.reads, args.memory_lines)))
    if args.json:
        _out(json.dumps(report, indent=2))
        return 0
    _out(f"coherent, sequential reads through the DC: {report['transactions_per_sec'] / 1e3:.1f} k "
         f"transactions/s checks off ({report['events_per_sec'] / 1e6:.2f} M events/s, "
         f"{report['events_per_transaction']:.1f} events/transaction, {report['reads']} reads, "
         f"fastest of {report['runs']} runs)")
    _out(f"  with online checks: {report['checked_transactions_per_sec'] / 1e3:.1f} k transactions/s")
    share = report["transactions_per_sec"] / report["speed_target_per_sec"]
    _out(f"  speed target {report['speed_target_per_sec'] / 1e6:.0f} M transactions/s: "
         f"{'met' if report['speed_target_met'] else 'not met'} ({share:.2f}x of it)")
    _out(f"  an empty event loop at {report['events_per_transaction']:.1f} events/transaction "
         f"(bare binary heap, {report['bare_loop_events_per_sec'] / 1e6:.1f} M events/s): "
         f"{report['bare_loop_ceiling_per_sec'] / 1e6:.2f} M transactions/s")
    _out(f"  ratio to that ceiling: {report['ceiling_ratio']:.2f} (goal {report['ceiling_ratio_goal']:.1f})")
    _out_instructions(report)
    for m in report["memory"]:
        rss = m["rss_delta_bytes"]
        rss_text = "n/a" if rss is None else f"{rss / 2**20:.1f} MiB"
        _out(f"  {m['lines']} lines over {m['region_bytes'] / 2**20:.0f} MiB: resident memory +{rss_text}")
    ratio = report["memory_ratio"]
    _out(f"  ratio (1 GiB / 64 MiB): {'n/a' if ratio is None else f'{ratio:.2f}x'}")
    return 0


def _bench_coherent_cxl(args) -> int:
    report = _with_instructions(args, json.loads(_native.cxl_coherent_bench_json(args.reads)))
    if args.json:
        _out(json.dumps(report, indent=2))
        return 0
    _out(f"coherent, CXL.cache loads of the {report['platform']} device (system {report['system']}, "
         f"LLC hits): {report['transactions_per_sec'] / 1e3:.1f} k transactions/s checks off "
         f"({report['events_per_sec'] / 1e6:.2f} M events/s, {report['events_per_transaction']:.1f} "
         f"events/transaction, {report['loads']} loads, fastest of {report['runs']} runs)")
    _out(f"  with online checks: {report['checked_transactions_per_sec'] / 1e3:.1f} k transactions/s")
    _out(f"  an empty event loop at {report['events_per_transaction']:.1f} events/transaction "
         f"(bare binary heap, {report['bare_loop_events_per_sec'] / 1e6:.1f} M events/s): "
         f"{report['bare_loop_ceiling_per_sec'] / 1e6:.2f} M transactions/s")
    _out(f"  ratio to that ceiling: {report['ceiling_ratio']:.2f} (goal {report['ceiling_ratio_goal']:.1f})")
    _out_instructions(report)
    return 0


def _bench_sweep(args) -> int:
    from .sweep import bench_scaling, load_spec

    _at_least("bench sweep", "--jobs", args.jobs, 2)
    _at_least("bench sweep", "--repeat", args.repeat, 1)
    spec = load_spec(args.spec) if args.spec else None
    r = bench_scaling(spec, args.jobs, args.repeat)
    if args.json:
        _out(json.dumps(r, indent=2))
        return 0
    secs = lambda ts: ", ".join(f"{t:.1f}" for t in ts)  # noqa: E731
    _out(f"sweep {r['sweep']}: {r['points']} points, local process pool, {r['repeat']} run(s) each, alternating")
    _out(f"  1 worker:  best {r['points_per_sec_1']:.2f} points/s (s: {secs(r['seconds_1'])}; "
         f"CPU s: {secs(r['cpu_seconds_1'])})")
    _out(f"  {r['jobs']} workers: best {r['points_per_sec_n']:.2f} points/s (s: {secs(r['seconds_n'])}; "
         f"CPU s: {secs(r['cpu_seconds_n'])})")
    _out(f"  ratio (best over best): {r['ratio']:.2f}x, per pair: {', '.join(f'{x:.2f}' for x in r['ratios'])} "
         f"(goal {r['goal']:.1f}x: {'met' if r['goal_met'] else 'not met'}); datasets equal: {r['datasets_equal']}; "
         f"load average {r['load_average'][0]:.1f}")
    return 0


def _simulate_mutants(args) -> int:
    from .protocol import parse_instances

    seeds = 20 if args.seeds is None else args.seeds
    _at_least("simulate --mutants", "--seeds", seeds, 1)
    _at_least("simulate --mutants", "--ops", args.ops, 1)
    _at_least("simulate --mutants", "--lines", args.lines, 1)
    if args.jobs != 1 or args.no_checks or args.think_ns:
        raise UsageError("simulate --mutants: runs with checks, back to back, in one process "
                         "(no --jobs, --no-checks or --think-ns)")
    instances = parse_instances(args.instances) if args.instances else None
    p = _native.Platform.load(args.platform, None, _set_pairs(args.set) or None)
    args.system = choose_system(p, args.system)
    rows = json.loads(_native.mutation_coverage_json(p, args.system, seeds, args.ops, args.lines, instances,
                                                     args.seed))
    if args.json:
        _out(json.dumps({"platform": p.name, "system": args.system, "seed": args.seed, "seeds": seeds, "ops": args.ops,
                         "lines": args.lines, "mutants": rows}, indent=2))
        return 0
    by_checker = [r for r in rows if r["by_checker"]["verdict"] == "caught"]
    by_timing = [r for r in rows if (r["by_timing"] or {}).get("verdict") == "caught"]
    neither = [r for r in rows if r not in by_checker and r not in by_timing]
    _out(f"{p.name} system {args.system}: {len(rows)} mutants: {len(by_checker)} caught by the checker, "
         f"{len(by_timing)} by the random tester ({seeds} seeds from {args.seed} of {args.ops} operations on {args.lines} lines), "
         f"{len(neither)} by neither")
    for r in by_timing:
        t = r["by_timing"]
        _out(f"  tester, seed {t['seed']}: {r['mutant']}: {t['problem']}")
    for r in neither:
        why = "its row never fires in the checked configuration" if r["by_checker"]["verdict"] == "unexercised" \
            else "the checker's properties hold"
        _out(f"  neither ({why}): {r['mutant']}")
    return 0


def _simulate_seeds(args) -> int:
    from .simulate import simulate_seeds

    r = simulate_seeds(args.platform, args.seeds, first_seed=args.seed, jobs=args.jobs, system=args.system,
                       ops=args.ops, lines=args.lines, checks=not args.no_checks, think_ns=args.think_ns,
                       text_overrides=_set_pairs(args.set))
    if args.json:
        _out(json.dumps(r, indent=2))
    else:
        _out(f"{r['platform']} system {r['system']}: {r['seeds']} seeds from {r['first_seed']}, "
             f"{int(r['ops'])} operations, {int(r['rows_checked'])} rows checked, "
             f"{r['seconds']:.1f} s ({r['ops_per_sec'] / 1e3:.0f} k operations/s, {r['jobs']} jobs), "
             f"{len(r['failures'])} failing seeds")
        for f in r["failures"]:
            _out(f"  seed {f['seed']}: {f['error']}")
    return 1 if r["failures"] else 0


def cmd_simulate(args) -> int:
    if args.mutants:
        return _simulate_mutants(args)
    if args.instances is not None:
        raise UsageError("simulate: --instances applies to --mutants")
    if args.seeds is None:
        args.seeds = 1
    if args.seeds != 1 or args.jobs != 1:
        return _simulate_seeds(args)
    p = _native.Platform.load(args.platform, None, _set_pairs(args.set) or None)
    args.system = choose_system(p, args.system)
    params = {"system": args.system, "lines": args.lines, "checks": not args.no_checks,
              "think_ns": args.think_ns}
    # A violation raises ViolationFound (exit 1).
    r = _native.run_platform_workload(p, "random_test", "ops", float(args.ops), params, args.seed)
    m = r["metrics"]
    if args.json:
        _out(json.dumps({"platform": p.name, "system": args.system, "seed": args.seed, "metrics": m,
                         "trace_hash": r["trace_hash"]}, indent=2))
        return 0
    _out(f"{p.name} system {args.system}: {int(m['ops'])} operations, {int(m['rows_checked'])} rows checked, "
         f"{int(m['violations'])} violations")
    _out(f"reads checked against the sequential reference: {int(m['reads'])}, "
         f"mismatches (reads and final lines): {int(m['reference_mismatches'])}")
    _out(f"mean operation latency: {m['op_latency_ns']:.1f} ns")
    return 0


def cmd_sweep(args) -> int:
    from .sweep import load_spec, status, sweep

    spec = load_spec(args.spec)  # validates everything before anything is written
    if args.dry_run:
        st = status(spec, args.out)
        _out(f"{spec.name}: {st['points']} points ({st['done']} done, {st['failed']} of them failed; "
             f"{st['to_run']} to run); swept: {', '.join(st['columns']) or 'nothing'}")
        return 0
    result = sweep(spec, out=args.out, jobs=args.jobs, backend=args.backend, address=args.address,
                   progress=None if not args.no_progress else False)
    _out(f"{spec.name}: {len(result.df)} points ({result.ran} run, {result.reused} reused, "
         f"{result.failed} failed) -> {result.path}")
    return 0


def cmd_report(args) -> int:
    from .dashboard import dashboard, fmt_mape

    results = Path(args.results)
    html_path = None
    if args.html:
        html_path = Path(args.output) if args.output else results / "dashboard.html"
    elif args.output:
        raise UsageError("report: -o/--output names the HTML page; add --html")
    summary = dashboard(results, html_path=html_path)
    if args.json:
        _out(json.dumps(summary, indent=2))
        return 0
    rows = summary["experiments"]
    width = max(len(r["experiment"]) for r in rows)
    _out(f"{'#':>2}  {'experiment':<{width}}  {'pred. MAPE':>10}  {'worst':>8}  {'cal. MAPE':>9}  {'worst':>8}  claims")
    for r in rows:
        p, c, cl = r["prediction"], r["calibration"], r["claims"]
        _out(f"{r['rank']:>2}  {r['experiment']:<{width}}  {fmt_mape(p['mape_pct']):>10}  "
             f"{fmt_mape(p['max_abs_error_pct']):>8}  {fmt_mape(c['mape_pct']):>9}  "
             f"{fmt_mape(c['max_abs_error_pct']):>8}  {cl['held']}/{cl['total']} held"
             + (f", {cl['not_held']} not held" if cl["not_held"] else ""))
    if html_path is not None:
        _out(f"dashboard: {html_path}")
    return 0


def cmd_protocol(args) -> int:
    if args.action == "list":
        specs = protocol.specs()
        if args.json:
            _out(json.dumps(specs, indent=2))
        else:
            width = max((len(s["name"]) for s in specs), default=4)
            for s in specs:
                _out(f"{s['name']:<{width}}  {s['description']}")
        return 0
    if not args.spec:
        raise UsageError(f"protocol {args.action}: name a spec (see `ccsim protocol list`) or a path")
    if args.action == "generate":
        gen = protocol.generate(args.spec)
        _out(json.dumps(gen.stats, indent=2) if args.json else gen.text.rstrip("\n"))
        return 0
    if args.trace and args.action != "check":
        raise UsageError("protocol: --trace writes a check's counterexample; use it with `check`")
    if args.action == "check":
        instances = protocol.parse_instances(args.instances) if args.instances else None
        trace_path = None
        if args.trace:
            from . import timeline as tl

            tl.require()
            trace_path = tl.check_output(args.trace)
        result = protocol.check(args.spec, args.max_states, instances)
        _out(result.to_json() if args.json else result.text.rstrip("\n"))
        if trace_path is not None and result.violations:
            t = tl.Timeline()
            t.add_counterexample(f"{args.spec}: {result.violations[0].get('property', 'violation')}",
                                 result.violations[0])
            t.write(trace_path)
            if not args.json:
                _out(f"counterexample timeline -> {trace_path}")
        elif trace_path is not None:
            sys.stderr.write(f"--trace {trace_path}: no violation, so no counterexample was written\n")
        # 1 means: the check ran and found a violation (or could not finish).
        return 0 if result.verified else ViolationFound.exit_code
    formats = [f for f in protocol.EXPORT_FORMATS if getattr(args, f if f == "json" else f"fmt_{f}")]
    if len(formats) != 1:
        raise UsageError("protocol export: choose exactly one of --json, --dot, --sv, --murphi")
    instances = protocol.parse_instances(args.instances) if args.instances else None
    text = protocol.export(args.spec, formats[0], instances)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ccsim", description="Simulate CPU-accelerator interconnects and compare with the papers.")
    parser.add_argument("--version", action="version", version=f"ccsim {_native.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    r = sub.add_parser("reproduce", help="run experiments and compare them with the papers")
    r.add_argument("names", nargs="*", metavar="NAME", help="experiment names or paths to experiment TOML files")
    r.add_argument("--all", action="store_true", help="run every shipped experiment")
    r.add_argument("--list", action="store_true", help="list the shipped experiments")
    r.add_argument("--quick", action="store_true", help="run the reduced sweep (for CI)")
    r.add_argument("--json", action="store_true", help="print a machine-readable summary to stdout")
    r.add_argument("--out", default="results", help="output directory (default: results/)")
    r.add_argument("--seed", type=_seed, default=0, help="simulation seed, 0 to 2**64 - 1 (default: 0)")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="platform override, like pcie.lanes=8 or cohet:pcie.lanes=8 (repeatable)")
    r.add_argument("--jobs", type=int, default=1, help="run points in N processes (default: 1)")
    r.add_argument("--trace", nargs="?", const=True, default=None, metavar="PATH",
                   help="write Perfetto timelines: alone, OUT/NAME/trace.perfetto-trace per experiment (and a "
                   "Chrome trace JSON per point under OUT/NAME/traces/); with PATH, one trace of every point there")
    r.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    r.set_defaults(func=cmd_reproduce)

    i = sub.add_parser("info", help="list component types and workloads, with every parameter's declaration")
    i.add_argument("component", nargs="?", help="show only this component type or workload")
    i.add_argument("--json", action="store_true")
    i.add_argument("--markdown", action="store_true", help="everything as Markdown (docs/parameters.md)")
    i.set_defaults(func=cmd_info)

    p = sub.add_parser("platform", help="show a platform's parameters: value, unit, range and provenance")
    p.add_argument("name", nargs="?", help="shipped platform name or path to a TOML file")
    p.add_argument("--list", action="store_true", help="list the shipped platforms")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_platform)

    v = sub.add_parser("validate", help="check platform or experiment TOML files")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.set_defaults(func=cmd_validate)

    b = sub.add_parser("bench", help="benchmarks")
    b.add_argument("what", choices=["kernel", "coherent", "sweep"], help="what to benchmark")
    b.add_argument("--events", type=int, default=20_000_000, help="kernel: events per loop (default: 20M)")
    b.add_argument("--reads", type=int, default=200_000,
                   help="coherent: sequential reads per speed run (default: 200000)")
    b.add_argument("--memory-lines", type=int, default=100_000,
                   help="coherent: lines read over 64 MiB and over 1 GiB (default: 100000)")
    b.add_argument("--platform", default="enzian", choices=["enzian", "cohet"],
                   help="coherent: enzian (reads through the ECI directory controller) or cohet "
                   "(CXL.cache loads of the device's DCOH hitting in the LLC home)")
    b.add_argument("--instructions", type=int, nargs="?", const=20_000, default=None, metavar="N",
                   help="coherent: also count instructions per transaction with callgrind (valgrind), "
                   "from speed runs of N and 2N transactions (default N: 20000)")
    b.add_argument("--jobs", type=int, default=2, help="sweep: workers to compare with one (default: 2)")
    b.add_argument("--repeat", type=int, default=1, help="sweep: alternate 1 and N workers this many times")
    b.add_argument("--spec", default=None, help="sweep: a sweep spec (default: 24 points of the DC's DCUs "
                   "against throughput)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bench)

    pr = sub.add_parser("protocol", help="protocol toolkit: list, generate, check, export")
    pr.add_argument("action", choices=["list", "generate", "check", "export"])
    pr.add_argument("spec", nargs="?", help="shipped spec name (see `protocol list`) or path to a spec TOML")
    pr.add_argument("--json", action="store_true", help="JSON output (list, generate, check); export: the table IR")
    pr.add_argument("--max-states", type=int, default=0, help="check: stop after N states (0: default limit)")
    pr.add_argument("--instances", default=None, metavar="ROLE=N[,ROLE=N...]",
                    help="check, export --murphi: agents per role instead of the spec's [check] (e.g. core=2,device=2)")
    for f, what in (("dot", "Graphviz"), ("sv", "SystemVerilog ROM"), ("murphi", "Murphi model")):
        pr.add_argument(f"--{f}", dest=f"fmt_{f}", action="store_true", help=f"export: {what}")
    pr.add_argument("-o", "--output", help="export: write to this file instead of stdout")
    pr.add_argument("--trace", metavar="PATH", default=None,
                    help="check: write the first violation's counterexample as a Perfetto timeline to PATH")
    pr.set_defaults(func=cmd_protocol)

    sm = sub.add_parser("simulate", help="run the random tester on a system declared as data (a platform's [systems.NAME])")
    sm.add_argument("platform", help="shipped platform name or path to a platform TOML")
    sm.add_argument("--system", default=None,
                    help="the platform's system section (default: its `random` system, or its only one)")
    sm.add_argument("--ops", type=int, default=1000, help="operations per agent with local events (default: 1000)")
    sm.add_argument("--lines", type=int, default=4, help="lines the operations pick from (default: 4)")
    sm.add_argument("--think-ns", type=float, default=0.0, help="pause between operations (default: 0)")
    sm.add_argument("--seed", type=_seed, default=0, help="simulation seed, 0 to 2**64 - 1 (default: 0)")
    sm.add_argument("--no-checks", action="store_true", help="skip the per-row invariant checks")
    sm.add_argument("--seeds", type=int, default=None,
                    help="run N seeds from --seed on (shards of a long test; failing seeds are listed); "
                    "with --mutants, the seeds tried per mutant (default: 1; with --mutants 20)")
    sm.add_argument("--mutants", action="store_true",
                    help="mutation coverage: every single-row mutant of the system's protocol, judged by the "
                    "checker and, when it lets one pass, by the random tester (--seeds, --ops, --lines)")
    sm.add_argument("--instances", default=None, metavar="ROLE=N[,ROLE=N...]",
                    help="with --mutants: the checker's agents per role instead of the spec's [check]")
    sm.add_argument("--jobs", type=int, default=1, help="with --seeds: N processes at a time (default: 1)")
    sm.add_argument("--set", action="append", metavar="KEY=VALUE", help="override (repeatable)")
    sm.add_argument("--json", action="store_true")
    sm.set_defaults(func=cmd_simulate)

    sw = sub.add_parser("sweep", help="sweep declared parameters over experiments; results in one parquet dataset")
    sw.add_argument("spec", help="sweep spec TOML (see examples/README.md)")
    sw.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="worker processes (local) or CPUs of a local Ray instance (default: all CPUs)")
    sw.add_argument("--backend", choices=["local", "ray"], default="local",
                    help="local process pool (default) or one Ray task per point")
    sw.add_argument("--address", default=None,
                    help="ray: address of an existing cluster (default: start a local instance)")
    sw.add_argument("--out", default="results", help="output directory (default: results/; the dataset goes "
                    "to OUT/sweeps/NAME/points.parquet)")
    sw.add_argument("--dry-run", action="store_true",
                    help="validate the spec and print how many points would run; write nothing")
    sw.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    sw.set_defaults(func=cmd_sweep)

    rp = sub.add_parser("report", help="the validation state of every experiment in a results directory: "
                        "error, claims, plots, parameters (--html: one self-contained page)")
    rp.add_argument("results", nargs="?", default="results",
                    help="results directory written by `ccsim reproduce` (default: results/)")
    rp.add_argument("--html", action="store_true",
                    help="write the dashboard page (default RESULTS/dashboard.html; see -o)")
    rp.add_argument("-o", "--output", default=None, help="with --html: write the page here")
    rp.add_argument("--json", action="store_true", help="print the summary as JSON (the page's numbers)")
    rp.set_defaults(func=cmd_report)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``ccsim`` console script; returns the exit code."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            return 2
        return int(args.func(args))
    except CcsimError as e:
        # One line whatever the message holds (an argument may carry any
        # line-breaking character).
        one_line = " ".join(str(e).splitlines())
        sys.stderr.write(f"error: {one_line}\n")
        return e.exit_code
    except BrokenPipeError:
        return 0
    except OSError as e:
        # A path the user gave cannot be read or written (an output
        # directory that cannot be created, a file that cannot be written).
        where = f"{e.filename}: " if e.filename else ""
        one_line = " ".join(f"{where}{e.strerror or e}".splitlines())
        sys.stderr.write(f"error: {one_line}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: finished points are kept in points.jsonl; rerun to resume\n")
        return 130
    except BaseException as e:
        # A panic in the Rust core (pyo3's PanicException derives from
        # BaseException) is a bug in ccsim, not in the input: one line that
        # says so, exit 70 (EX_SOFTWARE); CCSIM_DEBUG=1 shows the traceback.
        if type(e).__name__ != "PanicException" or os.environ.get("CCSIM_DEBUG"):
            raise
        one_line = " ".join(str(e).splitlines())
        sys.stderr.write(f"internal error (a bug in ccsim, please report it with the command): {one_line}\n")
        return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
