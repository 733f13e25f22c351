import Foundation

/// Where a migration folder's files are read from. `MigrationDirectory` reads the disk each time
/// it is asked (`DiskFiles`); `schemagen generate` gives it a reader that keeps what it read, so
/// each file is read once however many stages look at it.
public protocol MigrationFileReading: Sendable {
    /// The names of the entries of a folder (files and subfolders), unsorted; empty when it
    /// cannot be listed.
    func names(inFolder path: String) -> [String]
    /// A file's bytes, or nil when it cannot be read.
    func bytes(atPath path: String) -> [UInt8]?
}

/// The disk, read each time.
///
///     let directory = MigrationDirectory(path: "Migrations/Flights", files: DiskFiles())
public struct DiskFiles: MigrationFileReading {
    /// The disk.
    ///
    ///     let files = DiskFiles()
    public init() {}

    /// The folder's entries as the disk lists them now.
    public func names(inFolder path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }

    /// The file's bytes as they are on the disk now.
    public func bytes(atPath path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }
}
