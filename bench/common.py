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


def run_checked(arguments):
    result = subprocess.run(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if result.returncode != 0:
        sys.exit(f"{arguments[0]} failed ({result.returncode}): {result.stderr.decode()}")


def figure(name, value, unit, baseline_value, baseline_name, digits=3):
    """One result line: bench <name> <value> <unit> ratio=<value/baseline> baseline=<what>."""
    print(f"bench {name} {value:.{digits}f} {unit} ratio={value / baseline_value:.2f} baseline={baseline_name}")
