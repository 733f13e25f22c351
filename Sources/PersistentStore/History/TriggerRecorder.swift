import SchemaMetadata
import SQLiteKit

/// Records changes with temporary triggers where SQLite lacks the pre-update hook.
enum TriggerRecorder {
    static func install(on connection: SQLiteConnection, recorder: ChangeRecorder, schema: SchemaDescriptor) throws(StoreError) {
        throw .historyDisabled(schema.name)
    }
}
