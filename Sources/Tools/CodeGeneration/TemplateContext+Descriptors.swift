import RelationalModel
import SchemaKit
import SchemaMetadata

/// The schema's runtime metadata as values: what the generated `<Schema>Schema` metadata file
/// declares, for tools that open a store without compiled models (the studio). The metadata
/// file's column and relationship lines are printed from these same values, so the two cannot
/// differ.
extension TemplateContext {
    /// The schema's descriptor, as the generated metadata's `descriptor` holds it.
    ///
    ///     let descriptor = TemplateContext(schema: schema, sourceFile: "Flights.yaml").schemaDescriptor
    public var schemaDescriptor: SchemaDescriptor {
        SchemaDescriptor(
            name: schema.name, version: schema.version, recordsHistory: schema.recordsHistory, recordsInsertValues: schema.recordsInsertValues,
            entities: schema.entities.map(entityDescriptor))
    }

    func entityDescriptor(_ entity: Entity) -> EntityDescriptor {
        let parts = EntityParts(entity, table: table(forEntity: entity.name))
        return EntityDescriptor(
            name: entity.name, table: entity.tableName, renamedFrom: entity.renamedFrom, primaryKey: entity.primaryKeyColumns, hasImplicitKey: parts.hasImplicitKey,
            columns: parts.stored.map { attribute in columnMetadata(attribute, in: parts, column: parts.table?.columns.first { $0.name == attribute.columnName }).descriptor },
            relationships: entity.relationships.map { relationshipDescriptor($0, storesKey: !$0.isToMany && !$0.foreignKeyColumns.isEmpty) },
            indexes: (parts.table?.indexes ?? []).map { index in
                IndexDescriptor(name: index.name, columns: index.columns, kind: index.isFullText ? .fullText : index.isUnique ? .unique : .plain)
            }, sync: syncDescriptor(entity))
    }

    /// How the entity syncs, from the schema's `sync:`; nil when it does not.
    func syncDescriptor(_ entity: Entity) -> SyncDescriptor? {
        guard let synced = schema.sync?.entity(named: entity.name) else { return nil }
        let scope: SyncDescriptor.Scope =
            switch synced.scope {
            case .all: .all
            case .user(let path): .user(path: path)
            }
        // Exhaustive: a policy the schema language gains must be carried here, not defaulted.
        let conflicts: SyncDescriptor.Conflicts =
            switch synced.conflicts {
            case .lastWriterWins: .lastWriterWins
            case .serverWins: .serverWins
            }
        return SyncDescriptor(scope: scope, conflicts: conflicts, counters: synced.counters)
    }

    /// The entity's sync declaration as generated metadata spells it:
    /// `SyncDescriptor(scope: .user(path: ["owner"]))`; nil when it does not sync.
    func syncLiteral(of entity: Entity) -> String? {
        guard let sync = syncDescriptor(entity) else { return nil }
        let scope =
            switch sync.scope {
            case .all: ".all"
            case .user(let path): ".user(path: [" + path.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "])"
            }
        var arguments = ["scope: " + scope]
        if sync.conflicts != .lastWriterWins { arguments.append("conflicts: ." + sync.conflicts.rawValue) }
        if !sync.counters.isEmpty { arguments.append("counters: [" + sync.counters.map(SwiftSyntax.stringLiteral).joined(separator: ", ") + "]") }
        return "SyncDescriptor(" + arguments.joined(separator: ", ") + ")"
    }

    /// An attribute's column in the compact form metadata writes (`ColumnDescriptor.attribute`).
    struct ColumnMetadata {
        var property: String
        var storage: StorageKind
        var swiftType: String
        var column: String?
        var jsonKey: String?
        var flags: ColumnDescriptor.Flags
        var renamedFrom: String?
        var movedFrom: String?
        var defaultValue: DefaultValueDescriptor?

        var descriptor: ColumnDescriptor {
            .attribute(property, storage, swiftType, column: column, jsonKey: jsonKey, flags, renamedFrom: renamedFrom, movedFrom: movedFrom, default: defaultValue)
        }
    }

    func columnMetadata(_ attribute: Attribute, in parts: EntityParts, column: ColumnSnapshot?) -> ColumnMetadata {
        var flags: ColumnDescriptor.Flags = []
        if attribute.isOptional { flags.insert(.optional) }
        if isKeyMember(attribute.name, of: parts.entity) { flags.insert(.primaryKey) }
        if attribute.isUnique { flags.insert(.unique) }
        if attribute.isIndexed { flags.insert(.indexed) }
        if attribute.isSearchable { flags.insert(.searchable) }
        if attribute.usesExternalStorage { flags.insert(.externalStorage) }
        if attribute.isEncrypted && !attribute.encryptsDeterministically { flags.insert(.encrypted) }
        if attribute.encryptsDeterministically { flags.insert(.deterministic) }
        if attribute.preservesValueOnDeletion { flags.insert(.preservesValueOnDeletion) }
        return ColumnMetadata(
            property: attribute.name, storage: column?.kind ?? SnapshotBuilder.kind(of: attribute, in: schema), swiftType: SwiftSyntax.typeName(attribute.type),
            column: attribute.columnName != attribute.name ? attribute.columnName : nil, jsonKey: attribute.jsonKey != attribute.name ? attribute.jsonKey : nil,
            flags: flags, renamedFrom: attribute.renamedFrom, movedFrom: attribute.movedFromText, defaultValue: column.flatMap(defaultDescriptor))
    }

    /// The column default as a descriptor, from the relational model's.
    func defaultDescriptor(_ column: ColumnSnapshot) -> DefaultValueDescriptor? {
        guard let value = column.defaultValue else { return nil }
        switch value {
        case .null: return .null
        case .now: return .now
        case .uuid: return .generatedUUID
        default: return .literal(value.canonicalText(kind: column.kind))
        }
    }

    func relationshipDescriptor(_ relationship: Relationship, storesKey: Bool) -> RelationshipDescriptor {
        RelationshipDescriptor(
            name: relationship.name, target: relationship.target, isToMany: relationship.isToMany, isOptional: relationship.isOptional, inverse: relationship.inverse,
            deleteRule: DeleteRule(rawValue: relationship.deleteRule.rawValue) ?? .nullify, minCount: relationship.minCount, maxCount: relationship.maxCount,
            foreignKeyColumns: relationship.foreignKeyColumns, joinTable: relationship.joinTableName, renamedFrom: relationship.renamedFrom,
            keyProperty: storesKey ? Naming.keyProperty(of: relationship.name) : nil, joinColumns: relationship.joinColumns, joinTargetColumns: relationship.joinTargetColumns)
    }
}
