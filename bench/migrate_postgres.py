#!/usr/bin/env python3
"""`migrate up` of a PostgreSQL migration that alters a 1,000,000-row table (a type change with
USING, plus an index) against `psql -1 -f up.sql` running the very same file in one
transaction, on the same throwaway server, in one run: alternating runs (migrate, psql,
migrate, ...), each on a fresh copy of the table (CREATE DATABASE ... TEMPLATE, not timed),
median of BENCH_PG_RUNS (5). The server is initdb'd into a temporary folder and removed after."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import figure, run_checked, throwaway_postgres

RUNS = int(os.environ.get("BENCH_PG_RUNS", "5"))
ROWS = int(os.environ.get("BENCH_PG_ROWS", "1000000"))

V1 = "schema: Events\nversion: 1\ndialects: [postgres]\nentities:\n  Event:\n    table: events\n    attributes:\n      name: String\n      score: Int32\n"
V2 = "schema: Events\nversion: 2\ndialects: [postgres]\nentities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n"


def psql(url, sql):
    subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True, stdout=subprocess.DEVNULL)


def timed(arguments):
    start = time.perf_counter()
    result = subprocess.run(arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{arguments[0]} failed: {result.stderr.decode()}")
    return elapsed


def main():
    schemagen, migrate = sys.argv[1], sys.argv[2]
    with throwaway_postgres("migrate-postgres") as base:
        work = tempfile.mkdtemp(prefix="bench-pg-plan-")
        try:
            schema = os.path.join(work, "Events.yaml")
            migrations = os.path.join(work, "Migrations")
            for text in (V1, V2):
                with open(schema, "w") as file:
                    file.write(text)
                run_checked([schemagen, "generate", "--migrations-only", "--schema", schema, "--migrations", migrations])
            directory = os.path.join(migrations, "Events", "postgres")
            up_file = os.path.join(directory, [n for n in sorted(os.listdir(directory)) if n.startswith("0002") and n.endswith(".up.sql")][0])

            psql(f"{base}/postgres", "CREATE DATABASE template_events")
            run_checked([migrate, "up", "1", "--database", f"{base}/template_events", "--dir", directory])
            psql(f"{base}/template_events", f"INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, {ROWS}) AS i")
            psql(f"{base}/template_events", "VACUUM ANALYZE events")

            ours, theirs = [], []
            for run in range(RUNS):
                for side in ("migrate", "psql"):
                    name = f"run_{side}_{run}"
                    psql(f"{base}/postgres", f"CREATE DATABASE {name} TEMPLATE template_events")
                    psql(f"{base}/{name}", "CHECKPOINT")
                    if side == "migrate":
                        ours.append(timed([migrate, "up", "--database", f"{base}/{name}", "--dir", directory]))
                    else:
                        theirs.append(timed(["psql", f"{base}/{name}", "-v", "ON_ERROR_STOP=1", "-q", "-1", "-f", up_file]))
                    psql(f"{base}/postgres", f"DROP DATABASE {name}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    mine, baseline = statistics.median(ours), statistics.median(theirs)
    figure(f"migrate_postgres_retype_{ROWS}_rows", mine, "s", baseline, f"psql_-1_-f_same_up.sql({baseline:.3f}s)")
    print(f"# median of {RUNS} alternating runs; migrate: {[round(x, 3) for x in ours]}, psql: {[round(x, 3) for x in theirs]}", file=sys.stderr)

if __name__ == "__main__":
    main()
