import Foundation
import PackagePlugin

/// `swift package schemagen ARGUMENTS`: runs `schemagen` in the package's folder, so a client
/// package uses the tools without cloning this repository. Commands that write
/// (`generate`, `rehash`, `new-migration`, `import`, `diagram -o`, `docs`) need
/// `swift package --allow-writing-to-package-directory schemagen ...`.
@main
struct SchemagenCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        try ToolRunner.run(try context.tool(named: "schemagen").url, named: "schemagen", arguments: arguments, in: context.package.directoryURL)
    }
}

/// Runs a tool to its end with the plugin's standard streams, and fails the command with the
/// tool's exit status.
enum ToolRunner {
    struct Failed: Error, CustomStringConvertible {
        let tool: String
        let status: Int32
        var description: String { "\(tool) exited with status \(status)" }
    }

    static func run(_ tool: URL, named name: String, arguments: [String], in folder: URL) throws {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        process.currentDirectoryURL = folder
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Failed(tool: name, status: process.terminationStatus)
        }
    }
}
