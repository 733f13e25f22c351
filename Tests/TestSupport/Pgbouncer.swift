import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A throwaway pgbouncer in front of the shared test server, in transaction pooling mode with
/// a small pool, as a fleet behind a pooler has it: several clients take turns on two server
/// connections, so session state (prepared statements, `SET`, LISTEN) does not carry over.
/// Started on first use, in the foreground (not `-d`), owned by a `TestDaemon`.
public final class Pgbouncer: @unchecked Sendable {
    public static let binary = "/usr/sbin/pgbouncer"

    /// Whether the pgbouncer tests can run here.
    public static var available: Bool { PostgresServer.available && FileManager.default.isExecutableFile(atPath: binary) }

    public static let skipReason = "SKIPPED: pgbouncer or the PostgreSQL server binaries are not installed; `sh .ci/install-deps --tests` installs them"

    public static let shared: Pgbouncer? = {
        guard available, let server = PostgresServer.shared else { return nil }
        return try? Pgbouncer(server: server)
    }()

    public let port: Int
    /// How many server connections each database gets.
    public let poolSize = 2
    private let folder: URL
    private let process: TestDaemon

    /// The URL of a database through the pooler.
    public func url(database: String) -> String { "postgresql://postgres@127.0.0.1:\(port)/\(database)" }

    init(server: PostgresServer) throws {
        port = PostgresServer.freePort()
        folder = try TestDaemon.makeFolder("pgbouncer")
        let config = """
            [databases]
            * = host=127.0.0.1 port=\(server.port)

            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(folder.path)/users.txt
            pool_mode = transaction
            default_pool_size = \(poolSize)
            max_client_conn = 200
            logfile = \(folder.path)/pgbouncer.log
            """
        try config.write(to: folder.appendingPathComponent("pgbouncer.ini"), atomically: true, encoding: .utf8)
        try "\"postgres\" \"\"\n".write(to: folder.appendingPathComponent("users.txt"), atomically: true, encoding: .utf8)
        // pgbouncer refuses to run as root: as the server, it runs as `postgres` then.
        process = try TestDaemon(Self.binary, ["-q", folder.path + "/pgbouncer.ini"], folder: folder, log: "output.log")
        try waitUntilListening()
    }

    deinit {
        process.stop()
        TestDaemon.removeFolder(folder)
    }

    private func waitUntilListening() throws {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, process.isRunning {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            close(socket)
            if connected == 0 { return }
            usleep(50_000)
        }
        let log = (try? String(contentsOf: folder.appendingPathComponent("pgbouncer.log"), encoding: .utf8)) ?? process.logTail()
        process.stop()
        throw PostgresServer.ServerError("pgbouncer did not listen on port \(port) within 10 s: \(log.suffix(2000))")
    }
}
