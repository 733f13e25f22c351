import Foundation
import PersistentStoreSQLite
import PluginExample

/// `bookmarks`: the smallest app on the store, with models the build plugin generates from
/// `Bookmarks.yaml`, on SQLite only. It imports `PersistentStoreSQLite` alone, so it links
/// neither libpq nor any tool module (LinkageTests checks this binary for it).
///
///     bookmarks shelf.sqlite add Reading https://swift.org "Swift" language
///     bookmarks shelf.sqlite list language
///
/// Exit status: 0 done; 1 a database error; 2 usage.
@main
struct BookmarksMain {
    static let usage = "usage: bookmarks DATABASE add FOLDER URL TITLE [TAG...] | bookmarks DATABASE list [TAG]\n"

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else { fail(usage, status: 2) }
        do {
            let store = try Store(path: arguments[0], schema: BookmarksSchema.descriptor, migrations: BookmarksSchema.migrations)
            switch (arguments[1], arguments.count) {
            case ("add", 5...):
                guard let url = URL(string: arguments[3]), url.scheme != nil else { fail("bookmarks: '\(arguments[3])' is not a URL\n", status: 2) }
                guard let folderID = try await store.insert(Folder(title: arguments[2])).id else { fail("bookmarks: the folder got no key\n", status: 1) }
                let bookmark = Bookmark(url: url, title: arguments[4], tags: Array(arguments.dropFirst(5)), folderID: folderID)
                try await store.insert(bookmark)
            case ("list", 2...3):
                let folders = Dictionary(uniqueKeysWithValues: try await store.fetch(Folder.self).compactMap { folder in folder.id.map { ($0, folder.title) } })
                for bookmark in try await store.fetch(Bookmark.self, sortBy: [SortDescriptor(\.title)]) where arguments.count == 2 || bookmark.tags.contains(arguments[2]) {
                    print("\(folders[bookmark.folderID] ?? "-")\t\(bookmark.title)\t\(bookmark.url.absoluteString)\t\(bookmark.tags.joined(separator: ","))")
                }
            default:
                fail(usage, status: 2)
            }
        } catch {
            fail("bookmarks: error: \(error)\n", status: 1)
        }
    }

    static func fail(_ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data(message.utf8))
        exit(status)
    }
}
