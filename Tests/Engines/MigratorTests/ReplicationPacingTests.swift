import Foundation
import ProjectConfig
import Testing

@testable import MigratorCore

/// The lag gauge and the batch sizing, on their own: the cluster tests show them at work.
struct ReplicationPacingTests {
    typealias Standby = ReplicationSnapshot.Standby

    @Test func aStandbyIsAsStaleAsTheNewestSampleItHasReplayed() {
        var gauge = ReplicaLagGauge()
        let start = Date(timeIntervalSince1970: 1_000)
        for (second, position) in [(0.0, Int64(100)), (1, 200), (2, 300), (3, 400)] { gauge.record(position, at: start.addingTimeInterval(second)) }
        let now = start.addingTimeInterval(3.5)
        func lag(_ replayed: Int64?, server: Double? = nil) -> Double? {
            gauge.lag(of: Standby(name: "pg2", state: "streaming", replayed: replayed, serverLag: server), primaryAt: 400, now: now)
        }
        #expect(lag(400) == 0, "caught up")
        #expect(lag(250) == 2.5, "has everything up to the sample at 1 s, nothing after the one at 2 s")
        #expect(lag(50) == 3.5, "older than every sample: at least as old as the first")
        #expect(lag(250, server: 9) == 9, "the server's measure wins when it is larger")
        #expect(lag(nil, server: 0.4) == 0.4, "no position: the server's measure alone")
        #expect(lag(nil) == nil)
    }

    @Test func repeatedPositionsKeepTheirFirstTime() {
        var gauge = ReplicaLagGauge()
        let start = Date(timeIntervalSince1970: 1_000)
        gauge.record(100, at: start)
        gauge.record(100, at: start.addingTimeInterval(5))
        #expect(gauge.samples.count == 1)
        // A standby stuck at 100 while the primary moved on after 5 s is 6 s behind at 6 s.
        gauge.record(200, at: start.addingTimeInterval(5))
        #expect(gauge.lag(of: Standby(name: "pg3", state: "streaming", replayed: 100, serverLag: nil), primaryAt: 200, now: start.addingTimeInterval(6)) == 6)
    }

    /// A standby seen over the bound is waited for until it has replayed what the primary had
    /// written then, even when a later reading of its lag is under the bound (the server's
    /// `replay_lag` is only as fresh as the standby's last reply).
    @Test func aStandbyOverTheBoundIsWaitedForUntilItReplaysPastThatMoment() {
        var pacer = ReplicationPacer()
        let start = Date(timeIntervalSince1970: 1_000)
        pacer.gauge.record(100, at: start)
        func over(_ replayed: Int64, server: Double?, primary: Int64, at second: Double) -> [String] {
            pacer.gauge.record(primary, at: start.addingTimeInterval(second))
            let snapshot = ReplicationSnapshot(position: primary, standbys: [Standby(name: "pg3", state: "streaming", replayed: replayed, serverLag: server)])
            return pacer.standbysOverBound(snapshot, bound: 1, now: start.addingTimeInterval(second)).map(\.name)
        }
        #expect(over(90, server: 0.5, primary: 200, at: 0.5) == [], "under the bound")
        #expect(over(90, server: 1.2, primary: 300, at: 0.9) == ["pg3"], "over it: waited for from here, position 300")
        #expect(over(90, server: 0.3, primary: 310, at: 1.0) == ["pg3"], "a smaller reading alone does not end the wait: it has not replayed 300")
        #expect(over(305, server: 0.2, primary: 320, at: 1.1) == [], "replayed past 300 and under the bound: no longer waited for")
        #expect(over(305, server: 0.2, primary: 330, at: 1.2) == [])
    }

    @Test func batchesAimAtTheTimeTargetWithinBounds() {
        let options = Migrator.Options()
        #expect(Migrator.nextBatchSize(after: 1000, took: 0.1, options: options, fileBatch: 1000) == 2000, "twice as fast as the target: doubled, not more")
        #expect(Migrator.nextBatchSize(after: 1000, took: 0.02, options: options, fileBatch: 1000) == 2000)
        #expect(Migrator.nextBatchSize(after: 1000, took: 0.4, options: options, fileBatch: 1000) == 500)
        #expect(Migrator.nextBatchSize(after: 1000, took: 4, options: options, fileBatch: 1000) == 500, "at most halved")
        #expect(Migrator.nextBatchSize(after: 150, took: 4, options: options, fileBatch: 1000) == 100, "never under 100 rows")
        #expect(Migrator.nextBatchSize(after: 100_000, took: 0.01, options: options, fileBatch: 1000) == 100_000, "never over 100 times the file's batch")
        #expect(Migrator.nextBatchSize(after: 1000, took: 0.05, options: Migrator.Options(batchTargetMilliseconds: 0), fileBatch: 1000) == 1000, "0 keeps the file's batch")
    }

    @Test func theConfigFileGivesTheClusterSettings() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-\(UUID().uuidString).yaml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "maxReplicaLag: 2500\nreplicaLagTimeout: 600\nmaxWalRate: 16\nfailoverTimeout: 90\n".write(toFile: path, atomically: true, encoding: .utf8)
        let (config, diagnostics, _) = ProjectConfig.load(path: path)
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(config?.maxReplicaLag == 2500 && config?.replicaLagTimeout == 600 && config?.maxWalRate == 16 && config?.failoverTimeout == 90)
        try "maxReplicaLag: soon\n".write(toFile: path, atomically: true, encoding: .utf8)
        let (_, problems, _) = ProjectConfig.load(path: path)
        #expect(problems.map(\.message) == ["'maxReplicaLag' expects a number, zero or more"])
        #expect(problems.first?.location?.line == 1)
    }
}
