import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A highly available PostgreSQL cluster for tests, as production runs one: etcd and three
/// Patroni nodes (Debian's `patroni` and `etcd-server`) on free loopback ports, in synchronous
/// mode (`synchronous_mode_strict`: no acknowledged commit is lost), with the short timings
/// tests need (`ttl` 10 s, `loop_wait` 2 s, `retry_timeout` 4 s, `primary_start_timeout` 0).
/// Each process is a `TestDaemon`: stopped on every path, by its process group's id. About 15 s
/// to start; a killed leader is replaced in about 4 to 10 s.
///
///     let cluster = try PatroniCluster.shared()
///     let url = try cluster.createDatabase()          // postgres://...,...,.../db?target_session_attrs=read-write
///     let old = try cluster.killLeader()              // SIGKILL to its Patroni and its postmaster
///     let new = try cluster.waitForLeader(other: old)
public final class PatroniCluster: @unchecked Sendable {
    /// Whether the cluster tests can run here: Patroni, etcd and the PostgreSQL server binaries.
    public static var available: Bool {
        PostgresServer.available && FileManager.default.isExecutableFile(atPath: patroni) && FileManager.default.isExecutableFile(atPath: etcd)
    }

    public static let skipReason =
        "SKIPPED: Patroni, etcd or the PostgreSQL server binaries are not installed; `sh .ci/install-deps --tests` installs them (patroni, etcd-server)"

    static let patroni = "/usr/bin/patroni"
    static let etcd = "/usr/bin/etcd"

    /// One cluster for the test run, started on first use. Tests that kill its leader leave it
    /// with a leader and every node running again (`restoreKilledNodes`).
    public static func shared() throws -> PatroniCluster {
        try sharedCluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try PatroniCluster()
            cluster = started
            return started
        }
    }

    private static let sharedCluster = LockedValue<PatroniCluster?>(nil)

    /// The shared cluster for one test alone: tests that kill its leader and tests that expect
    /// a primary must not run at once, whichever suites they are in. A test waits for its turn
    /// suspended, not on a thread: cluster tests run on the two `BlockingThreads`, and two of
    /// them blocked waiting while the test holding the turn waited for a thread deadlocked a
    /// clean-clone run until CI's time ran out.
    ///
    ///     let lease = try await PatroniCluster.exclusive()
    ///     defer { lease.release() }
    public static func exclusive() async throws -> Lease {
        await turn.acquire()
        do {
            return Lease(cluster: try await offThePool { try shared() })
        } catch {
            turn.release()
            throw error
        }
    }

    private static let turn = Turn()

    /// A lock awaited without holding a thread: waiters resume in the order they came.
    final class Turn: Sendable {
        private let state = LockedValue<(held: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func acquire() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let free = state.withLock { state -> Bool in
                    if state.held {
                        state.waiting.append(continuation)
                        return false
                    }
                    state.held = true
                    return true
                }
                if free { continuation.resume() }
            }
        }

        func release() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.waiting.isEmpty {
                    state.held = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }

    /// One test's turn on the shared cluster; the next test's starts at `release` (from any
    /// thread, as async tests move between threads).
    public final class Lease: @unchecked Sendable {
        public let cluster: PatroniCluster
        private let released = LockedValue(false)

        init(cluster: PatroniCluster) { self.cluster = cluster }

        /// Ends the turn; once, whatever calls it.
        public func release() {
            let first = released.withLock { done -> Bool in
                defer { done = true }
                return !done
            }
            if first { PatroniCluster.turn.release() }
        }

        deinit { release() }
    }

    /// One Patroni node: its PostgreSQL port, its REST port and data folder, and its Patroni
    /// process while it runs.
    public struct Node: Sendable {
        public let name: String
        public let port: Int
        public let restPort: Int
        public let config: String
        public let data: String
    }

    public let folder: URL
    public let nodes: [Node]
    private let etcdProcess: TestDaemon
    private let patroniProcesses = LockedValue<[String: TestDaemon]>([:])

    public init(nodeCount: Int = 3) throws {
        guard Self.available, let binaries = PostgresServer.binaries else { throw TestDaemonError(Self.skipReason) }
        folder = try TestDaemon.makeFolder("patroni")
        let (client, peer) = (PostgresServer.freePort(), PostgresServer.freePort())
        etcdProcess = try TestDaemon(
            Self.etcd,
            [
                "--name", "e1", "--data-dir", folder.path + "/etcd", "--listen-client-urls", "http://127.0.0.1:\(client)", "--advertise-client-urls",
                "http://127.0.0.1:\(client)", "--listen-peer-urls", "http://127.0.0.1:\(peer)", "--initial-advertise-peer-urls", "http://127.0.0.1:\(peer)",
                "--initial-cluster", "e1=http://127.0.0.1:\(peer)",
            ], folder: folder, log: "etcd.log")
        var nodes: [Node] = []
        for index in 1...nodeCount {
            let node = Node(
                name: "pg\(index)", port: PostgresServer.freePort(), restPort: PostgresServer.freePort(), config: folder.path + "/pg\(index).yml",
                data: folder.path + "/data\(index)")
            try Self.configuration(node, etcd: client, folder: folder, binaries: binaries).write(toFile: node.config, atomically: true, encoding: .utf8)
            nodes.append(node)
        }
        self.nodes = nodes
        if getuid() == 0 { try PostgresServer.run("/bin/chown", ["-R", "postgres:postgres", folder.path]) }
        for node in nodes { try start(node) }
        do {
            _ = try waitForLeader(timeout: 90)
            try waitUntilAllStream(timeout: 90)
        } catch {
            shutdown()
            throw error
        }
    }

    deinit { shutdown() }

    /// Patroni's YAML for one node. pg_rewind brings a killed leader back as a standby.
    static func configuration(_ node: Node, etcd: Int, folder: URL, binaries: String) -> String {
        """
        scope: schemagen-test
        name: \(node.name)
        restapi: {listen: 127.0.0.1:\(node.restPort), connect_address: 127.0.0.1:\(node.restPort)}
        etcd3: {hosts: 127.0.0.1:\(etcd)}
        log: {level: WARNING}
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
              parameters: {wal_log_hints: 'on', max_connections: 200, fsync: 'off'}
          initdb: [{encoding: UTF8}, {locale: C.UTF-8}]
        postgresql:
          listen: 127.0.0.1:\(node.port)
          connect_address: 127.0.0.1:\(node.port)
          data_dir: \(node.data)
          bin_dir: \(binaries)
          pgpass: \(folder.path)/pgpass-\(node.name)
          authentication:
            superuser: {username: postgres, password: x}
            replication: {username: postgres, password: x}
            rewind: {username: postgres, password: x}
          pg_hba: [host replication all 127.0.0.1/32 trust, host all all 127.0.0.1/32 trust, local all all trust]
          parameters: {unix_socket_directories: '\(folder.path)'}

        """
    }

    /// Starts (or starts again) a node's Patroni, which starts its PostgreSQL.
    public func start(_ node: Node) throws {
        let process = try TestDaemon(Self.patroni, [node.config], folder: folder, log: "\(node.name).log")
        patroniProcesses.withLock { $0[node.name] = process }
    }

    /// `host:port,host:port,.../database`, with `target_session_attrs` (`read-write`: the
    /// primary, wherever it is).
    public func url(database: String = "postgres", attributes: String = "read-write") -> String {
        "postgresql://postgres@" + nodes.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") + "/\(database)?target_session_attrs=\(attributes)"
    }

    /// One node's URL.
    public func url(of node: Node, database: String = "postgres") -> String { "postgresql://postgres@127.0.0.1:\(node.port)/\(database)" }

    /// A new, empty database, created on the primary; its multi-host URL.
    public func createDatabase() throws -> String {
        let name = "test_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        let leader = try waitForLeader()
        try PostgresServer.run("/usr/bin/psql", [url(of: leader), "-v", "ON_ERROR_STOP=1", "-q", "-c", "CREATE DATABASE \(name)"])
        // A multi-host URL may try a standby first, and libpq tries no other host once one
        // refuses the database: wait until every standby replayed it.
        let deadline = Date().addingTimeInterval(30)
        for node in nodes where isRunning(node) {
            while query(node, "SELECT count(*) FROM pg_database WHERE datname = '\(name)'") != "1" {
                guard Date() < deadline else { throw TestDaemonError("database \(name) did not reach \(node.name) within 30 s") }
                usleep(50_000)
            }
        }
        return url(database: name)
    }

    /// What one SQL statement prints on a node (`psql -At`), or nil when the node does not answer.
    public func query(_ node: Node, _ sql: String, database: String = "postgres") -> String? {
        // A bounded connect: a node that accepts and never answers must not hang the run.
        let target = url(of: node, database: database)
        let bounded = target + (target.contains("?") ? "&" : "?") + "connect_timeout=10"
        return try? PostgresServer.run("/usr/bin/psql", [bounded, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql], quiet: false)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The node that is primary now (answers, and is not in recovery), if exactly one is.
    public func leader() -> Node? {
        let primaries = nodes.filter { isRunning($0) && query($0, "SELECT pg_is_in_recovery()") == "f" }
        return primaries.count == 1 ? primaries[0] : nil
    }

    /// Waits for a primary other than `other`; the new primary.
    @discardableResult
    public func waitForLeader(other: Node? = nil, timeout: Double = 60) throws -> Node {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let leader = leader(), leader.name != other?.name { return leader }
            usleep(200_000)
        }
        throw TestDaemonError("no\(other == nil ? "" : " new") primary within \(timeout) s: \(nodes.map { "\($0.name): \(logTail($0))" }.joined(separator: "\n"))")
    }

    /// Waits until every running standby streams from the primary, one of them synchronously,
    /// and Patroni's own record (its DCS) names that synchronous standby: with
    /// synchronous_mode_strict Patroni promotes only the standby its DCS names, so a leader
    /// killed before the record is written leaves the cluster without a leader, by design.
    public func waitUntilAllStream(timeout: Double = 60) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var healAt: Date? = Date().addingTimeInterval(timeout / 2)
        while Date() < deadline {
            // Half the time gone: a standby that cannot start is cloned again, once.
            if let due = healAt, Date() > due {
                healAt = nil
                reinitializeStandbysThatCannotStart()
            }
            if let leader = leader() {
                let standbys = nodes.filter { $0.name != leader.name && isRunning($0) }.count
                let streaming = query(leader, "SELECT count(*) FILTER (WHERE state = 'streaming'), count(*) FILTER (WHERE sync_state = 'sync') FROM pg_stat_replication")
                if streaming == "\(standbys)|\(standbys > 0 ? 1 : 0)", standbys == 0 || patroniRoles().contains("Sync Standby") { return }
            }
            usleep(200_000)
        }
        throw TestDaemonError("the standbys did not all stream within \(timeout) s")
    }

    /// Clones again from the leader (`patronictl reinit`) each standby whose Patroni runs but
    /// whose server does not answer, as an operator does with a node that cannot rejoin: after a
    /// leader is killed, a standby can hold WAL of a timeline the new leader's history does not
    /// have, and then fails every start ("WAL location ... belongs to timeline 7, but previous
    /// recovered WAL file came from timeline 8"). Under synchronous_mode_strict the leader's
    /// commits wait for a synchronous standby meanwhile. The nodes reinitialized.
    @discardableResult
    public func reinitializeStandbysThatCannotStart() -> [String] {
        guard let leader = leader() else { return [] }
        var reinitialized: [String] = []
        for node in nodes where node.name != leader.name && isRunning(node) && query(node, "SELECT 1") == nil {
            _ = try? PostgresServer.run("/usr/bin/patronictl", ["-c", node.config, "reinit", "schemagen-test", node.name, "--force", "--wait"])
            reinitialized.append(node.name)
        }
        return reinitialized
    }

    /// The roles of the running members as Patroni's DCS has them (`patronictl list`).
    func patroniRoles() -> [String] {
        // Its warnings share the output: the JSON is the bracketed list.
        guard let text = try? PostgresServer.run("/usr/bin/patronictl", ["-c", nodes[0].config, "list", "-f", "json"]),
            let start = text.firstIndex(of: "["), let end = text.lastIndex(of: "]"), start < end,
            let members = try? JSONSerialization.jsonObject(with: Data(text[start...end].utf8)) as? [[String: Any]]
        else { return [] }
        return members.filter { ["running", "streaming"].contains($0["State"] as? String ?? "") }.compactMap { $0["Role"] as? String }.sorted()
    }

    /// Turns Patroni's maintenance mode on or off (`patronictl pause/resume --wait`). Patroni
    /// resumes a standby's paused WAL replay at every loop (PostgreSQL 14 and later) unless it
    /// is in maintenance mode, so a test that pauses replay for longer than a loop turns it on,
    /// and off again: in maintenance mode Patroni fails nothing over.
    public func setMaintenance(_ on: Bool) throws {
        _ = try PostgresServer.run("/usr/bin/patronictl", ["-c", nodes[0].config, on ? "pause" : "resume", "--wait"])
    }

    /// Whether a node's Patroni runs.
    public func isRunning(_ node: Node) -> Bool {
        patroniProcesses.withLock { $0[node.name]?.isRunning ?? false }
    }

    /// The PID of a node's postmaster, from its `postmaster.pid`.
    public func postmasterPID(_ node: Node) -> pid_t? {
        guard let text = try? String(contentsOfFile: node.data + "/postmaster.pid", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// Kills the primary as a crash would: SIGKILL to its Patroni and its postmaster. The node.
    @discardableResult
    public func killLeader() throws -> Node {
        let leader = try waitForLeader()
        kill(node: leader)
        return leader
    }

    /// SIGKILL to a node's Patroni and postmaster (its backends then end by themselves).
    public func kill(node: Node) {
        let process = patroniProcesses.withLock { $0[node.name] }
        let postmaster = postmasterPID(node)
        process?.signal(SIGKILL)
        if let postmaster { Glibc.kill(postmaster, SIGKILL) }
        _ = process?.waitForExit(timeout: 10)
    }

    /// Starts every node whose Patroni is not running, and waits until each streams again (a
    /// killed leader comes back as a standby, rewound).
    public func restoreKilledNodes(timeout: Double = 120) throws {
        for node in nodes where !isRunning(node) {
            // Its old postmaster's backends hold the port until they notice it died.
            if let postmaster = postmasterPID(node) { Glibc.kill(postmaster, SIGKILL) }
            try start(node)
        }
        _ = try waitForLeader(timeout: timeout)
        try waitUntilAllStream(timeout: timeout)
    }

    func logTail(_ node: Node) -> String {
        patroniProcesses.withLock { $0[node.name]?.logTail(600) } ?? ""
    }

    /// Stops every node, then etcd, and removes the folder.
    public func shutdown() {
        let processes = patroniProcesses.withLock { current -> [TestDaemon] in
            defer { current = [:] }
            return Array(current.values)
        }
        for process in processes { Glibc.kill(-process.pid, SIGTERM) }
        for process in processes { process.stop(timeout: 20) }
        etcdProcess.stop()
        TestDaemon.removeFolder(folder)
    }
}
