#!/usr/bin/env python3
"""Online migrations on a highly available cluster whose leader is killed mid-run: etcd and three
Patroni nodes (cluster.py: synchronous_mode_strict, ttl 10 s), KILLS runs, each on a fresh copy
of a ROWS-row table (CREATE DATABASE ... TEMPLATE). Each run starts `migrate up --complete` of
an online migration (a type change with its backfill, an index built concurrently, then
contract) through the multi-host URL, and SIGKILLs the leader's Patroni and postmaster at a
random moment of it (uniform over the time the same migration took without a kill). migrate
waits for the new primary and resumes by itself; when it exits with an error instead, the same
command runs again (at most three times), as its message says to.

Reports, for the KILLS runs:
- the runs that finished by themselves, and those a second run of the same command finished;
- the runs that never finished: must be 0;
- the runs that lost something: a row missing or not converted, an invalid index left, the
  copy or its triggers left, or the migration not recorded as applied and contracted: must be 0.
The cluster and everything it started are stopped at the end, by process group."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from cluster import Cluster
from common import postgres_binaries, run_checked
from migrate_online import plan

KILLS = int(os.environ.get("BENCH_MIGRATE_KILLS", "20"))
ROWS = int(os.environ.get("BENCH_MIGRATE_FAILOVER_ROWS", "200000"))
SEED = int(os.environ.get("BENCH_SEED", "41"))

def whole(cluster, leader, database):
    """What must hold after the migration: every row there and converted, no invalid index,
    version 2 applied and contracted. An empty list when it all holds."""
    problems = []
    counts = cluster.query(leader, f"SELECT count(*) || '|' || count(*) FILTER (WHERE score = id::double precision) FROM events", database)
    if counts != f"{ROWS}|{ROWS}":
        problems.append(f"rows and converted rows {counts}, expected {ROWS}|{ROWS}")
    invalid = cluster.query(leader, "SELECT count(*) FROM pg_index WHERE NOT indisvalid", database)
    if invalid != "0":
        problems.append(f"{invalid} invalid indexes")
    index = cluster.query(leader, "SELECT count(*) FROM pg_indexes WHERE indexname = 'events_name_idx'", database)
    if index != "1":
        problems.append("the index on name is missing")
    column = cluster.query(leader, "SELECT data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'events' AND column_name = 'score'", database)
    if column != "double precision":
        problems.append(f"events.score is {column!r}, not contracted to double precision")
    leftovers = cluster.query(leader, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'events' AND column_name LIKE 'schemagen_%'", database)
    if leftovers != "0":
        problems.append(f"{leftovers} of the migration's columns left")
    copies = cluster.query(leader, "SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'schemagen\\_2\\_%') + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'schemagen\\_2\\_%')", database)
    if copies != "0":
        problems.append(f"{copies} of the migration's copy, indexes or trigger functions left")
    return problems


def create_database(cluster, leader, name, template=None):
    """CREATE DATABASE on the leader, then until every node has it: libpq stops at the first
    host that refuses the connection (a standby that has not replayed it yet) instead of
    trying the next."""
    suffix = f" TEMPLATE {template}" if template else ""
    subprocess.run(["psql", f"postgresql://postgres@127.0.0.1:{leader['port']}/postgres", "-qc", f"CREATE DATABASE {name}{suffix}"], check=True)
    deadline = time.time() + 60
    while any(cluster.query(node, f"SELECT count(*) FROM pg_database WHERE datname = '{name}'") != "1" for node in cluster.nodes):
        if time.time() > deadline:
            sys.exit(f"bench migrate-failover: database {name} did not reach every node")
        time.sleep(0.1)


def main():
    schemagen, migrate = sys.argv[1], sys.argv[2]
    if not (shutil.which("patroni") and shutil.which("etcd")):
        print("# SKIPPED migrate-failover: patroni and etcd are not installed (.ci/install-deps --tests installs them)", file=sys.stderr)
        return
    random.seed(SEED)
    work = tempfile.mkdtemp(prefix="bench-migrate-failover-")
    folder = tempfile.mkdtemp(prefix="bench-patroni-")
    os.chmod(folder, 0o777)
    cluster = None
    by_itself, rerun, unfinished, broken = 0, 0, 0, []
    try:
        directory = plan(schemagen, work, online=True)
        cluster = Cluster(folder, postgres_binaries("migrate-failover"))
        leader = cluster.wait_whole()
        direct = lambda node, database: f"postgresql://postgres@127.0.0.1:{node['port']}/{database}"
        create_database(cluster, leader, "events_template")
        run_checked([migrate, "up", "1", "--database", cluster.url("events_template"), "--dir", directory])
        subprocess.run(["psql", direct(leader, "events_template"), "-qc", f"INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, {ROWS}) AS i"], check=True)
        subprocess.run(["psql", direct(leader, "events_template"), "-qc", "VACUUM ANALYZE events"], check=True)

        # How long the migration takes without a kill: the kills fall anywhere in it.
        create_database(cluster, leader, "timing", "events_template")
        start = time.perf_counter()
        run_checked([migrate, "up", "--complete", "--database", cluster.url("timing"), "--dir", directory])
        duration = time.perf_counter() - start
        subprocess.run(["psql", direct(leader, "postgres"), "-qc", "DROP DATABASE timing WITH (FORCE)"], check=True)
        print(f"# the migration of {ROWS} rows takes {duration:.2f} s without a kill", file=sys.stderr)

        for run in range(KILLS):
            leader = cluster.wait_whole()
            name = f"run_{run}"
            create_database(cluster, leader, name, "events_template")
            command = [migrate, "up", "--complete", "--failover-timeout", "120", "--database", cluster.url(name), "--dir", directory]
            first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(random.uniform(0, duration))
            killed_while_running = first.poll() is None
            cluster.kill(leader)
            output, error = first.communicate(timeout=600)
            cluster.start(leader)
            attempts = 1
            status = first.returncode
            while status != 0 and attempts < 3:
                cluster.wait_whole()
                again = subprocess.run(command, capture_output=True, text=True, timeout=600)
                status, error = again.returncode, again.stderr
                attempts += 1
            if status != 0:
                unfinished += 1
                print(f"# run {run}: not finished after {attempts} runs: {error[-800:]}", file=sys.stderr)
                continue
            by_itself += attempts == 1
            rerun += attempts > 1
            resumed = "the primary changed" in output + error
            print(f"# run {run}: killed {'mid-run' if killed_while_running else 'after the run'}, finished in {attempts} run(s){', resumed by itself' if resumed else ''}", file=sys.stderr)
            leader = cluster.wait_whole()
            problems = whole(cluster, leader, name)
            if problems:
                broken.append((run, problems))
                print(f"# run {run}: {'; '.join(problems)}", file=sys.stderr)
            subprocess.run(["psql", direct(leader, "postgres"), "-qc", f"DROP DATABASE {name} WITH (FORCE)"], check=True)
    finally:
        if cluster:
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)

    # Counts: the ratio is the share of the runs.
    print(f"bench migrate_failover_finished_by_itself {by_itself} runs ratio={by_itself / KILLS:.2f} baseline=leader_kills({KILLS})")
    print(f"bench migrate_failover_finished_by_a_second_run {rerun} runs ratio={rerun / KILLS:.2f} baseline=leader_kills({KILLS})")
    print(f"bench migrate_failover_unfinished {unfinished} runs ratio={unfinished:.2f} baseline=must_be_zero")
    print(f"bench migrate_failover_lost_something {len(broken)} runs ratio={len(broken):.2f} baseline=must_be_zero")
    if unfinished or broken:
        sys.exit("bench migrate-failover: a migration did not finish, or lost something")


if __name__ == "__main__":
    main()
