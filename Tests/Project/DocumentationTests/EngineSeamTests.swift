import Foundation
import TestSupport
import Testing

/// The seams between the engine-free cores and the engine adapters stay small: a core protocol
/// of a few requirements, and what only some engines can do as ability protocols the cores look
/// up once, never as flags on the adapter (docs/architecture.md).
@Suite struct EngineSeamTests {
    /// The requirements of `protocol name` in `file` of `target`: its members at the first
    /// indentation level, attributes and comments aside.
    static func requirements(of name: String, in file: String, target: String) throws -> [String] {
        let text = try String(contentsOf: sourceFolder(of: target).appendingPathComponent(file), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.hasPrefix("public protocol \(name):") || $0.hasPrefix("public protocol \(name) ") })
        var found: [String] = []
        for line in lines[(start + 1)...] {
            if line == "}" { break }
            let member = line.hasPrefix("    ") && !line.hasPrefix("     ") ? line.dropFirst(4) : ""
            if member.hasPrefix("func ") || member.hasPrefix("var ") || member.hasPrefix("associatedtype ") || member.hasPrefix("init") {
                found.append(String(member))
            }
        }
        return found
    }

    /// A source file's lines without its comment lines: a doc comment may show what code may not.
    static func codeLines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
    }

    @Test func theStoresAdapterIsASmallCorePlusAbilities() throws {
        let core = try Self.requirements(of: "StoreDatabase", in: "StoreDatabase.swift", target: "PersistentStoreCore")
        #expect(core.count <= 16, "StoreDatabase has \(core.count) requirements; what only some engines do belongs in an ability protocol:\n\(core.joined(separator: "\n"))")
        // A Bool property that says what the engine can do is an ability in disguise;
        // `isInTransaction` is state, not a capability.
        let flags = core.filter { $0.hasPrefix("var ") && $0.contains(": Bool") && !$0.hasPrefix("var isInTransaction") }
        #expect(flags.isEmpty, "capability flags on StoreDatabase: \(flags)")
        for ability in [
            "FileDatabase", "SteppedRows", "InsertedRowIDs", "BorrowedColumns", "StatementPipelining", "BulkRowStaging", "GeneratedKeyReservation", "RowChangeHook", "ChangeTriggers",
            "HistoryOrdering", "CommitWatching",
        ] {
            let members = try Self.requirements(of: ability, in: "StoreDatabase.swift", target: "PersistentStoreCore")
            #expect(members.count <= 3, "\(ability) has \(members.count) requirements")
        }
    }

    @Test func theMigratorsAdapterIsASmallCorePlusAbilities() throws {
        let core = try Self.requirements(of: "MigrationDatabase", in: "MigrationDatabase.swift", target: "MigratorCore")
        #expect(core.count <= 16, "MigrationDatabase has \(core.count) requirements:\n\(core.joined(separator: "\n"))")
        #expect(core.filter { $0.hasPrefix("var ") && $0.contains(": Bool") }.isEmpty)
    }

    /// The cores never ask which adapter they hold, nor read an engine's catalogue or error
    /// codes: what differs is an ability or a dialect capability.
    @Test func theCoresNeverNameAnAdapter() throws {
        for target in ["PersistentStoreCore", "MigratorCore"] {
            let folder = sourceFolder(of: target).path
            for file in swiftFiles(under: folder) {
                // Code only: a doc comment may show an adapter in use.
                let code = try Self.codeLines(folder + "/" + file).joined(separator: "\n")
                for adapter in ["SQLiteStoreDatabase", "PostgresStoreDatabase", "SQLiteMigrationDatabase", "PostgresMigrationDatabase"] {
                    #expect(!code.contains(adapter), "\(target)/\(file) names \(adapter)")
                }
                // Each engine's settings are its adapter's (`StoreEngineSettings`).
                for settings in ["SQLiteSettings", "PostgresSettings"] {
                    #expect(!code.contains(settings), "\(target)/\(file) names \(settings); engine settings live in the engine's adapter")
                }
                // An engine's catalogue and its error codes are the adapter's to read.
                for catalogue in ["information_schema", "pg_catalog", "pg_class", "pg_namespace", "sqlite_schema", "sqlite_master"] {
                    #expect(!code.contains(catalogue), "\(target)/\(file) reads \(catalogue)")
                }
                #expect(code.firstMatch(of: /"[0-9][0-9A-Z]{4}"/) == nil, "\(target)/\(file) compares a raw SQLSTATE")
            }
        }
    }

    /// Every module outside the engines (each Runtime module, each tool, both CLIs and the
    /// studio) reaches engines through `DatabaseOpener` and the stores' own initialisers: none
    /// casts to, or names, an adapter's type.
    @Test func noModuleOutsideTheEnginesNamesAnAdapter() throws {
        var targets: [String] = []
        for layer in ["Runtime", "Tools"] {
            let folder = repositoryRoot.appendingPathComponent("Sources/" + layer).path
            targets += try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasPrefix(".") }.sorted()
        }
        #expect(targets.contains("MigrateCLI") && targets.contains("SchemagenCLI") && targets.contains("PersistentStoreCore"), "\(targets)")
        for target in targets {
            let folder = sourceFolder(of: target).path
            for file in swiftFiles(under: folder) {
                let code = try Self.codeLines(folder + "/" + file).joined(separator: "\n")
                for adapter in ["SQLiteStoreDatabase", "PostgresStoreDatabase", "SQLiteMigrationDatabase", "PostgresMigrationDatabase"] {
                    #expect(!code.contains(adapter), "\(target)/\(file) names \(adapter)")
                }
                // Each engine's settings are its adapter's (`StoreEngineSettings`).
                for settings in ["SQLiteSettings", "PostgresSettings"] {
                    #expect(!code.contains(settings), "\(target)/\(file) names \(settings); engine settings live in the engine's adapter")
                }
            }
        }
    }

    /// Two snapshots are diffed once per migration (`Migration.changes`): the steps, the online
    /// plan, the lint and the migration's name read that one list, so they cannot disagree.
    @Test func aMigrationIsDiffedOnce() throws {
        var callers: [String] = []
        for target in ["MigrationPlanner", "SchemagenPipeline", "SchemagenCLI", "SchemaSite", "CodeGeneration"] {
            let folder = sourceFolder(of: target).path
            for file in swiftFiles(under: folder) {
                let code = try Self.codeLines(folder + "/" + file)
                for (number, line) in code.enumerated() where line.contains("SchemaDiffer.diff(") { callers.append("\(target)/\(file):\(number + 1)") }
            }
        }
        // Migration's own, and the deprecated OnlinePlan initialiser kept for earlier callers.
        #expect(callers.count == 2 && callers.allSatisfy { $0.contains("Migration.swift") || $0.contains("OnlinePlan.swift") }, "\(callers)")
    }

    /// A predicate becomes `SQL` fragments as it is translated: values travel inside the
    /// fragments, so nothing marks a parameter in text, re-parses text into SQL or takes a bound
    /// value back off a list.
    @Test func predicatesTranslateToSQLFragments() throws {
        let file = sourceFolder(of: "PersistentStoreCore").appendingPathComponent("PredicateTranslator.swift")
        let code = try String(contentsOf: file, encoding: .utf8)
        #expect(!code.contains("\\u{1}"), "PredicateTranslator.swift marks text with \\u{1}")
        #expect(!code.contains("popLast"), "PredicateTranslator.swift takes a bound value back with popLast")
        #expect(!code.contains("SQL(verbatim: \""), "PredicateTranslator.swift turns text into SQL")
        #expect(code.contains("func sql(_ builder: inout SQLBuilder) throws(PredicateTranslationError) -> Translation"))
    }

    /// PostgresKit quotes names through the dialect, as everything else that writes SQL does.
    @Test func postgresKitQuotesThroughTheDialect() throws {
        let folder = sourceFolder(of: "PostgresKit").path
        for file in swiftFiles(under: folder) {
            let code = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            #expect(!code.contains(#"replacingOccurrences(of: "\"", with: "\"\"")"#), "PostgresKit/\(file) doubles quotes by hand")
        }
    }

    /// Statements cross the seam as `SQL`, as `RenderedSQL` (only rendering `SQL` makes one), or
    /// as a migration file's own text: no adapter requirement takes a statement as a `String`,
    /// so no core can hand an engine text it assembled by hand.
    @Test func adaptersTakeStatementsAsSQL() throws {
        for (target, file) in [("PersistentStoreCore", "StoreDatabase.swift"), ("MigratorCore", "MigrationDatabase.swift")] {
            let text = try String(contentsOf: sourceFolder(of: target).appendingPathComponent(file), encoding: .utf8)
            let requirements = text.components(separatedBy: "\n").filter { $0.hasPrefix("    func ") }
            #expect(requirements.count >= 10, "\(file): requirements not found")
            for requirement in requirements {
                #expect(
                    requirement.firstMatch(of: /(sql|text|script|statement)s?: (String|\[\(text: String)/) == nil,
                    "\(target)/\(file) takes a statement as text: \(requirement.trimmingCharacters(in: .whitespaces))")
            }
        }
    }

    /// The planners build their DDL as `SQL` (`DDL` and interpolations with `identifier:` and
    /// `literal:`), so no name or string in a migration is quoted by hand: no `q(` helper in
    /// any source, and no quoting or literal function of a dialect called in the planner.
    @Test func plannersBuildDDLAsSQL() throws {
        let root = repositoryRoot.appendingPathComponent("Sources").path
        var checked = 0
        for file in swiftFiles(under: root) {
            let code = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
            checked += 1
            #expect(code.firstMatch(of: /(^|[^A-Za-z0-9_.])q\(|\.map\(q\)/) == nil, "Sources/\(file) quotes with a q( helper")
            guard file.hasPrefix("Tools/MigrationPlanner/") else { continue }
            #expect(code.firstMatch(of: /\.quote\(|dialect\.literal\(|func quote\(/) == nil, "Sources/\(file) quotes names or strings by hand")
        }
        #expect(checked > 100, "no sources found under \(root)")
        let online = try String(contentsOf: sourceFolder(of: "MigrationPlanner").appendingPathComponent("OnlinePlan.swift"), encoding: .utf8)
        #expect(online.contains("\\(identifier: "), "OnlinePlan.swift: no SQL interpolation found")
    }

    /// The engine-neutral cores hold no engine's SQL: full-text search, PRAGMAs, catalogue
    /// queries and casts are the adapters' (`FullTextSearching` and the other abilities).
    @Test func engineSQLLivesInTheEngines() throws {
        let engineWords = ["MATCH ", "snippet(", "ts_rank", "to_tsquery", "plainto_tsquery", "ts_headline", "PRAGMA ", "information_schema", "pg_catalog", "sqlite_master", "::"]
        for target in ["PersistentStoreCore", "MigratorCore"] {
            let folder = sourceFolder(of: target).path
            let files = swiftFiles(under: folder)
            #expect(!files.isEmpty, "\(target): no sources found")
            for file in files {
                let code = try Self.codeLines(folder + "/" + file).joined(separator: "\n")
                for word in engineWords {
                    #expect(!code.contains(word), "\(target)/\(file) writes engine SQL (\(word)); it belongs in the engine's adapter")
                }
                // Upserts and RETURNING are the dialect's to spell (`SQLDialect.onConflict`,
                // `proposed`, `returning`), even where today's engines spell them alike.
                if target == "PersistentStoreCore" {
                    for clause in ["ON CONFLICT", "RETURNING", "excluded."] {
                        #expect(!code.contains(clause), "\(target)/\(file) spells \(clause); ask the dialect")
                    }
                }
            }
        }
    }

    /// How history tokens follow commit order is the dialect's to spell
    /// (`SQLDialect.historyTokenOrdering`): the store's tables' migrations and the store core
    /// ask for it, and no other Runtime module reads a catalogue or a transaction id.
    @Test func historyTokenSQLIsTheDialects() throws {
        let words = ["txid_", "pg_attrdef", "pg_attribute", "pg_get_expr", "pg_advisory"]
        for target in ["MigrationFiles", "PersistentStoreCore", "MigratorCore", "SchemaMetadata"] {
            let folder = sourceFolder(of: target).path
            for file in swiftFiles(under: folder) {
                let code = try Self.codeLines(folder + "/" + file).joined(separator: "\n")
                for word in words {
                    #expect(!code.contains(word), "\(target)/\(file) spells \(word); it is the dialect's (historyTokenOrdering) or the adapter's")
                }
            }
        }
        let dialects = try String(contentsOf: sourceFolder(of: "SQLDialects").appendingPathComponent("SQLDialect.swift"), encoding: .utf8)
        #expect(dialects.contains("public var historyTokenOrdering: HistoryTokenOrdering?") && dialects.contains("txid_current()"))
    }
}
