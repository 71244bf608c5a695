"""Type stubs of ``ccsim._native``, the Rust extension module (crate
``crates/py``). Use the ``ccsim`` package; this module is its engine."""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, TypedDict, Union, final

__version__: str

# Shapes of the plain data the functions return (stub-only names).

_Scalar = Union[int, float, bool, str]

class _RangeInfo(TypedDict):
    text: str  # "≥ 0", "> 0", "[1, 5]", "(0, 1]", "one of 64, 128", "power of two in [128, 4096]"; "" for non-numbers
    min: Optional[float]
    min_inclusive: Optional[bool]
    max: Optional[float]
    max_inclusive: Optional[bool]
    one_of: List[int]
    power_of_two: bool

# Functional form: the provenance key "from" is a Python keyword.
_ParamInfo = TypedDict(
    "_ParamInfo",
    {
        "name": str,
        "kind": str,  # "integer" | "number" | "boolean" | "string" | "one of a|b"
        "choices": List[str],
        "default": Optional[_Scalar],
        "required": bool,
        "unit": str,
        "range": _RangeInfo,
        "from": str,  # provenance of the default: a paper section, a datasheet, or "assumed"
        "description": str,
    },
)

class _PortInfo(TypedDict):
    name: str
    required: bool
    description: str

class _StatInfo(TypedDict):
    name: str
    kind: str  # "counter" | "histogram"
    unit: str
    description: str

class _ComponentInfo(TypedDict):
    type: str
    description: str
    params: List[_ParamInfo]
    ports: List[_PortInfo]
    stats: List[_StatInfo]

class _MetricInfo(TypedDict):
    name: str
    unit: str
    description: str

class _WorkloadInfo(TypedDict):
    name: str
    description: str
    params: List[_ParamInfo]
    metrics: List[_MetricInfo]

class _ComponentConfig(TypedDict):
    type: str
    params: Dict[str, Tuple[_Scalar, str]]  # name -> (value, provenance)

class _PointResult(TypedDict):
    metrics: Dict[str, float]
    stats: Dict[str, float]
    trace_json: Optional[str]
    trace_hash: str

# The exception classes (re-exported by ``ccsim.errors``).

class CcsimError(Exception):
    exit_code: int  # 2: bad input

class ConfigError(CcsimError, ValueError):
    file: str
    path: str
    message: str

class SpecError(CcsimError, ValueError):
    path: str
    message: str

class UsageError(CcsimError): ...
class SimulationError(CcsimError): ...
class NotAvailableError(CcsimError): ...
class ViolationFound(CcsimError): ...  # exit_code 1

@final
class Platform:
    """A validated platform; pickles by reloading from ``origin`` with ``overrides``."""

    @staticmethod
    def load(
        name_or_path: str,
        overrides: Optional[Mapping[str, _Scalar]] = None,
        text_overrides: Optional[Sequence[Tuple[str, str]]] = None,
    ) -> Platform: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def paper(self) -> List[str]: ...
    @property
    def source(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def overrides(self) -> Dict[str, _Scalar]: ...
    def components(self) -> Dict[str, _ComponentConfig]: ...
    def systems(self) -> Dict[str, Dict[str, Any]]: ...
    def __reduce__(self) -> Tuple[Any, Tuple[str, Dict[str, _Scalar]]]: ...

@final
class Experiment:
    """A validated experiment; pickles by reloading from ``origin``."""

    @staticmethod
    def load(name_or_path: str) -> Experiment: ...
    def platform(
        self,
        name: str,
        overrides: Optional[Mapping[str, _Scalar]] = None,
        text_overrides: Optional[Sequence[Tuple[str, str]]] = None,
    ) -> Platform:
        """The platform ``name`` the experiment loaded (each file parsed once),
        with the overrides applied to a copy; parses no file."""
    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def origin(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]:
        """Keys: name, title, paper, figures, calibrated_on, notes, source,
        x {name, label, log}, sweep, quick, series [{name, label, platform,
        workload, params, metric, panel}], panels [{name, ylabel, ylog}],
        references [{series, x, value, role, citation}], claims [{quote,
        section, kind, series, x, lo, hi, tol, r2, lower, upper, why,
        expect}] (absent fields None; x empty for every x run)."""
    def __reduce__(self) -> Tuple[Any, Tuple[str]]: ...

def run_point(
    experiment: Experiment,
    series: str,
    x: float,
    seed: int = 0,
    overrides: Optional[Mapping[str, _Scalar]] = None,
    text_overrides: Optional[Sequence[Tuple[str, str]]] = None,
    trace: bool = False,
) -> _PointResult: ...
def run_platform_workload(
    platform: Platform,
    workload: str,
    x_name: str,
    x: float,
    params: Optional[Mapping[str, _Scalar]] = None,
    seed: int = 0,
    trace: bool = False,
) -> _PointResult: ...
def component_types() -> List[_ComponentInfo]: ...
def workloads() -> List[_WorkloadInfo]: ...
def list_platforms() -> List[str]: ...
def list_experiments() -> List[str]: ...
def parse_counts() -> Dict[str, int]:
    """{"platforms": n, "experiments": m}: texts parsed so far in this process."""
def shipped_text(kind: str, name: str) -> Optional[str]: ...
def kernel_bench_json(events: int) -> str: ...
def coherent_bench_json(reads: int, memory_lines: int) -> str: ...
def cxl_coherent_bench_json(loads: int) -> str: ...
def coherent_speed_run(platform: str, transactions: int) -> int: ...
def mutation_coverage_json(platform: Platform, system: str, seeds: int, ops: int, lines: int, instances: Optional[Dict[str, int]] = None, first_seed: int = 0) -> str: ...
def protocol_list() -> List[Dict[str, str]]: ...
def protocol_generate(spec: str) -> Tuple[str, str]:
    """(summary text, generator stats JSON) of a shipped spec name or path."""
def protocol_check(spec: str, max_states: int = 0, instances: Optional[Dict[str, int]] = None) -> Tuple[str, str, bool]:
    """(report JSON, report text, verified)."""
def protocol_export(spec: str, format: str, instances: Optional[Dict[str, int]] = None) -> str:
    """format: "json" | "dot" | "sv" | "murphi"."""
