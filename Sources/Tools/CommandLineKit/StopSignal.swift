import Dispatch

#if canImport(Glibc)
import Glibc
#endif

/// Blocks until SIGINT (^C) or SIGTERM arrives, and says which: a server command (the studio,
/// a sync endpoint) serves until then, then stops cleanly. The signals' default actions are back
/// in place afterwards.
///
///     let stopped = waitForStopSignal()   // SIGINT or SIGTERM
public func waitForStopSignal() -> Int32 {
    let queue = DispatchQueue(label: "commandlinekit.stop-signals")
    let arrived = DispatchSemaphore(value: 0)
    let received = SignalBox()
    let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
        source.setEventHandler {
            received.number = number
            arrived.signal()
        }
        source.resume()
        return source
    }
    arrived.wait()
    for source in sources { source.cancel() }
    signal(SIGINT, SIG_DFL)
    signal(SIGTERM, SIG_DFL)
    return queue.sync { received.number }
}

/// The signal that arrived, written on the signal queue and read on it.
private final class SignalBox: @unchecked Sendable {
    var number: Int32 = SIGINT
}
