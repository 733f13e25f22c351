import SchemaMetadata

/// A changed row as an engine's change triggers wrote it (where there is no row-change hook):
/// every column's value before and after, in the table's column order. The recorder reads it as
/// if the hook had seen the change.
public struct RowImage: ChangedRow, Sendable {
    /// Whether the row was inserted, updated or deleted.
    public let operation: RowChangeOperation
    /// The implicit key before the change, or 0 (see `init`).
    public let oldRowID: Int64
    /// The implicit key after the change, or 0 (see `init`).
    public let newRowID: Int64
    /// The row before an update or delete (empty for an insert).
    public let oldValues: [StoredValue]
    /// The row after an insert or update (empty for a delete).
    public let newValues: [StoredValue]
    /// Whether the update changed columns outside the image (the whole row differs where the
    /// image's columns do not).
    public let changesColumnsNotShown: Bool

    /// An image of one change; `oldRowID`/`newRowID` are the implicit key where the table has
    /// one (SQLite's rowid, PostgreSQL's `id`), else 0.
    ///
    ///     RowImage(operation: .insert, oldRowID: 0, newRowID: 7, oldValues: [], newValues: row)
    public init(
        operation: RowChangeOperation, oldRowID: Int64, newRowID: Int64, oldValues: [StoredValue], newValues: [StoredValue], changesColumnsNotShown: Bool = false
    ) {
        self.operation = operation
        self.oldRowID = oldRowID
        self.newRowID = newRowID
        self.oldValues = oldValues
        self.newValues = newValues
        self.changesColumnsNotShown = changesColumnsNotShown
    }

    /// A column's value before the change (NULL past the image's end).
    public func old(_ column: Int) -> StoredValue { column < oldValues.count ? oldValues[column] : .null }
    /// A column's value after the change (NULL past the image's end).
    public func new(_ column: Int) -> StoredValue { column < newValues.count ? newValues[column] : .null }
    /// Whether an update changed the column's value.
    public func changes(_ column: Int) -> Bool { old(column) != new(column) }
}
