// swift-tools-version: 6.1
import Foundation
import PackageDescription

let package = Package(
    name: "SchemaToolkit",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "schemagen", targets: ["schemagen"]),
        .executable(name: "migrate", targets: ["migrate"]),
        .library(name: "PersistentStore", targets: ["PersistentStore"]),
        .library(name: "PersistentStoreSQLite", targets: ["PersistentStoreSQLite"]),
        .library(name: "PersistentStorePostgres", targets: ["PersistentStorePostgres"]),
        .library(name: "Migrator", targets: ["Migrator"]),
        .library(name: "MigratorSQLite", targets: ["MigratorSQLite"]),
        .library(name: "MigratorPostgres", targets: ["MigratorPostgres"]),
        .library(name: "SchemaKit", targets: ["SchemaKit"]),
        .library(name: "SchemaMetadata", targets: ["SchemaMetadata"]),
        // Sync: the device's side, and the server's (with its HTTP endpoint on the toolkit's
        // small HTTP server); both carry the messages and clocks they share.
        .library(name: "SyncClient", targets: ["SyncClient", "SyncCore"]),
        .library(name: "SyncServer", targets: ["SyncServer", "SyncCore", "SyncEndpoint", "HTTPServer"]),
        .plugin(name: "SchemagenPlugin", targets: ["SchemagenPlugin"]),
        .plugin(name: "SchemagenCommand", targets: ["SchemagenCommand"]),
        .plugin(name: "MigrateCommand", targets: ["MigrateCommand"]),
    ],
    targets: [
        // MARK: - System libraries (Debian -dev packages, found through pkg-config)
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CPostgreSQL",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        // MARK: - Libraries, one job each
        // Text made safe in JSON, YAML, XML, HTML and dot: one function per language.
        .target(name: "TextEscaping"),
        .target(name: "Diagnostics", dependencies: ["TextEscaping"]),
        .target(name: "YAMLReader", dependencies: ["CYAML", "Diagnostics"]),
        .target(name: "SchemaKit", dependencies: ["YAMLReader", "Diagnostics", "SQLDialects", "TextEscaping"]),
        .target(name: "CommandLineKit", dependencies: ["Diagnostics"]),
        // A small HTTP/1.1 server over sockets, for local tools (the studio).
        .target(name: "HTTPServer"),
        // `schemagen studio`'s web app: pages over an open store, for data as the schema names it.
        .target(name: "SyncEndpoint", dependencies: ["HTTPServer", "SyncServer", "SyncCore", "Gzip"]),
        .target(name: "Studio", dependencies: ["HTTPServer", "PersistentStoreCore", "SchemaKit", "SchemaMetadata", "TextEscaping"]),
        .target(name: "ProjectConfig", dependencies: ["YAMLReader", "Diagnostics", "SQLDialects"]),
        .target(name: "Mustache", dependencies: ["TextEscaping"]),
        // The runtime: what an application links. No YAML, no templates, no planner.
        .target(name: "SchemaMetadata"),
        .target(name: "SQLDialects", dependencies: ["SchemaMetadata"]),
        // Sync's clocks and conflict rules: what devices and the server both merge by.
        .target(name: "Gzip", dependencies: ["CZlib"]),
        .target(name: "SyncCore", dependencies: ["SchemaMetadata", "TextEscaping", "JSONDocument"]),
        .target(name: "SyncStorage", dependencies: ["SyncCore", "PersistentStoreCore", "SchemaMetadata"]),
        .target(name: "SyncServer", dependencies: ["SyncStorage", "SyncCore", "PersistentStoreCore", "SchemaMetadata"]),
        .target(name: "SyncClient", dependencies: ["SyncStorage", "SyncCore", "PersistentStoreCore", "SchemaMetadata", "Gzip"]),
        // JSON text with line and column kept: the flights loader's input, the store's history.
        .target(name: "JSONDocument", dependencies: ["TextEscaping"]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite", "SchemaMetadata"]),
        // Where a database is: a SQLite path, a PostgreSQL URL or keyword string; passwords masked.
        .target(name: "DatabaseLocation"),
        .target(name: "PostgresKit", dependencies: ["CPostgreSQL", "DatabaseLocation", "SQLDialects", "SchemaMetadata"]),
        .target(name: "MigrationFiles", dependencies: ["CCrypto", "Diagnostics", "SchemaMetadata", "SQLDialects"]),
        // The migrator's core imports no engine; each engine's adapter sits beside its C library,
        // so an application links only the engines it uses.
        .target(name: "MigratorCore", dependencies: ["MigrationFiles", "SQLDialects", "Diagnostics", "SchemaMetadata"]),
        .target(name: "MigratorSQLite", dependencies: ["MigratorCore", "SQLiteKit", "SQLDialects", "SchemaMetadata"]),
        .target(name: "MigratorPostgres", dependencies: ["MigratorCore", "PostgresKit", "MigrationFiles", "SQLDialects", "SchemaMetadata"]),
        // The migrator with every engine's adapter, and `DatabaseOpener` to open any location:
        // what `import Migrator` gave before the engines were split, so that code keeps compiling.
        .target(name: "Migrator", dependencies: ["MigratorCore", "MigratorSQLite", "MigratorPostgres", "DatabaseLocation", "SQLiteKit", "PostgresKit"]),
        // AES-256-GCM field encryption with per-attribute keys, over libcrypto.
        .target(name: "FieldEncryption", dependencies: ["CCrypto", "SchemaMetadata"]),
        // The store's engine-neutral core: no engine, no C library but libcrypto's cipher.
        .target(name: "PersistentStoreCore", dependencies: ["DatabaseLocation", "MigratorCore", "MigrationFiles", "SQLDialects", "SchemaMetadata", "JSONDocument", "FieldEncryption", "TextEscaping"]),
        .target(
            name: "PersistentStorePostgres",
            dependencies: ["PersistentStoreCore", "DatabaseLocation", "PostgresKit", "MigratorCore", "MigratorPostgres", "MigrationFiles", "SQLDialects", "SchemaMetadata"]),
        .target(
            name: "PersistentStoreSQLite", dependencies: ["PersistentStoreCore", "JSONDocument", "DatabaseLocation", "SQLiteKit", "MigratorCore", "MigratorSQLite", "SQLDialects", "SchemaMetadata"]),
        // The product apps named before the engines were split: the core with SQLite's adapter
        // (`Store(path:)`), so `import PersistentStore` keeps compiling.
        .target(name: "PersistentStore", dependencies: ["PersistentStoreCore", "PersistentStoreSQLite"]),
        // The tools: schema to relational model to plan to SQL; schema to templates to code.
        .target(name: "RelationalModel", dependencies: ["SchemaKit", "SchemaMetadata", "MigrationFiles", "TextEscaping"]),
        .target(name: "MigrationPlanner", dependencies: ["RelationalModel", "SchemaKit", "SQLDialects", "MigrationFiles", "Diagnostics", "SchemaMetadata"]),
        // Carries Templates/*.mustache in EmbeddedTemplates.swift, written by embed-templates
        // (a test fails when the two differ). A build-tool plugin cannot do it: SwiftPM builds the
        // tool behind SchemagenPlugin in a host build that runs no nested plugins.
        .target(name: "CodeGeneration", dependencies: ["SchemaKit", "RelationalModel", "Mustache", "Diagnostics", "SchemaMetadata"]),
        // Schemas from what exists: a SQLite database's catalogue, a Core Data model bundle.
        .target(name: "SchemaImport", dependencies: ["SchemaKit", "RelationalModel", "MigrationPlanner", "SQLiteKit", "PostgresKit", "DatabaseLocation", "SchemaMetadata", "TextEscaping"]),
        // Schemas as other tools' models: a Core Data model bundle with every version.
        .target(name: "SchemaExport", dependencies: ["SchemaKit", "Diagnostics", "TextEscaping"]),
        // Entity-relationship diagrams (Mermaid, Graphviz dot, SVG) and the static schema site.
        .target(name: "SchemaDiagrams", dependencies: ["SchemaKit", "TextEscaping"]),
        .target(name: "SchemaSite", dependencies: ["SchemaKit", "SchemaDiagrams", "RelationalModel", "MigrationPlanner", "MigrationFiles", "Diagnostics", "TextEscaping"]),
        // `schemagen generate` as stages (configuration, load, model, plan, render, sync).
        .target(
            name: "SchemagenPipeline",
            dependencies: ["SchemaKit", "RelationalModel", "MigrationPlanner", "MigrationFiles", "CodeGeneration", "Mustache", "ProjectConfig", "Diagnostics", "SchemaMetadata", "SQLDialects"]),
        .target(
            name: "SchemagenCLI",
            dependencies: [
                "DatabaseLocation", "SchemaKit", "CommandLineKit", "Diagnostics", "CodeGeneration", "Mustache", "MigrationPlanner", "MigrationFiles", "RelationalModel", "ProjectConfig",
                "SchemagenPipeline", "SchemaImport", "SchemaExport", "SchemaDiagrams", "SchemaSite", "SQLDialects", "TextEscaping", "Studio", "HTTPServer", "Migrator", "MigratorCore",
                "PersistentStoreCore",
                "PersistentStoreSQLite", "PersistentStorePostgres", "SchemaMetadata",
            ]),

        // MARK: - Maintenance tool: rewrites CodeGeneration/EmbeddedTemplates.swift from Templates/
        .executableTarget(name: "embed-templates"),

        // MARK: - Executables: thin shells
        .executableTarget(name: "schemagen", dependencies: ["SchemagenCLI"]),
        .target(
            name: "MigrateCLI",
            dependencies: [
                "DatabaseLocation", "Diagnostics", "Migrator", "MigratorCore", "MigrationFiles", "CommandLineKit", "SQLiteKit", "PostgresKit", "ProjectConfig",
                "SQLDialects", "SchemaMetadata", "RelationalModel", "SchemaImport", "TextEscaping",
            ]),
        .executableTarget(name: "migrate", dependencies: ["MigrateCLI"]),

        // MARK: - Generated example models, compiled by every build (`schemagen generate --check` keeps them current)
        .target(name: "ExampleModels", dependencies: ["SchemaMetadata"]),

        // MARK: - The build-tool plugin for users, and an example target that uses it
        .plugin(
            name: "SchemagenPlugin",
            capability: .buildTool(),
            dependencies: ["schemagen"]
        ),
        .target(name: "PluginExample", dependencies: ["SchemaMetadata"], exclude: ["Migrations"], plugins: ["SchemagenPlugin"]),
        // `swift package schemagen ...` and `swift package migrate ...` in a client package.
        .plugin(
            name: "SchemagenCommand",
            // No permission is declared, so reading commands (`validate`, `diff`) need no flag;
            // commands that write are run with --allow-writing-to-package-directory.
            capability: .command(
                intent: .custom(verb: "schemagen", description: "Run schemagen (validate, generate, diff, rehash, new-migration, import, diagram, docs) in this package")),
            dependencies: ["schemagen"]
        ),
        .plugin(
            name: "MigrateCommand",
            capability: .command(
                intent: .custom(verb: "migrate", description: "Run migrate (up, down, status, validate, redo, baseline, repair) against a database")),
            dependencies: ["migrate"]
        ),

        // MARK: - The flights example: the SwiftData article's app on the command line
        .target(name: "FlightsExample", dependencies: ["ExampleModels", "PersistentStore", "CommandLineKit", "JSONDocument", "SchemaMetadata", "PersistentStorePostgres", "DatabaseLocation"]),
        // Not a product, nor is `todo`: examples of this package, run here with `swift run flights`;
        // as products they sat in every client's package graph, where a client's own `flights` or
        // `todo` product collided with them.
        .executableTarget(name: "flights", dependencies: ["FlightsExample"]),
        // MARK: - The widget example: one to-do list, several processes, live changes
        .target(
            name: "TodoExample",
            dependencies: [
                "ExampleModels", "PersistentStore", "CommandLineKit", "JSONDocument", "SchemaMetadata", "PersistentStorePostgres", "DatabaseLocation", "SyncClient", "SyncCore", "SyncServer",
                "SyncEndpoint", "HTTPServer",
            ]),
        .executableTarget(name: "todo", dependencies: ["TodoExample"]),
        // The SQLite-only app: LinkageTests checks that it links no libpq. Not a product: an
        // executable product of a target that applies a build-tool plugin makes SwiftPM build
        // the plugin's tool (schemagen) a second time, for the host, in every client package.
        .executableTarget(name: "bookmarks", dependencies: ["PluginExample", "PersistentStoreSQLite"]),
        // The PostgreSQL-only server: LinkageTests checks that it links no libsqlite3.
        .executableTarget(name: "dispatcher", dependencies: ["ExampleModels", "PersistentStorePostgres"]),
        // Measures the store against the raw C API for bench/run (not a product).
        .executableTarget(
            name: "store-benchmark",
            dependencies: [
                "ExampleModels", "PersistentStoreCore", "MigratorCore", "MigratorSQLite", "SQLiteKit", "CSQLite", "CCrypto", "SchemaMetadata", "FieldEncryption", "PersistentStoreSQLite",
                "PersistentStorePostgres", "PostgresKit", "TextEscaping", "SyncClient", "SyncServer", "SyncEndpoint", "SyncCore", "HTTPServer", "Gzip",
            ]),
        // The benchmark figures the docs show, kept in bench/figures.json, and the pages written from them.
        .target(name: "BenchmarkFigures"),
        // Records a bench/run output's figures and writes them into the docs (`bench/run --record`).
        .executableTarget(name: "bench-record", dependencies: ["BenchmarkFigures"]),

        // MARK: - Tests (folders mirror Sources)
        // Shared helpers: the repository root, temporary paths, seeded randomness, built tools.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // A stand-in test process that starts servers and is then ended by a signal (TestDaemonTests).
        .executableTarget(name: "test-server-holder", dependencies: ["TestSupport"], path: "Tests/TestServerHolder"),
        .testTarget(name: "DiagnosticsTests", dependencies: ["Diagnostics", "TextEscaping"]),
        .testTarget(name: "SyncCoreTests", dependencies: ["SyncCore", "SchemaMetadata"]),
        .testTarget(name: "GzipTests", dependencies: ["Gzip", "CZlib"]),
        .testTarget(name: "YAMLReaderTests", dependencies: ["YAMLReader", "Diagnostics"]),
        .testTarget(
            name: "SchemaKitTests",
            dependencies: ["SchemaKit", "Diagnostics", "YAMLReader", "TestSupport"],
            exclude: ["Invalid"]
        ),
        .testTarget(name: "CommandLineKitTests", dependencies: ["CommandLineKit"]),
        .testTarget(name: "MustacheTests", dependencies: ["Mustache"]),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit", "TestSupport"]),
        .testTarget(name: "TestSupportTests", dependencies: ["TestSupport"]),
        .testTarget(name: "MigrationFilesTests", dependencies: ["MigrationFiles"]),
        .testTarget(name: "RelationalModelTests", dependencies: ["RelationalModel", "SchemaMetadata", "ExampleModels", "MigrationFiles", "TestSupport"]),
        .testTarget(
            name: "ExampleModelsTests",
            dependencies: [
                "ExampleModels", "SchemaMetadata", "PluginExample", "MigratorCore", "MigratorSQLite", "SQLiteKit", "PersistentStoreCore", "PersistentStoreSQLite", "MigratorPostgres", "PostgresKit",
                "TestSupport", "SchemaKit", "SchemagenPipeline",
            ]),
        .testTarget(name: "SchemagenPipelineTests", dependencies: ["SchemagenPipeline", "CodeGeneration", "TestSupport"]),
        .testTarget(
            name: "CodeGenerationTests",
            dependencies: [
                "CodeGeneration", "Diagnostics", "SQLDialects", "SchemaKit", "Mustache", "MigrationPlanner", "RelationalModel", "SchemaMetadata", "MigrationFiles", "SchemagenPipeline", "SchemaExport",
                "TestSupport",
            ]),
        .testTarget(
            name: "MigrationPlannerTests",
            dependencies: [
                "MigrationPlanner", "RelationalModel", "MigrationFiles", "MigratorCore", "MigratorSQLite", "MigratorPostgres", "SQLDialects", "SchemaKit", "SchemaMetadata", "SQLiteKit", "PostgresKit",
                "ProjectConfig", "schemagen", "Diagnostics", "TestSupport",
            ]),
        .testTarget(
            name: "FlightsExampleTests",
            dependencies: [
                "FlightsExample", "JSONDocument", "ExampleModels", "PersistentStoreCore", "flights", "todo", "bookmarks", "dispatcher", "migrate", "schemagen", "TestSupport", "PersistentStoreSQLite",
            ]),
        .testTarget(name: "TodoExampleTests", dependencies: ["FieldEncryption", "ExampleModels", "PersistentStoreCore", "SQLiteKit", "todo", "TestSupport", "PersistentStoreSQLite"]),
        .testTarget(name: "FieldEncryptionTests", dependencies: ["FieldEncryption", "SchemaMetadata", "TestSupport"]),
        .testTarget(
            name: "PersistentStoreTests",
            dependencies: [
                "FieldEncryption", "PersistentStoreCore", "ExampleModels", "SchemaMetadata", "SQLiteKit", "TestSupport", "PersistentStoreSQLite", "PersistentStorePostgres", "PostgresKit", "SyncCore",
                "SyncServer", "SyncClient", "SyncStorage", "SyncEndpoint", "HTTPServer", "Gzip", "DatabaseLocation",
                "MigrationFiles", "MigrationPlanner", "MigratorCore", "MigratorPostgres", "RelationalModel", "SchemaKit", "SQLDialects", "CodeGeneration",
            ]),
        .testTarget(
            name: "MigratorTests",
            dependencies: [
                "DatabaseLocation", "todo", "flights", "schemagen", "Migrator", "MigratorCore", "MigratorSQLite", "MigratorPostgres", "MigrateCLI", "MigrationPlanner", "MigrationFiles",
                "RelationalModel", "SchemaKit", "SchemaMetadata", "SQLiteKit", "PostgresKit", "migrate", "SQLDialects", "TestSupport", "ProjectConfig",
            ]),
        .testTarget(
            name: "SchemaImportTests",
            dependencies: [
                "SchemaImport", "SchemaExport", "RelationalModel", "SchemagenPipeline", "SQLDialects", "SchemaKit", "SQLiteKit", "PostgresKit", "SchemaMetadata", "PersistentStoreCore",
                "ExampleModels", "schemagen", "migrate", "Diagnostics", "TestSupport", "PersistentStoreSQLite",
            ]),
        .testTarget(name: "SchemaDiagramsTests", dependencies: ["SchemaDiagrams", "SchemaSite", "SchemaKit", "schemagen", "TestSupport"]),
        // Every Swift block of README.md and docs/, type-checked against the compiled modules.
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "ExampleModels", "PersistentStore", "PersistentStoreCore", "Migrator", "MigratorCore", "MigratorSQLite", "MigratorPostgres", "PostgresKit", "SQLiteKit", "SchemaMetadata",
                "FieldEncryption", "migrate", "schemagen", "flights", "todo", "TestSupport", "PersistentStoreSQLite", "BenchmarkFigures",
            ]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "StudioTests", dependencies: ["schemagen", "migrate", "flights", "todo", "SQLiteKit", "TestSupport"]),
        .testTarget(
            name: "SchemagenCLITests",
            dependencies: ["schemagen", "migrate", "TestSupport", "PersistentStore", "PersistentStoreSQLite", "PersistentStorePostgres", "PostgresKit", "SchemaMetadata", "SyncServer"]),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer target has no `main` (libFuzzer supplies it), so an ordinary build
// cannot link it. It joins the package only when asked for: see README, "Fuzzing".
if ProcessInfo.processInfo.environment["SCHEMAGEN_FUZZ"] != nil {
    package.targets.append(contentsOf: [
        .executableTarget(name: "SchemaFuzz", dependencies: ["SchemaKit"]),
        .executableTarget(name: "PlannerFuzz", dependencies: ["SchemaKit", "MigrationPlanner", "RelationalModel", "SQLiteKit"]),
        .executableTarget(name: "HTTPFuzz", dependencies: ["HTTPServer"]),
    ])
}

// MARK: - Layers: each target's folder is Sources/<layer>/<target> (docs/architecture.md draws them)

let layers: [String: [String]] = [
    "CShims": ["CYAML", "CCrypto", "CPostgreSQL", "CSQLite", "CZlib"],
    "Runtime": [
        "TextEscaping", "SchemaMetadata", "SQLDialects", "DatabaseLocation", "JSONDocument", "Diagnostics", "FieldEncryption", "MigrationFiles", "MigratorCore", "PersistentStoreCore", "Gzip",
        "SyncCore",
        "SyncStorage", "SyncServer", "SyncClient",
    ],
    "Engines": ["SQLiteKit", "PostgresKit", "MigratorSQLite", "MigratorPostgres", "PersistentStoreSQLite", "PersistentStorePostgres", "Migrator", "PersistentStore"],
    "Tools": [
        "YAMLReader", "SchemaKit", "CommandLineKit", "HTTPServer", "SyncEndpoint", "Studio", "ProjectConfig", "Mustache", "RelationalModel", "MigrationPlanner", "CodeGeneration", "SchemaImport",
        "SchemaExport",
        "SchemaDiagrams",
        "SchemaSite", "SchemagenPipeline", "SchemagenCLI", "MigrateCLI", "schemagen", "migrate", "embed-templates",
    ],
    "Plugins": ["SchemagenPlugin", "SchemagenCommand", "MigrateCommand"],
    "Examples": ["ExampleModels", "PluginExample", "FlightsExample", "flights", "TodoExample", "todo", "bookmarks", "dispatcher"],
    "Benchmarks": ["store-benchmark", "BenchmarkFigures", "bench-record"],
    "Fuzzers": ["SchemaFuzz", "PlannerFuzz", "HTTPFuzz"],
]
// Tests follow the same layers (plus `Project`: the docs and the test helpers' own tests).
let testLayers: [String: [String]] = [
    "Runtime": ["DiagnosticsTests", "FieldEncryptionTests", "MigrationFilesTests", "SyncCoreTests", "GzipTests"],
    "Engines": ["SQLiteKitTests", "MigratorTests", "PersistentStoreTests"],
    "Tools": [
        "CommandLineKitTests", "HTTPServerTests", "StudioTests", "YAMLReaderTests", "SchemaKitTests", "RelationalModelTests", "MigrationPlannerTests", "MustacheTests", "CodeGenerationTests",
        "SchemaImportTests",
        "SchemaDiagramsTests", "SchemagenPipelineTests", "SchemagenCLITests",
    ],
    "Examples": ["ExampleModelsTests", "FlightsExampleTests", "TodoExampleTests"],
    "Project": ["DocumentationTests", "TestSupportTests"],
]
for target in package.targets where target.type == .test && target.path == nil {
    guard let layer = testLayers.first(where: { $0.value.contains(target.name) })?.key else {
        fatalError("test target \(target.name) belongs to no layer: add it to `testLayers` in Package.swift")
    }
    target.path = "Tests/\(layer)/\(target.name)"
}
for target in package.targets where target.type != .test && target.path == nil {
    guard let layer = layers.first(where: { $0.value.contains(target.name) })?.key else {
        fatalError("target \(target.name) belongs to no layer: add it to `layers` in Package.swift")
    }
    target.path = "Sources/\(layer)/\(target.name)"
}
