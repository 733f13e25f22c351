import Foundation
import PersistentStoreSQLite
import SQLiteKit
import TestSupport
import Testing

/// The end of the adoption path: a package compiles the models generated from the imported
/// music store, and its program opens the live database (baselined, never rebuilt) with the
/// runtime store and reads the rows the old app wrote: NUMERIC prices stored as REAL, BOOLEAN
/// 0/1, dates as `CURRENT_TIMESTAMP` spells them, text keys, a composite key.
///
/// The package lives in `.build/import-consumer`, so later runs build incrementally.
@Suite(.blocking, .serialized) struct AdoptedStoreTests {
    static let folder = repositoryRoot.appendingPathComponent(".build/import-consumer")

    static let program = """
        import Foundation
        import MusicStoreModels
        import PersistentStoreSQLite

        @main
        struct ShopApp {
            static func main() async throws {
                let store = try Store(path: CommandLine.arguments[1], schema: MusicStoreSchema.descriptor, migrations: MusicStoreSchema.migrations)
                for track in try await store.fetch(Track.self).sorted(by: { $0.id! < $1.id! }) {
                    print("track \\(track.name) price \\(track.unitPrice) explicit \\(track.explicit) genre \\(track.genreID ?? "-")")
                }
                let formatter = ISO8601DateFormatter()
                for employee in try await store.fetch(Employee.self).sorted(by: { $0.employeeId < $1.employeeId }) {
                    print("employee \\(employee.lastName) hired \\(formatter.string(from: employee.hireDate)) reports to \\(employee.reportsToID.map(String.init) ?? "-")")
                }
                let album = try await store.fetch(Album.self).first { $0.title == "Pastel Blues" }
                print("album \\(album?.title ?? "?") released \\(album?.released.map { formatter.string(from: $0) } ?? "-")")
                let lines = try await store.fetch(InvoiceLine.self)
                print("invoice lines \\(lines.count), total \\(lines.reduce(Decimal(0)) { $0 + $1.unitPrice * Decimal($1.quantity) })")
                let added = try await store.insert(Artist(name: "Caetano Veloso"))
                print("added artist \\(added.id!)")
            }
        }

        """

    /// Builds here pass --disable-build-manifest-caching: after the toolkit's Package.swift changed
    /// its targets' dependencies, a cached build plan compiled a target before a module it now
    /// imports (seen with SwiftPM 6.2).
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try runProgram(executable, arguments, in: folder)
    }

    static func write(_ text: String, to path: String) throws {
        let url = folder.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        // Unchanged files keep their dates, so SwiftPM rebuilds only what changed.
        if (try? String(contentsOf: url, encoding: .utf8)) == text { return }
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    @Test func generatedModelsReadTheRowsTheOldAppWrote() throws {
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: Self.folder, withIntermediateDirectories: true)
        let link = Self.folder.appendingPathComponent("SchemaToolkit")
        if (try? fileManager.destinationOfSymbolicLink(atPath: link.path)) != repositoryRoot.path {
            try? fileManager.removeItem(at: link)
            try fileManager.createSymbolicLink(at: link, withDestinationURL: repositoryRoot)
        }
        try Self.write(
            """
            // swift-tools-version: 6.1
            import PackageDescription

            let package = Package(
                name: "ShopApp",
                platforms: [.macOS(.v14)],
                dependencies: [.package(path: "SchemaToolkit")],
                targets: [
                    .target(name: "MusicStoreModels", dependencies: [.product(name: "SchemaMetadata", package: "SchemaToolkit")]),
                    .executableTarget(name: "shop-app", dependencies: ["MusicStoreModels", .product(name: "PersistentStoreSQLite", package: "SchemaToolkit")]),
                ]
            )

            """, to: "Package.swift")
        try Self.write(Self.program, to: "Sources/shop-app/main.swift")

        // The live database, imported, generated and baselined as docs/import.md says.
        let work = temporaryFolder()
        let live = try ImportFixtures.database("music-store.sql", in: work)
        for folder in ["Migrations", "Schemas"] { try? fileManager.removeItem(at: Self.folder.appendingPathComponent(folder)) }
        let steps: [[String]] = [
            ["import", "sqlite", live, "--name", "MusicStore", "-o", "Schemas/MusicStore.yaml"],
            ["generate", "--output", "Sources/MusicStoreModels"],
        ]
        for step in steps {
            let run = try ImportFixtures.schemagen.run(step, in: Self.folder)
            #expect(run.status == 0, "\(step): \(run.output)\(run.error)")
        }
        let baseline = try ImportFixtures.migrate.run(["baseline", "1", "-d", live, "--dir", "Migrations/MusicStore"], in: Self.folder)
        #expect(baseline.status == 0, "\(baseline.error)")

        let build = try Self.run("swift", ["build", "--disable-build-manifest-caching", "--product", "shop-app"])
        #expect(build.status == 0, "\(build.output)")
        let app = try Self.run(".build/debug/shop-app", [live])
        #expect(app.status == 0, "\(app.output)")
        #expect(
            app.output == """
                track Be My Husband price 0.99 explicit false genre jazz
                track Sinnerman price 1.29 explicit false genre jazz
                track Panis et Circenses price 0.99 explicit false genre trop
                track Jóga price 1.29 explicit true genre elec
                employee Adams hired 2002-08-14T00:00:00Z reports to -
                employee Edwards hired 2002-05-01T00:00:00Z reports to 1
                employee Peacock hired 2002-04-01T00:00:00Z reports to 2
                album Pastel Blues released 1965-10-01T00:00:00Z
                invoice lines 3, total 4.56
                added artist 4

                """)
        // The store wrote where the old app would have: the same table, the next id.
        #expect(try SQLiteConnection(path: live, readOnly: true).query("SELECT id, name FROM artists WHERE id = 4") == [[.integer(4), .text("Caetano Veloso")]])
    }
}
