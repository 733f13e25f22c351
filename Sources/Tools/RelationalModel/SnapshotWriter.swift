import Foundation
import SchemaMetadata
import TextEscaping

extension SchemaSnapshot {
    /// Canonical JSON, as a reviewer reads a snapshot's diff: keys sorted, one table per block,
    /// and each column, index, foreign key and grant on a line of its own, so a changed column
    /// is one changed line. It is what `JSONEncoder` writes for the same value (the same keys,
    /// `{"case": {"_0": value}}` for enums with values, absent keys for nil), laid out
    /// differently; both `JSONDecoder` and the snapshot reader read it. Written by hand because
    /// `JSONEncoder` took a sixth of `generate`'s time on a 1,000-entity schema, and its layout
    /// (one key per line) made snapshots three times as large.
    ///
    ///     let data = try snapshot.canonicalJSON()   // {\n  "schema": "Tasks",\n  "tables": [ ...
    public func canonicalJSON() throws -> Data {
        var writer = SnapshotWriter()
        try writer.write(self)
        return Data(writer.text.utf8)
    }
}

/// Writes `SchemaSnapshot`s as `canonicalJSON` lays them out.
struct SnapshotWriter {
    var text = ""

    mutating func write(_ snapshot: SchemaSnapshot) throws {
        text.reserveCapacity(snapshot.tables.count * 2048)
        text += "{\n"
        var fields: [(String, (inout SnapshotWriter) throws -> Void)] = []
        if let format = snapshot.format { fields.append(("format", { $0.text += String(format) })) }
        if let grants = snapshot.grants { fields.append(("grants", { $0.lines(grants, indent: "  ") { $0.grant($1) } })) }
        fields.append(("schema", { $0.string(snapshot.schema) }))
        fields.append(("tables", { writer in try writer.tables(snapshot.tables) }))
        fields.append(("version", { $0.text += String(snapshot.version) }))
        for (index, (key, value)) in fields.enumerated() {
            text += "  "
            string(key)
            text += ": "
            try value(&self)
            text += index == fields.count - 1 ? "\n" : ",\n"
        }
        text += "}\n"
    }

    private mutating func tables(_ tables: [TableSnapshot]) throws {
        guard !tables.isEmpty else { return text += "[]" }
        text += "[\n"
        for (index, table) in tables.enumerated() {
            text += "    {\n"
            try self.table(table)
            text += index == tables.count - 1 ? "    }\n" : "    },\n"
        }
        text += "  ]"
    }

    private mutating func table(_ table: TableSnapshot) throws {
        var fields: [(String, (inout SnapshotWriter) throws -> Void)] = []
        fields.append(("columns", { writer in try writer.lines(table.columns, indent: "      ") { try $0.column($1) } }))
        if let doc = table.doc { fields.append(("doc", { $0.string(doc) })) }
        if let entity = table.entity { fields.append(("entity", { $0.string(entity) })) }
        fields.append(("foreignKeys", { $0.lines(table.foreignKeys, indent: "      ") { $0.foreignKey($1) } }))
        fields.append(("indexes", { $0.lines(table.indexes, indent: "      ") { $0.index($1) } }))
        fields.append(("name", { $0.string(table.name) }))
        fields.append(("primaryKey", { $0.strings(table.primaryKey) }))
        if let renamedFrom = table.renamedFrom { fields.append(("renamedFrom", { $0.string(renamedFrom) })) }
        for (index, (key, value)) in fields.enumerated() {
            text += "      "
            string(key)
            text += ": "
            try value(&self)
            text += index == fields.count - 1 ? "\n" : ",\n"
        }
    }

    /// `[`, each item on a line of its own at `indent` plus two spaces, `]`; `[]` when empty.
    private mutating func lines<Item>(_ items: [Item], indent: String, _ item: (inout SnapshotWriter, Item) throws -> Void) rethrows {
        guard !items.isEmpty else { return text += "[]" }
        text += "[\n"
        for (index, element) in items.enumerated() {
            text += indent + "  "
            try item(&self, element)
            text += index == items.count - 1 ? "\n" : ",\n"
        }
        text += indent + "]"
    }

    // MARK: - One line each

    private mutating func column(_ column: ColumnSnapshot) throws {
        var object = InlineObject()
        text += "{"
        if let backfill = column.backfill { try object.field("backfill", &self) { try $0.backfill(backfill) } }
        if let bits = column.bits { object.field("bits", &self) { $0.text += String(bits) } }
        if let value = column.defaultValue { try object.field("defaultValue", &self) { try $0.columnDefault(value) } }
        if let doc = column.doc { object.field("doc", &self) { $0.string(doc) } }
        if let values = column.enumValues { object.field("enumValues", &self) { $0.strings(values) } }
        object.field("isAutoIncrement", &self) { $0.text += column.isAutoIncrement ? "true" : "false" }
        object.field("isNullable", &self) { $0.text += column.isNullable ? "true" : "false" }
        object.field("kind", &self) { $0.string(column.kind.rawValue) }
        if let movedFrom = column.movedFrom { object.field("movedFrom", &self) { $0.string(movedFrom) } }
        object.field("name", &self) { $0.string(column.name) }
        if let precision = column.precision { object.field("precision", &self) { $0.text += String(precision) } }
        if let property = column.property { object.field("property", &self) { $0.string(property) } }
        if let renamedFrom = column.renamedFrom { object.field("renamedFrom", &self) { $0.string(renamedFrom) } }
        if let scale = column.scale { object.field("scale", &self) { $0.text += String(scale) } }
        text += "}"
    }

    private mutating func index(_ index: IndexSnapshot) {
        var object = InlineObject()
        text += "{"
        object.field("columns", &self) { $0.strings(index.columns) }
        object.field("isFullText", &self) { $0.text += index.isFullText ? "true" : "false" }
        object.field("isUnique", &self) { $0.text += index.isUnique ? "true" : "false" }
        if let json = index.jsonColumns { object.field("jsonColumns", &self) { $0.strings(json) } }
        object.field("name", &self) { $0.string(index.name) }
        text += "}"
    }

    private mutating func foreignKey(_ key: ForeignKeySnapshot) {
        var object = InlineObject()
        text += "{"
        object.field("columns", &self) { $0.strings(key.columns) }
        object.field("onDelete", &self) { $0.string(key.onDelete.rawValue) }
        object.field("referencedColumns", &self) { $0.strings(key.referencedColumns) }
        object.field("table", &self) { $0.string(key.table) }
        text += "}"
    }

    private mutating func grant(_ grant: GrantSnapshot) {
        var object = InlineObject()
        text += "{"
        object.field("access", &self) { $0.string(grant.access.rawValue) }
        object.field("role", &self) { $0.string(grant.role) }
        text += "}"
    }

    /// An enum case as `Codable` synthesizes it: `{"case": {}}`, or `{"case": {"_0": value}}`.
    private mutating func enumCase(_ name: String, _ value: (inout SnapshotWriter) throws -> Void) rethrows {
        text += "{"
        string(name)
        text += ": {\"_0\": "
        try value(&self)
        text += "}}"
    }

    private mutating func enumCase(_ name: String) {
        text += "{"
        string(name)
        text += ": {}}"
    }

    private mutating func columnDefault(_ value: ColumnDefault) throws {
        switch value {
        case .null: enumCase("null")
        case .integer(let number): enumCase("integer") { $0.text += String(number) }
        case .real(let number):
            guard number.isFinite else {
                throw EncodingError.invalidValue(number, EncodingError.Context(codingPath: [], debugDescription: "a default of \(number) has no JSON form"))
            }
            enumCase("real") { $0.text += "\(number)" }
        case .text(let text): enumCase("text") { $0.string(text) }
        case .blob(let hex): enumCase("blob") { $0.string(hex) }
        case .now: enumCase("now")
        case .uuid: enumCase("uuid")
        }
    }

    private mutating func backfill(_ backfill: ColumnBackfill) throws {
        switch backfill {
        case .value(let value): try enumCase("value") { try $0.columnDefault(value) }
        case .sql(let expressions):
            enumCase("sql") { writer in
                var object = InlineObject()
                writer.text += "{"
                for (dialect, expression) in expressions.sorted(by: { $0.key < $1.key }) { object.field(dialect, &writer) { $0.string(expression) } }
                writer.text += "}"
            }
        }
    }

    private mutating func string(_ value: String) { TextEscaping.appendJSON(value, to: &text) }

    private mutating func strings(_ values: [String]) {
        text += "["
        for (index, value) in values.enumerated() {
            if index > 0 { text += ", " }
            string(value)
        }
        text += "]"
    }

    /// The fields of `{"a": 1, "b": 2}` on one line, given in sorted order, written straight
    /// into the writer's text (a copy of the writer would copy the whole text at each append).
    private struct InlineObject {
        var first = true

        mutating func field(_ key: String, _ writer: inout SnapshotWriter, _ value: (inout SnapshotWriter) throws -> Void) rethrows {
            writer.text += first ? "" : ", "
            first = false
            writer.string(key)
            writer.text += ": "
            try value(&writer)
        }
    }
}
