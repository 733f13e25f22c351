import MigrationFiles
import PersistentStore
import PostgresKit
import SQLDialects
import SchemaMetadata

/// Records changed rows with triggers, PostgreSQL having no row-change hook. One trigger
/// function, shared by the schema's tables, writes each changed row as `jsonb` (before and after)
/// into a temporary table of the writing session, when that session has one: only store
/// connections create it, so other clients' writes are not recorded, as on SQLite. Updates and
/// deletes are caught before they happen (so a delete comes before the foreign-key actions it
/// causes), inserts after. The images are part of the transaction: a rollback or a savepoint
/// undoes them with the rows. At commit the store reads them back through
/// `jsonb_populate_record`, typed as the table's own rows are read.
extension PostgresStoreDatabase {
    static let changedRowsTable = "schemagen_changed_rows"
    static let triggerFunction = "schemagen_record_change"
    /// The advisory lock key under which tables get their triggers, and history rows their
    /// tokens in commit order ("schemagen" in ASCII, then 1 and 2).
    static let triggerLock: Int64 = 0x7363_6865_6d61_0001
    static let historyLock: Int64 = 0x7363_6865_6d61_0002

    func installChangeTriggers(_ tables: [(table: String, columns: [String])]) throws(DatabaseFailure) -> Bool {
        try createChangedRowsTable()
        let function = dialect.quote(Self.triggerFunction)
        // Created once, under a lock, so two stores opening at once do not both create them.
        try execute("BEGIN")
        do throws(DatabaseFailure) {
            _ = try query("SELECT pg_advisory_xact_lock($1)", [.integer(Self.triggerLock)])
            if try firstInteger("SELECT count(*) FROM pg_proc WHERE proname = $1 AND pronamespace = current_schema()::regnamespace", values: [.text(Self.triggerFunction)]) == 0 {
                try execute(
                    """
                    CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $schemagen$
                    DECLARE key text := TG_ARGV[0];
                    BEGIN
                      IF to_regclass('pg_temp.\(Self.changedRowsTable)') IS NOT NULL THEN
                        INSERT INTO pg_temp.\(Self.changedRowsTable) (tbl, op, old_rowid, new_rowid, old_row, new_row) VALUES (
                          TG_TABLE_NAME, lower(TG_OP),
                          CASE WHEN TG_OP <> 'INSERT' AND key <> '' THEN (to_jsonb(OLD) ->> key)::bigint END,
                          CASE WHEN TG_OP <> 'DELETE' AND key <> '' THEN (to_jsonb(NEW) ->> key)::bigint END,
                          CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END,
                          CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END);
                      END IF;
                      IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
                      RETURN NEW;
                    END $schemagen$
                    """)
            }
            for (table, _) in tables {
                let existing = Set(
                    try query("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = to_regclass($1)", [.text(dialect.quote(table))]).compactMap { row in
                        if case .text(let name) = row[0] { name } else { nil }
                    })
                // The implicit key (an integer `id`) stands for the row, as SQLite's rowid does.
                let key = try columns(of: table).contains { $0.name == "id" && ["bigint", "integer", "smallint"].contains($0.type) } ? "id" : ""
                let before = SQLIdentifiers.fitted("schemagen_history_\(table)_change", to: dialect.capabilities.maximumIdentifierBytes)
                let after = SQLIdentifiers.fitted("schemagen_history_\(table)_insert", to: dialect.capabilities.maximumIdentifierBytes)
                if !existing.contains(before) {
                    try execute(
                        "CREATE TRIGGER \(dialect.quote(before)) BEFORE UPDATE OR DELETE ON \(dialect.quote(table)) FOR EACH ROW EXECUTE FUNCTION \(function)(\(dialect.literal(key)))")
                }
                if !existing.contains(after) {
                    try execute("CREATE TRIGGER \(dialect.quote(after)) AFTER INSERT ON \(dialect.quote(table)) FOR EACH ROW EXECUTE FUNCTION \(function)(\(dialect.literal(key)))")
                }
            }
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        recordedColumns = Dictionary(tables.map { ($0.table, $0.columns.count) }, uniquingKeysWith: { first, _ in first })
        return true
    }

    func drainChangedRows(_ body: (String, RowImage) -> Void) throws(DatabaseFailure) {
        var images: [(seq: Int64, table: String, image: RowImage)] = []
        let tables = try query("SELECT DISTINCT tbl FROM pg_temp.\(Self.changedRowsTable)", []).compactMap { row -> String? in
            if case .text(let name) = row[0] { name } else { nil }
        }
        for table in tables {
            guard let count = recordedColumns[table] else { continue }
            let type = dialect.quote(table)
            // Each image back as a row of the table, typed by its columns as reads are.
            let rows = try query(
                """
                SELECT seq, op, old_rowid, new_rowid, (jsonb_populate_record(NULL::\(type), old_row)).*, (jsonb_populate_record(NULL::\(type), new_row)).*
                FROM pg_temp.\(Self.changedRowsTable) WHERE tbl = $1
                """, [.text(table)])
            for row in rows where row.count >= 4 + 2 * count {
                guard case .integer(let seq) = row[0], case .text(let op) = row[1] else { continue }
                let operation: RowChangeOperation = op == "insert" ? .insert : op == "delete" ? .delete : .update
                let old = operation == .insert ? [] : Array(row[4..<(4 + count)])
                let new = operation == .delete ? [] : Array(row[(4 + count)..<(4 + 2 * count)])
                images.append((seq, table, RowImage(operation: operation, oldRowID: Self.integer(row[2]), newRowID: Self.integer(row[3]), oldValues: old, newValues: new)))
            }
        }
        for entry in images.sorted(by: { $0.seq < $1.seq }) { body(entry.table, entry.image) }
        try discardChangedRows()
    }

    /// The session's table of row images (a new session needs it again).
    func createChangedRowsTable() throws(DatabaseFailure) {
        try execute(
            "CREATE TEMP TABLE IF NOT EXISTS \(Self.changedRowsTable) (seq bigserial PRIMARY KEY, tbl text NOT NULL, op text NOT NULL, old_rowid bigint, new_rowid bigint, old_row jsonb, new_row jsonb)"
        )
    }

    func discardChangedRows() throws(DatabaseFailure) { try execute("DELETE FROM pg_temp.\(Self.changedRowsTable)") }

    /// Tokens come from a sequence when the row is inserted, not when the transaction commits:
    /// holding this lock until the commit keeps token order and commit order the same, so a
    /// reader that has seen token N has seen every token below it.
    func orderHistoryWrites() throws(DatabaseFailure) {
        _ = try query("SELECT pg_advisory_xact_lock($1)", [.integer(Self.historyLock)])
    }

    private static func integer(_ value: StoredValue) -> Int64 {
        if case .integer(let number) = value { return number }
        return 0
    }
}
