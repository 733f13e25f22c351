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
        for file in files {
            let url = URL(fileURLWithPath: outputFolder).appendingPathComponent(file.path)
            guard let existing = try? Data(contentsOf: url) else {
                plan.missing.append(file.path)
                continue
            }
            if existing == Data(file.contents.utf8) { plan.unchanged.append(file.path) } else { plan.stale.append(file.path) }
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
        for path in plan.missing + plan.stale {
            guard let file = byPath[path] else { continue }
            let url = URL(fileURLWithPath: outputFolder).appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.contents.utf8).write(to: url, options: .atomic)
        }
        for path in plan.extra {
            try FileManager.default.removeItem(at: URL(fileURLWithPath: outputFolder).appendingPathComponent(path))
        }
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
