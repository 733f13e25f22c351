import Foundation
import TestSupport
import Testing

/// The SwiftData shim checks what Apple's SDK would: code written to Apple's documented API
/// type-checks, and a misspelled option, a stored static of a non-Sendable type, `@Model` on a
/// struct or a wrong argument label fail, so a check built on it can fail.
@Suite struct SwiftDataShimTests {
    static let model = """
        import Foundation
        import SwiftData

        enum ShopSchemaV1: VersionedSchema {
            static var versionIdentifier: Schema.Version { Schema.Version(1, 0, 0) }
            static var models: [any PersistentModel.Type] { [Item.self, Tag.self] }

            @Model
            final class Item {
                #Unique<Item>([\\.name], [\\.name, \\.count])
                #Index<Item>([\\.count])
                @Attribute(.unique, .spotlight, originalName: "title") var name: String
                @Attribute(.externalStorage) var photo: Data?
                @Attribute(.allowsCloudEncryption, .preserveValueOnDeletion) var secret: String?
                var count: Int
                @Relationship(deleteRule: .cascade, minimumModelCount: 0, maximumModelCount: 10, inverse: \\Tag.item) var tags: [Tag] = []
                @Transient var scratch: Int = 0
                init(name: String, count: Int) {
                    self.name = name
                    self.count = count
                }
            }

            @Model
            final class Tag {
                var label: String
                var item: Item?
                init(label: String) { self.label = label }
            }
        }

        typealias Item = ShopSchemaV1.Item

        enum ShopMigrationPlan: SchemaMigrationPlan {
            static var schemas: [any VersionedSchema.Type] { [ShopSchemaV1.self] }
            static var stages: [MigrationStage] {
                [
                    .custom(
                        fromVersion: ShopSchemaV1.self, toVersion: ShopSchemaV1.self, willMigrate: nil,
                        didMigrate: { context in
                            for item in try context.fetch(FetchDescriptor<ShopSchemaV1.Item>()) { item.count = max(item.count, 0) }
                            try context.save()
                        })
                ]
            }
        }

        """

    @Test func codeWrittenToTheDocumentedAPITypeChecksAndMistakesDoNot() async throws {
        let cases: [(name: String, text: String, error: String?)] = [
            ("documented", Self.model, nil),
            ("misspelled option", Self.model.replacingOccurrences(of: ".spotlight", with: ".spotlite"), "has no member 'spotlite'"),
            ("wrong label", Self.model.replacingOccurrences(of: "deleteRule: .cascade", with: "onDelete: .cascade"), "error:"),
            ("wrong delete rule", Self.model.replacingOccurrences(of: "deleteRule: .cascade", with: "deleteRule: .restrict"), "restrict"),
            (
                "stored static stages",
                Self.model.replacingOccurrences(of: "static var stages: [MigrationStage] {", with: "static let stages: [MigrationStage] = {").replacingOccurrences(
                    of: "        ]\n    }\n}", with: "        ]\n    }()\n}"), "is not concurrency-safe"
            ),
            ("model on a struct", Self.model.replacingOccurrences(of: "final class Tag {", with: "struct Tag {"), "error:"),
        ]
        for entry in cases {
            let check = try await offThePool { try SwiftDataShim.typecheck(["Shop.swift": entry.text]) }
            if let error = entry.error {
                #expect(!check.passed, "\(entry.name) should fail")
                #expect(check.output.contains(error), "\(entry.name): \(check.output)")
            } else {
                #expect(check.passed, "\(entry.name): \(check.output)")
            }
        }
    }
}
