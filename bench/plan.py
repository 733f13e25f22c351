#!/usr/bin/env python3
"""Times planning a migration (`schemagen diff --from A --to B`, whole process, release build)
between two 1,000-entity schemas that differ in 100 places: added, dropped, renamed and
retyped attributes, new indexes and a renamed entity. Baselines: the one-second target, and
`schemagen validate` of both files in the same run, one process each (what reading them costs)."""
import os
import sys
import tempfile

from common import RUNS, figure, generate_schema, median_seconds, run_checked


def changed(text: str) -> str:
    """Ten kinds of change, ten times each, in entities spread over the schema."""
    lines = text.split("\n")
    out = []
    entity = -1
    for line in lines:
        if line.startswith("  Entity") and line.endswith(":"):
            entity = int(line.strip()[6:-1])
        kind = entity % 100 if entity >= 0 and entity % 10 == 0 else None
        group = (entity // 10) % 10 if kind is not None else None
        if group == 0 and line == "      title: String?":
            out.append(line)
            out.append("      subtitle: String?")  # add a column
            continue
        if group == 1 and line == "      ratio: Double?":
            continue  # drop a column
        if group == 2 and line.startswith("      summary:"):
            out.append('      abstract: {type: String, default: "", renamedFrom: summary}')  # rename a column
            continue
        if group == 3 and line == "      small: {type: Int16, default: 12}":
            out.append("      small: {type: String, default: \"12\"}")  # change a type (rebuild)
            continue
        if group == 4 and line == "      title: String?":
            out.append("      title: {type: String, default: untitled}")  # optional -> required
            continue
        if group == 5 and line.startswith("    indexes:"):
            out.append("    indexes: [[name], [status, createdAt], [count]]")  # add an index
            continue
        if group == 6 and line == "      homepage: URL?":
            out.append("      homepage: {type: URL?, indexed: true}")  # index an attribute
            continue
        if group == 7 and line.startswith("      count:"):
            out.append("      count: {type: Int, default: 1}")  # change a default (rebuild)
            continue
        if group == 8 and line.startswith("    table: entity_"):
            out.append(line + "_v2")  # rename a table
            continue
        if group == 9 and line.startswith("      weight:"):
            out.append("      weight: {type: Double, default: 1.5}")  # widen a type (rebuild)
            continue
        out.append(line)
    return "\n".join(out).replace("version: 7", "version: 8")


def main():
    schemagen = sys.argv[1]
    count = int(os.environ.get("BENCH_ENTITIES", "1000"))
    with tempfile.TemporaryDirectory() as folder:
        before, after = os.path.join(folder, "before.yaml"), os.path.join(folder, "after.yaml")
        text = generate_schema(count)
        with open(before, "w") as file:
            file.write(text)
        with open(after, "w") as file:
            file.write(changed(text))
        command = [schemagen, "diff", "--from", before, "--to", after, "--allow-destructive"]
        run_checked(command)
        plan = median_seconds(lambda: run_checked(command))
        # Two processes: one validate run refuses two files that declare the same schema.
        read = median_seconds(lambda: (run_checked([schemagen, "validate", before]), run_checked([schemagen, "validate", after])))
    name = f"plan_{count}_entities_100_changes"
    figure(name, plan, "s", 1.0, "target(1.000s)")
    figure(f"{name}_vs_validate", plan, "s", read, f"schemagen_validate_both_files({read:.3f}s)")
    print(f"# median of {RUNS} runs", file=sys.stderr)


if __name__ == "__main__":
    main()
