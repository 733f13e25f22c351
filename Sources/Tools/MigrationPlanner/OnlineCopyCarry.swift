import MigrationFiles
import RelationalModel
import SQLDialects

/// What a DBA made on a table rebuilt by copying, outside the schema, carried to the table that
/// replaces it, as pg_repack carries it: read from the catalogue when expand and contract run,
/// since the plan cannot know it.
///
/// - Before the copy, on the empty copy (so its rows enter them as they are copied, with no
///   lock on a filled table): indexes (definitions, predicates, `INCLUDE`, storage and
///   tablespace), CHECK, UNIQUE and EXCLUDE constraints, row-level security policies, column
///   privileges, statistics targets and options, storage parameters, comments. Indexes and
///   constraints backed by one take names of their own until contract.
/// - At contract, in the swap's transaction: what can only follow the table once it has its
///   name (views and materialized views reading it, made again over it; publications;
///   extended statistics; replica identity; the clustering index; row-level security turned
///   on; the key sequence's options; its own foreign keys onto other tables, `NOT VALID` then
///   validated), and its triggers and other tables' keys onto it, as before. What was made
///   during the rollout is made on the copy then.
///
/// What uses a column the version renames or drops cannot be carried: expand's `check`
/// section lists it and stops, unless the run drops such objects (`--drop-uncarried`,
/// `schemagen.drop_uncarried`), each with a warning.
extension CopiedTable {
    /// The names the schema gives what it makes on the old table (its key, indexes, unique
    /// and foreign keys, enum checks): everything else there, but the toolkit's own
    /// (`schemagen…`), was made outside the schema.
    var schemaMadeNames: SQL {
        var names = [PostgresRenderer.primaryKeyName(old), PostgresRenderer.primaryKeyName(final)]
        // The new version's names too: a hand-made object it adopts under the same name is its own.
        for (table, snapshot) in [(old, change.from), (final, change.to)] {
            for index in snapshot.indexes {
                names.append(index.isFullText ? PostgresRenderer.searchIndex(index) : PostgresRenderer.indexName(index))
            }
            names += snapshot.foreignKeys.map { PostgresRenderer.foreignKeyName(table, $0) }
            names += snapshot.columns.filter { $0.enumValues != nil }.map { PostgresRenderer.checkName(table, $0.name) }
        }
        return Self.textArray(Array(Set(names)).sorted())
    }

    /// The old table's columns this version renames or drops: what uses them cannot be
    /// carried (its definition names them).
    var changedColumns: SQL { Self.textArray(change.renamedColumns.map(\.from) + change.droppedColumns.map(\.name)) }
    /// Old columns whose new column has a comment from the schema: theirs is not carried.
    var documentedColumns: SQL {
        Self.textArray(change.to.columns.filter { $0.doc != nil }.compactMap { change.columnSources[$0.name] })
    }

    static func textArray(_ values: [String]) -> SQL {
        values.isEmpty ? "ARRAY[]::text[]" : "ARRAY[\(SQL.list(values.map { SQL.literal($0) }))]::text[]"
    }

    /// A column of the old table (`column`, text) under its name in the new version.
    func newName(_ column: SQL) -> SQL {
        let renamed = change.renamedColumns.sorted { $0.from < $1.from }
        guard !renamed.isEmpty else { return column }
        return "CASE \(column) \(SQL.list(renamed.map { "WHEN \(literal: $0.from) THEN \(literal: $0.to)" }, separator: " ")) ELSE \(column) END"
    }

    /// Whether the catalogue object (`classid`, `objid`) uses a column the version renames or
    /// drops, by the dependencies PostgreSQL records.
    func usesChangedColumn(_ classid: SQL, _ objid: SQL) -> SQL {
        """
        EXISTS (SELECT FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid \
        WHERE d.classid = \(classid) AND d.objid = \(objid) AND d.refclassid = 'pg_class'::regclass AND d.refobjid = \(oldRelation)::regclass \
        AND a.attname = ANY(\(changedColumns)))
        """
    }

    /// The temporary name of a carried index, or of a constraint's, on the copy until contract.
    func carriedName(_ kind: String, _ oid: SQL) -> SQL { "\(literal: "schemagen_\(version)_\(kind)") || \(oid)" }

    /// Views reading the old table, and views reading those, with their depth (a view after the
    /// views it reads).
    var dependentViews: SQL {
        """
        WITH RECURSIVE dependents(oid, depth) AS (
                SELECT DISTINCT r.ev_class, 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class
                    WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass AND d.refobjid = \(oldRelation)::regclass AND r.ev_class <> \(oldRelation)::regclass
                    -- The previous version's own views, which contract drops with their schema.
                    AND v.relnamespace IS DISTINCT FROM to_regnamespace(\(literal: SQL.identifier(oldSchema).text(for: PostgresRenderer.dialect)))
                UNION
                SELECT DISTINCT r.ev_class, v.depth + 1 FROM dependents v JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = v.oid AND d.classid = 'pg_rewrite'::regclass
                    JOIN pg_rewrite r ON r.oid = d.objid WHERE r.ev_class <> v.oid AND v.depth < 50
            ) SELECT c.oid, c.relkind, format('%I.%I', n.nspname, c.relname) AS name, max(v.depth) AS depth
            FROM dependents v JOIN pg_class c ON c.oid = v.oid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('v', 'm') GROUP BY c.oid, c.relkind, n.nspname, c.relname
        """
    }

    /// What else depends on the old table, its rows' type or its key sequence, and cannot follow
    /// it (a function taking its rows, another table's policy or default, a column of its
    /// type): rows of `what`. Not views, rules and functions with a SQL body (listed on their
    /// own), foreign keys (moved), the table's and the copy's own defaults.
    var otherDependents: SQL {
        """
        SELECT DISTINCT pg_describe_object(d.classid, d.objid, d.objsubid) AS what FROM pg_depend d
                WHERE d.deptype = 'n' AND ((d.refclassid = 'pg_class'::regclass AND (d.refobjid = \(oldRelation)::regclass OR d.refobjid IN (
                        SELECT s.objid FROM pg_depend s JOIN pg_class q ON q.oid = s.objid AND q.relkind = 'S'
                        WHERE s.classid = 'pg_class'::regclass AND s.refclassid = 'pg_class'::regclass AND s.refobjid = \(oldRelation)::regclass)))
                    OR (d.refclassid = 'pg_type'::regclass AND d.refobjid IN (SELECT t.oid FROM pg_type t WHERE t.typrelid = \(oldRelation)::regclass
                        OR t.typelem IN (SELECT e.oid FROM pg_type e WHERE e.typrelid = \(oldRelation)::regclass))))
                AND d.classid NOT IN ('pg_rewrite'::regclass, 'pg_constraint'::regclass, 'pg_type'::regclass)
                AND NOT (d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_class'::regclass)
                AND NOT (d.classid = 'pg_class'::regclass AND d.objid IN (\(oldRelation)::regclass, coalesce(to_regclass(\(copyRelation)), 0)))
                AND NOT (d.classid = 'pg_attrdef'::regclass AND EXISTS (SELECT FROM pg_attrdef f WHERE f.oid = d.objid
                    AND f.adrelid IN (\(oldRelation)::regclass, coalesce(to_regclass(\(copyRelation)), 0))))
                -- The table's own triggers, policies, publication entries, statistics and indexes: carried, or listed on their own.
                AND NOT (d.classid = 'pg_trigger'::regclass AND EXISTS (SELECT FROM pg_trigger t WHERE t.oid = d.objid AND t.tgrelid = \(oldRelation)::regclass))
                AND NOT (d.classid = 'pg_policy'::regclass AND EXISTS (SELECT FROM pg_policy p WHERE p.oid = d.objid AND p.polrelid = \(oldRelation)::regclass))
                AND NOT (d.classid = 'pg_publication_rel'::regclass AND EXISTS (SELECT FROM pg_publication_rel p WHERE p.oid = d.objid AND p.prrelid = \(oldRelation)::regclass))
                AND NOT (d.classid = 'pg_statistic_ext'::regclass AND EXISTS (SELECT FROM pg_statistic_ext t WHERE t.oid = d.objid AND t.stxrelid = \(oldRelation)::regclass))
                AND NOT (d.classid = 'pg_class'::regclass AND EXISTS (SELECT FROM pg_index x WHERE x.indexrelid = d.objid AND x.indrelid = \(oldRelation)::regclass))
        """
    }

    /// At the swap, before what was made during the rollout is carried: the copy made to match
    /// the old table as it is now. Its policies are dropped (made again from the old table's),
    /// and so are carried indexes and constraints whose source is gone or changed; its table
    /// and column privileges and its owner are those of the old table now. Carried names are
    /// matched whole (`schemagen_<N>_i<oid>`): the plan's own temporary names share the prefix.
    var reconcileCopy: SQL {
        let made = schemaMadeNames
        return """
            DO $schemagen$ DECLARE
                old_table regclass := to_regclass(\(oldRelation));
                copy_table regclass := to_regclass(\(copyRelation));
                r record;
                g record;
                owner regrole;
            BEGIN
                IF old_table IS NULL OR copy_table IS NULL THEN RETURN; END IF;
                FOR r IN SELECT polname FROM pg_policy WHERE polrelid = copy_table LOOP
                    EXECUTE format('DROP POLICY %I ON %s', r.polname, copy_table);
                END LOOP;
                FOR r IN SELECT format('%I.%I', n.nspname, i.relname) AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_namespace n ON n.oid = i.relnamespace
                    WHERE x.indrelid = copy_table AND i.relname ~ \(literal: "^schemagen_\(version)_i[0-9]+$")
                    AND NOT EXISTS (SELECT FROM pg_index o WHERE o.indrelid = old_table AND \(carriedName("i", "o.indexrelid")) = i.relname) LOOP
                    EXECUTE format('DROP INDEX %s', r.name);
                END LOOP;
                FOR r IN SELECT k.conname FROM pg_constraint k WHERE k.conrelid = copy_table AND k.contype IN ('c', 'u', 'x') AND NOT (k.conname = ANY(\(made)))
                    AND (k.conname ~ \(literal: "^schemagen_\(version)_c[0-9]+$") AND NOT EXISTS (SELECT FROM pg_constraint o WHERE o.conrelid = old_table AND \(carriedName("c", "o.oid")) = k.conname)
                        OR k.conname NOT LIKE 'schemagen%' AND NOT EXISTS (SELECT FROM pg_constraint o WHERE o.conrelid = old_table AND o.conname = k.conname
                            AND pg_get_constraintdef(o.oid) = pg_get_constraintdef(k.oid))) LOOP
                    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', copy_table, r.conname);
                END LOOP;
                owner := (SELECT relowner::regrole FROM pg_class WHERE oid = old_table);
                IF owner <> (SELECT relowner::regrole FROM pg_class WHERE oid = copy_table) THEN EXECUTE format('ALTER TABLE %s OWNER TO %s', copy_table, owner); END IF;
                FOR g IN SELECT DISTINCT a.grantee FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = copy_table AND a.grantee <> c.relowner LOOP
                    EXECUTE format('REVOKE ALL ON %s FROM %s', copy_table, \(Self.grantee));
                END LOOP;
                FOR g IN SELECT a.privilege_type, a.grantee, a.is_grantable FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = old_table AND a.grantee <> c.relowner LOOP
                    EXECUTE format('GRANT %s ON %s TO %s%s', g.privilege_type, copy_table, \(Self.grantee), CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
                END LOOP;
                FOR g IN SELECT DISTINCT a.attname, x.grantee FROM pg_attribute a, aclexplode(a.attacl) x WHERE a.attrelid = copy_table AND a.attacl IS NOT NULL LOOP
                    EXECUTE format('REVOKE ALL (%I) ON %s FROM %s', g.attname, copy_table, \(Self.grantee));
                END LOOP;
            END $schemagen$;
            """
    }

    /// Why a view reading the table cannot be made again over the new one, or NULL.
    func viewProblem(_ view: SQL) -> SQL {
        let renamed: SQL = old != final ? "WHEN true THEN \(literal: "it reads \(old) by name, which this version renames to \(final)") " : ""
        return """
            CASE \(renamed)WHEN EXISTS (SELECT FROM pg_rewrite r WHERE r.ev_class = \(view) AND \(usesChangedColumn("'pg_rewrite'::regclass", "r.oid"))) \
            THEN 'it uses a column this version renames or drops' \
            WHEN NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = \(view)), 'USAGE') \
            THEN 'the migrating role does not own it, so it cannot drop it and make it again' END
            """
    }

    /// Expand's first section: what will be carried to the copy, and what cannot be (rows of
    /// what, `carry` or `stop`, how or why).
    var carryCheck: SQL {
        let table = "\(oldRelation)::regclass"
        let changed = "it uses a column this version renames or drops"
        let made = schemaMadeNames
        func action(_ uses: SQL) -> SQL { "CASE WHEN \(uses) THEN 'stop' ELSE 'carry' END" }
        return """
            SELECT object, action, reason FROM (
            SELECT 1 AS sort, format('index %I on %s', i.relname, \(SQL(verbatim: table))) AS object, \(action(usesChangedColumn("'pg_class'::regclass", "x.indexrelid"))) AS action,
                CASE WHEN \(usesChangedColumn("'pg_class'::regclass", "x.indexrelid")) THEN \(literal: changed) ELSE 'built on the copy before its rows, renamed at contract' END AS reason
                FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = \(SQL(verbatim: table))
                AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conindid = x.indexrelid AND k.conrelid = x.indrelid) AND NOT (i.relname = ANY(\(made))) AND i.relname NOT LIKE 'schemagen%'
            UNION ALL
            SELECT 2, format('%s constraint %I on %s', CASE k.contype WHEN 'c' THEN 'check' WHEN 'u' THEN 'unique' WHEN 'x' THEN 'exclusion' ELSE 'foreign key' END, k.conname, \(SQL(verbatim: table))),
                \(action(usesChangedColumn("'pg_constraint'::regclass", "k.oid"))),
                CASE WHEN \(usesChangedColumn("'pg_constraint'::regclass", "k.oid"))  THEN \(literal: changed)
                    WHEN k.contype = 'f' THEN 'moved to the table at contract (NOT VALID, then validated)' ELSE 'added to the copy before its rows' END
                FROM pg_constraint k WHERE k.conrelid = \(SQL(verbatim: table)) AND k.contype IN ('c', 'u', 'x', 'f') AND NOT (k.conname = ANY(\(made))) AND k.conname NOT LIKE 'schemagen%'
            UNION ALL
            SELECT 3, format('foreign key %I on %s', k.conname, k.conrelid::regclass), \(action(usesChangedColumn("'pg_constraint'::regclass", "k.oid"))),
                CASE WHEN \(usesChangedColumn("'pg_constraint'::regclass", "k.oid")) THEN \(literal: changed) ELSE 'made again onto the table at contract (NOT VALID, then validated)' END
                FROM pg_constraint k WHERE k.contype = 'f' AND k.confrelid = \(SQL(verbatim: table)) AND k.conrelid <> \(SQL(verbatim: table)) AND k.conparentid = 0
            UNION ALL
            SELECT 4, format('trigger %I on %s', t.tgname, \(SQL(verbatim: table))), \(action(usesChangedColumn("'pg_trigger'::regclass", "t.oid"))),
                CASE WHEN \(usesChangedColumn("'pg_trigger'::regclass", "t.oid")) THEN \(literal: changed) ELSE 'made again on the table at contract; until then it fires for the old version''s writes' END
                FROM pg_trigger t WHERE t.tgrelid = \(SQL(verbatim: table)) AND NOT t.tgisinternal AND t.tgname NOT LIKE 'schemagen%'
            UNION ALL
            SELECT 5, format('policy %I on %s', p.polname, \(SQL(verbatim: table))), \(action(usesChangedColumn("'pg_policy'::regclass", "p.oid"))),
                CASE WHEN \(usesChangedColumn("'pg_policy'::regclass", "p.oid")) THEN \(literal: changed) ELSE 'made on the copy, in force from contract' END
                FROM pg_policy p WHERE p.polrelid = \(SQL(verbatim: table))
            UNION ALL
            SELECT 6, format('row-level security on %s', c.oid::regclass), 'carry', 'turned on (and forced, as it is) at contract'
                FROM pg_class c WHERE c.oid = \(SQL(verbatim: table)) AND (c.relrowsecurity OR c.relforcerowsecurity)
            UNION ALL
            SELECT 7, format('%s of %s.%I', concat_ws(', ', CASE WHEN a.attacl IS NOT NULL THEN 'column privileges' END,
                    CASE WHEN coalesce(a.attstattarget, -1) >= 0 THEN 'statistics target' END, CASE WHEN a.attoptions IS NOT NULL THEN 'options' END,
                    CASE WHEN col_description(a.attrelid, a.attnum) IS NOT NULL AND NOT (a.attname = ANY(\(documentedColumns))) THEN 'comment' END), \(SQL(verbatim: table)), \(newName("a.attname::text"))),
                'carry', 'given to the copy''s column'
                FROM pg_attribute a WHERE a.attrelid = \(SQL(verbatim: table)) AND a.attnum > 0 AND NOT a.attisdropped AND NOT (a.attname = ANY(\(Self.textArray(change.droppedColumns.map(\.name)))))
                AND (a.attacl IS NOT NULL OR coalesce(a.attstattarget, -1) >= 0 OR a.attoptions IS NOT NULL
                    OR (col_description(a.attrelid, a.attnum) IS NOT NULL AND NOT (a.attname = ANY(\(documentedColumns)))))
            UNION ALL
            SELECT 8, format('%s of %s', concat_ws(', ', CASE WHEN c.reloptions IS NOT NULL THEN 'storage parameters (' || array_to_string(c.reloptions, ', ') || ')' END,
                    CASE WHEN t.reloptions IS NOT NULL THEN 'TOAST storage parameters' END, \(change.to.doc == nil ? "CASE WHEN obj_description(c.oid, 'pg_class') IS NOT NULL THEN 'comment' END" : "NULL")), c.oid::regclass),
                'carry', 'given to the copy'
                FROM pg_class c LEFT JOIN pg_class t ON t.oid = c.reltoastrelid WHERE c.oid = \(SQL(verbatim: table))
                AND (c.reloptions IS NOT NULL OR t.reloptions IS NOT NULL\(change.to.doc == nil ? " OR obj_description(c.oid, 'pg_class') IS NOT NULL" : ""))
            UNION ALL
            SELECT 9, format('replica identity %s of %s', CASE c.relreplident WHEN 'f' THEN 'FULL' WHEN 'n' THEN 'NOTHING' ELSE 'USING INDEX' END, c.oid::regclass), 'carry', 'set at contract'
                FROM pg_class c WHERE c.oid = \(SQL(verbatim: table)) AND c.relreplident <> 'd'
            UNION ALL
            SELECT 10, format('clustering of %s on %I', \(SQL(verbatim: table)), i.relname), 'carry', 'set at contract'
                FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = \(SQL(verbatim: table)) AND x.indisclustered
            UNION ALL
            SELECT 11, format('%s %s', CASE v.relkind WHEN 'm' THEN 'materialized view' ELSE 'view' END, v.name), CASE WHEN \(viewProblem("v.oid")) IS NULL THEN 'carry' ELSE 'stop' END,
                coalesce(\(viewProblem("v.oid")), CASE v.relkind WHEN 'm' THEN 'made again over the table at contract, and refilled' ELSE 'made again over the table at contract' END)
                FROM (\(dependentViews)) v
            UNION ALL
            SELECT 12, format('publication %I', p.pubname),
                \(action(usesChangedColumn("'pg_publication_rel'::regclass", "r.oid"))),
                CASE WHEN \(usesChangedColumn("'pg_publication_rel'::regclass", "r.oid")) THEN 'its column list or row filter has a column this version renames or drops'
                    ELSE 'the table added to it again at contract' END
                FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid WHERE r.prrelid = \(SQL(verbatim: table))
            UNION ALL
            SELECT 13, format('statistics %I.%I', s.stxnamespace::regnamespace, s.stxname), \(action(usesChangedColumn("'pg_statistic_ext'::regclass", "s.oid"))),
                CASE WHEN \(usesChangedColumn("'pg_statistic_ext'::regclass", "s.oid")) THEN \(literal: changed) ELSE 'made again at contract' END
                FROM pg_statistic_ext s WHERE s.stxrelid = \(SQL(verbatim: table))
            UNION ALL
            SELECT 14, format('function %s', d.objid::regprocedure), 'stop',
                'its body names the table (BEGIN ATOMIC), which keeps the old table from being dropped at contract: drop it before `migrate complete` and make it again after'
                FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_class'::regclass AND d.refobjid = \(SQL(verbatim: table))
            UNION ALL
            SELECT 15, format('rule %I on %s', r.rulename, r.ev_class::regclass), 'stop', 'a rule cannot be carried: drop it before `migrate complete` and make it again after'
                FROM pg_rewrite r WHERE r.rulename <> '_RETURN' AND (r.ev_class = \(SQL(verbatim: table)) OR EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_rewrite'::regclass
                    AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass AND d.refobjid = \(SQL(verbatim: table))))
            UNION ALL
            SELECT 16, o.what, 'stop', 'it depends on the table (its rows'' type, its key sequence or the table itself), which the copy replaces at contract: drop it before `migrate complete` and make it again after'
                FROM (\(otherDependents)) o
            ) found WHERE to_regclass(\(oldRelation)) IS NOT NULL ORDER BY sort, object;
            """
    }

    /// What the old table has that the copy lacks, made on the copy: run before the copy (on
    /// the empty table) and again in the swap (for what was made during the rollout). Safe to
    /// run again: each object is made only where it is missing.
    var carryOntoCopy: SQL {
        let made = schemaMadeNames
        return """
            DO $schemagen$ DECLARE
                old_table regclass := to_regclass(\(oldRelation));
                copy_table regclass := to_regclass(\(copyRelation));
                old_name text;
                copy_name text;
                copy_schema text;
                r record;
                g record;
                target text;
                definition text;
                at integer;
                note text;
            BEGIN
                IF old_table IS NULL OR copy_table IS NULL THEN RETURN; END IF;
                SELECT format('%I.%I', n.nspname, c.relname), n.nspname INTO old_name, copy_schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = old_table;
                copy_name := format('%I.%I', copy_schema, \(literal: name));
                -- Storage parameters, the table's and its TOAST table's; the comment where the schema has none.
                FOR r IN SELECT coalesce(prefix || split_part(o, '=', 1), '') AS option, substr(o, strpos(o, '=') + 1) AS value
                    FROM (SELECT '' AS prefix, unnest(reloptions) AS o FROM pg_class WHERE oid = old_table
                        UNION ALL SELECT 'toast.', unnest(t.reloptions) FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid WHERE c.oid = old_table) options LOOP
                    EXECUTE format('ALTER TABLE %s SET (%s = %L)', copy_table, r.option, r.value);
                END LOOP;
                \(change.to.doc == nil ? "IF obj_description(old_table, 'pg_class') IS NOT NULL AND obj_description(copy_table, 'pg_class') IS NULL THEN EXECUTE format('COMMENT ON TABLE %s IS %L', copy_table, obj_description(old_table, 'pg_class')); END IF;" : "")
                -- Each kept column's statistics target, options, privileges and comment, under its new name.
                FOR r IN SELECT a.attnum, a.attstattarget, a.attoptions, a.attacl, \(newName("a.attname::text")) AS column_name, a.attname = ANY(\(documentedColumns)) AS documented
                    FROM pg_attribute a WHERE a.attrelid = old_table AND a.attnum > 0 AND NOT a.attisdropped LOOP
                    CONTINUE WHEN NOT EXISTS (SELECT FROM pg_attribute c WHERE c.attrelid = copy_table AND c.attname = r.column_name AND NOT c.attisdropped);
                    IF coalesce(r.attstattarget, -1) >= 0 THEN EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS %s', copy_table, r.column_name, r.attstattarget); END IF;
                    IF r.attoptions IS NOT NULL THEN
                        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET (%s)', copy_table, r.column_name,
                            (SELECT string_agg(format('%s = %L', split_part(o, '=', 1), substr(o, strpos(o, '=') + 1)), ', ') FROM unnest(r.attoptions) o));
                    END IF;
                    FOR g IN SELECT * FROM aclexplode(r.attacl) LOOP
                        EXECUTE format('GRANT %s (%I) ON %s TO %s%s', g.privilege_type, r.column_name, copy_table, \(Self.grantee), CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
                    END LOOP;
                    IF NOT r.documented AND col_description(old_table, r.attnum) IS NOT NULL AND col_description(copy_table, (SELECT attnum FROM pg_attribute WHERE attrelid = copy_table AND attname = r.column_name)) IS NULL THEN
                        EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', copy_table, r.column_name, col_description(old_table, r.attnum));
                    END IF;
                END LOOP;
                -- Indexes, and the indexes of unique constraints (which take them), under names of their own.
                FOR r IN SELECT x.indexrelid, i.relname, pg_get_indexdef(x.indexrelid) AS def, ts.spcname, obj_description(x.indexrelid, 'pg_class') AS note, k.oid AS constraint_oid
                    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid LEFT JOIN pg_tablespace ts ON ts.oid = i.reltablespace
                    LEFT JOIN pg_constraint k ON k.conindid = x.indexrelid AND k.conrelid = x.indrelid
                    WHERE x.indrelid = old_table AND (k.oid IS NULL OR k.contype = 'u') AND NOT (i.relname = ANY(\(made))) AND i.relname NOT LIKE 'schemagen%'
                    AND NOT CASE WHEN k.oid IS NULL THEN \(usesChangedColumn("'pg_class'::regclass", "x.indexrelid")) ELSE \(usesChangedColumn("'pg_constraint'::regclass", "k.oid")) END LOOP
                    target := CASE WHEN r.constraint_oid IS NULL THEN \(carriedName("i", "r.indexrelid")) ELSE \(carriedName("c", "r.constraint_oid")) END;
                    CONTINUE WHEN to_regclass(format('%I.%I', copy_schema, target)) IS NOT NULL
                        OR EXISTS (SELECT FROM pg_constraint WHERE conrelid = copy_table AND conname = target);
                    at := position(' ON ' || old_name || ' USING ' IN r.def);
                    IF at = 0 THEN RAISE EXCEPTION 'schemagen: cannot read the definition of index % to carry it: %', r.relname, r.def; END IF;
                    definition := CASE WHEN r.def LIKE 'CREATE UNIQUE INDEX %' THEN 'CREATE UNIQUE INDEX ' ELSE 'CREATE INDEX ' END || quote_ident(target) || ' ON ' || copy_name
                        || substr(r.def, at + length(' ON ' || old_name));
                    IF r.spcname IS NOT NULL THEN
                        definition := CASE WHEN position(' WHERE ' IN definition) > 0
                            THEN overlay(definition PLACING ' TABLESPACE ' || quote_ident(r.spcname) || ' WHERE ' FROM position(' WHERE ' IN definition) FOR 7)
                            ELSE definition || ' TABLESPACE ' || quote_ident(r.spcname) END;
                    END IF;
                    EXECUTE definition;
                    IF r.constraint_oid IS NOT NULL THEN
                        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I UNIQUE USING INDEX %I%s', copy_table, target, target,
                            (SELECT CASE WHEN condeferrable THEN ' DEFERRABLE' || CASE WHEN condeferred THEN ' INITIALLY DEFERRED' ELSE '' END ELSE '' END FROM pg_constraint WHERE oid = r.constraint_oid));
                        note := obj_description(r.constraint_oid, 'pg_constraint');
                        IF note IS NOT NULL THEN EXECUTE format('COMMENT ON CONSTRAINT %I ON %s IS %L', target, copy_table, note); END IF;
                    ELSIF r.note IS NOT NULL THEN
                        EXECUTE format('COMMENT ON INDEX %I.%I IS %L', copy_schema, target, r.note);
                    END IF;
                END LOOP;
                -- Validated CHECK constraints (under their own names: a table's alone) and EXCLUDE ones; a NOT VALID check
                -- would refuse the copied rows that break it, so it follows the table at contract.
                FOR r IN SELECT k.oid, k.conname, k.contype, pg_get_constraintdef(k.oid) AS def, obj_description(k.oid, 'pg_constraint') AS note, ts.spcname
                    FROM pg_constraint k LEFT JOIN pg_class i ON i.oid = k.conindid LEFT JOIN pg_tablespace ts ON ts.oid = i.reltablespace
                    WHERE k.conrelid = old_table AND k.contype IN ('c', 'x') AND k.convalidated AND NOT (k.conname = ANY(\(made))) AND k.conname NOT LIKE 'schemagen%'
                    AND NOT \(usesChangedColumn("'pg_constraint'::regclass", "k.oid")) LOOP
                    target := CASE WHEN r.contype = 'c' THEN r.conname ELSE \(carriedName("c", "r.oid")) END;
                    CONTINUE WHEN EXISTS (SELECT FROM pg_constraint WHERE conrelid = copy_table AND conname = target);
                    definition := r.def;
                    IF r.spcname IS NOT NULL THEN
                        -- Before its WHERE, DEFERRABLE or INITIALLY clause, whichever comes first.
                        at := (SELECT min(p) FROM unnest(ARRAY[position(' WHERE (' IN definition), position(' DEFERRABLE' IN definition), position(' INITIALLY' IN definition)]) p WHERE p > 0);
                        definition := CASE WHEN at IS NOT NULL
                            THEN overlay(definition PLACING ' USING INDEX TABLESPACE ' || quote_ident(r.spcname) || ' ' FROM at FOR 1)
                            ELSE definition || ' USING INDEX TABLESPACE ' || quote_ident(r.spcname) END;
                    END IF;
                    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', copy_table, target, definition);
                    IF r.note IS NOT NULL THEN EXECUTE format('COMMENT ON CONSTRAINT %I ON %s IS %L', target, copy_table, r.note); END IF;
                END LOOP;
                -- Row-level security policies, in force once the table is swapped in.
                FOR r IN SELECT p.polname, p.polpermissive, p.polcmd, p.polroles, pg_get_expr(p.polqual, p.polrelid) AS qual, pg_get_expr(p.polwithcheck, p.polrelid) AS checked,
                        obj_description(p.oid, 'pg_policy') AS note
                    FROM pg_policy p WHERE p.polrelid = old_table AND NOT \(usesChangedColumn("'pg_policy'::regclass", "p.oid")) LOOP
                    CONTINUE WHEN EXISTS (SELECT FROM pg_policy WHERE polrelid = copy_table AND polname = r.polname);
                    EXECUTE format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', r.polname, copy_table, CASE WHEN r.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                        CASE r.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                        (SELECT string_agg(CASE WHEN role = 0 THEN 'PUBLIC' ELSE role::regrole::text END, ', ') FROM unnest(r.polroles) AS role),
                        coalesce(' USING (' || r.qual || ')', ''), coalesce(' WITH CHECK (' || r.checked || ')', ''));
                    IF r.note IS NOT NULL THEN EXECUTE format('COMMENT ON POLICY %I ON %s IS %L', r.polname, copy_table, r.note); END IF;
                END LOOP;
            END $schemagen$;
            """
    }

    /// The swap's part before the old table is dropped: what depends on it, read and put out
    /// of the way. Everything it keeps is made again by `carryAfterRename`; anything else that
    /// depends on the table stops the swap (or, with `schemagen.drop_uncarried`, is dropped
    /// with a warning).
    var carryBeforeDrop: SQL {
        let made = schemaMadeNames
        let dropping = "current_setting('schemagen.drop_uncarried', true) = 'on'"
        return """
            -- What would keep the old table from being dropped, or goes with it, and cannot follow
                -- it: each stops the swap, or is dropped with a warning.
                FOR item IN SELECT format('function %s', d.objid::regprocedure) AS what, format('DROP FUNCTION %s', d.objid::regprocedure) AS statement
                        FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_class'::regclass AND d.refobjid = \(oldRelation)::regclass
                    UNION ALL
                    SELECT format('rule %I on %s', r.rulename, r.ev_class::regclass), format('DROP RULE %I ON %s', r.rulename, r.ev_class::regclass)
                        FROM pg_rewrite r WHERE r.rulename <> '_RETURN' AND r.ev_class <> \(oldRelation)::regclass AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_rewrite'::regclass
                            AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass AND d.refobjid = \(oldRelation)::regclass)
                    UNION ALL
                    SELECT format('index %I (it uses a column this version renames or drops)', i.relname), NULL FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                        LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.conrelid = x.indrelid
                        WHERE x.indrelid = \(oldRelation)::regclass AND NOT (i.relname = ANY(\(made))) AND i.relname NOT LIKE 'schemagen%'
                        AND CASE WHEN con.oid IS NULL THEN \(usesChangedColumn("'pg_class'::regclass", "x.indexrelid")) ELSE \(usesChangedColumn("'pg_constraint'::regclass", "con.oid")) END
                    UNION ALL
                    SELECT format('constraint %I (it uses a column this version renames or drops)', con.conname), NULL FROM pg_constraint con
                        WHERE con.conrelid = \(oldRelation)::regclass AND con.contype IN ('c', 'x', 'f') AND NOT (con.conname = ANY(\(made))) AND con.conname NOT LIKE 'schemagen%'
                        AND \(usesChangedColumn("'pg_constraint'::regclass", "con.oid"))
                    UNION ALL
                    SELECT format('policy %I (it uses a column this version renames or drops)', p.polname), NULL FROM pg_policy p
                        WHERE p.polrelid = \(oldRelation)::regclass AND \(usesChangedColumn("'pg_policy'::regclass", "p.oid"))
                    UNION ALL
                    SELECT format('statistics %I (it uses a column this version renames or drops)', st.stxname), NULL FROM pg_statistic_ext st
                        WHERE st.stxrelid = \(oldRelation)::regclass AND \(usesChangedColumn("'pg_statistic_ext'::regclass", "st.oid"))
                    UNION ALL
                    SELECT format('the table in publication %I (its column list or row filter uses a column this version renames or drops)', p.pubname), NULL
                        FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid WHERE r.prrelid = \(oldRelation)::regclass
                        AND \(usesChangedColumn("'pg_publication_rel'::regclass", "r.oid")) LOOP
                    IF NOT \(SQL(verbatim: dropping)) THEN
                        RAISE EXCEPTION 'schemagen: % depends on % and cannot follow it to the new table: drop it, run `migrate complete` again, then make it again (or pass --drop-uncarried to drop it)', item.what, \(oldRelation);
                    END IF;
                    RAISE WARNING 'schemagen: dropped % (it depends on %, and cannot follow it to the new table), as --drop-uncarried allows', item.what, \(oldRelation);
                    IF item.statement IS NOT NULL THEN EXECUTE item.statement; END IF;
                END LOOP;
                -- Views reading the table, and views reading those: made again in this order after the swap, dropped now the other way.
                FOR item IN SELECT v.*, \(viewProblem("v.oid")) AS problem, pg_get_viewdef(v.oid) AS def, cl.reloptions, cl.relowner, cl.relacl, ts.spcname, cl.relispopulated, am.amname
                        FROM (\(dependentViews)) v JOIN pg_class cl ON cl.oid = v.oid LEFT JOIN pg_tablespace ts ON ts.oid = cl.reltablespace LEFT JOIN pg_am am ON am.oid = cl.relam
                        ORDER BY v.depth, v.name LOOP
                    views := views || item.name;
                    IF item.problem IS NOT NULL THEN
                        IF NOT \(SQL(verbatim: dropping)) THEN
                            RAISE EXCEPTION 'schemagen: view % reads % and cannot be made again over the new table: %; drop it, run `migrate complete` again, then make it again (or pass --drop-uncarried to drop it)', item.name, \(oldRelation), item.problem;
                        END IF;
                        RAISE WARNING 'schemagen: dropped view % (%), as --drop-uncarried allows', item.name, item.problem;
                        CONTINUE;
                    END IF;
                    -- A materialized view is made empty and refilled by REFRESH once it has its owner,
                    -- which runs its query as that owner (its row-level security, its privileges).
                    remade := remade || CASE WHEN item.relkind = 'm' THEN
                            format('CREATE MATERIALIZED VIEW %s%s%s%s AS %s WITH NO DATA', item.name, CASE WHEN item.amname IS NOT NULL AND item.amname <> 'heap' THEN ' USING ' || quote_ident(item.amname) ELSE '' END,
                                CASE WHEN item.reloptions IS NOT NULL THEN ' WITH (' || array_to_string(item.reloptions, ', ') || ')' ELSE '' END,
                                CASE WHEN item.spcname IS NOT NULL THEN ' TABLESPACE ' || quote_ident(item.spcname) ELSE '' END, rtrim(item.def, '; '))
                        ELSE format('CREATE VIEW %s%s AS %s', item.name, CASE WHEN item.reloptions IS NOT NULL THEN ' WITH (' || array_to_string(item.reloptions, ', ') || ')' ELSE '' END, rtrim(item.def, '; ')) END;
                    IF item.relowner::regrole::text <> current_user::text THEN
                        remade := remade || format('ALTER %s %s OWNER TO %s', CASE WHEN item.relkind = 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, item.name, item.relowner::regrole);
                    END IF;
                    remade := remade || ARRAY(SELECT format('GRANT %s ON %s TO %s%s', g.privilege_type, item.name, \(Self.grantee), CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
                        FROM aclexplode(item.relacl) g WHERE g.grantee <> item.relowner);
                    remade := remade || ARRAY(SELECT format('GRANT %s (%I) ON %s TO %s%s', g.privilege_type, a.attname, item.name, \(Self.grantee), CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
                        FROM pg_attribute a, aclexplode(a.attacl) g WHERE a.attrelid = item.oid AND a.attacl IS NOT NULL);
                    remade := remade || ARRAY(SELECT format('COMMENT ON %s %s IS %L', CASE WHEN item.relkind = 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, item.name, obj_description(item.oid, 'pg_class'))
                        WHERE obj_description(item.oid, 'pg_class') IS NOT NULL);
                    remade := remade || ARRAY(SELECT format('COMMENT ON COLUMN %s.%I IS %L', item.name, a.attname, col_description(item.oid, a.attnum))
                        FROM pg_attribute a WHERE a.attrelid = item.oid AND a.attnum > 0 AND col_description(item.oid, a.attnum) IS NOT NULL);
                    -- A materialized view's indexes, a view's own triggers and rules.
                    remade := remade || ARRAY(SELECT pg_get_indexdef(x.indexrelid) FROM pg_index x WHERE x.indrelid = item.oid ORDER BY x.indexrelid);
                    remade := remade || ARRAY(SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t WHERE t.tgrelid = item.oid AND NOT t.tgisinternal ORDER BY t.oid);
                    remade := remade || ARRAY(SELECT pg_get_ruledef(r.oid) FROM pg_rewrite r WHERE r.ev_class = item.oid AND r.rulename <> '_RETURN' ORDER BY r.oid);
                    IF item.relkind = 'm' AND item.relispopulated THEN remade := remade || format('REFRESH MATERIALIZED VIEW %s', item.name); END IF;
                END LOOP;
                FOR item IN SELECT * FROM (\(dependentViews)) v ORDER BY v.depth DESC, v.name LOOP
                    EXECUTE format('DROP %s %s', CASE WHEN item.relkind = 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, item.name);
                END LOOP;
                -- Anything else that depends on the table, its rows' type or its key sequence.
                FOR item IN \(otherDependents) LOOP
                    IF NOT \(SQL(verbatim: dropping)) THEN
                        RAISE EXCEPTION 'schemagen: % depends on % (the table, its rows'' type or its key sequence) and cannot follow it to the new table: drop it, run `migrate complete` again, then make it again (or pass --drop-uncarried to drop it)', item.what, \(oldRelation);
                    END IF;
                    RAISE WARNING 'schemagen: dropped % (it depends on %, and cannot follow it to the new table), as --drop-uncarried allows', item.what, \(oldRelation);
                    dropping_dependents := true;
                END LOOP;
                -- The copy's carried indexes and constraints take their names.
                after_rename := after_rename || ARRAY(SELECT format('ALTER INDEX %I.%I RENAME TO %I', n.nspname, \(carriedName("i", "x.indexrelid")), i.relname)
                    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_namespace n ON n.oid = i.relnamespace WHERE x.indrelid = \(oldRelation)::regclass
                    AND to_regclass(format('%I.%I', n.nspname, \(carriedName("i", "x.indexrelid")))) IS NOT NULL);
                after_rename := after_rename || ARRAY(SELECT format('ALTER TABLE %s RENAME CONSTRAINT %I TO %I', new_name, \(carriedName("c", "con.oid")), con.conname)
                    FROM pg_constraint con WHERE con.conrelid = \(oldRelation)::regclass
                    AND EXISTS (SELECT FROM pg_constraint c WHERE c.conrelid = \(copyRelation)::regclass AND c.conname = \(carriedName("c", "con.oid"))));
                -- Publications, extended statistics, replica identity, clustering, row-level security, the key sequence's options.
                after_rename := after_rename || ARRAY(SELECT format('ALTER PUBLICATION %I ADD TABLE %s%s%s', p.pubname, new_name,
                        CASE WHEN r.prattrs IS NOT NULL THEN ' (' || (SELECT string_agg(quote_ident(\(newName("a.attname::text"))), ', ' ORDER BY a.attnum) FROM pg_attribute a
                            WHERE a.attrelid = r.prrelid AND a.attnum = ANY(r.prattrs)) || ')' ELSE '' END,
                        coalesce(' WHERE (' || pg_get_expr(r.prqual, r.prrelid) || ')', ''))
                    FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid WHERE r.prrelid = \(oldRelation)::regclass
                    AND NOT \(usesChangedColumn("'pg_publication_rel'::regclass", "r.oid")));
                after_rename := after_rename || ARRAY(SELECT pg_get_statisticsobjdef(s.oid) FROM pg_statistic_ext s
                    WHERE s.stxrelid = \(oldRelation)::regclass AND NOT \(usesChangedColumn("'pg_statistic_ext'::regclass", "s.oid")));
                after_rename := after_rename || ARRAY(SELECT format('ALTER TABLE %s REPLICA IDENTITY %s', new_name, CASE c.relreplident WHEN 'f' THEN 'FULL' WHEN 'n' THEN 'NOTHING'
                        ELSE 'USING INDEX ' || quote_ident((SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = c.oid AND x.indisreplident)) END)
                    FROM pg_class c WHERE c.oid = \(oldRelation)::regclass AND c.relreplident <> 'd');
                after_rename := after_rename || ARRAY(SELECT format('ALTER TABLE %s CLUSTER ON %I', new_name, i.relname)
                    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = \(oldRelation)::regclass AND x.indisclustered);
                after_rename := after_rename || ARRAY(SELECT format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', new_name) FROM pg_class WHERE oid = \(oldRelation)::regclass AND relrowsecurity);
                after_rename := after_rename || ARRAY(SELECT format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', new_name) FROM pg_class WHERE oid = \(oldRelation)::regclass AND relforcerowsecurity);
                -- CHECK constraints that were NOT VALID (rows break them): onto the new table as they were.
                after_rename := after_rename || ARRAY(SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', new_name, con.conname, pg_get_constraintdef(con.oid))
                    FROM pg_constraint con WHERE con.conrelid = \(oldRelation)::regclass AND con.contype = 'c' AND NOT con.convalidated AND NOT (con.conname = ANY(\(made)))
                    AND con.conname NOT LIKE 'schemagen%' AND NOT \(usesChangedColumn("'pg_constraint'::regclass", "con.oid")));
                -- The table's own foreign keys made outside the schema: onto the new table, NOT VALID (validated after).
                after_rename := after_rename || ARRAY(SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s%s', new_name, con.conname, pg_get_constraintdef(con.oid),
                        CASE WHEN con.convalidated THEN ' NOT VALID' ELSE '' END)
                    FROM pg_constraint con WHERE con.conrelid = \(oldRelation)::regclass AND con.contype = 'f' AND NOT (con.conname = ANY(\(made))) AND con.conname NOT LIKE 'schemagen%'
                    AND NOT \(usesChangedColumn("'pg_constraint'::regclass", "con.oid")));
            """
    }

    /// The swap's part after the table has its name: what `carryBeforeDrop` kept, made again;
    /// then the views, in order.
    var carryAfterRename: SQL {
        """
        FOREACH statement IN ARRAY coalesce(after_rename, '{}') LOOP
                EXECUTE statement;
            END LOOP;
            FOREACH statement IN ARRAY coalesce(remade, '{}') LOOP
                EXECUTE statement;
            END LOOP;
        """
    }

    /// After the swap: the table's own foreign keys made outside the schema, validated; one
    /// that rows break stays NOT VALID, with a warning.
    var outboundKeyValidation: SQL {
        """
        DO $schemagen$ DECLARE k record; BEGIN
            FOR k IN SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid = \(finalRelation)::regclass AND NOT convalidated LOOP
                BEGIN
                    EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', \(finalRelation)::regclass, k.conname);
                EXCEPTION WHEN foreign_key_violation THEN
                    RAISE WARNING 'schemagen: % stays NOT VALID on %: rows break it', k.conname, \(finalRelation);
                END;
            END LOOP;
        END $schemagen$;
        """
    }
}
