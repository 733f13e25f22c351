#!/usr/bin/env python3
"""The store on a highly available cluster whose leader is killed again and again: etcd and
three Patroni nodes (Debian's packages, synchronous_mode_strict, ttl 10 s) on loopback ports,
8 writers through the multi-host URL (`store-benchmark failover-writers`), and KILLS leader
kills (SIGKILL to the leader's Patroni and postmaster), each once the cluster is whole again.

Reports, measured in the same run:
- the failover pause: from the kill to the first write acknowledged after it, p50 and p99,
  against Patroni's own election time (from the kill to a new primary answering, polled every
  50 ms on each node);
- acknowledged writes lost (acknowledged, not in the database): must be 0;
- duplicates (a write applied twice shows as a counter ahead of the jobs): must be 0.
The cluster and everything it started are stopped at the end, by process group."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from cluster import Cluster, percentile
from common import postgres_binaries

KILLS = int(os.environ.get("BENCH_FAILOVER_KILLS", "20"))
WRITERS = int(os.environ.get("BENCH_FAILOVER_WRITERS", "8"))


def main():
    binary = sys.argv[1]
    bin_folder = postgres_binaries("store-failover")
    folder = tempfile.mkdtemp(prefix="bench-patroni-")
    os.chmod(folder, 0o777)
    cluster = None
    writers = None
    try:
        cluster = Cluster(folder, bin_folder)
        leader = cluster.wait_whole()
        subprocess.run(["psql", f"postgresql://postgres@127.0.0.1:{leader['port']}/postgres", "-qc", "CREATE DATABASE failover"], check=True)
        for node in cluster.nodes:
            while cluster.query(node, "SELECT count(*) FROM pg_database WHERE datname = 'failover'") != "1":
                time.sleep(0.1)
        log, stop = f"{folder}/writes.log", f"{folder}/stop"
        writers = subprocess.Popen([binary, "failover-writers", str(WRITERS), cluster.url("failover"), log, stop], stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        kills, elections = [], []
        for _ in range(KILLS):
            leader = cluster.wait_whole()
            time.sleep(1)
            killed_at = time.time()
            cluster.kill(leader)
            while True:
                new = cluster.leader()
                if new and new["name"] != leader["name"]:
                    break
                if time.time() - killed_at > 120:
                    sys.exit(f"bench store-failover: no new leader 120 s after killing {leader['name']}")
                if writers.poll() is not None:
                    sys.exit(f"bench store-failover: the writers stopped: {writers.stderr.read()}")
                time.sleep(0.05)
            elections.append(time.time() - killed_at)
            kills.append(killed_at)
            cluster.start(leader)
        cluster.wait_whole()
        time.sleep(2)
        open(stop, "w").close()
        error = writers.communicate(timeout=300)[1]
        if writers.returncode != 0:
            with open("/tmp/store-failover-writers.err", "w") as file:
                file.write(error)
            shutil.copy(log + ".events", "/tmp/store-failover-writers.events")
            sys.exit(f"bench store-failover: a writer saw an error (all of it in /tmp/store-failover-writers.err, the stores' events in /tmp/store-failover-writers.events): {error[:3000]}")
        acknowledged = {}
        with open(log) as file:
            for line in file:
                name, when = line.split()
                acknowledged[name] = float(when)
        times = sorted(acknowledged.values())
        pauses = []
        for killed_at in kills:
            after = next((when for when in times if when > killed_at), None)
            pauses.append(after - killed_at if after else float("inf"))
        leader = cluster.wait_whole()
        stored = set(cluster.query(leader, "SELECT name FROM job WHERE name NOT LIKE 'counter-%'", "failover").split("\n"))
        counter = int(cluster.query(leader, "SELECT sum(attempts) FROM job WHERE name LIKE 'counter-%'", "failover"))
        lost = len(set(acknowledged) - stored)
        # A write applied twice counts twice; one committed but never acknowledged (its caller
        # saw an error) would show as a job the log lacks.
        duplicates = counter - len(stored)
        unacknowledged = len(stored - set(acknowledged))
    finally:
        if writers and writers.poll() is None:
            writers.kill()
        if cluster:
            cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)

    p50, p99 = statistics.median(pauses), percentile(pauses, 0.99)
    e50, e99 = statistics.median(elections), percentile(elections, 0.99)
    print(f"bench store_failover_pause_p50 {p50:.2f} s ratio={p50 / e50:.2f} baseline=patroni_election_p50({e50:.2f}s)")
    print(f"bench store_failover_pause_p99 {p99:.2f} s ratio={p99 / e99:.2f} baseline=patroni_election_p99({e99:.2f}s)")
    print(f"bench store_failover_pause_p99_over_election {p99 - e99:.2f} s ratio={(p99 - e99) / 5:.2f} baseline=target(5.00s)")
    # Counts that must be zero: the ratio is the count itself.
    print(f"bench store_failover_acknowledged_writes_lost {lost} writes ratio={lost:.2f} baseline=must_be_zero")
    print(f"bench store_failover_duplicates {duplicates} writes ratio={duplicates:.2f} baseline=must_be_zero")
    print(f"# {KILLS} leader kills under {WRITERS} writers; {len(acknowledged)} writes acknowledged, {unacknowledged} committed unacknowledged", file=sys.stderr)
    if lost or duplicates:
        sys.exit("bench store-failover: writes were lost or applied twice")


if __name__ == "__main__":
    main()
