import TodoExample

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct TodoMain {
    static func main() {
        // A parent may have spawned us with these blocked (a thread of a dispatch pool, say);
        // `todo watch` runs until interrupted, so interrupting must work.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, signal) }
        sigprocmask(SIG_UNBLOCK, &signals, nil)
        exit(TodoTool.tool.main(arguments: Array(CommandLine.arguments.dropFirst()), io: .standard()).rawValue)
    }
}
