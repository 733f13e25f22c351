"""Helpers shared by the benchmarks: timing and the generated benchmark schema."""
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
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


def postgres_binaries(bench):
    root = "/usr/lib/postgresql"
    versions = sorted((int(v) for v in os.listdir(root) if v.isdigit()), reverse=True) if os.path.isdir(root) else []
    for version in versions:
        folder = f"{root}/{version}/bin"
        if os.access(f"{folder}/initdb", os.X_OK):
            return folder
    sys.exit(f"bench {bench}: the PostgreSQL server is not installed (sh .ci/install-deps --tests installs it)")


def as_server(arguments):
    """Runs a server tool as the postgres user when we are root (initdb refuses root)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    subprocess.run(prefix + arguments, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def throwaway_postgres(bench):
    """A PostgreSQL server initdb'd into a temporary folder on a free port, for one benchmark;
    yields its base URL (`postgresql://postgres@127.0.0.1:PORT`), stops it and removes the folder after."""
    bin_folder = postgres_binaries(bench)
    folder = tempfile.mkdtemp(prefix="bench-pg-")
    os.chmod(folder, 0o777)
    port = free_port()
    data = os.path.join(folder, "data")
    try:
        if os.getuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        as_server([f"{bin_folder}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
        as_server([f"{bin_folder}/pg_ctl", "-D", data, "-l", os.path.join(folder, "log"), "-w", "-o",
                   f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start"])
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        try:
            as_server([f"{bin_folder}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"])
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(folder, ignore_errors=True)
