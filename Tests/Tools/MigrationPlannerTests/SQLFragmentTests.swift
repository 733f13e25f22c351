import SQLDialects
import SQLiteKit
import SchemaMetadata
import TestSupport
import Testing

/// `SQL` builds statements by construction: identifiers quoted, values bound, parameters
/// numbered for the dialect when rendered.
@Suite struct SQLFragmentTests {
    @Test func identifiersAreQuotedValuesBoundAndParametersNumberedPerDialect() {
        let table = "we\"ird"
        let filter: SQL = "\(identifier: "city") = \(value: .text("Zürich"))"
        let statement: SQL = "SELECT \(SQL.identifiers(["id", "name"])) FROM \(identifier: table) WHERE \(filter) AND \(identifier: "rank") > \(value: .integer(3))"
        let sqlite = statement.rendered(for: SQLiteDialect())
        #expect(sqlite.text == #"SELECT "id", "name" FROM "we""ird" WHERE "city" = ? AND "rank" > ?"#)
        #expect(sqlite.arguments == [.text("Zürich"), .integer(3)])
        let postgres = statement.rendered(for: PostgresDialect())
        #expect(postgres.text == #"SELECT "id", "name" FROM "we""ird" WHERE "city" = $1 AND "rank" > $2"#)
        #expect(postgres.arguments == sqlite.arguments)
        #expect(SQL.list([SQL]()).isEmpty && SQL.parameters([.null, .integer(1)]).description == "?, ?")
    }

    /// On a real database: a hostile name and a hostile value go in and come back as they were.
    @Test func hostileNamesAndValuesRoundTripThroughSQLite() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        let table = "t\"; DROP TABLE x; --"
        let value = StoredValue.text("'); DROP TABLE x; --")
        let create: SQL = "CREATE TABLE \(identifier: table) (\(identifier: "v a l") TEXT)"
        try connection.execute(create.description)
        let insert = ("INSERT INTO \(identifier: table) VALUES (\(value: value))" as SQL).rendered(for: SQLiteDialect())
        _ = try connection.query(insert.text, insert.arguments)
        let select = ("SELECT \(identifier: "v a l") FROM \(identifier: table) WHERE \(identifier: "v a l") = \(value: value)" as SQL).rendered(for: SQLiteDialect())
        #expect(try connection.query(select.text, select.arguments) == [[value]])
    }
}
