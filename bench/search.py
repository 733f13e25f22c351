#!/usr/bin/env python3
"""Full-text search over ROWS to-do items (three to seven words each): QUERIES searches of one
or two words, 20 results each, timed one by one. Through the store's `search` against the same
FTS5 query through the SQLite C API (prepared once, rows read). Rounds alternate; p50 and p99
are medians over the rounds."""
import os
import statistics
import subprocess
import sys
import tempfile

ROWS = int(os.environ.get("BENCH_SEARCH_ROWS", "100000"))
QUERIES = int(os.environ.get("BENCH_SEARCH_QUERIES", "300"))
ROUNDS = int(os.environ.get("BENCH_SEARCH_ROUNDS", "3"))


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def run(binary, mode):
    with tempfile.TemporaryDirectory() as folder:
        result = subprocess.run([binary, "search", mode, str(ROWS), str(QUERIES), folder], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"store-benchmark search {mode} failed: {result.stderr}")
    micros = [int(value) for value in result.stdout.split()]
    return percentile(micros, 0.5) / 1000, percentile(micros, 0.99) / 1000


def main():
    binary = sys.argv[1]
    store, raw = [], []
    for _ in range(ROUNDS):
        store.append(run(binary, "store"))
        raw.append(run(binary, "raw"))
    for index, name in ((0, "p50"), (1, "p99")):
        ours = statistics.median(sample[index] for sample in store)
        theirs = statistics.median(sample[index] for sample in raw)
        print(f"bench search_{ROWS}_rows_latency_{name} {ours:.3f} ms ratio={ours / theirs:.2f} baseline=fts5_through_c_api({theirs:.3f}ms)")
    print(f"# {QUERIES} queries per round, {ROUNDS} rounds", file=sys.stderr)


if __name__ == "__main__":
    main()
