import Foundation

/// Brings an output folder in line with generated files: writes only what changed, deletes
/// generated files no longer produced, and never touches a file that lacks the generated header.
public struct GeneratedFileSync: Sendable {
    public let outputFolder: String

    public init(outputFolder: String) {
        self.outputFolder = outputFolder
    }

    /// How the folder differs from what generation produced.
    public struct Plan: Sendable, Equatable {
        /// Produced but not on disk.
        public var missing: [String] = []
        /// On disk with other contents.
        public var stale: [String] = []
        /// On disk with the same contents.
        public var unchanged: [String] = []
        /// Generated files on disk that generation no longer produces.
        public var extra: [String] = []

        public var isUpToDate: Bool { missing.isEmpty && stale.isEmpty && extra.isEmpty }
    }

    /// Compares `files` with the folder. Extra files are looked for in the folders of `schemas`
    /// only, so generating one schema never deletes another's files.
    public func plan(_ files: [GeneratedFile], schemas: [String]) -> Plan {
        var plan = Plan()
        let produced = Set(files.map(\.path))
        enum State { case missing, stale, unchanged }
        let folder = outputFolder
        let states = files.parallelMap { file -> State in
            guard let existing = FileManager.default.contents(atPath: folder + "/" + file.path) else { return .missing }
            // The user's file, once written, is whatever they made it.
            if file.isUserOwned { return .unchanged }
            // Data's == compares the bytes at once; elementsEqual stepped through them one by one.
            return existing == Data(file.contents.utf8) ? .unchanged : .stale
        }
        for (file, state) in zip(files, states) {
            switch state {
            case .missing: plan.missing.append(file.path)
            case .stale: plan.stale.append(file.path)
            case .unchanged: plan.unchanged.append(file.path)
            }
        }
        for schema in schemas {
            let folder = URL(fileURLWithPath: outputFolder).appendingPathComponent(schema)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            for name in names.sorted() {
                let path = "\(schema)/\(name)"
                guard !produced.contains(path), Self.isGenerated(folder.appendingPathComponent(name)) else { continue }
                plan.extra.append(path)
            }
        }
        return plan
    }

    /// Writes missing and stale files (atomically) and deletes extra ones.
    public func apply(_ plan: Plan, files: [GeneratedFile]) throws {
        let byPath = Dictionary(files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        let writes = (plan.missing + plan.stale).compactMap { byPath[$0] }
        let folders = Set(writes.map { URL(fileURLWithPath: outputFolder).appendingPathComponent($0.path).deletingLastPathComponent().path })
        for folder in folders.sorted() {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let folder = outputFolder
        let replaced = Set(plan.stale)
        let failures = writes.map { file -> WriteError? in
            do {
                // A new file is written in place; an existing one is replaced by rename, so a
                // reader never sees half of it. An interrupted first write is stale next run.
                try Self.writeFile(folder + "/" + file.path, contents: file.contents, replacing: replaced.contains(file.path))
                return nil
            } catch let error as WriteError {
                return error
            } catch {
                return WriteError(path: file.path, reason: "\(error)")
            }
        }
        if let failure = failures.compactMap({ $0 }).first { throw failure }
        for path in plan.extra {
            try FileManager.default.removeItem(at: URL(fileURLWithPath: outputFolder).appendingPathComponent(path))
        }
    }

    /// Writes a file; when `replacing`, through a temporary file renamed over the target, so a
    /// reader never sees half a file. No fsync: generated files can always be generated again.
    static func writeFile(_ path: String, contents: String, replacing: Bool) throws {
        let temporary = replacing ? path + ".schemagen-\(getpid())" : path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw WriteError(path: path, reason: String(cString: strerror(errno))) }
        var contents = contents
        let failure: String? = contents.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += written
            }
            return nil
        }
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw WriteError(path: path, reason: failure)
        }
        guard replacing else { return }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw WriteError(path: path, reason: reason)
        }
    }

    struct WriteError: Error, CustomStringConvertible {
        var path: String
        var reason: String
        var description: String { "cannot write '\(path)': \(reason)" }
    }

    /// Whether a file starts with the header generation writes.
    static func isGenerated(_ url: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
        defer { try? handle.close() }
        let prefix = Data(TemplateContext.headerPrefix.utf8)
        guard let start = try? handle.read(upToCount: prefix.count) else { return false }
        return start == prefix
    }
}
