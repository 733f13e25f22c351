import Foundation
import TestSupport
import Testing

/// The store is made of parts that each own their state: `Store` holds one of each and keeps the
/// public API, `Store.swift` stays short, and no type of the store's core carries more than ten
/// mutable stored properties, so no extension can change state that another part owns unseen.
@Suite struct StorePartsTests {
    /// Each type declared in a Swift file, with its mutable stored properties: `var`s one level
    /// inside its body that are neither static nor computed.
    static func mutableProperties(in path: String) throws -> [(type: String, properties: [String])] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        var open: [(indent: Int, name: String, properties: [String])] = []
        var done: [(String, [String])] = []
        let declaration = /^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|package|fileprivate|internal|final|open)\s+)*(?:class|struct|actor|enum)\s+(\w+)/
        let property = /^(?:(?:public|private|package|fileprivate|internal|weak|lazy|private\(set\)|nonisolated\(unsafe\))\s+)*var\s+(\w+)/
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("//") { continue }
            let indent = line.prefix { $0 == " " }.count
            if trimmed == "}", let last = open.last, last.indent == indent {
                done.append((last.name, last.properties))
                open.removeLast()
                continue
            }
            if let match = trimmed.firstMatch(of: declaration), trimmed.hasSuffix("{") {
                open.append((indent, String(match.1), []))
                continue
            }
            guard let last = open.last, indent == last.indent + 4, let match = trimmed.firstMatch(of: property) else { continue }
            // Computed: a body after the type, or a getter on the lines below.
            let beforeValue = trimmed.split(separator: "=", maxSplits: 1).first ?? ""
            if trimmed.hasSuffix("{") || (beforeValue.contains("{") && !trimmed.contains("=")) { continue }
            open[open.count - 1].properties.append(String(match.1))
        }
        return done
    }

    @Test func storeSwiftIsShort() throws {
        let path = sourceFolder(of: "PersistentStoreCore").appendingPathComponent("Store.swift").path
        let count = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n").count
        #expect(count <= 500, "Store.swift has \(count) lines: move a part into a file (and a type) of its own")
    }

    @Test func noTypeOfTheStoresCoreOwnsMoreThanTenMutableProperties() throws {
        let folder = sourceFolder(of: "PersistentStoreCore").path
        var checked = 0
        for file in swiftFiles(under: folder) {
            for (type, properties) in try Self.mutableProperties(in: folder + "/" + file) {
                // What an app passes in, every field its own to set, is not state the store keeps.
                if type == "Configuration" { continue }
                checked += 1
                #expect(properties.count <= 10, "\(file): \(type) has \(properties.count) mutable stored properties (\(properties.joined(separator: ", "))): give a part of them a type of its own")
            }
        }
        #expect(checked >= 10, "the scan found \(checked) types")
        let store = try Self.mutableProperties(in: folder + "/Store.swift").first { $0.type == "Store" }
        #expect(store != nil && store!.properties.contains("commit") && store!.properties.count <= 10, "\(String(describing: store))")
    }

    /// The online planner holds what its changes put into each phase as one value per phase,
    /// not as twenty lists any of its functions may append to.
    @Test func theOnlinePlannerHoldsOneValuePerPhase() throws {
        let folder = sourceFolder(of: "MigrationPlanner").path
        let planner = try Self.mutableProperties(in: folder + "/OnlinePlan.swift").first { $0.type == "OnlinePlanner" }
        let properties = try #require(planner?.properties)
        #expect(properties.count <= 10, "OnlinePlanner has \(properties.count) mutable stored properties: \(properties)")
        #expect(properties.contains("toExpand") && properties.contains("toContract") && properties.contains("toRollBack"))
    }

    /// The scan sees what it should: stored properties count, computed ones and statics do not.
    @Test func theScanCountsStoredPropertiesOnly() throws {
        let file = temporaryFolder().appendingPathComponent("Sample.swift")
        try """
        struct Sample {
            var stored = 0
            private(set) var kept: [Int] = []
            var computed: Int { stored + 1 }
            var withGetter: Int {
                get { stored }
            }
            static var shared = 0
            let constant = 1
            struct Inner {
                var inner = 0
            }
        }
        """.write(to: file, atomically: true, encoding: .utf8)
        let found = try Self.mutableProperties(in: file.path)
        #expect(found.first { $0.type == "Sample" }?.properties == ["stored", "kept"])
        #expect(found.first { $0.type == "Inner" }?.properties == ["inner"])
    }
}
