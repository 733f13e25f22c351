#!/usr/bin/env python3
"""Times `schemagen validate` (whole process, release build) on a generated 1,000-entity
schema against PyYAML's C loader only parsing the same file, in one run.

Prints one line per figure:
    bench <name> <value> <unit> ratio=<value/baseline> baseline=<what>
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_schema import generate  # noqa: E402

import yaml  # noqa: E402

RUNS = 11


def median_seconds(action, runs=RUNS):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    schemagen = sys.argv[1]
    entity_count = int(os.environ.get("BENCH_ENTITIES", "1000"))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "Benchmark.yaml")
        with open(path, "w") as file:
            file.write(generate(entity_count))
        size_mib = os.path.getsize(path) / 1024 / 1024

        def validate():
            result = subprocess.run([schemagen, "validate", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if result.returncode != 0:
                sys.exit(f"schemagen validate failed ({result.returncode}): {result.stderr.decode()}")

        with open(path) as file:
            text = file.read()

        def parse():
            yaml.load(text, Loader=yaml.CSafeLoader)

        validate()  # warm the file cache and the binary
        ours = median_seconds(validate)
        theirs = median_seconds(parse)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    name = f"validate_{entity_count}_entities"
    print(f"bench {name} {ours:.3f} s ratio={ours / theirs:.2f} baseline=pyyaml_csafeloader_parse_only({theirs:.3f}s)")
    print(f"bench {name}_throughput {size_mib / ours:.2f} MiB/s ratio={theirs / ours:.2f} baseline=pyyaml_csafeloader_parse_only({size_mib / theirs:.2f}MiB/s)")
    print(f"# schema: {entity_count} entities, {size_mib:.2f} MiB; schemagen peak RSS {peak_kib / 1024:.0f} MiB; median of {RUNS} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
