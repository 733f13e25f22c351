import CommandLineKit
import Foundation
import MigrationFiles
import Migrator
import MigratorCore
import SQLiteKit
import TextEscaping

enum StatusCommand: Command {
    static let spec = CommandSpec(
        name: "status", abstract: "List every migration: applied (when, by whom, how long, checksum), pending, running or interrupted.",
        discussion: "Reads only: a missing SQLite file is an empty database, not created.",
        options: MigrateTool.common + [.value("format", short: "f", valueName: "format", help: "Output format.", allowed: ["text", "json"], defaultValue: "text")])

    static func run(_ arguments: ParsedArguments, io: CommandIO) -> ExitCode {
        let opening = MigrateTool.open(arguments, io: io, allSchemas: true, readOnly: true)
        guard case .success(let (migrators, database)) = opening else { return opening.exitStatus }
        var rows: [(schema: String, status: Migrator.Status, attempt: Migrator.Attempt?)] = []
        var orphans: [(schema: String, attempt: Migrator.Attempt)] = []
        var online: [String: (state: Migrator.OnlineState, served: [Int])] = [:]
        // What the online migrations not yet contracted carry across their table copies.
        var carried: [String: [Int: [Migrator.CarriedObject]]] = [:]
        // The devices a sync server saw, by schema.
        var devices: [String: [Migrator.SyncDevice]] = [:]
        do {
            for migrator in migrators {
                devices[migrator.schema] = try migrator.syncDevices()
                if let state = try migrator.onlineProgress() { online[migrator.schema] = (state, try migrator.servedVersions()) }
                for (version, objects) in try migrator.carriedObjects() { carried[migrator.schema, default: [:]][version] = objects }
                let attempts = try migrator.attempts()
                let statuses = try migrator.status()
                rows += statuses.map { status in (migrator.schema, status, attempts.last { $0.version == status.version }) }
                let known = Set(statuses.map(\.version))
                orphans += attempts.filter { !known.contains($0.version) }.map { (migrator.schema, $0) }
            }
        } catch {
            io.writeError("migrate: error: \(MigrateAdvice.message(error))\n")
            return MigrateTool.exitCode(for: error)
        }
        if arguments.value("format") == "json" {
            let jsonString = TextEscaping.json
            let items = rows.map { entry -> String in
                let row = entry.status
                var fields = ["\"schema\": \(jsonString(entry.schema))", "\"version\": \(row.version)", "\"name\": \(jsonString(row.name))"]
                switch row.state {
                case .applied(let at, let milliseconds, let matches, let by):
                    fields += [
                        "\"state\": \"applied\"", "\"appliedAt\": \(jsonString(at))", "\"appliedBy\": \(by.map(jsonString) ?? "null")", "\"durationMs\": \(milliseconds)",
                        "\"checksum\": \"\(matches ? "ok" : "changed")\"",
                    ]
                case .pending:
                    fields += ["\"state\": \"pending\""]
                case .fileMissing(let at):
                    fields += ["\"state\": \"missing-file\"", "\"appliedAt\": \(jsonString(at))"]
                }
                if let (state, served) = online[entry.schema], state.version == row.version {
                    var online = [
                        "\"phase\": \"\(state.phase.rawValue)\"", "\"sectionsDone\": \(state.section)", "\"startedAt\": \(jsonString(state.startedAt))",
                        "\"resumedAt\": \(state.resumedAt.map(jsonString) ?? "null")",
                        "\"served\": [\(served.map { jsonString(VersionSchema.name(schema: entry.schema, version: $0)) }.joined(separator: ", "))]",
                    ]
                    if state.phase != .expanded {
                        online.append("\"state\": \"\(state.runningInBackend == nil ? "interrupted" : "running")\"")
                        if let pid = state.runningInBackend { online.append("\"backendPid\": \(pid)") }
                        if state.runningInBackend != nil, let waiting = state.waiting { online.append("\"waiting\": \(jsonString(waiting))") }
                    }
                    if let backfill = state.backfill, state.phase == .expand || state.phase == .contract || state.phase == .rollback {
                        let number: (Double?) -> String = { $0.map { String(format: "%.1f", $0) } ?? "null" }
                        online.append(
                            "\"backfill\": {\"table\": \(jsonString(backfill.table)), \"rowsDone\": \(backfill.rowsDone), \"rowsEstimate\": \(backfill.rowsEstimate.map(String.init) ?? "null"), \"rowsPerSecond\": \(number(backfill.rowsPerSecond)), \"secondsLeft\": \(number(backfill.secondsLeft)), \"updatedAt\": \(jsonString(backfill.updatedAt))}"
                        )
                    }
                    fields.append("\"online\": {" + online.joined(separator: ", ") + "}")
                }
                if let objects = carried[entry.schema]?[row.version] {
                    let items = objects.map { "{\"object\": \(jsonString($0.object)), \"action\": \"\($0.action.rawValue)\", \"reason\": \(jsonString($0.reason))}" }
                    fields.append("\"carries\": [" + items.joined(separator: ", ") + "]")
                }
                if let attempt = entry.attempt {
                    fields.append(
                        "\"attempt\": {\"direction\": \"\(attempt.direction.rawValue)\", \"startedAt\": \(jsonString(attempt.startedAt)), \"state\": \"\(attempt.runningInBackend == nil ? "interrupted" : "running")\"\(attempt.runningInBackend.map { ", \"backendPid\": \($0)" } ?? "")}"
                    )
                }
                return "  {" + fields.joined(separator: ", ") + "}"
            }
            io.writeOutput("[\n" + items.joined(separator: ",\n") + (items.isEmpty ? "" : "\n") + "]\n")
            return .success
        }
        // The schema column widens for a long name (`SchemagenStore`, the store's own).
        let schemaWidth = max(10, rows.map(\.schema.count).max() ?? 0) + 2
        var out = "SCHEMA" + String(repeating: " ", count: schemaWidth - 6) + "VERSION  NAME" + String(repeating: " ", count: 44) + "STATE\n"
        for entry in rows {
            let row = entry.status
            out += entry.schema + String(repeating: " ", count: schemaWidth - entry.schema.count)
            let name = row.name.count > 46 ? String(row.name.prefix(45)) + "…" : row.name
            let padded = name + String(repeating: " ", count: max(1, 48 - name.count))
            var state: String =
                switch row.state {
                case .applied(let at, let milliseconds, let matches, let by): "applied \(at)\(by.map { " by \($0)" } ?? "") in \(milliseconds) ms" + (matches ? "" : ", FILE CHANGED")
                case .pending: "pending"
                case .fileMissing(let at): "applied \(at), FILE MISSING"
                }
            if let attempt = entry.attempt { state += "; " + describe(attempt) }
            if let (online, served) = online[entry.schema], online.version == row.version { state += "; " + describe(online, served: served, schema: entry.schema) }
            out += String(format: "%04d     ", row.version) + padded + state + "\n"
        }
        for (schema, seen) in devices.sorted(by: { $0.key < $1.key }) where !seen.isEmpty { out += describe(seen, schema: schema) }
        for (schema, versions) in carried.sorted(by: { $0.key < $1.key }) {
            for (version, objects) in versions.sorted(by: { $0.key < $1.key }) {
                out += "note: \(schema) \(String(format: "%04d", version)) copies a table; made outside the schema, on it:\n"
                out += objects.map { "  \($0.action == .carry ? "carried" : "CANNOT BE CARRIED"): \($0.object): \($0.reason)\n" }.joined()
            }
        }
        for (schema, attempt) in orphans {
            out += "note: \(schema) migration \(String(format: "%04d", attempt.version)) has no file here; \(describe(attempt))\n"
        }
        if let snapshot = migrators.first?.replicationSnapshot(), !snapshot.standbys.isEmpty {
            out += describe(snapshot, primary: migrators.first?.server.map { "\($0) (of \(database))" } ?? database)
        }
        io.writeOutput(out)
        return .success
    }

    /// `note: Todo sync devices on version 3: laptop (last seen ...), phone (...)`, a line a version.
    static func describe(_ devices: [Migrator.SyncDevice], schema: String) -> String {
        let formatter = ISO8601DateFormatter()
        var out = ""
        for (version, group) in Dictionary(grouping: devices, by: \.schemaVersion).sorted(by: { $0.key < $1.key }) {
            let listed = group.prefix(10).map { "\($0.device) (last seen \(formatter.string(from: $0.lastSeen)))" }.joined(separator: ", ")
            out += "note: \(schema) sync devices on version \(version): \(group.count): \(listed)\(group.count > 10 ? " and \(group.count - 10) more" : "")\n"
        }
        return out
    }

    static func describe(_ state: Migrator.OnlineState, served: [Int], schema: String) -> String {
        let names = served.map { VersionSchema.name(schema: schema, version: $0) }.joined(separator: " and ")
        let since = "since \(state.startedAt)" + (state.resumedAt.map { " (resumed \($0))" } ?? "")
        var progress = "\(state.section) sections done"
        if let backfill = state.backfill, state.phase != .expanded { progress += "; " + describe(backfill) }
        // The migrator lock's holder tells a phase running now from one a lost run left.
        let running = state.runningInBackend.map { "RUNNING in backend pid \($0)" + (state.waiting.map { ", \($0)" } ?? "") }
        switch state.phase {
        case .expand: return "EXPANDING \(since), \(progress); " + (running ?? "INTERRUPTED: `migrate up` resumes it, `migrate rollback` undoes it")
        case .expanded: return "EXPANDED: serving \(names); `migrate complete` once no app of the previous version runs, or `migrate rollback`"
        case .contract: return "CONTRACTING \(since), \(progress); " + (running ?? "INTERRUPTED: `migrate complete` finishes it")
        case .rollback: return "ROLLING BACK \(since), \(progress); " + (running ?? "INTERRUPTED: `migrate rollback` finishes it")
        }
    }

    /// `backfill of orders: 550000 of about 1000000 rows (55%), 12000 rows/s, about 38 s left`.
    static func describe(_ backfill: Migrator.BackfillProgress) -> String {
        var text = "backfill of \(backfill.table): \(backfill.rowsDone)"
        if let estimate = backfill.rowsEstimate, estimate > 0 {
            text += " of about \(estimate) rows (\(min(100, backfill.rowsDone * 100 / estimate))%)"
        } else {
            text += " rows"
        }
        if let rate = backfill.rowsPerSecond { text += ", \(Int(rate.rounded())) rows/s" }
        if let left = backfill.secondsLeft { text += ", about \(Int(left.rounded(.up))) s left" }
        return text + " at \(backfill.updatedAt)"
    }

    /// The cluster as the primary sees it: one line for the primary, one per standby with its
    /// state and how far behind it replays (the server's `replay_lag`, and the WAL not yet replayed).
    static func describe(_ snapshot: ReplicationSnapshot, primary: String) -> String {
        var text = "primary: \(primary)\n"
        for standby in snapshot.standbys {
            var line = "standby \(standby.name): \(standby.state)"
            if let replayed = standby.replayed {
                let behind = max(0, snapshot.position - replayed)
                line += ", replay lag \(String(format: "%.1f", standby.serverLag ?? 0)) s, \(behind < 1024 ? "\(behind) bytes" : "\(behind / 1024) kB") of WAL not replayed"
            } else {
                line += ", replay position hidden (the role needs pg_monitor)"
            }
            text += line + "\n"
        }
        return text
    }

    static func describe(_ attempt: Migrator.Attempt) -> String {
        if let pid = attempt.runningInBackend {
            return "\(attempt.direction.rawValue) RUNNING since \(attempt.startedAt) (backend pid \(pid))"
        }
        return "\(attempt.direction.rawValue) INTERRUPTED at \(attempt.startedAt) (process or connection lost; rolled back; `migrate up` runs it again, `migrate repair` clears this note)"
    }
}
