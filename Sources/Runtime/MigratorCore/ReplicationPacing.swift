import Foundation
import SQLDialects
import SchemaMetadata

/// A standby as its primary sees it, and where the primary's WAL stands, read in one statement.
public struct ReplicationSnapshot: Sendable, Hashable {
    /// One standby that streams from the primary.
    public struct Standby: Sendable, Hashable {
        /// Its name: the `application_name` it connects with (Patroni's node name), else its address.
        public var name: String
        /// Its state as the primary reports it: `streaming`, `catchup`, `startup`, `backup`.
        public var state: String
        /// The WAL position it has replayed, in bytes; nil when the primary does not say (a role
        /// without `pg_monitor` sees no positions).
        public var replayed: Int64?
        /// The server's own replay lag in seconds (`replay_lag`), when it has one.
        public var serverLag: Double?

        /// A standby as `pg_stat_replication` lists it.
        ///
        ///     let standby = ReplicationSnapshot.Standby(name: "pg2", state: "streaming", replayed: 83_886_080, serverLag: 0.002)
        public init(name: String, state: String, replayed: Int64?, serverLag: Double?) {
            self.name = name
            self.state = state
            self.replayed = replayed
            self.serverLag = serverLag
        }
    }

    /// The primary's WAL position (`pg_current_wal_lsn()`), in bytes.
    public var position: Int64
    /// The standbys streaming from it now.
    public var standbys: [Standby]

    /// A primary at `position` with these standbys.
    ///
    ///     let snapshot = ReplicationSnapshot(position: 83_886_080, standbys: [])
    public init(position: Int64, standbys: [Standby]) {
        self.position = position
        self.standbys = standbys
    }
}

/// An engine whose primary streams to standbys (PostgreSQL): the migrator reads their replay
/// positions to wait for them, and the WAL position to pace what it writes.
public protocol ReplicationMonitoring: MigrationDatabase {
    /// The primary's WAL position and its standbys, as of now.
    func replicationSnapshot() throws(MigratorError) -> ReplicationSnapshot
    /// The server the connection reached, `host:port` (of a multi-host URL, the one chosen).
    var server: String { get }
}

/// How far behind each standby is, in seconds, from the times the primary's WAL passed each
/// position, sampled by the migrator as it runs.
///
/// `replay_lag` alone will not do: the server measures it only when the standby reports
/// replaying WAL it timed, so while replay stalls (paused, a long conflict, a slow disk) it
/// keeps showing the last, small value, and it is NULL once the primary goes idle. The byte
/// distance (`pg_current_wal_lsn()` minus `replay_lsn`) moves at once but is not time: 16 MB is
/// a blink for one standby and minutes for another. So the gauge keeps when the primary's WAL
/// was where: a standby that has replayed up to position P is as stale as the time since the
/// newest sample at or below P, an upper bound that is off by at most one sampling interval
/// (a batch). Where the samples do not reach back far enough, the server's `replay_lag` and the
/// oldest sample's age give a lower bound.
struct ReplicaLagGauge {
    private(set) var samples: [(time: Date, position: Int64)] = []
    /// Samples older than this are dropped: a lag longer than it reads as at least this long.
    let memory: TimeInterval = 3600

    mutating func record(_ position: Int64, at time: Date) {
        if let last = samples.last, last.position == position { return }
        samples.append((time, position))
        if let first = samples.first, time.timeIntervalSince(first.time) > memory { samples.removeFirst() }
    }

    /// A standby's lag in seconds at `now`, nil when its position is not known.
    func lag(of standby: ReplicationSnapshot.Standby, primaryAt position: Int64, now: Date) -> Double? {
        guard let replayed = standby.replayed else { return standby.serverLag }
        if replayed >= position { return 0 }
        let caughtUpTo = samples.last { $0.position <= replayed }
        let measured = caughtUpTo.map { now.timeIntervalSince($0.time) } ?? samples.first.map { now.timeIntervalSince($0.time) } ?? 0
        return max(measured, standby.serverLag ?? 0)
    }
}

/// The state of one run's waiting for standbys and pacing of WAL.
struct ReplicationPacer {
    var gauge = ReplicaLagGauge()
    /// Standbys seen streaming in this run, and those reported gone (never again).
    var seen: Set<String> = []
    var gone: Set<String> = []
    /// Where the WAL stood when pacing began, and when.
    var start: (time: Date, position: Int64)?
    /// Whether a role that sees no positions was reported.
    var reportedBlind = false
    /// Where the WAL stood before the last batch, for its WAL per row.
    var batchStart: Int64?
    /// Standbys seen over the lag bound, with the primary's WAL position at that moment: each is
    /// waited for until it has replayed up to there, whatever a later reading of its lag says
    /// (the server's `replay_lag` is only as fresh as the standby's last reply).
    var heldBack: [String: Int64] = [:]

    /// The standbys to wait for, with their lag in seconds: those over `bound` now, and those
    /// seen over it that have not yet replayed what the primary had written then (a paused
    /// one never gets there, whatever its last reply said).
    mutating func standbysOverBound(_ snapshot: ReplicationSnapshot, bound: Double, now: Date) -> [(name: String, lag: Double)] {
        snapshot.standbys.compactMap { standby -> (String, Double)? in
            let lag = gauge.lag(of: standby, primaryAt: snapshot.position, now: now)
            if let lag, lag > bound {
                if heldBack[standby.name] == nil { heldBack[standby.name] = snapshot.position }
                return (standby.name, lag)
            }
            if let mark = heldBack[standby.name], let replayed = standby.replayed, replayed < mark {
                return (standby.name, max(lag ?? 0, bound))
            }
            heldBack[standby.name] = nil
            return nil
        }
    }
}

extension Migrator {
    /// Where a phase's pacing starts: the primary's WAL position noted before its first section,
    /// so a standby that stopped replaying before the run is measured from the run's start.
    func startPacing(_ pacer: inout ReplicationPacer, options: Options) throws(MigratorError) {
        guard let replication, options.maxReplicaLagMilliseconds > 0 || options.maxWALMegabytesPerSecond != nil else { return }
        let snapshot = try replication.replicationSnapshot()
        let now = Date()
        pacer.gauge.record(snapshot.position, at: now)
        pacer.start = (now, snapshot.position)
    }

    /// Before a backfill batch: waits while a standby replays more than `maxReplicaLag` behind,
    /// then while the WAL written since the run started is over `maxWALRate`. Waits between
    /// transactions, holding nothing; gives up past `replicaLagTimeout`.
    /// Returns, under a WAL budget, the most rows the next batch may have: as many as the
    /// budget allows in a batch's time at the last batch's WAL per row (`lastBatchRows` rows),
    /// so that no single batch runs far over the budget.
    func paceForReplication(_ pacer: inout ReplicationPacer, lastBatchRows: Int, options: Options, progress: (Event) -> Void) throws(MigratorError) -> Int? {
        guard let replication, options.maxReplicaLagMilliseconds > 0 || options.maxWALMegabytesPerSecond != nil else { return nil }
        try waitForStandbys(&pacer, replication, options: options, progress: progress)
        guard let rate = options.maxWALMegabytesPerSecond, rate > 0 else { return nil }
        let bytesPerSecond = rate * 1_048_576
        let position = try paceWAL(&pacer, replication, bytesPerSecond: bytesPerSecond, progress: progress)
        defer { pacer.batchStart = position }
        guard let before = pacer.batchStart, lastBatchRows > 0, position > before else { return nil }
        let bytesPerRow = Double(position - before) / Double(lastBatchRows)
        let batchSeconds = options.batchTargetMilliseconds > 0 ? Double(options.batchTargetMilliseconds) / 1000 : 0.2
        return max(100, Int(bytesPerSecond * batchSeconds / bytesPerRow))
    }

    private func waitForStandbys(_ pacer: inout ReplicationPacer, _ replication: any ReplicationMonitoring, options: Options, progress: (Event) -> Void) throws(MigratorError) {
        let bound = Double(options.maxReplicaLagMilliseconds) / 1000
        var waitingSince: Date?
        var lastReport = Date.distantPast
        while true {
            let snapshot = try replication.replicationSnapshot()
            let now = Date()
            pacer.gauge.record(snapshot.position, at: now)
            if pacer.start == nil { pacer.start = (now, snapshot.position) }
            noteStandbyChanges(&pacer, snapshot, progress: progress)
            guard bound > 0 else { return }
            let lagging = pacer.standbysOverBound(snapshot, bound: bound, now: now)
            guard let worst = lagging.max(by: { $0.lag < $1.lag }) else {
                if waitingSince != nil { try recordWaiting(nil) }
                return
            }
            let since = waitingSince ?? now
            waitingSince = since
            if now.timeIntervalSince(lastReport) >= 1 {
                lastReport = now
                let wait = ReplicaLagWait(standby: worst.0, lag: worst.1, bound: bound, waited: now.timeIntervalSince(since))
                progress(.waitingForStandby(wait))
                try recordWaiting(wait.description)
            }
            if let timeout = options.replicaLagTimeout, now.timeIntervalSince(since) >= timeout {
                try recordWaiting(nil)
                throw .replicaLagTimeout(ReplicaLagWait(standby: worst.0, lag: worst.1, bound: bound, waited: now.timeIntervalSince(since)))
            }
            if cancellation.isRequested { throw .interrupted(during: "a wait for standby \(worst.0) to catch up; the backfill resumes after the last batch done") }
            usleep(100_000)
        }
    }

    /// Standbys that left `pg_stat_replication` are reported once and no longer waited for; a
    /// role that sees no positions is reported once.
    private func noteStandbyChanges(_ pacer: inout ReplicationPacer, _ snapshot: ReplicationSnapshot, progress: (Event) -> Void) {
        let names = Set(snapshot.standbys.map(\.name))
        for name in pacer.seen.subtracting(names).subtracting(pacer.gone).sorted() {
            pacer.gone.insert(name)
            progress(.standbyGone(name))
        }
        pacer.seen.formUnion(names)
        pacer.gone.subtract(names)
        if !pacer.reportedBlind, snapshot.standbys.contains(where: { $0.replayed == nil }) {
            pacer.reportedBlind = true
            progress(.standbyPositionsHidden(snapshot.standbys.filter { $0.replayed == nil }.map(\.name)))
        }
    }

    /// Sleeps while the WAL written since the run started is ahead of the budget.
    /// The WAL position once the run is within budget.
    private func paceWAL(_ pacer: inout ReplicationPacer, _ replication: any ReplicationMonitoring, bytesPerSecond: Double, progress: (Event) -> Void) throws(MigratorError) -> Int64 {
        while true {
            let position = try replication.replicationSnapshot().position
            guard let start = pacer.start else { return position }
            let elapsed = Date().timeIntervalSince(start.time)
            let ahead = Double(position - start.position) / bytesPerSecond - elapsed
            guard ahead > 0.01 else { return position }
            if cancellation.isRequested { throw .interrupted(during: "a pause for the WAL budget; the backfill resumes after the last batch done") }
            progress(.pacingWAL(seconds: ahead))
            usleep(UInt32(min(ahead, 0.25) * 1_000_000))
        }
    }

    /// What `status` shows while the run waits (nil: it no longer does).
    private func recordWaiting(_ text: String?) throws(MigratorError) {
        _ = try database.query("UPDATE \(onlineTableSQL) SET waiting = \(value: text.map(StoredValue.text) ?? .null) WHERE schema = \(value: .text(schema))")
    }
}

/// A standby over the lag bound, as `migrate` reports it: "waiting: pg3 replay lag 2.4 s > 1.0 s".
public struct ReplicaLagWait: Sendable, Hashable, CustomStringConvertible {
    /// The standby furthest behind.
    public var standby: String
    /// Its lag, in seconds.
    public var lag: Double
    /// The bound, in seconds.
    public var bound: Double
    /// How long the run has waited so far, in seconds.
    public var waited: Double

    /// The progress line's text: "waiting: pg3 replay lag 2.4 s > 1.0 s".
    public var description: String {
        "waiting: \(standby) replay lag \(String(format: "%.1f", lag)) s > \(String(format: "%.1f", bound)) s"
    }
}

extension Migrator {
    /// Whether the database still takes writes through this migrator's connection: false when
    /// the connection is lost or the server it reached is a standby now (a failover demoted it).
    /// After a failed run, true means the failure was the migration's own. Engines without
    /// standbys always take writes.
    public func databaseTakesWrites() -> Bool {
        guard let replication else { return true }
        database.rollback()
        // pg_current_wal_lsn() fails on a standby ("recovery is in progress").
        return (try? replication.replicationSnapshot()) != nil
    }
}

extension Migrator {
    /// The primary's WAL position and its standbys, for `status`; nil on an engine without
    /// standbys, or when the server cannot say.
    public func replicationSnapshot() -> ReplicationSnapshot? {
        replication.flatMap { try? $0.replicationSnapshot() }
    }

    /// The server the connection reached (`host:port`), on an engine with standbys.
    public var server: String? { replication?.server }
}
