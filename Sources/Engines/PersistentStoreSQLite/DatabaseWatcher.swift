import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes the store when the database file may have changed: another process committed (its WAL
/// file grew) or checkpointed. On Linux through inotify on the file's folder, on Apple
/// platforms through a dispatch source on the WAL file; either way with a slow fallback poll
/// (one second), and a fast one (100 ms) when the system offers no file events. The store then
/// asks `PRAGMA data_version` whether anything was committed, and its history what.
final class DatabaseWatcher: @unchecked Sendable {
    static let fallbackInterval: Double = 1
    static let pollingInterval: Double = 0.1

    private let onChange: @Sendable () -> Void
    private let lock = NSLock()
    /// A wake-up is on its way to the store; more events add nothing until it is read.
    private var pending = false
    private var stopped = false
    #if canImport(Glibc)
    private let stopSignal = StopSignal()
    #elseif canImport(Darwin)
    private let queue = DispatchQueue(label: "schemagen.database-watcher")
    private var source: DispatchSourceFileSystemObject?
    private var timer: DispatchSourceTimer?
    #endif

    init(path: String, onChange: @escaping @Sendable () -> Void) {
        self.onChange = onChange
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let name = url.lastPathComponent
        #if canImport(Glibc)
        startPolling(folder: folder, names: [name, name + "-wal", name + "-journal"])
        #elseif canImport(Darwin)
        watch(wal: path + "-wal")
        #endif
    }

    deinit { stop() }

    /// Called by the store as it starts reading: later events wake it again.
    func rearm() {
        lock.lock()
        pending = false
        lock.unlock()
    }

    private func fire() {
        lock.lock()
        let send = !pending && !stopped
        pending = true
        lock.unlock()
        if send { onChange() }
    }

    func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        guard !wasStopped else { return }
        #if canImport(Glibc)
        stopSignal.raise()
        #elseif canImport(Darwin)
        source?.cancel()
        timer?.cancel()
        #endif
    }

    #if canImport(Glibc)
    /// A thread of its own blocks in poll(2), so no task of the cooperative pool waits on a file.
    private func startPolling(folder: String, names: [String]) {
        let watched = Set(names)
        let stopSignal = stopSignal
        let thread = Thread { [weak self] in
            let events = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            var watching = false
            if events >= 0, !watched.isEmpty {
                watching = inotify_add_watch(events, folder, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0
            }
            defer { if events >= 0 { close(events) } }
            let idle = Int32((watching ? DatabaseWatcher.fallbackInterval : DatabaseWatcher.pollingInterval) * 1000)
            // A writer appends to the WAL file (the event) before it publishes the commit in the
            // shared-memory index (mapped memory: no event), so the store may look too early.
            // Looking again 1, 4 and 20 ms after the last event catches the commit.
            var followUps: [Int32] = []
            var buffer = [UInt8](repeating: 0, count: 8192)
            while true {
                var descriptors = [pollfd(fd: stopSignal.descriptor, events: Int16(POLLIN), revents: 0)]
                if watching { descriptors.append(pollfd(fd: events, events: Int16(POLLIN), revents: 0)) }
                let timeout = followUps.first ?? idle
                let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
                guard let watcher = self else { return }
                if ready < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if descriptors[0].revents != 0 { return }
                if ready == 0 {
                    if !followUps.isEmpty { followUps.removeFirst() }
                    watcher.fire()
                    continue
                }
                // Read every queued event; wake the store once if any names the database.
                var relevant = false
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(events, $0.baseAddress, $0.count) }
                    guard count > 0 else { break }
                    var offset = 0
                    buffer.withUnsafeBytes { raw in
                        while offset + MemoryLayout<inotify_event>.size <= count {
                            let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                            let start = offset + MemoryLayout<inotify_event>.size
                            if length > 0, start + length <= count {
                                let bytes = raw[start..<(start + length)].prefix { $0 != 0 }
                                if watched.contains(String(decoding: bytes, as: UTF8.self)) { relevant = true }
                            }
                            offset = start + length
                        }
                    }
                }
                if relevant {
                    watcher.fire()
                    followUps = [1, 3, 16]
                }
            }
        }
        thread.name = "schemagen database watcher"
        thread.start()
    }
    #elseif canImport(Darwin)
    /// A dispatch source on the WAL file (opened again when SQLite deletes or replaces it), and
    /// the fallback timer.
    private func watch(wal: String) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.fallbackInterval, repeating: Self.fallbackInterval)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            if self.source == nil { self.openSource(wal) }
            self.fire()
        }
        self.timer = timer
        timer.resume()
        queue.async { [weak self] in self?.openSource(wal) }
    }

    private func openSource(_ wal: String) {
        let descriptor = open(wal, O_EVTONLY)
        guard descriptor >= 0 else { return }
        let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: [.write, .extend, .delete, .rename], queue: queue)
        source.setEventHandler { [weak self] in
            guard let self, let source = self.source else { return }
            if !source.data.isDisjoint(with: [.delete, .rename]) {
                source.cancel()
                self.source = nil
                self.openSource(wal)
            }
            self.fire()
        }
        source.setCancelHandler { close(descriptor) }
        self.source = source
        source.resume()
    }
    #endif
}

#if canImport(Glibc)
/// A pipe that tells the watcher thread to end. Shared by the watcher and its thread and closed
/// when both are done with it, so a late `raise` never writes to a reused descriptor or to a
/// pipe without a reader (SIGPIPE).
private final class StopSignal: @unchecked Sendable {
    private var ends: [Int32] = [-1, -1]

    init() {
        if pipe(&ends) != 0 { ends = [-1, -1] }
    }

    var descriptor: Int32 { ends[0] }

    func raise() {
        var byte: UInt8 = 1
        if ends[1] >= 0 { _ = write(ends[1], &byte, 1) }
    }

    deinit { for end in ends where end >= 0 { close(end) } }
}
#endif
