#!/usr/bin/env python3
"""Times `schemagen generate` (whole process, release build) on the generated 1,000-entity
schema: into an empty folder on disk and on tmpfs, again over its own unchanged output, and
for a new version (the user's case each time a version is bumped: the schema changed in 100
places, planned against the recorded version, its migration and snapshot written).
Baselines: Python writing the very same files into an empty folder in the same run (what the
file system alone costs; the target is that plus half a second), and the 0.5 s target for
tmpfs and unchanged runs. Also prints each stage's time (`--timings`)."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from common import RUNS, figure, median_seconds, run_checked, write_schema
from plan import changed


def main():
    schemagen = sys.argv[1]
    entity_count = int(os.environ.get("BENCH_ENTITIES", "1000"))
    with tempfile.TemporaryDirectory() as folder:
        schema = write_schema(folder, entity_count)
        output = os.path.join(folder, "out")
        # Migrations go to the temporary folder too: the working tree stays as it was.
        migrations = os.path.join(folder, "Migrations")
        command = [schemagen, "generate", "--schema", schema, "--output", output, "--migrations", migrations]

        def clear():
            shutil.rmtree(output, ignore_errors=True)

        run_checked(command)  # warm up, and the files the raw-write baseline writes
        produced = {}
        for root, _, names in os.walk(output):
            # The generated files only: not schemagen's record of the run (.schemagen-cache).
            for name in (n for n in names if not n.startswith(".")):
                with open(os.path.join(root, name), "rb") as file:
                    produced[os.path.relpath(os.path.join(root, name), output)] = file.read()
        total_mib = sum(len(b) for b in produced.values()) / 1024 / 1024

        raw_output = os.path.join(folder, "raw")

        def raw_write():
            os.makedirs(os.path.join(raw_output, "Benchmark"))
            for relative, data in produced.items():
                with open(os.path.join(raw_output, relative), "wb") as file:
                    file.write(data)

        fresh = median_seconds(lambda: run_checked(command), before=clear)
        raw = median_seconds(raw_write, before=lambda: shutil.rmtree(raw_output, ignore_errors=True))
        run_checked(command)
        unchanged = median_seconds(lambda: run_checked(command))

        # A new version: planned against the recorded one, from a copy of the folder each run.
        next_folder = os.path.join(folder, "next")
        os.makedirs(next_folder)
        with open(schema) as file:
            next_schema = os.path.join(next_folder, "Benchmark.yaml")
            with open(next_schema, "w") as out:
                out.write(changed(file.read()))
        next_output, next_migrations = os.path.join(folder, "next-out"), os.path.join(folder, "next-Migrations")
        next_command = [schemagen, "generate", "--schema", next_schema, "--output", next_output, "--migrations", next_migrations, "--allow-destructive"]

        def reset_next():
            shutil.rmtree(next_output, ignore_errors=True)
            shutil.rmtree(next_migrations, ignore_errors=True)
            shutil.copytree(migrations, next_migrations)
            # The unchanged output is there, as in a project: only the changed files are written.
            shutil.copytree(output, next_output)

        reset_next()
        run_checked(next_command)  # warm up, and check that it plans
        new_version = median_seconds(lambda: run_checked(next_command), before=reset_next)
        planned = sum(len(names) for _, _, names in os.walk(next_migrations)) - sum(len(names) for _, _, names in os.walk(migrations))

        # The same fresh run on tmpfs, where writing costs no disk: the tool's own time.
        memory = None
        if os.path.isdir("/dev/shm"):
            shm_output = tempfile.mkdtemp(dir="/dev/shm")
            shm_command = [schemagen, "generate", "--schema", schema, "--output", shm_output, "--migrations", migrations]
            memory = median_seconds(lambda: run_checked(shm_command), before=lambda: shutil.rmtree(os.path.join(shm_output, "Benchmark"), ignore_errors=True))
            # Where the time goes: each stage's median over fresh tmpfs runs (`--timings`).
            stages = {}
            for _ in range(5):
                shutil.rmtree(os.path.join(shm_output, "Benchmark"), ignore_errors=True)
                result = subprocess.run(shm_command + ["--timings"], capture_output=True, text=True, check=True)
                for line in result.stderr.splitlines():
                    parts = line.split()
                    if len(parts) == 4 and parts[0] == "timing":
                        stages.setdefault(parts[1], []).append(float(parts[2]))
            stage_line = ", ".join(f"{stage} {statistics.median(times):.3f} s" for stage, times in stages.items())
            shutil.rmtree(shm_output, ignore_errors=True)

    name = f"generate_{entity_count}_entities"
    figure(name, fresh, "s", raw + 0.5, f"python_raw_write_same_files_plus_0.5s({raw + 0.5:.3f}s)")
    figure(f"{name}_vs_raw_write", fresh, "s", raw, f"python_raw_write_same_files({raw:.3f}s)")
    figure(f"{name}_unchanged", unchanged, "s", 0.5, "target(0.500s)")
    figure(f"{name}_new_version", new_version, "s", 1.0, "target(1.000s)")
    if memory is not None:
        figure(f"{name}_tmpfs", memory, "s", 0.5, "target(0.500s)")
    print(f"# {len(produced)} files, {total_mib:.1f} MiB written per fresh run; median of {RUNS} runs (targets: 0.5 s on tmpfs and unchanged, 1 s for a new version)", file=sys.stderr)
    print(f"# a new version wrote {planned} migration files", file=sys.stderr)
    if memory is not None:
        print(f"# stages on tmpfs (median of 5): {stage_line}", file=sys.stderr)


if __name__ == "__main__":
    main()
