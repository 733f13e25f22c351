import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The repository's root folder, found from this file's path so tests run from any directory.
public let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A fresh path in a new temporary folder.
public func temporaryPath(_ name: String = "db.sqlite") -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder.appendingPathComponent(name).path
}

/// A new temporary folder.
public func temporaryFolder() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A deterministic generator (SplitMix64), so a failing randomized test can be repeated from
/// its seed: tests print the seed and read `SCHEMAGEN_TEST_SEED` to reuse one.
public struct SeededGenerator: RandomNumberGenerator {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// The seed from `SCHEMAGEN_TEST_SEED`, else `fallback`.
    public static func seed(default fallback: UInt64) -> UInt64 {
        ProcessInfo.processInfo.environment["SCHEMAGEN_TEST_SEED"].flatMap(UInt64.init) ?? fallback
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A built executable of this package, run as users run it.
public struct BuiltTool: Sendable {
    public let url: URL

    /// The product `name` in the build folder the test binary runs from.
    public init(_ name: String) {
        var folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        // On Linux the tests run from `<Package>PackageTests.xctest`, a file in the build folder.
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path), folder.path != "/" {
            folder = folder.deletingLastPathComponent()
        }
        url = folder.appendingPathComponent(name)
    }

    /// Any executable, by its path (`/usr/sbin/ip`).
    public init(path: String) { url = URL(fileURLWithPath: path) }

    public struct Run: Sendable {
        public let status: Int32
        public let output: String
        public let error: String
    }

    /// Starts the tool; `finish` waits for it.
    public func start(_ arguments: [String], environment: [String: String]? = nil, in folder: URL = repositoryRoot) throws -> Running {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.currentDirectoryURL = folder
        if let environment { process.environment = environment }
        let output = Pipe(), error = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = input
        try process.run()
        return Running(process: process, output: output, error: error, input: input)
    }

    public func run(_ arguments: [String], environment: [String: String]? = nil, in folder: URL = repositoryRoot) throws -> Run {
        try start(arguments, environment: environment, in: folder).finish()
    }

    public final class Running: @unchecked Sendable {
        public let process: Process
        let output: Pipe
        let error: Pipe
        let input: Pipe

        init(process: Process, output: Pipe, error: Pipe, input: Pipe) {
            self.process = process
            self.output = output
            self.error = error
            self.input = input
        }

        /// Writes to the tool's standard input (which `finish` closes).
        public func write(_ text: String) throws {
            try input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
        }

        public var processIdentifier: Int32 { process.processIdentifier }

        /// Closes the pipes' read ends once nothing more is read from them. Foundation's
        /// `Process`, waited for through `isRunning`, is not always released, and keeps its
        /// pipes open: a suite leaked 2,500 descriptors, and `Process.run` crashed once its
        /// `/proc/self/fd` listing outgrew glibc's directory buffer (swift-corelibs-foundation
        /// PR 5472).
        func closeReadEnds() {
            try? output.fileHandleForReading.close()
            try? error.fileHandleForReading.close()
        }

        /// What `read(_:until:)` has read so far, by stream.
        private var received: [Int32: [UInt8]] = [:]

        /// Reads standard output (or error) as it arrives until `done` holds for everything read
        /// so far or `seconds` pass; returns everything read so far.
        @discardableResult
        public func read(_ stream: Stream = .output, until done: (String) -> Bool, within seconds: Double = 10) -> String {
            let handle = stream == .output ? output.fileHandleForReading : error.fileHandleForReading
            let descriptor = handle.fileDescriptor
            let deadline = Date().addingTimeInterval(seconds)
            var text = String(decoding: received[descriptor] ?? [], as: UTF8.self)
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !done(text), Date() < deadline {
                var ready = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
                guard poll(&ready, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                received[descriptor, default: []] += buffer[0..<count]
                text = String(decoding: received[descriptor] ?? [], as: UTF8.self)
            }
            return text
        }

        public enum Stream { case output, error }

        /// Reads both pipes while the child runs, so a large output cannot block it, and stops
        /// once it has exited and the pipes hold nothing more. Not "until end of file": a daemon
        /// another test started meanwhile (pgbouncer, a restarted server) may have inherited the
        /// pipes' write ends and would hold them open for as long as it lives.
        public func finish() -> Run {
            try? input.fileHandleForWriting.close()
            var streams: [Int32: [UInt8]] = [:]
            let descriptors = [output.fileHandleForReading.fileDescriptor, error.fileHandleForReading.fileDescriptor]
            for descriptor in descriptors { streams[descriptor] = received[descriptor] ?? [] }
            var open = Set(descriptors)
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !open.isEmpty {
                let exited = !process.isRunning || isZombie(process.processIdentifier)
                var polls = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                let ready = poll(&polls, nfds_t(polls.count), exited ? 0 : 100)
                if ready <= 0 {
                    if exited { break }
                    continue
                }
                for entry in polls where entry.revents != 0 {
                    let count = buffer.withUnsafeMutableBytes { Foundation.read(entry.fd, $0.baseAddress, $0.count) }
                    if count <= 0 { open.remove(entry.fd) } else { streams[entry.fd, default: []] += buffer[0..<count] }
                }
            }
            let status = exitStatus(of: process)
            closeReadEnds()
            let out = streams[descriptors[0]] ?? [], err = streams[descriptors[1]] ?? []
            return Run(status: status, output: String(decoding: out, as: UTF8.self), error: String(decoding: err, as: UTF8.self))
        }
    }
}

/// Runs a program found on the PATH (`swift`, or a path) in `folder`; its exit status and its
/// standard output and error together.
public func runProgram(_ executable: String, _ arguments: [String], in folder: URL) throws -> (status: Int32, output: String) {
    try capturedOutput(of: executable, arguments, in: folder, withErrors: true)
}

/// A program's standard output alone (its errors discarded), for output a test parses.
public func standardOutput(of executable: String, _ arguments: [String], in folder: URL = repositoryRoot) throws -> (status: Int32, output: String) {
    try capturedOutput(of: executable, arguments, in: folder, withErrors: false)
}

/// A program run to its end: its exit status and its standard output (its errors too, or
/// none of them).
private func capturedOutput(of executable: String, _ arguments: [String], in folder: URL, withErrors: Bool) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    process.currentDirectoryURL = folder
    let output = Pipe()
    process.standardOutput = output
    process.standardError = withErrors ? output : FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    try? output.fileHandleForReading.close()
    return (exitStatus(of: process), String(decoding: data, as: UTF8.self))
}

/// How many pipe ends this process holds open (`/proc/self/fd`): a test that runs something
/// many times checks with it that each run closes what it opened.
public func openPipeCount() -> Int {
    let folder = "/proc/self/fd"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    return entries.filter { ((try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)) ?? "").hasPrefix("pipe:") }.count
}

/// The Swift files under a folder, as paths relative to it, sorted.
public func swiftFiles(under folder: String) -> [String] {
    ((FileManager.default.enumerator(atPath: folder)?.allObjects as? [String]) ?? []).filter { $0.hasSuffix(".swift") }.sorted()
}

/// A target's source folder, `Sources/<layer>/<target>` (Package.swift groups targets by layer).
public func sourceFolder(of target: String) -> URL {
    let sources = repositoryRoot.appendingPathComponent("Sources")
    let layers = (try? FileManager.default.contentsOfDirectory(atPath: sources.path)) ?? []
    for layer in layers.sorted() where FileManager.default.fileExists(atPath: sources.path + "/" + layer + "/" + target) {
        return sources.appendingPathComponent(layer).appendingPathComponent(target)
    }
    return sources.appendingPathComponent(target)
}

/// Waits for a child started with Foundation's `Process`; its status as `terminationStatus`
/// gives it (the exit code, or the signal that ended it). Foundation on Linux learns of a
/// child's exit from SIGCHLD and can miss one when children exit while others launch: a
/// clean-clone CI run hung on two zombies that `isRunning` still called running. A child that
/// is a zombie gets Foundation another SIGCHLD, so that it looks at its children again and
/// reaps it itself (reaping it here instead would free its pid for reuse while Foundation
/// still holds it, and a later run crashed inside `Process.run`).
///
/// A zombie that ten seconds of nudges do not get reaped is reaped here after all, and its status
/// decoded from `waitpid`: a clean-clone CI run hung 30 minutes on one, its first child, which
/// Foundation never learned of (its SIGCHLD source was not set up yet, it seems). The pid's
/// reuse, the risk above, needs the system to go round all its pids first.
public func exitStatus(of process: Process) -> Int32 {
    let pid = process.processIdentifier
    var zombieSince: Date?
    while process.isRunning {
        if isZombie(pid) {
            kill(getpid(), SIGCHLD)
            let since = zombieSince ?? Date()
            zombieSince = since
            if Date().timeIntervalSince(since) > 10 {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    // WIFEXITED: the exit code; else the signal, as terminationStatus gives it.
                    return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
                }
            }
        }
        usleep(10_000)
    }
    return process.terminationStatus
}

/// Whether a process has exited and waits to be reaped (`Z` in `/proc/<pid>/stat`).
func isZombie(_ pid: pid_t) -> Bool {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return false }
    return text[text.index(after: close)...].trimmingCharacters(in: .whitespaces).first == "Z"
}
