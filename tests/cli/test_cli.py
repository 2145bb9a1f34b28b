"""The command line, run as a user would: `python -m fastbench` in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fastbench

STAT_LINE = re.compile(
    r"^\d[\d.]* (ns|µs|ms|s) ± ([\d.]+%|< 0\.001%|n/a) within this run; (run-to-run variation "
    r"here not measured|runs here vary by about [\d.]+%) \(median of [\d,]+ (samples?|"
    r"quiet-phase samples of [\d,]+) × [\d,]+ loops, (tsc|steady) clock\)$",
    re.MULTILINE,
)


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "fastbench", *args],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )


def test_version() -> None:
    r = run("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"fastbench {fastbench.__version__}"


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("fastbench")
    if not script.exists():
        pytest.skip("the console script lives outside this interpreter's bin directory")
    r = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and fastbench.__version__ in r.stdout


def test_no_command_prints_usage_and_fails() -> None:
    r = run()
    assert r.returncode == 2
    assert "usage:" in r.stdout


def test_info_shows_every_section() -> None:
    r = run("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for heading in ("Machine", "Instruction set", "Clocks", "Noise checks"):
        assert re.search(rf"^{heading}$", out, re.MULTILINE), heading
    table = fastbench.clocks()
    assert f"auto -> {table.auto}:" in out
    for spec in table:
        assert re.search(rf"^  {spec.name}\s+(yes|no)\s", out, re.MULTILINE), spec.name
    for check in ("clocksource", "perf_event_paranoid", "load"):
        assert re.search(rf"\[(ok|warn|unknown)\]\s+{check}\s", out), check


def test_timeit_prints_the_statistics_line() -> None:
    r = run("timeit", "-s", "r = range(50)", "-r", "7", "--min-time", "0.002", "--duration", "0",
            "sum(r)")
    assert r.returncode == 0, r.stderr
    assert STAT_LINE.search(r.stdout), r.stdout
    assert "median of 7 samples" in r.stdout
    assert "net of call floor" in r.stdout


def test_timeit_fixed_loops() -> None:
    r = run("timeit", "-n", "123", "-r", "6", "--duration", "0", "--clock", "steady", "x = 1")
    assert r.returncode == 0, r.stderr
    assert "× 123 loops, steady clock" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("timeit", "1/0"), "error: ZeroDivisionError: division by zero"),
        (("timeit", "1 +"), "error: SyntaxError"),
        (("timeit", "-r", "0", "pass"), "error: ValueError: repeat must be >= 1, got 0"),
    ],
)
def test_errors_are_one_line_without_traceback(args: tuple[str, ...], message: str) -> None:
    r = run(*args)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(message)
    assert "Traceback" not in r.stderr


def test_debug_shows_the_traceback() -> None:
    r = run("--debug", "timeit", "1/0")
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr


def test_tour_accuracy_check_judges_against_the_least_reference() -> None:
    # A busy host once stretched the reference (a mean of 1000 spins in one block) to 1099 ns
    # while the measured net median stayed within 0.33% of the least block (1023.5 ns): the
    # check read -6.53%. Against the least of several blocks it reads +0.33%, and says that
    # the blocks spread.
    from fastbench.cli.tour import _accuracy_lines

    lines = _accuracy_lines(1026.9, [1099.2, 1023.5, 5070.8, 1030.0])
    assert "true duration 1023.5 ns" in lines[0] and "net error +0.33%" in lines[0]
    assert "ranged 1023.5-5070.8 ns: the host was busy" in lines[1]
    quiet = _accuracy_lines(1001.0, [1000.0, 1002.0, 1001.0])
    assert len(quiet) == 1 and "net error +0.10%" in quiet[0]


def test_compare_shows_a_crafted_files_escape_sequences_as_text(tmp_path: Path) -> None:
    # A results file whose warning moves the cursor up a line and erases it, then writes a
    # verdict row of its own, and whose name starts a new line: both are shown as text.
    import json

    import numpy as np

    def saved(name: str, ns: float) -> Path:
        m = fastbench.Measurement(samples_ns=np.full(30, ns) + np.arange(30) * 0.01, loops=100,
                                  warmup_samples_ns=np.empty(0), clock="tsc", overhead_ns=0.5,
                                  overhead_mad_ns=0.1, call_floor_ns=20.0,
                                  call_floor_mad_ns=1.0, name=name)
        path = tmp_path / f"{name}.json"
        fastbench.save(m, path)
        return path

    a, b = saved("a", 1000.0), saved("b", 1010.0)
    doc = json.loads(b.read_text())
    text = json.dumps(doc)
    assert '"warnings": []' in text
    crafted = "\x1b[1A\x1b[2K  b  1.500x  faster\rfake\nline"
    text = text.replace('"warnings": []', '"warnings": ' + json.dumps([crafted]), 1)
    b.write_text(text)
    r = run("compare", str(a), str(b))
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\r" not in r.stdout
    assert "\\x1b[1A\\x1b[2K  b  1.500x  faster\\rfake\\nline" in r.stdout
    assert not any(line.startswith("line") for line in r.stdout.splitlines())


@pytest.mark.slow  # the whole tour, a calibration included
def test_tour_runs_and_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "tour.txt"
    r = run("tour", "-o", str(out))
    assert r.returncode == 0, r.stderr
    report = out.read_text(encoding="utf-8")
    for section in ("Clocks", "Noise checks", "sorted(1000 ints)", "sum(range(1000))", "native spin"):
        assert section in r.stdout and section in report, section
    assert len(STAT_LINE.findall(report)) >= 3
    m = re.search(r"net error ([+-]\d+\.\d+)%", report)
    assert m is not None
    assert abs(float(m.group(1))) < 25.0  # generous: the tour runs on any machine
    # The analysis section: the three small models from layer specs (without torch too), and
    # the memory tracker seeing its 64 MiB.
    for name in ("mlp", "small_cnn", "transformer_block", "669,706 params"):
        assert name in report, name
    assert re.search(r"peak RSS .*\+6[34]\.\d MiB", report), report[-2000:]
    try:
        import torch  # noqa: F401
    except ImportError:
        assert "PyTorch is not installed" in report
    else:
        assert report.count("MACs and params equal") == 3


# -- timeit -o and compare ---------------------------------------------------------------------
DATA = Path(__file__).parent.parent / "data"
NO_DIFF = "no significant difference"


def _synthetic_file(path: Path, median_ns: float, seed: int, name: str = "bench",
                    n: int = 30) -> Path:
    """Save one Measurement of seeded lognormal samples (cv ~2%) around ``median_ns``."""
    import numpy as np

    samples = np.random.default_rng(seed).lognormal(np.log(median_ns), 0.02, n)
    m = fastbench.Measurement(
        samples_ns=samples, loops=1000, warmup_samples_ns=np.empty(0), clock="tsc",
        overhead_ns=0.5, overhead_mad_ns=0.1, call_floor_ns=20.0, call_floor_mad_ns=1.0,
        name=name,
    )
    fastbench.save(m, path)
    return path


@pytest.fixture
def ab_files(tmp_path: Path) -> tuple[str, str]:
    """A baseline file and a candidate file 20% slower."""
    a = _synthetic_file(tmp_path / "A.json", 1000.0, seed=1)
    b = _synthetic_file(tmp_path / "B.json", 1200.0, seed=2)
    return str(a), str(b)


def _one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error:"), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def test_timeit_output_file(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    r = run("timeit", "-s", "r = range(50)", "-r", "9", "--min-time", "0.002", "--duration", "0",
            "-o", str(out), "sum(r)")
    assert r.returncode == 0, r.stderr
    assert f"saved to {out}" in r.stdout
    m = fastbench.load(out)
    assert isinstance(m, fastbench.Measurement)
    assert m.n == 9
    assert m.name == "sum(r)"
    assert m.call_floor_kind == "statement"
    assert str(m) in r.stdout  # the file holds what was printed


def test_timeit_duration_spreads_samples_over_time(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    r = run("timeit", "-r", "5", "--min-time", "0.002", "--duration", "0.3", "-o", str(out),
            "x = 1")
    assert r.returncode == 0, r.stderr
    m = fastbench.load(out)
    assert isinstance(m, fastbench.Measurement)
    assert m.stop_reason == "duration_s"
    assert m.elapsed_s >= 0.3 and m.n > 5


def test_timeit_budget_and_target(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    r = run("timeit", "-r", "6", "--min-time", "0.002", "--target-rel-ci", "1e-7",
            "--max-time", "0.1", "-o", str(out), "x = 1")
    assert r.returncode == 0, r.stderr
    assert "note: the time budget ended sampling before its goal" in r.stdout
    assert "warning: precision target not reached" in r.stdout
    m = fastbench.load(out)
    assert (m.stop_reason, m.target_rel_ci) == ("max_time_s", 1e-7)


def test_timeit_bad_target_is_one_error_line() -> None:
    r = run("timeit", "--target-rel-ci", "2", "pass")
    assert r.returncode == 1
    assert "target_rel_ci" in _one_error_line(r)


def test_compare_files_finds_the_slowdown(ab_files: tuple[str, str]) -> None:
    # Single runs a side: judged against the run-to-run variation given (2%).
    r = run("compare", "--run-variation", "2", *ab_files)
    assert r.returncode == 0, r.stderr
    assert "baseline: A.json (separate runs, judged against a run-to-run variation of 2.0%)" \
        in r.stdout
    row = re.search(r"^  B\.json .*$", r.stdout, re.MULTILINE)
    assert row is not None, r.stdout
    assert row.group(0).rstrip().endswith("slower")
    assert re.search(r"\+(19|20|21)\.\d\d%", row.group(0)), row.group(0)  # ~20% slower
    assert r.stderr == ""


def test_compare_fail_slower_exits_3(ab_files: tuple[str, str]) -> None:
    r = run("compare", "--fail-slower", "5", "--run-variation", "2", *ab_files)
    assert r.returncode == 3
    assert "slower" in r.stdout  # the table is printed all the same
    line = _one_error_line(r)
    assert "by more than 5%" in line and "B.json" in line


def test_compare_fail_slower_above_the_slowdown(ab_files: tuple[str, str]) -> None:
    r = run("compare", "--fail-slower", "50", "--run-variation", "2", *ab_files)
    assert r.returncode == 0, r.stderr
    assert "slower" in r.stdout


def test_compare_single_runs_without_a_known_variation_cannot_tell(
        ab_files: tuple[str, str]) -> None:
    # 20% apart, but nothing says how far apart two runs of the same code land here.
    r = run("compare", "--fail-slower", "5", *ab_files)
    assert r.returncode == 0, r.stderr
    row = re.search(r"^  B\.json .*$", r.stdout, re.MULTILINE)
    assert row is not None and row.group(0).rstrip().endswith("cannot tell"), r.stdout
    assert "save another result of each version" in r.stdout
    assert "fastbench variation" in r.stdout
    # The gate says, on one line, that it could not judge: never a silent pass.
    (line,) = r.stderr.splitlines()
    assert line.startswith("warning: the gate could not judge 1 of 1") and "--strict" in line
    strict = run("compare", "--fail-slower", "5", "--strict", *ab_files)
    assert strict.returncode == 4


def test_compare_identical_files(ab_files: tuple[str, str]) -> None:
    a = ab_files[0]
    r = run("compare", "--fail-slower", "1", "--run-variation", "2", a, a)
    assert r.returncode == 0, r.stderr
    assert "cannot tell" in r.stdout and "vary by about 2.0%" in r.stdout
    assert "A.json#2" in r.stdout  # the candidate gets a label distinct from the baseline


def test_compare_matches_benchmarks_by_name(tmp_path: Path) -> None:
    import numpy as np

    def file(path: Path, medians: dict[str, float], seed: int) -> str:
        rng = np.random.default_rng(seed)
        ms = {
            name: fastbench.Measurement(
                samples_ns=rng.lognormal(np.log(med), 0.02, 20), loops=10,
                warmup_samples_ns=np.empty(0), clock="tsc", overhead_ns=0.5,
                overhead_mad_ns=0.1, call_floor_ns=20.0, call_floor_mad_ns=1.0, name=name)
            for name, med in medians.items()
        }
        fastbench.save(ms, path)
        return str(path)

    base = file(tmp_path / "base.json", {"fast": 500.0, "slow": 5000.0, "gone": 100.0}, 3)
    cand = file(tmp_path / "cand.json", {"slow": 4000.0, "fast": 500.0}, 4)
    r = run("compare", "--run-variation", "2", base, cand)
    assert r.returncode == 0, r.stderr
    assert "baseline: fast @ base.json" in r.stdout
    assert "baseline: slow @ base.json" in r.stdout
    assert "gone: in no candidate file, skipped" in r.stdout
    slow_block = r.stdout.split("baseline: slow @ base.json")[1]
    row = re.search(r"^  cand\.json .*$", slow_block, re.MULTILINE)
    assert row is not None and row.group(0).rstrip().endswith("faster"), slow_block


def test_compare_run_statements(tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    r = run("compare", "--run", "sum(r)", "sorted(r)", "-s", "r = list(range(100))",
            "--rounds", "8", "--min-time", "0.002", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "paired over 8 interleaved rounds" in r.stdout
    assert "[0] sum(r)" in r.stdout and "[1] sorted(r)" in r.stdout
    assert f"saved to {out}" in r.stdout
    c = fastbench.load(out)
    assert isinstance(c, fastbench.Comparison)
    assert (c.baseline, c.rounds, c.paired) == ("[0] sum(r)", 8, True)
    assert list(c.results) == ["[1] sorted(r)"]
    assert all(m.n == 8 for m in c.measurements.values())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("only.json",), "baseline file and at least one candidate"),
        (("x.json", "y.json", "--run", "pass", "pass"), "either result files or --run"),
        (("--run", "pass"), "at least two statements"),
        ((), "baseline file and at least one candidate"),
    ],
    ids=["one-file", "files-and-run", "one-statement", "nothing"],
)
def test_compare_usage_errors(args: tuple[str, ...], message: str) -> None:
    r = run("compare", *args)
    assert r.returncode == 1
    assert message in _one_error_line(r)
    assert r.stdout == ""


def test_compare_missing_file(ab_files: tuple[str, str], tmp_path: Path) -> None:
    r = run("compare", ab_files[0], str(tmp_path / "nope.json"))
    assert r.returncode == 1
    assert "nope.json" in _one_error_line(r)


def test_compare_pyperf_file_with_itself() -> None:
    path = str(DATA / "pyperf_timeit.json")
    r = run("compare", "--fail-slower", "1", path, path)
    assert r.returncode == 0, r.stderr
    # pyperf's runs are worker processes, kept as runs; this file has two, too few for a
    # t test of its own, and nothing says how far runs land apart on this machine.
    assert "baseline: pyperf_timeit.json (separate runs, run-to-run variation" in r.stdout
    assert "cannot tell" in r.stdout


def test_info_lists_event_counters_with_reasons() -> None:
    r = run("info")
    assert r.returncode == 0, r.stderr
    assert "Event counters (perf_event, user space)" in r.stdout
    table = fastbench.counters.available()
    usable = [a.name for a in table if a.available]
    if usable:
        assert "  available: " + ", ".join(usable) in r.stdout
    for a in table:
        if not a.available:
            assert f"unavailable ({a.reason}):" in r.stdout


# -- analyze -----------------------------------------------------------------------------------
def test_analyze_a_zoo_model_on_meta(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "r18.json"
    r = run("analyze", "fastbench.analysis.models:resnet18", "--depth", "1", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "11,689,512" in r.stdout and "1.81 GMACs" in r.stdout
    assert "layer4" in r.stdout and "coverage: complete" in r.stdout
    a = fastbench.load(out)
    assert a.params == 11_689_512 and a.macs == 1_814_073_344


def test_analyze_a_model_file_with_arguments_and_shapes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "net.py"
    src.write_text(
        "import torch\n"
        "def build(width=8):\n"
        "    return torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.ReLU(),\n"
        "                               torch.nn.Linear(width, 2))\n", encoding="utf-8")
    r = run("analyze", f"{src}:build", "--arg", "width=16", "--input-shape", "3,4",
            "--backward", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    params = 4 * 16 + 16 + 16 * 2 + 2
    assert f"{params:,}" in r.stdout
    # forward 3x4x16 + 3x16x2; backward: the second layer's input and weight gradients, the
    # first layer's weight gradient only (the input needs none).
    fwd = 3 * 4 * 16 + 3 * 16 * 2
    assert f"{fwd + 2 * 3 * 16 * 2 + 3 * 4 * 16} MACs" in r.stdout.replace(",", ""), r.stdout


@pytest.mark.parametrize("args, message", [
    (("analyze", "no_colon"), "MODULE:FACTORY"),
    (("analyze", "fastbench.analysis.models:nope"), "no attribute 'nope'"),
    (("analyze", "fastbench.analysis.models:mlp", "--input-shape", "3,-1"), "positive integers"),
    (("analyze", "fastbench.analysis.models:mlp", "--arg", "oops"), "KEY=VALUE"),
])
def test_analyze_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    pytest.importorskip("torch")
    r = run(*args)
    assert r.returncode == 1
    assert message in _one_error_line(r)


# -- usage errors caught before anything runs --------------------------------------------------
def _usage_error(r: subprocess.CompletedProcess[str]) -> str:
    """The last stderr line of an argparse usage error (exit 2), which names the argument."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and r.stdout == ""
    return r.stderr.strip().splitlines()[-1]


def test_compare_fail_slower_rejects_nan(ab_files: tuple[str, str]) -> None:
    # NaN compares false with every slowdown: the gate could never fail.
    for bad in ("nan", "inf", "-5"):
        line = _usage_error(run("compare", "--fail-slower", bad, "--run-variation", "2",
                                *ab_files))
        assert line == ("fastbench compare: error: argument --fail-slower: expected a finite "
                        f"percentage >= 0 such as 5, got '{bad}'")


def test_compare_with_nothing_compared_is_an_error(tmp_path: Path) -> None:
    import numpy as np

    def file(path: Path, names: list[str]) -> str:
        m = fastbench.Measurement(
            samples_ns=np.linspace(1000.0, 1100.0, 20), loops=10, warmup_samples_ns=np.empty(0),
            clock="tsc", overhead_ns=0.5, overhead_mad_ns=0.1, call_floor_ns=20.0,
            call_floor_mad_ns=1.0)
        fastbench.save({name: m for name in names}, path)
        return str(path)

    base = file(tmp_path / "base.json", ["parse", "dump"])
    renamed = file(tmp_path / "cand.json", ["parse_v2", "dump_v2"])
    for extra in ((), ("--fail-slower", "5")):
        r = run("compare", "--run-variation", "2", *extra, base, renamed)
        assert r.returncode == 1  # an error, not a pass (0) nor a slowdown (3)
        line = _one_error_line(r)
        assert "nothing compared: no benchmark of base.json (dump, parse) is in a candidate " \
            "file (cand.json holds dump_v2, parse_v2)" in line, line


def test_compare_of_files_refuses_an_output_it_would_not_write(ab_files: tuple[str, str],
                                                               tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    r = run("compare", "--run-variation", "2", "-o", str(out), *ab_files)
    assert r.returncode == 1
    assert "-o saves the comparison of --run statements" in _one_error_line(r)
    assert not out.exists()


def test_timeit_empty_output_name_is_a_usage_error(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    line = _usage_error(run("timeit", "-o", "", "-r", "1", "--duration", "0",
                            f"open({str(marker)!r}, 'w').close()"))
    assert line == ("fastbench timeit: error: argument -o/--output: the output file name is "
                    "empty; give a path such as result.json")
    assert not marker.exists()  # the statement never ran


@pytest.mark.parametrize("command", [
    ("timeit", "-r", "1", "--duration", "0", "{touch}"),
    ("compare", "--rounds", "1", "--run", "{touch}", "pass"),
    ("stat", "-r", "1", "--", sys.executable, "-c", "{touch}"),
    ("roofline", "--quick"),
    ("analyze", "fastbench.analysis.models:mlp"),
    ("tour",),
], ids=lambda c: c[0])
def test_output_into_a_missing_directory_fails_before_running(command: tuple[str, ...],
                                                              tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    touch = f"open({str(marker)!r}, 'w').close()"
    target = tmp_path / "missing" / "result.json"
    args = [a.replace("{touch}", touch) for a in command]
    line = _usage_error(run(*args[:1], "-o", str(target), *args[1:]))
    assert line == (f"fastbench {command[0]}: error: argument -o/--output: cannot write {target}: "
                    f"the directory {target.parent} does not exist; create it first or choose "
                    "another path")
    assert not marker.exists() and not target.parent.exists()


def test_output_that_cannot_be_written_fails_before_running(tmp_path: Path) -> None:
    locked = tmp_path / "locked.json"
    locked.write_text("{}", encoding="utf-8")
    locked.chmod(0o444)
    line = _usage_error(run("timeit", "-o", str(locked), "pass"))
    assert line.endswith(f"argument -o/--output: {locked} is read-only; make it writable "
                         "(chmod u+w) or choose another path")
    line = _usage_error(run("timeit", "-o", str(tmp_path), "pass"))
    assert line.endswith(f"argument -o/--output: {tmp_path} is a directory; give a file name in "
                         f"it, such as {tmp_path / 'result.json'}")
    afile = tmp_path / "afile"
    afile.write_text("", encoding="utf-8")
    line = _usage_error(run("timeit", "-o", str(afile / "x.json"), "pass"))
    assert line.endswith(f"the directory {afile} is not a directory; create it first or choose "
                         "another path")


# -- the reader of stdout going away, --debug anywhere -----------------------------------------
def test_a_closed_stdout_ends_quietly(ab_files: tuple[str, str]) -> None:
    # As `fastbench compare A B | head -0`: the reader is gone before the report is written.
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "fastbench", "compare", "--run-variation",
                             "2", *ab_files], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141  # 128 + SIGPIPE, as the shell reports `yes | head`
    assert stderr == ""


@pytest.mark.parametrize("args", [("--debug", "timeit", "1/0"), ("timeit", "--debug", "1/0"),
                                  ("timeit", "1/0", "--debug")], ids=["before", "after", "last"])
def test_debug_before_or_after_the_subcommand_shows_the_traceback(args: tuple[str, ...]) -> None:
    r = run(*args)
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "ZeroDivisionError" in r.stderr


def test_without_debug_no_traceback_whatever_the_order() -> None:
    r = run("timeit", "1/0")
    assert r.returncode == 1 and "Traceback" not in r.stderr


def test_compare_pairing_goes_with_run_processes(ab_files: tuple[str, str]) -> None:
    r = run("compare", "--pairing", "rounds", *ab_files)
    assert r.returncode == 1
    assert "--pairing goes with --run --processes N" in _one_error_line(r)
    line = _usage_error(run("compare", "--run", "pass", "pass", "--pairing", "pairs"))
    assert "--pairing" in line and "'pairs'" in line
