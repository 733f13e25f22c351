import CommandLineKit
import Dispatch
import Foundation
import Migrator
import MigratorCore
import SQLiteKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT and SIGTERM while migrations run: the first sends the engine's cancel (libpq's cancel
/// request, SQLite's interrupt) and lets the migration roll back, so no backend is left queued
/// for a lock; a second one quits at once.
enum Interrupts {
    final class State: @unchecked Sendable {
        let lock = NSLock()
        var signal: Int32 = 0
        var repeats: DispatchSourceTimer?
    }

    static let state = State()

    /// 128 plus the signal, as shells report it: 130 for SIGINT, 143 for SIGTERM.
    static var exitCode: ExitCode {
        let signal = state.lock.withLock { state.signal }
        return ExitCode(128 + (signal == 0 ? SIGINT : signal))
    }

    static func whileRunning<T>(_ cancellation: MigrationCancellation, io: CommandIO, _ body: () -> T) -> T {
        let queue = DispatchQueue(label: "migrate.interrupts")
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { received(number, cancellation: cancellation, io: io, queue: queue) }
            source.resume()
            return source
        }
        defer {
            for source in sources { source.cancel() }
            queue.sync { state.repeats?.cancel() }
            signal(SIGINT, SIG_DFL)
            signal(SIGTERM, SIG_DFL)
        }
        return body()
    }

    private static func received(_ number: Int32, cancellation: MigrationCancellation, io: CommandIO, queue: DispatchQueue) {
        let name = number == SIGINT ? "SIGINT" : "SIGTERM"
        let first = state.lock.withLock { () -> Bool in
            defer { if state.signal == 0 { state.signal = number } }
            return state.signal == 0
        }
        guard first else {
            io.writeError("migrate: \(name) again: quitting now; the server rolls back what the closed connection leaves\n")
            cancellation.cancel()
            _exit(128 + number)
        }
        io.writeError("migrate: \(name) received: cancelling the statement in progress and rolling the migration back (send it again to quit at once)\n")
        cancellation.cancel()
        // A request that reached the server between two statements cancelled nothing: repeat it
        // until the migration has stopped.
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 0.5, repeating: 0.5)
        timer.setEventHandler { cancellation.cancel() }
        timer.resume()
        state.repeats = timer
    }
}
