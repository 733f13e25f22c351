import Diagnostics
import Foundation
import MigrationPlanner
import SchemaMetadata

/// One migration as the migrator runs it: its SQL both ways and the checksum recorded when
/// it is applied.
public struct MigrationScript: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var up: String
    public var down: String
    /// Where it came from, for messages (`Migrations/Flights/0002_add_x.up.sql`).
    public var upFile: String
    public var downFile: String

    public init(version: Int, name: String, up: String, down: String, upFile: String? = nil, downFile: String? = nil) {
        self.version = version
        self.name = name
        self.up = up
        self.down = down
        self.upFile = upFile ?? String(format: "%04d_%@.up.sql", version, name)
        self.downFile = downFile ?? String(format: "%04d_%@.down.sql", version, name)
    }

    /// A migration compiled into generated code (`FlightsSchema.migrations`).
    public init(_ embedded: EmbeddedMigration) {
        self.init(version: embedded.version, name: embedded.name, up: embedded.up, down: embedded.down)
    }

    /// SHA-256 of the up SQL: a changed file no longer matches what was applied.
    public var checksum: String { SHA256.hex(up) }

    /// The planner's header marks files that rebuild tables and must run with foreign keys off.
    static func needsForeignKeysOff(_ sql: String) -> Bool { sql.contains("\n-- Rebuilds tables:") || sql.hasPrefix("-- Rebuilds tables:") }
    /// The planner's header marks down files that cannot restore data.
    public var downLosesData: Bool { down.contains("\n-- Loses data") }

    public var label: String { String(format: "%04d_%@", version, name) }
}

/// Reads a schema's migration folder after checking its manifest.
public enum MigrationScriptLoader {
    /// The folder's migrations in order; tampering stops here with the manifest's diagnostics.
    public static func load(directory path: String) throws(MigratorError) -> [MigrationScript] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
            throw .noMigrations(path)
        }
        let directory = MigrationDirectory(path: path)
        let problems = directory.verify()
        guard problems.isEmpty else { throw .tampered(problems) }
        var scripts: [MigrationScript] = []
        for entry in directory.entries() {
            let upFile = path + "/" + entry.upFile, downFile = path + "/" + entry.downFile
            guard let up = try? String(contentsOfFile: upFile, encoding: .utf8), let down = try? String(contentsOfFile: downFile, encoding: .utf8) else {
                throw .unreadable(upFile)
            }
            scripts.append(MigrationScript(version: entry.number, name: entry.name, up: up, down: down, upFile: upFile, downFile: downFile))
        }
        return scripts
    }
}
