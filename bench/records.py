#!/usr/bin/env python3
"""The studio's record pages on ROWS flights, longest route first (an indexed column, 1% nil),
fifty a page: the first page, and a page nine tenths of the way in reached by its cursor
(keyset pagination). Through `Store.records` against the same statements through the SQLite C
API. Rounds alternate; each figure is the median over the rounds of each round's median."""
import os
import statistics
import subprocess
import sys
import tempfile

ROWS = int(os.environ.get("BENCH_RECORDS_ROWS", "1000000"))
REPEATS = int(os.environ.get("BENCH_RECORDS_REPEATS", "30"))
ROUNDS = int(os.environ.get("BENCH_RECORDS_ROUNDS", "3"))


def run(binary, mode):
    with tempfile.TemporaryDirectory() as folder:
        result = subprocess.run([binary, "records", mode, str(ROWS), str(REPEATS), folder], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"store-benchmark records {mode} failed: {result.stderr[-2000:]}")
    pairs = [tuple(int(value) for value in line.split()) for line in result.stdout.split("\n") if line.strip()]
    # The first round warms the page cache and the statements.
    pairs = pairs[1:] or pairs
    return statistics.median(first for first, _ in pairs) / 1000, statistics.median(deep for _, deep in pairs) / 1000


def main():
    binary = sys.argv[1]
    store, raw = [], []
    for _ in range(ROUNDS):
        store.append(run(binary, "store"))
        raw.append(run(binary, "raw"))
    for index, name in ((0, "first_page"), (1, "deep_page")):
        ours = statistics.median(sample[index] for sample in store)
        theirs = statistics.median(sample[index] for sample in raw)
        print(f"bench records_{ROWS}_rows_{name} {ours:.3f} ms ratio={ours / theirs:.2f} baseline=sqlite_c_api({theirs:.3f}ms)")
    print(f"# {REPEATS} pages per round, {ROUNDS} rounds; the target is under 150 ms a page", file=sys.stderr)


if __name__ == "__main__":
    main()
