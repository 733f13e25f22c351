import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The servers tests start stop on every path: their owner's stop, the test process's exit, a
/// signal to it, and its death by SIGKILL (the reaper); their folders go after them. The test
/// process is `test-server-holder`, which starts a PostgreSQL server and a second daemon as
/// tests do.
@Suite(.blocking, .serialized) struct TestDaemonTests {
    /// Starts the holder and waits for its servers; their folders. Spawned as a shell starts a
    /// program (signals unblocked), as `swift test` starts a test process.
    func startHolder(_ argument: String = "wait") throws -> (SpawnedProgram, [URL]) {
        let output = temporaryPath("holder.log")
        let holder = try SpawnedProgram(BuiltTool("test-server-holder").url.path, [argument], output: output)
        let deadline = Date().addingTimeInterval(60)
        var line = ""
        while Date() < deadline {
            line = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if line.contains("\n") { break }
            usleep(50_000)
        }
        let parts = line.split(whereSeparator: \.isWhitespace).map(String.init)
        guard parts.count == 3, parts[0] == "ready" else {
            kill(holder.pid, SIGKILL)
            _ = holder.wait(timeoutSeconds: 10)
            throw TestDaemonError("the holder did not start its servers: \(line)")
        }
        let folders = parts.dropFirst().map { URL(fileURLWithPath: $0) }
        // A holder that exits at once may already have stopped them.
        for folder in folders where argument == "wait" {
            #expect(!TestDaemon.processes(under: folder).isEmpty, "a server runs in \(folder.path)")
        }
        return (holder, folders)
    }

    /// No process left in the folders, and the folders gone, within `seconds`.
    func expectCleanedUp(_ folders: [URL], within seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, folders.contains(where: { FileManager.default.fileExists(atPath: $0.path) || !TestDaemon.processes(under: $0).isEmpty }) {
            usleep(100_000)
        }
        for folder in folders {
            #expect(TestDaemon.processes(under: folder).isEmpty, "left running: \(TestDaemon.processes(under: folder))")
            #expect(!FileManager.default.fileExists(atPath: folder.path), "\(folder.path) was left behind")
        }
    }

    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)), arguments: [SIGINT, SIGTERM, SIGKILL])
    func aSignalledTestProcessLeavesNoServerBehind(signal: Int32) throws {
        let (holder, folders) = try startHolder()
        kill(holder.pid, signal)
        #expect(holder.wait(timeoutSeconds: 30) == -1, "ended by the signal")
        // SIGINT and SIGTERM: the handler stops the groups at once; SIGKILL: the reaper, within
        // its 3 s grace.
        expectCleanedUp(folders, within: 15)
    }

    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func aTestProcessThatExitsLeavesNoServerBehind() throws {
        let (holder, folders) = try startHolder("exit")
        #expect(holder.wait(timeoutSeconds: 30) == 0)
        expectCleanedUp(folders, within: 15)
    }

    /// The owner's own stop: the process group goes (a postmaster's backends with it), then the
    /// folder can go.
    @Test func stoppingADaemonStopsItsGroupAndFreesItsFolder() throws {
        let folder = try TestDaemon.makeFolder("unit")
        let daemon = try TestDaemon("/bin/sh", ["-c", "sleep 600 & sleep 600"], folder: folder, log: "out.log", asPostgresUser: false)
        usleep(200_000)
        #expect(daemon.isRunning)
        #expect(TestDaemon.processes(under: folder).count >= 2, "the shell and its child work in the folder")
        daemon.stop()
        #expect(!daemon.isRunning)
        TestDaemon.removeFolder(folder)
        expectCleanedUp([folder], within: 5)
    }
}

struct TestDaemonError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
