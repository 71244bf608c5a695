"""Claims of the paper's text, evaluated on the points of a run.

An experiment's ``[[claims]]`` (validated in Rust when the file is loaded)
are the checkable statements of the paper's text: an ordering, a crossing,
"constant up to", "linear", a bound, a ratio, a peak, where a series is
smallest and largest ("1.33x (Bench5) to 2.05x (Bench1)"). Each is evaluated on the
points actually simulated: a claim about an x that was not run is
*not evaluated*, never silently held. A bound is scored as a bound (held or
not, with the margin to it), never as a point error; a peak ("a peak
speedup of 4.42x") is a point the curve reaches, scored by its error.

:func:`evaluate_claims` takes a claim list (as ``Experiment.to_dict()``
gives it) and the values by series and x, so it can be tested on synthetic
data; :meth:`ccsim.ExperimentResult.claims` applies it to a run.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .report import fmt_num as _num

HELD = "held"
NOT_HELD = "not_held"
NOT_EVALUATED = "not_evaluated"

KINDS = ("order", "crossing", "constant_up_to", "converges_after", "linear_after", "bound", "ratio", "peak",
         "extremes")

Values = Mapping[str, Mapping[float, float]]


def _pair(a: float, b: float) -> Tuple[str, str]:
    """Two numbers compared: with more digits when 4 cannot tell them apart."""
    x, y = _num(a), _num(b)
    if x == y and a != b:
        return f"{a:.7g}", f"{b:.7g}"
    return x, y


def _pct(v: float) -> str:
    """A signed margin in percent: one decimal, or two significant digits
    below 0.1% (so a value just inside a bound does not read +0.0%)."""
    return f"{v:+.2g}%" if 0 < abs(v) < 0.1 else f"{v:+.1f}%"


def _x(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _series(values: Values, name: str) -> Dict[float, float]:
    return {float(x): v for x, v in values.get(name, {}).items()
            if v is not None and not (isinstance(v, float) and math.isnan(v))}


def _at(claim: Mapping[str, Any], have: Sequence[Dict[float, float]]) -> Tuple[List[float], List[float]]:
    """The x the claim is about that every operand has, and those missing.
    Without declared x: every x all operands were run at."""
    common = sorted(set.intersection(*(set(h) for h in have))) if have else []
    declared = [float(x) for x in claim.get("x") or []]
    if not declared:
        return common, []
    return [x for x in declared if x in common], [x for x in declared if x not in common]


def _not_run(missing: List[float]) -> Tuple[Optional[bool], str]:
    return None, "x = " + ", ".join(_x(x) for x in missing) + " not run"


def _run_xs(c, vals) -> Tuple[Optional[List[float]], Optional[Tuple[Optional[bool], str]]]:
    """The claim's x values that were run, or the verdict when some or all
    were not."""
    xs, missing = _at(c, vals)
    if missing:
        return None, _not_run(missing)
    if not xs:
        return None, (None, "no x run")
    return xs, None


def _order(c, vals):
    a, b = vals
    xs, unrun = _run_xs(c, vals)
    if unrun:
        return unrun
    bad = [x for x in xs if not a[x] < b[x]]
    parts = []
    for x in xs:
        u, v = _pair(a[x], b[x])
        parts.append(f"x={_x(x)}: {u} {'<' if a[x] < b[x] else '≥'} {v}")
    return not bad, "; ".join(parts)


def _crossing(c, vals):
    a, b = vals
    lo, hi = float(c["lo"]), float(c["hi"])
    xs = sorted(set(a) & set(b))
    if not xs:
        return None, "no x run"
    above = [x for x in xs if a[x] > b[x]]
    if not above:
        if xs[-1] >= hi:
            return False, f"{c['series'][0]} never exceeds {c['series'][1]} up to x={_x(xs[-1])}"
        return None, f"no crossing up to x={_x(xs[-1])}, the last x run (below {_x(hi)})"
    first = above[0]
    below = [x for x in xs if x < first]
    last_below = below[-1] if below else None
    where = (f"crosses in ({_x(last_below)}, {_x(first)}]" if last_below is not None
             else f"already above at x={_x(first)}, the first x run")
    numbers = "; ".join(f"x={_x(x)}: {_num(a[x])} vs {_num(b[x])}" for x in ([last_below] if below else []) + [first])
    detail = f"{where} (claimed ({_x(lo)}, {_x(hi)}]); {numbers}"
    if first <= lo or first > hi:
        return False, detail
    # The crossing lies in (last_below, first]: inside (lo, hi] only if
    # last_below >= lo; otherwise the run cannot tell.
    if last_below is None or last_below < lo:
        return None, detail + "; no x run in the claim's interval below the crossing"
    return True, detail


def _within(c, s, xs, ref_x, label):
    """Whether every x of ``xs`` lies within the claim's ``tol`` of the
    value at ``ref_x``, with the numbers behind it."""
    ref = s[ref_x]
    dev = max(abs(s[x] - ref) / abs(ref) for x in xs) if ref else math.inf
    detail = (f"x={_x(xs[0])}..{_x(xs[-1])}: " + ", ".join(_num(s[x]) for x in xs)
              + f"; max deviation{label} {dev * 100:.1f}% (tolerance {float(c['tol']) * 100:.1f}%)")
    return dev <= float(c["tol"]), detail


def _constant_up_to(c, vals):
    (s,) = vals
    upto = float(c["x"][0])
    xs = sorted(x for x in s if x <= upto)
    if upto not in s:
        return _not_run([upto])
    if len(xs) < 2:
        return None, f"only x={_x(upto)} run up to {_x(upto)}"
    return _within(c, s, xs, xs[0], "")


def _converges_after(c, vals):
    (s,) = vals
    start = float(c["x"][0])
    end = float(c["x"][1]) if len(c["x"]) > 1 else math.inf
    xs = sorted(x for x in s if start <= x <= end)
    missing = [x for x in (start, end) if x != math.inf and x not in s]
    if missing:
        return _not_run(missing)
    if len(xs) < 2:
        return None, f"only x={_x(start)} run at or above {_x(start)}"
    return _within(c, s, xs, xs[-1], f" from x={_x(xs[-1])}")


def _linear_after(c, vals):
    (s,) = vals
    start = float(c["x"][0])
    xs = sorted(x for x in s if x >= start)
    if start not in s:
        return _not_run([start])
    if len(xs) < 3:
        return None, f"{len(xs)} x run at or above {_x(start)} (a line needs 3 to be tested)"
    ys = [s[x] for x in xs]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    slope = sxy / sxx
    r2 = 1.0 if syy == 0 else (sxy * sxy) / (sxx * syy)
    detail = (f"{n} x from {_x(start)} to {_x(xs[-1])}: slope {slope:.4g} per unit x, "
              f"R² {r2:.4f} (needed ≥ {float(c['r2'])})")
    return r2 >= float(c["r2"]), detail


def _bound(c, vals):
    (s,) = vals
    xs, missing = _at(c, [s])
    if missing:
        return _not_run(missing)
    if not xs:
        return None, "no x run"
    lower, upper = c.get("lower"), c.get("upper")
    ok, parts = True, []
    for x in xs:
        v = s[x]
        bits = []
        if lower is not None:
            ok &= v >= lower
            bits.append(f"{_pct((v - lower) / abs(lower) * 100)} from lower {_num(lower)}" if lower
                        else f"{_num(v - lower)} above lower 0")
        if upper is not None:
            ok &= v <= upper
            bits.append(f"{_pct((upper - v) / abs(upper) * 100)} to upper {_num(upper)}" if upper
                        else f"{_num(upper - v)} below upper 0")
        parts.append(f"x={_x(x)}: {_num(v)} ({', '.join(bits)})")
    return ok, "; ".join(parts)


def _ratio(c, vals):
    a, b = vals
    xs, unrun = _run_xs(c, vals)
    if unrun:
        return unrun
    lo, hi = float(c["lo"]), float(c["hi"])
    ok, parts = True, []
    for x in xs:
        r = a[x] / b[x] if b[x] else math.inf
        ok &= lo <= r <= hi
        parts.append(f"x={_x(x)}: {_num(a[x])} / {_num(b[x])} = {r:.3g}")
    return ok, "; ".join(parts) + f" (claimed [{_num(lo)}, {_num(hi)}])"


def _peak(c, vals):
    """The series' largest value over the claim's x (every x run when it
    declares none) against the text's ``value``: a point, with its error."""
    xs, unrun = _run_xs(c, vals)
    if unrun:
        return unrun
    (s,) = vals
    top = max(xs, key=lambda x: s[x])
    value, tol = float(c["value"]), float(c["tol"])
    err = (s[top] - value) / abs(value)
    detail = (f"peak {_num(s[top])} at x={_x(top)} (of x={_x(xs[0])}..{_x(xs[-1])}, {len(xs)} run); "
              f"{_pct(err * 100)} against {_num(value)} (tolerance {tol * 100:.1f}%)")
    return abs(err) <= tol, detail


def _extremes(c, vals):
    """Where the series is smallest and largest over the claim's x (every
    x run when it declares none), against the text's ``smallest`` and
    ``largest`` x: an ordering, whatever the values."""
    xs, unrun = _run_xs(c, vals)
    if unrun:
        return unrun
    (s,) = vals
    want = [(name, c.get(name)) for name in ("smallest", "largest")]
    missing = [float(at) for _, at in want if at is not None and float(at) not in xs]
    if missing:
        return _not_run(missing)
    ok, parts = True, []
    for name, at in want:
        if at is None:
            continue
        pick = min if name == "smallest" else max
        got = pick(xs, key=lambda x: s[x])
        # A tie with the claimed x holds: the text cannot tell them apart.
        held = s[float(at)] == s[got]
        ok &= held
        parts.append(f"{name} at x={_x(got)} ({_num(s[got])})"
                     + ("" if held else f", not x={_x(float(at))} ({_num(s[float(at)])})"))
    return ok, "; ".join(parts) + f" (of x={', '.join(_x(x) for x in xs)})"


_EVAL = {"order": _order, "crossing": _crossing, "constant_up_to": _constant_up_to,
         "converges_after": _converges_after,
         "linear_after": _linear_after, "bound": _bound, "ratio": _ratio,
         "peak": _peak, "extremes": _extremes}


def evaluate_claim(claim: Mapping[str, Any], values: Values) -> Dict[str, Any]:
    """One claim on ``values`` (``{series: {x: value}}``): a record with the
    claim's quote, section, kind, series, expect, and ``verdict`` (held,
    not_held, not_evaluated), ``held`` (True, False or None) and ``detail``
    (the numbers behind the verdict)."""
    kind = claim["kind"]
    if kind not in _EVAL:
        raise ValueError(f"unknown claim kind {kind!r}; expected one of {', '.join(KINDS)}")
    held, detail = _EVAL[kind](claim, [_series(values, s) for s in claim["series"]])
    verdict = NOT_EVALUATED if held is None else (HELD if held else NOT_HELD)
    return {
        "kind": kind,
        "series": " vs ".join(claim["series"]),
        "section": claim["section"],
        "quote": claim["quote"],
        "verdict": verdict,
        "held": held,
        "detail": detail,
        "expect": claim.get("expect", HELD),
        "why": claim.get("why", ""),
        "why_not_held": claim.get("why_not_held", ""),
    }


def evaluate_claims(claims: Sequence[Mapping[str, Any]], values: Values) -> List[Dict[str, Any]]:
    """Every claim on ``values``, numbered from 0 in ``claim``."""
    return [{"claim": i, **evaluate_claim(c, values)} for i, c in enumerate(claims)]
