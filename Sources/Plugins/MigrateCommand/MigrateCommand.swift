import Foundation
import PackagePlugin

/// `swift package plugin migrate ARGUMENTS`: runs `migrate` in the package's folder (`up`,
/// `status`, `down`, ... with `--database PATH|URL`). The plain `swift package migrate` is
/// SwiftPM's own command since Swift 6.2, hence `plugin`. Applying migrations to a SQLite file
/// inside the package needs `--allow-writing-to-package-directory`.
@main
struct MigrateCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let process = Process()
        process.executableURL = try context.tool(named: "migrate").url
        process.arguments = arguments
        process.currentDirectoryURL = context.package.directoryURL
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Failed(status: process.terminationStatus)
        }
    }

    struct Failed: Error, CustomStringConvertible {
        let status: Int32
        var description: String { "migrate exited with status \(status)" }
    }
}
