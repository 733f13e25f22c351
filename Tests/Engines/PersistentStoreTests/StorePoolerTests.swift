import ExampleModels
import Foundation
import PersistentStoreSQLite
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore
@testable import PersistentStorePostgres

/// Opening that only verifies the migrations, for fleets that migrate as a deploy step.
@Suite(.serialized) struct StoreVerifyingOpeningTests {
    @Test(arguments: StoreEngine.available)
    func verifyingRefusesPendingMigrationsAndOpensAMigratedDatabase(_ engine: StoreEngine) async throws {
        let url = try engine.freshURL()
        let verifying = Store.Configuration(recordsHistory: false, migrations: .verify)
        #expect {
            _ = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: verifying)
        } throws: { error in
            let text = "\(error)"
            return text.contains("\(FlightsSchema.migrations.count) migrations are not applied") && text.contains("0001_") && text.contains("migrate up")
        }
        // Nothing was applied: a store that applies finds every migration pending still.
        let applying = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: .init(recordsHistory: false))
        try await applying.insert(airport("KSFO"))
        let verified = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: verifying)
        #expect(try await verified.count(Airport.self) == 1)
        // One migration more in the code than in the database: refused again, naming it.
        #expect {
            _ = try Store.open(url: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations + [Self.extraMigration(engine)], configuration: verifying)
        } throws: { error in
            "\(error)".contains("1 migration is not applied (9999_extra)")
        }
    }

    /// A migration the database never saw, in every dialect the store opens.
    static func extraMigration(_ engine: StoreEngine) -> EmbeddedMigration {
        let sql = MigrationScript.DialectSQL(up: "CREATE TABLE extra (id integer);", down: "DROP TABLE extra;")
        return MigrationScript(version: 9999, name: "extra", up: sql.up, down: sql.down, dialects: ["postgres": sql])
    }
}

/// Stores behind a real pgbouncer in transaction pooling mode (two server connections shared
/// by every client), as a fleet behind a pooler runs.
@Suite(.serialized, .enabled(if: Pgbouncer.available, Comment(rawValue: Pgbouncer.skipReason)))
struct StorePgbouncerTests {
    /// A fresh database on the server, and its URL through the pooler.
    func database() throws -> (direct: String, pooled: String) {
        let direct = try StoreEngine.postgres.freshURL()
        let name = String(direct[direct.index(after: direct.lastIndex(of: "/")!)...])
        let bouncer = try #require(Pgbouncer.shared, "pgbouncer did not start")
        return (direct, bouncer.url(database: name))
    }

    func pooled(_ urls: (direct: String, pooled: String), author: String, direct: Bool = true) throws -> Store {
        try Store.open(
            url: urls.pooled, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations,
            configuration: .init(author: author, recordsHistory: true, postgres: .init(transactionPooler: true, directURL: direct ? urls.direct : nil)))
    }

    /// Without a direct URL, a store behind the pooler cannot hold the migrator's session lock:
    /// it only verifies, and says how to migrate.
    @Test func withoutADirectURLOpeningOnlyVerifies() async throws {
        let urls = try database()
        #expect {
            _ = try pooled(urls, author: "app", direct: false)
        } throws: { error in
            "\(error)".contains("transaction pooler without postgres.directURL") && "\(error)".contains("migrate up")
        }
        _ = try pooled(urls, author: "deploy")
        let store = try pooled(urls, author: "app", direct: false)
        try await store.insert(airport("KSFO"))
        #expect(try await store.count(Airport.self) == 1)
    }

    /// `?pgbouncer=true` (Prisma's spelling) turns the pooler mode on and never reaches libpq.
    @Test func thePgbouncerParameterIsTakenOutOfTheURL() {
        #expect(Store.takingPoolerParameter(from: "postgres://app@h:6432/db?pgbouncer=true") == ("postgres://app@h:6432/db", true))
        #expect(Store.takingPoolerParameter(from: "postgres://h/db?sslmode=require&pgbouncer=true&connect_timeout=5") == ("postgres://h/db?sslmode=require&connect_timeout=5", true))
        #expect(Store.takingPoolerParameter(from: "postgres://h/db?pgbouncer=false") == ("postgres://h/db", false))
        #expect(Store.takingPoolerParameter(from: "postgres://h/db?sslmode=require") == ("postgres://h/db?sslmode=require", false))
        #expect(Store.takingPoolerParameter(from: "postgres://h/db") == ("postgres://h/db", false))
    }

    /// Six stores take turns on two server connections: every write lands, with its history
    /// recorded in its own transaction, dates read back right whatever the server's time zone,
    /// and a watcher (listening on the direct URL) hears every transaction once.
    @Test func storesSharingTwoServerConnectionsWriteRecordAndAreObserved() async throws {
        let urls = try database()
        // A time zone that is not UTC: the pooled sessions are not `SET` to UTC.
        try PostgresConnection(urls.direct).execute("ALTER DATABASE \(urls.direct.split(separator: "/").last!) SET timezone = 'America/St_Johns'")
        let watcher = try pooled(urls, author: "watcher")
        let stream = try await watcher.changes(author: .excluding("watcher"))
        let start = try await watcher.currentHistoryToken()
        let writers = try (0..<6).map { try pooled(urls, author: "writer\($0)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, writer) in writers.enumerated() {
                group.addTask {
                    for round in 0..<10 {
                        try await writer.transaction { store in
                            let origin = try store.insert(airport("K\(index)\(round)"))
                            var model = flight("F\(index)-\(round)", origin: origin.id)
                            model.actualOff = Date(timeIntervalSince1970: 1_764_612_345.678 + Double(round))
                            try store.insert(model)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await watcher.count(Flight.self) == 60)
        let fetched = try await watcher.fetch(Flight.self, where: #Predicate { $0.ident == "F3-7" })
        #expect(fetched.first?.actualOff == StoredDate.rounded(Date(timeIntervalSince1970: 1_764_612_352.678)))
        let history = try await watcher.history(after: start)
        #expect(history.count == 60)
        #expect(history.allSatisfy { $0.changes.count == 2 })
        let seen = try await collect(stream, count: 60, within: 30)
        #expect(seen.count == 60)
        #expect(Set(seen.map(\.token)).count == 60, "no transaction twice")
        // The server never saw a statement prepared by name from the stores.
        let named = try PostgresConnection(urls.direct).query("SELECT count(*) FROM pg_prepared_statements")
        #expect(named == [[.integer(0)]])
    }
}

/// A pool of stores runs calls side by side, never more than its size, each transaction whole
/// on one connection, on either engine.
@Suite(.serialized) struct StorePoolTests {
    actor Gauge {
        private(set) var current = 0
        private(set) var highest = 0
        func enter() {
            current += 1
            highest = max(highest, current)
        }
        func leave() { current -= 1 }
    }

    @Test(arguments: StoreEngine.available)
    func callsRunSideBySideUpToTheSizeAndTransactionsStayWhole(_ engine: StoreEngine) async throws {
        let pool = try StorePool.open(
            url: try engine.freshURL(), size: 3, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations,
            configuration: .init(recordsHistory: true))
        let gauge = Gauge()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<12 {
                group.addTask {
                    try await pool.withStore { store in
                        await gauge.enter()
                        try await store.insert(airport("K\(index)"))
                        try await _Concurrency.Task.sleep(for: .milliseconds(30))
                        await gauge.leave()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await gauge.highest == 3)
        #expect(try await pool.read { try $0.count(Airport.self) } == 12)
        // A failing transaction writes nothing and gives its store back.
        struct Refused: Error {}
        for _ in 0..<4 {
            let failure = await #expect(throws: StoreError.self) {
                try await pool.transaction { store in
                    try store.insert(airport("KBAD"))
                    throw Refused()
                }
            }
            #expect(failure?.bodyError is Refused, "the body's error, carried by StoreError.body")
        }
        #expect(try await pool.withStore { try await $0.count(Airport.self, where: #Predicate { $0.icao == "KBAD" }) } == 0)
        let start = try await pool.observer.currentHistoryToken()
        let stream = try await pool.changes(after: start)
        try await pool.transaction { store in
            try store.insert(airport("KSFO"))
            try store.insert(airport("KLAX"))
        }
        let seen = try await collect(stream, count: 1, within: 20)
        #expect(seen.first?.changes.count == 2)
    }

    @Test func aPoolNeedsAStore() throws {
        #expect(throws: StoreError.self) {
            _ = try StorePool(path: storePath(), size: 0, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        }
    }
}
