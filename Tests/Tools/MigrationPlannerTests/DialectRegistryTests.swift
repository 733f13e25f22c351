import Foundation
import MigrationFiles
import MigrationPlanner
import SQLDialects
import TestSupport
import Testing

/// The dialect registry is the one place a dialect's name maps to what it has: its dialect
/// (capabilities, identifier limit, types), its renderer and its migration folder.
@Suite struct DialectRegistryTests {
    @Test(arguments: SQLDialectName.allCases)
    func eachNameMapsToItsDialectRendererAndFolder(name: SQLDialectName) throws {
        #expect(name.dialect.name == name.rawValue)
        #expect(MigrationRenderers.renderer(for: name).dialect.name == name.rawValue)
        let folder = MigrationDirectory.folder(schema: "Flights", root: "Migrations", dialect: name)
        #expect(folder.path == (name == .default ? "Migrations/Flights" : "Migrations/Flights/\(name.rawValue)"))
        // Read back from the path, even before the schema's own folder holds anything.
        let read = folder.schemaAndRoot
        #expect(read.schema == "Flights" && read.root == "Migrations" && read.dialect == name.rawValue, "\(read)")
    }

    @Test func aPortableNameFitsEveryDialect() {
        #expect(SQLDialectName.portableIdentifierBytes == 63)
        #expect(SQLDialectName.allCases.allSatisfy { ($0.dialect.capabilities.maximumIdentifierBytes ?? .max) >= SQLDialectName.portableIdentifierBytes })
    }

    /// Derived names are cut to the dialect's limit, keeping whole characters and a hash that
    /// tells apart two names with the same beginning.
    @Test func derivedNamesFitTheLimitTheyAreGiven() {
        #expect(SQLIdentifiers.fitted("short_fkey", to: 63) == "short_fkey")
        let long = String(repeating: "a", count: 60) + "_one_fkey"
        let other = String(repeating: "a", count: 60) + "_two_fkey"
        let fitted = SQLIdentifiers.fitted(long, to: 63)
        #expect(fitted.utf8.count == 63)
        #expect(fitted.hasPrefix(String(repeating: "a", count: 54) + "_"))
        #expect(fitted != SQLIdentifiers.fitted(other, to: 63))
        #expect(SQLIdentifiers.fitted(long, to: 20).utf8.count == 20, "the cut follows the limit")
        #expect(SQLIdentifiers.fitted(long, to: nil) == long, "no limit, no cut")
        // A multi-byte character is never split.
        let accented = String(repeating: "é", count: 40)
        let cut = SQLIdentifiers.fitted(accented, to: 63)
        #expect(cut.utf8.count <= 63 && cut.hasPrefix(String(repeating: "é", count: 27) + "_"), "\(cut)")
    }
}
