import Dispatch
import Foundation
import MigrationFiles

/// Snapshot files decoded ahead of need, on another thread: `schemagen generate` starts
/// decoding the newest migration's snapshot (megabytes of JSON for a large schema) while it
/// loads the schemas, which takes about as long. A file changed after its decoding started
/// is decoded again when asked for.
public final class SnapshotReadAhead: @unchecked Sendable {
    public static let shared = SnapshotReadAhead()

    private struct Pending {
        let group: DispatchGroup
        let stamp: Stamp
        var result: Result<SchemaSnapshot, any Error>?
    }

    private struct Stamp: Equatable {
        let size: Int
        let modified: Date
    }

    private let lock = NSLock()
    private var pending: [String: Pending] = [:]

    /// Starts decoding `path` unless that is under way already.
    public func start(_ path: String) {
        guard let stamp = Self.stamp(path) else { return }
        lock.lock()
        defer { lock.unlock() }
        guard pending[path] == nil else { return }
        let group = DispatchGroup()
        pending[path] = Pending(group: group, stamp: stamp, result: nil)
        DispatchQueue.global(qos: .userInitiated).async(group: group) { [self] in
            let result = Result<SchemaSnapshot, any Error> { try Self.decode(path) }
            lock.lock()
            pending[path]?.result = result
            lock.unlock()
        }
    }

    /// The snapshot decoded ahead (waiting for it if need be), when the file is still as it
    /// was then; nil otherwise. Each read-ahead is handed out once.
    func take(_ path: String) -> Result<SchemaSnapshot, any Error>? {
        lock.lock()
        let entry = pending[path]
        lock.unlock()
        guard let entry else { return nil }
        entry.group.wait()
        lock.lock()
        let finished = pending.removeValue(forKey: path)
        lock.unlock()
        guard let finished, finished.stamp == Self.stamp(path) else { return nil }
        return finished.result
    }

    static func decode(_ path: String) throws -> SchemaSnapshot {
        try SchemaSnapshot.decode(Data(contentsOf: URL(fileURLWithPath: path)))
    }

    private static func stamp(_ path: String) -> Stamp? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = attributes[.size] as? Int, let modified = attributes[.modificationDate] as? Date
        else { return nil }
        return Stamp(size: size, modified: modified)
    }
}

extension MigrationDirectory {
    /// Starts decoding the newest migration's snapshot on another thread (see `latestSnapshot`).
    public func readAheadLatestSnapshot() {
        guard let last = entries().last else { return }
        SnapshotReadAhead.shared.start(URL(fileURLWithPath: path).appendingPathComponent(last.snapshotFile).path)
    }
}
