#!/usr/bin/env python3
"""Sync of the to-do example's items over HTTP on loopback (store-benchmark's sync modes):

- the first sync of ROWS items to a new device, against the `sqlite3` shell importing the same
  rows from a CSV file into a copy of the same empty device file (its indexes and full-text
  triggers included), rounds alternating; and against the floor of any sync that keeps a
  state per record (store-benchmark sync-floor: rows, states and a history row a page written
  through the C API), which also stands against the `sqlite3` import;
- a push of CHANGES changed items, against `sqlite3` applying the same updates in one
  transaction;
- DEVICES devices syncing at once, ten changed items a round: the p99 of their pulls against
  the p50 (how much waiting the fleet adds), and the bytes on the wire per record pulled.

Targets (docs/sync.md): the first sync within 2x of `sqlite3`'s import, a push of 1,000
changes under a second, the p99 pull under 250 ms with 100 devices."""
import csv
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROWS = int(os.environ.get("BENCH_SYNC_ROWS", "100000"))
CHANGES = int(os.environ.get("BENCH_SYNC_CHANGES", "1000"))
DEVICES = int(os.environ.get("BENCH_SYNC_DEVICES", "100"))
ROUNDS = int(os.environ.get("BENCH_SYNC_ROUNDS", "5"))
RUNS = int(os.environ.get("BENCH_SYNC_RUNS", "3"))


def tool(binary, *arguments):
    result = subprocess.run([binary, *arguments], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"store-benchmark {arguments[0]} failed: {result.stderr[-2000:]}")
    return result.stdout


def sqlite3_seconds(database, script):
    start = time.perf_counter()
    result = subprocess.run(["sqlite3", database], input=script, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"sqlite3 failed: {result.stderr[-2000:]}")
    return seconds


def import_script(rows_csv, columns):
    """CSV has no NULL: rows go through a staging table, an empty field read as NULL."""
    names = ", ".join(columns)
    values = ", ".join(f"NULLIF({column}, '')" for column in columns)
    return (
        f"CREATE TEMP TABLE staged ({names});\n.import --csv {rows_csv} staged\n"
        f"BEGIN;\nINSERT INTO todo_item ({names}) SELECT {values} FROM staged;\nCOMMIT;\n")


def initial(binary, folder):
    tool(binary, "sync-prepare", str(ROWS), folder)
    server = os.path.join(folder, "server.sqlite")
    rows_csv = os.path.join(folder, "rows.csv")
    with sqlite3.connect(server) as connection, open(rows_csv, "w", newline="") as file:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(todo_item)")]
        writer = csv.writer(file)
        for row in connection.execute(f"SELECT {', '.join(columns)} FROM todo_item"):
            writer.writerow(["" if value is None else value for value in row])
    # The server stamps its rows on the first pull: a device before the timed ones.
    tool(binary, "sync-initial", folder)
    ours, theirs, floors, wire = [], [], [], []
    for _ in range(RUNS):
        output = tool(binary, "sync-initial", folder).split()
        seconds, records, sent = float(output[1]), int(output[3]), int(output[5])
        if records != ROWS:
            sys.exit(f"the new device holds {records} items, not {ROWS}")
        ours.append(seconds)
        wire.append(sent)
        copy = os.path.join(folder, "baseline.sqlite")
        shutil.copyfile(os.path.join(folder, "empty.sqlite"), copy)
        theirs.append(sqlite3_seconds(copy, import_script(rows_csv, columns)))
        os.remove(copy)
        # The floor: what any first sync keeping a state per record writes, through the C API.
        floors.append(float(tool(binary, "sync-floor", folder).split()[1]))
    mine, baseline, floor = statistics.median(ours), statistics.median(theirs), statistics.median(floors)
    print(f"bench sync_initial_{ROWS}_rows {mine:.3f} s ratio={mine / baseline:.2f} baseline=sqlite3_csv_import({baseline:.3f}s)")
    print(f"bench sync_initial_over_floor_{ROWS}_rows {mine:.3f} s ratio={mine / floor:.2f} baseline=raw_c_api_rows_states_history({floor:.3f}s)")
    print(f"bench sync_floor_over_sqlite3_{ROWS}_rows {floor:.3f} s ratio={floor / baseline:.2f} baseline=sqlite3_csv_import({baseline:.3f}s)")
    print(f"# {statistics.median(wire) / ROWS:.0f} bytes on the wire per record, gzip", file=sys.stderr)


def push(binary, folder):
    ours = [float(tool(binary, "sync-push", "10000", str(CHANGES), tempfile.mkdtemp(dir=folder)).split()[1]) for _ in range(RUNS)]
    theirs = []
    for _ in range(RUNS):
        copy = os.path.join(folder, "push-baseline.sqlite")
        shutil.copyfile(os.path.join(folder, "server.sqlite"), copy)
        updates = "".join(
            f"UPDATE todo_item SET is_completed = 1 - is_completed, task_name = task_name || ' (edited)' WHERE rowid = {index + 1};\n" for index in range(CHANGES))
        theirs.append(sqlite3_seconds(copy, "BEGIN;\n" + updates + "COMMIT;\n"))
        os.remove(copy)
    mine, baseline = statistics.median(ours), statistics.median(theirs)
    print(f"bench sync_push_{CHANGES}_changes {mine:.3f} s ratio={mine / baseline:.2f} baseline=sqlite3_updates({baseline:.3f}s)")


def fleet(binary, folder):
    output = tool(binary, "sync-devices", str(DEVICES), "1000", str(ROUNDS), tempfile.mkdtemp(dir=folder)).strip().split("\n")
    latencies = sorted(float(value) for value in output[0].split())
    counts = output[1].split()
    sent, records = int(counts[1]), int(counts[3])
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"bench sync_pull_p99_{DEVICES}_devices {p99:.1f} ms ratio={p99 / p50:.2f} baseline=p50({p50:.1f}ms)")
    print(f"# {len(latencies)} pulls; {sent / max(1, records):.0f} bytes on the wire per record pulled", file=sys.stderr)


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        initial(binary, folder)
        push(binary, folder)
        fleet(binary, folder)


if __name__ == "__main__":
    main()
