import Foundation
import SQLiteKit
import TestSupport

@testable import SchemaImport

/// Fixtures, the built tools, and the comparison of two databases' catalogues.
enum ImportFixtures {
    static let folder = repositoryRoot.appendingPathComponent("Tests/Fixtures/Import")
    static let schemagen = BuiltTool("schemagen")
    static let migrate = BuiltTool("migrate")

    /// A fresh SQLite file built from a fixture script.
    static func database(_ script: String, in folder: URL) throws -> String {
        let path = folder.appendingPathComponent(script.replacingOccurrences(of: ".sql", with: ".db")).path
        let connection = try SQLiteConnection(path: path)
        try connection.execute(try String(contentsOf: self.folder.appendingPathComponent(script), encoding: .utf8))
        return path
    }

    static func catalogue(_ path: String) throws -> SQLiteCatalogue {
        try SQLiteCatalogue.read(try SQLiteConnection(path: path, readOnly: true))
    }

    /// Every row of every user table, for "nothing changed" checks.
    static func contents(_ path: String) throws -> [String: [[SQLiteValue]]] {
        let connection = try SQLiteConnection(path: path, readOnly: true)
        var result: [String: [[SQLiteValue]]] = [:]
        for table in try catalogue(path).tables where table.kind == "table" && !table.name.hasPrefix("schemagen_") && !table.name.hasPrefix("sqlite_") {
            result[table.name] = try connection.query("SELECT * FROM \"\(table.name.replacingOccurrences(of: "\"", with: "\"\""))\" ORDER BY rowid")
        }
        return result
    }

    /// The storage type a schema type gets in the tables schemagen builds (STRICT).
    static func builtType(_ schemaType: String) -> String {
        switch schemaType {
        case "Int", "Bool": "INTEGER"
        case "Double": "REAL"
        case "Data": "BLOB"
        default: "TEXT"
        }
    }

    /// How a database built from the imported schema differs from the original: tables,
    /// columns, types, nullability, keys, foreign keys and indexes. Empty when they agree.
    ///
    /// Rules, as docs/import.md states them: names compare case-insensitively; a column's type
    /// is its affinity, except that NUMERIC-affinity declarations (NUMERIC, DECIMAL, BOOLEAN,
    /// DATE, DATETIME) become the TEXT or INTEGER of the type they import as, since schemagen's
    /// tables are STRICT; key columns are NOT NULL; NO ACTION and RESTRICT both refuse a delete;
    /// index names are not compared (the schema derives them).
    static func differences(original: SQLiteCatalogue, fresh: SQLiteCatalogue) -> [String] {
        var differences: [String] = []
        func userTables(_ catalogue: SQLiteCatalogue) -> [String: SQLiteCatalogue.Table] {
            Dictionary(
                uniqueKeysWithValues: catalogue.tables
                    .filter { $0.kind == "table" && !$0.name.lowercased().hasPrefix("sqlite_") && !$0.name.hasPrefix("schemagen_") }
                    .map { ($0.name.lowercased(), $0) })
        }
        let old = userTables(original), new = userTables(fresh)
        for name in Set(old.keys).symmetricDifference(new.keys).sorted() {
            differences.append("table \(name) only in the \(old[name] == nil ? "fresh" : "original") database")
        }
        for name in Set(old.keys).intersection(new.keys).sorted() {
            let a = old[name]!, b = new[name]!
            func columns(_ table: SQLiteCatalogue.Table) -> Set<String> { Set(table.columns.map { $0.name.lowercased() }) }
            for column in columns(a).symmetricDifference(columns(b)).sorted() {
                differences.append("\(name).\(column) only in the \(columns(a).contains(column) ? "original" : "fresh") database")
            }
            for column in a.columns {
                guard let other = b.column(named: column.name) else { continue }
                let mapped = SQLiteTypeMapping.schemaType(forDeclared: column.declaredType).type
                let originalAffinity = SQLiteTypeMapping.affinity(of: column.declaredType)
                let freshAffinity = SQLiteTypeMapping.affinity(of: other.declaredType)
                let isForeignKey = a.foreignKeys.contains { $0.columns.contains { $0.lowercased() == column.name.lowercased() } }
                if !isForeignKey, other.declaredType != builtType(mapped) {
                    differences.append("\(name).\(column.name): declared \(column.declaredType) imports as \(mapped), built as \(other.declaredType)")
                }
                if originalAffinity != freshAffinity, originalAffinity != "NUMERIC" {
                    differences.append("\(name).\(column.name): affinity \(originalAffinity) became \(freshAffinity)")
                }
                if (column.isNotNull || column.keyPosition > 0) != (other.isNotNull || other.keyPosition > 0) {
                    differences.append("\(name).\(column.name): NOT NULL \(column.isNotNull) became \(other.isNotNull)")
                }
            }
            if a.primaryKey.map({ $0.lowercased() }) != b.primaryKey.map({ $0.lowercased() }) {
                differences.append("\(name): primary key \(a.primaryKey) became \(b.primaryKey)")
            }
            func keys(_ table: SQLiteCatalogue.Table, in catalogue: [String: SQLiteCatalogue.Table]) -> Set<String> {
                Set(
                    table.foreignKeys.map { key in
                        let referenced = key.referencedColumns.isEmpty ? (catalogue[key.table.lowercased()]?.primaryKey ?? []) : key.referencedColumns
                        let action = key.onDelete == "NO ACTION" ? "RESTRICT" : key.onDelete
                        return
                            "(\(key.columns.map { $0.lowercased() }.joined(separator: ","))) -> \(key.table.lowercased())(\(referenced.map { $0.lowercased() }.joined(separator: ","))) ON DELETE \(action)"
                    })
            }
            for key in keys(a, in: old).symmetricDifference(keys(b, in: new)).sorted() {
                differences.append("\(name): foreign key \(key) only in the \(keys(a, in: old).contains(key) ? "original" : "fresh") database")
            }
            func indexes(_ table: SQLiteCatalogue.Table) -> Set<String> {
                Set(
                    table.indexes.filter { $0.origin != "pk" }.map { index in
                        "\(index.isUnique ? "UNIQUE " : "")(\(index.columns.map { ($0 ?? "<expression>").lowercased() }.joined(separator: ",")))"
                    })
            }
            for index in indexes(a).symmetricDifference(indexes(b)).sorted() {
                differences.append("\(name): index \(index) only in the \(indexes(a).contains(index) ? "original" : "fresh") database")
            }
        }
        return differences
    }
}
