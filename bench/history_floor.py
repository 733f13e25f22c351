"""The floor of history on PostgreSQL with 8 writers, at the server alone: `pgbench` sends the
statements the store sends for one flight written with history off, and with history on, each
transaction pipelined into one round trip, so that no client work is counted. The statements
are the store's (read from the server's log with `log_statement = all`):

- off: the upsert, then the commit id and its notification;
- row: the same with the history row written in the commit id's statement, on a table whose
  triggers are off: what recording a transaction's row costs any design;
- store: the store's sequence, triggers on (the insert trigger passes the store's own insert by
  its `WHEN`): the settings that turn recording on and mark the insert as the store's own,
  the upsert, the setting reset with the images check, the history row, the commit.

Prints each against `off`: the median of alternating rounds' own ratios. Usage:
`bench/run history-floor` (or `python3 bench/history_floor.py STORE_BENCHMARK [ROUNDS]`)."""
import os
import re
import statistics
import subprocess
import sys
import tempfile

from common import throwaway_postgres

CLIENTS = 8
SECONDS = 8
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
FLIGHT = ("('P' || :n || '-' || :client_id, NULL, now(), now(), now(), now(), NULL, 1, 'Scheduled', 1, 450, 350, 'B738', "
          "NULL, NULL, NULL)")
COLUMNS = ["ident", "actual_off", "scheduled_off", "estimated_off", "scheduled_on", "estimated_on", "actual_on", "progress_percent", "status",
           "route_distance", "filed_airspeed", "filed_altitude", "aircraft_type", "origin_id", "destination_id", "airline_id"]
QUOTED = ['"' + column + '"' for column in COLUMNS]
UPSERT = ('INSERT INTO "flights" (' + ", ".join(QUOTED) + ") VALUES " + FLIGHT + ' ON CONFLICT ("ident") DO UPDATE SET '
          + ", ".join(column + " = excluded." + column for column in QUOTED[1:]) + ' RETURNING "id";\n')
COMMIT_ID = "WITH recorded AS (INSERT INTO \"schemagen_commits\" (id) VALUES (gen_random_uuid()::text)) SELECT pg_notify('schemagen_commits', '');\n"
HISTORY_ROW = ("WITH history AS (INSERT INTO schemagen_history (schema, author, committed_at, entities, changes) "
               "VALUES ('Flights', NULL, extract(epoch from now()), '[\"Flight\"]', "
               "'[{\"entity\":\"Flight\",\"kind\":\"insert\",\"keys\":[' || :n || ']}]') RETURNING token), "
               "recorded AS (INSERT INTO \"schemagen_commits\" (id) VALUES (gen_random_uuid()::text)) "
               "SELECT (SELECT token FROM history), pg_notify('schemagen_commits', '');\n")
STORE_ON = "SET LOCAL schemagen.record_changes = on;\nSET LOCAL schemagen.own_insert = 'flights';\n"
STORE_RESET = "SELECT set_config('schemagen.own_insert', '', true), current_setting('schemagen.images', true);\n"


def script(body):
    return "\\set n random(1, 2000000000)\n\\startpipeline\nBEGIN;\n" + body + "COMMIT;\n\\endpipeline\n"


SCRIPTS = {
    "off": ("postgres-clients-store", script(UPSERT + COMMIT_ID)),
    "row": ("postgres-clients-store-history", script(UPSERT + HISTORY_ROW)),
    "store": ("postgres-clients-store-history", script(STORE_ON + UPSERT + STORE_RESET + HISTORY_ROW)),
}


def psql(url, sql):
    return subprocess.run(["psql", url, "-qAtc", sql], check=True, capture_output=True, text=True).stdout


def main():
    binary = sys.argv[1]
    with throwaway_postgres("history-floor") as base, tempfile.TemporaryDirectory() as folder:
        for name, (mode, text) in SCRIPTS.items():
            psql(f"{base}/postgres", f"CREATE DATABASE floor_{name}")
            # The store makes the tables (and, with history, the triggers) as it opens.
            made = subprocess.run([binary, mode, "1", "2", f"{base}/floor_{name}"], capture_output=True, text=True)
            if made.returncode != 0:
                sys.exit(f"store-benchmark {mode} failed: {made.stderr}")
            with open(os.path.join(folder, f"{name}.sql"), "w") as file:
                file.write(text)
        psql(f"{base}/floor_row", "ALTER TABLE flights DISABLE TRIGGER USER")
        rates = {name: [] for name in SCRIPTS}
        for round_number in range(ROUNDS):
            names = list(SCRIPTS) if round_number % 2 == 0 else list(SCRIPTS)[::-1]
            for name in names:
                run = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", str(CLIENTS), "-j", "2", "-T", str(SECONDS),
                                      "-f", os.path.join(folder, f"{name}.sql"), f"{base}/floor_{name}"], capture_output=True, text=True)
                found = re.search(r"tps = ([0-9.]+) \(without initial", run.stdout)
                if not found:
                    sys.exit(f"pgbench {name} failed: {run.stderr[-800:]}")
                rates[name].append(float(found.group(1)))
        for name in ("row", "store"):
            ratio = statistics.median(ours / off for ours, off in zip(rates[name], rates["off"]))
            print(f"bench history_floor_{name}_{CLIENTS}_clients {statistics.median(rates[name]):.0f} transactions/s ratio={ratio:.2f} "
                  f"baseline=history_off_same_statements({statistics.median(rates['off']):.0f}transactions/s)")
        print(f"# {CLIENTS} pgbench clients, {ROUNDS} alternating rounds of {SECONDS} s, each transaction pipelined", file=sys.stderr)


if __name__ == "__main__":
    main()
