import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A program started as a shell starts one: every signal unblocked and at its default, input
/// from /dev/null, output and errors to a file.
///
/// Foundation's `Process` passes on the signal mask of the thread that starts it, and the threads
/// tests run on block most signals: a child then never sees `SIGALRM` (pgbench's `-T` timer never
/// fires) or `SIGTERM` (`timeout` cannot stop it).
///
///     let load = try SpawnedProgram("/usr/bin/pgbench", ["-T", "30", url], output: log)
///     let status = load.wait(timeoutSeconds: 120)   // killed, and -1, past the bound
public final class SpawnedProgram: @unchecked Sendable {
    public let pid: pid_t

    public init(_ executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment, output path: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // No other descriptor: a pipe another thread has open for a program it runs would stay
        // open in this long-lived child, and that thread's read would never see its end.
        Spawning.addCloseFrom(&actions, 3)
        var attributes = Self.signalsAsAShellLeavesThem()
        defer { posix_spawnattr_destroy(&attributes) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(spawned)))") }
        self.pid = pid
    }

    /// Spawn attributes that unblock every signal and set each to its default in the child:
    /// without them a child keeps the spawning thread's mask, so `SIGTERM` stays pending in a
    /// daemon forever (a pgbouncer a test started outlived the run) and `SIGALRM` never arrives.
    /// The caller destroys them.
    public static func signalsAsAShellLeavesThem() -> posix_spawnattr_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return attributes
    }

    /// Its exit status once it ends; past `timeoutSeconds` it is killed and the answer is -1.
    public func wait(timeoutSeconds: Double) -> Int32 {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var status: Int32 = 0
        while true {
            let answered = waitpid(pid, &status, WNOHANG)
            if answered == pid { return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1 }
            if answered == -1, errno != EINTR { return -1 }
            if Date() > deadline {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) == -1, errno == EINTR {}
                return -1
            }
            usleep(20_000)
        }
    }

    struct SpawnError: Error, CustomStringConvertible {
        var description: String
    }
}
