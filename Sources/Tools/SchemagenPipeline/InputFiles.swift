import Foundation
import MigrationFiles
import Synchronization

/// What one `generate` run reads: each schema file, template and migration file read from the
/// disk once and kept, so the cache's digest, the load, the plan and the render share one read.
/// Safe to use from several threads (the digest reads on all cores). What the run writes is
/// forgotten, so what is read after the write is the new content.
public final class InputFiles: MigrationFileReading {
    private struct Kept {
        var bytes: [String: [UInt8]?] = [:]
        var names: [String: [String]] = [:]
        /// Every read from the disk, in order (paths, folders with a trailing `/`).
        var diskReads: [String] = []
    }

    private let kept = Mutex(Kept())

    public init() {}

    public func bytes(atPath path: String) -> [UInt8]? {
        if let known = kept.withLock({ $0.bytes[path] }) { return known }
        // Read outside the lock: the digest reads different files at once.
        let read = FileManager.default.contents(atPath: path).map { [UInt8]($0) }
        kept.withLock { kept in
            kept.bytes[path] = .some(read)
            kept.diskReads.append(path)
        }
        return read
    }

    public func names(inFolder path: String) -> [String] {
        if let known = kept.withLock({ $0.names[path] }) { return known }
        let read = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        kept.withLock { kept in
            kept.names[path] = read
            kept.diskReads.append(path + "/")
        }
        return read
    }

    /// Forgets a folder's listing and the named files in it, after the run wrote them.
    public func forget(folder path: String, files names: [String]) {
        kept.withLock { kept in
            kept.names[path] = nil
            for name in names { kept.bytes[path + "/" + name] = nil }
        }
    }

    /// Every read from the disk so far, in order: a file's path, or a folder's with a trailing
    /// `/` for its listing. For tests that check each input is read once.
    public var diskReads: [String] { kept.withLock { $0.diskReads } }
}
