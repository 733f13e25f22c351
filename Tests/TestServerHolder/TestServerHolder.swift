import Foundation
import TestSupport

/// A stand-in for a test process, for `TestDaemonTests`: starts a PostgreSQL server and a second
/// daemon the way tests do, says where they are, and waits to be ended by a signal or to exit
/// (`exit` as its argument: once the servers are up).
///
///     test-server-holder wait    # prints "ready <server folder> <other folder>", then waits
@main enum TestServerHolder {
    static func main() throws {
        let server = try PostgresServer()
        let folder = try TestDaemon.makeFolder("holder")
        let sleeper = try TestDaemon("/bin/sleep", ["600"], folder: folder, log: "sleep.log", asPostgresUser: false)
        FileHandle.standardOutput.write(Data("ready \(server.folder.path) \(folder.path)\n".utf8))
        if CommandLine.arguments.dropFirst().first == "exit" { exit(0) }
        withExtendedLifetime((server, sleeper)) {
            while true { sleep(60) }
        }
    }
}
