import Foundation
import TestSupport
import Testing

/// Online migration files written by an earlier release run as they are: sections without
/// their facts on the `-- section:` line, backfills without their pending-rows query
/// (Tests/Fixtures/OnlineFilesFromEarlierReleases). Each phase runs over rows already there, and
/// the rows come out as the new version says.
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct PreviousOnlineFilesTests {
    static let folder = "Tests/Fixtures/OnlineFilesFromEarlierReleases/Migrations/Shop"

    @Test func onlineFilesOfAnEarlierReleaseExpandRollBackAndComplete() throws {
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        let url = try server.createDatabase()
        let migrate = BuiltTool("migrate")
        func run(_ arguments: [String]) throws -> BuiltTool.Run {
            let run = try migrate.run(arguments + ["--database", url, "--dir", Self.folder])
            #expect(run.status == 0, "migrate \(arguments.joined(separator: " ")): \(run.error)")
            return run
        }
        func value(_ sql: String) throws -> String {
            try runProgram("/usr/bin/psql", [url, "-tAX", "-v", "ON_ERROR_STOP=1", "-c", sql], in: temporaryFolder()).output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        _ = try run(["up", "--to", "1", "--complete"])
        _ = try value(
            """
            INSERT INTO customer (name) SELECT 'customer ' || n FROM generate_series(1, 1500) AS n;
            INSERT INTO item (title, quantity, price, buyer_id) SELECT 'item ' || n, n, n * 1.5, 1 + n % 1500 FROM generate_series(1, 2500) AS n
            """)
        // Version 2: a rename and a copied table, served beside version 1; rolled back, then again.
        _ = try run(["up", "--to", "2"])
        #expect(try value("SELECT count(*) FROM shop_v2.item WHERE label LIKE 'item %'") == "2500")
        #expect(try value("SELECT count(*) FROM shop_v1.item WHERE title LIKE 'item %'") == "2500")
        _ = try run(["rollback"])
        #expect(try value("SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'shop_v2'") == "0")
        _ = try run(["up", "--to", "2"])
        _ = try value("INSERT INTO shop_v1.item (title, quantity, price, buyer_id) VALUES ('written by version 1', 7, 1, 1)")
        _ = try run(["complete"])
        #expect(try value("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'item'::regclass AND attname = 'quantity'") == "bigint")
        #expect(try value("SELECT count(*) FROM item WHERE sku = 'none'") == "2501")
        #expect(try value("SELECT quantity FROM item WHERE label = 'written by version 1'") == "7")
        // Version 3: a column filled per row in batches, and index builds.
        _ = try run(["up", "--complete"])
        #expect(try value("SELECT count(*) FROM customer WHERE created_at IS NULL OR token IS NULL") == "0")
        #expect(try value("SELECT count(DISTINCT token) FROM customer") == "1500")
        #expect(try value("SELECT count(*) FROM pg_index JOIN pg_class ON pg_class.oid = indexrelid WHERE NOT indisvalid") == "0")
        let status = try run(["status"])
        #expect(status.output.contains("3"), "\(status.output)")
    }
}
