import Foundation
import MigrationFiles
import MigrationPlanner
import MigratorPostgres
import PostgresKit
import RelationalModel
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

@testable import MigratorCore

/// `--max-wal-rate` and index builds: a `CREATE INDEX CONCURRENTLY` writes its whole index at
/// once, so the next one waits until the phase's WAL is back within the budget.
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct WALPacedIndexBuildTests {
    /// Events, version 2 indexing both columns online: two builds after the table is filled.
    static func migrations() throws -> String {
        try plannedPostgresMigrations(
            [
                "schema: Events\nversion: 1\nentities:\n  Event:\n    table: events\n    attributes:\n      name: String\n      score: Int64\n",
                "schema: Events\nversion: 2\nentities:\n  Event:\n    table: events\n    attributes:\n      name: {type: String, indexed: true}\n      score: {type: Int64, indexed: true}\n",
            ], names: ["create", "index"], online: true
        ).path
    }

    @Test func aSecondIndexBuildWaitsForTheWALBudget() async throws {
        // A server of its own: the budget counts the server's WAL, and the shared one carries
        // every other test's writes.
        let events = try await offThePool { () throws -> [String] in
            let server = try PostgresServer()
            defer { server.shutdown() }
            let url = try server.createDatabase()
            let scripts = try MigrationScriptLoader.load(directory: try Self.migrations())
            let connection = try PostgresConnection(url)
            _ = try Migrator(database: PostgresMigrationDatabase(connection), schema: "Events", scripts: scripts).up(.version(1))
            try connection.execute("INSERT INTO events (name, score) SELECT md5(i::text), i FROM generate_series(1, 200000) AS i")
            var options = Migrator.Options()
            options.maxWALMegabytesPerSecond = 1
            let seen = EventLog()
            _ = try Migrator(database: PostgresMigrationDatabase(try PostgresConnection(url)), schema: "Events", scripts: scripts).up(options: options) { event in
                switch event {
                case .onlineSection(_, _, let index, _): seen.events.append("section \(index)")
                case .pacingWAL: seen.events.append("paced")
                default: break
                }
            }
            let indexes = try connection.query("SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = 'events' AND i.indisvalid AND NOT i.indisprimary")
            guard case .integer(let built)? = indexes.first?.first else { return seen.events + ["valid indexes unknown"] }
            return seen.events + ["valid indexes \(built)"]
        }
        // Each build's WAL (an index of 200,000 rows: several MB) is seconds of a 1 MB/s
        // budget: the section after the first build starts with a wait.
        let sections = events.enumerated().filter { $0.element.hasPrefix("section") }.map(\.offset)
        let pacedAfterFirstSection = sections.first.map { first in events[(first + 1)...].contains("paced") } ?? false
        #expect(pacedAfterFirstSection, "\(events)")
        #expect(events.last == "valid indexes 2", "both indexes built and valid: \(events)")
    }
}

/// The events a migrator reported, in order (it reports on the calling thread).
private final class EventLog {
    var events: [String] = []
}
