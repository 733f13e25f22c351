import Foundation
import TestSupport
import Testing

/// docs/server.md lists every case of `StoreError` with what a server does about it: the list
/// is checked against the enum's declaration, both ways, so a new case cannot go unlisted.
@Suite struct ErrorCaseListTests {
    /// The case names an enum declares in a source file, in order.
    static func cases(of type: String, in file: String) throws -> [String] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(file), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.hasPrefix("public enum \(type):") }, "no enum \(type) in \(file)")
        var names: [String] = []
        for line in lines[(start + 1)...] {
            if line == "}" { break }
            // Only the enum's own cases, four spaces in: the switch cases inside its members are deeper.
            guard line.hasPrefix("    case ") else { continue }
            let name = line.dropFirst("    case ".count).prefix { $0.isLetter || $0.isNumber }
            names.append(String(name))
        }
        return names
    }

    /// The case names a document's table lists, as "| `.name` |" at the start of a row.
    static func listed(in page: String) throws -> [String] {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent(page), encoding: .utf8)
        return text.components(separatedBy: "\n").compactMap { line in
            guard line.hasPrefix("| `.") else { return nil }
            return String(line.dropFirst("| `.".count).prefix { $0 != "`" })
        }
    }

    @Test func theServerGuideListsEveryStoreError() throws {
        let declared = try Self.cases(of: "StoreError", in: "Sources/Runtime/PersistentStoreCore/StoreError.swift")
        #expect(declared.count >= 20 && declared.contains("noWritablePrimary"), "\(declared)")
        let listed = try Self.listed(in: "docs/server.md")
        #expect(Set(declared).subtracting(listed).isEmpty, "docs/server.md does not list: \(Set(declared).subtracting(listed).sorted())")
        #expect(Set(listed).subtracting(declared).isEmpty, "docs/server.md lists cases StoreError does not have: \(Set(listed).subtracting(declared).sorted())")
    }
}
