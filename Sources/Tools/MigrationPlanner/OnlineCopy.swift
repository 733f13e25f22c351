import MigrationFiles
import RelationalModel
import SQLDialects

/// A table whose rows must be rewritten (a column's type changes, or it becomes required) is
/// rebuilt beside the old one rather than updated in place, as pg-osc and gh-ost do: updating
/// every row in place writes each row twice (a new version, then vacuum) and runs every write
/// through a trigger, which measured over 3 times the whole migration on 1,000,000 rows, where
/// copying measured under 2 times.
///
/// Expand creates the new version's table under a temporary name (`schemagen_<version>_<table>`),
/// with a trigger on the old table that carries the old version's writes across (converted),
/// copies the rows in batches, builds the indexes concurrently, adds the foreign keys
/// `NOT VALID` and validates them, adds the trigger that carries the new version's writes back,
/// and points the new version's views at the copy. Contract swaps it in, in one short
/// transaction. Rollback drops the copy: the old table has every row either version wrote.
extension OnlinePlanner {
    /// The copy's name until contract.
    static func copyName(_ table: String, version: Int) -> String { PostgresRenderer.identifier("schemagen_\(version)_\(table)") }

    /// Whether `change` is made by copying: a column needs rewriting, the table has one key
    /// column that keeps its type, and nothing the copy cannot carry both ways changes (an
    /// enum's values, a key, a split, a column filled by SQL over other columns).
    func rebuildsByCopy(_ change: TableChange, splitTables: Set<String>) -> Bool {
        let rewrites = change.changedColumns.contains { was, now in
            renderer.needsChange(from: was, to: now)
                && (PostgresRenderer.type(of: was) != PostgresRenderer.type(of: now) || was.isAutoIncrement != now.isAutoIncrement || (was.isNullable && !now.isNullable))
        }
        guard rewrites, !change.keyChanged, singleKey(of: change.from.name) != nil, change.to.primaryKey.count == 1 else { return false }
        guard !splitTables.contains(change.from.name), !splitTables.contains(change.to.name) else { return false }
        let key = change.to.primaryKey[0]
        guard let keySource = change.columnSources[key], let oldKey = change.from.column(named: keySource), let newKey = change.to.column(named: key),
            PostgresRenderer.type(of: oldKey) == PostgresRenderer.type(of: newKey), oldKey.isAutoIncrement == newKey.isAutoIncrement
        else { return false }
        if change.changedColumns.contains(where: { $0.from.enumValues != $0.to.enumValues }) { return false }
        if change.to.columns.contains(where: { $0.isAutoIncrement && $0.name != key }) { return false }
        for (was, now) in change.changedColumns where was.isNullable && !now.isNullable && PostgresRenderer.filler(now) == nil { return false }
        for column in change.addedColumns where !column.isNullable && column.defaultValue == nil {
            guard case .value? = column.backfill else { return false }
        }
        return true
    }

    /// Expand, contract and rollback of a table rebuilt by copying.
    mutating func copyTable(_ change: TableChange) {
        let planner = self
        let copy = CopiedTable(
            change: change, version: to.version, oldSchema: oldSchema ?? "", newSchema: newSchema, physicalKey: { planner.physical($0, columns: $0.columns) })
        copiedTables[change.to.name] = copy.name
        toExpand.copyChecks.append(copy.carryCheck)
        toExpand.tables.append(copy.precondition + copy.creation + [copy.carryOntoCopy] + copy.relaxedOldColumns + copy.forwardTrigger)
        toExpand.tableCopies.append(
            .backfill(
                OnlinePhase.Backfill(
                    table: change.from.name, key: copy.oldKey, type: copy.keyType, batch: OnlinePlan.backfillBatch, bounds: "inclusive", pending: text(copy.pendingCopies),
                    copies: true),
                update: text(copy.copyStatement)))
        toExpand.copyIndexes += copy.indexBuilds.map(OutsideStatement.concurrently) + [.validation("ANALYZE \(identifier: copy.name);")]
        toExpand.afterCopy.append(copy.constraintsAfterCopy + copy.sequenceGrants + copy.backwardTrigger)
        toExpand.validations += copy.expandKeys.map { copy.validation(of: $0, on: copy.name) }
        toContract.swaps.append(copy.swap)
        toContract.statements += copy.swapKeys.map { .validation(copy.validation(of: $0, on: copy.final)) }
        toContract.statements.append(.validation(copy.inboundKeyValidation))
        toContract.statements.append(.validation(copy.outboundKeyValidation))
        toRollBack.tables.append(copy.removal)
    }
}

/// One table rebuilt by copying: the SQL of each of its steps.
struct CopiedTable {
    let change: TableChange
    let version: Int
    /// The previous version's schema of views, which contract drops.
    let oldSchema: String
    /// The new version's schema of views.
    let newSchema: String
    /// A foreign key as the tables are named until contract.
    let physicalKey: (ForeignKeySnapshot) -> ForeignKeySnapshot
    var old: String { change.from.name }
    var final: String { change.to.name }
    var name: String { OnlinePlanner.copyName(final, version: version) }
    var newKey: String { change.to.primaryKey[0] }
    var oldKey: String { change.columnSources[newKey] ?? newKey }
    var keyColumn: ColumnSnapshot? { change.to.column(named: newKey) }
    var keyType: String { keyColumn.map { PostgresRenderer.type(of: $0) } ?? "bigint" }
    var function: String { PostgresRenderer.identifier("schemagen_\(version)_\(final)_copy") }
    var backFunction: String { PostgresRenderer.identifier("schemagen_\(version)_\(final)_copy_back") }
    var keyName: String { PostgresRenderer.identifier("schemagen_\(version)_\(final)_pkey") }
    var truncateTrigger: String { PostgresRenderer.identifier(function + "_truncate") }
    func indexName(_ index: IndexSnapshot) -> String { PostgresRenderer.identifier("schemagen_\(version)_\(index.name)") }
    func searchIndexName(_ index: IndexSnapshot) -> String { PostgresRenderer.identifier("schemagen_\(version)_\(index.name)_gin") }
    /// The tables as text literals of their quoted names, for `::regclass` and `pg_get_serial_sequence`.
    var oldRelation: SQL { Self.relation(old) }
    var copyRelation: SQL { Self.relation(name) }
    var finalRelation: SQL { Self.relation(final) }
    static func relation(_ table: String) -> SQL { SQL.literal(SQL.identifier(table).text(for: PostgresRenderer.dialect)) }
    /// A grant's role in `aclexplode` (`g.grantee`) as GRANT names it.
    static let grantee: SQL = "CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END"
    /// Validates one of the new version's keys on `table`.
    func validation(of key: ForeignKeySnapshot, on table: String) -> SQL {
        "ALTER TABLE \(identifier: table) VALIDATE CONSTRAINT \(identifier: PostgresRenderer.foreignKeyName(final, key));"
    }

    /// The new version's columns the old table's rows fill: each kept column's value, converted
    /// (or filled, when it becomes required), and each added column's backfill; the other
    /// added columns take their defaults.
    var filled: [(column: String, value: (SQL) -> SQL)] {
        change.to.columns.compactMap { column in
            guard let source = change.columnSources[column.name], let was = change.from.column(named: source) else {
                guard column.defaultValue == nil, case .value(let value)? = column.backfill else { return nil }
                return (column.name, { _ in PostgresRenderer.expression(value, kind: column.kind) })
            }
            return (column.name, { row in PostgresRenderer.carried(row + SQL.identifier(source), from: was, to: column) })
        }
    }

    /// The old version's columns the new version's writes carry back: each kept column, converted back.
    var carriedBack: [(column: String, value: (SQL) -> SQL)] {
        change.to.columns.compactMap { column in
            guard let source = change.columnSources[column.name], let was = change.from.column(named: source) else { return nil }
            return (
                source,
                { row in PostgresRenderer.converted(row + SQL.identifier(column.name), from: column, to: was) }
            )
        }
    }

    /// What makes a copy impossible, checked before anything is made, each with what to do: a
    /// table in a partition or inheritance tree; row-level security this role is subject to
    /// (the copy would hold only the rows the policies show it); a key the server always
    /// generates (the new version's rows are carried back with their keys). What a copy can
    /// carry is listed by expand's `check` section (`carryCheck`).
    var precondition: [SQL] {
        let relation = oldRelation
        let advice = "plan this migration without `online: true`, or change the table by hand"
        return [
            """
            DO $schemagen$ BEGIN
                IF EXISTS (SELECT FROM pg_class c WHERE c.oid = \(relation)::regclass AND (c.relkind = 'p' OR c.relispartition))
                    OR EXISTS (SELECT FROM pg_inherits WHERE inhrelid = \(relation)::regclass OR inhparent = \(relation)::regclass) THEN
                    RAISE EXCEPTION 'schemagen: % is partitioned, a partition or in an inheritance tree, which a copy of the table cannot carry: \(SQL(verbatim: advice))', \(relation);
                END IF;
                IF EXISTS (SELECT FROM pg_class c, pg_roles r WHERE c.oid = \(relation)::regclass AND c.relrowsecurity AND r.rolname = current_user AND NOT (r.rolsuper OR r.rolbypassrls)
                    AND (c.relforcerowsecurity OR NOT pg_has_role(current_user, c.relowner, 'USAGE'))) THEN
                    RAISE EXCEPTION 'schemagen: % has row-level security that applies to this role (%), so a copy would hold only the rows its policies show: migrate as the table''s owner (without FORCE ROW LEVEL SECURITY), a superuser or a role with BYPASSRLS', \(relation), current_user;
                END IF;
                IF EXISTS (SELECT FROM pg_publication WHERE puballtables) OR EXISTS (SELECT FROM pg_publication_namespace p JOIN pg_class c ON c.relnamespace = p.pnnspid WHERE c.oid = \(relation)::regclass) THEN
                    RAISE EXCEPTION 'schemagen: a publication FOR ALL TABLES or TABLES IN SCHEMA would publish the copy of % to its subscribers, where it does not exist: \(SQL(verbatim: advice))', \(relation);
                END IF;
                IF EXISTS (SELECT FROM pg_attribute WHERE attrelid = \(relation)::regclass AND attname = \(literal: oldKey) AND attidentity = 'a') THEN
                    RAISE EXCEPTION 'schemagen: %.% is GENERATED ALWAYS, so the new version''s rows cannot be carried back with their keys: make it GENERATED BY DEFAULT first', \(relation), \(literal: oldKey);
                END IF;
            END $schemagen$;
            """
        ]
    }

    /// The copy, empty: the new version's columns, its key (under a name of its own until
    /// contract), checks and comments; the key's values drawn from the old table's sequence
    /// while both run (with the right to draw them for whoever may insert); the old table's
    /// owner and grants.
    var creation: [SQL] {
        var lines: [SQL] = change.to.columns.map { column in
            var column = column
            column.isAutoIncrement = false
            if column.name == newKey { column.isNullable = false }
            return "    \(PostgresRenderer.columnDefinition(column))"
        }
        lines.append("    CONSTRAINT \(identifier: keyName) PRIMARY KEY (\(identifier: newKey))")
        lines += change.to.columns.compactMap { PostgresRenderer.check(final, $0).map { "    \($0)" } }
        let relation = oldRelation
        var statements: [SQL] = [
            SQL(verbatim: SQLComment.line("the new version's \(final) is built beside \(old) and swapped in at contract")),
            "CREATE TABLE IF NOT EXISTS \(identifier: name) (\n\(SQL.list(lines, separator: ",\n"))\n);",
        ]
        // Full-text documents: generated columns, added while the table is empty.
        for index in change.to.indexes where index.isFullText {
            statements.append(PostgresRenderer.addSearchColumn(index, to: name))
        }
        if keyColumn?.isAutoIncrement == true {
            statements.append(
                """
                DO $schemagen$ BEGIN
                    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET DEFAULT nextval(%L::regclass)', \(literal: name), \(literal: newKey), pg_get_serial_sequence(\(relation), \(literal: oldKey)));
                END $schemagen$;
                """)
        }
        statements.append(
            """
            DO $schemagen$ DECLARE g record; owner text := (SELECT relowner::regrole::text FROM pg_class WHERE oid = \(relation)::regclass); BEGIN
                IF owner <> current_user::text THEN EXECUTE format('ALTER TABLE %I OWNER TO %s', \(literal: name), owner); END IF;
                FOR g IN SELECT a.privilege_type, a.grantee, a.is_grantable FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = \(relation)::regclass AND a.grantee <> c.relowner LOOP
                    EXECUTE format('GRANT %s ON %I TO %s%s', g.privilege_type, \(literal: name), \(Self.grantee),
                        CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
                END LOOP;
            END $schemagen$;
            """)
        if let doc = change.to.doc { statements.append("COMMENT ON TABLE \(identifier: name) IS \(literal: doc);") }
        for column in change.to.columns {
            if let doc = column.doc { statements.append("COMMENT ON COLUMN \(SQL.identifier(column.name, in: name)) IS \(literal: doc);") }
        }
        return statements
    }

    /// The right to draw keys from the old table's sequence (`nextval`, the copy's default while
    /// both run) for every role that may insert into the old table, this migration's grants
    /// included: an identity column never needed it.
    var sequenceGrants: [SQL] {
        guard keyColumn?.isAutoIncrement == true else { return [] }
        let relation = oldRelation
        return [
            """
            DO $schemagen$ DECLARE sequence text := pg_get_serial_sequence(\(relation), \(literal: oldKey)); g record; BEGIN
                FOR g IN SELECT DISTINCT a.grantee FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = \(relation)::regclass AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner LOOP
                    EXECUTE format('GRANT USAGE ON SEQUENCE %s TO %s', sequence, \(Self.grantee));
                END LOOP;
            END $schemagen$;
            """
        ]
    }

    /// Old columns the new version may leave empty: those it drops (required without a default)
    /// and those it makes optional, optional in the old table too while the new version's rows
    /// are carried back.
    var relaxed: [String] {
        let dropped = change.droppedColumns.filter { !$0.isNullable && $0.defaultValue == nil && !$0.isAutoIncrement }.map(\.name)
        let optional = change.changedColumns.filter { !$0.from.isNullable && $0.to.isNullable && $0.to.name != newKey }.map(\.from.name)
        return dropped + optional
    }

    var relaxedOldColumns: [SQL] {
        relaxed.map { "ALTER TABLE \(identifier: old) ALTER COLUMN \(identifier: $0) DROP NOT NULL;" }
    }

    /// The old version's writes, carried into the copy. An update reaches only a row already
    /// copied, and sets only the columns it changed: a row not copied yet is copied later with
    /// its latest values (the batches take each row `FOR SHARE`, so an update waits for the
    /// batch holding its row, and a batch passes a row an update holds, coming back to it at
    /// the end), and a value the new version wrote stays unless the old version changes it.
    var forwardTrigger: [SQL] {
        let inserted = filled
        let kept = inserted.filter { change.columnSources[$0.column] != nil && $0.column != newKey }
        let (o, n) = (SQL.identifier(oldKey), SQL.identifier(newKey))
        let changed = kept.map { column -> SQL in
            let source = SQL.identifier(change.columnSources[column.column] ?? column.column)
            return "\(identifier: column.column) = CASE WHEN NEW.\(source) IS DISTINCT FROM OLD.\(source) THEN \(column.value("NEW.")) ELSE \(identifier: column.column) END"
        }
        let insert: SQL = """
            INSERT INTO \(identifier: name) (\(SQL.identifiers(inserted.map(\.column)))) VALUES (\(SQL.list(inserted.map { $0.value("NEW.") })))
                    ON CONFLICT (\(n)) DO UPDATE SET \(SQL.list(kept.map { "\(identifier: $0.column) = excluded.\(identifier: $0.column)" }));
            """
        let body: SQL = """
            IF TG_OP = 'TRUNCATE' THEN
                    TRUNCATE \(identifier: name);
                ELSIF TG_OP = 'DELETE' THEN
                    DELETE FROM \(identifier: name) WHERE \(n) = OLD.\(o);
                ELSIF TG_OP = 'INSERT' THEN
                    \(insert)
                ELSE
                    UPDATE \(identifier: name) SET \(SQL.list(["\(n) = NEW.\(o)"] + changed)) WHERE \(n) = OLD.\(o);
                    -- A row not copied yet whose key changes may land in a range the copy is done with.
                    IF NOT FOUND AND NEW.\(o) IS DISTINCT FROM OLD.\(o) THEN
                        \(insert)
                    END IF;
                END IF;
            """
        return trigger(function, on: old, body: body, truncate: true)
    }

    /// The new version's writes (through its views, on the copy), carried back into the old
    /// table, converted back; an update sets only the columns it changed.
    var backwardTrigger: [SQL] {
        let columns = carriedBack
        let (o, n) = (SQL.identifier(oldKey), SQL.identifier(newKey))
        let changed = columns.filter { $0.column != oldKey }.map { column -> SQL in
            let source = SQL.identifier(change.columnSources.first { $0.value == column.column }?.key ?? column.column)
            return "\(identifier: column.column) = CASE WHEN NEW.\(source) IS DISTINCT FROM OLD.\(source) THEN \(column.value("NEW.")) ELSE \(identifier: column.column) END"
        }
        let body: SQL = """
            IF TG_OP = 'DELETE' THEN
                    DELETE FROM \(identifier: old) WHERE \(o) = OLD.\(n);
                ELSIF TG_OP = 'INSERT' THEN
                    INSERT INTO \(identifier: old) (\(SQL.identifiers(columns.map(\.column)))) VALUES (\(SQL.list(columns.map { $0.value("NEW.") })));
                ELSE
                    UPDATE \(identifier: old) SET \(SQL.list(["\(o) = NEW.\(n)"] + changed)) WHERE \(o) = OLD.\(n);
                END IF;
            """
        return trigger(backFunction, on: name, body: body, truncate: false)
    }

    /// A trigger carrying writes to the other table, which does not carry them back (the
    /// transaction's `schemagen.copying` says it is under way). Carried rows are recorded by
    /// the store's change triggers like any other: each store reads back only the images of
    /// the table its version reads, so neither version sees the other's twice.
    func trigger(_ function: String, on table: String, body: SQL, truncate: Bool) -> [SQL] {
        var statements: [SQL] = [
            """
            CREATE OR REPLACE FUNCTION \(identifier: function)() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $schemagen$
            BEGIN
                IF current_setting('schemagen.copying', true) = 'on' THEN RETURN NULL; END IF;
                PERFORM set_config('schemagen.copying', 'on', true);
                \(body)
                PERFORM set_config('schemagen.copying', 'off', true);
                RETURN NULL;
            END $schemagen$;
            """,
            "DROP TRIGGER IF EXISTS \(identifier: function) ON \(identifier: table);",
            "CREATE TRIGGER \(identifier: function) AFTER INSERT OR UPDATE OR DELETE ON \(identifier: table) FOR EACH ROW EXECUTE FUNCTION \(identifier: function)();",
        ]
        if truncate {
            statements.append("DROP TRIGGER IF EXISTS \(identifier: truncateTrigger) ON \(identifier: table);")
            statements.append("CREATE TRIGGER \(identifier: truncateTrigger) AFTER TRUNCATE ON \(identifier: table) FOR EACH STATEMENT EXECUTE FUNCTION \(identifier: function)();")
        }
        return statements
    }

    /// One batch: the range's rows not in the copy yet, each taken `FOR SHARE` (so an update
    /// of it waits for the batch, and a delete cannot bring it back), rows apps hold passed by.
    /// The range bounds the copy's side too, so the check reads a batch of its key's index.
    var copyStatement: SQL {
        let columns = filled
        return
            "INSERT INTO \(identifier: name) (\(SQL.identifiers(columns.map(\.column)))) SELECT \(SQL.list(columns.map { $0.value("") })) \(uncopiedRows) FOR SHARE OF schemagen_source SKIP LOCKED;"
    }

    /// The keys of a range's rows not copied yet, without row locks: the rows the copy passed
    /// by (an app held them) are looked for with it at the end.
    var pendingCopies: SQL {
        let o = SQL.identifier(oldKey)
        return "SELECT schemagen_source.\(o) AS \(o) \(uncopiedRows)"
    }

    /// `FROM` the old table's rows in the range (`$1`, `$2`) that the copy does not hold yet.
    private var uncopiedRows: SQL {
        let type = SQL(verbatim: keyType)
        let (o, n) = (SQL.identifier(oldKey), SQL.identifier(newKey))
        return """
            FROM \(identifier: old) AS schemagen_source \
            WHERE \(o) >= $1::\(type) AND \(o) <= $2::\(type) AND NOT EXISTS (SELECT FROM \(identifier: name) AS schemagen_copy WHERE schemagen_copy.\(n) = schemagen_source.\(o) \
            AND schemagen_copy.\(n) >= $1::\(type) AND schemagen_copy.\(n) <= $2::\(type))
            """
    }

    /// The copy's secondary indexes, built once it is filled (each row is entered once), under
    /// names of their own until contract; a build killed midway is dropped and built again.
    var indexBuilds: [SQL] {
        change.to.indexes.map { index in
            let indexName = index.isFullText ? searchIndexName(index) : self.indexName(index)
            let columns: SQL = index.isFullText ? "USING GIN (\(identifier: PostgresRenderer.searchColumn(index)))" : "(\(SQL.identifiers(index.columns)))"
            return
                "DROP INDEX CONCURRENTLY IF EXISTS \(identifier: indexName);\nCREATE \(index.isUnique && !index.isFullText ? "UNIQUE " : "")INDEX CONCURRENTLY \(identifier: indexName) ON \(identifier: name) \(columns);"
        }
    }

    /// The new version's foreign keys on columns the old table's keys do not hold (a new
    /// relationship): on the copy during expand, so the new version's writes are checked. The
    /// others (`swapKeys`) are held by the old table's keys until contract, with the old
    /// version's delete rules, and move to the copy at the swap: two keys on one row would
    /// cascade twice.
    var expandKeys: [ForeignKeySnapshot] {
        change.to.foreignKeys.filter { key in
            let sources = key.columns.map { change.columnSources[$0] }
            return !change.from.foreignKeys.contains { $0.columns.map(Optional.some) == sources }
        }
    }

    var swapKeys: [ForeignKeySnapshot] { change.to.foreignKeys.filter { !expandKeys.contains($0) } }

    /// After the copy: unique indexes become constraints, and the new relationships' foreign
    /// keys hold for new rows at once (`NOT VALID`), each validated later without blocking writes.
    var constraintsAfterCopy: [SQL] {
        var statements: [SQL] = change.to.indexes.filter { $0.isUnique && !$0.isFullText }.map {
            "ALTER TABLE \(identifier: name) ADD CONSTRAINT \(identifier: indexName($0)) UNIQUE USING INDEX \(identifier: indexName($0));"
        }
        statements += expandKeys.map { key in
            // Onto itself: the copy; onto another table: that table as it is named until contract.
            var target = key
            if key.table == final { target.table = name } else { target = physicalKey(key) }
            target.columns = key.columns
            return "ALTER TABLE \(identifier: name) ADD CONSTRAINT \(identifier: PostgresRenderer.foreignKeyName(final, key)) \(PostgresRenderer.references(target)) NOT VALID;"
        }
        return statements
    }

    /// Contract, in one transaction: the tables it changes locked first, in one order (tables
    /// whose keys refer to the old table, the tables the keys refer to, the copy, the old
    /// table), so no app transaction locking them in another order deadlocks with it; both
    /// triggers go, the foreign keys onto the old table are moved onto the copy and the copy's
    /// own added (`NOT VALID`, validated after), the old table goes, the copy takes its name,
    /// its key's and indexes' names and the old key sequence's place, and the old table's
    /// other triggers (the store's change triggers among them) are made again on it.
    var swap: [SQL] {
        var renames: [SQL] = ["ALTER TABLE \(identifier: final) RENAME CONSTRAINT \(identifier: keyName) TO \(identifier: PostgresRenderer.primaryKeyName(final));"]
        for index in change.to.indexes {
            if index.isFullText {
                renames.append("ALTER INDEX \(identifier: searchIndexName(index)) RENAME TO \(identifier: PostgresRenderer.searchIndex(index));")
            } else if index.isUnique {
                renames.append("ALTER TABLE \(identifier: final) RENAME CONSTRAINT \(identifier: indexName(index)) TO \(identifier: PostgresRenderer.indexName(index));")
            } else {
                renames.append("ALTER INDEX \(identifier: indexName(index)) RENAME TO \(identifier: PostgresRenderer.indexName(index));")
            }
        }
        renames += swapKeys.map { "ALTER TABLE \(identifier: final) ADD \(PostgresRenderer.foreignKey(final, $0)) NOT VALID;" }
        // The new version's view reads the table under its own name from now on.
        renames.append("COMMENT ON VIEW \(SQL.identifier(final, in: newSchema)) IS NULL;")
        let referenced = Set(swapKeys.map(\.table).filter { $0 != final }).sorted()
        let lockReferenced: [SQL] = referenced.map { "LOCK TABLE \(identifier: $0) IN SHARE ROW EXCLUSIVE MODE;" }
        // A column of the old table under its new name (the version may rename it).
        let renamedColumns = change.renamedColumns.sorted { $0.from < $1.from }
        let newColumnName: SQL =
            renamedColumns.isEmpty
            ? "a.attname::text" : "CASE a.attname::text \(SQL.list(renamedColumns.map { "WHEN \(literal: $0.from) THEN \(literal: $0.to)" }, separator: " ")) ELSE a.attname::text END"
        let autoIncrement = keyColumn?.isAutoIncrement == true
        // The key's sequence: where the old one was, on a new identity (the old goes with its table).
        // Its options (a descending or bounded sequence's included) and privileges go with it.
        let sequenceTaken: SQL = """
            EXECUTE format('SELECT last_value, is_called FROM %s', pg_get_serial_sequence(\(oldRelation), \(literal: oldKey))) INTO last_key, key_called;
                SELECT format('INCREMENT BY %s MINVALUE %s MAXVALUE %s CACHE %s %sCYCLE', s.seqincrement, s.seqmin, s.seqmax, s.seqcache, CASE WHEN s.seqcycle THEN '' ELSE 'NO ' END),
                    ARRAY(SELECT format('GRANT %s ON SEQUENCE %%s TO %s%s', g.privilege_type, \(Self.grantee), CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
                        FROM pg_class c, aclexplode(c.relacl) g WHERE c.oid = s.seqrelid AND g.grantee <> c.relowner)
                    INTO sequence_options, sequence_grants FROM pg_sequence s WHERE s.seqrelid = to_regclass(pg_get_serial_sequence(\(oldRelation), \(literal: oldKey)));
                EXECUTE format('ALTER TABLE %I ALTER COLUMN %I DROP DEFAULT', \(literal: name), \(literal: newKey));
            """
        let sequenceGiven: SQL = """
            EXECUTE format('ALTER TABLE %I ALTER COLUMN %I ADD GENERATED BY DEFAULT AS IDENTITY (%s)', \(literal: final), \(literal: newKey), coalesce(sequence_options, ''));
                PERFORM setval(pg_get_serial_sequence(\(finalRelation), \(literal: newKey)), last_key, key_called);
                FOREACH statement IN ARRAY coalesce(sequence_grants, '{}') LOOP
                    EXECUTE format(statement, pg_get_serial_sequence(\(finalRelation), \(literal: newKey)));
                END LOOP;
            """
        return [
            SQL(verbatim: SQLComment.line("\(name) takes the place of \(old): writes to either wait for this transaction")),
            """
            DO $schemagen$ DECLARE t record; BEGIN
                FOR t IN SELECT DISTINCT conrelid FROM pg_constraint WHERE contype = 'f' AND confrelid = \(oldRelation)::regclass AND conrelid <> \(oldRelation)::regclass ORDER BY conrelid LOOP
                    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', t.conrelid::regclass);
                END LOOP;
                FOR t IN SELECT DISTINCT confrelid FROM pg_constraint WHERE contype = 'f' AND conrelid = \(oldRelation)::regclass AND confrelid <> \(oldRelation)::regclass ORDER BY confrelid LOOP
                    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', t.confrelid::regclass);
                END LOOP;
            END $schemagen$;
            """,
        ] + lockReferenced + [
            "LOCK TABLE \(identifier: name) IN ACCESS EXCLUSIVE MODE;",
            "LOCK TABLE \(identifier: old) IN ACCESS EXCLUSIVE MODE;",
            "DROP TRIGGER IF EXISTS \(identifier: function) ON \(identifier: old);",
            "DROP TRIGGER IF EXISTS \(identifier: truncateTrigger) ON \(identifier: old);",
            "DROP TRIGGER IF EXISTS \(identifier: backFunction) ON \(identifier: name);",
            "DROP FUNCTION IF EXISTS \(identifier: function)();",
            "DROP FUNCTION IF EXISTS \(identifier: backFunction)();",
            // What changed on the old table during the rollout, on the copy now.
            reconcileCopy,
            carryOntoCopy,
            """
            DO $schemagen$ DECLARE
                -- Trigger definitions name their table qualified.
                old_name text := (SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = \(oldRelation)::regclass);
                new_name text := (SELECT format('%I.%I', n.nspname, \(literal: final)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = \(oldRelation)::regclass);
                triggers text[];
                keys text[];
                statement text;
                last_key bigint;
                key_called boolean;
                k record;
                item record;
                sequence_options text;
                dropping_dependents boolean := false;
                sequence_grants text[];
                views text[];
                remade text[];
                after_rename text[];
            BEGIN
                -- The old table's other triggers, but those the copy already has (the store's, made by the new version).
                FOR item IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = \(oldRelation)::regclass AND NOT t.tgisinternal AND \(usesChangedColumn("'pg_trigger'::regclass", "t.oid")) LOOP
                    IF current_setting('schemagen.drop_uncarried', true) IS DISTINCT FROM 'on' THEN
                        RAISE EXCEPTION 'schemagen: trigger % on % uses a column this version renames or drops, so it cannot follow the table: drop it, run `migrate complete` again, then make it again (or pass --drop-uncarried to drop it)', item.tgname, \(oldRelation);
                    END IF;
                    RAISE WARNING 'schemagen: dropped trigger % on % (it uses a column this version renames or drops), as --drop-uncarried allows', item.tgname, \(oldRelation);
                END LOOP;
                triggers := ARRAY(SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE t.tgrelid = \(oldRelation)::regclass AND NOT t.tgisinternal
                    AND NOT \(usesChangedColumn("'pg_trigger'::regclass", "t.oid"))
                    AND NOT EXISTS (SELECT FROM pg_trigger c WHERE c.tgrelid = \(copyRelation)::regclass AND NOT c.tgisinternal AND c.tgfoid = t.tgfoid AND c.tgtype = t.tgtype));
                -- Other tables' keys onto the old table (a partition's copy of its parent's key goes with the parent's).
                -- Each made again onto the table's new name and its columns' new names.
                FOR k IN SELECT c.conrelid::regclass::text AS tbl, c.conname, pg_get_constraintdef(c.oid) AS def,
                        (SELECT string_agg(quote_ident(\(newColumnName)), ', ' ORDER BY r.position)
                            FROM unnest(c.confkey) WITH ORDINALITY AS r(attnum, position) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = r.attnum) AS referenced
                    FROM pg_constraint c WHERE c.contype = 'f' AND c.confrelid = \(oldRelation)::regclass AND c.conrelid <> \(oldRelation)::regclass AND c.conparentid = 0 LOOP
                    keys := keys || format('ALTER TABLE %s ADD CONSTRAINT %I %s NOT VALID', k.tbl, k.conname,
                        regexp_replace(k.def, ' REFERENCES .*?\\((.*?)\\)', ' REFERENCES ' || new_name || '(' || k.referenced || ')'));
                    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', k.tbl, k.conname);
                END LOOP;
                \(carryBeforeDrop)
                \(autoIncrement ? sequenceTaken : "")
                EXECUTE format('DROP TABLE %I%s', \(literal: old), CASE WHEN dropping_dependents THEN ' CASCADE' ELSE '' END);
                EXECUTE format('ALTER TABLE %I RENAME TO %I', \(literal: name), \(literal: final));
                \(autoIncrement ? sequenceGiven : "")
                FOREACH statement IN ARRAY triggers LOOP
                    IF position(' ON ' || old_name || ' ' IN statement) = 0 THEN RAISE EXCEPTION 'schemagen: cannot move the trigger % onto %', statement, new_name; END IF;
                    EXECUTE overlay(statement PLACING ' ON ' || new_name || ' ' FROM position(' ON ' || old_name || ' ' IN statement) FOR length(' ON ' || old_name || ' '));
                END LOOP;
                FOREACH statement IN ARRAY coalesce(keys, '{}') LOOP
                    EXECUTE statement;
                END LOOP;
                -- The copy's key and indexes take their names before what names them follows.
                \(SQL.list(renames, separator: "\n    "))
                \(carryAfterRename)
            END $schemagen$;
            """,
        ]
    }

    /// After the swap: the foreign keys moved onto the table, validated without blocking
    /// writes. A key that was not valid before the swap (rows break it) stays so, with a warning.
    var inboundKeyValidation: SQL {
        """
        DO $schemagen$ DECLARE k record; BEGIN
            FOR k IN SELECT conrelid::regclass::text AS tbl, conname FROM pg_constraint WHERE contype = 'f' AND confrelid = \(finalRelation)::regclass AND NOT convalidated LOOP
                BEGIN
                    EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', k.tbl, k.conname);
                EXCEPTION WHEN foreign_key_violation THEN
                    RAISE WARNING 'schemagen: % stays NOT VALID on %: rows break it', k.conname, k.tbl;
                END;
            END LOOP;
        END $schemagen$;
        """
    }

    /// Rollback: the triggers and the copy go; the old table has every row either version
    /// wrote, and its columns made optional for the rollout are required again unless rows
    /// written meanwhile lack them.
    var removal: [SQL] {
        var statements: [SQL] = [
            "DROP TRIGGER IF EXISTS \(identifier: function) ON \(identifier: old);",
            "DROP TRIGGER IF EXISTS \(identifier: truncateTrigger) ON \(identifier: old);",
            "DROP FUNCTION IF EXISTS \(identifier: function)();",
            "DROP TABLE IF EXISTS \(identifier: name);",
            "DROP FUNCTION IF EXISTS \(identifier: backFunction)();",
        ]
        statements += relaxed.map { OnlinePlanner.restoreNotNull(old, $0) }
        return statements
    }
}
