#!/usr/bin/env python3
"""The runtime store against the raw SQLite C API from Swift, in one run, release build:
insert 1,000,000 Flight rows, upsert 1,000,000 of which half exist, fetch them all back.
Each side runs in its own process (`store-benchmark store|raw`) so peak memory is its own."""
import os
import sys
import tempfile

ROWS = int(os.environ.get("BENCH_STORE_ROWS", "1000000"))


def run(binary, mode, folder):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(write, 1)
        os.execv(binary, [binary, mode, str(ROWS), folder])
    os.close(write)
    output = os.read(read, 4096).decode()
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"store-benchmark {mode} failed")
    parts = output.split()
    times = dict(zip(parts[0::2], map(float, parts[1::2])))
    return times, usage.ru_maxrss / 1024


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        raw, raw_mib = run(binary, "raw", folder)
        store, store_mib = run(binary, "store", folder)
    rows = {"insert": ROWS, "upsert": ROWS, "fetch": ROWS + ROWS // 2}
    for phase in ("insert", "upsert", "fetch"):
        ours = rows[phase] / store[phase]
        theirs = rows[phase] / raw[phase]
        print(f"bench store_{phase}_{ROWS}_flights {ours:,.0f} rows/s ratio={ours / theirs:.2f} baseline=raw_c_api_from_swift({theirs:,.0f}rows/s)".replace(",", ""))
    print(f"bench store_peak_rss_{ROWS}_flights {store_mib:.0f} MiB ratio={store_mib / raw_mib:.2f} baseline=raw_c_api_peak_rss({raw_mib:.0f}MiB)")
    print(f"# {ROWS} flights; the store's ratio is its throughput over the raw API's (target 0.7 or more)", file=sys.stderr)


if __name__ == "__main__":
    main()
