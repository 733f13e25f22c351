"""Helpers shared by the benchmarks: timing and the generated benchmark schema."""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_schema import generate as generate_schema  # noqa: E402,F401

RUNS = int(os.environ.get("BENCH_RUNS", "11"))


def median_seconds(action, runs=RUNS, before=None):
    """Median wall time of `action`; `before` runs untimed ahead of each sample."""
    samples = []
    for _ in range(runs):
        if before:
            before()
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def write_schema(folder, entity_count):
    """The generated benchmark schema written to <folder>/Benchmark.yaml; its path."""
    path = os.path.join(folder, "Benchmark.yaml")
    with open(path, "w") as file:
        file.write(generate_schema(entity_count))
    return path


def alternating_medians(ours, theirs, runs=RUNS):
    """Medians of `ours` and `theirs` timed in alternating rounds (A, B, A, B, ...)."""
    samples = {"ours": [], "theirs": []}
    for _ in range(runs):
        samples["ours"].append(median_seconds(ours, runs=1))
        samples["theirs"].append(median_seconds(theirs, runs=1))
    return statistics.median(samples["ours"]), statistics.median(samples["theirs"])


def run_checked(arguments):
    result = subprocess.run(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if result.returncode != 0:
        sys.exit(f"{arguments[0]} failed ({result.returncode}): {result.stderr.decode()}")


def figure(name, value, unit, baseline_value, baseline_name, digits=3):
    """One result line: bench <name> <value> <unit> ratio=<value/baseline> baseline=<what>."""
    print(f"bench {name} {value:.{digits}f} {unit} ratio={value / baseline_value:.2f} baseline={baseline_name}")
