"""Tests for fastbench.report.machine: the lines of ``fastbench info`` for machine facts and
noise checks, on synthetic facts with known text.
"""

from __future__ import annotations

from fastbench.machine import CacheLevel, MachineInfo, NoiseCheck
from fastbench.report.machine import format_machine, format_noise_checks

KIB = 1024
MIB = 1024 * 1024




def _synthetic_info(**overrides: object) -> MachineInfo:
    fields: dict[str, object] = {
        "cpu_model": "Test CPU 9000",
        "logical_cores": 16,
        "physical_cores": 8,
        "caches": (
            CacheLevel(1, "Data", 32 * KIB, 64, 2),
            CacheLevel(1, "Instruction", 32 * KIB, 64, 2),
            CacheLevel(2, "Unified", 512 * KIB, 64, 2),
            CacheLevel(3, "Unified", 32 * MIB, 64, 16),
        ),
        "flags": frozenset({"avx2", "fma", "sse4_2", "constant_tsc", "fpu"}),
        "python_implementation": "CPython",
        "python_version": "3.11.7",
        "platform": "Linux-6.1-x86_64",
        "hostname": "bench-01",
    }
    fields.update(overrides)
    return MachineInfo(**fields)  # type: ignore[arg-type]


def _value_column(lines: list[str], values: list[str]) -> set[int]:
    return {line.index(value) for line, value in zip(lines, values)}


def test_format_machine() -> None:
    lines = format_machine(_synthetic_info())
    labels = ["CPU:", "Cores:", "Caches:", "Flags:", "Python:", "Platform:", "Hostname:"]
    assert [line.split()[0] for line in lines] == labels
    by_label = {line.split()[0]: line for line in lines}
    assert by_label["CPU:"].endswith("Test CPU 9000")
    assert by_label["Cores:"].endswith("16 logical, 8 physical")
    assert by_label["Caches:"].endswith("L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB")
    assert by_label["Flags:"].endswith("sse4_2 avx2 fma constant_tsc (5 flags in total)")
    assert by_label["Python:"].endswith("CPython 3.11.7")
    assert by_label["Hostname:"].endswith("bench-01")
    values = ["Test CPU 9000", "16 logical", "L1d", "sse4_2", "CPython", "Linux-6.1", "bench-01"]
    assert len(_value_column(lines, values)) == 1


def test_format_machine_unknowns_and_odd_sizes() -> None:
    info = _synthetic_info(
        physical_cores=None,
        caches=(
            CacheLevel(2, "Unified", 1536 * KIB, None, None),
            CacheLevel(1, "Data", 768, None, None),
        ),
        flags=frozenset({"fpu"}),
    )
    by_label = {line.split()[0]: line for line in format_machine(info)}
    assert by_label["Cores:"].endswith("16 logical, unknown physical")
    assert by_label["Caches:"].endswith("L2 1536 KiB, L1d 768 B")
    assert by_label["Flags:"].endswith("- (1 flags in total)")
    bare = _synthetic_info(caches=(), flags=frozenset())
    empty = {line.split()[0]: line for line in format_machine(bare)}
    assert empty["Caches:"].endswith("unknown")
    assert empty["Flags:"].endswith("unknown")


def test_format_noise_checks() -> None:
    checks = [
        NoiseCheck("clocksource", "tsc", "ok"),
        NoiseCheck("virtualization", "KVM (hypervisor flag)", "warn", "use bare metal"),
        NoiseCheck("perf_event_paranoid", "not Linux", "unknown"),
    ]
    lines = format_noise_checks(checks)
    assert len(lines) == 3
    assert lines[0].startswith("  [ok] ")
    assert lines[1].startswith("  [warn] ")
    assert lines[2].startswith("  [unknown] ")
    assert lines[0].rstrip().endswith("tsc")
    assert lines[1].endswith("KVM (hypervisor flag)  -> use bare metal")
    assert "->" not in lines[0] and "->" not in lines[2]
    assert len(_value_column(lines, ["clocksource", "virtualization", "perf_event_paranoid"])) == 1
    assert len(_value_column(lines, ["tsc", "KVM", "not Linux"])) == 1
    assert format_noise_checks([]) == []
