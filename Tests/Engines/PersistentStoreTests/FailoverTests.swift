import ExampleModels
import FieldEncryption
import Foundation
import PersistentStorePostgres
import PostgresKit
import SchemaMetadata
import TestSupport
import Testing

@testable import PersistentStoreCore

#if canImport(Glibc)
import Glibc
#endif

/// Events a store reported, kept for the test to read.
final class FailoverEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [StoreEvent] = []

    var record: @Sendable (StoreEvent) -> Void { { [self] event in lock.withLock { kept.append(event) } } }
    var events: [StoreEvent] { lock.withLock { kept } }
    func count(_ kind: StoreEvent.Kind) -> Int { events.filter { $0.kind == kind }.count }
}

/// Writes that the dispatch queue's producers make: each a transaction that enqueues a job and
/// counts it on the queue's counter job (`attempts`), so a write applied twice shows as a
/// counter ahead of the jobs.
enum CountedWrites {
    static let counter = "counter"

    static func open(_ url: String, events: FailoverEvents, failoverTimeout: Duration = .seconds(90), beforeCommit: (@Sendable () -> Void)? = nil) throws -> Store {
        try Store(
            url: url, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations,
            configuration: .init(author: "failover", postgres: PostgresSettings(failoverTimeout: failoverTimeout), beforeCommit: beforeCommit, events: events.record))
    }

    /// The queue and its counter job.
    static func prepare(_ store: Store) async throws -> Int64 {
        let queue = try await store.insert(Queue(name: "failover"))
        try await store.insert(Job(name: counter, queueID: queue.id!))
        return queue.id!
    }

    static func write(_ store: Store, _ name: String, queue: Int64) async throws {
        try await store.transaction { store in
            try store.insert(Job(name: name, queueID: queue))
            let counted = try store.update(Job.self, set: [.increment(\.attempts)], where: #Predicate { $0.name == "counter" })
            precondition(counted == 1)
        }
    }

    /// Every acknowledged job is stored, once, and the counter counted each write once.
    static func expectWhole(_ store: Store, acknowledged: [String]) async throws {
        let jobs = try await store.fetch(Job.self)
        let names = jobs.map(\.name).filter { $0 != counter }
        #expect(Set(names) == Set(acknowledged), "missing: \(Set(acknowledged).subtracting(names).sorted().prefix(5)), unexpected: \(Set(names).subtracting(acknowledged).sorted().prefix(5))")
        let attempts = jobs.first { $0.name == counter }?.attempts
        #expect(attempts == acknowledged.count, "the counter counted \(attempts ?? -1) writes for \(acknowledged.count) acknowledged: a write applied twice or lost")
    }
}

/// A COMMIT cut off on one server, through a proxy: whether it took effect is looked up by
/// the id the transaction wrote, never guessed.
@Suite(.blocking, .serialized, .enabled(if: PostgresServer.available, Comment(rawValue: PostgresServer.skipReason)))
struct CommitOutcomeTests {
    func proxied() throws -> (CommitCuttingProxy, String) {
        let server = try #require(PostgresServer.shared)
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last!)
        let port = server.port
        let proxy = try CommitCuttingProxy { port }
        return (proxy, "postgresql://postgres@127.0.0.1:\(proxy.port)/\(database)")
    }

    @Test func aCommitWhoseAnswerIsLostCountsAsCommittedAndDoesNotRunAgain() async throws {
        let (proxy, url) = try proxied()
        let events = FailoverEvents()
        let store = try CountedWrites.open(url, events: events)
        let queue = try await CountedWrites.prepare(store)
        try await CountedWrites.write(store, "before", queue: queue)
        proxy.cut = .afterCommit
        try await CountedWrites.write(store, "cut", queue: queue)
        #expect(proxy.cuts == 1)
        try await CountedWrites.write(store, "after", queue: queue)
        try await CountedWrites.expectWhole(store, acknowledged: ["before", "cut", "after"])
        let checks = events.events.filter { $0.kind == .outcomeChecked }
        #expect(checks.count == 1 && checks.first?.committed == true, "\(events.events)")
        #expect(events.count(.reconnected) == 1)
        #expect(await store.counters.outcomeChecks == 1)
    }

    @Test func aCommitThatNeverArrivedRunsAgainOnce() async throws {
        let (proxy, url) = try proxied()
        let events = FailoverEvents()
        let store = try CountedWrites.open(url, events: events)
        let queue = try await CountedWrites.prepare(store)
        proxy.cut = .beforeCommit
        try await CountedWrites.write(store, "cut", queue: queue)
        #expect(proxy.cuts == 1)
        try await CountedWrites.expectWhole(store, acknowledged: ["cut"])
        let checks = events.events.filter { $0.kind == .outcomeChecked }
        #expect(checks.count == 1 && checks.first?.committed == false, "\(events.events)")
    }

    /// A write inside a transaction whose RELEASE meets a lost server: the transaction runs
    /// again whole, and later ones stay whole. (The level was once counted off twice: each
    /// later write then committed on its own, and the transaction's COMMIT found its commit id
    /// already written, a duplicate key, as `bench/run store-failover` showed.)
    @Test func aReleaseLostWithTheServerLeavesLaterTransactionsWhole() async throws {
        let (proxy, url) = try proxied()
        let events = FailoverEvents()
        let store = try CountedWrites.open(url, events: events)
        let queue = try await CountedWrites.prepare(store)
        proxy.cut = .beforeStatement("RELEASE")
        try await CountedWrites.write(store, "cut", queue: queue)
        #expect(proxy.cuts == 1)
        try await CountedWrites.write(store, "after", queue: queue)
        struct Refused: Error {}
        await #expect(throws: StoreError.self) {
            try await store.transaction { store in
                try store.insert(Job(name: "refused", queueID: queue))
                throw Refused()
            }
        }
        try await CountedWrites.expectWhole(store, acknowledged: ["cut", "after"])
        #expect(events.count(.reconnected) == 1, "\(events.events)")
    }

    /// With no server to reconnect to, the call fails once the failover timeout ran out, saying
    /// whether the last transaction's outcome is known.
    @Test func noServerWithinTheTimeoutFailsSayingWhetherTheOutcomeIsKnown() async throws {
        let (proxy, url) = try proxied()
        let events = FailoverEvents()
        let store = try CountedWrites.open(url, events: events, failoverTimeout: .seconds(2))
        let queue = try await CountedWrites.prepare(store)
        proxy.cut = .afterCommit
        proxy.stop()
        do {
            try await CountedWrites.write(store, "cut", queue: queue)
            Issue.record("the write went through with no server to reach")
        } catch StoreError.noWritablePrimary(_, let outcomeKnown, _) {
            #expect(!outcomeKnown)
        }
        #expect(events.count(.noWritablePrimary) == 1)
    }
}

extension CommitOutcomeTests {
    /// A transaction whose connection is cut each time it runs (its backend terminated from
    /// inside it) is run again until the failover timeout, then fails: it never committed.
    @Test func aTransactionThatLosesItsServerEachTimeGivesUpAfterTheTimeout() async throws {
        let url = try #require(PostgresServer.shared).createDatabase()
        let events = FailoverEvents()
        let store = try CountedWrites.open(url, events: events, failoverTimeout: .seconds(2))
        let queue = try await CountedWrites.prepare(store)
        let runs = LockedBox(0)
        let started = Date()
        do {
            try await store.transaction { store in
                runs.value += 1
                try store.insert(Job(name: "cut-\(runs.value)", queueID: queue))
                _ = try PostgresConnection(url).query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'schemagen store' AND datname = current_database()")
            }
            Issue.record("the transaction went through though its connection was cut each time")
        } catch StoreError.noWritablePrimary(_, let outcomeKnown, _) {
            #expect(outcomeKnown, "it never reached its COMMIT")
        }
        #expect(runs.value > 1, "it ran again after the first cut")
        #expect(Date().timeIntervalSince(started) < 30, "it gave up")
        try await CountedWrites.expectWhole(store, acknowledged: [])
    }
}

/// The store on a Patroni cluster whose leader is killed under it: no error reaches the app,
/// and every acknowledged write is there once.
@Suite(.blocking, .serialized, .enabled(if: PatroniCluster.available, Comment(rawValue: PatroniCluster.skipReason)))
struct ClusterFailoverTests {
    @Test func writesGoOnWhileTheLeaderIsKilled() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        defer { try? cluster.restoreKilledNodes() }
        let url = try cluster.createDatabase()
        let events = FailoverEvents()
        let store = try CountedWrites.open(url, events: events)
        let queue = try await CountedWrites.prepare(store)
        let killed = LockedBox<PatroniCluster.Node?>(nil)
        let killer = Thread {
            usleep(1_000_000)
            killed.value = try? cluster.killLeader()
        }
        killer.start()
        var acknowledged: [String] = []
        var writesAfterFailover = 0
        // Generous: on a loaded machine, a strict synchronous cluster blocks writes until the
        // remaining standby streams from the new primary.
        let deadline = Date().addingTimeInterval(300)
        while writesAfterFailover < 20, Date() < deadline {
            let name = "job-\(acknowledged.count)"
            try await CountedWrites.write(store, name, queue: queue)
            acknowledged.append(name)
            if events.count(.reconnected) > 0 { writesAfterFailover += 1 }
        }
        let old = try #require(killed.value, "the leader was not killed")
        #expect(writesAfterFailover == 20, "the writes did not go on after the failover: \(events.events)")
        let reconnected = events.events.filter { $0.kind == .reconnected }
        #expect(!reconnected.isEmpty && reconnected.allSatisfy { $0.server != "127.0.0.1:\(old.port)" }, "\(reconnected)")
        try await CountedWrites.expectWhole(store, acknowledged: acknowledged)
    }

    /// The leader killed just before a COMMIT is sent: the COMMIT meets a dead server, the new
    /// primary has no trace of it, so it runs again, once.
    @Test func aCommitSentToAKilledLeaderRunsAgainOnTheNewOne() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        defer { try? cluster.restoreKilledNodes() }
        let url = try cluster.createDatabase()
        let events = FailoverEvents()
        let armed = LockedBox(false)
        let store = try CountedWrites.open(url, events: events) {
            guard armed.value else { return }
            armed.value = false
            _ = try? cluster.killLeader()
        }
        let queue = try await CountedWrites.prepare(store)
        try await CountedWrites.write(store, "before", queue: queue)
        armed.value = true
        try await CountedWrites.write(store, "killed", queue: queue)
        try await CountedWrites.expectWhole(store, acknowledged: ["before", "killed"])
        #expect(events.events.contains { $0.kind == .outcomeChecked && $0.committed == false }, "\(events.events)")
    }

    /// The COMMIT reached the leader, which committed it with its synchronous standby, and the
    /// answer was lost; then the leader is killed: the new primary has the commit id, so the
    /// call succeeds without running again.
    @Test func aCommitWhoseAnswerWasLostIsFoundOnTheNewPrimary() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        defer { try? cluster.restoreKilledNodes() }
        let url = try cluster.createDatabase()
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let proxy = try CommitCuttingProxy { cluster.leader()?.port }
        let events = FailoverEvents()
        let armed = LockedBox(false)
        let store = try CountedWrites.open("postgresql://postgres@127.0.0.1:\(proxy.port)/\(database)", events: events) {
            guard armed.value else { return }
            armed.value = false
            proxy.cut = .afterCommit
            // Killed once the commit is answered (and the answer dropped).
            Thread {
                while proxy.cuts == 0 { usleep(5_000) }
                usleep(200_000)
                _ = try? cluster.killLeader()
            }.start()
        }
        let queue = try await CountedWrites.prepare(store)
        armed.value = true
        try await CountedWrites.write(store, "answer-lost", queue: queue)
        try await CountedWrites.write(store, "after", queue: queue)
        try await CountedWrites.expectWhole(store, acknowledged: ["answer-lost", "after"])
        #expect(events.events.contains { $0.kind == .outcomeChecked && $0.committed == true }, "\(events.events)")
    }

    /// A multi-host URL with a password: messages name the server reached, never the password.
    @Test func messagesNameTheServerReachedAndNeverThePassword() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let url = try cluster.createDatabase().replacingOccurrences(of: "postgres@", with: "postgres:s3cret-pw@")
        let store = try Store(url: url, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations)
        let leader = try cluster.waitForLeader()
        _ = try await store.count(Job.self)
        let label = await store.databaseLabel
        #expect(label.contains("127.0.0.1:\(leader.port)"), "\(label)")
        #expect(!label.contains("s3cret-pw"))
    }
}

/// Observers in other processes (`todo watch`) across two failovers: each prints every change
/// once, in order. The listener follows the primary, and after reconnecting each reads the
/// history from its token.
@Suite(.blocking, .serialized, .enabled(if: PatroniCluster.available, Comment(rawValue: PatroniCluster.skipReason)))
struct ObserversAcrossFailoverTests {
    /// The key of `todo`'s encrypted notes, for the watchers and the writer alike.
    static let keyByte: UInt8 = 0x2a
    static let environment = ["SCHEMAGEN_KEYS": "k1=\(Data(repeating: keyByte, count: 32).base64EncodedString())", "PATH": "/usr/bin:/bin"]

    @Test func twoWatchersSeeEveryChangeOnceInOrderAcrossTwoFailovers() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        defer { try? cluster.restoreKilledNodes() }
        let url = try cluster.createDatabase()
        let todo = BuiltTool("todo")
        #expect(try todo.run(["list", "--database", url], environment: Self.environment).status == 0)
        let watchers = try (0..<2).map { _ in try todo.start(["watch", "--database", url], environment: Self.environment) }
        defer { for watcher in watchers { kill(watcher.processIdentifier, SIGTERM) } }
        for watcher in watchers { _ = watcher.read(.error, until: { $0.contains("watching") }, within: 30) }
        let ring = try KeyRing([(id: "k1", bytes: [UInt8](repeating: Self.keyByte, count: 32))])
        let writer = try Store(
            url: url, schema: TodoSchema.descriptor, migrations: TodoSchema.migrations, configuration: .init(author: "writer", keys: .ring(ring)))
        var expected: [String] = []
        func add(_ count: Int, _ label: String) async throws {
            for index in 0..<count {
                let item = try await writer.insert(TodoItem(taskName: "\(label) \(index)"))
                expected.append("+ \(item.id.uuidString.lowercased()) \(item.taskName)")
            }
        }
        try await add(10, "before")
        cluster.kill(node: try cluster.waitForLeader())
        try await add(10, "first")
        // The killed node back as a standby: the next failover has a standby to promote.
        try cluster.restoreKilledNodes()
        cluster.kill(node: try cluster.waitForLeader())
        try await add(10, "second")
        for watcher in watchers {
            let seen = watcher.read(until: { TodoProcessLines.lines($0).count >= expected.count }, within: 120)
            // Anything printed twice would show by now.
            usleep(1_000_000)
            kill(watcher.processIdentifier, SIGTERM)
            let run = watcher.finish()
            #expect(TodoProcessLines.lines(run.output) == expected, "\(seen)\n\(run.error.suffix(2000))")
        }
    }
}

enum TodoProcessLines {
    static func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }
}

/// The job queue of docs/runtime.md ("A job queue") on the cluster: a producer, two workers
/// claiming and finishing jobs, a watcher following them; the leader is killed halfway. Every
/// job is done exactly once, and no error reaches the app.
@Suite(.blocking, .serialized, .enabled(if: PatroniCluster.available, Comment(rawValue: PatroniCluster.skipReason)))
struct JobQueueFailoverTests {
    @Test func twoWorkersAndAWatcherFinishEveryJobOnceWhileTheLeaderIsKilled() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        defer { try? cluster.restoreKilledNodes() }
        let pool = try StorePool(url: try cluster.createDatabase(), size: 4, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations)
        let jobCount = 200
        let mail = try await pool.withStore { try await $0.insert(Queue(name: "mail"), onConflict: .ignore) }
        let mailID = mail.id!
        let start = try await pool.withStore { try await $0.currentHistoryToken() }
        let changes = try await pool.changes(after: start)
        _ = try await pool.withStore { try await $0.insert((0..<jobCount).map { Job(name: "job-\($0)", queueID: mailID) }, onConflict: .ignore) }
        let killed = LockedBox(false)
        let done = LockedBox(0)
        let queued = JobState.queued
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in ["w1", "w2"] {
                group.addTask {
                    while true {
                        let jobs = try await pool.withStore { store in
                            try await store.claim(
                                Job.self, where: #Predicate { $0.queueID == mailID && $0.state == queued }, sortBy: [SortDescriptor(\.name)], limit: 5,
                                set: [.set(\.state, to: .running), .set(\.lockedBy, to: worker), .set(\.lockedAt, to: Date()), .increment(\.attempts)])
                        }
                        if jobs.isEmpty { return }
                        for job in jobs {
                            let id = job.id!
                            _ = try await pool.withStore {
                                try await $0.update(Job.self, set: [.set(\.state, to: .done), .set(\.finishedAt, to: Date())], where: #Predicate { $0.id == id })
                            }
                            done.value += 1
                        }
                        if done.value >= jobCount / 2, !killed.value {
                            killed.value = true
                            cluster.kill(node: try cluster.waitForLeader())
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(killed.value)
        let jobs = try await pool.withStore { try await $0.fetch(Job.self) }
        #expect(jobs.count == jobCount)
        #expect(jobs.allSatisfy { $0.state == .done && $0.attempts == 1 }, "claimed more than once: \(jobs.filter { $0.attempts != 1 }.map(\.name))")
        // The watcher saw each job finish, once.
        let written = try await pool.withStore { try await $0.history(after: start).count }
        let seen = try await collect(changes, count: written, within: 60)
        #expect(seen.count == written && zip(seen, seen.dropFirst()).allSatisfy { $0.token < $1.token }, "every transaction once, in order")
        let finished = try seen.flatMap(\.changes).filter { $0.isOf(Job.self) && $0.kind == .update }.filter { try $0.value(\Job.state) == .done }
        #expect(finished.count == jobCount, "\(finished.count) done updates seen")
    }
}

/// Reads from a standby (`readURL`): a standby that replayed the store's writes answers them;
/// one whose replay is paused is waited for (`replicaWait`), then the primary answers, so the
/// store reads its own writes; `.anyReplica` reads the standby as it is.
@Suite(.blocking, .serialized, .enabled(if: PatroniCluster.available, Comment(rawValue: PatroniCluster.skipReason)))
struct ReplicaReadTests {
    @Test func readsSeeTheStoresOwnWritesThroughAStandbyWhoseReplayIsPaused() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let url = try cluster.createDatabase()
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let leader = try cluster.waitForLeader()
        let standby = try #require(cluster.nodes.first { $0.name != leader.name && cluster.isRunning($0) })
        let store = try Store(
            url: url, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations,
            configuration: .init(postgres: PostgresSettings(readURL: cluster.url(of: standby, database: database), replicaWait: .milliseconds(300))))
        let queue = try await store.insert(Queue(name: "replicas"))
        try await store.insert(Job(name: "streamed", queueID: queue.id!))
        // Replay running: the standby catches up within the wait, and answers.
        #expect(try await store.count(Job.self) == 1)
        #expect(try await store.read(from: .anyReplica) { try $0.count(Job.self) } == 1)
        #expect(cluster.query(standby, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'schemagen store reads'", database: database) == "1")
        // Replay paused: the standby never has the next write. Patroni resumes a paused
        // replay within a loop (2 s) unless it is in maintenance mode.
        try cluster.setMaintenance(true)
        defer { try? cluster.setMaintenance(false) }
        #expect(cluster.query(standby, "SELECT pg_wal_replay_pause()") != nil)
        defer { _ = cluster.query(standby, "SELECT pg_wal_replay_resume()") }
        // The pause is asked for; replay stops at its next record.
        let pausing = Date().addingTimeInterval(30)
        while cluster.query(standby, "SELECT pg_get_wal_replay_pause_state()") != "paused", Date() < pausing { usleep(20_000) }
        try await store.insert(Job(name: "paused", queueID: queue.id!))
        // The standby, as it is, lacks it; the store's own read has it (from the primary, after
        // waiting for the standby).
        #expect(try await store.read(from: .anyReplica) { try $0.count(Job.self) } == 1, "the standby, as it is")
        #expect(try await store.count(Job.self) == 2, "the store reads its own write")
        #expect(try await store.read(from: .primary) { try $0.count(Job.self) } == 2)
        // Replay resumed: the standby catches up, and answers again.
        _ = cluster.query(standby, "SELECT pg_wal_replay_resume()")
        let deadline = Date().addingTimeInterval(30)
        while try await store.read(from: .anyReplica, { try $0.count(Job.self) }) < 2, Date() < deadline { usleep(50_000) }
        #expect(try await store.read(from: .anyReplica) { try $0.count(Job.self) } == 2)
    }
}

/// The tools and examples take the cluster's multi-host URL (and libpq's keyword form), and
/// name the server they reached.
@Suite(.blocking, .serialized, .enabled(if: PatroniCluster.available, Comment(rawValue: PatroniCluster.skipReason)))
struct MultiHostURLTests {
    static let keys = ["SCHEMAGEN_KEYS": "k1=\(Data(repeating: 7, count: 32).base64EncodedString())", "PATH": "/usr/bin:/bin"]

    @Test func migrateAndImportTakeTheMultiHostURL() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let url = try cluster.createDatabase()
        // Without target_session_attrs: migrate writes, so it reaches the primary anyway.
        let plain = url.replacingOccurrences(of: "?target_session_attrs=read-write", with: "")
        let up = try BuiltTool("migrate").run(["up", "--database", plain, "--dir", "Migrations/Dispatch"])
        #expect(up.status == 0, "\(up.error)")
        let status = try BuiltTool("migrate").run(["status", "--database", url, "--dir", "Migrations/Dispatch"])
        #expect(status.status == 0 && status.output.contains("create_dispatch"), "\(status.output)\(status.error)")
        let folder = temporaryFolder()
        let imported = try BuiltTool("schemagen").run(["import", "postgres", url, "--name", "Imported", "--output", folder.appendingPathComponent("Imported.yaml").path])
        #expect(imported.status == 0, "\(imported.error)")
        #expect(((try? String(contentsOf: folder.appendingPathComponent("Imported.yaml"), encoding: .utf8)) ?? "").contains("Job"))
        // The studio reads the cluster's primary through the same URL.
        let studio = try BuiltTool("schemagen").start(["studio", "--database", plain, "--schema", "Schemas/Dispatch.yaml"])
        let startup = studio.read(until: { $0.contains("Stop with ^C") }, within: 60)
        let address = try #require(startup.split(separator: "\n").first { $0.hasPrefix("Studio: ") }.map { String($0.dropFirst("Studio: ".count)) }, "\(startup)")
        let home = try runProgram("/usr/bin/curl", ["--silent", "--location", "--cookie-jar", folder.appendingPathComponent("jar").path, address], in: folder)
        kill(studio.processIdentifier, SIGTERM)
        let stopped = studio.finish()
        #expect(home.output.contains("<a href=\"/e/Dispatch/Job\">Job</a>"), "\(home.output.prefix(600))")
        #expect(stopped.status == 0, "\(stopped.error)")
    }

    @Test func theKeywordFormWithSeveralHostsOpensTheStoreOnThePrimary() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let url = try cluster.createDatabase()
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let keyword = "host=\(cluster.nodes.map { _ in "127.0.0.1" }.joined(separator: ",")) port=\(cluster.nodes.map { String($0.port) }.joined(separator: ",")) dbname=\(database) user=postgres"
        let store = try Store(url: keyword, schema: DispatchSchema.descriptor, migrations: DispatchSchema.migrations)
        try await store.insert(Queue(name: "keyword"))
        let leader = try cluster.waitForLeader()
        #expect(await store.databaseLabel.contains("127.0.0.1:\(leader.port)"))
        #expect(try await store.count(Queue.self) == 1)
    }

    @Test func todoAndFlightsRunThroughTheMultiHostURL() async throws {
        let lease = try await PatroniCluster.exclusive()
        defer { lease.release() }
        let cluster = lease.cluster
        let url = try cluster.createDatabase()
        let todo = BuiltTool("todo")
        let added = try todo.run(["add", "Through the cluster", "--database", url], environment: Self.keys)
        #expect(added.status == 0, "\(added.error)")
        let listed = try todo.run(["list", "--database", url], environment: Self.keys)
        #expect(listed.output.contains("Through the cluster"), "\(listed.output)\(listed.error)")
        let flightsURL = try cluster.createDatabase()
        let loaded = try BuiltTool("flights").run(["load", "Tests/Fixtures/Flights", "--database", flightsURL])
        #expect(loaded.status == 0, "\(loaded.error)")
        let queried = try BuiltTool("flights").run(["query", "--database", flightsURL])
        #expect(queried.status == 0 && !queried.output.isEmpty, "\(queried.error)")
    }
}

/// A value several threads read and write.
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
