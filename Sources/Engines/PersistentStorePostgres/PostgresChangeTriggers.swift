import MigrationFiles
import PersistentStoreCore
import PostgresKit
import SQLDialects
import SchemaMetadata

/// Records changed rows with triggers, PostgreSQL having no row-change hook. One trigger
/// function, shared by the schema's tables, writes each changed row as `jsonb` (before and after)
/// into an unlogged table, tagged with the writing transaction, when that transaction asked for
/// it (`schemagen.record_changes`, set for the transaction only): only store transactions do,
/// so other clients' writes are not recorded, as on SQLite. No session state is involved, so
/// recording works the same through a transaction-pooling pgbouncer. Updates and deletes are
/// caught before they happen (so a delete comes before the foreign-key actions it causes),
/// inserts after. The images are part of the transaction: a rollback or a savepoint undoes them
/// with the rows. The store takes them back out with each of its statements, by one
/// `DELETE ... RETURNING` pipelined behind it (`drainStatement`), each value cast to text and
/// typed as the table's own rows are read (`PostgresTextFormat`).
extension PostgresStoreDatabase: ChangeTriggers, ChangeImageStreaming, HistoryOrdering {
    static let changedRowsTable = "schemagen_changed_rows"
    static let triggerFunction = "schemagen_record_change"
    /// The advisory lock key under which tables get their triggers, and history rows their
    /// tokens in commit order ("schemagen" in ASCII, then 1 and 2).
    static let triggerLock: Int64 = 0x7363_6865_6d61_0001
    static let historyLock: Int64 = 0x7363_6865_6d61_0002

    /// Marks the trigger function's current body (each row made into `jsonb` once; a
    /// transaction's images flagged in `imagesSetting`). Its source also carries the earlier
    /// mark, `schemagen change images v2`, so that stores of earlier releases find it current
    /// and leave it: what it writes is what theirs wrote.
    static let functionVersion = "schemagen change images v3"
    static let earlierFunctionVersion = "schemagen change images v2"
    /// Set (for the transaction) once the trigger wrote an image: the drain reads the images
    /// table only then, so a transaction that wrote none (the store's own inserts) pays nothing.
    static let imagesSetting = "schemagen.images"
    /// The table whose row the statement running now inserts for the store, which records it
    /// itself: that table's insert trigger passes it by (its `WHEN`).
    static let ownInsertSetting = "schemagen.own_insert"

    /// The setting a store's write transaction turns on so that its changes are recorded.
    static let recordingSetting = "schemagen.record_changes"

    func installChangeTriggers(_ tables: [(table: String, columns: [String])]) throws(DatabaseFailure) -> Bool {
        let function = dialect.quote(Self.triggerFunction)
        var recorded: [(table: String, physical: String, columns: [(name: String, type: String)])] = []
        // Created once, under a lock, so two stores opening at once do not both create them.
        try run("BEGIN")
        do throws(DatabaseFailure) {
            _ = try rows("SELECT pg_advisory_xact_lock($1)", [.integer(Self.triggerLock)])
            var schemaValue: StoredValue? = tableSchema.map(StoredValue.text)
            if schemaValue == nil { schemaValue = try rows("SELECT current_schema()", []).first?.first }
            guard case .text(let schemaName)? = schemaValue else {
                throw DatabaseFailure(database: label, message: "the connection has no current schema (search_path) to record changes in", code: nil, kind: .statement)
            }
            let rowsTable = try createChangedRowsTable(in: schemaName)
            try createTriggerFunction(in: schemaName, writingInto: rowsTable)
            for (table, _) in tables {
                recorded.append(try installTriggers(on: table, function: dialect.quote(schemaName) + "." + function))
            }
            try run("COMMIT")
        } catch {
            try? run("ROLLBACK")
            throw error
        }
        recordedColumns = Dictionary(recorded.map { ($0.table, $0.columns) }, uniquingKeysWith: { first, _ in first })
        drainStatement = recorded.isEmpty ? nil : Self.drainStatement(recorded.map { ($0.physical, $0.table, $0.columns) }, mappedImage: mappedImage)
        return true
    }

    /// The trigger function, made or replaced where it is not this release's
    /// (`functionVersion`); what it writes is the same, so stores of earlier releases read it
    /// as before.
    private func createTriggerFunction(in schemaName: String, writingInto rowsTable: String) throws(DatabaseFailure) {
        let function = dialect.quote(Self.triggerFunction)
        // A function of an earlier release (a session's temporary table) is replaced.
        let current = try rows(
            "SELECT prosrc FROM pg_proc WHERE proname = $1 AND pronamespace = to_regnamespace($2)", [.text(Self.triggerFunction), .text(dialect.quote(schemaName))]
        ).first?.first
        if case .text(let source)? = current, source.contains(Self.functionVersion) {
        } else {
            try run(
                """
                CREATE OR REPLACE FUNCTION \(dialect.quote(schemaName)).\(function)() RETURNS trigger LANGUAGE plpgsql AS $schemagen$
                -- \(Self.functionVersion) (after \(Self.earlierFunctionVersion))
                DECLARE key text := TG_ARGV[0]; old_image jsonb; new_image jsonb;
                BEGIN
                  IF current_setting('\(Self.recordingSetting)', true) = 'on' THEN
                    IF current_setting('\(Self.imagesSetting)', true) IS DISTINCT FROM 'on' THEN PERFORM set_config('\(Self.imagesSetting)', 'on', true); END IF;
                    IF TG_OP <> 'INSERT' THEN old_image := to_jsonb(OLD); END IF;
                    IF TG_OP <> 'DELETE' THEN new_image := to_jsonb(NEW); END IF;
                    INSERT INTO \(rowsTable) (xact, tbl, op, old_rowid, new_rowid, old_row, new_row) VALUES (
                      txid_current(), TG_TABLE_NAME, lower(TG_OP),
                      CASE WHEN key <> '' THEN (old_image ->> key)::bigint END,
                      CASE WHEN key <> '' THEN (new_image ->> key)::bigint END,
                      old_image, new_image);
                  END IF;
                  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
                  RETURN NEW;
                END $schemagen$
                """)
        }
    }

    /// One table's two triggers (`function`, qualified), made where they are missing; the
    /// table's recorded columns.
    private func installTriggers(on table: String, function: String) throws(DatabaseFailure) -> (table: String, physical: String, columns: [(name: String, type: String)]) {
        // On the table itself: a view (an online migration's version) has no row triggers.
        let physical = physicalTable(table)
        // Triggers of this function, whatever a store of another version named them.
        let existing = try rows(
            "SELECT tgtype::int FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = to_regclass($1) AND tgfoid = to_regprocedure($2)",
            [.text(physical), .text(function + "()")]
        ).compactMap { row -> Int64? in if case .integer(let type) = row[0] { type } else { nil } }
        // pg_trigger.tgtype: bit 1 BEFORE, 4 INSERT, 8 DELETE, 16 UPDATE.
        let hasBefore = existing.contains { $0 & 2 != 0 && $0 & 24 != 0 }
        // The insert trigger leaves this store's own rows to it when its WHEN names this
        // table; one of an earlier release (no WHEN) is made again with it, which changes
        // nothing for stores that do not mark their inserts.
        let ownMark = "%\(Self.ownInsertSetting)%\(dialect.literal(table))%"
        let inserts = try rows(
            """
            SELECT tgname, (tgqual IS NOT NULL)::int, (pg_get_triggerdef(oid) LIKE $3)::int FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = to_regclass($1) \
            AND tgfoid = to_regprocedure($2) AND tgtype::int & 2 = 0 AND tgtype::int & 4 <> 0
            """, [.text(physical), .text(function + "()"), .text(ownMark)])
        var hasAfter = !inserts.isEmpty
        for row in inserts where row.count == 3 && row[1] == .integer(0) {
            guard case .text(let name) = row[0] else { continue }
            try run("DROP TRIGGER \(dialect.quote(name)) ON \(physical)")
            hasAfter = false
        }
        if hasAfter, inserts.contains(where: { $0.count == 3 && $0[2] == .integer(1) }) { ownInserts.insert(table) }
        // The implicit key (an integer `id`) stands for the row, as SQLite's rowid does.
        let tableColumns = try columns(of: table)
        let key = tableColumns.contains { $0.name == "id" && ["bigint", "integer", "smallint"].contains($0.type) } ? "id" : ""
        let before = SQLIdentifiers.fitted("schemagen_history_\(table)_change", to: dialect.capabilities.maximumIdentifierBytes)
        let after = SQLIdentifiers.fitted("schemagen_history_\(table)_insert", to: dialect.capabilities.maximumIdentifierBytes)
        if !hasBefore {
            try run(
                "CREATE TRIGGER \(dialect.quote(before)) BEFORE UPDATE OR DELETE ON \(physical) FOR EACH ROW EXECUTE FUNCTION \(function)(\(dialect.literal(key)))"
            )
        }
        if !hasAfter {
            try run(
                """
                CREATE TRIGGER \(dialect.quote(after)) AFTER INSERT ON \(physical) FOR EACH ROW \
                WHEN (current_setting('\(Self.ownInsertSetting)', true) IS DISTINCT FROM \(dialect.literal(table))) \
                EXECUTE FUNCTION \(function)(\(dialect.literal(key)))
                """)
            ownInserts.insert(table)
        }
        return (table, viewMappings[table]?.table ?? table, tableColumns)
    }

    /// One statement takes every image of the transaction out, whatever tables they are of:
    /// each comes back as the values of a row of its table (or of the version's view), each
    /// value cast to text, so that it reads as the same column read directly would
    /// (`PostgresTextFormat`). A round trip to ask which tables have images first, and one per
    /// table, cost three of the seven a single-row write with history took.
    static func drainStatement(
        _ tables: [(physical: String, table: String, columns: [(name: String, type: String)])], mappedImage: (String, String) -> String
    ) -> String {
        let dialect = PostgresDialect()
        // A table read through a view under another name (an expanded migration's copy or
        // rename) takes the view's name at contract: its images are read under either.
        let physicalNames = Set(tables.map(\.physical))
        let renamedAtContract = tables.filter { $0.physical != $0.table && !physicalNames.contains($0.table) }
        func values(_ image: String) -> String {
            let cases = tables.flatMap { physical, table, columns in
                let casts = columns.map { "r.\(dialect.quote($0.name))::text" }.joined(separator: ", ")
                let row = "jsonb_populate_record(NULL::\(dialect.quote(table)), \(mappedImage(image, table)))"
                let names = renamedAtContract.contains { $0.table == table } ? [physical, table] : [physical]
                return names.map { "WHEN \(dialect.literal($0)) THEN (SELECT ARRAY[\(casts)]::text[] FROM \(row) r)" }
            }
            return "CASE WHEN \(image) IS NOT NULL THEN CASE tbl \(cases.joined(separator: " ")) END END"
        }
        // Until contract, the table under the view's name is another version's (the old table a
        // copy replaces): its images are that version's, and are passed over.
        let othersTables = renamedAtContract.map { physical, table, _ in
            "(tbl = \(dialect.literal(table)) AND to_regclass(\(dialect.literal(dialect.quote(physical)))) IS NOT NULL)"
        }
        let tableName = othersTables.isEmpty ? "tbl" : "CASE WHEN \(othersTables.joined(separator: " OR ")) THEN NULL ELSE tbl END"
        // Nothing is read until the transaction wrote an image (a one-time filter: the table is
        // not scanned), which the store's own inserts do not.
        return """
            DELETE FROM \(dialect.quote(changedRowsTable)) WHERE current_setting(\(dialect.literal(imagesSetting)), true) = 'on' AND xact = txid_current() \
            RETURNING seq, \(tableName), op, old_rowid, new_rowid, \(values("old_row")), \(values("new_row")), old_row IS DISTINCT FROM new_row
            """
    }

    /// The table the images go to (unlogged: they live in one transaction), qualified.
    private func createChangedRowsTable(in schemaName: String) throws(DatabaseFailure) -> String {
        let rowsTable = dialect.quote(schemaName) + "." + dialect.quote(Self.changedRowsTable)
        try run(
            """
            CREATE UNLOGGED TABLE IF NOT EXISTS \(rowsTable) (seq bigserial PRIMARY KEY, xact bigint NOT NULL, tbl text NOT NULL, op text NOT NULL, \
            old_rowid bigint, new_rowid bigint, old_row jsonb, new_row jsonb)
            """)
        try run("CREATE INDEX IF NOT EXISTS \(dialect.quote(Self.changedRowsTable + "_xact")) ON \(rowsTable) (xact)")
        // Since PostgreSQL 15 a serial column's sequence is unlogged with its table, and a
        // standby promoted by a failover reads it back as a damaged page ("bad magic number in
        // sequence"): the images live in one transaction, but their order must survive.
        if connection.serverVersion >= 150_000 {
            try run("ALTER SEQUENCE IF EXISTS \(dialect.quote(schemaName)).\(dialect.quote(Self.changedRowsTable + "_seq_seq")) SET LOGGED")
        }
        return rowsTable
    }

    func drainChangedRows(_ body: (String, RowImage) -> Void) throws(DatabaseFailure) {
        // Read with each statement already, where they stream.
        guard let drainStatement, imageSink == nil || undrainedImages else { return }
        try handImages(try rows(drainStatement, []), to: body)
        undrainedImages = false
    }

    func streamChangedRows(into sink: ((String, RowImage) -> Void)?) {
        imageSink = sink
    }

    /// The drain's rows as images, handed to `body` in the order they were written.
    func handImages(_ rows: [[StoredValue]], to body: (String, RowImage) -> Void) throws(DatabaseFailure) {
        guard !rows.isEmpty else { return }
        var images: [(seq: Int64, table: String, image: RowImage)] = []
        for row in rows where row.count == 8 {
            guard case .integer(let seq) = row[0], case .text(let recorded) = row[1], case .text(let op) = row[2] else { continue }
            // The trigger names the table; the code may know it under its view's name. Images
            // of a table no longer recorded are dropped with the rest.
            let table = codeTable(forPhysical: recorded)
            guard let columns = recordedColumns[table] else { continue }
            let operation: RowChangeOperation = op == "insert" ? .insert : op == "delete" ? .delete : .update
            let old = operation == .insert ? [] : Self.typedValues(row[5], columns)
            let new = operation == .delete ? [] : Self.typedValues(row[6], columns)
            guard old.count == (operation == .insert ? 0 : columns.count), new.count == (operation == .delete ? 0 : columns.count) else {
                throw DatabaseFailure(
                    database: label, message: "a recorded change of \(table) could not be read back (\(recorded), change \(seq)): the table's columns changed while this store was open; open it again",
                    code: nil, kind: .statement)
            }
            // The whole row differs: an update of the image's columns, or of columns only
            // another version reads.
            let rowDiffers = operation == .update && row[7] == .integer(1)
            images.append(
                (
                    seq, table,
                    RowImage(
                        operation: operation, oldRowID: Self.integer(row[3]), newRowID: Self.integer(row[4]), oldValues: old, newValues: new,
                        changesColumnsNotShown: rowDiffers && old == new)
                ))
        }
        for entry in images.sorted(by: { $0.seq < $1.seq }) { body(entry.table, entry.image) }
    }

    /// An image's values, each typed by its column.
    private static func typedValues(_ array: StoredValue, _ columns: [(name: String, type: String)]) -> [StoredValue] {
        guard case .text(let literal) = array, let elements = PostgresTextFormat.arrayElements(literal), elements.count == columns.count else { return [] }
        return zip(elements, columns).map { element, column in element.map { PostgresTextFormat.value($0, dataType: column.type) } ?? .null }
    }

    /// Outside a transaction there is nothing: images live and die with their transaction.
    func discardChangedRows() throws(DatabaseFailure) {
        guard isInTransaction else { return }
        try run("DELETE FROM \(dialect.quote(Self.changedRowsTable)) WHERE xact = txid_current()")
    }

    /// Where the tokens are ordered (`prepareHistoryOrdering`), writers run side by side: no
    /// lock. Stores of earlier releases, which take `historyLock` until their commit, still do,
    /// and their rows get ordered tokens from the column's default. Where the default could not
    /// be set, tokens come from the sequence, and this lock keeps their order.
    func orderHistoryWrites() throws(DatabaseFailure) {
        guard !historyTokensOrdered else { return }
        _ = try rows("SELECT pg_advisory_xact_lock($1)", [.integer(Self.historyLock)])
    }

    /// Tokens of history rows written since `prepareHistoryOrdering` are 2^62 plus the writing
    /// transaction's id (`txid_current()`, 64 bits with its epoch), above every token of the
    /// sequence earlier releases used, so old tokens keep their meaning. A transaction's id is
    /// taken at its first write, before it commits: every id below the oldest one still
    /// running (the snapshot's xmin) belongs to a transaction that is over.
    static let ordering = PostgresDialect().historyTokenOrdering!
    static let orderedTokenBase = ordering.base

    /// Transaction ids are the server's, shared by its databases: a transaction of another
    /// database (its backend's `backend_xid`, matched on the low 32 bits) does not hold the
    /// readers back. Any other running one does, also one whose database is not known (a
    /// session of a role this one may not see): holding back too long is safe, moving past one
    /// is not.
    var settledHistoryBound: SQL? {
        guard historyTokensOrdered else { return nil }
        return SQL(
            verbatim: """
                (\(Self.orderedTokenBase) + (SELECT coalesce(min(running.x), min(txid_snapshot_xmax(snapshot.s))) \
                FROM (SELECT txid_current_snapshot() AS s) snapshot LEFT JOIN LATERAL (SELECT x FROM txid_snapshot_xip(snapshot.s) x \
                WHERE x % 4294967296 NOT IN (SELECT backend_xid::text::bigint FROM pg_stat_activity \
                WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database())) running ON true))
                """)
    }

    /// SQLSTATE 42501: the role may not do it (here: alter a table it does not own).
    static let insufficientPrivilege = "42501"

    /// Sets the token column's default to the ordered tokens, once per database, under the lock
    /// the triggers are installed under, unless `0002_order_history_tokens` did. Stores of
    /// earlier releases that still run get them too. A table held by others past the lock
    /// timeout, or one this role may not alter, keeps the ordering lock instead, until the next
    /// opening.
    func prepareHistoryOrdering() throws(DatabaseFailure) {
        let ordered = try rows("SELECT (\(Self.ordering.isInPlace))::int", []).first?.first
        if ordered == .integer(1) {
            historyTokensOrdered = true
            return
        }
        try run("BEGIN")
        do throws(DatabaseFailure) {
            _ = try rows("SELECT pg_advisory_xact_lock($1)", [.integer(Self.triggerLock)])
            try run("SET LOCAL lock_timeout = '5s'")
            // The column was an identity column (its own sequence), which takes no default.
            try run(Self.ordering.setInPlace)
            try run("COMMIT")
            historyTokensOrdered = true
        } catch  where error.kind == .busy || error.code == Self.insufficientPrivilege {
            // Held past the timeout, or not this role's to alter (the migrations of
            // Migrations/SchemagenStore make the change as its owner): writers keep the lock.
            try? run("ROLLBACK")
        } catch {
            try? run("ROLLBACK")
            throw error
        }
    }

    private static func integer(_ value: StoredValue) -> Int64 {
        if case .integer(let number) = value { return number }
        return 0
    }
}
