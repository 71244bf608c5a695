"""Type stubs of ``ccsim._native``, the Rust extension module (crate
``crates/py``). Use the ``ccsim`` package; this module is its engine."""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, TypedDict, Union, final

__version__: str

# Shapes of the plain data the functions return (stub-only names).

_Scalar = Union[int, float, bool, str]

class _ParamInfo(TypedDict):
    name: str
    kind: str  # "integer" | "number" | "boolean" | "string" | "one of a|b"
    choices: List[str]
    default: Optional[_Scalar]
    required: bool
    unit: str
    description: str

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
    def __reduce__(self) -> Tuple[Any, Tuple[str, Dict[str, _Scalar]]]: ...

@final
class Experiment:
    """A validated experiment; pickles by reloading from ``origin``."""

    @staticmethod
    def load(name_or_path: str) -> Experiment: ...
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
        references [{series, x, value, role, citation}]."""
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
def component_types() -> List[_ComponentInfo]: ...
def workloads() -> List[_WorkloadInfo]: ...
def list_platforms() -> List[str]: ...
def list_experiments() -> List[str]: ...
def shipped_text(kind: str, name: str) -> Optional[str]: ...
def kernel_bench_json(events: int) -> str: ...
def coherent_bench_json(reads: int, memory_lines: int) -> str: ...
def protocol_list() -> List[Dict[str, str]]: ...
def protocol_generate(spec: str) -> Tuple[str, str]:
    """(summary text, generator stats JSON) of a shipped spec name or path."""
def protocol_check(spec: str, max_states: int = 0) -> Tuple[str, str, bool]:
    """(report JSON, report text, verified)."""
def protocol_export(spec: str, format: str) -> str:
    """format: "json" | "dot" | "sv" | "murphi"."""
