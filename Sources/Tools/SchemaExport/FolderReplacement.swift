import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Puts a folder of written files in place of an older one so that, wherever the process is
/// stopped, the path holds a whole folder or, for a moment, nothing with the whole old one
/// beside it.
///
/// The new files go to `.NAME.<pid>.new` beside the target; the old folder is renamed to
/// `.NAME.<pid>.old`, the new one renamed into place, then the old one removed. Renames within
/// a folder are atomic. Before writing, `replace` clears what an interrupted run (a process no
/// longer alive) left: it puts the old folder back when the target is missing, and removes
/// half-written new folders and old folders already replaced.
public enum FolderReplacement {
    /// What clearing an interrupted run did, to be told.
    public struct Recovery: Sendable, Equatable {
        /// The target was missing and its old folder was put back.
        public var restored = false
        /// Leftover folders removed (their names).
        public var removed: [String] = []

        public var isEmpty: Bool { !restored && removed.isEmpty }
    }

    /// Clears what interrupted runs left beside `target`. `accepting` is asked about the target
    /// as it then stands (for example, to refuse replacing a folder that is not the kind
    /// written); then the files are written and swapped in.
    public static func replace(
        _ target: URL, with files: [(path: String, contents: String)], accepting check: (URL) throws -> Void = { _ in }
    ) throws -> Recovery {
        let recovery = try recoverInterrupted(target)
        try check(target)
        let manager = FileManager.default
        let ownID = ProcessInfo.processInfo.processIdentifier
        let staging = sibling(of: target, pid: ownID, kind: .new)
        let previous = sibling(of: target, pid: ownID, kind: .old)
        // No folder of ours is left from an earlier run with this id: `recoverInterrupted` removed it.
        do {
            for file in files {
                let url = staging.appendingPathComponent(file.path)
                try manager.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(file.contents.utf8).write(to: url)
            }
        } catch {
            // A full disk, say: the old bundle was not touched, and half a new one helps no one.
            try? manager.removeItem(at: staging)
            throw error
        }
        let hadOld = manager.fileExists(atPath: target.path)
        if hadOld { try manager.moveItem(at: target, to: previous) }
        do {
            try manager.moveItem(at: staging, to: target)
        } catch {
            if hadOld { try? manager.moveItem(at: previous, to: target) }
            throw error
        }
        if hadOld { try manager.removeItem(at: previous) }
        return recovery
    }

    enum Kind: String {
        case new, old
        /// Staging folders of the first version of `export coredata`.
        case tmp
    }

    static func sibling(of target: URL, pid: Int32, kind: Kind) -> URL {
        target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).\(pid).\(kind.rawValue)")
    }

    /// Puts back the old folder of a run killed between its two renames, and removes what
    /// dead runs left. Folders of runs still alive are left alone.
    public static func recoverInterrupted(_ target: URL) throws -> Recovery {
        let manager = FileManager.default
        let folder = target.deletingLastPathComponent()
        let prefix = ".\(target.lastPathComponent)."
        var leftovers: [(url: URL, kind: Kind)] = []
        for entry in ((try? manager.contentsOfDirectory(atPath: folder.path)) ?? []).sorted() where entry.hasPrefix(prefix) {
            let parts = entry.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let pid = Int32(parts[0]), let kind = Kind(rawValue: String(parts[1])) else { continue }
            guard !isAlive(pid) else { continue }
            leftovers.append((folder.appendingPathComponent(entry), kind))
        }
        var recovery = Recovery()
        if !manager.fileExists(atPath: target.path), let old = leftovers.first(where: { $0.kind == .old }) {
            try manager.moveItem(at: old.url, to: target)
            recovery.restored = true
            leftovers.removeAll { $0.url == old.url }
        }
        for leftover in leftovers {
            try manager.removeItem(at: leftover.url)
            recovery.removed.append(leftover.url.lastPathComponent)
        }
        return recovery
    }

    /// Whether another process with this id runs (a signal 0 reaches it, or it exists but is
    /// not ours to signal). Our own id is a dead run's: ours has written nothing yet.
    static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, pid != ProcessInfo.processInfo.processIdentifier else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}
