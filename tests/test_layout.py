"""The shape of the package: every public name of the API imports from the path users know,
every module imports first in a fresh interpreter, and no two modules import each other in a
loop at module level (the import graph is read from the source with ``ast``)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import fastbench

PACKAGE_DIR = Path(fastbench.__file__).resolve().parent

# The public API, module by module: every name users could import before the package was
# split into subpackages, from the same path. Adding a name is fine; removing one breaks users.
PUBLIC = {
    "fastbench": """ClockSpec ClockTable ClockUnavailable Comparison CountersUnavailable
        FastbenchError InstructionComparison Measurement ResultsFileError Timer WorkerError
        __version__ analysis clocks compare compare_instruction_counts compare_measurements
        counters importable kernels load load_any measure memory results roofline save stats
        timeit amdahl profile profiling sample suite compare_versions gate GateResult
        Identity""",
    "fastbench.suite": """DEFAULT_WATTS_PER_CORE KINDS OBJECTIVES BatchSweep CorePowerModel Energy
        EnergyMeter EnergySource Latency MemoryFigures MetricValue Normalized OfflineResult
        ParameterSweep PowerLawFit RateSearch ServerResult SingleStreamResult Speedup
        SuiteResult ThreadSweep Throughput UnfairComparison VariantRecord batch_sweep
        dominated_by early_stopping early_stopping_min_queries efficiency_score energy_source
        knee max_server_rate measure_energy offline parameter_sweep pareto_front power_law_fit
        run server single_stream thread_sweep""",
    "fastbench.profiling": """BOUNDS BYS Bottleneck Bottlenecks Cell FAMILIES NOT_IN_OP OUTSIDE
        Overhead Profile ProfileChange ProfileDiff ProfileRow ProfileRows Projection TraceEvent
        amdahl chrome_trace diff_profiles folded_stacks op_family profile ratio_ci
        write_chrome_trace write_folded MIN_INTERVAL_S SampleProfile SampleRow SampleRows Sampler
        sample sample_script""",
    "fastbench.analysis": """CONVENTION Cost Count Coverage MemoryEstimate ModelAnalysis
        ModulePlacement ModuleRow Parameters TorchUnavailable UncountedOp analyze dtype_bytes
        format_count formulas layers""",
    "fastbench.counters": """CountComparison CounterResult CountersUnavailable EventAvailability
        EventCount InstructionCount SampleCounts SimulatedCounts SimulationTimeout
        SimulationUnavailable available compare_counts count count_instructions count_samples
        count_statement_instructions event_names simulate""",
    "fastbench.machine": """RunVariation cache_dir fingerprint known_run_variation
        store_run_variation variation_path""",
    "fastbench.timing": """ImportRef WorkerError importable measure measure_run_variation
        timeit""",
    "fastbench.kernels": """BANDWIDTH_KINDS BandwidthResult PeakResult bandwidth conv2d gemm
        gemm_bf16 gemm_bf16_isa gemm_isa peak_flops to_bfloat16""",
    "fastbench.memory": "CallMemory MemoryTracker MemoryUsage Snapshot call_memory format_size track",
    "fastbench.results": """ResultsFile ResultsFileError SCHEMA_VERSION load load_any load_file
        load_pyperf load_pytest_benchmark machine_metadata register_kind save""",
    "fastbench.roofline": """ABOVE_ROOF_CAUSES ABOVE_ROOF_TOLERANCE AGREE_WITHIN MAX_READINGS
        Placement Roofline cache_path calibrate place plot workload_threads""",
    "fastbench.stats": """MIN_RUNS MIN_SAMPLES Outliers RunLevel SampleComparison Summary
        adjust_pvalues as_samples compare_runs compare_samples hodges_lehmann median_ci
        median_ratio_ci required_samples
        run_level samples_for_power signed_rank_ci summarize quantile_ci quantile_ci_min_samples
        wilson_interval""",
    "fastbench.analysis.formulas": """ACTIVATIONS ELEMENTWISE_FLOPS GRID_SAMPLE_MODES INDEX_BYTES
        activation
        adaptive_avg_pool attention attention_parts avg_pool batch_norm bmm conv conv1d conv2d
        conv3d conv_output_shape conv_output_size conv_transpose1d conv_transpose2d
        conv_transpose3d dropout einsum elementwise embedding group_norm layer_norm linear
        grid_sample log_softmax matmul max_pool pool_output_size rms_norm roi_align softmax""",
    "fastbench.analysis.layers": """Activation AdaptiveAvgPool2d AvgPool2d BatchNorm1d BatchNorm2d
        BatchNorm3d Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d Dropout
        ELU Embedding Flatten GELU GroupNorm Hardsigmoid Hardswish Layer LayerAnalysis LayerNorm
        LayerRow LeakyReLU Linear LogSoftmax MaxPool2d Mish MultiHeadAttention RMSNorm ReLU ReLU6
        Repeat Residual Sequential SiLU Sigmoid Softmax Softplus Tanh analyze_layers""",
    "fastbench.analysis.models": """ATTENTION_MODES MODELS bert_base copy_weights gpt2_small mlp
        mobilenet_v2 resnet18 resnet50 small_cnn transformer_block vit_b_16""",
}

# Modules that import torch at the top: imported only where torch is installed.
NEEDS_TORCH = ("fastbench.pytorch.", "fastbench.analysis.models")


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def _all_modules() -> list[str]:
    names = ["fastbench"]
    for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="fastbench."):
        names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_imports_from_its_public_path(module: str) -> None:
    if module == "fastbench.analysis.models" and not _has_torch():
        pytest.skip("the model zoo needs torch")
    mod = importlib.import_module(module)
    missing = [n for n in PUBLIC[module].split() if not hasattr(mod, n)]
    assert not missing, f"{module} lost {missing}"
    declared = getattr(mod, "__all__", None)
    if declared is not None:
        assert [n for n in PUBLIC[module].split() if n not in declared
                and not n.startswith("__")] == [], f"{module}.__all__ lost names"
    for name in PUBLIC[module].split():  # `from module import name` works as well
        exec(f"from {module} import {name}", {})


def test_no_module_hides_behind_a_name_of_its_package() -> None:
    """A package's face never binds a function or class to the name of one of its own
    submodules (``fastbench.compare`` and ``fastbench.clocks`` are functions, and no module
    of that name hides behind them any more: ``fastbench.compare.Comparison`` used to raise)."""
    assert callable(fastbench.compare) and callable(fastbench.clocks)
    for name in ("compare", "clocks"):
        assert importlib.util.find_spec(f"fastbench.{name}") is None, name
    clashes = []
    for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="fastbench."):
        if info.name.startswith(NEEDS_TORCH) and not _has_torch():
            continue
        parent_name, _, leaf = info.name.rpartition(".")
        parent = importlib.import_module(parent_name)
        bound = getattr(parent, leaf, None)
        if bound is not None and not isinstance(bound, types.ModuleType):
            clashes.append(info.name)
    assert clashes == []


def test_walk_finds_the_subpackages() -> None:
    modules = set(_all_modules())
    for pkg in ("timing", "stats", "counters", "counters.simulation", "memory", "machine",
                "roofline", "analysis", "pytorch", "results", "report", "cli"):
        assert f"fastbench.{pkg}" in modules, pkg


@pytest.mark.slow
def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """Import order must not matter: each module is the first thing a new interpreter
    imports. Several interpreters run at once to keep the test short."""
    modules = [m for m in _all_modules()
               if _has_torch() or not m.startswith(NEEDS_TORCH)]
    failures = []
    batch = 4
    for start in range(0, len(modules), batch):
        procs = [(m, subprocess.Popen([sys.executable, "-c", f"import {m}"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
                 for m in modules[start:start + batch]]
        for m, p in procs:
            _, err = p.communicate(timeout=120)
            if p.returncode != 0:
                failures.append(f"{m}: {err.strip().splitlines()[-1] if err.strip() else p.returncode}")
    assert not failures, "\n".join(failures)


# -- the import graph ---------------------------------------------------------------------------

def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: top-level statements and those nested
    in top-level if/try/with blocks, but not under ``if TYPE_CHECKING:`` and not inside
    functions or classes (those run later, when called)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(tree.body)
    return found


def import_graph(known: set[str], sources: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the fastbench modules it imports at module level. Importing ``a.b.c`` runs
    ``a`` and ``a.b`` first, so those count too, except the importer's own ancestors (they
    are already being imported whenever the importer runs)."""
    graph: dict[str, set[str]] = {}
    for name, path in sources.items():
        is_pkg = path.name == "__init__.py"
        package = name if is_pkg else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _module_level_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                bases = [alias.name for alias in node.names]
                names: list[str] = []
            else:
                if node.level:
                    parts = package.split(".")
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                bases = [base]
                names = [alias.name for alias in node.names]
            for base in bases:
                if not base.startswith("fastbench"):
                    continue
                targets.add(base)
                targets.update(f"{base}.{n}" for n in names if f"{base}.{n}" in known)
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        if is_pkg:
            ancestors.add(name)
        closed: set[str] = set()
        for t in targets:
            parts = t.split(".")
            closed.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        graph[name] = {t for t in closed if t in known and t not in ancestors and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), plus any module
    that imports itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def test_cycle_finder_finds_a_known_cycle() -> None:
    """The oracle itself, on hand-made graphs: a -> b -> c -> a is one cycle; a tree is none."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_graph_reads_relative_imports_and_skips_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "fastbench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import one\n")
    (pkg / "one.py").write_text("from .sub.two import f\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "two.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..one import g\n"
        "def f():\n    from .. import one\n")
    sources = {"fastbench": pkg / "__init__.py", "fastbench.one": pkg / "one.py",
               "fastbench.sub": pkg / "sub" / "__init__.py",
               "fastbench.sub.two": pkg / "sub" / "two.py"}
    graph = import_graph(set(sources), sources)
    assert graph["fastbench"] == {"fastbench.one"}
    assert graph["fastbench.one"] == {"fastbench.sub", "fastbench.sub.two"}
    assert graph["fastbench.sub.two"] == set()
    (pkg / "sub" / "two.py").write_text("from ..one import g\n")  # now a real loop
    assert cycles(import_graph(set(sources), sources)) == [["fastbench.one", "fastbench.sub.two"]]


def test_no_import_cycle_at_module_level() -> None:
    sources = _sources()
    graph = import_graph(set(sources), sources)
    assert sum(len(v) for v in graph.values()) > len(graph)  # the graph was really read
    assert cycles(graph) == []
