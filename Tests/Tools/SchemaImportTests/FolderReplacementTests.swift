import Foundation
import SchemaExport
import TestSupport
import Testing

/// A bundle is replaced so that a run killed at any point leaves a whole bundle, and the next
/// run clears what the killed one left. Each point a kill can land on is set up as the files
/// it leaves, with the id of a process that has exited.
@Suite(.blocking) struct FolderReplacementTests {
    static func bundle(_ version: String) -> [(path: String, contents: String)] {
        [("Model \(version).xcdatamodel/contents", "<model version=\"\(version)\"/>"), (".xccurrentversion", version)]
    }

    static func write(_ files: [(path: String, contents: String)], to folder: URL) throws {
        for file in files {
            let url = folder.appendingPathComponent(file.path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.contents.utf8).write(to: url)
        }
    }

    /// The version a bundle holds, or nil when the folder is missing or not whole.
    static func version(at folder: URL) -> String? {
        guard let current = try? String(contentsOf: folder.appendingPathComponent(".xccurrentversion"), encoding: .utf8),
            FileManager.default.fileExists(atPath: folder.appendingPathComponent("Model \(current).xcdatamodel/contents").path)
        else { return nil }
        return current
    }

    /// The id of a process that ran and has exited.
    static func deadProcessID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        _ = exitStatus(of: process)
        return process.processIdentifier
    }

    static func leftovers(beside target: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: target.deletingLastPathComponent().path).filter { $0.hasPrefix(".") }.sorted()
    }

    @Test func killedWhileWritingTheNewBundle() throws {
        let target = temporaryFolder().appendingPathComponent("Model.xcdatamodeld")
        try Self.write(Self.bundle("1"), to: target)
        let dead = try Self.deadProcessID()
        let halfWritten = target.deletingLastPathComponent().appendingPathComponent(".Model.xcdatamodeld.\(dead).new")
        try Self.write([("Model 2.xcdatamodel/contents", "<mod")], to: halfWritten)
        #expect(Self.version(at: target) == "1")
        let recovery = try FolderReplacement.replace(target, with: Self.bundle("2"))
        #expect(recovery.removed == [halfWritten.lastPathComponent] && !recovery.restored)
        #expect(Self.version(at: target) == "2")
        #expect(try Self.leftovers(beside: target).isEmpty)
    }

    @Test func killedBetweenTheTwoRenames() throws {
        let target = temporaryFolder().appendingPathComponent("Model.xcdatamodeld")
        let dead = try Self.deadProcessID()
        let folder = target.deletingLastPathComponent()
        try Self.write(Self.bundle("1"), to: folder.appendingPathComponent(".Model.xcdatamodeld.\(dead).old"))
        try Self.write(Self.bundle("2"), to: folder.appendingPathComponent(".Model.xcdatamodeld.\(dead).new"))
        let recovery = try FolderReplacement.recoverInterrupted(target)
        #expect(recovery.restored && recovery.removed == [".Model.xcdatamodeld.\(dead).new"])
        #expect(Self.version(at: target) == "1", "the old bundle is back, whole")
        #expect(try Self.leftovers(beside: target).isEmpty)
        _ = try FolderReplacement.replace(target, with: Self.bundle("3"))
        #expect(Self.version(at: target) == "3")
    }

    @Test func killedBeforeRemovingTheOldBundle() throws {
        let target = temporaryFolder().appendingPathComponent("Model.xcdatamodeld")
        try Self.write(Self.bundle("2"), to: target)
        let dead = try Self.deadProcessID()
        let old = target.deletingLastPathComponent().appendingPathComponent(".Model.xcdatamodeld.\(dead).old")
        try Self.write(Self.bundle("1"), to: old)
        let recovery = try FolderReplacement.recoverInterrupted(target)
        #expect(!recovery.restored && recovery.removed == [old.lastPathComponent])
        #expect(Self.version(at: target) == "2")
    }

    /// A running export's folders are its own; a file named like a leftover that is not one is
    /// left too.
    @Test func whatLiveRunsAndOthersOwnIsLeftAlone() throws {
        let target = temporaryFolder().appendingPathComponent("Model.xcdatamodeld")
        try Self.write(Self.bundle("1"), to: target)
        let folder = target.deletingLastPathComponent()
        let running = try BuiltTool(path: "/bin/sleep").start(["30"])
        defer { running.process.terminate() }
        let live = folder.appendingPathComponent(".Model.xcdatamodeld.\(running.process.processIdentifier).new")
        try Self.write(Self.bundle("2"), to: live)
        let unrelated = folder.appendingPathComponent(".Model.xcdatamodeld.notes.new")
        try Data("mine".utf8).write(to: unrelated)
        let recovery = try FolderReplacement.replace(target, with: Self.bundle("3"))
        #expect(recovery.isEmpty)
        #expect(Self.version(at: target) == "3")
        #expect(try Self.leftovers(beside: target) == [live.lastPathComponent, unrelated.lastPathComponent].sorted())
    }

    /// A write that fails halfway (here a file where a folder must go) leaves the old bundle
    /// and nothing beside it.
    @Test func aFailedWriteLeavesTheOldBundleAndNoHalfNewOne() throws {
        let target = temporaryFolder().appendingPathComponent("Model.xcdatamodeld")
        try Self.write(Self.bundle("1"), to: target)
        #expect(throws: (any Error).self) {
            _ = try FolderReplacement.replace(target, with: [("Model 2.xcdatamodel", "a file"), ("Model 2.xcdatamodel/contents", "<model/>")])
        }
        #expect(Self.version(at: target) == "1")
        #expect(try Self.leftovers(beside: target).isEmpty)
    }

    /// A target refused by the check is not touched, and nothing is written beside it.
    @Test func aRefusedTargetIsLeftAsItWas() throws {
        let target = temporaryFolder().appendingPathComponent("Model.xcdatamodeld")
        try Self.write(Self.bundle("1"), to: target)
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            _ = try FolderReplacement.replace(target, with: Self.bundle("2")) { _ in throw Refused() }
        }
        #expect(Self.version(at: target) == "1")
        #expect(try Self.leftovers(beside: target).isEmpty)
    }
}
