import ExampleModels
import Foundation
import MigrationFiles
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// History on PostgreSQL without a lock that serialises writers: tokens follow the writing
/// transactions' ids, and readers read only below the oldest one still running, so a reader
/// never moves past a transaction that commits late.
@Suite(.blocking, .serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct HistoryOrderTests {
    static func dispatch(_ url: String, beforeCommit: (@Sendable () -> Void)? = nil) throws -> Store {
        try Store(url: url, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations, configuration: .init(author: "order", beforeCommit: beforeCommit))
    }

    /// A writes first (its transaction id is older) and commits last; B commits in between. A
    /// reader that read B before A committed would move past A's token and never see A.
    @Test func aTransactionThatCommitsLateIsNotSkipped() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let reader = try Self.dispatch(url)
        let queue = try await reader.insert(Queue(name: "order"))
        let start = try await reader.currentHistoryToken()
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let holding = LockedBox(true)
        let slow = try Self.dispatch(url) {
            guard holding.value else { return }
            holding.value = false
            held.signal()
            release.wait()
        }
        let fast = try Self.dispatch(url)
        let queueID = queue.id!
        let late = _Concurrency.Task { () async throws -> Void in _ = try await slow.insert(Job(name: "late", queueID: queueID)) }
        held.wait()
        try await fast.insert(Job(name: "early", queueID: queueID))
        // "early" is committed, but "late" holds an older transaction id and still runs.
        let before = try await reader.history(after: start)
        #expect(before.isEmpty, "read past a running transaction: \(before.map(\.token))")
        release.signal()
        _ = try await late.value
        let after = try await reader.history(after: start)
        let names = try after.flatMap { transaction in try transaction.changes.map { try $0.value(\Job.name) } }
        #expect(names == ["late", "early"], "in transaction-id order, each once")
        #expect(after.allSatisfy { $0.token.value > 1 << 62 }, "ordered tokens: \(after.map(\.token))")
    }

    /// A reader's transaction keeps the snapshot it began with. A transaction of another
    /// database, running then and ending before the history is read, is no longer listed under
    /// its database: it holds the reader back to the end of its transaction (a sync server's
    /// pull ended without a commit made before it, in CI). Read again outside it, the history
    /// is settled, and a new transaction reads past it.
    @Test func aTransactionOfAnotherDatabaseEndingInAReadersTransactionIsKnownToHaveEnded() async throws {
        let server = try #require(PostgresServer.shared)
        let store = try Self.dispatch(server.createDatabase())
        let start = try await store.currentHistoryToken()
        let other = Handed(try PostgresConnection(server.createDatabase()))
        try other.value.execute("BEGIN")
        _ = try other.value.query("SELECT txid_current()")
        _ = try await store.insert(Queue(name: "committed before the reader began"))
        let seen = try await store.transaction { store in
            // The snapshot is taken here, the other transaction running; the list of sessions
            // is read (once per transaction) after it ended.
            _ = try store.query("SELECT count(*) FROM schemagen_history")
            try other.value.execute("COMMIT")
            return [try store.history(after: start).count, try store.unsettledHistory(after: start.value) ? 1 : 0]
        }
        #expect(seen == [0, 1], "held back, and known to be")
        #expect(try await store.unsettledHistory(after: start.value) == false, "settled, read again outside it")
        #expect(try await store.history(after: start).count == 1, "a new transaction reads past it")
    }

    /// Eight writers at once, and a subscriber: every transaction once, in token order.
    @Test func eightWritersAtOnceAreObservedEachOnceInOrder() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let observer = try Self.dispatch(url)
        let queue = try await observer.insert(Queue(name: "writers"))
        let stream = try await observer.changes()
        let writers = try (0..<8).map { _ in try Self.dispatch(url) }
        let perWriter = 25
        let queueID = queue.id!
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, writer) in writers.enumerated() {
                group.addTask {
                    for job in 0..<perWriter { try await writer.insert(Job(name: "w\(index)-\(job)", queueID: queueID)) }
                }
            }
            try await group.waitForAll()
        }
        let seen = try await collect(stream, count: 8 * perWriter, within: 60)
        #expect(seen.count == 8 * perWriter)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.token < $1.token }, "in token order")
        let names = try seen.flatMap { transaction in try transaction.changes.map { try $0.value(\Job.name) } }
        #expect(Set(names).count == 8 * perWriter && names.count == 8 * perWriter, "each once")
    }

    /// Each write's change images are read back in its own round trip and reach the recorder
    /// at once, as SQLite's hook hands them over: a write that fails inside the transaction
    /// takes its images with its savepoint, and the commit finds nothing left to read.
    @Test func eachWritesImagesReachTheRecorderWithTheWrite() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let store = try Self.dispatch(url)
        let queue = try await store.insert(Queue(name: "images"))
        let queueID = queue.id!
        let start = try await store.currentHistoryToken()
        try await store.transaction { store in
            _ = try store.insert(Job(name: "kept", queueID: queueID))
            #expect(store.recorder?.pending.count == 1, "the insert's image arrived with it")
            #expect(throws: StoreError.self) { _ = try store.insert(Job(name: "orphan", queueID: queueID + 1000)) }
            #expect(store.recorder?.pending.count == 1, "the failed insert left nothing")
            _ = try store.delete(Job.self, where: #Predicate { $0.name == "kept" })
            #expect(store.recorder?.pending.count == 2)
        }
        let history = try await store.history(after: start)
        #expect(history.count == 1)
        #expect(history.first?.changes.map(\.kind) == [.insert, .delete])
        #expect(try history.first?.changes.map { try $0.value(\Job.name) } == ["kept", nil])
        let left = try PostgresConnection(url).query("SELECT count(*) FROM schemagen_changed_rows")
        #expect(left == [[.integer(0)]], "no image is left behind")
    }

    /// The history table of an earlier release (tokens from its sequence): opening turns its
    /// tokens to ordered ones, and a reader holding an old token reads on from it.
    @Test func anEarlierReleasesHistoryKeepsItsTokens() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let earlier = try Self.dispatch(url)
        // As an earlier release left it: tokens from the sequence.
        try PostgresConnection(url).execute("ALTER TABLE schemagen_history ALTER COLUMN token DROP DEFAULT, ALTER COLUMN token ADD GENERATED BY DEFAULT AS IDENTITY")
        let queue = try await earlier.insert(Queue(name: "old"))
        try await earlier.insert(Job(name: "before", queueID: queue.id!))
        // Opening with this release orders the tokens from here on.
        let reopened = try Self.dispatch(url)
        try await reopened.insert(Job(name: "after", queueID: queue.id!))
        let all = try await reopened.history()
        #expect(all.count == 3)
        #expect(all.map(\.token.value).map { $0 < 1 << 62 } == [true, true, false], "\(all.map(\.token))")
        let fromOld = try await reopened.history(after: all[0].token)
        let names = try fromOld.flatMap { transaction in try transaction.changes.map { try $0.value(\Job.name) } }
        #expect(names == ["before", "after"])
    }

    /// Where the store's migrations ran (`StoreTableMigrations`, as `migrate up` applies them
    /// from Migrations/SchemagenStore/postgres), opening changes no table: the token's default
    /// is the migration's own (its catalogue row untouched), and the store reads on from a
    /// token given before it.
    @Test func afterTheGeneratedMigrationOpeningChangesNoTable() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let connection = try PostgresConnection(url)
        let (create, order) = (StoreTableMigrations.postgres[0], StoreTableMigrations.postgres[1])
        try connection.execute(create.up)
        try connection.execute("INSERT INTO schemagen_history (schema, committed_at, entities, changes) VALUES ('Dispatch', 1, '[]', '[]')")
        try connection.execute("BEGIN;\n" + order.up + "\nCOMMIT;")
        let defaultRow = "SELECT xmin::text, pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'schemagen_history'::regclass"
        let migrated = try connection.query(defaultRow)
        #expect(migrated.first?.last == .text("('4611686018427387904'::bigint + txid_current())"), "\(migrated)")
        let store = try Self.dispatch(url)
        #expect(try connection.query(defaultRow) == migrated, "the store did not alter the table again")
        let queue = try await store.insert(Queue(name: "after the migration"))
        let history = try await store.history(after: HistoryToken(1))
        #expect(history.count == 1 && history[0].token.value > 1 << 62, "\(history.map(\.token))")
        #expect(try history.first?.changes.map { try $0.value(\Queue.name) } == [queue.name])
    }

    /// A store whose role may write the history table but not alter it (another role created
    /// it, and `0002_order_history_tokens` has not run) opens all the same: its writers keep
    /// the ordering lock, and what they write is read back in order.
    @Test func aRoleThatMayNotAlterTheHistoryTableStillOpens() async throws {
        let server = try #require(PostgresServer.shared)
        let url = try server.createDatabase()
        let database = try #require(url.split(separator: "/").last.map(String.init))
        let role = "history_writer_\(database)"
        let owner = try PostgresConnection(url)
        try owner.execute(
            """
            CREATE ROLE \(role) LOGIN;
            GRANT CREATE ON SCHEMA public TO \(role);
            CREATE TABLE schemagen_history ("token" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, schema text NOT NULL, author text,
                committed_at double precision NOT NULL, entities text NOT NULL, changes text NOT NULL);
            GRANT SELECT, INSERT, UPDATE, DELETE ON schemagen_history TO \(role);
            """)
        defer { try? owner.execute("DROP OWNED BY \(role); DROP ROLE \(role);") }
        // The app's tables, migrated by their owner; the role may write them and put triggers on them.
        _ = try Store(url: url, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations, configuration: .init(recordsHistory: false))
        try owner.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO \(role); GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO \(role);")
        let asWriter = url.replacingOccurrences(of: "postgres@", with: "\(role)@")
        let store = try Self.dispatch(asWriter)
        let queue = try await store.insert(Queue(name: "by a role that does not own the history"))
        try await store.insert(Job(name: "written", queueID: queue.id!))
        let history = try await store.history()
        #expect(history.count == 2 && history.allSatisfy { $0.token.value < 1 << 62 }, "tokens from the identity column: \(history.map(\.token))")
        let defaultRow = "SELECT count(*) FROM pg_attrdef WHERE adrelid = 'schemagen_history'::regclass"
        #expect(try owner.query(defaultRow) == [[.integer(0)]], "the table is as it was")
    }
}

/// The store's migrations committed beside the examples' are, byte for byte, what the toolkit
/// writes and the store runs (`generate` never rewrites a file that is there, so a change to
/// `StoreTableMigrations` would otherwise go unnoticed).
@Suite struct StoreTableMigrationFilesTests {
    @Test func theCommittedFilesAreTheToolkitsOwn() throws {
        let folder = repositoryRoot.appendingPathComponent("Migrations/SchemagenStore/postgres")
        for migration in StoreTableMigrations.postgres {
            #expect(try String(contentsOf: folder.appendingPathComponent(migration.entry.upFile), encoding: .utf8) == migration.upText, "\(migration.entry.upFile)")
            #expect(try String(contentsOf: folder.appendingPathComponent(migration.entry.downFile), encoding: .utf8) == migration.downText, "\(migration.entry.downFile)")
        }
    }
}
