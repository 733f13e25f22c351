import CommandLineKit
import DatabaseLocation
import ExampleModels
import Foundation
import HTTPServer
import PersistentStore
import SchemaMetadata
import SyncClient
import SyncCore
import SyncEndpoint
import SyncServer
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `todo sync-server`: the list's server for devices, over HTTP. Devices sign in with a token
/// from `TODO_SYNC_TOKENS` (`token=user,...`), kept out of the command line, where `ps` shows it.
enum SyncServerCommand: Command {
    static let spec = CommandSpec(
        name: "sync-server", abstract: "Serve the list to devices that sync with it, until ^C or SIGTERM.",
        discussion:
            "Devices sign in with a token from TODO_SYNC_TOKENS (token=user, separated by commas). Prints the address it serves on and the app versions it serves: while the database serves the previous version too (an online migration expanded, on PostgreSQL), devices of that version sync through its views. Exit status: 0 stopped by a signal; 1 the database or the port failed; 2 usage error.",
        options: TodoTool.common + [
            .value("port", valueName: "number", help: "The port to listen on (default 8080; 0 takes a free one)."),
            .value("host", valueName: "address", help: "The address to listen on (default 127.0.0.1: this machine only)."),
        ])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let port = Int(arguments.value("port") ?? "8080"), (0...65_535).contains(port) else {
            io.writeError("todo: error: --port takes a number from 0 to 65535\n")
            return .usageOrIO
        }
        let tokens: [String: String]
        switch Self.tokens(io.environment["TODO_SYNC_TOKENS"] ?? "") {
        case .success(let read): tokens = read
        case .failure(let problem):
            io.writeError("todo: error: \(problem.message)\n")
            return .usageOrIO
        }
        // A server started on a file that was not there serves an empty list: said, in case the
        // path was mistyped.
        let location = try? DatabaseLocation.parse(TodoTool.databasePath(arguments, io: io))
        let newFile: String? = if case .sqlite(let path)? = location, !FileManager.default.fileExists(atPath: path) { path } else { nil }
        let opening = TodoTool.open(arguments, io: io)
        guard case .success(let store) = opening else { return opening.exitStatus }
        if let newFile { io.writeError("todo: no database was at \(newFile): serving a new, empty one\n") }
        var versions = [SyncServer.Version(store: store, schema: TodoSchema.descriptor)]
        // The previous version's app too, where the database still serves it; why not, if not.
        let refusal = Mutex("")
        var quiet = io
        quiet.writeError = { text in refusal.withLock { $0 += text } }
        if case .success(let older) = TodoTool.open(arguments, io: quiet, version: TodoSchema.previousVersion) {
            versions.insert(SyncServer.Version(store: older, schema: TodoSchema.previousVersion.descriptor), at: 0)
        }
        let served = versions
        return TodoTool.perform(io) {
            let server = try runToCompletion { try await SyncServer(versions: served) }
            let endpoint = SyncEndpoint(server: server) { request in
                guard let header = request.header("Authorization"), header.hasPrefix("Bearer ") else { return nil }
                return tokens[String(header.dropFirst("Bearer ".count))]
            }
            // For tests that kill the server at the worst moment: a push applied and committed,
            // its answer not yet sent.
            let pause = io.environment["TODO_PAUSE_AFTER_PUSH"].flatMap(Double.init)
            var configuration = HTTPServer.Configuration(host: arguments.value("host") ?? "127.0.0.1", port: port, limits: SyncEndpoint.limits)
            configuration.refusal = SyncEndpoint.refusal
            let http = try HTTPServer(configuration) { request in
                let response = endpoint.respond(to: request)
                if let pause, request.path.hasSuffix("/push") {
                    io.writeError("todo: push applied, answer paused\n")
                    Thread.sleep(forTimeInterval: pause)
                }
                return response
            }
            var line = "app version\(served.count == 1 ? "" : "s") " + served.map { "\($0.schema.version)" }.joined(separator: " and ")
            let why = refusal.withLock { $0 }.replacingOccurrences(of: "todo: error: ", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
            let onServer: Bool = if case .postgres? = location { true } else { false }
            let previous = TodoSchema.previousVersion.descriptor.version
            if served.count == 1 {
                // On SQLite there are no schemas of views, so one version is served by design.
                line += onServer ? " (not \(previous): \(why))" : " (on SQLite a server serves its own version only)"
            }
            io.writeOutput(line + "\n")
            io.writeOutput("serving sync on http://\(arguments.value("host") ?? "127.0.0.1"):\(http.port)/sync\n")
            let stopped = waitForStopSignal()
            _ = http.stop()
            io.writeError("todo: sync server stopped (\(stopped == SIGINT ? "SIGINT" : "SIGTERM"))\n")
            return .success
        }
    }

    /// Why `TODO_SYNC_TOKENS` cannot be read; it never quotes a token.
    struct TokensProblem: Error {
        let message: String
    }

    /// `token=user,token=user` as a map from token to user. An entry that is not `token=user`,
    /// a token or user with spaces, or a token given twice is refused with its place.
    static func tokens(_ text: String) -> Result<[String: String], TokensProblem> {
        let usage = "TODO_SYNC_TOKENS takes the devices' tokens as token=user, separated by commas"
        guard !text.isEmpty else { return .failure(TokensProblem(message: "set \(usage): without one no device can sign in")) }
        var tokens: [String: String] = [:]
        for (index, entry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let place = "entry \(index + 1) of TODO_SYNC_TOKENS"
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return .failure(TokensProblem(message: "\(place) is not token=user: \(usage)")) }
            guard !(parts[0] + parts[1]).contains(where: \.isWhitespace) else { return .failure(TokensProblem(message: "\(place) holds a space: \(usage), without spaces")) }
            guard tokens[parts[0]] == nil else { return .failure(TokensProblem(message: "\(place) repeats an earlier entry's token: give each token once")) }
            tokens[parts[0]] = parts[1]
        }
        return .success(tokens)
    }
}

extension SyncCommand {
    /// An event the user should see, as a line; nil for the counts the summary gives.
    static func line(for event: SyncEvent) -> String? {
        switch event {
        case .conflict(_, let key, let attributes): "conflict: item \(key): \(attributes.joined(separator: ", ")) took a later change from another device"
        case .rejected(let rejection): "refused: item \(rejection.key) (\(rejection.reason.rawValue)): \(rejection.detail ?? "the server refused the change"); it stays on this device"
        case .deletedWhileAway(_, let key): "deleted: item \(key) was deleted on the server while this device was away; its change here went with it"
        case .removedFromScope(let entity, let key): "removed: \(entity) \(key) left what you sync on the server; it was removed here"
        case .pushed, .pulled, .failed: nil
        }
    }
}

/// `todo sync`: this device's list synced once with a server: its changes pushed, the server's
/// pulled. The token comes from `TODO_SYNC_TOKEN`.
enum SyncCommand: Command {
    static let spec = CommandSpec(
        name: "sync", abstract: "Sync this device's list with a server once: push its changes, pull the others'.",
        discussion:
            "The token comes from TODO_SYNC_TOKEN. A sync cut short (a lost link, a killed process) loses nothing: the next one goes on from where it stopped. Exit status: 0 synced; 1 the server could not be reached or refused, or a database error; 2 usage error.",
        options: TodoTool.common + [
            .value("server", valueName: "url", help: "The server's sync address, as `todo sync-server` prints it (default: $TODO_SYNC_SERVER)."),
            .value("device", valueName: "id", help: "This device's id, kept for the life of its database (default: $TODO_DEVICE)."),
            .value("timeout", valueName: "seconds", help: "How long each request to the server may take (default 30)."),
            .value("page-size", valueName: "records", help: "Records a pull asks for at a time (default 500; the server gives at most 1,000)."),
            .value(
                "app-version", valueName: "number",
                help: "Sync as the app of this schema version would: this build's (the default) or the previous one. A database of the previous version is updated by a sync without it."),
        ])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        guard let address = arguments.value("server") ?? io.environment["TODO_SYNC_SERVER"] else {
            io.writeError("todo: error: give the server's address with --server http://host:port/sync (or $TODO_SYNC_SERVER)\n")
            return .usageOrIO
        }
        // The address is not repeated: it may hold a user and password.
        guard let parts = URLComponents(string: address), parts.scheme == "http" || parts.scheme == "https", !(parts.host ?? "").isEmpty,
            (parts.port ?? 80) > 0 && (parts.port ?? 80) <= 65_535, let base = parts.url
        else {
            io.writeError("todo: error: the server's address is not an http:// or https:// URL with a host (and a port from 1 to 65535), such as http://127.0.0.1:8080/sync\n")
            return .usageOrIO
        }
        guard let device = arguments.value("device") ?? io.environment["TODO_DEVICE"], SyncClock.isNodeName(device) else {
            io.writeError("todo: error: give this device an id with --device (or $TODO_DEVICE): 1 to 64 letters, digits, '.', '_', ':' or '-'\n")
            return .usageOrIO
        }
        guard let timeout = Double(arguments.value("timeout") ?? "30"), timeout > 0, timeout.isFinite else {
            io.writeError("todo: error: --timeout takes a number of seconds above 0\n")
            return .usageOrIO
        }
        guard let pageSize = Int(arguments.value("page-size") ?? "500"), pageSize > 0 else {
            io.writeError("todo: error: --page-size takes a whole number above 0\n")
            return .usageOrIO
        }
        var version: SchemaVersionMetadata?
        if let asked = arguments.value("app-version") {
            let previous = TodoSchema.previousVersion.descriptor.version
            guard let number = Int(asked), number == TodoSchema.version || number == previous else {
                io.writeError("todo: error: --app-version takes \(previous) or \(TodoSchema.version): the versions this build knows\n")
                return .usageOrIO
            }
            version = number == TodoSchema.version ? nil : TodoSchema.previousVersion
        }
        let schema = version?.descriptor ?? TodoSchema.descriptor
        let token = io.environment["TODO_SYNC_TOKEN"] ?? ""
        guard !token.isEmpty else {
            io.writeError("todo: error: set TODO_SYNC_TOKEN to this device's token (one of the server's TODO_SYNC_TOKENS): the server signs devices in by it\n")
            return .usageOrIO
        }
        let opening = TodoTool.open(arguments, io: io, version: version)
        guard case .success(let store) = opening else { return opening.exitStatus }
        let transport = HTTPSyncTransport(base: base, timeout: timeout) { ["Authorization": "Bearer \(token)"] }
        return TodoTool.perform(io) {
            let (report, status) = try runToCompletion {
                let client = try await SyncClient(store: store, schema: schema, device: device, transport: transport, pageSize: pageSize)
                return (try await client.sync(), try await client.status())
            }
            // What the server settled otherwise is said, one line each: nothing changes unseen.
            for event in report.settledOtherwise { if let line = Self.line(for: event) { io.writeOutput(line + "\n") } }
            io.writeOutput("synced: \(report.pushedChanges) pushed, \(report.pulledRecords) pulled, \(status.pending) pending\n")
            return .success
        }
    }
}
