import Diagnostics
import TestSupport
import Testing

@testable import SchemaKit

/// `sync:`: each synced entity's scope, conflict policy and counters are read, and what sync
/// needs of the schema is checked, each rule broken reported at its line.
@Suite struct SyncDeclarationTests {
    static let lists = """
        schema: Lists
        version: 1
        entities:
          List:
            attributes:
              id: {type: UUID, primaryKey: true, default: uuid}
              owner: String
            relationships:
              items: {to: "[Item]", inverse: list, deleteRule: cascade}
          Item:
            attributes:
              id: {type: UUID, primaryKey: true, default: uuid}
              title: String
              likes: {type: Int, default: 0}
            relationships:
              list: {to: List, inverse: items}
          Category:
            attributes:
              id: {type: UUID, primaryKey: true, default: uuid}
              name: String

        """

    func load(_ text: String) -> (schema: Schema?, found: [String]) {
        let result = SchemaLoader.load(source: SourceFile(path: "Lists.yaml", text: text))
        return (result.schema, result.diagnostics.map { "\($0.location?.line ?? 0):\($0.location?.column ?? 0) \($0.code)" })
    }

    @Test func scopesPoliciesAndCountersAreRead() throws {
        let text =
            Self.lists + """
                sync:
                  List: {scope: owner == $user}
                  Item: {scope: list.owner == $user, conflicts: serverWins, counters: [likes]}
                  Category: {scope: all}

                """
        let (schema, found) = load(text)
        #expect(found.isEmpty, "\(found)")
        let sync = try #require(schema?.sync)
        #expect(sync.entities.map(\.entity) == ["List", "Item", "Category"])
        #expect(sync.entity(named: "List")?.scope == .user(path: ["owner"]))
        let item = try #require(sync.entity(named: "Item"))
        #expect(item.scope == .user(path: ["list", "owner"]) && item.conflicts == .serverWins && item.counters == ["likes"])
        #expect(sync.entity(named: "Category")?.scope == .all && sync.entity(named: "List")?.conflicts == .lastWriterWins)
        #expect(sync.yamlText == "{List: {scope: \"owner == $user\"}, Item: {scope: \"list.owner == $user\", conflicts: serverWins, counters: [likes]}, Category: {scope: \"all\"}}")
        #expect(load(Self.lists).schema?.sync == nil, "no sync block: nothing syncs")
    }

    /// The database's integer key cannot be made on a device offline, and a String key made on
    /// two devices may collide: only a UUID key syncs.
    @Test func aSyncedEntityNeedsAKeyADeviceCanMake() {
        let text = """
            schema: S
            version: 1
            entities:
              Note:
                attributes:
                  owner: String
              Tag:
                attributes:
                  code: {type: String, primaryKey: true}
                  owner: String
            sync:
              Note: {scope: owner == $user}
              Tag: {scope: owner == $user}

            """
        #expect(load(text).found == ["12:3 sync", "13:3 sync"])
    }

    /// A device holds only what syncs: a link to a record it never gets is refused, at the
    /// relationship.
    @Test func aRelationshipToAnEntityThatDoesNotSyncIsRefused() {
        let text =
            Self.lists + """
                sync:
                  Item: {scope: list.owner == $user}

                """
        #expect(load(text).found == ["16:7 sync"])
    }

    /// Links kept in a join table (many-to-many, or to-many without an inverse) do not sync:
    /// refused at each relationship, with the way out (an entity per link), not dropped unseen.
    @Test func linksInAJoinTableAreRefused() {
        let text = """
            schema: S
            version: 1
            entities:
              Item:
                attributes:
                  id: {type: UUID, primaryKey: true, default: uuid}
                relationships:
                  tags: {to: "[Tag]", inverse: items}
                  related: {to: "[Item]"}
                  notes: {to: "[Note]", inverse: item, deleteRule: cascade}
              Tag:
                attributes:
                  id: {type: UUID, primaryKey: true, default: uuid}
                relationships:
                  items: {to: "[Item]", inverse: tags}
              Note:
                attributes:
                  id: {type: UUID, primaryKey: true, default: uuid}
                relationships:
                  item: {to: Item, inverse: notes}
            sync:
              Item: {scope: all}
              Tag: {scope: all}
              Note: {scope: all}

            """
        // `related` has no inverse: a warning of its own as well.
        #expect(load(text).found == ["8:7 sync", "9:7 missing-inverse", "9:7 sync", "15:7 sync"], "one-to-many syncs as the key its to-one side holds")
        let refused = SchemaLoader.load(source: SourceFile(path: "S.yaml", text: text)).diagnostics.filter { $0.code == "sync" }
        #expect(refused.allSatisfy { $0.message.contains("make each link an entity of its own") })
        #expect(refused.first { $0.location?.line == 9 }?.message.contains("to-many without an inverse") == true)
    }

    @Test func eachMistakeIsReportedAtItsPlace() {
        let text =
            Self.lists + """
                sync:
                  List: {}
                  Item: {scope: list.keeper == $user, conflicts: newest, counters: [title, gone]}
                  Category: {scope: name != $user}
                  Shelf: {scope: all}

                """
        #expect(
            load(text).found == [
                "22:3 missing-key", "23:17 unknown-member", "23:50 invalid-value", "23:69 invalid-value", "23:76 unknown-member", "24:21 invalid-value",
                "25:3 unknown-entity",
            ])
    }

    /// The declaration carried to the version before: names through `renamedFrom`, the scope's
    /// path step by step; what that version lacks is left out, and said.
    @Test func theDeclarationIsCarriedToThePreviousVersionUnderItsNames() throws {
        let older = try #require(load(Self.lists).schema)
        let newer = try #require(
            load(
                Self.lists.replacingOccurrences(of: "version: 1", with: "version: 2")
                    .replacingOccurrences(of: "      owner: String", with: "      ownerID: {type: String, renamedFrom: owner}")
                    .replacingOccurrences(of: "      likes: {type: Int, default: 0}", with: "      hearts: {type: Int, default: 0, renamedFrom: likes}\n      stars: {type: Int, default: 0}")
                    .replacingOccurrences(of: "  Category:", with: "  Tag:\n    renamedFrom: Category")
                    + "  Note:\n    attributes:\n      id: {type: UUID, primaryKey: true, default: uuid}\n      owner: String\n"
                    + "sync:\n  List: {scope: ownerID == $user}\n  Item: {scope: list.ownerID == $user, counters: [hearts, stars]}\n  Tag: {scope: all}\n  Note: {scope: owner == $user}\n"
            ).schema)
        let (carried, left) = try #require(newer.sync).carried(from: newer, to: older)
        #expect(carried.entities.map(\.entity) == ["List", "Item", "Category"])
        #expect(carried.entity(named: "List")?.scope == .user(path: ["owner"]))
        #expect(carried.entity(named: "Item")?.scope == .user(path: ["list", "owner"]))
        #expect(carried.entity(named: "Item")?.counters == ["likes"], "stars is new in version 2")
        #expect(carried.entity(named: "Category")?.scope == .all)
        #expect(left == ["Note: version 1 has no entity Note"])
    }
}
