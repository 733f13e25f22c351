import ExampleModels
import Foundation
import PersistentStorePostgres
import PersistentStoreSQLite
import SQLDialects
import SQLiteKit
import Testing

@testable import PersistentStoreCore

/// Errors keep SQLite's result code, so callers can tell a busy database from a broken one.
@Suite struct StoreErrorTests {
    @Test func aFileThatIsNotADatabaseSaysSoAndNamesIt() throws {
        let path = storePath()
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: path))
        do throws(StoreError) {
            _ = try Store(path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
            Issue.record("opened a file that is not a database")
        } catch {
            #expect(error.databaseFailure == .notADatabase)
            #expect(error.description.contains(path))
        }
    }

    /// A URL is never taken for a file: before, `Store(path: "postgres://...")` created a folder
    /// named `postgres:` and a SQLite file inside it.
    @Test func aURLIsRefusedAndNoFileIsCreated() throws {
        let folder = (storePath() as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for url in ["postgres://app:secret-pw@db/flights", "postgress://app:secret-pw@db/flights", "host=db password=secret-pw"] {
            do throws(StoreError) {
                _ = try Store(path: url, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
                Issue.record("opened \(url) as a file")
            } catch {
                guard case .unsupportedDatabase(let message) = error else {
                    Issue.record("\(error)")
                    continue
                }
                #expect(!message.contains("secret-pw"), "\(message)")
            }
        }
        for created in ["postgres:", "postgress:", "host=db password=secret-pw"] {
            #expect(!FileManager.default.fileExists(atPath: created), "created \(created) in the working folder")
        }
        // sqlite: and file: prefixes name files.
        let store = try Store(path: "sqlite:" + folder + "/prefixed.sqlite", schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        _ = store
        #expect(FileManager.default.fileExists(atPath: folder + "/prefixed.sqlite"))
    }

    @Test func aWriteBlockedByAnotherConnectionIsBusy() async throws {
        let path = storePath()
        let store = try Store(
            path: path, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations,
            configuration: .init(busyTimeout: .milliseconds(100)))
        let other = try SQLiteConnection(path: path)
        try other.execute("BEGIN IMMEDIATE;")
        do throws(StoreError) {
            try await store.insert(airport("KSFO"))
            Issue.record("the write went through another connection's lock")
        } catch {
            #expect(error.databaseFailure == .busy)
            guard case .database(let sqlite) = error else { return }
            #expect(sqlite.database == path)
        }
        try other.execute("ROLLBACK;")
        try await store.insert(airport("KSFO"))
        #expect(try await store.count(Airport.self) == 1, "the lock gone, the same store writes")
    }
}

@Suite struct SQLiteSettingsTests {
    static func pragmas(_ store: Store) async throws -> [SQLiteValue] {
        try await store.pragmaValues()
    }

    @Test func theStoreOpensWithApplicationStoreSettingsAndEachCanBeOverridden() async throws {
        let store = try flightsStore()
        #expect(try await Self.pragmas(store) == [.text("wal"), .integer(1), .integer(-65536), .integer(2), .integer(268_435_456)])
        let custom = try Store(
            path: storePath(), schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations,
            configuration: .init(sqlite: SQLiteSettings(synchronous: .full, cacheSize: 8 << 20, temporaryStorageInMemory: false, memoryMapSize: 0)))
        #expect(try await Self.pragmas(custom) == [.text("wal"), .integer(2), .integer(-8192), .integer(0), .integer(0)])
    }

    /// The adapter's settings are kept by engine: the property, the initializer's label and
    /// `[engine:]` are one value, and the store opens with what was set through any of them.
    @Test func settingsSetAsAPropertyReachTheStore() async throws {
        var configuration = Store.Configuration(author: "app")
        #expect(configuration.sqlite == .applicationStore, "unset: the engine's standard settings")
        configuration.sqlite.cacheSize = 4 << 20
        configuration[engine: SQLiteSettings.self].synchronous = .extra
        #expect(configuration.sqlite.cacheSize == 4 << 20 && configuration.sqlite.synchronous == .extra)
        #expect(Store.Configuration(sqlite: .sqliteDefaults)[engine: SQLiteSettings.self] == .sqliteDefaults)
        // Both engines' settings in one call, as earlier releases' initializer took them.
        let both = Store.Configuration(author: "app", sqlite: .sqliteDefaults, postgres: PostgresSettings(failoverTimeout: .seconds(30)))
        #expect(both.sqlite == .sqliteDefaults && both.postgres.failoverTimeout == .seconds(30) && both.author == "app")
        let store = try Store(path: storePath(), schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations, configuration: configuration)
        #expect(try await Self.pragmas(store) == [.text("wal"), .integer(3), .integer(-4096), .integer(2), .integer(268_435_456)])
    }
}

extension Store {
    /// journal_mode, synchronous, cache_size, temp_store, mmap_size.
    func pragmaValues() throws -> [SQLiteValue] {
        try ["journal_mode", "synchronous", "cache_size", "temp_store", "mmap_size"].map { name in
            try database.query(SQL(verbatim: "PRAGMA \(name)")).first?.first ?? .null
        }
    }
}
