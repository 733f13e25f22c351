import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A server a test started (PostgreSQL, pgbouncer, etcd, Patroni), owned until it stops, on every
/// path:
///
/// - `stop()`, which the owner calls when it is done (a `defer`, so on success, failure and a
///   thrown error alike), and `deinit`;
/// - the test process's normal exit (`atexit`);
/// - `SIGINT` and `SIGTERM` to the test process: a handler sends each server's process group
///   `SIGTERM`, then lets the signal end the process;
/// - any other death of the test process (`SIGKILL`, a crash): the reaper, a small process in a
///   session of its own that waits for the test process's end (the end of a pipe only it holds)
///   and then stops what is left and removes its folders.
///
/// Each server runs in the foreground (never `-d`), as the test process's child in a process
/// group of its own, so its PID is known and its group is killed by id, never by name. Its folder
/// lies under `TestDaemon.root`, which `.ci/run` checks is empty, with no process working in it,
/// after the tests; the folder is removed only after its server stopped.
///
///     let etcd = try TestDaemon("/usr/bin/etcd", ["--data-dir", folder.path + "/etcd"], folder: folder, log: "etcd.log")
///     defer { etcd.stop() }
public final class TestDaemon: @unchecked Sendable {
    /// The process's PID, which is also its process group's id.
    public let pid: pid_t
    /// The folder it works in; removed by `removeFolder` or when the last daemon of the folder stops.
    public let folder: URL
    /// What the process wrote (standard output and error).
    public let logPath: String
    /// The signal that stops it when its owner, the exit or a signal to the tests does
    /// (PostgreSQL's `SIGQUIT`: immediate, with no wait for clients).
    public let stopSignal: Int32
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Where every test server's folder is: `$SCHEMAGEN_TEST_SERVERS`, else
    /// `/tmp/schemagen-test-servers`. `.ci/run` points it at a folder of its own and checks it.
    public static let root: URL = {
        let path = ProcessInfo.processInfo.environment["SCHEMAGEN_TEST_SERVERS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp/schemagen-test-servers"
        let url = URL(fileURLWithPath: path)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        // Servers run as `postgres` when the tests run as root: they make folders of their own here.
        chmod(url.path, 0o1777)
        return url
    }()

    /// A new, empty folder for one server (or a cluster's servers) under `root`, owned by the
    /// `postgres` user when the tests run as root.
    public static func makeFolder(_ name: String) throws -> URL {
        let folder = root.appendingPathComponent("\(name)-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0 { _ = chown(folder.path, postgresUser.uid, postgresUser.gid) }
        return folder
    }

    /// The `postgres` user's ids (PostgreSQL, pgbouncer and Patroni refuse to run as root).
    public static let postgresUser: (uid: uid_t, gid: gid_t) = {
        guard let entry = getpwnam("postgres") else { return (0, 0) }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()

    /// Starts `executable` in the foreground, in a process group of its own, working in `folder`,
    /// its output appended to `folder/log`. As the `postgres` user when the tests run as root
    /// (through `setpriv`, which runs the program in its own place, so `pid` is the server's).
    public init(
        _ executable: String, _ arguments: [String], folder: URL, log: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        asPostgresUser: Bool = getuid() == 0, stopSignal: Int32 = SIGTERM
    ) throws {
        Self.prepare()
        self.folder = folder
        self.stopSignal = stopSignal
        logPath = folder.appendingPathComponent(log).path
        let command =
            asPostgresUser
            ? ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", executable] + arguments
            : [executable] + arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        Spawning.addChangeDirectory(&actions, folder.path)
        // Nothing else the test process has open: a pipe of another test's child, held open by a
        // server, would never reach its end.
        Spawning.addCloseFrom(&actions, 3)
        var attributes = SpawnedProgram.signalsAsAShellLeavesThem()
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own: stopped by its id, and out of reach of a terminal's ^C,
        // which the test process handles for it.
        posix_spawnattr_setpgroup(&attributes, 0)
        var flags: Int16 = 0
        posix_spawnattr_getflags(&attributes, &flags)
        posix_spawnattr_setflags(&attributes, flags | Int16(POSIX_SPAWN_SETPGROUP))
        let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        // The registry's lock is held across the spawn, so the signal handler and the reaper
        // never miss a group that exists.
        let spawned = Self.registry.withLock { registry -> Int32 in
            let result = posix_spawn(&pid, command[0], &actions, &attributes, argv, envp)
            if result == 0 { registry.add(pid, signal: stopSignal, folder: folder.path) }
            return result
        }
        guard spawned == 0 else { throw TestDaemonError("cannot start \(executable): \(String(cString: strerror(spawned)))") }
        self.pid = pid
    }

    deinit { stop() }

    /// Whether the process has not exited yet.
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let answered = waitpid(pid, &status, WNOHANG)
        if answered == pid {
            exitStatus = status
            Self.registry.withLock { $0.remove(pid) }
            return false
        }
        return answered == 0
    }

    /// Sends the server a signal (`SIGKILL` a crash, `SIGSTOP` a hang): to its process only, not
    /// its group, as a crash of the one process would be.
    public func signal(_ number: Int32) {
        if isRunning { kill(pid, number) }
    }

    /// Stops it: `signal` (its `stopSignal` unless given) to its process group, then `SIGKILL` to the group after `timeout`
    /// seconds; waits for its exit. Safe to call more than once.
    public func stop(signal: Int32? = nil, timeout: Double = 30) {
        guard isRunning else { return }
        let number = signal ?? stopSignal
        kill(-pid, number)
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() > deadline {
                kill(-pid, SIGKILL)
                lock.lock()
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1, errno == EINTR {}
                exitStatus = status
                lock.unlock()
                Self.registry.withLock { $0.remove(pid) }
                break
            }
            usleep(20_000)
        }
        // Children it left in its group (a killed postmaster's backends) go with it.
        kill(-pid, SIGKILL)
    }

    /// Waits for the process to end by itself, up to `timeout` seconds; whether it did.
    public func waitForExit(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() > deadline { return false }
            usleep(20_000)
        }
        return true
    }

    /// The last `characters` of its log, for messages.
    public func logTail(_ characters: Int = 2000) -> String {
        String(((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").suffix(characters))
    }

    /// Removes a server's folder once none of its servers runs (call after `stop`).
    public static func removeFolder(_ folder: URL) {
        let busy = registry.withLock { $0.entries.contains { $0.folder == folder.path } }
        if !busy { try? FileManager.default.removeItem(at: folder) }
    }

    // MARK: - Every server, whatever ends the test process

    struct Registry {
        var entries: [(pid: pid_t, signal: Int32, folder: String)] = []

        mutating func add(_ pid: pid_t, signal: Int32, folder: String) {
            entries.append((pid, signal, folder))
            if let free = (0..<TestDaemon.groupCapacity).first(where: { TestDaemon.groups[2 * $0] == 0 }) {
                TestDaemon.groups[2 * free + 1] = signal
                TestDaemon.groups[2 * free] = pid
            }
            TestDaemon.writeReaperList(entries)
        }

        mutating func remove(_ pid: pid_t) {
            entries.removeAll { $0.pid == pid }
            for index in 0..<TestDaemon.groupCapacity where TestDaemon.groups[2 * index] == pid { TestDaemon.groups[2 * index] = 0 }
            TestDaemon.writeReaperList(entries)
        }
    }

    static let registry = LockedValue(Registry())

    /// The groups the signal handler stops, each with its stop signal (`[pid, signal, ...]`): a
    /// fixed table it reads without locks or allocation.
    static let groupCapacity = 256
    nonisolated(unsafe) static let groups: UnsafeMutablePointer<Int32> = {
        let table = UnsafeMutablePointer<Int32>.allocate(capacity: 2 * groupCapacity)
        table.initialize(repeating: 0, count: 2 * groupCapacity)
        return table
    }()

    /// The reaper's list of what to stop: `<pid> <signal> <folder>` per line, rewritten on each
    /// change.
    static var reaperList: String { root.appendingPathComponent(".reaper-\(getpid())").path }

    static func writeReaperList(_ entries: [(pid: pid_t, signal: Int32, folder: String)]) {
        let text = entries.map { "\($0.pid) \($0.signal) \($0.folder)\n" }.joined()
        let temporary = reaperList + ".new"
        _ = FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8))
        rename(temporary, reaperList)
    }

    /// Once per test process: the exit hook, the signal handlers and the reaper.
    private static let prepared: Void = {
        _ = groups
        atexit { TestDaemon.stopAll() }
        for number in [SIGINT, SIGTERM] {
            Glibc.signal(number) { received in
                // Only async-signal-safe calls: kill, signal, raise.
                for index in 0..<TestDaemon.groupCapacity where TestDaemon.groups[2 * index] > 0 {
                    kill(-TestDaemon.groups[2 * index], TestDaemon.groups[2 * index + 1])
                }
                Glibc.signal(received, SIG_DFL)
                raise(received)
            }
        }
        startReaper()
    }()

    static func prepare() { _ = prepared }

    /// Stops every server still running, then removes their folders: at the test process's exit.
    static func stopAll() {
        let entries = registry.withLock { $0.entries }
        for entry in entries { kill(-entry.pid, entry.signal) }
        let deadline = Date().addingTimeInterval(10)
        var left = entries
        while !left.isEmpty, Date() < deadline {
            left = left.filter { kill($0.pid, 0) == 0 && !reapedAfterExit($0.pid) }
            usleep(20_000)
        }
        for entry in entries { kill(-entry.pid, SIGKILL) }
        for entry in entries { try? FileManager.default.removeItem(atPath: entry.folder) }
        try? FileManager.default.removeItem(atPath: reaperList)
    }

    /// Reaps `pid` if it has exited (a server this process spawned); whether it had.
    static func reapedAfterExit(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == pid
    }

    /// A shell in a session of its own, ignoring the signals a terminal sends, that blocks on a
    /// socket only the test process holds open. When that process ends, however it ends, the read
    /// returns, and the shell stops the groups its list names (TERM, then KILL) and removes their
    /// folders.
    private static func startReaper() {
        var ends: [Int32] = [0, 0]
        // Close-on-exec from the start (no window for another thread's spawn to inherit it): the
        // end kept stays in this process only.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return }
        let list = reaperList
        let script = """
            trap '' INT TERM HUP
            cat >/dev/null
            [ -f '\(list)' ] || exit 0
            while read -r pid signal folder; do kill -s "$signal" -- -"$pid" 2>/dev/null; done < '\(list)'
            sleep 3
            while read -r pid signal folder; do kill -KILL -- -"$pid" 2>/dev/null; rm -rf "$folder"; done < '\(list)'
            rm -f '\(list)'
            """
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_addclose(&actions, ends[1])
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else: a pipe another thread has open for a program it runs (not close-on-exec)
        // would stay open in the reaper, and that thread's read would never see its end.
        Spawning.addCloseFrom(&actions, 3)
        var attributes = SpawnedProgram.signalsAsAShellLeavesThem()
        defer { posix_spawnattr_destroy(&attributes) }
        var flags: Int16 = 0
        posix_spawnattr_getflags(&attributes, &flags)
        posix_spawnattr_setflags(&attributes, flags | Spawning.setSID)
        let words: [String] = ["/bin/sh", "-c", script]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        if posix_spawn(&pid, "/bin/sh", &actions, &attributes, argv, environ) == 0 {
            reaperPID = pid
        }
        close(ends[0])
        // Kept open (and never written) until this process ends.
        reaperPipe = ends[1]
    }

    nonisolated(unsafe) static var reaperPipe: Int32 = -1
    nonisolated(unsafe) static var reaperPID: pid_t = 0
}

/// A value behind a lock.
final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

struct TestDaemonError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension TestDaemon {
    /// The processes working in `folder` or naming it on their command line (PostgreSQL's work
    /// in their data folder; the others in theirs): what a stopped server must not leave. As
    /// `<pid> <command line>`.
    public static func processes(under folder: URL) -> [String] {
        let path = folder.path
        var found: [String] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), pid != getpid() else { continue }
            let cwd = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd")) ?? ""
            let command = (FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { String(decoding: $0, as: UTF8.self) } ?? "")
                .replacingOccurrences(of: "\u{0}", with: " ")
            if cwd == path || cwd.hasPrefix(path + "/") || command.contains(path) { found.append("\(pid) \(command)") }
        }
        return found
    }
}

/// glibc's spawn extensions, which Swift's Glibc module does not show (they need `_GNU_SOURCE`):
/// looked up by name.
enum Spawning {
    /// `POSIX_SPAWN_SETSID` (glibc 2.26): the child starts a session of its own.
    static let setSID: Int16 = 0x80

    private typealias AddChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29): the child works in `path`.
    static func addChangeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return }
        _ = unsafeBitCast(symbol, to: AddChangeDirectory.self)(&actions, path)
    }

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34): the child closes every
    /// descriptor from `lowest` on.
    static func addCloseFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, lowest)
    }
}
