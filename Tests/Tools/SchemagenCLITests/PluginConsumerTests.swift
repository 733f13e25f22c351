import Foundation
import PersistentStoreSQLite
import TestSupport
import Testing

/// A new package that depends on this one and applies `SchemagenPlugin` to a target holding a
/// `Library.yaml` schema, as docs/templates.md tells users to: it must build, and its program
/// must open a store with the generated models and their embedded migrations. A schema changed
/// without planning its migration must fail the build with the command that fixes it.
///
/// The package lives in `.build/plugin-consumer`, so later runs build incrementally.
@Suite(.blocking, .serialized) struct PluginConsumerTests {
    static let root = SchemagenProcessTests.repositoryRoot
    static let folder = root.appendingPathComponent(".build/plugin-consumer")

    static let schemaV1 = """
        schema: Library
        version: 1
        entities:
          Book:
            attributes:
              isbn: {type: String, unique: true}
              title: String
              publishedAt: Date?
            relationships:
              shelf: {to: Shelf?, inverse: books}
          Shelf:
            attributes:
              name: {type: String, unique: true}
            relationships:
              books: {to: "[Book]", inverse: shelf, deleteRule: cascade}

        """

    static let program = """
        import Foundation
        import LibraryModels
        import PersistentStoreSQLite

        @main
        struct LibraryApp {
            static func main() async throws {
                let store = try Store(path: CommandLine.arguments[1], schema: LibrarySchema.descriptor, migrations: LibrarySchema.migrations)
                let shelf = try await store.insert(Shelf(name: "Fiction"))
                try await store.insert(Book(isbn: "978-0", title: "Dune", shelfID: shelf.id))
                try await store.insert(Book(isbn: "978-0", title: "Dune Messiah", shelfID: shelf.id))
                let books = try await store.fetch(Book.self, where: #Predicate { $0.title.starts(with: "Dune") })
                print("books: \\(books.count), title: \\(books[0].title), migrations: \\(LibrarySchema.migrations.count)")
            }
        }

        """

    /// Its `Note` syncs: the generated metadata's sync declaration must compile in the client.
    static let journalSchema = """
        schema: Journal
        version: 1
        entities:
          Entry:
            attributes:
              title: String
              body: {type: String, searchable: true}
              tags: {type: "[String]", default: [], searchable: true}
          Note:
            attributes:
              id: {type: UUID, primaryKey: true, default: uuid}
              owner: String
              text: String
              likes: {type: Int, default: 0}
        sync:
          Note: {scope: owner == $user, counters: [likes]}

        """

    /// Written as the previous release's docs showed it: the `PersistentStore` product and module.
    static let journalProgram = """
        import Foundation
        import JournalModels
        import PersistentStore

        let store = try Store(path: CommandLine.arguments[1], schema: JournalSchema.descriptor, migrations: JournalSchema.migrations)
        try await store.insert(Entry(title: "Lisbon", body: "Trams and tiles", tags: ["travel", "portugal"]))
        let found = try await store.search(Entry.self, matching: "portugal", snippets: SnippetStyle(open: "[", close: "]", tokens: 8))
        print("found: \\(found.count), tags: \\(found[0].snippets["tags"] ?? "-")")

        """

    /// A server on PostgreSQL, as docs/templates.md shows it: `PersistentStorePostgres`, a pool
    /// on the URL it is given, the Dispatch models generated and committed. Enqueueing is
    /// idempotent, so a second run claims what the first left.
    static let dispatcherProgram = """
        import DispatchModels
        import Foundation
        import PersistentStorePostgres
        import SyncServer

        // The sync server's product links into a client's server (its schema does not sync).
        _ = SyncServer.maximumPullLimit

        let pool = try StorePool(url: CommandLine.arguments[1], size: 2, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations)
        let queue = try await pool.withStore { try await $0.insert(Queue(name: "mail"), onConflict: .ignore) }
        let queueID = queue.id!
        _ = try await pool.withStore { try await $0.insert((0..<5).map { Job(name: "job-\\($0)", queueID: queueID) }, onConflict: .ignore) }
        let queued = JobState.queued
        let claimed = try await pool.withStore { store in
            try await store.claim(Job.self, where: #Predicate { $0.state == queued }, sortBy: [SortDescriptor(\\.name)], limit: 3,
                                  set: [.set(\\.state, to: .running), .set(\\.lockedBy, to: "dispatcher")])
        }
        let left = try await pool.withStore { try await $0.count(Job.self, where: #Predicate { $0.state == queued }) }
        print("claimed: \\(claimed.map(\\.name)), queued: \\(left)")

        """

    /// The package, its link to this repository under the name SwiftPM gives path packages
    /// (the folder's name), and its schema.
    static func writePackage() throws {
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: folder.appendingPathComponent("Sources/LibraryModels"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: folder.appendingPathComponent("Sources/library-app"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: folder.appendingPathComponent("Sources/JournalModels"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: folder.appendingPathComponent("Sources/journal-app"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: folder.appendingPathComponent("Schemas"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: folder.appendingPathComponent("Server"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: folder.appendingPathComponent("Sources/DispatchModels"), withIntermediateDirectories: true)
        try fileManager.createDirectory(at: folder.appendingPathComponent("Sources/dispatcher"), withIntermediateDirectories: true)
        for name in ["todo", "flights"] {
            try fileManager.createDirectory(at: folder.appendingPathComponent("Sources/\(name)"), withIntermediateDirectories: true)
        }
        // Named so that SwiftPM's identity of the path dependency (the folder's name) is not
        // the package's name: the manifest names it, as docs/templates.md shows.
        try? fileManager.removeItem(at: folder.appendingPathComponent("SchemaToolkit"))
        let link = folder.appendingPathComponent("schema-toolkit")
        if (try? fileManager.destinationOfSymbolicLink(atPath: link.path)) != root.path {
            try? fileManager.removeItem(at: link)
            try fileManager.createSymbolicLink(at: link, withDestinationURL: root)
        }
        let manifest = """
            // swift-tools-version: 6.1
            import PackageDescription

            let package = Package(
                name: "LibraryApp",
                platforms: [.macOS(.v14)],
                // Its own `todo` and `flights`, named as the toolkit's examples are: the examples
                // are no products, so these are the only ones of those names in the graph.
                products: [
                    .executable(name: "todo", targets: ["todo"]),
                    .executable(name: "flights", targets: ["flights"]),
                ],
                dependencies: [.package(name: "SchemaToolkit", path: "schema-toolkit")],
                targets: [
                    .executableTarget(name: "todo"),
                    .executableTarget(name: "flights"),
                    .target(
                        name: "LibraryModels",
                        dependencies: [.product(name: "SchemaMetadata", package: "SchemaToolkit")],
                        exclude: ["Migrations"],
                        plugins: [.plugin(name: "SchemagenPlugin", package: "SchemaToolkit")]),
                    .executableTarget(
                        name: "library-app",
                        dependencies: ["LibraryModels", .product(name: "PersistentStoreSQLite", package: "SchemaToolkit")]),
                    // Models generated by `swift package schemagen generate` and committed; the
                    // app as the previous release's docs wrote it (the `PersistentStore` product).
                    .target(name: "JournalModels", dependencies: [.product(name: "SchemaMetadata", package: "SchemaToolkit")]),
                    .executableTarget(
                        name: "journal-app",
                        dependencies: ["JournalModels", .product(name: "PersistentStore", package: "SchemaToolkit")]),
                    // A server on PostgreSQL, as docs/templates.md shows it now.
                    .target(name: "DispatchModels", dependencies: [.product(name: "SchemaMetadata", package: "SchemaToolkit")]),
                    .executableTarget(
                        name: "dispatcher",
                        dependencies: [
                            "DispatchModels", .product(name: "PersistentStorePostgres", package: "SchemaToolkit"), .product(name: "SyncServer", package: "SchemaToolkit"),
                        ]),
                ]
            )

            """
        try write(manifest, to: "Package.swift")
        try write(schemaV1, to: "Sources/LibraryModels/Library.yaml")
        // SwiftPM wants one Swift file of the target's own beside what the plugin generates.
        try write(
            "import SchemaMetadata\n\n/// Shelves in display order.\npublic func sortedShelves(_ shelves: [Shelf]) -> [Shelf] { shelves.sorted { $0.name < $1.name } }\n",
            to: "Sources/LibraryModels/Shelves.swift")
        try write(program, to: "Sources/library-app/main.swift")
        try write(journalSchema, to: "Schemas/Journal.yaml")
        // A models target needs one Swift file of its own before its first generation.
        try write("/// The journal's models, generated into Generated/ by `swift package schemagen generate`.\npublic enum JournalModels {}\n", to: "Sources/JournalModels/JournalModels.swift")
        try write(journalProgram, to: "Sources/journal-app/main.swift")
        try write(String(contentsOf: root.appendingPathComponent("Schemas/Dispatch.yaml"), encoding: .utf8), to: "Server/Dispatch.yaml")
        try write("/// The dispatcher's models, generated into Generated/.\npublic enum DispatchModels {}\n", to: "Sources/DispatchModels/DispatchModels.swift")
        try write(dispatcherProgram, to: "Sources/dispatcher/main.swift")
        for name in ["todo", "flights"] { try write("print(\"the client's own \(name)\")\n", to: "Sources/\(name)/main.swift") }
        try? fileManager.removeItem(at: folder.appendingPathComponent("Sources/LibraryModels/Migrations"))
    }

    static func write(_ text: String, to path: String) throws {
        let url = folder.appendingPathComponent(path)
        // Unchanged files keep their dates, so SwiftPM rebuilds only what changed.
        if (try? String(contentsOf: url, encoding: .utf8)) == text { return }
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    /// Builds here pass --disable-build-manifest-caching: after the toolkit's Package.swift changed
    /// its targets' dependencies, a cached build plan compiled a target before a module it now
    /// imports (seen with SwiftPM 6.2).
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try runProgram(executable, arguments, in: folder)
    }

    @Test func aPackageUsingThePluginOpensAStore() throws {
        try Self.writePackage()
        let schemagen = SchemagenProcessTests.executable.path

        // Before any migration is planned the build stops, saying how to plan one.
        let unplanned = try Self.run("swift", ["build", "--disable-build-manifest-caching", "--product", "library-app"])
        #expect(unplanned.status != 0)
        #expect(unplanned.output.contains("Library.yaml:1:1: error: schema 'Library' version 1 has no migrations"), "\(unplanned.output)")
        #expect(unplanned.output.contains("swift package --allow-writing-to-package-directory schemagen generate --migrations-only"), "\(unplanned.output)")

        // Planned as the message says (here with this build's schemagen), the build succeeds.
        let plan = try Self.run(schemagen, ["generate", "--migrations-only", "--schema", "Sources/LibraryModels/Library.yaml", "--migrations", "Sources/LibraryModels/Migrations"])
        #expect(plan.status == 0, "\(plan.output)")
        let build = try Self.run("swift", ["build", "--disable-build-manifest-caching", "--product", "library-app"])
        #expect(build.status == 0, "\(build.output)")

        let database = temporaryFolder().appendingPathComponent("library.sqlite").path
        let app = try Self.run(".build/debug/library-app", [database])
        #expect(app.status == 0, "\(app.output)")
        #expect(app.output == "books: 1, title: Dune Messiah, migrations: 1\n", "the upsert on isbn kept one book")

        // A schema changed without planning its migration fails the build; it never runs stale.
        try Self.write(
            Self.schemaV1.replacingOccurrences(of: "version: 1", with: "version: 2")
                .replacingOccurrences(of: "      publishedAt: Date?\n", with: "      publishedAt: Date?\n      pages: Int?\n"), to: "Sources/LibraryModels/Library.yaml")
        defer { try? Self.write(Self.schemaV1, to: "Sources/LibraryModels/Library.yaml") }
        let stale = try Self.run("swift", ["build", "--disable-build-manifest-caching", "--product", "library-app"])
        #expect(stale.status != 0)
        #expect(stale.output.contains("schema 'Library' version 2 differs from its newest migration (version 1)"), "\(stale.output)")
    }

    /// The tools through the command plugins, as a client package runs them: validate, generate
    /// into the package, migrate a SQLite file, then build and run an app on the models.
    @Test func aClientRunsTheToolsThroughCommandPlugins() throws {
        try Self.writePackage()
        try? FileManager.default.removeItem(at: Self.folder.appendingPathComponent("Sources/JournalModels/Generated"))
        try? FileManager.default.removeItem(at: Self.folder.appendingPathComponent("Migrations"))
        let database = temporaryFolder().appendingPathComponent("journal.sqlite").path

        let validate = try Self.run("swift", ["package", "schemagen", "validate", "Schemas"])
        #expect(validate.status == 0 && validate.output.contains("Checked 1 schema file: no problems."), "\(validate.output)")
        let invalid = try Self.run("swift", ["package", "schemagen", "validate", "Schemas/Missing.yaml"])
        #expect(invalid.status != 0 && invalid.output.contains("schemagen exited with status 2"), "\(invalid.output)")

        try? FileManager.default.removeItem(at: Self.folder.appendingPathComponent("Sources/DispatchModels/Generated"))
        let generate = try Self.run(
            "swift",
            [
                "package", "--allow-writing-to-package-directory", "schemagen", "generate",
                "--schema", "Schemas", "--output", "Sources/JournalModels/Generated",
            ])
        #expect(generate.status == 0, "\(generate.output)")
        #expect(generate.output.contains("wrote   Sources/JournalModels/Generated/Journal/Entry.swift"), "\(generate.output)")
        #expect(FileManager.default.fileExists(atPath: Self.folder.path + "/Migrations/Journal/0001_create_journal.up.sql"))
        // Generated output holds generated code only: the skip record is under .build.
        #expect(try FileManager.default.contentsOfDirectory(atPath: Self.folder.path + "/Sources/JournalModels/Generated") == ["Journal"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: Self.folder.path + "/.build/schemagen").contains { $0.hasPrefix("generate-") })

        // `swift package migrate` is SwiftPM's own command since Swift 6.2, so the plugin's verb is
        // reached through `swift package plugin migrate`.
        let up = try Self.run("swift", ["package", "plugin", "--allow-writing-to-package-directory", "migrate", "up", "--database", database, "--dir", "Migrations/Journal"])
        #expect(up.status == 0 && up.output.contains("applied  0001_create_journal"), "\(up.output)")
        let status = try Self.run("swift", ["package", "plugin", "migrate", "status", "--database", database, "--dir", "Migrations/Journal"])
        #expect(status.status == 0 && status.output.contains("0001     create_journal"), "\(status.output)")

        let build = try Self.run("swift", ["build", "--disable-build-manifest-caching", "--product", "journal-app"])
        #expect(build.status == 0, "\(build.output)")
        #expect(build.output.contains("deprecated") == false, "the previous release's app builds without deprecations:\n\(build.output)")
        let app = try Self.run(".build/debug/journal-app", [database])
        #expect(app.output == "found: 1, tags: travel [portugal]\n", "\(app.output)")
    }

    /// The toolkit's graph in a client: its libraries, its two tools and its plugins, not its
    /// examples. A client's own `todo` and `flights` products build as its own.
    @Test func aClientsOwnTodoAndFlightsProductsAreItsOwn() throws {
        try Self.writePackage()
        // A scratch folder of its own: the test run holds the lock on the repository's .build.
        let described = try Self.run("swift", ["package", "--package-path", "schema-toolkit", "--scratch-path", temporaryFolder().path, "dump-package"])
        #expect(described.status == 0, "\(described.output)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(described.output.utf8)) as? [String: Any])
        let products = Set(((manifest["products"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String })
        #expect(
            products == [
                "schemagen", "migrate", "PersistentStore", "PersistentStoreSQLite", "PersistentStorePostgres", "Migrator", "MigratorSQLite", "MigratorPostgres", "SchemaKit",
                "SchemaMetadata", "SyncClient", "SyncServer", "SchemagenPlugin", "SchemagenCommand", "MigrateCommand",
            ])
        for name in ["todo", "flights"] {
            let build = try Self.run("swift", ["build", "--disable-build-manifest-caching", "--product", name])
            #expect(build.status == 0, "\(build.output)")
            let ran = try Self.run(".build/debug/\(name)", [])
            #expect(ran.output == "the client's own \(name)\n", "\(ran.output)")
        }
    }

    /// The server on PostgreSQL as docs/templates.md shows it: models generated through the
    /// command plugin, `migrate --dir` given the schema's folder (its postgres/ folder used),
    /// then the app built on `PersistentStorePostgres` and run twice against the server.
    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func aServerPackageOnPostgreSQLBuildsAndRuns() throws {
        try Self.writePackage()
        let server = try #require(PostgresServer.shared, "the PostgreSQL test server did not start")
        try? FileManager.default.removeItem(at: Self.folder.appendingPathComponent("Sources/DispatchModels/Generated"))
        try? FileManager.default.removeItem(at: Self.folder.appendingPathComponent("Migrations/Dispatch"))
        let generate = try Self.run(
            "swift",
            ["package", "--allow-writing-to-package-directory", "schemagen", "generate", "--schema", "Server/Dispatch.yaml", "--output", "Sources/DispatchModels/Generated"])
        #expect(generate.status == 0, "\(generate.output)")
        #expect(FileManager.default.fileExists(atPath: Self.folder.path + "/Migrations/Dispatch/postgres/0001_create_dispatch.up.sql"))

        let url = try server.createDatabase()
        let up = try Self.run("swift", ["package", "plugin", "--allow-writing-to-package-directory", "migrate", "up", "--database", url, "--dir", "Migrations/Dispatch"])
        #expect(up.status == 0 && up.output.contains("applied  0001_create_dispatch"), "\(up.output)")
        #expect(up.output.contains("using Migrations/Dispatch/postgres"), "\(up.output)")

        let build = try Self.run("swift", ["build", "--disable-build-manifest-caching", "--product", "dispatcher"])
        #expect(build.status == 0, "\(build.output)")
        let first = try Self.run(".build/debug/dispatcher", [url])
        #expect(first.output == "claimed: [\"job-0\", \"job-1\", \"job-2\"], queued: 2\n", "\(first.output)")
        let second = try Self.run(".build/debug/dispatcher", [url])
        #expect(second.output == "claimed: [\"job-3\", \"job-4\"], queued: 0\n", "a rerun enqueues nothing again: \(second.output)")
    }
}
