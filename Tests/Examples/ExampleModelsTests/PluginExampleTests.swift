import Foundation
import PersistentStoreCore
import PersistentStoreSQLite
import PluginExample
import SchemaMetadata
import Testing

/// `PluginExample` gets its models from `Bookmarks.yaml` at build time through SchemagenPlugin.
@Suite struct PluginExampleTests {
    @Test func pluginGeneratedModelsAreUsable() throws {
        let old = Bookmark(url: URL(string: "https://swift.org")!, title: "Swift", addedAt: Date(timeIntervalSince1970: 1), tags: ["lang"], folderID: 1)
        let new = Bookmark(url: URL(string: "https://sqlite.org")!, title: "SQLite", addedAt: Date(timeIntervalSince1970: 2), tags: ["db", "lang"], folderID: 1)
        let elsewhere = Bookmark(url: URL(string: "https://example.com")!, title: "Other", tags: ["lang"], folderID: 2)
        #expect(BookmarkShelf.tagged("lang", in: [old, new, elsewhere], folder: 1).map(\.title) == ["SQLite", "Swift"])
        #expect(BookmarkShelf.table == "bookmark")
        #expect(BookmarksSchema.descriptor.entity(named: "Folder")?.relationship(named: "bookmarks")?.deleteRule == .cascade)
        #expect(try JSONDecoder().decode(Bookmark.self, from: JSONEncoder().encode(new)) == new)
        let patch = Patch<Bookmark>().setting(\.title, to: .set("SQLite docs"))
        var edited = new
        try patch.apply(to: &edited)
        #expect(edited.title == "SQLite docs")
    }

    /// The plugin embeds the committed migrations, so its models open a store like committed ones.
    @Test func pluginModelsOpenAStoreWithTheirEmbeddedMigrations() async throws {
        #expect(BookmarksSchema.migrations.map(\.version) == [1])
        let store = try Store(path: nil, schema: BookmarksSchema.descriptor, migrations: BookmarksSchema.migrations)
        let folder = try await store.insert(Folder(title: "Reading"))
        try await store.insert(Bookmark(url: URL(string: "https://sqlite.org")!, title: "SQLite", tags: ["db"], folderID: folder.id!))
        #expect(try await store.fetch(Bookmark.self).map(\.title) == ["SQLite"])
        try await store.delete(folder)
        #expect(try await store.count(Bookmark.self) == 0, "the cascade from the schema applies")
    }
}
