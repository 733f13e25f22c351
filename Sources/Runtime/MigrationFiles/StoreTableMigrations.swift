import SQLDialects
import SchemaMetadata

/// The migrations of the tables the runtime store keeps for itself on PostgreSQL (its change
/// history), shipped with the toolkit the way a library ships its own migrations:
/// `schemagen generate` writes them into `Migrations/SchemagenStore/postgres/` beside the app's,
/// where they are reviewed and committed, and `migrate up` applies them with the rest. A store
/// that opens a database they were not applied to makes the same changes itself, as earlier
/// releases did, so either way ends with the same tables; once they are applied, opening a
/// store changes no table.
///
///     for migration in StoreTableMigrations.postgres { print(migration.entry.upFile) }   // 0001_create_history.up.sql, ...
public enum StoreTableMigrations {
    /// The schema name these migrations are recorded under, and their folder under the
    /// migrations root. No schema of an app may take it.
    public static let schema = "SchemagenStore"

    /// One migration of the store's tables.
    public struct Migration: Sendable, Hashable {
        /// Its number and name in the folder.
        public let entry: MigrationFileName
        /// What the up file says and runs, after its header.
        public let up: String
        /// What the down file says and runs, after its header.
        public let down: String
        /// Whether going down drops rows.
        public let downLosesData: Bool

        /// The up file's text: header, then body.
        public var upText: String {
            MigrationHeader(schema: StoreTableMigrations.schema, dialect: SQLDialectName.postgres.rawValue, direction: .up, fromVersion: entry.number - 1, toVersion: entry.number)
                .text + up
        }

        /// The down file's text: header, then body.
        public var downText: String {
            MigrationHeader(
                schema: StoreTableMigrations.schema, dialect: SQLDialectName.postgres.rawValue, direction: .down, fromVersion: entry.number, toVersion: entry.number - 1,
                losesData: downLosesData
            ).text + down
        }
    }

    /// The history tables, as the store creates them where they are missing (any dialect).
    public static func historyTables(_ dialect: any SQLDialect) -> SQL {
        // Types and the key column are the dialect's own words.
        let text = SQL(verbatim: dialect.columnType(.text)), real = SQL(verbatim: dialect.columnType(.real))
        let integer = SQL(verbatim: dialect.columnType(.integer)), token = SQL(verbatim: dialect.generatedKeyColumn("token"))
        return """
            CREATE TABLE IF NOT EXISTS schemagen_history (
                \(token),
                schema \(text) NOT NULL,
                author \(text),
                committed_at \(real) NOT NULL,
                entities \(text) NOT NULL,
                changes \(text) NOT NULL
            );
            CREATE TABLE IF NOT EXISTS schemagen_history_pruned (
                schema \(text) PRIMARY KEY,
                through \(integer) NOT NULL
            );
            """
    }

    /// The tables a sync server keeps its state in (`SyncServer`), as it creates them where they
    /// are missing (any dialect): each synced record's clocks and the values they stamp, and each
    /// device's last push with its answer and the schema version it was built with.
    public static func syncTables(_ dialect: any SQLDialect) -> SQL {
        let text = SQL(verbatim: dialect.columnType(.text)), real = SQL(verbatim: dialect.columnType(.real))
        let integer = SQL(verbatim: dialect.columnType(.integer))
        return """
            CREATE TABLE IF NOT EXISTS schemagen_sync_records (
                schema \(text) NOT NULL,
                schema_version \(integer) NOT NULL,
                entity \(text) NOT NULL,
                record_key \(text) NOT NULL,
                state \(text) NOT NULL,
                updated_at \(real),
                PRIMARY KEY (schema, schema_version, entity, record_key)
            );
            CREATE TABLE IF NOT EXISTS schemagen_sync_devices (
                schema \(text) NOT NULL,
                device \(text) NOT NULL,
                user_id \(text) NOT NULL,
                schema_version \(integer) NOT NULL,
                sequence \(integer) NOT NULL,
                answer \(text),
                first_seen \(real) NOT NULL,
                last_seen \(real) NOT NULL,
                caught_up_at \(real),
                PRIMARY KEY (schema, device)
            );
            """
    }

    /// The table where a sync server notes the users whose scope a record left (a list given to
    /// another owner), when, at which history token and with which clock the move was stamped,
    /// so that their devices are told to remove it, whichever pull reads the change first (any
    /// dialect).
    public static func syncDepartureTable(_ dialect: any SQLDialect) -> SQL {
        let text = SQL(verbatim: dialect.columnType(.text)), real = SQL(verbatim: dialect.columnType(.real))
        let integer = SQL(verbatim: dialect.columnType(.integer))
        return """
            CREATE TABLE IF NOT EXISTS schemagen_sync_departures (
                schema \(text) NOT NULL,
                schema_version \(integer) NOT NULL,
                entity \(text) NOT NULL,
                record_key \(text) NOT NULL,
                user_id \(text) NOT NULL,
                left_at \(real) NOT NULL,
                history_token \(integer) NOT NULL,
                moved_clock \(text),
                PRIMARY KEY (schema, schema_version, entity, record_key, user_id)
            );
            """
    }

    /// PostgreSQL's ordering of history tokens by transaction id, which `0002_order_history_tokens` sets.
    static let postgresOrdering = PostgresDialect().historyTokenOrdering!

    /// Ordered history tokens start here.
    @available(*, deprecated, message: "use PostgresDialect().historyTokenOrdering?.base")
    public static var orderedTokenBase: Int64 { postgresOrdering.base }

    /// The token column's default once tokens are ordered by transaction id.
    @available(*, deprecated, message: "use PostgresDialect().historyTokenOrdering?.columnDefault")
    public static var orderedTokenDefault: String { postgresOrdering.columnDefault }

    /// True where the token column already has that default (an SQL condition).
    @available(*, deprecated, message: "use PostgresDialect().historyTokenOrdering?.isInPlace")
    public static var historyTokensOrdered: String { postgresOrdering.isInPlace }

    /// The statement that orders history tokens by transaction id.
    @available(*, deprecated, message: "use PostgresDialect().historyTokenOrdering?.setInPlace")
    public static var orderHistoryTokens: String { postgresOrdering.setInPlace }

    /// The migrations, in order.
    public static let postgres: [Migration] = [
        Migration(
            entry: MigrationFileName(number: 1, name: "create_history"),
            up: """
                -- The runtime store's change history (`history:` in a schema, on by default), created as the
                -- store creates it when it opens a database without it. Every schema's store shares these tables.
                -- Their names are unqualified, as the store's are: they go into the first schema of the
                -- connecting role's search_path, and belong to that role. A store connecting as another role
                -- needs SELECT, INSERT, UPDATE and DELETE on both (grant them in a migration of your own).
                -- Generated by schemagen for review; `migrate up` applies it.

                \(historyTables(SQLDialectName.postgres.dialect))

                """,
            down: """
                -- Drops the change history of every schema in this database (so `migrate down` asks for
                -- --allow-destructive). Stop the stores first: a store still open fails to commit until it
                -- opens again, one that opens creates the tables again, empty, and observers start over.

                DROP TABLE IF EXISTS schemagen_history_pruned;
                DROP TABLE IF EXISTS schemagen_history;

                """,
            downLosesData: true),
        Migration(
            entry: MigrationFileName(number: 2, name: "order_history_tokens"),
            up: """
                -- History tokens ordered by transaction id, so writers no longer queue on one lock until
                -- their commit: a token is 2^62 plus the id of the transaction that wrote the row, and a reader
                -- only moves past tokens whose transactions have all finished. Tokens given before stay
                -- below every new one, so observers and saved tokens go on where they were.
                -- Where the column already has this default (a store of this release opened the database
                -- first), nothing is done: no lock, no ownership needed. Otherwise the ALTER needs the table's
                -- owner and its exclusive lock: while it waits for that lock (at most --ddl-lock-timeout, 5 s by
                -- default, then it fails and can be run again), every history write and read of the database
                -- queues behind it, and standbys replay the same lock.

                DO $schemagen$
                BEGIN
                    IF NOT \(postgresOrdering.isInPlace) THEN
                        \(postgresOrdering.setInPlace)
                    END IF;
                END $schemagen$;

                """,
            down: """
                -- Does nothing: the column keeps its ordered tokens, and going back to the identity column
                -- would hand out tokens that stores of this release read out of order. Stores of earlier
                -- releases work with ordered tokens (they take their lock, and the column's default gives
                -- their rows ordered tokens), but while stores of this release write, their readers can miss
                -- a transaction that commits late.

                SELECT 1;

                """,
            downLosesData: false),
        Migration(
            entry: MigrationFileName(number: 3, name: "create_sync_state"),
            up: """
                -- Where a sync server (`SyncServer`) keeps its state: each synced record's per-attribute clocks
                -- and tombstone (one state per schema version served, in its names, with when it was last written),
                -- and each device's last push, its answer (a retried push is answered again,
                -- not applied twice), the schema version it was built with and when a pull of it last reached the
                -- end of the history (tombstones older than every device's are purged). A sync server creates them as
                -- written here when they are missing; a database without sync keeps them empty.
                -- Generated by schemagen for review; `migrate up` applies it.

                \(syncTables(SQLDialectName.postgres.dialect))

                """,
            down: """
                -- Drops every sync server's state in this database (so `migrate down` asks for
                -- --allow-destructive): the records' clocks are lost, so every record is stamped anew as the
                -- server's own change, and devices sync again from the start.

                DROP TABLE IF EXISTS schemagen_sync_devices;
                DROP TABLE IF EXISTS schemagen_sync_records;

                """,
            downLosesData: true),
        Migration(
            entry: MigrationFileName(number: 4, name: "create_sync_departures"),
            up: """
                -- Where a sync server (`SyncServer`) notes the users whose scope a record left (a list given
                -- to another owner, an item moved to another user's list), so that each of their devices is
                -- told to remove it and what hangs under it. Kept until tombstones are purged. A sync server
                -- creates it as written here when it is missing; a database without sync keeps it empty.
                -- Generated by schemagen for review; `migrate up` applies it.

                \(syncDepartureTable(SQLDialectName.postgres.dialect))

                """,
            down: """
                -- Drops the notes of records that left a user's scope (so `migrate down` asks for
                -- --allow-destructive): devices that have not pulled since keep those records.

                DROP TABLE IF EXISTS schemagen_sync_departures;

                """,
            downLosesData: true),
    ]
}
