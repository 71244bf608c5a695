"""ccsim: a fast, calibrated simulator for CPU-accelerator interconnects.

Quick tour::

    import ccsim
    ccsim.experiments()                       # ['cohet-dma', 'pio-pcie', ...]
    r = ccsim.reproduce("cohet-dma", quick=True)
    r.df                                      # pandas DataFrame, sim vs paper
    r.plot("cohet-dma.png"); print(r.report())
    p = ccsim.Platform.load("cohet", overrides={"pcie.lanes": 8})
    p.components()["pcie"]["params"]["lanes"]  # (8, 'override')
    ccsim.sweep("examples/dc_units.toml", jobs=2).df   # a parameter sweep, one row per point
    ccsim.dashboard("results", html_path="dashboard.html")  # the validation page; returns its JSON summary

Errors are the classes of :mod:`ccsim.errors`; configs and results pickle
by rebuilding from their config.
"""

from __future__ import annotations

from typing import Any, List

from . import _native, protocol, timeline
from .errors import (
    CcsimError,
    ConfigError,
    NotAvailableError,
    SimulationError,
    UsageError,
    ViolationFound,
    check_seed,
)
from .dashboard import dashboard
from .experiment import ExperimentResult, describe_experiments, experiments, reproduce, run_one
from .simulate import mutation_coverage, simulate, simulate_seeds
from .sweep import SweepResult, sweep

Platform = _native.Platform
Experiment = _native.Experiment
__version__ = _native.__version__


def platforms() -> List[str]:
    """Names of the shipped platforms."""
    return list(_native.list_platforms())


def component_types() -> List[Any]:
    """Every component type with its params, ports and stats."""
    return list(_native.component_types())


def workloads() -> List[Any]:
    """Every workload with its params and metrics."""
    return list(_native.workloads())


def run_point(experiment: str, series: str, x: float, seed: int = 0, overrides=None, trace: bool = False):
    """Runs one point of one series; returns metrics, stats, trace hash (and
    the Chrome trace JSON when ``trace``)."""
    seed = check_seed(seed)
    exp = _native.Experiment.load(str(experiment))
    platform = next((s["platform"] for s in exp.to_dict()["series"] if s["name"] == series), "")
    return run_one(exp, series, platform, float(x), seed, overrides, None, trace)


__all__ = [
    "CcsimError",
    "ConfigError",
    "Experiment",
    "ExperimentResult",
    "NotAvailableError",
    "Platform",
    "SimulationError",
    "UsageError",
    "ViolationFound",
    "component_types",
    "dashboard",
    "describe_experiments",
    "experiments",
    "platforms",
    "protocol",
    "reproduce",
    "run_point",
    "mutation_coverage",
    "simulate",
    "simulate_seeds",
    "sweep",
    "SweepResult",
    "timeline",
    "workloads",
]
