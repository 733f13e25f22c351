import Foundation
import TestSupport
import Testing

/// Generated code follows the project's `.swift-format` configuration, so committed models
/// and a user's project lint clean with it: checked on a schema made to hit the templates'
/// edges (a one-column entity, no relationships or indexes, long relationship lines that must
/// break, many columns that wrap, migrations embedded as long strings).
@Suite(.blocking) struct GeneratedCodeFormatTests {
    static let schema = """
        schema: Edges
        version: 1
        entities:
          Tag:
            attributes:
              label: String
          WarehouseInventoryReconciliationEntry:
            attributes:
              firstMeasurementTakenByTheNightShiftSupervisor: Double
              secondMeasurementTakenByTheMorningShiftSupervisor: Double?
              reconciliationCommentWrittenByTheAuditingDepartment: {type: String, unique: true}
              a: Int
              b: Int
              c: Int
              d: Int
              e: Int
              f: Int
              g: Int
              h: Int
            relationships:
              associatedInventoryAuditorsResponsibleForThisReconciliation: {to: "[InventoryAuditorWithCertification]", inverse: reconciliationEntriesTheAuditorHasSignedOff, maxCount: 5}
          InventoryAuditorWithCertification:
            attributes:
              name: String
            relationships:
              reconciliationEntriesTheAuditorHasSignedOff: {to: "[WarehouseInventoryReconciliationEntry]", inverse: associatedInventoryAuditorsResponsibleForThisReconciliation}

        """

    @Test func generatedCodeLintsCleanUnderTheProjectConfiguration() throws {
        let folder = temporaryFolder()
        let schemaFile = folder.appendingPathComponent("Edges.yaml")
        try Self.schema.write(to: schemaFile, atomically: true, encoding: .utf8)
        let models = folder.appendingPathComponent("Models")
        let generate = try BuiltTool("schemagen").run(["generate", "--schema", schemaFile.path, "--output", models.path, "--migrations", folder.appendingPathComponent("Migrations").path], in: folder)
        #expect(generate.status == 0, "\(generate.output)\(generate.error)")
        let metadata = try String(contentsOf: models.appendingPathComponent("Edges/Edges+Metadata.swift"), encoding: .utf8)
        #expect(metadata.contains("RelationshipDescriptor(\n"), "a relationship line over the width is broken as swift-format breaks it")

        let lint = try runProgram("swift", ["format", "lint", "--strict", "--configuration", repositoryRoot.path + "/.swift-format", "--recursive", models.path], in: folder)
        #expect(lint.status == 0 && lint.output.isEmpty, "\(lint.output)")
    }
}
