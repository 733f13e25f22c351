#!/usr/bin/env python3
"""What an online migration buys and costs, on a 1,000,000-row PostgreSQL table: version 2
widens an integer to a double and indexes a column. The same change is planned twice, whole
(`online` off) and online (`online: true`), and applied to fresh copies of the same table
(CREATE DATABASE ... TEMPLATE, not timed) while an app keeps updating random rows through one
psql session, each statement timed from send to answer. Alternating runs (whole, online, ...),
median of BENCH_PG_RUNS (3).

- `longest_app_wait`: the longest single-row update of the app while `migrate up --complete`
  ran online, against the longest while `migrate up` ran the whole migration (its type change
  rewrites the table under an exclusive lock). The lower, the better.
- `total_time`: `migrate up --complete` online against `migrate up` whole: the price of
  staying online (a copy filled in batches, an index built concurrently, the swap).
- `floor_*`: the bare work of each way to make the change online, without a migrator, against
  the whole migration: rows updated in place (as earlier releases did), or copied into a new
  table that is then swapped in (as schemagen does; FLOORS below).

Then the same on a Patroni cluster (cluster.py: three nodes, synchronous_mode_strict), through
its multi-host URL, without the app: the whole migration, the online one throttled by replica
lag (`--max-replica-lag` BENCH_LAG_BOUND_MS, 1000) and the online one unthrottled
(`--max-replica-lag 0`), alternating, median of BENCH_CLUSTER_RUNS (2). A sampler reads
`pg_stat_replication` on the primary every 100 ms during each run; a standby's lag is the time
since the primary's WAL was where the standby has replayed to (or the server's `replay_lag`,
when larger): p99 and max over the run against the bound. Skipped, saying so, without Patroni."""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from cluster import Cluster, percentile
from common import figure, postgres_binaries, run_checked, throwaway_postgres

RUNS = int(os.environ.get("BENCH_PG_RUNS", "3"))
CLUSTER_RUNS = int(os.environ.get("BENCH_CLUSTER_RUNS", "2"))
LAG_BOUND_MS = int(os.environ.get("BENCH_LAG_BOUND_MS", "1000"))
ROWS = int(os.environ.get("BENCH_PG_ROWS", "1000000"))

BODY_V1 = "entities:\n  Event:\n    table: events\n    attributes:\n      name: String\n      score: Int32\n"
BODY_V2 = "entities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, indexed: true}\n      score: Double\n"


def psql(url, sql):
    subprocess.run(["psql", url, "-X", "-v", "ON_ERROR_STOP=1", "-q", "-c", sql], check=True, stdout=subprocess.DEVNULL)


class App(threading.Thread):
    """One app connection (a psql session) updating random rows, each update timed."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.process = subprocess.Popen(["psql", url, "-X", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.waits, self.errors = [], 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            row = random.randint(1, ROWS)
            start = time.perf_counter()
            self.process.stdin.write(f"UPDATE events SET name = name WHERE id = {row};\n\\echo done\n")
            self.process.stdin.flush()
            while self.process.stdout.readline().strip() != "done":
                pass
            self.waits.append(time.perf_counter() - start)

    def stop(self):
        self.stopping.set()
        self.join()
        self.process.stdin.close()
        errors = self.process.stderr.read()
        self.process.wait()
        return errors


def plan(schemagen, work, online):
    folder = os.path.join(work, "online" if online else "whole")
    schema = os.path.join(folder, "Events.yaml")
    migrations = os.path.join(folder, "Migrations")
    os.makedirs(folder)
    for version, body in ((1, BODY_V1), (2, BODY_V2)):
        with open(schema, "w") as file:
            file.write(f"schema: Events\nversion: {version}\ndialects: [postgres]\nonline: {'true' if online else 'false'}\n" + body)
        run_checked([schemagen, "generate", "--migrations-only", "--schema", schema, "--migrations", migrations])
    return os.path.join(migrations, "Events", "postgres")


class LagSampler(threading.Thread):
    """Every 100 ms: the primary's WAL position and each standby's replay position; a standby's
    lag is the time since the primary's WAL was at its replay position."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.process = subprocess.Popen(["psql", url, "-X", "-At", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.history, self.lags = [], []
        self.stopping = threading.Event()

    def sample(self):
        self.process.stdin.write("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint || ' ' || coalesce(string_agg(application_name || ':' || "
                                 "pg_wal_lsn_diff(replay_lsn, '0/0')::bigint || ':' || coalesce(extract(epoch FROM replay_lag), 0), ' '), '') FROM pg_stat_replication;\n")
        self.process.stdin.flush()
        fields = self.process.stdout.readline().split()
        now = time.time()
        position = int(fields[0])
        if not self.history or self.history[-1][1] != position:
            self.history.append((now, position))
        for standby in fields[1:]:
            name, replayed, server_lag = standby.split(":")
            replayed = int(replayed)
            behind = [when for when, at in self.history if at <= replayed]
            lag = 0.0 if replayed >= position else now - (behind[-1] if behind else self.history[0][0])
            self.lags.append((name, max(lag, float(server_lag))))

    def run(self):
        while not self.stopping.is_set():
            self.sample()
            time.sleep(0.1)

    def stop(self):
        self.stopping.set()
        self.join()
        self.process.stdin.close()
        self.process.wait()
        return self.lags


def on_cluster(schemagen, migrate, folders):
    """The whole migration against the online one, throttled and not, on a Patroni cluster."""
    if not (shutil.which("patroni") and shutil.which("etcd")):
        print("# SKIPPED the cluster part: patroni and etcd are not installed (.ci/install-deps --tests installs them)", file=sys.stderr)
        return
    folder = tempfile.mkdtemp(prefix="bench-patroni-")
    os.chmod(folder, 0o777)
    cluster = Cluster(folder, postgres_binaries("migrate-online"))
    try:
        leader = cluster.wait_whole()
        direct = f"postgresql://postgres@127.0.0.1:{leader['port']}"
        for side, directory in folders.items():
            psql(f"{direct}/postgres", f"CREATE DATABASE cluster_{side}")
            # libpq stops at a standby that has not replayed the new database yet.
            caught_up(cluster, leader)
            run_checked([migrate, "up", "1", "--database", cluster.url(f"cluster_{side}"), "--dir", directory])
            psql(f"{direct}/cluster_{side}", f"INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, {ROWS}) AS i")
            psql(f"{direct}/cluster_{side}", "VACUUM ANALYZE events")
        kinds = {"whole": ("whole", []), "throttled": ("online", ["--complete", "--max-replica-lag", str(LAG_BOUND_MS)]),
                 "unthrottled": ("online", ["--complete", "--max-replica-lag", "0"])}
        totals, lags = {kind: [] for kind in kinds}, {kind: [] for kind in kinds}
        for run in range(CLUSTER_RUNS):
            for kind, (side, flags) in kinds.items():
                name = f"c_{kind}_{run}"
                psql(f"{direct}/postgres", f"CREATE DATABASE {name} TEMPLATE cluster_{side}")
                psql(f"{direct}/{name}", "CHECKPOINT")
                caught_up(cluster, leader)
                sampler = LagSampler(f"{direct}/postgres")
                sampler.start()
                start = time.perf_counter()
                result = subprocess.run([migrate, "up", "--database", cluster.url(name), "--dir", folders[side]] + flags, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                totals[kind].append(time.perf_counter() - start)
                lags[kind] += [lag for _, lag in sampler.stop()]
                if result.returncode != 0:
                    sys.exit(f"migrate failed on the cluster ({kind}): {result.stderr.decode()}")
                psql(f"{direct}/postgres", f"DROP DATABASE {name} WITH (FORCE)")
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
    whole = statistics.median(totals["whole"])
    bound = LAG_BOUND_MS / 1000
    for kind in ("throttled", "unthrottled"):
        total = statistics.median(totals[kind])
        figure(f"migrate_online_cluster_{kind}_total_time_{ROWS}_rows", total, "s", whole, f"migrate_up_whole_on_the_cluster({whole:.3f}s)")
        p99, most = percentile(lags[kind], 0.99), max(lags[kind])
        figure(f"migrate_online_cluster_{kind}_replica_lag_p99", p99, "s", bound, f"lag_bound({bound:.1f}s)")
        figure(f"migrate_online_cluster_{kind}_replica_lag_max", most, "s", bound, f"lag_bound({bound:.1f}s)")
    print(f"# cluster: median of {CLUSTER_RUNS} alternating runs; totals {({k: [round(x, 2) for x in v] for k, v in totals.items()})}", file=sys.stderr)


def caught_up(cluster, leader, timeout=120):
    """Until every standby has replayed all the primary wrote, so a run starts without lag."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cluster.query(leader, "SELECT count(*) FILTER (WHERE replay_lsn < pg_current_wal_lsn()) || '|' || count(*) FROM pg_stat_replication") == "0|2":
            return
        time.sleep(0.1)
    sys.exit("bench migrate-online: the standbys did not catch up")


def main():
    schemagen, migrate = sys.argv[1], sys.argv[2]
    single_server(schemagen, migrate)
    work = tempfile.mkdtemp(prefix="bench-pg-online-cluster-")
    try:
        on_cluster(schemagen, migrate, {"whole": plan(schemagen, work, False), "online": plan(schemagen, work, True)})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def single_server(schemagen, migrate):
    with throwaway_postgres("migrate-online") as base:
        work = tempfile.mkdtemp(prefix="bench-pg-online-")
        try:
            folders = {"whole": plan(schemagen, work, False), "online": plan(schemagen, work, True)}
            for side, directory in folders.items():
                template = f"template_{side}"
                psql(f"{base}/postgres", f"CREATE DATABASE {template}")
                run_checked([migrate, "up", "1", "--database", f"{base}/{template}", "--dir", directory])
                psql(f"{base}/{template}", f"INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, {ROWS}) AS i")
                psql(f"{base}/{template}", "VACUUM ANALYZE events")

            waits = {"whole": [], "online": []}
            totals = {"whole": [], "online": [], **{floor: [] for floor in FLOORS}}
            floors = floor_scripts(work)
            for run in range(RUNS):
                for floor, (template, script) in floors.items():
                    name = f"floor_{floor}_{run}"
                    app = copy_with_app(base, name, template)
                    start = time.perf_counter()
                    for step in script:
                        if step.endswith(".sql"):
                            run_checked(["psql", f"{base}/{name}", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", step])
                        else:
                            psql(f"{base}/{name}", step)
                    totals[floor].append(time.perf_counter() - start)
                    app.stop()
                    psql(f"{base}/postgres", f"DROP DATABASE {name} WITH (FORCE)")
                for side in ("whole", "online"):
                    name = f"run_{side}_{run}"
                    app = copy_with_app(base, name, side)
                    command = [migrate, "up", "--database", f"{base}/{name}", "--dir", folders[side]] + (["--complete"] if side == "online" else [])
                    start = time.perf_counter()
                    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    totals[side].append(time.perf_counter() - start)
                    time.sleep(0.5)
                    errors = app.stop()
                    if result.returncode != 0:
                        sys.exit(f"migrate failed: {result.stderr.decode()}")
                    if errors.strip():
                        sys.exit(f"the app's updates failed during the {side} migration: {errors}")
                    waits[side].append(max(app.waits))
                    psql(f"{base}/postgres", f"DROP DATABASE {name} WITH (FORCE)")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    report_single_server(waits, totals)


# The floors of the two ways to change a type online, each the bare work on the same table with
# no migrator, no trigger and no row lock: updating every row in place (a new column, batched
# UPDATEs, the index built concurrently), which earlier releases did, and copying into a new
# table (batched INSERT ... SELECT into a table with the key, the index built concurrently, the
# tables swapped in one transaction), which schemagen does, as pg-osc and gh-ost do.
FLOORS = ("floor_in_place", "floor_copy_and_swap")
FLOOR_BATCH = 11111


def floor_scripts(work):
    def batches(name, template):
        path = os.path.join(work, name + ".sql")
        with open(path, "w") as file:
            for low in range(1, ROWS + 1, FLOOR_BATCH):
                file.write(template.format(low=low, high=low + FLOOR_BATCH - 1) + "\n")
        return path
    index = "CREATE INDEX CONCURRENTLY events_name_idx ON events (name)"
    return {
        "floor_in_place": ("whole", ["ALTER TABLE events ADD COLUMN score_2 double precision",
                                     batches("in_place", "UPDATE events SET score_2 = score::double precision WHERE id >= {low} AND id <= {high};"), index]),
        "floor_copy_and_swap": ("whole", ["CREATE TABLE events_copy (id bigint PRIMARY KEY, name text NOT NULL, score double precision NOT NULL)",
                                          batches("copy", "INSERT INTO events_copy SELECT id, name, score::double precision FROM events WHERE id >= {low} AND id <= {high};"),
                                          "CREATE INDEX CONCURRENTLY events_copy_name_idx ON events_copy (name)",
                                          "BEGIN; LOCK events, events_copy IN ACCESS EXCLUSIVE MODE; DROP TABLE events; ALTER TABLE events_copy RENAME TO events; COMMIT;"]),
    }


def copy_with_app(base, name, template):
    """A fresh copy of a template database, checkpointed, with the app already updating rows."""
    psql(f"{base}/postgres", f"CREATE DATABASE {name} TEMPLATE template_{template}")
    psql(f"{base}/{name}", "CHECKPOINT")
    app = App(f"{base}/{name}")
    app.start()
    time.sleep(0.5)
    return app


def report_single_server(waits, totals):
    online_wait, whole_wait = statistics.median(waits["online"]), statistics.median(waits["whole"])
    online_total, whole_total = statistics.median(totals["online"]), statistics.median(totals["whole"])
    figure(f"migrate_online_longest_app_wait_{ROWS}_rows", online_wait, "s", whole_wait, f"migrate_up_whole({whole_wait:.3f}s)")
    figure(f"migrate_online_total_time_{ROWS}_rows", online_total, "s", whole_total, f"migrate_up_whole({whole_total:.3f}s)")
    for floor in FLOORS:
        figure(f"migrate_online_{floor}_{ROWS}_rows", statistics.median(totals[floor]), "s", whole_total, f"migrate_up_whole({whole_total:.3f}s)")
    print(f"# median of {RUNS} alternating runs; longest waits online {[round(x, 3) for x in waits['online']]}, whole {[round(x, 3) for x in waits['whole']]}; "
          f"totals {({side: [round(x, 2) for x in values] for side, values in totals.items()})}", file=sys.stderr)


if __name__ == "__main__":
    main()
