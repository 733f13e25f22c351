import Foundation

/// One numbered migration: its SQL both ways and where it came from. The one record of a
/// migration everywhere: read from a migration folder by the migrator, compiled into generated
/// code (`FlightsSchema.migrations`) so an application needs no Migrations folder, and handed to
/// templates by the generator.
public struct MigrationScript: Sendable, Hashable {
    /// Its number, from 1: the schema version it brings the database to.
    public var version: Int
    /// Its name after the number: `add_airports_elevation`.
    public var name: String
    /// The SQL that applies it.
    public var up: String
    /// The SQL that reverts it.
    public var down: String
    /// Where it came from, for messages (`Migrations/Flights/0002_add_x.up.sql`).
    public var upFile: String
    /// Where the down SQL came from, for messages.
    public var downFile: String
    /// The tables after this migration, each with its column names, from the migration's
    /// snapshot: what `migrate baseline` and `repair` look for in a database. Nil where no
    /// snapshot travels with the migration (the copies compiled into generated code).
    public var objects: [String: [String]]?

    /// A migration; the file names default to `NNNN_name.up.sql` and `.down.sql`.
    public init(
        version: Int, name: String, up: String, down: String, upFile: String? = nil, downFile: String? = nil,
        objects: [String: [String]]? = nil
    ) {
        self.objects = objects
        self.version = version
        self.name = name
        self.up = up
        self.down = down
        self.upFile = upFile ?? String(format: "%04d_%@.up.sql", version, name)
        self.downFile = downFile ?? String(format: "%04d_%@.down.sql", version, name)
    }

    /// `0002_add_airports_elevation`.
    public var label: String { String(format: "%04d_%@", version, name) }
}

/// The name generated code uses for its embedded migrations (`[EmbeddedMigration]`): the same type.
public typealias EmbeddedMigration = MigrationScript
