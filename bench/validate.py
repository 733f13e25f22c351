#!/usr/bin/env python3
"""Times `schemagen validate` (whole process, release build) on a generated 1,000-entity
schema against two baselines in the same run: a bare libyaml event parse of the same file in
a small C program the bench compiles (whole process, like schemagen's), and PyYAML's C loader
only parsing it."""
import os
import resource
import shutil
import subprocess
import sys
import tempfile

from common import RUNS, alternating_medians, figure, median_seconds, run_checked, write_schema

import yaml  # noqa: E402


# Every event of the file, nothing kept: the least any YAML validator must do.
LIBYAML_PARSE = r"""
#include <stdio.h>
#include <yaml.h>
int main(int argc, char **argv) {
    FILE *file = fopen(argv[1], "rb");
    if (!file) return 2;
    yaml_parser_t parser;
    yaml_event_t event;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, file);
    long events = 0;
    for (int done = 0; !done; events++) {
        if (!yaml_parser_parse(&parser, &event)) return 1;
        done = event.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&event);
    }
    yaml_parser_delete(&parser);
    fclose(file);
    return events > 0 ? 0 : 1;
}
"""


def build_libyaml_parse(folder):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        sys.exit("bench validate: no C compiler (cc) to build the libyaml baseline")
    source, binary = os.path.join(folder, "parse.c"), os.path.join(folder, "libyaml-parse")
    with open(source, "w") as file:
        file.write(LIBYAML_PARSE)
    subprocess.run([compiler, "-O2", source, "-o", binary, "-lyaml"], check=True)
    return binary


def main():
    schemagen = sys.argv[1]
    entity_count = int(os.environ.get("BENCH_ENTITIES", "1000"))
    with tempfile.TemporaryDirectory() as folder:
        path = write_schema(folder, entity_count)
        size_mib = os.path.getsize(path) / 1024 / 1024
        with open(path) as file:
            text = file.read()

        libyaml = build_libyaml_parse(folder)
        run_checked([schemagen, "validate", path])  # warm the file cache and the binaries
        run_checked([libyaml, path])
        # Alternating rounds: schemagen, then the C parse.
        ours, bare = alternating_medians(lambda: run_checked([schemagen, "validate", path]), lambda: run_checked([libyaml, path]))
        theirs = median_seconds(lambda: yaml.load(text, Loader=yaml.CSafeLoader))
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

    name = f"validate_{entity_count}_entities"
    figure(f"{name}_vs_libyaml", ours, "s", bare, f"libyaml_c_event_parse_whole_process({bare:.3f}s)")
    figure(name, ours, "s", theirs, f"pyyaml_csafeloader_parse_only({theirs:.3f}s)")
    figure(f"{name}_throughput", size_mib / ours, "MiB/s", size_mib / theirs, f"pyyaml_csafeloader_parse_only({size_mib / theirs:.2f}MiB/s)", digits=2)
    print(f"# schema: {entity_count} entities, {size_mib:.2f} MiB; schemagen peak RSS {peak_kib / 1024:.0f} MiB; median of {RUNS} runs (target: within 3x of the libyaml parse)", file=sys.stderr)


if __name__ == "__main__":
    main()
