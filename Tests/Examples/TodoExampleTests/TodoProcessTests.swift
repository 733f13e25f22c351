import ExampleModels
import FieldEncryption
import Foundation
import PersistentStoreCore
import PersistentStoreSQLite
import SQLiteKit
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where the `todo` processes of a test meet: one SQLite file, or one database on the
/// PostgreSQL server the tests start (where its binaries are missing, those cases are skipped,
/// and say so).
enum TodoEngine: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    static var available: [TodoEngine] {
        if !PostgresServer.available { print("◇ \(PostgresServer.skipReason): the todo process tests run on SQLite only") }
        return PostgresServer.available ? allCases : [.sqlite]
    }

    func freshDatabase() throws -> String {
        switch self {
        case .sqlite: return temporaryPath("todo.sqlite")
        case .postgres: return try #require(PostgresServer.shared, "the PostgreSQL test server did not start").createDatabase()
        }
    }
}

/// The widget example as users run it: separate `todo` processes on one database (a file, or a
/// PostgreSQL server standing for other machines), one of them watching.
@Suite(.blocking, .serialized) struct TodoProcessTests {
    static let todo = BuiltTool("todo")

    /// Todo's notes are encrypted: every process gets the same key, as users pass it.
    static let key = Data([UInt8](repeating: 0x2a, count: 32)).base64EncodedString()
    static let environment = ["SCHEMAGEN_KEYS": "k1=\(key)", "PATH": "/usr/bin:/bin"]

    static func run(_ arguments: [String], database: String, environment extra: [String: String] = [:]) throws -> BuiltTool.Run {
        try todo.run(arguments + ["--database", database], environment: environment.merging(extra) { $1 })
    }

    /// Starts `todo watch` and waits until it listens.
    static func watch(_ database: String, _ extra: [String] = []) throws -> BuiltTool.Running {
        let watcher = try todo.start(["watch", "--database", database] + extra, environment: environment)
        let ready = watcher.read(.error, until: { $0.contains("watching") })
        #expect(ready.contains("watching"), "\(ready)")
        return watcher
    }

    static func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    /// Runs `todo add NAME` and returns the line a watcher prints for it.
    static func add(_ name: String, database: String) throws -> String {
        let added = try run(["add", name], database: database)
        #expect(added.status == 0, "\(added.error)")
        return "+ \(added.output.trimmingCharacters(in: .whitespacesAndNewlines)) \(name)"
    }

    static func stop(_ watcher: BuiltTool.Running) -> BuiltTool.Run {
        kill(watcher.processIdentifier, SIGTERM)
        return watcher.finish()
    }

    /// 200 changes by writer processes, one after another: the watcher prints each, in order,
    /// once, and the lines say what each writer did.
    @Test(arguments: TodoEngine.available)
    func theWatcherPrintsEveryChangeInOrderOnce(_ engine: TodoEngine) throws {
        let database = try engine.freshDatabase()
        _ = try Self.run(["list"], database: database)
        let watcher = try Self.watch(database)
        var expected: [String] = []
        var open: [(id: String, name: String, done: Bool)] = []
        var generator = SeededGenerator(seed: SeededGenerator.seed(default: 12))
        for step in 0..<200 {
            let choice = open.isEmpty ? 0 : Int.random(in: 0..<10, using: &generator)
            if choice < 5 {
                let name = "item \(step)"
                let added = try Self.run(["add", name], database: database)
                #expect(added.status == 0, "\(added.error)")
                let id = added.output.trimmingCharacters(in: .whitespacesAndNewlines)
                open.append((id, name, false))
                expected.append("+ \(id) \(name)")
            } else if choice < 8 {
                let index = Int.random(in: 0..<open.count, using: &generator)
                // A unique start of the id is enough.
                let toggled = try Self.run(["done", String(open[index].id.prefix(13))], database: database)
                #expect(toggled.status == 0, "\(toggled.error)")
                open[index].done.toggle()
                expected.append("~ \(open[index].id) \(open[index].name) \(open[index].done ? "done" : "not done")")
            } else {
                let index = Int.random(in: 0..<open.count, using: &generator)
                let removed = try Self.run(["remove", open[index].id], database: database)
                #expect(removed.status == 0, "\(removed.error)")
                expected.append("- \(open[index].id) \(open[index].name)")
                open.remove(at: index)
            }
        }
        let seen = watcher.read(until: { Self.lines($0).count >= 200 }, within: 20)
        _ = Self.stop(watcher)
        #expect(Self.lines(seen) == expected)
        let listed = try Self.run(["list"], database: database)
        #expect(Self.lines(listed.output).count == open.count)
    }

    /// A writer killed after writing its rows and history but before COMMIT leaves neither, and
    /// the watcher hears nothing of it.
    @Test(arguments: TodoEngine.available)
    func aWriterKilledBeforeCommitLeavesNoTrace(_ engine: TodoEngine) throws {
        let database = try engine.freshDatabase()
        _ = try Self.run(["add", "before"], database: database)
        let watcher = try Self.watch(database)
        let doomed = try Self.todo.start(["add", "doomed", "--database", database], environment: Self.environment.merging(["TODO_PAUSE_BEFORE_COMMIT": "30"]) { $1 })
        let paused = doomed.read(.error, until: { $0.contains("paused before commit") })
        #expect(paused.contains("paused before commit"))
        kill(doomed.processIdentifier, SIGKILL)
        let killed = doomed.finish()
        #expect(killed.status != 0)
        let after = try Self.run(["add", "after"], database: database)
        let id = after.output.trimmingCharacters(in: .whitespacesAndNewlines)
        // A last commit as the signal: the watcher prints in commit order, so once it shows
        // "last", anything the killed writer had committed would have been printed before it.
        let last = try Self.run(["add", "last"], database: database)
        let lastID = last.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let seen = watcher.read(until: { $0.contains("last") })
        let run = Self.stop(watcher)
        #expect(Self.lines(run.output) == ["+ \(id) after", "+ \(lastID) last"], "\(seen)")
        let history = try Self.run(["history", "--json"], database: database)
        #expect(!history.output.contains("doomed"))
        let transactions = try #require(try JSONSerialization.jsonObject(with: Data(history.output.utf8)) as? [[String: Any]])
        #expect(transactions.count == 3)
        #expect(Self.lines(try Self.run(["list"], database: database).output).map { $0.hasSuffix("doomed") } == [false, false, false])
        // The file is sound.
        if engine == .sqlite { #expect(try SQLiteConnection(path: database).query("PRAGMA integrity_check") == [[.text("ok")]]) }
    }

    /// Two writer processes at once, adding and toggling: no write is lost.
    @Test(arguments: TodoEngine.available)
    func twoWritersAtOnceLoseNothing(_ engine: TodoEngine) throws {
        let database = try engine.freshDatabase()
        let shared = try Self.run(["add", "shared"], database: database).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let watcher = try Self.watch(database)
        let script = { (author: String) in
            "for i in $(seq 1 40); do \"$TODO\" add \"\(author) $i\" --author \(author) -d \"$DB\" >/dev/null || exit 1; \"$TODO\" done \(shared) --author \(author) -d \"$DB\" >/dev/null || exit 1; done"
        }
        let environment = Self.environment.merging(["TODO": Self.todo.url.path, "DB": database]) { $1 }
        let writers = try ["app", "widget"].map { author in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script(author)]
            process.environment = environment
            try process.run()
            return process
        }
        #expect(writers.map { exitStatus(of: $0) }.allSatisfy { $0 == 0 })
        let listed = try Self.run(["list", "--json"], database: database)
        let items = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]])
        #expect(items.count == 81)
        // 80 toggles of one item, each read and written in one transaction: an even count
        // leaves it where it started.
        #expect(items.first { $0["id"] as? String == shared }?["done"] as? Bool == false)
        let seen = watcher.read(until: { Self.lines($0).count >= 160 }, within: 20)
        _ = Self.stop(watcher)
        #expect(Self.lines(seen).filter { $0.hasPrefix("+ ") }.count == 80)
        #expect(Self.lines(seen).filter { $0.hasPrefix("~ \(shared) shared") }.count == 80)
        let authors = try Self.run(["history", "--json"], database: database)
        let transactions = try #require(try JSONSerialization.jsonObject(with: Data(authors.output.utf8)) as? [[String: Any]])
        #expect(transactions.count == 161)
        #expect(transactions.filter { $0["author"] as? String == "widget" }.count == 80)
    }

    /// The server restarts while `todo watch` listens (a server of its own, so no other test
    /// loses its connections): the watcher reconnects, and every item added before, during
    /// the reconnect and after is printed once, in order.
    @Test(.enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
    func aServerRestartWhileWatchingLosesAndRepeatsNothing() throws {
        let server = try PostgresServer()
        defer { server.shutdown() }
        let database = try server.createDatabase()
        _ = try Self.run(["list"], database: database)
        let watcher = try Self.watch(database)
        var expected: [String] = []
        func add(_ name: String) throws { expected.append(try Self.add(name, database: database)) }
        for index in 0..<3 { try add("before \(index)") }
        _ = watcher.read(until: { Self.lines($0).count >= 3 })
        server.stop(mode: "fast")
        try server.start()
        // At once, while the watcher is still finding the server again.
        for index in 0..<3 { try add("during \(index)") }
        _ = watcher.read(until: { Self.lines($0).count >= 6 }, within: 30)
        for index in 0..<3 { try add("after \(index)") }
        let seen = watcher.read(until: { Self.lines($0).count >= 9 }, within: 30)
        // Anything printed twice would show up before the stop.
        usleep(1_000_000)
        let run = Self.stop(watcher)
        #expect(Self.lines(run.output) == expected, "\(seen)\n\(run.error)")
    }

    /// `todo watch` runs on a machine of its own (a network namespace) and its link to the
    /// server is cut while it listens, then restored: every item added before, during and
    /// after the partition is printed once, in order.
    @Test(.enabled(if: PostgresServer.available && NetworkNamespace.available, Comment(rawValue: NetworkNamespace.skipReason)))
    func aPartitionedWatcherLosesAndRepeatsNothing() throws {
        let machine = try NetworkNamespace(subnet: Int(getpid() % 200) + 1)
        defer { machine.remove() }
        let server = try PostgresServer(alsoListeningOn: [machine.hostAddress])
        defer { server.shutdown() }
        let local = try server.createDatabase()
        let remote = local.replacingOccurrences(of: "127.0.0.1", with: machine.hostAddress)
        _ = try Self.run(["list"], database: local)
        let watcher = try machine.start(Self.todo, ["watch", "--database", remote], environment: Self.environment)
        let ready = watcher.read(.error, until: { $0.contains("watching") })
        #expect(ready.contains("watching"), "\(ready)")
        var expected: [String] = []
        func add(_ name: String) throws { expected.append(try Self.add(name, database: local)) }
        for index in 0..<2 { try add("before \(index)") }
        _ = watcher.read(until: { Self.lines($0).count >= 2 })
        try machine.cut()
        for index in 0..<3 { try add("during \(index)") }
        // Long enough for the listener's check to find the link dead and start reconnecting.
        usleep(8_000_000)
        try machine.restore()
        for index in 0..<2 { try add("after \(index)") }
        let seen = watcher.read(until: { Self.lines($0).count >= 7 }, within: 60)
        usleep(1_000_000)
        let run = Self.stop(watcher)
        #expect(Self.lines(run.output) == expected, "\(seen)\n\(run.error)")
    }

    /// Processes behind a real pgbouncer in transaction pooling mode (`?pgbouncer=true` in the
    /// URL, `DIRECT_URL` for the watcher's LISTEN and for migrations): two writers add and
    /// toggle, and the watcher prints every change once, in order.
    @Test(.enabled(if: Pgbouncer.available, Comment(rawValue: Pgbouncer.skipReason)))
    func processesBehindPgbouncerAreWatchedWithoutLossOrRepeats() throws {
        let direct = try TodoEngine.postgres.freshDatabase()
        let name = String(direct[direct.index(after: direct.lastIndex(of: "/")!)...])
        let pooled = try #require(Pgbouncer.shared, "pgbouncer did not start").url(database: name) + "?pgbouncer=true"
        let environment = Self.environment.merging(["DIRECT_URL": direct]) { $1 }
        #expect(try Self.todo.run(["list", "--database", pooled], environment: environment).status == 0, "opens and migrates through DIRECT_URL")
        let watcher = try Self.todo.start(["watch", "--database", pooled], environment: environment)
        let ready = watcher.read(.error, until: { $0.contains("watching") })
        #expect(ready.contains("watching"), "\(ready)")
        let script = { (author: String) in
            "for i in $(seq 1 15); do id=$(\"$TODO\" add \"\(author) $i\" --author \(author) -d \"$DB\") || exit 1; \"$TODO\" done $id --author \(author) -d \"$DB\" >/dev/null || exit 1; done"
        }
        let writers = try ["app", "widget"].map { author in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script(author)]
            process.environment = environment.merging(["TODO": Self.todo.url.path, "DB": pooled]) { $1 }
            try process.run()
            return process
        }
        #expect(writers.map { exitStatus(of: $0) }.allSatisfy { $0 == 0 })
        let seen = watcher.read(until: { Self.lines($0).count >= 60 }, within: 30)
        usleep(500_000)
        let run = Self.stop(watcher)
        let lines = Self.lines(run.output)
        #expect(lines.count == 60, "\(seen)\n\(run.error)")
        #expect(Set(lines).count == 60, "no change twice")
        for author in ["app", "widget"] {
            // Each writer's changes in its own order: its add before its done, item by item.
            let own = lines.filter { $0.contains(" \(author) ") }
            #expect(own.count == 30)
            for index in 1...15 {
                let add = own.firstIndex { $0.hasPrefix("+ ") && $0.hasSuffix(" \(author) \(index)") }
                let done = own.firstIndex { $0.hasPrefix("~ ") && $0.hasSuffix(" \(author) \(index) done") }
                #expect(add != nil && done != nil && add! < done!, "\(author) \(index)")
            }
        }
    }

    /// `--author` hides a watcher's own writes unless `--include-own`.
    @Test(arguments: TodoEngine.available)
    func watchSkipsItsOwnAuthorUnlessAsked(_ engine: TodoEngine) throws {
        let database = try engine.freshDatabase()
        _ = try Self.run(["list"], database: database)
        let widget = try Self.watch(database, ["--author", "widget"])
        let everything = try Self.watch(database, ["--author", "widget", "--include-own"])
        let mine = try Self.run(["add", "from the widget", "--author", "widget"], database: database)
        let theirs = try Self.run(["add", "from the app", "--author", "app"], database: database)
        let skipped = widget.read(until: { $0.contains("from the app") })
        let all = everything.read(until: { $0.contains("from the app") })
        _ = Self.stop(widget)
        _ = Self.stop(everything)
        let mineID = mine.output.trimmingCharacters(in: .whitespacesAndNewlines), theirsID = theirs.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Self.lines(skipped) == ["+ \(theirsID) from the app"])
        #expect(Self.lines(all) == ["+ \(mineID) from the widget", "+ \(theirsID) from the app"])
    }

    @Test func historyShowsTombstonesAndPruningIsReported() async throws {
        let database = temporaryPath("todo.sqlite")
        let id = try Self.run(["add", "Buy milk", "--due", "2026-12-01"], database: database).output.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try Self.run(["done", id], database: database)
        _ = try Self.run(["remove", id, "--author", "widget"], database: database)
        let text = try Self.run(["history"], database: database).output
        #expect(text.contains("update TodoItem \"\(id)\" isCompleted=1"), "\(text)")
        #expect(text.contains("delete TodoItem \"\(id)\" taskName=\"Buy milk\""), "\(text)")
        #expect(text.contains(" widget\n"))
        let after = try Self.run(["history", "--after", "2", "--json"], database: database)
        let transactions = try #require(try JSONSerialization.jsonObject(with: Data(after.output.utf8)) as? [[String: Any]])
        #expect(transactions.count == 1)
        let change = try #require((transactions[0]["changes"] as? [[String: Any]])?.first)
        #expect((change["tombstone"] as? [String: Any])?["taskName"] as? String == "Buy milk")
        // Prune through the store; a reader asking for pruned history is told, not misled.
        let store = try Store(
            path: database, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations,
            configuration: .init(keys: .ring(try KeyRing(parsing: "k1=\(Self.key)", source: "test"))))
        try await store.deleteHistory(before: HistoryToken(3))
        let pruned = try Self.run(["history", "--after", "1"], database: database)
        #expect(pruned.status == 1)
        #expect(pruned.error.contains("was pruned"), "\(pruned.error)")
        #expect(try Self.run(["history"], database: database).output.hasPrefix("3 "))
        #expect(try Self.run(["history", "--after", "x"], database: database).status == 2)
    }

    /// Notes are encrypted in the file; `show` decrypts them; no key, no store.
    @Test func notesAreEncryptedAndShownWithTheKey() throws {
        let database = temporaryPath("todo.sqlite")
        let id = try Self.run(["add", "Paint", "the", "kitchen", "--notes", "the blue roller is in the shed"], database: database).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let show = try Self.run(["show", String(id.prefix(8))], database: database)
        #expect(show.output.contains("notes: the blue roller is in the shed"), "\(show.output)")
        var bytes: [UInt8] = []
        for file in [database, database + "-wal"] { bytes += FileManager.default.contents(atPath: file).map { [UInt8]($0) } ?? [] }
        #expect(!String(decoding: bytes, as: UTF8.self).contains("blue roller"))
        let noKey = try Self.todo.run(["list", "--database", database], environment: ["PATH": "/usr/bin:/bin"])
        #expect(noKey.status == 1)
        #expect(noKey.error.contains("SCHEMAGEN_KEYS is not set") && noKey.error.contains("openssl rand -base64 32"), "\(noKey.error)")
        #expect(!noKey.error.contains(Self.key))
        let wrong = Data([UInt8](repeating: 0x2b, count: 32)).base64EncodedString()
        let wrongKey = try Self.todo.run(["list", "--database", database], environment: ["PATH": "/usr/bin:/bin", "SCHEMAGEN_KEYS": "k1=\(wrong)"])
        #expect(wrongKey.status == 1)
        #expect(wrongKey.error.contains("key 'k1' is not the key"), "\(wrongKey.error)")
        #expect(!wrongKey.error.contains(wrong))
    }

    @Test func searchPrintsTheBestMatchesFirst() throws {
        let database = temporaryPath("todo.sqlite")
        for name in ["Buy paint", "Paint the kitchen", "Water the plants"] { _ = try Self.run(["add", name], database: database) }
        let found = try Self.run(["search", "paint", "kitchen"], database: database)
        #expect(Self.lines(found.output).count == 1)
        #expect(found.output.contains("[Paint] the [kitchen]"), "\(found.output)")
        #expect(Self.lines(try Self.run(["search", "paint"], database: database).output).count == 2)
        #expect(try Self.run(["search", "\"(unbalanced"], database: database).status == 0, "user text is never FTS5 syntax")
    }

    /// A rekey killed midway keeps its finished batches, and a second run completes the rest.
    @Test func rekeyKilledMidwayCompletesOnASecondRun() async throws {
        let database = temporaryPath("todo.sqlite")
        let oldKeys = try KeyRing(parsing: "k1=\(Self.key)", source: "test")
        let store = try Store(path: database, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(keys: .ring(oldKeys)))
        try await store.insert((0..<1000).map { TodoItem(taskName: "item \($0)", notes: "secret note \($0)") })
        let newKey = Data([UInt8](repeating: 0x77, count: 32)).base64EncodedString()
        let rotated = ["SCHEMAGEN_KEYS": "k2=\(newKey),k1=\(Self.key)"]
        func keyIDs() throws -> [String: Int] {
            var counts: [String: Int] = [:]
            for row in try SQLiteConnection(path: database).query("SELECT notes FROM todo_item") {
                guard case .blob(let bytes) = row[0] else { continue }
                counts[FieldCipher.keyID(of: bytes) ?? "none", default: 0] += 1
            }
            return counts
        }
        let first = try Self.todo.start(
            ["rekey", "--batch", "50", "--database", database],
            environment: Self.environment.merging(rotated) { $1 }.merging(["TODO_PAUSE_BEFORE_COMMIT": "0.05"]) { $1 })
        let progress = first.read(.error, until: { $0.contains("250/1000") }, within: 30)
        #expect(progress.contains("250/1000"), "\(progress)")
        kill(first.processIdentifier, SIGKILL)
        _ = first.finish()
        let midway = try keyIDs()
        #expect((midway["k2"] ?? 0) >= 250 && (midway["k1"] ?? 0) > 0 && midway.values.reduce(0, +) == 1000, "\(midway)")
        #expect(try SQLiteConnection(path: database).query("PRAGMA integrity_check") == [[.text("ok")]])
        let second = try Self.run(["rekey"], database: database, environment: rotated)
        #expect(second.status == 0, "\(second.error)")
        #expect(second.output == "re-encrypted \(midway["k1"] ?? 0) values\n")
        #expect(try keyIDs() == ["k2": 1000])
        let onlyNew = try Self.run(
            ["show", try #require(Self.lines(try Self.run(["list"], database: database, environment: ["SCHEMAGEN_KEYS": "k2=\(newKey)"]).output).first?.prefix(8).description)],
            database: database, environment: ["SCHEMAGEN_KEYS": "k2=\(newKey)"])
        #expect(onlyNew.output.contains("notes: secret note"), "\(onlyNew.output) \(onlyNew.error)")
        let history = try Self.run(["history", "--json"], database: database, environment: rotated)
        let transactions = try #require(try JSONSerialization.jsonObject(with: Data(history.output.utf8)) as? [[String: Any]])
        #expect(transactions.count == 1, "only the inserts: re-encryption changes no value, so it is not history")
    }
}
