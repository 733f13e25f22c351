import Foundation
import MigrationFiles
import MigrationPlanner
import PostgresKit
import RelationalModel
import SchemaKit
import SchemaMetadata
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `migrate` on a Patroni cluster: through a leader killed mid-run, and backfills that wait for
/// a standby whose replay is paused.
@Suite(.blocking, .serialized, .enabled(if: PatroniCluster.available, Comment(rawValue: PatroniCluster.skipReason)))
struct MigrateClusterTests {
    struct ClusterTestError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static let migrate = BuiltTool("migrate")
    static let rows = 200_000

    /// Events: version 1 creates the table; version 2 (online) widens `score` to a double,
    /// backfilled, and indexes a required `name` (the process tests' migrations).
    static func migrations() throws -> String { try OnlineMigrateProcessTests.onlineMigrations().path }

    /// A database on the cluster with version 1 and `rows` events.
    static func loadedDatabase(_ cluster: PatroniCluster, path: String, rows: Int = rows) throws -> String {
        let url = try cluster.createDatabase()
        let created = try migrate.run(["up", "1", "--database", url, "--dir", path])
        guard created.status == 0 else { throw ClusterTestError("migrate up 1: \(created.error)") }
        try PostgresConnection(url).execute(
            "INSERT INTO events (name, score) SELECT CASE WHEN i % 5 = 0 THEN NULL ELSE 'event ' || i END, i FROM generate_series(1, \(rows)) AS i")
        return url
    }

    /// One statement's first value on the primary, as text.
    static func value(_ url: String, _ sql: String) -> String? {
        guard let connection = try? PostgresConnection(url), let rows = try? connection.query(sql), let first = rows.first?.first else { return nil }
        switch first {
        case .integer(let value): return String(value)
        case .text(let text): return text
        case .real(let value): return String(value)
        default: return nil
        }
    }

    /// Waits until `condition` holds, checking every 50 ms; whether it did within `seconds`.
    static func wait(_ seconds: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    /// What a migrate run killed at a point left, after it resumed or the same command ran again.
    struct Outcome: Sendable {
        var first: BuiltTool.Run
        var second: BuiltTool.Run?
        var backfilled: String?
        var invalidIndexes: String?
        var history: String?
        var phase: String?
    }

    /// Starts `command`, kills the leader once `ready` holds on the primary, and runs the same
    /// command again if the first run did not finish by itself.
    /// `holding` is a lock an app's open transaction holds meanwhile (it dies with the leader).
    static func killingTheLeader(_ cluster: PatroniCluster, _ command: [String], url: String, holding lock: String? = nil, when ready: @escaping () -> Bool) throws -> Outcome {
        let app = try lock.map { lock in
            let connection = try PostgresConnection(url)
            try connection.execute("BEGIN")
            try connection.execute(lock)
            return connection
        }
        defer { withExtendedLifetime(app) {} }
        let running = try migrate.start(command + ["--database", url, "--failover-timeout", "90"])
        guard wait(120, until: ready) else {
            kill(running.processIdentifier, SIGKILL)
            throw ClusterTestError("the point to kill the leader at never came: \(running.finish())")
        }
        try cluster.killLeader()
        let first = finishing(running, on: cluster)
        let second = first.status == 0 ? nil : try migrate.run(command + ["--database", url, "--connect-retry", "60"])
        try cluster.restoreKilledNodes()
        return Outcome(
            first: first, second: second,
            backfilled: value(url, "SELECT count(*) FROM events_v2.events WHERE score = id AND name IS NOT NULL"),
            invalidIndexes: value(url, "SELECT count(*) FROM pg_index WHERE NOT indisvalid"),
            history: value(url, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schemagen_migrations"),
            phase: value(url, "SELECT coalesce(string_agg(phase, ','), '') FROM schemagen_online_migrations"))
    }

    /// Waits for a `migrate` that runs through a failover. While it runs, a standby left unable
    /// to start by the kill is cloned again (every 30 s), as its operator would, since under
    /// synchronous_mode_strict a commit waits for a synchronous standby; past `timeout` the
    /// process is killed, so a test fails instead of waiting for ever.
    static func finishing(_ running: BuiltTool.Running, on cluster: PatroniCluster, timeout: Double = 300) -> BuiltTool.Run {
        let deadline = Date().addingTimeInterval(timeout)
        var nextCheck = Date().addingTimeInterval(30)
        while running.process.isRunning, Date() < deadline {
            // Reading drains its output meanwhile, so a full pipe cannot hold it.
            _ = running.read(.output, until: { _ in false }, within: 0.5)
            _ = running.read(.error, until: { _ in false }, within: 0.1)
            if Date() > nextCheck {
                cluster.reinitializeStandbysThatCannotStart()
                nextCheck = Date().addingTimeInterval(30)
            }
        }
        if running.process.isRunning { kill(running.processIdentifier, SIGKILL) }
        return running.finish()
    }

    @Test func aBackfillGoesOnFromItsLastBatchOnTheNewPrimary() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let outcome = try await offThePool { () throws -> Outcome in
            let path = try Self.migrations()
            let url = try Self.loadedDatabase(cluster, path: path)
            // Killed once a few batches are recorded, well before the backfill's end: the WAL
            // budget stretches the backfill over seconds, so a loaded machine cannot finish it
            // between the check and the kill.
            return try Self.killingTheLeader(cluster, ["up", "--dir", path, "--batch-time", "50", "--max-wal-rate", "4"], url: url) {
                (Int(Self.value(url, "SELECT coalesce(max(rows_done), 0) FROM schemagen_online_migrations") ?? "") ?? 0) > 5_000
            }
        }
        #expect(outcome.first.status == 0, "migrate did not resume by itself: \(outcome.first.output)\(outcome.first.error) \(outcome.second?.error ?? "")")
        #expect(outcome.first.output.contains("note: the primary changed ("), "\(outcome.first.output)")
        #expect(outcome.first.output.contains("after the backfill's last batch"), "\(outcome.first.output)")
        #expect(outcome.backfilled == String(Self.rows), "every row backfilled: \(outcome.first.output)\(outcome.first.error)")
        #expect(outcome.invalidIndexes == "0")
        #expect(outcome.history == "1,2")
        #expect(outcome.phase == "expanded")
    }

    @Test func contractAndAnOrdinaryMigrationFinishThroughAKilledLeader() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let (contract, ordinary, sum) = try await offThePool { () throws -> (Outcome, Outcome, String?) in
            let path = try Self.migrations()
            let url = try Self.loadedDatabase(cluster, path: path)
            let expanded = try Self.migrate.run(["up", "--database", url, "--dir", path])
            guard expanded.status == 0 else { throw ClusterTestError("expand: \(expanded.error)") }
            // Contract: killed while a section retries for a table an app holds.
            let contract = try Self.killingTheLeader(cluster, ["complete", "--dir", path], url: url, holding: "LOCK TABLE events IN ACCESS SHARE MODE") {
                Self.value(url, "SELECT phase FROM schemagen_online_migrations") == "contract"
            }
            // An ordinary migration, written by hand: one transaction that rewrites every row
            // (pausing 50 ms on every 2,000th, about 5 s in all), killed mid-way.
            let directory = MigrationDirectory(path: path)
            let snapshot = try #require(try directory.latestSnapshot())
            func file(_ direction: MigrationHeader.Direction, _ sql: String) -> String {
                MigrationHeader(schema: "Events", dialect: "postgres", direction: direction, fromVersion: snapshot.version, toVersion: snapshot.version).text + sql
            }
            try directory.write(
                up: file(.up, "ALTER TABLE events ADD COLUMN total double precision;\nUPDATE events SET total = score * 2 + CASE WHEN id % 2000 = 0 THEN length(pg_sleep(0.05)::text) ELSE 0 END;\n"),
                down: file(.down, "ALTER TABLE events DROP COLUMN total;\n"), snapshot: try snapshot.canonicalJSON(), as: .init(number: 3, name: "total"))
            let ordinary = try Self.killingTheLeader(cluster, ["up", "--dir", path], url: url) {
                Self.value(url, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%UPDATE events SET total%' AND state = 'active' AND pid <> pg_backend_pid()") == "1"
            }
            return (contract, ordinary, Self.value(url, "SELECT count(*) FROM events WHERE total = score * 2"))
        }
        let contractErrors = contract.first.error + (contract.second?.error ?? "")
        #expect(contract.first.status == 0 || contract.second?.status == 0, "\(contractErrors)")
        #expect(contract.phase == "", "the contract finished")
        #expect(contract.invalidIndexes == "0")
        let ordinaryErrors = ordinary.first.error + (ordinary.second?.error ?? "")
        #expect(ordinary.first.status == 0 || ordinary.second?.status == 0, "\(ordinaryErrors)")
        #expect(ordinary.history == "1,2,3")
        #expect(sum == String(Self.rows), "the ordinary migration ran whole, once")
    }

    /// Replay paused on one standby: the backfill stops advancing once that standby's lag is
    /// over the bound, `status` shows why, and it finishes once replay resumes; with the bound
    /// off it does not wait; with a lag timeout it gives up, and the next run resumes.
    @Test func backfillsWaitForAStandbyWhoseReplayIsPaused() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let results = try await offThePool { () throws -> [String: String] in
            try cluster.waitUntilAllStream()
            let leader = try cluster.waitForLeader()
            let standby = try #require(cluster.nodes.first { $0.name != leader.name })
            let path = try Self.migrations()
            var results: [String: String] = [:]
            func pauseReplay(on node: PatroniCluster.Node? = nil) {
                let node = node ?? standby
                _ = cluster.query(node, "SELECT pg_wal_replay_pause()")
                _ = Self.wait(30) { cluster.query(node, "SELECT pg_get_wal_replay_pause_state()") == "paused" }
            }
            // Patroni would resume replay within a loop otherwise.
            try cluster.setMaintenance(true)
            defer {
                _ = cluster.query(standby, "SELECT pg_wal_replay_resume()")
                try? cluster.setMaintenance(false)
            }

            // Throttled: waits, shows it, finishes after the resume. The copy of 200,000 rows takes
            // under a second on its own: a WAL budget stretches it, so the lag passes the 1 s bound midway.
            let url = try Self.loadedDatabase(cluster, path: path)
            pauseReplay()
            let running = try Self.migrate.start(["up", "--database", url, "--dir", path, "--max-replica-lag", "1000", "--max-wal-rate", "10", "--batch-time", "50"])
            let waiting = running.read(until: { $0.contains("waiting: \(standby.name) replay lag") }, within: 120)
            results["waiting"] = waiting
            let doneAtWait = Self.value(url, "SELECT rows_done FROM schemagen_online_migrations") ?? "?"
            var trace = ""
            for _ in 0..<6 {
                trace +=
                    (cluster.query(leader, "SELECT application_name || ' ' || replay_lsn || ' ' || pg_current_wal_lsn() || ' ' || coalesce(replay_lag::text, '-') FROM pg_stat_replication") ?? "")
                    + " | "
                trace += (cluster.query(standby, "SELECT pg_get_wal_replay_pause_state() || ' ' || pg_last_wal_replay_lsn()") ?? "") + "\n"
                usleep(500_000)
            }
            results["trace"] = trace
            results["held"] = "\(doneAtWait) \(Self.value(url, "SELECT rows_done FROM schemagen_online_migrations") ?? "?")"
            results["status"] = try Self.migrate.run(["status", "--database", url, "--dir", path]).output
            _ = cluster.query(standby, "SELECT pg_wal_replay_resume()")
            let finished = running.finish()
            results["trace"]! += finished.output + finished.error
            results["throttled"] = "\(finished.status) \(Self.value(url, "SELECT phase FROM schemagen_online_migrations") ?? "none")"

            // Off: the same backfill with replay paused does not wait.
            let unthrottledURL = try Self.loadedDatabase(cluster, path: path)
            pauseReplay()
            let unthrottled = try Self.migrate.run(["up", "--database", unthrottledURL, "--dir", path, "--max-replica-lag", "0"])
            results["off"] = "\(unthrottled.status) \(unthrottled.output.contains("waiting:"))"
            _ = cluster.query(standby, "SELECT pg_wal_replay_resume()")

            // A lag timeout: exit 1, progress kept, the next run resumes and finishes.
            let timeoutURL = try Self.loadedDatabase(cluster, path: path)
            pauseReplay()
            let gaveUp = try Self.migrate.run(["up", "--database", timeoutURL, "--dir", path, "--replica-lag-timeout", "2", "--max-replica-lag", "1000", "--max-wal-rate", "10", "--batch-time", "50"])
            results["timeout"] = "\(gaveUp.status) \(gaveUp.error)"
            _ = cluster.query(standby, "SELECT pg_wal_replay_resume()")
            let resumed = try Self.migrate.run(["up", "--database", timeoutURL, "--dir", path])
            results["resumed"] =
                "\(resumed.status) \(Self.value(timeoutURL, "SELECT count(*) FROM events_v2.events WHERE score = id AND name IS NOT NULL") ?? "none") \(resumed.error)"

            // A standby that stops streaming while the backfill waits for it: said once, then
            // no longer waited for. The asynchronous one, so that commits never wait for it.
            let asynchronousName = cluster.query(leader, "SELECT application_name FROM pg_stat_replication WHERE sync_state <> 'sync' LIMIT 1")
            guard let asynchronous = cluster.nodes.first(where: { $0.name == asynchronousName }) else {
                throw ClusterTestError("no asynchronous standby: \(asynchronousName ?? "none")")
            }
            let goneURL = try Self.loadedDatabase(cluster, path: path)
            pauseReplay(on: asynchronous)
            let waitingForGone = try Self.migrate.start(["up", "--database", goneURL, "--dir", path, "--max-replica-lag", "1000", "--max-wal-rate", "10", "--batch-time", "50"])
            let beforeKill = waitingForGone.read(until: { $0.contains("waiting: \(asynchronous.name) replay lag") }, within: 120)
            cluster.kill(node: asynchronous)
            let gone = waitingForGone.finish()
            // `finish` hands back all the output, what `read` saw included.
            let notes = gone.output.components(separatedBy: "note: standby \(asynchronous.name) stopped streaming").count - 1
            results["gone"] = "\(gone.status) \(notes) \(Self.value(goneURL, "SELECT phase FROM schemagen_online_migrations") ?? "none")"
            results["goneOutput"] = "\(beforeKill.count) bytes before the kill; \(gone.output)\(gone.error)"
            try cluster.setMaintenance(false)
            try cluster.restoreKilledNodes()
            return results
        }
        let waiting = try #require(results["waiting"])
        #expect(waiting.contains("replay lag"), "the backfill never waited: \(waiting)")
        let held = (results["held"] ?? "").split(separator: " ")
        #expect(held.count == 2 && held[0] == held[1], "the backfill went on while the standby lagged: rows done \(results["held"] ?? "") \(results["trace"] ?? "")")
        #expect(results["status"]?.contains("waiting: ") == true && results["status"]?.contains("standby ") == true, "\(results["status"] ?? "")")
        #expect(results["status"]?.contains("primary: ") == true)
        #expect(results["throttled"] == "0 expanded", "\(results["throttled"] ?? "")")
        #expect(results["off"] == "0 false", "with --max-replica-lag 0 the backfill does not wait: \(results["off"] ?? "")")
        let timeout = results["timeout"] ?? ""
        #expect(timeout.hasPrefix("1 ") && timeout.contains("run the same command again to resume"), "\(timeout)")
        #expect(results["resumed"]?.hasPrefix("0 \(Self.rows)") == true, "\(results["resumed"] ?? "")")
        #expect(results["gone"] == "0 1 expanded", "\(results["gone"] ?? "") \(results["goneOutput"] ?? "")")
    }
}

extension MigrateClusterTests {
    /// The bound holds however fast the copy runs (no WAL budget slows it): for a standby whose
    /// replay was paused before `migrate up` started, and for one paused halfway through the
    /// copy. Once the standby is over the bound, nothing more is copied or built until its replay
    /// resumes: the run waits, naming it and how long it has waited, then finishes.
    @Test func theLagBoundHoldsForAStandbyPausedBeforeOrDuringAFastCopy() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let results = try await offThePool { () throws -> [String: String] in
            try cluster.waitUntilAllStream()
            let leader = try cluster.waitForLeader()
            // The asynchronous standby, whose lag no commit waits for.
            let asynchronousName = cluster.query(leader, "SELECT application_name FROM pg_stat_replication WHERE sync_state <> 'sync' LIMIT 1")
            let standby = try #require(cluster.nodes.first { $0.name == asynchronousName }, "no asynchronous standby: \(asynchronousName ?? "none")")
            let path = try Self.migrations()
            var results: [String: String] = [:]
            try cluster.setMaintenance(true)
            defer {
                _ = cluster.query(standby, "SELECT pg_wal_replay_resume()")
                try? cluster.setMaintenance(false)
            }
            func pauseReplay() {
                _ = cluster.query(standby, "SELECT pg_wal_replay_pause()")
                _ = Self.wait(30) { cluster.query(standby, "SELECT pg_get_wal_replay_pause_state()") == "paused" }
            }
            /// Rows copied, and the phase, as the run records them.
            func progress(_ url: String) -> String {
                "\(Self.value(url, "SELECT rows_done FROM schemagen_online_migrations") ?? "-") \(Self.value(url, "SELECT phase FROM schemagen_online_migrations") ?? "-")"
            }
            func heldWhilePaused(_ url: String, _ running: BuiltTool.Running, _ name: String) {
                let waiting = running.read(until: { $0.contains("waiting: \(standby.name) replay lag") }, within: 120)
                results["\(name) waiting"] = waiting
                let first = progress(url)
                sleep(3)
                let later = progress(url)
                results["\(name) held"] = first == later ? "held" : "moved: \(first) -> \(later)"
                _ = cluster.query(standby, "SELECT pg_wal_replay_resume()")
                let finished = running.finish()
                results["\(name) finished"] = "\(finished.status) \(Self.value(url, "SELECT phase FROM schemagen_online_migrations") ?? "none")"
                results["\(name) output"] = finished.output + finished.error
            }

            // Paused before the run starts: a million rows, whose copy runs past the bound.
            let before = try Self.loadedDatabase(cluster, path: path, rows: 1_000_000)
            pauseReplay()
            heldWhilePaused(before, try Self.migrate.start(["up", "--complete", "--database", before, "--dir", path, "--max-replica-lag", "1000"]), "before")

            // Paused once the copy has begun: a million rows, so that it runs past the bound.
            let during = try Self.loadedDatabase(cluster, path: path, rows: 1_000_000)
            let running = try Self.migrate.start(["up", "--database", during, "--dir", path, "--max-replica-lag", "1000"])
            _ = Self.wait(60) { (Int(Self.value(during, "SELECT rows_done FROM schemagen_online_migrations") ?? "0") ?? 0) > 0 }
            pauseReplay()
            heldWhilePaused(during, running, "during")
            try cluster.setMaintenance(false)
            return results
        }
        // `--complete` before (nothing left in progress), expand alone during.
        for (name, finished) in [("before", "0 none"), ("during", "0 expanded")] {
            #expect(results["\(name) waiting"]?.contains("replay lag") == true, "\(name): the run never waited: \(results["\(name) output"] ?? "")")
            #expect(results["\(name) held"] == "held", "\(name): the run went on while the standby was over the bound: \(results["\(name) held"] ?? "") \(results["\(name) output"] ?? "")")
            #expect(results["\(name) finished"] == finished, "\(name): \(results["\(name) finished"] ?? "") \(results["\(name) output"] ?? "")")
            #expect(results["\(name) output"]?.contains("s so far)") == true, "the wait says how long: \(results["\(name) output"] ?? "")")
        }
    }
}

/// `--max-wal-rate` on one server: the backfill's WAL over the run stays within the budget.
@Suite(.blocking, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct WALBudgetTests {
    @Test func aBackfillKeepsToItsWALBudget() async throws {
        // A server of its own: the budget counts the server's WAL, and the shared one carries
        // every other test's writes.
        let (run, written, seconds) = try await offThePool { () throws -> (BuiltTool.Run, Double, Double) in
            let server = try PostgresServer()
            defer { server.shutdown() }
            let path = try MigrateClusterTests.migrations()
            let url = try server.createDatabase()
            let created = try MigrateClusterTests.migrate.run(["up", "1", "--database", url, "--dir", path])
            guard created.status == 0 else { throw MigrateClusterTests.ClusterTestError("migrate up 1: \(created.error)") }
            let connection = try PostgresConnection(url)
            try connection.execute("INSERT INTO events (name, score) SELECT 'event ' || i, i FROM generate_series(1, 100000) AS i")
            func position() throws -> Double {
                guard case .integer(let bytes)? = try connection.query("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").first?.first else { return 0 }
                return Double(bytes)
            }
            let before = try position()
            let started = Date()
            let run = try MigrateClusterTests.migrate.run(["up", "--database", url, "--dir", path, "--max-wal-rate", "4"])
            return (run, try position() - before, Date().timeIntervalSince(started))
        }
        #expect(run.status == 0, "\(run.error)")
        // The budget is checked before each batch, so the last batch may run over it: one
        // batch's WAL (at most 100,000 rows, a few MB here) on top of the budget's share.
        let megabytes = written / 1_048_576
        #expect(megabytes > 8, "the backfill wrote too little WAL to be paced: \(megabytes) MB")
        #expect(megabytes <= 4 * seconds + 8, "\(megabytes) MB of WAL in \(seconds) s, over 4 MB/s")
    }
}
