import Foundation
import MigrationPlanner
import RelationalModel
import SQLiteKit
import SchemaKit

/// libFuzzer entry point for the planner: the input, split at 0xFF bytes, gives the table,
/// column and index names of a two-version schema, bypassing the validator (which refuses
/// control characters). Both migrations must run on SQLite as exactly the statements planned,
/// and a table named `victims` must survive them. Anything else is a crash, which libFuzzer keeps.
@_cdecl("LLVMFuzzerTestOneInput")
public func plannerFuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var names = bytes.split(separator: 0xFF, omittingEmptySubsequences: false).prefix(PlannerFuzz.placeholders).map {
        String(decoding: $0.filter { $0 != 0 }, as: UTF8.self)
    }
    while names.count < PlannerFuzz.placeholders { names.append("n\(names.count)") }
    // The validator refuses empty names, and an empty name says nothing about quoting.
    guard !names.contains("") else { return 0 }
    guard let (v1, v2) = PlannerFuzz.snapshots(names) else { return 0 }
    PlannerFuzz.check(from: nil, to: v1)
    PlannerFuzz.check(from: v1, to: v2)
    return 0
}

enum PlannerFuzz {
    static let placeholders = 8
    static let before = """
        schema: F
        version: 1
        entities:
          A:
            table: QQ0QQ
            attributes:
              one: {type: String, column: QQ1QQ, searchable: true}
              two: {type: Int?, column: QQ2QQ}
            indexes: [[two]]
          B:
            table: QQ3QQ
            attributes:
              name: {type: String, column: QQ4QQ, unique: true}
            relationships:
              a: {to: A?, column: QQ5QQ}
        """
    static let after = """
        schema: F
        version: 2
        entities:
          A:
            table: QQ6QQ
            attributes:
              uno: {type: String, column: QQ7QQ, renamedFrom: one, searchable: true}
              two: {type: Int, column: QQ2QQ, default: 0}
            indexes: [[two, uno]]
          B:
            table: QQ3QQ
            attributes:
              name: {type: String, column: QQ4QQ, unique: true}
            relationships:
              a: {to: A?, column: QQ5QQ}
        """

    static func snapshot(_ yaml: String, _ names: [String]) -> SchemaSnapshot? {
        guard let schema = SchemaLoader.load(source: .init(path: "fuzz.yaml", text: yaml)).schema,
            var json = try? String(decoding: JSONEncoder().encode(SnapshotBuilder.snapshot(of: schema)), as: UTF8.self)
        else { return nil }
        for (index, name) in names.enumerated() {
            guard let encoded = try? JSONEncoder().encode(name) else { return nil }
            json = json.replacingOccurrences(of: "QQ\(index)QQ", with: String(String.UnicodeScalarView(String(decoding: encoded, as: UTF8.self).unicodeScalars.dropFirst().dropLast())))
        }
        return try? SchemaSnapshot.decode(Data(json.utf8))
    }

    static func snapshots(_ names: [String]) -> (SchemaSnapshot, SchemaSnapshot)? {
        guard let v1 = snapshot(before, names), let v2 = snapshot(after, names) else { return nil }
        // SQLite folds ASCII case and refuses its own prefix: such draws say nothing about quoting.
        for snapshot in [v1, v2] {
            var seen: Set<String> = ["victims"]
            for table in snapshot.tables {
                for name in [table.name, "schemagen_new_" + table.name] + table.indexes.map(\.name) + table.columns.map({ table.name + "." + $0.name }) {
                    guard seen.insert(name.lowercased()).inserted, !name.lowercased().hasPrefix("sqlite_") else { return nil }
                }
            }
        }
        return (v1, v2)
    }

    static func check(from: SchemaSnapshot?, to: SchemaSnapshot) {
        let migration = Migration(from: from, to: to)
        let dialect = SQLiteRenderer()
        guard let database = try? SQLiteConnection(path: ":memory:") else { return }
        try? database.execute("CREATE TABLE victims (id INTEGER); INSERT INTO victims VALUES (1);")
        if let from, case .failure = run(Migration(from: nil, to: from).upSQL(), database) { return }
        let planned = migration.steps.reduce(0) { $0 + dialect.sql(for: $1).count }
        let ran = run(migration.upSQL(), database)
        // A name that broke out of its quotes or comment either fails to parse or adds statements.
        guard case .success(let count) = ran, count == planned else { fatalError("planned \(planned) statements, SQLite: \(ran)\n\(migration.upSQL())") }
        guard (try? database.query("SELECT count(*) FROM victims")) == [[.integer(1)]] else { fatalError("a name dropped a table") }
    }

    /// The number of statements run, or why the script failed.
    static func run(_ sql: String, _ database: SQLiteConnection) -> Result<Int, SQLiteConnection.ScriptError> {
        var count = 0
        do throws(SQLiteConnection.ScriptError) {
            try? database.execute("BEGIN;")
            try database.executeScript(sql) { _ in count += 1 }
            try? database.execute("COMMIT;")
            return .success(count)
        } catch {
            try? database.execute("ROLLBACK;")
            return .failure(error)
        }
    }
}
