#!/usr/bin/env python3
"""What an online migration buys and costs, on a 1,000,000-row PostgreSQL table: version 2
widens an integer to a double and indexes a column. The same change is planned twice, whole
(`online` off) and online (`online: true`), and applied to fresh copies of the same table
(CREATE DATABASE ... TEMPLATE, not timed) while an app keeps updating random rows through one
psql session, each statement timed from send to answer. Alternating runs (whole, online, ...),
median of BENCH_PG_RUNS (3).

- `longest_app_wait`: the longest single-row update of the app while `migrate up --complete`
  ran online, against the longest while `migrate up` ran the whole migration (its type change
  rewrites the table under an exclusive lock). The lower, the better.
- `total_time`: `migrate up --complete` online against `migrate up` whole: the price of
  staying online (batched backfill, an index built concurrently, validations)."""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from common import figure, run_checked, throwaway_postgres

RUNS = int(os.environ.get("BENCH_PG_RUNS", "3"))
ROWS = int(os.environ.get("BENCH_PG_ROWS", "1000000"))

BODY_V1 = "entities:\n  Event:\n    table: events\n    attributes:\n      name: String\n      score: Int32\n"
BODY_V2 = "entities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n"


def psql(url, sql):
    subprocess.run(["psql", url, "-X", "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True, stdout=subprocess.DEVNULL)


class App(threading.Thread):
    """One app connection (a psql session) updating random rows, each update timed."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.process = subprocess.Popen(["psql", url, "-X", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.waits, self.errors = [], 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            row = random.randint(1, ROWS)
            start = time.perf_counter()
            self.process.stdin.write(f"UPDATE events SET name = name WHERE id = {row};\n\\echo done\n")
            self.process.stdin.flush()
            while self.process.stdout.readline().strip() != "done":
                pass
            self.waits.append(time.perf_counter() - start)

    def stop(self):
        self.stopping.set()
        self.join()
        self.process.stdin.close()
        errors = self.process.stderr.read()
        self.process.wait()
        return errors


def plan(schemagen, work, online):
    folder = os.path.join(work, "online" if online else "whole")
    schema = os.path.join(folder, "Events.yaml")
    migrations = os.path.join(folder, "Migrations")
    os.makedirs(folder)
    for version, body in ((1, BODY_V1), (2, BODY_V2)):
        with open(schema, "w") as file:
            file.write(f"schema: Events\nversion: {version}\ndialects: [postgres]\nonline: {'true' if online else 'false'}\n" + body)
        run_checked([schemagen, "generate", "--migrations-only", "--schema", schema, "--migrations", migrations])
    return os.path.join(migrations, "Events", "postgres")


def main():
    schemagen, migrate = sys.argv[1], sys.argv[2]
    with throwaway_postgres("migrate-online") as base:
        work = tempfile.mkdtemp(prefix="bench-pg-online-")
        try:
            folders = {"whole": plan(schemagen, work, False), "online": plan(schemagen, work, True)}
            for side, directory in folders.items():
                template = f"template_{side}"
                psql(f"{base}/postgres", f"CREATE DATABASE {template}")
                run_checked([migrate, "up", "1", "--database", f"{base}/{template}", "--dir", directory])
                psql(f"{base}/{template}", f"INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, {ROWS}) AS i")
                psql(f"{base}/{template}", "VACUUM ANALYZE events")

            waits = {"whole": [], "online": []}
            totals = {"whole": [], "online": []}
            for run in range(RUNS):
                for side in ("whole", "online"):
                    name = f"run_{side}_{run}"
                    psql(f"{base}/postgres", f"CREATE DATABASE {name} TEMPLATE template_{side}")
                    psql(f"{base}/{name}", "CHECKPOINT")
                    app = App(f"{base}/{name}")
                    app.start()
                    time.sleep(0.5)
                    command = [migrate, "up", "--database", f"{base}/{name}", "--dir", folders[side]] + (["--complete"] if side == "online" else [])
                    start = time.perf_counter()
                    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    totals[side].append(time.perf_counter() - start)
                    time.sleep(0.5)
                    errors = app.stop()
                    if result.returncode != 0:
                        sys.exit(f"migrate failed: {result.stderr.decode()}")
                    if errors.strip():
                        sys.exit(f"the app's updates failed during the {side} migration: {errors}")
                    waits[side].append(max(app.waits))
                    psql(f"{base}/postgres", f"DROP DATABASE {name} WITH (FORCE)")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    online_wait, whole_wait = statistics.median(waits["online"]), statistics.median(waits["whole"])
    online_total, whole_total = statistics.median(totals["online"]), statistics.median(totals["whole"])
    figure(f"migrate_online_longest_app_wait_{ROWS}_rows", online_wait, "s", whole_wait, f"migrate_up_whole({whole_wait:.3f}s)")
    figure(f"migrate_online_total_time_{ROWS}_rows", online_total, "s", whole_total, f"migrate_up_whole({whole_total:.3f}s)")
    print(f"# median of {RUNS} alternating runs; longest waits online {[round(x, 3) for x in waits['online']]}, whole {[round(x, 3) for x in waits['whole']]}; "
          f"totals online {[round(x, 2) for x in totals['online']]}, whole {[round(x, 2) for x in totals['whole']]}", file=sys.stderr)


if __name__ == "__main__":
    main()
