import Foundation
import SchemaMetadata

/// Two models that differ only in whether `body` is encrypted, for `bench/run encryption`:
/// written by hand as schemagen would generate them (row codec included).
protocol BenchmarkNote: PersistentModel, RowCodable {
    init(id: Int64?, title: String, body: String)
    var id: Int64? { get }
    var title: String { get }
    var body: String { get }
    static var schema: SchemaDescriptor { get }
}

/// The row codec and column mapping both notes share.
extension BenchmarkNote {
    static var entity: EntityDescriptor { schema.entities[0] }

    static func column(for keyPath: AnyKeyPath) -> String? {
        switch keyPath {
        case \Self.title: "title"
        case \Self.body: "body"
        default: nil
        }
    }

    func storedValues() throws -> [StoredValue] { [id.map(StoredValue.integer) ?? .null, .text(title), .text(body)] }

    init(storedValues row: [StoredValue]) throws {
        guard row.count == 3, case .integer(let id) = row[0], case .text(let title) = row[1], case .text(let body) = row[2] else { throw StoredValueError("not a note") }
        self.init(id: id, title: title, body: body)
    }
}

enum NoteSchemas {
    static func schema(named name: String, table: String, encrypted: Bool) -> SchemaDescriptor {
        SchemaDescriptor(
            name: name, version: 1, recordsHistory: false,
            entities: [
                EntityDescriptor(
                    name: name, table: table, primaryKey: ["id"], hasImplicitKey: true,
                    columns: [
                        ColumnDescriptor(property: "title", column: "title", storage: .text, swiftType: "String", isOptional: false),
                        ColumnDescriptor(property: "body", column: "body", storage: encrypted ? .blob : .text, swiftType: "String", isOptional: false, isEncrypted: encrypted),
                    ], relationships: [], indexes: [])
            ])
    }

    static func migration(table: String, encrypted: Bool) -> [EmbeddedMigration] {
        [
            EmbeddedMigration(
                version: 1, name: "create",
                up: """
                    CREATE TABLE "\(table)" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "title" TEXT NOT NULL, "body" \(encrypted ? "BLOB" : "TEXT") NOT NULL) STRICT;
                    """, down: "DROP TABLE \"\(table)\";")
        ]
    }
}

struct PlainNote: BenchmarkNote {
    var id: Int64?
    var title: String
    var body: String
    static let schema = NoteSchemas.schema(named: "PlainNote", table: "plain_note", encrypted: false)
}

struct SecretNote: BenchmarkNote {
    var id: Int64?
    var title: String
    var body: String
    static let schema = NoteSchemas.schema(named: "SecretNote", table: "secret_note", encrypted: true)
}
