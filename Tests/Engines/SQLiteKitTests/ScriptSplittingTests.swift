import Foundation
import SQLiteKit
import TestSupport
import Testing

/// Scripts are split into statements as SQLite reads them, without preparing them.
@Suite struct ScriptSplittingTests {
    @Test func semicolonsInsideStringsNamesCommentsAndTriggersDoNotSplit() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE "a;b" (x TEXT DEFAULT ';');
            /* block; comment */
            CREATE TRIGGER "t" AFTER INSERT ON "a;b" BEGIN INSERT INTO "a;b" VALUES ('x;'); SELECT 1; END;
            INSERT INTO "a;b" VALUES ('it''s; fine');
            -- trailing comment
            """
        let statements = SQLiteConnection.statements(in: script)
        #expect(
            statements == [
                "CREATE TABLE \"a;b\" (x TEXT DEFAULT ';');",
                "CREATE TRIGGER \"t\" AFTER INSERT ON \"a;b\" BEGIN INSERT INTO \"a;b\" VALUES ('x;'); SELECT 1; END;",
                "INSERT INTO \"a;b\" VALUES ('it''s; fine');",
            ])
    }

    @Test func countsStatementsOfTablesThatDoNotExistYet() throws {
        // Preparing the index would fail before the table exists; counting must not prepare.
        let connection = try SQLiteConnection(path: ":memory:")
        #expect(connection.statementCount("CREATE TABLE t (x);\nCREATE INDEX i ON t (x);\nINSERT INTO t VALUES (1);\n") == 3)
        #expect(connection.statementCount("-- only a comment\n") == 0)
    }

    @Test func errorsNameTheFileAndKeepTheCode() throws {
        let path = temporaryFolder().appendingPathComponent("not-a-db").path
        try Data(repeating: 7, count: 2048).write(to: URL(fileURLWithPath: path))
        let connection = try SQLiteConnection(path: path)
        #expect(throws: SQLiteError.self) { try connection.query("SELECT 1 FROM sqlite_schema") }
        do {
            _ = try connection.query("SELECT 1 FROM sqlite_schema")
        } catch {
            #expect(error.primary == .notADatabase)
            #expect(error.database == path)
            #expect(error.description.hasPrefix(path + ": file is not a database"))
        }
    }

    @Test func insertedRowsAreCountedWhileAStatementRuns() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        try connection.execute("CREATE TABLE t (x INTEGER);")
        var seen: [Int] = []
        connection.setProgressHandler(every: 1_000) { if let count = connection.currentInsertCount { seen.append(count) } }
        try connection.countingInsertedRows { () throws(SQLiteError) in
            try connection.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000) INSERT INTO t SELECT i FROM n;")
        }
        connection.setProgressHandler(every: 0, nil)
        #expect(!seen.isEmpty)
        #expect(seen == seen.sorted(), "the count only grows")
        #expect(seen.allSatisfy { $0 <= 50_000 })
        #expect(connection.currentInsertCount == nil, "counting stops with the body")
    }
}
