import ExampleModels
import Foundation
import PersistentStoreSQLite
import TestSupport
import Testing

/// What the pages once said against the code, checked against the code now: a page that says it
/// again fails here.
@Suite struct DocsAgreeWithCodeTests {
    static let pages: [String] =
        ["README.md", "CHANGELOG.md"]
        + ((try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.path + "/docs")) ?? []).filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }

    static func text(_ page: String) throws -> String {
        try String(contentsOf: repositoryRoot.appendingPathComponent(page), encoding: .utf8)
    }

    /// The product `PersistentStorePostgres` is PostgreSQL's adapter alone, and no page says it
    /// brings SQLite along.
    @Test func thePostgresProductHoldsNoSQLite() throws {
        let manifest = try Self.text("Package.swift")
        #expect(manifest.contains(#".library(name: "PersistentStorePostgres", targets: ["PersistentStorePostgres"])"#))
        // The adapter target's declaration: its name and its dependencies.
        let declaration = try #require(manifest.range(of: #"name: "PersistentStorePostgres",\s*dependencies: \[[^\]]*\]"#, options: .regularExpression))
        let target = manifest[declaration]
        #expect(target.contains("PostgresKit") && !target.contains("SQLite"), "the PostgreSQL adapter depends on SQLite: \(target)")
        for page in Self.pages {
            // Sentences, as wrapped lines are joined back.
            let prose = try Self.text(page).replacingOccurrences(of: "\n", with: " ")
            let claim = prose.range(of: #"`PersistentStorePostgres`[^.]{0,80}\b(includes|also has|and) (the )?(SQLite|`PersistentStoreSQLite`)"#, options: .regularExpression)
            #expect(claim == nil, "\(page) says PersistentStorePostgres brings SQLite: \(claim.map { String(prose[$0]) } ?? "")")
        }
    }

    /// The change streams' errors arrive as `any Error` (this compiles only while they do), and
    /// the runtime guide says so.
    @Test func theChangeStreamsThrowAnyError() async throws {
        let store = try Store(path: nil, schema: FlightsSchema.descriptor, migrations: FlightsSchema.migrations)
        let changes: AsyncThrowingStream<HistoryTransaction, any Error> = try await store.changes()
        let count: AsyncThrowingStream<Int, any Error> = await store.observeCount(Flight.self)
        _ = (changes, count)
        let runtime = try Self.text("docs/runtime.md").replacingOccurrences(of: "\n", with: " ")
        #expect(runtime.contains("`AsyncThrowingStream`s, whose errors arrive as `any Error`"), "docs/runtime.md no longer says how the change streams throw")
    }

    /// An online type change copies the table and swaps it in at contract, as the pages say;
    /// none says it adds a replacement column for a type change the copy carries.
    @Test func anOnlineTypeChangeIsACopy() throws {
        let project = temporaryFolder()
        let schemas = project.appendingPathComponent("Schemas")
        try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
        func schema(_ version: Int, _ type: String) -> String {
            "schema: Shop\nversion: \(version)\ndialects: [postgres]\nonline: true\nentities:\n  Order:\n    attributes:\n      total: {type: \(type)}\n"
        }
        try schema(1, "Int32").write(to: schemas.appendingPathComponent("Shop.yaml"), atomically: true, encoding: .utf8)
        let first = try BuiltTool("schemagen").run(["generate", "--migrations-only"], in: project)
        #expect(first.status == 0, "\(first.error)")
        try schema(2, "Int64").write(to: schemas.appendingPathComponent("Shop.yaml"), atomically: true, encoding: .utf8)
        let plan = try BuiltTool("schemagen").run(["diff"], in: project)
        #expect(plan.status == 0, "\(plan.error)")
        #expect(plan.output.contains(#"CREATE TABLE IF NOT EXISTS "schemagen_2_order""#), "the expand phase builds a copy: \(plan.output.prefix(2000))")
        for page in ["docs/commands.md", "docs/postgres.md", "docs/workflow.md"] {
            let prose = try Self.text(page).replacingOccurrences(of: "\n", with: " ")
            #expect(prose.range(of: #"type change[^.]{0,60}adds a replacement column"#, options: .regularExpression) == nil, "\(page) says a type change adds a replacement column")
        }
        let commands = try Self.text("docs/commands.md").replacingOccurrences(of: "\n", with: " ")
        #expect(commands.contains("rebuilds the table beside the old one"), "docs/commands.md says how an online type change is made")
    }
}
