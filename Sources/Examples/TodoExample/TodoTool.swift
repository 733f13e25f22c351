import CommandLineKit
import DatabaseLocation
import ExampleModels
import Foundation
import JSONDocument
import PersistentStore
import PersistentStorePostgres
import SchemaMetadata

/// `todo`: the widget article's app and widget on the command line. One terminal plays the app
/// (`todo add`, `todo done`), another the widget (`todo watch`); both open the same file.
public enum TodoTool {
    public static var tool: CommandLineTool {
        CommandLineTool(
            name: "todo", version: "0.2.0", abstract: "A to-do list shared by several processes, with live changes and history.",
            commands: [
                AddCommand.self, DoneCommand.self, RemoveCommand.self, ListCommand.self, ShowCommand.self, SearchCommand.self,
                WatchCommand.self, HistoryCommand.self, RekeyCommand.self, SyncServerCommand.self, SyncCommand.self,
            ])
    }

    static let common: [OptionSpec] = [
        .value(
            "database", short: "d", valueName: "path|url",
            help:
                "The SQLite file, sqlite:path, or a postgres:// URL to share the list across machines (default: $TODO_DATABASE, else todo.sqlite). A URL of another scheme is refused, never created as a file."
        ),
        .value("author", valueName: "name", help: "Recorded with each change this process makes (default: $TODO_AUTHOR, else todo)."),
    ]

    static let exitStatus =
        "Exit status: 0 done; 1 no such item, an ambiguous id, a missing or wrong key, or a database error; 2 usage error. Notes are encrypted: pass the keys in SCHEMAGEN_KEYS (id=base64-of-32-bytes, newest first)."

    static func databasePath(_ arguments: ParsedArguments, io: CommandIO) -> String {
        arguments.value("database") ?? io.environment["TODO_DATABASE"] ?? "todo.sqlite"
    }

    static func author(_ arguments: ParsedArguments, io: CommandIO) -> String {
        arguments.value("author") ?? io.environment["TODO_AUTHOR"] ?? "todo"
    }

    /// The store `--database` names, or why not: 2 for a database of no known engine, else 1.
    /// `version` opens it as that version's app would (the previous one, for sync): its schema
    /// and migrations instead of this build's.
    static func open(_ arguments: ParsedArguments, io: CommandIO, version: SchemaVersionMetadata? = nil) -> Result<Store, CommandFailure> {
        let (schema, migrations) = (version?.descriptor ?? TodoSchema.descriptor, version?.migrations ?? TodoSchema.migrations)
        var configuration = Store.Configuration(author: author(arguments, io: io))
        // For tests that kill a writer at the worst moment: its changes and history are written,
        // the commit is not.
        if let pause = io.environment["TODO_PAUSE_BEFORE_COMMIT"].flatMap(Double.init) {
            configuration.beforeCommit = {
                io.writeError("todo: paused before commit\n")
                Thread.sleep(forTimeInterval: pause)
            }
        }
        do {
            let database = databasePath(arguments, io: io)
            // Behind a transaction pooler (`?pgbouncer=true`), the server's own URL, as Prisma
            // names it: for the watcher's LISTEN and for migrations.
            if let direct = io.environment["DIRECT_URL"], !direct.isEmpty { configuration.postgres.directURL = direct }
            // Either engine, by what the value names: the store's modules open one each.
            if case .postgres? = try? DatabaseLocation.parse(database) {
                return .success(try Store(url: database, schema: schema, migrations: migrations, configuration: configuration))
            }
            return .success(try Store(path: database, schema: schema, migrations: migrations, configuration: configuration))
        } catch {
            io.writeError("todo: error: \(error)\n")
            if case .unsupportedDatabase = error { return .failure(CommandFailure(.usageOrIO)) }
            return .failure(CommandFailure(.failure))
        }
    }

    static func id(_ item: TodoItem) -> String { item.id.uuidString.lowercased() }

    /// The one item whose id starts with `prefix`.
    static func find(_ prefix: String, in store: Store) throws -> TodoItem {
        let needle = prefix.lowercased()
        guard !needle.isEmpty else { throw TodoError("give an item id (or a unique start of one)") }
        let matches = try runToCompletion { try await store.fetch(TodoItem.self, sortBy: [SortDescriptor(\.startDate)]) }.filter { id($0).hasPrefix(needle) }
        guard let first = matches.first else { throw TodoError("no item has an id starting with '\(prefix)'; `todo list` shows them") }
        guard matches.count == 1 else {
            throw TodoError("'\(prefix)' starts \(matches.count) ids (\(matches.prefix(5).map(id).joined(separator: ", "))); give more of it")
        }
        return first
    }

    static func state(_ done: Bool) -> String { done ? "done" : "not done" }

    static func text(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// `2026-12-01` (midnight UTC), or a full ISO 8601 time with or without fractional seconds.
    static func parseDate(_ text: String) -> Date? {
        for options: ISO8601DateFormatter.Options in [[.withFullDate], [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    struct TodoError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Runs a command's work, turning errors into a message and exit status 1.
    static func perform(_ io: CommandIO, _ work: () throws -> ExitCode) -> ExitCode {
        do {
            return try work()
        } catch {
            io.writeError("todo: error: \(error)\n")
            return .failure
        }
    }
}

enum AddCommand: Command {
    static let spec = CommandSpec(
        name: "add", abstract: "Add an item; prints its id.", discussion: TodoTool.exitStatus,
        options: TodoTool.common + [
            .value("due", valueName: "date", help: "When it is due: 2026-12-01 (UTC) or an ISO 8601 time."),
            .value("notes", valueName: "text", help: "Private notes, encrypted in the file."),
            .value("priority", valueName: "number", help: "How urgent it is: higher comes first (default 0)."),
        ],
        arguments: [ArgumentSpec("NAME", help: "What to do (several words are joined).", isVariadic: true, isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let name = arguments.arguments.joined(separator: " ")
        guard !name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            io.writeError("todo: error: give the item a name\n")
            return .usageOrIO
        }
        var due: Date?
        if let text = arguments.value("due") {
            guard let date = TodoTool.parseDate(text) else {
                io.writeError("todo: error: --due '\(text)' is not a date; write 2026-12-01 or 2026-12-01T17:00:00Z\n")
                return .usageOrIO
            }
            due = date
        }
        guard let priority = Int32(arguments.value("priority") ?? "0") else {
            io.writeError("todo: error: --priority takes a whole number\n")
            return .usageOrIO
        }
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        let item = TodoItem(taskName: name, dueDate: due, notes: arguments.value("notes"), priority: priority)
        return TodoTool.perform(io) {
            let item = try runToCompletion { try await store.insert(item) }
            io.writeOutput(TodoTool.id(item) + "\n")
            return .success
        }
    }
}

enum DoneCommand: Command {
    static let spec = CommandSpec(
        name: "done", abstract: "Toggle an item between done and not done.", discussion: TodoTool.exitStatus,
        options: TodoTool.common, arguments: [ArgumentSpec("ID", help: "The item's id, or a unique start of it.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        return TodoTool.perform(io) {
            let item = try TodoTool.find(arguments.arguments[0], in: store)
            // Read and toggle in one transaction, so two processes toggling at once both count.
            let toggled = try runToCompletion {
                try await store.transaction { store in
                    guard var current = try store.model(TodoItem.self, key: item.id) else { throw TodoTool.TodoError("the item was removed meanwhile") }
                    current.isCompleted.toggle()
                    return try store.insert(current)
                }
            }
            io.writeOutput("~ \(TodoTool.id(toggled)) \(toggled.taskName) \(TodoTool.state(toggled.isCompleted))\n")
            return .success
        }
    }
}

enum RemoveCommand: Command {
    static let spec = CommandSpec(
        name: "remove", abstract: "Remove an item.", discussion: TodoTool.exitStatus,
        options: TodoTool.common, arguments: [ArgumentSpec("ID", help: "The item's id, or a unique start of it.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        return TodoTool.perform(io) {
            let item = try TodoTool.find(arguments.arguments[0], in: store)
            try runToCompletion { try await store.delete(item) }
            io.writeOutput("- \(TodoTool.id(item)) \(item.taskName)\n")
            return .success
        }
    }
}

enum ListCommand: Command {
    static let spec = CommandSpec(
        name: "list", abstract: "Print the items, oldest first.", discussion: TodoTool.exitStatus,
        options: TodoTool.common + [.flag("json", help: "Print a JSON array.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        return TodoTool.perform(io) {
            let items = try runToCompletion { try await store.fetch(TodoItem.self, sortBy: [SortDescriptor(\.startDate)]) }
            if arguments.flag("json") {
                let array = JSONNode(
                    value: .array(
                        items.map { item in
                            JSONNode(
                                value: .object([
                                    ("id", JSONNode(value: .string(TodoTool.id(item)))),
                                    ("name", JSONNode(value: .string(item.taskName))),
                                    ("done", JSONNode(value: .bool(item.isCompleted))),
                                    ("start", JSONNode(value: .string(TodoTool.text(item.startDate)))),
                                    ("due", JSONNode(value: item.dueDate.map { .string(TodoTool.text($0)) } ?? .null)),
                                    ("priority", JSONNode(value: .number(String(item.priority)))),
                                ]))
                        }))
                io.writeOutput(array.jsonText + "\n")
            } else {
                for item in items {
                    let due = item.dueDate.map { " (due \(TodoTool.text($0)))" } ?? ""
                    let priority = item.priority == 0 ? "" : " (priority \(item.priority))"
                    io.writeOutput("\(TodoTool.id(item)) [\(item.isCompleted ? "x" : " ")] \(item.taskName)\(due)\(priority)\n")
                }
            }
            return .success
        }
    }
}

enum ShowCommand: Command {
    static let spec = CommandSpec(
        name: "show", abstract: "Print one item with its notes (decrypted).", discussion: TodoTool.exitStatus,
        options: TodoTool.common + [.flag("json", help: "Print a JSON object.")],
        arguments: [ArgumentSpec("ID", help: "The item's id, or a unique start of it.", isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        return TodoTool.perform(io) {
            let item = try TodoTool.find(arguments.arguments[0], in: store)
            if arguments.flag("json") {
                io.writeOutput(
                    JSONNode(
                        value: .object([
                            ("id", JSONNode(value: .string(TodoTool.id(item)))),
                            ("name", JSONNode(value: .string(item.taskName))),
                            ("done", JSONNode(value: .bool(item.isCompleted))),
                            ("due", JSONNode(value: item.dueDate.map { .string(TodoTool.text($0)) } ?? .null)),
                            ("notes", JSONNode(value: item.notes.map(JSONValue.string) ?? .null)),
                            ("priority", JSONNode(value: .number(String(item.priority)))),
                        ])
                    ).jsonText + "\n")
            } else {
                io.writeOutput("\(TodoTool.id(item)) [\(item.isCompleted ? "x" : " ")] \(item.taskName)\n")
                if let due = item.dueDate { io.writeOutput("due: \(TodoTool.text(due))\n") }
                io.writeOutput("notes: \(item.notes ?? "(none)")\n")
            }
            return .success
        }
    }
}

enum SearchCommand: Command {
    static let spec = CommandSpec(
        name: "search", abstract: "Print the items whose names contain every word, best match first.",
        discussion: "Words are matched whole and in any order (full-text search, ranked by bm25). \(TodoTool.exitStatus)",
        options: TodoTool.common + [
            .value("limit", valueName: "n", help: "At most this many (default 20)."),
            .flag("json", help: "Print a JSON array."),
        ],
        arguments: [ArgumentSpec("WORDS", help: "What to look for.", isVariadic: true, isRequired: true)])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        var limit = 20
        if let text = arguments.value("limit") {
            guard let number = Int(text), number > 0 else {
                io.writeError("todo: error: --limit expects a positive whole number, found '\(text)'\n")
                return .usageOrIO
            }
            limit = number
        }
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        let words = arguments.arguments.joined(separator: " ")
        let count = limit
        return TodoTool.perform(io) {
            let results = try runToCompletion { try await store.search(TodoItem.self, matching: words, limit: count, snippets: SnippetStyle(open: "[", close: "]")) }
            if arguments.flag("json") {
                io.writeOutput(
                    JSONNode(
                        value: .array(
                            results.map { result in
                                JSONNode(
                                    value: .object([
                                        ("id", JSONNode(value: .string(TodoTool.id(result.model)))),
                                        ("name", JSONNode(value: .string(result.model.taskName))),
                                        ("rank", JSONNode(value: .number(String(result.rank)))),
                                        ("match", JSONNode(value: result.snippets["taskName"].map(JSONValue.string) ?? .null)),
                                    ]))
                            })
                    ).jsonText + "\n")
            } else {
                for result in results {
                    io.writeOutput("\(TodoTool.id(result.model)) [\(result.model.isCompleted ? "x" : " ")] \(result.snippets["taskName"] ?? result.model.taskName)\n")
                }
            }
            return .success
        }
    }
}

enum RekeyCommand: Command {
    static let spec = CommandSpec(
        name: "rekey", abstract: "Re-encrypt every note under the newest key in SCHEMAGEN_KEYS, with progress.",
        discussion: """
            Put the new key first in SCHEMAGEN_KEYS and keep the old ones after it; once rekey has
            finished, the old keys can go. It works in batches, one transaction each: a run that is
            killed keeps what it finished, and running it again completes the rest. \(TodoTool.exitStatus)
            """,
        options: TodoTool.common + [.value("batch", valueName: "rows", help: "Rows per transaction (default 500).")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        var batch = 500
        if let text = arguments.value("batch") {
            guard let number = Int(text), number > 0 else {
                io.writeError("todo: error: --batch expects a positive whole number, found '\(text)'\n")
                return .usageOrIO
            }
            batch = number
        }
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        let rows = batch
        return TodoTool.perform(io) {
            let rewritten = try runToCompletion {
                try await store.reencrypt(batchSize: rows) { progress in
                    io.writeError("todo: rekey: \(progress.entity) \(progress.rowsScanned)/\(progress.rowsTotal) rows, \(progress.valuesRewritten) values re-encrypted\n")
                }
            }
            io.writeOutput("re-encrypted \(rewritten) value\(rewritten == 1 ? "" : "s")\n")
            return .success
        }
    }
}

enum WatchCommand: Command {
    static let spec = CommandSpec(
        name: "watch", abstract: "Print a line for every change any process makes, as it happens.",
        discussion: """
            Lines: "+ ID NAME" added, "~ ID NAME done" or "~ ID NAME not done" toggled (or
            changed), "- ID NAME" removed; in commit order, each change once, written at once.
            With --author, changes made under that author are skipped unless --include-own is
            given. Runs until interrupted. \(TodoTool.exitStatus)
            """,
        options: TodoTool.common + [.flag("include-own", help: "Also print changes made under this process's --author.")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        let filter: AuthorFilter = arguments.flag("include-own") ? .any : arguments.value("author").map(AuthorFilter.excluding) ?? .any
        return TodoTool.perform(io) {
            try runToCompletion {
                let stream = try await store.changes(author: filter)
                io.writeError("todo: watching \(DatabaseLocation.redacted(TodoTool.databasePath(arguments, io: io))) (interrupt to stop)\n")
                for try await transaction in stream {
                    for change in transaction.changes where change.isOf(TodoItem.self) {
                        io.writeOutput(try await line(for: change, in: transaction, store: store) + "\n")
                    }
                }
            }
            return .success
        }
    }

    /// The line for one change. An item's name is read from the store, or, once it is gone,
    /// from the tombstone of its removal, which keeps `taskName` (preserveValueOnDeletion).
    static func line(for change: HistoryChange, in transaction: HistoryTransaction, store: Store) async throws -> String {
        let id = try change.key(as: UUID.self)
        let key = id.uuidString.lowercased()
        switch change.kind {
        case .delete:
            return "- \(key) \(try change.tombstone(\TodoItem.taskName) ?? "?")"
        case .insert:
            return "+ \(key) \(try await name(of: id, after: transaction.token, store: store))"
        case .update:
            let current = try await store.model(TodoItem.self, key: id)
            let done = try change.value(\TodoItem.isCompleted) ?? current?.isCompleted ?? false
            var name = try change.value(\TodoItem.taskName) ?? current?.taskName
            if name == nil { name = try await self.name(of: id, after: transaction.token, store: store) }
            return "~ \(key) \(name ?? "?") \(TodoTool.state(done))"
        }
    }

    static func name(of id: UUID, after token: HistoryToken, store: Store) async throws -> String {
        if let item = try await store.model(TodoItem.self, key: id) { return item.taskName }
        let key = StoredValue.text(id.uuidString.lowercased())
        for transaction in try await store.history(after: token) {
            if let removal = transaction.changes.first(where: { $0.kind == .delete && $0.key == [key] }) {
                return try removal.tombstone(\TodoItem.taskName) ?? "?"
            }
        }
        return "?"
    }
}

enum HistoryCommand: Command {
    static let spec = CommandSpec(
        name: "history", abstract: "Print the recorded transactions, tombstones included.", discussion: TodoTool.exitStatus,
        options: TodoTool.common + [
            .value("after", valueName: "token", help: "Only transactions after this token."),
            .flag("json", help: "Print a JSON array."),
        ])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        var after: HistoryToken?
        if let text = arguments.value("after") {
            guard let token = Int64(text), token >= 0 else {
                io.writeError("todo: error: --after expects a token (a whole number), found '\(text)'\n")
                return .usageOrIO
            }
            after = HistoryToken(token)
        }
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        let start = after
        return TodoTool.perform(io) {
            let transactions = try runToCompletion { try await store.history(after: start) }
            if arguments.flag("json") {
                io.writeOutput(JSONNode(value: .array(transactions.map(json))).jsonText + "\n")
            } else {
                for transaction in transactions {
                    io.writeOutput("\(transaction.token) \(TodoTool.text(transaction.date)) \(transaction.author ?? "-")\n")
                    for change in transaction.changes { io.writeOutput("  " + describe(change) + "\n") }
                }
            }
            return .success
        }
    }

    static func describe(_ change: HistoryChange) -> String {
        let key = change.key.map(text).joined(separator: ",")
        switch change.kind {
        case .insert: return "insert \(change.entity) \(key)"
        case .update:
            return "update \(change.entity) \(key) "
                + change.changedAttributes.map { name in
                    change.values[name].map { "\(name)=\(text($0))" } ?? name
                }.joined(separator: " ")
        case .delete:
            let kept = (change.tombstone ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\(text($0.value))" }
            return (["delete \(change.entity) \(key)"] + kept).joined(separator: " ")
        }
    }

    static func text(_ value: StoredValue) -> String {
        switch value {
        case .text(let string): JSONNode(value: .string(string)).jsonText
        default: value.description
        }
    }

    static func json(_ value: StoredValue) -> JSONNode {
        switch value {
        case .null: JSONNode(value: .null)
        case .integer(let number): JSONNode(value: .number(String(number)))
        case .real(let number): number.isFinite ? JSONNode(value: .number("\(number)")) : JSONNode(value: .string("\(number)"))
        case .text(let string): JSONNode(value: .string(string))
        case .blob(let bytes): JSONNode(value: .string(bytes.map { String(format: "%02x", $0) }.joined()))
        }
    }

    static func json(_ values: [String: StoredValue]) -> JSONNode {
        JSONNode(value: .object(values.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) }))
    }

    static func json(_ transaction: HistoryTransaction) -> JSONNode {
        JSONNode(
            value: .object([
                ("token", JSONNode(value: .number(String(transaction.token.value)))),
                ("author", JSONNode(value: transaction.author.map(JSONValue.string) ?? .null)),
                ("date", JSONNode(value: .string(TodoTool.text(transaction.date)))),
                (
                    "changes",
                    JSONNode(
                        value: .array(
                            transaction.changes.map { change in
                                JSONNode(
                                    value: .object([
                                        ("entity", JSONNode(value: .string(change.entity))),
                                        ("kind", JSONNode(value: .string(change.kind.rawValue))),
                                        ("key", JSONNode(value: .array(change.key.map(json)))),
                                        ("changed", JSONNode(value: .array(change.changedAttributes.map { JSONNode(value: .string($0)) }))),
                                        ("values", json(change.values)),
                                        ("tombstone", change.tombstone.map(json) ?? JSONNode(value: .null)),
                                    ]))
                            }))
                ),
            ]))
    }
}
