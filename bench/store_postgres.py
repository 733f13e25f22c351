#!/usr/bin/env python3
"""The store on PostgreSQL against libpq driven by hand, on a throwaway server, in one run:

- insert, upsert, fetch: the same statements prepared the same way (20,000 rows in one
  transaction, copied into a staging table and upserted from it with their keys returned, as
  the store writes that many; every row fetched into models);
- bulk: one insert of 100,000 rows through the store, against plain COPY of the same rows;
- clients: single-row writes from 8 concurrent clients (a StorePool of 8), against 8 libpq
  connections on threads writing each row with a prepared INSERT in autocommit; and the same
  store writes against the store without failover handling (no commit id recorded), for what
  surviving a failover costs; and 8 and 32 concurrent writers with history on against history
  off (history rows written side by side, ordered by transaction id).

Rounds alternate store and baseline (odd rounds in reverse), each on a fresh database; rates
are medians, and each ratio is the median of the rounds' own ratios."""
import os
import statistics
import subprocess
import sys

from common import throwaway_postgres

ROWS = int(os.environ.get("BENCH_PG_STORE_ROWS", "20000"))
BULK_ROWS = int(os.environ.get("BENCH_PG_BULK_ROWS", "100000"))
CLIENT_ROWS = int(os.environ.get("BENCH_PG_CLIENT_ROWS", "8000"))
CLIENTS = int(os.environ.get("BENCH_PG_CLIENTS", "8"))
ROUNDS = int(os.environ.get("BENCH_PG_STORE_ROUNDS", "5"))


RUNS_STARTED = [0]


def run(binary, base, arguments, round_number):
    # A database of its own per run: the same mode runs in several comparisons.
    RUNS_STARTED[0] += 1
    database = f"store_{arguments[0].replace('-', '_')}_{round_number}_{RUNS_STARTED[0]}"
    subprocess.run(["psql", f"{base}/postgres", "-q", "-c", f"CREATE DATABASE {database}"], check=True, stdout=subprocess.DEVNULL)
    result = subprocess.run([binary, *arguments, f"{base}/{database}"], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"store-benchmark {' '.join(arguments)} failed: {result.stderr}")
    parts = result.stdout.split()
    return dict(zip(parts[0::2], map(float, parts[1::2])))


def compare(binary, base, ours, theirs):
    """Alternating rounds of two argument lists; each one's samples."""
    samples = {0: [], 1: []}
    for round_number in range(ROUNDS):
        order = [(0, ours), (1, theirs)] if round_number % 2 == 0 else [(1, theirs), (0, ours)]
        for key, arguments in order:
            samples[key].append(run(binary, base, arguments, round_number))
    return samples[0], samples[1]


def report(name, phase, rows, ours, theirs, baseline):
    rate = rows / statistics.median(s[phase] for s in ours)
    other = rows / statistics.median(s[phase] for s in theirs)
    ratio = statistics.median(t[phase] / o[phase] for o, t in zip(ours, theirs))
    print(f"bench {name} {rate:.0f} rows/s ratio={ratio:.2f} baseline={baseline}({other:.0f}rows/s)")


def main():
    binary = sys.argv[1]
    with throwaway_postgres("store-postgres") as base:
        ours, theirs = compare(binary, base, ["postgres-store", str(ROWS)], ["postgres-raw", str(ROWS)])
        rows = {"insert": ROWS, "upsert": ROWS, "fetch": ROWS + ROWS // 2}
        for phase in ("insert", "upsert", "fetch"):
            report(f"store_postgres_{phase}_{ROWS}_flights", phase, rows[phase], ours, theirs, "libpq_same_statements")
        ours, theirs = compare(binary, base, ["postgres-bulk-store", str(BULK_ROWS)], ["postgres-bulk-copy", str(BULK_ROWS)])
        report(f"store_postgres_bulk_insert_{BULK_ROWS}_flights", "insert", BULK_ROWS, ours, theirs, "COPY")
        ours, theirs = compare(binary, base, ["postgres-clients-store", str(CLIENTS), str(CLIENT_ROWS)],
                               ["postgres-clients-raw", str(CLIENTS), str(CLIENT_ROWS)])
        report(f"store_postgres_{CLIENTS}_clients_single_row_writes", "writes", CLIENT_ROWS, ours, theirs, "libpq_autocommit_inserts")
        # What waiting out a failover costs: the commit id each write records.
        ours, theirs = compare(binary, base, ["postgres-clients-store", str(CLIENTS), str(CLIENT_ROWS)],
                               ["postgres-clients-store-no-failover", str(CLIENTS), str(CLIENT_ROWS)])
        report(f"store_postgres_{CLIENTS}_clients_failover_safety", "writes", CLIENT_ROWS, ours, theirs, "store_without_failover_handling")
        # History on, writers side by side (tokens from transaction ids, no lock), 8 and 32 of them.
        for clients in (CLIENTS, 4 * CLIENTS):
            ours, theirs = compare(binary, base, ["postgres-clients-store-history", str(clients), str(CLIENT_ROWS)],
                                   ["postgres-clients-store", str(clients), str(CLIENT_ROWS)])
            report(f"store_postgres_{clients}_clients_history_on", "writes", CLIENT_ROWS, ours, theirs, "store_history_off")
    print(f"# {ROWS} flights (bulk {BULK_ROWS}, clients {CLIENTS} x {CLIENT_ROWS // CLIENTS}), {ROUNDS} alternating rounds, "
          "each on a fresh database (target 0.9 or more for insert, upsert and fetch)", file=sys.stderr)


if __name__ == "__main__":
    main()
