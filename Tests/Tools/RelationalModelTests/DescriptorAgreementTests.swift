import ExampleModels
import Foundation
import MigrationFiles
import RelationalModel
import SchemaMetadata
import TestSupport
import Testing

/// The runtime metadata in generated code and the snapshots the migrations are planned from
/// come from one relational model, so they agree column for column and index for index.
@Suite struct DescriptorAgreementTests {
    static let schemas: [SchemaDescriptor] = [FlightsSchema.descriptor, TodoSchema.descriptor, TasksSchema.descriptor, UsersSchema.descriptor, GarageSchema.descriptor]

    @Test(arguments: schemas.map(\.name))
    func generatedDescriptorMatchesTheNewestSnapshot(_ name: String) throws {
        let descriptor = try #require(Self.schemas.first { $0.name == name })
        let directory = MigrationDirectory(path: repositoryRoot.appendingPathComponent("Migrations/\(name)").path)
        let snapshot = try #require(try directory.latestSnapshot())
        #expect(snapshot.version == descriptor.version)
        for entity in descriptor.entities {
            let table = try #require(snapshot.table(forEntity: entity.name), "\(name).\(entity.name) has no table")
            #expect(table.name == entity.table)
            #expect(table.primaryKey == entity.primaryKey, "\(entity.name) key")
            // Stored attributes, in order, then the to-one keys: the table's columns.
            let keyColumn = entity.hasImplicitKey ? ["id"] : []
            let linkColumns = entity.relationships.filter { !$0.isToMany }.flatMap(\.foreignKeyColumns)
            #expect(keyColumn + entity.columns.map(\.column) + linkColumns == table.columns.map(\.name), "\(entity.name) columns")
            for column in entity.columns {
                let stored = try #require(table.column(named: column.column))
                #expect(stored.kind == column.storage, "\(entity.name).\(column.property) storage")
                #expect(stored.isNullable == column.isOptional, "\(entity.name).\(column.property) nullability")
                #expect(stored.defaultValue.map { $0.canonicalText(kind: stored.kind) } == column.defaultValue.flatMap(Self.text), "\(entity.name).\(column.property) default")
            }
            let indexes = entity.indexes.map { "\($0.name) \($0.columns) \($0.kind)" }
            let snapshotIndexes = table.indexes.map { "\($0.name) \($0.columns) \($0.isFullText ? IndexDescriptor.Kind.fullText : $0.isUnique ? .unique : .plain)" }
            #expect(indexes == snapshotIndexes, "\(entity.name) indexes")
        }
    }

    static func text(_ value: DefaultValueDescriptor) -> String? {
        switch value {
        case .null: "null"
        case .literal(let text): text
        case .now: "now"
        case .generatedUUID: "uuid"
        }
    }
}
