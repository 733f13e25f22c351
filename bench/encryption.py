#!/usr/bin/env python3
"""One encrypted attribute against the same entity without it, through the store, release
build: insert ROWS notes in one transaction, then fetch them all. The note is small (a title
and a body, the body encrypted), which makes encryption's share of the work as large as it
gets. Rounds alternate plain and encrypted; each figure is the median of the rounds."""
import os
import statistics
import subprocess
import sys
import tempfile

ROWS = int(os.environ.get("BENCH_ENCRYPTION_ROWS", "200000"))
ROUNDS = int(os.environ.get("BENCH_ENCRYPTION_ROUNDS", "5"))


def run(binary, mode):
    with tempfile.TemporaryDirectory() as folder:
        result = subprocess.run([binary, "encryption", mode, str(ROWS), folder], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"store-benchmark encryption {mode} failed: {result.stderr}")
    parts = result.stdout.split()
    return dict(zip(parts[0::2], map(float, parts[1::2])))


def main():
    binary = sys.argv[1]
    samples = {"plain": [], "secret": []}
    for _ in range(ROUNDS):
        for mode in ("plain", "secret"):
            samples[mode].append(run(binary, mode))
    for phase in ("insert", "fetch"):
        plain = statistics.median(sample[phase] for sample in samples["plain"])
        secret = statistics.median(sample[phase] for sample in samples["secret"])
        ours, theirs = ROWS / secret, ROWS / plain
        extra = (secret - plain) / ROWS * 1e6
        print(f"bench encryption_{phase}_{ROWS}_notes {ours:.0f} rows/s ratio={ours / theirs:.2f} baseline=same_notes_unencrypted({theirs:.0f}rows/s)")
        print(f"# {phase}: {extra:.2f} microseconds more per encrypted value", file=sys.stderr)
    print(f"# {ROWS} notes, median of {ROUNDS} alternating rounds; target 0.8 or more", file=sys.stderr)


if __name__ == "__main__":
    main()
