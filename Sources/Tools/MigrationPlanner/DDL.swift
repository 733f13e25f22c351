import SQLDialects

/// The DDL statements both renderers write alike, built as `SQL` so every name in them is
/// quoted by construction; each renderer's own statements are `SQL` interpolations too, and
/// become text only when a migration file is written (`SQL.text(for:)`).
///
///     DDL.renameColumn("name", to: "title", in: "book").text(for: SQLiteDialect())   // ALTER TABLE "book" RENAME COLUMN "name" TO "title";
enum DDL {
    static func dropTable(_ table: String) -> SQL { "DROP TABLE \(identifier: table);" }

    static func renameTable(_ table: String, to name: String) -> SQL { "ALTER TABLE \(identifier: table) RENAME TO \(identifier: name);" }

    static func addColumn(_ definition: SQL, to table: String) -> SQL { "ALTER TABLE \(identifier: table) ADD COLUMN \(definition);" }

    static func dropColumn(_ column: String, from table: String) -> SQL { "ALTER TABLE \(identifier: table) DROP COLUMN \(identifier: column);" }

    static func renameColumn(_ column: String, to name: String, in table: String) -> SQL {
        "ALTER TABLE \(identifier: table) RENAME COLUMN \(identifier: column) TO \(identifier: name);"
    }

    /// `ALTER TABLE "table" ` followed by the rest of the statement.
    static func alterTable(_ table: String, _ action: SQL) -> SQL { "ALTER TABLE \(identifier: table) \(action)" }

    /// `ALTER TABLE "table" DROP CONSTRAINT IF EXISTS "name";`
    static func dropConstraint(_ name: String, from table: String) -> SQL { "ALTER TABLE \(identifier: table) DROP CONSTRAINT IF EXISTS \(identifier: name);" }

    /// `ALTER TABLE "table" VALIDATE CONSTRAINT "name";`
    static func validateConstraint(_ name: String, on table: String) -> SQL { "ALTER TABLE \(identifier: table) VALIDATE CONSTRAINT \(identifier: name);" }

    /// Statements joined one per line, as a migration file or a phase's section holds them.
    static func script(_ statements: [SQL], for dialect: any SQLDialect) -> String {
        statements.map { $0.text(for: dialect) }.joined(separator: "\n")
    }
}
