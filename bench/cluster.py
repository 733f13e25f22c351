#!/usr/bin/env python3
"""A throwaway Patroni cluster for the benchmarks: etcd and three Patroni nodes (Debian's
packages, synchronous_mode_strict, ttl 10 s) on free loopback ports, in a folder of its own,
each process in a session of its own so that `stop` ends it and whatever it started."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from common import free_port


def as_postgres(command):
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] + command if os.getuid() == 0 else command


def exit_on_signal(number, frame):
    # Python's default for SIGTERM and SIGHUP ends at once, skipping the `finally` that stops
    # the cluster: a bench stopped by `timeout` left etcd and three nodes running.
    sys.exit(128 + number)


class Cluster:
    def __init__(self, folder, bin_folder):
        for number in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, exit_on_signal)
        self.folder = folder
        self.bin_folder = bin_folder
        self.processes = {}
        client, peer = free_port(), free_port()
        self.etcd = self.spawn("etcd", ["etcd", "--name", "e1", "--data-dir", f"{folder}/etcd", "--listen-client-urls", f"http://127.0.0.1:{client}",
                                        "--advertise-client-urls", f"http://127.0.0.1:{client}", "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                                        "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}", "--initial-cluster", f"e1=http://127.0.0.1:{peer}"])
        self.nodes = []
        for index in range(1, 4):
            node = {"name": f"pg{index}", "port": free_port(), "rest": free_port(), "data": f"{folder}/data{index}"}
            node["config"] = f"{folder}/{node['name']}.yml"
            with open(node["config"], "w") as file:
                file.write(self.yaml(node, client))
            self.nodes.append(node)
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "postgres:postgres", folder], check=True)
        for node in self.nodes:
            self.start(node)

    def yaml(self, node, etcd):
        return f"""scope: bench
name: {node['name']}
restapi: {{listen: 127.0.0.1:{node['rest']}, connect_address: 127.0.0.1:{node['rest']}}}
etcd3: {{hosts: 127.0.0.1:{etcd}}}
log: {{level: WARNING}}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    synchronous_mode: true
    synchronous_mode_strict: true
    primary_start_timeout: 0
    postgresql:
      use_pg_rewind: true
      remove_data_directory_on_rewind_failure: true
      remove_data_directory_on_diverged_timelines: true
      parameters: {{wal_log_hints: 'on', max_connections: 200}}
  initdb: [{{encoding: UTF8}}, {{locale: C.UTF-8}}]
postgresql:
  listen: 127.0.0.1:{node['port']}
  connect_address: 127.0.0.1:{node['port']}
  data_dir: {node['data']}
  bin_dir: {self.bin_folder}
  pgpass: {self.folder}/pgpass-{node['name']}
  authentication:
    superuser: {{username: postgres, password: x}}
    replication: {{username: postgres, password: x}}
    rewind: {{username: postgres, password: x}}
  pg_hba: [host replication all 127.0.0.1/32 trust, host all all 127.0.0.1/32 trust, local all all trust]
  parameters: {{unix_socket_directories: '{self.folder}'}}
"""

    def spawn(self, name, command):
        log = open(f"{self.folder}/{name}.log", "ab")
        # A session (and process group) of its own: stopped by its id, whatever it started.
        return subprocess.Popen(as_postgres(command), stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=self.folder, start_new_session=True)

    def start(self, node):
        self.processes[node["name"]] = self.spawn(node["name"], ["patroni", node["config"]])

    def url(self, database="postgres"):
        hosts = ",".join(f"127.0.0.1:{node['port']}" for node in self.nodes)
        return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"

    def query(self, node, sql, database="postgres"):
        result = subprocess.run(["psql", f"postgresql://postgres@127.0.0.1:{node['port']}/{database}", "-Atc", sql,
                                 "-v", "ON_ERROR_STOP=1"], capture_output=True, text=True, timeout=10)
        return result.stdout.strip() if result.returncode == 0 else None

    def leader(self):
        primaries = [node for node in self.nodes if self.processes[node["name"]].poll() is None and self.query(node, "SELECT pg_is_in_recovery()") == "f"]
        return primaries[0] if len(primaries) == 1 else None

    def wait_whole(self, timeout=180):
        """Until a leader streams to both standbys, one of them synchronously, and Patroni's
        own record agrees (its `/cluster` shows a sync_standby): with synchronous_mode_strict,
        Patroni promotes only the standby its DCS names, so a leader killed before that record
        is written leaves the cluster without one, by design."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            leader = self.leader()
            if leader and self.query(leader, "SELECT count(*) FILTER (WHERE state = 'streaming') || '|' || count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication") == "2|1" \
                    and self.patroni_roles(leader) == ["leader", "replica", "sync_standby"]:
                return leader
            time.sleep(0.2)
        sys.exit("bench: the Patroni cluster did not become whole")

    def patroni_roles(self, node):
        """The members' roles as Patroni's REST API reports them (from its DCS), sorted."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{node['rest']}/cluster", timeout=5) as response:
                members = json.load(response).get("members", [])
        except (OSError, ValueError):
            return []
        return sorted(member.get("role", "") for member in members if member.get("state") in ("running", "streaming"))

    def kill(self, node):
        process = self.processes[node["name"]]
        pid_file = f"{node['data']}/postmaster.pid"
        postmaster = int(open(pid_file).readline()) if os.path.exists(pid_file) else None
        os.kill(process.pid, signal.SIGKILL)
        if postmaster:
            try:
                os.kill(postmaster, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait()

    def stop(self):
        for process in list(self.processes.values()) + [self.etcd]:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 20
        for process in list(self.processes.values()) + [self.etcd]:
            try:
                process.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]
