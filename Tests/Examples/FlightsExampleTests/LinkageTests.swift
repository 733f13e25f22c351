import Foundation
import TestSupport
import Testing

/// An application links only what it uses: a SQLite-only app that uses the store (`bookmarks`)
/// links the runtime alone. It loads neither libpq (the PostgreSQL adapter) nor libyaml (the
/// schema reader), and no tool module is linked into it statically. The examples that open
/// either engine (`flights`, `todo`) link libpq, and still no tool module.
@Suite(.blocking) struct LinkageTests {
    /// What a command prints for a built product.
    static func output(_ command: [String], of product: String) throws -> String {
        let run = try standardOutput(of: command[0], Array(command.dropFirst()) + [BuiltTool(product).url.path])
        #expect(run.status == 0, "\(command) \(product): \(run.output)")
        return run.output
    }

    /// The shared libraries `ldd` lists for a built product, by file name.
    static func libraries(of product: String) throws -> [String] {
        try output(["ldd"], of: product).split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
    }

    static func links(_ libraries: [String], _ name: String) -> Bool { libraries.contains { $0.hasPrefix(name) } }

    /// Whether a module's mangled name appears among a product's defined symbols.
    static func definesSymbols(of module: String, in symbols: String) -> Bool { symbols.contains("\(module.count)\(module)") }

    /// Modules of the command-line tools, which no app needs.
    static let toolModules = ["YAMLReader", "SchemaKit", "MigrationPlanner", "Mustache", "CodeGeneration"]

    @Test func aSQLiteOnlyAppLinksTheRuntimeAlone() throws {
        let product = "bookmarks"
        let libraries = try Self.libraries(of: product)
        #expect(Self.links(libraries, "libsqlite3."), "\(product) reads SQLite: \(libraries)")
        #expect(!Self.links(libraries, "libpq."), "\(product): \(libraries)")
        #expect(!Self.links(libraries, "libyaml"), "\(product): \(libraries)")
        let symbols = try Self.output(["nm", "--defined-only"], of: product)
        #expect(Self.definesSymbols(of: "MigratorSQLite", in: symbols), "the check reads \(product)'s symbols")
        for module in Self.toolModules + ["PostgresKit", "MigratorPostgres", "PersistentStorePostgres"] {
            #expect(!Self.definesSymbols(of: module, in: symbols), "\(module) is linked into \(product)")
        }
    }

    /// A server on PostgreSQL (`PersistentStorePostgres` alone) links libpq and no SQLite: the
    /// adapter re-exports the core, not SQLite's adapter. And it works: it claims jobs.
    @Test func aPostgreSQLServerLinksNoSQLite() throws {
        let product = "dispatcher"
        let libraries = try Self.libraries(of: product)
        #expect(Self.links(libraries, "libpq."), "\(product) talks to PostgreSQL: \(libraries)")
        #expect(!Self.links(libraries, "libsqlite3."), "\(product): \(libraries)")
        #expect(!Self.links(libraries, "libyaml"), "\(product): \(libraries)")
        let symbols = try Self.output(["nm", "--defined-only"], of: product)
        #expect(Self.definesSymbols(of: "PersistentStorePostgres", in: symbols), "the check reads \(product)'s symbols")
        for module in Self.toolModules + ["SQLiteKit", "MigratorSQLite", "PersistentStoreSQLite"] {
            #expect(!Self.definesSymbols(of: module, in: symbols), "\(module) is linked into \(product)")
        }
        guard let server = PostgresServer.shared else { return print("◇ SKIPPED: running dispatcher: \(PostgresServer.skipReason)") }
        let url = try server.createDatabase()
        let folder = temporaryFolder()
        let first = try runProgram(BuiltTool(product).url.path, [url, "worker-1"], in: folder)
        #expect(first.status == 0 && first.output == "claimed: [\"job-0\", \"job-1\", \"job-2\"], queued: 2\n", "\(first.output)")
        let second = try runProgram(BuiltTool(product).url.path, [url, "worker-2"], in: folder)
        #expect(second.output == "claimed: [\"job-3\", \"job-4\"], queued: 0\n", "a rerun enqueues nothing again: \(second.output)")
        let sqlite = try runProgram(BuiltTool(product).url.path, [folder.appendingPathComponent("jobs.sqlite").path], in: folder)
        #expect(sqlite.status == 1 && sqlite.output.contains("is a SQLite file, and Store(url:) opens PostgreSQL servers"), "\(sqlite.output)")
    }

    /// The examples open SQLite or PostgreSQL by URL: they link libpq, and no tool module.
    @Test(arguments: ["flights", "todo"])
    func theExamplesLinkBothEnginesAndNoTool(product: String) throws {
        let libraries = try Self.libraries(of: product)
        #expect(Self.links(libraries, "libsqlite3.") && Self.links(libraries, "libpq."), "\(product): \(libraries)")
        #expect(!Self.links(libraries, "libyaml"), "\(product): \(libraries)")
        let symbols = try Self.output(["nm", "--defined-only"], of: product)
        #expect(Self.definesSymbols(of: "PersistentStorePostgres", in: symbols), "the check reads \(product)'s symbols")
        for module in Self.toolModules {
            #expect(!Self.definesSymbols(of: module, in: symbols), "\(module) is linked into \(product)")
        }
    }

    /// The same checks see the libraries and modules where they are used, so they can fail.
    @Test func theToolsLinkWhatTheyUse() throws {
        let migrate = try Self.libraries(of: "migrate")
        #expect(Self.links(migrate, "libpq.") && Self.links(migrate, "libyaml"), "\(migrate)")
        #expect(Self.definesSymbols(of: "MigratorPostgres", in: try Self.output(["nm", "--defined-only"], of: "migrate")))
        let schemagen = try Self.libraries(of: "schemagen")
        // `schemagen import postgres` reads a server's catalogue: schemagen links libpq for it.
        #expect(Self.links(schemagen, "libyaml") && Self.links(schemagen, "libpq."), "\(schemagen)")
    }
}
