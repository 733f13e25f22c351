import ExampleModels
import Foundation
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

/// On PostgreSQL, where the history keeps only an insert's key (Flights), the store records its
/// own single-row inserts itself and the insert trigger passes them by: the history holds
/// exactly what the trigger would have recorded, an upsert that updated is an update alone, and
/// what the store did not write itself (a cascade, another trigger's row, a bulk insert) is
/// still captured.
@Suite(.serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct OwnInsertHistoryTests {
    static func summary(_ transactions: [HistoryTransaction]) -> [[String]] {
        transactions.map { transaction in
            transaction.changes.map { change in
                "\(change.kind.rawValue) \(change.entity) \(change.key.map { "\($0)" }.joined(separator: ","))" + (change.changedAttributes.isEmpty ? "" : " \(change.changedAttributes.sorted())")
            }
        }
    }

    static func flight(_ ident: String, airline: Int64?) -> Flight {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        return Flight(ident: ident, scheduledOff: now, scheduledOn: now.addingTimeInterval(3600), status: "Scheduled", airlineID: airline)
    }

    @Test func theStoresOwnInsertsAreRecordedOnceAndEverythingElseAsBefore() async throws {
        let url = try StoreEngine.postgres.freshURL()
        let store = try StoreEngine.postgres.flights(at: url, history: true)
        let connection = try PostgresConnection(url)
        // The insert triggers leave the store's own rows to it.
        let guarded = try connection.query(
            "SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'schemagen_history_%_insert' AND pg_get_triggerdef(oid) LIKE '%schemagen.own_insert%'")
        #expect(guarded == [[.integer(3)]])
        // A DBA's trigger: every new airline gets a flight, which the store did not write.
        try connection.execute(
            """
            CREATE FUNCTION dba_first_flight() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                INSERT INTO flights (ident, scheduled_off, scheduled_on, status, airline_id) VALUES ('FIRST-' || NEW.code, now(), now(), 'Planned', NEW.id);
                RETURN NULL; END $$;
            CREATE TRIGGER dba_first_flight AFTER INSERT ON airlines FOR EACH ROW EXECUTE FUNCTION dba_first_flight();
            """)
        let start = try await store.currentHistoryToken()
        let united = try await store.insert(Airline(code: "UAL", name: "United"))
        let flight = try await store.insert(Self.flight("UA1", airline: united.id))
        // The same ident again: the unique value makes it an update, recorded as one.
        var changed = Self.flight("UA1", airline: united.id)
        changed.status = "Delayed"
        let updated = try await store.insert(changed)
        #expect(updated.id == flight.id)
        // Written back unchanged: nothing.
        try await store.insert(changed)
        // A write that fails inside a transaction is undone on its own (a savepoint): its
        // insert is not recorded, the next one is.
        try await store.transaction { store in
            try store.insert(Self.flight("UA2", airline: united.id))
            #expect(throws: StoreError.self) { try store.insert(Self.flight("UA3", airline: 999_999)) }
            try store.insert(Self.flight("UA6", airline: united.id))
        }
        // A bulk insert (pipelined, captured by the trigger) and a delete that cascades.
        try await store.insert([Self.flight("UA4", airline: united.id), Self.flight("UA5", airline: united.id)])
        let history = try await store.history(after: start)
        let ids = try connection.query("SELECT ident, id FROM flights ORDER BY id").reduce(into: [String: String]()) { found, row in
            if case .text(let ident) = row[0], case .integer(let id) = row[1] { found[ident] = "\(StoredValue.integer(id))" }
        }
        let airline = "\(StoredValue.integer(united.id!))"
        let first = try #require(ids["FIRST-UAL"]), ua1 = try #require(ids["UA1"]), ua2 = try #require(ids["UA2"])
        let ua4 = try #require(ids["UA4"]), ua5 = try #require(ids["UA5"]), ua6 = try #require(ids["UA6"])
        #expect(ids["UA3"] == nil)
        #expect(
            Self.summary(history) == [
                ["insert Flight \(first)", "insert Airline \(airline)"],
                ["insert Flight \(ua1)"],
                ["update Flight \(ua1) [\"status\"]"],
                ["insert Flight \(ua2)", "insert Flight \(ua6)"],
                ["insert Flight \(ua4)", "insert Flight \(ua5)"],
            ], "\(Self.summary(history))")
        // Other clients' writes stay unrecorded, as before.
        try connection.execute("INSERT INTO airlines (code) VALUES ('PSQL')")
        #expect(try await store.history(after: history.last!.token).isEmpty)
    }
}
