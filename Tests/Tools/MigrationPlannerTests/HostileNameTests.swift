import Foundation
import RelationalModel
import SQLiteKit
import SchemaKit
import TestSupport
import Testing

@testable import MigrationPlanner

/// The planner is fed table, column and index names that the validator would refuse (line
/// breaks, comment and statement terminators, quotes), straight into its snapshots. Whatever the
/// names hold, the SQL it writes must run exactly the statements planned: no name may end a
/// comment or a quoted identifier early.
@Suite struct HostileNameTests {
    /// Pieces hostile names are made of.
    static let fragments = [
        "\n", "\r\n", "\r", "\u{2028}", "\u{85}", "\t", " ", "--", "/*", "*/", ";", "\"", "\"\"", "'", "`", "[", "]", "(", ")",
        "DROP TABLE victims;", "\nDROP TABLE victims;\n--", "\u{301}", "\u{200D}", "\u{FE0F}", "'); DROP TABLE victims; --", "é", "😀", "\\", "$1", "%", "?", "a", "Z", "_", "0",
    ]

    static func hostileName(_ generator: inout SeededGenerator) -> String {
        (0..<Int.random(in: 1...6, using: &generator)).map { _ in fragments.randomElement(using: &generator)! }.joined()
    }

    static let before = """
        entities:
          Alpha:
            table: QQ0QQ
            attributes:
              one: {type: String, column: QQ1QQ, searchable: true}
              two: {type: Int?, column: QQ2QQ}
              three: {type: String?, column: QQ3QQ}
            indexes: [[two]]
            relationships:
              betas: {to: "[Beta]", inverse: alpha}
          Beta:
            table: QQ4QQ
            attributes:
              name: {type: String, column: QQ5QQ, unique: true}
            relationships:
              alpha: {to: Alpha?, column: QQ6QQ, deleteRule: cascade}

        """
    static let after = """
        entities:
          Alpha:
            table: QQ7QQ
            attributes:
              uno: {type: String, column: QQ8QQ, renamedFrom: one, searchable: true}
              two: {type: Int, column: QQ2QQ, default: 0}
              four: {type: String?, column: QQ9QQ}
            indexes: [[two, uno]]
            relationships:
              betas: {to: "[Beta]", inverse: alpha}
          Beta:
            table: QQ4QQ
            attributes:
              name: {type: String, column: QQ5QQ, unique: true}
            relationships:
              alpha: {to: Alpha?, column: QQ6QQ, deleteRule: cascade}
          Gamma:
            table: QQ10QQ
            attributes:
              code: {type: String, column: QQ11QQ, unique: true}

        """

    /// The snapshot with each placeholder replaced by its hostile name, in every name it is part of.
    static func substituting(_ snapshot: SchemaSnapshot, _ names: [String]) throws -> SchemaSnapshot {
        var json = String(decoding: try JSONEncoder().encode(snapshot), as: UTF8.self)
        for (index, name) in names.enumerated().reversed() {
            // By scalars: a combining mark after the closing quote would join it in one Character.
            let escaped = String(String.UnicodeScalarView(String(decoding: try JSONEncoder().encode(name), as: UTF8.self).unicodeScalars.dropFirst().dropLast()))
            json = json.replacingOccurrences(of: "QQ\(index)QQ", with: escaped)
        }
        return try JSONDecoder().decode(SchemaSnapshot.self, from: Data(json.utf8))
    }

    /// Every name a database object gets, folded as SQLite compares them.
    static func objectNames(_ snapshot: SchemaSnapshot) -> [String] {
        var names: [String] = []
        for table in snapshot.tables {
            names += [table.name, "schemagen_new_" + table.name]
            names += table.columns.map { table.name + "." + $0.name }
            for index in table.indexes { names += ["", "_insert", "_delete", "_update"].map { index.name + $0 } }
        }
        return names.map { $0.lowercased() }
    }

    /// Runs a migration file through the migrator, counting the statements SQLite finds in it.
    static func run(_ sql: String, on database: SQLiteConnection) throws -> Int {
        try MigrationPlannerTests.run(sql, on: database)
    }

    @Test func namesNeverLeaveTheirQuotesOrComments() throws {
        let seed = SeededGenerator.seed(default: 0x5EED_0009)
        var generator = SeededGenerator(seed: seed)
        let v1Template = SnapshotBuilder.snapshot(of: try schema(Self.before, version: 1))
        let v2Template = SnapshotBuilder.snapshot(of: try schema(Self.after, version: 2))
        let dialect = SQLiteRenderer()
        var iterations = 0
        while iterations < 40 {
            let names = (0..<12).map { _ in Self.hostileName(&generator) }
            let v1 = try Self.substituting(v1Template, names)
            let v2 = try Self.substituting(v2Template, names)
            // SQLite folds ASCII case in names; skip draws where two objects would share one.
            let all = Self.objectNames(v1) + Self.objectNames(v2)
            guard Set(Self.objectNames(v1)).count == Self.objectNames(v1).count, Set(Self.objectNames(v2)).count == Self.objectNames(v2).count,
                !all.contains("victims")
            else { continue }
            iterations += 1
            let context = "seed \(seed), iteration \(iterations) (repeat with SCHEMAGEN_TEST_SEED=\(seed)), names \(names)"

            for (from, to) in [(nil, v1), (v1, v2)] as [(SchemaSnapshot?, SchemaSnapshot)] {
                let migration = Migration(from: from, to: to)
                let planned = migration.steps.reduce(0) { $0 + dialect.sql(for: $1).count }
                let reversed = migration.steps.reduce(0) { $0 + dialect.sql(for: $1.reversed).count }
                let database = try temporaryDatabase()
                try database.execute("CREATE TABLE victims (id INTEGER); INSERT INTO victims VALUES (1);")
                if let from { _ = try Self.run(Migration(from: nil, to: from).upSQL(), on: database) }
                #expect(try Self.run(migration.upSQL(), on: database) == planned, "\(context)\n\(migration.upSQL())")
                let fresh = try freshDatabase(to)
                try fresh.execute("CREATE TABLE victims (id INTEGER);")
                let (migratedLines, freshLines) = (try structure(of: database), try structure(of: fresh))
                #expect(
                    migratedLines == freshLines,
                    "\(context)\nonly migrated: \(migratedLines.filter { !freshLines.contains($0) })\nonly fresh: \(freshLines.filter { !migratedLines.contains($0) })")
                #expect(try database.query("SELECT count(*) FROM victims") == [[.integer(1)]], "\(context)")
                #expect(try Self.run(migration.downSQL(), on: database) == reversed, "\(context)\n\(migration.downSQL())")
                #expect(try database.query("SELECT count(*) FROM victims") == [[.integer(1)]], "\(context)")
                #expect(try database.query("PRAGMA integrity_check;") == [[.text("ok")]], "\(context)")
            }
        }
    }
}
