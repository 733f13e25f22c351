import Foundation

#if canImport(Glibc)
import Glibc
import Synchronization
#endif

/// A throwaway PostgreSQL server for tests: `initdb` into a folder under `TestDaemon.root` (as
/// the `postgres` user when the tests run as root), then `postgres` itself in the foreground on a
/// free port with a private socket folder, owned by a `TestDaemon` (stopped on every path, and
/// its folder removed after it stopped). About a second to start. A test that starts a server
/// of its own stops it with `shutdown()` in a `defer`.
public final class PostgresServer: @unchecked Sendable {
    /// The folder of the server binaries (`initdb`, `pg_ctl`), or nil when PostgreSQL is not installed.
    public static let binaries: String? = {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        return nil
    }()

    /// Whether the PostgreSQL tests can run here. Where they cannot, they are skipped, and say so.
    public static var available: Bool { binaries != nil }

    /// Why the PostgreSQL tests are skipped, for the test report.
    public static let skipReason = "SKIPPED: the PostgreSQL server binaries (initdb, pg_ctl) are not installed; `sh .ci/install-deps` installs them"

    /// One server for the whole test run, started on first use.
    public static let shared: PostgresServer? = {
        guard available else { return nil }
        return try? PostgresServer()
    }()

    public let folder: URL
    public let port: Int
    private let asPostgresUser: Bool

    /// `postgresql://postgres@127.0.0.1:<port>/<database>`.
    public func url(database: String = "postgres") -> String { "postgresql://postgres@127.0.0.1:\(port)/\(database)" }

    /// Where the server listens besides 127.0.0.1 (a veth link's host end), trusting clients
    /// from those addresses' /24 networks.
    public let extraAddresses: [String]

    public init(alsoListeningOn extraAddresses: [String] = []) throws {
        self.extraAddresses = extraAddresses
        guard let binaries = Self.binaries else { throw ServerError("PostgreSQL is not installed") }
        folder = try TestDaemon.makeFolder("pg")
        asPostgresUser = getuid() == 0
        port = Self.freePort()
        try run(binaries + "/initdb", ["-D", folder.path + "/data", "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
        if !extraAddresses.isEmpty {
            let rules = extraAddresses.map { address in
                "host all all \(address.split(separator: ".").prefix(3).joined(separator: ".")).0/24 trust\n"
            }.joined()
            let handle = try FileHandle(forWritingTo: folder.appendingPathComponent("data/pg_hba.conf"))
            handle.seekToEndOfFile()
            handle.write(Data(rules.utf8))
            try handle.close()
        }
        try start()
    }

    deinit { shutdown() }

    /// The running postmaster, owned; nil while stopped.
    private let process = LockedValue<TestDaemon?>(nil)

    /// Starts (or restarts) the server on its port, and waits until it accepts connections.
    public func start() throws {
        guard let binaries = Self.binaries else { return }
        let daemon = try TestDaemon(
            binaries + "/postgres",
            [
                "-D", folder.path + "/data", "-p", "\(port)", "-k", folder.path, "-c", "listen_addresses=\((["127.0.0.1"] + extraAddresses).joined(separator: ","))",
                "-c", "fsync=off", "-c", "max_connections=200",
            ], folder: folder, log: "log", asPostgresUser: asPostgresUser, stopSignal: SIGQUIT)
        process.withLock { $0 = daemon }
        let deadline = Date().addingTimeInterval(30)
        while (try? Self.run(binaries + "/pg_isready", ["-q", "-h", "127.0.0.1", "-p", "\(port)"], quiet: true)) == nil {
            guard daemon.isRunning, Date() < deadline else {
                daemon.stop()
                throw ServerError("PostgreSQL did not start on port \(port): \(daemon.logTail())")
            }
            usleep(50_000)
        }
    }

    /// Stops the server: `fast` rolls back open transactions and disconnects clients; `immediate`
    /// is a crash as far as clients can tell; `smart` waits for clients to leave.
    public func stop(mode: String = "fast") {
        let signal: Int32 =
            switch mode {
            case "immediate": SIGQUIT
            case "smart": SIGTERM
            default: SIGINT
            }
        let daemon = process.withLock { current -> TestDaemon? in
            defer { current = nil }
            return current
        }
        daemon?.stop(signal: signal)
    }

    /// Stops the server for good and removes its folder.
    public func shutdown() {
        stop(mode: "immediate")
        TestDaemon.removeFolder(folder)
    }

    /// A new, empty database; its URL.
    public func createDatabase() throws -> String {
        let name = "test_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        try runPSQL(url(), "CREATE DATABASE \(name)")
        return url(database: name)
    }

    /// Runs SQL through `psql` (the baseline tool), stopping on the first error.
    public func runPSQL(_ url: String, _ sql: String) throws {
        try Self.run("/usr/bin/psql", [url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql])
    }

    private func run(_ tool: String, _ arguments: [String], quiet: Bool = false) throws {
        if asPostgresUser {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", tool] + arguments, quiet: quiet)
        } else {
            try Self.run(tool, arguments, quiet: quiet)
        }
    }

    struct ServerError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs a tool to its end with posix_spawn and waitpid, its output in a temporary file:
    /// Foundation's Process can wait forever on a child whose grandchild (the server) lives on.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], quiet: Bool = false) throws -> String {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("pg-tool-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, quiet ? "/dev/null" : outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // No other descriptor: a pipe another thread has open for a program it runs would stay
        // open in this long-lived child, and that thread's read would never see its end.
        Spawning.addCloseFrom(&actions, 3)
        let argv: [UnsafeMutablePointer<CChar>?] = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        // Signals unblocked: a server or pgbouncer started with the test thread's mask never
        // sees the SIGTERM that stops it.
        var attributes = SpawnedProgram.signalsAsAShellLeavesThem()
        defer { posix_spawnattr_destroy(&attributes) }
        let spawned = posix_spawn(&pid, tool, &actions, &attributes, argv, environ)
        guard spawned == 0 else { throw ServerError("cannot run \(tool): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // Exited normally with status 0.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { throw ServerError("\(tool) \(arguments.joined(separator: " ")) failed: \(text)") }
        return text
    }

    /// A port nothing listens on now and this process has not handed out before: bound, read
    /// back, released. The kernel can give a port back again once it is released, and two of a
    /// cluster's servers on one port (a node's PostgreSQL and another's REST API) hung a run.
    static func freePort() -> Int {
        while true {
            let port = unusedPort()
            let isNew = handedOut.withLock { ports in ports.insert(port).inserted }
            if isNew { return port }
        }
    }

    private static let handedOut = Mutex<Set<Int>>([])

    private static func unusedPort() -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
