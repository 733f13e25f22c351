import Foundation
import MigrationFiles
import RelationalModel
import TestSupport
import Testing

/// Snapshots decoded ahead of need are the files as they are when asked for.
@Suite struct SnapshotReadAheadTests {
    func folderWithFlightsHistory() throws -> MigrationDirectory {
        let folder = temporaryFolder().appendingPathComponent("readahead")
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("Migrations/Flights"), to: folder)
        return MigrationDirectory(path: folder.path)
    }

    @Test func aSnapshotReadAheadIsTheOneReadLater() throws {
        let directory = try folderWithFlightsHistory()
        let expected = try #require(try directory.latestSnapshot())
        directory.readAheadLatestSnapshot()
        #expect(try directory.latestSnapshot() == expected)
        // Handed out once: the next read decodes the file again, to the same snapshot.
        #expect(try directory.latestSnapshot() == expected)
    }

    @Test func aFileChangedAfterTheReadAheadStartedIsReadAgain() throws {
        let directory = try folderWithFlightsHistory()
        let file = URL(fileURLWithPath: directory.path).appendingPathComponent(try #require(directory.entries().last).snapshotFile)
        var changed = try #require(try directory.latestSnapshot())
        directory.readAheadLatestSnapshot()
        changed.version += 100
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        // A different size, so the change shows even within one timestamp tick.
        try (encoder.encode(changed) + Data("\n\n".utf8)).write(to: file)
        #expect(try directory.latestSnapshot()?.version == changed.version)
    }

    @Test func aDamagedSnapshotIsAnErrorEitherWay() throws {
        let directory = try folderWithFlightsHistory()
        let file = URL(fileURLWithPath: directory.path).appendingPathComponent(try #require(directory.entries().last).snapshotFile)
        try Data("{\"schema\": ".utf8).write(to: file)
        directory.readAheadLatestSnapshot()
        #expect(throws: (any Error).self) { try directory.latestSnapshot() }
        #expect(throws: (any Error).self) { try directory.latestSnapshot() }
    }
}
