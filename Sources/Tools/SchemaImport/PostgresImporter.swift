import DatabaseLocation
import Foundation
import PostgresKit
import RelationalModel
import SchemaKit

/// `schemagen import postgres URL`: a schema from a live PostgreSQL database's catalogue (its
/// current schema, `public` unless the URL's `search_path` says otherwise). Only reads.
public enum PostgresImporter {
    /// Connects, reads the catalogue and builds the schema. Messages name the server with its
    /// password masked.
    public static func importDatabase(url: String, name: String) throws(ImportError) -> ImportResult {
        let label = ConnectionURL.redacted(url)
        let catalogue: PostgresCatalogue
        do {
            let connection = try PostgresConnection(url, applicationName: "schemagen import", networkTimeout: 10)
            // Read-only: nothing this command runs may change the database.
            try connection.execute("SET default_transaction_read_only = on")
            catalogue = try PostgresCatalogue.read(connection)
        } catch {
            throw ImportError(at: label, "cannot read the catalogue: \(error.failure(database: label).message)")
        }
        guard !catalogue.tables.filter({ !isOwn($0.name) }).isEmpty else {
            throw ImportError(at: label, "schema \"\(catalogue.schema)\" has no tables to import")
        }
        return makeSchema(catalogue, named: name, database: label)
    }

    static func isOwn(_ table: String) -> Bool { table.hasPrefix("schemagen_") }

    /// The schema a catalogue describes, with a finding for everything not carried over.
    public static func makeSchema(_ catalogue: PostgresCatalogue, named name: String, database: String) -> ImportResult {
        var builder = Builder(catalogue: catalogue, database: database)
        builder.build()
        var schema = ImportedSchema(name: name, version: 1, entities: builder.entities)
        schema.enums = builder.enums
        // Its migrations are PostgreSQL's first; SQLite's can be added to the list.
        schema.dialects = ["postgres"]
        return ImportResult(schema: schema, findings: builder.findings + differences(of: schema, from: builder.tables, database: database))
    }

    /// How a database built from the schema written (by its first PostgreSQL migration) differs
    /// from the tables read, each difference said: the findings above explain most, these are
    /// the complete account, so nothing changes unsaid.
    static func differences(of schema: ImportedSchema, from tables: [PostgresCatalogue.Table], database: String) -> [ImportFinding] {
        let loaded = SchemaLoader.load(source: .init(path: "\(schema.name).yaml", text: SchemaYAMLWriter.yaml(schema)))
        guard let parsed = loaded.schema else {
            let problems = loaded.diagnostics.filter { $0.severity == .error }.map(\.message).prefix(3).joined(separator: "; ")
            return [
                ImportFinding(
                    .warning, at: database,
                    "the schema written does not validate (\(problems)), so how a database built from it differs is not known: fix it, then compare with `migrate baseline 1 --dry-run`")
            ]
        }
        let built = SnapshotBuilder.snapshot(of: parsed).tables.map(TableShape.init)
        return TableShape.differences(live: tables.map(TableShape.init), built: built, liveName: "the database", builtName: "a database built from this schema").map {
            ImportFinding(.warning, at: "\(database): table \"\($0.table)\"", "differs: \($0.subject): \($0.detail)")
        }
    }

    struct Builder {
        let catalogue: PostgresCatalogue
        let database: String
        var entities: [ImportedEntity] = []
        var enums: [ImportedEnum] = []
        var findings: [ImportFinding] = []
        /// Entity name by table, and per table: column -> attribute or relationship name.
        var entityOfTable: [String: String] = [:]
        var memberOfColumn: [String: [String: String]] = [:]
        /// Enum name by PostgreSQL enum type, and by table and column for CHECK lists.
        var enumOfType: [String: String] = [:]
        var enumOfColumn: [String: String] = [:]
        var takenTypeNames = Set(["string", "int", "int8", "int16", "int32", "int64", "double", "float", "bool", "date", "data", "uuid", "url", "decimal"])

        init(catalogue: PostgresCatalogue, database: String) {
            self.catalogue = catalogue
            self.database = database
        }

        var tables: [PostgresCatalogue.Table] { catalogue.tables.filter { !PostgresImporter.isOwn($0.name) } }

        func place(_ table: String) -> String { "\(database): table \"\(table)\"" }
        mutating func warn(_ table: String, _ message: String, sql: String? = nil) {
            findings.append(ImportFinding(.warning, at: place(table), message, source: sql))
        }
        mutating func note(_ table: String, _ message: String, sql: String? = nil) {
            findings.append(ImportFinding(.note, at: place(table), message, source: sql))
        }

        mutating func build() {
            reportOthers()
            for (type, labels) in catalogue.enums.sorted(by: { $0.key < $1.key }) {
                let name = SwiftNames.unique(SwiftNames.upperCamel(type, fallback: "Enum"), amongFolded: takenTypeNames)
                takenTypeNames.insert(name.lowercased())
                enumOfType[type] = name
                enums.append(ImportedEnum(name: name, cases: cases(labels)))
            }
            for table in tables {
                let name = SwiftNames.unique(SwiftNames.upperCamel(SwiftNames.singular(table.name), fallback: "Table"), amongFolded: takenTypeNames)
                takenTypeNames.insert(name.lowercased())
                entityOfTable[table.name] = name
            }
            for table in tables { buildEntity(table) }
            for table in tables { buildRelationships(table) }
            for table in tables { buildKeysAndIndexes(table) }
            // Enum types no imported column uses are still the database's: kept, and said.
            let used = Set(entities.flatMap { $0.attributes.map { $0.type.trimmingCharacters(in: CharacterSet(charactersIn: "[]")) } })
            for item in enums where !used.contains(item.name) {
                findings.append(ImportFinding(.note, at: database, "enum type \"\(item.name)\" is used by no imported column; kept in the schema (remove it if it is not needed)"))
            }
        }

        func cases(_ labels: [String]) -> [(name: String, rawValue: String)] {
            var taken: Set<String> = []
            return labels.map { label in
                let name = SwiftNames.unique(SwiftNames.lowerCamel(label, fallback: "value"), among: taken)
                taken.insert(name)
                return (name, label)
            }
        }

        mutating func reportOthers() {
            for (schema, relations) in catalogue.otherSchemas {
                let isVersionSchema = schema.range(of: "_v[0-9]+$", options: .regularExpression) != nil
                findings.append(
                    ImportFinding(
                        isVersionSchema ? .note : .warning, at: "\(database): schema \"\(schema)\"",
                        isVersionSchema
                            ? "looks like a version schema of online migrations (views over the tables); not imported"
                            : "not imported: only schema \"\(catalogue.schema)\" is read (its relations: \(relations.prefix(10).joined(separator: ", "))\(relations.count > 10 ? ", ..." : "")); import it with `?options=-csearch_path%3D\(schema)` in the URL",
                        source: nil))
            }
            for other in catalogue.others {
                if other.kind == "trigger", other.name.hasPrefix("schemagen_") { continue }
                if other.kind == "function", other.name.hasPrefix("schemagen_") { continue }
                findings.append(
                    ImportFinding(
                        .warning, at: "\(database): \(other.kind) \"\(other.name)\"\(other.table.map { " on \"\($0)\"" } ?? "")",
                        "not imported: the schema language has no \(other.kind)s; recreate it in a migration of your own", source: other.sql))
            }
            for table in catalogue.tables where PostgresImporter.isOwn(table.name) {
                note(table.name, "schemagen's own bookkeeping table, not imported")
            }
        }

        // MARK: - Columns

        struct TypeChoice {
            var type: String
            var precision: Int? = nil
            var scale: Int? = nil
            /// A `date` column: a `Date` kept as its day (`dateOnly`).
            var isDateOnly = false
            var remark: String? = nil
            var warning: String? = nil
        }

        /// The schema type of a column, from `format_type`'s spelling.
        func type(of column: PostgresCatalogue.Column) -> TypeChoice {
            if let domain = column.domain {
                // The base type, and what the domain adds said: the language has no domains.
                var base = column
                base.type = domain.baseType
                base.domain = nil
                var choice = type(of: base)
                let checks = domain.checks.isEmpty ? "" : " and its \(domain.checks.joined(separator: " AND "))"
                let said =
                    "column \"\(column.name)\" has the domain type \(domain.name) (\(domain.baseType)\(checks)); imported as its base type \(choice.type), without the domain\(domain.checks.isEmpty ? "" : " and its check")"
                choice.warning = [choice.warning, said + (domain.checks.isEmpty ? "" : ": values outside it are no longer refused")].compactMap { $0 }.joined(separator: "; ")
                return choice
            }
            if let element = column.elementType {
                let choice = type(
                    of: PostgresCatalogue.Column(
                        name: column.name, type: element, typeKind: column.typeKind, elementType: nil, isNotNull: true, defaultSQL: nil, identity: "", generated: nil))
                return TypeChoice(
                    type: "[\(choice.type)]",
                    warning:
                        "column \"\(column.name)\" is a PostgreSQL array (\(column.type)); imported as [\(choice.type)], which schemagen stores as jsonb: convert it in a migration of your own (ALTER COLUMN ... TYPE jsonb USING to_jsonb(\"\(column.name)\")) before the store writes it"
                )
            }
            if column.typeKind == "e", let name = enumOfType[column.type.trimmingCharacters(in: CharacterSet(charactersIn: "\""))] {
                return TypeChoice(
                    type: name,
                    remark:
                        "column \"\(column.name)\" has the enum type \(column.type); imported as enum \(name), which schemagen stores as text with a CHECK: its own migrations will not use the enum type"
                )
            }
            let type = column.type
            let base = type.split(separator: "(").first.map { String($0).trimmingCharacters(in: .whitespaces) } ?? type
            switch base {
            case "smallint": return TypeChoice(type: "Int16")
            case "integer": return TypeChoice(type: "Int32")
            case "bigint": return TypeChoice(type: "Int")
            case "real": return TypeChoice(type: "Float")
            case "double precision": return TypeChoice(type: "Double")
            case "numeric":
                let digits = type.drop { $0 != "(" }.dropFirst().prefix { $0 != ")" }.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                return TypeChoice(type: "Decimal", precision: digits.first, scale: digits.count > 1 ? digits[1] : nil)
            case "boolean": return TypeChoice(type: "Bool")
            case "text", "citext": return TypeChoice(type: "String")
            case "character varying", "character":
                return TypeChoice(
                    type: "String", remark: type.contains("(") ? "column \"\(column.name)\" is \(type); imported as String, without the length limit (schemagen's columns are text)" : nil)
            case "uuid": return TypeChoice(type: "UUID")
            case "bytea": return TypeChoice(type: "Data")
            case "timestamp with time zone": return TypeChoice(type: "Date")
            case "timestamp without time zone":
                return TypeChoice(type: "Date", remark: "column \"\(column.name)\" is a timestamp without time zone; imported as Date, read as UTC (schemagen's columns are timestamptz)")
            case "date": return TypeChoice(type: "Date", isDateOnly: true)
            case "json", "jsonb":
                return TypeChoice(
                    type: "String",
                    warning:
                        "column \"\(column.name)\" is \(type) of no known shape; imported as String (its JSON text). Declare a value type or an array if its shape is fixed: schemagen stores those as jsonb"
                )
            default:
                return TypeChoice(type: "String", warning: "column \"\(column.name)\" has type \(type), which the schema language has no type for; imported as String (its text)")
            }
        }

        /// `status = ANY (ARRAY['a'::text, 'b'::text])`, which is how PostgreSQL keeps `IN (...)`:
        /// the column and the allowed values; nil for any other check.
        static func allowedValues(_ definition: String) -> (column: String, values: [String])? {
            guard let range = definition.range(of: #"^CHECK \(\(?"?([A-Za-z_][A-Za-z0-9_ ]*)"?\)? = ANY \(\(?ARRAY\[(.*)\]\)?(::text\[\])?\)\)$"#, options: .regularExpression) else { return nil }
            let body = String(definition[range])
            guard let open = body.range(of: "ARRAY["), let close = body.range(of: "]", options: .backwards) else { return nil }
            let columnPart = body.dropFirst("CHECK (".count).prefix { $0 != "=" }.trimmingCharacters(in: CharacterSet(charactersIn: "() \""))
            var values: [String] = []
            var rest = Substring(body[open.upperBound..<close.lowerBound])
            while let quote = rest.firstIndex(of: "'") {
                var value = ""
                var index = rest.index(after: quote)
                while index < rest.endIndex {
                    if rest[index] == "'" {
                        let next = rest.index(after: index)
                        if next < rest.endIndex, rest[next] == "'" {
                            value.append("'")
                            index = rest.index(after: next)
                            continue
                        }
                        break
                    }
                    value.append(rest[index])
                    index = rest.index(after: index)
                }
                values.append(value)
                guard index < rest.endIndex else { break }
                rest = rest[rest.index(after: index)...]
                // Past the cast (`::text`) to the next element.
                guard let comma = rest.firstIndex(of: ",") else { break }
                rest = rest[rest.index(after: comma)...]
            }
            return values.isEmpty ? nil : (columnPart, values)
        }

        static func isImplicitKey(_ table: PostgresCatalogue.Table) -> Bool {
            guard table.primaryKey == ["id"], let column = table.column(named: "id") else { return false }
            return ["bigint", "integer"].contains(column.type) && (!column.identity.isEmpty || column.defaultSQL?.hasPrefix("nextval(") == true)
        }

        /// The columns of single-column foreign keys to imported tables' keys: relationships.
        func links(of table: PostgresCatalogue.Table) -> [PostgresCatalogue.Constraint] {
            table.constraints.filter { key in
                guard key.kind == "f", key.columns.count == 1, let target = tables.first(where: { $0.name == key.referencedTable }) else { return false }
                return target.primaryKey == key.referencedColumns
            }
        }

        mutating func buildEntity(_ table: PostgresCatalogue.Table) {
            guard let entityName = entityOfTable[table.name] else { return }
            var entity = ImportedEntity(name: entityName)
            if Naming.defaultName(of: entityName) != table.name { entity.table = table.name }
            if let partitioning = table.partitioning {
                warn(
                    table.name,
                    "the table is partitioned (PARTITION BY \(partitioning.key)) into \(partitioning.partitions) partitions, each with its own indexes and keys; imported as one plain table: a database built from this schema has no partitions, so create them in a migration of your own",
                    sql: "PARTITION BY \(partitioning.key)")
            }
            entity.doc = table.comment
            let implicit = Self.isImplicitKey(table)
            if implicit, table.column(named: "id")?.type == "integer" {
                note(table.name, "key \"id\" is an integer (serial); schemagen's implicit key is a bigint: the same values, until the table passes 2,147,483,647 rows")
            }
            let linkColumns = Set(links(of: table).flatMap(\.columns))
            // Full-text columns: generated tsvectors over text columns become `searchable`.
            var searchable: Set<String> = []
            for column in table.columns {
                guard let expression = column.generated else { continue }
                if column.type == "tsvector" {
                    let sources = table.columns.filter { other in
                        other.generated == nil && expression.range(of: #"\b"# + NSRegularExpression.escapedPattern(for: other.name) + #"\b"#, options: .regularExpression) != nil
                    }
                    searchable.formUnion(sources.map(\.name))
                    // The store searches one column per searchable attribute, `<table>_<column>_fts`.
                    let expected = sources.map { "\(table.name)_\($0.name)_fts" }
                    let what = "full-text column \"\(column.name)\" imported as `searchable` on \(sources.map { "\"\($0.name)\"" }.joined(separator: ", "))"
                    let source = "GENERATED ALWAYS AS (\(expression)) STORED"
                    if expected == [column.name] {
                        note(table.name, what, sql: source)
                    } else if expected.count == 1 {
                        warn(
                            table.name,
                            "\(what); the store searches a column named \"\(expected[0])\": rename it (ALTER TABLE \"\(table.name)\" RENAME COLUMN \"\(column.name)\" TO \"\(expected[0])\") before the store searches this database",
                            sql: source)
                    } else {
                        warn(
                            table.name,
                            "\(what); the store searches one column per attribute (\(expected.map { "\"\($0)\"" }.joined(separator: ", "))), which this database lacks: run the generated first migration's ADD COLUMN ... GENERATED and CREATE INDEX ... USING GIN statements for them before the store searches it, and drop \"\(column.name)\" if nothing else reads it",
                            sql: source)
                    }
                } else {
                    warn(
                        table.name, "generated column \"\(column.name)\" not imported: the schema language has no generated columns",
                        sql: "\"\(column.name)\" \(column.type) GENERATED ALWAYS AS (\(expression)) STORED")
                }
            }
            let checks = table.constraints.filter { $0.kind == "c" }
            var members: [String: String] = [:]
            var taken: Set<String> = []
            for key in links(of: table) {
                var words = SwiftNames.words(key.columns[0])
                if words.count > 1, words.last?.lowercased() == "id" { words.removeLast() }
                let name = SwiftNames.unique(SwiftNames.lowerCamel(words.joined(separator: "_"), fallback: "link"), among: taken)
                taken.insert(name)
                taken.insert(Naming.keyProperty(of: name))
                members[key.columns[0]] = name
            }
            for column in table.columns where column.generated == nil {
                if implicit, column.name == "id" { continue }
                if linkColumns.contains(column.name) { continue }
                let name = SwiftNames.unique(SwiftNames.lowerCamel(column.name, fallback: "column"), among: taken)
                taken.insert(name)
                members[column.name] = name
                var choice = type(of: column)
                if choice.type == "String", let check = checks.compactMap({ Self.allowedValues($0.definition) }).first(where: { $0.column == column.name }) {
                    let enumName = SwiftNames.unique(entityName + SwiftNames.upperCamel(column.name, fallback: "Value"), amongFolded: takenTypeNames)
                    takenTypeNames.insert(enumName.lowercased())
                    enums.append(ImportedEnum(name: enumName, cases: cases(check.values)))
                    choice.type = enumName
                    enumOfColumn["\(table.name).\(column.name)"] = enumName
                }
                if let remark = choice.remark { note(table.name, remark) }
                if let warning = choice.warning { warn(table.name, warning) }
                let isKey = table.primaryKey.contains(column.name)
                var attribute = ImportedAttribute(name: name, type: choice.type, isOptional: !column.isNotNull && !isKey)
                attribute.precision = choice.precision
                attribute.scale = choice.scale
                attribute.isDateOnly = choice.isDateOnly
                attribute.isSearchable = searchable.contains(column.name)
                if Naming.defaultName(of: name) != column.name { attribute.column = column.name }
                if !column.identity.isEmpty || column.defaultSQL?.hasPrefix("nextval(") == true {
                    warn(
                        table.name,
                        "column \"\(column.name)\" is numbered by the database (identity or serial) but is not the implicit key `id`; imported as a plain integer, so the app must give each row its number",
                        sql: column.defaultSQL)
                } else if let sql = column.defaultSQL {
                    attribute.defaultValue = defaultValue(sql, type: choice.type, isDateOnly: choice.isDateOnly, column: column.name, table: table.name)
                }
                entity.attributes.append(attribute)
            }
            for check in checks where !table.columns.contains(where: { enumOfColumn["\(table.name).\($0.name)"] != nil && Self.allowedValues(check.definition)?.column == $0.name }) {
                if check.definition.range(of: #"^CHECK \(\("?[A-Za-z_][A-Za-z0-9_]*"? IS NOT NULL\)\)( NOT VALID)?$"#, options: .regularExpression) != nil {
                    note(table.name, "check \"\(check.name)\" only requires a value (a NOT NULL written as a check, as online migrations leave one until they complete)", sql: check.definition)
                    continue
                }
                warn(table.name, "check \"\(check.name)\" not imported: the schema language checks allowed values (enums) only", sql: check.definition)
            }
            memberOfColumn[table.name] = members
            entities.append(entity)
        }

        // MARK: - Relationships

        mutating func buildRelationships(_ table: PostgresCatalogue.Table) {
            guard let position = entities.firstIndex(where: { $0.name == entityOfTable[table.name] }) else { return }
            for key in table.constraints where key.kind == "f" && !links(of: table).contains(key) {
                warn(
                    table.name,
                    "foreign key \"\(key.name)\" not imported as a relationship (several columns, or a target that is not an imported table's key); its columns are imported as attributes",
                    sql: key.definition)
            }
            for key in links(of: table) {
                // `links` keeps keys to imported tables only, whose members were named above.
                guard let name = memberOfColumn[table.name]?[key.columns[0]], let referenced = key.referencedTable, let targetName = entityOfTable[referenced],
                    let targetTable = tables.first(where: { $0.name == referenced })
                else { continue }
                guard let targetPosition = entities.firstIndex(where: { $0.name == targetName }) else { continue }
                let optional = table.column(named: key.columns[0])?.isNotNull == false
                var relationship = ImportedRelationship(name: name, target: targetName, isToMany: false, isOptional: optional)
                let targetKey = targetTable.primaryKey
                if Naming.foreignKeyColumns(of: name, targetKey: targetKey) != key.columns { relationship.column = key.columns[0] }
                if key.onUpdate != "a" {
                    warn(table.name, "foreign key \"\(key.name)\": its ON UPDATE action is not carried over (the schema's keys are not meant to change)", sql: key.definition)
                }
                let target = entities[targetPosition]
                let targetTaken = Set(target.memberNames + target.relationships.map { Naming.keyProperty(of: $0.name) } + (memberOfColumn[referenced].map { Array($0.values) } ?? []))
                var inverseName = SwiftNames.lowerCamel(SwiftNames.plural(entities[position].name), fallback: "links")
                if targetTaken.contains(where: { $0.lowercased() == inverseName.lowercased() }) {
                    inverseName = SwiftNames.unique(inverseName + "As" + name.prefix(1).uppercased() + name.dropFirst(), among: targetTaken)
                }
                relationship.inverse = inverseName
                entities[position].relationships.append(relationship)
                var inverse = ImportedRelationship(name: inverseName, target: entities[position].name, isToMany: true, isOptional: false)
                inverse.inverse = name
                switch key.onDelete {
                case "c": inverse.deleteRule = .cascade
                case "a": inverse.deleteRule = .noAction
                case "n" where optional: inverse.deleteRule = .nullify
                case "n", "d":
                    warn(
                        table.name, "foreign key \"\(key.name)\": ON DELETE \(key.onDelete == "n" ? "SET NULL on a NOT NULL column" : "SET DEFAULT") has no delete rule to match; imported as deny",
                        sql: key.definition)
                    inverse.deleteRule = .deny
                default: inverse.deleteRule = .deny
                }
                entities[targetPosition].relationships.append(inverse)
            }
        }

        // MARK: - Keys, uniques and indexes

        func members(_ columns: [String], of table: PostgresCatalogue.Table) -> [String]? {
            let names = columns.map { memberOfColumn[table.name]?[$0] }
            guard names.allSatisfy({ $0 != nil }) else { return nil }
            return names.compactMap { $0 }
        }

        mutating func buildKeysAndIndexes(_ table: PostgresCatalogue.Table) {
            guard let position = entities.firstIndex(where: { $0.name == entityOfTable[table.name] }) else { return }
            if table.primaryKey.isEmpty {
                warn(table.name, "the table has no primary key; the schema gives it the implicit key `id`, a column this table does not have: add one before adopting it")
            } else if !Self.isImplicitKey(table) {
                if let members = members(table.primaryKey, of: table) {
                    entities[position].primaryKey = members
                } else {
                    warn(table.name, "its primary key covers columns that were not imported", sql: table.constraints.first { $0.kind == "p" }?.definition)
                }
            }
            for unique in table.constraints where unique.kind == "u" {
                guard let members = members(unique.columns, of: table) else {
                    warn(table.name, "unique constraint \"\(unique.name)\" covers columns that were not imported", sql: unique.definition)
                    continue
                }
                if members.count == 1, let index = entities[position].attributes.firstIndex(where: { $0.name == members[0] }) {
                    entities[position].attributes[index].isUnique = true
                } else {
                    entities[position].uniques.append(members)
                }
            }
            for constraint in table.constraints where constraint.kind == "x" {
                warn(table.name, "exclusion constraint \"\(constraint.name)\" not imported: the schema language has none", sql: constraint.definition)
            }
            for index in table.indexes {
                if index.method == "gin", index.columns.count == 1, table.column(named: index.columns[0])?.type == "tsvector" { continue }
                if index.isPartial {
                    warn(table.name, "partial index \"\(index.name)\" not imported: the schema language has no index conditions", sql: index.definition)
                    continue
                }
                if index.hasExpressions {
                    warn(table.name, "expression index \"\(index.name)\" not imported: the schema language indexes columns only", sql: index.definition)
                    continue
                }
                if index.method != "btree" {
                    warn(table.name, "\(index.method) index \"\(index.name)\" not imported: the schema language's indexes are B-trees", sql: index.definition)
                    continue
                }
                guard let members = members(index.columns, of: table) else {
                    warn(table.name, "index \"\(index.name)\" covers columns that were not imported", sql: index.definition)
                    continue
                }
                if index.definition.contains(" DESC") || index.definition.contains(" COLLATE ") {
                    warn(table.name, "index \"\(index.name)\" imported without its DESC order or collation, which the schema language does not express", sql: index.definition)
                }
                if index.isUnique {
                    if members.count == 1, let at = entities[position].attributes.firstIndex(where: { $0.name == members[0] }) {
                        entities[position].attributes[at].isUnique = true
                    } else {
                        entities[position].uniques.append(members)
                    }
                } else if members.count == 1, let at = entities[position].attributes.firstIndex(where: { $0.name == members[0] }) {
                    entities[position].attributes[at].isIndexed = true
                } else {
                    entities[position].indexes.append(members)
                }
            }
        }

        // MARK: - Defaults

        /// A default as `pg_get_expr` writes it: literals with their casts, `now()`,
        /// `gen_random_uuid()`.
        mutating func defaultValue(_ sql: String, type: String, isDateOnly: Bool = false, column: String, table: String) -> ImportedDefault? {
            var text = sql.trimmingCharacters(in: .whitespaces)
            let lower = text.lowercased()
            if ["now()", "current_timestamp", "transaction_timestamp()", "statement_timestamp()", "clock_timestamp()", "localtimestamp", "current_date"].contains(lower) {
                if type == "Date", isDateOnly {
                    // `now` on a day column is written CURRENT_DATE.
                    if lower != "current_date" {
                        note(table, "default of column \"\(column)\" is \(sql) on a date column; imported as `now`, which schemagen writes CURRENT_DATE", sql: "DEFAULT \(sql)")
                    }
                    return .plain("now")
                }
                if type == "Date" {
                    if lower == "current_date" || lower == "localtimestamp" {
                        note(table, "default of column \"\(column)\" is \(sql), the day (or local time) only; imported as `now` (the current time, as timestamptz)", sql: "DEFAULT \(sql)")
                    }
                    return .plain("now")
                }
            }
            if ["gen_random_uuid()", "uuid_generate_v4()"].contains(lower) {
                if type == "UUID" { return .plain("uuid") }
            }
            // The literal before its casts: `'abc'::text`, `'5'::bigint`, `(-1)`.
            while text.hasPrefix("("), text.hasSuffix(")") { text = String(text.dropFirst().dropLast()) }
            var literal: String?
            var isString = false
            if text.hasPrefix("'"), let end = text.range(of: "'::", options: .backwards)?.lowerBound ?? (text.hasSuffix("'") && text.count >= 2 ? text.index(before: text.endIndex) : nil) {
                literal = String(text[text.index(after: text.startIndex)..<end]).replacingOccurrences(of: "''", with: "'")
                isString = true
            } else {
                let bare = text.split(separator: ":").first.map(String.init) ?? text
                let trimmed = bare.trimmingCharacters(in: CharacterSet(charactersIn: "() "))
                if Double(trimmed) != nil || ["true", "false"].contains(trimmed) { literal = trimmed }
            }
            func unsupported(_ why: String) -> ImportedDefault? {
                warn(table, "default of column \"\(column)\" not imported: \(why)", sql: "DEFAULT \(sql)")
                return nil
            }
            guard let literal else { return unsupported("an expression; the schema language takes literal defaults, `now` and `uuid` only") }
            switch type {
            case "Int", "Int16", "Int32", "Int64":
                guard let number = Int64(literal) else { return unsupported("not a whole number") }
                return .plain(String(number))
            case "Double", "Float":
                guard let number = Double(literal), number.isFinite else { return unsupported("not a number") }
                return .plain(literal.contains(".") || literal.lowercased().contains("e") ? literal : literal + ".0")
            case "Decimal":
                guard Double(literal) != nil else { return unsupported("not a decimal number") }
                return .plain(literal)
            case "Bool":
                switch literal {
                case "true": return .plain("true")
                case "false": return .plain("false")
                default: return unsupported("not true or false")
                }
            case "UUID":
                guard UUID(uuidString: literal) != nil else { return unsupported("not a UUID") }
                return .text(literal.lowercased())
            case "Date" where isDateOnly:
                // `'2024-01-31'::date`: a day, as the schema language writes it.
                guard isString, ISO8601Date.isCalendarDay(literal) else { return unsupported("not a day such as 2024-01-31") }
                return .text(literal)
            case "Date":
                return unsupported("a fixed time; the schema language takes `now` for dates")
            case "String":
                return isString ? .text(literal) : unsupported("not text")
            default:
                if let enumType = enums.first(where: { $0.name == type }), let match = enumType.cases.first(where: { $0.rawValue == literal }) {
                    return .plain(match.name)
                }
                return unsupported("no default for \(type)")
            }
        }
    }
}
