import CodeGeneration
import Diagnostics
import MigrationFiles
import RelationalModel
import SchemaKit
import SchemaMetadata

// A synced schema's previous version, for the generated code a sync server serves the devices
// of that version with (`<Schema>Schema.previousVersion`).
extension SchemaHistory {
    /// Diagnostic codes of a synced schema's previous version.
    public enum SyncVersionCode: String, DiagnosticCode {
        /// Something the schema syncs does not exist in the previous version: devices of that
        /// version do not sync it.
        case notInPreviousVersion = "sync-not-in-previous-version"
    }

    /// A synced schema's previous version, as its migration recorded it, for the generated code
    /// a sync server serves its devices with; `sync:` carried from this version where it had
    /// none. Nil for a schema that does not sync, or has no recorded earlier version.
    ///
    ///     let (previous, warnings) = history.previousVersion(of: schema, migrations: migrations)
    public func previousVersion(of schema: Schema, migrations: [MigrationScript]) -> (version: TemplateContext.PreviousVersion?, diagnostics: [Diagnostic]) {
        guard let sync = schema.sync else { return (nil, []) }
        guard var previous = versions.last(where: { $0.schema.version < schema.version })?.schema else { return (nil, []) }
        var diagnostics: [Diagnostic] = []
        if previous.sync == nil {
            let (carried, left) = sync.carried(from: schema, to: previous)
            previous.sync = carried.entities.isEmpty ? nil : carried
            let at = SourceLocation(file: schema.sourcePath, line: 1, column: 1)
            diagnostics = left.map { reason in
                Diagnostic(
                    .warning, code: SyncVersionCode.notInPreviousVersion,
                    message: "sync: \(reason), so its devices on version \(previous.version) do not sync it while both versions are served", at: at)
            }
        }
        guard previous.sync != nil else { return (nil, diagnostics) }
        // The migrations that bring a database to it: up to the first that goes past it.
        let count = migrations.firstIndex { script in ((try? MigrationHeader.parse(script.up))?.toVersion ?? script.version) > previous.version } ?? migrations.count
        let version = TemplateContext.PreviousVersion(schema: previous, model: SnapshotBuilder.snapshot(of: previous), migrationCount: count)
        return (version, diagnostics)
    }

}
