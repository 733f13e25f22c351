#!/usr/bin/env python3
"""The runtime store against the raw SQLite C API from Swift, in one run, release build:
insert 1,000,000 Flight rows, upsert 1,000,000 of which half exist, fetch them all back.
The store runs with its history on (the default) and off, and both sides run again with
SQLite's default settings instead of the application-store ones (before/after the settings);
rounds alternate the modes, odd rounds in reverse order. Rows/s are medians of the rounds; each
ratio is the median of the rounds' own ratios, store against the baseline run next to it in the
same round, so that a host getting slower or faster between rounds moves both sides of a ratio
together. Each side runs in its own process (`store-benchmark MODE`) so peak memory is its own."""
import os
import statistics
import sys
import tempfile

ROWS = int(os.environ.get("BENCH_STORE_ROWS", "1000000"))
ROUNDS = int(os.environ.get("BENCH_STORE_ROUNDS", "7"))
MODES = ("raw", "store", "store-without-history", "raw-sqlite-defaults", "store-sqlite-defaults")


def run(binary, mode, folder, rows=None):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(write, 1)
        os.execv(binary, [binary, mode, str(rows or ROWS), folder])
    os.close(write)
    output = os.read(read, 4096).decode()
    os.close(read)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"store-benchmark {mode} failed")
    parts = output.split()
    times = dict(zip(parts[0::2], map(float, parts[1::2])))
    times["rss"] = usage.ru_maxrss / 1024
    return times


def main():
    binary = sys.argv[1]
    samples = {mode: [] for mode in MODES}
    for round_number in range(ROUNDS):
        # Odd rounds run the modes in reverse, so a host speeding up or slowing down during a
        # round favours neither side of a pair.
        for mode in (MODES if round_number % 2 == 0 else MODES[::-1]):
            with tempfile.TemporaryDirectory() as folder:
                samples[mode].append(run(binary, mode, folder))
    median = {mode: {key: statistics.median(s[key] for s in samples[mode]) for key in samples[mode][0]} for mode in MODES}

    def ratio(ours, theirs, key, higher_is_better=True):
        """The median over rounds of ours/theirs in the same round: throughput (time inverted) or size."""
        per_round = [(t[key] / o[key]) if higher_is_better else (o[key] / t[key]) for o, t in zip(samples[ours], samples[theirs])]
        return statistics.median(per_round)
    rows = {"insert": ROWS, "upsert": ROWS, "fetch": ROWS + ROWS // 2}
    raw, store, plain = median["raw"], median["store"], median["store-without-history"]
    for phase in ("insert", "upsert", "fetch"):
        ours = rows[phase] / store[phase]
        theirs = rows[phase] / raw[phase]
        print(f"bench store_{phase}_{ROWS}_flights {ours:,.0f} rows/s ratio={ratio('store', 'raw', phase):.2f} baseline=raw_c_api_from_swift({theirs:,.0f}rows/s)".replace(",", ""))
    print(f"bench store_peak_rss_{ROWS}_flights {store['rss']:.0f} MiB ratio={ratio('store', 'raw', 'rss', higher_is_better=False):.2f} baseline=raw_c_api_peak_rss({raw['rss']:.0f}MiB)")
    for phase in ("insert", "upsert"):
        with_history = rows[phase] / store[phase]
        without = rows[phase] / plain[phase]
        print(f"bench store_{phase}_with_history_{ROWS}_flights {with_history:,.0f} rows/s ratio={ratio('store', 'store-without-history', phase):.2f} baseline=store_without_history({without:,.0f}rows/s)".replace(",", ""))
    defaults_raw, defaults_store = median["raw-sqlite-defaults"], median["store-sqlite-defaults"]
    for phase in ("insert", "upsert", "fetch"):
        after = rows[phase] / store[phase]
        before = rows[phase] / defaults_store[phase]
        print(f"bench store_{phase}_settings_{ROWS}_flights {after:,.0f} rows/s ratio={ratio('store', 'store-sqlite-defaults', phase):.2f} baseline=store_with_sqlite_defaults({before:,.0f}rows/s)".replace(",", ""))
        raw_after, raw_before = rows[phase] / raw[phase], rows[phase] / defaults_raw[phase]
        print(f"# raw {phase}: {raw_after:,.0f} rows/s with the settings, {raw_before:,.0f} with SQLite's defaults".replace(",", ""), file=sys.stderr)
    print(f"# {ROWS} flights, {ROUNDS} alternating rounds: rows/s are medians, ratios the medians of each round's own ratio "
          "(target 0.7 or more against the raw API, 0.8 or more for history on against off)", file=sys.stderr)


INBOX_ROWS = int(os.environ.get("BENCH_INBOX_ROWS", "20000"))
INBOX_MODES = ("inbox-raw", "inbox-store", "inbox-store-without-history", "inbox-raw-history")
INBOX_PHASES = ("insert", "ignore", "ignore_stored", "upsert", "update_only", "fetch")


def inbox(binary):
    """The Inbox model (Schemas/Inbox.yaml: a unique Message-ID, two secondary indexes, history on,
    an external attachment on 1 message in 100), written in transactions of 500 as a sync writes
    it: ROWS inserted, ROWS more imported with .ignore (all new), the first ROWS imported again
    with .ignore (all stored), ROWS upserted (half stored), ROWS marked read with
    .update(only:), everything fetched. Against the raw C API doing the same (attachments
    written, replaced ones removed, read back) without a history; the store without its history
    is shown beside it, and each phase also against the raw API writing the same history rows. Rows/s are medians, ratios the medians of each round's own ratio."""
    samples = {mode: [] for mode in INBOX_MODES}
    for round_number in range(ROUNDS):
        for mode in (INBOX_MODES if round_number % 2 == 0 else INBOX_MODES[::-1]):
            with tempfile.TemporaryDirectory() as folder:
                samples[mode].append(run(binary, mode, folder, INBOX_ROWS))

    def ratio(ours, theirs, key):
        return statistics.median(t[key] / o[key] for o, t in zip(samples[ours], samples[theirs]))
    rows = {"insert": INBOX_ROWS, "ignore": INBOX_ROWS, "ignore_stored": INBOX_ROWS, "upsert": INBOX_ROWS, "update_only": INBOX_ROWS, "fetch": INBOX_ROWS * 5 // 2}
    for phase in INBOX_PHASES:
        ours = rows[phase] / statistics.median(s[phase] for s in samples["inbox-store"])
        theirs = rows[phase] / statistics.median(s[phase] for s in samples["inbox-raw"])
        without = rows[phase] / statistics.median(s[phase] for s in samples["inbox-store-without-history"])
        print(f"bench store_{phase}_{INBOX_ROWS}_inbox {ours:.0f} rows/s ratio={ratio('inbox-store', 'inbox-raw', phase):.2f} baseline=raw_c_api_from_swift({theirs:.0f}rows/s)")
        print(f"bench store_{phase}_without_history_{INBOX_ROWS}_inbox {without:.0f} rows/s ratio={ratio('inbox-store-without-history', 'inbox-raw', phase):.2f} baseline=raw_c_api_from_swift({theirs:.0f}rows/s)")
    # The raw side recording the same history the store does (each transaction's changed rows
    # as JSON, one history row; an update's changed attributes only): what recording the
    # changes costs anyone, the store's floor. The history is on in this model, so this is the
    # raw API doing the same.
    for phase in INBOX_PHASES:
        floor = rows[phase] / statistics.median(s[phase] for s in samples["inbox-raw-history"])
        ours = rows[phase] / statistics.median(s[phase] for s in samples["inbox-store"])
        print(f"bench store_{phase}_against_raw_with_history_{INBOX_ROWS}_inbox {ours:.0f} rows/s ratio={ratio('inbox-store', 'inbox-raw-history', phase):.2f} "
              f"baseline=raw_c_api_writing_the_same_history({floor:.0f}rows/s)")
    # The store is an actor: it reads on its own thread, and its caller releases the models on
    # another. The raw API used the same way pays the same for the memory (each thread's arena).
    elsewhere = INBOX_ROWS * 5 // 2 / statistics.median(s["fetch_elsewhere"] for s in samples["inbox-raw"])
    ours = rows["fetch"] / statistics.median(s["fetch"] for s in samples["inbox-store"])
    print(f"bench store_fetch_against_raw_elsewhere_{INBOX_ROWS}_inbox {ours:.0f} rows/s ratio={statistics.median(t['fetch_elsewhere'] / o['fetch'] for o, t in zip(samples['inbox-store'], samples['inbox-raw'])):.2f} "
          f"baseline=raw_c_api_read_on_another_thread({elsewhere:.0f}rows/s)")
    # Once a batch met a stored row, the store looks the rest up before inserting; the raw API
    # doing the same lookups (one statement per 100 Message-IDs) is the stricter baseline.
    looked_up = INBOX_ROWS / statistics.median(s["ignore_stored_looking_up_first"] for s in samples["inbox-raw-history"])
    ours = rows["ignore_stored"] / statistics.median(s["ignore_stored"] for s in samples["inbox-store"])
    print(f"bench store_ignore_stored_against_raw_looking_up_first_{INBOX_ROWS}_inbox {ours:.0f} rows/s "
          f"ratio={statistics.median(t['ignore_stored_looking_up_first'] / o['ignore_stored'] for o, t in zip(samples['inbox-store'], samples['inbox-raw-history'])):.2f} "
          f"baseline=raw_c_api_looking_up_first({looked_up:.0f}rows/s)")
    ignore_over_insert = statistics.median(s["ignore"] / s["insert"] for s in samples["inbox-store"])
    print(f"bench store_ignore_time_over_insert_{INBOX_ROWS}_inbox ratio={ignore_over_insert:.2f} baseline=store_insert_same_round (target 1.2 or less)")
    print(f"# {INBOX_ROWS} messages, {ROUNDS} alternating rounds (targets: 0.8 or more against the raw API, fetch 0.9)", file=sys.stderr)


if __name__ == "__main__":
    main()
    inbox(sys.argv[1])
