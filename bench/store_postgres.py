#!/usr/bin/env python3
"""The store on PostgreSQL against libpq driven by hand with the same statements (an upsert per
row returning its key, in one transaction; every row fetched back into models), on a throwaway
server, in one run: rounds alternate store and raw (odd rounds in reverse), each on a fresh
database; rows/s are medians, and each ratio is the median of the rounds' own ratios."""
import os
import statistics
import subprocess
import sys

from common import throwaway_postgres

ROWS = int(os.environ.get("BENCH_PG_STORE_ROWS", "20000"))
ROUNDS = int(os.environ.get("BENCH_PG_STORE_ROUNDS", "5"))


def run(binary, base, mode, round_number):
    database = f"store_{mode.replace('-', '_')}_{round_number}"
    subprocess.run(["psql", f"{base}/postgres", "-q", "-c", f"CREATE DATABASE {database}"], check=True, stdout=subprocess.DEVNULL)
    result = subprocess.run([binary, mode, str(ROWS), f"{base}/{database}"], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"store-benchmark {mode} failed: {result.stderr}")
    parts = result.stdout.split()
    return dict(zip(parts[0::2], map(float, parts[1::2])))


def main():
    binary = sys.argv[1]
    samples = {"postgres-store": [], "postgres-raw": []}
    with throwaway_postgres("store-postgres") as base:
        for round_number in range(ROUNDS):
            modes = ["postgres-store", "postgres-raw"]
            for mode in (modes if round_number % 2 == 0 else modes[::-1]):
                samples[mode].append(run(binary, base, mode, round_number))
    rows = {"insert": ROWS, "upsert": ROWS, "fetch": ROWS + ROWS // 2}
    for phase in ("insert", "upsert", "fetch"):
        ours = rows[phase] / statistics.median(s[phase] for s in samples["postgres-store"])
        theirs = rows[phase] / statistics.median(s[phase] for s in samples["postgres-raw"])
        ratio = statistics.median(r[phase] / s[phase] for s, r in zip(samples["postgres-store"], samples["postgres-raw"]))
        print(f"bench store_postgres_{phase}_{ROWS}_flights {ours:.0f} rows/s ratio={ratio:.2f} baseline=libpq_same_statements({theirs:.0f}rows/s)")
    print(f"# {ROWS} flights, {ROUNDS} alternating rounds, each on a fresh database (target 0.9 or more)", file=sys.stderr)


if __name__ == "__main__":
    main()
