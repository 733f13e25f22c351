import Foundation
import SQLiteKit
import SchemaKit

/// `schemagen import sqlite`: a schema from an existing database's catalogue.
public enum SQLiteImporter {
    /// Tables of schemagen's own (the migration history, the runtime store's history and
    /// bookkeeping) all start with this.
    static let ownTablePrefix = "schemagen_"

    static func isOwn(_ table: String) -> Bool { table.lowercased().hasPrefix(ownTablePrefix) }

    /// Tables that become entities: not SQLite's own, not schemagen's, not virtual or shadow.
    static func isImportable(_ table: SQLiteCatalogue.Table) -> Bool {
        table.kind == "table" && !table.name.lowercased().hasPrefix("sqlite_") && !isOwn(table.name)
    }

    /// Opens the file read-only and imports it. Nothing is written to it.
    public static func importDatabase(at path: String, name: String? = nil) throws(ImportError) -> ImportResult {
        let catalogue: SQLiteCatalogue
        do {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw ImportError(at: path, "no such file")
            }
            let connection = try SQLiteConnection(path: path, readOnly: true)
            // An app may be writing to it: wait for its lock a while rather than fail at once.
            connection.setBusyTimeout(milliseconds: 5000)
            catalogue = try SQLiteCatalogue.read(connection)
        } catch let error as ImportError {
            throw error
        } catch let error as SQLiteError {
            if error.primary == .notADatabase || error.primary == .corrupt {
                throw ImportError(at: path, "not a SQLite database, or a damaged or truncated one (SQLite says: \(error.message))")
            }
            throw ImportError(at: path, "cannot read the database: \(error.message)")
        } catch {
            throw ImportError(at: path, "cannot read the database: \(error)")
        }
        guard catalogue.tables.contains(where: isImportable) else {
            throw ImportError(at: path, "the database has no tables to import (SQLite takes an empty file for an empty database)")
        }
        let fileName = URL(fileURLWithPath: path).lastPathComponent
        let stem = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let schemaName = name ?? SwiftNames.schemaName(stem)
        return makeSchema(catalogue, named: schemaName, file: fileName)
    }

    /// The schema a catalogue describes, with a finding for everything not carried over.
    public static func makeSchema(_ catalogue: SQLiteCatalogue, named name: String, file: String) -> ImportResult {
        var builder = Builder(catalogue: catalogue, file: file)
        builder.build()
        return ImportResult(schema: ImportedSchema(name: name, version: 1, entities: builder.entities), findings: builder.findings)
    }

    struct Builder {
        let catalogue: SQLiteCatalogue
        let file: String
        var entities: [ImportedEntity] = []
        var findings: [ImportFinding] = []
        /// Entity index by lowercased table name.
        var entityOfTable: [String: Int] = [:]
        /// Per entity: column (lowercased) -> attribute name, and relationship name -> its FK columns.
        var attributeOfColumn: [[String: String]] = []
        var relationshipColumns: [[String: [String]]] = []

        /// The tables that become entities (or link tables), and the same by lowercased name.
        let importedTables: [SQLiteCatalogue.Table]
        let importedTable: [String: SQLiteCatalogue.Table]

        init(catalogue: SQLiteCatalogue, file: String) {
            self.catalogue = catalogue
            self.file = file
            importedTables = catalogue.tables.filter(SQLiteImporter.isImportable)
            importedTable = Dictionary(importedTables.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        }

        func place(_ table: String) -> String { "\(file): table \"\(table)\"" }
        mutating func warn(_ table: String, _ message: String, sql: String? = nil) {
            findings.append(ImportFinding(.warning, at: place(table), message, source: sql))
        }
        mutating func note(_ table: String, _ message: String, sql: String? = nil) {
            findings.append(ImportFinding(.note, at: place(table), message, source: sql))
        }

        mutating func build() {
            let fullText = catalogue.tables.compactMap { FullTextIndex($0, triggers: catalogue.others) }
            let importedFullText = Set(fullText.filter { importedTable[$0.content.lowercased()] != nil }.map(\.name))
            for table in catalogue.tables {
                if table.kind == "virtual", !importedFullText.contains(table.name) {
                    warn(table.name, "virtual table not imported: the schema language has no virtual tables (declare `searchable` attributes for full-text search)", sql: table.sql)
                } else if SQLiteImporter.isOwn(table.name) {
                    note(table.name, "schemagen's own bookkeeping table, not imported")
                }
            }
            if catalogue.tables.contains(where: { $0.name == "Z_METADATA" }), catalogue.tables.contains(where: { $0.name == "Z_PRIMARYKEY" }) {
                findings.append(
                    ImportFinding(
                        .warning, at: file,
                        "this is a Core Data store: its Z tables are Core Data's storage, not the model; import the model bundle with `schemagen import coredata MODEL.xcdatamodeld` instead"))
            }
            let shadow = catalogue.tables.filter { $0.kind == "shadow" }.map(\.name)
            if !shadow.isEmpty {
                note(shadow[0], "shadow tables of virtual tables not imported: \(shadow.joined(separator: ", "))")
            }
            for other in catalogue.others where !(other.type == "trigger" && SQLiteImporter.isOwn(other.table)) {
                // Triggers that keep an imported full-text index in step: the schema writes its own.
                if other.type == "trigger", !importedFullText.isEmpty, let sql = other.sql,
                    SQLScanner.tokens(sql).contains(where: { ($0.kind == .word || $0.kind == .quotedName) && importedFullText.contains(SQLScanner.unquoted($0)) })
                {
                    findings.append(
                        ImportFinding(.note, at: "\(file): trigger \"\(other.name)\"", "keeps a full-text index in step; not imported, since `searchable` attributes come with triggers of their own"))
                    continue
                }
                findings.append(
                    ImportFinding(
                        .warning, at: "\(file): \(other.type) \"\(other.name)\"",
                        "not imported: the schema language has no \(other.type)s; recreate it in a migration of your own", source: other.sql))
            }
            var taken = Set(["String", "Int", "Int8", "Int16", "Int32", "Int64", "Double", "Float", "Bool", "Date", "Data", "UUID", "URL", "Decimal"].map { $0.lowercased() })
            var names: [String: String] = [:]
            for table in importedTables {
                let entityName = SwiftNames.unique(SwiftNames.upperCamel(SwiftNames.singular(table.name), fallback: "Table"), amongFolded: taken)
                taken.insert(entityName.lowercased())
                names[table.name.lowercased()] = entityName
            }
            let links = importedTables.compactMap { manyToMany($0, names: names) }
            let linkTables = Set(links.map { $0.table.lowercased() })
            let tables = importedTables.filter { !linkTables.contains($0.name.lowercased()) }
            for table in tables {
                let entityName = names[table.name.lowercased()]!
                var entity = ImportedEntity(name: entityName)
                if Naming.defaultName(of: entityName) != table.name { entity.table = table.name }
                entityOfTable[table.name.lowercased()] = entities.count
                entities.append(entity)
            }
            attributeOfColumn = Array(repeating: [:], count: entities.count)
            relationshipColumns = Array(repeating: [:], count: entities.count)
            // Keys first: a relationship's derived column names need its target's key columns.
            var linkColumns: [[String: ForeignLink]] = []
            for table in tables { linkColumns.append(plannedLinks(of: table)) }
            for (position, table) in tables.enumerated() {
                buildAttributes(of: table, at: position, links: linkColumns[position])
            }
            for (position, table) in tables.enumerated() {
                buildRelationships(of: table, at: position, links: linkColumns[position])
            }
            for link in links { addManyToMany(link) }
            for index in fullText { markSearchable(index) }
            for (position, table) in tables.enumerated() {
                buildKeyAndIndexes(of: table, at: position)
                reportUnexpressedClauses(of: table)
            }
        }

        // MARK: - Full-text indexes

        /// `CREATE VIRTUAL TABLE x USING fts5(a, b, content='t', ...)`: an external-content FTS5
        /// index over columns of table `t`, what `searchable` attributes become.
        /// Or `CREATE VIRTUAL TABLE x USING fts5(a)` holding its own content, kept by an insert
        /// trigger on table `t` that writes `json_each(new."a")`: the index of a `[String]`
        /// attribute, its strings as words.
        struct FullTextIndex {
            var name: String
            var columns: [String]
            var content: String
            /// Columns holding JSON arrays of strings (`[String]`).
            var jsonColumns: [String] = []

            init?(_ table: SQLiteCatalogue.Table, triggers: [SQLiteCatalogue.OtherObject]) {
                guard table.kind == "virtual", let sql = table.sql else { return nil }
                let tokens = SQLScanner.tokens(sql)
                guard let using = tokens.firstIndex(where: { $0.kind == .word && $0.text.uppercased() == "USING" }),
                    using + 2 < tokens.count, tokens[using + 1].text.lowercased() == "fts5", tokens[using + 2].text == "("
                else { return nil }
                var columns: [String] = [], content: String?
                // Arguments up to the closing parenthesis, split at commas: `name [UNINDEXED]` is a
                // column, `key = value` an option. Every pass moves forward, so it ends.
                var index = using + 3
                while index < tokens.count, tokens[index].text != ")" {
                    let start = index
                    while index < tokens.count, tokens[index].text != ",", tokens[index].text != ")" { index += 1 }
                    let argument = tokens[start..<index]
                    if argument.count >= 3, argument[argument.startIndex + 1].text == "=" {
                        if argument.first?.text.lowercased() == "content" { content = SQLScanner.unquoted(argument[argument.startIndex + 2]) }
                    } else if let first = argument.first, first.kind == .word || first.kind == .quotedName {
                        columns.append(SQLScanner.unquoted(first))
                    }
                    if index < tokens.count, tokens[index].text == "," { index += 1 }
                }
                if content == nil, !columns.isEmpty {
                    // The trigger that fills it: AFTER INSERT ON the table, json_each of each column.
                    let filler = triggers.first { trigger in
                        guard trigger.type == "trigger", trigger.name.lowercased() == (table.name + "_insert").lowercased(), let sql = trigger.sql else { return false }
                        return columns.allSatisfy { sql.contains("json_each(new.\"\($0)\")") }
                    }
                    guard let filler else { return nil }
                    content = filler.table
                    jsonColumns = columns
                }
                guard let content, !content.isEmpty, !columns.isEmpty else { return nil }
                self.name = table.name
                self.columns = columns
                self.content = content
            }
        }

        mutating func markSearchable(_ index: FullTextIndex) {
            guard let position = entityOfTable[index.content.lowercased()] else { return }
            var marked: [String] = []
            for column in index.columns {
                guard let name = attributeOfColumn[position][column.lowercased()],
                    let attribute = entities[position].attributes.firstIndex(where: { $0.name == name }),
                    entities[position].attributes[attribute].type == "String"
                else {
                    warn(index.content, "full-text index \"\(index.name)\" covers column \"\(column)\", which is not a text attribute; not carried over")
                    continue
                }
                entities[position].attributes[attribute].isSearchable = true
                if index.jsonColumns.contains(column) {
                    // Its index reads it as a JSON array of strings: the attribute is `[String]`.
                    entities[position].attributes[attribute].type = "[String]"
                    if entities[position].attributes[attribute].defaultValue == .text("[]") { entities[position].attributes[attribute].defaultValue = .plain("[]") }
                }
                marked.append(name)
            }
            if !marked.isEmpty {
                note(
                    index.content,
                    "full-text index \"\(index.name)\" imported as `searchable` on \(marked.map { "`\($0)`" }.joined(separator: ", "))\(index.columns.count > 1 ? " (the schema indexes each attribute on its own)" : "")"
                )
            }
        }

        // MARK: - Many-to-many

        /// A link table written exactly as the schema language derives one for a many-to-many
        /// relationship: `<owner table>_<relationship>`, columns `<entity>_<key column>`, both keys
        /// cascading, the key over both columns, an index on the second.
        struct ManyToMany {
            var table: String
            var owner: String, ownerRelationship: String
            var other: String
        }

        mutating func manyToMany(_ table: SQLiteCatalogue.Table, names: [String: String]) -> ManyToMany? {
            guard table.columns.count == 2, table.primaryKey.count == 2, table.foreignKeys.count == 2, !table.isWithoutRowID,
                table.foreignKeys.allSatisfy({ $0.columns.count == 1 && $0.onDelete == "CASCADE" && $0.onUpdate == "NO ACTION" }),
                table.sql.map({ SQLScanner.checkClauses($0).isEmpty && !SQLScanner.contains(keyword: "DEFERRABLE", in: $0) }) ?? true
            else { return nil }
            var sides: [(entity: String, column: String, keyColumn: String, table: String)] = []
            for key in table.foreignKeys {
                guard let target = importedTable[key.table.lowercased()],
                    let entity = names[target.name.lowercased()], Self.hasImplicitKey(target) || target.primaryKey.count == 1,
                    key.referencedColumns.isEmpty || key.referencedColumns.map({ $0.lowercased() }) == target.primaryKey.map({ $0.lowercased() })
                else { return nil }
                sides.append((entity, key.columns[0], target.primaryKey[0], target.name))
            }
            sides.sort { $0.entity < $1.entity }
            let (owner, other) = (sides[0], sides[1])
            guard owner.entity != other.entity,
                [owner.column] == Naming.joinColumns(of: owner.entity, key: [owner.keyColumn], selfLink: false, isTarget: false),
                [other.column] == Naming.joinColumns(of: other.entity, key: [other.keyColumn], selfLink: false, isTarget: true),
                table.name.hasPrefix(owner.table + "_")
            else { return nil }
            let rest = String(table.name.dropFirst(owner.table.count + 1))
            let relationship = SwiftNames.lowerCamel(rest, fallback: "")
            guard !relationship.isEmpty, Naming.snakeCase(relationship) == rest,
                let ownerTable = importedTable[owner.table.lowercased()],
                !ownerTable.columns.contains(where: { SwiftNames.lowerCamel($0.name, fallback: "") == relationship })
            else { return nil }
            // Only the index the schema itself would make (or none: then it adds it).
            let indexes = table.indexes.filter { $0.origin != "pk" }
            guard indexes.allSatisfy({ !$0.isUnique && !$0.isPartial && $0.columns == [other.column] }), indexes.count <= 1 else { return nil }
            if indexes.isEmpty {
                warn(table.name, "no index on \"\(other.column)\"; the schema indexes it, so a database built from it has one more index")
            }
            note(table.name, "imported as the many-to-many relationship `\(owner.entity).\(relationship)`, whose link table it is")
            return ManyToMany(table: table.name, owner: owner.entity, ownerRelationship: relationship, other: other.entity)
        }

        mutating func addManyToMany(_ link: ManyToMany) {
            guard let ownerPosition = entities.firstIndex(where: { $0.name == link.owner }),
                let otherPosition = entities.firstIndex(where: { $0.name == link.other })
            else { return }
            let ownerTaken = Set(entities[ownerPosition].memberNames)
            let otherTaken = Set(entities[otherPosition].memberNames)
            // The relationship's name comes from the table's; `manyToMany` checked the columns, so
            // only a relationship of the same name can be in the way.
            guard !ownerTaken.contains(link.ownerRelationship) else {
                warn(link.table, "not imported: it is the link table of `\(link.owner).\(link.ownerRelationship)`, but `\(link.owner)` already has a member of that name; rename it, then import again")
                return
            }
            let inverseName = SwiftNames.unique(SwiftNames.lowerCamel(SwiftNames.plural(link.owner), fallback: "links"), among: otherTaken)
            var relationship = ImportedRelationship(name: link.ownerRelationship, target: link.other, isToMany: true, isOptional: false)
            relationship.inverse = inverseName
            var inverse = ImportedRelationship(name: inverseName, target: link.owner, isToMany: true, isOptional: false)
            inverse.inverse = link.ownerRelationship
            entities[ownerPosition].relationships.append(relationship)
            entities[otherPosition].relationships.append(inverse)
        }

        // MARK: - Foreign keys

        /// A foreign key that becomes a to-one relationship.
        struct ForeignLink {
            var key: SQLiteCatalogue.ForeignKey
            var targetTable: SQLiteCatalogue.Table
            /// The FK columns ordered as the target's key.
            var columns: [String]
            var relationshipName: String
        }

        /// Whether a table's key is the implicit integer `id` (a rowid alias named `id`).
        static func hasImplicitKey(_ table: SQLiteCatalogue.Table) -> Bool {
            guard table.primaryKey == ["id"], !table.isWithoutRowID, let column = table.column(named: "id") else { return false }
            return column.declaredType.uppercased() == "INTEGER"
        }

        /// Decides which foreign keys become relationships, keyed by relationship name.
        mutating func plannedLinks(of table: SQLiteCatalogue.Table) -> [String: ForeignLink] {
            var links: [String: ForeignLink] = [:]
            var usedColumns: Set<String> = []
            let keyColumns = Set(table.primaryKey.map { $0.lowercased() })
            for key in table.foreignKeys {
                let sql =
                    "FOREIGN KEY (\(key.columns.joined(separator: ", "))) REFERENCES \(key.table)\(key.referencedColumns.isEmpty ? "" : " (\(key.referencedColumns.joined(separator: ", ")))") ON DELETE \(key.onDelete)"
                guard let target = importedTable[key.table.lowercased()] else {
                    warn(table.name, "foreign key to \"\(key.table)\", which is not an imported table; its columns are imported as attributes", sql: sql)
                    continue
                }
                let targetKey = target.primaryKey
                let referenced = key.referencedColumns.isEmpty ? targetKey : key.referencedColumns
                guard !targetKey.isEmpty, referenced.count == key.columns.count,
                    Set(referenced.map { $0.lowercased() }) == Set(targetKey.map { $0.lowercased() })
                else {
                    warn(
                        table.name, "foreign key to columns of \"\(target.name)\" that are not its primary key; a relationship always references the key, so its columns are imported as attributes",
                        sql: sql)
                    continue
                }
                // The FK's columns in the order of the target's key.
                let ordered = targetKey.map { keyColumn in key.columns[referenced.firstIndex { $0.lowercased() == keyColumn.lowercased() }!] }
                let lowered = Set(ordered.map { $0.lowercased() })
                guard usedColumns.isDisjoint(with: lowered) else {
                    warn(table.name, "foreign key whose columns another foreign key already uses; its columns are imported as attributes", sql: sql)
                    continue
                }
                let partlyKey = !lowered.isDisjoint(with: keyColumns) && !lowered.isSubset(of: keyColumns)
                if partlyKey {
                    warn(table.name, "foreign key whose columns are partly in the primary key; its columns are imported as attributes", sql: sql)
                    continue
                }
                guard let name = relationshipName(for: ordered, targetKey: targetKey, target: target, taken: Set(links.keys)) else {
                    warn(table.name, "composite foreign key whose column names do not follow `<relationship>_<key column>`; its columns are imported as attributes", sql: sql)
                    continue
                }
                usedColumns.formUnion(lowered)
                links[name] = ForeignLink(key: key, targetTable: target, columns: ordered, relationshipName: name)
                if key.onUpdate != "NO ACTION" {
                    warn(table.name, "ON UPDATE \(key.onUpdate) not carried over: the schema's foreign keys have no update action (keys are not meant to change)", sql: sql)
                }
            }
            return links
        }

        /// `artist_id` -> `artist`, `ReportsTo` -> `reportsTo`; for several columns, the prefix they share.
        func relationshipName(for columns: [String], targetKey: [String], target: SQLiteCatalogue.Table, taken: Set<String>) -> String? {
            let targetEntity = entities[entityOfTable[target.name.lowercased()]!].name
            if columns.count == 1, columns[0].lowercased() == targetKey[0].lowercased() {
                // `genre_code` referencing `genres (genre_code)`: the relationship is the genre.
                return SwiftNames.unique(SwiftNames.lowerCamel(targetEntity, fallback: "link"), among: taken)
            }
            if columns.count == 1 {
                var words = SwiftNames.words(columns[0])
                if words.count > 1, words.last?.lowercased() == "id" { words.removeLast() }
                let base =
                    words.isEmpty
                    ? SwiftNames.lowerCamel(targetEntity, fallback: "link")
                    : SwiftNames.lowerCamel(words.joined(separator: "_"), fallback: "link")
                return SwiftNames.unique(base, among: taken)
            }
            // Composite: the derived names are `<snake relationship>_<key column>`, with no override.
            guard let first = columns.first, let firstKey = targetKey.first, first.hasSuffix("_" + firstKey) else { return nil }
            let prefix = String(first.dropLast(firstKey.count + 1))
            let name = SwiftNames.lowerCamel(prefix, fallback: "link")
            guard Naming.snakeCase(name) == prefix,
                columns == Naming.foreignKeyColumns(of: name, targetKey: targetKey), !taken.contains(name)
            else { return nil }
            return name
        }

        // MARK: - Attributes and relationships

        mutating func buildAttributes(of table: SQLiteCatalogue.Table, at position: Int, links: [String: ForeignLink]) {
            let linkColumns = Set(links.values.flatMap { $0.columns.map { $0.lowercased() } })
            let implicitKey = Self.hasImplicitKey(table)
            let isRowIDAlias =
                table.primaryKey.count == 1 && !table.isWithoutRowID
                && table.column(named: table.primaryKey[0])?.declaredType.uppercased() == "INTEGER"
            var taken = Set(links.keys).union(links.keys.map { Naming.keyProperty(of: $0) })
            for column in table.columns {
                if column.hidden == 2 || column.hidden == 3 {
                    warn(table.name, "generated column \"\(column.name)\" not imported: the schema language has no generated columns", sql: generatedColumnSQL(column.name, in: table.sql))
                    continue
                }
                if implicitKey, column.name == "id" { continue }
                if linkColumns.contains(column.name.lowercased()) { continue }
                let name = SwiftNames.unique(SwiftNames.lowerCamel(column.name, fallback: "column"), among: taken)
                taken.insert(name)
                var mapping = SQLiteTypeMapping.schemaType(forDeclared: column.declaredType)
                if let remark = mapping.remark { note(table.name, "column \"\(column.name)\": \(remark)") }
                // A text column whose default is the current time holds dates; one whose default
                // builds a random UUID holds UUIDs (as schemagen's own tables declare them).
                if mapping.type == "String", let sql = column.defaultSQL {
                    if Self.isCurrentDay(sql) {
                        mapping.type = "Date"
                        mapping.isDateOnly = true
                        note(table.name, "column \"\(column.name)\" defaults to the current day; imported as Date kept as its day (dateOnly)")
                    } else if Self.isCurrentTime(sql) {
                        mapping.type = "Date"
                        note(table.name, "column \"\(column.name)\" defaults to the current time; imported as Date")
                    } else if Self.isRandomUUID(sql) {
                        mapping.type = "UUID"
                        note(table.name, "column \"\(column.name)\" defaults to a random UUID; imported as UUID")
                    }
                }
                let isKey = column.keyPosition > 0
                var attribute = ImportedAttribute(name: name, type: mapping.type, isOptional: !column.isNotNull && !isKey)
                if isKey, !column.isNotNull, !isRowIDAlias {
                    warn(
                        table.name, "key column \"\(column.name)\" may hold NULL (SQLite allows it in keys that are not INTEGER PRIMARY KEY, for compatibility); the schema's key columns are NOT NULL")
                }
                if Naming.defaultName(of: name) != column.name { attribute.column = column.name }
                attribute.isDateOnly = mapping.isDateOnly
                if let sql = column.defaultSQL {
                    attribute.defaultValue = defaultValue(sql, type: mapping.type, column: column.name, table: table.name)
                    if mapping.isDateOnly, case .text(let text)? = attribute.defaultValue, !ISO8601Date.isCalendarDay(text) {
                        warn(table.name, "default of column \"\(column.name)\" not imported: a time of day in a DATE column, which is imported as a day (dateOnly)", sql: "DEFAULT \(sql)")
                        attribute.defaultValue = nil
                    }
                }
                attributeOfColumn[position][column.name.lowercased()] = name
                entities[position].attributes.append(attribute)
            }
        }

        /// Each planned link becomes a to-one relationship here and a to-many inverse on its target.
        mutating func buildRelationships(of table: SQLiteCatalogue.Table, at position: Int, links: [String: ForeignLink]) {
            let order = table.columns.map { $0.name.lowercased() }
            func firstColumn(_ name: String) -> Int { order.firstIndex(of: links[name]!.columns[0].lowercased()) ?? 0 }
            for name in links.keys.sorted(by: { firstColumn($0) < firstColumn($1) }) {
                let link = links[name]!
                let targetPosition = entityOfTable[link.targetTable.name.lowercased()]!
                let optional = link.columns.contains { table.column(named: $0)?.isNotNull == false }
                if optional, link.columns.contains(where: { table.column(named: $0)?.isNotNull == true }) {
                    warn(table.name, "foreign key (\(link.columns.joined(separator: ", "))) mixes NULL and NOT NULL columns; imported as an optional relationship")
                }
                var relationship = ImportedRelationship(name: name, target: entities[targetPosition].name, isToMany: false, isOptional: optional)
                let targetKey = link.targetTable.primaryKey
                if link.columns.count == 1, Naming.foreignKeyColumns(of: name, targetKey: [targetKey[0]]) != link.columns {
                    relationship.column = link.columns[0]
                }
                relationshipColumns[position][name] = link.columns
                entities[position].relationships.append(relationship)
                // The inverse on the target: to-many, with the delete rule the key's ON DELETE gives.
                let target = entities[targetPosition]
                let targetTaken = Set(target.memberNames + target.relationships.map { Naming.keyProperty(of: $0.name) } + Array(links.keys))
                var inverseName = SwiftNames.lowerCamel(SwiftNames.plural(entities[position].name), fallback: "links")
                if targetTaken.contains(where: { $0.lowercased() == inverseName.lowercased() }) {
                    inverseName = SwiftNames.unique(inverseName + "As" + name.prefix(1).uppercased() + name.dropFirst(), among: targetTaken)
                }
                let relationshipIndex = entities[position].relationships.count - 1
                entities[position].relationships[relationshipIndex].inverse = inverseName
                var inverse = ImportedRelationship(name: inverseName, target: entities[position].name, isToMany: true, isOptional: false)
                inverse.inverse = name
                inverse.deleteRule = deleteRule(for: link, optional: optional, table: table.name)
                entities[targetPosition].relationships.append(inverse)
            }
        }

        mutating func deleteRule(for link: ForeignLink, optional: Bool, table: String) -> ImportedRelationship.DeleteRule {
            switch link.key.onDelete {
            case "CASCADE": return .cascade
            case "SET NULL":
                if optional { return .nullify }
                warn(table, "ON DELETE SET NULL on NOT NULL columns (\(link.columns.joined(separator: ", "))) would fail every delete; imported as deny (RESTRICT)")
                return .deny
            case "SET DEFAULT":
                warn(table, "ON DELETE SET DEFAULT on (\(link.columns.joined(separator: ", "))) has no delete rule to match; imported as deny (RESTRICT)")
                return .deny
            default:
                // RESTRICT, and NO ACTION (SQLite's default): both refuse the delete; SQLite checks
                // RESTRICT at once and NO ACTION at the end of the statement.
                return .deny
            }
        }

        // MARK: - Keys and indexes

        /// The member names covering some columns: attributes, or whole relationships.
        func members(for columns: [String], at position: Int) -> [String]? {
            var result: [String] = []
            var remaining = columns.map { $0.lowercased() }
            while let column = remaining.first {
                if let attribute = attributeOfColumn[position][column] {
                    result.append(attribute)
                    remaining.removeFirst()
                    continue
                }
                guard let (name, linkColumns) = relationshipColumns[position].first(where: { $0.value.first?.lowercased() == column }),
                    remaining.count >= linkColumns.count,
                    Array(remaining.prefix(linkColumns.count)) == linkColumns.map({ $0.lowercased() })
                else { return nil }
                result.append(name)
                remaining.removeFirst(linkColumns.count)
            }
            return result
        }

        mutating func buildKeyAndIndexes(of table: SQLiteCatalogue.Table, at position: Int) {
            var entity = entities[position]
            if table.primaryKey.isEmpty {
                warn(
                    table.name,
                    "the table has no primary key; the schema gives it the implicit key `id`, a column this table does not have, so add one (for example by rebuilding the table) before adopting it")
            } else if !Self.hasImplicitKey(table) {
                if let members = members(for: table.primaryKey, at: position) {
                    entity.primaryKey = members
                } else {
                    warn(table.name, "primary key (\(table.primaryKey.joined(separator: ", "))) mixes part of a foreign key with other columns and cannot be expressed")
                }
            }
            let keyColumns = table.primaryKey.map { $0.lowercased() }
            var foreignKeyIndexes: [[String]] = []
            for index in table.indexes where index.origin != "pk" {
                if index.isPartial {
                    warn(table.name, "partial index \"\(index.name)\" not imported: the schema language has no index conditions", sql: index.sql)
                    continue
                }
                let columns = index.columns.compactMap { $0 }
                if columns.count != index.columns.count || columns.contains(where: { $0 == "rowid" }) {
                    warn(table.name, "expression index \"\(index.name)\" not imported: the schema language indexes columns only", sql: index.sql)
                    continue
                }
                let what = index.origin == "u" ? "UNIQUE constraint on (\(columns.joined(separator: ", ")))" : "index \"\(index.name)\""
                if index.isDescending.contains(true) || index.collations.contains(where: { $0 != "BINARY" }) {
                    warn(table.name, "\(what) imported without its DESC order or COLLATE sequence, which the schema language does not express", sql: index.sql)
                }
                guard let members = members(for: columns, at: position) else {
                    warn(table.name, "index \"\(index.name)\" covers part of a foreign key's columns, which the schema language cannot express; not imported", sql: index.sql)
                    continue
                }
                if index.isUnique {
                    if columns.map({ $0.lowercased() }) == keyColumns {
                        if index.origin == "c" {
                            note(
                                table.name, "unique index \"\(index.name)\" repeats the primary key, which is unique already; not imported, so a database built from the schema has one index fewer",
                                sql: index.sql)
                        }
                        continue
                    }
                    if members.count == 1, let attribute = entity.attributes.firstIndex(where: { $0.name == members[0] }) {
                        entity.attributes[attribute].isUnique = true
                    } else if !entity.uniques.contains(members) {
                        entity.uniques.append(members)
                    }
                } else if members.count == 1, relationshipColumns[position][members[0]] != nil {
                    foreignKeyIndexes.append(members)
                } else if members.count == 1, let attribute = entity.attributes.firstIndex(where: { $0.name == members[0] }) {
                    entity.attributes[attribute].isIndexed = true
                } else if !entity.indexes.contains(members) {
                    entity.indexes.append(members)
                }
            }
            // The generator indexes each foreign key that no other index starts with, unless it is in
            // the key; an index on just a relationship is declared only where it would not.
            let declared: [[String]] = entity.uniques + entity.indexes + entity.attributes.filter(\.isUnique).map { [$0.name] }
            for (name, _) in relationshipColumns[position].sorted(by: { $0.key < $1.key }) {
                let generated = !entity.primaryKey.contains(name) && !declared.contains { $0.first == name }
                if foreignKeyIndexes.contains([name]) {
                    if !generated { entity.indexes.append([name]) }
                } else if generated {
                    warn(table.name, "foreign key column(s) of `\(name)` have no index here; the schema indexes every foreign key, so a database built from it has one more index")
                }
            }
            entities[position] = entity
        }

        // MARK: - What the catalogue does not show

        mutating func reportUnexpressedClauses(of table: SQLiteCatalogue.Table) {
            guard let sql = table.sql else { return }
            for check in SQLScanner.checkClauses(sql) {
                warn(table.name, "CHECK constraint not imported: the schema language has no CHECK constraints", sql: check)
            }
            if table.isWithoutRowID {
                warn(table.name, "WITHOUT ROWID not carried over: tables built from the schema are rowid tables", sql: nil)
            }
            if SQLScanner.contains(keyword: "AUTOINCREMENT", in: sql) {
                warn(table.name, "AUTOINCREMENT not carried over: keys of rows deleted last may be reused by a database built from the schema")
            }
            if SQLScanner.contains(keyword: "DEFERRABLE", in: sql) {
                warn(table.name, "DEFERRABLE foreign keys not carried over: the schema's foreign keys are checked at the end of each statement")
            }
            for (column, collation) in SQLScanner.collations(sql, columns: table.columns.map(\.name)) where collation.uppercased() != "BINARY" {
                warn(table.name, "column \"\(column)\" COLLATE \(collation) not carried over: the schema compares text byte by byte (BINARY), which changes what UNIQUE and = match")
            }
        }

        func generatedColumnSQL(_ column: String, in sql: String?) -> String? {
            guard let sql else { return nil }
            return sql.split(separator: "\n").first { $0.contains(column) && $0.uppercased().contains("AS") }.map { String($0).trimmingCharacters(in: .whitespaces) }
        }

        // MARK: - Defaults

        mutating func defaultValue(_ sql: String, type: String, column: String, table: String) -> ImportedDefault? {
            var text = sql.trimmingCharacters(in: .whitespaces)
            while text.hasPrefix("("), text.hasSuffix(")") { text = String(text.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces) }
            let upper = text.uppercased()
            if upper == "NULL" { return nil }
            var literal: String?
            var isString = false
            if text.count >= 2, text.hasPrefix("'"), text.hasSuffix("'") {
                literal = String(text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
                isString = true
            } else if Double(text) != nil || Int64(text) != nil {
                literal = text.hasPrefix("+") ? String(text.dropFirst()) : text
            } else if upper == "TRUE" || upper == "FALSE" {
                literal = upper == "TRUE" ? "1" : "0"
            }
            let isNow = Self.isCurrentTime(sql)
            if type == "UUID", Self.isRandomUUID(sql) { return .plain("uuid") }
            func unsupported(_ why: String) -> ImportedDefault? {
                warn(table, "default of column \"\(column)\" not imported: \(why)", sql: "DEFAULT \(sql)")
                return nil
            }
            if literal == nil, !isNow, !upper.hasPrefix("X'") {
                return unsupported("an expression; the schema language takes literal defaults only")
            }
            switch type {
            case "String":
                guard let literal else { return unsupported("the schema language takes literal defaults only") }
                return .text(literal)
            case "Int":
                guard let literal, let number = Int64(literal) else { return unsupported("not a whole number") }
                return .plain(String(number))
            case "Double":
                guard let literal, let number = Double(literal), number.isFinite else { return unsupported("not a number") }
                return .plain(literal.contains(".") || literal.lowercased().contains("e") ? literal : literal + ".0")
            case "Decimal":
                guard let literal, Decimal(string: literal, locale: Locale(identifier: "en_US_POSIX")) != nil, Double(literal) != nil else { return unsupported("not a decimal number") }
                return .plain(literal)
            case "Bool":
                switch literal?.lowercased() {
                case "1", "true": return .plain("true")
                case "0", "false": return .plain("false")
                default: return unsupported("not 0, 1, TRUE or FALSE")
                }
            case "Date":
                if isNow { return .plain("now") }
                guard let literal, isString else { return unsupported("the schema language takes `now` or an ISO 8601 date") }
                // SQLite writes `2024-01-31 08:00:00` (UTC by its convention); the schema takes ISO 8601.
                let iso = literal.count == 19 && literal.dropFirst(10).first == " " ? literal.prefix(10) + "T" + literal.dropFirst(11) + "Z" : literal
                guard iso.count == 10 || iso.hasSuffix("Z") else { return unsupported("not a date the schema language reads") }
                return .text(iso)
            case "UUID":
                guard let literal, UUID(uuidString: literal) != nil else { return unsupported("not a UUID") }
                return .text(literal.lowercased())
            case "Data":
                if upper.hasPrefix("X'"), upper.hasSuffix("'"), let bytes = hexBytes(String(text.dropFirst(2).dropLast())) {
                    return .text(Data(bytes).base64EncodedString())
                }
                guard let literal, isString else { return unsupported("the schema language takes bytes as base64 text") }
                return .text(Data(literal.utf8).base64EncodedString())
            default:
                return unsupported("no default for \(type)")
            }
        }

        /// `CURRENT_TIMESTAMP`, `datetime('now')`, `strftime('...', 'now')`, with or without parentheses.
        static func isCurrentTime(_ sql: String) -> Bool {
            // On bytes: this runs for every column default of a large database.
            var bytes = sql.utf8.filter { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
            while bytes.first == UInt8(ascii: "("), bytes.last == UInt8(ascii: ")") {
                bytes.removeFirst()
                bytes.removeLast()
            }
            func starts(_ prefix: StaticString) -> Bool { bytes.starts(with: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)) }
            if bytes.elementsEqual("CURRENT_TIMESTAMP".utf8) || bytes.elementsEqual("CURRENT_DATE".utf8) { return true }
            // `strftime('%Y-...', 'now')`: the last argument, before the closing parenthesis.
            while bytes.last == UInt8(ascii: ")") { bytes.removeLast() }
            return (starts("DATETIME(") || starts("STRFTIME(") || starts("DATE(")) && bytes.reversed().starts(with: "'WON'".utf8)
        }

        /// `CURRENT_DATE` or `date('now')`: the day alone, as a `dateOnly` column's default is written.
        static func isCurrentDay(_ sql: String) -> Bool {
            let compact = sql.lowercased().filter { !$0.isWhitespace }.trimmingCharacters(in: CharacterSet(charactersIn: "()"))
            return compact == "current_date" || compact == "date('now'"
        }

        /// A version-4 UUID built from `randomblob`, as schemagen's `uuid` default writes it.
        static func isRandomUUID(_ sql: String) -> Bool {
            let lower = sql.lowercased()
            return lower.contains("randomblob") && lower.contains("'-4'")
        }

        func hexBytes(_ hex: String) -> [UInt8]? {
            let characters = Array(hex)
            guard characters.count % 2 == 0 else { return nil }
            var bytes: [UInt8] = []
            for index in stride(from: 0, to: characters.count, by: 2) {
                guard let byte = UInt8(String(characters[index...index + 1]), radix: 16) else { return nil }
                bytes.append(byte)
            }
            return bytes
        }
    }
}
