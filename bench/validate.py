#!/usr/bin/env python3
"""Times `schemagen validate` (whole process, release build) on a generated 1,000-entity
schema against PyYAML's C loader only parsing the same file, in one run."""
import os
import resource
import sys
import tempfile

from common import RUNS, figure, generate_schema, median_seconds, run_checked

import yaml  # noqa: E402


def main():
    schemagen = sys.argv[1]
    entity_count = int(os.environ.get("BENCH_ENTITIES", "1000"))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "Benchmark.yaml")
        with open(path, "w") as file:
            file.write(generate_schema(entity_count))
        size_mib = os.path.getsize(path) / 1024 / 1024
        with open(path) as file:
            text = file.read()

        run_checked([schemagen, "validate", path])  # warm the file cache and the binary
        ours = median_seconds(lambda: run_checked([schemagen, "validate", path]))
        theirs = median_seconds(lambda: yaml.load(text, Loader=yaml.CSafeLoader))
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    name = f"validate_{entity_count}_entities"
    figure(name, ours, "s", theirs, f"pyyaml_csafeloader_parse_only({theirs:.3f}s)")
    figure(f"{name}_throughput", size_mib / ours, "MiB/s", size_mib / theirs, f"pyyaml_csafeloader_parse_only({size_mib / theirs:.2f}MiB/s)", digits=2)
    print(f"# schema: {entity_count} entities, {size_mib:.2f} MiB; schemagen peak RSS {peak_kib / 1024:.0f} MiB; median of {RUNS} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
