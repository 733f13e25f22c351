#!/usr/bin/env python3
"""Times `schemagen import sqlite` on a database of 1,000 tables (the generated benchmark
schema, migrated by `migrate up`) against the `sqlite3` shell printing the same catalogue
(`.schema`), both whole processes, alternating; `schemagen import coredata` on a 1,000-entity
model bundle against Python's C XML parser only parsing its `contents`; and `schemagen
diagram` of the 1,000-entity schema against `schemagen validate` of it (the load both share)."""
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

from common import RUNS, alternating_medians, figure, median_seconds, run_checked, write_schema


def core_data_model(entity_count):
    """A model file like Xcode writes: 18 attributes and 2 relationships per entity."""
    types = ["String", "Integer 64", "Integer 32", "Integer 16", "Double", "Float", "Decimal", "Boolean", "Date", "Binary", "UUID", "URI"]
    lines = ['<?xml version="1.0" encoding="UTF-8" standalone="yes"?>',
             '<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22522" systemVersion="23C71" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">']
    for i in range(entity_count):
        nxt = (i + 1) % entity_count
        lines.append(f'    <entity name="Entity{i}" representedClassName="Entity{i}" syncable="YES" codeGenerationType="class">')
        for a in range(18):
            kind = types[a % len(types)]
            optional = ' optional="YES"' if a % 3 else ''
            default = ' defaultValueString="0"' if kind.startswith("Integer") and not optional else ''
            lines.append(f'        <attribute name="field{a}"{optional} attributeType="{kind}"{default} usesScalarValueType="NO"/>')
        lines.append(f'        <relationship name="next" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Entity{nxt}" inverseName="previous" inverseEntity="Entity{nxt}"/>')
        prev = (i - 1) % entity_count
        lines.append(f'        <relationship name="previous" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Entity{prev}" inverseName="next" inverseEntity="Entity{prev}"/>')
        lines.append('        <uniquenessConstraints><uniquenessConstraint><constraint value="field0"/></uniquenessConstraint></uniquenessConstraints>')
        lines.append('    </entity>')
    lines.append('</model>')
    return "\n".join(lines) + "\n"


def main():
    schemagen, migrate = sys.argv[1], sys.argv[2]
    sqlite3 = shutil.which("sqlite3")
    if not sqlite3:
        sys.exit("bench import: the sqlite3 shell is missing (bench/run installs it)")
    count = int(os.environ.get("BENCH_ENTITIES", "1000"))
    with tempfile.TemporaryDirectory() as folder:
        schema = write_schema(folder, count)
        migrations = os.path.join(folder, "Migrations")
        run_checked([schemagen, "generate", "--migrations-only", "--schema", schema, "--migrations", migrations])
        database = os.path.join(folder, "benchmark.sqlite")
        run_checked([migrate, "up", "--database", database, "--dir", os.path.join(migrations, "Benchmark")])
        tables = subprocess.run([sqlite3, database, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"], capture_output=True, text=True).stdout.strip()
        output = os.path.join(folder, "Imported.yaml")

        def dump():
            subprocess.run([sqlite3, database, ".schema"], stdout=subprocess.DEVNULL, check=True)
        run_checked([schemagen, "import", "sqlite", database, "-o", output])
        ours, theirs = alternating_medians(lambda: run_checked([schemagen, "import", "sqlite", database, "-o", output]), dump)
        figure(f"import_sqlite_{tables}_tables", ours, "s", theirs, f"sqlite3_dot_schema_whole_process({theirs:.3f}s)")

        bundle = os.path.join(folder, "Model.xcdatamodeld")
        version = os.path.join(bundle, "Model.xcdatamodel")
        os.makedirs(version)
        contents = os.path.join(version, "contents")
        with open(contents, "w") as file:
            file.write(core_data_model(count))
        out_folder = os.path.join(folder, "CoreDataOut")
        run_checked([schemagen, "import", "coredata", bundle, "-o", out_folder])
        ours_cd, parse = alternating_medians(lambda: run_checked([schemagen, "import", "coredata", bundle, "-o", out_folder]),
                                             lambda: ElementTree.parse(contents))
        figure(f"import_coredata_{count}_entities", ours_cd, "s", parse, f"python_elementtree_parse_only({parse:.3f}s)")

        diagram = os.path.join(folder, "diagram.mmd")
        ours_dg, validate = alternating_medians(lambda: run_checked([schemagen, "diagram", "--schema", schema, "-o", diagram]),
                                      lambda: run_checked([schemagen, "validate", schema]))
        figure(f"diagram_mermaid_{count}_entities", ours_dg, "s", validate, f"schemagen_validate_same_schema({validate:.3f}s)")
        site = os.path.join(folder, "site")
        ours_site = median_seconds(lambda: run_checked([schemagen, "docs", "--schema", schema, "-o", site, "--migrations", migrations, "--layout", "plain"]), runs=max(3, RUNS // 3))
        figure(f"docs_site_{count}_entities_plain_layout", ours_site, "s", validate, f"schemagen_validate_same_schema({validate:.3f}s)")
        print(f"# {tables} tables, model file {os.path.getsize(contents) / 1024 / 1024:.2f} MiB; medians of {RUNS} runs (each import and the diagram alternating with their baselines)", file=sys.stderr)


if __name__ == "__main__":
    main()
