import Foundation
import SchemaMetadata

/// Uses the models the plugin generated from `Bookmarks.yaml` in this target.
public enum BookmarkShelf {
    /// Bookmarks of a folder whose tags include `tag`, newest first.
    public static func tagged(_ tag: String, in bookmarks: [Bookmark], folder: Int64) -> [Bookmark] {
        bookmarks.filter { $0.folderID == folder && $0.tags.contains(tag) }.sorted { $0.addedAt > $1.addedAt }
    }

    /// The table the runtime store keeps bookmarks in, from the generated metadata.
    public static var table: String { Bookmark.entity.table }
}
