#!/usr/bin/env python3
"""The same table-rebuild migration (a type change on a 1,000,000-row table, plus an index)
applied by `migrate up` and by `sqlite3 db < up.sql` in one transaction with foreign keys off,
as the migrator runs it, in one run. Reports time and peak memory of each process, and the
migrator's peak memory on a 200,000-row table to show it does not grow with the table."""
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from common import figure, run_checked

RUNS = int(os.environ.get("BENCH_MIGRATE_RUNS", "5"))

V1 = "schema: Events\nversion: 1\nentities:\n  Event:\n    attributes:\n      name: String\n      score: Int\n"
V2 = "schema: Events\nversion: 2\nentities:\n  Event:\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n"


def timed(arguments, stdin=None):
    """Wall time and peak RSS (KiB) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(arguments, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{arguments[0]} failed: {process.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss


def main():
    schemagen, migrate = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as folder:
        schemas = os.path.join(folder, "schemas")
        os.makedirs(schemas)
        migrations = os.path.join(folder, "Migrations")
        out = os.path.join(folder, "out")
        path = os.path.join(schemas, "Events.yaml")
        for text in (V1, V2):
            with open(path, "w") as file:
                file.write(text)
            run_checked([schemagen, "generate", "--schema", path, "--output", out, "--migrations", migrations])
        directory = os.path.join(migrations, "Events")
        up_file = [name for name in sorted(os.listdir(directory)) if name.startswith("0002") and name.endswith(".up.sql")][0]
        with open(os.path.join(directory, up_file)) as file:
            up_sql = file.read()

        results = {}
        for rows in (200_000, 1_000_000):
            template = os.path.join(folder, f"template-{rows}.sqlite")
            run_checked([migrate, "up", "1", "--database", template, "--dir", directory])
            connection = sqlite3.connect(template)
            connection.execute("BEGIN")
            connection.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                "INSERT INTO event (name, score) SELECT 'event ' || i, i FROM n", (rows,))
            connection.commit()
            connection.close()

            ours, theirs, our_rss, their_rss = [], [], [], []
            script = os.path.join(folder, "up-wrapped.sql")
            with open(script, "w") as file:
                file.write("PRAGMA foreign_keys=OFF;\nBEGIN;\n" + up_sql + "\nPRAGMA foreign_key_check;\nCOMMIT;\n")
            for _ in range(RUNS if rows == 1_000_000 else 1):
                a = os.path.join(folder, "a.sqlite")
                shutil.copyfile(template, a)
                elapsed, rss = timed([migrate, "up", "--database", a, "--dir", directory])
                ours.append(elapsed)
                our_rss.append(rss)
                os.remove(a)
                b = os.path.join(folder, "b.sqlite")
                shutil.copyfile(template, b)
                with open(script) as stdin:
                    elapsed, rss = timed(["sqlite3", b], stdin=stdin)
                theirs.append(elapsed)
                their_rss.append(rss)
                os.remove(b)
            results[rows] = (statistics.median(ours), statistics.median(theirs), max(our_rss) / 1024, max(their_rss) / 1024)

    ours, theirs, our_mib, their_mib = results[1_000_000]
    small_mib = results[200_000][2]
    figure("migrate_rebuild_1000000_rows", ours, "s", theirs, f"sqlite3_cli_same_sql({theirs:.3f}s)")
    figure("migrate_rebuild_1000000_rows_peak_rss", our_mib, "MiB", their_mib, f"sqlite3_cli_peak_rss({their_mib:.1f}MiB)", digits=1)
    figure("migrate_rebuild_peak_rss_growth_200k_to_1m_rows", our_mib, "MiB", small_mib, f"migrate_peak_rss_at_200000_rows({small_mib:.1f}MiB)", digits=1)
    print(f"# median of {RUNS} runs at 1,000,000 rows; sqlite {sqlite3.sqlite_version}", file=sys.stderr)


if __name__ == "__main__":
    main()
