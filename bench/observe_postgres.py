#!/usr/bin/env python3
"""Cross-machine change latency on PostgreSQL, on one host: a writer process commits airports
one transaction at a time through the store; another process notices each through its store's
`changes()` (LISTEN/NOTIFY on a listener connection, then the history table). The baseline
notices through a raw libpq connection that polls the history table every millisecond. Both run
against the same throwaway server; rounds alternate store and baseline, each on a fresh
database; p50 and p99 are medians over the rounds. The requirement is p99 under 50 ms."""
import os
import statistics
import subprocess
import sys

from common import throwaway_postgres

COUNT = int(os.environ.get("BENCH_OBSERVE_COMMITS", "200"))
ROUNDS = int(os.environ.get("BENCH_OBSERVE_ROUNDS", "3"))


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def measure(binary, base, mode, round_number):
    database = f"observe_{mode.replace('-', '_')}_{round_number}"
    subprocess.run(["psql", f"{base}/postgres", "-q", "-c", f"CREATE DATABASE {database}"], check=True, stdout=subprocess.DEVNULL)
    result = subprocess.run([binary, "latency", mode, str(COUNT), f"{base}/{database}"], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"store-benchmark latency {mode} failed: {result.stderr}")
    microseconds = [int(value) for value in result.stdout.split()]
    if len(microseconds) != COUNT:
        sys.exit(f"store-benchmark latency {mode}: {len(microseconds)} of {COUNT} commits noticed")
    return percentile(microseconds, 0.5) / 1000, percentile(microseconds, 0.99) / 1000


def main():
    binary = sys.argv[1]
    store, poll = [], []
    with throwaway_postgres("observe-postgres") as base:
        for round_number in range(ROUNDS):
            store.append(measure(binary, base, "store-postgres", round_number))
            poll.append(measure(binary, base, "poll-postgres", round_number))
    for index, name in ((0, "p50"), (1, "p99")):
        ours = statistics.median(sample[index] for sample in store)
        theirs = statistics.median(sample[index] for sample in poll)
        print(f"bench observe_postgres_latency_{name} {ours:.2f} ms ratio={ours / theirs:.2f} baseline=raw_libpq_poll_history_1ms({theirs:.2f}ms)")
    print(f"# {COUNT} commits per round, {ROUNDS} rounds; the requirement is p99 under 50 ms", file=sys.stderr)


if __name__ == "__main__":
    main()
